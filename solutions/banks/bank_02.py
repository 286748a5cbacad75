"""Questions for exercise 02: heads (``solutions/02_heads.ipynb``).

Lesson: ``notebooks/02_heads.ipynb``. Five questions, 14 points, all graded automatically:

* ``q02_weights_shape`` (1): the shape of the attention weights of all heads;
* ``q02_split_heads`` (3): ``(n, d_model) -> (h, n, d_head)``, reshape then transpose;
* ``q02_merge_heads`` (2): the inverse, ``(h, n, d_head) -> (n, h * d_head)``;
* ``q02_per_head_attention`` (4): project, split, attend per head with scale 1/sqrt(d_head);
* ``q02_full_layer`` (4): the whole layer, assembled from the learner's own pieces, with a batch
  axis and an optional mask, compared with ``mha_helpers.multi_head_attention``.

Every case has ``n != h`` and ``d_head != n``, so a mixed-up axis cannot pass by luck. A slip
that can happen in several questions (a bare reshape, a strided split, an interleaved merge,
the wrong width in the scale) gets the same hint in each of them; bank_03 imports these hints.
"""

from __future__ import annotations

import numpy as np

from mha_helpers import multi_head_attention
from mha_helpers.grading import Mistake, Question, register

from .bank_01 import (
    MASK_AFTER_SOFTMAX_HINT,
    MASK_POLARITY_HINT,
    QUERY_AXIS_HINT,
    TRANSPOSED_SCORES_HINT,
)

ASSIGNMENT = "02_heads"

__all__ = [
    "ASSIGNMENT",
    "BARE_SPLIT_HINT",
    "STRIDED_SPLIT_HINT",
    "BARE_MERGE_HINT",
    "INTERLEAVED_MERGE_HINT",
    "REVERSED_HEADS_HINT",
    "TOKEN_AXIS_HINT",
    "SQRT_D_MODEL_HINT",
    "W_O_TRANSPOSED_HINT",
    "NO_PROJECTION_HINT",
]

# --- hints shared by every question where the slip can happen ----------------------------------

BARE_SPLIT_HINT = (
    "Right shape, scrambled tokens: a bare reshape to (h, n, d_head) fills head 0 with the first "
    "n * d_head numbers in memory, which include pieces of other tokens. Cut each token's "
    "features first, reshape to (n, h, d_head) (with a batch axis: (batch, n, h, d_head)), then "
    "move the head axis in front of the token axis with a transpose."
)
STRIDED_SPLIT_HINT = (
    "Each of your heads takes every h-th feature (0, h, 2h, ...) instead of a block of "
    "consecutive features. Head i owns features i*d_head to (i+1)*d_head - 1: reshape the "
    "feature axis to (h, d_head), not (d_head, h), before transposing."
)
BARE_MERGE_HINT = (
    "Right shape, scrambled tokens: a bare reshape of (h, n, d_head) to (n, h * d_head) mixes "
    "rows of different tokens. Bring the token axis in front of the head axis first, "
    "(n, h, d_head) (with a batch axis: (batch, n, h, d_head)), then reshape."
)
INTERLEAVED_MERGE_HINT = (
    "Your heads' features are interleaved (head 0's feature 0, head 1's feature 0, head 0's "
    "feature 1, ...). Each head's d_head features must stay together as one block, head 0's "
    "block first: arrange the axes as (n, h, d_head), not (n, d_head, h), before the reshape "
    "(or join the heads with np.concatenate along the last axis)."
)
REVERSED_HEADS_HINT = (
    "The heads are in the wrong order: head 0's features come first, because head 0 owns the "
    "first d_head columns (and the first d_head rows of W_O)."
)
TOKEN_AXIS_HINT = (
    "You stacked the heads as extra tokens (h * n rows). Each token keeps one row and gets "
    "wider: join the heads along the feature (last) axis, giving (n, h * d_head)."
)
SQRT_D_MODEL_HINT = (
    "You scaled by sqrt(d_model). Each head's dot products are sums over its own d_head "
    "features, so the scale is 1 / sqrt(d_head) = 1 / sqrt(d_model / h)."
)
NOT_SCALED_HINT = "You forgot the scale: divide each head's scores by sqrt(d_head)."
W_O_TRANSPOSED_HINT = (
    "You multiplied by W_O transposed. The course applies weights as x @ w: rows of w_o are "
    "input features (h * d_head), columns are output features (d_model)."
)
NO_PROJECTION_HINT = (
    "You concatenated the heads but did not project: multiply the (n, h * d_head) result by w_o."
)

