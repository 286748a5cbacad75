"""Check the learner's set-up: package versions, and whether widgets can render here.

Used by ``notebooks/00_start_here.ipynb``.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

__all__ = ["environment_report", "widget_check", "REQUIRED"]

# Minimum versions the course is tested with (the same floors as pyproject.toml).
REQUIRED = {
    "numpy": "1.24",
    "matplotlib": "3.7",
    "ipywidgets": "8.0",
    "jupyterlab": "4.0",
}


def _version_tuple(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def environment_report() -> str:
    """One line per package: installed version and whether it is new enough."""
    lines = [f"Python {platform.python_version()} ({'ok' if sys.version_info >= (3, 10) else 'too old: need 3.10+'})"]
    for name, floor in REQUIRED.items():
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            lines.append(f"{name}: MISSING - run `make lab` (or `pip install -e .`) from the course folder")
            continue
        ok = _version_tuple(version) >= _version_tuple(floor)
        lines.append(f"{name} {version} ({'ok' if ok else f'too old: need {floor}+'})")
    return "\n".join(lines)


class _WidgetCheck:
    """Displays a live widget where widgets render, and a plain explanation where they do not.

    A front end shows the richest representation it understands: JupyterLab renders the widget
    view; a front end without widget support (a static viewer, an old notebook server, an IDE
    without the extension) falls back to the ``text/plain`` message.
    """

    FALLBACK = (
        "If this sentence is all you see after running the cell, ipywidgets cannot render in "
        "this front end, so the lessons' sliders will not appear here (each lesson still shows a "
        "static picture of its explorer). Open the course in JupyterLab 4 with `make lab` to use "
        "them. (A saved notebook that has not been run yet also shows this sentence: run the cell.)"
    )

    def __init__(self):
        import ipywidgets as widgets

        self.widget = widgets.HTML(
            value="<b style='color:#1a7f37'>&#10003; Widgets work here: the lessons' sliders will respond.</b>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle["text/plain"] = self.FALLBACK
        return bundle


def widget_check():
    """Return an object that shows a green tick where widgets work and says so plainly where not."""
    return _WidgetCheck()
