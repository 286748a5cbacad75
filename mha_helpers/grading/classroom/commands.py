"""The instructor's commands: ``mha-course grade``, ``check-solutions`` and ``export``.

They parse nothing themselves (see :mod:`mha_helpers.cli`); they check the usage, grade with
:mod:`.grade`, merge into the gradebook with :mod:`.gradebook`, write feedback with
:mod:`.feedback` and LMS files with :mod:`.lms`, print a summary and return the exit status: 0
when every row is ok, 1 when something needs a look, 2 for a usage error (in which case nothing
is written).
"""

from __future__ import annotations

import re
import signal
import sqlite3
import sys
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ..course import Course, find_course
from ..sandbox import bubblewrap, process
from . import feedback
from . import gradebook as gb
from . import gradebook_store as store
from .assignments import load_templates
from .collect import NEEDS_A_LOOK, Submission, collect
from .grade import Options, grade_submissions
from .gradebook_view import standing_manual, view_records
from .lms import Roster, RosterError, read_roster
from .row import row_key
from .untrusted import clean_text, normalise_name, safe_console

__all__ = ["grade_command", "check_solutions"]


def grade_command(args) -> int:
    """``mha-course grade``: exit 0 when every row is ok, 1 when any is not (a ``missing`` row
    included, or a manual score could not be merged), 2 for a usage error (nothing written)."""
    previous = _end_sandboxes_on_signals()
    try:
        return _grade_command(args)
    finally:
        for signum, handler in previous.items():
            try:
                signal.signal(signum, handler)
            except (ValueError, OSError, TypeError):
                pass


@dataclass
class _Setup:
    """What ``mha-course grade`` works with once its usage is checked."""

    course: Course
    paths: list
    roster: Roster | None
    out: Path
    old_columns: list  # the existing gradebook's (empty when there is none)
    old_records: list
    isolate: bool
    late_factor: float | None  # as given (None: the gradebook's, if it has one)
    due: dict = field(default_factory=dict)  # assignment -> due time (ISO, UTC)
    picks: dict = field(default_factory=dict)  # (key, assignment) -> the file picked to count
    copies: list = field(default_factory=list)  # this run's copies that do not count


def _grade_command(args) -> int:
    safe_console()  # a name the terminal cannot show is escaped, never an error
    setup = _setup(args)
    if isinstance(setup, str):
        print(f"mha-course grade: {setup}", file=sys.stderr)
        return 2
    if setup.paths and setup.isolate:
        reason = bubblewrap.probe()
        if reason:
            print(bubblewrap.sandbox_help(reason), file=sys.stderr)
            return 2
        if not _memory_bounded_or_allowed(args):
            return 2
    templates = load_templates(setup.course)
    manual_ids = {
        a: {q.grade_id: float(q.points) for q in t.questions if q.kind == "manual"}
        for a, t in templates.items()
    }
    origin = store.origin_of("grade", getattr(args, "grader", None))
    db = _open_db(args, setup, manual_ids, origin)
    if isinstance(db, str):
        print(f"mha-course grade: {db}", file=sys.stderr)
        return 2
    try:
        return _grade_into(args, setup, db, templates, manual_ids, origin)
    finally:
        db.close()


def _open_db(args, setup: _Setup, manual_ids: dict, origin: str):
    """The gradebook database beside ``--out`` (a CSV of before the database imported into
    it), once the CSV is known to hold no hand edits (or they are imported); the existing
    rows become ``setup.old_records``. Returns what to say instead when it cannot be used."""
    try:
        db, imported = store.open_for_csv(setup.out, manual_ids, origin)
    except (ValueError, OSError, sqlite3.Error) as exc:
        return f"--out {setup.out}: {exc} (nothing was written)"
    try:
        refusal, lines = store.check_edits(
            db, setup.out, getattr(args, "import_edits", False), manual_ids, origin
        )
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        refusal, lines = f"--out {setup.out}: {exc}; nothing was written", []
    if refusal:
        db.close()
        return refusal
    for line in ([imported] if imported else []) + lines:
        print(line)
    setup.old_records = [st["record"] for st in db.row_states()]
    for (key, assignment), mine in db.decisions_by_row().items():
        picked = [d for d in mine if d.kind == "pick"]
        if picked:
            setup.picks[(key, assignment)] = picked[-1].comment
    with db.transaction():  # due dates are remembered
        setup.due = db.get_meta("due", {}) | setup.due
        db.set_meta("due", setup.due)
    return db


