"""Running a real class (course issue 12): LMS downloads, regrades, written answers, exit codes,
the students' copy, the learner's validate command, and a tool that works on the course in
front of it whatever way the package was installed.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
from grading_helpers import A03, FULL, ROOT, make_notebook, require_sandbox, with_answer, write_nb

from mha_helpers.cli import main
from mha_helpers.grading.classroom import collect as collect_mod
from mha_helpers.grading.classroom.collect import collect
from mha_helpers.grading.classroom.release import ReleaseError, student_copy
from mha_helpers.grading.classroom.untrusted import normalise_name
from mha_helpers.grading.course import PACKAGE_DIR, find_course

TIMEOUT = "20"


def grade(*args, cwd=ROOT):
    """Run ``mha-course grade`` in-process from ``cwd``; return (exit status, stdout)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return main(["grade", *map(str, args), "--timeout", TIMEOUT, "--seed", "7"])
    finally:
        os.chdir(old)


def table(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(autouse=True)
def _sandbox():
    require_sandbox()


# ---------------------------------------------------------------------------------------------
# Layouts


def test_canvas_bulk_download_is_one_row_per_student_with_late_flags(tmp_path, capsys):
    subs = tmp_path / "canvas"
    subs.mkdir()
    nbformat.write(make_notebook(), subs / "smithjane_1234_98765_exercise_03.ipynb")
    nbformat.write(
        make_notebook(with_answer("q03_d_head", "d_head = 1")),
        subs / "doeal_LATE_2222_3333_homework.ipynb",
    )
    with zipfile.ZipFile(
        subs / "zedkim_4444_5555_upload.zip", "w"
    ) as zf:  # a zip the student uploaded
        zf.writestr("work/exercise_03.ipynb", nbformat.writes(make_notebook()))
    rc = grade(subs, "--out", tmp_path / "gb.csv", "--feedback", tmp_path / "fb")
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = {r["student"]: r for r in table(tmp_path / "gb.csv")}
    assert set(rows) == {"smithjane", "doeal", "zedkim"}
    assert rows["doeal"]["late"] == "yes" and rows["smithjane"]["late"] == "no"
    assert float(rows["zedkim"]["total"]) == FULL and float(rows["doeal"]["total"]) == FULL - 1
    assert "canvas" in out
    files = sorted(p.name for p in (tmp_path / "fb" / A03).iterdir())
    assert files == [
        "doeal_2222.html",
        "doeal_2222.md",
        "smithjane_1234.html",
        "smithjane_1234.md",
        "zedkim_4444.html",
        "zedkim_4444.md",
    ]
    assert "smithjane" not in (tmp_path / "fb" / A03 / "doeal_2222.md").read_text()
    assert {r["student_id"] for r in rows.values()} == {"1234", "2222", "4444"}


def test_moodle_bulk_download_names_students_by_full_name(tmp_path, capsys):
    subs = tmp_path / "moodle"
    write_nb(subs, "Ana Lúcia Souza_123456_assignsubmission_file_", make_notebook(), "ex03.ipynb")
    write_nb(
        subs / "Bo Chen_123457_assignsubmission_file_", "nested", make_notebook({}), "ex.ipynb"
    )
    (subs / "Bo Chen_123457_assignsubmission_onlinetext_").mkdir()
    (subs / "Bo Chen_123457_assignsubmission_onlinetext_" / "onlinetext.html").write_text(
        "<p>hi</p>"
    )
    (subs / "Cy Dee_123458_assignsubmission_file_").mkdir()
    rc = grade(subs, "--out", tmp_path / "gb.csv")
    out = capsys.readouterr().out
    rows = {r["student"]: r for r in table(tmp_path / "gb.csv")}
    assert set(rows) == {"Ana Lúcia Souza", "Bo Chen", "Cy Dee"}
    assert rows["Cy Dee"]["status"] == "missing" and rc == 1
    assert "moodle" in out


def test_a_zip_of_student_folders_is_read_in_private(tmp_path, capsys):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice/exercise_03.ipynb", nbformat.writes(make_notebook()))
        zf.writestr("bob/exercise_03.ipynb", nbformat.writes(make_notebook({})))
        zf.writestr("../escaped.ipynb", nbformat.writes(make_notebook()))
        zf.writestr("/abs/path.ipynb", nbformat.writes(make_notebook()))
    rc = grade(archive, "--out", tmp_path / "gb.csv")
    out = capsys.readouterr().out
    assert rc == 1, out  # the members that belong to no student are a row of their own
    rows = {r["student"]: r for r in table(tmp_path / "gb.csv")}
    assert set(rows) == {"alice", "bob", "class.zip"}
    assert rows["alice"]["status"] == rows["bob"]["status"] == "ok"
    assert "outside" not in rows["alice"]["notes"] + rows["bob"]["notes"]
    assert rows["class.zip"]["status"] == "refused"
    assert rows["class.zip"]["notes"].count("refused: it points outside the archive") == 2
    assert not (tmp_path / "escaped.ipynb").exists() and not Path("/abs/path.ipynb").exists()
    assert "zip of folders" in out


def test_zip_bombs_are_refused_with_a_row(tmp_path, monkeypatch):
    monkeypatch.setattr(collect_mod, "ZIP_MAX_TOTAL", 2**20)
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("alice/x.ipynb", b"0" * (4 * 2**20))
    c = collect([archive])
    try:
        [sub] = c.submissions
        assert sub.status == "refused" and "zip bomb" in sub.note
    finally:
        c.close()


def test_names_are_normalised_before_duplicates_are_found(tmp_path):
    write_nb(tmp_path / "subs", "Zoë", make_notebook(), "a.ipynb")
    write_nb(tmp_path / "subs", "Zoe\u0308\u200b", make_notebook(), "b.ipynb")  # NFD + zero width
    from mha_helpers.grading.classroom.grade import grade_paths

    rows = grade_paths([tmp_path / "subs"], jobs=2, timeout=20, course=find_course(start=ROOT))
    assert {r["student"] for r in rows} == {"Zoë"}
    assert sorted(r["status"] for r in rows) == ["ok", "superseded"]
    assert normalise_name(" A\u00a0 B\u2060 ") == "A B"


def test_feedback_files_never_mix_two_students(tmp_path):
    from mha_helpers.grading.classroom.feedback import safe_name

    names = ["a/b", "a_b", "A_B", "a_b-" + "0" * 10, "Ålvaro", "alvaro", "..", "CON", "=1+1"]
    files = {safe_name(normalise_name(n)).casefold() for n in names}
    assert len(files) == len(names)
    assert all("/" not in f and f not in (".", "..") for f in files)


# ---------------------------------------------------------------------------------------------
# Cells the learner added, regrades, written answers


def _with_added_cells(nb):
    """A helper defined in an added cell, used by the answer (as nbgrader would run it)."""
    i = next(
        i
        for i, c in enumerate(nb.cells)
        if c.metadata.get("nbgrader", {}).get("grade_id") == "q03_concat_project"
    )
    nb.cells.insert(
        i,
        nbformat.v4.new_code_cell(
            "def join_heads(heads):\n    return np.concatenate(list(heads), axis=-1)"
        ),
    )
    nb.cells[
        i + 1
    ].source = "def concat_project(head_outputs, w_o):\n    return join_heads(head_outputs) @ w_o\n"


def test_cells_the_learner_added_run_in_place(tmp_path):
    write_nb(tmp_path / "subs", "ada", make_notebook(edit=_with_added_cells))
    rc = grade(tmp_path / "subs", "--out", tmp_path / "gb.csv")
    [row] = table(tmp_path / "gb.csv")
    assert rc == 0 and float(row["total"]) == FULL, row["notes"]
    assert "added by the learner ran in place" in row["notes"]


def test_regrading_one_student_keeps_the_others_and_feedback_of_other_weeks(tmp_path, capsys):
    subs = tmp_path / "subs"
    write_nb(subs, "alice", make_notebook())
    write_nb(subs, "bob", make_notebook({}))
    out, fb = tmp_path / "gb.csv", tmp_path / "fb"
    assert grade(subs, "--out", out, "--feedback", fb) == 0
    week1 = (fb / A03 / "alice.md").read_text()
    # Week 2: another assignment for alice, into the same gradebook and feedback folder.
    other = sorted(p for p in (ROOT / "exercises").glob("*.ipynb") if A03 not in p.name)[0]
    write_nb(tmp_path / "week2", "alice", nbformat.read(other, as_version=4), "w2.ipynb")
    assert grade(tmp_path / "week2", "--out", out, "--feedback", fb) == 0
    assert (fb / A03 / "alice.md").read_text() == week1
    assert (fb / other.stem / "alice.md").is_file()
    # Bob resubmits: only his row changes.
    write_nb(subs, "bob", make_notebook())
    capsys.readouterr()
    assert grade(subs / "bob", "--out", out) == 0
    assert "0 rows added, 1 replaced, 2 kept" in capsys.readouterr().out
    rows = {(r["student"], r["assignment"]): r for r in table(out)}
    assert len(rows) == 3
    assert (
        float(rows[("bob", A03)]["total"]) == FULL and float(rows[("alice", A03)]["total"]) == FULL
    )


def test_manual_scores_merge_into_total_and_pending(tmp_path, capsys):
    subs = tmp_path / "subs"
    write_nb(subs, "alice", make_notebook())
    write_nb(subs, "bob", make_notebook())
    write_nb(subs, "carol", make_notebook(written=None))  # left the written answer empty
    out, fb = tmp_path / "gb.csv", tmp_path / "fb"
    assert grade(subs, "--out", out) == 0
    rows = {r["student"]: r for r in table(out)}
    assert rows["alice"]["q03_explain"] == "pending" and float(rows["alice"]["pending"]) == 2
    assert float(rows["alice"]["max"]) == FULL + 2
    assert rows["carol"]["q03_explain"] == "0" and float(rows["carol"]["pending"]) == 0
    scores = tmp_path / "scores.csv"
    scores.write_text(
        "student,grade_id,points\nalice,q03_explain,1.5\nnobody,q03_explain,1\n"
        "alice,q03_bogus,1\nbob,q03_explain,5\n"
    )
    capsys.readouterr()
    rc = grade(subs, "--out", out, "--feedback", fb, "--manual", scores)
    text = capsys.readouterr().out
    assert rc == 1  # three lines could not be merged
    assert "1 merged" in text and text.count("not merged:") == 3
    rows = {r["student"]: r for r in table(out)}
    assert float(rows["alice"]["q03_explain"]) == 1.5
    assert float(rows["alice"]["total"]) == FULL + 1.5 and float(rows["alice"]["pending"]) == 0
    assert rows["bob"]["q03_explain"] == "pending"
    feedback = (fb / A03 / "alice.md").read_text()
    assert "q03_explain: written answer, graded by your instructor [1.5/2]" in feedback
    assert "to be graded by your instructor" in (fb / A03 / "bob.md").read_text()
    # A later regrade without --manual keeps the points already entered.
    assert grade(subs / "alice", "--out", out) == 0
    rows = {r["student"]: r for r in table(out)}
    assert (
        float(rows["alice"]["q03_explain"]) == 1.5 and float(rows["alice"]["total"]) == FULL + 1.5
    )


# ---------------------------------------------------------------------------------------------
# Exit status and usage errors


def test_a_path_typo_is_a_usage_error_and_writes_nothing(tmp_path, capsys):
    rc = grade(tmp_path / "nosuch", "--out", tmp_path / "gb.csv")
    assert rc == 2 and not (tmp_path / "gb.csv").exists()
    assert "no such file or folder" in capsys.readouterr().err


def test_outside_a_course_without_course_is_a_usage_error(tmp_path, capsys):
    write_nb(tmp_path / "subs", "alice", make_notebook())
    rc = grade(tmp_path / "subs", "--out", tmp_path / "gb.csv", cwd=tmp_path)
    assert rc == 2 and not (tmp_path / "gb.csv").exists()
    assert "solutions/banks" in capsys.readouterr().err
    assert (
        grade(tmp_path / "subs", "--out", tmp_path / "gb.csv", "--course", ROOT, cwd=tmp_path) == 0
    )


def test_a_batch_with_a_bad_row_exits_1_and_lists_it(tmp_path, capsys):
    write_nb(tmp_path / "subs", "alice", make_notebook())
    (tmp_path / "subs" / "bob").mkdir()
    (tmp_path / "subs" / "bob" / "x.ipynb").write_text("{not json")
    rc = grade(tmp_path / "subs", "--out", tmp_path / "gb.csv")
    out = capsys.readouterr().out
    assert rc == 1 and f"bob ({A03}): not-json" in out  # counted as its download's assignment


def test_the_summary_gives_per_question_statistics(tmp_path, capsys):
    write_nb(tmp_path / "subs", "alice", make_notebook())
    write_nb(tmp_path / "subs", "bob", make_notebook(with_answer("q03_d_head", "d_head = 3")))
    assert grade(tmp_path / "subs", "--out", tmp_path / "gb.csv") == 0
    out = capsys.readouterr().out
    assert "q03_d_head" in out and "mean 0.50 of 1, full marks 50%" in out
    assert "q03_concat_project" in out and "mean 4.00 of 4, full marks 100%" in out


def test_without_a_sandbox_grading_refuses_unless_told(tmp_path, monkeypatch, capsys):
    from mha_helpers.grading.sandbox import bubblewrap

    monkeypatch.setattr(bubblewrap, "probe", lambda: "bwrap is not installed (simulated)")
    write_nb(tmp_path / "subs", "alice", make_notebook())
    assert grade(tmp_path / "subs", "--out", tmp_path / "gb.csv") == 2
    err = capsys.readouterr().err
    assert "apt install bubblewrap" in err and "--unsafe-no-sandbox" in err
    assert not (tmp_path / "gb.csv").exists()
    assert grade(tmp_path / "subs", "--out", tmp_path / "gb.csv", "--unsafe-no-sandbox") == 0
    [row] = table(tmp_path / "gb.csv")
    assert "WITHOUT a sandbox" in row["notes"] and "WITHOUT a sandbox" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# The students' copy, validate, and the course in front of the tool


def test_student_copy_has_everything_a_learner_runs_and_no_solutions(tmp_path):
    course = find_course(start=ROOT)
    with pytest.raises(ReleaseError, match="inside the course"):
        student_copy(course, ROOT / "student_copy")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    with pytest.raises(ReleaseError, match="not an empty folder"):
        student_copy(course, tmp_path / "busy")
    dest = tmp_path / "copy"
    assert main(["release", "--student-copy", str(dest)]) == 0
    assert (dest / "notebooks" / "00_start_here.ipynb").is_file()
    assert (dest / "exercises" / f"{A03}.ipynb").is_file()
    assert (dest / "mha_helpers" / "grading" / "selfcheck" / "data" / f"{A03}.json").is_file()
    assert (dest / "README.md").read_text().startswith("# Multi-head attention")
    everything = [p for p in dest.rglob("*") if p.is_file()]
    assert not [p for p in everything if "solutions" in p.parts or p.name.startswith("bank_")]
    for p in everything:
        if p.suffix in (".ipynb", ".json"):
            assert "BEGIN SOLUTION" not in p.read_text(encoding="utf-8"), p
    # The copy's self-check works on its own, from its own package and data.
    code = (
        "import numpy as np\nfrom mha_helpers.grading import check\n"
        "check('q03_d_head', 64)\ncheck('q03_concat_project', lambda h, w: np.concatenate(list(h), -1) @ w)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(dest)),
        timeout=60,
    )
    assert "q03_d_head: passed" in out.stdout and "q03_concat_project: passed" in out.stdout, out


def test_validate_runs_the_notebook_as_the_grader_will(tmp_path, capsys):
    good = write_nb(tmp_path, "me", make_notebook(edit=_with_added_cells))
    assert main(["validate", str(good)]) == 0
    out = capsys.readouterr().out
    assert "q03_concat_project: passed" in out
    assert "a cell you added" in out and "join_heads" in out
    bad = write_nb(
        tmp_path,
        "me2",
        make_notebook(
            with_answer(
                "q03_concat_project",
                "def concat_project(h, w):\n    return np.asarray(h).reshape(np.asarray(h).shape[1], -1) @ w\n",
            )
        ),
    )
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    from mha_helpers.grading import get_question
    from mha_helpers.grading.selfcheck.check import evaluate

    def bare(h, w):
        return np.asarray(h).reshape(np.asarray(h).shape[1], -1) @ w

    hint = evaluate(get_question("q03_concat_project"), bare)["hint"]
    assert "q03_concat_project: not yet" in out and f"hint: {hint}" in out
    # Something that only worked in the learner's session (a name defined in no cell) shows up.
    stale = write_nb(
        tmp_path,
        "me3",
        make_notebook(with_answer("q03_d_head", "d_head = width_i_computed_earlier")),
    )
    assert main(["validate", str(stale)]) == 1
    assert "NameError" in capsys.readouterr().out


def test_the_tools_work_on_the_course_in_front_of_them(tmp_path):
    """A regular (non-editable) install: the package lives outside the course folder. Release
    and check-solutions must still find the course from the current directory, and a copied
    course folder must be the one written to."""
    site = tmp_path / "site-packages"
    shutil.copytree(
        PACKAGE_DIR, site / "mha_helpers", ignore=shutil.ignore_patterns("__pycache__", "data")
    )
    course = tmp_path / "course"
    for part in ("solutions", "exercises"):
        shutil.copytree(ROOT / part, course / part, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(site))

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "mha_helpers.cli", *args],
            cwd=course,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    r = run("release", "--check")  # the copy has no self-check data yet: out of date
    assert r.returncode == 1 and "data" in r.stdout, r.stdout + r.stderr
    r = run("release")
    assert r.returncode == 0, r.stderr
    assert (course / "mha_helpers" / "grading" / "selfcheck" / "data" / f"{A03}.json").is_file()
    assert run("release", "--check").returncode == 0
    r = run("check-solutions")
    assert r.returncode == 0 and f"ok   {A03}.ipynb" in r.stdout, r.stdout + r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "mha_helpers.cli", "release", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 2 and "no course folder found" in r.stderr


def test_a_huge_answer_cell_does_not_blow_up_the_grader(tmp_path):
    """A notebook just under the 10 MiB file limit, almost all of it one answer cell: the grader
    refuses it before parsing its code, and its own memory stays modest."""
    nb = make_notebook(with_answer("q03_concat_project", "# " + "x" * (9 * 2**20) + "\n"))
    write_nb(tmp_path / "subs", "big", nb)
    code = (
        "import json, re\nfrom mha_helpers.grading.classroom.grade import grade_paths\n"
        f"[row] = grade_paths([{str(tmp_path / 'subs')!r}], jobs=1, timeout=20)\n"
        # VmHWM is this process's own peak (ru_maxrss would include the parent's, here pytest's)
        "peak = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(json.dumps([row['status'], int(peak)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    status, maxrss_kib = json.loads(out.stdout.strip().splitlines()[-1])
    assert status == "too-large"
    assert maxrss_kib < 300 * 1024, f"the grader used {maxrss_kib / 1024:.0f} MiB"
