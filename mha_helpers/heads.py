"""Multi-head attention: project, split into heads, attend per head, concatenate, project.

Conventions (the same in every lesson):

* ``x`` is ``(n, d_model)`` or ``(batch, n, d_model)``: rows are tokens, columns are features.
* Weights are applied as ``x @ w``: rows of ``w`` are input features, columns output features.
* Head ``i`` owns columns ``[i * d_head, (i + 1) * d_head)`` of ``w_q``, ``w_k`` and ``w_v`` and
  the same *rows* of ``w_o``.
* All heads are computed together with batched matrix products; there is no loop over heads.
"""

from __future__ import annotations

import numpy as np

from .attention import _attention, scaled_dot_product_attention
from .shapes import _fmt, as_float_array, head_width, kv_group_size

__all__ = ["split_heads", "merge_heads", "multi_head_attention", "grouped_query_attention"]


def split_heads(x, num_heads: int) -> np.ndarray:
    """``(..., n, d_model)`` -> ``(..., num_heads, n, d_head)``.

    Reshape the feature axis into ``(num_heads, d_head)`` *then* move the head axis in front of
    the token axis. A bare ``reshape(num_heads, n, d_head)`` has the same shape but mixes
    tokens into heads.

    >>> split_heads(np.arange(8).reshape(1, 8), 2)[:, 0]
    array([[0, 1, 2, 3],
           [4, 5, 6, 7]])
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(
            f"x has shape {_fmt(x.shape)}, expected (..., n, d_model) with at least 2 axes"
        )
    *lead, n, d_model = x.shape
    d_head = head_width(d_model, num_heads)
    x = x.reshape(*lead, n, num_heads, d_head)  # (..., n, h, d_head)
    return x.swapaxes(-2, -3)  # (..., h, n, d_head)


def merge_heads(x) -> np.ndarray:
    """``(..., h, n, d_head)`` -> ``(..., n, h * d_head)``: concatenate head outputs per token.

    The inverse of :func:`split_heads`: token ``t``'s row is head 0's row ``t``, then head 1's,
    and so on, side by side along the feature axis.

    >>> merge_heads(np.array([[[1, 2]], [[3, 4]]]))
    array([[1, 2, 3, 4]])
    """
    x = np.asarray(x)
    if x.ndim < 3:
        raise ValueError(
            f"x has shape {_fmt(x.shape)}, expected (..., h, n, d_head) with at least 3 axes "
            f"(heads, tokens, features)"
        )
    *lead, h, n, d_head = x.shape
    x = x.swapaxes(-2, -3)  # (..., n, h, d_head)
    return x.reshape(*lead, n, h * d_head)  # (..., n, h * d_head)


def _check_input(x, name: str) -> np.ndarray:
    x = as_float_array(x, name)
    if x.ndim not in (2, 3):
        raise ValueError(
            f"{name} has shape {_fmt(x.shape)}, expected (n, d_model) or (batch, n, d_model)"
        )
    return x


def _check_weight(w, name: str, rows: int, cols: int, what: str) -> np.ndarray:
    w = as_float_array(w, name)
    if w.shape != (rows, cols):
        hint = ""
        if w.shape == (cols, rows):
            hint = (
                " It looks transposed: the course applies weights as x @ w (rows = input features)."
            )
        raise ValueError(
            f"{name} has shape {_fmt(w.shape)}, expected {what} = ({rows}, {cols}).{hint}"
        )
    return w


def _prepare_mask(mask, x):
    """Insert the head axis so one mask serves every head: (n_q, n_k) or (batch, n_q, n_k)."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    batched = x.ndim == 3
    if mask.ndim == 3 and batched:
        if mask.shape[0] not in (1, x.shape[0]):
            raise ValueError(
                f"mask has shape {_fmt(mask.shape)}, expected (batch, n_q, n_k) with batch = "
                f"{x.shape[0]} (or 1 to share one mask across the batch)"
            )
        return mask[:, None]  # (batch, 1, n_q, n_k)
    if mask.ndim != 2:
        raise ValueError(
            f"mask has shape {_fmt(mask.shape)}, expected (n_q, n_k)"
            + (" or (batch, n_q, n_k)" if batched else "")
            + "; the same mask is used by every head"
        )
    return mask


