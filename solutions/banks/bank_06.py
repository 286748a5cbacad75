"""Questions for exercise 06: what heads learn (``solutions/06_what_heads_learn.ipynb``).

Lesson: ``notebooks/06_what_heads_learn.ipynb``. Five questions, 12 points, all graded
automatically:

* ``q06_head_backward`` (4): the backward pass of one causal attention head, ``(d_q, d_k, d_v)``;
* ``q06_measure_roles`` (3): each head's mean attention on the previous and the first token;
* ``q06_roles_seed7`` (2): the roles the four heads of a model trained with seed 7 took;
* ``q06_remove_head`` (2): prune a head by clearing its rows of ``w_o``;
* ``q06_prune_prediction`` (1): predict what removing one of that model's four heads does.

Each mistake is the classic wrong version, written out, so the check can name the slip.
"""

from __future__ import annotations

import numpy as np

from mha_helpers.attention import causal_mask
from mha_helpers.grading import Mistake, Question, register

ASSIGNMENT = "06_what_heads_learn"

__all__ = ["ASSIGNMENT"]


# --- q06_head_backward ---------------------------------------------------------------------


def _head_backward_reference(q, k, v, d_out):
    """Causal head: (n, d_k), (n, d_k), (n, d_v), (n, d_v) -> (d_q, d_k, d_v), in plain NumPy.

    tests/test_bank_06.py checks it against the course's ``attention_backward``, which an
    answer may not call."""
    return _backward_variant(q, k, v, d_out)


def _head_backward_cases(rng):
    """n, d_k and d_v differ in every case, so a transposed or mis-scaled product shows."""
    cases = []
    for n, d_k, d_v in [(4, 3, 2), (5, 2, 6), (3, 4, 5)]:
        cases.append(
            (
                rng.normal(size=(n, d_k)),
                rng.normal(size=(n, d_k)),
                rng.normal(size=(n, d_v)),
                rng.normal(size=(n, d_v)),
            )
        )
    return cases


def _weights(q, k, mask="before"):
    """Causal attention weights; ``mask`` is "before" the softmax (right), "after" it (the
    classic slip: rows no longer sum to 1) or "none"."""
    scores = q @ k.T / np.sqrt(q.shape[1])  # (n, n)
    allowed = causal_mask(q.shape[0])  # (n, n)
    if mask == "before":
        scores = np.where(allowed, scores, -np.inf)
    elif mask == "zero":
        scores = np.where(allowed, scores, 0.0)
    scores = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(scores)
    w = e / e.sum(axis=1, keepdims=True)  # (n, n)
    return np.where(allowed, w, 0.0) if mask == "after" else w


def _backward_variant(
    q, k, v, d_out, *, row_sum=True, scale=True, mask="before", dv_t=True, dk_t=True, swap=False
):
    w = _weights(q, k, mask)  # (n, n)
    d_w = d_out @ v.T  # (n, n)
    d_v = w.T @ d_out if dv_t else w @ d_out  # (n, d_v)
    d_s = w * (d_w - (d_w * w).sum(axis=1, keepdims=True)) if row_sum else w * d_w
    if scale:
        d_s = d_s / np.sqrt(q.shape[1])
    d_q = d_s @ k  # (n, d_k)
    d_k = d_s.T @ q if dk_t else d_s @ q  # (n, d_k)
    if swap:
        d_q, d_k = d_k, d_q
    return d_q, d_k, d_v


