"""Every lesson and exercise runs on its own, where learners are: Colab, VS Code, a hub, a folder.

* Each notebook starts with the course's managed install check (``mha-course execute`` writes
  it; release copies it into the exercises): nothing happens where the course is installed;
  elsewhere it names the one command that installs the course (Colab: it runs it) instead of a
  ``ModuleNotFoundError``, and stops Run All there.
* No notebook reaches into the repository: no ``../`` paths or ``sys.path`` edits in code, and
  every relative link points at a file that exists (the install check names the repository, so
  a lone notebook says where its neighbours are).
* In a fresh environment with the course's wheel and a kernel only, a notebook copied alone
  into an empty folder runs top to bottom: a lesson (with an explorer) and an exercise.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
import wheel_helpers

from mha_helpers.notebooks import (
    INSTALL_CHECK_GRADE_ID,
    INSTALL_CHECK_TAG,
    install_check_source,
    is_placeholder,
    repository_url,
    set_install_check,
)

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("notebooks", "solutions", "exercises")
ALL_NOTEBOOKS = [p for f in FOLDERS for p in sorted((ROOT / f).glob("*.ipynb"))]
REPOSITORY = repository_url(ROOT)
LEARNER_SET = ("numpy", "matplotlib", "ipywidgets", "anywidget")


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _first_code_cell(nb):
    return next(c for c in nb.cells if c.cell_type == "code")


# ---------------------------------------------------------------------------------------------
# The managed first cell
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=_id)
def test_every_notebook_starts_with_the_current_install_check(path):
    nb = nbformat.read(path, as_version=4)
    cell = _first_code_cell(nb)
    fix = (
        "run `mha-course execute` on it"
        if path.parent.name != "exercises"
        else "run `mha-course release`"
    )
    assert INSTALL_CHECK_TAG in cell.metadata.get("tags", []), f"{path.name}: {fix}"
    assert cell.source == install_check_source(REPOSITORY), f"{path.name}: outdated; {fix}"
    # Collapsed in JupyterLab (issue 35): the lesson comes first; its output would still show.
    assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, f"{path.name}: {fix}"
    assert not cell.metadata.get("jupyter", {}).get("outputs_hidden"), path.name
    assert sum(INSTALL_CHECK_TAG in c.metadata.get("tags", []) for c in nb.cells) == 1
    if path.parent.name in ("solutions", "exercises"):
        grader = cell.metadata.get("nbgrader", {})
        assert grader.get("grade_id") == INSTALL_CHECK_GRADE_ID and grader.get("locked") is True
        assert grader.get("grade") is False and grader.get("solution") is False
    if path.parent.name == "exercises":
        assert cell.metadata.get("editable") is False and cell.metadata.get("deletable") is False


def test_the_install_line_comes_from_pyproject_and_is_a_real_pip_command():
    published = "https://github.com/someone/mha-course"
    source = install_check_source(published)
    line = re.search(r"INSTALL = '(.*)'", source).group(1)
    assert line == f'pip install "mha-course @ git+{published}"'
    assert published in source.splitlines()[0]
    compile(source, "install-check", "exec")
    assert REPOSITORY.startswith("https://") and REPOSITORY in install_check_source(REPOSITORY)
    with pytest.raises(ValueError, match="https://"):
        install_check_source("github.com/someone/course")
    with pytest.raises(ValueError, match="quotes"):
        install_check_source('https://example.org/x" && rm -rf ~')


def _run_install_check(source: str, colab: bool) -> tuple[str, list[str]]:
    """Run the cell where mha_helpers is missing (and, with ``colab``, inside "Colab"): what it
    raises and the %pip lines it would run."""
    import importlib.util
    import types

    ran: list[str] = []
    fake_ip = types.SimpleNamespace(run_line_magic=lambda name, line: ran.append(f"%{name} {line}"))
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: fake_ip
    saved = {k: sys.modules.get(k) for k in ("google.colab", "IPython")}
    real_find_spec = importlib.util.find_spec
    try:
        sys.modules["IPython"] = ipython
        if colab:
            sys.modules["google.colab"] = types.ModuleType("google.colab")
        else:
            sys.modules.pop("google.colab", None)
        importlib.util.find_spec = lambda name, *a: (
            None if name == "mha_helpers" else real_find_spec(name, *a)
        )
        try:
            exec(compile(source, "install-check", "exec"), {})
        except Exception as exc:  # the cell's CourseNotInstalled
            return str(exc), ran
        return "", ran
    finally:
        importlib.util.find_spec = real_find_spec
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def test_in_colab_the_placeholder_cell_says_what_to_do_instead_of_a_failing_install():
    """While pyproject.toml names the placeholder, there is nothing to pip install from: in
    Colab and elsewhere the cell stops with what to do instead (issue 35). Once the address is
    set, Colab installs from it and elsewhere the cell prints the command."""
    placeholder = install_check_source("https://github.com/OWNER-NOT-SET/mha-course")
    for colab in (True, False):
        message, ran = _run_install_check(placeholder, colab)
        assert not ran, f"the placeholder cell ran {ran}"
        assert "pip install -e" in message and "placeholder" in message, message
        assert "git+https://github.com/OWNER-NOT-SET" not in message
    published = install_check_source("https://github.com/someone/mha-course")
    message, ran = _run_install_check(published, colab=True)
    assert ran == ['%pip install "mha-course @ git+https://github.com/someone/mha-course"']
    message, ran = _run_install_check(published, colab=False)
    assert (
        not ran
        and 'pip install "mha-course @ git+https://github.com/someone/mha-course"' in message
    )


def _toy(graded=False):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("import numpy as np"),
        nbformat.v4.new_code_cell("x = 1"),
    ]
    if graded:
        nb.metadata["mha_course"] = {"assignment": "01_toy"}
    return nb


def test_set_install_check_inserts_once_before_the_first_code_cell_and_refreshes():
    nb = _toy()
    assert set_install_check(nb, "https://example.org/a/course") is True
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code", "code"]
    assert nb.cells[1].source == install_check_source("https://example.org/a/course")
    assert nb.cells[1].metadata == {
        "tags": [INSTALL_CHECK_TAG],
        "jupyter": {"source_hidden": True},
    }
    assert set_install_check(nb, "https://example.org/a/course") is False  # idempotent
    # A fork changes the URL: the same cell is refreshed, not a second one added.
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="old")]
    assert set_install_check(nb, "https://example.org/fork/course") is True
    managed = [c for c in nb.cells if INSTALL_CHECK_TAG in c.metadata.get("tags", [])]
    assert len(managed) == 1 and "fork/course" in managed[0].source
    # Moved below another code cell (by hand): put back first.
    nb.cells.insert(1, nb.cells.pop(2))
    assert set_install_check(nb, "https://example.org/fork/course") is True
    assert _first_code_cell(nb) is managed[0]
    nbformat.validate(nb)


def test_in_graded_notebooks_the_install_check_is_a_locked_course_cell():
    nb = _toy(graded=True)
    set_install_check(nb, "https://example.org/a/course")
    assert _first_code_cell(nb).metadata["nbgrader"] == {
        "schema_version": 3,
        "grade": False,
        "solution": False,
        "locked": True,
        "grade_id": INSTALL_CHECK_GRADE_ID,
        "task": False,
    }
    nbformat.validate(nb)


# ---------------------------------------------------------------------------------------------
# Nothing reaches into the repository
# ---------------------------------------------------------------------------------------------

REACHES_OUT = re.compile(r"""\.\./|sys\.path|%run\b|%cd\b|os\.chdir|__file__|(['"])\.{1,2}/""")


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=_id)
def test_notebooks_use_no_files_of_the_repository(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not REACHES_OUT.search(cell.source), (
                f"{path.name}, cell {i}: reads the repository's files; a notebook opened on its "
                f"own has only the installed package:\n{cell.source}"
            )
        elif cell.cell_type == "markdown":
            for target in re.findall(r"\]\(([^)\s]+)\)", cell.source):
                if re.match(r"[a-z]+:|#", target):
                    continue
                assert (path.parent / target.split("#")[0]).exists(), (
                    f"{path.name}: the link {target} points at nothing"
                )


# ---------------------------------------------------------------------------------------------
# A fresh environment with the wheel and a kernel only
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """A virtual environment with ipykernel only (not the course yet), and a kernelspec for it."""
    base = tmp_path_factory.mktemp("standalone")
    python = wheel_helpers.fresh_venv(
        base / "venv", "ipykernel", wheelhouse_for=(*LEARNER_SET, "ipykernel")
    )
    spec = base / "kernels" / "mha-standalone"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "standalone",
                "language": "python",
            }
        )
    )
    return {"base": base, "python": python, "kernels": base / "kernels"}


