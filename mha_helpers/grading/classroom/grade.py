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
run it in a fresh sandbox with the public cases, and send it fresh hidden cases (a new seed per
run) only once its report has come back; judge every answer here. If the program dies during a
step (``os._exit``, a signal, the memory limit, a timeout) it runs again without that step, so
the other answers still count, while the student's time budget lasts (:class:`Budget`).
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
from .row import (
    UNISOLATED_NOTE,
    _same_file,
    graded_row,
    resolve_copies,
    ungraded_row,
    without_paths,
)
from .untrusted import FOR_INSTRUCTOR, clean_row, clean_text, normalise_name

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
    max_notebooks: int = 3  # notebooks graded per student per assignment (the latest count)
    student_seconds: float | None = None  # sandbox time per student per assignment (2 x timeout)
    budget: Budget | None = None  # made by grade_submissions

    @property
    def per_cell(self) -> float:
        return self.cell_timeout or max(2.0, min(20.0, self.timeout / 3))

    @property
    def student_budget(self) -> float:
        return float(self.student_seconds if self.student_seconds is not None else 2 * self.timeout)

    def limits(self, wall: float | None = None) -> bubblewrap.Limits:
        wall = self.timeout if wall is None else wall
        return bubblewrap.Limits(
            memory_bytes=self.memory_mb * 2**20,
            cpu_seconds=int(wall) + 5,
            wall_seconds=wall,
        )


class Budget:
    """Sandbox time left per (student, assignment): shared by all of that student's notebooks
    of the assignment and every run of each (retries included). A run reserves its wall-clock
    limit before it starts (so two workers cannot both spend the same seconds) and gives back
    what it did not use."""

    def __init__(self, seconds: float):
        self.seconds, self.left, self.lock = float(seconds), {}, threading.Lock()

    def reserve(self, key, want: float) -> float:
        """Seconds for the next run (0 when less than one is left)."""
        with self.lock:
            left = self.left.setdefault(key, self.seconds)
            take = min(float(want), left)
            if take < 1.0:
                return 0.0
            self.left[key] = left - take
            return take

    def refund(self, key, unused: float) -> None:
        with self.lock:
            self.left[key] = self.left.get(key, 0.0) + max(0.0, float(unused))


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
    n_public = {
        q.grade_id: expected_cases(q, seed)[0]
        for q in t.questions
        if q.grade_id in specs and q.kind == "function"
    }
    key = (normalise_name(sub.student_id).casefold(), assignment)
    run = _run_until_reported(program, specs, n_public, opts, key)
    run.per_cell = opts.per_cell
    report, flags = _read_report(run, program, specs, t, n_public, notes)
    skipped = _after_hidden_deaths(run, report)
    details, verdict_flags = _verdicts(t, program, report, skipped, seed, notes)
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
    public: dict | None = None  # the first report: made before any hidden case was sent
    hidden: dict | None = None  # the last run's outputs on the hidden cases
    attempts: int = 0
    start_s: float = 0.0  # sandbox start-up, all attempts
    exec_s: float = 0.0  # execution, all attempts
    skipped_cells: set = field(default_factory=set)  # cells replaced by ``pass``
    skipped: set = field(default_factory=set)  # questions left out of the job
    deaths: list = field(default_factory=list)  # (culprit, reason) per run without a report
    per_cell: float = 0.0  # each cell's time limit, for the notes
    out_of_budget: bool = False  # a run was not made: the student's time budget was used up


def _job(program, specs: dict, n_public: dict, run: _Run, per_cell: float) -> tuple:
    """The job for the next attempt (the program with the skipped cells as ``pass``, the
    questions not skipped, with their public cases only) and the hidden cases, sent to the
    run only once it has reported on everything else."""
    cells = [
        {"source": "pass" if i in run.skipped_cells else c["source"]}
        for i, c in enumerate(program.cells)
    ]
    questions, hidden = [], {}
    for g, s in specs.items():
        if g in run.skipped:
            continue
        if s["kind"] == "function":
            n = n_public.get(g, len(s["cases"]))
            if s["cases"][n:]:
                hidden[g] = s["cases"][n:]
            s = dict(s, cases=s["cases"][:n])
        questions.append(s)
    return {"cells": cells, "questions": questions, "cell_timeout": per_cell}, hidden


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


