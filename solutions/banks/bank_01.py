"""Questions for exercise 01: single-head self-attention (``solutions/01_recap_self_attention.ipynb``).

Lesson: ``notebooks/01_recap_self_attention.ipynb``. Four questions, 10 points, 8 of them graded
automatically:

* ``q01_scores`` (2): project queries and keys, then scale the scores by 1/sqrt(d_k);
* ``q01_softmax`` (2): a numerically stable softmax over the key axis;
* ``q01_masked_attention`` (4): masked softmax attention for one head, returning
  ``(output, weights)``;
* ``q01_one_opinion`` (2): why one attention pattern per token is limiting, graded by hand.

Every mistake below is a wrong answer written out the way a learner writes it, so the
self-check can name the slip instead of only saying "wrong values". The public cases are chosen
so that each mistake fails on them, and on the first case where it fails it gives numbers no
other listed mistake gives (``tests/test_banks_01_03.py`` checks both).
"""

from __future__ import annotations

import numpy as np

from mha_helpers.grading import Mistake, Question, register

ASSIGNMENT = "01_recap_self_attention"

__all__ = [
    "ASSIGNMENT",
    "TRANSPOSED_SCORES_HINT",
    "GLOBAL_MAX_HINT",
    "QUERY_AXIS_HINT",
    "MASK_AFTER_SOFTMAX_HINT",
    "MASK_POLARITY_HINT",
]

# Hints shared with the later banks: the same slip gets the same words wherever it can happen.
TRANSPOSED_SCORES_HINT = (
    "Your scores are transposed: rows must be queries and columns keys, so compute Q @ K.T "
    "(in every head: qh @ kh.swapaxes(-1, -2)), not K @ Q.T."
)
QUERY_AXIS_HINT = (
    "Your softmax runs over the query axis: the columns sum to 1 instead of the rows. Each "
    "query distributes its attention over the keys, so normalise over the last axis (axis=-1)."
)
GLOBAL_MAX_HINT = (
    "You subtracted one maximum for the whole matrix (scores.max()) instead of each row's own "
    "maximum. A row whose scores are all far below the largest score in the matrix then "
    "underflows: exp gives 0 for every entry and 0 / 0 is NaN. Use "
    "scores.max(axis=-1, keepdims=True)."
)
MASK_AFTER_SOFTMAX_HINT = (
    "You masked after the softmax: blocked keys get weight 0, but the rows no longer sum to 1. "
    "Set blocked scores to -inf before the softmax (np.where(mask, scores, -np.inf))."
)
MASK_POLARITY_HINT = (
    "Your mask is the wrong way round: the course's masks are True where a query MAY attend, "
    "so keep the scores where the mask is True and put -inf where it is False "
    "(np.where(mask, scores, -np.inf)). PyTorch's nn.MultiheadAttention uses the opposite "
    "convention, which is an easy source of this slip."
)


