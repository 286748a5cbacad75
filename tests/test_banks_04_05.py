"""The graded questions of exercises 04 (cost) and 05 (variants).

For every question: the reference passes on the public cases and on fresh ones (the
instructor's grader draws new cases); every classic mistake fails on the public cases and gets
its OWN hint back, which needs the public cases to tell each mistake apart from the right
answer and from every other mistake; each question forbids the course helper that does its
job; and the references agree with the course's implementations they stand in for.

The checks every bank gets (references on fresh cases, mistakes failing and told apart, each
mistake's own hint from the bank and from the released data) are in tests/test_banks.py and
tests/test_selfcheck.py; this file keeps what is particular to these exercises.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_helpers import attention_flops, attention_params, grouped_query_attention, kv_cache_bytes
from mha_helpers.grading import get_question, questions_for
from mha_helpers.grading.selfcheck.check import evaluate

ASSIGNMENTS = ("04_cost", "05_variants")
QUESTIONS = [q for a in ASSIGNMENTS for q in questions_for(a) if q.kind != "manual"]
SEEDS = [1, 2, 3, 17, 123]


def _public(q):
    return q.cases(np.random.default_rng(q.public_seed))


def test_stubs_are_not_attempted():
    def stub(*args):
        raise NotImplementedError("write me")

    for q in QUESTIONS:
        assert evaluate(q, stub if q.kind == "function" else None)["status"] == "not-attempted"


# --- the hints the second edition asked for, each on its own slip ---------------------------


def _hint_for(gid, answer):
    return evaluate(get_question(gid), answer)["hint"]


def test_a_cache_answer_that_hard_codes_2_bytes_is_told_about_bytes_per_element():
    def two_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2 * num_layers * num_kv_heads * d_head * seq_len * batch * 2

    hint = _hint_for("q05_cache_bytes", two_bytes)
    assert "bytes_per_element" in hint and "keys and values" not in hint


def test_a_cache_answer_with_the_group_size_is_told_so():
    def group(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return (
            2
            * num_layers
            * (num_heads // num_kv_heads)
            * d_head
            * bytes_per_element
            * seq_len
            * batch
        )

    assert "group size" in _hint_for("q05_cache_bytes", group)


def test_a_cache_answer_that_forgets_v_is_told_about_keys_and_values():
    def k_only(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return num_layers * num_kv_heads * d_head * bytes_per_element * seq_len * batch

    assert "keys and values" in _hint_for("q05_cache_bytes", k_only)


def test_the_cache_answer_must_not_use_the_query_heads():
    """The public cases have num_heads != num_kv_heads everywhere but in no case where the
    mistake could pass: an answer using the query heads fails."""
    q = get_question("q05_cache_bytes")
    assert all(c[1] != c[2] for c in _public(q))


@pytest.mark.parametrize(
    "gid, helper",
    [
        ("q04_params", "mha_helpers.cost.attention_params"),
        ("q04_flops", "mha_helpers.cost.attention_flops"),
        ("q05_gqa", "mha_helpers.heads.grouped_query_attention"),
        ("q05_cache_bytes", "mha_helpers.cost.kv_cache_bytes"),
    ],
)
def test_each_question_forbids_the_helper_that_does_its_job(gid, helper):
    assert helper in get_question(gid).forbidden


def test_an_answer_that_calls_the_helper_scores_nothing_and_is_told_why():
    def via_helper(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return kv_cache_bytes(num_layers, num_kv_heads, d_head, seq_len, bytes_per_element, batch)

    r = evaluate(get_question("q05_cache_bytes"), via_helper)
    assert r["points"] == 0 and "course's own" in r["message"]


@pytest.mark.parametrize("seed", [0, *SEEDS])
def test_references_agree_with_the_course_functions(seed):
    rng = np.random.default_rng
    for d_model, h, bias in get_question("q04_params").cases(rng(seed)):
        if d_model % h:  # the exercise allows it (d_head = d_model // h); the course's helper not
            continue
        assert get_question("q04_params").reference(d_model, h, bias) == attention_params(
            d_model, h, bias=bias
        )
    for n, d_model, h in get_question("q04_flops").cases(rng(seed)):  # heads d_model // h wide
        assert (
            get_question("q04_flops").reference(n, d_model, h)
            == attention_flops(n, d_model, h, d_head=d_model // h)["total"]
        )
    for layers, h, g, d_head, seq_len, b, batch in get_question("q05_cache_bytes").cases(rng(seed)):
        assert get_question("q05_cache_bytes").reference(
            layers, h, g, d_head, seq_len, b, batch
        ) == kv_cache_bytes(layers, g, d_head, seq_len, b, batch)
    for x, w_q, w_k, w_v, w_o, h, g in get_question("q05_gqa").cases(rng(seed)):
        np.testing.assert_allclose(
            get_question("q05_gqa").reference(x, w_q, w_k, w_v, w_o, h, g),
            grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads=h, num_kv_heads=g),
            rtol=1e-12,
            atol=1e-12,
        )


def test_value_answers_follow_from_the_formulas():
    assert get_question("q04_weight_entries").expected == 12 * 1024**2
    per_sequence = kv_cache_bytes(80, 8, 128, 4096)
    assert get_question("q05_max_batch").expected == 40 * 2**30 // per_sequence
    # what changes when h doubles: (parameters, FLOPs, attention weights, d_head)
    d, n = 64, 10
    changed = (
        attention_params(d, 4) != attention_params(d, 8),
        attention_flops(n, d, 4)["total"] != attention_flops(n, d, 8)["total"],
        4 * n * n != 8 * n * n,
        d // 4 != d // 8,
    )
    assert get_question("q04_changes_with_h").expected == changed


def test_mean_pool_of_identical_heads_is_exact():
    """If the heads of a group share weights, pooling then GQA reproduces MHA."""
    pool = get_question("q05_mean_pool").reference
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 8))
    w_q, w_o = rng.normal(size=(8, 8)), rng.normal(size=(8, 8))
    k_a, k_b, v_a, v_b = (rng.normal(size=(8, 2)) for _ in range(4))
    w_k = np.concatenate([k_a, k_a, k_b, k_b], axis=1)
    w_v = np.concatenate([v_a, v_a, v_b, v_b], axis=1)
    mha = grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads=4, num_kv_heads=4)
    gqa = grouped_query_attention(
        x, w_q, pool(w_k, 4, 2), pool(w_v, 4, 2), w_o, num_heads=4, num_kv_heads=2
    )
    np.testing.assert_allclose(gqa, mha, rtol=1e-12, atol=1e-12)
