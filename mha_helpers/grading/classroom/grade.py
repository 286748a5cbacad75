"""The instructor's grader: one submission, then a batch, through the stages in order.

``mha-course grade`` and ``mha-course check-solutions`` (:mod:`.commands`) call into this
module. It holds no stage itself: it calls each one in turn, and no stage calls back into an
earlier one (``tests/test_architecture.py`` checks the imports). Only the sandbox runs student
code:

=====================  ================================================================  =========
stage                  module                                                            runs where
=====================  ================================================================  =========
collect                :mod:`.collect` (folders, Canvas, Moodle, zips; one file read)    grader
build the program      :mod:`..sandbox.program` (the course's cells, the learner's in    grader
                       place), with the cases of :mod:`.assignments`
run in the sandbox     :mod:`..sandbox.bubblewrap` starts :mod:`..sandbox.inside.runner`  **sandbox**
check the report       :mod:`..sandbox.report_schema`, then :mod:`.report` (the          grader
                       grader's own words)
verdicts from rules    :mod:`..rules.verdict` with :mod:`..rules.judge` (expected        grader
                       outputs from the banks)
gradebook row          :mod:`.row`                                                       grader
outputs                :mod:`.gradebook`, :mod:`.feedback`, :mod:`.lms` (by             grader
                       :mod:`.commands`)
=====================  ================================================================  =========

How one submission is graded: read its bytes (never written, links never followed, size
capped); find its assignment (notebook metadata, else its answer cells' grade_ids); build the
program from the released template with the learner's answer cells and added cells in place;
run it in a fresh sandbox with the public cases and fresh hidden cases (a new seed per run);
judge every answer here. If the program dies during a step (``os._exit``, a signal, the memory
limit, a timeout) it runs again without that step, so the other answers still count.
"""

from __future__ import annotations

import hashlib
import secrets
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..course import Course, find_course
from ..rules import codec
from ..rules.verdict import BadReport, question_verdict, written_verdict
from ..sandbox import bubblewrap
from ..sandbox.program import SourceTooLarge, build_program, notebook_cells
from ..sandbox.report_schema import check_report
from . import report as said
from .assignments import expected_cases, identify, job_questions, load_templates
from .collect import Rejected, Submission, collect, read_notebook
from .recognise import recognise_answers
from .row import UNISOLATED_NOTE, graded_row, resolve_copies, ungraded_row, without_paths
from .untrusted import clean_row, clean_text

__all__ = [
    "grade_paths",
    "grade_submissions",
    "grade_submission",
    "Options",
]

MAX_RETRIES = 2


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


# --- one submission -------------------------------------------------------------------------


def grade_submission(sub: Submission, templates: dict, opts: Options, seed: int) -> dict:
    """Grade one submission; never raises (any failure becomes the row's status)."""
    t0 = time.time()
    if sub.status:
        return ungraded_row(sub, sub.status, [sub.note])
    try:
        nb, notes = read_notebook(Path(sub.path), opts.max_bytes)
    except Rejected as r:
        return ungraded_row(sub, r.status, [r.note])
    except Exception as exc:  # an unreadable file, a permission problem...
        return ungraded_row(sub, "not-a-notebook", [f"could not be read: {type(exc).__name__}"])
    try:
        row = _grade_loaded(sub, nb, list(sub.notes) + notes, templates, opts, seed)
    except Exception as exc:  # never crash the batch
        row = ungraded_row(sub, "grader-error", [f"{type(exc).__name__}: {exc}"[:300]])
    row["timing"]["wall"] = round(time.time() - t0, 4)
    row["submitted"] = _file_facts(Path(sub.path))
    if not opts.isolate:
        row["notes"].append(UNISOLATED_NOTE)
    row["notes"] = [without_paths(n, sub) for n in row["notes"]]
    return row


def _file_facts(path: Path) -> dict:
    """The graded file's size, sha256 and time (for the gradebook database)."""
    try:
        data = path.read_bytes()
        mtime = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))
        return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "mtime": mtime}
    except OSError:
        return {}


def _grade_loaded(sub, nb, notes, templates, opts: Options, seed: int) -> dict:
    """A readable notebook through the stages: its assignment, its program, a run in the
    sandbox, the report read, a verdict per question, the row. Notes go into ``notes``."""
    assignment, how = identify(nb, templates)
    if assignment is None:
        return ungraded_row(sub, "unknown-assignment", notes + [how])
    if how:
        notes.append(how)
    t = templates[assignment]
    try:
        program = build_program(t.template, notebook_cells(nb))
    except SourceTooLarge as exc:
        return ungraded_row(sub, "too-large", notes + [str(exc)], assignment, t.questions)
    recognise_answers(program, t.template)  # answer cells whose metadata was lost
    notes += program.notes
    specs = job_questions(t, seed)
    run = _run_until_reported(program, specs, opts)
    report, flags = _read_report(run, program, specs, t, seed, opts, notes)
    details, verdict_flags = _verdicts(t, program, report, run.skipped, seed, notes)
    notes += said.output_notes(report)
    timing = {
        "start": round(run.start_s, 4),
        "execute": round(run.exec_s, 4),
        "wall": 0.0,
        "attempts": run.attempts,
    }
    row = graded_row(sub, assignment, t.questions, details, flags | verdict_flags, notes, timing)
    row["written"] = dict(program.written)  # the answers' own text (hashed by the gradebook)
    return row


