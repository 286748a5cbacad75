"""exercises/ is generated from solutions/: drift, nbgrader metadata, and what a learner sees.

* The committed ``exercises/`` and self-check data must be exactly what ``mha-course release``
  produces, and the data holds no reference code and no expected value in plain form.
* Every solution and exercise notebook has valid nbgrader schema-3 metadata, and every
  automatically graded question has an answer cell and a check cell worth its points.
* A fresh exercise notebook runs top to bottom in a real kernel without an error, and each
  check prints "not attempted yet".
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from mha_helpers.grading.course import Course, find_course
from mha_helpers.grading.program import _check_calls
from mha_helpers.grading.questions import questions_for
from mha_helpers.grading.release import (
    ReleaseError,
    release,
    release_notebook,
    validate_nbgrader_metadata,
)

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
SOLUTION_FILES = sorted(SOLUTIONS.glob("*.ipynb"))
EXERCISE_FILES = sorted(EXERCISES.glob("*.ipynb"))


def _nbgrader(cell):
    return cell.metadata.get("nbgrader") or {}


# ---------------------------------------------------------------------------------------------
# Drift


def test_committed_exercises_and_selfcheck_data_are_what_release_produces():
    stale = release(find_course(start=ROOT), check=True)
    assert stale == [], f"out of date, run `mha-course release`: {[p.name for p in stale]}"


def test_release_check_reports_a_hand_edited_exercise_and_data(tmp_path):
    shutil.copytree(SOLUTIONS, tmp_path / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    course = Course(tmp_path)
    release(course)
    assert release(course, check=True) == []
    ex = course.exercises
    target = sorted(ex.glob("*.ipynb"))[0]
    nb = nbformat.read(target, as_version=4)
    nb.cells[0].source += "\nedited by hand"
    nbformat.write(nb, target)
    (ex / "orphan.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    data = sorted(course.data.glob("*.json"))[0]
    data.write_text(data.read_text().replace('"points": ', '"points": 1', 1))
    assert sorted(p.name for p in release(course, check=True)) == sorted(
        [target.name, "orphan.ipynb", data.name]
    )
    release(course)  # regenerating repairs all three
    assert release(course, check=True) == []


DATA_FILES = sorted((ROOT / "mha_helpers" / "grading" / "data").glob("*.json"))


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.name)
def test_selfcheck_data_holds_no_reference_code_and_no_plain_value_answers(path):
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert "BEGIN SOLUTION" not in text  # the template is the released (student) notebook
    questions = json.dumps(data["questions"])
    assert "def " not in questions and "lambda" not in questions and "__code__" not in questions
    for q in data["questions"]:
        if q["kind"] != "value":
            continue
        from mha_helpers.grading.questions import get_question

        expected = get_question(q["grade_id"]).expected
        public = json.dumps(q["public"])
        if isinstance(expected, str) or (
            isinstance(expected, tuple) and all(isinstance(v, str) for v in expected)
        ):
            for word in [expected] if isinstance(expected, str) else expected:
                assert f'"{word}"' not in public, (q["grade_id"], word)
        assert set(q["public"]) == {"info", "mistakes"}
        assert set(q["public"]["info"]) <= {"hashes", "type", "shape", "length"}


# ---------------------------------------------------------------------------------------------
# Metadata


@pytest.mark.parametrize(
    "path", SOLUTION_FILES + EXERCISE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_nbgrader_metadata_is_valid_schema_3(path):
    nb = nbformat.read(path, as_version=4)
    assert validate_nbgrader_metadata(nb, path.name) == []
    assert nb.metadata["mha_course"]["assignment"] == path.stem


@pytest.mark.parametrize("path", EXERCISE_FILES, ids=lambda p: p.name)
def test_exercise_has_no_solutions_and_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        assert "BEGIN SOLUTION" not in cell.source and "END SOLUTION" not in cell.source
        assert "HIDDEN TESTS" not in cell.source
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
        md = _nbgrader(cell)
        if md.get("locked") or (md.get("grade") and not md.get("solution")):
            assert (
                cell.metadata.get("editable") is False and cell.metadata.get("deletable") is False
            )


@pytest.mark.parametrize("path", EXERCISE_FILES, ids=lambda p: p.name)
def test_every_question_has_an_answer_cell_and_a_check_worth_its_points(path):
    nb = nbformat.read(path, as_version=4)
    assignment = nb.metadata["mha_course"]["assignment"]
    questions = questions_for(assignment)
    assert questions, f"no questions registered for {assignment}"
    answers = {_nbgrader(c).get("grade_id") for c in nb.cells if _nbgrader(c).get("solution")}
    checks = {}
    for c in nb.cells:
        md = _nbgrader(c)
        if md.get("grade") and not md.get("solution"):
            for gid, _ in _check_calls(c.source):
                checks[gid] = md["points"]
    for q in questions:
        assert q.grade_id in answers, f"{q.grade_id} has no answer cell"
        if q.kind == "manual":
            [cell] = [c for c in nb.cells if _nbgrader(c).get("grade_id") == q.grade_id]
            assert _nbgrader(cell)["grade"] and _nbgrader(cell)["points"] == q.points
        else:
            assert checks.get(q.grade_id) == q.points, f"{q.grade_id}: check cell points"
    assert any("score_summary(" in c.source for c in nb.cells)


# ---------------------------------------------------------------------------------------------
# The release transformation itself


def _solution_nb():
    nb = nbformat.v4.new_notebook()
    nb.metadata["mha_course"] = {"assignment": "99_demo"}

    def cell(kind, src, **md):
        c = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell)(src)
        if md:
            c.metadata["nbgrader"] = dict(schema_version=3, task=False, **md)
        return c

    nb.cells = [
        cell(
            "code",
            "def f(x):\n    ### BEGIN SOLUTION\n    ### HINT: double it\n    return 2 * x\n"
            "    ### END SOLUTION",
            grade=False,
            solution=True,
            locked=False,
            grade_id="q_f",
        ),
        cell(
            "code",
            "### BEGIN SOLUTION\na = 1\nb, c = 2, 3\nd: int = 4\n### END SOLUTION",
            grade=False,
            solution=True,
            locked=False,
            grade_id="q_a",
        ),
        cell(
            "markdown",
            "Explain.\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION",
            grade=True,
            solution=True,
            locked=False,
            grade_id="q_m",
            points=2,
        ),
        cell(
            "code",
            'check("q_f", f)\n### BEGIN HIDDEN TESTS\nassert f(1) == 2\n### END HIDDEN TESTS',
            grade=True,
            solution=False,
            locked=True,
            grade_id="q_f_check",
            points=1,
        ),
    ]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="old output")]
    nb.cells[0].execution_count = 3
    return nb


def test_release_turns_answers_into_stubs_and_keeps_the_source_intact():
    sol = _solution_nb()
    before = copy.deepcopy(sol)
    ex = release_notebook(sol)
    assert sol == before
    f, a, m, chk = (c.source for c in ex.cells)
    assert "raise NotImplementedError('double it')" in f and "return 2 * x" not in f
    assert [line for line in a.splitlines() if "= None" in line] == [
        "a = None",
        "b = None",
        "c = None",
        "d = None",
    ]
    assert m == "Explain.\nYOUR ANSWER HERE"
    assert chk == 'check("q_f", f)' and "assert" not in chk
    assert ex.cells[0].outputs == [] and ex.cells[0].execution_count is None
    ns = {}
    exec(f, ns)
    with pytest.raises(NotImplementedError):
        ns["f"](1)


def test_release_refuses_an_unclosed_answer_region():
    sol = _solution_nb()
    sol.cells[0].source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n"
    with pytest.raises(ReleaseError):
        release_notebook(sol)


def test_metadata_validation_names_the_problems():
    sol = _solution_nb()
    sol.cells[1].metadata["nbgrader"]["grade_id"] = "q_f"
    sol.cells[3].metadata["nbgrader"].pop("points")
    sol.cells[2].metadata["nbgrader"]["colour"] = "red"
    problems = " | ".join(validate_nbgrader_metadata(sol))
    assert (
        "not unique" in problems
        and "needs points" in problems
        and "unknown nbgrader keys" in problems
    )


# ---------------------------------------------------------------------------------------------
# What a learner sees in a fresh exercise notebook


@pytest.mark.parametrize("path", EXERCISE_FILES, ids=lambda p: p.name)
def test_fresh_exercise_runs_and_every_check_says_not_attempted(path, tmp_path):
    copy_path = tmp_path / path.name
    shutil.copy(path, copy_path)
    nb = nbformat.read(copy_path, as_version=4)
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    assignment = nb.metadata["mha_course"]["assignment"]
    text = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            assert out.output_type != "error", f"{out.get('ename')}: {out.get('evalue')}"
        for gid, _ in _check_calls(cell.source):
            text[gid] = "".join(
                o.get("text", "") for o in cell.outputs if o.output_type == "stream"
            )
    for q in questions_for(assignment):
        if q.kind != "manual":
            assert text.get(q.grade_id, "").startswith(f"{q.grade_id}: not attempted yet"), (
                text.get(q.grade_id)
            )
