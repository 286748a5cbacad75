"""The attention core's shortcuts for speed give the same answers as the plain computation.

``mha_helpers.attention`` skips the row-max shift when a bound proves ``exp`` cannot overflow,
and multi-head attention that does not return its weights normalises its output instead of
the weights (benchmarks/README.md). Here both shortcuts are compared with a plain NumPy
softmax attention, on both sides of the bound, with and without masks, in float32 and float64.
"""

import numpy as np
import pytest

from mha_helpers import (
    causal_mask,
    grouped_query_attention,
    multi_head_attention,
    scaled_dot_product_attention,
)
from mha_helpers.attention import _exp_cannot_overflow
from mha_helpers.heads import merge_heads, split_heads


def plain_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d)) v in float64, shifting every row by its maximum."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v, weights


def plain_mha(x, w_q, w_k, w_v, w_o, h, mask=None):
    out, weights = plain_attention(
        split_heads(x @ w_q, h), split_heads(x @ w_k, h), split_heads(x @ w_v, h), mask
    )
    return merge_heads(out) @ w_o, weights


TOL = {np.float32: dict(rtol=2e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("logit_scale", [0.1, 1.0, 30.0, 3000.0])  # below and above the bound
@pytest.mark.parametrize("masked", [False, True])
def test_shortcuts_match_plain_attention(dtype, logit_scale, masked):
    rng = np.random.default_rng(7)
    n, d_model, h = 6, 8, 2
    x = (rng.normal(size=(n, d_model)) * logit_scale**0.5).astype(dtype)
    w = [(rng.normal(size=(d_model, d_model)) * logit_scale**0.25).astype(dtype) for _ in range(4)]
    mask = causal_mask(n) if masked else None
    y_ref, weights_ref = plain_mha(
        x.astype(np.float64), *[a.astype(np.float64) for a in w], h, mask
    )
    scale = np.abs(y_ref).max()
    y = multi_head_attention(x, *w, num_heads=h, mask=mask)
    y2, weights = multi_head_attention(x, *w, num_heads=h, mask=mask, return_weights=True)
    assert y.dtype == y2.dtype == weights.dtype == dtype
    np.testing.assert_allclose(y / scale, y_ref / scale, **TOL[dtype])
    np.testing.assert_allclose(y2 / scale, y_ref / scale, **TOL[dtype])
    np.testing.assert_allclose(weights, weights_ref, **TOL[dtype])
    assert np.isfinite(y).all() and np.allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)


def test_both_sides_of_the_bound_are_exercised():
    rng = np.random.default_rng(0)
    small = rng.normal(size=(2, 5, 4))
    assert _exp_cannot_overflow(small, small)
    assert not _exp_cannot_overflow(small * 100, small * 100)
    assert not _exp_cannot_overflow(small.astype(np.float32) * 10, small.astype(np.float32) * 10)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_bound_refuses_non_finite_inputs(bad):
    q = np.ones((3, 4))
    q[1, 2] = bad
    assert not _exp_cannot_overflow(q, np.ones((3, 4)))
    assert not _exp_cannot_overflow(np.zeros((0, 4)), np.ones((3, 4)))


def test_huge_logits_still_give_a_distribution():
    q = np.array([[1e4, 0.0], [0.0, -1e4]])
    k = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    v = np.eye(3)
    out, weights = scaled_dot_product_attention(q, k, v)
    ref_out, ref_weights = plain_attention(q, k, v)
    np.testing.assert_allclose(weights, ref_weights, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, atol=1e-12)


def test_gqa_without_weights_matches_with_weights():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 5, 12)).astype(np.float32)
    w_q, w_o = (rng.normal(size=(12, 12)).astype(np.float32) for _ in range(2))
    w_k, w_v = (rng.normal(size=(12, 6)).astype(np.float32) for _ in range(2))
    for mask in (None, causal_mask(5)):
        a = grouped_query_attention(x, w_q, w_k, w_v, w_o, 4, 2, mask=mask)
        b, weights = grouped_query_attention(
            x, w_q, w_k, w_v, w_o, 4, 2, mask=mask, return_weights=True
        )
        assert a.dtype == np.float32 and weights.shape == (2, 4, 5, 5)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
