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

from mha_helpers.grading.classroom.banks import load_banks
from mha_helpers.grading.course import find_course
from mha_helpers.grading.rules.cases import copy_args
from mha_helpers.grading.rules.registry import REGISTRY
from mha_helpers.grading.selfcheck.check import evaluate, self_check

# The classic mistakes run as answers here, and some of them divide 0 by 0 on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

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
        if mine["cause"] is None:  # another cause gives the same answer: none is named
            if mine["hint"].startswith("Your answer is exactly"):  # a factor common slips give
                assert m.hint in mine["hint"], (q.grade_id, m.name)  # offered as one slip
                continue
            assert mine["hint"].startswith("More than one slip"), (q.grade_id, m.name)
            continue
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
    assert r["points"] == 0 and "without a `return`" in r["message"]
    assert (
        r["cause"] is None
    )  # None is seen; a missing return or an in-place method's None is not told apart
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

    required = [
        p
        for p in inspect.signature(helper).parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]

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
    number_questions = [
        q
        for q in QUESTIONS
        if q.kind == "value"
        and not isinstance(q.expected, str)
        and not (isinstance(q.expected, tuple) and any(isinstance(v, str) for v in q.expected))
    ]
    assert number_questions
    for q in number_questions:
        r = self_check(q.grade_id, str(q.expected))
        assert r["points"] == 0, q.grade_id


# ---------------------------------------------------------------------------------------------
# check() itself: what the learner sees, and how it behaves under nbgrader


def test_check_prints_the_failing_case_and_the_targeted_hint(capsys):
    from mha_helpers.grading import check

    def bare_reshape(h, w):
        h = np.asarray(h)
        return h.reshape(h.shape[1], -1) @ w

    check("q03_concat_project", bare_reshape)
    out = capsys.readouterr().out
    hint = next(m.hint for m in REGISTRY["q03_concat_project"].mistakes if m.name == "bare reshape")
    assert "q03_concat_project: not yet [0/4 points]" in out
    assert "expected: array of shape (3, 8)" in out and f"hint: {hint}" in out


def test_check_never_raises_in_jupyterlab(capsys, monkeypatch):
    from mha_helpers.grading import check

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)

    class Weird:
        def __array__(self, *a, **k):
            raise RuntimeError("no")

    check("no_such_question", 1)
    check("q03_d_head", Weird())
    check("q03_concat_project", 42)
    check("q03_d_head", None)
    out = capsys.readouterr().out
    assert "no such question" in out and out.count("q03_") == 3


@pytest.mark.parametrize("mode", ["autograde", "validate"])
def test_under_nbgrader_a_check_that_does_not_pass_raises(monkeypatch, capsys, mode):
    """nbgrader gives a check cell its points when it does not raise; under nbgrader (which sets
    NBGRADER_EXECUTION) a wrong or unanswered answer must raise, a right one must not."""
    from mha_helpers.grading import check

    monkeypatch.setenv("NBGRADER_EXECUTION", mode)
    check("q03_d_head", 64)
    check("q03_explain", None)  # a written answer is graded by hand, never by the check cell
    for wrong in (768 * 12, None):
        with pytest.raises(AssertionError, match="q03_d_head"):
            check("q03_d_head", wrong)
    with pytest.raises(AssertionError):
        check("no_such_question", 1)
    assert "q03_d_head: passed" in capsys.readouterr().out


def test_without_the_data_the_check_says_so_instead_of_failing(monkeypatch, capsys, tmp_path):
    """Inside the grading sandbox the data is hidden; check() must say so and not raise."""
    import importlib

    check_module = importlib.import_module(
        "mha_helpers.grading.selfcheck.check"
    )  # the module, not check()
    monkeypatch.setattr(check_module, "DATA_DIR", tmp_path / "nothing")
    monkeypatch.setattr(check_module, "_DATA", None)
    check_module.check("q03_d_head", 64)
    check_module.score_summary("03_concatenate_and_project")
    out = capsys.readouterr().out
    assert "not available here" in out


@pytest.mark.parametrize(
    "gid, name", [("q02_split_heads", "split_heads"), ("q02_merge_heads", "merge_heads")]
)
def test_an_answer_that_is_the_helper_itself_scores_zero(gid, name):
    """`split_heads = mha_helpers.split_heads` in the answer cell: the answer *is* the helper."""
    import mha_helpers

    helper = getattr(mha_helpers, name)
    for r in (self_check(gid, helper), evaluate(REGISTRY[gid], helper)):
        assert r["points"] == 0 and name in r["message"], r["message"]
