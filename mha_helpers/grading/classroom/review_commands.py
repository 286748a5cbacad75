"""``mha-course review`` (written answers, question by question), ``mha-course report`` (the
class at a glance) and ``mha-course feedback-zip`` (feedback files for the LMS).

Exit status as the other instructor commands: 0 all went well, 1 something needs a look, 2 a
usage error (nothing written).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..course import find_course
from . import feedback
from . import gradebook as gb
from .review_page import review_page
from .review_store import (
    class_answers,
    comments_by_answer,
    record_decisions,
    review_answers,
    solution_cells,
    student_key,
    uses_database,
)
from .untrusted import safe_console

__all__ = ["review_command", "report_command", "feedback_zip_command", "model_answer"]


def _usage(command: str, message: str) -> int:
    print(f"mha-course {command}: {message}", file=sys.stderr)
    return 2


def _setup(args, command: str):
    """(course, templates, manual_ids, roster) or a usage message."""
    from .assignments import load_templates
    from .lms import RosterError, read_roster

    try:
        course = find_course(getattr(args, "course", None))
    except Exception as exc:
        return str(exc)
    roster = None
    if getattr(args, "roster", None):
        try:
            roster = read_roster(args.roster)
        except RosterError as exc:
            return f"--roster: {exc}"
    templates = load_templates(course)
    manual_ids = {
        a: {q.grade_id: float(q.points) for q in t.questions if q.kind == "manual"}
        for a, t in templates.items()
    }
    return course, templates, manual_ids, roster


def model_answer(course, assignment: str, grade_id: str) -> str:
    """The solution notebook's answer to a written question."""
    return solution_cells(course, assignment).get(grade_id, "")


def review_command(args) -> int:
    """``mha-course review``: write the pages, or ``--record`` decisions files."""
    safe_console()
    setup = _setup(args, "review")
    if isinstance(setup, str):
        return _usage("review", setup)
    course, templates, manual_ids, roster = setup
    book = Path(args.gradebook)
    if not book.is_file():
        return _usage("review", f"no such gradebook: {book} (grade the class first)")
    missing = [str(p) for p in args.paths or [] if not Path(p).exists()]
    if missing:
        return _usage("review", f"no such file or folder: {', '.join(missing)}")
    if args.record:
        return _record(args, book, templates, manual_ids, roster)
    if not args.paths and not uses_database(book):
        return _usage("review", "give the submissions (as given to mha-course grade)")
    if not args.out:
        return _usage("review", "give --out DIR for the pages")
    return _write_pages(args, course, book, templates, roster)


def _wanted(args, templates) -> list:
    """The written-answer questions to review: (assignment, question)."""
    out = []
    for a, t in sorted(templates.items()):
        if args.assignment and a not in args.assignment:
            continue
        for q in t.questions:
            if q.kind == "manual" and (not args.question or q.grade_id in args.question):
                out.append((a, q))
    return out


def _write_pages(args, course, book: Path, templates: dict, roster) -> int:
    subs = None if uses_database(book) else class_answers(args.paths, templates, roster, book)
    out = Path(args.out)
    written = []
    for a, q in _wanted(args, templates):
        answers = review_answers(book, a, q.grade_id, subs)
        if not answers:
            continue
        criteria = tuple((q.extra or {}).get("criteria") or ())
        page = review_page(
            a,
            q.grade_id,
            q.prompt,
            float(q.points),
            answers,
            model_answer(course, a, q.grade_id),
            criteria,
        )
        path = out / a / f"{q.grade_id}.html"
        gb.atomic_write(path, page)
        pending = sum(1 for x in answers if x.points is None)
        written.append(path)
        print(f"wrote {path}: {len(answers)} answers, {pending} still to score")
    if not written:
        print("no written answers to review in this gradebook")
        return 1
    print(
        "open a page in a browser, score, then download the decisions and record them with\n"
        f"  mha-course review --record DECISIONS.json --gradebook {book} --feedback DIR"
    )
    return 0


