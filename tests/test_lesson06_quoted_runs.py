"""Lesson 06 quotes runs of benchmarks/lesson06_long_runs.py that are too slow for the notebook.

Its pruning table (cell l06-17d: the 16-head pruning of section 4 for seeds 0-7, review of
lessons 05-08, finding 7) must be what the script computes: two of its seeds are re-run here
(about 3 s), and the ranges the text and the summary quote must be the table's.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "notebooks" / "06_what_heads_learn.ipynb"


def _cells():
    return {c.get("id"): c.source for c in nbformat.read(LESSON, as_version=4).cells}


def _pruning_table(text):
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "---" not in ln]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in rows]
    seeds = [int(s) for s in cells[0][1:]]
    free = [int(v) for v in cells[1][1:]]
    lost = [float(v) for v in cells[2][1:]]
    return seeds, free, lost


def _script():
    spec = importlib.util.spec_from_file_location(
        "lesson06_long_runs", ROOT / "benchmarks" / "lesson06_long_runs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_quoted_pruning_table_is_what_the_script_computes(monkeypatch):
    seeds, free, lost = _pruning_table(_cells()["l06-17d"])
    assert seeds == list(range(8))
    script = _script()
    monkeypatch.setattr(script, "PRUNING_SEEDS", 2)  # seeds 0 and 1: about 3 s
    rows = script.pruning_runs(lambda line: None)
    for row in rows:
        # the lesson's own tolerance for trained models: counts exact, percentages within 1 point
        assert row["free"] == free[row["seed"]]
        assert 100 * row["random_loss"] == pytest.approx(lost[row["seed"]], abs=1.0)


def test_the_text_quotes_the_tables_ranges():
    cells = _cells()
    _, free, lost = _pruning_table(cells["l06-17d"])
    assert (
        f"from {min(free)} to {max(free)} heads and from {min(lost)} to {max(lost)} points"
        in (cells["l06-17d"])
    )
    summary = cells["l06-34"]
    assert (
        f"{min(free)} to {max(free)} heads and {round(min(lost))} to {round(max(lost))} points"
        in (summary)
    )
    # seed 0, the model the lesson trains, is the table's first column and the summary's numbers
    assert re.search(rf"{free[0]} of 16 heads of the seed-0 model", summary)
