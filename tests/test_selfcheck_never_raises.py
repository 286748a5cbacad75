"""The self-check answers every answer, whatever it holds (course issue 33).

Battery D (written blind, tests/lesson_battery/battery_d.py) found a learner's answer that made
the check itself raise: ``online_update`` returning ``m_new`` and ``ell_new`` shaped ``(n_q, 1)``
next to an ``(n_q, d_v)`` accumulator, a ragged tuple one diagnosis could not take apart. A
learner's check cell must print a verdict, not a traceback from the course. This is the class
of that failure: for every auto-graded question, results of every odd structure (ragged
tuples, extra or missing axes, objects whose comparisons raise, strings, dicts, generators,
complex numbers, NaN, numbers too big for a float) must get a verdict, and none of them may
pass. (These odd answers are the judge-writers' own, not an independent battery's.)
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_helpers.grading import self_check
from mha_helpers.grading.rules import codec
from mha_helpers.grading.selfcheck import check

DATA = check._load_data()
FUNCTIONS = sorted(g for g, q in DATA.items() if q["kind"] == "function")
VALUES = sorted(g for g, q in DATA.items() if q["kind"] == "value")
STATUSES = {"passed", "failed", "error", "not-attempted", "manual"}


class Hostile:
    """Every comparison, conversion and attribute of it raises."""

    def __eq__(self, other):
        raise RuntimeError("no comparing me")

    __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __hash__ = None

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array of me")

    def __float__(self):
        raise RuntimeError("no float of me")

    def __len__(self):
        raise RuntimeError("no length")

    def __iter__(self):
        raise RuntimeError("no iterating me")


def _items(e):
    return list(e) if isinstance(e, tuple) else [e]


def _column(x):
    return np.asarray(x)[..., None]


ODD_RESULTS = {
    "every item with an extra axis": lambda e: (
        tuple(_column(x) for x in _items(e)) if isinstance(e, tuple) else _column(e)
    ),
    "a ragged tuple (first item with an extra axis)": lambda e: (_column(_items(e)[0]), *_items(e)),
    "the result twice": lambda e: (e, e),
    "wrapped in a list": lambda e: [e],
    "as text": lambda e: str(e),
    "in a dict": lambda e: {"result": e},
    "a generator": lambda e: (x for x in _items(e)),
    "complex": lambda e: (
        tuple(np.asarray(x) + 1j for x in _items(e)) if isinstance(e, tuple) else np.asarray(e) + 1j
    ),
    "all NaN": lambda e: (
        tuple(np.full(np.shape(x), np.nan) for x in _items(e))
        if isinstance(e, tuple)
        else np.full(np.shape(e), np.nan)
    ),
    "an object array of objects": lambda e: np.array([object(), object()], dtype=object),
    "a hostile object": lambda e: Hostile(),
    "a tuple holding a hostile object": lambda e: (Hostile(), *_items(e)[1:]),
    "a number too big for a float": lambda e: 10**400,
    "None inside a tuple": lambda e: (None, *_items(e)[1:]),
}


def _same(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    except (TypeError, ValueError):
        return False


def _answer(grade_id: str, odd):
    """A function that recognises which public case it is called on and returns an odd form
    of that case's expected result."""
    pub = DATA[grade_id]["public"]
    cases = [tuple(codec.decode(c)) for c in pub["cases"]]
    expected = [codec.decode(e) for e in pub["expected"]]

    def answer(*args):
        for case, want in zip(cases, expected):
            if len(case) == len(args) and all(_same(a, b) for a, b in zip(args, case)):
                return odd(want)
        return odd(expected[0])

    return answer


@pytest.mark.parametrize("odd", sorted(ODD_RESULTS))
@pytest.mark.parametrize("grade_id", FUNCTIONS)
def test_a_function_answer_of_any_structure_gets_a_verdict_and_does_not_pass(grade_id, odd):
    verdict = self_check(grade_id, _answer(grade_id, ODD_RESULTS[odd]))
    assert isinstance(verdict, dict) and verdict["status"] in STATUSES, verdict
    assert verdict["status"] != "passed", (grade_id, odd)
    assert verdict["message"], (grade_id, odd, verdict)


def test_the_ragged_online_update_of_battery_d_is_told_its_shapes():
    """The entry that crashed the check: m_new and ell_new kept a column axis."""

    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m[:, None], scores.max(axis=-1, keepdims=True))
        p = np.exp(scores - m_new)
        rescale = np.exp(m[:, None] - m_new)
        return (
            m_new,
            rescale * ell[:, None] + p.sum(axis=-1, keepdims=True),
            rescale * acc + p @ v_block,
        )

    verdict = self_check("q08_online_update", online_update)
    assert verdict["status"] == "failed"
    assert "(3, 1)" in verdict["message"] and "(3,)" in verdict["message"], verdict["message"]


ODD_VALUES = {
    "a dict": {"answer": 1},
    "a set": {1, 2},
    "bytes": b"64",
    "a hostile object": Hostile(),
    "complex": 3 + 4j,
    "NaN": float("nan"),
    "infinity": float("inf"),
    "a number too big for a float": 10**400,
    "an object array": np.array([object()], dtype=object),
    "a nested ragged list": [[1, 2], [3]],
    "a generator": (i for i in range(3)),
}


@pytest.mark.parametrize("odd", sorted(ODD_VALUES))
@pytest.mark.parametrize("grade_id", VALUES)
def test_a_value_answer_of_any_kind_gets_a_verdict_and_does_not_pass(grade_id, odd):
    verdict = self_check(grade_id, ODD_VALUES[odd])
    assert isinstance(verdict, dict) and verdict["status"] in STATUSES, verdict
    assert verdict["status"] != "passed", (grade_id, odd)
    assert verdict["message"], (grade_id, odd, verdict)
