"""What a run says, in the grader's words: the sandbox's report after its schema check.

:func:`..sandbox.report_schema.check_report` has checked the report's shape; this module
decides what of it the grader may repeat. The program that wrote the report was sent the hidden
cases only after its report (the ``result`` line) had arrived, so the report holds
nothing hidden and its texts may be quoted, cleaned (:func:`in_grader_words`). What the
program did on the hidden cases (the ``hidden`` line) feeds the verdicts only as values to
compare and fixed words (:func:`with_hidden`, :func:`hidden_row`): no exception name, no
argument name, no text of it reaches feedback, notes or the console. The notes a row gets about a run come from here too: how each attempt ended
(:func:`death_notes`), each cell that raised (:func:`cell_notes`), a flood of output.
"""

from __future__ import annotations

import copy
import inspect
import re

from .untrusted import FOR_INSTRUCTOR, clean_text

__all__ = [
    "in_grader_words",
    "hidden_row",
    "with_hidden",
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


def in_grader_words(report: dict, questions, n_public: dict | None = None) -> dict:
    """The first report in the grader's words (a schema-valid report in, a copy out). It was
    made before the program had any hidden case in its memory, so its texts may be quoted,
    cleaned: exception and type names from the fixed lists, messages cleaned and bounded,
    argument names from the question's reference. A function's results are cut to its public
    cases (``n_public``): a row past them cannot be the runner's."""
    report = copy.deepcopy(report)
    n_public = n_public or {}
    for rec in report.get("cells", []):
        err = rec.get("error")
        if isinstance(err, dict):
            rec["error"] = {
                "type": _known(err.get("type"), KNOWN_EXCEPTIONS, "Exception"),
                "message": clean_text(err.get("message", ""), max_chars=200),
            }
    by_id = {q.grade_id: q for q in questions}
    for gid, rec in report.get("answers", {}).items():
        if isinstance(rec.get("error"), dict):
            rec["error"] = {"type": _known(rec["error"].get("type"), KNOWN_EXCEPTIONS, "Exception")}
        if "type" in rec:
            rec["type"] = _known(rec["type"], KNOWN_TYPES, "object")
        q = by_id.get(gid)
        params = _params(q) if q is not None else set()
        if isinstance(rec.get("results"), list) and gid in n_public:
            rec["results"] = rec["results"][: n_public[gid]]
        for row in rec.get("results") or []:
            if row.get("raised"):
                row["raised"] = [
                    _known(row["raised"][0], KNOWN_EXCEPTIONS, "Exception"),
                    clean_text(row["raised"][1], max_chars=300),
                ]
            where = row.get("where")
            if isinstance(where, dict):
                row["where"] = {
                    k: (v if k == "line" else clean_text(v, max_chars=160))
                    for k, v in where.items()
                    if v is not None
                }
            mutated = row.get("mutated") or []
            named = [m for m in mutated if m in params]  # the reference's own argument names
            row["mutated"] = named or (["one of the arguments"] if mutated else [])
    return report


def hidden_row(row: dict) -> dict:
    """One hidden case's outcome as the verdict may use it: the value to compare, and whether
    it raised or changed an input, in fixed words (which exception, which argument, where
    and any text are the program's choice after it had the hidden cases)."""
    raised = bool(row.get("raised"))
    return {
        "value": None if raised else row.get("value"),
        "raised": ["an exception", ""] if raised else None,
        "mutated": ["one of the arguments"] if row.get("mutated") else [],
        "where": None,
    }


def with_hidden(report: dict, hidden: dict | None, n_public: dict, questions, skipped=()):
    """``report`` (in the grader's words) with each function answer's hidden cases added from
    the run's ``hidden`` line, each through :func:`hidden_row`. A question whose hidden cases
    ran out of time has one failed hidden case (``hidden_timeout`` set, for the instructor's
    notes only: the student's feedback reads as for any failed hidden case); one without them (the program stopped) has only its public
    results, so the verdict says a hidden case has no result."""
    answers = (hidden or {}).get("answers") or {}
    for q in questions:
        rec = report.get("answers", {}).get(q.grade_id)
        if q.kind != "function" or not isinstance(rec, dict) or rec.get("status") != "ok":
            continue
        theirs = answers.get(q.grade_id)
        if not isinstance(theirs, dict):
            continue
        if theirs.get("status") == "timeout":  # a failed hidden case, worded as any other
            rec["hidden_timeout"] = True
            theirs = {"status": "ok", "results": [{"raised": True}]}
        rows = theirs.get("results") if theirs.get("status") == "ok" else None
        rec["results"] = list(rec.get("results") or []) + [hidden_row(r) for r in rows or []]
    return report


def death_notes(deaths: list, cells: list) -> tuple[list, set]:
    """A note for each time the program stopped before reporting, and the row's flags from
    them. ``deaths`` holds ``(culprit, reason)`` per attempt (:func:`culprit`), ``cells`` the
    program's cells."""
    notes, flags = [], set()
    for step, reason in deaths:
        if reason.startswith("on a hidden case, "):  # the student is told nothing of it
            what = step[1] if step else "a question"
            notes.append(
                f"{FOR_INSTRUCTOR}the program stopped while checking {what}: "
                f"{reason.removeprefix('on a hidden case, ')} (on a hidden case)"
            )
            continue
        where = "before any cell ran"
        if step and step[0] == "cell" and step[1] < len(cells):
            where = f"in {cells[step[1]]['label']}"
        elif step and step[0] == "eval":
            where = f"while checking {step[1]}"
        notes.append(f"the program stopped {where}: {reason}")
        timed_out = reason in ("timeout", "cpu-time", "it ran out of time")
        flags.add("timeout" if timed_out else "kernel-died")
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
