"""Battery C is honest: every wrong entry is wrong and every right entry right by battery C's own
references (tests/lesson_battery/verify_c.py), and it covers every auto-graded question."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from tests.lesson_battery import battery_c, verify_c
from tests.lesson_battery.format import Right, Wrong

ROOT = Path(__file__).resolve().parents[1]


def auto_graded_questions() -> set[str]:
    """grade_ids of the questions checked automatically: code cells with points whose grade_id
    is ``<id>_check``, read from the exercises' nbgrader metadata."""
    ids = set()
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            gid = meta.get("grade_id", "")
            if cell["cell_type"] == "code" and meta.get("grade") and meta.get("points") and gid.endswith("_check"):
                ids.add(gid[: -len("_check")])
    return ids


def test_the_exercises_have_auto_graded_questions():
    ids = auto_graded_questions()
    assert len(ids) >= 30, ids
    assert "q08_tiled" in ids and "q01_scores" in ids


def test_battery_c_covers_every_auto_graded_question():
    wrong = collections.Counter(e.grade_id for e in battery_c.WRONG)
    right = collections.Counter(e.grade_id for e in battery_c.RIGHT)
    ids = auto_graded_questions()
    thin = {g: wrong[g] for g in ids if wrong[g] < 6}
    assert not thin, f"questions with fewer than 6 wrong answers: {thin}"
    assert not {g for g in ids if right[g] < 1}, "every question has a right answer in an unusual form"
    unknown = (set(wrong) | set(right)) - ids
    assert not unknown, f"entries for questions that are not auto-graded: {unknown}"
    assert len(battery_c.WRONG) >= 320 and len(battery_c.RIGHT) >= 60


def test_entries_are_well_formed_and_distinct():
    for e in battery_c.WRONG:
        assert isinstance(e, Wrong) and e.causes, e.name
    for e in battery_c.RIGHT:
        assert isinstance(e, Right)
    keys = [(e.grade_id, e.name) for e in battery_c.WRONG + battery_c.RIGHT]
    assert len(keys) == len(set(keys)), "two entries share a question and a name"
    sources = [(e.grade_id, e.source) for e in battery_c.WRONG + battery_c.RIGHT]
    assert len(sources) == len(set(sources)), "two entries have the same source"


def test_the_references_reject_what_they_should():
    # The verifier itself can fail: a stub is wrong, a mutating answer is wrong, a float count is wrong.
    stub = Wrong("q04_params", "stub", "def count_params(d_model, num_heads, bias):\n    return 0\n",
                 "count_params", ("x",))
    assert verify_c.is_right(stub)[0] is False
    floaty = Wrong("q03_d_head", "float", "d_head = 64.0\n", "d_head", ("x",))
    assert verify_c.is_right(floaty)[0] is False
    assert verify_c.is_right(Right("q03_d_head", "int", "d_head = 64\n", "d_head"))[0] is True


@pytest.mark.parametrize("entry", battery_c.WRONG, ids=lambda e: f"{e.grade_id}:{e.name}")
def test_wrong_entry_is_wrong(entry):
    ok, _ = verify_c.is_right(entry)
    assert not ok, f"{entry.grade_id} / {entry.name} is right by battery C's references"


@pytest.mark.parametrize("entry", battery_c.RIGHT, ids=lambda e: f"{e.grade_id}:{e.name}")
def test_right_entry_is_right(entry):
    ok, why = verify_c.is_right(entry)
    assert ok, f"{entry.grade_id} / {entry.name}: {why}"
