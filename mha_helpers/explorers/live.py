"""What makes an explorer live: the ipywidgets layer every explorer shares.

Each explorer (:mod:`.shape`, :mod:`.kv_cache`, :mod:`.cost`) is a pure view function, its HTML
rendering, and a widget class there: the sliders call the view function and put the rendered
HTML into ``ipywidgets.HTML`` children. This module holds what the three widget classes share:

* :class:`Explorer`, the mixin: controls -> view -> HTML children, and the **picture** output
  that survives a save (static HTML of the last state, kept up to date as the sliders move,
  hidden by a style rule inside the live widget while the widget is shown);
* fixed model ids (:func:`stable_model_id`), so the placeholder ``mha-course execute`` stores
  under that id in a lesson's widget metadata matches a learner's own Run All, and JupyterLab
  never shows "Error displaying widget: model not found";
* the controls' helpers (sliders, rows, columns) and :func:`live_class`, which makes the widget
  class from an explorer's class on first use: importing an explorer never imports ipywidgets.
"""

from __future__ import annotations

import itertools
import uuid
import weakref
from contextlib import contextmanager

from ..a11y import control_labeller
from .common import MUTED, esc, render_message_html

__all__ = [
    "Explorer",
    "live_class",
    "stable_model_id",
    "random_model_ids",
    "html_box",
    "int_slider",
    "choice_slider",
    "row",
    "column",
    "with_value",
    "SLIDER_STYLE",
    "CONTROL_WIDTH",
    "WIDGET_VIEW",
]


def widgets_module():
    import ipywidgets

    return ipywidgets


SLIDER_STYLE = {"description_width": "88px"}
# The explorers' layout (issue 26): on a 1366 x 768 laptop the sliders and everything they change
# stay in view together. Controls are one narrow column (or one row) beside or above the
# pictures; the layer diagram is scaled to the window's height; tables are compact.
CONTROL_WIDTH = "340px"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# The explorers' own style rules (issue 35), in JupyterLab's theme variables with fallbacks:
# - a focused slider handle gets a ring that a hovered one does not (WCAG 2.4.7: JupyterLab draws
#   hover and focus alike);
# - the selected sharing button is marked by more than its colour (WCAG 1.4.1): bold, underlined
#   and a ring in the text colour (about 15:1 against the button in either theme);
# - menus keep their text clear of the chevron.
EXPLORER_CSS = (
    ".mha-explorer .noUi-handle:focus,.mha-explorer .noUi-handle:focus-visible{"
    "outline:3px solid var(--jp-brand-color1,#1976d2);outline-offset:2px}"
    ".mha-explorer .widget-toggle-button.mod-active{font-weight:bold;"
    "text-decoration:underline 2px;text-underline-offset:2px;"
    "box-shadow:inset 0 0 0 2px var(--jp-ui-font-color1,#222222)}"
    ".mha-explorer .widget-dropdown>select{padding-right:26px;text-overflow:ellipsis}"
)

_ID_NAMESPACE = uuid.UUID("5f0c6b8e-3d1a-5c2e-9a47-6d2b8f1e0c3a")
_LIVE: dict[str, weakref.ref] = {}  # model id -> the explorer that holds it in this kernel
_DISPLAY_NUMBERS = itertools.count(1)
_RANDOM_IDS = False


def stable_model_id(kind: str) -> str:
    """The fixed widget model id of an explorer kind ("shape", "kv_cache", "cost", ...).

    The same in every kernel, so a lesson's stored widget metadata matches the output of a
    learner's own Run All. One explorer of a kind is live per kernel: making a new one retires
    the previous one (its output keeps its picture).

    >>> stable_model_id("shape") == stable_model_id("shape") != stable_model_id("cost")
    True
    """
    return uuid.uuid5(_ID_NAMESPACE, f"mha-course/{kind}").hex


@contextmanager
def random_model_ids():
    """Explorers made inside get ordinary (random) ids: they never retire a displayed one."""
    global _RANDOM_IDS
    before, _RANDOM_IDS = _RANDOM_IDS, True
    try:
        yield
    finally:
        _RANDOM_IDS = before