def _attend(x, context, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, mask, return_weights):
    """Shared body of multi-head and grouped-query attention (validated inputs)."""
    q = x @ w_q  # (..., n, h * d_head)
    k = context @ w_k  # (..., n_k, g * d_head)
    v = context @ w_v  # (..., n_k, g * d_head)
    qh = split_heads(q, num_heads)  # (..., h, n, d_head)
    kh = split_heads(k, num_kv_heads)  # (..., g, n_k, d_head)
    vh = split_heads(v, num_kv_heads)  # (..., g, n_k, d_head)
    mask = _prepare_mask(mask, x)  # (n, n_k) or (batch, 1, n, n_k)

    def attend(q_, k_, v_, mask_):
        if return_weights:
            return scaled_dot_product_attention(q_, k_, v_, mask_)
        # The weights are not returned, so they are never normalised: one pass fewer over them.
        return _attention(q_, k_, v_, mask_, need_weights=False)

    group = num_heads // num_kv_heads
    if group == 1:
        out, weights = attend(qh, kh, vh, mask)  # (..., h, n, d_head), (..., h, n, n_k) or None
    else:
        # Query head i reads KV head i // group: view the h query heads as (g, group) and let
        # each KV head broadcast over its group (no copies of K or V are made).
        *lead, _, n, d_head = qh.shape
        qg = qh.reshape(*lead, num_kv_heads, group, n, d_head)  # (..., g, group, n, d_head)
        kg = kh[..., :, None, :, :]  # (..., g, 1, n_k, d_head)
        vg = vh[..., :, None, :, :]  # (..., g, 1, n_k, d_head)
        mask_g = None if mask is None else mask[..., None, :, :]  # one more axis for the group
        out, weights = attend(qg, kg, vg, mask_g)  # (..., g, group, n, ·)
        out = out.reshape(*lead, num_heads, n, d_head)  # (..., h, n, d_head)
        if return_weights:
            weights = weights.reshape(*lead, num_heads, n, weights.shape[-1])  # (..., h, n, n_k)
    concat = merge_heads(out)  # (..., n, h * d_head)
    y = concat @ w_o  # (..., n, d_model)
    return (y, weights) if return_weights else y


def _check_context(x, context):
    if context is None:
        return x
    context = _check_input(context, "context")
    if (
        context.ndim != x.ndim
        or context.shape[-1] != x.shape[-1]
        or context.shape[:-2] != x.shape[:-2]
    ):
        raise ValueError(
            f"context has shape {_fmt(context.shape)}, expected "
            f"{_fmt(x.shape[:-2] + (None, x.shape[-1]))}: the same batch and d_model as "
            f"x {_fmt(x.shape)}, with any number of context tokens"
        )
    return context


def multi_head_attention(
    x, w_q, w_k, w_v, w_o, num_heads, *, context=None, mask=None, return_weights=False
):
    """Multi-head attention of ``x`` over itself (or over ``context``: cross-attention).

    Parameters
    ----------
    x : (n, d_model) or (batch, n, d_model)
    w_q, w_k, w_v, w_o : (d_model, d_model), applied as ``x @ w``
    num_heads : h, which must divide d_model; d_head = d_model / h
    context : optional (n_k, d_model) or (batch, n_k, d_model) source of keys and values
    mask : optional boolean (n, n_k) or (batch, n, n_k), True = may attend, shared by all heads
    return_weights : also return the attention weights, (..., h, n, n_k)

    Returns ``y`` with the shape of ``x`` (and the weights when asked).

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(3, 8))
    >>> w = [rng.normal(size=(8, 8)) for _ in range(4)]
    >>> y, a = multi_head_attention(x, *w, num_heads=2, return_weights=True)
    >>> y.shape, a.shape
    ((3, 8), (2, 3, 3))
    """
    x = _check_input(x, "x")
    d_model = x.shape[-1]
    head_width(d_model, num_heads)
    context = _check_context(x, context)
    w_q, w_k, w_v, w_o = (
        _check_weight(w, name, d_model, d_model, "(d_model, d_model)")
        for w, name in ((w_q, "w_q"), (w_k, "w_k"), (w_v, "w_v"), (w_o, "w_o"))
    )
    return _attend(x, context, w_q, w_k, w_v, w_o, num_heads, num_heads, mask, return_weights)


def grouped_query_attention(
    x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, *, context=None, mask=None, return_weights=False
):
    """Grouped-query attention: ``num_heads`` query heads share ``num_kv_heads`` K/V heads.

    Query head ``i`` reads KV head ``i // (num_heads // num_kv_heads)`` (each KV head is
    *repeated* for a contiguous group of query heads, not tiled). ``num_kv_heads == 1`` is
    multi-query attention; ``num_kv_heads == num_heads`` is ordinary multi-head attention and
    gives exactly the result of :func:`multi_head_attention`.

    Parameters
    ----------
    x : (n, d_model) or (batch, n, d_model)
    w_q, w_o : (d_model, d_model)
    w_k, w_v : (d_model, num_kv_heads * d_head) with d_head = d_model / num_heads
    mask, context, return_weights : as in :func:`multi_head_attention`

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(3, 8))
    >>> w_q, w_o = rng.normal(size=(8, 8)), rng.normal(size=(8, 8))
    >>> w_k, w_v = rng.normal(size=(8, 2)), rng.normal(size=(8, 2))
    >>> grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads=4, num_kv_heads=1).shape
    (3, 8)
    """
    x = _check_input(x, "x")
    d_model = x.shape[-1]
    d_head = head_width(d_model, num_heads)
    kv_group_size(num_heads, num_kv_heads)
    context = _check_context(x, context)
    kv_width = num_kv_heads * d_head
    w_q = _check_weight(w_q, "w_q", d_model, d_model, "(d_model, d_model)")
    w_k = _check_weight(w_k, "w_k", d_model, kv_width, "(d_model, num_kv_heads * d_head)")
    w_v = _check_weight(w_v, "w_v", d_model, kv_width, "(d_model, num_kv_heads * d_head)")
    w_o = _check_weight(w_o, "w_o", d_model, d_model, "(d_model, d_model)")
    return _attend(x, context, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, mask, return_weights)
