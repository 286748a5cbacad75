"""``mha-course export``: the gradebook as the LMS imports it, never overwriting what the LMS
holds without saying so.

Given the roster (Canvas's gradebook export, Moodle's grading worksheet), a grade or comment the
LMS already holds, and Canvas's ``EX`` (excused), is kept unless ``--overwrite``; every
conflict is listed. With several assignments in the gradebook and none named, it refuses and
lists them. ``--column ASSIGNMENT=COLUMN`` maps an assignment to its LMS column; ``--scale``
scales Canvas grades to its points possible (Moodle's worksheet always scales to its maximum).
The records come from the gradebook database when there is one (the CSV must not hold hand
edits then), else from the CSV.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import gradebook as gb
from . import gradebook_store as store
from .gradebook_db import Gradebook, db_path
from .lms import RosterError, export_canvas, export_moodle, read_roster
from .lms_feedback import moodle_comments
from .untrusted import safe_console

__all__ = ["export_command"]


class _Usage(Exception):
    pass


def _records(book: Path) -> tuple[list, list]:
    """The gradebook's (question columns, records): the database's view, else the CSV's."""
    if db_path(book).is_file():
        with Gradebook.open(book, create=False) as db:
            refusal, _ = store.check_edits(db, book, False, {}, "export")
            if refusal:
                raise _Usage(
                    refusal.replace("Run the command again with --import-edits", "Run "
                                    f"`mha-course pending {book} --import-edits`")
                )  # fmt: skip
            records = db.view()
        return store.question_columns(records, {}), records
    if not book.is_file():
        raise _Usage(f"no such gradebook: {book} (nothing was written)")
    try:
        columns, records = gb.read_gradebook(book)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise _Usage(f"{book}: {exc}") from None
    return [c for c in columns if c not in gb.FIXED_BEFORE + gb.FIXED_AFTER], records


def _assignments(args, records: list, book: Path) -> list:
    have = sorted({r["assignment"] for r in records if r["assignment"]})
    if args.assignment:
        unknown = [a for a in args.assignment if a not in have]
        if unknown:
            raise _Usage(f"--assignment {', '.join(unknown)}: not in {book} (it has: "
                         f"{', '.join(have) or 'none'})")  # fmt: skip
        return list(args.assignment)
    if not have:
        raise _Usage(f"{book} has no graded assignment to export")
    if len(have) > 1:
        raise _Usage(
            f"{book} holds {len(have)} assignments ({', '.join(have)}): name the one(s) to "
            "export with --assignment NAME (nothing was written)"
        )
    return have


def _columns(args, roster, assignments: list) -> dict:
    mapping = {}
    for given in getattr(args, "column", None) or []:
        a, sep, column = given.partition("=")
        if not sep or not a.strip() or not column.strip():
            raise _Usage(f"--column {given!r}: give ASSIGNMENT=COLUMN")
        if a.strip() not in assignments:
            raise _Usage(
                f"--column {given!r}: {a.strip()} is not exported ({', '.join(assignments)})"
            )
        if column.strip() not in roster.header:
            raise _Usage(
                f"--column {given!r}: {roster.path.name} has no column {column.strip()!r} "
                f"(its columns: {', '.join(roster.header[5:12])}...)"
            )
        mapping[a.strip()] = column.strip()
    return mapping


def _prepare(args):
    book = Path(args.gradebook)
    qids, records = _records(book)
    try:
        roster = read_roster(args.roster)
    except (RosterError, OSError) as exc:
        raise _Usage(f"--roster: {exc}") from None
    if roster.kind != args.to:
        raise _Usage(
            f"--to {args.to} needs a {args.to} roster; {args.roster} is a {roster.kind} "
            + ("gradebook export" if roster.kind == "canvas" else "grading worksheet")
        )
    factor = getattr(args, "late_factor", None)
    if factor is not None:
        if not 0 <= factor <= 1:
            raise _Usage(f"--late-factor {factor:g}: give a factor from 0 to 1")
        for rec in records:
            gb.set_late_factor(rec, factor)
    assignments = _assignments(args, records, book)
    if args.to == "moodle" and len(assignments) != 1:
        raise _Usage(
            "a Moodle worksheet is one assignment's: choose it with --assignment "
            f"(one of {', '.join(assignments)})"
        )
    return qids, records, roster, assignments, _columns(args, roster, assignments)


def export_command(args) -> int:
    """``mha-course export GRADEBOOK --to canvas|moodle --roster FILE --out FILE``: exit 0 when
    every roster student's grade was written, 1 when something needs a look (a student or an
    assignment not matched, written answers still pending, a conflict with the LMS), 2 for a
    usage error (nothing written)."""
    safe_console()  # names and paths from the gradebook and the roster: cleaned on the console
    try:
        qids, records, roster, assignments, columns = _prepare(args)
    except _Usage as exc:
        print(f"mha-course export: {exc}", file=sys.stderr)
        return 2
    overwrite = getattr(args, "overwrite", False)
    if args.to == "canvas":
        text, problems = export_canvas(records, roster, assignments, columns, overwrite,
                                       getattr(args, "scale", False))  # fmt: skip
    else:
        comments = moodle_comments(records, getattr(args, "feedback", None), assignments[0])
        text, problems = export_moodle(
            records, roster, assignments[0], qids, overwrite, comments=comments
        )
    pending = [
        r for r in records if r["assignment"] in assignments and gb.to_float(r.get("pending")) > 0
    ]
    if pending:
        problems.append(
            f"{len(pending)} row(s) still have written answers to score (pending): their "
            "exported grade leaves those points out"
        )
    gb.atomic_write(Path(args.out), text)
    ids = {s.id for s in roster.students}
    filled = sum(
        1
        for r in records
        if r["assignment"] in assignments
        and r["student_id"] in ids
        and r.get("status") not in ("missing", "superseded")
        and r.get("score", "") != ""
    )
    kind = "gradebook import" if args.to == "canvas" else "grading worksheet"
    print(
        f"wrote {args.out}: {args.to} {kind} for {len(roster.students)} students, "
        f"{len(assignments)} assignment(s) ({', '.join(assignments)}); {filled} grades filled, "
        f"{len(roster.students) * len(assignments) - filled} left as the LMS has them"
    )
    for p in problems:
        print(f"  note: {p}")
    return 1 if problems else 0