register(
    Question(
        grade_id="q06_head_backward",
        assignment=ASSIGNMENT,
        points=4,
        kind="function",
        prompt="Implement head_backward(q, k, v, d_out) for one causal head, out = softmax(mask(q k^T / "
        "sqrt(d_k))) v: return (d_q, d_k, d_v), the gradients of sum(out * d_out).",
        reference=_head_backward_reference,
        cases=_head_backward_cases,
        extra={"outputs": ["d_q", "d_k", "d_v"]},
        mistakes=(
            Mistake(
                "softmax without the row sum",
                lambda q, k, v, d: _backward_variant(q, k, v, d, row_sum=False),
                "d_v is right but d_q and d_k are not: through the softmax, d_scores = weights * "
                "(d_weights - row sum of d_weights * weights). Each weight depends on every score "
                "in its row, so the row-sum term is needed.",
            ),
            Mistake(
                "not scaled",
                lambda q, k, v, d: _backward_variant(q, k, v, d, scale=False),
                "The scores were divided by sqrt(d_k) in the forward pass, so d_scores must be "
                "divided by sqrt(d_k) too before computing d_q and d_k.",
            ),
            Mistake(
                "no causal mask",
                lambda q, k, v, d: _backward_variant(q, k, v, d, mask="none"),
                "Recompute the weights exactly as the forward pass did: with the causal mask "
                "(-inf above the diagonal before the softmax).",
            ),
            Mistake(
                "mask after the softmax",
                lambda q, k, v, d: _backward_variant(q, k, v, d, mask="after"),
                "You masked after the softmax: zeroing the future weights of a row that was "
                "normalised over all keys leaves rows that no longer sum to 1. Put -inf in the "
                "blocked scores before the softmax, then each row's weights over the allowed keys "
                "sum to 1.",
            ),
            Mistake(
                "d_v not transposed",
                lambda q, k, v, d: _backward_variant(q, k, v, d, dv_t=False),
                "out = weights @ v, so d_v = weights.T @ d_out (key j collects from every query "
                "that attended to it), not weights @ d_out.",
            ),
            Mistake(
                "d_k not transposed",
                lambda q, k, v, d: _backward_variant(q, k, v, d, dk_t=False),
                "scores = q @ k.T, so d_k = d_scores.T @ q (rows of d_scores are queries), not "
                "d_scores @ q.",
            ),
            Mistake(
                "mask filled with 0",
                lambda q, k, v, d: _backward_variant(q, k, v, d, mask="zero"),
                "You filled the blocked scores with 0 instead of -inf, so future keys still get "
                "weight (exp(0) = 1). Recompute the weights as the forward pass did: -inf above "
                "the diagonal, before the softmax.",
            ),
            Mistake(
                "d_q and d_k swapped",
                lambda q, k, v, d: _backward_variant(q, k, v, d, swap=True),
                "Your d_q and d_k are swapped: d_q = d_scores @ k (each query collects from the "
                "keys in its row) and d_k = d_scores.T @ q. Return them in the order (d_q, d_k, "
                "d_v).",
            ),
        ),
        hint="Recompute the weights, then go backward: d_weights = d_out @ v.T, d_v = weights.T @ "
        "d_out, d_scores = weights * (d_weights - row sums of d_weights * weights) / sqrt(d_k), "
        "d_q = d_scores @ k, d_k = d_scores.T @ q.",
        forbidden=(
            "mha_helpers.backward.attention_backward",
            "mha_helpers.backward.softmax_backward",
            "mha_helpers.backward.mha_backward",
            "mha_helpers.training.loss_and_grads",
        ),
    )
)


# --- q06_measure_roles ---------------------------------------------------------------------


def _measure_roles_reference(weights):
    """(batch, h, n, n) -> (h, 2): mean A[t, t-1] and mean A[t, 0] over t >= 2 and the batch.

    tests/test_bank_06.py checks it against the course's ``role_scores``."""
    return _roles_variant(weights)


