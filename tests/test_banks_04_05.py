"""The graded questions of exercises 04 (cost) and 05 (variants).

For every question: the reference answer passes on the public cases and on fresh cases (the
instructor's grader draws new ones), each classic mistake fails *and* gets its own targeted hint,
and the reference agrees with the course's implementation it replaces.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_helpers import (attention_flops, attention_params, grouped_query_attention,
                         kv_cache_bytes)
from mha_helpers.grading.check import evaluate
from mha_helpers.grading.questions import get_question, questions_for

QUESTIONS = [q for a in ("04_cost", "05_variants") for q in questions_for(a) if q.kind != "manual"]
SEEDS = [None, 1, 2, 3, 17, 123]


def _cases(q, seed):
    return None if seed is None else q.cases(np.random.default_rng(seed))


def test_each_exercise_has_at_least_three_graded_questions():
    for assignment in ("04_cost", "05_variants"):
        graded = [q for q in questions_for(assignment) if q.kind != "manual"]
        assert len(graded) >= 3, assignment


# Function questions on the public cases and on fresh ones; value questions once.
PAIRS = [(q, seed) for q in QUESTIONS for seed in (SEEDS if q.kind == "function" else [None])]


@pytest.mark.parametrize("q, seed", PAIRS, ids=[f"{q.grade_id}-{s}" for q, s in PAIRS])
def test_reference_passes_and_every_mistake_gets_its_hint(q, seed):
    cases = _cases(q, seed) if q.kind == "function" else None
    right = q.reference if q.kind == "function" else q.expected
    assert evaluate(q, right, cases)["status"] == "passed"
    for m in q.mistakes:
        r = evaluate(q, m.answer, cases)
        assert r["status"] == "failed", m.name
        assert r["hint"] == m.hint, m.name


def test_stubs_are_not_attempted():
    def stub(*args):
        raise NotImplementedError("write me")

    for q in QUESTIONS:
        answer = stub if q.kind == "function" else None
        assert evaluate(q, answer)["status"] == "not-attempted"


@pytest.mark.parametrize("seed", SEEDS[1:])
def test_references_agree_with_the_course_functions(seed):
    rng = np.random.default_rng
    for d_model, h, g, bias in get_question("q04_params").cases(rng(seed)):
        assert get_question("q04_params").reference(d_model, h, g, bias) == \
            attention_params(d_model, h, g, bias=bias)
    for n, d_model, h in get_question("q04_flops").cases(rng(seed)):
        assert get_question("q04_flops").reference(n, d_model, h) == \
            attention_flops(n, d_model, h)["total"]
    for args in get_question("q05_cache_bytes").cases(rng(seed)):
        assert get_question("q05_cache_bytes").reference(*args) == kv_cache_bytes(*args)
    for x, w_q, w_k, w_v, w_o, h, g in get_question("q05_gqa").cases(rng(seed)):
        np.testing.assert_allclose(
            get_question("q05_gqa").reference(x, w_q, w_k, w_v, w_o, h, g),
            grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads=h, num_kv_heads=g),
            rtol=1e-12, atol=1e-12)


def test_value_answers_follow_from_the_formulas():
    assert get_question("q04_weight_entries").expected == 12 * 1024**2
    per_sequence = kv_cache_bytes(80, 8, 128, 4096)
    assert get_question("q05_max_batch").expected == 40 * 2**30 // per_sequence
    # what changes when h doubles: (parameters, FLOPs, attention weights, d_head)
    d, n = 64, 10
    changed = (attention_params(d, 4) != attention_params(d, 8),
               attention_flops(n, d, 4)["total"] != attention_flops(n, d, 8)["total"],
               4 * n * n != 8 * n * n, d // 4 != d // 8)
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
    gqa = grouped_query_attention(x, w_q, pool(w_k, 4, 2), pool(w_v, 4, 2), w_o, num_heads=4,
                                  num_kv_heads=2)
    np.testing.assert_allclose(gqa, mha, rtol=1e-12, atol=1e-12)
