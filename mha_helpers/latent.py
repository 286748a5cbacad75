"""Multi-head latent attention (MLA), the attention of DeepSeek-V2, in NumPy (lesson 08).

DeepSeek-V2 (arXiv 2405.04434, §2.1) caches one small vector per token and layer instead of
h keys and h values:

* **joint KV compression.** ``c = x @ w_dkv`` is a latent of ``d_latent`` numbers (d_c) per
  token; the keys and values of all h heads are up-projections of it, ``k = c @ w_uk`` and
  ``v = c @ w_uv``, each ``(n, h * d_head)``.
* **decoupled RoPE.** Rotary position embeddings rotate a key by its position, which would sit
  between ``w_uk`` and the query. So the position goes into ``d_rope`` extra dimensions of their
  own: a query part ``rope(x @ w_qr)`` per head and ONE key part ``rope(x @ w_kr)`` shared by all
  heads. Each head's score is ``(q_c . k_c + q_r . k_r) / sqrt(d_head + d_rope)``.
* **absorption.** ``q_c . k_c = (x w_q^i)(c w_uk^i)^T = x (w_q^i w_uk^i^T) c^T``: fold ``w_uk``
  into the query projection and the scores come straight from the cached latent. Likewise
  ``w_uv`` folds into ``w_o``. At inference the cache holds only ``c`` and ``k_r``:
  ``d_latent + d_rope`` numbers per token and layer.

The paper also compresses the queries (``W^DQ``, ``W^UQ``) to save activation memory in
training; that does not change the cache and is left out here: ``w_q`` projects directly.

Weights (course convention, ``x @ W``): ``w_q`` (d_model, h d_head), ``w_dkv`` (d_model, d_c),
``w_uk`` and ``w_uv`` (d_c, h d_head), ``w_qr`` (d_model, h d_rope), ``w_kr`` (d_model, d_rope),
``w_o`` (h d_head, d_model).
"""

from __future__ import annotations

import math

import numpy as np

from .attention import scaled_dot_product_attention, softmax
from .heads import merge_heads, split_heads
from .shapes import _fmt, as_float_array, check_mask, check_shape, positive_int

__all__ = [
    "rope",
    "mla_weights",
    "mla_attention",
    "mla_latent_cache",
    "mla_attention_from_cache",
    "mla_cache_elements",
]

_NAMES = ("w_q", "w_dkv", "w_uk", "w_uv", "w_qr", "w_kr", "w_o")