def _grade_into(args, setup: _Setup, db, templates: dict, manual_ids: dict, origin) -> int:
    """Grade, store the run in the database, merge ``--manual``, rewrite the CSV view, write
    the feedback and print what needs a look."""
    t0 = time.perf_counter()
    rows, layouts, expected = _graded_rows(setup, templates, args)
    records, counts = _merged_records(setup, rows, templates, expected, manual_ids)
    kinds = {a: {q.grade_id: q.kind for q in t.questions} for a, t in templates.items()}
    db.store(rows, records, manual_ids, origin, copies=setup.copies, kinds=kinds)
    _record_picks(db, rows, setup.picks, origin)
    problems: list = []
    merged = 0
    changed: set = set()
    if args.manual:
        merged, problems, changed = _manual_decisions(db, args.manual, manual_ids, origin)
    view = store.write_view(db, setup.out, templates)
    if rows:  # the verdicts' details (mistakes named) for mha-course report
        from .review_store import save_results

        save_results(rows, setup.out)
    print(
        f"wrote {setup.out}: {counts['added']} rows added, {counts['replaced']} replaced, "
        f"{counts['kept']} kept"
    )
    comments = _sync_rows(rows, db, templates)
    unwritten = _write_feedback(args, rows, view, changed, manual_ids, comments)
    _print_summary(args, setup, rows, layouts, templates, time.perf_counter() - t0)
    if args.manual:
        print(f"manual scores: {merged} merged from {args.manual}")
        for p in problems:
            print(f"  not merged: {p}")
    bad = _print_rows_to_look_at(rows)
    changed_answers = print_pending(db, setup.out)
    return 1 if bad or problems or unwritten or changed_answers else 0


def _record_picks(db, rows: list, picks: dict, origin: str) -> None:
    """A file given by itself counts: record that choice (once) as a ``pick`` decision."""
    with db.transaction():
        for r in rows:
            picked = any(str(n).startswith("picked by the instructor") for n in r["notes"])
            if picked and picks.get(row_key(r)) != r.get("shown"):
                db.add_decision(
                    "pick", r["student_id"], r["assignment"] or "",
                    answer_sha256=(r.get("submitted") or {}).get("sha256", ""),
                    comment=r.get("shown", ""), origin=origin,
                )  # fmt: skip


def _manual_decisions(db, path, manual_ids: dict, origin: str) -> tuple[int, list, set]:
    """``--manual``: each line's points become a decision for the answer text the row has
    now (they stand while it is unchanged). Returns (lines merged, problems, keys changed)."""
    view = db.view()
    found, problems = gb.manual_targets(view, path, manual_ids)
    states = {(st["key"], st["assignment"]): st for st in db.row_states()}
    decided = db.decisions_by_row()
    changed: set = set()
    with db.transaction():
        for targets, gid, value, comment in found:
            for rec in targets:
                key = gb.record_key(rec)
                st = states[key]
                sha = st["written"][gid][0]
                standing, _ = standing_manual(decided.get(key, []), gid, sha)
                if standing and standing.points == value and standing.comment == comment:
                    continue  # the same points again: nothing new to record
                db.add_decision(
                    "manual", rec["student_id"], rec["assignment"], grade_id=gid,
                    answer_sha256=sha, points=value, comment=comment,
                    origin=f"{origin}, {Path(path).name}",
                )  # fmt: skip
                changed.add(key)
    return len(found), problems, changed


def print_pending(db, out) -> int:
    """Say how many written answers wait for the instructor (and list the changed ones);
    return how many changed since they were scored."""
    waiting = db.pending()
    if not waiting:
        return 0
    changed = [w for w in waiting if w.status == "changed"]
    print(
        f"{len(waiting)} written answer(s) pending ({len(changed)} changed since they were "
        f"scored); list them: mha-course pending {out}"
    )
    for w in changed:
        print(
            clean_text(
                f"  changed: {w.student} [{w.student_id}] {w.assignment} {w.grade_id}: "
                f"{w.earlier.points:g} points were for an earlier text; pending again"
            )
        )
    return len(changed)


