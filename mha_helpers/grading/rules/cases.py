"""A question's cases: the public ones, what the reference and each classic mistake return on
them, the properties of each case, and what one call of an answer on a case did.

:func:`public_cases` and :func:`expected_outputs` run the question bank's code, so they are only
ever called in the instructor's process (release, the grader, ``evaluate``, the tests), never
where student code runs. :class:`CaseResult` and :func:`copy_args` are what the answer's side
uses (:mod:`mha_helpers.grading.sandbox.inside.watch`, in the learner's kernel and inside the
sandbox): the record of one call, and the copies of its arguments the call gets.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "CaseResult",
    "copy_args",
    "public_cases",
    "expected_outputs",
    "case_traits",
    "NO_OUTPUT",
]


@dataclass
class CaseResult:
    """What one call did. ``raised`` is ``(type name, message)`` or ``None``."""

    value: object = None
    raised: tuple | None = None
    mutated: list = field(default_factory=list)  # names of the arguments changed in place
    # where the learner's own code raised: {"function", "line", "code", "caller"} (or None)
    where: dict | None = None


def copy_args(args):
    """Deep copies of a case's arguments, so the learner's function gets its own."""
    return [a.copy() if isinstance(a, np.ndarray) else copy.deepcopy(a) for a in args]


class _NoOutput:
    def __repr__(self):
        return "<no output>"


NO_OUTPUT = _NoOutput()  # a classic mistake that raised on this case


def case_traits(q, cases) -> list:
    """The names of the properties each case has (see :data:`.judge.TRAITS`), from the bank's
    ``traits`` function (``[]`` when the question has none)."""
    fn = getattr(q, "traits", None)
    if fn is None:
        return []
    return [sorted(str(t) for t in fn(*c)) for c in cases]


def public_cases(q) -> list:
    """The public cases of a function question (the same every time: the self-check's)."""
    return list(q.cases(np.random.default_rng(q.public_seed)))


def expected_outputs(q, cases) -> tuple[list, list]:
    """What the reference returns on each case, and what each classic mistake returns
    (:data:`NO_OUTPUT` where a mistake raises). Runs the question bank's code: only ever in the
    instructor's process (release, grader, tests), never where student code runs."""
    import warnings

    def run(fn, args):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*copy_args(args))

    expected = [run(q.reference, c) for c in cases]
    mistakes = []
    for c in cases:
        row = []
        for m in q.mistakes:
            if not callable(m.answer):
                row.append(m.answer)
                continue
            try:
                row.append(run(m.answer, c))
            except Exception:
                row.append(NO_OUTPUT)
        mistakes.append(row)
    return expected, mistakes
