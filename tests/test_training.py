"""The hand-written backward pass, the tiny model and the toy tasks behind lesson 06.

The gradient checks compare every entry of every parameter with central finite differences in
float64; a correct backward pass agrees to about 1e-6 relative error, so 1e-4 flags a bug.
"""

import numpy as np
import pytest

from mha_helpers import causal_mask, multi_head_attention, scaled_dot_product_attention
from mha_helpers.backward import attention_backward, mha_backward, mha_forward, softmax_backward
from mha_helpers.tasks import (duplicate_token_scores, head_roles, induction_scores,
                               make_vote_tables, previous_token_score, repeated_segment_batch,
                               role_scores, vote_table_batch, vote_table_task)
from mha_helpers.training import (accuracy, cross_entropy, forward, init_model, learning_rate,
                                  loss_and_grads, max_relative_error, numerical_gradients,
                                  prune_head, train)

TOL = 1e-4


def _small_problem(num_layers, seed=0, vocab=5, n=4, d_model=8, batch=3):
    params = init_model(vocab, n, d_model, num_layers, seed=seed)
    rng = np.random.default_rng(seed + 100)
    tokens = rng.integers(0, vocab, size=(batch, n))
    targets = rng.integers(0, vocab, size=(batch, n))
    targets[:, 0] = -1  # ignored positions must get no gradient
    return params, tokens, targets


@pytest.mark.parametrize("num_layers,num_heads", [(1, 1), (1, 2), (2, 1), (2, 2)])
def test_every_parameter_gradient_matches_finite_differences(num_layers, num_heads):
    params, tokens, targets = _small_problem(num_layers, seed=num_layers * 10 + num_heads)
    _, grads = loss_and_grads(params, tokens, targets, num_heads)
    numeric = numerical_gradients(params, tokens, targets, num_heads)
    assert grads.keys() == params.keys()
    for name in params:
        assert grads[name].shape == params[name].shape, name
        # tiny entries: absolute agreement; the rest: relative agreement
        np.testing.assert_allclose(grads[name], numeric[name], rtol=TOL, atol=1e-8, err_msg=name)
    assert max_relative_error(grads, numeric) < TOL
    # the check is not vacuous: most entries are well above the floor
    big = sum(int((np.abs(g) > 1e-4).sum()) for g in numeric.values())
    assert big > 0.5 * sum(g.size for g in numeric.values())


def test_gradient_with_a_pruned_head_matches_finite_differences():
    params, tokens, targets = _small_problem(2, seed=7)
    masks = [np.array([1.0, 0.0]), np.array([0.0, 1.0])]
    _, grads = loss_and_grads(params, tokens, targets, 2, head_masks=masks)
    numeric = numerical_gradients(params, tokens, targets, 2, head_masks=masks)
    assert max_relative_error(grads, numeric) < TOL
    # a pruned head's rows of w_o receive no gradient
    assert np.all(grads["layers.0.w_o"][4:] == 0) and np.all(grads["layers.1.w_o"][:4] == 0)


def test_attention_backward_matches_finite_differences_with_causal_mask():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 2, 4, 3))  # (batch=2, n=4, d=3) each
    d_out = rng.normal(size=(2, 4, 3))
    mask = causal_mask(4)

    def loss(q, k, v):
        return float((scaled_dot_product_attention(q, k, v, mask)[0] * d_out).sum())

    _, w = scaled_dot_product_attention(q, k, v, mask)
    analytic = attention_backward(q, k, v, w, d_out)
    eps = 1e-6
    for arr, g in zip((q, k, v), analytic):
        numeric = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            plus = loss(q, k, v)
            arr[idx] = old - eps
            minus = loss(q, k, v)
            arr[idx] = old
            numeric[idx] = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(g, numeric, rtol=TOL, atol=1e-8)