def _stable_softmax(s, axis=-1):
    """Softmax that tolerates -inf entries (they get weight 0) and large scores."""
    m = np.max(s, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    return e / e.sum(axis=axis, keepdims=True)


# --- q01_scores --------------------------------------------------------------------------------


def _scores_reference(x, w_q, w_k):
    """(n, d_model), (d_model, d_k), (d_model, d_k) -> scaled scores (n, n)."""
    q = x @ w_q  # (n, d_k)
    k = x @ w_k  # (n, d_k)
    return q @ k.T / np.sqrt(w_q.shape[1])  # (n_q, n_k)


def _scores_cases(rng):
    """Sizes chosen so that n, d_k and d_model differ in the first three cases, and d_k is not
    4 in the second: dividing by a hard-coded 2 (sqrt(4)) or by d_k ** 1/2 (= d_k / 2) fails
    there. The last case has n = d_k (and d_k = 4), so an answer that takes the token count for
    the width is right there and wrong elsewhere: the verdict says so."""
    cases = []
    for n, d_model, d_k in [(3, 8, 4), (5, 12, 3), (2, 10, 6), (4, 10, 4)]:
        x = rng.normal(size=(n, d_model))
        w_q = rng.normal(size=(d_model, d_k)) / np.sqrt(d_model)
        w_k = rng.normal(size=(d_model, d_k)) / np.sqrt(d_model)
        cases.append((x, w_q, w_k))
    return cases


def _scores_divided_by(divisor):
    return lambda x, w_q, w_k: (x @ w_q) @ (x @ w_k).T / divisor(x, w_q)


register(
    Question(
        grade_id="q01_scores",
        assignment=ASSIGNMENT,
        points=2,
        kind="function",
        prompt="Implement attention_scores(x, w_q, w_k): project x to queries and keys and return the "
        "scaled score matrix Q K^T / sqrt(d_k), shape (n, n), rows = queries.",
        reference=_scores_reference,
        cases=_scores_cases,
        mistakes=(
            Mistake(
                "sqrt(d_model)",
                _scores_divided_by(lambda x, w_q: np.sqrt(x.shape[1])),
                "You divided by sqrt(d_model), the width of x. The dot products are sums over the "
                "d_k features of a query and a key, so divide by sqrt(d_k) = sqrt(w_q.shape[1]).",
            ),
            Mistake(
                "not scaled",
                _scores_divided_by(lambda x, w_q: 1.0),
                "The products are right but not scaled: divide the scores by sqrt(d_k).",
            ),
            Mistake(
                "divided by d_k",
                _scores_divided_by(lambda x, w_q: w_q.shape[1]),
                "You divided by d_k itself; the scale is 1 / sqrt(d_k).",
            ),
            Mistake(
                "d_k ** 1/2",
                _scores_divided_by(lambda x, w_q: w_q.shape[1] ** 1 / 2),
                "You divided by d_k / 2: in Python, d_k ** 1/2 means (d_k ** 1) / 2, because ** "
                "binds tighter than /. Write d_k ** 0.5 or np.sqrt(d_k). (For d_k = 4 the two "
                "agree by coincidence, so the first case passed.)",
            ),
            Mistake(
                "hard-coded 2",
                _scores_divided_by(lambda x, w_q: 2.0),
                "You divided by 2, which is sqrt(d_k) only when d_k = 4 (the lesson's example). "
                "Compute the scale from the input: np.sqrt(w_q.shape[1]).",
            ),
            Mistake(
                "sqrt(n)",
                _scores_divided_by(lambda x, w_q: np.sqrt(x.shape[0])),
                "You divided by the square root of the number of tokens. The scale depends on the "
                "width of a query, d_k = w_q.shape[1], not on how many tokens there are.",
            ),
            Mistake(
                "transposed",
                lambda x, w_q, w_k: (x @ w_k) @ (x @ w_q).T / np.sqrt(w_q.shape[1]),
                TRANSPOSED_SCORES_HINT,
            ),
            Mistake(
                "keys from w_q",
                lambda x, w_q, w_k: (x @ w_q) @ (x @ w_q).T / np.sqrt(w_q.shape[1]),
                "Your keys are computed with w_q, so every query is compared with a copy of the "
                "queries. Keys come from their own matrix: K = x @ w_k.",
            ),
            Mistake(
                "no projection",
                lambda x, w_q, w_k: x @ x.T / np.sqrt(w_q.shape[1]),
                "You took dot products of the raw token vectors x. Project first: Q = x @ w_q and "
                "K = x @ w_k, then compare Q with K.",
            ),
            Mistake(
                "multiplied by sqrt(d_k)",
                _scores_divided_by(lambda x, w_q: 1 / np.sqrt(w_q.shape[1])),
                "You multiplied by sqrt(d_k). The scale shrinks the scores: divide by sqrt(d_k) "
                "(or multiply by 1 / sqrt(d_k)).",
            ),
            Mistake(
                "softmax applied",
                lambda x, w_q, w_k: _stable_softmax(_scores_reference(x, w_q, w_k)),
                "You returned the attention weights (after a softmax). This question stops "
                "earlier: return the scaled scores Q K^T / sqrt(d_k) themselves.",
            ),
        ),
        hint="Q = x @ w_q and K = x @ w_k are (n, d_k); the scores are Q @ K.T / sqrt(d_k), where "
        "d_k = w_q.shape[1].",
        # No course helper returns raw scores, so nothing to forbid here.
        traits=lambda x, w_q, w_k: ["n != d_k"] if x.shape[0] != w_q.shape[1] else [],
    )
)

# --- q01_softmax -------------------------------------------------------------------------------


def _softmax_reference(scores):
    return _stable_softmax(np.asarray(scores, dtype=float), axis=-1)


def _softmax_cases(rng):
    """Four cases, each catching different slips:

    1. ordinary square scores: a missing keepdims broadcasts the wrong way without an error;
    2. rows of very different scale (around 800, around 0, around -300): exp(800) overflows
       without a shift, and one shift for the whole matrix underflows the lower rows to 0 / 0;
    3. masked scores (-inf above the diagonal, every row keeps its diagonal);
    4. a rectangular matrix (more keys than queries).
    """
    ordinary = rng.normal(size=(4, 4)) * 2  # (n_q, n_k)
    scales = np.array([[800.0], [0.0], [-300.0]])
    mixed = scales + rng.normal(size=(3, 5)) * 3  # (n_q, n_k)
    masked = rng.normal(size=(4, 4))
    masked[np.triu_indices(4, k=1)] = -np.inf  # a causal pattern: every row keeps its diagonal
    wide = rng.normal(size=(2, 6)) * 2
    return [(ordinary,), (mixed,), (masked,), (wide,)]


def _softmax_global_max(s):
    s = np.asarray(s, dtype=float)
    e = np.exp(s - s.max())  # one maximum for the whole matrix
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_no_shift(s):
    e = np.exp(np.asarray(s, dtype=float))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_sum_without_keepdims(s):
    s = np.asarray(s, dtype=float)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)  # (n_q,) lines up with the columns


