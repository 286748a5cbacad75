"""Check the learner's set-up: what the course needs, in the front end it runs in.

Used by ``notebooks/00_start_here.ipynb``. The kernel needs Python, NumPy, matplotlib and
ipywidgets (the course's package brings them); the front end needs only to show Jupyter widgets
for the sliders. JupyterLab is one such front end, and ``make lab`` installs it, but Colab, VS
Code, Jupyter Notebook 7 and hubs bring their own: a missing JupyterLab is never an error.
"""

from __future__ import annotations

import os
import platform
import sys
import uuid
from importlib import metadata

__all__ = [
    "environment_report",
    "widget_check",
    "front_end",
    "install_command",
    "machine_description",
    "REQUIRED",
]

# What the kernel needs (the same floors as pyproject.toml's dependencies).
REQUIRED = {
    "numpy": "1.24",
    "matplotlib": "3.7",
    "ipywidgets": "8.0",
}
_WHAT_FOR = {"numpy": "the maths", "matplotlib": "the figures", "ipywidgets": "the sliders"}
PLACEHOLDER_REPOSITORY = "https://github.com/OWNER-NOT-SET/mha-course"


def _version_tuple(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def install_command() -> str:
    """The one command that installs the course into the kernel's environment."""
    url = PLACEHOLDER_REPOSITORY
    try:
        for entry in metadata.metadata("mha-course").get_all("Project-URL") or []:
            label, _, value = entry.partition(",")
            if label.strip().lower() == "repository":
                url = value.strip()
    except metadata.PackageNotFoundError:
        pass
    return f'pip install "mha-course @ git+{url}"'


def front_end(environ=None, modules=None) -> str:
    """A best guess at the front end this kernel serves, from what it can see.

    >>> front_end({}, {"google.colab": object()})
    'Google Colab'
    >>> front_end({"VSCODE_PID": "1"}, {})
    'VS Code'
    >>> front_end({"JPY_SESSION_NAME": "/x.ipynb", "JPY_PARENT_PID": "1"}, {})
    'a Jupyter server (JupyterLab, Jupyter Notebook or a hub)'
    >>> front_end({}, {})
    'not recognised'
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if "google.colab" in modules:
        return "Google Colab"
    if "VSCODE_PID" in environ or environ.get("TERM_PROGRAM") == "vscode":
        return "VS Code"
    if "JPY_SESSION_NAME" in environ:  # set by jupyter_server for the kernels it starts
        return "a Jupyter server (JupyterLab, Jupyter Notebook or a hub)"
    if "JPY_PARENT_PID" in environ:  # a kernel started by a script (nbclient) or a console
        return "none: a script or a console runs this notebook (mha-course execute does)"
    return "not recognised"


def environment_report() -> str:
    """One line per requirement: what is installed, whether it is new enough, and what it is for.

    The last line names the front end and what the course needs from it.
    """
    ok = sys.version_info >= (3, 10)
    lines = [
        f"Python {platform.python_version()}: {'ok' if ok else 'too old, the course needs 3.10+'}"
    ]
    for name, floor in REQUIRED.items():
        version = _version(name)
        if version is None:
            lines.append(
                f"{name}: MISSING ({_WHAT_FOR[name]}). Install the course: {install_command()}"
            )
            continue
        good = _version_tuple(version) >= _version_tuple(floor)
        lines.append(
            f"{name} {version}: {'ok' if good else f'too old, the course needs {floor}+'}"
            f" ({_WHAT_FOR[name]})"
        )
    course = _version("mha-course")
    lines.append(f"mha_helpers {course or '(from the course folder)'}: ok (the course's package)")
    where = front_end()
    lab = _version("jupyterlab")
    if where.startswith("a Jupyter server") and lab:
        where += f"; JupyterLab {lab} is installed here"
    lines.append(
        f"Front end: {where}. The sliders need one that shows Jupyter widgets: the next "
        "cell checks."
    )
    return "\n".join(lines)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CHECK_MODEL_ID = uuid.uuid5(uuid.NAMESPACE_URL, "mha-course/widget-check").hex
_last_check = None


class _WidgetCheck:
    """Displays a live widget where widgets render, and a plain explanation where they do not.

    A front end shows the richest representation it understands: one with widget support
    renders the widget view; one without (a static viewer, an editor without the extension)
    falls back to the ``text/plain`` message. The widget has a fixed model id, so the placeholder
    that ``mha-course execute`` stores with lesson 00 matches it after a save and a reopen.
    """

    FALLBACK = (
        "If this sentence is all you see after running the cell, this front end cannot show "
        "Jupyter widgets: the lessons' explorers will show pictures instead of sliders. To move "
        "the sliders, open the course in a front end with widgets: JupyterLab 4 (`make lab`), "
        "Jupyter Notebook 7, VS Code with the Jupyter extension, or Colab. (Before this cell has "
        "run, this sentence shows too: run it.)"
    )
    OFFLINE = "Run this cell to check that widgets work here."

    def __init__(self):
        import ipywidgets as widgets

        global _last_check
        if _last_check is not None:  # the cell ran again: the new check takes over the id
            _last_check.close()
        self.widget = _last_check = widgets.HTML(
            value="<b style='color:#1a7f37'>&#10003; Widgets work here: the lessons' sliders "
            "will respond.</b>",
            model_id=CHECK_MODEL_ID,
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle["text/plain"] = self.FALLBACK
        return bundle

    def _ipython_display_(self, **kwargs):
        from IPython.display import display

        display(
            self._repr_mimebundle_(),
            raw=True,
            metadata={"mha_course": {"offline_html": self.OFFLINE}},
        )


def widget_check():
    """Return an object that shows a green tick where widgets work and says so plainly where not."""
    return _WidgetCheck()


def machine_description() -> str:
    """One line naming the processor and software a measurement ran on.

    Lesson 04 prints it above its timings, so a reader of the stored notebook (or of the course
    website, built from it) sees which machine measured them.

    >>> "NumPy" in machine_description() and "logical cores" in machine_description()
    True
    """
    import numpy as np

    cpu = platform.processor() or platform.machine() or "unknown processor"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:  # Linux: the processor's name
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, NumPy {np.__version__}"
    )
