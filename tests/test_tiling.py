"""FlashAttention's tiled forward pass (mha_helpers.tiling), lesson 08.

tiled_attention must give exact attention: the same numbers as a naive loop written from the
formula, as the course's scaled_dot_product_attention and, where installed, as PyTorch's
scaled_dot_product_attention, for any block size (ragged last blocks included), any mask that
leaves each query at least one key, and scores too large for a naive exp. It must never hold
the full score matrix, and it must refuse bad shapes with a ValueError naming what was expected.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_attention import _torch_or_skip

from mha_helpers import (
    attention_io,
    causal_mask,
    online_softmax_update,
    scaled_dot_product_attention,
    tiled_attention,
)


def naive_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d_k)) v, one query and one key at a time, in exact Python floats
    where it matters (math.fsum), with the row maximum subtracted so exp cannot overflow."""
    n_q, d_k = q.shape
    n_k, d_v = v.shape
    out = np.zeros((n_q, d_v))
    for i in range(n_q):
        allowed = [j for j in range(n_k) if mask is None or mask[i, j]]
        scores = {
            j: math.fsum(q[i, t] * k[j, t] for t in range(d_k)) / math.sqrt(d_k) for j in allowed
        }
        top = max(scores.values())
        e = {j: math.exp(s - top) for j, s in scores.items()}
        total = math.fsum(e.values())
        for c in range(d_v):
            out[i, c] = math.fsum(e[j] * v[j, c] for j in allowed) / total
    return out


def random_mask(rng, n_q, n_k, density):
    """A random boolean mask with at least one allowed key in every row."""
    mask = rng.random((n_q, n_k)) < density
    mask[np.arange(n_q), rng.integers(0, n_k, size=n_q)] = True
    return mask


@settings(max_examples=40, deadline=None)
@given(
    n_q=st.integers(1, 9),
    n_k=st.integers(1, 40),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 5),
    block=st.integers(1, 48),
    masked=st.sampled_from(["none", "random", "single"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_agrees_with_a_naive_loop_for_random_shapes_blocks_and_masks(
    n_q, n_k, d_k, d_v, block, masked, seed
):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k))
    v = rng.normal(size=(n_k, d_v))
    if masked == "none":
        mask = None
    elif masked == "random":
        mask = random_mask(rng, n_q, n_k, 0.4)
    else:  # every row may attend to exactly one key
        mask = np.zeros((n_q, n_k), dtype=bool)
        mask[np.arange(n_q), rng.integers(0, n_k, size=n_q)] = True
    got = tiled_attention(q, k, v, block_size=block, mask=mask)
    assert got.shape == (n_q, d_v)
    np.testing.assert_allclose(got, naive_attention(q, k, v, mask), rtol=1e-12, atol=1e-13)
    reference, _ = scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_allclose(got, reference, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("n_k, block", [(10, 3), (64, 64), (65, 64), (127, 64), (5, 100)])
def test_the_last_short_block_counts(n_k, block):
    """With all the weight on the last key, dropping the last (short) block is a wrong answer."""
    rng = np.random.default_rng(n_k)
    q = np.ones((2, 4))
    k = np.zeros((n_k, 4))
    k[-1] = 10.0  # the last key wins by far
    v = rng.normal(size=(n_k, 3))
    got = tiled_attention(q, k, v, block_size=block)
    np.testing.assert_allclose(got, scaled_dot_product_attention(q, k, v)[0], rtol=1e-12)
    np.testing.assert_allclose(got[0], v[-1], atol=1e-6)


def test_rows_with_a_single_allowed_key_copy_its_value():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    mask = np.eye(6, dtype=bool)  # query i may attend to key i only
    # Block 2: for each query, every block but one is fully masked for that row.
    np.testing.assert_allclose(tiled_attention(q, k, v, block_size=2, mask=mask), v, rtol=1e-15)
    causal = tiled_attention(q, k, v, block_size=4, mask=causal_mask(6))
    np.testing.assert_allclose(causal[0], v[0], rtol=1e-15)  # the first query sees one key
    assert np.all(np.isfinite(causal))


@pytest.mark.parametrize("scale", [30.0, 300.0, 1e4])
def test_scores_where_a_naive_exp_overflows(scale):
    rng = np.random.default_rng(2)
    q, k = scale * rng.normal(size=(5, 4)), scale * rng.normal(size=(23, 4))
    v = rng.normal(size=(23, 3))
    scores = q @ k.T / 2.0
    if scale >= 300:
        with np.errstate(over="ignore"):
            assert not np.all(np.isfinite(np.exp(scores)))  # the naive softmax would overflow
    got = tiled_attention(q, k, v, block_size=5)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, naive_attention(q, k, v), rtol=1e-10, atol=1e-12)


