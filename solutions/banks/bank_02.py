"""Questions for exercise 02: heads (``solutions/02_heads.ipynb``).

Lesson: ``notebooks/02_heads.ipynb``. Four questions, 10 points, all graded automatically:

* ``q02_weights_shape`` (1): the shape of the attention weights of all heads;
* ``q02_split_heads`` (3): ``(n, d_model) -> (h, n, d_head)``, reshape then transpose;
* ``q02_merge_heads`` (2): the inverse, ``(h, n, d_head) -> (n, h * d_head)``;
* ``q02_per_head_attention`` (4): project, split, attend per head with scale 1/sqrt(d_head).

Every case has ``n != h`` and ``d_head != n``, so a mixed-up axis cannot pass by luck.
"""

from __future__ import annotations

import numpy as np

from mha_helpers.grading.questions import Mistake, Question, register

ASSIGNMENT = "02_heads"

__all__ = ["ASSIGNMENT"]

# --- q02_weights_shape -------------------------------------------------------------------------

register(Question(
    grade_id="q02_weights_shape",
    assignment=ASSIGNMENT,
    points=1,
    kind="value",
    prompt="A layer with d_model = 8 and h = 2 heads attends over n = 5 tokens. What is the shape "
           "of the attention weights of all heads together? Answer with a tuple.",
    expected=(2, 5, 5),
    mistakes=(
        Mistake("output shape", (2, 5, 4),
                "(2, 5, 4) is the shape of the heads' outputs (h, n, d_head). The weights compare "
                "every query with every key, in every head: (h, n, n)."),
        Mistake("one head", (5, 5),
                "(5, 5) is one head's weights. Every head has its own pattern: add the head axis "
                "in front."),
        Mistake("d_model heads", (8, 5, 5),
                "There are h = 2 heads, not d_model = 8: the head axis has length h."),
        Mistake("head axis last", (5, 5, 2),
                "The course puts the head axis first: (h, n_q, n_k)."),
    ),
    hint="One (n_q, n_k) matrix per head, heads first: (h, n, n).",
))

# --- q02_split_heads ---------------------------------------------------------------------------

_SIZES = [(3, 8, 2), (5, 12, 3), (2, 12, 4)]  # (n, d_model, h): n != h and d_head != n


def _split_reference(x, num_heads):
    """(n, d_model) -> (h, n, d_head)."""
    n, d_model = x.shape
    d_head = d_model // num_heads
    return x.reshape(n, num_heads, d_head).transpose(1, 0, 2)  # (h, n, d_head)


def _split_cases(rng):
    return [(rng.normal(size=(n, d_model)), h) for n, d_model, h in _SIZES]