class Explorer:
    """Mixin: controls -> pure view function -> HTML children, plus the picture output.

    Subclasses define ``kind``, ``_view(**values)``, ``_show(view)`` and ``_static_html(view)``.
    """

    title = "Explorer"
    kind = "explorer"
    _display_id = None

    def __init__(self, **kwargs):
        if not _RANDOM_IDS:
            model_id = kwargs.setdefault("model_id", stable_model_id(self.kind))
            old = _LIVE.pop(model_id, None)
            old = old() if old is not None else None
            if old is not None:
                old._retire()
        super().__init__(**kwargs)
        if not _RANDOM_IDS:
            _LIVE[self.model_id] = weakref.ref(self)

    def _retire(self) -> None:
        """Close this explorer's widgets (a newer one of the same kind takes over its id)."""

        def descendants(widget):
            for child in getattr(widget, "children", ()):
                yield from descendants(child)
            yield widget

        for widget in (*self.controls.values(), *descendants(self)):
            widget.close()

    def _setup(self, controls: dict):
        self.controls = controls
        self._holding = False
        self.update_count = 0
        # Holds the style rule that hides this explorer's picture while the live widget is shown.
        self._picture_style = html_box(f"<style>{EXPLORER_CSS}</style>", display="none")
        labeller = control_labeller()  # names the slider handles for screen readers
        extra = (self._picture_style,) if labeller is None else (self._picture_style, labeller)
        self.children = (*self.children, *extra)
        self.add_class("mha-explorer")
        for control in controls.values():
            control.observe(self._on_change, names="value")

    def values(self) -> dict:
        """The current control values, by name."""
        return {name: c.value for name, c in self.controls.items()}

    def set_values(self, **values) -> None:
        """Set several controls at once with a single redraw (tests and benchmarks use this)."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(
                f"unknown control(s) {sorted(unknown)}; this explorer has {sorted(self.controls)}"
            )
        self._holding = True
        try:
            for name, value in values.items():
                _add_stop(self.controls[name], value)
                self.controls[name].value = value
        finally:
            self._holding = False
        self.refresh()

    def _on_change(self, change) -> None:
        if not self._holding:
            self.refresh()

    def refresh(self) -> None:
        """Recompute the view from the controls and replace what is shown."""
        try:
            view = self._view(**self.values())
        except Exception as err:  # a widget callback must never leave a learner a traceback
            self._show_error(f"Could not update: {err}")
            return
        self.view = view
        if self._display_id is not None:
            # Keep the picture output at the last state. Sent before the live widget changes, so
            # whatever the learner sees, a save already has in the picture.
            from IPython.display import update_display

            update_display(self.picture_bundle(), raw=True, display_id=self._display_id)
        self._show(view)
        self.update_count += 1

    # The picture and the two outputs ---------------------------------------------------------
    def picture_bundle(self) -> dict:
        """The picture output: static HTML of the current state, and a line of plain text."""
        settings = ", ".join(f"{k} = {v}" for k, v in self.values().items())
        view = getattr(self, "view", None)
        picture = (
            self._static_html(view)
            if view is not None
            else render_message_html("This explorer could not draw its first state.")
        )
        marker = f' data-mha-display="{self._display_id}"' if self._display_id else ""
        return {
            "text/plain": (
                f"{self.title} at {settings}. Its sliders need a running kernel and a "
                f"front end with Jupyter widgets: run this cell there."
            ),
            "text/html": (
                f'<div class="mha-static-explorer"{marker}>'
                f'<div style="font-size:11px;{MUTED}">A picture of the {esc(self.title.lower())}'
                f"'s last state. Run this cell to make its sliders live again.</div>"
                f"{picture}</div>"
            ),
        }

    def output_bundles(self) -> list[tuple[dict, dict]]:
        """What displaying the explorer writes: ``[(picture, metadata), (widget view, metadata)]``.

        The widget view's metadata tells ``mha-course execute`` to store a hidden placeholder
        under its model id (the picture carries the line saying how to make it live again).
        """
        if self._display_id is None:
            self._display_id = f"mha-{self.kind.replace('_', '-')}-{next(_DISPLAY_NUMBERS)}"
        hidden = f'[data-mha-display="{self._display_id}"]'
        self._picture_style.value = (
            f"<style>{EXPLORER_CSS}{hidden}{{display:none}}"
            f".jp-OutputArea-child:has({hidden}){{display:none}}</style>"
        )
        view = {WIDGET_VIEW: super()._repr_mimebundle_()[WIDGET_VIEW], "text/plain": ""}
        return [(self.picture_bundle(), {}), (view, {"mha_course": {"offline_html": ""}})]

    def _ipython_display_(self, **kwargs):
        from IPython.display import display

        (picture, _), (view, view_metadata) = self.output_bundles()
        display(picture, raw=True, display_id=self._display_id)
        display(view, raw=True, metadata=view_metadata)

    def _repr_mimebundle_(self, **kwargs):
        """For callers that take one bundle: the widget view with the picture as fallback."""
        (picture, _), (view, _) = self.output_bundles()
        return {**picture, **view, "text/plain": picture["text/plain"]}


def html_box(value="", **layout):
    W = widgets_module()
    return W.HTML(value=value, layout=W.Layout(**layout) if layout else W.Layout())


def int_slider(description, value, lo, hi, step=1, tooltip="", width=CONTROL_WIDTH):
    W = widgets_module()
    return W.IntSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=description,
        description_allow_html=False,
        continuous_update=True,
        style=SLIDER_STYLE,
        tooltip=tooltip or description,
        layout=W.Layout(width=width),
    )


def choice_slider(description, value, choices, tooltip="", width=CONTROL_WIDTH):
    """A slider over a list of meaningful values (issue 35: a plain IntSlider over 4..1024 moved
    d_model by about 590 in a 90 px drag). Labels use the explorers' one number format
    (``16,384``); a ``value`` not in ``choices`` is added to them."""
    W = widgets_module()
    values = sorted({int(v) for v in choices} | {int(value)})
    return W.SelectionSlider(
        options=[(f"{v:,}", v) for v in values],
        value=int(value),
        description=description,
        continuous_update=True,
        style=SLIDER_STYLE,
        tooltip=tooltip or description,
        layout=W.Layout(width=width),
    )


def _add_stop(control, value) -> None:
    """A stepped slider (:func:`choice_slider`) set to a value off its stops gets that stop
    (a loaded model, a test), so setting a value never fails because of the stops."""
    W = widgets_module()
    if isinstance(control, W.SelectionSlider) and isinstance(value, int):
        values = [v for _, v in control.options]
        if value not in values:
            control.options = [(f"{v:,}", v) for v in sorted({*values, value})]


def row(*children, **layout):
    """Side by side where there is room, wrapping onto the next line where there is not."""
    W = widgets_module()
    return W.HBox(
        list(children),
        layout=W.Layout(flex_flow="row wrap", align_items="flex-start", width="auto", **layout),
    )


def with_value(options, value) -> list:
    """A dropdown's (label, value) options, with ``value`` added (labelled by itself) if absent."""
    options = list(options)
    if value not in [v for _, v in options]:
        options = sorted([*options, (f"{value:,}", value)], key=lambda o: o[1])
    return options


def column(*children, width):
    W = widgets_module()
    # 4 px wider than its controls: each has a 2 px margin on either side (issue 35: a column
    # exactly as wide as its controls scrolled them 4 px inside it).
    return W.VBox(
        list(children),
        layout=W.Layout(width=f"calc({width} + 4px)", flex="0 0 auto", margin="0 20px 8px 0"),
    )


def live_class(explorer: type) -> type:
    """The widget class of an explorer: ``explorer`` (an :class:`Explorer` subclass) mixed
    with ``ipywidgets.VBox``. Each explorer makes it on first use and keeps it, so that
    importing an explorer never imports ipywidgets; an instance is also an instance of
    ``explorer``."""
    W = widgets_module()
    namespace = {"__doc__": explorer.__doc__, "__module__": explorer.__module__}
    return type(explorer.__name__, (explorer, W.VBox), namespace)
