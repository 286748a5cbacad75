"""Self-checks, round two (course issue 33): one exactness policy, stated constraints checked,
causes named only when sure, and feedback readable at a glance."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mha_helpers.grading import get_question
from mha_helpers.grading.rules.judge import value_data
from mha_helpers.grading.selfcheck.check import evaluate, self_check
from mha_helpers.grading.selfcheck.render import STYLES, html_text, plain_text

# --- 1. one exactness policy ------------------------------------------------------------------


def test_counts_are_exact_in_the_self_check_and_the_grader():
    q = get_question("q04_weight_entries")
    for check in (lambda a, q=q: self_check(q.grade_id, a), lambda a, q=q: evaluate(q, a)):
        assert check(12582912)["status"] == "passed"
        assert check(12583000)["status"] == "failed"  # right to 5 significant digits: not enough
        assert check(12582913)["status"] == "failed"
    cache = get_question("q05_cache_bytes")

    def one_byte_more(*args):
        return cache.reference(*args) + 1

    for r in (self_check(cache.grade_id, one_byte_more), evaluate(cache, one_byte_more)):
        assert r["status"] == "failed" and "exactly" in r["message"]


@pytest.mark.parametrize(
    "gid, whole",
    [
        ("q03_d_head", 64.0),
        ("q05_max_batch", 32.0),
        ("q08_mla_cache", 69120.0),
        ("q04_weight_entries", 12582912.0),
    ],
)
def test_a_whole_number_float_gets_the_same_answer_in_every_count_question(gid, whole):
    r = self_check(gid, whole)
    assert r["status"] == "failed" and "whole number" in r["message"], r
    assert self_check(gid, int(whole))["status"] == "passed"


def test_a_list_where_the_question_asks_for_a_tuple_is_a_form_slip_in_every_such_question():
    """One policy (battery C's wrong pass: [2, 5, 5] passed "Assign a tuple"): every value
    question whose expected answer is a tuple asks for one in its prompt; a list or an array of
    the right content is answered "write it as a tuple" and not passed, in the self-check and
    the grader alike; a list with wrong content is judged on its content and told the form."""
    from mha_helpers.grading.rules.registry import REGISTRY

    asked = [q for q in REGISTRY.values() if q.kind == "value" and isinstance(q.expected, tuple)]
    assert {q.grade_id for q in asked} >= {
        "q02_weights_shape",
        "q04_changes_with_h",
        "q06_roles_seed7",
    }
    for q in asked:
        assert "tuple" in q.prompt.lower(), q.grade_id
        for check in (lambda a, q=q: self_check(q.grade_id, a), lambda a, q=q: evaluate(q, a)):
            assert check(tuple(q.expected))["status"] == "passed", q.grade_id
            for slip in (list(q.expected), np.array(q.expected)):
                r = check(slip)
                assert r["status"] == "failed" and "write it as a tuple" in r["message"], r
    r = self_check("q02_weights_shape", [5, 5])  # wrong content: its cause, and the form
    assert r["cause"] == "one head" and "write it as a tuple" in r["message"], r
    # a question that asks for no tuple accepts a list (q07_cross_shape: "what is the shape")
    assert self_check("q07_cross_shape", [2, 4, 5, 7])["status"] == "passed"
    assert self_check("q07_cross_shape", (2, 4, 5, 7))["status"] == "passed"


def test_a_real_value_passes_at_the_precision_its_question_states():
    q = get_question("q08_decode_bound")
    assert "3 significant figures" in q.prompt
    true = q.expected
    for answer in (true, 4.586, 4.59, round(true, 5), float(f"{true:.3g}")):
        assert self_check(q.grade_id, answer)["status"] == "passed", answer
    for answer in (4.6, 4.58, 4.5):
        r = self_check(q.grade_id, answer)
        assert r["status"] == "failed" and "3 significant figures" in r["message"], answer


def test_every_value_question_with_a_real_answer_states_its_precision():
    from mha_helpers.grading.rules.registry import REGISTRY

    for q in REGISTRY.values():
        if q.kind != "value" or isinstance(q.expected, str):
            continue
        values = np.ravel(np.asarray(q.expected, dtype=object))
        real = [v for v in values if isinstance(v, float) and not float(v).is_integer()]
        if real:
            info, _ = value_data(q)
            assert info.get("sig_figs"), q.grade_id
            assert f"{info['sig_figs']} significant figures" in q.prompt, q.grade_id


def test_the_learner_guide_states_the_policy():
    from grading_helpers import ROOT

    guide = (ROOT / "docs" / "learner_guide.md").read_text(encoding="utf-8")
    assert "Counts are exact" in guide and "significant figures" in guide
    assert "whole number" in guide


# --- 2. no wrong pass by construction ---------------------------------------------------------


def test_building_the_full_score_matrix_fails_q08_tiled():
    def full_then_blocks(q, k, v, block_size):
        s = q @ k.T / np.sqrt(q.shape[1])  # the whole (n_q, n_k) matrix the question forbids
        m = s.max(axis=1)
        e = np.exp(s - m[:, None])
        return (e @ v) / e.sum(axis=1)[:, None]

    for r in (
        self_check("q08_tiled", full_then_blocks),
        evaluate(get_question("q08_tiled"), full_then_blocks),
    ):
        assert r["status"] == "error" and "score matrix" in r["hint"], r
    q = get_question("q08_tiled")
    assert self_check("q08_tiled", q.reference)["status"] == "passed"


def test_every_input_type_the_spec_allows_is_on_the_public_cases():
    def array_only(head_outputs, w_o):
        h, n, d = head_outputs.shape  # a list has no .shape
        return head_outputs.transpose(1, 0, 2).reshape(n, h * d) @ w_o

    r = self_check("q03_concat_project", array_only)
    assert r["status"] == "error" and "list" in r["hint"], r


# --- 3. a cause is named only when sure ------------------------------------------------------


def test_every_verdict_says_whether_it_names_a_cause():
    r = self_check("q02_split_heads", lambda x, h: x[:, None].repeat(h, 1).transpose(1, 0, 2))
    assert "cause" in r
    assert self_check("q03_d_head", 64)["cause"] is None


# --- 5. feedback you can read at a glance -----------------------------------------------------


def _wrong_verdict():
    def bare(head_outputs, w_o):
        a = np.asarray(head_outputs)
        return a.reshape(a.shape[1], -1) @ w_o

    return dict(self_check("q03_concat_project", bare), rtol=1e-6, atol=1e-8)


def test_the_html_verdict_has_words_an_icon_and_colour_pairs():
    r = _wrong_verdict()
    html = html_text(r)
    assert "not yet" in html and "✘" in html and "#b42318" in html
    # verdict, then what failed, then the hint, then expected versus got
    assert (
        html.index("not yet") < html.index("case 1") < html.index("hint") < html.index("expected")
    )
    # each number in its own non-breaking cell, the differing ones marked without colour too
    assert "white-space:nowrap" in html and "•" in html and "underline" in html
    for word, _icon, fg, bg in STYLES.values():
        assert fg and bg and word  # every style sets both colours, and has a word


def _luminance(hex_colour):
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_every_colour_pair_has_aa_contrast_whatever_the_theme():
    from mha_helpers.grading.selfcheck import render

    pairs = [(fg, bg) for _, _, fg, bg in STYLES.values()] + [(render._MARK_FG, render._MARK_BG)]
    for fg, bg in pairs:
        a, b = sorted((_luminance(fg), _luminance(bg)))
        assert (b + 0.05) / (a + 0.05) >= 4.5, (fg, bg)


def test_the_html_escapes_what_comes_from_the_answer():
    r = dict(_wrong_verdict(), message="<script>alert(1)</script>")
    assert "<script>" not in html_text(r)


def test_plain_text_elsewhere_keeps_the_same_order():
    text = plain_text(_wrong_verdict())
    lines = text.splitlines()
    assert lines[0] == "q03_concat_project: not yet [0/4 points]"
    assert lines[2].startswith("  hint: ") and lines[3].startswith("  expected: ")
    assert not re.search(r"<[a-z]", text)


# --- 4. diagnosis by the property that breaks -------------------------------------------------


def _softmax(s):
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(-1, keepdims=True)


def test_head_group_indexing_is_diagnosed_by_which_query_heads_are_wrong():
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        n, d = x.shape
        dh = d // num_heads
        q = (x @ w_q).reshape(n, num_heads, dh).transpose(1, 0, 2)
        k = (x @ w_k).reshape(n, num_kv_heads, dh).transpose(1, 0, 2)
        v = (x @ w_v).reshape(n, num_kv_heads, dh).transpose(1, 0, 2)
        js = [min(i // num_kv_heads, num_kv_heads - 1) for i in range(num_heads)]  # the slip
        outs = [_softmax(q[i] @ k[j].T / np.sqrt(dh)) @ v[j] for i, j in enumerate(js)]
        return np.concatenate(outs, axis=-1) @ w_o

    r = self_check("q05_gqa", gqa)
    assert r["cause"] is None and "query head 2 is wrong" in r["hint"], r["hint"]
    assert "i // group" in r["hint"]


def test_an_online_update_wrong_only_where_the_maximum_rose_is_told_so():
    def twice(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=-1))
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        return m_new, r * ell + p.sum(-1), r[:, None] ** 2 * acc + p @ v_block  # acc twice

    r = self_check("q08_online_update", twice)
    assert r["cause"] is None and "rows where the maximum rose" in r["hint"], r["hint"]


def test_a_count_off_by_one_term_is_told_which_term():
    def softmax_counted(n, d_model, num_heads):
        width = num_heads * (d_model // num_heads)
        return 8 * n * d_model * width + 4 * n**2 * width + 5 * num_heads * n**2

    r = self_check("q04_flops", softmax_counted)
    assert r["cause"] is None and "h n^2" in r["hint"] and "softmax" in r["hint"], r["hint"]


def test_a_value_off_by_a_factor_of_the_prompt_is_told_so():
    r = self_check("q08_mla_cache", (512 + 64) * 60 * 2 * 128)  # times the 128 heads
    assert r["cause"] is None and "times 128" in r["hint"], r["hint"]


# --- precision audit: a cause is named only when the error proves it ------------------------
# The wrong answers below are the judge-writer's own inventions (not an independent battery).


def test_python_max_on_arrays_is_not_told_it_tested_a_mask():
    from mha_helpers.grading.rules.judge import error_cause

    text = "The truth value of an array with more than one element is ambiguous. Use a.any()"
    assert error_cause("ValueError", text, "m_new = max(m, scores.max(axis=-1))") is None
    assert error_cause("ValueError", text, "if scores > 0:") is None
    assert error_cause("ValueError", text, None) is None  # no line: nothing proves a mask
    assert error_cause("ValueError", text, "if mask:") == "if mask"
    assert error_cause("ValueError", text, "if causal and mask:") == "if mask"

    def online_update(m, ell, acc, scores, v_block):  # Python's max() where np.maximum belongs
        m_new = max(m, scores.max(axis=-1))
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        return m_new, r * ell + p.sum(axis=-1), r[:, None] * acc + p @ v_block

    r = self_check("q08_online_update", online_update)
    assert r["status"] == "error" and r["cause"] is None
    assert "max()" in r["hint"] and "np.maximum" in r["hint"]


def test_error_causes_need_the_message_to_prove_them():
    from mha_helpers.grading.rules.judge import error_cause

    # a tuple (not a float) used as a size is no "float size"
    assert error_cause("TypeError", "'tuple' object cannot be interpreted as an integer") is None
    assert error_cause("TypeError", "'float' object cannot be interpreted as an integer") == (
        "float size"
    )
    # a list indexed like an array is not a float index
    assert error_cause("TypeError", "list indices must be integers or slices, not tuple") == (
        "list, not an array"
    )
    assert error_cause("TypeError", "list indices must be integers or slices, not float") == (
        "float index"
    )
    assert (
        error_cause(
            "TypeError", "slice indices must be integers or None or have an __index__ method"
        )
        is None
    )
    # swapped shapes say the axes are swapped, not that a transpose is missing (a reshape or a
    # mask built (n_k, n_q) gives them too)
    text = "operands could not be broadcast together with shapes (3,5) (5,3)"
    assert error_cause("ValueError", text) is None


# --- q08_tiled: "over blocks of block_size keys" is watched ---------------------------------
# The answers below are the judge-writer's own (not an independent battery).


def _online_update(m, ell, acc, scores, v_block):
    m_new = np.maximum(m, scores.max(axis=-1))
    r = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, r * ell + p.sum(axis=-1), r[:, None] * acc + p @ v_block


def _tiled_lists(q, k, v, block_size):  # lists converted with np.asarray: copies of k and v
    q, k, v = np.asarray(q, dtype=float), np.asarray(k, dtype=float), np.asarray(v, dtype=float)
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for s in range(0, len(k), block_size):
        b = slice(s, min(s + block_size, len(k)))
        m, ell, acc = _online_update(m, ell, acc, q @ k[b].T / np.sqrt(d_k), v[b])
    return acc / ell[:, None]


def _tiled_einsum_query_blocks(q, k, v, block_size):  # query blocks as well as key blocks
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    out = []
    for a in range(0, len(q), 5):
        qb = q[a : a + 5]
        m, ell, acc = np.full(len(qb), -np.inf), np.zeros(len(qb)), np.zeros((len(qb), v.shape[1]))
        for s in range(0, len(k), block_size):
            scores = np.einsum("qd,kd->qk", qb, k[s : s + block_size]) / np.sqrt(q.shape[1])
            m, ell, acc = _online_update(m, ell, acc, scores, v[s : s + block_size])
        out.append(acc / ell[:, None])
    return np.concatenate(out)


def _tiled_with_key_indices(q, k, v, block_size):  # an index array over all keys is no score row
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    keys = np.arange(len(k))
    m, ell, acc = np.full(len(q), -np.inf), np.zeros(len(q)), np.zeros((len(q), v.shape[1]))
    for s in range(0, len(k), block_size):
        idx = keys[s : s + block_size]
        m, ell, acc = _online_update(m, ell, acc, q @ k[idx].T / np.sqrt(q.shape[1]), v[idx])
    return acc / ell[:, None]


def _one_query_over_all_keys(q, k, v, block_size):  # wrong: a length-n_k row per query
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    out = np.zeros((len(q), v.shape[1]))
    for i in range(len(q)):
        s = k @ q[i] / np.sqrt(q.shape[1])
        m, ell, acc = _online_update(
            np.full(1, -np.inf), np.zeros(1), np.zeros((1, v.shape[1])), s[None, :], v
        )
        out[i] = acc[0] / ell[0]
    return out


def _tiled_watch(answer, cases):
    from mha_helpers.grading.sandbox.inside.watch import run_cases

    q = get_question("q08_tiled")
    return run_cases(answer, cases, limits=q.extra["limits"])[0]


def test_tiled_answers_over_key_blocks_pass_in_every_legitimate_form():
    q = get_question("q08_tiled")
    for answer in (q.reference, _tiled_lists, _tiled_einsum_query_blocks, _tiled_with_key_indices):
        assert self_check("q08_tiled", answer)["status"] == "passed", answer
        assert evaluate(q, answer)["status"] == "passed", answer
    rng = np.random.default_rng(3)
    qq, kk, vv = rng.normal(size=(6, 3)), rng.normal(size=(41, 3)), rng.normal(size=(41, 5))
    cases = [
        (qq.tolist(), kk.tolist(), vv.tolist(), 4),  # lists; a last short block
        (qq.astype(np.float32), kk.astype(np.float32), vv.astype(np.float32), 7),
        (qq, kk, vv, 1),  # block_size 1
        (qq, kk, vv, 41),  # block_size == n_k
        (qq, kk, vv, 100),  # block_size > n_k
    ]
    for answer in (_tiled_lists, _tiled_einsum_query_blocks):
        results = _tiled_watch(answer, cases)
        assert [r.raised for r in results] == [None] * len(cases), answer
        for r, c in zip(results, cases):
            assert np.allclose(r.value, q.reference(*c), rtol=1e-5)


def test_one_query_at_a_time_over_all_keys_is_told_it_has_no_key_blocks():
    q = get_question("q08_tiled")
    for r in (
        self_check("q08_tiled", _one_query_over_all_keys),
        evaluate(q, _one_query_over_all_keys),
    ):
        assert r["status"] == "error" and r["cause"] == "no key blocks", r
        assert "block_size keys" in r["hint"]
    rng = np.random.default_rng(4)
    cases = [
        (
            rng.normal(size=(6, 3)).tolist(),
            rng.normal(size=(41, 3)).tolist(),
            rng.normal(size=(41, 5)).tolist(),
            4,
        )
    ]
    (res,) = _tiled_watch(_one_query_over_all_keys, cases)
    assert res.raised and res.raised[0] == "NoKeyBlocks" and "(41,)" in res.raised[1]
    # block_size >= n_k: one block is all the keys, nothing to tell
    (res,) = _tiled_watch(_one_query_over_all_keys, [cases[0][:3] + (41,)])
    assert res.raised is None


# --- the stated precision is the precision a person rounds to --------------------------------


def test_an_answer_written_to_more_figures_rounds_half_up_from_its_decimal_text():
    # q08_decode_bound is 4.5857... ms "to 3 significant figures": 4.585 is 4.59 to a person
    # (binary rounding made it 4.58, a false reject), 4.595 is 4.60 (binary made it 4.59)
    q = get_question("q08_decode_bound")
    for check in (lambda a, q=q: self_check(q.grade_id, a), lambda a, q=q: evaluate(q, a)):
        assert check(4.585)["status"] == "passed"
        assert check(4.595)["status"] == "failed"
    assert self_check("q08_decode_bound", 4.58)["status"] == "failed"
    for v in (4.59, 4.586, 4.5857, 4.594):
        assert self_check("q08_decode_bound", v)["status"] == "passed", v


def test_every_real_valued_question_states_the_precision_it_accepts():
    from mha_helpers.grading.rules.judge import sig_figs_of

    checked = 0
    for gid in ("q08_decode_bound",):  # the value questions whose answer is not whole
        q = get_question(gid)
        k = sig_figs_of(q)
        assert k and f"to {k} significant figures" in q.prompt, gid
        checked += 1
    assert checked


def test_the_full_score_matrix_is_named_only_when_it_was_seen():
    # the judge-writer's own answer: the (n_q, n_k) matrix in a local variable is seen, named
    from mha_helpers.grading.rules.judge import error_cause, error_hint

    def full_matrix(q, k, v, block_size):
        s = q @ k.T / np.sqrt(q.shape[1])
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return (e @ v) / e.sum(axis=1, keepdims=True)

    r = self_check("q08_tiled", full_matrix)
    assert r["status"] == "error" and r["cause"] == "full score matrix", r
    assert "(3, 10)" in r["message"]  # the shape seen, on the first public case
    # only the memory held is known (temporaries, or many copies of the inputs): what fails is
    # said, no cause
    text = (
        "the call held an array (or arrays) as large as the whole n_q x n_k score matrix at "
        "once, which the question forbids"
    )
    assert error_cause("ArrayTooLarge", text) is None
    assert "at least half of that matrix" in error_hint("ArrayTooLarge", text)


def test_an_extra_required_parameter_is_not_told_to_give_the_mask_a_default():
    # the judge-writer's own answers: an extra parameter (named), and a mask without default
    q = get_question("q08_tiled")

    def tiled(q_, k, v, block_size, scale):
        return q.reference(q_, k, v, block_size)

    r = self_check("q08_tiled", tiled)
    assert r["status"] == "error" and r["cause"] is None and "scale" in r["hint"], r
    layer = get_question("q02_full_layer")

    def no_default(x, w_q, w_k, w_v, w_o, num_heads, mask):
        return layer.reference(x, w_q, w_k, w_v, w_o, num_heads, mask)

    r = self_check("q02_full_layer", no_default)
    assert r["status"] == "error" and r["cause"] == "missing default", r


def test_a_none_from_the_learners_own_helper_is_not_called_a_list_or_a_number():
    from mha_helpers.grading.rules.judge import error_cause, error_hint

    text = "'NoneType' object has no attribute 'shape'"  # the judge-writer's own example
    assert error_cause("AttributeError", text) is None and "None" in error_hint(
        "AttributeError", text
    )
    assert error_cause("AttributeError", "'list' object has no attribute 'shape'") == (
        "list, not an array"
    )


def test_a_tuple_of_words_with_an_item_not_among_the_prompts_words_is_told_the_words():
    """Invented answers (judge2's) to q06_roles_seed7, whose prompt quotes 'previous' / 'first':
    an abbreviation or a column index is a slip of form, told the words; capitals pass."""
    q = get_question("q06_roles_seed7")
    right = tuple(q.expected)
    assert self_check(q.grade_id, tuple(w.upper() for w in right))["status"] == "passed"
    short = tuple(w[:4] for w in right)
    for answer, said in ((short, "written out in full"), ((0, 1, 0, 1), "as text")):
        for r in (self_check(q.grade_id, answer), evaluate(q, answer)):
            assert r["status"] == "failed" and said in r["message"], r
            assert "'previous' or 'first'" in r["message"] and r["cause"] == "form", r