def rope(x, positions, base: float = 10000.0) -> np.ndarray:
    """Rotary position embedding: rotate feature pairs ``(i, i + d/2)`` of ``x`` by
    ``position * base**(-2i/d)``.

    ``x``: ``(..., n, d)`` with d even; ``positions``: ``(n,)`` integers. Dot products of two
    rotated vectors depend only on the difference of their positions.

    >>> a = rope(np.ones((1, 4)), np.array([3]))
    >>> b = rope(np.ones((1, 4)), np.array([5]))
    >>> c = rope(np.ones((1, 4)), np.array([10]))
    >>> d = rope(np.ones((1, 4)), np.array([12]))
    >>> bool(np.isclose(a @ b.T, c @ d.T))          # both pairs are 2 positions apart
    True
    """
    x = as_float_array(x, "x")
    d = x.shape[-1]
    if d % 2:
        raise ValueError(
            f"rope needs an even feature width to rotate pairs, got shape {_fmt(x.shape)}"
        )
    positions = np.asarray(positions)
    check_shape(positions, (x.shape[-2],), "positions", "one position per row of x")
    freq = base ** (-np.arange(d // 2) * 2.0 / d)  # (d/2,)
    angle = positions[:, None] * freq[None, :]  # (n, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]  # (..., n, d/2) each
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)  # (..., n, d)


def mla_weights(rng, d_model, num_heads, d_head, d_latent, d_rope) -> dict:
    """Random MLA weights with standard deviation 1/sqrt(fan-in), as a dict of arrays."""
    h = positive_int(num_heads, "num_heads")
    d_model, d_head = positive_int(d_model, "d_model"), positive_int(d_head, "d_head")
    d_c, d_r = positive_int(d_latent, "d_latent"), positive_int(d_rope, "d_rope")
    shapes = {
        "w_q": (d_model, h * d_head),
        "w_dkv": (d_model, d_c),
        "w_uk": (d_c, h * d_head),
        "w_uv": (d_c, h * d_head),
        "w_qr": (d_model, h * d_r),
        "w_kr": (d_model, d_r),
        "w_o": (h * d_head, d_model),
    }
    return {name: rng.normal(size=s) / math.sqrt(s[0]) for name, s in shapes.items()}


def _check_weights(weights, x, num_heads):
    missing = [name for name in _NAMES if name not in weights]
    if missing:
        raise ValueError(f"weights is missing {missing}; expected the keys {list(_NAMES)}")
    w = {name: as_float_array(weights[name], name) for name in _NAMES}
    h = positive_int(num_heads, "num_heads")
    d_model = x.shape[-1]
    d_c = w["w_dkv"].shape[-1]
    width = w["w_q"].shape[-1]
    if width % h:
        raise ValueError(
            f"w_q has shape {_fmt(w['w_q'].shape)}: its width is not divisible by num_heads={h}"
        )
    d_head = width // h
    d_r = w["w_kr"].shape[-1]
    expected = {
        "w_q": (d_model, h * d_head),
        "w_dkv": (d_model, d_c),
        "w_uk": (d_c, h * d_head),
        "w_uv": (d_c, h * d_head),
        "w_qr": (d_model, h * d_r),
        "w_kr": (d_model, d_r),
        "w_o": (h * d_head, d_model),
    }
    for name, shape in expected.items():
        check_shape(
            w[name],
            shape,
            name,
            f"with d_model={d_model}, h={h}, d_head={d_head}, d_latent={d_c}, d_rope={d_r}",
        )
    return w, h, d_head, d_c, d_r


def mla_attention(x, weights, num_heads, *, mask=None, absorbed=False) -> np.ndarray:
    """Multi-head latent self-attention of ``x`` ``(n, d_model)``; returns ``(n, d_model)``.

    ``absorbed=False`` builds every head's keys and values from the latent, as in training;
    ``absorbed=True`` folds ``w_uk`` into the queries and ``w_uv`` into ``w_o`` and reads only
    the latent cache (:func:`mla_attention_from_cache`). Both give the same output.
    ``mask``: optional boolean ``(n, n)``, True = may attend.
    """
    x = as_float_array(x, "x")
    if x.ndim != 2:
        raise ValueError(f"x has shape {_fmt(x.shape)}, expected (n, d_model)")
    w, h, d_head, d_c, d_r = _check_weights(weights, x, num_heads)
    n = x.shape[0]
    positions = np.arange(n)
    if absorbed:
        return mla_attention_from_cache(x, positions, mla_latent_cache(x, w), w, h, mask=mask)
    c = x @ w["w_dkv"]  # (n, d_c): the latent
    k_c = split_heads(c @ w["w_uk"], h)  # (h, n, d_head)
    v = split_heads(c @ w["w_uv"], h)  # (h, n, d_head)
    q_c = split_heads(x @ w["w_q"], h)  # (h, n, d_head)
    q_r = rope(split_heads(x @ w["w_qr"], h), positions)  # (h, n, d_rope)
    k_r = rope(x @ w["w_kr"], positions)  # (n, d_rope): one for all heads
    q = np.concatenate([q_c, q_r], axis=-1)  # (h, n, d_head + d_rope)
    k = np.concatenate([k_c, np.broadcast_to(k_r, (h, n, d_r))], axis=-1)  # (h, n, d_head + d_rope)
    out, _ = scaled_dot_product_attention(
        q, k, v, mask
    )  # (h, n, d_head), scale 1/sqrt(d_head + d_rope)
    return merge_heads(out) @ w["w_o"]  # (n, d_model)


def mla_latent_cache(x, weights) -> tuple:
    """What MLA caches for the tokens ``x`` ``(n, d_model)``: the latent ``c`` ``(n, d_latent)``
    and the shared rotary key ``k_r`` ``(n, d_rope)`` (positions 0 .. n - 1)."""
    x = as_float_array(x, "x")
    c = x @ as_float_array(weights["w_dkv"], "w_dkv")  # (n, d_c)
    k_r = rope(x @ as_float_array(weights["w_kr"], "w_kr"), np.arange(x.shape[-2]))  # (n, d_rope)
    return c, k_r


def mla_attention_from_cache(x_q, positions, cache, weights, num_heads, *, mask=None) -> np.ndarray:
    """MLA with absorbed weights: queries ``x_q`` ``(n_q, d_model)`` at ``positions`` ``(n_q,)``
    attend to a latent cache ``(c, k_r)`` of ``n_k`` tokens; returns ``(n_q, d_model)``.

    No key or value of any head is ever formed: scores are ``x_q (w_q^i w_uk^i^T) c^T`` plus the
    rotary part, and the output is ``sum_i (a_i c) (w_uv^i w_o^i)``.
    """
    x_q = as_float_array(x_q, "x_q")
    if x_q.ndim != 2:
        raise ValueError(f"x_q has shape {_fmt(x_q.shape)}, expected (n_q, d_model)")
    w, h, d_head, d_c, d_r = _check_weights(weights, x_q, num_heads)
    c, k_r = (as_float_array(a, name) for a, name in zip(cache, ("c", "k_r")))
    n_k = c.shape[0]
    check_shape(c, (n_k, d_c), "cache latent c", "one latent of d_latent numbers per cached token")
    check_shape(k_r, (n_k, d_r), "cache k_r", "one rotary key of d_rope numbers per cached token")
    d_model = x_q.shape[-1]
    w_q = w["w_q"].reshape(d_model, h, d_head).transpose(1, 0, 2)  # (h, d_model, d_head)
    w_uk = w["w_uk"].reshape(d_c, h, d_head).transpose(1, 0, 2)  # (h, d_c, d_head)
    w_uv = w["w_uv"].reshape(d_c, h, d_head).transpose(1, 0, 2)  # (h, d_c, d_head)
    w_o = w["w_o"].reshape(h, d_head, d_model)  # (h, d_head, d_model)
    w_q_absorbed = w_q @ w_uk.transpose(0, 2, 1)  # (h, d_model, d_c)
    w_o_absorbed = w_uv @ w_o  # (h, d_c, d_model)
    q_latent = x_q @ w_q_absorbed  # (h, n_q, d_c)
    q_r = rope(split_heads(x_q @ w["w_qr"], h), np.asarray(positions))  # (h, n_q, d_rope)
    scores = (q_latent @ c.T + q_r @ k_r.T) / math.sqrt(d_head + d_r)  # (h, n_q, n_k)
    if mask is not None:
        mask = check_mask(mask, x_q.shape[0], n_k)
        scores = np.where(mask, scores, -np.inf)
    a = softmax(scores)  # (h, n_q, n_k)
    read = a @ c  # (h, n_q, d_c): each head's weighted latent
    return np.einsum("hqc,hcd->qd", read, w_o_absorbed)  # (n_q, d_model)


def mla_cache_elements(d_latent, d_rope, num_layers=1) -> int:
    """Numbers MLA caches per token: ``(d_latent + d_rope) * num_layers``.

    >>> mla_cache_elements(512, 64, 60)          # DeepSeek-V2
    34560
    """
    return (positive_int(d_latent, "d_latent") + positive_int(d_rope, "d_rope")) * positive_int(
        num_layers, "num_layers"
    )
