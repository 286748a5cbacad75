"""The course's address lives in one place, ``[project.urls] Repository`` of pyproject.toml, and
nothing made for others goes out while it is the placeholder (issue 35).

The website's side (``make site`` stops; the links, footer and run buttons follow the setting) is
checked in tests/test_site.py; the notebooks' first cell in tests/test_standalone.py. Here: the
release check and the student copy stop on the placeholder unless it is a local preview
(``--local-preview`` or $MHA_COURSE_LOCAL_PREVIEW, which conftest.py sets for the tests).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import mha_helpers.grading.classroom.release as release_module
import mha_helpers.notebooks as notebooks
from mha_helpers.cli import main

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "https://github.com/OWNER-NOT-SET/mha-course"


@pytest.fixture
def placeholder_course(monkeypatch):
    """This course as if pyproject.toml named the placeholder; release itself not run."""
    monkeypatch.setattr(notebooks, "repository_url", lambda *a: PLACEHOLDER)
    monkeypatch.setattr(release_module, "release", lambda course, check=False: [])
    monkeypatch.setattr(release_module, "student_copy", lambda course, dest, **kw: [Path(dest)])
    monkeypatch.delenv(notebooks.LOCAL_PREVIEW_ENV, raising=False)


@pytest.mark.parametrize(
    "args", [["--check"], ["--student-copy", "/nonexistent/copy"]], ids=["check", "student-copy"]
)
def test_the_release_check_and_student_copy_refuse_the_placeholder(
    placeholder_course, capsys, monkeypatch, args
):
    assert main(["release", *args, "--course", str(ROOT)]) == 1
    err = capsys.readouterr().err
    assert "placeholder" in err and "OWNER-NOT-SET" in err and "--local-preview" in err, err
    # A local preview says so, and goes ahead.
    assert main(["release", *args, "--local-preview", "--course", str(ROOT)]) == 0
    monkeypatch.setenv(notebooks.LOCAL_PREVIEW_ENV, "1")
    assert main(["release", *args, "--course", str(ROOT)]) == 0


def test_a_published_address_passes(monkeypatch, capsys):
    monkeypatch.setattr(notebooks, "repository_url", lambda *a: "https://github.com/x/mha-course")
    monkeypatch.setattr(release_module, "release", lambda course, check=False: [])
    monkeypatch.delenv(notebooks.LOCAL_PREVIEW_ENV, raising=False)
    assert main(["release", "--check", "--course", str(ROOT)]) == 0
    assert notebooks.placeholder_problem("https://github.com/x/mha-course", "x") is None


def test_regenerating_exercises_is_never_blocked(placeholder_course):
    """Plain `mha-course release` (regenerate exercises/ from solutions/) works on an
    unpublished course: only what goes to others is refused."""
    assert main(["release", "--course", str(ROOT)]) == 0