def test_softmax_backward_rows_sum_to_zero():
    rng = np.random.default_rng(0)
    w, _ = np.split(rng.random((4, 10)), 2, axis=1)
    w /= w.sum(axis=1, keepdims=True)
    g = softmax_backward(w, rng.normal(size=w.shape))
    np.testing.assert_allclose(g.sum(axis=1), 0, atol=1e-12)


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_layer_forward_agrees_with_multi_head_attention(num_heads):
    rng = np.random.default_rng(num_heads)
    x = rng.normal(size=(2, 5, 8))
    w = [rng.normal(size=(8, 8)) for _ in range(4)]
    mask = causal_mask(5)
    y, cache = mha_forward(x, *w, num_heads=num_heads, mask=mask)
    y_ref, w_ref = multi_head_attention(x, *w, num_heads=num_heads, mask=mask, return_weights=True)
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cache["weights"], w_ref, rtol=1e-12, atol=1e-12)
    d_x, grads = mha_backward(np.ones_like(y), cache)
    assert d_x.shape == x.shape and all(g.shape == (8, 8) for g in grads.values())


def test_head_mask_and_pruned_w_o_give_the_same_model():
    params, tokens, _ = _small_problem(1, seed=4)
    pruned = dict(params, **{"layers.0.w_o": prune_head(params["layers.0.w_o"], 1, 2)})
    a, _ = forward(params, tokens, 2, head_masks=[np.array([1.0, 0.0])])
    b, _ = forward(pruned, tokens, 2)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert not np.array_equal(pruned["layers.0.w_o"], params["layers.0.w_o"])  # a copy changed


def test_cross_entropy_value_and_ignored_positions():
    logits = np.log(np.array([[[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]]]))  # (1, 2, 3)
    loss, d = cross_entropy(logits, np.array([[0, -1]]))
    assert loss == pytest.approx(np.log(2))
    np.testing.assert_allclose(d[0, 0], [-0.5, 0.25, 0.25])
    assert np.all(d[0, 1] == 0)
    with pytest.raises(ValueError, match="every target is -1"):
        cross_entropy(logits, np.array([[-1, -1]]))


def test_forward_explains_bad_tokens():
    params = init_model(5, 4, 8, 1)
    with pytest.raises(ValueError, match="at most seq_len=4"):
        forward(params, np.zeros((1, 6), dtype=int), 2)
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        forward(params, np.full((1, 3), 5), 2)
    with pytest.raises(ValueError, match="not divisible"):
        forward(params, np.zeros((1, 3), dtype=int), 3)


def test_learning_rate_warms_up_then_decays_to_zero():
    lrs = [learning_rate(s, 100, 1e-2, 10) for s in range(100)]
    assert lrs[0] == pytest.approx(1e-3) and max(lrs) == pytest.approx(1e-2)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:])) and lrs[-1] < 1e-4


def test_training_is_determined_by_the_seed():
    make_batch = vote_table_task()
    params = init_model(16, 10, 32, 1, seed=5)
    a, loss_a = train(params, make_batch, 2, steps=30, lr=1e-2, warmup=10, seed=5)
    b, loss_b = train(params, make_batch, 2, steps=30, lr=1e-2, warmup=10, seed=5)
    c, _ = train(params, make_batch, 2, steps=30, lr=1e-2, warmup=10, seed=6)
    assert np.array_equal(loss_a, loss_b)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["embed"], c["embed"])
    assert np.array_equal(params["embed"], init_model(16, 10, 32, 1, seed=5)["embed"])  # not modified


def test_two_heads_solve_the_vote_table_task_and_take_the_two_roles():
    make_batch = vote_table_task()
    tokens, targets = make_batch(np.random.default_rng(1000), 500)
    params, losses = train(init_model(16, 10, 32, 1, seed=0), make_batch, 2, steps=300, lr=1e-2)
    assert losses[-20:].mean() < 0.1 < losses[:20].mean()
    assert accuracy(params, tokens, targets, 2) > 0.98
    _, weights = forward(params, tokens, 2)
    assert sorted(head_roles(weights[0])) == ["first", "previous"]
    assert role_scores(weights[0]).max(axis=0).min() > 0.9


def test_vote_table_targets_follow_the_two_tables():
    tables = make_vote_tables(16, seed=3)
    tokens, targets = vote_table_batch(np.random.default_rng(0), 20, tables, seq_len=10)
    for b in range(20):
        assert np.all(targets[b, :2] == -1)
        for t in range(2, 10):
            votes = tables[0][tokens[b, 0]] + tables[1][tokens[b, t - 1]]
            assert targets[b, t] == np.argmax(votes)


