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
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_attention import _torch_or_skip

from mha_helpers import (
    attention_io,
    causal_mask,
    multi_head_attention,
    online_softmax_update,
    scaled_dot_product_attention,
    tiled_attention,
    tiled_attention_backward,
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
    moved = n * d + 2 * n  # line 2: O = 0, l = 0, m = -inf set in HBM
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
    with pytest.raises(ValueError, match="'standard', 'tiled' or 'tiled_q_outer'"):
        attention_io(16, 8, 1000, "flash")


# --- no keys, and float16 inputs (issue 34, item 19) --------------------------------------------


def test_no_keys_is_refused_like_scaled_dot_product_attention():
    q, k, v = np.ones((2, 4)), np.ones((0, 4)), np.ones((0, 3))
    for attend in (
        lambda: tiled_attention(q, k, v, block_size=2),
        lambda: scaled_dot_product_attention(q, k, v),
        lambda: multi_head_attention(q, *[np.eye(4)] * 4, num_heads=2, context=k),
    ):
        with pytest.raises(ValueError, match=r"no keys \(n_k = 0\)"):
            attend()


def fp16_accumulating(q, k, v, block_size):
    """The online softmax with every running sum kept in float16: what the helper must not do."""
    scale = np.float16(1 / math.sqrt(q.shape[-1]))
    m = np.full(q.shape[0], -np.inf, dtype=np.float16)
    ell = np.zeros(q.shape[0], dtype=np.float16)
    acc = np.zeros((q.shape[0], v.shape[1]), dtype=np.float16)
    for start in range(0, len(k), block_size):
        scores = (q * scale) @ k[start : start + block_size].T
        m, ell, acc = online_softmax_update(m, ell, acc, scores, v[start : start + block_size])
    return acc / ell[:, None]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float16_inputs_are_accumulated_in_float32(seed):
    """The output is float16 and rounded correctly from the exact answer for its float16
    inputs: within half a unit in the last place (2^-11 relative), plus float32 round-off of the
    running sums (2^-20 absolute, for outputs that nearly cancel to 0). Summing the 300
    exponentials in float16 instead misses that bound by a factor of about a hundred."""
    rng = np.random.default_rng(seed)
    n, d = 300, 16
    q, k, v = (rng.normal(size=(n, d)).astype(np.float16) for _ in range(3))
    exact, _ = scaled_dot_product_attention(*(a.astype(np.float64) for a in (q, k, v)))
    got = tiled_attention(q, k, v, block_size=64)
    assert got.dtype == np.float16
    bound = 2.0**-11 * np.abs(exact) + 2.0**-20  # (n, d)
    assert np.all(np.abs(got - exact) <= bound)
    # The test can fail: the same blocks with float16 running sums.
    assert (np.abs(fp16_accumulating(q, k, v, 64) - exact) / bound).max() > 20
    out, lse = tiled_attention(q, k, v, block_size=64, return_logsumexp=True)
    assert lse.dtype == np.float32 and np.array_equal(out, got)


# --- the backward pass with recomputation (issue 34, item 22) ----------------------------------


def full_matrix_backward(q, k, v, d_out, mask=None):
    """The textbook backward pass, which keeps the whole (n_q, n_k) weight matrix P."""
    s = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    d_v = p.T @ d_out
    d_p = d_out @ v.T
    d_s = p * (d_p - (d_p * p).sum(axis=-1, keepdims=True))
    return d_s @ k / math.sqrt(q.shape[-1]), d_s.T @ q / math.sqrt(q.shape[-1]), d_v


@pytest.mark.parametrize(
    "n_q, n_k, block, masked", [(5, 9, 4, False), (8, 8, 3, True), (3, 20, 64, True)]
)
def test_recomputed_gradients_equal_the_full_matrix_backward_pass(n_q, n_k, block, masked):
    rng = np.random.default_rng(n_q * 100 + n_k)
    q, k, v = rng.normal(size=(n_q, 4)), rng.normal(size=(n_k, 4)), rng.normal(size=(n_k, 3))
    mask = random_mask(rng, n_q, n_k, 0.4) if masked else None
    out, lse = tiled_attention(q, k, v, block_size=block, mask=mask, return_logsumexp=True)
    d_out = rng.normal(size=out.shape)
    got = tiled_attention_backward(q, k, v, out, lse, d_out, block_size=block, mask=mask)
    for g, want in zip(got, full_matrix_backward(q, k, v, d_out, mask)):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-13)


