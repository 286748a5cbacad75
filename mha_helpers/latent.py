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
* **absorption.** ``q_c . k_c = (x w_q^i)(c w_uk^i)^T = ((x w_q^i) w_uk^i^T) c^T``: regroup
  the product (associativity) and each head's query, taken into latent space by ``w_uk^i^T``
  once per query, is scored against the cached latents directly. Likewise each head reads the
  attended latent ``a_i c`` and only then applies ``w_uv^i`` and ``w_o``. No per-head key or
  value is ever formed, and the cache holds only ``c`` and ``k_r``: ``d_latent + d_rope``
  numbers per token and layer. This regrouped form is how implementations compute it
  (:func:`mla_attention_from_cache`). Multiplying the matrices out instead ("folding",
  :func:`mla_fold_weights`) gives the same numbers, which proves the equality, but at
  DeepSeek-V2's shape the folded matrices are several times larger than the pieces and cost
  more FLOPs per token (:func:`mla_absorption_costs`).

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
    "mla_fold_weights",
    "mla_absorption_costs",
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

    ``absorbed=False`` builds every head's keys and values from the latent, as in training
    and prefill; ``absorbed=True`` never forms them: each head's query is taken into latent
    space by ``w_uk`` and scored against the latent cache, and ``w_uv`` is applied to the
    attended latent (:func:`mla_attention_from_cache`). Both give the same output.
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
    """MLA with absorbed up-projections: queries ``x_q`` ``(n_q, d_model)`` at ``positions``
    ``(n_q,)`` attend to a latent cache ``(c, k_r)`` of ``n_k`` tokens; returns
    ``(n_q, d_model)``.

    No key or value of any head is ever formed. The products are regrouped, as
    implementations do: head i's query ``q_i = x_q w_q^i`` (d_head numbers) is taken into
    latent space once, ``q_i w_uk^i^T`` (d_latent numbers), and scored against every cached
    latent; the head then reads the attended latent ``a_i c`` and up-projects it once,
    ``(a_i c) w_uv^i``, before ``w_o``. (:func:`mla_fold_weights` multiplies the same matrices
    out; the results agree to round-off.)
    """
    x_q = as_float_array(x_q, "x_q")
    if x_q.ndim != 2:
        raise ValueError(f"x_q has shape {_fmt(x_q.shape)}, expected (n_q, d_model)")
    w, h, d_head, d_c, d_r = _check_weights(weights, x_q, num_heads)
    c, k_r = _check_cache(cache, d_c, d_r)
    w_uk = w["w_uk"].reshape(d_c, h, d_head).transpose(1, 0, 2)  # (h, d_c, d_head)
    w_uv = w["w_uv"].reshape(d_c, h, d_head).transpose(1, 0, 2)  # (h, d_c, d_head)
    q_c = split_heads(x_q @ w["w_q"], h)  # (h, n_q, d_head): every head's content query
    q_latent = q_c @ w_uk.transpose(0, 2, 1)  # (h, n_q, d_c): the query in latent space
    q_r = rope(split_heads(x_q @ w["w_qr"], h), np.asarray(positions))  # (h, n_q, d_rope)
    scores = (q_latent @ c.T + q_r @ k_r.T) / math.sqrt(d_head + d_r)  # (h, n_q, n_k)
    if mask is not None:
        mask = check_mask(mask, x_q.shape[0], c.shape[0])
        scores = np.where(mask, scores, -np.inf)
    a = softmax(scores)  # (h, n_q, n_k)
    read = a @ c  # (h, n_q, d_c): each head's attended latent
    o = read @ w_uv  # (h, n_q, d_head): up-projected once per head and query
    return merge_heads(o) @ w["w_o"]  # (n_q, d_model)


def _check_cache(cache, d_c, d_r):
    c, k_r = (as_float_array(a, name) for a, name in zip(cache, ("c", "k_r")))
    n_k = c.shape[0]
    check_shape(c, (n_k, d_c), "cache latent c", "one latent of d_latent numbers per cached token")
    check_shape(k_r, (n_k, d_r), "cache k_r", "one rotary key of d_rope numbers per cached token")
    return c, k_r


