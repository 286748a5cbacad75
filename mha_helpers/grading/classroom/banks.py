"""The question banks: the only place where grading imports ``solutions/banks/``.

The banks (``solutions/banks/bank_NN.py``) hold the reference answers. They are imported here,
in the instructor's own process (release, the grader, ``check-solutions``, the tests), as the
package ``mha_course_banks``; each registers its questions in
:data:`~mha_helpers.grading.rules.registry.REGISTRY`. Nothing that runs with student code or in
a learner's kernel imports this module: the sandbox does not mount ``solutions/``, and the
self-check works from the data ``mha-course release`` generates.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

from ..course import Course, find_course
from ..rules.registry import REGISTRY, Question

__all__ = ["load_banks", "get_question", "questions_for", "BANKS_PACKAGE"]

BANKS_PACKAGE = "mha_course_banks"


_loaded_from: Path | None = None


def load_banks(course: Course | None = None) -> dict:
    """Import the course's question banks (once per course folder); return the registry.

    ``course`` defaults to the course folder around the current directory."""
    global _loaded_from

    course = course or find_course()
    folder = course.banks.resolve()
    if _loaded_from == folder:
        return REGISTRY
    # Another course's banks (tests grade copies of the course): forget the old ones.
    for name in [m for m in sys.modules if m == BANKS_PACKAGE or m.startswith(BANKS_PACKAGE + ".")]:
        del sys.modules[name]
    REGISTRY.clear()
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
        REGISTRY.clear()
        raise
    _loaded_from = folder
    return REGISTRY


def get_question(grade_id: str) -> Question:
    """The question with this grade_id, from the loaded (or the current) course's banks."""
    if not REGISTRY:
        load_banks()
    try:
        return REGISTRY[grade_id]
    except KeyError:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise KeyError(f"no question with grade_id {grade_id!r}; known: {known}") from None


def questions_for(assignment: str) -> list[Question]:
    """The questions of one assignment, in registration order (the banks loaded if need be)."""
    if not REGISTRY:
        load_banks()
    return [q for q in REGISTRY.values() if q.assignment == assignment]