def _softmax_max_without_keepdims(s):
    s = np.asarray(s, dtype=float)
    m = s.max(axis=-1)  # (n_q,) lines up with the columns
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_inf_to_zero(s):
    s = np.asarray(s, dtype=float)
    s = np.where(np.isinf(s), 0.0, s)  # "clean up" the -inf first
    return _stable_softmax(s)


def _softmax_mean_shift(s):
    s = np.asarray(s, dtype=float)
    e = np.exp(s - s.mean(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_traits(scores):
    s = np.asarray(scores)
    return (["mask"] if np.isneginf(s).any() else []) + (
        ["rectangular"] if s.shape[0] != s.shape[1] else []
    )


def _softmax_divided_by_max(s):
    s = np.asarray(s, dtype=float)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.max(axis=-1, keepdims=True)


register(
    Question(
        grade_id="q01_softmax",
        assignment=ASSIGNMENT,
        points=2,
        kind="function",
        prompt="Implement softmax_over_keys(scores): turn each row of an (n_q, n_k) score matrix into "
        "weights that are >= 0 and sum to 1, without overflow for large scores; -inf entries "
        "get weight 0.",
        reference=_softmax_reference,
        cases=_softmax_cases,
        mistakes=(
            Mistake(
                "query axis",
                lambda s: _stable_softmax(np.asarray(s, dtype=float), axis=0),
                QUERY_AXIS_HINT,
            ),
            Mistake(
                "whole matrix",
                lambda s: _stable_softmax(np.asarray(s, dtype=float).ravel()).reshape(np.shape(s)),
                "You normalised the whole matrix at once, so all entries together sum to 1. Each row "
                "(one query) must sum to 1 on its own: sum with axis=-1, keepdims=True.",
            ),
            Mistake(
                "sum without keepdims",
                _softmax_sum_without_keepdims,
                "You divided by e.sum(axis=-1) without keepdims=True. That gives a 1-D array of row "
                "sums, and NumPy lines it up with the columns, so entry (i, j) is divided by row "
                "j's sum. Keep the axis: e.sum(axis=-1, keepdims=True).",
            ),
            Mistake(
                "max without keepdims",
                _softmax_max_without_keepdims,
                "You subtracted scores.max(axis=-1) without keepdims=True. That 1-D array of row "
                "maxima lines up with the columns, so each column is shifted by a different row's "
                "maximum, which changes the result. Keep the axis: max(axis=-1, keepdims=True).",
            ),
            Mistake(
                "divided by the maximum",
                _softmax_divided_by_max,
                "You divided by each row's largest exponential, so the largest weight is 1 and the "
                "rows sum to more than 1. Divide by the row's sum instead.",
            ),
            Mistake("global maximum", _softmax_global_max, GLOBAL_MAX_HINT),
            Mistake(
                "-inf replaced by 0",
                _softmax_inf_to_zero,
                "Your blocked entries get weight: you replaced -inf by 0 (or by a finite number) "
                "before the softmax. A -inf score means 'may not attend': exp(-inf) = 0, so "
                "keep the -inf and only make sure the row's maximum you subtract is finite.",
            ),
            Mistake(
                "shifted by the mean",
                _softmax_mean_shift,
                "You subtracted each row's mean instead of its maximum. A row with a -inf entry "
                "has mean -inf, and -inf - (-inf) is NaN; with very large scores exp can still "
                "overflow. Subtract the row's maximum: s.max(axis=-1, keepdims=True).",
            ),
            Mistake(
                "no shift",
                _softmax_no_shift,
                "exp overflowed: np.exp(800) is infinite in float64, and inf / inf is NaN. Subtract "
                "each row's maximum before exponentiating (it does not change the result): "
                "scores - scores.max(axis=-1, keepdims=True).",
            ),
        ),
        hint="Subtract each row's maximum first (s - s.max(axis=-1, keepdims=True)), exponentiate, "
        "then divide by the row sums (axis=-1, keepdims=True). Subtracting the maximum changes "
        "nothing mathematically and keeps exp from overflowing.",
        forbidden=(
            "mha_helpers.attention.softmax",
            "scipy.special.softmax",
            "torch.softmax",
            "torch.nn.functional.softmax",
            "jax.nn.softmax",
        ),
        traits=_softmax_traits,
    )
)

# --- q01_masked_attention ----------------------------------------------------------------------


def _attention_reference(q, k, v, mask):
    scores = q @ k.T / np.sqrt(q.shape[-1])  # (n_q, n_k)
    scores = np.where(mask, scores, -np.inf)  # blocked keys: -inf before the softmax
    weights = _stable_softmax(scores, axis=-1)  # (n_q, n_k), rows sum to 1
    return weights @ v, weights  # (n_q, d_v), (n_q, n_k)


def _random_mask(rng, n_q, n_k):
    """Every row allows some keys and blocks some, and every key is allowed for some query: so
    the mask read the wrong way round, or a softmax over the queries, still gives finite,
    recognisable weights."""
    i, j = np.indices((n_q, n_k))
    mask = ((i + j) % 2 == 0) | (rng.random((n_q, n_k)) < 0.3)
    mask[np.arange(n_q), (np.arange(n_q) + 1) % n_k] = False
    return mask


def _attention_cases(rng):
    """A rectangular case with a random mask first, then two causal cases.

    d_k, d_v and the number of tokens differ in every case, so scaling by the wrong width is
    always visible.
    """
    cases = []
    for n_q, n_k, d_k, d_v, kind in [
        (2, 5, 4, 3, "random"),
        (3, 3, 4, 6, "causal"),
        (5, 5, 8, 2, "causal"),
        # one property at a time, from a square case with d_k = d_v and a mask that blocks
        # nothing: then the mask alone, then d_v alone
        (4, 4, 4, 4, "open"),
        (4, 4, 4, 4, "causal"),
        (4, 4, 4, 6, "open"),
    ]:
        q = rng.normal(size=(n_q, d_k))
        k = rng.normal(size=(n_k, d_k))
        v = rng.normal(size=(n_k, d_v))
        if kind == "causal":
            mask = np.tril(np.ones((n_q, n_k), dtype=bool))  # (n_q, n_k)
        elif kind == "open":
            mask = np.ones((n_q, n_k), dtype=bool)  # blocks nothing
        else:
            mask = _random_mask(rng, n_q, n_k)
        cases.append((q, k, v, mask))
    return cases


def _attention_traits(q, k, v, mask):
    return (
        (["mask"] if not np.all(mask) else [])
        + (["rectangular"] if q.shape[0] != k.shape[0] else [])
        + (["d_k != d_v"] if q.shape[-1] != v.shape[-1] else [])
    )


def _scores(q, k, width=None):
    return q @ k.T / np.sqrt(q.shape[-1] if width is None else width)


def _masked_after_softmax(q, k, v, mask):
    w = _stable_softmax(_scores(q, k)) * mask
    return w @ v, w


def _masked_with_zero(q, k, v, mask):
    w = _stable_softmax(np.where(mask, _scores(q, k), 0.0))
    return w @ v, w


def _float_mask_added(q, k, v, mask):
    w = _stable_softmax(_scores(q, k) + np.asarray(mask, dtype=float))
    return w @ v, w


def _mask_inverted(q, k, v, mask):
    w = _stable_softmax(np.where(mask, -np.inf, _scores(q, k)))
    return w @ v, w


def _mask_ignored(q, k, v, mask):
    w = _stable_softmax(_scores(q, k))
    return w @ v, w


def _query_axis(q, k, v, mask):
    w = _stable_softmax(np.where(mask, _scores(q, k), -np.inf), axis=0)
    return w @ v, w


def _scaled_by(width):
    def wrong(q, k, v, mask):
        w = _stable_softmax(np.where(mask, _scores(q, k, width(q, k, v)), -np.inf))
        return w @ v, w

    return wrong


SQRT_N_HINT = (
    "You scaled by the square root of the number of tokens (q.shape[0] or k.shape[0]). "
    "Divide by sqrt(d_k), the width of a query: q.shape[-1]."
)


def _swapped_tuple(q, k, v, mask):
    out, w = _attention_reference(q, k, v, mask)
    return w, out


register(
    Question(
        grade_id="q01_masked_attention",
        assignment=ASSIGNMENT,
        points=4,
        kind="function",
        prompt="Implement masked_attention(q, k, v, mask) for one head: q (n_q, d_k), k (n_k, d_k), "
        "v (n_k, d_v), mask boolean (n_q, n_k) with True = may attend. Return "
        "(output (n_q, d_v), weights (n_q, n_k)).",
        reference=_attention_reference,
        cases=_attention_cases,
        extra={"outputs": ["output", "weights"]},
        mistakes=(
            Mistake("masked after softmax", _masked_after_softmax, MASK_AFTER_SOFTMAX_HINT),
            Mistake(
                "masked with 0",
                _masked_with_zero,
                "You replaced blocked scores with 0, and exp(0) = 1, so blocked keys still get weight. "
                "Use -np.inf: exp(-inf) = 0.",
            ),
            Mistake(
                "float mask added",
                _float_mask_added,
                "You added the 0/1 mask to the scores. Adding 0 or 1 only shifts scores a little and "
                "blocks nothing; use the boolean mask to put -inf where it is False.",
            ),
            Mistake("mask inverted", _mask_inverted, MASK_POLARITY_HINT),
            Mistake(
                "mask ignored",
                _mask_ignored,
                "Your weights are not 0 on the blocked keys: the mask was not applied. Put -inf "
                "where the mask is False, before the softmax.",
            ),
            Mistake("softmax over queries", _query_axis, QUERY_AXIS_HINT),
            Mistake(
                "scaled by sqrt(d_v)",
                _scaled_by(lambda q, k, v: v.shape[-1]),
                "You scaled by sqrt(d_v), the width of the values. The scores are dot products of "
                "d_k-wide queries and keys: divide by sqrt(q.shape[-1]).",
            ),
            Mistake("scaled by sqrt(n_k)", _scaled_by(lambda q, k, v: k.shape[0]), SQRT_N_HINT),
            Mistake("scaled by sqrt(n_q)", _scaled_by(lambda q, k, v: q.shape[0]), SQRT_N_HINT),
            Mistake(
                "not scaled",
                _scaled_by(lambda q, k, v: 1.0),
                "You forgot the scale: divide the scores by sqrt(d_k) before masking.",
            ),
            Mistake(
                "(weights, output)",
                _swapped_tuple,
                "You returned (weights, output); the question asks for (output, weights), in that "
                "order.",
            ),
        ),
        hint="scores = q @ k.T / sqrt(d_k); put -inf where mask is False; softmax over the last axis "
        "(subtract the row max first); output = weights @ v. Return (output, weights).",
        forbidden=(
            "mha_helpers.attention.scaled_dot_product_attention",
            "mha_helpers.heads.multi_head_attention",
            "mha_helpers.heads.grouped_query_attention",
            "torch.nn.functional.scaled_dot_product_attention",
        ),
        traits=_attention_traits,
    )
)

# --- q01_one_opinion (written) -----------------------------------------------------------------

register(
    Question(
        grade_id="q01_one_opinion",
        assignment=ASSIGNMENT,
        points=2,
        kind="manual",
        prompt="In two or three sentences: the token 'sat' needs both who sat ('cat') and where "
        "('mat'). Why can one attention head not deliver both independently of each other, and "
        "what would two heads change?",
        extra={
            "criteria": (
                "1 point: one head's weights sum to 1, so 'cat' and 'mat' compete for the same "
                "weight and their values are averaged into one vector",
                "1 point: two heads have independent weights (each can attend fully to one "
                "word) and their outputs stay in separate features of the concatenation",
            )
        },
    )
)
