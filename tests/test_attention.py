"""The attention core against an independent reference written with explicit Python loops.

The reference below shares no code with mha_helpers: it slices each head's columns by hand,
computes every score as a sum of products, applies the mask by skipping keys, and normalises
with math.exp. If the helper's reshapes, transposes, scaling or softmax axis were wrong, these
comparisons would fail.
"""

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_helpers import (
    causal_mask,
    grouped_query_attention,
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)

# --- the independent reference ------------------------------------------------------------


def naive_attention_one_head(q, k, v, allowed):
    """q (n_q, d), k (n_k, d), v (n_k, d_v), allowed[i][j] bool -> (n_q, d_v), weights."""
    n_q, d = q.shape
    n_k = k.shape[0]
    out = np.zeros((n_q, v.shape[1]))
    weights = np.zeros((n_q, n_k))
    for i in range(n_q):
        scores = {}
        for j in range(n_k):
            if allowed[i][j]:
                scores[j] = sum(float(q[i, c]) * float(k[j, c]) for c in range(d)) / math.sqrt(d)
        top = max(scores.values())
        exps = {j: math.exp(s - top) for j, s in scores.items()}
        total = sum(exps.values())
        for j, e in exps.items():
            weights[i, j] = e / total
            out[i] += weights[i, j] * v[j].astype(float)
    return out, weights


def naive_mha(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads=None, context=None, mask=None):
    """One sequence (n, d_model): loop over heads, slice their columns, concatenate, project."""
    context = x if context is None else context
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    d_model = x.shape[1]
    d_head = d_model // num_heads
    group = num_heads // num_kv_heads
    n, n_k = x.shape[0], context.shape[0]
    allowed = np.ones((n, n_k), bool) if mask is None else mask
    q_all = x @ w_q
    k_all = context @ w_k
    v_all = context @ w_v
    outs, all_weights = [], []
    for head in range(num_heads):
        kv = head // group  # repeat, not tile
        q = q_all[:, head * d_head : (head + 1) * d_head]
        k = k_all[:, kv * d_head : (kv + 1) * d_head]
        v = v_all[:, kv * d_head : (kv + 1) * d_head]
        o, w = naive_attention_one_head(q, k, v, allowed)
        outs.append(o)
        all_weights.append(w)
    concat = np.concatenate(outs, axis=1)
    return concat @ w_o, np.stack(all_weights)


def random_layer(rng, d_model, kv_width=None, dtype=np.float64):
    kv_width = d_model if kv_width is None else kv_width
    scale = 1 / math.sqrt(d_model)
    w_q = rng.normal(scale=scale, size=(d_model, d_model))
    w_k = rng.normal(scale=scale, size=(d_model, kv_width))
    w_v = rng.normal(scale=scale, size=(d_model, kv_width))
    w_o = rng.normal(scale=scale, size=(d_model, d_model))
    return [w.astype(dtype) for w in (w_q, w_k, w_v, w_o)]


def random_mask(rng, n, n_k):
    mask = rng.random((n, n_k)) < 0.6
    mask[np.arange(n), rng.integers(0, n_k, size=n)] = True  # every query sees at least one key
    return mask


shapes = st.tuples(
    st.integers(1, 5),  # n
    st.sampled_from([1, 2, 3, 4, 6]),  # num_heads
    st.integers(1, 3),  # d_head
    st.integers(0, 2**32 - 1),  # seed
)


