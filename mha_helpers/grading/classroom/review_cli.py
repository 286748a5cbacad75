"""The options of ``mha-course review``, ``report`` and ``feedback-zip`` (kept out of
:mod:`mha_helpers.cli` so that file stays small; the commands are in :mod:`.review_commands`).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["add_parsers"]


def _review(args) -> int:
    from .review_commands import review_command

    return review_command(args)


def _report(args) -> int:
    from .review_commands import report_command

    return report_command(args)


def _feedback_zip(args) -> int:
    from .review_commands import feedback_zip_command

    return feedback_zip_command(args)


def add_parsers(sub, add_course_option) -> None:
    p = sub.add_parser(
        "review",
        help="grade written answers question by question (offline HTML pages)",
        description="Write one offline HTML page per assignment and written-answer question "
        "with every student's answer (identical answers grouped, scored once), or record the "
        "decisions files the pages save (--record). Exit 0 when all went well, 1 when "
        "something needs a look, 2 for a usage error.",
    )
    p.add_argument("paths", nargs="*", type=Path, help="the submissions, as given to grade")
    p.add_argument("--gradebook", type=Path, required=True, help="the gradebook CSV")
    p.add_argument("--out", type=Path, help="folder for the pages: DIR/<assignment>/<id>.html")
    p.add_argument("--roster", type=Path, metavar="LMS.csv", help="as given to grade")
    p.add_argument("--assignment", action="append", metavar="NAME", help="only this one")
    p.add_argument("--question", action="append", metavar="GRADE_ID", help="only this one")
    p.add_argument(
        "--record",
        action="append",
        type=Path,
        metavar="DECISIONS.json",
        help="record a decisions file saved by a page (repeatable); with the submissions "
        "given too, a decision for an answer that has changed since is refused",
    )
    p.add_argument("--feedback", type=Path, help="with --record: the feedback folder to update")
    p.add_argument(
        "--import-edits",
        action="store_true",
        help="with --record: keep hand edits of the gradebook CSV as decisions (without it, a "
        "CSV changed by hand stops the command, and nothing is written)",
    )
    add_course_option(p)
    p.set_defaults(func=_review)

    p = sub.add_parser(
        "report",
        help="the class at a glance: an HTML report per assignment",
        description="Write DIR/<assignment>/report.html with its figures beside it: the score "
        "distribution, full marks per question, the classic mistakes the grader named, rows "
        "that need a look, pending written answers, lateness, and pairs of identical answer "
        "code (with the submissions given).",
    )
    p.add_argument("paths", nargs="*", type=Path, help="the submissions (for identical code)")
    p.add_argument("--gradebook", type=Path, required=True, help="the gradebook CSV")
    p.add_argument("--out", type=Path, required=True, help="folder for the reports")
    p.add_argument("--roster", type=Path, metavar="LMS.csv", help="as given to grade")
    p.add_argument("--assignment", action="append", metavar="NAME", help="only this one")
    add_course_option(p)
    p.set_defaults(func=_report)

    p = sub.add_parser(
        "feedback-zip",
        help="the feedback files as one zip for the LMS's feedback upload",
        description="Pack each student's HTML feedback as Canvas's 're-upload submissions' "
        "or Moodle's 'upload multiple feedback files in a zip' takes it.",
    )
    p.add_argument("--to", choices=["canvas", "moodle"], required=True)
    p.add_argument("--gradebook", type=Path, required=True, help="the gradebook CSV")
    p.add_argument("--feedback", type=Path, required=True, help="the feedback folder")
    p.add_argument("--assignment", metavar="NAME", help="the assignment (one per upload)")
    p.add_argument("--out", type=Path, required=True, help="the zip to write")
    p.set_defaults(func=_feedback_zip)
