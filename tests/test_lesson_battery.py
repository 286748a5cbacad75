"""Every independent battery in ``tests/lesson_battery/`` (``battery_*.py``, found by name, so a
battery added later is run without touching this file) through the learner's self-check.

Required of every battery (course issue 33): no wrong answer passes, no right answer is
rejected. The hint figures (hinted, wrong-cause, unhinted) are printed (``pytest -s``) and
reported by ``make bench``; they are targets, measured, not asserted here, except that a
battery's figures must be computable for every one of its entries.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from lesson_battery import harness
from lesson_battery.format import Right, Wrong

HERE = Path(__file__).resolve().parent / "lesson_battery"
BATTERIES = sorted(p.stem for p in HERE.glob("battery_*.py"))


def _outcomes(name: str):
    module = importlib.import_module(f"lesson_battery.{name}")
    entries = list(module.WRONG) + list(module.RIGHT)
    assert all(isinstance(e, Wrong | Right) for e in entries)
    return harness.run(entries)


@pytest.fixture(scope="module", params=BATTERIES)
def battery(request):
    return request.param, _outcomes(request.param)


def test_there_is_a_battery():
    assert "battery_a" in BATTERIES


def test_no_wrong_answer_passes(battery):
    name, outcomes = battery
    print(f"\n{name}\n{harness.table(outcomes)}")
    passed = [f"{o.entry.grade_id}: {o.entry.name}" for o in outcomes if o.outcome == "wrong-pass"]
    assert passed == [], (name, passed)


def test_no_right_answer_is_rejected(battery):
    name, outcomes = battery
    rejected = [
        f"{o.entry.grade_id}: {o.entry.name}: {o.feedback[:200]}"
        for o in outcomes
        if o.outcome == "false-reject"
    ]
    assert rejected == [], (name, rejected)


def test_every_entry_gets_an_outcome(battery):
    _, outcomes = battery
    known = {"hinted", "wrong-cause", "unhinted", "wrong-pass", "passed", "false-reject"}
    assert {o.outcome for o in outcomes} <= known