def _run_alone(env, notebook: Path, folder: Path, extra_env=None):
    """Copy one notebook into an empty folder and run it there, top to bottom, in the fresh
    environment's kernel. Returns (notebook, error or None)."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    folder.mkdir()
    copy = folder / notebook.name
    shutil.copy(notebook, copy)
    nb = nbformat.read(copy, as_version=4)
    for cell in nb.cells:  # start from a clean notebook, to see which cells ran
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    km = KernelManager(
        kernel_name="mha-standalone",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(env["kernels"])]),
    )
    kernel_env = {
        "PATH": f"{env['python'].parent}:/usr/bin:/bin",
        "HOME": str(env["base"]),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYTHONHASHSEED": "0",
        **(extra_env or {}),
    }
    client = NotebookClient(nb, km=km, timeout=120, resources={"metadata": {"path": str(folder)}})
    try:
        client.execute(env=kernel_env)
    except CellExecutionError as err:
        return nb, err
    return nb, None


def _text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts += [out.get("text", ""), out.get("evalue", ""), *out.get("traceback", [])]
            parts += [str(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


def _first_lesson_with_the_check():
    for path in sorted((ROOT / "notebooks").glob("0*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if INSTALL_CHECK_TAG in _first_code_cell(nb).metadata.get("tags", []):
            return path
    pytest.fail("no lesson has the install check yet: run `mha-course execute`")


# A repository setting as a fork sets it.
PUBLISHED = "https://github.com/example-course-owner/mha-course"


def _published_copy(lesson: Path, folder: Path) -> Path:
    """A copy of ``lesson`` whose managed first cell is the one written for a course published
    at :data:`PUBLISHED` (the stored lessons carry the placeholder's cell until the repository
    setting is made)."""
    folder.mkdir()
    nb = nbformat.read(lesson, as_version=4)
    set_install_check(nb, PUBLISHED)
    copy = folder / lesson.name
    nbformat.write(nb, copy)
    return copy


def _stops_at_the_first_cell(nb, err) -> str:
    assert err is not None, "Run All must stop at the install check"
    shown = _text(nb)
    assert "ModuleNotFoundError" not in shown and "Traceback" not in shown
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].outputs and all(not c.outputs for c in code[1:]), "later cells must not run"
    return shown


def test_without_the_course_the_first_cell_says_how_to_install_it_and_stops(kernel_env):
    lesson = _published_copy(_first_lesson_with_the_check(), kernel_env["base"] / "published")
    nb, err = _run_alone(kernel_env, lesson, kernel_env["base"] / "missing")
    shown = _stops_at_the_first_cell(nb, err)
    assert f'pip install "mha-course @ git+{PUBLISHED}"' in shown


def test_with_the_placeholder_the_first_cell_says_what_to_do_instead_of_a_failing_install(
    kernel_env,
):
    assert is_placeholder(REPOSITORY), "the stored lessons are the placeholder's (issue 35)"
    nb, err = _run_alone(kernel_env, _first_lesson_with_the_check(), kernel_env["base"] / "ph")
    shown = _stops_at_the_first_cell(nb, err)
    assert 'pip install "mha-course @ git+' not in shown
    assert "make lab" in shown and "pip install -e" in shown


COLAB_STARTUP = """
import subprocess, sys, types
from IPython.core.magic import register_line_magic

