"""Execute notebooks in a fresh kernel and store them: the only way outputs in the repo change.

``mha-course execute [PATH ...]`` runs each notebook top to bottom in a new kernel, with the
notebook's folder as working directory (as JupyterLab and nbval do), and writes it back with
its outputs. Student notebooks (``exercises/``) are never executed here: they are stored
without outputs by ``mha-course release``.

The notebook's ``language_info`` and ``kernelspec`` metadata are stored exactly as
JupyterLab writes them when the kernel starts, so opening a stored lesson and closing it leaves
it unmodified (see :func:`_store_kernel_metadata`), and back-to-back printed text is stored as
one output, as JupyterLab stores it, however the kernel happened to split it.

Before running, it writes two things every stored notebook carries:

* **The install check**, the first code cell of every lesson and solution (and so of every
  exercise, which release copies from its solution): a cell tagged ``course-install-check``
  that does nothing where the course's package is installed, and elsewhere (a notebook
  downloaded on its own, Colab, VS Code, a hub) prints the one command that installs it, or in
  Colab runs it. Its text is :func:`install_check_source`, built from the repository URL in
  ``[project.urls]`` of the course's ``pyproject.toml`` (the one place a fork changes). While
  that is the placeholder (``OWNER-NOT-SET``), the cell says how to install from a copy of the
  course instead of naming a pip install that must fail. The cell is stored collapsed
  (``metadata.jupyter.source_hidden``): JupyterLab shows its output, not its twenty lines.
* **Widget state that survives a save**: for every widget output, a placeholder model under the
  same id in the notebook's widget metadata. JupyterLab does not save widget state by default,
  so after a save and a kernel shutdown a widget output whose model is unknown shows "Error
  displaying widget: model not found". The explorers use fixed model ids (see
  :mod:`mha_helpers.widgets`), so these placeholders match their outputs after a learner's own
  Run All too, and a reopened lesson shows the explorer's last state as a picture instead.

This module is for instructors: it needs the ``[instructor]`` extra (nbformat, nbclient,
ipykernel), imported only when a notebook is executed.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from pathlib import Path

__all__ = [
    "find_notebooks",
    "execute_notebook",
    "install_check_source",
    "set_install_check",
    "repository_url",
    "offline_widget_state",
    "is_placeholder",
    "local_preview",
    "placeholder_problem",
    "INSTALL_CHECK_TAG",
    "INSTALL_CHECK_GRADE_ID",
    "LOCAL_PREVIEW_ENV",
    "PLACEHOLDER_OWNER",
    "WIDGET_VIEW",
    "WIDGET_STATE",
]

COURSE_ROOT = Path(__file__).resolve().parent.parent

INSTALL_CHECK_TAG = "course-install-check"
INSTALL_CHECK_GRADE_ID = "install_check"
INSTALL_CHECK_CELL_ID = "install-check"
PACKAGE_NAME = "mha-course"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

# Until the course has a public home, pyproject.toml names this placeholder owner. Anything built
# for others from it (the website, a student copy, a release check) refuses it unless told that
# this is a local preview: ``--local-preview`` or this environment variable (the tests set it).
PLACEHOLDER_OWNER = "OWNER-NOT-SET"
LOCAL_PREVIEW_ENV = "MHA_COURSE_LOCAL_PREVIEW"

# The first code cell of every notebook. `{repository}` is the course's repository URL.
_INSTALL_CHECK_HEAD = """\
# Set-up check, written by the course ({repository}).
# Where the course's package is installed it does nothing. Anywhere else (a notebook downloaded
"""
_INSTALL_CHECK_PUBLISHED = """\
# on its own, a hub, VS Code) it prints the one command that installs it; in Colab it runs it.
import importlib.util
import sys