def _bare_reshape(x, num_heads):
    n, d_model = x.shape
    return x.reshape(num_heads, n, d_model // num_heads)  # same shape, tokens scrambled


def _no_transpose(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, num_heads, d_model // num_heads)  # (n, h, d_head)


def _strided(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, d_model // num_heads, num_heads).transpose(2, 0, 1)  # heads take every h-th feature


def _transposed_heads(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 2, 0)  # (h, d_head, n)


register(Question(
    grade_id="q02_split_heads",
    assignment=ASSIGNMENT,
    points=3,
    kind="function",
    prompt="Implement split_heads(x, num_heads): x of shape (n, d_model) -> (num_heads, n, d_head) "
           "with d_head = d_model // num_heads, where head i, row t holds "
           "x[t, i*d_head:(i+1)*d_head].",
    reference=_split_reference,
    cases=_split_cases,
    mistakes=(
        Mistake("bare reshape", _bare_reshape,
                "Right shape, scrambled tokens: a bare reshape to (h, n, d_head) fills head 0 with "
                "the first n * d_head numbers, which include pieces of other tokens. Reshape to "
                "(n, h, d_head) first, then move the head axis to the front with a transpose."),
        Mistake("no transpose", _no_transpose,
                "You cut the features into heads but left the result as (n, h, d_head). Move the "
                "head axis in front of the token axis: .transpose(1, 0, 2)."),
        Mistake("strided split", _strided,
                "Each of your heads takes every h-th feature (0, h, 2h, ...). Head i owns a block "
                "of consecutive features, i*d_head to (i+1)*d_head: reshape to (n, h, d_head), "
                "not (n, d_head, h)."),
        Mistake("features before tokens", _transposed_heads,
                "Your result is (h, d_head, n): the last two axes are swapped. Use "
                ".transpose(1, 0, 2) so that each head is (n, d_head)."),
    ),
    hint="x.reshape(n, num_heads, d_head) cuts each token's features into heads; then "
         "transpose so the head axis comes first: (h, n, d_head).",
    forbidden=("mha_helpers.heads.split_heads", "mha_helpers.heads.multi_head_attention"),
))

# --- q02_merge_heads ---------------------------------------------------------------------------


def _merge_reference(x):
    """(h, n, d_head) -> (n, h * d_head)."""
    h, n, d_head = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * d_head)  # (n, h * d_head)


def _merge_cases(rng):
    return [(rng.normal(size=(h, n, d_model // h)),) for n, d_model, h in _SIZES]


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


def _merge_averaged(x):
    return x.mean(axis=0)  # (n, d_head)


register(Question(
    grade_id="q02_merge_heads",
    assignment=ASSIGNMENT,
    points=2,
    kind="function",
    prompt="Implement merge_heads(x): x of shape (h, n, d_head) -> (n, h * d_head), each token's "
           "row being head 0's features, then head 1's, and so on (the inverse of split_heads).",
    reference=_merge_reference,
    cases=_merge_cases,
    mistakes=(
        Mistake("bare reshape", _merge_bare,
                "Right shape, scrambled tokens: a bare reshape of (h, n, d_head) to "
                "(n, h * d_head) mixes rows of different tokens. Transpose to (n, h, d_head) "
                "first, then reshape."),
        Mistake("interleaved", _merge_interleaved,
                "Your heads' features are interleaved (head 0 feature 0, head 1 feature 0, ...). "
                "Each head's d_head features must stay together: transpose to (n, h, d_head), "
                "not (n, d_head, h)."),
        Mistake("reversed heads", _merge_reversed,
                "The heads are in the wrong order: head 0's features come first."),
        Mistake("token axis", _merge_token_axis,
                "You stacked the heads as extra tokens (h * n rows). Each token keeps one row and "
                "gets wider: (n, h * d_head)."),
        Mistake("averaged", _merge_averaged,
                "You averaged the heads, which keeps only d_head features per token and loses "
                "which head said what. Place the heads side by side instead."),
    ),
    hint="x.transpose(1, 0, 2) gives (n, h, d_head); reshape that to (n, h * d_head).",
    forbidden=("mha_helpers.heads.merge_heads", "mha_helpers.heads.multi_head_attention"),
))

# --- q02_per_head_attention --------------------------------------------------------------------


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _per_head(x, w_q, w_k, w_v, num_heads, split=_split_reference, scale_width=None, axis=-1):
    qh = split(x @ w_q, num_heads)  # (h, n, d_head)
    kh = split(x @ w_k, num_heads)  # (h, n, d_head)
    vh = split(x @ w_v, num_heads)  # (h, n, d_head)
    d = qh.shape[-1] if scale_width is None else scale_width(x, num_heads)
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
    for n, d_model, h in _SIZES:
        x = rng.normal(size=(n, d_model))
        w = [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(3)]
        cases.append((x, *w, h))
    return cases


register(Question(
    grade_id="q02_per_head_attention",
    assignment=ASSIGNMENT,
    points=4,
    kind="function",
    prompt="Implement per_head_attention(x, w_q, w_k, w_v, num_heads): x (n, d_model), weights "
           "(d_model, d_model). Project, split into heads, and attend in every head. Return "
           "(outputs (h, n, d_head), weights (h, n, n)).",
    reference=_per_head_reference,
    cases=_per_head_cases,
    mistakes=(
        Mistake("scaled by sqrt(d_model)",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h,
                                                      scale_width=lambda x, h: x.shape[-1]),
                "You scaled by sqrt(d_model). Each head's dot products are sums over its d_head "
                "features, so the scale is 1 / sqrt(d_head) = 1 / sqrt(d_model / h)."),
        Mistake("bare reshape",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h, split=_bare_reshape),
                "Right shapes, scrambled tokens: you split the heads with a bare reshape to "
                "(h, n, d_head). Reshape to (n, h, d_head), then transpose to (h, n, d_head)."),
        Mistake("strided split",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h, split=_strided),
                "Your heads take every h-th feature instead of a block of consecutive features: "
                "reshape to (n, h, d_head), not (n, d_head, h), before transposing."),
        Mistake("not scaled",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h,
                                                      scale_width=lambda x, h: 1.0),
                "You forgot the scale: divide each head's scores by sqrt(d_head)."),
        Mistake("softmax over queries",
                lambda x, w_q, w_k, w_v, h: _per_head(x, w_q, w_k, w_v, h, axis=-2),
                "Your softmax runs over the query axis: in each head the columns sum to 1 instead "
                "of the rows. Normalise over the last axis (the keys)."),
    ),
    hint="q = x @ w_q, then split into (h, n, d_head) (reshape to (n, h, d_head), transpose); the "
         "same for k and v; scores = qh @ kh.transpose(0, 2, 1) / sqrt(d_head); softmax over the "
         "last axis; outputs = weights @ vh.",
    # split_heads is not listed: learners are invited to reuse their own split_heads from
    # q02_split_heads, and the grader's static check matches names, not implementations.
    forbidden=("mha_helpers.heads.multi_head_attention",
               "mha_helpers.attention.scaled_dot_product_attention"),
))
