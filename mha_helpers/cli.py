"""``mha-course``: the instructor's command line.

    mha-course execute [PATH ...]       re-execute lessons/solutions in fresh kernels and store them
    mha-course release [--check]        regenerate exercises/ from solutions/ (or check it is current)
    mha-course check-solutions          grade every solution notebook; each must score full marks
    mha-course grade PATH ... --out gradebook.csv [--feedback DIR] [--jobs N] [--timeout S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .notebooks import COURSE_ROOT


def _cmd_execute(args) -> int:
    from .notebooks import execute_notebook, find_notebooks

    paths = args.paths or [COURSE_ROOT / "notebooks", COURSE_ROOT / "solutions"]
    notebooks = find_notebooks(paths)
    for nb in notebooks:
        if nb.resolve().parent == (COURSE_ROOT / "exercises").resolve():
            print(f"skipping {nb}: student notebooks are stored without outputs (mha-course release)")
            continue
        t = execute_notebook(nb, timeout=args.timeout)
        print(f"executed {nb}  (kernel start {t['kernel_start']:.1f} s, cells {t['execute']:.1f} s)")
    return 0


def _cmd_release(args) -> int:
    from .grading.course import CourseNotFound, find_course
    from .grading.release import ReleaseError, release, student_copy

    try:
        course = find_course(args.course)
    except CourseNotFound as exc:
        print(f"mha-course release: {exc}", file=sys.stderr)
        return 2
    if args.student_copy:
        try:
            written = student_copy(course, args.student_copy)
        except ReleaseError as exc:
            print(f"mha-course release: {exc}", file=sys.stderr)
            return 2
        print(f"wrote the student copy to {args.student_copy}: "
              + ", ".join(p.name for p in written))
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
        print(f"exercises/ and the self-check data are up to date with the {len(solutions)} "
              f"solution notebooks in {course.solutions}")
        return 0
    for p in changed:
        print(f"wrote {p}")
    if not changed:
        print(f"exercises/ and the self-check data were already up to date ({len(solutions)} "
              "solution notebooks)")
    return 0


def _cmd_check_solutions(args) -> int:
    from .grading.grader import check_solutions

    return check_solutions(args.solutions, timeout=args.timeout)


def _cmd_grade(args) -> int:
    from .grading.grader import grade_command

    return grade_command(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mha-course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("execute", help="re-execute notebooks in fresh kernels and store them")
    p.add_argument("paths", nargs="*", type=Path, help="notebooks or folders (default: notebooks/ solutions/)")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    p.set_defaults(func=_cmd_execute)

    p = sub.add_parser("release", help="regenerate exercises/ from solutions/")
    p.add_argument("--check", action="store_true", help="only check that exercises/ is current")
    p.add_argument("--student-copy", type=Path, metavar="DIR",
                   help="write the folder students get (no solutions) into DIR (new or empty)")
    p.add_argument("--course", type=Path, help="the course folder (default: the one around "
                                               "the current directory)")
    p.set_defaults(func=_cmd_release)

    p = sub.add_parser("check-solutions", help="grade the solutions; all must score full marks")
    p.add_argument("--solutions", type=Path, default=COURSE_ROOT / "solutions")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per notebook")
    p.set_defaults(func=_cmd_check_solutions)

    p = sub.add_parser("grade", help="grade submissions into a gradebook")
    p.add_argument("paths", nargs="+", type=Path, help="submission notebooks or folders")
    p.add_argument("--out", type=Path, required=True, help="gradebook CSV to write")
    p.add_argument("--feedback", type=Path, help="folder for one feedback file per student")
    p.add_argument("--jobs", type=int, default=2, help="submissions graded at once")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per notebook")
    p.set_defaults(func=_cmd_grade)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
