"""Fixes after battery B's run 2 (helper fix6):

* a function whose spec gives an output array is answered by one array: a Python list or tuple
  of the right arrays fails with a form message, in the self-check and in the grader alike
  (q02_split_heads' list of (n, d_head) arrays passed before);
* q04_params' cases tell d_head = d_model // h from round(d_model / h), from rounding up and
  from d_model / h, on the public cases and on every draw of hidden ones, and the diagnosis
  names the property "d_model / h rounds up".
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mha_helpers.grading import get_question
from mha_helpers.grading.classroom.assignments import expected_cases
from mha_helpers.grading.rules import codec
from mha_helpers.grading.rules.verdict import question_verdict
from mha_helpers.grading.selfcheck.check import evaluate


def _split_as_list(x, num_heads):
    d_head = x.shape[1] // num_heads
    return [x[:, i * d_head : (i + 1) * d_head] for i in range(num_heads)]


def _split_right(x, num_heads):
    return np.stack(_split_as_list(x, num_heads))


@pytest.mark.parametrize("form", [list, tuple])
def test_a_list_of_heads_fails_the_self_check_with_a_form_message(form):
    r = evaluate(get_question("q02_split_heads"), lambda x, h: form(_split_as_list(x, h)))
    assert r["status"] == "failed" and r["points"] == 0
    assert f"Python {form.__name__}" in r["message"]
    assert "one array of shape (h, n, d_head)" in r["message"] and "np.stack" in r["message"]
    assert evaluate(get_question("q02_split_heads"), _split_right)["status"] == "passed"


def _grader_verdict(gid, answer, seed=5):
    """The grader's verdict, from a report record as the sandbox writes it (values encoded)."""
    q = get_question(gid)
    cases = expected_cases(q, seed)
    rows = [{"value": codec.encode(answer(*c))} for c in cases[1]]
    return question_verdict(q, {"status": "ok", "results": rows}, cases, skipped=False)


def test_a_list_of_heads_fails_the_grader_too():
    r = _grader_verdict("q02_split_heads", _split_as_list)
    assert r["status"] == "failed" and r["points"] == 0
    assert "Python list" in r["message"] and "np.stack" in r["message"]
    assert _grader_verdict("q02_split_heads", _split_right)["status"] == "passed"


def test_a_tuple_result_with_a_list_item_is_named():
    q = get_question("q02_per_head_attention")
    ref = q.reference
    r = evaluate(q, lambda *a: (ref(*a)[0], list(ref(*a)[1])))
    assert r["status"] == "failed" and "weights of your result is a Python list" in r["message"]


def test_a_question_may_allow_a_list():
    from mha_helpers.grading.rules.judge import _form_problem

    want, got = np.zeros((2, 3)), [np.zeros(3), np.zeros(3)]
    assert _form_problem(want, got, {"list_output": False})
    assert _form_problem(want, got, {"list_output": True}) is None
    assert _form_problem(want, want, {}) is None


def _counter(d_head_of):
    def count_params(d_model, num_heads, bias):
        width = num_heads * d_head_of(d_model, num_heads)
        return 4 * d_model * width + ((3 * width + d_model) if bias else 0)

    return count_params


SLIPS = {
    "round": lambda d, h: round(d / h),
    "round half up": lambda d, h: int(d / h + 0.5),
    "ceil": lambda d, h: math.ceil(d / h),
    "true division": lambda d, h: d / h,
}


@pytest.mark.parametrize("slip", SLIPS)
def test_q04_params_tells_floor_from_rounding_and_true_division(slip):
    q = get_question("q04_params")
    assert evaluate(q, _counter(lambda d, h: d // h))["status"] == "passed"
    r = evaluate(q, _counter(SLIPS[slip]))
    assert r["status"] == "failed" and r["points"] == 0
    if slip in ("round", "round half up"):
        assert "wrong when its fraction is 1/2 or more" in r["diagnosis"]
    if slip == "round":
        assert "rounded d_head to the nearest" in r["hint"]


@pytest.mark.parametrize("seed", range(8))
def test_every_hidden_draw_tells_floor_from_round(seed):
    q = get_question("q04_params")
    n_public, cases, _, _ = expected_cases(q, seed)
    hidden = cases[n_public:]
    for slip in ("round", "ceil"):
        f = _counter(SLIPS[slip])
        assert any(f(*c) != q.reference(*c) for c in hidden), (seed, slip)
    # and a fresh non-dividing shape is among them, not only the fixed ones
    fixed = {tuple(c) for c in cases[:n_public]}
    assert any(c[0] % c[1] and tuple(c) not in fixed for c in hidden), seed