def mla_fold_weights(weights, num_heads) -> tuple:
    """The absorbed matrices multiplied out, per head: the proof that absorption is exact.

    Returns ``(w_q_folded, w_o_folded)``: ``w_q^i w_uk^i^T`` ``(h, d_model, d_latent)`` and
    ``w_uv^i w_o^i`` ``(h, d_latent, d_model)``, where ``w_o^i`` is head i's ``d_head`` rows of
    ``w_o``. Head i's content score is ``x_q w_q_folded[i] c^T`` and the layer's output is
    ``sum_i (a_i c) w_o_folded[i]``: the same numbers as the regrouped products of
    :func:`mla_attention_from_cache`. Implementations do not use these matrices: at
    DeepSeek-V2's shape they hold far more numbers than the pieces they replace
    (:func:`mla_absorption_costs`).

    >>> w = mla_weights(np.random.default_rng(0), 8, 2, 4, 3, 2)
    >>> [a.shape for a in mla_fold_weights(w, 2)]
    [(2, 8, 3), (2, 3, 8)]
    """
    w_q = as_float_array(weights["w_q"], "w_q")
    h = positive_int(num_heads, "num_heads")
    w, h, d_head, d_c, _ = _check_weights(weights, np.zeros((1, w_q.shape[0])), h)
    d_model = w_q.shape[0]
    w_q = w["w_q"].reshape(d_model, h, d_head).transpose(1, 0, 2)  # (h, d_model, d_head)
    w_uk = w["w_uk"].reshape(d_c, h, d_head).transpose(1, 0, 2)  # (h, d_c, d_head)
    w_uv = w["w_uv"].reshape(d_c, h, d_head).transpose(1, 0, 2)  # (h, d_c, d_head)
    w_o = w["w_o"].reshape(h, d_head, d_model)  # (h, d_head, d_model)
    return w_q @ w_uk.transpose(0, 2, 1), w_uv @ w_o  # (h, d_model, d_c), (h, d_c, d_model)


def mla_absorption_costs(d_model, num_heads, d_head, d_latent, d_rope, d_query_latent=None):
    """Parameters and FLOPs of MLA's absorbed decoding, regrouped against folded (one layer).

    ``d_query_latent`` is the width of the input to the query up-projection: DeepSeek-V2
    compresses queries too, ``W^UQ`` is ``(d'_c, h d_head)`` with ``d'_c = 1536`` (§3.1.2);
    ``None`` means no query compression (the course's layer, ``w_q`` from ``d_model``).
    One multiply-add counts as 2 FLOPs. Returns a dict:

    * ``"query_params"``: ``{"apart": W^UQ + W^UK, "folded": h d'_c d_latent}``, and
      ``"query_flops"`` per token: apart ``2 d'_c h d_head + 2 h d_head d_latent``, folded
      ``2 h d'_c d_latent``;
    * ``"output_params"``: ``{"apart": W^UV + W^O, "folded": h d_latent d_model}``, and
      ``"output_flops"`` per token: apart ``2 h d_latent d_head + 2 h d_head d_model``, folded
      ``2 h d_latent d_model``;
    * ``"attention_flops_per_cached_token"``: ``{"absorbed", "unabsorbed", "mha"}``: per query,
      key pair and layer, absorbed ``h (2 (d_latent + d_rope) + 2 d_latent)`` (scores against
      the latent and the rotary key, then the weighted sum of latents), unabsorbed
      ``h (2 (d_head + d_rope) + 2 d_head)`` (per-head keys and values formed first), and MHA
      with the same heads ``4 h d_head``;
    * ``"cached_numbers_per_token"``: ``d_latent + d_rope``.

    >>> c = mla_absorption_costs(5120, 128, 128, 512, 64, d_query_latent=1536)   # DeepSeek-V2
    >>> c["output_params"]["folded"], c["attention_flops_per_cached_token"]["absorbed"]
    (335544320, 278528)
    """
    d_model, h = positive_int(d_model, "d_model"), positive_int(num_heads, "num_heads")
    d_head, d_c = positive_int(d_head, "d_head"), positive_int(d_latent, "d_latent")
    d_r = positive_int(d_rope, "d_rope")
    d_q = d_model if d_query_latent is None else positive_int(d_query_latent, "d_query_latent")
    width = h * d_head
    return {
        "query_params": {"apart": d_q * width + d_c * width, "folded": h * d_q * d_c},
        "query_flops": {"apart": 2 * d_q * width + 2 * width * d_c, "folded": 2 * h * d_q * d_c},
        "output_params": {"apart": d_c * width + width * d_model, "folded": h * d_c * d_model},
        "output_flops": {
            "apart": 2 * h * d_c * d_head + 2 * width * d_model,
            "folded": 2 * h * d_c * d_model,
        },
        "attention_flops_per_cached_token": {
            "absorbed": h * (2 * (d_c + d_r) + 2 * d_c),
            "unabsorbed": h * (2 * (d_head + d_r) + 2 * d_head),
            "mha": 4 * h * d_head,
        },
        "cached_numbers_per_token": d_c + d_r,
    }


def mla_cache_elements(d_latent, d_rope, num_layers=1) -> int:
    """Numbers MLA caches per token: ``(d_latent + d_rope) * num_layers``.

    >>> mla_cache_elements(512, 64, 60)          # DeepSeek-V2
    34560
    """
    return (positive_int(d_latent, "d_latent") + positive_int(d_rope, "d_rope")) * positive_int(
        num_layers, "num_layers"
    )