# --- run in the sandbox, again without the step that killed the program ----------------------


@dataclass
class _Run:
    """The runs of one program until one reported (or the retries ran out)."""

    outcome: bubblewrap.Outcome | None = None  # the last run's
    attempts: int = 0
    start_s: float = 0.0  # sandbox start-up, all attempts
    exec_s: float = 0.0  # execution, all attempts
    skipped_cells: set = field(default_factory=set)  # cells replaced by ``pass``
    skipped: set = field(default_factory=set)  # questions left out of the job
    deaths: list = field(default_factory=list)  # (culprit, reason) per run without a report


def _job(program, specs: dict, run: _Run, per_cell: float) -> dict:
    """The job for the next attempt: the program with the skipped cells as ``pass``, and the
    questions not skipped."""
    cells = [
        {"source": "pass" if i in run.skipped_cells else c["source"]}
        for i, c in enumerate(program.cells)
    ]
    questions = [s for g, s in specs.items() if g not in run.skipped]
    return {"cells": cells, "questions": questions, "cell_timeout": per_cell}


def _add_times(run: _Run, outcome) -> None:
    """Split one attempt's time into sandbox start-up and execution, from the runner's
    ``ready`` time when it is a time of this attempt (the report is untrusted)."""
    times = (outcome.report or {}).get("times") if isinstance(outcome.report, dict) else None
    try:
        ready = float(times["ready"])
        if not outcome.spawn - 60 <= ready <= outcome.end + 1:
            raise ValueError("not a time of this run")
        run.start_s += ready - outcome.spawn
        run.exec_s += outcome.end - ready
    except (TypeError, KeyError, ValueError, OverflowError):
        run.exec_s += outcome.end - outcome.spawn


def _skip_next(run: _Run, step, n_cells: int) -> bool:
    """Leave out the step the program died in (a cell or a question) for the next attempt;
    False when there is no such step to leave out."""
    if step is None or run.attempts > MAX_RETRIES:
        return False
    if step[0] == "cell" and step[1] < n_cells:
        run.skipped_cells.add(step[1])
    elif step[0] == "eval":
        run.skipped.add(step[1])
    else:
        return False
    return True


def _run_until_reported(program, specs: dict, opts: Options) -> _Run:
    """Run the program in a fresh sandbox until a run reports; after a run that died in a
    step, run again without that step (at most :data:`MAX_RETRIES` times)."""
    run = _Run()
    while True:
        job = _job(program, specs, run, opts.per_cell)
        outcome = bubblewrap.run(job, opts.limits(), isolate=opts.isolate, mpl_cache=opts.mpl_cache)
        run.outcome = outcome
        run.attempts += 1
        _add_times(run, outcome)
        if outcome.report is not None:
            return run
        step = said.culprit(outcome.steps)
        if step and step[0] == "eval" and step[1] not in specs:
            step = None  # a forged step line: the grader names only its own questions
        run.deaths.append((step, said.grader_reason(outcome.reason)))
        if not _skip_next(run, step, len(program.cells)):
            return run


# --- check the report, in the grader's words --------------------------------------------------


def _read_report(run: _Run, program, specs, t, seed: int, opts: Options, notes: list):
    """The last run's report, checked against its schema and put in the grader's words, and
    the row's flags; notes on a malformed report, each death and each cell that raised go into
    ``notes``. A report that breaks the schema is not read at all (fail closed)."""
    flags = set()
    report = run.outcome.report if isinstance(run.outcome.report, dict) else {}
    kinds = {g: s["kind"] for g, s in specs.items() if g not in run.skipped}
    broken = check_report(report, len(program.cells), kinds) if report else []
    if broken:
        flags.add("flagged")
        notes.append(
            f"the sandbox's report does not follow its schema ({broken[0]}): it was not read, "
            "and every automatic question scores 0 (fail closed)"
        )
        report = {}
    else:
        report = _in_grader_words(report, program, specs, t, seed, opts)
    death_notes, death_flags = said.death_notes(run.deaths, program.cells)
    notes += death_notes
    flags |= death_flags
    if not report and not broken:
        notes.append("no result from the sandbox: every automatic question scores 0 (fail closed)")
    cell_notes, cell_flags = said.cell_notes(report, program.cells, opts.per_cell)
    notes += cell_notes
    return report, flags | cell_flags