def _run_until_reported(program, specs: dict, n_public: dict, opts: Options, key=None) -> _Run:
    """Run the program in a fresh sandbox until a run reports; after a run that died in a
    step, run again without that step (at most :data:`MAX_RETRIES` times), while the
    student's time budget (:class:`Budget`) lasts. The report kept is the first one (no
    attempt had been sent a hidden case before it was made); a death after it (on the hidden
    cases) can only be in a question."""
    run = _Run()
    while True:
        job, hidden = _job(program, specs, n_public, run, opts.per_cell)
        wall = opts.budget.reserve(key, opts.timeout) if opts.budget else opts.timeout
        if wall <= 0:
            run.out_of_budget = True
            return run
        outcome = bubblewrap.run(
            job, opts.limits(wall), isolate=opts.isolate, mpl_cache=opts.mpl_cache, hidden=hidden
        )
        if opts.budget:
            opts.budget.refund(key, wall - max(0.0, outcome.end - outcome.spawn))
        run.outcome = outcome
        run.attempts += 1
        _add_times(run, outcome)
        if run.public is None and outcome.report is not None:
            run.public = outcome.report
        if outcome.report is not None and (not hidden or outcome.hidden is not None):
            run.hidden = outcome.hidden if hidden else {}
            return run
        step = said.culprit(outcome.steps)
        if step and step[0] == "eval" and step[1] not in specs:
            step = None  # a forged step line: the grader names only its own questions
        if outcome.report is not None and step and step[0] != "eval":
            step = None  # after the report only questions run
        why = said.grader_reason(outcome.reason)
        if outcome.report is not None:  # on the hidden cases: which signal, which code, its choice
            why = "it ran out of time" if why in ("timeout", "cpu-time") else "it stopped"
            why = HIDDEN_DEATH + why
        run.deaths.append((step, why))
        if not _skip_next(run, step, len(program.cells)):
            return run


# --- check the report, in the grader's words --------------------------------------------------


def _read_report(run: _Run, program, specs, t, n_public: dict, notes: list):
    """The first report, checked against its schema, with the hidden cases' outputs added in
    the grader's words, and the row's flags; notes on a malformed report, each death and each
    cell that raised go into ``notes``. A report that breaks the schema is not read at all
    (fail closed)."""
    flags = set()
    report = run.public if isinstance(run.public, dict) else {}
    kinds = {g: s["kind"] for g, s in specs.items()}
    broken = check_report(report, len(program.cells), kinds) if report else []
    hidden = run.hidden if isinstance(run.hidden, dict) else None
    if not broken and report and hidden:
        hidden_kinds = {g: "function" for g in specs if g in (hidden.get("answers") or {})}
        broken = (
            check_report(hidden, 0, hidden_kinds)
            if set(hidden) <= {"answers"}
            else ["hidden: unknown keys"]
        )
    if broken:
        flags.add("flagged")
        notes.append(
            f"the sandbox's report does not follow its schema ({broken[0]}): it was not read, "
            "and every automatic question scores 0 (fail closed)"
        )
        report = {}
    elif report:
        report = said.in_grader_words(report, t.questions, n_public)
        report = said.with_hidden(report, hidden, n_public, t.questions, run.skipped)
    death_notes, death_flags = said.death_notes(run.deaths, program.cells)
    notes += death_notes
    flags |= death_flags
    if run.out_of_budget:
        flags.add("timeout")
        notes.append(
            "not run (again): this student's sandbox time for the assignment is used up "
            "(--student-budget); what did not run scores 0"
        )
    if not report and not broken and run.outcome is not None:
        notes.append("no result from the sandbox: every automatic question scores 0 (fail closed)")
    cell_notes, cell_flags = said.cell_notes(report, program.cells, run.per_cell)
    notes += cell_notes
    return report, flags | cell_flags


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
        if q.kind == "function":
            d = _hidden_failure(q, d, rec=answered.get(q.grade_id), notes=notes)
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


def _after_hidden_deaths(run, report: dict) -> set:
    """The questions to score as skipped. One whose hidden cases stopped the program (after
    the report) is not among them: it failed a hidden case, worded as any other failure."""
    answers = report.get("answers") if isinstance(report.get("answers"), dict) else {}
    died = {}
    for step, why in run.deaths:
        if step and step[0] == "eval" and why.startswith(HIDDEN_DEATH):
            died[step[1]] = died.get(step[1], False) or why.endswith("ran out of time")
    kept = set()
    for gid, timed_out in died.items():
        rec = answers.get(gid)
        if isinstance(rec, dict) and rec.get("status") == "ok":
            rec["results"] = list(rec.get("results") or []) + [said.hidden_row({"raised": True})]
            rec["hidden_timeout"] = timed_out
            kept.add(gid)
    return set(run.skipped) - kept


