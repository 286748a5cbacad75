"""Every question bank of the course, question by question (the generic checks).

For every function question the reference passes on fresh cases (the grader draws new ones for
every run) and every classic mistake fails on them; the public cases tell any two different
mistakes apart (so each can get its own hint); value questions list distinct mistakes, none of
them the answer. (That the reference passes on the public cases and that each mistake gets its
own hint, through the bank and through the released self-check data alike, is checked in
``tests/test_selfcheck.py``.) What is particular to one exercise is in ``test_bank*_NN*.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mha_helpers.grading.classroom.banks import load_banks
from mha_helpers.grading.course import find_course
from mha_helpers.grading.rules.cases import NO_OUTPUT, expected_outputs, public_cases
from mha_helpers.grading.rules.compare import difference
from mha_helpers.grading.selfcheck.check import evaluate

# Wrong answers fed to the checks overflow or divide 0 by 0 on purpose (that is the slip).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

REGISTRY = load_banks(find_course())
ASSIGNMENTS = sorted({q.assignment for q in REGISTRY.values()})
QUESTIONS = [q for q in REGISTRY.values() if q.kind != "manual"]
FUNCTIONS = [q for q in QUESTIONS if q.kind == "function"]
SEEDS = [1, 2, 3, 17, 123]


def right_answer(q):
    """A right answer. Where the reference IS the course helper an answer may not call
    (q02_full_layer: multi_head_attention), the bank's own slip-free NumPy layer stands in."""
    if q.kind == "value":
        return q.expected
    if q.grade_id == "q02_full_layer":
        import mha_course_banks.bank_02 as b2

        return lambda x, w_q, w_k, w_v, w_o, h, mask=None: b2._layer(x, w_q, w_k, w_v, w_o, h, mask)
    return q.reference


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_exercise_has_at_least_three_automatically_graded_questions(assignment):
    assert len([q for q in QUESTIONS if q.assignment == assignment]) >= 3


@pytest.mark.parametrize("q", FUNCTIONS, ids=lambda q: q.grade_id)
@pytest.mark.parametrize("seed", SEEDS)
def test_reference_passes_on_fresh_cases_and_every_mistake_fails(q, seed):
    cases = q.cases(np.random.default_rng(seed))
    assert evaluate(q, right_answer(q), cases)["status"] == "passed"
    for m in q.mistakes:
        assert evaluate(q, m.answer, cases)["status"] in ("failed", "error"), m.name


def _same(x, y) -> bool:
    if x is NO_OUTPUT or y is NO_OUTPUT:
        return x is y
    return difference(x, y, equal_nan=True) is None


@pytest.mark.parametrize("q", FUNCTIONS, ids=lambda q: q.grade_id)
def test_different_mistakes_give_different_numbers_on_some_public_case(q):
    _, outputs = expected_outputs(q, public_cases(q))
    for (i, a), (j, b) in itertools.combinations(enumerate(q.mistakes), 2):
        if a.hint == b.hint:  # two ways to write one slip may coincide
            continue
        assert any(not _same(row[i], row[j]) for row in outputs), (
            f"{q.grade_id}: {a.name!r} and {b.name!r} give the same numbers on every public case"
        )


@pytest.mark.parametrize("q", [q for q in QUESTIONS if q.kind == "value"], ids=lambda q: q.grade_id)
def test_value_mistakes_are_all_different_and_none_is_the_answer(q):
    values = [repr(np.asarray(m.answer, dtype=object).tolist()) for m in q.mistakes]
    assert len(set(values)) == len(values)
    assert repr(np.asarray(q.expected, dtype=object).tolist()) not in values
