"""Questions for exercise 03: concatenate the heads, then project (``solutions/03_concatenate_and_project.ipynb``).

Lesson: ``notebooks/03_concatenate_and_project.ipynb``. Five questions, 10 points, 8 of them
graded automatically:

* ``q03_d_head`` (1): the width of one head for d_model 768 and 12 heads;
* ``q03_identity_output`` (1): the worked example's output when W_O is the identity;
* ``q03_concat_vs_average`` (2): multiple choice, why concatenating differs from averaging;
* ``q03_explain`` (2): written, graded by hand: what W_O does and does not let heads do (the
  sum over heads), and where heads do use each other's results;
* ``q03_concat_project`` (4): implement concatenate-then-project, checked on random inputs.

The merge slips (bare reshape, interleaved heads, heads as extra tokens...) get the same hints
as in exercise 02 (imported from bank_02).
"""

from __future__ import annotations

import numpy as np

from mha_helpers.grading import Mistake, Question, register

from .bank_02 import (
    BARE_MERGE_HINT,
    INTERLEAVED_MERGE_HINT,
    NO_PROJECTION_HINT,
    REVERSED_HEADS_HINT,
    TOKEN_AXIS_HINT,
    W_O_TRANSPOSED_HINT,
)

ASSIGNMENT = "03_concatenate_and_project"

PLUS_ADDS_ARRAYS = (
    "With NumPy arrays, + adds elementwise: np.array([1, 2]) + np.array([3, 4]) is "
    "[4, 6]. (On Python lists, + joins them.) To join arrays, use np.concatenate."
)

# --- q03_d_head ------------------------------------------------------------------------------

register(
    Question(
        grade_id="q03_d_head",
        assignment=ASSIGNMENT,
        points=1,
        kind="value",
        prompt="A model has d_model = 768 and 12 heads of equal width. How wide is one head?",
        expected=64,
        mistakes=(
            Mistake(
                "multiplied",
                768 * 12,
                "You multiplied. The heads share the model width between them: divide d_model by "
                "the number of heads.",
            ),
            Mistake(
                "inverted",
                12 / 768,
                "You divided the other way round: d_head = d_model / h, a whole number of features.",
            ),
            Mistake(
                "d_model",
                768,
                "768 is the width of the whole model; each of the 12 heads gets a slice.",
            ),
            Mistake(
                "Q, K and V together",
                3 * 64,
                "192 is three heads' worth of features (or one head's Q, K and V together). One "
                "head is d_model / h = 768 / 12 features wide.",
            ),
            Mistake(
                "number of heads",
                12,
                "12 is the number of heads. The question asks for the width of one head: the "
                "number of features each head gets, d_model / h.",
            ),
        ),
        hint="Each head gets an equal slice of the d_model features: d_head = d_model / h.",
        extra={"answer_type": "int"},  # a number of features: 64, not 64.0
    )
)

# --- q03_identity_output ----------------------------------------------------------------------

register(
    Question(
        grade_id="q03_identity_output",
        assignment=ASSIGNMENT,
        points=1,
        kind="value",
        prompt="Head outputs [1, 2] and [3, 4] are concatenated and multiplied by a 4 x 4 identity "
        "W_O. What is the output?",
        expected=[1.0, 2.0, 3.0, 4.0],
        mistakes=(
            Mistake(
                "original W",
                [4.0, 6.0, -2.0, -2.0],
                "That is the output of the lesson's mixing matrix. With the identity, each output "
                "feature copies exactly one input feature.",
            ),
            Mistake(
                "summed heads",
                [4.0, 6.0],
                "You added the two heads instead of placing them side by side (2 + 2 = 4 "
                "features). " + PLUS_ADDS_ARRAYS,
            ),
            Mistake(
                "averaged heads",
                [2.0, 3.0],
                "You averaged the two heads. Concatenation puts them side by side: 2 + 2 = 4 features.",
            ),
            Mistake("interleaved", [1.0, 3.0, 2.0, 4.0], INTERLEAVED_MERGE_HINT),
            Mistake("reversed heads", [3.0, 4.0, 1.0, 2.0], REVERSED_HEADS_HINT),
            Mistake(
                "one head only",
                [1.0, 2.0],
                "That is only the first head. Concatenation keeps every head: [1, 2] followed by "
                "[3, 4], four features.",
            ),
            Mistake(
                "heads as rows",
                [[1.0, 2.0], [3.0, 4.0]],
                "You stacked the heads as two rows (a (2, 2) array). Concatenation puts them side "
                "by side in ONE row of 4 features: np.concatenate([o0, o1]).",
            ),
        ),
        hint="Concatenate first ([1, 2] then [3, 4]); multiplying by the identity changes nothing.",
    )
)