def _memory_bounded_or_allowed(args) -> bool:
    """Refuse to grade where part of the sandbox's memory is not bounded, unless the
    instructor passed --allow-unbounded-memory; say what is not bounded either way."""
    unbounded = bubblewrap.unbounded()
    for what in unbounded:
        print(f"WARNING: not bounded: {what}", file=sys.stderr)
    if unbounded and not getattr(args, "allow_unbounded_memory", False):
        print(
            "mha-course grade: refusing to grade with memory that no limit counts (a cgroup "
            "for the grader, or a kernel that lets it make user namespaces, fixes this); pass "
            "--allow-unbounded-memory to grade anyway",
            file=sys.stderr,
        )
        return False
    return True


def _setup(args) -> _Setup | str:
    """Check the usage before anything is graded or written: the course, the paths, the
    manual scores, the late factor, the roster and an existing gradebook. Returns what to say
    when something is wrong."""
    try:
        course = find_course(getattr(args, "course", None))
    except Exception as exc:
        return str(exc)
    paths = list(args.paths or [])
    if not paths and not args.manual and not getattr(args, "import_edits", False):
        return "give the submissions to grade (folders, notebooks or zips)"
    missing = [str(p) for p in paths if not Path(p).exists() and not Path(p).is_symlink()]
    if missing:
        return f"no such file or folder: {', '.join(missing)} (nothing was written)"
    if getattr(args, "student", None) and (len(paths) != 1 or Path(paths[0]).is_dir()):
        return "--student ID goes with one notebook or zip given by its path (nothing was written)"
    if args.manual and not Path(args.manual).is_file():
        return f"--manual {args.manual}: no such file (nothing was written)"
    late_factor = getattr(args, "late_factor", None)
    if late_factor is not None and not (0 <= late_factor <= 1):
        return f"--late-factor {late_factor:g}: give a factor from 0 to 1 (nothing was written)"
    roster = None
    if getattr(args, "roster", None):
        try:
            roster = read_roster(args.roster)
        except RosterError as exc:
            return f"--roster: {exc} (nothing was written)"
    out = Path(args.out)
    old_columns, old_records = [], []
    if out.exists():
        try:
            old_columns, old_records = gb.read_gradebook(out)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            return f"--out {out}: {exc}; choose another file (nothing was written)"
    isolate = not getattr(args, "unsafe_no_sandbox", False)
    try:
        due = parse_due(getattr(args, "due", None))
    except ValueError as exc:
        return f"{exc} (nothing was written)"
    return _Setup(course, paths, roster, out, old_columns, old_records, isolate, late_factor, due)


def _graded_rows(setup: _Setup, templates: dict, args) -> tuple[list, list, set]:
    """Collect and grade the submissions: the counted rows (a ``missing`` row where a download
    lacks a student's notebook), the layouts found, and the assignments the downloads are for."""
    if not setup.paths:
        return [], [], set()
    collection = collect(setup.paths)
    subs = collection.submissions
    if getattr(args, "student", None):
        _given_student(subs, args.student)
    if setup.roster is not None:
        apply_roster(subs, setup.roster)
    picks = {
        (normalise_name(r["student_id"]).casefold(), r["assignment"]): r.get("file", "")
        for r in setup.old_records
        if "picked by the instructor" in r.get("notes", "")
    } | setup.picks
    try:
        opts = Options(
            timeout=args.timeout,
            isolate=setup.isolate,
            max_notebooks=max(1, getattr(args, "max_notebooks", 3) or 1),
            student_seconds=getattr(args, "student_budget", None),
        )
        seed = getattr(args, "seed", None)
        rows = grade_submissions(subs, templates, args.jobs, opts, seed, progress=True, picks=picks)
    finally:
        collection.close()
    extra, expected = expected_missing(rows, subs, templates, setup.due)
    setup.copies = [r for r in rows if r["status"] == "superseded"]
    rows = [r for r in rows if r["status"] != "superseded"] + extra
    if setup.roster is not None:  # the roster gives every student's missing rows by assignment
        rows = [
            r
            for r in rows
            if not (
                r["status"] == "missing"
                and not r["assignment"]
                and setup.roster.find(r["student_id"])
            )
        ]
    return rows, collection.layouts, expected