if importlib.util.find_spec("mha_helpers") is None:
    INSTALL = 'pip install "mha-course @ git+{repository}"'
    if "google.colab" in sys.modules:
        from IPython import get_ipython

        get_ipython().run_line_magic("pip", INSTALL.removeprefix("pip "))
    else:
        class CourseNotInstalled(Exception):
            def _render_traceback_(self):  # Jupyter shows the message alone, no traceback
                return [str(self)]

        raise CourseNotInstalled(
            "This notebook needs the course's package, mha_helpers. Install it into the Python "
            f"environment of this notebook's kernel, then restart the kernel:\\n\\n    {{INSTALL}}\\n\\n"
            "(or run %pip install ... in a cell). Lessons, exercises and instructions: "
            "{repository}"
        )
"""
# While pyproject.toml names the placeholder there is no address to install from: the cell says
# what to do instead (in Colab too) rather than running a pip install that must fail.
_INSTALL_CHECK_UNPUBLISHED = """\
# on its own, a hub, VS Code, Colab) it says how to install it from a copy of the course.
import importlib.util

if importlib.util.find_spec("mha_helpers") is None:

    class CourseNotInstalled(Exception):
        def _render_traceback_(self):  # Jupyter shows the message alone, no traceback
            return [str(self)]

    raise CourseNotInstalled(
        "This notebook needs the course's package, mha_helpers, and this copy of the course "
        "has no public address to install it from yet: its pyproject.toml names the placeholder "
        "{repository}. "
        "Run the notebook from a copy of the course's folder instead: `make lab` there, or "
        "`pip install -e FOLDER` into this kernel's environment and restart the kernel. In "
        "Colab: upload the course's folder, run %pip install -e FOLDER in a cell, then restart "
        "the session. Whoever gave you this notebook can tell you where the course lives."
    )
