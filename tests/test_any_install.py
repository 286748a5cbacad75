"""Grading from any install, clear sandbox messages (issue 20 item 3), and a validate that never
runs someone else's notebook unsandboxed (issue 21 class 7)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import wheel_helpers
from grading_helpers import A03, FULL, ROOT, make_notebook, require_sandbox, with_answer, write_nb

from mha_helpers.cli import main
from mha_helpers.grading.classroom import validate
from mha_helpers.grading.sandbox import bubblewrap


def _observer(*secrets) -> str:
    """An answer that earns q03_d_head only when none of ``secrets`` can be seen."""
    checks = " or ".join(f"os.path.exists({str(s)!r})" for s in secrets)
    return f"import os\nd_head = 65 if ({checks}) else 64\n"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The course installed as a regular (non-editable) package into a venv in a home folder."""
    require_sandbox()
    home = tmp_path_factory.mktemp("home")
    python = wheel_helpers.fresh_venv(
        home / "venvs" / "course",
        "mha-course[instructor]",
        wheelhouse_for=("mha-course[instructor]",),
    )
    return home, python.parent / "mha-course"


@pytest.mark.parametrize("where", ["venv in the home folder", "venv in a temp folder"])
def test_a_regular_install_grades_in_the_sandbox_and_shows_nothing_else(installed, tmp_path, where):
    home, command = installed
    if where == "venv in the home folder":
        env_home = home
    else:
        env_home = tmp_path / "elsewhere"
        env_home.mkdir()
    (env_home / "secret.txt").write_text("the instructor's")
    subs = tmp_path / "subs"
    write_nb(subs, "good", make_notebook())
    write_nb(
        subs,
        "observer",
        make_notebook(
            with_answer(
                "q03_d_head",
                _observer(env_home / "secret.txt", ROOT / "solutions", ROOT / "README.md"),
            )
        ),
    )
    env = {"HOME": str(env_home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    proc = subprocess.run(
        [
            str(command),
            "grade",
            str(subs),
            "--out",
            str(tmp_path / "book.csv"),
            "--course",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "book.csv").open())}
    assert rows["good"]["total"] == f"{FULL:g}" and rows["good"]["status"] == "ok"
    assert rows["observer"]["q03_d_head"] == "1", rows["observer"]  # nothing else was visible


def _grade_with_path(tmp_path, path_env: str) -> subprocess.CompletedProcess:
    write_nb(tmp_path / "subs", "good", make_notebook())
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mha_helpers.cli",
            "grade",
            str(tmp_path / "subs"),
            "--out",
            str(tmp_path / "book.csv"),
            "--course",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PATH=path_env),
        timeout=120,
    )


def test_without_bwrap_the_message_says_it_is_missing(tmp_path):
    proc = _grade_with_path(tmp_path, str(tmp_path / "empty-path"))
    assert proc.returncode == 2
    assert "not installed" in proc.stderr and "apt install bubblewrap" in proc.stderr
    assert not (tmp_path / "book.csv").exists()


def test_a_failing_bwrap_shows_its_own_error_first(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text(
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
    )
    (fake / "bwrap").chmod(0o755)
    proc = _grade_with_path(tmp_path, f"{fake}:/usr/bin:/bin")
    assert proc.returncode == 2
    first = proc.stderr.strip().splitlines()[:2]
    assert first == ["bubblewrap's own error:", "bwrap: setting up uid map: Permission denied"]
    assert "is installed" in proc.stderr and "apt install" not in proc.stderr
    assert not (tmp_path / "book.csv").exists()


# --- validate --------------------------------------------------------------------------------


def _marking_notebook(folder: Path, marker: Path) -> Path:
    """A notebook whose answer cell leaves ``marker`` behind if it runs with the caller's
    permissions."""
    source = f"open({str(marker)!r}, 'w').write('ran')\nd_head = 768 // 12\n"
    return write_nb(folder, "someone", make_notebook(with_answer("q03_d_head", source)))


def _course_folder(tmp_path) -> Path:
    course = tmp_path / "course"
    (course / "solutions" / "banks").mkdir(parents=True)
    return course


def test_validate_refuses_a_notebook_inside_a_course_without_a_sandbox(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(bubblewrap, "probe", lambda: "no bwrap here (test)")
    marker = tmp_path / "ran.txt"
    nb = _marking_notebook(_course_folder(tmp_path) / "submissions", marker)
    assert main(["validate", str(nb), "--unsafe-no-sandbox"]) == 1
    out = capsys.readouterr().out
    assert "refusing to run it: it is inside the course folder" in out
    assert not marker.exists()


def test_validate_refuses_someone_elses_notebook_without_a_sandbox(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bubblewrap, "probe", lambda: "no bwrap here (test)")
    marker = tmp_path / "ran.txt"
    nb = _marking_notebook(tmp_path / "inbox", marker)
    monkeypatch.setattr(validate.os, "getuid", lambda: os.stat(nb).st_uid + 1)
    assert main(["validate", str(nb), "--unsafe-no-sandbox"]) == 1
    assert "it belongs to another user" in capsys.readouterr().out
    assert not marker.exists()


def test_validate_runs_nothing_unsandboxed_without_the_flag_that_names_the_risk(
    tmp_path, monkeypatch, capsys
):
    """Issue 31 item 8: even a learner's own notebook outside any course folder."""
    monkeypatch.setattr(bubblewrap, "probe", lambda: "no bwrap here (test)")
    marker = tmp_path / "ran.txt"
    nb = _marking_notebook(tmp_path / "mine", marker)
    assert main(["validate", str(nb)]) == 1
    out = capsys.readouterr().out
    assert "--unsafe-no-sandbox" in out and "with your permissions" in out
    assert not marker.exists()
    for where in (_course_folder(tmp_path) / "submissions", tmp_path / "inbox"):  # any notebook
        assert main(["validate", str(_marking_notebook(where, marker))]) == 1
        assert not marker.exists()


def test_validate_runs_a_learners_own_notebook_without_a_sandbox_when_asked(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(bubblewrap, "probe", lambda: "no bwrap here (test)")
    marker = tmp_path / "ran.txt"
    nb = _marking_notebook(tmp_path / "mine", marker)
    main(["validate", str(nb), "--unsafe-no-sandbox"])
    assert "q03_d_head: passed" in capsys.readouterr().out
    assert marker.exists()  # it did run, as the learner's own code on their own machine


def test_validate_runs_a_notebook_inside_a_course_in_the_sandbox(tmp_path, capsys):
    require_sandbox()
    marker = tmp_path / "ran.txt"
    nb = _marking_notebook(_course_folder(tmp_path) / "submissions", marker)
    main(["validate", str(nb)])
    out = capsys.readouterr().out
    assert f"{A03}" in out or "q03_d_head" in out
    assert "refusing" not in out
    assert not marker.exists()  # the sandbox has no view of the caller's files
