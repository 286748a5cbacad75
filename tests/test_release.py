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
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from mha_helpers.grading import get_question, questions_for
from mha_helpers.grading.classroom.release import (
    ReleaseError,
    data_agrees,
    release,
    release_notebook,
    student_copy,
    validate_nbgrader_metadata,
)
from mha_helpers.grading.course import Course, find_course
from mha_helpers.grading.rules import codec
from mha_helpers.grading.rules.judge import value_hashes, value_info, value_verdict
from mha_helpers.grading.sandbox.program import _check_calls

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


# ---------------------------------------------------------------------------------------------
# Drift with a tolerance: another processor's last bits pass, a real change fails


def _nudge(obj, ulps=4):
    """``obj`` (encoded self-check data) with every float moved ``ulps`` units in the last
    place, as another processor's summation order moves them."""
    if isinstance(obj, float):
        for _ in range(ulps if math.isfinite(obj) else 0):
            obj = math.nextafter(obj, math.inf)
        return obj
    if isinstance(obj, list):
        return [_nudge(v, ulps) for v in obj]
    if isinstance(obj, dict):
        if obj.get("dtype") == "f8":
            x = codec.decode(obj)
            for _ in range(ulps):
                x = np.where(np.isfinite(x), np.nextafter(x, np.inf), x)
            return codec.encode(x)
        return {k: _nudge(v, ulps) for k, v in obj.items()}
    return obj


def _course_copy(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(SOLUTIONS, root / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    course = Course(root)
    release(course)
    return course


def _nudge_computed(d):  # what the banks computed; the rest (points, rtol, ...) is not
    for q in d["questions"]:
        if "public" in q:
            q["public"] = _nudge(q["public"])


def _edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=1) + "\n")


def _scale_array(encoded, factor, index=0):
    x = codec.decode(encoded).copy()
    x.flat[index] *= factor
    return codec.encode(x)


def test_last_bit_drift_passes_the_check_and_release_leaves_the_file_alone(tmp_path):
    course = _course_copy(tmp_path)
    path = course.data / "01_recap_self_attention.json"
    _edit(path, _nudge_computed)
    nudged = path.read_bytes()
    assert nudged != (ROOT / "mha_helpers/grading/selfcheck/data" / path.name).read_bytes()
    assert release(course, check=True) == []
    assert release(course) == [] and path.read_bytes() == nudged  # nothing rewritten
    student_copy(course, tmp_path / "copy")  # the student-copy guard agrees


def _change_expected(d):  # an expected output 1e-7 relative away: below grading, above drift
    q = d["questions"][0]["public"]
    q["expected"][1] = _scale_array(q["expected"][1], 1 + 1e-7, index=3)


def _change_case(d):
    case = d["questions"][0]["public"]["cases"][0]["__tuple__"]
    case[0] = _scale_array(case[0], 1.01)


def _change_mistake(d):
    row = d["questions"][0]["public"]["mistakes"][0]
    row[0] = _scale_array(row[0], -1.0, index=2)


def _change_hint(d):
    d["questions"][1]["mistakes"][0]["hint"] += " (edited)"


def _drop_case(d):
    d["questions"][0]["public"]["cases"].pop()


@pytest.mark.parametrize(
    "change", [_change_expected, _change_case, _change_mistake, _change_hint, _drop_case]
)
def test_a_real_change_to_the_data_is_still_caught(tmp_path, change):
    course = _course_copy(tmp_path)
    path = course.data / "01_recap_self_attention.json"
    _edit(path, lambda d: (_nudge_computed(d), change(d)))
    assert release(course, check=True) == [path]
    with pytest.raises(ReleaseError, match="out of date"):
        student_copy(course, tmp_path / "copy")
    release(course)
    assert release(course, check=True) == []


def test_a_changed_value_answer_is_caught(tmp_path):
    course = _course_copy(tmp_path)
    path = course.data / "03_concatenate_and_project.json"
    q = get_question("q03_d_head")

    def change(d):
        [entry] = [e for e in d["questions"] if e["grade_id"] == q.grade_id]
        entry["public"]["info"]["hashes"] = value_hashes(q.grade_id, q.expected + 1)

    _edit(path, change)
    assert release(course, check=True) == [path]


class _ValueQuestion:
    """A value question whose answer is a float computed with a rounding in its last bits."""

    def __init__(self, expected, mistake):
        self.grade_id, self.kind, self.rtol, self.atol = "q_demo", "value", 1e-6, 1e-8
        self.expected = expected
        self.mistakes = [type("M", (), {"answer": mistake, "name": "m", "hint": "h"})()]

    def entry(self):
        return {
            "grade_id": self.grade_id,
            "kind": "value",
            "rtol": self.rtol,
            "atol": self.atol,
            "public": {
                "info": value_info(self.grade_id, self.expected),
                "mistakes": [value_hashes(self.grade_id, m.answer) for m in self.mistakes],
            },
        }


