"""The graded questions of exercises 01 (one head), 02 (heads) and 03 (concatenate, project).

For every question: the reference passes on the public cases and on fresh ones (the grader draws
new cases for every run); every classic mistake fails on the public cases and gets its OWN hint
back (so the public cases tell each mistake apart from the right answer and from every other
mistake); the same slip gets the same words in every question where it can happen; each
question forbids the course helper that does its very job; and the references agree with the
course's implementations in ``mha_helpers``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mha_helpers import (
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from mha_helpers.grading.check import evaluate, self_check
from mha_helpers.grading.compare import difference
from mha_helpers.grading.questions import get_question, questions_for

# Wrong answers fed to the checks overflow or divide 0 by 0 on purpose (that is the slip).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ASSIGNMENTS = ("01_recap_self_attention", "02_heads", "03_concatenate_and_project")
QUESTIONS = [q for a in ASSIGNMENTS for q in questions_for(a) if q.kind != "manual"]
FUNCTIONS = [q for q in QUESTIONS if q.kind == "function"]
SEEDS = [1, 2, 3, 17, 123]


def _right(q):
    """A right answer. q02_full_layer's reference IS the course's multi_head_attention, which
    an answer may not call, so its right answer here is the bank's own NumPy layer with no slip
    (shown equal to multi_head_attention below)."""
    if q.kind == "value":
        return q.expected
    if q.grade_id == "q02_full_layer":
        import mha_course_banks.bank_02 as b2

        return lambda x, w_q, w_k, w_v, w_o, h, mask=None: b2._layer(x, w_q, w_k, w_v, w_o, h, mask)
    return q.reference


def _public(q):
    return q.cases(np.random.default_rng(q.public_seed))


def _out(fn, args):
    try:
        with np.errstate(all="ignore"):
            return fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except Exception as exc:  # a mistake that cannot run on this case
        return f"raised {type(exc).__name__}"


def test_each_exercise_has_graded_questions_and_a_full_layer_question():
    for assignment in ASSIGNMENTS:
        assert len([q for q in questions_for(assignment) if q.kind != "manual"]) >= 3
    q = get_question("q02_full_layer")
    assert q.kind == "function" and q.points > 0


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.grade_id)
def test_reference_passes_on_the_public_cases(q):
    assert evaluate(q, _right(q))["status"] == "passed"


@pytest.mark.parametrize("q", FUNCTIONS, ids=lambda q: q.grade_id)
@pytest.mark.parametrize("seed", SEEDS)
def test_reference_passes_on_fresh_cases_and_every_mistake_fails(q, seed):
    cases = q.cases(np.random.default_rng(seed))
    assert evaluate(q, _right(q), cases)["status"] == "passed"
    for m in q.mistakes:
        assert evaluate(q, m.answer, cases)["status"] in ("failed", "error"), m.name


MISTAKES = [(q, m) for q in QUESTIONS for m in q.mistakes]


@pytest.mark.parametrize("q, m", MISTAKES, ids=[f"{q.grade_id}-{m.name}" for q, m in MISTAKES])
def test_each_mistake_gets_its_own_hint_on_the_public_cases(q, m):
    """Through the bank (evaluate) and through the released self-check data (what a learner's
    check() uses), the verdict names this mistake."""
    r = evaluate(q, m.answer)
    assert r["status"] == "failed", (m.name, r["message"])
    assert r["hint"] == m.hint, (m.name, r["message"], r["hint"])
    released = self_check(q.grade_id, m.answer)
    assert released["status"] == "failed" and released["hint"] == m.hint, (
        m.name,
        released["message"],
    )


@pytest.mark.parametrize("q", FUNCTIONS, ids=lambda q: q.grade_id)
def test_different_mistakes_give_different_numbers_on_some_public_case(q):
    cases = _public(q)
    outputs = {m.name: [_out(m.answer, c) for c in cases] for m in q.mistakes}
    for a, b in itertools.combinations(q.mistakes, 2):
        if a.hint == b.hint:  # two ways to write one slip (sqrt of n_q or of n_k) may coincide
            continue
        assert any(
            (isinstance(x, str) or isinstance(y, str))
            and x != y
            or not isinstance(x, str)
            and not isinstance(y, str)
            and difference(x, y) is not None
            for x, y in zip(outputs[a.name], outputs[b.name])
        ), f"{q.grade_id}: {a.name!r} and {b.name!r} give the same numbers on every public case"


@pytest.mark.parametrize("q", [q for q in QUESTIONS if q.kind == "value"], ids=lambda q: q.grade_id)
def test_value_mistakes_are_all_different_and_none_is_the_answer(q):
    values = [repr(np.asarray(m.answer, dtype=object).tolist()) for m in q.mistakes]
    assert len(set(values)) == len(values)
    assert repr(np.asarray(q.expected, dtype=object).tolist()) not in values


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
    assert [len(c) for c in cases] == [6, 7, 7]
    for c in cases:
        x, w_q, w_k, w_v, w_o, h, *mask = c
        assert x.ndim == 3 and x.shape[0] > 1
        np.testing.assert_allclose(
            b2._layer(x, w_q, w_k, w_v, w_o, h, *mask), q.reference(*c), rtol=1e-10, atol=1e-12
        )
    masks = [c[6] for c in cases[1:]]
    assert masks[0].any(axis=-1).all() and (~masks[0]).any(axis=-1).all()  # mixed rows
    assert np.array_equal(masks[1], np.tril(np.ones_like(masks[1])))


def test_value_questions_follow_from_their_definitions():
    assert get_question("q02_weights_shape").expected == (2, 5, 5)
    assert get_question("q03_d_head").expected == 768 // 12
    heads = np.array([[[1, 2]], [[3, 4]]])
    assert (
        get_question("q03_identity_output").expected == (merge_heads(heads) @ np.eye(4))[0].tolist()
    )