sys.modules["google"] = types.ModuleType("google")
sys.modules["google.colab"] = types.ModuleType("google.colab")
PIP_CALLS = []


@register_line_magic
def pip(line):  # Colab's %pip, offline: record the call, install the course's local wheel
    PIP_CALLS.append(line)
    subprocess.run([{outer!r}, "-m", "pip", "--python", sys.executable, "install", "--quiet",
                    "--no-index", "--find-links", {house!r}, "--no-compile", {wheel!r}], check=True)
    print("installed from", {wheel!r})
"""


def test_in_colab_the_first_cell_installs_the_course_and_the_notebook_runs(kernel_env):
    """Colab is simulated: a ``google.colab`` module and a ``%pip`` that installs the local wheel."""
    lesson = _published_copy(_first_lesson_with_the_check(), kernel_env["base"] / "colab-copy")
    ipython_dir = kernel_env["base"] / "ipython-colab"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True)
    house = wheel_helpers.wheelhouse((*LEARNER_SET, "ipykernel"))
    (startup / "00-fake-colab.py").write_text(
        COLAB_STARTUP.format(
            outer=sys.executable, house=str(house), wheel=str(wheel_helpers.course_wheel())
        )
    )
    nb, err = _run_alone(
        kernel_env, lesson, kernel_env["base"] / "colab", {"IPYTHONDIR": str(ipython_dir)}
    )
    assert err is None, f"{lesson.name} failed after the Colab install:\n{err}"
    assert "installed from" in _text(nb)


def _run_installed(kernel_env, notebook, name):
    nb, err = _run_alone(kernel_env, notebook, kernel_env["base"] / name)
    assert err is None, f"{notebook.name} failed when run alone:\n{err}"
    return nb


def test_a_lesson_and_an_exercise_run_alone_with_the_wheel_and_a_kernel(kernel_env):
    python = kernel_env["python"]
    wheel_helpers.install(python, "mha-course", wheelhouse_for=(*LEARNER_SET, "ipykernel"))
    lesson = _run_installed(kernel_env, ROOT / "notebooks" / "02_heads.ipynb", "lesson")
    assert "mha-static-explorer" in _text(lesson)  # the explorer drew its picture
    exercise = _run_installed(kernel_env, ROOT / "exercises" / "02_heads.ipynb", "exercise")
    assert "not attempted yet" in _text(exercise)  # the self-checks ran from the installed data


# ---------------------------------------------------------------------------------------------
# Lesson 00's set-up check reports what the course needs, in the front end it runs in
# ---------------------------------------------------------------------------------------------


def test_the_setup_report_asks_for_what_the_course_needs_not_for_jupyterlab(monkeypatch):
    from mha_helpers import environment

    installed = environment._version
    monkeypatch.setattr(environment, "front_end", lambda: "Google Colab")
    monkeypatch.setattr(
        environment, "_version", lambda name: None if name == "jupyterlab" else installed(name)
    )
    report = environment.environment_report()
    assert "jupyterlab" not in report.lower() and "MISSING" not in report
    assert "Front end: Google Colab" in report and "Jupyter widgets" in report
    for name in ("numpy", "matplotlib", "ipywidgets"):
        assert re.search(rf"^{name} [\d.]+\S*: ok", report, re.M), report
    monkeypatch.setattr(
        environment, "_version", lambda name: None if name == "ipywidgets" else installed(name)
    )
    report = environment.environment_report()
    assert "ipywidgets: MISSING (the sliders)" in report
    assert environment.install_command() in report
    assert environment.install_command() == f'pip install "mha-course @ git+{REPOSITORY}"'