def _say_what_is_replaced(new_records: list, old_records: list) -> None:
    """A flagged file that replaces a row graded earlier from another file says what that row
    had (a file of another assignment in an upload never replaces a row silently)."""
    old = {gb.record_key(r): r for r in old_records}
    for rec in new_records:
        before = old.get(gb.record_key(rec))
        if (
            before is not None
            and NEEDS_A_LOOK in rec.get("notes", "")
            and before.get("file") != rec.get("file")
            and before.get("status") != "missing"
        ):
            rec["notes"] += (
                f"; {NEEDS_A_LOOK}replaces the earlier {rec['assignment']} row "
                f"({before.get('total')} of {before.get('max')}, {before.get('file')}, "
                f"status {before.get('status')})"
            )


def _given_student(subs: list, student_id: str) -> None:
    """``--student ID``: the file graded by its path is this student's."""
    for sub in subs:
        sub.student_id = sub.student = normalise_name(student_id)
        sub.identity = "--student on the command line"
        sub.candidates = []  # the instructor has decided: the roster does not read the name
        sub.notes = [n for n in sub.notes if not str(n).startswith(NEEDS_A_LOOK)]


def _merged_records(setup: _Setup, rows: list, templates, expected: set, manual_ids) -> tuple:
    """The gradebook's records: this run's rows merged into the existing gradebook, a
    ``missing`` row for every roster student without one (added to ``rows`` too), and the late
    policy (given now, else the gradebook's) applied. Returns the records and the counts."""
    late_factor = setup.late_factor
    if late_factor is None:  # the policy is remembered in the gradebook
        late_factor = next(
            (
                float(r["late_factor"])
                for r in setup.old_records
                if r.get("late") == "yes" and r.get("late_factor") not in (None, "")
            ),
            None,
        )
    factor = 1.0 if late_factor is None else late_factor
    new_records = [_record(gb, r, factor) for r in rows]
    _say_what_is_replaced(new_records, setup.old_records)
    records, counts = gb.merge_rows(  # written-answer points are decisions, not carried
        new_records, setup.old_records, {}, keep_names=setup.roster is None
    )
    if setup.roster is not None:
        extra = roster_missing(records, setup.roster, sorted(expected), templates)
        rows += extra
        new_records = [_record(gb, r, factor) for r in extra]
        records += new_records
        counts["added"] += len(new_records)
    if late_factor is not None:
        for rec in records:
            gb.set_late_factor(rec, late_factor)
    return records, counts


def _write_feedback(
    args, rows: list, records: list, changed: set, manual_ids: dict, comments=None
) -> list:
    """Write this run's feedback, and refresh the written-answer points of earlier feedback
    that ``--manual`` changed. Returns ``(student, assignment, why)`` of the files that could
    not be written."""
    unwritten: list = []
    if args.feedback and rows:
        files = feedback.write_feedback(rows, args.feedback, failed=unwritten)
        for student, assignment, why in unwritten:
            print(f"could not write the feedback of {student} ({assignment}): {why}")
        print(
            f"wrote feedback for {len(files)} student-assignment pairs to {args.feedback}/"
            "<assignment>/<name>_<student_id>.md (and .html)"
        )
    if args.feedback and changed:
        graded_now = {row_key(r) for r in rows}
        refreshed = feedback.refresh_feedback(
            args.feedback,
            [
                r
                for r in records
                if gb.record_key(r) in changed and gb.record_key(r) not in graded_now
            ],
            manual_ids,
            comments,
        )
        if refreshed:
            print(f"refreshed the written-answer points in {len(refreshed)} feedback file(s)")
    elif changed and not args.feedback:
        print("give --feedback DIR as well to put the merged points into the feedback files")
    return unwritten


def _print_summary(args, setup: _Setup, rows, layouts, templates, elapsed: float) -> None:
    """The layouts found, the roster, the sandbox warning, the per-question summary and the
    speed."""
    for given, layout in layouts:
        print(f"layout of {given}: {layout}")
    if setup.roster is not None:
        print(
            f"roster {Path(args.roster).name}: {setup.roster.kind}, "
            f"{len(setup.roster.students)} students"
        )
    if not setup.isolate and rows:
        print("WARNING: graded WITHOUT a sandbox (--unsafe-no-sandbox); every row says so")
    if rows:
        print(gb.summary_text(rows, {a: t.questions for a, t in templates.items()}))
        graded = sum(1 for r in rows if r["status"] != "missing")
        print(
            f"elapsed {elapsed:.1f} s with {args.jobs} worker(s): {graded / elapsed:.2f} "
            "submissions/s"
        )