# --- q02_weights_shape -------------------------------------------------------------------------

register(
    Question(
        grade_id="q02_weights_shape",
        assignment=ASSIGNMENT,
        points=1,
        kind="value",
        prompt="A layer with d_model = 8 and h = 2 heads attends over n = 5 tokens. What is the shape "
        "of the attention weights of all heads together? Answer with a tuple.",
        expected=(2, 5, 5),
        extra={"answer_type": "int"},
        mistakes=(
            Mistake(
                "output shape",
                (2, 5, 4),
                "(2, 5, 4) is the shape of the heads' outputs (h, n, d_head). The weights compare "
                "every query with every key, in every head: (h, n, n).",
            ),
            Mistake(
                "one head",
                (5, 5),
                "(5, 5) is one head's weights. Every head has its own pattern: add the head axis "
                "in front.",
            ),
            Mistake(
                "d_model heads",
                (8, 5, 5),
                "There are h = 2 heads, not d_model = 8: the head axis has length h.",
            ),
            Mistake(
                "head axis last", (5, 5, 2), "The course puts the head axis first: (h, n_q, n_k)."
            ),
            Mistake(
                "head axis in the middle",
                (5, 2, 5),
                "(5, 2, 5) puts the head axis between the queries and the keys. Each head has a "
                "whole (n_q, n_k) matrix, and the head axis comes first: (h, n_q, n_k).",
            ),
            Mistake(
                "heads stacked along the queries",
                (10, 5),
                "(10, 5) stacks the heads' matrices on top of each other. Keep a separate head "
                "axis in front: (h, n, n).",
            ),
            Mistake(
                "d_head wide",
                (2, 4, 4),
                "(2, 4, 4) uses d_head = 4 for the matrices. Attention weights compare tokens "
                "with tokens: each head's matrix is (n, n) = (5, 5), whatever the width.",
            ),
            Mistake(
                "d_model wide",
                (2, 5, 8),
                "The weights do not have a feature axis: each of a head's n queries has one "
                "weight per key, so a head's weights are (n, n), and all heads (h, n, n).",
            ),
        ),
        hint="One (n_q, n_k) matrix per head, heads first: (h, n, n).",
    )
)

# --- q02_split_heads ---------------------------------------------------------------------------

_SIZES = [(3, 8, 2), (5, 12, 3), (2, 12, 4)]  # (n, d_model, h): n != h and d_head != n
# For the split question only, a first case whose token count divides by h, so that cutting the
# token axis with np.split runs (and is recognised) instead of raising.
_SPLIT_SIZES = [(4, 6, 2), *_SIZES, (3, 6, 1)]
# Each function question also gets a case with one head (the last), so that the verdict can say
# "right with one head, wrong with several heads" (with one head, splitting and merging are
# only reshapes, and any order of the axes gives the same numbers).
_SIZES_AND_ONE_HEAD = [*_SIZES, (3, 6, 1)]


def _heads_trait(num_heads):
    return (["several heads"] if num_heads > 1 else []) + (
        ["not two heads"] if num_heads != 2 else []
    )


def _split_reference(x, num_heads):
    """(n, d_model) -> (h, n, d_head)."""
    n, d_model = x.shape
    d_head = d_model // num_heads
    return x.reshape(n, num_heads, d_head).transpose(1, 0, 2)  # (h, n, d_head)


def _split_cases(rng):
    return [(rng.normal(size=(n, d_model)), h) for n, d_model, h in _SPLIT_SIZES]


