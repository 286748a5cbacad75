"""The measuring test of the self-check's diagnosis (issue 24): a battery of realistic wrong
answers (``tests/wrong_answers.py``, at least 8 per function question, written from the
lessons' warnings) goes through the learner's self-check. No wrong answer may pass, and at
least 90 % of the verdicts must name the cause. The rates per exercise are printed (run with
``-s`` to see them; ``benchmarks/bench_selfcheck.py`` reports them too).

Plus the rule that keeps hints honest: an answer that agrees with a listed mistake on one case
but not on the others is not told it made that mistake.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from wrong_answers import BATTERY, measure, summary

from mha_helpers.grading.classroom.banks import load_banks
from mha_helpers.grading.course import find_course
from mha_helpers.grading.rules.cases import copy_args, expected_outputs, public_cases
from mha_helpers.grading.rules.registry import REGISTRY
from mha_helpers.grading.selfcheck.check import self_check

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
load_banks(find_course())
FUNCTIONS = [q for q in REGISTRY.values() if q.kind == "function"]


def test_every_function_question_has_at_least_8_wrong_answers_in_the_battery():
    counts = collections.Counter(w.grade_id for w in BATTERY)
    assert {q.grade_id: counts[q.grade_id] for q in FUNCTIONS if counts[q.grade_id] < 8} == {}
    assert set(counts) <= set(REGISTRY)  # no answer for a question that does not exist


def test_no_wrong_answer_passes_and_at_least_90_percent_name_the_cause():
    rows = measure(self_check)
    passed = [f"{w.grade_id} / {w.name}" for w, status, _, _ in rows if status == "passed"]
    assert passed == []
    missed = [f"{w.grade_id} / {w.name}: {fb[:200]}" for w, _, hinted, fb in rows if not hinted]
    total = len(rows)
    print()
    for ex, (n, _, good) in sorted(summary(rows).items()):
        print(f"exercise {ex}: {good}/{n} wrong answers hinted right ({100 * good / n:.0f} %)")
    print(f"all: {total - len(missed)}/{total} ({100 * (total - len(missed)) / total:.1f} %)")
    assert total - len(missed) >= 0.9 * total, "\n".join(missed)


@pytest.mark.parametrize("q", FUNCTIONS, ids=lambda q: q.grade_id)
def test_agreeing_with_a_mistake_on_one_case_only_does_not_name_it(q):
    """Right on every public case but one, where the answer returns what a listed mistake
    returns: the verdict fails it, and does not name that mistake (it did not make it)."""
    cases = public_cases(q)
    expected, outputs = expected_outputs(q, cases)
    for j, m in enumerate(q.mistakes):
        wrong_on = [i for i, row in enumerate(outputs) if _differs(row[j], expected[i])]
        if len(wrong_on) < 2:
            continue  # the mistake shows on one case only: agreeing there IS making it
        target = wrong_on[-1]
        calls = iter(range(len(cases)))

        def answer(*args, _target=target, _j=j, _calls=calls):
            i = next(_calls)
            if i == _target:
                return outputs[i][_j]
            return q.reference(*copy_args(args))

        r = self_check(q.grade_id, answer)
        assert r["status"] != "passed", (q.grade_id, m.name)
        if r["status"] == "failed":
            assert r.get("mistake") != m.name, (q.grade_id, m.name)


def _differs(a, b) -> bool:
    from mha_helpers.grading.rules.cases import NO_OUTPUT
    from mha_helpers.grading.rules.compare import difference

    if a is NO_OUTPUT:
        return False
    return difference(b, a, equal_nan=True) is not None


def test_the_self_check_and_the_graders_rules_give_every_wrong_answer_the_same_verdict():
    """The diagnosis (matching, the property that breaks an answer, error hints) is the judge's,
    so the learner's check and :func:`evaluate` (the grader's rules, expected outputs computed
    from the bank) agree on every answer of the battery."""
    from mha_helpers.grading.selfcheck.check import evaluate

    for w in BATTERY:
        with np.errstate(all="ignore"):
            mine = self_check(w.grade_id, w.answer)
            theirs = evaluate(REGISTRY[w.grade_id], w.answer)
        key = ("status", "points", "hint", "message")
        assert [mine.get(k) for k in key] == [theirs.get(k) for k in key], (w.grade_id, w.name)
