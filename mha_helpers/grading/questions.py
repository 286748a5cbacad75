"""What a graded question is, and the registry every exercise notebook's questions live in.

A question is identified by its ``grade_id`` (the same string as the nbgrader ``grade_id`` of
its answer cell). It knows how many points it is worth and how to judge an answer:

* ``kind="function"``: the learner writes a function. ``cases(rng)`` draws argument tuples;
  the answer is right when, on every case, it returns what ``reference`` returns (to
  ``rtol``/``atol``). The self-check uses ``cases`` with a fixed public seed; the instructor's
  grader draws fresh cases with a new seed for every run.
* ``kind="value"``: the learner computes a value (a number, an array, a multiple-choice letter);
  it is compared with ``expected``.
* ``kind="manual"``: written answers, graded by a person; the gradebook lists them as pending.

``mistakes`` are the classic wrong answers, each a function with the reference's signature (or
a wrong value) and the hint to show when the learner's answer matches it. That is how the
feedback says "you split heads with a bare reshape" instead of only "wrong".

Banks of questions live in modules named ``bank_<lesson>.py`` next to this one and are
imported by :func:`load_banks`.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Question", "Mistake", "register", "get_question", "questions_for", "load_banks",
           "REGISTRY"]


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: ``answer`` is a function (same signature as the reference) or a
    value, and ``hint`` is what to tell a learner whose answer matches it."""

    name: str
    answer: Any
    hint: str


@dataclass(frozen=True)
class Question:
    grade_id: str
    assignment: str
    points: float
    kind: str  # "function" | "value" | "manual"
    prompt: str
    reference: Callable | None = None
    cases: Callable | None = None  # rng -> list of argument tuples
    expected: Any = None
    mistakes: tuple = ()
    hint: str = ""
    rtol: float = 1e-6
    atol: float = 1e-8
    public_seed: int = 0
    # Names of course functions (e.g. "mha_helpers.split_heads") an answer must not call:
    # the grader flags answers that hand the work to the reference implementation.
    forbidden: tuple = ()
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in ("function", "value", "manual"):
            raise ValueError(f"kind must be 'function', 'value' or 'manual', got {self.kind!r}")
        if self.kind == "function" and (self.reference is None or self.cases is None):
            raise ValueError(f"{self.grade_id}: a function question needs reference and cases")


REGISTRY: dict[str, Question] = {}


def register(question: Question) -> Question:
    """Add a question to the registry (grade_ids are unique across the course)."""
    old = REGISTRY.get(question.grade_id)
    if old is not None and old.assignment != question.assignment:
        raise ValueError(f"grade_id {question.grade_id!r} is used by two assignments")
    REGISTRY[question.grade_id] = question
    return question


_loaded = False


def load_banks(banks_dir=None) -> dict[str, Question]:
    """Import every ``bank_*`` module of the course's ``solutions/banks/`` once; return the
    registry. (Interim: the course folder is the one this package sits in.)"""
    global _loaded
    if not _loaded:
        import importlib.util
        import sys
        from pathlib import Path

        folder = Path(banks_dir) if banks_dir else Path(__file__).resolve().parents[2] / "solutions" / "banks"
        name = "mha_course_banks"
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(
                name, folder / "__init__.py", submodule_search_locations=[str(folder)])
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
            if info.name.startswith("bank_"):
                importlib.import_module(f"{name}.{info.name}")
        _loaded = True
    return REGISTRY


def get_question(grade_id: str) -> Question:
    load_banks()
    try:
        return REGISTRY[grade_id]
    except KeyError:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise KeyError(f"no question with grade_id {grade_id!r}; known: {known}") from None


def questions_for(assignment: str) -> list[Question]:
    """The questions of one assignment, in registration order."""
    load_banks()
    return [q for q in REGISTRY.values() if q.assignment == assignment]