def _print_rows_to_look_at(rows: list) -> list:
    """List the rows that need a look (not ``ok``, or a student not in the roster); return
    them."""
    bad = [
        r
        for r in rows
        if r["status"] != "ok"
        or any(str(n).startswith((NOT_IN_ROSTER, NEEDS_A_LOOK)) for n in r["notes"])
    ]
    if bad:
        print(f"{len(bad)} row(s) need a look:")
        for r in bad:
            print(
                f"  {r['student']}"
                + (f" [{r['student_id']}]" if r["student_id"] != r["student"] else "")
                + f" ({r['assignment'] or '?'}): {r['status']}"
                + (f" - {_first_note(r['notes'])}" if r["notes"] else "")
            )
    return bad


def _first_note(notes: list) -> str:
    """The note to show on the console: the first that asks for a look, else the first."""
    return next((n for n in notes if str(n).startswith(NEEDS_A_LOOK)), notes[0])


def _end_sandboxes_on_signals() -> dict:
    """On SIGTERM or Ctrl-C, end every running sandbox at once (and start no new one), then
    exit. Returns the handlers it replaced."""
    previous: dict = {}
    if threading.current_thread() is not threading.main_thread():
        return previous

    def stop(signum, frame):
        process.kill_all()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            previous[signum] = signal.signal(signum, stop)
        except (ValueError, OSError):
            pass
    return previous


def _record(gb, row: dict, factor: float = 1.0) -> dict:
    """The gradebook record of a row; a row that cannot be made into one becomes an error
    record (who, and why), so every other row is still written."""
    try:
        return gb.row_record(row, factor)
    except Exception as exc:
        return {
            "student_id": clean_text(row.get("student_id") or row.get("student"), max_chars=200),
            "student": clean_text(row.get("student"), max_chars=200),
            "assignment": clean_text(row.get("assignment"), max_chars=200),
            "total": "0",
            "max": "",
            "late": "no",
            "late_factor": "1",
            "score": "0",
            "file": "",
            "pending": "0",
            "status": "grader-error",
            "notes": f"this row could not be written ({type(exc).__name__}); regrade it",
        }


NOT_IN_ROSTER = "not in the roster"


def apply_roster(subs: list, roster) -> None:
    """Give each submission its roster identity and display name (and Moodle's late marking);
    flag a submission from a student the roster does not know. A file name that reads as
    several students is attributed only when exactly one reading is a roster student's id with
    that student's name; otherwise it stays credited to no one."""
    for sub in subs:
        if sub.candidates and not _roster_decides(sub, roster):
            continue
        hit = roster.find(sub.student_id, sub.student)
        if hit is None:
            sub.notes.append(
                f"{NOT_IN_ROSTER} ({Path(roster.path).name}): graded, but check who this is"
            )
            continue
        if sub.student_id != hit.id:
            sub.notes.append(f"matched to roster student {hit.id} by {sub.student_id!r}")
            sub.identity = f"the roster, matched by {sub.student_id!r}"
        sub.student_id, sub.student = hit.id, hit.name
        if hit.late is not None and sub.path is not None:
            if hit.late and not sub.late:
                sub.late_source = "the Moodle worksheet's status"
            sub.late = sub.late or hit.late


def _squeezed(name: str) -> str:
    """A name as Canvas's ``lastfirst`` writes it: ASCII letters and digits, lower case."""
    plain = unicodedata.normalize("NFKD", normalise_name(name).casefold())
    return re.sub(r"[^a-z0-9]+", "", plain.encode("ascii", "ignore").decode())


def _roster_decides(sub: Submission, roster) -> bool:
    """Attribute an ambiguous file name by the roster when it decides uniquely (True)."""
    ids = list(dict.fromkeys(i for _, i in sub.candidates))
    fits = {i for i in ids if i in roster.by_id}  # a reading whose id no student has: not it
    if len(fits) > 1:  # several students' ids: the one whose name the reading gives
        fits = {
            i
            for name, i in sub.candidates
            if i in fits and _squeezed(roster.by_id[i].name) == _squeezed(name)
        }
    where = Path(roster.path).name
    if len(fits) != 1:
        sub.notes.append(
            f"the roster ({where}) does not decide between {', '.join(ids)}: "
            f"{len(fits)} of the readings are a roster student's id and name"
        )
        return False
    chosen = fits.pop()
    sub.notes = [n for n in sub.notes if "credited to no one" not in n]
    sub.notes.append(
        f"the file name reads as {' or '.join(ids)}; attributed to {chosen} by the roster "
        f"({where}): the only reading whose name is that student's"
    )
    sub.student_id, sub.identity = chosen, f"the roster {where}, by name among the readings"
    return True