# --- equivalence ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(shapes, st.booleans())
def test_mha_matches_naive_loops(shape, use_mask):
    n, h, d_head, seed = shape
    rng = np.random.default_rng(seed)
    d_model = h * d_head
    x = rng.normal(size=(n, d_model))
    w = random_layer(rng, d_model)
    mask = random_mask(rng, n, n) if use_mask else None
    y, weights = multi_head_attention(x, *w, num_heads=h, mask=mask, return_weights=True)
    y_ref, weights_ref = naive_mha(x, *w, h, mask=mask)
    np.testing.assert_allclose(y, y_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, weights_ref, rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(shapes, st.integers(1, 4), st.integers(1, 3))
def test_batched_cross_attention_matches_naive_loops(shape, n_k, batch):
    n, h, d_head, seed = shape
    rng = np.random.default_rng(seed)
    d_model = h * d_head
    x = rng.normal(size=(batch, n, d_model))
    context = rng.normal(size=(batch, n_k, d_model))
    w = random_layer(rng, d_model)
    mask = np.stack([random_mask(rng, n, n_k) for _ in range(batch)])
    y, weights = multi_head_attention(
        x, *w, num_heads=h, context=context, mask=mask, return_weights=True
    )
    assert y.shape == (batch, n, d_model) and weights.shape == (batch, h, n, n_k)
    for b in range(batch):
        y_ref, w_ref = naive_mha(x[b], *w, h, context=context[b], mask=mask[b])
        np.testing.assert_allclose(y[b], y_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(weights[b], w_ref, rtol=1e-10, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 5),
    st.sampled_from([(1, 1), (2, 1), (4, 1), (4, 2), (6, 3), (6, 2), (8, 4)]),
    st.integers(1, 3),
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.integers(0, 2),
)
def test_gqa_matches_naive_loops(n, heads, d_head, seed, causal, batch):
    h, g = heads
    rng = np.random.default_rng(seed)
    d_model = h * d_head
    x = rng.normal(size=(n, d_model)) if batch == 0 else rng.normal(size=(batch, n, d_model))
    w = random_layer(rng, d_model, kv_width=g * d_head)
    mask = causal_mask(n) if causal else None
    y, weights = grouped_query_attention(
        x, *w, num_heads=h, num_kv_heads=g, mask=mask, return_weights=True
    )
    xs = [x] if batch == 0 else list(x)
    ys = [y] if batch == 0 else list(y)
    ws = [weights] if batch == 0 else list(weights)
    for xb, yb, wb in zip(xs, ys, ws):
        y_ref, w_ref = naive_mha(xb, *w, h, num_kv_heads=g, mask=mask)
        np.testing.assert_allclose(yb, y_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(wb, w_ref, rtol=1e-10, atol=1e-12)


def test_gqa_with_all_kv_heads_is_exactly_mha():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 12)).astype(np.float32)
    w = random_layer(rng, 12, dtype=np.float32)
    for mask in (None, causal_mask(5)):
        a = multi_head_attention(x, *w, num_heads=3, mask=mask)
        b = grouped_query_attention(x, *w, num_heads=3, num_kv_heads=3, mask=mask)
        assert np.array_equal(a, b)


def test_gqa_repeats_kv_heads_rather_than_tiling():
    """With 4 query heads and 2 KV heads, heads 0 and 1 share KV head 0 (repeat_interleave)."""
    rng = np.random.default_rng(5)
    d_head, h, g = 2, 4, 2
    x = rng.normal(size=(3, h * d_head))
    w_q, w_k, w_v, w_o = random_layer(rng, h * d_head, kv_width=g * d_head)
    _, weights = grouped_query_attention(x, w_q, w_k, w_v, w_o, h, g, return_weights=True)

    # Build the equivalent MHA weights by repeating each KV head's columns for its group.
    def rep(w):
        return np.concatenate(
            [w[:, (i // 2) * d_head : (i // 2 + 1) * d_head] for i in range(h)], 1
        )

    def tile(w):
        return np.concatenate([w[:, (i % 2) * d_head : (i % 2 + 1) * d_head] for i in range(h)], 1)

    _, w_rep = multi_head_attention(x, w_q, rep(w_k), rep(w_v), w_o, h, return_weights=True)
    _, w_tile = multi_head_attention(x, w_q, tile(w_k), tile(w_v), w_o, h, return_weights=True)
    np.testing.assert_allclose(weights, w_rep, rtol=1e-12)
    assert not np.allclose(weights, w_tile)


def test_sdpa_matches_naive_with_leading_axes():
    rng = np.random.default_rng(11)
    q = rng.normal(size=(2, 3, 4, 5))
    k = rng.normal(size=(2, 3, 6, 5))
    v = rng.normal(size=(2, 3, 6, 7))
    mask = random_mask(rng, 4, 6)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    for a in range(2):
        for b in range(3):
            o_ref, w_ref = naive_attention_one_head(q[a, b], k[a, b], v[a, b], mask)
            np.testing.assert_allclose(out[a, b], o_ref, rtol=1e-10)
            np.testing.assert_allclose(weights[a, b], w_ref, rtol=1e-10, atol=1e-15)
    assert np.all(weights[..., ~mask] == 0)


# --- conventions learners rely on ------------------------------------------------------------


def test_split_heads_takes_contiguous_columns_and_merge_inverts_it():
    x = np.arange(3 * 8).reshape(3, 8)  # token t, feature f -> 8 t + f
    heads = split_heads(x, 2)
    assert heads.shape == (2, 3, 4)
    np.testing.assert_array_equal(heads[1, 2], [20, 21, 22, 23])  # head 1 = columns 4..7 of token 2
    np.testing.assert_array_equal(merge_heads(heads), x)
    bare = x.reshape(2, 3, 4)  # the classic bug: same shape, different contents
    assert not np.array_equal(bare, heads)


def test_causal_mask_lets_query_i_see_keys_up_to_i():
    m = causal_mask(4)
    assert m.dtype == bool and m.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            assert m[i, j] == (j <= i)


def test_causal_first_token_attends_only_to_itself():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 8))
    _, w = multi_head_attention(
        x, *random_layer(rng, 8), num_heads=2, mask=causal_mask(4), return_weights=True
    )
    np.testing.assert_allclose(w[:, 0, 0], 1.0)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all(np.triu(w[0], 1) == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept_end_to_end(dtype):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 4, 8)).astype(dtype)
    w = random_layer(rng, 8, dtype=dtype)
    y, weights = multi_head_attention(x, *w, num_heads=4, mask=causal_mask(4), return_weights=True)
    assert y.dtype == dtype and weights.dtype == dtype
    wk = random_layer(rng, 8, kv_width=4, dtype=dtype)
    y2 = grouped_query_attention(x, *wk, num_heads=4, num_kv_heads=2, mask=causal_mask(4))
    assert y2.dtype == dtype
    out, w_sdpa = scaled_dot_product_attention(x, x, x)
    assert out.dtype == dtype and w_sdpa.dtype == dtype
    assert softmax(x).dtype == dtype


