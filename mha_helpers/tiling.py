"""Attention without the score matrix: FlashAttention's tiled forward pass, in NumPy.

Lesson 08. :func:`tiled_attention` walks the keys and values in blocks of ``block_size`` and
keeps, for every query, three running quantities: the largest score seen so far ``m``, the sum
of ``exp(score - m)`` so far ``ell``, and the output so far ``acc`` (a weighted sum of values, not
yet divided by ``ell``). :func:`online_softmax_update` folds one block into them. At no time does
it hold more than ``n_q x block_size`` scores, yet the result is exact attention, the same as
:func:`mha_helpers.scaled_dot_product_attention` up to float round-off (Dao et al. 2022,
"FlashAttention", arXiv 2205.14135, §3.1 and Algorithm 1).

:func:`attention_io` counts what the two algorithms move between slow memory (HBM) and fast
on-chip memory (SRAM), following the paper's Algorithm 0 (standard attention) and Algorithm 1.

>>> rng = np.random.default_rng(0)
>>> q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(10, 4)), rng.normal(size=(10, 2))
>>> from mha_helpers import scaled_dot_product_attention
>>> np.allclose(tiled_attention(q, k, v, block_size=4), scaled_dot_product_attention(q, k, v)[0])
True
"""

from __future__ import annotations

import math

import numpy as np

from .attention import check_attention_mask, check_qkv
from .shapes import _fmt, positive_int

__all__ = [
    "online_softmax_update",
    "tiled_attention",
    "tiled_attention_backward",
    "attention_io",
]


def online_softmax_update(m, ell, acc, scores, v_block):
    """Fold one block of scores and values into the running softmax state; return the new state.

    Parameters
    ----------
    m : (..., n_q) the largest score seen so far in each row (``-inf`` before the first block)
    ell : (..., n_q) the sum of ``exp(score - m)`` over the keys seen so far
    acc : (..., n_q, d_v) the sum of ``exp(score - m) * value`` over the keys seen so far
    scores : (..., n_q, b) this block's scaled scores (``-inf`` where masked)
    v_block : (..., b, d_v) this block's values

    Returns ``(m_new, ell_new, acc_new)``. Both old sums were taken relative to the old maximum;
    after the block the maximum may be larger, so they are multiplied once by
    ``exp(m - m_new)`` (at most 1) before the block's own terms are added. Dividing ``acc`` by
    ``ell`` after the last block gives the attention output.

    A row whose keys so far are all masked keeps ``m = -inf``, ``ell = 0`` and ``acc = 0``.

    >>> m, ell, acc = np.array([-np.inf]), np.zeros(1), np.zeros((1, 1))
    >>> m, ell, acc = online_softmax_update(m, ell, acc, np.array([[0.0]]), np.array([[1.0]]))
    >>> m, ell, acc = online_softmax_update(m, ell, acc, np.array([[np.log(3.0)]]), np.array([[5.0]]))
    >>> (acc / ell[..., None]).item()             # (1 * 1 + 3 * 5) / (1 + 3)
    4.0
    """
    m_new = np.maximum(m, scores.max(axis=-1))  # (..., n_q)
    # A row with nothing allowed yet has m_new = -inf; shift it by 0 instead, so that
    # exp(-inf - 0) = 0 rather than exp(-inf + inf) = NaN.
    shift = np.where(np.isneginf(m_new), 0.0, m_new)  # (..., n_q)
    rescale = np.exp(m - shift)  # (..., n_q): exp(m_old - m_new) <= 1
    p = np.exp(scores - shift[..., None])  # (..., n_q, b): every entry <= 1
    ell_new = rescale * ell + p.sum(axis=-1)  # (..., n_q)
    acc_new = rescale[..., None] * acc + p @ v_block  # (..., n_q, d_v)
    return m_new, ell_new, acc_new


