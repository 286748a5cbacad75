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
    from .grading.classroom.commands import export_command

    return export_command(args)


def _cmd_validate(args) -> int:
    from .grading.classroom.validate import validate_command

    return validate_command(args.notebooks, timeout=args.timeout)


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
    return parser


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
        "--unsafe-no-sandbox",
        action="store_true",
        help="grade WITHOUT the operating-system sandbox (student code can then read "
        "and change your files); only for submissions you trust",
    )
    p.set_defaults(func=_cmd_grade)


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
    p.set_defaults(func=_cmd_export)


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
    p.set_defaults(func=_cmd_validate)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