def _random_attention(rng, batch, h, n):
    scores = rng.normal(scale=2.0, size=(batch, h, n, n))
    scores = np.where(causal_mask(n), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # (batch, h, n, n), rows sum to 1


def _measure_roles_cases(rng):
    return [(_random_attention(rng, b, h, n),) for b, h, n in [(3, 2, 6), (2, 3, 5), (4, 1, 7)]]


def _roles_variant(weights, start=2, offset=1, transpose=False, total=False, swapped=False):
    w = weights.swapaxes(-1, -2) if transpose else weights
    t = np.arange(start, w.shape[-1])
    prev, first = w[:, :, t, t - offset], w[:, :, t, 0]  # (batch, h, len(t)) each
    reduce = np.sum if total else np.mean
    columns = [reduce(prev, axis=(0, 2)), reduce(first, axis=(0, 2))]  # (h,) each
    return np.stack(columns[::-1] if swapped else columns, axis=1)  # (h, 2)


register(
    Question(
        grade_id="q06_measure_roles",
        assignment=ASSIGNMENT,
        points=3,
        kind="function",
        prompt="Implement measure_roles(weights): for weights (batch, h, n, n) return (h, 2), each "
        "head's mean attention on the previous token and on the first token, over t >= 2.",
        reference=_measure_roles_reference,
        cases=_measure_roles_cases,
        mistakes=(
            Mistake(
                "from t = 1",
                lambda w: _roles_variant(w, start=1),
                "Start at t = 2: at t = 1 the previous token *is* the first token, so that row "
                "cannot tell the two roles apart (and it has no target in the task).",
            ),
            Mistake(
                "from t = 0",
                lambda w: _roles_variant(w, start=0),
                "Start at t = 2. Position 0 has no previous token at all (t - 1 = -1 wraps "
                "around to the last column in NumPy).",
            ),
            Mistake(
                "attention to itself",
                lambda w: _roles_variant(w, offset=0),
                "The previous token of query t is key t - 1, one column left of the diagonal: "
                "weights[..., t, t - 1], not weights[..., t, t].",
            ),
            Mistake(
                "transposed",
                lambda w: _roles_variant(w, transpose=True),
                "Rows of an attention matrix are queries and columns are keys: the weight query t "
                "puts on key t - 1 is weights[..., t, t - 1].",
            ),
            Mistake(
                "summed",
                lambda w: _roles_variant(w, total=True),
                "Report the mean over the batch and the positions, not the sum: a score of 1 "
                "should mean 'all of its attention, every time'.",
            ),
            Mistake(
                "averaged over heads",
                lambda w: _roles_variant(w).mean(axis=0),
                "You averaged over the heads too, which leaves two numbers for the whole layer. "
                "The roles are per head: average over the batch and the positions only (axes 0 "
                "and 2), keeping one row per head, (h, 2).",
            ),
            Mistake(
                "columns swapped",
                lambda w: _roles_variant(w, swapped=True),
                "Right numbers, swapped columns: column 0 is the previous-token score "
                "(weights[..., t, t - 1]) and column 1 the first-token score (weights[..., t, 0]).",
            ),
        ),
        hint="With t = np.arange(2, n): weights[:, :, t, t - 1] and weights[:, :, t, 0] are "
        "(batch, h, n - 2); average each over axes 0 and 2 and stack them as columns.",
        forbidden=("mha_helpers.tasks.role_scores", "mha_helpers.tasks.head_roles"),
        traits=lambda weights: (
            (["several heads"] if weights.shape[1] > 1 else [])
            + (["batch"] if weights.shape[0] > 1 else [])
        ),
    )
)


# --- q06_roles_seed7 -----------------------------------------------------------------------

# Measured in solutions/06_what_heads_learn.ipynb (vote-table task, h = 4, d_model = 32, 300
# steps, seed 7: scores near 1 and 0 for every head, so the roles do not depend on the machine)
# and pinned by tests/test_bank_06.py::test_seed_7_roles_match_the_exercise_bank. Four heads, so
# the lesson's two-head tables do not give it away (one of 16 patterns).
ROLES_SEED_7 = ("first", "previous", "first", "previous")

register(
    Question(
        grade_id="q06_roles_seed7",
        assignment=ASSIGNMENT,
        points=2,
        kind="value",
        prompt="For the four-head model trained with seed 7, give the role of heads 0, 1, 2 and 3 "
        "as a tuple of 'previous' / 'first'.",
        expected=ROLES_SEED_7,
        mistakes=(
            Mistake(
                "every role swapped",
                tuple("previous" if r == "first" else "first" for r in ROLES_SEED_7),
                "Every head has the other role: you named each head by its smaller score, or read "
                "the columns the wrong way round. Column 0 of measure_roles is the previous-token "
                "score, column 1 the first-token score; the larger one names the head.",
            ),
            Mistake(
                "all previous",
                ("previous",) * 4,
                "The heads took different roles: compare the two columns of each head's row, "
                "measure every head and name each by its larger score.",
            ),
            Mistake(
                "all first",
                ("first",) * 4,
                "The heads took different roles: compare the two columns of each head's row, "
                "measure every head and name each by its larger score.",
            ),
        ),
        hint="Apply measure_roles to weights7 (one row per head, four rows) and name each head by "
        "its larger score: column 0 is 'previous', column 1 is 'first'.",
    )
)


# --- q06_remove_head -----------------------------------------------------------------------


def _remove_head_reference(w_o, head, num_heads):
    out = np.array(w_o, dtype=float)
    d_head = out.shape[0] // num_heads
    out[head * d_head : (head + 1) * d_head] = 0.0  # the head's rows of w_o
    return out


def _remove_head_cases(rng):
    """Random w_o (no zero rows, so clearing any row changes it). The first two cases share
    one w_o, as a notebook removing two heads in a row does: an answer that clears rows of its
    input in place changes the second case's input (the grader reports it)."""
    shared = rng.normal(size=(8, 8))
    cases = [(shared, 0, 2), (shared, 1, 2)]
    for d_model, h in [(12, 3), (12, 4)]:
        cases.append((rng.normal(size=(d_model, d_model)), int(rng.integers(0, h)), h))
    cases.append((rng.normal(size=(6, 6)), 2, 3))  # the last head
    return cases


def _remove_columns(w_o, head, num_heads):
    out = np.array(w_o, dtype=float)
    d_head = out.shape[1] // num_heads
    out[:, head * d_head : (head + 1) * d_head] = 0.0
    return out


def _remove_width_h(w_o, head, num_heads):
    out = np.array(w_o, dtype=float)
    out[head * num_heads : (head + 1) * num_heads] = 0.0
    return out


def _remove_next_head(w_o, head, num_heads):
    out = np.array(w_o, dtype=float)
    d_head = out.shape[0] // num_heads
    out[(head + 1) * d_head : (head + 2) * d_head] = 0.0
    return out


def _keep_only_head(w_o, head, num_heads):
    out = np.zeros_like(np.asarray(w_o, dtype=float))
    d_head = out.shape[0] // num_heads
    out[head * d_head : (head + 1) * d_head] = np.asarray(w_o)[head * d_head : (head + 1) * d_head]
    return out


def _delete_rows(w_o, head, num_heads):
    d_head = np.shape(w_o)[0] // num_heads
    return np.delete(np.asarray(w_o, dtype=float), np.s_[head * d_head : (head + 1) * d_head], 0)


def _remove_interleaved(w_o, head, num_heads):
    out = np.array(w_o, dtype=float)
    out[head::num_heads] = 0.0
    return out


register(
    Question(
        grade_id="q06_remove_head",
        assignment=ASSIGNMENT,
        points=2,
        kind="function",
        prompt="Implement remove_head(w_o, head, num_heads): a copy of w_o (d_model, d_model) with the "
        "rows that read head `head`'s output set to 0.",
        reference=_remove_head_reference,
        cases=_remove_head_cases,
        mistakes=(
            Mistake(
                "columns",
                _remove_columns,
                "You cleared columns. In y = concat @ w_o the concatenated head outputs meet the "
                "*rows* of w_o: head i owns rows [i * d_head, (i + 1) * d_head). Clearing columns "
                "removes output features, which every head writes to.",
            ),
            Mistake(
                "width h",
                _remove_width_h,
                "The block has d_head = d_model // num_heads rows, not num_heads rows.",
            ),
            Mistake(
                "interleaved",
                _remove_interleaved,
                "Head i owns a contiguous block of rows, [i * d_head, (i + 1) * d_head), not every "
                "num_heads-th row (lesson 02: reshape to (n, h, d_head), then transpose).",
            ),
            Mistake(
                "the next head",
                _remove_next_head,
                "You cleared the block after the right one: head i's rows start at i * d_head "
                "(head 0 owns rows 0 .. d_head - 1), so count heads from 0.",
            ),
            Mistake(
                "kept only that head",
                _keep_only_head,
                "You kept only that head's rows and cleared all the others: the opposite. Clear "
                "head i's rows and keep every other head's.",
            ),
            Mistake(
                "rows deleted",
                _delete_rows,
                "You deleted the rows, so w_o no longer fits the concatenated heads "
                "(h * d_head features). Keep the shape and set the head's rows to 0.",
            ),
        ),
        hint="Head i owns one block of d_head rows of w_o (heads counted from 0): d_head = "
        "w_o.shape[0] // num_heads; copy w_o, then set rows head * d_head up to, not including, "
        "(head + 1) * d_head to 0.",
        forbidden=("mha_helpers.training.prune_head",),
    )
)


# --- q06_prune_prediction ------------------------------------------------------------------
# The same four-head seed-7 model as q06_roles_seed7 (measured in solutions/06_what_heads_learn.
# ipynb and pinned by tests/test_bank_06.py::test_seed_7_pruning_matches_the_prediction):
# removing any one head leaves an accuracy well below all four heads' and well above either
# vote alone ("b"; the options run from the highest accuracy to the lowest). The lesson
# removes one of TWO heads (the other vote alone, "c" here), so it does not give this away.

register(
    Question(
        grade_id="q06_prune_prediction",
        assignment=ASSIGNMENT,
        points=1,
        kind="value",
        prompt="Predict before measuring: removing ONE of the four heads of the seed-7 vote-table "
        "model leaves an accuracy (a) about as high as with all four heads, (b) clearly in "
        "between: well below all four heads, well above either vote alone, (c) about as high as "
        "the other vote alone, (d) about chance, 1/16.",
        expected="b",
        mistakes=(
            Mistake(
                "no change",
                "a",
                "No head takes over another's job after training: each head writes its own part "
                "of the answer through its own rows of W_O, and removing one changes no other "
                "head's weights, so what it wrote is simply missing. Run the measurement below "
                "to see how much that costs.",
            ),
            Mistake(
                "the other vote alone",
                "c",
                "That is what the lesson's two-head model did, where each head carried one whole "
                "vote. This model has four heads for the two votes, so removing one takes less "
                "than a whole vote away: the measurement below shows accuracy well above either "
                "vote alone, and well below all four heads.",
            ),
            Mistake(
                "chance",
                "d",
                "Three heads are still there and still bring their votes to the readout; about "
                "chance is what is left only when every head is removed (the measurement below "
                "removes all four too).",
            ),
        ),
        hint="Count how many heads are left to carry the two votes, and remember that removing "
        "one head changes no other head's weights.",
    )
)