HIDDEN_DEATH = "on a hidden case, "  # a death after the report: the instructor's to know
HIDDEN_FAILURE = (
    "one of the grader's hidden cases raised an exception, ran out of time or returned a "
    "wrong result (the grader does not say which, nor which case)"
)


def _hidden_failure(q, d: dict, rec, notes: list) -> dict:
    """A verdict that failed first on a hidden case, in one fixed wording for the student
    (whether it timed out, raised or returned a wrong value is the program's choice once it
    had the hidden cases); what happened goes into a note for the instructor only."""
    if d.get("public") is not False or d.get("status") == "passed":
        return d
    what = "ran out of time" if isinstance(rec, dict) and rec.get("hidden_timeout") else ""
    notes.append(
        f"{FOR_INSTRUCTOR}{q.grade_id}: {what or d.get('message') or 'failed'} (on a hidden "
        "case; the student's feedback says only that a hidden case failed)"
    )
    out = {k: v for k, v in d.items() if k not in ("diagnosis", "mistake", "cause", "case")}
    return out | {"status": "failed", "message": HIDDEN_FAILURE, "hint": q.hint}


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
    opts.budget = Budget(opts.student_budget)
    capped = over_the_cap(subs, templates, opts, picks)

    def one(item):
        i, sub = item
        if i in capped:
            note, a = capped[i]
            row = ungraded_row(sub, "refused", [note], a, templates[a].questions)
        else:
            row = grade_submission(sub, templates, opts, seed)
        # The trust boundary for text: every string of the row is cleaned here, once.
        kept = {k: row.pop(k) for k in ("written", "submitted") if k in row}
        row = clean_row(row)
        bar.step(clean_text(sub.student, max_chars=40))
        return row, kept

    with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
        done = list(pool.map(one, enumerate(subs)))
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


def over_the_cap(subs, templates, opts: Options, picks=None) -> dict:
    """{index: (note, assignment)} of the notebooks not graded because their student handed in more than
    ``opts.max_notebooks`` of one assignment: the latest ones (the order
    :func:`.row.resolve_copies` counts them in, the instructor's pick first) are graded. Only
    students with that many notebooks in all are read ahead of grading."""
    per_student: dict = {}
    for i, sub in enumerate(subs):
        if not sub.status and sub.path is not None:
            per_student.setdefault(normalise_name(sub.student_id).casefold(), []).append(i)
    groups: dict = {}
    for sid, idx in per_student.items():
        if len(idx) <= opts.max_notebooks:
            continue
        for i in idx:
            try:
                nb, _ = read_notebook(Path(subs[i].path), opts.max_bytes)
                assignment = identify(nb, templates)[0]
            except Exception:
                continue
            if assignment:
                groups.setdefault((sid, assignment), []).append(i)
    capped = {}
    for key, idx in groups.items():
        picked = (picks or {}).get(key)
        idx.sort(
            key=lambda i: (
                subs[i].picked or _same_file(subs[i].shown, picked),
                tuple(subs[i].rank),
            ),
            reverse=True,
        )
        for i in idx[opts.max_notebooks :]:
            capped[i] = (
                f"not graded: more than {opts.max_notebooks} notebooks of {key[1]} from this "
                f"student (--max-notebooks); the latest {opts.max_notebooks} were graded",
                key[1],
            )
    return capped


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
    max_notebooks: int = 3,
    student_seconds: float | None = None,
) -> list[dict]:
    """Grade every submission under ``paths``; return one row (a dict) per submission.

    Each row has ``student_id, student, assignment, file, shown, late, status, points
    {grade_id: points or "pending"}, questions {grade_id: verdict}, total, max, pending,
    notes`` and ``timing``. ``file`` is the path graded, ``shown`` the same relative to the
    folder given (what the gradebook and feedback show).
    ``seed`` fixes the hidden cases (default: a new one every run). ``course`` is the course
    folder (default: the one around the current directory). ``max_notebooks`` and
    ``student_seconds`` are the per-student budget (see :class:`Budget`, :func:`over_the_cap`).
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
            max_notebooks=max_notebooks,
            student_seconds=student_seconds,
        )
        return grade_submissions(collection.submissions, templates, jobs, opts, seed, progress)
    finally:
        collection.close()
