"""The graded questions of exercises 01 (one head), 02 (heads) and 03 (concatenate, project).

For every question: the reference passes on the public cases and on fresh ones (the grader draws
new cases for every run); every classic mistake fails on the public cases and gets its OWN hint
back (so the public cases tell each mistake apart from the right answer and from every other
mistake); the same slip gets the same words in every question where it can happen; each
question forbids the course helper that does its very job; and the references agree with the
course's implementations in ``mha_helpers``.

The checks every bank gets (references on fresh cases, mistakes failing and told apart, each
mistake's own hint from the bank and from the released data) are in tests/test_banks.py and
tests/test_selfcheck.py; this file keeps what is particular to these exercises.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_helpers import (
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from mha_helpers.grading import get_question, questions_for
from mha_helpers.grading.selfcheck.check import evaluate

# Wrong answers fed to the checks overflow or divide 0 by 0 on purpose (that is the slip).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ASSIGNMENTS = ("01_recap_self_attention", "02_heads", "03_concatenate_and_project")
SEEDS = [1, 2, 3, 17, 123]


def _public(q):
    return q.cases(np.random.default_rng(q.public_seed))


def test_each_exercise_has_graded_questions_and_a_full_layer_question():
    for assignment in ASSIGNMENTS:
        assert len([q for q in questions_for(assignment) if q.kind != "manual"]) >= 3
    q = get_question("q02_full_layer")
    assert q.kind == "function" and q.points > 0


def test_the_global_maximum_softmax_fails_on_rows_of_very_different_scale():
    q = get_question("q01_softmax")
    cases = _public(q)
    glob = next(m.answer for m in q.mistakes if m.name == "global maximum")
    rowmax = [
        c for c in cases if np.ptp(np.max(np.where(np.isfinite(c[0]), c[0], -1e300), axis=-1)) > 700
    ]
    assert rowmax, "a public case must have rows whose scales differ by more than exp can span"
    with np.errstate(all="ignore"):
        out = glob(*rowmax[0])
    assert not np.all(np.isfinite(out))  # the lower rows underflow to 0 / 0
    r = evaluate(q, glob)
    assert r["status"] == "failed" and r["case"] == next(
        i for i, c in enumerate(cases) if c is rowmax[0]
    )
    assert r["hint"] == next(m.hint for m in q.mistakes if m.name == "global maximum")
    # its NaN rows differ from those of the unshifted softmax, which overflows in the top row
    no_shift = next(m.answer for m in q.mistakes if m.name == "no shift")
    with np.errstate(all="ignore"):
        assert not np.array_equal(np.isnan(out), np.isnan(no_shift(*rowmax[0])))


def test_the_same_slip_gets_the_same_hint_in_every_question():
    def hint(gid, name):
        return next(m.hint for m in get_question(gid).mistakes if m.name == name)

    interleaved = {
        hint("q02_merge_heads", "interleaved"),
        hint("q03_concat_project", "interleaved"),
        hint("q02_full_layer", "interleaved merge"),
        hint("q03_identity_output", "interleaved"),
    }
    assert len(interleaved) == 1
    bare_split = {
        hint("q02_split_heads", "bare reshape"),
        hint("q02_per_head_attention", "bare reshape"),
        hint("q02_full_layer", "bare reshape split"),
    }
    assert len(bare_split) == 1
    strided = {
        hint("q02_split_heads", "strided split"),
        hint("q02_per_head_attention", "strided split"),
        hint("q02_full_layer", "strided split"),
    }
    assert len(strided) == 1
    bare_merge = {
        hint("q02_merge_heads", "bare reshape"),
        hint("q03_concat_project", "bare reshape"),
        hint("q02_full_layer", "bare reshape merge"),
    }
    assert len(bare_merge) == 1
    query_axis = {
        hint("q01_softmax", "query axis"),
        hint("q01_masked_attention", "softmax over queries"),
        hint("q02_per_head_attention", "softmax over queries"),
        hint("q02_full_layer", "softmax over queries"),
    }
    assert len(query_axis) == 1
    assert hint("q01_masked_attention", "mask inverted") == hint("q02_full_layer", "mask inverted")
    assert hint("q02_per_head_attention", "scaled by sqrt(d_model)") == hint(
        "q02_full_layer", "scaled by sqrt(d_model)"
    )


@pytest.mark.parametrize(
    "gid, helper",
    [
        ("q01_softmax", "mha_helpers.attention.softmax"),
        ("q01_masked_attention", "mha_helpers.attention.scaled_dot_product_attention"),
        ("q02_split_heads", "mha_helpers.heads.split_heads"),
        ("q02_merge_heads", "mha_helpers.heads.merge_heads"),
        ("q02_per_head_attention", "mha_helpers.heads.multi_head_attention"),
        ("q02_full_layer", "mha_helpers.heads.multi_head_attention"),
        ("q03_concat_project", "mha_helpers.heads.merge_heads"),
    ],
)
def test_each_question_forbids_the_helper_that_does_its_job(gid, helper):
    assert helper in get_question(gid).forbidden


@pytest.mark.parametrize(
    "gid, answer",
    [
        ("q01_softmax", lambda s: softmax(s, axis=-1)),
        ("q02_split_heads", lambda x, h: split_heads(x, h)),
        ("q02_merge_heads", lambda x: merge_heads(x)),
        ("q03_concat_project", lambda heads, w_o: merge_heads(np.asarray(heads)) @ w_o),
        (
            "q02_full_layer",
            lambda x, w_q, w_k, w_v, w_o, h, mask=None: multi_head_attention(
                x, w_q, w_k, w_v, w_o, num_heads=h, mask=mask
            ),
        ),
    ],
)
def test_an_answer_that_calls_the_helper_scores_nothing_and_is_told_why(gid, answer):
    r = evaluate(get_question(gid), answer)
    assert r["points"] == 0 and r["status"] != "passed"
    assert "course's own" in r["message"]


@pytest.mark.parametrize("seed", [0, *SEEDS])
def test_references_agree_with_the_course_functions(seed):
    rng = np.random.default_rng
    q = get_question("q01_softmax")
    for (s,) in q.cases(rng(seed)):
        np.testing.assert_allclose(q.reference(s), softmax(s, axis=-1), rtol=1e-12, atol=1e-300)
    q = get_question("q01_masked_attention")
    for qq, k, v, mask in q.cases(rng(seed)):
        out, w = q.reference(qq, k, v, mask)
        out2, w2 = scaled_dot_product_attention(qq, k, v, mask)
        np.testing.assert_allclose(out, out2, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(w, w2, rtol=1e-10, atol=1e-12)
    for x, h in get_question("q02_split_heads").cases(rng(seed)):
        np.testing.assert_array_equal(
            get_question("q02_split_heads").reference(x, h), split_heads(x, h)
        )
    for (x,) in get_question("q02_merge_heads").cases(rng(seed)):
        np.testing.assert_array_equal(get_question("q02_merge_heads").reference(x), merge_heads(x))
    q = get_question("q02_per_head_attention")
    for x, w_q, w_k, w_v, h in q.cases(rng(seed)):
        out, w = q.reference(x, w_q, w_k, w_v, h)
        out2, w2 = scaled_dot_product_attention(
            split_heads(x @ w_q, h), split_heads(x @ w_k, h), split_heads(x @ w_v, h)
        )
        np.testing.assert_allclose(out, out2, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(w, w2, rtol=1e-10, atol=1e-12)
    q = get_question("q03_concat_project")
    for heads, w_o in q.cases(rng(seed)):
        np.testing.assert_allclose(q.reference(heads, w_o), merge_heads(heads) @ w_o, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, *SEEDS])
def test_the_full_layer_cases_have_a_batch_axis_and_the_slip_free_layer_is_right(seed):
    """The mistakes of q02_full_layer are one NumPy layer with one slip switched on; with no
    slip it must be multi_head_attention itself, or every mistake's hint would be built on
    sand. The cases cover no mask (argument left out), a random mask and a causal mask."""
    import mha_course_banks.bank_02 as b2

    q = get_question("q02_full_layer")
    cases = q.cases(np.random.default_rng(seed))
    assert [len(c) for c in cases] == [6, 7, 7, 7, 7]
    for c in cases:
        x, w_q, w_k, w_v, w_o, h, *mask = c
        assert x.ndim == 3
        np.testing.assert_allclose(
            b2._layer(x, w_q, w_k, w_v, w_o, h, *mask), q.reference(*c), rtol=1e-10, atol=1e-12
        )
    assert [c[0].shape[0] > 1 for c in cases] == [True] * 4 + [False]  # the last: one sequence
    masks = [c[6] for c in cases[1:3]]
    assert masks[0].any(axis=-1).all() and (~masks[0]).any(axis=-1).all()  # mixed rows
    assert np.array_equal(masks[1], np.tril(np.ones_like(masks[1])))


def test_value_questions_follow_from_their_definitions():
    assert get_question("q02_weights_shape").expected == (2, 5, 5)
    assert get_question("q03_d_head").expected == 768 // 12
    heads = np.array([[[1, 2]], [[3, 4]]])
    assert (
        get_question("q03_identity_output").expected == (merge_heads(heads) @ np.eye(4))[0].tolist()
    )