# 1.234565 sits on a boundary of the 6-digit rounding: one unit in the last place decides
# which way it rounds, so one of its two hashes differs between two processors.
ON_A_BOUNDARY = [1.234565, np.array([[0.5, 1.234565], [2.0, -3.75]]), 0.0009765625]


@pytest.mark.parametrize("value", ON_A_BOUNDARY, ids=["scalar", "array", "2**-10"])
def test_value_hashes_a_few_bits_apart_agree_in_the_verdict_and_in_the_drift_check(value):
    there = np.nextafter(value, np.inf)
    if isinstance(value, float):
        there = float(there)
    here_q, there_q = _ValueQuestion(value, value * 2), _ValueQuestion(there, there * 2)
    hashes = value_hashes("q_demo", value), value_hashes("q_demo", there)
    assert hashes[0] != hashes[1]  # the stored data does change in its last bits...
    assert data_agrees({"questions": [here_q.entry()]}, {"questions": [there_q.entry()]}, [there_q])
    meta = {"grade_id": "q_demo", "points": 1, "hint": "", "mistakes": [{"hint": "h"}]}
    verdict = value_verdict(meta, value_info("q_demo", value), [], there)
    assert verdict["status"] == "passed"  # ...and a learner's answer computed elsewhere passes


def test_value_hash_drift_check_catches_a_real_change():
    q = _ValueQuestion(1.234565, 2.0)
    changed = _ValueQuestion(1.23458, 2.0)  # same 5-digit rounding, a different value
    assert not data_agrees({"questions": [changed.entry()]}, {"questions": [q.entry()]}, [q])
    wrong_mistake = _ValueQuestion(1.234565, 2.0001)
    assert not data_agrees({"questions": [wrong_mistake.entry()]}, {"questions": [q.entry()]}, [q])
    stored, fresh = q.entry(), q.entry()  # anything else stored beside the hashes counts too
    stored["public"]["readings"], fresh["public"]["readings"] = ["a", 1.0], ["a", 1.5]
    assert not data_agrees({"questions": [stored]}, {"questions": [fresh]}, [q])
    fresh["public"]["readings"] = ["a", 1.0 + 1e-15]
    assert data_agrees({"questions": [stored]}, {"questions": [fresh]}, [q])


def test_release_check_passes_on_generic_kernels():
    """The committed data holds when NumPy and OpenBLAS run the generic kernels every x86-64
    processor has (as on a machine without AVX-512). .ci/run also runs the tests this way."""
    import numpy._core._multiarray_umath as umath

    env = dict(
        os.environ,
        OPENBLAS_CORETYPE="Prescott",
        NPY_DISABLE_CPU_FEATURES=" ".join(
            f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)
        ),
    )
    out = subprocess.run(
        [sys.executable, "-m", "mha_helpers.cli", "release", "--check", "--course", str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


DATA_FILES = sorted((ROOT / "mha_helpers" / "grading" / "selfcheck" / "data").glob("*.json"))


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
        from mha_helpers.grading import get_question

        expected = get_question(q["grade_id"]).expected
        public = json.dumps(q["public"])
        if isinstance(expected, str) or (
            isinstance(expected, tuple) and all(isinstance(v, str) for v in expected)
        ):
            for word in [expected] if isinstance(expected, str) else expected:
                assert f'"{word}"' not in public, (q["grade_id"], word)
        assert set(q["public"]) == {"info", "mistakes"}
        form = {
            "type",
            "shape",
            "length",
            "sequence",
            "letter",
            "sig_figs",
            "flags",
            "tuple",
        }  # not value-dependent
        assert set(q["public"]["info"]) <= {"hashes", "shape_parts", "factors", "ambiguous"} | form
        for entry in q["public"]["info"].get("ambiguous", ()):  # which mistakes, a fixed note
            assert set(entry) == {"j", "note"} and isinstance(entry["j"], int)
            assert not any(ch.isdigit() for ch in entry["note"]), entry


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
            text[gid] = "".join(  # printed, or displayed (HTML with its plain text beside it)
                o.get("text", "")
                if o.output_type == "stream"
                else o.get("data", {}).get("text/plain", "")
                for o in cell.outputs
            )
    for q in questions_for(assignment):
        if q.kind != "manual":
            assert text.get(q.grade_id, "").startswith(f"{q.grade_id}: not attempted yet"), (
                text.get(q.grade_id)
            )


def test_ci_runs_the_drift_checks_and_the_notebooks_again_on_generic_kernels():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\nmake test-generic\n" in ci
    target = (ROOT / "Makefile").read_text().split("\ntest-generic:", 1)[1].split("\n\n", 1)[0]
    for needed in ("OPENBLAS_CORETYPE=", "NPY_DISABLE_CPU_FEATURES=", "__cpu_dispatch__"):
        assert needed in target, needed
    for part in ("tests/test_release.py", "notebooks", "solutions"):
        assert part in target, part