def _in_grader_words(report: dict, program, specs: dict, t, seed: int, opts: Options) -> dict:
    """The report in the grader's words, with the student's own error texts from a second run
    that had the public cases only, when there are any to show."""
    n_public = {
        q.grade_id: expected_cases(q, seed)[0]
        for q in t.questions
        if q.grade_id in specs and q.kind == "function"
    }
    report = said.in_grader_words(report, t.questions)
    if report and said.has_student_text(report, t.questions, n_public):
        public = _public_run(program, specs, n_public, opts)
        if public:
            report = said.with_public_texts(report, public, n_public)
    return report


def _public_run(program, specs: dict, n_public: dict, opts: Options) -> dict:
    """The schema-valid report of the program run again with the public cases only (nothing
    hidden in its memory), or ``{}``."""
    questions = [
        dict(spec, cases=spec["cases"][: n_public[gid]]) if spec["kind"] == "function" else spec
        for gid, spec in specs.items()
    ]
    job = {
        "cells": [{"source": c["source"]} for c in program.cells],
        "questions": questions,
        "cell_timeout": opts.per_cell,
    }
    try:
        out = bubblewrap.run(job, opts.limits(), isolate=opts.isolate, mpl_cache=opts.mpl_cache)
    except Exception:
        return {}
    other = out.report if isinstance(out.report, dict) else {}
    kinds = {g: s["kind"] for g, s in specs.items()}
    if check_report(other, len(program.cells), kinds):
        return {}
    return other


# --- verdicts from the rules ------------------------------------------------------------------


def _verdicts(t, program, report: dict, skipped: set, seed: int, notes: list) -> tuple[dict, set]:
    """Each question's verdict, by grade_id, and the row's flags from them. A record that
    breaks the schema costs its question the points (fail closed); notes go into ``notes``."""
    answered = report.get("answers", {}) if isinstance(report.get("answers"), dict) else {}
    exprs = t.template["exprs"]
    details, flags = {}, set()
    for q in t.questions:
        if q.kind == "manual":
            details[q.grade_id] = written_verdict(q, program.written.get(q.grade_id))
            continue
        d = _verdict(q, answered.get(q.grade_id) if report else None, skipped, seed, notes, flags)
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
        details[q.grade_id] = d
    return details, flags


def _verdict(q, rec, skipped: set, seed: int, notes: list, flags: set) -> dict:
    """The verdict on one automatically graded question from its record in the report
    (``None`` when there is no report). A malformed record, or an answer too odd to compare,
    costs this question its points and nothing else."""
    try:
        cases = expected_cases(q, seed) if q.kind == "function" else None
        return question_verdict(q, rec, cases, q.grade_id in skipped)
    except (BadReport, codec.CodecError) as exc:
        flags.add("flagged")
        notes.append(f"{q.grade_id}: malformed report ({str(exc)[:80]}); scored 0")
        return {
            "grade_id": q.grade_id,
            "status": "error",
            "points": 0.0,
            "max_points": q.points,
            "message": "the sandbox's report for this question was malformed (fail closed)",
            "hint": "",
        }
    except Exception as exc:  # an answer too odd to compare costs its own points only
        notes.append(f"{q.grade_id}: could not be compared ({type(exc).__name__}); scored 0")
        return {
            "grade_id": q.grade_id,
            "status": "error",
            "points": 0.0,
            "max_points": q.points,
            "message": "your answer could not be compared with the expected one",
            "hint": q.hint,
        }


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
        raw = grade_submission(sub, templates, opts, seed)
        kept = {k: raw.pop(k) for k in ("written", "submitted") if k in raw}
        row = clean_row(raw)
        bar.step(clean_text(sub.student, max_chars=40))
        return row, kept

    with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
        done = list(pool.map(one, subs))
    rows = [r for r, _ in done]
    resolve_copies(rows, subs, picks)
    return [_with_answers(clean_row(r), kept) for r, (_, kept) in zip(rows, done)]


def _with_answers(row: dict, kept: dict) -> dict:
    """A cleaned row with its written answers (line breaks kept, bounded) and its file's
    facts put back: the gradebook hashes the text as the student wrote it."""
    written = kept.get("written") or {}
    row["written"] = {
        clean_text(g, max_chars=200): clean_text(t, max_chars=100_000, keep_newlines=True)
        for g, t in written.items()
        if isinstance(t, str)
    }
    row["submitted"] = {
        k: v for k, v in (kept.get("submitted") or {}).items() if isinstance(v, int | str)
    }
    return row


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
