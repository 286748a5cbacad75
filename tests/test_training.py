"""The hand-written backward pass, the tiny model and the toy tasks behind lesson 06.

The gradient checks compare every entry of every parameter with central finite differences in
float64; a correct backward pass agrees to about 1e-6 relative error, so 1e-4 flags a bug.
"""

import numpy as np
import pytest

from mha_helpers import causal_mask, multi_head_attention, scaled_dot_product_attention
from mha_helpers.backward import attention_backward, mha_backward, mha_forward, softmax_backward
from mha_helpers.tasks import (
    duplicate_token_scores,
    head_roles,
    induction_scores,
    make_vote_tables,
    previous_token_score,
    repeated_segment_batch,
    role_scores,
    segment_positions,
    table_correlation,
    vote_table_batch,
    vote_table_task,
)
from mha_helpers.training import (
    accuracy,
    accuracy_after_pruning,
    cross_entropy,
    forward,
    head_importance,
    head_output_tables,
    init_model,
    learning_rate,
    loss_and_grads,
    max_relative_error,
    numerical_gradients,
    prune_head,
    pruning_order,
    train,
)

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
    assert np.array_equal(
        params["embed"], init_model(16, 10, 32, 1, seed=5)["embed"]
    )  # not modified


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
        assert np.array_equal(tokens[b, start:], tokens[b, start - m : start])
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


def test_induction_scores_match_a_loop_over_queries_and_keys():
    rng = np.random.default_rng(12)
    tokens = rng.integers(0, 3, size=(6, 7))  # few token ids: many earlier copies
    targets = np.where(rng.random((6, 7)) < 0.5, 0, -1)
    scores = rng.random((6, 2, 7, 7))
    weights = scores / scores.sum(axis=-1, keepdims=True)
    per_query = []
    for b, t in zip(*np.nonzero(targets >= 0)):
        per_query.append(
            sum(weights[b, :, t, s] for s in range(1, t + 1) if tokens[b, s - 1] == tokens[b, t])
            + np.zeros(2)
        )
    np.testing.assert_allclose(
        induction_scores(weights, tokens, targets), np.mean(per_query, axis=0), rtol=1e-12
    )


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
    np.testing.assert_allclose(
        duplicate_token_scores(np.eye(n)[None, None], tokens, np.array([[-1, -1, -1, 0, 0, -1]])),
        [0.0],
    )


# --- ablations, pruning and the measurements of lesson 06's second edition --------------------


def test_output_mask_removes_what_a_layer_writes_at_those_positions_only():
    params, tokens, _ = _small_problem(2, seed=11, batch=2)
    full, _ = forward(params, tokens, 2)
    ones = np.ones(tokens.shape)
    same, _ = forward(params, tokens, 2, output_masks=[ones, None])
    np.testing.assert_array_equal(same, full)
    # removing layer 0's output everywhere = a model whose layer 0 writes nothing (w_o = 0)
    silent = dict(params, **{"layers.0.w_o": np.zeros_like(params["layers.0.w_o"])})
    expected, _ = forward(silent, tokens, 2)
    got, _ = forward(params, tokens, 2, output_masks=[np.zeros(tokens.shape), None])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # a one-layer model: zeroing position 2 changes the logits at position 2 and nowhere else
    one = init_model(5, 4, 8, 1, seed=3)
    mask = np.ones(tokens.shape)
    mask[:, 2] = 0
    a, _ = forward(one, tokens, 2)
    b, _ = forward(one, tokens, 2, output_masks=[mask])
    changed = np.abs(a - b).max(axis=-1) > 1e-12  # (batch, n)
    assert changed[:, 2].all() and not changed[:, [0, 1, 3]].any()


def test_output_masks_are_checked():
    params, tokens, _ = _small_problem(2, seed=1)
    with pytest.raises(ValueError, match="one per layer"):
        forward(params, tokens, 2, output_masks=[None])
    with pytest.raises(ValueError, match=r"output_masks\[1\] has shape \(4,\)"):
        forward(params, tokens, 2, output_masks=[None, np.ones(4)])


def test_head_importance_is_the_loss_increase_of_removing_each_head():
    params, tokens, targets = _small_problem(1, seed=4, batch=6)
    imp = head_importance(params, tokens, targets, num_heads=2)
    base = cross_entropy(forward(params, tokens, 2)[0], targets)[0]
    for head in range(2):
        w_o = prune_head(params["layers.0.w_o"], head, num_heads=2)
        pruned = cross_entropy(
            forward(dict(params, **{"layers.0.w_o": w_o}), tokens, 2)[0], targets
        )[0]
        assert imp[head] == pytest.approx(pruned - base, rel=1e-9, abs=1e-12)
    # heads already removed are not measured again
    assert np.isnan(head_importance(params, tokens, targets, 2, keep=[0, 1])[0])