def test_float32_agrees_with_float64_to_float32_precision():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, 16))
    w = random_layer(rng, 16)
    y64 = multi_head_attention(x, *w, num_heads=4)
    y32 = multi_head_attention(
        x.astype(np.float32), *[a.astype(np.float32) for a in w], num_heads=4
    )
    np.testing.assert_allclose(y32, y64, rtol=1e-4, atol=1e-5)


def test_softmax_is_stable_and_sums_to_one():
    p = softmax(np.array([[1e4, 0.0, -1e4], [1e4, 1e4, 1e4]]))
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p[0], [1, 0, 0])
    np.testing.assert_allclose(p[1], [1 / 3] * 3)
    p32 = softmax(np.array([88.0, 89.0, 90.0], dtype=np.float32))  # exp(90) overflows float32
    assert np.all(np.isfinite(p32)) and abs(p32.sum() - 1) < 1e-6
    np.testing.assert_allclose(softmax(np.array([0.0, -np.inf])), [1.0, 0.0])


def test_softmax_axis_argument():
    x = np.array([[1.0, 2.0], [3.0, 5.0]])
    np.testing.assert_allclose(softmax(x, axis=0).sum(axis=0), [1, 1])
    np.testing.assert_allclose(softmax(x, axis=-1).sum(axis=-1), [1, 1])


def test_worked_example_from_the_seed_lesson():
    """Heads [1, 2] and [3, 4], concatenated and projected with the lesson's 4 x 4 matrix."""
    heads = np.array([[[1, 2]], [[3, 4]]])  # (h=2, n=1, d_head=2)
    joined = merge_heads(heads)  # (1, 4)
    w = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, -1, 0], [0, 1, 0, -1]])
    assert joined.tolist() == [[1, 2, 3, 4]]
    assert (joined @ w).tolist() == [[4, 6, -2, -2]]
    assert (joined @ np.eye(4, dtype=int)).tolist() == [[1, 2, 3, 4]]


# --- errors that teach ----------------------------------------------------------------------


def _layer8():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 8)), random_layer(rng, 8)


@pytest.mark.parametrize(
    "call, pattern",
    [
        (
            lambda x, w: multi_head_attention(x, *w, num_heads=3),
            r"d_model=8 is not divisible by num_heads=3: each head needs d_model / num_heads",
        ),
        (lambda x, w: multi_head_attention(x, *w, num_heads=0), r"num_heads must be a positive"),
        (
            lambda x, w: multi_head_attention(x[0], *w, num_heads=2),
            r"x has shape \(8,\), expected \(n, d_model\) or \(batch, n, d_model\)",
        ),
        (
            lambda x, w: multi_head_attention(x, w[0][:, :6], *w[1:], num_heads=2),
            r"w_q has shape \(8, 6\), expected \(d_model, d_model\) = \(8, 8\)",
        ),
        (
            lambda x, w: multi_head_attention(x, *w, num_heads=2, mask=np.ones((3, 3))),
            r"mask must be a boolean array .*0/1 float mask",
        ),
        (
            lambda x, w: multi_head_attention(x, *w, num_heads=2, mask=np.ones((3, 4), bool)),
            r"mask has shape \(3, 4\), expected \(\.\.\., n_q, n_k\) = \(\.\.\., 3, 3\)",
        ),
        (
            lambda x, w: multi_head_attention(x, *w, num_heads=2, mask=np.zeros((3, 3), bool)),
            r"mask blocks every key for at least one query",
        ),
        (
            lambda x, w: multi_head_attention(x, *w, num_heads=2, context=np.ones((2, 6))),
            r"context has shape \(2, 6\), expected \(\*, 8\)",
        ),
        (
            lambda x, w: grouped_query_attention(x, w[0], w[1][:, :4], w[2][:, :4], w[3], 4, 3),
            r"num_heads=4 is not divisible by num_kv_heads=3",
        ),
        (
            lambda x, w: grouped_query_attention(x, w[0], w[1], w[2], w[3], 4, 2),
            r"w_k has shape \(8, 8\), expected \(d_model, num_kv_heads \* d_head\) = \(8, 4\)",
        ),
        (lambda x, w: split_heads(x, 3), r"d_model=8 is not divisible by num_heads=3"),
        (lambda x, w: merge_heads(x), r"expected \(\.\.\., h, n, d_head\)"),
        (
            lambda x, w: scaled_dot_product_attention(x, x[:, :4], x),
            r"queries and keys must have the same width d_k",
        ),
        (lambda x, w: scaled_dot_product_attention(x, x, x[:2]), r"one value per key"),
        (lambda x, w: softmax(np.array([[0.0, 1.0], [-np.inf, -np.inf]])), r"all -inf"),
        (lambda x, w: causal_mask(0), r"positive whole number of tokens"),
        (
            lambda x, w: multi_head_attention(np.array([["a"] * 8]), *w, num_heads=2),
            r"must be numeric",
        ),
    ],
)
def test_bad_input_raises_a_value_error_that_explains(call, pattern):
    x, w = _layer8()
    with pytest.raises(ValueError, match=pattern):
        call(x, w)


