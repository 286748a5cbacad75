"""What a run says, in the grader's words: the sandbox's report after its schema check.

:func:`..sandbox.report_schema.check_report` has checked the report's shape; this module
decides what of it the grader may repeat. The program that wrote the report had the hidden
cases in its memory (they are in its job), so any text in the report may carry them, in any
notation. Feedback therefore uses only the grader's words (:func:`in_grader_words`): exception
and type names from fixed lists, argument names from the question's reference, and a
student's own error text only from a second run that was given the public cases alone
(:func:`has_student_text` says when one is worth making; :func:`with_public_texts` takes the
texts from it). The notes a row gets about a run come from here too: how each attempt ended
(:func:`death_notes`), each cell that raised (:func:`cell_notes`), a flood of output.
"""

from __future__ import annotations

import copy
import inspect
import re

from .untrusted import clean_text

__all__ = [
    "in_grader_words",
    "has_student_text",
    "with_public_texts",
    "death_notes",
    "cell_notes",
    "output_notes",
    "culprit",
    "grader_reason",
    "mask_data",
    "KNOWN_EXCEPTIONS",
    "KNOWN_TYPES",
]

KNOWN_EXCEPTIONS = frozenset(
    name
    for name, obj in vars(__import__("builtins")).items()
    if isinstance(obj, type) and issubclass(obj, BaseException)
) | {"LinAlgError", "AxisError", "CellTimeout"}
KNOWN_TYPES = frozenset(
    "int float complex bool str bytes list tuple dict set frozenset NoneType ndarray generic "
    "float64 float32 int64 int32 module type function method builtin_function_or_method "
    "ellipsis range slice object".split()
)


def _known(name, allowed, other: str) -> str:
    return name if isinstance(name, str) and name in allowed else other


def _params(q) -> set:
    try:
        return set(inspect.signature(q.reference).parameters)
    except (TypeError, ValueError):
        return set()


def in_grader_words(report: dict, questions) -> dict:
    """The report with every student-chosen text replaced by the grader's words (a schema-
    valid report in, a copy out): messages dropped, names from the fixed lists. ``questions``
    are the assignment's (their references name the arguments)."""
    report = copy.deepcopy(report)
    for rec in report.get("cells", []):
        err = rec.get("error")
        if isinstance(err, dict):
            rec["error"] = {"type": _known(err.get("type"), KNOWN_EXCEPTIONS, "Exception")}
    by_id = {q.grade_id: q for q in questions}
    for gid, rec in report.get("answers", {}).items():
        if isinstance(rec.get("error"), dict):
            rec["error"] = {"type": _known(rec["error"].get("type"), KNOWN_EXCEPTIONS, "Exception")}
        if "type" in rec:
            rec["type"] = _known(rec["type"], KNOWN_TYPES, "object")
        q = by_id.get(gid)
        params = _params(q) if q is not None else set()
        for row in rec.get("results") or []:
            if row.get("raised"):
                row["raised"] = [_known(row["raised"][0], KNOWN_EXCEPTIONS, "Exception"), ""]
            if "where" in row:
                row["where"] = None  # the learner's own code and names: from the public run only
            mutated = row.get("mutated") or []
            named = [m for m in mutated if m in params]  # the reference's own argument names
            row["mutated"] = named or (["one of the arguments"] if mutated else [])
    return report


def has_student_text(report: dict, questions, n_public: dict) -> bool:
    """Whether the feedback would show a student's own error text: a cell that raised, or a
    public case that raised. ``n_public`` gives each function question's number of public
    cases."""
    if any(isinstance(r.get("error"), dict) for r in report.get("cells", [])):
        return True
    for q in questions:
        rec = report.get("answers", {}).get(q.grade_id)
        if q.kind != "function" or not isinstance(rec, dict):
            continue
        for row in (rec.get("results") or [])[: n_public[q.grade_id]]:
            if row.get("raised") and row["raised"][0] != "NotImplementedError":  # a stub
                return True
    return False