def tiled_attention(q, k, v, *, block_size: int = 64, mask=None, return_logsumexp=False):
    """Exact attention ``softmax(q k^T / sqrt(d_k)) v``, computed block by block over the keys.

    Parameters
    ----------
    q : (..., n_q, d_k) queries
    k : (..., n_k, d_k) keys
    v : (..., n_k, d_v) values
    block_size : keys (and values) per block; the last block may be shorter
    mask : optional boolean array broadcastable to (..., n_q, n_k); True = may attend (the
        course's polarity, as in :func:`mha_helpers.scaled_dot_product_attention`)

    return_logsumexp : also return each row's ``log(sum_j exp(score_j))``, ``(..., n_q)``,
        ``m + log(ell)``: the one number per query that FlashAttention-2 keeps for its backward
        pass (Dao 2023, arXiv 2307.08691, §3.1.1; FlashAttention itself keeps both ``m`` and
        ``ell``, Dao et al. 2022, Algorithms 2 and 4). :func:`tiled_attention_backward`
        recomputes the weights from it

    Returns the output, ``(..., n_q, d_v)``: the same numbers as
    ``scaled_dot_product_attention(q, k, v, mask)[0]`` up to round-off. The attention weights
    are never formed: per head, at most ``n_q x block_size`` scores exist at any time.

    The output has the inputs' dtype, but the scores and the running sums are kept in float32
    at least, as FlashAttention keeps them for fp16 inputs: summing hundreds of exponentials in
    float16 would lose about three digits. ``n_k = 0`` (no keys) raises ``ValueError``, as
    :func:`mha_helpers.scaled_dot_product_attention` does.

    >>> q = k = v = np.eye(3)
    >>> tiled_attention(q, k, v, block_size=2).shape
    (3, 3)
    """
    block_size = positive_int(block_size, "block_size", " of keys per block")
    q, k, v = check_qkv(q, k, v)
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"q, k and v have leading (batch or head) axes {_fmt(q.shape[:-2])}, "
            f"{_fmt(k.shape[:-2])} and {_fmt(v.shape[:-2])}, which do not broadcast together"
        ) from None
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    dtype = np.result_type(q, k, v)
    if mask is not None:
        mask = check_attention_mask(mask, n_q, n_k)
        # A view (no copy) with one column per key, so it can be sliced block by block.
        mask = np.broadcast_to(mask, mask.shape[:-2] + (mask.shape[-2], n_k))
        try:
            batch = np.broadcast_shapes(batch, mask.shape[:-2])
        except ValueError:
            raise ValueError(
                f"mask has shape {_fmt(mask.shape)}, whose leading axes do not broadcast with "
                f"those of q, k and v, {_fmt(batch)}"
            ) from None

    wide = np.promote_types(dtype, np.float32)  # float16 in: scores and sums in float32
    q = q.astype(wide) * np.asarray(1.0 / math.sqrt(d_k), dtype=wide)  # (..., n_q, d_k)
    m = np.full(batch + (n_q,), -np.inf, dtype=wide)  # (..., n_q): running max
    ell = np.zeros(batch + (n_q,), dtype=wide)  # (..., n_q): running sum of exp
    acc = np.zeros(batch + (n_q, d_v), dtype=wide)  # (..., n_q, d_v): running output
    for start in range(0, n_k, block_size):  # the last block may be shorter: range covers it
        stop = min(start + block_size, n_k)
        k_block = k[..., start:stop, :].astype(wide, copy=False)  # (..., b, d_k)
        scores = q @ k_block.swapaxes(-1, -2)  # (..., n_q, b), b <= block_size
        if mask is not None:
            scores = np.where(mask[..., start:stop], scores, np.asarray(-np.inf, dtype=wide))
        v_block = v[..., start:stop, :].astype(wide, copy=False)  # (..., b, d_v)
        m, ell, acc = online_softmax_update(m, ell, acc, scores, v_block)
    out = (acc / ell[..., None]).astype(dtype, copy=False)  # (..., n_q, d_v)
    if return_logsumexp:
        return out, m + np.log(ell)  # (..., n_q): log sum_j exp(score_j), in float32 or wider
    return out


