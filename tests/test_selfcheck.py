"""The learner's self-check works from released data alone and agrees with the grader's rules.

For every question of the course: the reference answer passes, and each classic mistake gets
the same verdict and the same hint from the self-check (which reads only the data that
``mha-course release`` wrote) as from :func:`evaluate` (which runs the bank's reference in
process, exactly as the grader judges). Plus the general verdicts every function question
shares: a missing ``return``, an answer that changes its inputs, text for a number, a call to
the course's own helper.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_helpers.grading.check import evaluate, self_check
from mha_helpers.grading.course import find_course, load_banks
from mha_helpers.grading.questions import REGISTRY
from mha_helpers.grading.watch import copy_args

load_banks(find_course())
QUESTIONS = [q for q in REGISTRY.values() if q.kind != "manual"]


def _key(r):
    return r["status"], r["points"], r["hint"]


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.grade_id)
def test_the_right_answer_passes_both_checks(q):
    answer = q.reference if q.kind == "function" else q.expected
    assert self_check(q.grade_id, answer)["status"] == "passed"
    assert evaluate(q, answer)["status"] == "passed"


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.grade_id)
def test_every_classic_mistake_gets_the_same_verdict_and_hint_from_both(q):
    for m in q.mistakes:
        mine, theirs = self_check(q.grade_id, m.answer), evaluate(q, m.answer)
        assert _key(mine) == _key(theirs), (q.grade_id, m.name)
        assert mine["status"] != "passed", (q.grade_id, m.name)
        assert mine["hint"] == m.hint, (q.grade_id, m.name, mine["message"])


FUNCTIONS = [q for q in QUESTIONS if q.kind == "function"]


@pytest.mark.parametrize("q", FUNCTIONS, ids=lambda q: q.grade_id)
def test_general_verdicts_of_function_questions(q):
    cases = q.cases(np.random.default_rng(q.public_seed))
    outputs = iter([q.reference(*copy_args(c)) for c in cases])

    def forgets_return(*args):
        pass

    def changes_its_input(*args):
        out = next(outputs)
        for a in args:
            if isinstance(a, np.ndarray) and a.size and a.dtype.kind == "f":
                a[...] = 0.0
                break
        return out

    r = self_check(q.grade_id, forgets_return)
    assert r["points"] == 0 and "forget `return`" in r["message"]
    if any(isinstance(a, np.ndarray) and a.size and a.dtype.kind == "f" for c in cases for a in c):
        r = self_check(q.grade_id, changes_its_input)
        assert r["points"] == 0 and "in place" in r["message"], q.grade_id
    assert self_check(q.grade_id, 3)["status"] == "error"
    assert self_check(q.grade_id, None)["status"] == "not-attempted"


@pytest.mark.parametrize("q", [q for q in FUNCTIONS if q.forbidden], ids=lambda q: q.grade_id)
def test_calling_the_helper_the_question_is_about_scores_zero_in_both(q):
    import importlib
    import inspect

    dotted = q.forbidden[0]
    module, _, name = dotted.rpartition(".")
    helper = getattr(importlib.import_module(module), name)

    required = [p for p in inspect.signature(helper).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def uses_helper(*args):
        given = (list(copy_args(args)) + [None] * len(required))[: len(required)]
        try:  # enter the helper (it may well refuse these arguments)
            helper(*given)
        except Exception:
            pass
        return None

    for r in (self_check(q.grade_id, uses_helper), evaluate(q, uses_helper)):
        assert r["points"] == 0 and name in r["message"], (q.grade_id, r["message"])


def test_text_is_never_a_number():
    number_questions = [q for q in QUESTIONS if q.kind == "value" and not isinstance(q.expected, str)
                        and not (isinstance(q.expected, tuple) and any(isinstance(v, str) for v in q.expected))]
    assert number_questions
    for q in number_questions:
        r = self_check(q.grade_id, str(q.expected))
        assert r["points"] == 0, q.grade_id
