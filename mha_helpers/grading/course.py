"""The course folder an instructor command works on, and its question banks.

Every instructor command (``release``, ``check-solutions``, ``grade``, ``execute``) works on the
course in front of the instructor, never on the folder the package happens to be installed in:
``--course DIR`` when given, else the nearest folder, from the current directory upwards, that
has a ``solutions/`` folder with ``banks/`` in it. With an editable install, a regular install
or a copied course folder the result is the same.

The banks (``solutions/banks/bank_NN.py``) hold the reference answers. They are imported here,
in the instructor's own process, as the package ``mha_course_banks``; student code never
sees them (the grading sandbox does not mount ``solutions/``).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Course", "CourseNotFound", "find_course", "load_banks", "PACKAGE_DIR"]

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the installed mha_helpers package
BANKS_PACKAGE = "mha_course_banks"


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
        return self.package / "grading" / "selfcheck" / "data"


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


_loaded_from: Path | None = None


def load_banks(course: Course | None = None) -> dict:
    """Import the course's question banks (once per course folder); return the registry."""
    global _loaded_from
    from .rules import registry as questions

    course = course or find_course()
    folder = course.banks.resolve()
    if _loaded_from == folder:
        return questions.REGISTRY
    # Another course's banks (tests grade copies of the course): forget the old ones.
    for name in [m for m in sys.modules if m == BANKS_PACKAGE or m.startswith(BANKS_PACKAGE + ".")]:
        del sys.modules[name]
    questions.REGISTRY.clear()
    init = folder / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        BANKS_PACKAGE, init if init.exists() else None, submodule_search_locations=[str(folder)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[BANKS_PACKAGE] = module
    if init.exists():
        spec.loader.exec_module(module)
    try:
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
            if info.name.startswith("bank_"):
                importlib.import_module(f"{BANKS_PACKAGE}.{info.name}")
    except BaseException:
        questions.REGISTRY.clear()
        raise
    _loaded_from = folder
    return questions.REGISTRY
