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
from mha_helpers.grading.rules.cases import NO_OUTPUT, CaseResult
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


# --- precision over recall: a number that more than one slip gives names no cause ----------------

FORM_CAUSES = (None, "form", "type")


def _value_questions():
    return sorted(g for g, q in REGISTRY.items() if q.kind == "value")


def _function_questions():
    return sorted(g for g, q in REGISTRY.items() if q.kind == "function")


def _at_common_factor(q, answer) -> bool:
    """Whether a scalar ``answer`` is the expected value times or divided by 2, 4, 8, 1000,
    1024, 2**20, 2**30, a million or a number the prompt gives (factors many slips give)."""
    from mha_helpers.grading.rules.judge import _prompt_numbers

    if isinstance(q.expected, (str, tuple, list)) or np.shape(q.expected):
        return False
    try:
        ratio = float(answer) / float(q.expected)
    except (TypeError, ValueError, ZeroDivisionError):
        return False
    factors = {2, 4, 8, 1000, 1024, 2**20, 2**30, 10**6} | set(_prompt_numbers(q.prompt))
    return any(
        np.isclose(ratio, f, rtol=1e-9, atol=0) or np.isclose(ratio, 1 / f, rtol=1e-9, atol=0)
        for f in factors
    )


def test_a_listed_mistake_at_a_common_factor_is_offered_not_named():
    """Battery C: q08_mla_cache in fp32 (4 bytes a number) is twice the right value, as the
    listed "K and V" mistake is; the verdict says the factor and offers that slip as one of
    several, naming no cause. Invented answers (judge2's): twice, half, 8 and 1024 times."""
    q = REGISTRY["q08_mla_cache"]
    r = evaluate(q, 2 * q.expected)
    assert r["cause"] is None and "exactly twice the expected value" in r["hint"]
    assert "fp16 against fp32" in r["hint"] and "One slip that gives this" in r["hint"]
    r = evaluate(q, q.expected // 2)
    assert r["cause"] is None and "exactly half the expected value" in r["hint"]
    for answer, words in ((8 * q.expected, "times 8"), (1024 * q.expected, "times 1024")):
        r = evaluate(q, answer)
        assert r["cause"] is None and words in r["hint"], r
    assert evaluate(q, q.expected + 64)["cause"] is None  # no factor: no cause either


@pytest.mark.parametrize("gid", _value_questions())
def test_a_value_that_two_causes_give_names_neither(gid):
    """Every listed mistake of every value question: when another listed mistake, or a slip the
    judge enumerates (one factor of the bank's product replaced by another size), gives the same
    number, the verdict names no cause; otherwise it names this mistake."""
    from mha_helpers.grading.rules.judge import value_hashes, value_swaps

    q = REGISTRY[gid]
    own = q.extra.get("mistake_swaps") or {}
    swaps = value_swaps(q)
    k = q.extra.get("sig_figs")
    for j, m in enumerate(q.mistakes):
        h = value_hashes(gid, m.answer, k)
        others = [
            o.name
            for i, o in enumerate(q.mistakes)
            if i != j and value_hashes(gid, o.answer, k) == h
        ] + [
            label
            for label, v in swaps.items()
            if value_hashes(gid, v, k) == h and label not in own.get(m.name, ())
        ]
        r = evaluate(q, m.answer)
        assert r["status"] == "failed", (gid, m.name)
        factor = _at_common_factor(q, m.answer)
        if factor and not others:  # other common slips give this factor: named as one slip only
            assert r["cause"] is None, (gid, m.name, r["cause"])
            assert r["hint"].startswith("Your answer is exactly") and m.hint in r["hint"], r
        elif others:
            assert r["cause"] is None, (gid, m.name, others, r["cause"])
            assert "More than one slip" in r["hint"]
        elif np.shape(m.answer) == np.shape(q.expected):
            assert r["cause"] == m.name, (gid, m.name, r)


def test_n_times_d_model_is_also_d_head_for_the_keys_so_no_cause_is_named():
    q = REGISTRY["q04_weight_entries"]
    for answer in (1024 * 768, 12 * 1024 * 64):
        r = evaluate(q, answer)
        assert r["cause"] is None and "one factor of your product is off" in r["hint"]
    assert evaluate(q, 64 * 1024**2)["cause"] == "d_head matrices"  # one cause only


@pytest.mark.parametrize("gid", _function_questions())
def test_a_function_matching_two_listed_mistakes_names_neither(gid):
    q = REGISTRY[gid]
    from mha_helpers.grading.rules.cases import expected_outputs, public_cases

    cases = public_cases(q)
    _, outs = expected_outputs(q, cases)
    from mha_helpers.grading.rules.compare import difference

    for j, m in enumerate(q.mistakes):
        if not callable(m.answer):
            continue
        twins = [
            i
            for i in range(len(q.mistakes))
            if i != j
            and all(
                row[i] is not NO_OUTPUT
                and row[j] is not NO_OUTPUT
                and difference(row[i], row[j], q.rtol, q.atol, equal_nan=True) is None
                for row in outs
            )
        ]
        if twins:
            assert evaluate(q, m.answer)["cause"] is None, (gid, m.name)


def test_flops_short_by_one_projection_names_no_projection():
    """Forgetting W_V gives the same count as forgetting W_O: the verdict says the count is one
    projection short and names neither."""
    q = REGISTRY["q04_flops"]

    def no_v(n, d_model, num_heads):
        width = num_heads * (d_model // num_heads)
        return 6 * n * d_model * width + 4 * n**2 * width

    for answer in (no_v, next(m.answer for m in q.mistakes if m.name == "no W_O")):
        for r in (evaluate(q, answer), self_check("q04_flops", answer)):
            assert r["cause"] is None, r
            assert "one projection's 2 n d_model^2 FLOPs (missing)" in r["hint"]
    half = next(m.answer for m in q.mistakes if m.name == "multiply-add as 1 FLOP")
    assert evaluate(q, half)["cause"] == "multiply-add as 1 FLOP"  # one cause only


def _wrong_forms(q):
    """Answers in the wrong form for a value question: text for a number, strings for
    booleans, a float or a bool for a count; each with the right content and each listed
    mistake's content."""
    contents = [q.expected] + [m.answer for m in q.mistakes]
    forms = []
    for c in contents:
        if isinstance(c, str):
            continue
        forms.append(str(c))
        if isinstance(c, tuple) and all(isinstance(v, bool) for v in c):
            forms += [
                tuple(str(v) for v in c),
                tuple("yes" if v else "no" for v in c),
                tuple(int(v) for v in c),
                list(str(v) for v in c),
                str(c[0]),
                "yes",
            ]
        if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            forms += [float(c), np.float64(c), np.array(float(c))]
    if q.extra.get("answer_type") == "int":
        forms += [True, False]
    return forms


@pytest.mark.parametrize("gid", _value_questions())
def test_a_form_slip_gets_a_form_message_and_no_content_cause(gid):
    q = REGISTRY[gid]
    for answer in _wrong_forms(q):
        r = evaluate(q, answer)
        assert r["status"] != "passed" or isinstance(q.expected, str), (gid, answer)
        assert r["cause"] in FORM_CAUSES, (gid, answer, r["cause"], r["hint"])
        if r["cause"] is None and r["status"] == "failed" and not isinstance(q.expected, str):
            names = {m.hint for m in q.mistakes}
            assert r["hint"] not in names, (gid, answer, r["hint"])


def test_strings_for_booleans_get_the_same_form_message_as_every_truth_value_question():
    from mha_helpers.grading.rules.judge import FLAGS_FORM

    for answer in (
        ("no", "no", "yes", "yes"),
        ("False", "False", "True", "True"),
        "True",
        (0, 0, 1, 1),
    ):
        r = evaluate(REGISTRY["q04_changes_with_h"], answer)
        assert r["message"] == FLAGS_FORM and r["cause"] == "form" and r["hint"] == ""


def test_a_count_off_by_a_term_where_h_divides_d_model_is_told_so():
    """An invented answer (judge2's): W_O left out and every width taken as d_model, so the
    count is one projection short only where h divides d_model; elsewhere it is off by more.
    The verdict says what holds on those cases, and names no cause."""
    q = REGISTRY["q04_flops"]

    def count_flops(n, d_model, num_heads):
        return 6 * n * d_model * d_model + 4 * n * n * (d_model // num_heads) * num_heads

    r = evaluate(q, count_flops)
    assert r["status"] == "failed" and r["cause"] is None, r
    assert "when the number of heads divides d_model, your count is off by exactly" in r["hint"]
    assert "one projection's" in r["hint"], r["hint"]


def test_an_online_update_wrong_only_where_the_running_max_stays_is_told_which_rows():
    """An invented answer (judge2's): the block's own maximum as m_new once the state is not
    empty. It is right where the maximum rose or the state was empty, wrong exactly where the
    running maximum stays above the block's: the verdict says those rows, names no cause."""
    q = REGISTRY["q08_online_update"]

    def online_update(m, ell, acc, scores, v_block):
        m_new = scores.max(axis=-1)  # the running max m is never carried over
        rescale = np.exp(np.minimum(m - m_new, 0.0))
        p = np.exp(scores - m_new[:, None])
        return m_new, ell * rescale + p.sum(axis=-1), acc * rescale[:, None] + p @ v_block

    r = evaluate(q, online_update)
    assert r["status"] == "failed" and r["cause"] is None, r
    assert "the rows where the block's maximum is below the running one" in r["hint"], r["hint"]


@pytest.mark.parametrize(
    "build, said",
    [
        (lambda q, k, v: np.concatenate([q.T, k, v]), "block 1 (rows 4-7) is the transpose"),
        (lambda q, k, v: np.concatenate([q.T, q.T, v.T]), "block 1 (rows 4-7) holds what block 0"),
        (
            lambda q, k, v: np.stack([q.T, k.T, v.T], axis=1).reshape(-1, q.shape[0]),
            "every row of your result is a right row, in another order",
        ),
    ],
)
def test_stacked_blocks_are_told_which_block_is_right_transposed_or_misplaced(build, said):
    """Invented answers (judge2's) to q07_in_proj_weight, a (3 d, d) stack of three blocks: the
    verdict says what each block of the answer is, and names no cause."""
    q = REGISTRY["q07_in_proj_weight"]

    def in_proj_weight(w_q, w_k, w_v):
        return build(np.asarray(w_q), np.asarray(w_k), np.asarray(w_v))

    r = evaluate(q, in_proj_weight)
    assert r["status"] == "failed" and r["cause"] is None, r
    assert said in r["hint"], r["hint"]


def test_an_output_with_one_value_for_every_row_is_told_so():
    """An invented answer (judge2's) to q08_online_update: one maximum over the whole block
    (scores.max() with no axis), so m_new is the same in every row; the verdict says so and
    names no cause."""
    q = REGISTRY["q08_online_update"]

    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max())  # one maximum for all the queries
        rescale = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        return m_new, rescale * ell + p.sum(axis=-1), rescale[:, None] * acc + p @ v_block

    r = evaluate(q, online_update)
    assert r["status"] == "failed" and r["cause"] is None, r
    assert "m_new has the same value in every row" in r["hint"], r["hint"]
