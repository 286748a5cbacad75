"""Battery B (tests/lesson_battery/battery_b.py) checked by its own references (verify_b.py):
every wrong entry is really wrong, every right entry right, and the battery covers every
auto-graded question of the exercises. Cheap (a few seconds, three small training runs)."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from tests.lesson_battery import verify_b
from tests.lesson_battery.battery_b import ENTRIES, RIGHT, WRONG
from tests.lesson_battery.format import Right, Wrong

ROOT = Path(__file__).resolve().parent.parent


def _auto_graded_answers() -> set[str]:
    """grade_ids of the answer cells whose check cell carries points (nbgrader metadata)."""
    ids = set()
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            gid = meta.get("grade_id", "")
            if cell["cell_type"] == "code" and meta.get("grade") and gid.endswith("_check"):
                ids.add(gid.removesuffix("_check"))
    return ids


@pytest.fixture(scope="module")
def verdict():
    return verify_b.verify(ENTRIES)


def test_every_wrong_entry_is_wrong(verdict):
    names = [f"{e.grade_id}: {e.name}" for e in verdict["not_wrong"]]
    assert not names, f"entries that agree with the reference: {names}"


def test_every_right_entry_is_right(verdict):
    bad = [f"{e.grade_id}: {e.name}: {p}" for e, p in verdict["not_right"]]
    assert not bad, f"right entries the reference rejects: {bad}"


def test_the_battery_covers_every_auto_graded_question():
    graded = _auto_graded_answers()
    assert len(graded) >= 30, graded
    per_question = collections.Counter(e.grade_id for e in WRONG)
    assert set(per_question) == graded, set(per_question) ^ graded
    assert min(per_question.values()) >= 6, per_question
    assert len(WRONG) >= 220 and len(RIGHT) >= 40
    assert set(verify_b.FUNCTIONS) | set(verify_b.VALUES) == graded


def test_every_wrong_entry_has_cause_patterns_and_unique_names():
    import re

    for e in WRONG:
        assert e.causes, e.name
        for pattern in e.causes:
            re.compile(pattern)
    keys = collections.Counter((e.grade_id, e.name) for e in ENTRIES)
    assert max(keys.values()) == 1, [k for k, n in keys.items() if n > 1]


def test_the_verifier_can_fail():
    """A right answer filed as wrong is reported as not wrong; a wrong one filed as right is
    reported as not right; and each rule check fires on its own."""
    right = next(e for e in RIGHT if e.grade_id == "q02_merge_heads")
    as_wrong = Wrong(right.grade_id, "planted", right.source, right.target, ("x",))
    wrong = next(e for e in WRONG if e.grade_id == "q02_merge_heads")
    as_right = Right(wrong.grade_id, "planted", wrong.source, wrong.target)
    result = verify_b.verify([as_wrong, as_right])
    assert result["not_wrong"] == [as_wrong]
    assert [e for e, _ in result["not_right"]] == [as_right]

    in_place = Right(
        "q06_remove_head",
        "planted",
        (
            "def remove_head(w_o, head, num_heads):\n"
            "    d = w_o.shape[0] // num_heads\n"
            "    w_o[head * d:(head + 1) * d] = 0\n"
            "    return w_o.copy()\n"
        ),
        "remove_head",
    )
    assert verify_b.problems(in_place) == ["changes its input"]
    helper = Right(
        "q04_flops",
        "planted",
        (
            "from mha_helpers import attention_flops\n"
            "def count_flops(n, d_model, num_heads):\n"
            "    return attention_flops(n, d_model, num_heads)['total']\n"
        ),
        "count_flops",
    )
    assert verify_b.problems(helper) == [
        "calls the forbidden course function(s) ['attention_flops']"
    ]


def test_the_references_hold_up():
    """The backward reference agrees with finite differences; the two-head seed-7 measurement
    names both roles and supports option b; the four-head one names four roles, both kinds."""
    assert verify_b.reference_gradients_agree_with_finite_differences() < 1e-7
    assert sorted(verify_b.seed7_measurements()["roles"]) == ["first", "previous"]
    four = verify_b.seed7_four_head_roles()
    assert len(four) == 4 and set(four) == {"first", "previous"}, four
    assert verify_b.prune_letter() == "b"
