"""Stored notebook outputs hold on any processor, and a real change still fails.

nbval compares every stored output byte for byte. The exceptions are few and each is checked
here: cells whose numbers come from trained models carry a tolerance that the root conftest.py
applies (mha_helpers/tolerance.py); cells that print timings or the learner's installation are
not compared at all, and only those.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mha_helpers.tolerance import check_spec, compare, numbers_in

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (ROOT / "solutions").glob("*.ipynb")
)
# Cells that are not compared at all, recognised by what they call, and why.
UNCOMPARED = {
    "environment_report": "prints the learner's own Python, packages and paths",
    "fastest_times": "prints timings of this machine (tests/test_timing_claims.py checks the "
    "stored ones support the lesson's text)",
    "round_robin_times(": "prints timings of this machine (lesson 08's matrix-vector sweep)",
}
TOL = {"%": 1.0, "number": 0.05, "why": "a test tolerance, for the comparison itself"}


def _cells():
    for path in NOTEBOOKS:
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code":
                yield path.relative_to(ROOT), index, cell


def test_every_uncompared_cell_is_a_timing_or_has_a_tolerance():
    escaped = []
    for path, index, cell in _cells():
        spec = cell.metadata.get("mha_course", {}).get("tolerance")
        ignored = "nbval-ignore-output" in cell.metadata.get("tags", [])
        if spec is not None:
            check_spec(spec)
            assert ignored, f"{path} cell {index} has a tolerance but nbval still compares it"
            assert numbers_in("".join(o.get("text", "") for o in cell.outputs)), (
                f"{path} cell {index} has a tolerance but prints no number"
            )
        elif ignored and not any(name in cell.source for name in UNCOMPARED):
            escaped.append(f"{path} cell {index}")
    assert not escaped, f"outputs compared by nobody: {escaped}"


def test_the_tolerances_are_in_use():
    """The mechanism is not dead code: lesson 06's trained-model cells use it."""
    lesson = [
        i
        for p, i, c in _cells()
        if p.name == "06_what_heads_learn.ipynb"
        and p.parent.name == "notebooks"
        and "tolerance" in c.metadata.get("mha_course", {})
    ]
    assert len(lesson) >= 5


@pytest.mark.parametrize(
    "new",
    [
        "h = 1, seed 0: accuracy 18.0 %, score 0.18",  # another processor
        "h = 1,  seed 0: accuracy  17.1 %, score 0.13",  # spacing moved with a number
    ],
)
def test_compare_accepts_numbers_within_the_tolerance(new):
    assert compare("h = 1, seed 0: accuracy 17.6 %, score 0.17", new, TOL) == []


@pytest.mark.parametrize(
    "new, problem",
    [
        ("h = 1, seed 0: accuracy 27.6 %, score 0.17", "number 3"),  # a real change
        ("h = 1, seed 0: accuracy 17.6 %, score 0.37", "number 4"),
        ("h = 1, seed 1: accuracy 17.6 %, score 0.17", "number 2"),  # a count or seed
        ("h = 1, seed 0: precision 17.6 %, score 0.17", "reads differently"),  # a word
        ("h = 1, seed 0: accuracy 17.6 %, score 0.17\nextra", "lines instead"),  # a line
        ("h = 1, seed 0: accuracy 17.6 %", "reads differently"),  # a number missing
    ],
)
def test_compare_catches_a_real_change(new, problem):
    found = compare("h = 1, seed 0: accuracy 17.6 %, score 0.17", new, TOL)
    assert found and problem in found[0]


@pytest.mark.parametrize(
    "spec",
    [
        {"%": 1.0, "number": 0.05},
        {"%": 1.0, "number": 1.0, "why": "x" * 30},
        {"%": 5.0, "number": 0.1, "why": "x" * 30},
        None,
    ],
)
def test_a_tolerance_must_be_small_and_justified(spec):
    with pytest.raises(ValueError):
        check_spec(spec)


def _notebook(stored_text, tolerance, tag=True):
    cell = nbformat.v4.new_code_cell('print("h = 2, seed 0: accuracy 17.6 %")')
    cell.execution_count = 1
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored_text)]
    cell.metadata["mha_course"] = {"tolerance": tolerance}
    if tag:
        cell.metadata["tags"] = ["nbval-ignore-output"]
    return nbformat.v4.new_notebook(cells=[cell])


@pytest.mark.parametrize(
    "stored, tag, passes",
    [
        ("h = 2, seed 0: accuracy 18.0 %\n", True, True),  # within 1 point
        ("h = 2, seed 0: accuracy 19.6 %\n", True, False),  # 2 points off
        ("h = 2, seed 1: accuracy 17.6 %\n", True, False),  # another seed
        ("h = 2, seed 0: accuracy 18.0 %\n", False, False),  # tolerance without the tag
    ],
)
def test_the_conftest_hook_applies_the_tolerance_when_nbval_runs(tmp_path, stored, tag, passes):
    """Run nbval on a one-cell notebook with the course's conftest.py: the hook must pass a
    stored output within the tolerance and fail one outside it."""
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    nbformat.write(_notebook(stored, TOL, tag), tmp_path / "cell.ipynb")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-q",
            "cell.ipynb",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (run.returncode == 0) == passes, run.stdout[-2000:]


# What a stored output may never contain: a path of the machine that ran it. A traceback into the
# helper package, a printed __file__ or a temporary folder would tie the notebook to one
# checkout; show an error with `except ValueError as err: print(...)` instead.
_MACHINE_PATH = re.compile(
    r"(?<![\w.])(/(?:home|root|Users|work|tmp|opt|usr|private|var)/|[A-Za-z]:\\)"
)


@pytest.mark.parametrize("path", [p.relative_to(ROOT) for p in NOTEBOOKS], ids=str)
def test_stored_outputs_hold_no_machine_path(path):
    found = []
    for index, cell in enumerate(nbformat.read(ROOT / path, as_version=4).cells):
        for output in cell.get("outputs", []):
            texts = [output.get("text", ""), output.get("evalue", ""), *output.get("traceback", [])]
            texts += [v for k, v in output.get("data", {}).items() if k.startswith("text/")]
            for text in texts:
                text = "".join(text) if isinstance(text, list) else str(text)
                if match := _MACHINE_PATH.search(text):
                    found.append(
                        f"cell {index}: ...{text[max(0, match.start() - 40) : match.end() + 40]}..."
                    )
    assert not found, f"{path} stores paths of the machine that ran it:\n" + "\n".join(found)


def test_the_machine_path_check_can_fail():
    assert _MACHINE_PATH.search("File /work/wt/x/mha_helpers/heads.py:193, in f")
    assert _MACHINE_PATH.search(r"C:\Users\ada\course")
    assert not _MACHINE_PATH.search("a/b/c, docs/sources.md, 13.2 GB / 3.35 TB/s")