def test_later_blocks_with_larger_scores_rescale_the_earlier_ones():
    """Scores that rise block after block: each new block raises the running max, so the
    earlier partial sums must be rescaled (once) each time."""
    q = np.ones((1, 1))
    k = np.arange(12.0)[:, None]  # scores 0, 1, ..., 11 rising
    v = np.arange(12.0)[:, None] ** 2
    for block in (1, 2, 5):
        np.testing.assert_allclose(
            tiled_attention(q, k, v, block_size=block), naive_attention(q, k, v), rtol=1e-13
        )


def test_float32_stays_float32_and_leading_axes_are_carried():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(2, 3, 5, 4)).astype(np.float32)  # (batch, heads, n_q, d_k)
    k = rng.normal(size=(2, 3, 11, 4)).astype(np.float32)
    v = rng.normal(size=(2, 3, 11, 6)).astype(np.float32)
    mask = random_mask(rng, 5, 11, 0.5)
    got = tiled_attention(q, k, v, block_size=4, mask=mask)
    assert got.dtype == np.float32 and got.shape == (2, 3, 5, 6)
    expected, _ = scaled_dot_product_attention(
        q.astype(float), k.astype(float), v.astype(float), mask
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_online_softmax_update_folds_blocks_into_the_softmax():
    rng = np.random.default_rng(4)
    scores, v = 3 * rng.normal(size=(4, 10)), rng.normal(size=(10, 2))
    m, ell, acc = np.full(4, -np.inf), np.zeros(4), np.zeros((4, 2))
    for cut in ((0, 3), (3, 4), (4, 10)):
        m, ell, acc = online_softmax_update(m, ell, acc, scores[:, slice(*cut)], v[slice(*cut)])
    np.testing.assert_allclose(m, scores.max(axis=1))
    np.testing.assert_allclose(ell, np.exp(scores - m[:, None]).sum(axis=1), rtol=1e-14)
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(acc / ell[:, None], w @ v / w.sum(axis=1, keepdims=True), rtol=1e-13)


def test_agrees_with_torch_scaled_dot_product_attention():
    torch = _torch_or_skip()
    rng = np.random.default_rng(5)
    for n_q, n_k, d_k, d_v, block in [(7, 33, 8, 5, 8), (16, 100, 16, 16, 64), (1, 3, 2, 2, 2)]:
        q, k = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k))
        v = rng.normal(size=(n_k, d_v))
        for mask in (None, random_mask(rng, n_q, n_k, 0.3)):
            t = [torch.from_numpy(a) for a in (q, k, v)]
            # PyTorch's functional API: a boolean attn_mask means True = may attend, as ours.
            tm = None if mask is None else torch.from_numpy(mask)
            expected = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=tm).numpy()
            got = tiled_attention(q, k, v, block_size=block, mask=mask)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)


