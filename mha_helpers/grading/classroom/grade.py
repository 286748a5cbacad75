"""The instructor's grader: untrusted submissions in, a gradebook and feedback out.

``mha-course grade`` and ``mha-course check-solutions`` (:mod:`.commands`) call into this
module. The stages live in their own modules, with the trust boundary between :mod:`.sandbox`
and the rest:

========================  =====================================================  ===========
stage                     module                                                 runs where
========================  =====================================================  ===========
find the submissions      :mod:`.collect` (folders, Canvas, Moodle, zips)        grader
build the program         :mod:`.program` (the course's cells, learner's in       grader
                          place)
run it                    :mod:`.sandbox` + :mod:`.runner`                        **sandbox**
judge the report          :mod:`.verdict` + :mod:`.judge` (expected outputs       grader
                          from the banks)
write the results         :mod:`.gradebook` (merge, manual scores, feedback)      grader
========================  =====================================================  ===========

How one submission is graded: read its bytes (never written, links never followed, size
capped); find its assignment (notebook metadata, else its answer cells' grade_ids); build the
program from the released template with the learner's answer cells and added cells in place;
run it in a fresh sandbox with the public cases and fresh hidden cases (a new seed per run);
judge every answer here. If the program dies during a step (``os._exit``, a signal, the memory
limit, a timeout) it runs again without that step, so the other answers still count.
"""

from __future__ import annotations

import re
import secrets
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from ..course import Course, find_course
from ..rules import codec
from ..rules.cases import expected_outputs, public_cases
from ..rules.verdict import BadReport, question_verdict, written_verdict
from ..sandbox import bubblewrap
from ..sandbox.program import SourceTooLarge, build_program, notebook_cells, template_from_notebook
from ..sandbox.report_schema import check_report
from .banks import load_banks, questions_for
from .collect import Rejected, Submission, collect, read_notebook
from .release import release_notebook
from .untrusted import clean_row, clean_text, normalise_name

__all__ = [
    "grade_paths",
    "grade_submissions",
    "grade_submission",
    "load_templates",
    "Options",
    "expected_cases",
    "UNISOLATED_NOTE",
]

MAX_RETRIES = 2
# A graded row's status: the first of these that happened (see gradebook.STATUSES).
RUN_STATUS_ORDER = ["flagged", "kernel-died", "timeout", "memory", "ok"]
UNISOLATED_NOTE = (
    "graded WITHOUT a sandbox (--unsafe-no-sandbox): this submission's code could "
    "read and change the grader's files"
)


@dataclass
class Options:
    timeout: float = 60.0  # seconds per run of one notebook
    cell_timeout: float | None = None
    memory_mb: int = 2048
    max_bytes: int = 10 * 2**20
    isolate: bool = True
    mpl_cache: str | None = None

    @property
    def per_cell(self) -> float:
        return self.cell_timeout or max(2.0, min(20.0, self.timeout / 3))

    def limits(self) -> bubblewrap.Limits:
        return bubblewrap.Limits(
            memory_bytes=self.memory_mb * 2**20,
            cpu_seconds=int(self.timeout) + 5,
            wall_seconds=self.timeout,
        )


# --- templates and expected outputs ---------------------------------------------------------


@dataclass
class Template:
    assignment: str
    template: dict
    answer_ids: list
    questions: list
    problems: list