def _bare_reshape(x, num_heads):
    n, d_model = x.shape
    return x.reshape(num_heads, n, d_model // num_heads)  # same shape, tokens scrambled


def _no_transpose(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, num_heads, d_model // num_heads)  # (n, h, d_head)


def _strided(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, d_model // num_heads, num_heads).transpose(
        2, 0, 1
    )  # heads take every h-th feature


def _transposed_heads(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 2, 0)  # (h, d_head, n)


def _split_tokens(x, num_heads):
    return np.stack(np.split(x, num_heads))  # np.split cuts axis 0, the tokens, by default


register(
    Question(
        grade_id="q02_split_heads",
        assignment=ASSIGNMENT,
        points=3,
        kind="function",
        prompt="Implement split_heads(x, num_heads): x of shape (n, d_model) -> (num_heads, n, d_head) "
        "with d_head = d_model // num_heads, where head i, row t holds "
        "x[t, i*d_head:(i+1)*d_head].",
        reference=_split_reference,
        cases=_split_cases,
        traits=lambda x, num_heads: _heads_trait(num_heads),
        mistakes=(
            Mistake("bare reshape", _bare_reshape, BARE_SPLIT_HINT),
            Mistake(
                "no transpose",
                _no_transpose,
                "You cut the features into heads but left the result as (n, h, d_head). Move the "
                "head axis in front of the token axis: .transpose(1, 0, 2).",
            ),
            Mistake("strided split", _strided, STRIDED_SPLIT_HINT),
            Mistake(
                "features before tokens",
                _transposed_heads,
                "Your result is (h, d_head, n): the last two axes are swapped. Use "
                ".transpose(1, 0, 2) so that each head is (n, d_head).",
            ),
            Mistake(
                "split the tokens",
                _split_tokens,
                "You cut the token axis: np.split(x, h) splits axis 0 (the tokens) unless told "
                "otherwise, so each 'head' got a few whole tokens. Heads share every token and "
                "split its features: np.split(x, h, axis=-1), or reshape to (n, h, d_head) then "
                "transpose.",
            ),
        ),
        hint="x.reshape(n, num_heads, d_head) cuts each token's features into heads; then "
        "transpose so the head axis comes first: (h, n, d_head).",
        forbidden=("mha_helpers.heads.split_heads", "mha_helpers.heads.multi_head_attention"),
        extra={"output_shape": "(h, n, d_head)"},
    )
)

# --- q02_merge_heads ---------------------------------------------------------------------------


def _merge_reference(x):
    """(h, n, d_head) -> (n, h * d_head)."""
    h, n, d_head = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * d_head)  # (n, h * d_head)


def _merge_cases(rng):
    return [(rng.normal(size=(h, n, d_model // h)),) for n, d_model, h in _SIZES_AND_ONE_HEAD]


def _merge_bare(x):
    h, n, d_head = x.shape
    return x.reshape(n, h * d_head)


def _merge_interleaved(x):
    h, n, d_head = x.shape
    return x.transpose(1, 2, 0).reshape(n, h * d_head)  # features of the heads interleaved


def _merge_reversed(x):
    h, n, d_head = x.shape
    return x[::-1].transpose(1, 0, 2).reshape(n, h * d_head)


def _merge_token_axis(x):
    h, n, d_head = x.shape
    return x.reshape(h * n, d_head)  # heads stacked as extra tokens


register(
    Question(
        grade_id="q02_merge_heads",
        assignment=ASSIGNMENT,
        points=2,
        kind="function",
        prompt="Implement merge_heads(x): x of shape (h, n, d_head) -> (n, h * d_head), each token's "
        "row being head 0's features, then head 1's, and so on (the inverse of split_heads).",
        reference=_merge_reference,
        cases=_merge_cases,
        traits=lambda x: _heads_trait(np.shape(x)[0]),
        mistakes=(
            Mistake("bare reshape", _merge_bare, BARE_MERGE_HINT),
            Mistake("interleaved", _merge_interleaved, INTERLEAVED_MERGE_HINT),
            Mistake("reversed heads", _merge_reversed, REVERSED_HEADS_HINT),
            Mistake("token axis", _merge_token_axis, TOKEN_AXIS_HINT),
            Mistake(
                "averaged",
                lambda x: x.mean(axis=0),
                "You averaged the heads, which keeps only d_head features per token and loses "
                "which head said what. Place the heads side by side instead.",
            ),
            Mistake(
                "summed",
                lambda x: x.sum(axis=0),
                "You added the heads, which keeps only d_head features per token and loses which "
                "head said what. Place the heads side by side instead (with NumPy arrays, + adds; "
                "it does not join).",
            ),
        ),
        hint="x.transpose(1, 0, 2) gives (n, h, d_head); reshape that to (n, h * d_head).",
        forbidden=("mha_helpers.heads.merge_heads", "mha_helpers.heads.multi_head_attention"),
    )
)

# --- q02_per_head_attention --------------------------------------------------------------------


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _per_head(
    x, w_q, w_k, w_v, num_heads, split=_split_reference, scale_width=None, axis=-1, transposed=False
):
    qh = split(x @ w_q, num_heads)  # (h, n, d_head)
    kh = split(x @ w_k, num_heads)  # (h, n, d_head)
    vh = split(x @ w_v, num_heads)  # (h, n, d_head)
    d = qh.shape[-1] if scale_width is None else scale_width(x, num_heads)
    if transposed:
        qh, kh = kh, qh
    scores = qh @ kh.transpose(0, 2, 1) / np.sqrt(d)  # (h, n, n)
    if axis == -1:
        weights = _softmax_rows(scores)
    else:
        weights = _softmax_rows(scores.transpose(0, 2, 1)).transpose(0, 2, 1)  # over queries
    return weights @ vh, weights  # (h, n, d_head), (h, n, n)


def _per_head_reference(x, w_q, w_k, w_v, num_heads):
    """Project, split into heads, attend per head: returns (outputs (h, n, d_head), weights (h, n, n))."""
    return _per_head(x, w_q, w_k, w_v, num_heads)


def _per_head_cases(rng):
    cases = []
    for n, d_model, h in _SIZES_AND_ONE_HEAD:
        x = rng.normal(size=(n, d_model))
        w = [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(3)]
        cases.append((x, *w, h))
    return cases


def _attend_then_split(x, w_q, w_k, w_v, num_heads):
    d_head = x.shape[-1] // num_heads
    weights = _softmax_rows((x @ w_q) @ (x @ w_k).T / np.sqrt(d_head))  # (n, n): one pattern only
    return _split_reference(weights @ (x @ w_v), num_heads), weights


def _kv_from_w_q(x, w_q, w_k, w_v, num_heads):
    return _per_head(x, w_q, w_q, w_q, num_heads)


def _v_from_w_k(x, w_q, w_k, w_v, num_heads):
    return _per_head(x, w_q, w_k, w_k, num_heads)


def _per_head_swapped(x, w_q, w_k, w_v, num_heads):
    out, weights = _per_head(x, w_q, w_k, w_v, num_heads)
    return weights, out


def _merged_outputs(x, w_q, w_k, w_v, num_heads):
    out, weights = _per_head(x, w_q, w_k, w_v, num_heads)
    return _merge_reference(out), weights


register(
    Question(
        grade_id="q02_per_head_attention",
        assignment=ASSIGNMENT,
        points=4,
        kind="function",
        prompt="Implement per_head_attention(x, w_q, w_k, w_v, num_heads): x (n, d_model), weights "
        "(d_model, d_model). Project, split into heads, and attend in every head. Return "
        "(outputs (h, n, d_head), weights (h, n, n)).",
        reference=_per_head_reference,
        cases=_per_head_cases,
        extra={"outputs": ["outputs", "weights"]},
        mistakes=(
            Mistake(
                "scaled by sqrt(d_model)",
                lambda x, w_q, w_k, w_v, h: _per_head(
                    x, w_q, w_k, w_v, h, scale_width=lambda x, h: x.shape[-1]
                ),
                SQRT_D_MODEL_HINT,
            ),
            Mistake(
                "bare reshape",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h, split=_bare_reshape),
                BARE_SPLIT_HINT,
            ),
            Mistake(
                "strided split",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h, split=_strided),
                STRIDED_SPLIT_HINT,
            ),
            Mistake(
                "not scaled",
                lambda x, w_q, w_k, w_v, h: _per_head(
                    x, w_q, w_k, w_v, h, scale_width=lambda x, h: 1.0
                ),
                NOT_SCALED_HINT,
            ),
            Mistake(
                "softmax over queries",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h, axis=-2),
                QUERY_AXIS_HINT,
            ),
            Mistake(
                "transposed scores",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h, transposed=True),
                TRANSPOSED_SCORES_HINT,
            ),
            Mistake(
                "attend, then split",
                _attend_then_split,
                "You attended once over the full width and split the result afterwards, so there "
                "is only one (n, n) pattern. Split Q, K and V into heads first; then every head "
                "computes its own (n, n) scores from its own columns: weights (h, n, n).",
            ),
            Mistake(
                "keys and values from w_q",
                _kv_from_w_q,
                "Your keys and values are computed with w_q: every head compares queries with "
                "copies of themselves. Each projection has its own matrix: k = x @ w_k and "
                "v = x @ w_v, then split each of them into heads exactly as you split q.",
            ),
            Mistake(
                "values from w_k",
                _v_from_w_k,
                "Your values are computed with w_k, so the heads average copies of the keys. "
                "The values have their own projection: v = x @ w_v.",
            ),
            Mistake(
                "(weights, outputs)",
                _per_head_swapped,
                "You returned (weights, outputs); the question asks for (outputs, weights), in "
                "that order.",
            ),
            Mistake(
                "merged outputs",
                _merged_outputs,
                "You returned the heads' outputs already concatenated, (n, h * d_head). This "
                "question asks for them per head, (h, n, d_head); joining them is question 3 "
                "(merge_heads).",
            ),
        ),
        hint="q = x @ w_q, k = x @ w_k and v = x @ w_v (three different matrices), each split into "
        "(h, n, d_head) (reshape to (n, h, d_head), transpose); scores = "
        "qh @ kh.transpose(0, 2, 1) / sqrt(d_head); softmax over the last axis; outputs = "
        "weights @ vh.",
        traits=lambda x, w_q, w_k, w_v, num_heads: _heads_trait(num_heads),
        # split_heads is not listed: learners are invited to reuse their own split_heads from
        # q02_split_heads, and the grader's static check still matches names, not implementations.
        forbidden=(
            "mha_helpers.heads.multi_head_attention",
            "mha_helpers.heads.grouped_query_attention",
            "mha_helpers.attention.scaled_dot_product_attention",
        ),
    )
)

# --- q02_full_layer ----------------------------------------------------------------------------


def _full_layer_reference(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    """(batch, n, d_model) -> (batch, n, d_model): the course's own multi-head attention."""
    return multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=num_heads, mask=mask)


def _full_layer_cases(rng):
    """Three batches: no mask (the argument left out, so a missing default fails); a random
    mask in which every query keeps some keys and loses some; a causal mask. Then two that
    change one property each: one head, and a batch of one sequence.

    (batch, n, d_model, h): batch, n and d_head differ within each case, and n differs from h.
    """
    cases = []
    for batch, n, d_model, h, kind in [
        (2, 3, 8, 2, None),
        (3, 5, 12, 3, "random"),
        (2, 4, 12, 4, "causal"),
        # one property at a time, against the causal (2, 4, 8, 2) layer: one head instead of
        # two, one sequence instead of two (the first case has no mask)
        (2, 4, 8, 1, "causal"),
        (1, 4, 8, 2, "causal"),
    ]:
        x = rng.normal(size=(batch, n, d_model))  # (batch, n, d_model)
        ws = [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
        if kind is None:
            cases.append((x, *ws, h))
            continue
        if kind == "causal":
            mask = np.tril(np.ones((n, n), dtype=bool))  # (n, n), True = may attend
        else:
            mask = rng.random((n, n)) < 0.5
            mask[np.arange(n), rng.integers(0, n, size=n)] = True  # every query keeps a key
            mask[np.arange(n), (np.arange(n) + 1) % n] = False  # ... and loses one
            mask[np.arange(n), np.arange(n)] = True
        cases.append((x, *ws, h, mask))
    return cases


def _split_b(t, h, strided=False, bare=False):
    """(batch, n, d_model) -> (batch, h, n, d_head), right or wrong."""
    b, n, d = t.shape
    if bare:
        return t.reshape(b, h, n, d // h)
    if strided:
        return t.reshape(b, n, d // h, h).transpose(0, 3, 1, 2)
    return t.reshape(b, n, h, d // h).transpose(0, 2, 1, 3)


def _merge_b(o, interleaved=False, bare=False):
    """(batch, h, n, d_head) -> (batch, n, h * d_head), right or wrong."""
    b, h, n, dh = o.shape
    if bare:
        return o.reshape(b, n, h * dh)
    if interleaved:
        return o.transpose(0, 2, 3, 1).reshape(b, n, h * dh)
    return o.transpose(0, 2, 1, 3).reshape(b, n, h * dh)


def _layer(
    x,
    w_q,
    w_k,
    w_v,
    w_o,
    h,
    mask=None,
    *,
    split=None,
    merge=None,
    scale=None,
    mask_mode="before",
    axis=-1,
    transposed=False,
    project=True,
    w_o_t=False,
):
    """The full layer with one slip switched on (keyword arguments say which)."""
    split = split or {}
    merge = merge or {}
    qh, kh, vh = (_split_b(x @ w, h, **split) for w in (w_q, w_k, w_v))  # (b, h, n, d_head)
    if transposed:
        qh, kh = kh, qh
    d = qh.shape[-1] if scale is None else scale(x, h)
    scores = qh @ kh.swapaxes(-1, -2) / np.sqrt(d)  # (b, h, n, n)
    if mask is not None and mask_mode == "before":
        scores = np.where(mask, scores, -np.inf)
    elif mask is not None and mask_mode == "inverted":
        scores = np.where(mask, -np.inf, scores)
    elif mask is not None and mask_mode == "zero":
        scores = np.where(mask, scores, 0.0)
    if axis == -1:
        weights = _softmax_rows(scores)
    else:
        weights = _softmax_rows(scores.swapaxes(-1, -2)).swapaxes(-1, -2)
    if mask is not None and mask_mode == "after":
        weights = weights * mask
    concat = _merge_b(weights @ vh, **merge)  # (b, n, d_model)
    if not project:
        return concat
    return concat @ (w_o.T if w_o_t else w_o)


def _one_sequence(x, w_q, w_k, w_v, w_o, h, mask=None):
    """The batch flattened into one long sequence: tokens of different sequences attend to
    each other (and an (n, n) mask is laid along the diagonal blocks)."""
    b, n, d = x.shape
    flat = x.reshape(1, b * n, d)
    big = (
        None
        if mask is None
        else np.kron(np.eye(b, dtype=bool), mask)
        | ~np.kron(np.eye(b, dtype=bool), np.ones_like(mask))
    )  # mask inside a sequence, open across
    return _layer(flat, w_q, w_k, w_v, w_o, h, big).reshape(b, n, d)


def _with_residual(x, w_q, w_k, w_v, w_o, h, mask=None):
    return _layer(x, w_q, w_k, w_v, w_o, h, mask) + x


def _mask_transposed(x, w_q, w_k, w_v, w_o, h, mask=None):
    return _layer(x, w_q, w_k, w_v, w_o, h, None if mask is None else mask.T)


def _full_layer_traits(x, w_q, w_k, w_v, w_o, h, mask=None):
    return (
        _heads_trait(h)
        + (["mask"] if mask is not None and not np.all(mask) else [])
        + (["batch"] if x.shape[0] > 1 else [])
    )


def _one_head(x, w_q, w_k, w_v, w_o, h, mask=None):
    return _layer(x, w_q, w_k, w_v, w_o, 1, mask)


def _slip(**kwargs):
    def wrong(x, w_q, w_k, w_v, w_o, h, mask=None):
        return _layer(x, w_q, w_k, w_v, w_o, h, mask, **kwargs)

    return wrong


register(
    Question(
        grade_id="q02_full_layer",
        assignment=ASSIGNMENT,
        points=4,
        kind="function",
        prompt="Implement multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None) for a batch: "
        "x (batch, n, d_model), weights (d_model, d_model), mask None or boolean (n, n) with "
        "True = may attend, shared by every sequence and head. Project, split into heads, "
        "attend (mask before the softmax), merge, multiply by w_o; return (batch, n, d_model).",
        reference=_full_layer_reference,
        cases=_full_layer_cases,
        mistakes=(
            Mistake("bare reshape split", _slip(split={"bare": True}), BARE_SPLIT_HINT),
            Mistake("strided split", _slip(split={"strided": True}), STRIDED_SPLIT_HINT),
            Mistake("bare reshape merge", _slip(merge={"bare": True}), BARE_MERGE_HINT),
            Mistake(
                "interleaved merge", _slip(merge={"interleaved": True}), INTERLEAVED_MERGE_HINT
            ),
            Mistake(
                "batch as one sequence",
                _one_sequence,
                "Tokens of different sequences attended to each other: the batch was treated as "
                "one long sequence. Each sequence attends only within itself: keep the batch "
                "axis in front, (batch, h, n, d_head), or loop over the sequences.",
            ),
            Mistake(
                "one head",
                _one_head,
                "Your layer behaves like a single head of width d_model: split Q, K and V into "
                "num_heads heads before attending, each with its own (n, n) pattern.",
            ),
            Mistake(
                "scaled by sqrt(d_model)", _slip(scale=lambda x, h: x.shape[-1]), SQRT_D_MODEL_HINT
            ),
            Mistake("not scaled", _slip(scale=lambda x, h: 1.0), NOT_SCALED_HINT),
            Mistake("softmax over queries", _slip(axis=-2), QUERY_AXIS_HINT),
            Mistake("transposed scores", _slip(transposed=True), TRANSPOSED_SCORES_HINT),
            Mistake("no projection", _slip(project=False), NO_PROJECTION_HINT),
            Mistake("w_o transposed", _slip(w_o_t=True), W_O_TRANSPOSED_HINT),
            Mistake("masked after softmax", _slip(mask_mode="after"), MASK_AFTER_SOFTMAX_HINT),
            Mistake("mask inverted", _slip(mask_mode="inverted"), MASK_POLARITY_HINT),
            Mistake(
                "masked with 0",
                _slip(mask_mode="zero"),
                "You replaced blocked scores with 0, and exp(0) = 1, so blocked keys still get "
                "weight. Use -np.inf: exp(-inf) = 0.",
            ),
            Mistake(
                "mask ignored",
                _slip(mask_mode="ignored"),
                "The mask was not applied (or mask=None was assumed): put -inf where the mask is "
                "False, in every sequence and every head, before the softmax.",
            ),
            Mistake(
                "mask transposed",
                _mask_transposed,
                "Your mask is transposed: mask[i, j] says whether query i (a row of the scores) "
                "may attend to key j (a column). Use it as given, np.where(mask, scores, -np.inf), "
                "without .T.",
            ),
            Mistake(
                "residual added",
                _with_residual,
                "You added the input x to the output: that residual connection belongs to the "
                "Transformer block around the layer (x + attention(x)), not to the attention "
                "layer itself. Return concat @ w_o alone.",
            ),
        ),
        hint="Give mask the default None: the first check leaves it out. x has a batch axis, so "
        "either loop over its sequences (for seq in x: ...) and reuse your (n, d_model) "
        "split_heads and merge_heads, then np.stack the results; or split to (batch, h, n, d_head) "
        "with reshape(batch, n, h, d_head).transpose(0, 2, 1, 3). Then scores = "
        "qh @ kh.swapaxes(-1, -2) / sqrt(d_head); np.where(mask, scores, -np.inf) when a mask is "
        "given; softmax over the last axis; merge back to (batch, n, d_model); multiply by w_o.",
        # split_heads and merge_heads are not listed: learners are invited to reuse their own
        # functions of those names, and the grader's static check matches names, not code.
        forbidden=(
            "mha_helpers.heads.multi_head_attention",
            "mha_helpers.heads.grouped_query_attention",
            "mha_helpers.attention.scaled_dot_product_attention",
            "torch.nn.functional.scaled_dot_product_attention",
            "torch.nn.functional.multi_head_attention_forward",
        ),
        traits=_full_layer_traits,
    )
)