def test_pruning_measures_each_step_and_removes_the_least_important_head():
    """Head 1 of this model writes nothing (its rows of w_o are 0): removing it changes nothing,
    so its importance is exactly 0; the greedy order starts with the head whose removal raises
    the loss least, and the accuracy curve follows the order."""
    make_batch = vote_table_task()
    tokens, targets = make_batch(np.random.default_rng(5), 200)
    params = init_model(16, 10, 32, 1, seed=2)
    params["layers.0.w_o"] = prune_head(params["layers.0.w_o"], 1, num_heads=4)
    importance = head_importance(params, tokens, targets, num_heads=4)
    assert importance[1] == 0.0
    order = pruning_order(params, tokens, targets, num_heads=4)
    assert sorted(order) == [0, 1, 2, 3] and order[0] == int(np.argmin(importance))
    curve = accuracy_after_pruning(params, tokens, targets, 4, order)
    assert curve.shape == (5,) and curve[0] == accuracy(params, tokens, targets, 4)
    keep = np.ones(4)
    keep[order[:2]] = 0
    assert curve[2] == accuracy(params, tokens, targets, 4, head_masks=[keep])
    assert curve[4] == accuracy(params, tokens, targets, 4, head_masks=[np.zeros(4)])


def test_segment_positions_match_the_generated_sequences():
    tokens, targets = repeated_segment_batch(np.random.default_rng(8), 300)
    parts = segment_positions(targets)
    for b in range(300):
        second = np.nonzero(parts["second_copy"][b])[0]
        first = np.nonzero(parts["first_copy"][b])[0]
        m = len(second)
        assert second.tolist() == list(range(20 - m, 20)) and len(first) == m
        assert np.array_equal(tokens[b, first], tokens[b, second])  # the copy is the copy
        for t in np.nonzero(targets[b] >= 0)[0]:  # each scored query's induction key ...
            key = t - m + 1
            assert parts["induction_keys"][b, key] and tokens[b, key - 1] == tokens[b, t]
        assert parts["induction_keys"][b].sum() == m - 1  # ... and no other position


def test_previous_token_score_at_chosen_positions():
    w = np.zeros((1, 2, 4, 4))
    w[0, 0, [1, 2, 3], [0, 1, 2]] = 1.0  # head 0 always attends to t - 1
    w[0, 1, :, 0] = 1.0  # head 1 always attends to position 0
    np.testing.assert_allclose(
        previous_token_score(w, np.array([[False, False, True, True]])), [1.0, 0.0]
    )
    np.testing.assert_allclose(
        previous_token_score(w, np.array([[False, True, False, False]])), [1.0, 1.0]
    )
    with pytest.raises(ValueError, match="position 0"):
        previous_token_score(w, np.array([[True, False, False, False]]))


def test_head_output_tables_are_the_path_from_a_read_token_to_the_logits():
    """Put all attention on one position by hand: the change in the logits is the head's table."""
    params = init_model(6, 3, 8, 1, num_outputs=5, seed=9)
    tables = head_output_tables(params, num_heads=2)
    assert tables.shape == (2, 6, 5)
    np.testing.assert_allclose(
        tables.sum(axis=0),
        params["embed"] @ params["layers.0.w_v"] @ params["layers.0.w_o"] @ params["unembed"],
        rtol=1e-10,
        atol=1e-12,
    )
    assert table_correlation(tables[0], 3 * tables[0] + 1) == pytest.approx(1.0)
    assert abs(table_correlation(tables[0], tables[1])) < 0.9


def _naive_two_layer(params, tokens, num_heads, hide, instead=lambda y0: 0):
    """A two-layer forward pass written out step by step, with layer 0's output hidden from the
    readers in ``hide`` (a subset of "q", "k", "v", "readout"): the reference for remove_paths.
    Those readers see ``instead(y0)`` in place of layer 0's output ``y0`` (default: nothing)."""
    n = tokens.shape[1]
    x0 = params["embed"][tokens] + params["pos"][:n]
    w = [params[f"layers.0.{name}"] for name in ("w_q", "w_k", "w_v", "w_o")]
    y0 = multi_head_attention(x0, *w, num_heads=num_heads, mask=causal_mask(n))
    x1 = x0 + y0
    inputs = {part: (x0 + instead(y0) if part in hide else x1) for part in "qkv"}
    w_q, w_k, w_v, w_o = (params[f"layers.1.{name}"] for name in ("w_q", "w_k", "w_v", "w_o"))
    heads = []
    d_head = w_q.shape[0] // num_heads
    for i in range(num_heads):
        cols = slice(i * d_head, (i + 1) * d_head)
        out, _ = scaled_dot_product_attention(
            inputs["q"] @ w_q[:, cols],
            inputs["k"] @ w_k[:, cols],
            inputs["v"] @ w_v[:, cols],
            causal_mask(n),
        )
        heads.append(out)
    y1 = np.concatenate(heads, axis=-1) @ w_o
    final = x1 + y1 - (y0 - instead(y0) if "readout" in hide else 0)
    return final @ params["unembed"]


