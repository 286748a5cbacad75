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

``traits`` (optional) names the properties of each case (one head or several, with or without
a mask, ...), so that the verdict can say which property breaks an answer.

``mistakes`` are the classic wrong answers, each a function with the reference's signature (or
a wrong value) and the hint to show when the learner's answer matches it. That is how the
feedback says "you split heads with a bare reshape" instead of only "wrong".

Banks of questions live in the course's ``solutions/banks/bank_<lesson>.py`` (instructor-only:
they hold the reference answers). Each calls :func:`register`; they are imported by
:func:`mha_helpers.grading.classroom.banks.load_banks` in the instructor's process, never here
(this module imports nothing of the course's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Question", "Mistake", "register", "REGISTRY"]


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
    # Dotted names of course helpers (e.g. "mha_helpers.heads.split_heads") that do the very
    # thing the question asks: an answer that calls one scores 0 with a message that says so,
    # in the self-check and in the grader alike.
    forbidden: tuple = ()
    extra: dict = field(default_factory=dict)
    # ``traits(*case) -> names`` of the properties a case has (``rules.judge.TRAITS``: "several
    # heads", "mask", "rectangular", "batch", ...), so the verdict can say which property breaks
    # an answer ("right with one head, wrong with several heads").
    traits: Callable | None = None

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