def attention_io(n, d, sram_elements, algorithm="standard") -> dict:
    """Numbers moved between HBM and SRAM by one head's attention forward pass, by what they are.

    ``n`` tokens, head width ``d``, on-chip memory of ``sram_elements`` numbers (the paper's M).
    Counts follow Dao et al. 2022 (arXiv 2205.14135):

    * ``"standard"`` (Algorithm 0): read Q, K, write S = Q K^T (n x n); read S, write
      P = softmax(S); read P and V, write O. Total ``4 n d + 4 n^2``: Theta(n d + n^2).
    * ``"tiled"`` (Algorithm 1): blocks of ``B_c = ceil(M / 4d)`` keys and
      ``B_r = min(B_c, d)`` queries. O, l and m are first set in HBM (line 2: ``n d + 2 n``
      numbers written); K and V are read once; for each of the ``T_c = ceil(n / B_c)`` key
      blocks, all of Q is read, O is read and written and the running max and sum (m, l) are
      read and written. Total ``3 n d + 2 n + T_c (3 n d + 4 n)``: Theta(n^2 d^2 / M).
    * ``"tiled_q_outer"``: the loop order of FlashAttention-2 (Dao 2023, arXiv 2307.08691,
      Algorithm 1), query blocks outside, key blocks inside. The course's count, with blocks
      of ``B = ceil(M / 4d)`` queries and as many keys (the same split of the fast memory as
      above): each query block is read once, its output and its row's log-sum-exp written
      once, and all of K and V read once per query block. Total
      ``2 n d + n + T_r 2 n d`` with ``T_r = ceil(n / B)``: Theta(n^2 d^2 / M) again, but
      without re-reading Q and re-writing O, so about ``M / (2 d^2)`` below standard
      attention instead of ``M / (3 d^2)``.

    Returns a dict of element counts by item (e.g. ``"S and P"``, ``"Q"``) plus ``"total"``;
    multiply by the bytes per element for bytes.

    >>> attention_io(1024, 64, 96 * 1024)["total"] == 4 * 1024 * 64 + 4 * 1024**2
    True
    """
    n = positive_int(n, "n", " of tokens")
    d = positive_int(d, "d", " (head width)")
    sram = positive_int(sram_elements, "sram_elements")
    if algorithm == "standard":
        out = {
            "Q, K, V read": 3 * n * d,
            "O written": n * d,
            "S and P (n x n)": 4 * n * n,  # S written, S read, P written, P read
        }
    elif algorithm in ("tiled", "tiled_q_outer"):
        block = math.ceil(sram / (4 * d))
        if block < 1 or sram < 4 * d:
            raise ValueError(
                f"sram_elements={sram} is too small for d={d}: a block of keys, values, queries "
                f"and outputs needs at least 4 d = {4 * d} numbers of fast memory"
            )
        passes = math.ceil(n / block)  # T_c key blocks (Algorithm 1) or T_r query blocks
        if algorithm == "tiled":
            out = {
                "O, m and l initialised": n * d + 2 * n,  # Algorithm 1, line 2: set in HBM
                "Q, K, V read": 2 * n * d + passes * n * d,  # K, V once; Q once per key block
                "O read and written": passes * 2 * n * d,  # once per key block
                "m and l": passes * 4 * n,  # running max and sum, read and written per key block
            }
        else:
            out = {
                "Q, K, V read": n * d + passes * 2 * n * d,  # Q once; K, V once per query block
                "O written": n * d,  # once, when its query block is done
                "log-sum-exp written": n,  # one number per query, kept for the backward pass
            }
    else:
        raise ValueError(
            f"algorithm must be 'standard', 'tiled' or 'tiled_q_outer', got {algorithm!r}"
        )
    out["total"] = sum(out.values())
    return out