def test_never_builds_the_full_score_matrix():
    """Peak memory while attending 200 queries to 20,000 keys in blocks of 64 stays far below
    one (n_q, n_k) float64 array (32 MB): tracemalloc sees NumPy's allocations."""
    rng = np.random.default_rng(6)
    n_q, n_k, d, block = 200, 20_000, 8, 64
    q, k, v = rng.normal(size=(n_q, d)), rng.normal(size=(n_k, d)), rng.normal(size=(n_k, d))
    full = n_q * n_k * 8
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        tiled_attention(q, k, v, block_size=block)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        scaled_dot_product_attention(q, k, v)  # the same sizes through the full matrix
        _, peak_full = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_full >= full  # the measurement sees an (n_q, n_k) array when there is one
    # A handful of (n_q, block) arrays and the (n_q, d) state: under 1 MB here.
    assert peak < 10 * n_q * block * 8 + 10 * n_q * d * 8 < full / 20, (peak, full)


@pytest.mark.parametrize(
    "args, kwargs, words",
    [
        ((np.ones(4), np.ones((3, 4)), np.ones((3, 2))), {}, "expected (n_q, d_k)"),
        ((np.ones((2, 4)), np.ones((3, 5)), np.ones((3, 2))), {}, "same width d_k"),
        ((np.ones((2, 4)), np.ones((3, 4)), np.ones((4, 2))), {}, "one value per key"),
        ((np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2))), {"block_size": 0}, "block_size"),
        ((np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2))), {"block_size": 2.5}, "block_size"),
        (
            (np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2))),
            {"mask": np.ones((3, 2), dtype=bool)},
            "expected (..., n_q, n_k) = (..., 2, 3)",
        ),
        (
            (np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2))),
            {"mask": np.ones((2, 3))},
            "boolean",
        ),
        (
            (np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2))),
            {"mask": np.array([[True, False, False], [False, False, False]])},
            "at least one key",
        ),
        ((np.ones((2, 2, 4)), np.ones((3, 3, 4)), np.ones((3, 3, 2))), {}, "do not broadcast"),
    ],
)
def test_bad_input_gets_a_value_error_that_says_what_was_expected(args, kwargs, words):
    with pytest.raises(ValueError, match=None) as info:
        tiled_attention(*args, **kwargs)
    assert words in str(info.value)


def simulate_algorithm_1(n, d, sram):
    """Walk Algorithm 1's loops of Dao et al. 2022 and count every load and store of HBM."""
    b_c = math.ceil(sram / (4 * d))
    b_r = min(b_c, d)
    moved = 0
    for j0 in range(0, n, b_c):  # outer loop: key/value blocks
        bc = min(b_c, n - j0)
        moved += 2 * bc * d  # load K_j, V_j
        for i0 in range(0, n, b_r):  # inner loop: query blocks
            br = min(b_r, n - i0)
            moved += br * d + br * d + 2 * br  # load Q_i, O_i, l_i, m_i
            moved += br * d + 2 * br  # store O_i, l_i, m_i
    return moved


@pytest.mark.parametrize("n, d, sram", [(100, 8, 256), (1024, 64, 96 * 1024), (300, 16, 1000)])
def test_io_counts_follow_the_papers_algorithms(n, d, sram):
    assert attention_io(n, d, sram, "tiled")["total"] == simulate_algorithm_1(n, d, sram)
    standard = attention_io(n, d, sram, "standard")
    # Algorithm 0: read Q, K; write S; read S; write P; read P, V; write O.
    assert standard["total"] == 2 * n * d + n * n + n * n + n * n + (n * n + n * d) + n * d


def test_io_saving_grows_with_sram_and_bad_arguments_are_refused():
    small, large = (attention_io(4096, 64, m, "tiled")["total"] for m in (4096, 64 * 1024))
    standard = attention_io(4096, 64, 4096, "standard")["total"]
    assert large < standard < small  # tiling pays only when the fast memory is large next to d^2
    with pytest.raises(ValueError, match="too small"):
        attention_io(16, 64, 100, "tiled")
    with pytest.raises(ValueError, match="'standard' or 'tiled'"):
        attention_io(16, 8, 1000, "flash")
