"""A battery of realistic wrong answers, question by question, to measure the self-check's hints.

Each wrong answer is written the way a learner writes it, from the slips the lessons warn about
(and those two reviewers made on purpose), independently of the banks' own list of mistakes:
the point is to measure how well the verdict diagnoses answers it was not told about. Each
carries the words a right diagnosis must contain (any of them, case-insensitive, in the hint or
the message): "hinted right" means the feedback names the cause.

Used by ``tests/test_wrong_answers.py`` (no wrong answer may pass; at least 90 % hinted right)
and ``benchmarks/bench_selfcheck.py`` (the rates per exercise, and the time per check).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Wrong:
    grade_id: str
    name: str
    answer: object
    causes: tuple  # any of these (lower case) in hint + message = the cause is named


BATTERY: list[Wrong] = []


def wrong(gid, name, *causes):
    def register(fn):
        BATTERY.append(Wrong(gid, name, fn, tuple(c.lower() for c in causes)))
        return fn

    return register


def value(gid, name, answer, *causes):
    BATTERY.append(Wrong(gid, name, answer, tuple(c.lower() for c in causes)))


def _softmax(s, axis=-1):
    s = np.asarray(s, dtype=float)
    m = np.max(s, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    return e / e.sum(axis=axis, keepdims=True)


# --- q01_scores ---------------------------------------------------------------------------------
G = "q01_scores"


@wrong(G, "divides by sqrt(d_model)", "sqrt(d_model)")
def _(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T / np.sqrt(x.shape[1])


@wrong(G, "d_k read from w_k.shape[0]", "sqrt(d_model)")
def _(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T / np.sqrt(w_k.shape[0])


@wrong(G, "no scale", "not scaled", "forgot the scale")
def _(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T


@wrong(G, "K Q^T", "transposed")
def _(x, w_q, w_k):
    k, q = x @ w_k, x @ w_q
    return k @ q.T / np.sqrt(q.shape[1])


@wrong(G, "d_k ** 1/2", "binds tighter")
def _(x, w_q, w_k):
    d_k = w_q.shape[1]
    scale = d_k**1 / 2
    return (x @ w_q) @ (x @ w_k).T / scale


@wrong(G, "the lesson's sqrt(4)", "divided by 2")
def _(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T / np.sqrt(4)


@wrong(G, "keys with w_q", "keys are computed with w_q")
def _(x, w_q, w_k):
    q = x @ w_q
    return q @ q.T / np.sqrt(q.shape[1])


@wrong(G, "raw x", "project first")
def _(x, w_q, w_k):
    return x @ x.T / np.sqrt(w_q.shape[1])


@wrong(G, "multiplies by sqrt(d_k)", "multiplied by sqrt(d_k)")
def _(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T * np.sqrt(w_q.shape[1])


@wrong(G, "softmax too", "attention weights")
def _(x, w_q, w_k):
    return _softmax((x @ w_q) @ (x @ w_k).T / np.sqrt(w_q.shape[1]))


@wrong(G, "divides by d_k", "d_k itself")
def _(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T / w_q.shape[1]


# --- q01_softmax --------------------------------------------------------------------------------
G = "q01_softmax"


@wrong(G, "axis=0", "query axis")
def _(s):
    e = np.exp(s - np.max(s, axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


@wrong(G, "whole matrix", "whole matrix")
def _(s):
    e = np.exp(s - np.max(s))
    return e / e.sum()


@wrong(G, "sum without keepdims", "keepdims")
def _(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)


@wrong(G, "max without keepdims", "keepdims")
def _(s):
    e = np.exp(s - s.max(axis=1))
    return e / e.sum(axis=1, keepdims=True)


@wrong(G, "no shift", "overflow")
def _(s):
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


@wrong(G, "one global maximum", "one maximum for the whole matrix")
def _(s):
    e = np.exp(s - np.max(s))
    return e / np.sum(e, axis=-1, keepdims=True)


@wrong(G, "divides by the max", "largest exponential")
def _(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.max(axis=-1, keepdims=True)


@wrong(G, "-inf cleaned to 0", "-inf")
def _(s):
    s = np.nan_to_num(np.asarray(s, dtype=float), neginf=0.0)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@wrong(G, "shift by the mean", "mean")
def _(s):
    e = np.exp(s - np.mean(s, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@wrong(G, "loops with the sum over columns", "query axis", "columns sum to 1")
def _(s):
    e = np.exp(s - s.max(axis=0))
    return e / e.sum(axis=0)


# --- q01_masked_attention -----------------------------------------------------------------------
G = "q01_masked_attention"


def _attn(q, k, v, mask, how="before", axis=-1, width=None, fill=-np.inf):
    s = q @ k.T / np.sqrt(q.shape[-1] if width is None else width)
    if how == "before":
        s = np.where(mask, s, fill)
    elif how == "inverted":
        s = np.where(mask, fill, s)
    elif how == "added":
        s = s + mask
    elif how == "multiplied":
        s = s * mask
    w = _softmax(s, axis=axis)
    if how == "after":
        w = w * mask
    return w @ v, w


@wrong(G, "if mask:", "mask is not none")
def _(q, k, v, mask):
    if mask:
        return _attn(q, k, v, mask)
    return _attn(q, k, v, np.ones((q.shape[0], k.shape[0]), bool))


wrong(G, "mask after softmax", "after the softmax")(lambda q, k, v, m: _attn(q, k, v, m, "after"))
wrong(G, "fill with 0", "exp(0)")(lambda q, k, v, m: _attn(q, k, v, m, fill=0.0))
wrong(G, "mask added", "added the 0/1 mask")(lambda q, k, v, m: _attn(q, k, v, m, "added"))
wrong(G, "mask multiplied into scores", "exp(0)")(
    lambda q, k, v, m: _attn(q, k, v, m, "multiplied")
)
wrong(G, "mask inverted", "wrong way round")(lambda q, k, v, m: _attn(q, k, v, m, "inverted"))
wrong(G, "mask ignored", "not applied")(lambda q, k, v, m: _attn(q, k, v, m, "none"))
wrong(G, "softmax over queries", "query axis")(lambda q, k, v, m: _attn(q, k, v, m, axis=0))
wrong(G, "scaled by sqrt(d_v)", "d_v")(lambda q, k, v, m: _attn(q, k, v, m, width=v.shape[-1]))
wrong(G, "not scaled", "forgot the scale")(lambda q, k, v, m: _attn(q, k, v, m, width=1))
wrong(G, "transposed mask", "transposed")(lambda q, k, v, m: _attn(q, k, v, m.T))


@wrong(G, "(weights, output)", "(output, weights)")
def _(q, k, v, mask):
    out, w = _attn(q, k, v, mask)
    return w, out


@wrong(G, "output only", "tuple of 2")
def _(q, k, v, mask):
    return _attn(q, k, v, mask)[0]


# --- q02_split_heads ----------------------------------------------------------------------------
G = "q02_split_heads"


@wrong(G, "bare reshape", "bare reshape")
def _(x, num_heads):
    n, d = x.shape
    return x.reshape(num_heads, n, d // num_heads)


@wrong(G, "bare reshape with -1", "bare reshape")
def _(x, num_heads):
    return x.reshape(num_heads, x.shape[0], -1)


@wrong(G, "no transpose", "(n, h, d_head)")
def _(x, num_heads):
    n, d = x.shape
    return x.reshape(n, num_heads, d // num_heads)


@wrong(G, "strided", "every h-th")
def _(x, num_heads):
    n, d = x.shape
    return x.reshape(n, d // num_heads, num_heads).transpose(2, 0, 1)


@wrong(G, "(h, d_head, n)", "last two axes are swapped")
def _(x, num_heads):
    n, d = x.shape
    return x.reshape(n, num_heads, d // num_heads).transpose(1, 2, 0)


@wrong(G, "np.split without axis", "token axis")
def _(x, num_heads):
    return np.array(np.split(x, num_heads))


@wrong(G, "float d_head", "//")
def _(x, num_heads):
    n, d_model = x.shape
    d_head = d_model / num_heads
    return x.reshape(n, num_heads, d_head).transpose(1, 0, 2)


@wrong(G, "the lesson's d_head = 4", "sizes from this input")
def _(x, num_heads):
    return x.reshape(x.shape[0], num_heads, 4).transpose(1, 0, 2)


@wrong(G, "transposes x first", "every h-th", "scrambled")
def _(x, num_heads):
    n, d = x.shape
    return x.T.reshape(d // num_heads, num_heads, n).transpose(1, 2, 0)


# --- q02_merge_heads ----------------------------------------------------------------------------
G = "q02_merge_heads"


@wrong(G, "bare reshape", "bare reshape")
def _(x):
    h, n, d = x.shape
    return x.reshape(n, h * d)


@wrong(G, "interleaved", "interleaved")
def _(x):
    h, n, d = x.shape
    return x.transpose(1, 2, 0).reshape(n, h * d)


@wrong(G, "np.stack on the last axis", "interleaved")
def _(x):
    return np.stack(list(x), axis=-1).reshape(x.shape[1], -1)


@wrong(G, "heads reversed", "wrong order")
def _(x):
    return np.concatenate(list(x[::-1]), axis=-1)


@wrong(G, "concatenate along tokens", "extra tokens")
def _(x):
    return np.concatenate(list(x), axis=0)


@wrong(G, "mean", "averaged")
def _(x):
    return x.mean(axis=0)


@wrong(G, "sum", "added the heads")
def _(x):
    return x.sum(axis=0)


@wrong(G, "transpose but no reshape", "right numbers")
def _(x):
    return x.transpose(1, 0, 2)


@wrong(G, "each head transposed", "scrambled", "bare reshape")
def _(x):
    h, n, d = x.shape
    return x.transpose(0, 2, 1).reshape(n, h * d)


# --- q02_per_head_attention ---------------------------------------------------------------------
G = "q02_per_head_attention"


def _split(a, h):
    n, d = a.shape
    return a.reshape(n, h, d // h).transpose(1, 0, 2)


def _per_head(x, w_q, w_k, w_v, h, split=_split, width=None, axis=-1, kv=None, swap=False):
    w_k2, w_v2 = kv if kv else (w_k, w_v)
    qh, kh, vh = split(x @ w_q, h), split(x @ w_k2, h), split(x @ w_v2, h)
    d = qh.shape[-1] if width is None else width
    if swap:
        qh, kh = kh, qh
    w = _softmax(qh @ kh.transpose(0, 2, 1) / np.sqrt(d), axis=axis)
    return w @ vh, w


def _bare_split(a, h):
    n, d = a.shape
    return a.reshape(h, n, d // h)


def _strided_split(a, h):
    n, d = a.shape
    return a.reshape(n, d // h, h).transpose(2, 0, 1)


wrong(G, "scale sqrt(d_model)", "sqrt(d_model)")(
    lambda x, a, b, c, h: _per_head(x, a, b, c, h, width=x.shape[-1])
)
wrong(G, "bare reshape split", "bare reshape")(
    lambda x, a, b, c, h: _per_head(x, a, b, c, h, split=_bare_split)
)
wrong(G, "strided split", "every h-th")(
    lambda x, a, b, c, h: _per_head(x, a, b, c, h, split=_strided_split)
)
wrong(G, "not scaled", "forgot the scale")(lambda x, a, b, c, h: _per_head(x, a, b, c, h, width=1))
wrong(G, "softmax over queries", "query axis")(
    lambda x, a, b, c, h: _per_head(x, a, b, c, h, axis=-2)
)
wrong(G, "K Q^T", "transposed")(lambda x, a, b, c, h: _per_head(x, a, b, c, h, swap=True))
wrong(G, "w_q reused for K and V", "w_q")(lambda x, a, b, c, h: _per_head(x, a, b, c, h, kv=(a, a)))
wrong(G, "values from w_k", "w_v")(lambda x, a, b, c, h: _per_head(x, a, b, c, h, kv=(b, b)))


@wrong(G, "float d_head in the learner's split", "//")
def _(x, w_q, w_k, w_v, num_heads):
    def my_split(a, h):
        n, d_model = a.shape
        d_head = d_model / h
        return a.reshape(n, h, d_head).transpose(1, 0, 2)

    return _per_head(x, w_q, w_k, w_v, num_heads, split=my_split)


@wrong(G, "(weights, outputs)", "(outputs, weights)")
def _(x, w_q, w_k, w_v, h):
    out, w = _per_head(x, w_q, w_k, w_v, h)
    return w, out


@wrong(G, "outputs merged", "per head")
def _(x, w_q, w_k, w_v, h):
    out, w = _per_head(x, w_q, w_k, w_v, h)
    return out.transpose(1, 0, 2).reshape(x.shape[0], -1), w


# --- q02_full_layer ----------------------------------------------------------------------------
G = "q02_full_layer"


def _layer(x, w_q, w_k, w_v, w_o, h, mask=None, **slip):
    b, n, d = x.shape
    dh = d // h

    def split(t):
        if slip.get("bare_split"):
            return t.reshape(b, h, n, dh)
        return t.reshape(b, n, h, dh).transpose(0, 2, 1, 3)

    qh, kh, vh = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    s = qh @ kh.swapaxes(-1, -2) / np.sqrt(slip.get("width", dh))
    if mask is not None:
        m = mask.T if slip.get("mask_t") else mask
        if slip.get("inverted"):
            m = ~m
        if not slip.get("after"):
            s = np.where(m, s, slip.get("fill", -np.inf))
    w = _softmax(s, axis=slip.get("axis", -1))
    if mask is not None and slip.get("after"):
        w = w * mask
    o = w @ vh
    if slip.get("bare_merge"):
        o = o.reshape(b, n, d)
    elif slip.get("interleaved"):
        o = o.transpose(0, 2, 3, 1).reshape(b, n, d)
    else:
        o = o.transpose(0, 2, 1, 3).reshape(b, n, d)
    if slip.get("no_w_o"):
        return o
    y = o @ (w_o.T if slip.get("w_o_t") else w_o)
    return y + x if slip.get("residual") else y


def _slip(**slip):
    return lambda x, a, b, c, o, h, mask=None: _layer(x, a, b, c, o, h, mask, **slip)


@wrong(G, "if mask:", "mask is not none")
def _(x, w_q, w_k, w_v, w_o, h, mask=None):
    if mask:
        return _layer(x, w_q, w_k, w_v, w_o, h, mask)
    return _layer(x, w_q, w_k, w_v, w_o, h)


@wrong(G, "no default for mask", "mask=none")
def _(x, w_q, w_k, w_v, w_o, h, mask):
    return _layer(x, w_q, w_k, w_v, w_o, h, mask)


wrong(G, "residual added", "residual")(_slip(residual=True))
wrong(G, "bare reshape split", "bare reshape")(_slip(bare_split=True))
wrong(G, "bare reshape merge", "bare reshape")(_slip(bare_merge=True))
wrong(G, "interleaved merge", "interleaved")(_slip(interleaved=True))
wrong(G, "mask inverted", "wrong way round")(_slip(inverted=True))
wrong(G, "mask transposed", "transposed")(_slip(mask_t=True))
wrong(G, "mask after the softmax", "after the softmax")(_slip(after=True))
wrong(G, "mask filled with 0", "exp(0)")(_slip(fill=0.0))
wrong(G, "softmax over queries", "query axis")(_slip(axis=-2))
wrong(G, "no w_o", "did not project")(_slip(no_w_o=True))
wrong(G, "w_o transposed", "w_o transposed")(_slip(w_o_t=True))


@wrong(G, "scaled by sqrt(d_model)", "sqrt(d_model)")
def _(x, w_q, w_k, w_v, w_o, h, mask=None):
    return _layer(x, w_q, w_k, w_v, w_o, h, mask, width=x.shape[-1])


@wrong(G, "mask ignored", "not applied", "with a mask")
def _(x, w_q, w_k, w_v, w_o, h, mask=None):
    return _layer(x, w_q, w_k, w_v, w_o, h)


@wrong(G, "batch flattened into one sequence", "one long sequence", "several sequences")
def _(x, w_q, w_k, w_v, w_o, h, mask=None):
    b, n, d = x.shape
    flat = x.reshape(1, b * n, d)
    return (
        _layer(flat, w_q, w_k, w_v, w_o, h).reshape(b, n, d)
        if mask is None
        else (
            _layer(flat, w_q, w_k, w_v, w_o, h, np.kron(np.ones((b, b), bool), mask)).reshape(
                b, n, d
            )
        )
    )


# --- q03_concat_project -----------------------------------------------------------------------
G = "q03_concat_project"


def _cat(heads):
    return np.concatenate([np.asarray(h) for h in heads], axis=-1)


wrong(G, "bare reshape", "bare reshape")(
    lambda hs, w: np.asarray(hs).reshape(np.shape(hs)[1], -1) @ w
)
wrong(G, "interleaved", "interleaved")(
    lambda hs, w: np.stack(list(hs), axis=-1).reshape(np.shape(hs)[1], -1) @ w
)
wrong(G, "w_o transposed", "w_o transposed")(lambda hs, w: _cat(hs) @ w.T)
wrong(G, "no projection", "did not project")(lambda hs, w: _cat(hs))
wrong(G, "mean", "averaged")(lambda hs, w: np.mean(hs, axis=0))
wrong(G, "plus", "added the heads")(lambda hs, w: sum(hs))
wrong(G, "token axis, no product", "extra tokens")(lambda hs, w: np.concatenate(list(hs), axis=0))
wrong(G, "reversed", "wrong order")(lambda hs, w: _cat(list(hs)[::-1]) @ w)
wrong(G, "first rows for every head", "first d_head rows")(
    lambda hs, w: sum(h @ w[: np.shape(h)[-1]] for h in hs)
)
wrong(G, "output transposed", "transposed")(lambda hs, w: (_cat(hs) @ w).T)


# --- q04_params ----------------------------------------------------------------------------------
G = "q04_params"


def _params(d, h, bias, *, kv=2, w_o=True, b=None, dh=None, width=None):
    dh = d // h if dh is None else dh
    w = h * dh if width is None else width
    weights = d * w + kv * d * w + (w * d if w_o else 0)
    biases = w + kv * w + (d if w_o else 0)
    return weights + (biases if (bias if b is None else b) else 0)


wrong(G, "no biases", "bias vectors")(lambda d, h, b: _params(d, h, False))
wrong(G, "no W_O", "output projection")(lambda d, h, b: _params(d, h, b, w_o=False))
wrong(G, "K and V as one", "k and v as one")(lambda d, h, b: _params(d, h, b, kv=1))
wrong(G, "biases always", "even when bias is false")(lambda d, h, b: _params(d, h, True))
wrong(G, "4 d_model biases", "4*d_model")(
    lambda d, h, b: _params(d, h, False) + (4 * d if b else 0)
)
wrong(G, "d_head squares", "d_head x d_head")(
    lambda d, h, b: 4 * h * (d // h) ** 2 + (4 * h * (d // h) if b else 0)
)
wrong(G, "d_model squares", "d_model x d_model")(lambda d, h, b: 4 * d * d + (4 * d if b else 0))


@wrong(G, "float d_head", "float", "//")
def _(d_model, num_heads, bias):
    d_head = d_model / num_heads
    return _params(d_model, num_heads, bias, dh=d_head)


# --- q04_flops -----------------------------------------------------------------------------------
G = "q04_flops"
wrong(G, "multiply-adds", "exactly half")(lambda n, d, h: (8 * n * d * d + 4 * n * n * d) // 2)
wrong(G, "no n^2", "not the attention itself")(lambda n, d, h: 8 * n * d * d)
wrong(G, "no W_O", "output projection")(lambda n, d, h: 6 * n * d * d + 4 * n * n * d)
wrong(G, "no weighted sum", "weighted sum")(lambda n, d, h: 8 * n * d * d + 2 * n * n * d)
wrong(G, "attention as multiply-adds", "multiply-adds of those two")(
    lambda n, d, h: 8 * n * d * d + n * n * d + n * n * d
)
wrong(G, "one head not summed", "every head", "with several heads")(
    lambda n, d, h: 8 * n * d * d + 4 * n * n * (d // h)
)
wrong(G, "full-width heads", "grow with h")(lambda n, d, h: 8 * n * d * d + 4 * n * n * d * h)
wrong(G, "projections as multiply-adds", "projections are counted as multiply-adds")(
    lambda n, d, h: 4 * n * d * d + 4 * n * n * d
)


@wrong(G, "float d_head", "float")
def _(n, d_model, num_heads):
    d_head = d_model / num_heads
    return 8 * n * d_model**2 + num_heads * 4 * n * n * d_head


# --- q05_gqa -------------------------------------------------------------------------------------
G = "q05_gqa"


def _gqa(x, w_q, w_k, w_v, w_o, h, g, **slip):
    n, d = x.shape
    dh = d // h
    q = x @ w_q
    q = q.reshape(n, h, dh).transpose(1, 0, 2)
    k = (x @ w_k).reshape(n, g, dh).transpose(1, 0, 2)
    v = (x @ w_v).reshape(n, g, dh).transpose(1, 0, 2)
    if slip.get("tile"):
        k, v = np.tile(k, (h // g, 1, 1)), np.tile(v, (h // g, 1, 1))
    else:
        k, v = np.repeat(k, h // g, axis=0), np.repeat(v, h // g, axis=0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(slip.get("width", dh))
    if slip.get("causal"):
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    o = _softmax(s, axis=slip.get("axis", -1)) @ v
    o = o.reshape(n, h * dh) if slip.get("bare") else o.transpose(1, 0, 2).reshape(n, h * dh)
    return o if slip.get("no_w_o") else o @ w_o


def _g(**slip):
    return lambda x, a, b, c, o, h, g: _gqa(x, a, b, c, o, h, g, **slip)


wrong(G, "tile", "tiled")(_g(tile=True))
wrong(G, "sqrt(d_model)", "1/sqrt(d_model)")(
    lambda x, a, b, c, o, h, g: _gqa(x, a, b, c, o, h, g, width=x.shape[-1])
)
wrong(G, "no scale", "did not scale")(_g(width=1))
wrong(G, "no w_o", "did not multiply by w_o")(_g(no_w_o=True))
wrong(G, "bare reshape merge", "bare reshape")(_g(bare=True))
wrong(G, "stray causal mask", "causal mask")(_g(causal=True))
wrong(G, "softmax over queries", "query axis")(_g(axis=-2))


@wrong(G, "float d_head", "//")
def _(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    n, d_model = x.shape
    d_head = d_model / num_heads
    q = (x @ w_q).reshape(n, num_heads, d_head)
    return q


# --- q05_mean_pool ---------------------------------------------------------------------------------
G = "q05_mean_pool"


def _heads(w, h, g):
    d, width = w.shape
    return w.reshape(d, g, h // g, width // h)


wrong(G, "strided groups", "tiled grouping")(
    lambda w, h, g: w.reshape(w.shape[0], h // g, g, -1).mean(axis=1).reshape(w.shape[0], -1)
)
wrong(G, "sum", "added the heads")(
    lambda w, h, g: _heads(w, h, g).sum(axis=2).reshape(w.shape[0], -1)
)
wrong(G, "first head", "one head of each group")(
    lambda w, h, g: _heads(w, h, g)[:, :, 0].reshape(w.shape[0], -1)
)
wrong(G, "last head", "one head of each group")(
    lambda w, h, g: _heads(w, h, g)[:, :, -1].reshape(w.shape[0], -1)
)
wrong(G, "all heads into one", "all heads into one")(
    lambda w, h, g: w.reshape(w.shape[0], h, -1).mean(axis=1)
)
wrong(G, "transposed result", "transposed")(
    lambda w, h, g: _heads(w, h, g).mean(axis=2).reshape(w.shape[0], -1).T
)


@wrong(G, "float d_head", "//")
def _(w, num_heads, num_kv_heads):
    d_model, width = w.shape
    d_head = width / num_heads
    return w.reshape(d_model, num_kv_heads, num_heads // num_kv_heads, d_head).mean(axis=2)


@wrong(G, "forgets the final reshape", "right numbers")
def _(w, h, g):
    return _heads(w, h, g).mean(axis=2)


# --- q05_cache_bytes -----------------------------------------------------------------------------
G = "q05_cache_bytes"


def _cache(L, h, g, dh, n, b, batch):
    return 2 * L * g * dh * b * n * batch


wrong(G, "K only", "keys and values")(lambda L, h, g, dh, n, b, B: L * g * dh * b * n * B)
wrong(G, "one layer", "one layer")(lambda L, h, g, dh, n, b, B: 2 * g * dh * b * n * B)
wrong(G, "one sequence", "one sequence")(lambda L, h, g, dh, n, b, B: 2 * L * g * dh * b * n)
wrong(G, "numbers", "not bytes")(lambda L, h, g, dh, n, b, B: 2 * L * g * dh * n * B)
wrong(G, "2 bytes", "bytes_per_element")(lambda L, h, g, dh, n, b, B: 2 * L * g * dh * 2 * n * B)
wrong(G, "query heads", "query head")(lambda L, h, g, dh, n, b, B: _cache(L, h, h, dh, n, b, B))
wrong(G, "group size", "group size")(lambda L, h, g, dh, n, b, B: _cache(L, h, h // g, dh, n, b, B))
wrong(G, "GiB", "gib")(lambda *a: _cache(*a) / 2**30)
wrong(G, "GB", "10**9")(lambda *a: _cache(*a) / 1e9)
wrong(G, "bits", "bits")(lambda *a: 8 * _cache(*a))
wrong(G, "float factor", "float")(lambda *a: 2.0 * _cache(*a) / 2)


# --- q06_head_backward -----------------------------------------------------------------------------
G = "q06_head_backward"


def _bwd(
    q,
    k,
    v,
    d_out,
    fill=-np.inf,
    masked=True,
    after=False,
    row_sum=True,
    scale=True,
    dv_t=True,
    dk_t=True,
    swap=False,
    width=None,
):
    n, d_k = q.shape
    s = q @ k.T / np.sqrt(d_k if width is None else width)
    causal = np.tril(np.ones((n, n), bool))
    if masked and not after:
        s = np.where(causal, s, fill)
    w = _softmax(s)
    if after:
        w = w * causal
    d_w = d_out @ v.T
    d_v = w.T @ d_out if dv_t else w @ d_out
    d_s = w * (d_w - (d_w * w).sum(axis=1, keepdims=True)) if row_sum else w * d_w
    if scale:
        d_s = d_s / np.sqrt(d_k if width is None else width)
    d_q, d_kk = d_s @ k, (d_s.T @ q if dk_t else d_s @ q)
    return (d_kk, d_q, d_v) if swap else (d_q, d_kk, d_v)


wrong(G, "no row sum", "row-sum")(lambda q, k, v, d: _bwd(q, k, v, d, row_sum=False))
wrong(G, "not scaled", "divided by sqrt(d_k) too")(lambda q, k, v, d: _bwd(q, k, v, d, scale=False))
wrong(G, "no mask", "causal mask")(lambda q, k, v, d: _bwd(q, k, v, d, masked=False))
wrong(G, "mask after", "after the softmax")(lambda q, k, v, d: _bwd(q, k, v, d, after=True))
wrong(G, "d_v not transposed", "weights.t @ d_out")(lambda q, k, v, d: _bwd(q, k, v, d, dv_t=False))
wrong(G, "d_k not transposed", "d_scores.t @ q")(lambda q, k, v, d: _bwd(q, k, v, d, dk_t=False))
wrong(G, "mask filled with 0", "instead of -inf")(lambda q, k, v, d: _bwd(q, k, v, d, fill=0.0))
wrong(G, "d_q and d_k swapped", "swapped")(lambda q, k, v, d: _bwd(q, k, v, d, swap=True))


# --- q06_measure_roles -----------------------------------------------------------------------------
G = "q06_measure_roles"


def _roles(w, start=2, off=1, cols=(0, 1), reduce=np.mean, axes=(0, 2)):
    t = np.arange(start, w.shape[-1])
    prev, first = w[:, :, t, t - off], w[:, :, t, 0]
    out = np.stack([reduce(prev, axis=axes), reduce(first, axis=axes)], axis=-1)
    return out[..., list(cols)]


wrong(G, "from t = 1", "start at t = 2")(lambda w: _roles(w, start=1))
wrong(G, "from t = 0", "start at t = 2")(lambda w: _roles(w, start=0))
wrong(G, "diagonal", "t - 1")(lambda w: _roles(w, off=0))
wrong(G, "transposed", "rows of an attention matrix are queries")(
    lambda w: _roles(w.swapaxes(-1, -2))
)
wrong(G, "sum", "not the sum")(lambda w: _roles(w, reduce=np.sum))
wrong(G, "columns swapped", "swapped columns")(lambda w: _roles(w, cols=(1, 0)))
wrong(G, "averaged over heads", "averaged over the heads")(
    lambda w: _roles(w, axes=(0, 2)).mean(axis=0)
)
wrong(G, "rows of (2, h)", "transposed")(lambda w: _roles(w).T)


# --- q06_remove_head ----------------------------------------------------------------------------
G = "q06_remove_head"


def _rm(w_o, rows):
    out = np.array(w_o, dtype=float)
    out[rows] = 0.0
    return out


wrong(G, "columns", "cleared columns")(
    lambda w, i, h: np.where((np.arange(w.shape[1]) // (w.shape[1] // h) == i)[None, :], 0.0, w)
)
wrong(G, "h rows", "not num_heads rows")(lambda w, i, h: _rm(w, slice(i * h, (i + 1) * h)))
wrong(G, "interleaved", "contiguous block")(lambda w, i, h: _rm(w, slice(i, None, h)))
wrong(G, "next head", "count heads from 0")(
    lambda w, i, h: _rm(w, slice((i + 1) * (len(w) // h), (i + 2) * (len(w) // h)))
)
wrong(G, "only that head kept", "the opposite")(
    lambda w, i, h: w - _rm(w, slice(i * (len(w) // h), (i + 1) * (len(w) // h)))
)
wrong(G, "np.delete", "keep the shape")(
    lambda w, i, h: np.delete(w, np.arange(i * (len(w) // h), (i + 1) * (len(w) // h)), axis=0)
)


@wrong(G, "in place", "in place")
def _(w_o, head, num_heads):
    d_head = w_o.shape[0] // num_heads
    w_o[head * d_head : (head + 1) * d_head] = 0
    return w_o


@wrong(G, "float d_head", "//")
def _(w_o, head, num_heads):
    d_head = w_o.shape[0] / num_heads
    out = w_o.copy()
    out[head * d_head : (head + 1) * d_head] = 0
    return out


# --- q07_padding_causal_mask -------------------------------------------------------------------
G = "q07_padding_causal_mask"


def _pcm(lengths, n, *, causal="lower", pad="keys", off=0):
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    L = np.asarray(lengths)[:, None, None]
    c = {"lower": j <= i, "upper": j >= i, "strict": j < i, "none": np.ones((n, n), bool)}[causal]
    p = {"keys": j < L + off, "queries": i < L, "none": np.ones_like(j < L)}[pad]
    return np.broadcast_to(c & p, (len(lengths), n, n)).copy()


wrong(G, "0/1 integers", "bool")(lambda lengths, n: _pcm(lengths, n).astype(int))
wrong(G, "0.0/1.0 floats", "bool")(lambda lengths, n: _pcm(lengths, n).astype(float))
wrong(G, "PyTorch polarity", "pytorch's convention")(lambda lengths, n: ~_pcm(lengths, n))
wrong(G, "padding on the queries", "padding *queries*")(
    lambda lengths, n: _pcm(lengths, n, pad="queries")
)
wrong(G, "no causal", "combine it with the causal")(
    lambda lengths, n: _pcm(lengths, n, causal="none")
)
wrong(G, "no padding", "causal mask alone")(lambda lengths, n: _pcm(lengths, n, pad="none"))
wrong(G, "upper triangle", "j >= i")(lambda lengths, n: _pcm(lengths, n, causal="upper"))
wrong(G, "off by one", "j < l")(lambda lengths, n: _pcm(lengths, n, off=1))
wrong(G, "no self", "attend to itself")(lambda lengths, n: _pcm(lengths, n, causal="strict"))


@wrong(G, "float tril times a boolean", "bool")
def _(lengths, n):
    causal = np.tril(np.ones((n, n)))
    key_valid = np.arange(n) < np.asarray(lengths)[:, None]
    return causal[None] * key_valid[:, None, :]


# --- q07_key_padding_mask ----------------------------------------------------------------------
G = "q07_key_padding_mask"
wrong(G, "course polarity", "the opposite")(lambda m: np.asarray(m).any(axis=-2))
wrong(G, "axis -1", "one flag per *query*")(lambda m: ~np.asarray(m).any(axis=-1))
wrong(G, "all", "no query may attend")(lambda m: ~np.asarray(m).all(axis=-2))
wrong(G, "first query's row", "no query may attend")(lambda m: ~np.asarray(m)[:, 0, :])
wrong(G, "whole mask", "attn_mask")(lambda m: ~np.asarray(m))
wrong(G, "0/1 integers", "bool")(lambda m: (~np.asarray(m).any(axis=-2)).astype(int))
wrong(G, "1 - floats", "bool")(lambda m: 1.0 - np.asarray(m).any(axis=-2))
wrong(G, "batch axis", "axis 0")(lambda m: ~np.asarray(m).any(axis=0))
wrong(G, "~ on 0/1 integers", "bool")(lambda m: ~np.asarray(m).astype(int).max(axis=-2))


# --- q07_in_proj_weight -------------------------------------------------------------------------
G = "q07_in_proj_weight"
wrong(G, "not transposed", "not transposed")(lambda a, b, c: np.concatenate([a, b, c]))
wrong(G, "side by side", "3 * d_model columns")(lambda a, b, c: np.hstack([a, b, c]))
wrong(G, "side by side, each .T", "3 * d_model columns")(lambda a, b, c: np.hstack([a.T, b.T, c.T]))
wrong(G, "np.stack", "np.stack adds a new axis")(lambda a, b, c: np.stack([a.T, b.T, c.T]))
wrong(G, "K, Q, V", "wrong order")(lambda a, b, c: np.vstack([b.T, a.T, c.T]))
wrong(G, "V, K, Q", "reverse order")(lambda a, b, c: np.vstack([c.T, b.T, a.T]))
wrong(G, "Q, V, K", "swapped")(lambda a, b, c: np.vstack([a.T, c.T, b.T]))
wrong(G, "vstack then .T", "3 * d_model columns")(lambda a, b, c: np.vstack([a, b, c]).T)


# --- value questions: wrong readings -------------------------------------------------------------
value("q02_weights_shape", "outputs' shape", (2, 5, 4), "heads' outputs")
value("q02_weights_shape", "one head", (5, 5), "one head's weights")
value("q02_weights_shape", "head axis last", (5, 5, 2), "head axis first")
value("q03_d_head", "multiplied", 768 * 12, "multiplied")
value("q03_d_head", "d_model", 768, "whole model")
value("q03_d_head", "as a float", 768 / 12, "float")
value("q03_d_head", "Q, K and V", 192, "q, k and v")
value("q03_identity_output", "summed heads", [4.0, 6.0], "added")
value("q03_identity_output", "one head", [1.0, 2.0], "only the first head")
value("q03_identity_output", "rows", [[1.0, 2.0], [3.0, 4.0]], "two rows")
value("q04_weight_entries", "one head", 1024**2, "one head")
value("q04_weight_entries", "all layers", 12 * 12 * 1024**2, "all 12 layers")
value("q04_weight_entries", "fp16 bytes", 2 * 12 * 1024**2, "bytes")
value("q04_weight_entries", "fp32 bytes", 4 * 12 * 1024**2, "bytes")
value("q04_weight_entries", "millions", 12.582912, "millions")
value("q04_weight_entries", "causal triangle", 12 * 1024 * 1025 // 2, "causal triangle")
value("q04_weight_entries", "masked zeros only", 12 * 1024 * 1023 // 2, "zeros the causal mask")
value("q04_weight_entries", "one head's triangle", 1024 * 1025 // 2, "one head's causal triangle")
value("q04_weight_entries", "d_head matrices", 64 * 1024**2, "d_head")
value("q04_weight_entries", "d_model", 768 * 1024**2, "d_model")
value("q04_changes_with_h", "everything", (True, True, True, True), "do not depend on h")
value("q05_max_batch", "MHA", 4, "64 kv heads")
value("q05_max_batch", "K only", 64, "keys and values")
value("q05_max_batch", "fp32", 16, "4-byte")
value("q05_max_batch", "GB", 29, "40 gb")
value("q05_max_batch", "one layer", 2560, "80 layers")
value("q05_max_batch", "bytes of a sequence", 1342177280, "one sequence's cache")
value("q05_max_batch", "GiB of a sequence", 1.25, "in gib")
value("q05_max_batch", "float", 32.0, "float")
value("q07_cross_shape", "swapped", [2, 4, 7, 5], "rows are queries")
value("q07_cross_shape", "self-attention", [2, 4, 5, 5], "self-attention")
value("q07_cross_shape", "averaged heads", [2, 5, 7], "averaged over heads")
value("q07_cross_shape", "heads first", [4, 2, 5, 7], "batch axis comes first")
value("q07_cross_shape", "no batch", [4, 5, 7], "batch axis")


def measure(check, battery=None):
    """Run every wrong answer through ``check(grade_id, answer) -> verdict`` and return one row
    per answer: ``(wrong, status, hinted, feedback)``; ``hinted`` is True when the feedback
    (hint and message) names the cause."""
    import warnings

    rows = []
    for w in BATTERY if battery is None else battery:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = check(w.grade_id, w.answer)
        feedback = f"{r.get('hint', '')} {r.get('message', '')}"
        hinted = r["status"] != "passed" and any(c in feedback.lower() for c in w.causes)
        rows.append((w, r["status"], hinted, feedback))
    return rows


def summary(rows) -> dict:
    """exercise -> (answers, passed wrongly, hinted right)."""
    out: dict = {}
    for w, status, hinted, _ in rows:
        ex = w.grade_id[1:3]
        n, passed, good = out.get(ex, (0, 0, 0))
        out[ex] = (n + 1, passed + (status == "passed"), good + hinted)
    return out


# --- q08_online_update (exercise 08's bank is lesson 08's; the answers are written here) --------
G = "q08_online_update"


def _online(m, ell, acc, scores, v, slip=""):
    m_new = scores.max(axis=-1) if slip == "block max" else np.maximum(m, scores.max(axis=-1))
    r = np.exp(m_new - m) if slip == "sign" else np.exp(m - m_new)
    if slip == "global max":
        m_new = np.maximum(m, scores.max())
        r = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    ell_new = (ell if slip in ("none", "block max") else r * ell) + p.sum(axis=-1)
    acc_new = (acc if slip in ("acc", "none", "block max") else r[:, None] * acc) + p @ v
    if slip == "twice":
        ell_new, acc_new = r * r * ell + p.sum(axis=-1), (r * r)[:, None] * acc + p @ v
    if slip == "normalised":
        acc_new = acc_new / ell_new[:, None]
    return m_new, ell_new, acc_new


wrong(G, "acc not rescaled", "not acc")(lambda *a: _online(*a, slip="acc"))
wrong(G, "rescaled twice", "twice")(lambda *a: _online(*a, slip="twice"))
wrong(G, "block's own max", "carry the maximum", "running one")(
    lambda *a: _online(*a, slip="block max")
)
wrong(G, "nothing rescaled", "neither ell nor acc")(lambda *a: _online(*a, slip="none"))
wrong(G, "normalised each step", "divided acc by the running sum")(
    lambda *a: _online(*a, slip="normalised")
)
wrong(G, "exp(m_new - m)", "exp(m - m_new)")(lambda *a: _online(*a, slip="sign"))
wrong(G, "one max for all rows", "max(axis=-1)")(lambda *a: _online(*a, slip="global max"))


@wrong(G, "p without [:, None]", "m_new[:, none]")
def _(m, ell, acc, scores, v_block):
    m_new = np.maximum(m, scores.max(axis=-1))
    r = np.exp(m - m_new)
    p = np.exp(scores - m_new)
    return m_new, r * ell + p.sum(axis=-1), r[:, None] * acc + p @ v_block


# --- q08_tiled ------------------------------------------------------------------------------------
G = "q08_tiled"


def _tiles(q, k, v, b, slip=""):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    width = v.shape[1] if slip == "d_v" else (1 if slip == "no scale" else d_k)
    stop = len(k) - len(k) % b if slip == "drop" else len(k)
    for start in range(0, stop, b):
        end = start + b - 1 if slip == "short" else start + b
        s = q @ k[start:end].T / np.sqrt(width)
        m, ell, acc = _online(
            m, ell, acc, s, v[start:end], slip=slip if slip in ("acc", "twice", "block max") else ""
        )
    return acc if slip == "not divided" else acc / ell[:, None]


wrong(G, "last short block dropped", "last, shorter block")(lambda *a: _tiles(*a, slip="drop"))
wrong(G, "acc not rescaled", "not rescaled")(lambda *a: _tiles(*a, slip="acc"))
wrong(G, "rescaled twice", "twice")(lambda *a: _tiles(*a, slip="twice"))
wrong(G, "block's own max", "running maximum")(lambda *a: _tiles(*a, slip="block max"))
wrong(G, "no scale", "not scaled")(lambda *a: _tiles(*a, slip="no scale"))
wrong(G, "not divided", "without dividing")(lambda *a: _tiles(*a, slip="not divided"))
wrong(G, "scaled by sqrt(d_v)", "d_v", "sqrt(d_k)")(lambda *a: _tiles(*a, slip="d_v"))
wrong(G, "blocks one key short", "block")(lambda *a: _tiles(*a, slip="short"))


# --- slips no bank lists: the verdict can only find the property that breaks them ---------------


@wrong("q02_full_layer", "heads merged in reverse order", "with several heads")
def _(x, w_q, w_k, w_v, w_o, h, mask=None):
    b, n, d = x.shape
    dh = d // h
    qh, kh, vh = ((x @ w).reshape(b, n, h, dh).transpose(0, 2, 1, 3) for w in (w_q, w_k, w_v))
    s = qh @ kh.swapaxes(-1, -2) / np.sqrt(dh)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    o = (_softmax(s) @ vh)[:, ::-1]  # head order reversed before the merge
    return o.transpose(0, 2, 1, 3).reshape(b, n, d) @ w_o


@wrong("q05_gqa", "KV heads repeated along the tokens", "shared", "group")
def _(x, w_q, w_k, w_v, w_o, h, g):
    n, d = x.shape
    dh = d // h
    q = (x @ w_q).reshape(n, h, dh).transpose(1, 0, 2)
    k = (x @ w_k).reshape(n, g, dh).transpose(1, 0, 2)
    v = (x @ w_v).reshape(n, g, dh).transpose(1, 0, 2)
    k = np.repeat(k, h // g, axis=1).reshape(h, n, dh)  # repeats tokens, then cuts into heads
    v = np.repeat(v, h // g, axis=1).reshape(h, n, dh)
    o = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(dh)) @ v
    return o.transpose(1, 0, 2).reshape(n, d) @ w_o


@wrong("q07_padding_causal_mask", "padding on queries and keys", "padding")
def _(lengths, n):
    lengths = np.asarray(lengths)
    valid = np.arange(n) < lengths[:, None]
    return np.tril(np.ones((n, n), bool))[None] & valid[:, None, :] & valid[:, :, None]


@wrong("q01_masked_attention", "the first query's mask row for every query", "with a mask")
def _(q, k, v, mask):
    s = np.where(mask[0], q @ k.T / np.sqrt(q.shape[-1]), -np.inf)
    w = _softmax(s)
    return w @ v, w


@wrong("q04_params", "biases of K and V counted as d_model", "bias")
def _(d_model, num_heads, bias):
    width = num_heads * (d_model // num_heads)
    weights = 4 * d_model * width
    return weights + ((width + 2 * d_model + d_model) if bias else 0)


value("q02_weights_shape", "stacked", (10, 5), "head axis")
value("q04_changes_with_h", "nothing", (False, False, False, False), "halves")
value("q06_roles_seed7", "all previous", ("previous",) * 4, "different roles")


@wrong("q01_scores", "scaled by the token count's root, written with len(x)", "number of tokens")
def _(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T / np.sqrt(len(x))