def with_public_texts(report: dict, public: dict, n_public: dict) -> dict:
    """``report`` (in the grader's words) with the error messages of its cells and of its
    public cases taken, cleaned, from ``public``: the schema-valid report of a second run that
    had the public cases only, so nothing hidden was in its memory. A text is taken only where
    both runs raised the same exception."""
    for mine, theirs in zip(report.get("cells", []), public.get("cells", [])):
        err, their_err = mine.get("error"), theirs.get("error")
        if isinstance(err, dict) and isinstance(their_err, dict):
            if their_err.get("type") == err["type"]:
                err["message"] = clean_text(their_err.get("message", ""), max_chars=200)
    for gid, rec in report.get("answers", {}).items():
        theirs = (public.get("answers") or {}).get(gid) or {}
        rows, their_rows = rec.get("results") or [], theirs.get("results") or []
        for row, their in list(zip(rows, their_rows))[: n_public.get(gid, 0)]:
            if row.get("raised") and their.get("raised") and their["raised"][0] == row["raised"][0]:
                row["raised"][1] = clean_text(their["raised"][1], max_chars=300)
                where = their.get("where")
                if isinstance(where, dict) and "where" in row:
                    row["where"] = {
                        k: (v if k == "line" else clean_text(v, max_chars=160))
                        for k, v in where.items()
                        if v is not None
                    }
    return report


def death_notes(deaths: list, cells: list) -> tuple[list, set]:
    """A note for each time the program stopped before reporting, and the row's flags from
    them. ``deaths`` holds ``(culprit, reason)`` per attempt (:func:`culprit`), ``cells`` the
    program's cells."""
    notes, flags = [], set()
    for step, reason in deaths:
        where = "before any cell ran"
        if step and step[0] == "cell" and step[1] < len(cells):
            where = f"in {cells[step[1]]['label']}"
        elif step and step[0] == "eval":
            where = f"while checking {step[1]}"
        notes.append(f"the program stopped {where}: {reason}")
        flags.add("timeout" if reason in ("timeout", "cpu-time") else "kernel-died")
    return notes, flags


def cell_notes(report: dict, cells: list, per_cell: float) -> tuple[list, set]:
    """A note for each cell of the program that raised or ran out of time, and the row's flags
    from them."""
    notes, flags = [], set()
    cell_recs = report.get("cells", [])
    if not isinstance(cell_recs, list):
        cell_recs = []
        flags.add("flagged")
        notes.append("the report's cell list was malformed")
    for i, rec in enumerate(cell_recs[: len(cells)]):
        err = rec.get("error") if isinstance(rec, dict) else None
        if not isinstance(err, dict):
            continue
        label = cells[i]["label"]
        if rec.get("timeout"):
            flags.add("timeout")
            notes.append(f"{label} ran out of time ({per_cell:g} s per cell)")
            continue
        kind = str(err.get("type"))[:80]
        if kind == "MemoryError":
            flags.add("memory")
        message = str(err.get("message") or "")
        notes.append(
            f"{label} raised {kind}" + (f": {mask_data(message[:200])}" if message else "")
        )
    return notes, flags


def output_notes(report: dict) -> list:
    """A note when the program printed more than the grader reads (1 MiB)."""
    if isinstance(report.get("output_chars"), int) and report["output_chars"] > 2**20:
        return ["the program printed more than 1 MiB (discarded)"]
    return []


def culprit(steps: list):
    """The step that was running when the program stopped: ("cell", i) or ("eval", gid)."""
    if not steps:
        return None
    kind, _, arg = steps[-1].partition(" ")
    if kind == "cell" and arg.isdigit():
        return ("cell", int(arg))
    if kind == "eval" and arg:
        return ("eval", arg)
    return None


def grader_reason(reason: str) -> str:
    """Why a run ended, in the grader's words (an exit code is the program's choice)."""
    return "it exited before reporting" if reason.startswith("exited with code") else reason


_DATA_LIKE = re.compile(r"[-+]?\d*\.\d+(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+|[A-Za-z0-9+/=]{24,}")


def mask_data(text: str) -> str:
    """A cell's error message with anything that could be test data masked: decimal numbers and
    long base64-like runs (how the job's arrays travel). A program can read its whole job from
    its own memory, hidden cases included, and raise them; feedback must not show them. Integers
    (line numbers, shapes) stay.

    >>> mask_data("shapes (3,4) and (5,) not aligned; x = [0.1234 -1.5e-3]")
    'shapes (3,4) and (5,) not aligned; x = [#.# #.#]'
    """
    return _DATA_LIKE.sub("#.#", text)
