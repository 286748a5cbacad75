"""How the verdict diagnoses an answer, independently of any one question: type discipline
(boolean masks, integer counts), a hint only for the mistake an answer matches on every case,
the property that separates the cases an answer gets right from those it gets wrong, errors
located in the learner's own code with a targeted hint, and forbidden functions of any
library, not only the course's."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from mha_helpers.grading.classroom.banks import load_banks
from mha_helpers.grading.course import find_course
from mha_helpers.grading.rules.cases import CaseResult
from mha_helpers.grading.rules.judge import differential, error_hint, function_verdict
from mha_helpers.grading.rules.registry import REGISTRY, Mistake, Question
from mha_helpers.grading.sandbox.inside.watch import run_cases
from mha_helpers.grading.selfcheck.check import evaluate, self_check

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
load_banks(find_course())


def _meta(**kw):
    meta = {
        "grade_id": "t",
        "assignment": "t",
        "kind": "function",
        "points": 1.0,
        "prompt": "",
        "hint": "GENERIC",
        "rtol": 1e-6,
        "atol": 1e-8,
        "forbidden": [],
        "mistakes": [{"name": "a", "hint": "HINT A"}, {"name": "b", "hint": "HINT B"}],
    }
    return meta | kw


# --- type discipline ---------------------------------------------------------------------------


@pytest.mark.parametrize("gid", ["q07_padding_causal_mask", "q07_key_padding_mask"])
@pytest.mark.parametrize("dtype", [int, float, np.int8])
def test_a_mask_of_zeros_and_ones_does_not_pass_and_is_told_why(gid, dtype):
    q = REGISTRY[gid]

    def as_numbers(*args):
        return np.asarray(q.reference(*args)).astype(dtype)

    for r in (self_check(gid, as_numbers), evaluate(q, as_numbers)):
        assert r["status"] == "failed" and r["points"] == 0
        assert "bool" in r["message"] and "adds" in r["message"]


@pytest.mark.parametrize("gid", ["q04_params", "q04_flops", "q05_cache_bytes"])
def test_a_count_returned_as_a_float_does_not_pass_and_is_told_why(gid):
    q = REGISTRY[gid]

    def as_float(*args):
        return float(q.reference(*args))

    def as_numpy_int(*args):
        return np.int64(q.reference(*args))

    r = self_check(gid, as_float)
    assert r["status"] == "failed" and "float" in r["message"] and "//" in r["message"]
    assert self_check(gid, as_numpy_int)["status"] == "passed"


def test_a_whole_number_value_answer_must_be_an_int():
    assert self_check("q05_max_batch", 32)["status"] == "passed"
    r = self_check("q05_max_batch", 32.0)
    assert r["status"] == "failed" and "float" in r["message"]


# --- a mistake is named only when the answer matches it on every case ---------------------------


def test_a_mistake_is_named_only_when_it_matches_on_every_case():
    want = [np.zeros(2), np.zeros(2)]
    mistakes = [[np.ones(2), np.ones(2)], [np.full(2, 2.0), np.full(2, 3.0)]]  # [case][mistake]

    def results(*values):
        return [CaseResult(value=v) for v in values]

    r = function_verdict(_meta(), results(np.ones(2), np.full(2, 3.0)), want, mistakes, 2)
    assert r["hint"] == "HINT B" and r["mistake"] == "b"
    r = function_verdict(_meta(), results(np.ones(2), np.full(2, 9.0)), want, mistakes, 2)
    assert r["hint"] == "GENERIC" and r["mistake"] is None  # agrees with both on case 1 only


# --- differential diagnosis -----------------------------------------------------------------------


def test_the_verdict_says_which_property_breaks_the_answer():
    traits = [[], ["several heads"], ["mask", "several heads"]]
    assert differential(traits, [True, False, False]).startswith(
        "right with one head, wrong with several heads"
    )
    assert differential(traits, [True, True, False]).startswith("right without a mask")
    assert differential(traits, [False, False, False]) == ""
    assert differential(traits, [True, True, True]) == ""
    r = function_verdict(
        _meta(mistakes=[]),
        [CaseResult(value=v) for v in (0.0, 1.0, 1.0)],
        [0.0, 0.0, 0.0],
        [[], [], []],
        3,
        traits=traits,
    )
    assert "with several heads" in r["hint"] and r["diagnosis"]


def test_a_full_layer_that_only_works_with_one_head_is_told_so():
    import mha_course_banks.bank_02 as b2

    def merged_wrong(x, w_q, w_k, w_v, w_o, h, mask=None):
        return b2._layer(x, w_q, w_k, w_v, w_o, h, mask, merge={"interleaved": True}) * 1.0001 ** (
            h > 1
        )

    r = self_check("q02_full_layer", merged_wrong)
    assert r["status"] == "failed" and "with several heads" in r["hint"], r


# --- errors with a location ---------------------------------------------------------------------------


def test_an_error_names_the_learners_function_and_line_and_gives_the_known_hint():
    def my_split(x, num_heads):
        n, d_model = x.shape
        d_head = d_model / num_heads
        return x.reshape(n, num_heads, d_head).transpose(1, 0, 2)

    def per_head(x, w_q, w_k, w_v, num_heads):
        return my_split(x @ w_q, num_heads)

    r = self_check("q02_per_head_attention", per_head)
    assert r["status"] == "error"
    assert "`my_split` (called from `per_head`)" in r["message"]
    assert "x.reshape(n, num_heads, d_head)" in r["message"]
    assert "mha_helpers" not in r["message"] and "numpy" not in r["message"].lower()
    assert "//" in r["hint"]


def test_if_mask_on_an_array_is_told_to_test_for_none():
    import mha_course_banks.bank_02 as b2

    def layer(x, w_q, w_k, w_v, w_o, h, mask=None):
        if mask:
            pass
        return b2._layer(x, w_q, w_k, w_v, w_o, h, mask)

    r = self_check("q02_full_layer", layer)
    assert r["status"] == "error" and "mask is not None" in r["hint"]
    assert "if mask:" in r["message"]


def test_a_transposed_array_in_a_broadcast_error_is_recognised():
    hint = error_hint(
        "ValueError", "operands could not be broadcast together with shapes (2,5) (5,2) ()"
    )
    assert "transposed" in hint
    assert "swapped" not in error_hint(
        "ValueError", "operands could not be broadcast together with shapes (2,5) (3,2)"
    )


# --- forbidden functions of any library --------------------------------------------------------------


def test_a_forbidden_function_of_another_library_is_caught(monkeypatch):
    """scipy is not installed here, so a stand-in package of that name is: what matters is that
    the recorder watches any listed library, imported before the answer or inside it."""
    scipy = types.ModuleType("scipy")
    special = types.ModuleType("scipy.special")
    defining = types.ModuleType("scipy.special._logsumexp")
    exec(
        "import numpy as np\n"
        "def softmax(x, axis=None):\n"
        "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n"
        "    return e / e.sum(axis=axis, keepdims=True)\n",
        defining.__dict__,
    )
    special.softmax = defining.softmax
    scipy.special = special
    for name, mod in [
        ("scipy", scipy),
        ("scipy.special", special),
        ("scipy.special._logsumexp", defining),
    ]:
        monkeypatch.setitem(sys.modules, name, mod)
    assert "scipy.special.softmax" in REGISTRY["q01_softmax"].forbidden

    def imported_inside(scores):
        from scipy.special import softmax

        return softmax(scores, axis=-1)

    for r in (
        self_check("q01_softmax", imported_inside),
        evaluate(REGISTRY["q01_softmax"], imported_inside),
    ):
        assert r["points"] == 0 and "scipy.special.softmax" in r["message"]
        assert "course's own" not in r["message"]


def test_a_forbidden_c_function_is_caught():
    _, called = run_cases(lambda x: np.linalg.norm(x), [(np.ones(3),)], ["numpy.linalg.norm"])
    assert called == ["numpy.linalg.norm"]
    _, called = run_cases(lambda x: np.sum(x), [(np.ones(3),)], ["numpy.linalg.norm"])
    assert called == []
    import math

    _, called = run_cases(lambda x: math.sqrt(x), [(4.0,)], ["math.sqrt"])  # written in C
    assert called == ["math.sqrt"]


def test_a_question_without_traits_still_works():
    q = Question("tmp", "tmp", 1, "function", "", reference=lambda x: x, cases=lambda rng: [(1,)])
    assert q.traits is None
    assert evaluate(q, lambda x: x)["status"] == "passed"
    q2 = Question(
        "tmp2",
        "tmp",
        1,
        "function",
        "",
        reference=lambda x: x,
        cases=lambda rng: [(1,)],
        mistakes=(Mistake("plus one", lambda x: x + 1, "ONE"),),
    )
    assert evaluate(q2, lambda x: x + 1)["hint"] == "ONE"


def test_the_graders_report_carries_the_location_and_a_malformed_one_is_refused():
    from mha_helpers.grading.rules.verdict import BadReport, answer_results

    where = {"function": "split", "line": 3, "code": "x.reshape(n, h, d / h)"}
    rec = {"results": [{"value": None, "raised": ["TypeError", "no"], "where": where}]}
    results, _ = answer_results(rec)
    assert results[0].where == where
    for bad in ({"function": "f", "line": "3"}, {"function": "f", "extra": 1}, ["f", 3]):
        rec = {"results": [{"value": None, "raised": ["TypeError", "no"], "where": bad}]}
        with pytest.raises(BadReport):
            answer_results(rec)


def test_an_error_on_a_hidden_case_shows_neither_its_text_nor_the_code():
    meta = _meta()
    where = {"function": "f", "line": 2, "code": "if mask:"}
    results = [
        CaseResult(value=0.0),
        CaseResult(
            raised=("ValueError", "truth value of an array 0.123 is ambiguous"), where=where
        ),
    ]
    r = function_verdict(meta, results, [0.0, 0.0], [[], []], n_public=1)
    assert r["status"] == "error" and "hidden" in r["message"]
    assert "0.123" not in r["message"] and "if mask" not in r["message"]
    assert "mask is not None" in r["hint"]  # the grader's own words for a known error


def test_hidden_case_type_and_error_hints_repeat_no_number_from_the_case():
    hidden = [CaseResult(value=0.0), CaseResult(value=1234.0)]
    r = function_verdict(_meta(mistakes=[]), hidden, [0, 1234], [[], []], n_public=1)
    assert r["status"] == "failed" and "float" in r["message"] and "1234" not in r["message"]
    text = "operands could not be broadcast together with shapes (7,9) (9,7)"
    assert "(7, 9)" in error_hint("ValueError", text)
    hint = error_hint("ValueError", text, public=False)
    assert "transposed" in hint and "7" not in hint and "9" not in hint
