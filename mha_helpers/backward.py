"""The backward pass of multi-head attention, written out by hand in NumPy.

The forward pass is the course's own (:func:`mha_helpers.split_heads`,
:func:`mha_helpers.scaled_dot_product_attention`, :func:`mha_helpers.merge_heads`, weights
applied as ``x @ w``); this module keeps what the forward pass computed in a ``cache`` and runs
the chain rule through it in reverse:

* ``y = concat @ w_o``                      -> ``d_concat = d_y @ w_o.T``, ``d_w_o = concat.T @ d_y``
* ``concat = merge_heads(out)``             -> ``d_out = split_heads(d_concat)``
* ``out = weights @ v``                     -> ``d_weights = d_out @ v.T``, ``d_v = weights.T @ d_out``
* ``weights = softmax(scores)`` (key axis)  -> ``d_scores = weights * (d_weights - rowsum(d_weights * weights))``
* ``scores = q @ k.T / sqrt(d_head)``       -> ``d_q = d_scores @ k / sqrt(d_head)``, ``d_k = d_scores.T @ q / sqrt(d_head)``
* ``q = x @ w_q`` (and k, v)                -> ``d_w_q = x.T @ d_q``, ``d_x = d_q @ w_q.T + d_k @ w_k.T + d_v @ w_v.T``

Masked scores need no special case: their weight is exactly 0, so the softmax rule gives them
a gradient of exactly 0.

Shapes: ``x`` is ``(..., n, d_model)`` (any leading batch axes), per-head tensors are
``(..., h, n, d_head)`` and attention weights ``(..., h, n, n)``.
"""

from __future__ import annotations

import numpy as np

from .attention import scaled_dot_product_attention
from .heads import merge_heads, split_heads
from .shapes import _fmt, as_float_array, head_width

__all__ = ["softmax_backward", "attention_backward", "mha_forward", "mha_backward"]


def softmax_backward(weights, d_weights) -> np.ndarray:
    """Gradient through a softmax over the last axis.

    Given ``weights = softmax(scores)`` and the gradient ``d_weights`` of the loss with respect
    to the weights, return the gradient with respect to ``scores``:
    ``weights * (d_weights - sum(d_weights * weights))``, the sum taken along each row.

    Shifting every score in a row by the same amount does not change a softmax, so each row of
    the result sums to 0:

    >>> w = np.array([[0.25, 0.75]])
    >>> softmax_backward(w, np.array([[1.0, 0.0]]))
    array([[ 0.1875, -0.1875]])
    """
    row = np.sum(d_weights * weights, axis=-1, keepdims=True)  # (..., n_q, 1)
    return weights * (d_weights - row)  # (..., n_q, n_k)


def attention_backward(q, k, v, weights, d_out):
    """Backward pass of scaled dot-product attention, ``out = softmax(q k^T / sqrt(d_k)) v``.

    Parameters
    ----------
    q : (..., n_q, d_k), k : (..., n_k, d_k), v : (..., n_k, d_v)
        The inputs of the forward pass.
    weights : (..., n_q, n_k)
        The attention weights the forward pass returned (a mask, if any, is already in them:
        blocked entries are 0).
    d_out : (..., n_q, d_v)
        Gradient of the loss with respect to the output.

    Returns ``(d_q, d_k, d_v)`` with the shapes of ``q``, ``k`` and ``v``.

    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 4, 2))
    >>> out, w = scaled_dot_product_attention(q, k, v)
    >>> [g.shape for g in attention_backward(q, k, v, w, np.ones_like(out))]
    [(4, 2), (4, 2), (4, 2)]
    """
    scale = 1.0 / np.sqrt(q.shape[-1])
    d_weights = d_out @ v.swapaxes(-1, -2)  # (..., n_q, n_k)
    d_v = weights.swapaxes(-1, -2) @ d_out  # (..., n_k, d_v)
    d_scores = softmax_backward(weights, d_weights) * scale  # (..., n_q, n_k)
    d_q = d_scores @ k  # (..., n_q, d_k)
    d_k = d_scores.swapaxes(-1, -2) @ q  # (..., n_k, d_k)
    return d_q, d_k, d_v