def _current(args, templates, roster, book) -> dict | None:
    if not args.paths or uses_database(book):
        return None  # the database checks each decision's text itself
    from .review_page import answer_sha256

    return {
        (student_key(s.student_id), s.assignment, gid): answer_sha256(text)
        for s in class_answers(args.paths, templates, roster, book)
        for gid, text in s.written.items()
    }


def _record(args, book: Path, templates, manual_ids, roster) -> int:
    files = [Path(f) for f in args.record]
    absent = [str(f) for f in files if not f.is_file()]
    if absent:
        return _usage("review", f"--record: no such file: {', '.join(absent)}")
    current = _current(args, templates, roster, book)
    try:
        result, _, records = record_decisions(
            book, files, manual_ids, current, templates, getattr(args, "import_edits", False)
        )
    except ValueError as exc:
        return _usage("review", str(exc))
    print(
        f"recorded {result.recorded} decision(s) into {book}"
        + (f"; {result.unchanged} already recorded" if result.unchanged else "")
    )
    for p in result.problems:
        print(f"  not recorded: {p}")
    if args.feedback and result.changed_keys:
        changed = [r for r in records if gb.record_key(r) in result.changed_keys]
        said: dict = {}
        for (key, a, gid), text in comments_by_answer(book).items():
            said.setdefault((key, a), {})[gid] = text
        files_changed = feedback.refresh_feedback(args.feedback, changed, manual_ids, said)
        print(
            f"updated {len(files_changed)} feedback file(s) in {args.feedback} (points and "
            "comments)"
        )
    elif result.changed_keys:
        print("give --feedback DIR as well to put the points and comments into the feedback")
    return 1 if result.problems else 0


def report_command(args) -> int:
    """``mha-course report``: an HTML report per assignment, figures beside it."""
    from .class_report import write_reports

    safe_console()
    setup = _setup(args, "report")
    if isinstance(setup, str):
        return _usage("report", setup)
    course, templates, manual_ids, roster = setup
    book = Path(args.gradebook)
    if not book.is_file():
        return _usage("report", f"no such gradebook: {book} (grade the class first)")
    subs = class_answers(args.paths, templates, roster, book) if args.paths else []
    paths = write_reports(book, templates, subs, Path(args.out), course, args.assignment)
    for p in paths:
        print(f"wrote {p}")
    if not args.paths:
        print("  note: give the submissions too, to list pairs of identical answer code")
    return 0 if paths else 1


def feedback_zip_command(args) -> int:
    """``mha-course feedback-zip``: the feedback files packed as Canvas's or Moodle's upload
    of feedback files takes them."""
    from .lms_feedback import canvas_feedback_zip, moodle_feedback_zip

    safe_console()
    book = Path(args.gradebook)
    if not book.is_file():
        return _usage("feedback-zip", f"no such gradebook: {book}")
    if not Path(args.feedback).is_dir():
        return _usage("feedback-zip", f"--feedback {args.feedback}: no such folder")
    _, records = gb.read_gradebook(book)
    assignments = sorted({r["assignment"] for r in records if r["assignment"]})
    if args.assignment:
        if args.assignment not in assignments:
            return _usage("feedback-zip", f"--assignment {args.assignment}: not in {book}")
    elif len(assignments) == 1:
        args.assignment = assignments[0]
    else:
        return _usage(
            "feedback-zip",
            f"an upload is one assignment's: choose it with --assignment (one of "
            f"{', '.join(assignments)})",
        )
    make = canvas_feedback_zip if args.to == "canvas" else moodle_feedback_zip
    packed, problems = make(records, Path(args.feedback), args.assignment, Path(args.out))
    print(f"wrote {args.out}: feedback of {packed} student(s) for {args.to}")
    for p in problems:
        print(f"  note: {p}")
    return 1 if problems else 0
