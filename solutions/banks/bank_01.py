"""Questions for exercise 01: single-head self-attention (``solutions/01_recap_self_attention.ipynb``).

Lesson: ``notebooks/01_recap_self_attention.ipynb``. Four questions, 10 points, 8 of them graded
automatically:

* ``q01_scores`` (2): project queries and keys, then scale the scores by 1/sqrt(d_k);
* ``q01_softmax`` (2): a numerically stable softmax over the key axis;
* ``q01_masked_attention`` (4): masked softmax attention for one head, returning
  ``(output, weights)``;
* ``q01_one_opinion`` (2): why one attention pattern per token is limiting, graded by hand.

Every mistake below is the classic wrong version, written out, so the self-check can say which
slip the learner made instead of only "wrong values".
"""

from __future__ import annotations

import numpy as np

from mha_helpers.grading.questions import Mistake, Question, register

ASSIGNMENT = "01_recap_self_attention"

__all__ = ["ASSIGNMENT"]


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
    """Sizes chosen so that n, d_k and d_model all differ: a wrong width cannot pass by luck."""
    cases = []
    for n, d_model, d_k in [(3, 8, 4), (5, 12, 3), (2, 10, 6)]:
        x = rng.normal(size=(n, d_model))
        w_q = rng.normal(size=(d_model, d_k)) / np.sqrt(d_model)
        w_k = rng.normal(size=(d_model, d_k)) / np.sqrt(d_model)
        cases.append((x, w_q, w_k))
    return cases


register(Question(
    grade_id="q01_scores",
    assignment=ASSIGNMENT,
    points=2,
    kind="function",
    prompt="Implement attention_scores(x, w_q, w_k): project x to queries and keys and return the "
           "scaled score matrix Q K^T / sqrt(d_k), shape (n, n), rows = queries.",
    reference=_scores_reference,
    cases=_scores_cases,
    mistakes=(
        Mistake("sqrt(d_model)", lambda x, w_q, w_k: (x @ w_q) @ (x @ w_k).T / np.sqrt(x.shape[1]),
                "You divided by sqrt(d_model), the width of x. The dot products are sums over the "
                "d_k features of a query and a key, so divide by sqrt(d_k) = sqrt(w_q.shape[1])."),
        Mistake("not scaled", lambda x, w_q, w_k: (x @ w_q) @ (x @ w_k).T,
                "The products are right but not scaled: divide the scores by sqrt(d_k)."),
        Mistake("divided by d_k", lambda x, w_q, w_k: (x @ w_q) @ (x @ w_k).T / w_q.shape[1],
                "You divided by d_k itself; the scale is 1 / sqrt(d_k)."),
        Mistake("sqrt(n)", lambda x, w_q, w_k: (x @ w_q) @ (x @ w_k).T / np.sqrt(x.shape[0]),
                "You divided by the square root of the number of tokens. The scale depends on the "
                "width of a query, d_k = w_q.shape[1], not on how many tokens there are."),
        Mistake("transposed", lambda x, w_q, w_k: (x @ w_k) @ (x @ w_q).T / np.sqrt(w_q.shape[1]),
                "Your matrix is transposed: rows must be queries and columns keys, so compute "
                "Q @ K.T, not K @ Q.T."),
    ),
    hint="Q = x @ w_q and K = x @ w_k are (n, d_k); the scores are Q @ K.T / sqrt(d_k), where "
         "d_k = w_q.shape[1].",
))

# --- q01_softmax -------------------------------------------------------------------------------


def _softmax_reference(scores):
    return _stable_softmax(np.asarray(scores, dtype=float), axis=-1)


def _softmax_cases(rng):
    """Ordinary scores, then scores large enough to overflow a naive exp, then masked scores."""
    ordinary = rng.normal(size=(3, 4)) * 2  # (n_q, n_k)
    large = rng.normal(size=(4, 5)) * 50 + 800  # exp(800) overflows float64
    masked = rng.normal(size=(4, 4))
    masked[np.triu_indices(4, k=1)] = -np.inf  # a causal pattern: every row keeps its diagonal
    return [(ordinary,), (large,), (masked,)]


register(Question(
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
        Mistake("query axis", lambda s: _stable_softmax(np.asarray(s, dtype=float), axis=0),
                "Your columns sum to 1, not your rows: you normalised over the query axis (axis=0). "
                "Each query distributes its attention over the keys: use axis=-1."),
        Mistake("whole matrix", lambda s: _stable_softmax(np.asarray(s, dtype=float).ravel()).reshape(np.shape(s)),
                "You normalised the whole matrix at once, so all entries together sum to 1. Each row "
                "(one query) must sum to 1 on its own: sum with axis=-1, keepdims=True."),
    ),
    hint="Subtract each row's maximum first (s - s.max(axis=-1, keepdims=True)), exponentiate, "
         "then divide by the row sums (axis=-1, keepdims=True). Subtracting the maximum changes "
         "nothing mathematically and keeps exp from overflowing.",
    forbidden=("mha_helpers.attention.softmax", "scipy.special.softmax"),
))

# --- q01_masked_attention ----------------------------------------------------------------------