def mha_forward(x, w_q, w_k, w_v, w_o, num_heads, mask=None, head_mask=None):
    """Multi-head self-attention that also returns what its backward pass needs.

    The same computation as :func:`mha_helpers.multi_head_attention` (project, split, attend,
    merge, project), plus an optional ``head_mask`` of shape ``(h,)`` that multiplies each
    head's output before the heads are concatenated: 1 keeps a head, 0 prunes it.

    Returns ``(y, cache)``: ``y`` has the shape of ``x``; ``cache`` holds the inputs, the
    per-head ``q``, ``k``, ``v`` and the attention ``weights`` of shape ``(..., h, n, n)``.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(3, 8))
    >>> w = [rng.normal(size=(8, 8)) for _ in range(4)]
    >>> y, cache = mha_forward(x, *w, num_heads=2)
    >>> y.shape, cache["weights"].shape
    ((3, 8), (2, 3, 3))
    """
    x = as_float_array(x, "x")
    d_model = x.shape[-1]
    head_width(d_model, num_heads)
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        if np.shape(w) != (d_model, d_model):
            raise ValueError(
                f"{name} has shape {_fmt(np.shape(w))}, expected (d_model, d_model) = "
                f"({d_model}, {d_model})"
            )
    qh = split_heads(x @ w_q, num_heads)  # (..., h, n, d_head)
    kh = split_heads(x @ w_k, num_heads)  # (..., h, n, d_head)
    vh = split_heads(x @ w_v, num_heads)  # (..., h, n, d_head)
    out, weights = scaled_dot_product_attention(
        qh, kh, vh, mask
    )  # (..., h, n, d_head), (..., h, n, n)
    if head_mask is not None:
        head_mask = np.asarray(head_mask, dtype=x.dtype)
        if head_mask.shape != (num_heads,):
            raise ValueError(
                f"head_mask has shape {_fmt(head_mask.shape)}, expected (h,) = "
                f"({num_heads},): one 0/1 switch per head"
            )
        out = out * head_mask[:, None, None]  # (..., h, n, d_head)
    concat = merge_heads(out)  # (..., n, d_model)
    y = concat @ w_o  # (..., n, d_model)
    cache = {
        "x": x,
        "w_q": w_q,
        "w_k": w_k,
        "w_v": w_v,
        "w_o": w_o,
        "q": qh,
        "k": kh,
        "v": vh,
        "weights": weights,
        "concat": concat,
        "head_mask": head_mask,
        "num_heads": num_heads,
    }
    return y, cache


def _sum_outer(a, b) -> np.ndarray:
    """``sum over all leading axes of a^T b``: the weight gradient of ``a @ w`` given ``d(a @ w) = b``."""
    return a.reshape(-1, a.shape[-1]).T @ b.reshape(-1, b.shape[-1])  # (d_in, d_out)


def mha_backward(d_y, cache):
    """Backward pass of :func:`mha_forward`.

    ``d_y`` is the gradient of the loss with respect to ``y`` (the shape of ``x``). Returns
    ``(d_x, grads)`` where ``grads`` maps ``"w_q"``, ``"w_k"``, ``"w_v"``, ``"w_o"`` to arrays
    of shape ``(d_model, d_model)``; a weight's gradient sums over the batch and the tokens.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(3, 8))
    >>> w = [rng.normal(size=(8, 8)) for _ in range(4)]
    >>> y, cache = mha_forward(x, *w, num_heads=2)
    >>> d_x, grads = mha_backward(np.ones_like(y), cache)
    >>> d_x.shape, sorted(grads)
    ((3, 8), ['w_k', 'w_o', 'w_q', 'w_v'])
    """
    x, h = cache["x"], cache["num_heads"]
    d_w_o = _sum_outer(cache["concat"], d_y)  # (d_model, d_model)
    d_concat = d_y @ cache["w_o"].T  # (..., n, d_model)
    d_out = split_heads(d_concat, h)  # (..., h, n, d_head)
    if cache["head_mask"] is not None:
        d_out = d_out * cache["head_mask"][:, None, None]  # (..., h, n, d_head)
    d_qh, d_kh, d_vh = attention_backward(
        cache["q"], cache["k"], cache["v"], cache["weights"], d_out
    )
    d_q = merge_heads(d_qh)  # (..., n, d_model)
    d_k = merge_heads(d_kh)  # (..., n, d_model)
    d_v = merge_heads(d_vh)  # (..., n, d_model)
    grads = {
        "w_q": _sum_outer(x, d_q),
        "w_k": _sum_outer(x, d_k),
        "w_v": _sum_outer(x, d_v),
        "w_o": d_w_o,
    }
    d_x = d_q @ cache["w_q"].T + d_k @ cache["w_k"].T + d_v @ cache["w_v"].T  # (..., n, d_model)
    return d_x, grads
