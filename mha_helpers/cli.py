"""``mha-course``: the course's command line.

For learners:

    mha-course validate NOTEBOOK ...    run an exercise as the grader will; verdicts on the public cases

For instructors (inside the course folder, or with --course DIR):

    mha-course execute [PATH ...]       re-execute lessons/solutions in fresh kernels and store them
    mha-course release [--check]        regenerate exercises/ and the self-check data from solutions/
    mha-course release --student-copy DIR [--for-grading]   write the folder students get
                                        (no solutions; --for-grading: value answers recorded,
                                        never confirmed by the self-check)
    mha-course check-solutions          grade every solution notebook; each must score full marks
    mha-course grade PATH ... --out GRADEBOOK.csv [--feedback DIR] [--jobs N] [--timeout S]
                     [--course DIR] [--seed N] [--manual SCORES.csv] [--roster LMS.csv]
                     [--late-factor F] [--unsafe-no-sandbox]
    mha-course export GRADEBOOK.csv --to canvas|moodle --roster LMS.csv --out FILE.csv
    mha-course review PATH ... --gradebook GRADEBOOK.csv --out DIR    written answers, by question
    mha-course review --record DECISIONS.json --gradebook GRADEBOOK.csv [--feedback DIR]
    mha-course report [PATH ...] --gradebook GRADEBOOK.csv --out DIR  the class at a glance
    mha-course feedback-zip --to canvas|moodle --gradebook GRADEBOOK.csv --feedback DIR --out F.zip
    mha-course pending GRADEBOOK.csv    the written answers waiting to be scored
    mha-course adjust GRADEBOOK.csv STUDENT_ID ASSIGNMENT POINTS --reason TEXT
    mha-course extend GRADEBOOK.csv STUDENT_ID ASSIGNMENT [--waive] --reason TEXT
    mha-course remove GRADEBOOK.csv STUDENT_ID ASSIGNMENT --reason TEXT
    mha-course merge GRADEBOOK.csv OTHER.sqlite ...   (one database per grader)

Exit status: 0 success; 1 something needs a look (a row that is not ok, a failing check);
2 a usage error (nothing written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _course_or_exit(command, course):
    from .grading.course import CourseNotFound, find_course

    try:
        return find_course(course)
    except CourseNotFound as exc:
        print(f"mha-course {command}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _cmd_execute(args) -> int:
    from .notebooks import execute_notebook, find_notebooks

    if args.paths:
        paths = args.paths
        exercises = None
    else:
        course = _course_or_exit("execute", args.course)
        paths, exercises = [course.notebooks, course.solutions], course.exercises
    notebooks = find_notebooks(paths)
    for nb in notebooks:
        if nb.resolve().parent.name == "exercises" and (
            exercises is None or nb.resolve().parent == exercises
        ):
            print(
                f"skipping {nb}: student notebooks are stored without outputs (mha-course release)"
            )
            continue
        t = execute_notebook(nb, timeout=args.timeout)
        print(
            f"executed {nb}  (kernel start {t['kernel_start']:.1f} s, cells {t['execute']:.1f} s)"
        )
    return 0


def _cmd_release(args) -> int:
    from .grading.classroom.release import ReleaseError, release, student_copy
    from .grading.course import CourseNotFound, find_course

    try:
        course = find_course(args.course)
    except CourseNotFound as exc:
        print(f"mha-course release: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "for_grading", False) and not args.student_copy:
        print("mha-course release: --for-grading goes with --student-copy DIR", file=sys.stderr)
        return 2
    if args.check or args.student_copy:  # what others get must not name the placeholder
        from .notebooks import local_preview, placeholder_problem, repository_url

        try:
            problem = placeholder_problem(repository_url(course.root), "mha-course release")
        except ValueError as exc:  # no Repository at all
            problem = f"mha-course release: {exc}"
        if problem and not local_preview(getattr(args, "local_preview", False)):
            print(problem, file=sys.stderr)
            return 1
    if args.student_copy:
        try:
            written = student_copy(
                course, args.student_copy, for_grading=getattr(args, "for_grading", False)
            )
        except ReleaseError as exc:
            print(f"mha-course release: {exc}", file=sys.stderr)
            return 2
        print(
            f"wrote the student copy to {args.student_copy}: " + ", ".join(p.name for p in written)
        )
        return 0
    solutions = sorted(course.solutions.glob("*.ipynb"))
    if not solutions:
        print(f"mha-course release: no solution notebooks in {course.solutions}", file=sys.stderr)
        return 2
    changed = release(course, check=args.check)
    if args.check:
        if changed:
            print("out of date (run `mha-course release`):")
            for p in changed:
                print(f"  {p}")
            return 1
        print(
            f"exercises/ and the self-check data are up to date with the {len(solutions)} "
            f"solution notebooks in {course.solutions}"
        )
        return 0
    for p in changed:
        print(f"wrote {p}")
    if not changed:
        print(
            f"exercises/ and the self-check data were already up to date ({len(solutions)} "
            "solution notebooks)"
        )
    return 0


def _cmd_check_solutions(args) -> int:
    from .grading.classroom.commands import check_solutions

    return check_solutions(_course_or_exit("check-solutions", args.course), timeout=args.timeout)


def _cmd_grade(args) -> int:
    from .grading.classroom.commands import grade_command

    return grade_command(args)


def _cmd_export(args) -> int:
    from .grading.classroom.export import export_command

    return export_command(args)


def _cmd_validate(args) -> int:
    from .grading.classroom.validate import validate_command

    return validate_command(args.notebooks, timeout=args.timeout, unsafe=args.unsafe_no_sandbox)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mha-course", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_execute(sub)
    _add_release(sub)
    _add_check_solutions(sub)
    _add_grade(sub)
    _add_export(sub)
    _add_validate(sub)
    _add_decisions(sub)
    _add_review(sub)
    return parser


def _add_review(sub) -> None:
    """``review``, ``report`` and ``feedback-zip`` (mha_helpers/grading/classroom/review_*)."""
    from .grading.classroom import review_cli

    review_cli.add_parsers(sub, _add_course_option)


def _add_course_option(p) -> None:
    p.add_argument(
        "--course",
        type=Path,
        help="the course folder (default: the one around the current directory)",
    )


def _add_execute(sub) -> None:
    p = sub.add_parser("execute", help="re-execute notebooks in fresh kernels and store them")
    p.add_argument(
        "paths", nargs="*", type=Path, help="notebooks or folders (default: notebooks/ solutions/)"
    )
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    _add_course_option(p)
    p.set_defaults(func=_cmd_execute)


def _add_release(sub) -> None:
    p = sub.add_parser("release", help="regenerate exercises/ from solutions/")
    p.add_argument("--check", action="store_true", help="only check that exercises/ is current")
    p.add_argument(
        "--local-preview",
        action="store_true",
        help="with --check or --student-copy: allow the placeholder repository of pyproject.toml "
        "(also $MHA_COURSE_LOCAL_PREVIEW=1)",
    )
    p.add_argument(
        "--student-copy",
        type=Path,
        metavar="DIR",
        help="write the folder students get (no solutions) into DIR (new or empty)",
    )
    p.add_argument(
        "--for-grading",
        action="store_true",
        help="with --student-copy: a copy for graded work, whose self-check never confirms an "
        "exact value or multiple-choice answer (it checks the form and records it)",
    )
    _add_course_option(p)
    p.set_defaults(func=_cmd_release)


def _add_check_solutions(sub) -> None:
    p = sub.add_parser("check-solutions", help="grade the solutions; all must score full marks")
    _add_course_option(p)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per notebook")
    p.set_defaults(func=_cmd_check_solutions)


def _add_grade(sub) -> None:
    p = sub.add_parser(
        "grade",
        help="grade submissions into a gradebook",
        description="Grade submissions (one folder per student, a Canvas or Moodle "
        "bulk download, or a .zip of one) into a gradebook CSV. Exit 0 "
        "when every row is ok, 1 when any is not, 2 for a usage error.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        type=Path,
        help="submission folders, notebooks or zips (none: only merge --manual)",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="gradebook CSV; if it exists, rows graded now replace theirs, others are kept",
    )
    p.add_argument(
        "--feedback", type=Path, help="folder for feedback: DIR/<assignment>/<student>.md and .html"
    )
    p.add_argument("--jobs", type=int, default=2, help="submissions graded at once")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per notebook")
    _add_course_option(p)
    p.add_argument("--seed", type=int, help="seed of the hidden cases (default: a new one)")
    p.add_argument(
        "--manual",
        type=Path,
        metavar="SCORES.csv",
        help="written-answer points to merge: columns student_id (or student), grade_id, points",
    )
    p.add_argument(
        "--roster",
        type=Path,
        metavar="LMS.csv",
        help="the class list: a Canvas gradebook export or a Moodle grading worksheet; every "
        "student without a submission gets a 'missing' row, names come from it",
    )
    p.add_argument(
        "--late-factor",
        type=float,
        metavar="F",
        help="late policy: a late submission's score is its points times F (0 to 1); "
        "remembered in the gradebook",
    )
    p.add_argument(
        "--due",
        action="append",
        metavar="ASSIGNMENT=DATE",
        help="an assignment's due date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC; remembered): a "
        "notebook of it handed in with another assignment is late by its own date",
    )
    p.add_argument(
        "--student",
        metavar="ID",
        help="whose the one notebook or zip given by its path is (the LMS id)",
    )
    _add_gradebook_options(p)
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="grade WITHOUT the operating-system sandbox (student code can then read "
        "and change your files); only for submissions you trust",
    )
    _add_budget_options(p)
    p.set_defaults(func=_cmd_grade)


def _add_budget_options(p) -> None:
    """What one student may cost: notebooks and sandbox time per assignment (issue 31)."""
    p.add_argument(
        "--max-notebooks",
        type=int,
        default=3,
        metavar="N",
        help="notebooks graded per student per assignment (the latest N; the rest are refused)",
    )
    p.add_argument(
        "--student-budget",
        type=float,
        metavar="S",
        help="sandbox seconds per student per assignment, all notebooks and reruns together "
        "(default: 2 x --timeout)",
    )
    p.add_argument(
        "--allow-unbounded-memory",
        action="store_true",
        help="grade where the sandbox's memory cannot all be bounded (no cgroup and no "
        "inode-capped tmpfs); the command says what is not bounded",
    )


def _add_gradebook_options(p) -> None:
    """The options of every command that changes the gradebook."""
    p.add_argument(
        "--import-edits",
        action="store_true",
        help="keep changes typed into the gradebook CSV by hand as decisions (without it, a "
        "command refuses to run while the CSV holds changes of yours)",
    )
    p.add_argument(
        "--grader",
        metavar="NAME",
        help="who is deciding, recorded with every decision (default: your user name)",
    )


def _add_export(sub) -> None:
    p = sub.add_parser(
        "export",
        help="write the gradebook as the LMS imports it (Canvas or Moodle)",
        description="Write a gradebook as Canvas's gradebook import or Moodle's grading "
        "worksheet upload takes it. Exit 0 when all went well, 1 when something needs a look, "
        "2 for a usage error.",
    )
    p.add_argument("gradebook", type=Path, help="the gradebook CSV written by mha-course grade")
    p.add_argument("--to", choices=["canvas", "moodle"], required=True)
    p.add_argument(
        "--roster",
        type=Path,
        required=True,
        metavar="LMS.csv",
        help="Canvas: the gradebook export; Moodle: the assignment's grading worksheet",
    )
    p.add_argument("--out", type=Path, required=True, help="the CSV to upload")
    p.add_argument(
        "--assignment",
        action="append",
        metavar="NAME",
        help="export only this assignment (repeatable; Moodle: exactly one)",
    )
    p.add_argument(
        "--late-factor",
        type=float,
        metavar="F",
        help="late policy for this export (default: the one in the gradebook)",
    )
    p.add_argument(
        "--feedback",
        type=Path,
        metavar="DIR",
        help="Moodle: put each student's feedback (verdicts, hints, comments) from DIR into "
        "the worksheet's Feedback comments",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace grades, EX (excused) and feedback comments the LMS already holds "
        "(without it they are kept and every conflict is listed)",
    )
    p.add_argument(
        "--column",
        action="append",
        metavar="ASSIGNMENT=COLUMN",
        help="the LMS column of an assignment, as in the roster's header (repeatable)",
    )
    p.add_argument(
        "--scale",
        action="store_true",
        help="Canvas: scale grades to the assignment's points possible (Moodle always scales "
        "to the worksheet's maximum grade)",
    )
    p.set_defaults(func=_cmd_export)


def _cmd_decision(args) -> int:
    from .grading.classroom.gradebook_commands import decision_command

    return decision_command(args)


def _cmd_pending(args) -> int:
    from .grading.classroom.gradebook_commands import pending_command

    return pending_command(args)


def _cmd_merge(args) -> int:
    from .grading.classroom.gradebook_commands import merge_command

    return merge_command(args)


def _decision_parser(sub, name: str, help_text: str):
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("gradebook", type=Path, help="the gradebook CSV (its .sqlite beside it)")
    if name in ("adjust", "extend", "remove"):
        p.add_argument("student_id", help="the student's id as in the gradebook's student_id")
        p.add_argument("assignment", help="the assignment, as in the gradebook")
    _add_course_option(p)
    _add_gradebook_options(p)
    return p


def _add_decisions(sub) -> None:
    p = _decision_parser(sub, "adjust", "add points to (or take them from) one row's score")
    p.add_argument("points", type=float, help="the change of the score: -2 or 1.5")
    p.add_argument("--reason", required=True, help="why (recorded, shown in the notes)")
    p.set_defaults(func=_cmd_decision)
    p = _decision_parser(sub, "extend", "count late work as on time (--waive: excuse the student)")
    p.add_argument("--waive", action="store_true", help="excuse the student from the assignment")
    p.add_argument("--reason", required=True, help="why (recorded, shown in the notes)")
    p.set_defaults(func=_cmd_decision)
    p = _decision_parser(sub, "remove", "remove a stray row (a record of it is kept)")
    p.add_argument("--reason", required=True, help="why (recorded)")
    p.set_defaults(func=_cmd_decision)
    p = _decision_parser(sub, "pending", "list the written answers waiting to be scored")
    p.add_argument("--assignment", help="only this assignment")
    p.set_defaults(func=_cmd_pending)
    p = _decision_parser(sub, "merge", "merge other graders' gradebook databases into this one")
    p.add_argument("others", nargs="+", type=Path, help="their .sqlite (or gradebook .csv) files")
    p.set_defaults(func=_cmd_merge)


def _add_validate(sub) -> None:
    p = sub.add_parser(
        "validate",
        help="run an exercise as the grader will (for learners)",
        description="Run exercise notebooks as the grader will: a fresh process, "
        "the released exercise with your answer cells and the cells you "
        "added, and print each question's verdict on the public cases. "
        "Exit 0 when everything passes.",
    )
    p.add_argument("notebooks", nargs="+", type=Path)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per notebook")
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="where no sandbox can be made, run your OWN notebook anyway, unisolated: its code "
        "runs with your permissions and can read and change your files",
    )
    p.set_defaults(func=_cmd_validate)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
