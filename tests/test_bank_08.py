"""The graded questions of exercise 08 (attention at scale).

What is particular to these questions: the references agree with the course's own helpers
(online_softmax_update, tiled_attention, the MLA cache formula, step_cost and roofline_time),
each classic tiling slip gets its own hint on the public cases, answers that call the course's
helpers score nothing, and right answers written differently pass. The generic checks of every
bank are in tests/test_banks.py and tests/test_selfcheck.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_helpers import (
    MODEL_CONFIGS,
    mla_cache_elements,
    online_softmax_update,
    roofline_time,
    scaled_dot_product_attention,
    step_cost,
    tiled_attention,
)
from mha_helpers.grading import get_question, questions_for
from mha_helpers.grading.selfcheck.check import evaluate

ASSIGNMENT = "08_attention_at_scale"
QUESTIONS = questions_for(ASSIGNMENT)


def test_four_automatically_graded_questions_worth_eleven_points():
    assert [q.grade_id for q in QUESTIONS] == [
        "q08_online_update",
        "q08_tiled",
        "q08_mla_cache",
        "q08_decode_bound",
    ]
    assert sum(q.points for q in QUESTIONS) == 11
    assert all(q.kind in ("function", "value") for q in QUESTIONS)


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_references_agree_with_the_course_helpers(seed):
    rng = np.random.default_rng(seed)
    update = get_question("q08_online_update")
    cases = update.cases(np.random.default_rng(update.public_seed) if seed is None else rng)
    for case in cases:
        for got, want in zip(update.reference(*case), online_softmax_update(*case)):
            np.testing.assert_allclose(got, want, rtol=1e-13)
    tiled = get_question("q08_tiled")
    for q, k, v, block in tiled.cases(np.random.default_rng(seed)):
        want = tiled_attention(q, k, v, block_size=block)
        np.testing.assert_allclose(tiled.reference(q, k, v, block), want, rtol=1e-12)
        np.testing.assert_allclose(want, scaled_dot_product_attention(q, k, v)[0], rtol=1e-10)


def test_value_answers_follow_from_the_lessons_helpers():
    ds = MODEL_CONFIGS["DeepSeek-V2"]
    assert get_question("q08_mla_cache").expected == 2 * mla_cache_elements(512, 64, ds.num_layers)
    step = step_cost(MODEL_CONFIGS["Llama 2 7B"], 11008, 32000, context=4096)
    # The question counts the bytes read; step_cost also counts the one new token's K and V written.
    read = step["weight_bytes"] + step["cache_read_bytes"]
    expected = roofline_time(step["flops"], read)["memory"] * 1e3
    assert get_question("q08_decode_bound").expected == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "gid, slip",
    [
        ("q08_online_update", "acc not rescaled"),
        ("q08_online_update", "rescaled twice"),
        ("q08_online_update", "max not carried"),
        ("q08_tiled", "acc not rescaled"),
        ("q08_tiled", "rescaled twice"),
        ("q08_tiled", "max not carried"),
        ("q08_tiled", "last block dropped"),
    ],
)
def test_each_classic_tiling_slip_gets_its_own_hint(gid, slip):
    q = get_question(gid)
    mistake = next(m for m in q.mistakes if m.name == slip)
    result = evaluate(q, mistake.answer)
    assert result["status"] == "failed" and result["points"] == 0
    assert mistake.hint == result["hint"]


def test_answers_that_call_the_course_helpers_score_nothing():
    calls = {
        "q08_online_update": lambda m, ell, acc, s, v: online_softmax_update(m, ell, acc, s, v),
        "q08_tiled": lambda q, k, v, b: tiled_attention(q, k, v, block_size=b),
    }
    for gid, answer in calls.items():
        result = evaluate(get_question(gid), answer)
        assert result["points"] == 0 and "course's own" in result["message"]


def test_right_answers_written_differently_pass():
    def tiled_with_loops(q, k, v, block_size):  # one query at a time, Python floats for the state
        out = []
        for row in q:
            m, ell, acc = -np.inf, 0.0, np.zeros(v.shape[1])
            for start in range(0, len(k), block_size):
                s = k[start : start + block_size] @ row / np.sqrt(len(row))
                m_new = max(m, float(s.max()))
                p = np.exp(s - m_new)
                ell = np.exp(m - m_new) * ell + p.sum()
                acc = np.exp(m - m_new) * acc + p @ v[start : start + block_size]
                m = m_new
            out.append(acc / ell)
        return np.array(out)

    assert evaluate(get_question("q08_tiled"), tiled_with_loops)["status"] == "passed"
    assert evaluate(get_question("q08_mla_cache"), 69120)["status"] == "passed"
    # one policy for counts in every question: a whole-number float is answered "write it as a
    # whole number" (issue 33)
    assert "whole number" in evaluate(get_question("q08_mla_cache"), 69120.0)["message"]
    assert evaluate(get_question("q08_decode_bound"), 4.586)["status"] == "passed"
    assert evaluate(get_question("q08_decode_bound"), 4.59)["status"] == "passed"
    assert evaluate(get_question("q08_decode_bound"), 4.585722650746269)["status"] == "passed"


def test_stubs_are_not_attempted():
    def stub(*args):
        raise NotImplementedError("write me")

    for q in QUESTIONS:
        assert evaluate(q, stub if q.kind == "function" else None)["status"] == "not-attempted"
