"""Shared by the grading tests: a student notebook factory and the sandbox requirement."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "03_concatenate_and_project.ipynb"
SOLUTIONS = ROOT / "solutions"
A03 = "03_concatenate_and_project"

CORRECT = {
    "q03_d_head": "d_head = 768 // 12",
    "q03_identity_output": "identity_output = joined @ np.eye(4)",
    "q03_concat_vs_average": 'concat_vs_average = "b"',
    "q03_concat_project": (
        "def concat_project(head_outputs, w_o):\n"
        "    joined = np.concatenate([np.asarray(x) for x in head_outputs], axis=-1)\n"
        "    return joined @ w_o\n"
    ),
}
POINTS = {
    "q03_d_head": 1,
    "q03_identity_output": 1,
    "q03_concat_vs_average": 2,
    "q03_concat_project": 4,
}
FULL = float(sum(POINTS.values()))  # automatic points of exercise 03
WRITTEN = {"q03_explain": 2}


def make_notebook(
    answers=None, drop_metadata=False, edit=None, written="Because W_O sees each head."
):
    """A student notebook: the released exercise with some answer cells filled in."""
    nb = nbformat.read(EXERCISE, as_version=4)
    answers = dict(CORRECT if answers is None else answers)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
        elif gid in WRITTEN and written is not None:
            cell.source = written
    if edit:
        edit(nb)
    if drop_metadata:
        nb.metadata.pop("mha_course", None)
    return nb


def with_answer(gid, source):
    answers = dict(CORRECT)
    answers[gid] = source
    return answers


def write_nb(folder: Path, student: str, nb, name="exercise_03.ipynb") -> Path:
    path = Path(folder) / student / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def require_sandbox():
    """Skip (with the reason) where bubblewrap cannot run; in CI (CI=true) fail instead."""
    from mha_helpers.grading.sandbox import bubblewrap

    reason = bubblewrap.probe()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the sandbox tests (.ci/run installs bubblewrap): {reason}")
        pytest.skip(f"no sandbox on this machine: {reason}")


def others_full(row, bad):
    return all(row["points"][g] == POINTS[g] for g in POINTS if g not in bad)