def tiled_attention_backward(q, k, v, out, logsumexp, d_out, *, block_size: int = 64, mask=None):
    """Gradients of tiled attention with the weights *recomputed*, never stored (FlashAttention's
    backward pass, Dao et al. 2022, §3.1 "Recomputation" and Algorithm 4; from one log-sum-exp
    per row as in FlashAttention-2, Dao 2023, §3.1.1 and Algorithm 2).

    Parameters
    ----------
    q, k, v : (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v), the same leading axes
    out, logsumexp : (..., n_q, d_v) and (..., n_q), what
        ``tiled_attention(q, k, v, mask=mask, return_logsumexp=True)`` returned
    d_out : (..., n_q, d_v), the gradient of the loss with respect to ``out``
    block_size, mask : as in :func:`tiled_attention`

    Returns ``(d_q, d_k, d_v)`` with the shapes and dtype of ``q``, ``k``, ``v``. The forward
    pass kept one number per query (its log-sum-exp, FlashAttention-2's choice; FlashAttention
    keeps the running max and sum separately) instead of the ``n_q x n_k`` weights; here each
    block of weights is rebuilt from it, ``exp(score - logsumexp)``, used and dropped, so at
    most ``n_q x block_size`` weights exist at any time. Masked scores are set to ``-inf``
    *before* the exponential, as in the forward pass, so large masked scores cannot overflow
    (a mask row with no allowed key is refused, as in the forward pass). Per block of keys::

        d_v_block = P^T d_out
        d_P = d_out v_block^T
        d_S = P * (d_P - D),   D = rowsum(d_out * out)   (the softmax's backward)
        d_q += d_S k_block / sqrt(d_k),   d_k_block = d_S^T q / sqrt(d_k)
    """
    block_size = positive_int(block_size, "block_size", " of keys per block")
    q, k, v = check_qkv(q, k, v)
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(
            f"q, k and v have leading axes {_fmt(q.shape[:-2])}, {_fmt(k.shape[:-2])} and "
            f"{_fmt(v.shape[:-2])}: the backward pass needs the same leading axes on all three"
        )
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    lead = q.shape[:-2]
    for name, arr, shape in (
        ("out", out, (n_q, d_v)),
        ("d_out", d_out, (n_q, d_v)),
        ("logsumexp", logsumexp, (n_q,)),
    ):
        if np.shape(arr) != lead + shape:
            raise ValueError(
                f"{name} has shape {_fmt(np.shape(arr))}, expected {_fmt(lead + shape)}: "
                f"from tiled_attention(q, k, v, return_logsumexp=True) and its gradient"
            )
    if mask is not None:
        mask = check_attention_mask(mask, n_q, n_k)
        mask = np.broadcast_to(mask, mask.shape[:-2] + (n_q, n_k))  # a view, sliced by block
    wide = np.promote_types(np.result_type(q, k, v), np.float32)
    scale = 1.0 / math.sqrt(d_k)
    q_s = q.astype(wide) * np.asarray(scale, dtype=wide)  # (..., n_q, d_k)
    d_out = np.asarray(d_out).astype(wide)  # (..., n_q, d_v)
    lse = np.asarray(logsumexp).astype(wide)[..., None]  # (..., n_q, 1)
    big_d = (d_out * np.asarray(out).astype(wide)).sum(axis=-1, keepdims=True)  # (..., n_q, 1)
    d_q = np.zeros(q.shape, dtype=wide)  # (..., n_q, d_k)
    d_k_all, d_v_all = np.zeros(k.shape, dtype=wide), np.zeros(v.shape, dtype=wide)
    for start in range(0, n_k, block_size):
        stop = min(start + block_size, n_k)
        k_b = k[..., start:stop, :].astype(wide, copy=False)  # (..., b, d_k)
        v_b = v[..., start:stop, :].astype(wide, copy=False)  # (..., b, d_v)
        s = q_s @ k_b.swapaxes(-1, -2)  # (..., n_q, b): the scores, recomputed
        if mask is not None:  # mask first, as the forward pass does: exp(-inf) = 0, no overflow
            s = np.where(mask[..., start:stop], s, np.asarray(-np.inf, dtype=wide))
        p = np.exp(s - lse)  # (..., n_q, b): recomputed weights, each <= 1
        d_v_all[..., start:stop, :] = p.swapaxes(-1, -2) @ d_out  # (..., b, d_v)
        d_s = p * (d_out @ v_b.swapaxes(-1, -2) - big_d)  # (..., n_q, b)
        d_q += d_s @ k_b * scale  # (..., n_q, d_k)
        d_k_all[..., start:stop, :] = d_s.swapaxes(-1, -2) @ q_s  # (..., b, d_k): scale in q_s
    return tuple(g.astype(a.dtype, copy=False) for g, a in ((d_q, q), (d_k_all, k), (d_v_all, v)))
