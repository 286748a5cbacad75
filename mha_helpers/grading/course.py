"""The course folder an instructor command works on: where its solutions, banks, exercises and
self-check data are (never what is in them).

Every instructor command (``release``, ``check-solutions``, ``grade``, ``execute``) works on the
course in front of the instructor, never on the folder the package happens to be installed in:
``--course DIR`` when given, else the nearest folder, from the current directory upwards, that
has a ``solutions/`` folder with ``banks/`` in it. With an editable install, a regular install
or a copied course folder the result is the same. The grading sandbox asks too: it never mounts
the course around the current directory.

This module only finds folders. The question banks in ``solutions/banks/`` hold the reference
answers and are imported by :mod:`.classroom.banks` alone, in the instructor's own process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Course", "CourseNotFound", "find_course", "PACKAGE_DIR", "SELFCHECK_DATA"]

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the installed mha_helpers package
# Where the self-check data sits inside a copy of the helper package (``selfcheck/data/``):
# release writes it there, the wheel ships it, the sandbox hides it.
SELFCHECK_DATA = Path("grading", "selfcheck", "data")


class CourseNotFound(Exception):
    """No course folder where one was looked for (the message says where)."""


@dataclass(frozen=True)
class Course:
    root: Path

    @property
    def solutions(self) -> Path:
        return self.root / "solutions"

    @property
    def banks(self) -> Path:
        return self.root / "solutions" / "banks"

    @property
    def exercises(self) -> Path:
        return self.root / "exercises"

    @property
    def notebooks(self) -> Path:
        return self.root / "notebooks"

    @property
    def package(self) -> Path:
        """The course's own copy of the helper package (where release writes self-check data)."""
        return self.root / "mha_helpers"

    @property
    def data(self) -> Path:
        return self.package / SELFCHECK_DATA


def _is_course(folder: Path) -> bool:
    return (folder / "solutions" / "banks").is_dir()


def find_course(course=None, start=None) -> Course:
    """The course folder: ``course`` if given, else the nearest one above ``start`` (the current
    folder). Raises :class:`CourseNotFound` naming what was looked for."""
    if course is not None:
        root = Path(course).expanduser()
        if not root.is_dir():
            raise CourseNotFound(f"--course {course}: no such folder")
        if not _is_course(root):
            raise CourseNotFound(
                f"--course {course}: not a course folder (it has no "
                "solutions/banks/ with the question banks)"
            )
        return Course(root.resolve())
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _is_course(folder):
            return Course(folder)
    raise CourseNotFound(
        f"no course folder found: looked for solutions/banks/ in {here} and every folder above "
        "it. Run the command inside the course folder (the one with solutions/), or pass "
        "--course DIR."
    )
