"""The graded questions of exercise 06 (what heads learn).

For every question: the reference passes on the public cases and on fresh ones; every classic
mistake fails on the public cases and gets its OWN hint (the public cases tell each mistake
apart from the right answer and from every other mistake); the references agree with the
course's functions an answer may not call; an answer that clears rows of its input in place is
caught on q06_remove_head's public cases; and the roles the bank expects for seed 7 are the
ones training actually produces.

The checks every bank gets (references on fresh cases, mistakes failing and told apart, each
mistake's own hint from the bank and from the released data) are in tests/test_banks.py and
tests/test_selfcheck.py; this file keeps what is particular to these exercises.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_helpers import causal_mask, scaled_dot_product_attention
from mha_helpers.backward import attention_backward
from mha_helpers.grading import get_question, questions_for
from mha_helpers.grading.selfcheck.check import evaluate
from mha_helpers.tasks import head_roles, role_scores, vote_table_task
from mha_helpers.training import accuracy, forward, init_model, prune_head, train

SEEDS = [1, 2, 3, 17, 123]


def test_the_questions_of_exercise_06():
    assert [q.grade_id for q in questions_for("06_what_heads_learn")] == [
        "q06_head_backward",
        "q06_measure_roles",
        "q06_roles_seed7",
        "q06_remove_head",
        "q06_prune_prediction",
    ]


def test_masking_after_the_softmax_is_named():
    def after(q, k, v, d_out):
        n, d_k = q.shape
        s = q @ k.T / np.sqrt(d_k)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        w = e / e.sum(axis=1, keepdims=True) * causal_mask(n)  # masked after normalising
        d_w = d_out @ v.T
        d_s = w * (d_w - (d_w * w).sum(axis=1, keepdims=True)) / np.sqrt(d_k)
        return d_s @ k, d_s.T @ q, w.T @ d_out

    r = evaluate(get_question("q06_head_backward"), after)
    assert r["status"] == "failed" and "after the softmax" in r["hint"]


def test_swapped_columns_are_named():
    def swapped(weights):
        t = np.arange(2, weights.shape[-1])
        return np.stack(
            [weights[:, :, t, 0].mean(axis=(0, 2)), weights[:, :, t, t - 1].mean(axis=(0, 2))],
            axis=1,
        )

    r = evaluate(get_question("q06_measure_roles"), swapped)
    assert r["status"] == "failed" and "swapped columns" in r["hint"]


def test_an_in_place_remove_head_is_caught_on_the_public_cases():
    def in_place(w_o, head, num_heads):
        d_head = w_o.shape[0] // num_heads
        w_o[head * d_head : (head + 1) * d_head] = 0.0
        return w_o

    r = evaluate(get_question("q06_remove_head"), in_place)
    assert r["status"] != "passed" and r["points"] == 0
    assert "in place" in r["message"]


def test_remove_head_public_cases_reuse_one_input_and_have_no_zero_rows():
    cases = get_question("q06_remove_head").cases(np.random.default_rng(0))
    assert cases[0][0] is cases[1][0] and cases[0][1] != cases[1][1]
    for w_o, _, _ in cases:  # clearing any row of the input changes it
        assert np.all(np.abs(w_o).sum(axis=1) > 0)


@pytest.mark.parametrize("seed", [0, *SEEDS])
def test_references_agree_with_the_course_functions(seed):
    rng = np.random.default_rng
    q = get_question("q06_head_backward")
    for qq, k, v, d_out in q.cases(rng(seed)):
        _, weights = scaled_dot_product_attention(qq, k, v, causal_mask(qq.shape[0]))
        for mine, course in zip(
            q.reference(qq, k, v, d_out), attention_backward(qq, k, v, weights, d_out)
        ):
            np.testing.assert_allclose(mine, course, rtol=1e-10, atol=1e-12)
    q = get_question("q06_measure_roles")
    for (weights,) in q.cases(rng(seed)):
        np.testing.assert_allclose(q.reference(weights), role_scores(weights, start=2), rtol=1e-12)
    q = get_question("q06_remove_head")
    for w_o, head, h in q.cases(rng(seed)):
        np.testing.assert_array_equal(q.reference(w_o, head, h), prune_head(w_o, head, h))


_SEED_7 = {}


def _seed_7_model():
    """Exercise 06's four-head seed-7 model, trained exactly as its training cell (once)."""
    if not _SEED_7:
        make_batch = vote_table_task(vocab_size=16, seq_len=10, table_seed=0)
        tokens, targets = make_batch(np.random.default_rng(1000), 1000)
        params, _ = train(
            init_model(16, 10, 32, num_layers=1, seed=7),
            make_batch,
            num_heads=4,
            steps=300,
            lr=1e-2,
            warmup=100,
            batch_size=64,
            seed=7,
        )
        _SEED_7.update(make=make_batch, tokens=tokens, targets=targets, params=params)
    return _SEED_7


def test_seed_7_pruning_matches_the_prediction():
    """Question 5's letter, from the measurement: removing any one of the four heads leaves
    clearly less than all four give and clearly more than either vote alone ("b")."""
    m = _seed_7_model()
    tokens, targets, params = m["tokens"], m["targets"], m["params"]

    def without(heads):
        pruned = dict(params)
        for h in heads:
            pruned["layers.0.w_o"] = prune_head(pruned["layers.0.w_o"], h, 4)
        return accuracy(pruned, tokens, targets, num_heads=4)

    first_table, previous_table = m["make"].tables
    answers = targets[:, 2:]
    alone = max(
        (first_table[tokens[:, :1]].argmax(-1) == answers).mean(),
        (previous_table[tokens[:, 1:-1]].argmax(-1) == answers).mean(),
    )
    full = without([])
    assert full > 0.95
    for head in range(4):
        left = without([head])
        assert alone + 0.15 < left < full - 0.2, (head, left, alone, full)
    assert without(range(4)) < 3 / 16
    assert get_question("q06_prune_prediction").expected == "b"


def test_seed_7_roles_match_the_exercise_bank():
    from mha_course_banks.bank_06 import ROLES_SEED_7

    m = _seed_7_model()
    tokens, params = m["tokens"], m["params"]
    _, weights = forward(params, tokens, num_heads=4)
    assert tuple(head_roles(weights[0])) == ROLES_SEED_7
    # every head's role is clear (scores near 1 and 0), so no machine can measure it otherwise
    n = weights[0].shape[-1]
    t = np.arange(2, n)
    prev, first = (
        weights[0][:, :, t, t - 1].mean(axis=(0, 2)),
        weights[0][:, :, t, 0].mean(axis=(0, 2)),
    )
    assert np.all(np.abs(prev - first) > 0.5)
    assert get_question("q06_roles_seed7").expected == ROLES_SEED_7