@pytest.mark.parametrize("distinct", [False, True])
def test_repeated_segments(distinct):
    rng = np.random.default_rng(1)
    tokens, targets = repeated_segment_batch(rng, 200, vocab_size=24, seq_len=20, distinct=distinct)
    assert np.all(tokens[:, 0] == 24) and np.all(tokens[:, 1:] < 24)
    lengths = set()
    for b in range(200):
        used = np.nonzero(targets[b] >= 0)[0]
        m = len(used) + 1
        lengths.add(m)
        start = 20 - m
        assert np.array_equal(tokens[b, start:], tokens[b, start - m:start])
        assert np.array_equal(targets[b, used], tokens[b, used + 1])
        if distinct:
            assert len(set(tokens[b, 1:start].tolist())) == start - 1
    assert lengths == set(range(4, 10))


def test_role_and_induction_scores_on_hand_made_weights():
    n = 5
    prev = np.zeros((n, n))
    prev[0, 0] = 1
    prev[np.arange(1, n), np.arange(n - 1)] = 1
    first = np.zeros((n, n))
    first[:, 0] = 1
    weights = np.stack([prev, first])[None]  # (1, 2, n, n)
    np.testing.assert_allclose(role_scores(weights), [[1, 0], [0, 1]])
    assert head_roles(weights) == ["previous", "first"]
    tokens = np.array([[9, 1, 2, 1, 2]])
    targets = np.array([[-1, -1, -1, 2, -1]])  # query at t = 3 (token 1): earlier copy at 1
    ind = np.zeros((1, 1, n, n))
    ind[0, 0, 3, 2] = 1  # attends to the token after the earlier copy
    np.testing.assert_allclose(induction_scores(ind, tokens, targets), [1.0])


def test_duplicate_token_score_tells_a_duplicate_head_from_a_previous_token_head():
    n = 6
    tokens = np.array([[9, 1, 2, 3, 1, 2]])  # positions 4 and 5 repeat positions 1 and 2
    targets = np.array([[-1, -1, -1, -1, 0, 0]])  # queries at t = 4 and t = 5
    prev = np.zeros((n, n))
    prev[0, 0] = 1
    prev[np.arange(1, n), np.arange(n - 1)] = 1
    dup = np.eye(n)
    dup[4] = 0
    dup[4, 1] = 1  # t = 4 (token 1) attends to its earlier copy at 1
    dup[5] = 0
    dup[5, [2, 5]] = 0.5  # t = 5 (token 2): half on its earlier copy at 2, half on itself
    weights = np.stack([prev, dup])[None]  # (1, 2, n, n)
    np.testing.assert_allclose(duplicate_token_scores(weights, tokens, targets), [0.0, 0.75])
    np.testing.assert_allclose(previous_token_score(weights, targets), [1.0, 0.0])
    # a query whose token never occurred before counts as 0, and the query itself is no copy
    np.testing.assert_allclose(duplicate_token_scores(np.eye(n)[None, None], tokens,
                                                      np.array([[-1, -1, -1, 0, 0, -1]])), [0.0])


# --- the exercise bank of lesson 06 ----------------------------------------------------------


def test_bank_06_references_pass_and_every_mistake_gets_its_own_hint():
    from mha_helpers.grading.check import evaluate
    from mha_helpers.grading.questions import questions_for

    questions = questions_for("06_what_heads_learn")
    assert [q.grade_id for q in questions] == ["q06_head_backward", "q06_measure_roles",
                                               "q06_roles_seed7", "q06_remove_head",
                                               "q06_prune_prediction"]
    for q in questions:
        right = q.reference if q.kind == "function" else q.expected
        assert evaluate(q, right)["status"] == "passed", q.grade_id
        for m in q.mistakes:
            r = evaluate(q, m.answer)
            assert r["status"] == "failed" and r["hint"] == m.hint, (q.grade_id, m.name)


def test_seed_7_roles_match_the_exercise_bank():
    from mha_course_banks.bank_06 import ROLES_SEED_7

    make_batch = vote_table_task()
    tokens, _ = make_batch(np.random.default_rng(1000), 1000)
    params, _ = train(init_model(16, 10, 32, 1, seed=7), make_batch, 2, steps=300, lr=1e-2, seed=7)
    _, weights = forward(params, tokens, 2)
    assert tuple(head_roles(weights[0])) == ROLES_SEED_7
