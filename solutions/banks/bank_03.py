"""Questions for exercise 03: concatenate the heads, then project (``solutions/03_concatenate_and_project.ipynb``).

Lesson: ``notebooks/03_concatenate_and_project.ipynb``. Five questions, 10 points, 8 of them
graded automatically:

* ``q03_d_head`` (1): the width of one head for d_model 768 and 12 heads;
* ``q03_identity_output`` (1): the worked example's output when W_O is the identity;
* ``q03_concat_vs_average`` (2): multiple choice, why concatenating differs from averaging;
* ``q03_explain`` (2): the same in the learner's words, graded by hand;
* ``q03_concat_project`` (4): implement concatenate-then-project, checked on random inputs.
"""

from __future__ import annotations

import numpy as np

from mha_helpers.grading.questions import Mistake, Question, register

ASSIGNMENT = "03_concatenate_and_project"

# --- q03_d_head ------------------------------------------------------------------------------

register(Question(
    grade_id="q03_d_head",
    assignment=ASSIGNMENT,
    points=1,
    kind="value",
    prompt="A model has d_model = 768 and 12 heads of equal width. How wide is one head?",
    expected=64,
    mistakes=(
        Mistake("multiplied", 768 * 12,
                "You multiplied. The heads share the model width between them: divide d_model by "
                "the number of heads."),
        Mistake("inverted", 12 / 768,
                "You divided the other way round: d_head = d_model / h, a whole number of features."),
        Mistake("d_model", 768, "768 is the width of the whole model; each of the 12 heads gets a slice."),
    ),
    hint="Each head gets an equal slice of the d_model features: d_head = d_model / h.",
))

# --- q03_identity_output ----------------------------------------------------------------------

register(Question(
    grade_id="q03_identity_output",
    assignment=ASSIGNMENT,
    points=1,
    kind="value",
    prompt="Head outputs [1, 2] and [3, 4] are concatenated and multiplied by a 4 x 4 identity "
           "W_O. What is the output?",
    expected=[1.0, 2.0, 3.0, 4.0],
    mistakes=(
        Mistake("original W", [4.0, 6.0, -2.0, -2.0],
                "That is the output of the lesson's mixing matrix. With the identity, each output "
                "feature copies exactly one input feature."),
        Mistake("summed heads", [4.0, 6.0],
                "You added the two heads. Concatenation puts them side by side: 2 + 2 = 4 features."),
        Mistake("averaged heads", [2.0, 3.0],
                "You averaged the two heads. Concatenation puts them side by side: 2 + 2 = 4 features."),
    ),
    hint="Concatenate first ([1, 2] then [3, 4]); multiplying by the identity changes nothing.",
))

# --- q03_concat_vs_average (multiple choice) and q03_explain (manual) --------------------------

register(Question(
    grade_id="q03_concat_vs_average",
    assignment=ASSIGNMENT,
    points=2,
    kind="value",
    prompt="Why does concatenating the heads differ from averaging them? Answer with one letter, "
           "a to d (the options are in the notebook).",
    expected="b",
    mistakes=(
        Mistake("a", "a",
                "Try it: the average of [1, 2] and [3, 4] is [2, 3], and so is the average of "
                "[3, 4] and [1, 2]. Once the heads are averaged, no W_O can tell them apart."),
        Mistake("c", "c",
                "Rescaling does not bring anything back: h times the average is the sum of the "
                "heads, and [1, 2] + [3, 4] equals [3, 4] + [1, 2]."),
        Mistake("d", "d",
                "Each head's weights sum to one over the keys, inside that head; nothing is "
                "normalised across heads. Think about what W_O can still see after averaging."),
    ),
    hint="Answer with a single letter: 'a', 'b', 'c' or 'd'.",
))

register(Question(
    grade_id="q03_explain",
    assignment=ASSIGNMENT,
    points=2,
    kind="manual",
    prompt="In two or three sentences, explain why concatenation followed by W_O can do "
           "something that averaging the heads cannot.",
))

# --- q03_concat_project -----------------------------------------------------------------------


def _heads_list(head_outputs):
    return [np.asarray(h, dtype=float) for h in head_outputs]


def _concat_project_reference(head_outputs, w_o):
    """(h, n, d_head) head outputs and (h * d_head, d_model) W_O -> (n, d_model)."""
    joined = np.concatenate(_heads_list(head_outputs), axis=-1)  # (n, h * d_head)
    return joined @ np.asarray(w_o, dtype=float)  # (n, d_model)


def _concat_project_cases(rng):
    """Three cases; the last one has d_model != h * d_head, which is allowed."""
    cases = []
    sizes = [(2, 3, 4, 8),  # h, n, d_head, d_model: the lesson's sizes
             (int(rng.integers(3, 5)), int(rng.integers(2, 6)), int(rng.integers(2, 4)), None),
             (2, int(rng.integers(3, 5)), 3, None)]
    for k, (h, n, d_head, d_model) in enumerate(sizes):
        if d_model is None:
            d_model = h * d_head + (int(rng.integers(1, 3)) if k == 2 else 0)
        heads = rng.normal(size=(h, n, d_head))  # (h, n, d_head)
        w_o = rng.normal(size=(h * d_head, d_model)) / np.sqrt(h * d_head)  # (h * d_head, d_model)
        cases.append((heads, w_o))
    return cases


def _bare_reshape(head_outputs, w_o):
    heads = np.asarray(head_outputs, dtype=float)  # (h, n, d_head)
    h, n, d_head = heads.shape
    return heads.reshape(n, h * d_head) @ w_o  # same shape, tokens scrambled


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


register(Question(
    grade_id="q03_concat_project",
    assignment=ASSIGNMENT,
    points=4,
    kind="function",
    prompt="Implement concat_project(head_outputs, w_o): h head outputs of shape (n, d_head) "
           "and W_O of shape (h * d_head, d_model) -> the layer output (n, d_model).",
    reference=_concat_project_reference,
    cases=_concat_project_cases,
    mistakes=(
        Mistake("bare reshape", _bare_reshape,
                "The shape is right but the values are scrambled: reshaping (h, n, d_head) straight "
                "to (n, h * d_head) mixes rows of different tokens. Join the heads side by side per "
                "token: np.concatenate(list(head_outputs), axis=-1)."),
        Mistake("w_o transposed", _transposed_w_o,
                "You multiplied by W_O transposed. The course applies weights as x @ w: rows of w_o "
                "are input features (h * d_head), columns are output features (d_model)."),
        Mistake("no projection", _no_projection,
                "You concatenated the heads but did not project: multiply the (n, h * d_head) "
                "result by w_o."),
        Mistake("averaged heads", _averaged,
                "You averaged the heads, which leaves d_head features per token. Concatenate them "
                "along the feature axis instead, then multiply by w_o."),
        Mistake("summed heads", _summed,
                "You added the heads, which leaves d_head features per token. Concatenate them "
                "along the feature axis instead, then multiply by w_o."),
        Mistake("token axis", _token_axis,
                "You stacked the heads along the token axis (h * n rows). Each token keeps its own "
                "row: concatenate along the last (feature) axis."),
        Mistake("reversed heads", _reversed_heads,
                "The heads are in the wrong order: head 0's features come first, because head 0 "
                "owns the first d_head rows of w_o."),
    ),
    hint="Concatenate the heads along the feature (last) axis to get (n, h * d_head), then "
         "multiply by w_o: (n, h * d_head) @ (h * d_head, d_model) -> (n, d_model).",
    forbidden=("mha_helpers.heads.merge_heads", "mha_helpers.heads.multi_head_attention"),
))