def test_recomputed_gradients_match_finite_differences():
    """Independent of any backward formula: nudge each input and watch sum(d_out * out)."""
    rng = np.random.default_rng(11)
    q, k, v = rng.normal(size=(3, 2)), rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    mask = causal_mask(5)[2:]  # (3, 5): the last three rows of a causal mask
    d_out = rng.normal(size=(3, 2))
    out, lse = tiled_attention(q, k, v, block_size=2, mask=mask, return_logsumexp=True)
    grads = tiled_attention_backward(q, k, v, out, lse, d_out, block_size=2, mask=mask)
    for i, (arr, g) in enumerate(zip((q, k, v), grads)):
        numeric = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            loss = []
            for step in (1e-6, -1e-6):
                args = [q.copy(), k.copy(), v.copy()]
                args[i][idx] += step
                loss.append(np.sum(d_out * tiled_attention(*args, block_size=2, mask=mask)))
            numeric[idx] = (loss[0] - loss[1]) / 2e-6
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def test_recomputed_gradients_agree_with_torch_autograd():
    torch = _torch_or_skip()
    rng = np.random.default_rng(12)
    q, k, v = rng.normal(size=(2, 6, 4)), rng.normal(size=(2, 9, 4)), rng.normal(size=(2, 9, 5))
    mask = random_mask(rng, 6, 9, 0.5)
    d_out = rng.normal(size=(2, 6, 5))
    out, lse = tiled_attention(q, k, v, block_size=4, mask=mask, return_logsumexp=True)
    got = tiled_attention_backward(q, k, v, out, lse, d_out, block_size=4, mask=mask)
    t = [torch.from_numpy(a).requires_grad_() for a in (q, k, v)]
    y = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=torch.from_numpy(mask))
    y.backward(torch.from_numpy(d_out))
    for g, tt in zip(got, t):
        np.testing.assert_allclose(g, tt.grad.numpy(), rtol=1e-10, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    lead=st.sampled_from([(), (2,), (2, 3)]),
    n_q=st.integers(1, 8),
    n_k=st.integers(1, 30),
    d_k=st.integers(1, 5),
    d_v=st.integers(1, 4),
    block=st.integers(1, 40),
    masked=st.sampled_from(["none", "random", "causal"]),
    scale=st.sampled_from([1.0, 10.0]),
    seed=st.integers(0, 2**31 - 1),
)
def test_recomputed_gradients_equal_the_reference_for_random_shapes_blocks_and_masks(
    lead, n_q, n_k, d_k, d_v, block, masked, scale, seed
):
    """Against the textbook backward pass (written above, from the whole P) on every head of a
    batch, in float64 to 1e-10 relative: any block size, ragged last blocks, any leading axes."""
    rng = np.random.default_rng(seed)
    q = scale * rng.normal(size=lead + (n_q, d_k))
    k = scale * rng.normal(size=lead + (n_k, d_k))
    v = rng.normal(size=lead + (n_k, d_v))
    d_out = rng.normal(size=lead + (n_q, d_v))
    if masked == "random":
        mask = random_mask(rng, n_q, n_k, 0.4)
    elif masked == "causal":  # the last n_q rows of a causal mask: every query keeps a key
        mask = np.tril(np.ones((n_q, n_k), bool), k=max(n_k - n_q, 0))
    else:
        mask = None
    out, lse = tiled_attention(q, k, v, block_size=block, mask=mask, return_logsumexp=True)
    got = tiled_attention_backward(q, k, v, out, lse, d_out, block_size=block, mask=mask)
    for index in np.ndindex(lead):
        want = full_matrix_backward(q[index], k[index], v[index], d_out[index], mask)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g[index], w, rtol=1e-10, atol=1e-10 * scale**2)