"""


def is_placeholder(repository: str) -> bool:
    """True while ``repository`` is the placeholder of an unpublished course."""
    return PLACEHOLDER_OWNER in repository


def local_preview(flag: bool = False) -> bool:
    """A local preview (the placeholder repository allowed): ``flag`` or $MHA_COURSE_LOCAL_PREVIEW."""
    return flag or os.environ.get(LOCAL_PREVIEW_ENV, "").strip().lower() in ("1", "true", "yes")


def placeholder_problem(repository: str, what: str) -> str | None:
    """The error to stop ``what`` with while the repository is the placeholder (None if set)."""
    if not is_placeholder(repository):
        return None
    return (
        f"{what}: [project.urls] Repository in pyproject.toml is still the placeholder "
        f"{repository}, so every Binder, Colab and install link would lead nowhere. Set it to "
        f"the course's public repository (then run `make notebooks release`), or, for a local "
        f"preview only, pass --local-preview (or set {LOCAL_PREVIEW_ENV}=1)."
    )


def install_check_source(repository: str) -> str:
    """The source of the managed first cell for a course published at ``repository``."""
    if not re.fullmatch(r"https://[^\s\"'{}]+", repository):
        raise ValueError(
            f"repository must be an https:// URL without quotes or spaces, got "
            f"{repository!r} (set it in [project.urls] of pyproject.toml)"
        )
    repository = repository.rstrip("/").removesuffix(".git")
    body = _INSTALL_CHECK_UNPUBLISHED if is_placeholder(repository) else _INSTALL_CHECK_PUBLISHED
    return (_INSTALL_CHECK_HEAD + body).format(repository=repository).rstrip("\n")


def _toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the instructor extra installs tomli
        import tomli as tomllib
    return tomllib.loads(path.read_text(encoding="utf-8"))


def repository_url(start=None) -> str:
    """The course's repository: ``[project.urls] Repository`` of the course's pyproject.toml.

    Looked for from ``start`` (a notebook or folder; default this package's folder) upwards;
    when no course folder is found, the installed package's own metadata is used.
    """
    here = Path(start or COURSE_ROOT).resolve()
    for folder in (here, *here.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            project = _toml(pyproject).get("project", {})
            if project.get("name") == PACKAGE_NAME:
                url = project.get("urls", {}).get("Repository")
                if not url:
                    raise ValueError(
                        f"{pyproject}: set the course's URL in [project.urls] "
                        'as Repository = "https://..."'
                    )
                return str(url)
    from importlib import metadata

    for entry in metadata.metadata(PACKAGE_NAME).get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "repository":
            return url.strip()
    raise ValueError("no course repository URL: set [project.urls] Repository in pyproject.toml")


def _is_graded(nb) -> bool:
    """Solution (and exercise) notebooks: their cells carry nbgrader metadata."""
    return "mha_course" in nb.metadata or any("nbgrader" in c.metadata for c in nb.cells)


def set_install_check(nb, repository: str) -> bool:
    """Insert or refresh the managed install-check cell as the first code cell of ``nb``.

    Returns True when the notebook changed. In graded notebooks the cell is a locked course cell
    for nbgrader and the course's grader (grade_id ``install_check``).
    """
    import nbformat

    source = install_check_source(repository)
    # Collapsed in JupyterLab (its output, if any, still shows): a learner meets the lesson
    # first, not twenty lines of set-up. The website collapses it too (site_src/build_site.py).
    metadata = {"tags": [INSTALL_CHECK_TAG], "jupyter": {"source_hidden": True}}
    if _is_graded(nb):
        metadata["nbgrader"] = {
            "schema_version": 3,
            "grade": False,
            "solution": False,
            "locked": True,
            "grade_id": INSTALL_CHECK_GRADE_ID,
            "task": False,
        }
    managed = [c for c in nb.cells if INSTALL_CHECK_TAG in c.metadata.get("tags", [])]
    cell = managed[0] if managed else nbformat.v4.new_code_cell(source)
    before = (list(nb.cells), cell.get("source"), dict(cell.metadata))
    for extra in managed[1:]:
        nb.cells.remove(extra)
    if cell in nb.cells:
        nb.cells.remove(cell)
    cell.source = source
    for key, value in metadata.items():
        cell.metadata[key] = value
    cell.id = INSTALL_CHECK_CELL_ID
    if not managed:
        cell.outputs, cell.execution_count = [], None
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first_code, cell)
    return (list(nb.cells), cell.get("source"), dict(cell.metadata)) != before


def _placeholder_ids(model_id: str) -> tuple[str, str]:
    """Fixed ids for a placeholder's layout and style models (no churn from run to run)."""
    ns = uuid.UUID(hex=model_id) if re.fullmatch(r"[0-9a-f]{32}", model_id) else uuid.NAMESPACE_URL
    return (uuid.uuid5(ns, f"{model_id}/layout").hex, uuid.uuid5(ns, f"{model_id}/style").hex)


def offline_widget_state(nb) -> dict | None:
    """The widget metadata to store with ``nb``: one placeholder per widget output, or None.

    Each placeholder is an ``HTML`` widget under the output's model id. Its text comes from the
    output's metadata (``{"mha_course": {"offline_html": ...}}``, written by the course's
    widgets); it is hidden when that text is empty (the explorers show their last state in a
    separate picture output). A widget output without that metadata gets a generic line.
    """
    state = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if not view or not view.get("model_id"):
                continue
            html = (
                out.get("metadata", {})
                .get("mha_course", {})
                .get(
                    "offline_html",
                    "This widget needs a running kernel: run the cell to bring it back.",
                )
            )
            model_id = view["model_id"]
            layout_id, style_id = _placeholder_ids(model_id)
            state[model_id] = {
                "model_name": "HTMLModel",
                "model_module": "@jupyter-widgets/controls",
                "model_module_version": "2.0.0",
                "state": {
                    "value": html,
                    "layout": f"IPY_MODEL_{layout_id}",
                    "style": f"IPY_MODEL_{style_id}",
                },
            }
            state[layout_id] = {
                "model_name": "LayoutModel",
                "model_module": "@jupyter-widgets/base",
                "model_module_version": "2.0.0",
                "state": {"display": "none"} if not html else {},
            }
            state[style_id] = {
                "model_name": "HTMLStyleModel",
                "model_module": "@jupyter-widgets/controls",
                "model_module_version": "2.0.0",
                "state": {},
            }
    if not state:
        return None
    return {WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": state}}


def find_notebooks(paths) -> list[Path]:
    """Expand files and folders into a sorted list of notebooks (checkpoints skipped)."""
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            found += [q for q in sorted(p.rglob("*.ipynb")) if ".ipynb_checkpoints" not in q.parts]
        elif p.suffix == ".ipynb":
            found.append(p)
        else:
            raise FileNotFoundError(f"{p} is neither a notebook nor a folder")
    return found


def _instructor_tools():
    try:
        import nbformat
        from nbclient import NotebookClient
    except ImportError as err:
        raise SystemExit(
            f"mha-course execute needs the instructor tools ({err.name} is missing): "
            "pip install 'mha-course[instructor]' (or `make install` in the course "
            "folder)"
        ) from None
    return nbformat, NotebookClient


def _store_kernel_metadata(nb, client) -> None:
    """Store the kernel's metadata exactly as JupyterLab writes it when it opens the notebook.

    When a kernel starts, JupyterLab sets ``language_info`` to the kernel's whole reply
    (``kernel_info_reply.language_info``) and ``kernelspec`` to the kernel spec's name, display
    name and language. It marks the notebook modified only when these differ from what is stored
    (a deep comparison), so a lesson stored with the same values opens unmodified and closes
    without asking to save. ``language_info.version`` is the kernel's Python version: on a
    Python of another version JupyterLab still updates it.
    """
    reply = client.wait_for_reply(client.kc.kernel_info())
    language_info = (reply or {}).get("content", {}).get("language_info")
    if not language_info:
        raise RuntimeError(f"the kernel sent no language_info: {reply!r}")
    nb.metadata["language_info"] = language_info
    spec = client.km.kernel_spec
    if spec is not None:
        nb.metadata["kernelspec"] = {
            "display_name": spec.display_name,
            "language": spec.language,
            "name": client.kernel_name,
        }


def _merge_consecutive_streams(cell) -> None:
    """Join back-to-back stream outputs of the same name (stdout after stdout), as JupyterLab
    does when it shows and saves them. How a kernel splits printed text into messages depends
    on timing (a busy machine flushes more often); the stored notebook must not."""
    merged = []
    for out in cell.get("outputs", []):
        last = merged[-1] if merged else None
        if (
            out.get("output_type") == "stream"
            and last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == out.get("name")
        ):
            last["text"] += out["text"]
        else:
            merged.append(out)
    if "outputs" in cell:
        cell.outputs = merged


def execute_notebook(path, timeout: int = 600, write: bool = True) -> dict:
    """Execute one notebook in a fresh kernel; store it when ``write``. Return timings (s).

    The install-check cell is refreshed first (:func:`set_install_check`) and the widget
    metadata is rewritten afterwards (:func:`offline_widget_state`). The kernel gets a fixed
    ``PYTHONHASHSEED`` so outputs are the same from run to run.
    """
    nbformat, NotebookClient = _instructor_tools()
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    set_install_check(nb, repository_url(path))
    env_backup = {k: os.environ.get(k) for k in ("PYTHONHASHSEED",)}
    os.environ["PYTHONHASHSEED"] = "0"
    try:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            record_timing=False,
            # nbclient's own widget state would hold the live models (new ids every run);
            # offline_widget_state() writes placeholders under the outputs' ids instead.
            store_widget_state=False,
            resources={"metadata": {"path": str(path.parent.resolve())}},
        )
        t0 = time.perf_counter()
        with client.setup_kernel():
            t1 = time.perf_counter()
            _store_kernel_metadata(nb, client)
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
                _merge_consecutive_streams(cell)
            t2 = time.perf_counter()
    finally:
        for k, v in env_backup.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    state = offline_widget_state(nb)
    if state is None:
        nb.metadata.pop("widgets", None)
    else:
        nb.metadata["widgets"] = state
    if write:
        nbformat.write(nb, path)
    return {"kernel_start": t1 - t0, "execute": t2 - t1}