# --- q03_concat_vs_average (multiple choice) -------------------------------------------------

register(
    Question(
        grade_id="q03_concat_vs_average",
        assignment=ASSIGNMENT,
        points=2,
        kind="value",
        prompt="Why does concatenating the heads differ from averaging them? Answer with one letter, "
        "a to d (the options are in the notebook).",
        expected="b",
        mistakes=(
            Mistake(
                "a",
                "a",
                "W_O only sees what it is given. Look at two different pairs of head outputs with "
                "the same average: after averaging they are one and the same vector, so no W_O can "
                "give them different outputs.",
            ),
            Mistake(
                "c",
                "c",
                "Rescaling does not bring anything back: h times the average is the sum of the "
                "heads, and swapping the two heads does not change their sum.",
            ),
            Mistake(
                "d",
                "d",
                "Each head's weights sum to one over the keys, inside that head; nothing is "
                "normalised across heads. Think about what W_O can still see after averaging.",
            ),
        ),
        hint="Answer with a single letter: 'a', 'b', 'c' or 'd'.",
    )
)

# --- q03_explain (written) -------------------------------------------------------------------

register(
    Question(
        grade_id="q03_explain",
        assignment=ASSIGNMENT,
        points=2,
        kind="manual",
        prompt="Lesson 03 shows concat(o_0, ..., o_{h-1}) W_O = sum_i o_i W_O^(i), where W_O^(i) is "
        "head i's block of d_head rows. In two or three sentences: can W_O let one head "
        "change what another head computes or contributes? Where in a Transformer can a "
        "head make use of what another head found?",
        extra={
            "criteria": (
                "1 point: no; each head's term o_i W_O^(i) depends only on its own output and "
                "its own rows of W_O, and W_O adds the terms up",
                "1 point: heads use each other's results after the sub-layer: the residual "
                "stream, the feed-forward sub-layer, or a later layer's queries, keys and values",
            )
        },
    )
)

# --- q03_concat_project -----------------------------------------------------------------------


def _heads_list(head_outputs):
    return [np.asarray(h, dtype=float) for h in head_outputs]


def _concat_project_reference(head_outputs, w_o):
    """(h, n, d_head) head outputs and (h * d_head, d_model) W_O -> (n, d_model)."""
    joined = np.concatenate(_heads_list(head_outputs), axis=-1)  # (n, h * d_head)
    return joined @ np.asarray(w_o, dtype=float)  # (n, d_model)


def _concat_project_cases(rng):
    """Four cases; the third has d_model != h * d_head, which is allowed, and the last one head
    (so the verdict can say "right with one head, wrong with several")."""
    cases = []
    sizes = [
        (2, 3, 4, 8),  # h, n, d_head, d_model: the lesson's sizes
        (int(rng.integers(3, 5)), int(rng.integers(2, 6)), int(rng.integers(2, 4)), None),
        (2, int(rng.integers(3, 5)), 3, None),
        (1, 3, 4, None),  # one head: the order of the axes cannot matter
    ]
    for k, (h, n, d_head, d_model) in enumerate(sizes):
        if d_model is None:
            d_model = h * d_head + (int(rng.integers(1, 3)) if k == 2 else 0)
        heads = rng.normal(size=(h, n, d_head))  # (h, n, d_head)
        w_o = rng.normal(size=(h * d_head, d_model)) / np.sqrt(h * d_head)  # (h * d_head, d_model)
        cases.append((heads, w_o))
    # the question allows a list of h arrays as well as one (h, n, d_head) array: the public
    # cases pass both, so an answer that only works on one of them cannot pass
    h, n, d_head = 3, int(rng.integers(2, 5)), 2
    heads = [rng.normal(size=(n, d_head)) for _ in range(h)]
    cases.append((heads, rng.normal(size=(h * d_head, h * d_head + 1)) / np.sqrt(h * d_head)))
    return cases


