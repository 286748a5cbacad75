"""Battery D is what it claims: every wrong entry is wrong and every right entry right, by
independent reference implementations (``lesson_battery/verify_d.py``), and it covers every
auto-graded question of the exercises (read from their nbgrader metadata).

These tests do not run the self-check: ``tests/test_lesson_battery.py`` does, for every battery.
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest
from lesson_battery import battery_d, verify_d
from lesson_battery.format import Right, Wrong

ROOT = Path(__file__).resolve().parent.parent


def _auto_graded() -> set[str]:
    ids = set()
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            gid = meta.get("grade_id", "")
            if (
                meta.get("grade")
                and not meta.get("solution")
                and meta.get("points")
                and gid.endswith("_check")
            ):
                ids.add(gid[: -len("_check")])
    return ids


def test_the_exercises_have_auto_graded_questions():
    ids = _auto_graded()
    assert len(ids) >= 30 and "q08_tiled" in ids and "q01_one_opinion" not in ids


def test_every_auto_graded_question_is_covered():
    ids = _auto_graded()
    wrong = collections.Counter(e.grade_id for e in battery_d.WRONG)
    right = {e.grade_id for e in battery_d.RIGHT}
    assert {g for g in ids if wrong[g] < 6} == set()
    assert ids - right == set()
    assert set(wrong) | right <= ids  # no entry for a question that does not exist


def test_sizes():
    assert len(battery_d.WRONG) >= 320
    assert len(battery_d.RIGHT) >= 60
    assert all(isinstance(e, Wrong) for e in battery_d.WRONG)
    assert all(isinstance(e, Right) for e in battery_d.RIGHT)


def test_names_are_unique_and_causes_compile():
    names = collections.Counter((e.grade_id, e.name) for e in battery_d.WRONG + battery_d.RIGHT)
    assert [k for k, n in names.items() if n > 1] == []
    for e in battery_d.WRONG:
        assert e.causes, e.name
        for c in e.causes:
            re.compile(c, re.IGNORECASE)


def test_references_agree_with_the_exercise_texts():
    assert verify_d.self_test() == []


@pytest.mark.parametrize("entry", battery_d.WRONG, ids=lambda e: f"{e.grade_id}:{e.name}")
def test_wrong_entry_is_wrong(entry):
    assert verify_d.problems(entry), "this wrong answer is right by the reference"


@pytest.mark.parametrize("entry", battery_d.RIGHT, ids=lambda e: f"{e.grade_id}:{e.name}")
def test_right_entry_is_right(entry):
    assert verify_d.problems(entry) == []


def test_the_checks_can_fail():
    """The verifier tells a right answer from a wrong one: the reference is right, a bare
    reshape is wrong, a float count is wrong, a full score matrix is caught."""
    right = Right(
        "q02_split_heads",
        "ref",
        "def split_heads(x, h):\n"
        "    n, d = x.shape\n    return x.reshape(n, h, d // h).transpose(1, 0, 2)\n",
        "split_heads",
    )
    bare = Right(
        "q02_split_heads",
        "bare",
        "def split_heads(x, h):\n    n, d = x.shape\n    return x.reshape(h, n, d // h)\n",
        "split_heads",
    )
    floaty = Right("q03_d_head", "float", "d_head = 64.0\n", "d_head")
    full = Right(
        "q08_tiled",
        "full",
        "def tiled(q, k, v, block_size):\n"
        "    s = q @ k.T / np.sqrt(q.shape[1])\n"
        "    e = np.exp(s - s.max(1, keepdims=True))\n"
        "    return e / e.sum(1, keepdims=True) @ v\n",
        "tiled",
    )
    assert verify_d.problems(right) == []
    assert verify_d.problems(bare)
    assert verify_d.problems(floaty)
    assert verify_d.problems(full) == ["allocates the full score matrix"]