@pytest.mark.parametrize("hide", [(), ("q",), ("k",), ("v",), ("readout",), ("q", "k", "readout")])
def test_remove_paths_hides_layer0_from_the_chosen_readers_only(hide):
    params, tokens, _ = _small_problem(2, seed=6)
    readers = {"q": "1.q", "k": "1.k", "v": "1.v", "readout": "readout"}
    got, _ = forward(params, tokens, 2, remove_paths=[(0, readers[part]) for part in hide])
    np.testing.assert_allclose(
        got, _naive_two_layer(params, tokens, 2, hide), rtol=1e-10, atol=1e-12
    )
    if hide:  # and it does change the model: each path carries something
        full, _ = forward(params, tokens, 2)
        assert np.abs(got - full).max() > 1e-3


@pytest.mark.parametrize("hide", [("k",), ("q",), ("v", "readout")])
def test_mean_and_resample_ablations_replace_the_output_for_one_reader(hide):
    """Mean ablation: the reader sees layer 0's output averaged over the batch at each
    position; resample ablation: the output layer 0 computed on the previous sequence of the
    batch. Both against the step-by-step reference; a function of the output works too."""
    params, tokens, _ = _small_problem(2, seed=8)
    readers = {"q": "1.q", "k": "1.k", "v": "1.v", "readout": "readout"}
    refs = {
        "mean": lambda y0: y0.mean(axis=0, keepdims=True),
        "resample": lambda y0: np.concatenate([y0[-1:], y0[:-1]]),  # sequence b gets b - 1's
    }
    for how, instead in refs.items():
        got, _ = forward(params, tokens, 2, remove_paths=[(0, readers[p], how) for p in hide])
        want = _naive_two_layer(params, tokens, 2, hide, instead)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        zero, _ = forward(params, tokens, 2, remove_paths=[(0, readers[p]) for p in hide])
        assert np.abs(got - zero).max() > 1e-3  # a different ablation from zeroing
    flipped, _ = forward(params, tokens, 2, remove_paths=[(0, "1.k", lambda y0: y0[::-1])])
    np.testing.assert_allclose(
        flipped, _naive_two_layer(params, tokens, 2, ("k",), lambda y0: y0[::-1]), rtol=1e-10
    )


def test_mean_and_resample_ablations_change_nothing_when_every_sequence_is_the_same():
    params, tokens, _ = _small_problem(2, seed=9)
    same = np.repeat(tokens[:1], 4, axis=0)  # (4, n): one sequence four times
    intact, _ = forward(params, same, 2)
    for how in ("mean", "resample"):
        got, _ = forward(params, same, 2, remove_paths=[(0, "1.k", how), (0, "readout", how)])
        np.testing.assert_allclose(got, intact, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="replacement must be one of"):
        forward(params, same, 2, remove_paths=[(0, "1.k", "median")])


def test_removing_every_path_equals_removing_the_output():
    params, tokens, _ = _small_problem(2, seed=7)
    every = [(0, "1.q"), (0, "1.k"), (0, "1.v"), (0, "readout")]
    got, _ = forward(params, tokens, 2, remove_paths=every)
    expected, _ = forward(params, tokens, 2, output_masks=[np.zeros(tokens.shape), None])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [(1, "1.k"), (0, "0.q"), (0, "2.v"), (0, "1.x"), (0,), "1.k"])
def test_remove_paths_are_checked(bad):
    params, tokens, _ = _small_problem(2, seed=1)
    with pytest.raises(ValueError, match="not a \\(source layer, reader\\) pair"):
        forward(params, tokens, 2, remove_paths=[bad])
    with pytest.raises(ValueError, match="return_cache"):
        forward(params, tokens, 2, remove_paths=[(0, "1.k")], return_cache=True)


@pytest.mark.parametrize("layer", [0, 1])
def test_head_importance_in_either_layer_of_a_two_layer_model(layer):
    """The last layer's importance is computed from each head's share of the logits, an earlier
    layer's by running the model: both must equal the loss increase of a pruned forward pass."""
    params, tokens, targets = _small_problem(2, seed=8, batch=5)
    imp = head_importance(params, tokens, targets, num_heads=2, layer=layer)
    base = cross_entropy(forward(params, tokens, 2)[0], targets)[0]
    for head in range(2):
        masks = [np.ones(2), np.ones(2)]
        masks[layer] = _without_head(head)
        pruned = cross_entropy(forward(params, tokens, 2, head_masks=masks)[0], targets)[0]
        assert imp[head] == pytest.approx(pruned - base, rel=1e-9, abs=1e-12)
    curve = accuracy_after_pruning(params, tokens, targets, 2, order=[1, 0], layer=layer)
    masks = [np.ones(2), np.ones(2)]
    masks[layer] = _without_head(1)
    assert curve[1] == accuracy(params, tokens, targets, 2, head_masks=masks)


def _without_head(head):
    keep = np.ones(2)
    keep[head] = 0.0
    return keep
