"""Single-head building blocks: softmax, the causal mask and scaled dot-product attention.

Shapes use the course's names: ``n_q`` queries, ``n_k`` keys, ``d_k`` query/key width, ``d_v``
value width. Any number of leading axes (batch, heads) is allowed and carried through, so the
same function attends for one head or for all heads at once with batched matrix products.
"""

from __future__ import annotations

import math

import numpy as np

from .shapes import _fmt, as_float_array, check_mask, positive_int

__all__ = ["softmax", "causal_mask", "scaled_dot_product_attention"]


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis`` (the key axis, -1, for attention scores).

    Subtracting the row maximum first means logits of 1e4 do not overflow. ``-inf`` entries get
    probability 0. A row whose entries are *all* ``-inf`` has no valid distribution (every key
    was masked), so instead of silently returning NaN it raises ``ValueError``.

    >>> softmax(np.array([0.0, np.log(3.0)])).round(2)
    array([0.25, 0.75])
    """
    x = as_float_array(x, "x")
    m = np.max(x, axis=axis, keepdims=True)
    if np.isneginf(m).any():
        raise ValueError(
            "softmax got a row whose entries are all -inf: every key is masked for some query, "
            "so no probability distribution exists. Check the mask: each query must be allowed "
            "to attend to at least one key (with a causal mask, itself)"
        )
    e = np.exp(x - m)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def causal_mask(n: int) -> np.ndarray:
    """Boolean ``(n, n)`` mask, True where query i may attend to key j, i.e. where j <= i.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    n = positive_int(n, "n", " of tokens")
    return np.tril(np.ones((n, n), dtype=bool))  # (n, n)


def _exp_cannot_overflow(q, k) -> bool:
    """True when ``exp`` of every score ``q_i . k_j`` is finite and nonzero, and so is each
    row's sum, without subtracting the row maximum first.

    Cauchy-Schwarz: ``|q_i . k_j| <= |q_i| |k_j|``, so the longest query times the longest key
    bounds every score. False for NaN or infinite inputs and empty arrays (the safe path).
    """
    if q.size == 0 or k.size == 0:
        return False
    longest_q2 = float(np.einsum("...i,...i->...", q, q).max())  # largest |q_i|^2
    longest_k2 = float(np.einsum("...i,...i->...", k, k).max())  # largest |k_j|^2
    if not math.isfinite(longest_q2 * longest_k2):
        return False
    bound = math.sqrt(longest_q2 * longest_k2)
    info = np.finfo(np.result_type(q, k))
    n_k = k.shape[-2]
    # exp(bound) * n_k must stay below the largest float; exp(-bound) above the smallest normal.
    limit = min(math.log(float(info.max)) - math.log(n_k), -math.log(float(info.tiny))) - 1.0
    return bound <= limit


def scaled_dot_product_attention(q, k, v, mask=None):
    """Attend: ``softmax(q k^T / sqrt(d_k)) v``, with the softmax over keys (the last axis).

    Parameters
    ----------
    q : (..., n_q, d_k) queries
    k : (..., n_k, d_k) keys
    v : (..., n_k, d_v) values
    mask : optional boolean array broadcastable to (..., n_q, n_k); True = may attend.
        Blocked scores are set to -inf *before* the softmax, so each row still sums to 1.

    Returns
    -------
    output : (..., n_q, d_v)
    weights : (..., n_q, n_k), each row sums to 1

    Inputs keep their dtype: float32 in, float32 computed and returned.

    >>> q = k = v = np.eye(2)
    >>> out, w = scaled_dot_product_attention(q, k, v)
    >>> w.sum(axis=-1)
    array([1., 1.])
    """
    q, k, v = check_qkv(q, k, v)
    return _attention(q, k, v, mask)