def load_templates(course: Course) -> dict[str, Template]:
    """Templates of every solution notebook, keyed by assignment."""
    import nbformat

    load_banks(course)
    out = {}
    for path in sorted(course.solutions.glob("*.ipynb")):
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception as exc:  # a solution mid-edit must not stop grading the others
            print(f"warning: skipping {path.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        assignment = nb.metadata.get("mha_course", {}).get("assignment") or path.stem
        template = template_from_notebook(release_notebook(nb))
        questions = questions_for(assignment)
        problems = [
            f"{q.grade_id}: no check cell calls check({q.grade_id!r}, ...)"
            for q in questions
            if q.kind != "manual" and q.grade_id not in template["exprs"]
        ]
        answer_ids = [
            c["grade_id"] for c in template["cells"] if c["kind"] in ("answer", "written")
        ]
        out[assignment] = Template(assignment, template, answer_ids, questions, problems)
    return out


_CASES: dict = {}
_CASES_LOCK = threading.Lock()


def expected_cases(q, seed: int):
    """``(n_public, cases, expected, mistakes)``: the public cases, then fresh hidden ones drawn
    with ``seed``; the reference's outputs and each mistake's, computed here."""
    key = (q.grade_id, seed)
    with _CASES_LOCK:
        if key not in _CASES:
            public = public_cases(q)
            hidden = q.cases(np.random.default_rng([seed, zlib.crc32(q.grade_id.encode())]))
            cases = public + list(hidden)
            expected, mistakes = expected_outputs(q, cases)
            _CASES[key] = (len(public), cases, expected, mistakes)
        return _CASES[key]


# --- one submission -------------------------------------------------------------------------


def identify(nb: dict, templates: dict):
    """The assignment a notebook belongs to, and how we know."""
    md = nb.get("metadata")
    course = md.get("mha_course") if isinstance(md, dict) else None
    name = course.get("assignment") if isinstance(course, dict) else None
    if isinstance(name, str) and name in templates:
        return name, None
    ids = set()
    for c in nb["cells"]:
        cmd = c.get("metadata") if isinstance(c, dict) else None
        nbg = cmd.get("nbgrader") if isinstance(cmd, dict) else None
        if isinstance(nbg, dict) and isinstance(nbg.get("grade_id"), str):
            ids.add(nbg["grade_id"])
    best, overlap = None, 0
    for a, t in templates.items():
        k = len(ids & set(t.answer_ids))
        if k > overlap:
            best, overlap = a, k
    if best is None:
        return None, (
            f"metadata names assignment {str(name)[:60]!r}, which the course does not have"
            if name
            else "no assignment metadata and no known answer cells"
        )
    return best, "assignment identified from its answer cells' grade_id"


def _row(
    sub: Submission, status: str, notes: list, assignment="", t: Template | None = None
) -> dict:
    qs = t.questions if t else []
    return {
        "student_id": sub.student_id,
        "student": sub.student,
        "assignment": assignment,
        "file": sub.display,
        "shown": sub.shown,
        "late": sub.late,
        "status": status,
        "points": {q.grade_id: 0.0 for q in qs},
        "questions": {},
        "total": 0.0,
        "max": float(sum(q.points for q in qs)),
        "pending": 0.0,
        "notes": list(sub.notes) + notes,
        "timing": {"start": 0.0, "execute": 0.0, "wall": 0.0, "attempts": 0},
    }


def grade_submission(sub: Submission, templates: dict, opts: Options, seed: int) -> dict:
    """Grade one submission; never raises (any failure becomes the row's status)."""
    t0 = time.time()
    if sub.status:
        return _row(sub, sub.status, [sub.note])
    try:
        nb, notes = read_notebook(Path(sub.path), opts.max_bytes)
    except Rejected as r:
        return _row(sub, r.status, [r.note])
    except Exception as exc:  # an unreadable file, a permission problem...
        return _row(sub, "not-a-notebook", [f"could not be read: {type(exc).__name__}"])
    try:
        row = _grade_loaded(sub, nb, list(sub.notes) + notes, templates, opts, seed)
    except Exception as exc:  # never crash the batch
        row = _row(sub, "grader-error", [f"{type(exc).__name__}: {exc}"[:300]])
    row["timing"]["wall"] = round(time.time() - t0, 4)
    if not opts.isolate:
        row["notes"].append(UNISOLATED_NOTE)
    row["notes"] = [_no_paths(n, sub) for n in row["notes"]]
    return row


def _no_paths(note: str, sub: Submission) -> str:
    """A note without the instructor's paths: the submission's own path is shown as the
    instructor gave it (relative), any other absolute path by its last component."""
    text = str(note)
    if sub.display and sub.display != sub.shown:
        text = text.replace(str(sub.display), sub.shown)
    return re.sub(r"(?<![\w.])/(?:[^\s/:;,'\"]+/)+([^\s/:;,'\"]+)", r"\1", text)


def _grade_loaded(sub, nb, notes, templates, opts: Options, seed: int) -> dict:
    assignment, how = identify(nb, templates)
    if assignment is None:
        return _row(sub, "unknown-assignment", notes + [how])
    if how:
        notes.append(how)
    t = templates[assignment]
    try:
        program = build_program(t.template, notebook_cells(nb))
    except SourceTooLarge as exc:
        return _row(sub, "too-large", notes + [str(exc)], assignment, t)
    notes += program.notes
    exprs = t.template["exprs"]
    auto = [q for q in t.questions if q.kind != "manual" and q.grade_id in exprs]
    specs = {}
    for q in auto:
        spec = {"grade_id": q.grade_id, "kind": q.kind, "expr": exprs[q.grade_id]}
        if q.kind == "function":
            _, cases, _, _ = expected_cases(q, seed)
            spec.update(cases=[codec.encode(tuple(c)) for c in cases], forbidden=list(q.forbidden))
        specs[q.grade_id] = spec

    skip_cells, skip_q, deaths = set(), set(), []
    start_s = exec_s = 0.0
    attempts, outcome = 0, None
    while True:
        cells = [
            {"source": "pass" if i in skip_cells else c["source"]}
            for i, c in enumerate(program.cells)
        ]
        job = {
            "cells": cells,
            "questions": [s for g, s in specs.items() if g not in skip_q],
            "cell_timeout": opts.per_cell,
        }
        outcome = bubblewrap.run(job, opts.limits(), isolate=opts.isolate, mpl_cache=opts.mpl_cache)
        attempts += 1
        times = (outcome.report or {}).get("times") if isinstance(outcome.report, dict) else None
        try:
            ready = float(times["ready"])
            if not outcome.spawn - 60 <= ready <= outcome.end + 1:
                raise ValueError("not a time of this run")
            start_s += ready - outcome.spawn
            exec_s += outcome.end - ready
        except (TypeError, KeyError, ValueError, OverflowError):
            exec_s += outcome.end - outcome.spawn
        if outcome.report is not None:
            break
        culprit = _culprit(outcome.steps)
        if culprit and culprit[0] == "eval" and culprit[1] not in specs:
            culprit = None  # a forged step line: the grader names only its own questions
        deaths.append((culprit, _grader_reason(outcome.reason)))
        if culprit is None or attempts > MAX_RETRIES:
            break
        if culprit[0] == "cell" and culprit[1] < len(program.cells):
            skip_cells.add(culprit[1])
        elif culprit[0] == "eval":
            skip_q.add(culprit[1])
        else:
            break

    report = outcome.report if isinstance(outcome.report, dict) else {}
    flags = set()
    kinds = {g: s["kind"] for g, s in specs.items() if g not in skip_q}
    broken = check_report(report, len(program.cells), kinds) if report else []
    if broken:
        flags.add("flagged")
        notes.append(
            f"the sandbox's report does not follow its schema ({broken[0]}): it was not read, "
            "and every automatic question scores 0 (fail closed)"
        )
        report = {}
    else:
        report = _in_grader_words(report, specs, t, seed)
        if report and _has_student_text(report, t, seed):
            report = _with_public_texts(report, program, specs, t, seed, opts)
    for culprit, reason in deaths:
        where = "before any cell ran"
        if culprit and culprit[0] == "cell" and culprit[1] < len(program.cells):
            where = f"in {program.cells[culprit[1]]['label']}"
        elif culprit and culprit[0] == "eval":
            where = f"while checking {culprit[1]}"
        notes.append(f"the program stopped {where}: {reason}")
        flags.add("timeout" if reason in ("timeout", "cpu-time") else "kernel-died")
    if not report and not broken:
        notes.append("no result from the sandbox: every automatic question scores 0 (fail closed)")

    cell_recs = report.get("cells", [])
    if not isinstance(cell_recs, list):
        cell_recs, flags = [], flags | {"flagged"}
        notes.append("the report's cell list was malformed")
    for i, rec in enumerate(cell_recs[: len(program.cells)]):
        err = rec.get("error") if isinstance(rec, dict) else None
        if not isinstance(err, dict):
            continue
        label = program.cells[i]["label"]
        if rec.get("timeout"):
            flags.add("timeout")
            notes.append(f"{label} ran out of time ({opts.per_cell:g} s per cell)")
            continue
        kind = str(err.get("type"))[:80]
        if kind == "MemoryError":
            flags.add("memory")
        message = str(err.get("message") or "")
        notes.append(
            f"{label} raised {kind}" + (f": {mask_data(message[:200])}" if message else "")
        )
    answered = report.get("answers", {}) if isinstance(report.get("answers"), dict) else {}

    points, details = {}, {}
    total = maximum = pending = 0.0
    for q in t.questions:
        maximum += q.points
        if q.kind == "manual":
            d = written_verdict(q, program.written.get(q.grade_id))
            if d["status"] == "manual":
                pending += q.points
                points[q.grade_id] = "pending"
            else:
                points[q.grade_id] = 0.0
            details[q.grade_id] = d
            continue
        try:
            cases = expected_cases(q, seed) if q.kind == "function" else None
            d = question_verdict(
                q, answered.get(q.grade_id) if report else None, cases, q.grade_id in skip_q
            )
        except (BadReport, codec.CodecError) as exc:
            flags.add("flagged")
            d = {
                "grade_id": q.grade_id,
                "status": "error",
                "points": 0.0,
                "max_points": q.points,
                "message": "the sandbox's report for this question was malformed (fail closed)",
                "hint": "",
            }
            notes.append(f"{q.grade_id}: malformed report ({str(exc)[:80]}); scored 0")
        except Exception as exc:  # an answer too odd to compare costs its own points only
            d = {
                "grade_id": q.grade_id,
                "status": "error",
                "points": 0.0,
                "max_points": q.points,
                "message": "your answer could not be compared with the expected one",
                "hint": q.hint,
            }
            notes.append(f"{q.grade_id}: could not be compared ({type(exc).__name__}); scored 0")
        if q.grade_id not in exprs:
            d = d | {
                "status": "error",
                "points": 0.0,
                "message": "the course has no check cell for this question",
            }
        if d["status"] == "timeout":
            flags.add("timeout")
        if d.get("memory"):
            flags.add("memory")
        if d.get("helpers"):
            notes.append(
                f"{q.grade_id}: scored 0, the answer calls the course's {', '.join(d['helpers'])}"
            )
        points[q.grade_id] = float(d["points"])
        total += float(d["points"])
        details[q.grade_id] = d
    if isinstance(report.get("output_chars"), int) and report["output_chars"] > 2**20:
        notes.append("the program printed more than 1 MiB (discarded)")
    status = next(s for s in RUN_STATUS_ORDER if s in flags or s == "ok")
    return {
        "student_id": sub.student_id,
        "student": sub.student,
        "assignment": assignment,
        "file": sub.display,
        "shown": sub.shown,
        "late": sub.late,
        "status": status,
        "points": points,
        "questions": details,
        "total": total,
        "max": maximum,
        "pending": pending,
        "notes": notes,
        "timing": {
            "start": round(start_s, 4),
            "execute": round(exec_s, 4),
            "wall": 0.0,
            "attempts": attempts,
        },
    }


# --- the grader's own words -----------------------------------------------------------------
#
# The program that wrote the report had the hidden cases in its memory (they are in its job),
# so any text in the report may carry them, in any notation. Feedback therefore uses only the
# grader's words: exception and type names from fixed lists, argument names from the
# question's reference, and a student's own error text only from a second run that was given
# the public cases alone (made only when there is such text to show).

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
    import inspect

    try:
        return set(inspect.signature(q.reference).parameters)
    except (TypeError, ValueError):
        return set()


def _in_grader_words(report: dict, specs: dict, t, seed: int) -> dict:
    """The report with every student-chosen text replaced by the grader's words (a schema-
    valid report in, a copy out): messages dropped, names from the fixed lists."""
    import copy

    report = copy.deepcopy(report)
    for rec in report.get("cells", []):
        err = rec.get("error")
        if isinstance(err, dict):
            rec["error"] = {"type": _known(err.get("type"), KNOWN_EXCEPTIONS, "Exception")}
    questions = {q.grade_id: q for q in t.questions}
    for gid, rec in report.get("answers", {}).items():
        if isinstance(rec.get("error"), dict):
            rec["error"] = {"type": _known(rec["error"].get("type"), KNOWN_EXCEPTIONS, "Exception")}
        if "type" in rec:
            rec["type"] = _known(rec["type"], KNOWN_TYPES, "object")
        q = questions.get(gid)
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


def _has_student_text(report: dict, t, seed: int) -> bool:
    """Whether the feedback would show a student's own error text: a cell that raised, or a
    public case that raised."""
    if any(isinstance(r.get("error"), dict) for r in report.get("cells", [])):
        return True
    for q in t.questions:
        rec = report.get("answers", {}).get(q.grade_id)
        if q.kind != "function" or not isinstance(rec, dict):
            continue
        n_public = expected_cases(q, seed)[0]
        for row in (rec.get("results") or [])[:n_public]:
            if row.get("raised") and row["raised"][0] != "NotImplementedError":  # a stub
                return True
    return False


def _with_public_texts(report: dict, program, specs: dict, t, seed: int, opts) -> dict:
    """Run the program again with the public cases only (nothing hidden in its memory) and take
    the error messages of its cells and of the public cases from that run, cleaned."""
    from .untrusted import clean_text

    public_specs = []
    n_public = {}
    for gid, spec in specs.items():
        if spec["kind"] == "function":
            q = next(q for q in t.questions if q.grade_id == gid)
            n_public[gid] = expected_cases(q, seed)[0]
            spec = dict(spec, cases=spec["cases"][: n_public[gid]])
        public_specs.append(spec)
    job = {
        "cells": [{"source": c["source"]} for c in program.cells],
        "questions": public_specs,
        "cell_timeout": opts.per_cell,
    }
    try:
        out = bubblewrap.run(job, opts.limits(), isolate=opts.isolate, mpl_cache=opts.mpl_cache)
    except Exception:
        return report
    other = out.report if isinstance(out.report, dict) else {}
    kinds = {g: s["kind"] for g, s in specs.items()}
    if check_report(other, len(program.cells), kinds):
        return report
    for mine, theirs in zip(report.get("cells", []), other.get("cells", [])):
        err, their_err = mine.get("error"), theirs.get("error")
        if isinstance(err, dict) and isinstance(their_err, dict):
            if their_err.get("type") == err["type"]:
                err["message"] = clean_text(their_err.get("message", ""), max_chars=200)
    for gid, rec in report.get("answers", {}).items():
        theirs = (other.get("answers") or {}).get(gid) or {}
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


def _grader_reason(reason: str) -> str:
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


def _culprit(steps: list):
    """The step that was running when the program stopped: ("cell", i) or ("eval", gid)."""
    if not steps:
        return None
    kind, _, arg = steps[-1].partition(" ")
    if kind == "cell" and arg.isdigit():
        return ("cell", int(arg))
    if kind == "eval" and arg:
        return ("eval", arg)
    return None


# --- a batch ---------------------------------------------------------------------------------


class Progress:
    """A one-line progress bar on stderr (a line per update when stderr is not a terminal)."""

    def __init__(self, total: int, enabled=True, stream=None):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.lock = threading.Lock()

    def step(self, label=""):
        with self.lock:
            self.done += 1
            if not self.enabled:
                return
            filled = int(30 * self.done / max(self.total, 1))
            rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
            line = (
                f"grading [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} "
                f"({rate:.1f}/s) {label}"
            )
            if self.tty:
                self.stream.write(
                    "\r" + line[:100].ljust(100) + ("\n" if self.done == self.total else "")
                )
            else:
                self.stream.write(line + "\n")
            self.stream.flush()


def grade_submissions(
    subs, templates, jobs=2, opts: Options | None = None, seed=None, progress=False, picks=None
) -> list[dict]:
    """Grade every submission (one row each, in order); copies of one student's assignment are
    resolved by :func:`resolve_copies` (``picks``: the instructor's earlier choices)."""
    opts = opts or Options()
    seed = secrets.randbits(63) if seed is None else int(seed)
    bar = Progress(len(subs), enabled=progress)
    opts.mpl_cache = bubblewrap.warm_matplotlib()

    def one(sub):
        # The trust boundary for text: every string of the row is cleaned here, once.
        row = clean_row(grade_submission(sub, templates, opts, seed))
        bar.step(clean_text(sub.student, max_chars=40))
        return row

    with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
        rows = list(pool.map(one, subs))
    resolve_copies(rows, subs, picks)
    return [clean_row(r) for r in rows]


def grade_paths(
    paths,
    jobs: int = 2,
    timeout: float = 60.0,
    course=None,
    seed=None,
    progress: bool = False,
    cell_timeout=None,
    memory_mb: int = 2048,
    max_bytes: int = 10 * 2**20,
    isolate: bool = True,
) -> list[dict]:
    """Grade every submission under ``paths``; return one row (a dict) per submission.

    Each row has ``student_id, student, assignment, file, shown, late, status, points
    {grade_id: points or "pending"}, questions {grade_id: verdict}, total, max, pending,
    notes`` and ``timing``. ``file`` is the path graded, ``shown`` the same relative to the
    folder given (what the gradebook and feedback show).
    ``seed`` fixes the hidden cases (default: a new one every run). ``course`` is the course
    folder (default: the one around the current directory).
    """
    course = course if isinstance(course, Course) else find_course(course)
    templates = load_templates(course)
    collection = collect(paths)
    try:
        opts = Options(
            timeout=timeout,
            cell_timeout=cell_timeout,
            memory_mb=memory_mb,
            max_bytes=max_bytes,
            isolate=isolate,
        )
        return grade_submissions(collection.submissions, templates, jobs, opts, seed, progress)
    finally:
        collection.close()


def resolve_copies(rows: list, subs: list, picks: dict | None = None) -> None:
    """One counted row per (student_id, assignment); the other copies say ``superseded``.

    The rule (documented in the instructor guide, the same on every full regrade): a file the
    instructor gave by itself, or recorded as picked in the gradebook (``picks``: key ->
    file as shown), counts; otherwise the latest copy: Canvas's resubmission number (``-1``,
    ``-2``), then its submission number, then the file's modification time, then its name.
    """
    picks = picks or {}
    groups: dict = {}
    for row, sub in zip(rows, subs):
        if row["assignment"] and row["status"] != "missing":
            groups.setdefault(row_key(row), []).append((row, sub))
    for key, group in groups.items():
        if len(group) < 2:
            row, sub = group[0]
            if sub.picked:
                row["notes"].append("picked by the instructor (graded by itself)")
            continue
        picked = picks.get(key)
        group.sort(
            key=lambda item, picked=picked: (
                item[1].picked or _same_file(item[0]["shown"], picked),
                tuple(item[1].rank),
            )
        )
        (winner, wsub), losers = group[-1], group[:-1]
        why = (
            "picked by the instructor"
            if wsub.picked or _same_file(winner["shown"], picked)
            else "the latest copy counts"
        )
        others = ", ".join(
            f"{r['shown']} ({r['status']}, {r['total']:g} of {r['max']:g})" for r, _ in losers
        )
        winner["notes"].append(
            f"{len(group)} copies of {winner['assignment']}; this one counts ({why}); "
            f"not counted: {others}"
        )
        for r, _ in losers:
            r["notes"].append(
                f"not counted: {winner['shown']} counts instead (status was {r['status']})"
            )
            r["status"] = "superseded"


def _same_file(shown: str, picked) -> bool:
    """Whether a file as shown now is the one picked earlier (shown relative to another
    folder, perhaps: the file name decides; Canvas and Moodle names are unique)."""
    return bool(picked) and PurePosixPath(shown).name == PurePosixPath(str(picked)).name


def row_key(row) -> tuple:
    """The key of a gradebook row: (student_id, assignment)."""
    return (normalise_name(row["student_id"]).casefold(), row["assignment"] or "")