def _missing_row(student_id, student, assignment, t, note) -> dict:
    return {
        "student_id": student_id,
        "student": student,
        "assignment": assignment,
        "file": "",
        "shown": "",
        "late": False,
        "status": "missing",
        "points": {q.grade_id: 0.0 for q in t.questions} if t else {},
        "questions": {},
        "total": 0.0,
        "max": float(sum(q.points for q in t.questions)) if t else 0.0,
        "pending": 0.0,
        "notes": [note],
        "timing": {},
    }


UNREADABLE = ("refused", "not-json", "not-a-notebook", "empty", "too-large", "old-format")


def _wrong_assignment(r: dict, expected: str, due: dict) -> None:
    """A file handed in for ``expected`` that is another assignment: graded as what it is,
    listed as needing a look, and late by its own assignment's due date when it is known."""
    own = r["assignment"]
    r["notes"].append(
        f"{NEEDS_A_LOOK}handed in with the {expected} submissions, but it is {own}: graded as {own}"
    )
    when = (r.get("submitted") or {}).get("mtime")
    if own in due and when:
        r["late"] = when > due[own]
        r["late_source"] = f"the file's time {when} against {own}'s due date {due[own]}"
        r["notes"].append(f"{'late' if r['late'] else 'on time'} by {own}'s due date {due[own]}")
    elif r.get("late"):
        r["notes"].append(
            f"marked late for {expected}; {own}'s due date is not known (give --due {own}=DATE)"
        )


def parse_due(values) -> dict:
    """``--due ASSIGNMENT=YYYY-MM-DD[THH:MM]`` (UTC; a date alone means its end) as
    {assignment: ISO time}; raise ValueError for a value that is not one."""
    out = {}
    for given in values or []:
        a, sep, when = str(given).partition("=")
        m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::(\d{2}))?)?Z?", when.strip())
        if not sep or not a.strip() or not m:
            raise ValueError(
                f"--due {given!r}: give ASSIGNMENT=YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)"
            )
        clock = f"{m.group(2)}:{m.group(3) or '00'}" if m.group(2) else "23:59:59"
        out[a.strip()] = f"{m.group(1)}T{clock}Z"
    return out


def expected_missing(rows: list, subs: list, templates: dict, due=None) -> tuple[list, set]:
    """The assignment a download is for is the one most of its notebooks are (a clear
    majority). A student folder without a notebook, or a file that could not be read, fills
    that assignment's row (``missing``, or the file's status); a file uploaded to the wrong
    assignment is graded as what it is, and the row it was expected to fill says ``missing``,
    with a note. Returns the rows to add and the assignments the downloads are for."""
    extra, expected_set = [], set()
    by_batch: dict = {}
    for row, sub in zip(rows, subs):
        by_batch.setdefault(sub.batch, []).append(row)
    for batch_rows in by_batch.values():
        counts: dict = {}
        for r in batch_rows:
            if r["assignment"] and r["status"] != "superseded":
                counts[r["assignment"]] = counts.get(r["assignment"], 0) + 1
        if not counts:
            continue
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])
        expected, n = ranked[0]
        if n * 2 <= sum(counts.values()):
            expected_set |= set(counts)  # no clear majority: every assignment is "expected"
            continue
        expected_set.add(expected)
        t = templates.get(expected)
        maximum = float(sum(q.points for q in t.questions)) if t else 0.0
        have = {row_key(r)[0] for r in batch_rows if r["assignment"] == expected}
        for r in batch_rows:
            if r["assignment"] or row_key(r)[0] in have:
                continue
            if r["status"] == "missing":
                kept = {"file": r["file"], "shown": r["shown"]}
                r.update(_missing_row(r["student_id"], r["student"], expected, t, r["notes"][0]))
                r.update(kept)
            elif r["status"] in UNREADABLE:
                r.update(assignment=expected, max=maximum)
                r["notes"].append(f"counted as {expected}, the assignment of its download")
            else:
                continue
            have.add(row_key(r)[0])
        for r in batch_rows:
            if r["status"] == "superseded" or not r["assignment"] or r["assignment"] == expected:
                continue
            if row_key(r)[0] in have:
                continue
            _wrong_assignment(r, expected, due or {})
            extra.append(
                _missing_row(
                    r["student_id"],
                    r["student"],
                    expected,
                    t,
                    f"no {expected} notebook: the file handed in for it ({r['shown']}) "
                    f"is {r['assignment']} and was graded as that",
                )
            )
            have.add(row_key(r)[0])
    return extra, expected_set