def _attention_reference(q, k, v, mask):
    scores = q @ k.T / np.sqrt(q.shape[-1])  # (n_q, n_k)
    scores = np.where(mask, scores, -np.inf)  # blocked keys: -inf before the softmax
    weights = _stable_softmax(scores, axis=-1)  # (n_q, n_k), rows sum to 1
    return weights @ v, weights  # (n_q, d_v), (n_q, n_k)


def _attention_cases(rng):
    """A causal case, a rectangular case with a random mask, a larger causal case.

    d_k, d_v and the number of tokens differ in every case, so scaling by the wrong width is
    always visible; every row of every mask allows at least one key.
    """
    cases = []
    for n_q, n_k, d_k, d_v, kind in [(3, 3, 4, 6, "causal"), (2, 5, 4, 3, "random"),
                                     (5, 5, 8, 2, "causal")]:
        q = rng.normal(size=(n_q, d_k))
        k = rng.normal(size=(n_k, d_k))
        v = rng.normal(size=(n_k, d_v))
        if kind == "causal":
            mask = np.tril(np.ones((n_q, n_k), dtype=bool))  # (n_q, n_k)
        else:
            mask = rng.random((n_q, n_k)) < 0.6
            mask[np.arange(n_q), rng.integers(0, n_k, size=n_q)] = True  # no row fully blocked
            mask[:, -1] = False  # and at least one blocked key per row
            mask[np.arange(n_q), 0] = True
        cases.append((q, k, v, mask))
    return cases


def _masked_after_softmax(q, k, v, mask):
    w = _stable_softmax(q @ k.T / np.sqrt(q.shape[-1])) * mask
    return w @ v, w


def _masked_with_zero(q, k, v, mask):
    w = _stable_softmax(np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), 0.0))
    return w @ v, w


def _float_mask_added(q, k, v, mask):
    w = _stable_softmax(q @ k.T / np.sqrt(q.shape[-1]) + np.asarray(mask, dtype=float))
    return w @ v, w


def _query_axis(q, k, v, mask):
    w = _stable_softmax(np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf), axis=0)
    return w @ v, w


def _scaled_by(width):
    def wrong(q, k, v, mask):
        w = _stable_softmax(np.where(mask, q @ k.T / np.sqrt(width(q, k, v)), -np.inf))
        return w @ v, w
    return wrong


register(Question(
    grade_id="q01_masked_attention",
    assignment=ASSIGNMENT,
    points=4,
    kind="function",
    prompt="Implement masked_attention(q, k, v, mask) for one head: q (n_q, d_k), k (n_k, d_k), "
           "v (n_k, d_v), mask boolean (n_q, n_k) with True = may attend. Return "
           "(output (n_q, d_v), weights (n_q, n_k)).",
    reference=_attention_reference,
    cases=_attention_cases,
    mistakes=(
        Mistake("masked after softmax", _masked_after_softmax,
                "You masked after the softmax: blocked keys get weight 0, but the rows no longer sum "
                "to 1. Set blocked scores to -inf before the softmax (np.where(mask, scores, -np.inf))."),
        Mistake("masked with 0", _masked_with_zero,
                "You replaced blocked scores with 0, and exp(0) = 1, so blocked keys still get weight. "
                "Use -np.inf: exp(-inf) = 0."),
        Mistake("float mask added", _float_mask_added,
                "You added the 0/1 mask to the scores. Adding 0 or 1 only shifts scores a little and "
                "blocks nothing; use the boolean mask to put -inf where it is False."),
        Mistake("softmax over queries", _query_axis,
                "Your softmax runs over the query axis (axis=0): columns sum to 1 instead of rows. "
                "Each query's weights over the keys must sum to 1: use axis=-1."),
        Mistake("scaled by sqrt(d_v)", _scaled_by(lambda q, k, v: v.shape[-1]),
                "You scaled by sqrt(d_v), the width of the values. The scores are dot products of "
                "d_k-wide queries and keys: divide by sqrt(q.shape[-1])."),
        Mistake("scaled by sqrt(n)", _scaled_by(lambda q, k, v: k.shape[0]),
                "You scaled by the square root of the number of tokens (q.shape[0] or k.shape[0]). "
                "Divide by sqrt(d_k), the width of a query: q.shape[-1]."),
        Mistake("not scaled", _scaled_by(lambda q, k, v: 1.0),
                "You forgot the scale: divide the scores by sqrt(d_k) before masking."),
    ),
    hint="scores = q @ k.T / sqrt(d_k); put -inf where mask is False; softmax over the last axis "
         "(subtract the row max first); output = weights @ v. Return (output, weights).",
    forbidden=("mha_helpers.attention.scaled_dot_product_attention",
               "mha_helpers.heads.multi_head_attention"),
))

# --- q01_one_opinion (written) -----------------------------------------------------------------

register(Question(
    grade_id="q01_one_opinion",
    assignment=ASSIGNMENT,
    points=2,
    kind="manual",
    prompt="In two or three sentences: the token 'sat' needs both who sat ('cat') and where "
           "('mat'). Why can one attention head not deliver both at full strength, and what would "
           "two heads change?",
))