def _bare_reshape(head_outputs, w_o):
    heads = np.asarray(head_outputs, dtype=float)  # (h, n, d_head)
    h, n, d_head = heads.shape
    return heads.reshape(n, h * d_head) @ w_o  # same shape, tokens scrambled


def _interleaved(head_outputs, w_o):
    heads = np.stack(_heads_list(head_outputs), axis=-1)  # (n, d_head, h)
    n = heads.shape[0]
    return heads.reshape(n, -1) @ w_o  # head 0's feature 0, head 1's feature 0, ...


def _transposed_w_o(head_outputs, w_o):
    return np.concatenate(_heads_list(head_outputs), axis=-1) @ np.asarray(w_o).T


def _no_projection(head_outputs, w_o):
    return np.concatenate(_heads_list(head_outputs), axis=-1)


def _averaged(head_outputs, w_o):
    return np.mean(_heads_list(head_outputs), axis=0)  # (n, d_head)


def _summed(head_outputs, w_o):
    return np.sum(_heads_list(head_outputs), axis=0)  # (n, d_head)


def _token_axis(head_outputs, w_o):
    return np.concatenate(_heads_list(head_outputs), axis=0)  # (h * n, d_head)


def _reversed_heads(head_outputs, w_o):
    return np.concatenate(_heads_list(head_outputs)[::-1], axis=-1) @ w_o


def _first_block_only(head_outputs, w_o):
    heads = _heads_list(head_outputs)
    d_head = heads[0].shape[-1]
    return sum(o @ np.asarray(w_o)[:d_head] for o in heads)  # every head meets head 0's rows


register(
    Question(
        grade_id="q03_concat_project",
        assignment=ASSIGNMENT,
        points=4,
        kind="function",
        prompt="Implement concat_project(head_outputs, w_o): h head outputs of shape (n, d_head) "
        "and W_O of shape (h * d_head, d_model) -> the layer output (n, d_model).",
        reference=_concat_project_reference,
        cases=_concat_project_cases,
        mistakes=(
            Mistake("bare reshape", _bare_reshape, BARE_MERGE_HINT),
            Mistake("interleaved", _interleaved, INTERLEAVED_MERGE_HINT),
            Mistake("w_o transposed", _transposed_w_o, W_O_TRANSPOSED_HINT),
            Mistake("no projection", _no_projection, NO_PROJECTION_HINT),
            Mistake(
                "averaged heads",
                _averaged,
                "You averaged the heads, which leaves d_head features per token. Concatenate them "
                "along the feature axis instead, then multiply by w_o.",
            ),
            Mistake(
                "summed heads",
                _summed,
                "You added the heads, which leaves d_head features per token. Concatenate them "
                "along the feature axis instead, then multiply by w_o. " + PLUS_ADDS_ARRAYS,
            ),
            Mistake("token axis", _token_axis, TOKEN_AXIS_HINT),
            Mistake("reversed heads", _reversed_heads, REVERSED_HEADS_HINT),
            Mistake(
                "every head through the first rows",
                _first_block_only,
                "Every head was multiplied by the first d_head rows of w_o. Head i owns its own "
                "block of rows, w_o[i*d_head:(i+1)*d_head]; concatenating and then multiplying by "
                "the whole w_o does this bookkeeping for you.",
            ),
        ),
        hint="Concatenate all the heads (however many there are) along the feature (last) axis "
        "to get (n, h * d_head), then multiply by w_o: (n, h * d_head) @ (h * d_head, d_model) "
        "-> (n, d_model), so head i meets its own block of d_head rows of w_o. " + PLUS_ADDS_ARRAYS,
        forbidden=("mha_helpers.heads.merge_heads", "mha_helpers.heads.multi_head_attention"),
        traits=lambda head_outputs, w_o: (
            (["not two heads"] if len(head_outputs) != 2 else [])
            + (
                (["several heads"] if len(head_outputs) > 1 else [])
                + (["list input"] if isinstance(head_outputs, list) else [])
            )
        ),
    )
)