def test_transposed_weight_is_named_as_such():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 8))
    w_q, w_k, w_v, w_o = random_layer(rng, 8, kv_width=4)
    with pytest.raises(ValueError, match="looks transposed"):
        grouped_query_attention(x, w_q, w_k.T, w_v, w_o, 4, 2)


# --- optional cross-check against PyTorch ----------------------------------------------------


def _torch_or_skip():
    try:
        import torch
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the PyTorch cross-check: .ci/run installs torch (CPU)")
        pytest.skip(
            "PyTorch is not installed; the cross-check is optional for learners "
            "(pip install torch to run it)"
        )
    return torch


@pytest.mark.parametrize("batch, masked", [(False, False), (True, False), (True, True)])
def test_agrees_with_torch_multihead_attention(batch, masked):
    torch = _torch_or_skip()
    rng = np.random.default_rng(7)
    n, d_model, h = 5, 16, 4
    x = rng.normal(size=(2, n, d_model) if batch else (n, d_model)).astype(np.float32)
    w_q, w_k, w_v, w_o = random_layer(rng, d_model, dtype=np.float32)
    layer = torch.nn.MultiheadAttention(d_model, h, bias=False, batch_first=True)
    with torch.no_grad():
        # torch applies x @ W.T, rows [0:E] = W_Q, [E:2E] = W_K, [2E:3E] = W_V.
        layer.in_proj_weight.copy_(torch.from_numpy(np.concatenate([w_q.T, w_k.T, w_v.T])))
        layer.out_proj.weight.copy_(torch.from_numpy(w_o.T.copy()))
        xt = torch.from_numpy(x if batch else x[None])
        mask = causal_mask(n) if masked else None
        # torch.nn.MultiheadAttention's boolean mask means True = NOT allowed: invert ours.
        tmask = None if mask is None else torch.from_numpy(~mask)
        yt, wt = layer(xt, xt, xt, attn_mask=tmask, need_weights=True, average_attn_weights=False)
    y, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=mask, return_weights=True)
    yt, wt = yt.numpy(), wt.numpy()
    if not batch:
        yt, wt = yt[0], wt[0]
    np.testing.assert_allclose(y, yt, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(weights, wt, rtol=1e-5, atol=1e-6)


def test_gqa_agrees_with_torch_sdpa_enable_gqa():
    torch = _torch_or_skip()
    rng = np.random.default_rng(8)
    h, g, n, d_head = 6, 2, 4, 3
    d_model = h * d_head
    x = rng.normal(size=(n, d_model)).astype(np.float32)
    w_q, w_k, w_v, w_o = random_layer(rng, d_model, kv_width=g * d_head, dtype=np.float32)
    y = grouped_query_attention(x, w_q, w_k, w_v, w_o, h, g, mask=causal_mask(n))
    q = torch.from_numpy(split_heads(x @ w_q, h).copy())  # (h, n, d_head)
    k = torch.from_numpy(split_heads(x @ w_k, g).copy())  # (g, n, d_head)
    v = torch.from_numpy(split_heads(x @ w_v, g).copy())  # (g, n, d_head)
    # scaled_dot_product_attention's boolean mask means True = may attend, like ours.
    out = torch.nn.functional.scaled_dot_product_attention(
        q[None], k[None], v[None], attn_mask=torch.from_numpy(causal_mask(n)), enable_gqa=True
    )
    y_torch = merge_heads(out[0].numpy()) @ w_o  # (n, d_model)
    np.testing.assert_allclose(y, y_torch, rtol=1e-5, atol=1e-5)
