"""The commands that record an instructor's decisions in the gradebook database, list what is
pending, and merge graders' databases: ``mha-course adjust``, ``extend``, ``remove``,
``pending`` and ``merge``.

Each opens the database beside the gradebook CSV (importing a CSV of before the database),
refuses to run while the CSV holds hand edits (unless ``--import-edits``), records its
decision with its time and origin, and rewrites the CSV. Exit 0 on success, 1 when something
needs a look (``pending``: answers wait; ``merge``: conflicts), 2 for a usage error (nothing
written).
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from ..course import find_course
from . import gradebook_store as store
from .assignments import load_templates
from .gradebook_db import Gradebook, db_path

__all__ = ["decision_command", "pending_command", "merge_command"]


class _Usage(Exception):
    pass


def _open(args, command: str):
    """``(db, templates, manual_ids, origin)`` for a command on ``args.gradebook``; raises
    :class:`_Usage` with what to say."""
    book = Path(args.gradebook)
    if not book.exists() and not db_path(book).exists():
        raise _Usage(f"no such gradebook: {book} (nothing was written)")
    try:
        course = find_course(getattr(args, "course", None))
    except Exception as exc:
        raise _Usage(str(exc)) from None
    templates = load_templates(course)
    manual_ids = {
        a: {q.grade_id: float(q.points) for q in t.questions if q.kind == "manual"}
        for a, t in templates.items()
    }
    origin = store.origin_of(command, getattr(args, "grader", None))
    try:
        db, imported = store.open_for_csv(book, manual_ids, origin)
    except (ValueError, OSError, sqlite3.Error) as exc:
        raise _Usage(f"{book}: {exc}") from None
    refusal, lines = store.check_edits(
        db, book, getattr(args, "import_edits", False), manual_ids, origin
    )
    if refusal:
        db.close()
        raise _Usage(refusal)
    for line in ([imported] if imported else []) + lines:
        print(line)
    return db, templates, manual_ids, origin


def _run(command: str, args, body) -> int:
    try:
        db, templates, manual_ids, origin = _open(args, command)
    except _Usage as exc:
        print(f"mha-course {command}: {exc}", file=sys.stderr)
        return 2
    try:
        rc = body(db, templates, manual_ids, origin)
        if isinstance(rc, str):
            print(f"mha-course {command}: {rc}", file=sys.stderr)
            return 2
        store.write_view(db, args.gradebook, templates)
        return rc
    finally:
        db.close()


def _row_or_usage(db: Gradebook, student_id: str, assignment: str):
    st = db.find_row(student_id, assignment)
    if st is None:
        have = ", ".join(db.assignments()) or "none"
        return None, (
            f"no row for student {student_id!r} in assignment {assignment!r} "
            f"(assignments in the gradebook: {have}); nothing was written"
        )
    return st, None


def decision_command(args) -> int:
    """``adjust``, ``extend`` (``--waive``: excuse) and ``remove``: one decision about one
    (student_id, assignment) row, with its reason."""
    command = args.command

    def body(db, templates, manual_ids, origin):
        st, problem = _row_or_usage(db, args.student_id, args.assignment)
        if problem:
            return problem
        if not (args.reason or "").strip():
            return "give the reason with --reason TEXT (it is recorded with the decision)"
        with db.transaction():
            if command == "adjust":
                d = db.add_decision("adjust", st["student_id"], args.assignment,
                                    points=float(args.points), comment=args.reason, origin=origin)  # fmt: skip
                said = f"score of {st['student']} [{st['student_id']}] adjusted by {d.points:+g}"
            elif command == "extend":
                kind = "waiver" if args.waive else "extension"
                db.add_decision(kind, st["student_id"], args.assignment, comment=args.reason,
                                origin=origin)  # fmt: skip
                said = (
                    f"{st['student']} [{st['student_id']}] "
                    + ("excused from" if args.waive else "granted an extension for")
                    + f" {args.assignment}"
                )
            else:
                db.add_decision("remove", st["student_id"], args.assignment,
                                answer_sha256=st["file_sha256"] or "", comment=args.reason,
                                origin=origin)  # fmt: skip
                said = (
                    f"removed the row of {st['student']} [{st['student_id']}] in "
                    f"{args.assignment} (recorded in {db.path.name}; a new file for it brings "
                    "it back)"
                )
        print(f"{said}: {args.reason} ({origin})")
        return 0

    return _run(command, args, body)


def pending_command(args) -> int:
    """``mha-course pending GRADEBOOK``: the written answers waiting for the instructor."""

    def body(db, templates, manual_ids, origin):
        waiting = db.pending(getattr(args, "assignment", None))
        if not waiting:
            print("no written answers are pending")
            return 0
        print(f"{len(waiting)} written answer(s) pending:")
        for w in waiting:
            why = (
                f"changed since it was scored ({w.earlier.points:g} points for an earlier text)"
                if w.status == "changed"
                else "not scored yet"
            )
            print(
                f"  {w.assignment} {w.grade_id} [{w.max_points:g} points]: {w.student} "
                f"[{w.student_id}] ({w.file}): {why}"
            )
        print(
            "score them in a CSV (student_id, grade_id, points, comment) and merge it: "
            f"mha-course grade --out {args.gradebook} --manual SCORES.csv"
        )
        return 1

    return _run("pending", args, body)


def merge_command(args) -> int:
    """``mha-course merge GRADEBOOK OTHER ...``: merge other graders' databases (or their
    gradebook CSVs' databases) into this gradebook."""

    def body(db, templates, manual_ids, origin):
        others = []
        for given in args.others:
            path = db_path(given)
            if not path.is_file():
                return f"no gradebook database {path} (nothing was written)"
            if path.resolve() == db.path.resolve():
                return f"{given} is this gradebook's own database"
            others.append(path)
        conflicts = []
        for path in others:
            with Gradebook.open(path, create=False) as other:
                counts = db.merge_from(other)
            print(
                f"merged {path.name}: {counts['decisions']} decision(s) added, "
                f"{counts['rows']} row(s) taken (graded more recently there)"
            )
            conflicts = counts["conflicts"]
        for c in conflicts:
            print(f"  conflict: {c}")
        return 1 if conflicts else 0

    return _run("merge", args, body)