def roster_missing(records: list, roster, assignments: list, templates: dict) -> list:
    """A ``missing`` row for every roster student without a row in an assignment graded now."""
    have = {gb.record_key(r) for r in records}
    extra = []
    for a in assignments:
        for s in roster.students:
            if (normalise_name(s.id).casefold(), a) not in have:
                extra.append(
                    _missing_row(
                        s.id, s.name, a, templates.get(a), "no submission from this student"
                    )
                )
    return extra


def _sync_rows(rows, db, templates) -> dict:
    """Copy the gradebook's view (the instructor's decisions applied) back into this run's
    rows, for the feedback. Returns the written-answer comments by record key."""
    by_key = {gb.record_key(r): (r, c, n) for r, c, n in view_records(db, with_comments=True)}
    for row in rows:
        rec, comments, notes = by_key.get(row_key(row), (None, [], []))
        t = templates.get(row["assignment"])
        if rec is None:
            continue
        row["student"] = rec["student"]  # the roster's name, kept by a regrade without one
        row["late_factor"] = float(rec.get("late_factor") or 1)
        row["late"] = rec.get("late") == "yes"
        row["status"] = rec.get("status", row["status"])
        row["notes"] = list(row["notes"]) + [n for n in notes if n not in row["notes"]]
        if t is None or row["status"] == "missing":
            continue
        for gid, points, comment in comments:
            d = row["questions"].get(gid)
            if d is not None:
                d.update(status="scored", points=float(points), comment=comment)
                row["points"][gid] = float(points)
        row["total"] = float(rec["total"] or 0)
        row["pending"] = float(rec["pending"] or 0)
    return {k: {g: c for g, _, c in v[1] if c} for k, v in by_key.items()}


def check_solutions(course=None, timeout: float = 120.0) -> int:
    """Grade every solution notebook as if a student had submitted it; each must score full
    marks with status ``ok``. Print one line per notebook; return 0 when all pass.

    Solutions are the instructor's own code: where no sandbox can be made they run unisolated
    (the output says so)."""
    course = course if isinstance(course, Course) else find_course(course)
    templates = load_templates(course)
    problems = [p for t in templates.values() for p in t.problems]
    for p in problems:
        print(f"template problem: {p}")
    paths = sorted(course.solutions.glob("*.ipynb"))
    if not paths:
        print(f"no solution notebooks in {course.solutions}")
        return 1
    isolate = bubblewrap.probe() is None
    if not isolate:
        print(f"note: no sandbox here ({bubblewrap.probe()}); the solutions run unisolated")
    subs = [Submission(p, p.stem, str(p)) for p in paths]
    rows = grade_submissions(subs, templates, 2, Options(timeout=timeout, isolate=isolate))
    failed = 0
    for path, row in zip(paths, rows):
        t = templates.get(row["assignment"])
        auto_max = sum(q.points for q in t.questions if q.kind != "manual") if t else 0.0
        auto_total = (
            sum(
                float(row["points"].get(q.grade_id) or 0) for q in t.questions if q.kind != "manual"
            )
            if t
            else 0.0
        )
        ok = row["status"] == "ok" and auto_total == auto_max and auto_max > 0
        failed += not ok
        print(
            f"{'ok  ' if ok else 'FAIL'} {path.name}: {auto_total:g}/{auto_max:g} automatic points, "
            f"status {row['status']}"
        )
        for gid, d in row["questions"].items():
            if d["status"] not in ("passed", "manual"):
                print(f"       {gid}: {d['status']}: {d.get('message', '')}")
        for n in row["notes"]:
            if not n.startswith("graded WITHOUT"):
                print(f"       note: {n}")
    return 1 if failed or problems else 0