def test_large_masked_scores_do_not_overflow_in_the_backward_pass():
    """Review of lessons 05-08, finding 10: with a causal mask and scores in the thousands, the
    masked scores exceed a row's log-sum-exp by hundreds; exponentiating them before masking
    overflows (a RuntimeWarning). Masking first, as the forward pass does, gives none."""
    rng = np.random.default_rng(14)
    q, k, v = (40 * rng.normal(size=(64, 8)) for _ in range(3))
    mask = causal_mask(64)
    raw = q @ k.T / math.sqrt(8)
    out, lse = tiled_attention(q, k, v, block_size=16, mask=mask, return_logsumexp=True)
    assert (raw - lse[:, None])[~mask].max() > 710  # exp of these overflows float64
    d_out = rng.normal(size=out.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any overflow or invalid-value warning fails the test
        got = tiled_attention_backward(q, k, v, out, lse, d_out, block_size=16, mask=mask)
    for g, want in zip(got, full_matrix_backward(q, k, v, d_out, mask)):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-8)


def test_float32_gradients_agree_with_the_float64_reference_to_float32_precision():
    rng = np.random.default_rng(15)
    q, k, v = (rng.normal(size=(2, 40, 8)).astype(np.float32) for _ in range(3))
    d_out = rng.normal(size=(2, 40, 8)).astype(np.float32)
    mask = causal_mask(40)
    out, lse = tiled_attention(q, k, v, block_size=16, mask=mask, return_logsumexp=True)
    got = tiled_attention_backward(q, k, v, out, lse, d_out, block_size=16, mask=mask)
    for i in range(2):
        want = full_matrix_backward(*(a[i].astype(np.float64) for a in (q, k, v, d_out)), mask)
        for g, w in zip(got, want):
            assert g.dtype == np.float32
            np.testing.assert_allclose(g[i], w, rtol=1e-4, atol=1e-5)


def test_the_backward_pass_never_builds_the_full_weight_matrix():
    rng = np.random.default_rng(13)
    n_q, n_k, d, block = 200, 20_000, 8, 64
    q, k, v = rng.normal(size=(n_q, d)), rng.normal(size=(n_k, d)), rng.normal(size=(n_k, d))
    out, lse = tiled_attention(q, k, v, block_size=block, return_logsumexp=True)
    d_out = rng.normal(size=out.shape)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        tiled_attention_backward(q, k, v, out, lse, d_out, block_size=block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grads = 2 * (n_q * d + 2 * n_k * d) * 8  # the three gradients, in two copies at most
    assert peak < grads + 10 * n_q * block * 8 < n_q * n_k * 8 / 5, peak


def test_the_backward_pass_refuses_what_the_forward_pass_did_not_return():
    q = k = v = np.ones((3, 2))
    out, lse = tiled_attention(q, k, v, return_logsumexp=True)
    with pytest.raises(ValueError, match="logsumexp has shape"):
        tiled_attention_backward(q, k, v, out, lse[:2], out)
    with pytest.raises(ValueError, match="same leading axes"):
        tiled_attention_backward(q[None], k, v, out, lse, out)


# --- FlashAttention-2's loop order (issue 34, item 10) -------------------------------------------


def simulate_query_blocks_outside(n, d, sram):
    """Walk FlashAttention-2's loops (query blocks outside) and count each load and store."""
    block = math.ceil(sram / (4 * d))
    moved = 0
    for i0 in range(0, n, block):  # outer loop: query blocks
        br = min(block, n - i0)
        moved += br * d  # load Q_i once
        for j0 in range(0, n, block):  # inner loop: key/value blocks
            moved += 2 * min(block, n - j0) * d  # load K_j, V_j
        moved += br * d + br  # store O_i and its rows' log-sum-exp, once
    return moved


@pytest.mark.parametrize("n, d, sram", [(100, 8, 256), (4096, 64, 96 * 1024), (300, 16, 1000)])
def test_query_blocks_outside_count_follows_the_loops(n, d, sram):
    assert attention_io(n, d, sram, "tiled_q_outer")["total"] == simulate_query_blocks_outside(
        n, d, sram
    )


def test_query_blocks_outside_save_about_m_over_2d_squared():
    d, sram = 64, 96 * 1024
    ratios = {}
    for algorithm in ("tiled", "tiled_q_outer"):
        standard = attention_io(65536, d, sram, "standard")["total"]
        ratios[algorithm] = standard / attention_io(65536, d, sram, algorithm)["total"]
    assert abs(ratios["tiled"] - sram / (3 * d * d)) < 0.3  # 8: Algorithm 1's order
    assert abs(ratios["tiled_q_outer"] - sram / (2 * d * d)) < 0.3  # 12: queries outside