def check_qkv(q, k, v):
    """``q``, ``k`` and ``v`` as float arrays, or a ``ValueError`` that names the shape expected:
    q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v). Shared by every attention function
    of the course (this module's and :func:`mha_helpers.tiled_attention`)."""
    q = as_float_array(q, "q")
    k = as_float_array(k, "k")
    v = as_float_array(v, "v")
    for name, arr, axes in (
        ("q", q, "(n_q, d_k)"),
        ("k", k, "(n_k, d_k)"),
        ("v", v, "(n_k, d_v)"),
    ):
        if arr.ndim < 2:
            raise ValueError(
                f"{name} has shape {_fmt(arr.shape)}, expected {axes} (with any leading batch or "
                f"head axes); a single token is written as shape (1, d)"
            )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q has shape {_fmt(q.shape)} and k has shape {_fmt(k.shape)}: queries and keys must "
            f"have the same width d_k to take dot products (q.shape[-1] == k.shape[-1])"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k has shape {_fmt(k.shape)} and v has shape {_fmt(v.shape)}: there must be one "
            f"value per key (k.shape[-2] == v.shape[-2])"
        )
    _check_some_keys(k)
    return q, k, v


def _check_some_keys(k):
    """Refuse ``n_k = 0``: with no keys every query's softmax is over nothing (0 / 0)."""
    if k.shape[-2] == 0:
        raise ValueError(
            f"k has shape {_fmt(k.shape)}: there are no keys (n_k = 0), so a query has nothing "
            f"to attend to and its softmax would be 0 / 0. Attention needs at least one key"
        )


def check_attention_mask(mask, n_q, n_k):
    """``mask`` checked by :func:`check_mask` for shape (..., n_q, n_k) and dtype, and refused
    when a row allows no key at all (its softmax would be NaN). Shared by every attention
    function of the course."""
    mask = check_mask(mask, n_q, n_k)
    if not mask.any(axis=-1).all():
        raise ValueError(
            "mask blocks every key for at least one query (a row of the mask is all False); "
            "the softmax of that row would be NaN. Each query must be allowed to attend to "
            "at least one key"
        )
    return mask


def _attention(q, k, v, mask=None, need_weights=True):
    """The computation of :func:`scaled_dot_product_attention`, on validated float arrays.

    ``need_weights=False`` (multi-head attention that does not return its weights) leaves the
    weights unnormalised and divides the (..., n_q, d_v) output by the row sums instead of the
    (..., n_q, n_k) weights: the same numbers, one pass fewer over the largest array. It then
    returns ``(output, None)``.
    """
    _check_some_keys(k)  # multi-head attention calls this function directly
    dtype = np.result_type(q, k, v)
    n_q, d_k = q.shape[-2:]
    n_k = k.shape[-2]
    scale = np.asarray(1.0 / np.sqrt(d_k), dtype=dtype)

    # Scaling the queries gives the same scores as scaling q k^T, with n_q * d_k multiplications
    # instead of n_q * n_k (the scores are the largest array here: keep the passes over it few).
    q = q * scale  # (..., n_q, d_k)
    scores = q @ k.swapaxes(-1, -2)  # (..., n_q, n_k)
    if mask is not None:
        mask = check_attention_mask(mask, n_q, n_k)
        scores = np.where(mask, scores, np.asarray(-np.inf, dtype=dtype))  # (..., n_q, n_k)
    # Softmax over keys, in place: subtract the row max, exponentiate, normalise. The shift only
    # keeps exp from overflowing (softmax does not change when a row is shifted), so it is
    # skipped when a cheap bound proves every exp finite: two passes fewer over the scores.
    if not _exp_cannot_overflow(q, k):
        scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    # Row sums as a matrix-vector product with ones: the same sums as scores.sum(axis=-1), but
    # BLAS computes them several times faster than NumPy's reduction over a short last axis.
    row_sums = scores @ np.ones(n_k, dtype=scores.dtype)  # (..., n_q)
    if not need_weights:
        output = scores @ v  # (..., n_q, d_v), not yet normalised
        output /= row_sums[..., None]
        return output, None
    scores /= row_sums[..., None]
    weights = scores  # (..., n_q, n_k)
    output = weights @ v  # (..., n_q, d_v)
    return output, weights
