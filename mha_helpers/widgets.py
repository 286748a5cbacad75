"""Interactive explorers: move a slider, watch shapes, counts and caches change.

Three explorers, each embedded in a lesson with one line::

    from mha_helpers.widgets import shape_explorer
    shape_explorer()              # d_model, h and n sliders; d_head, the layer's diagram,
                                  # shapes, counts, heatmaps

    kv_cache_explorer()           # layers, query heads, KV heads, d_head, context, bytes
    cost_explorer()               # FLOPs and parameters versus h (fixed d_model) and versus n

Each is a **thin widget** (an ``ipywidgets.VBox``) over the pure functions of
:mod:`mha_helpers.explorers`: its sliders call the explorer's view function and put the rendered
HTML into ``ipywidgets.HTML`` children. Redraws replace the previous content (there are no
figures to pile up), and one update takes a few milliseconds even at d_model = 1024 and h = 32.

Explorers survive a save. Displaying one writes two outputs: a **picture** of its state (static
HTML, kept up to date as the sliders move, hidden by a style rule inside the live widget while
the widget is shown) and the **live widget**. After a save, a kernel shutdown and a reopen (or in
a viewer without widgets: GitHub, nbviewer, an HTML export) the picture shows the explorer's last
state with a line saying how to make it live again. The live widget's model id is fixed per
explorer (:func:`stable_model_id`), so the placeholder that ``mha-course execute`` stores under
that id in the lesson's widget metadata matches the output of a learner's own Run All too, and
JupyterLab never shows "Error displaying widget: model not found" (it does not save widget state
by default). The picture is deterministic, so strict nbval can compare it.
"""

from __future__ import annotations

import itertools
import time
import uuid
import weakref
from contextlib import contextmanager
from functools import lru_cache

from . import explorers
from .a11y import control_labeller
from .cost import MODEL_CONFIGS
from .explorers.common import MUTED, esc, render_message_html
from .explorers.cost import (
    COST_D_MODEL_MAX,
    COST_D_MODEL_MIN,
    COST_D_MODEL_STEP,
    COST_H_MAX,
    COST_NS,
    cost_view,
    render_cost_html,
)
from .explorers.kv_cache import (
    KV_CONTEXTS,
    KV_D_HEADS,
    KV_DTYPES,
    KV_LATENTS,
    KV_MAX_HEADS,
    KV_MAX_LAYERS,
    KV_WINDOWS,
    _gqa_kv_heads,
    _label,
    kv_cache_view,
    menu_choice,
    menu_models,
    render_kv_cache_html,
    render_kv_cache_summary_html,
    render_kv_cache_table_html,
)
from .explorers.shape import (
    D_MODEL_MAX,
    D_MODEL_MIN,
    D_MODEL_STEP,
    DIAGRAM_MAX_VH,
    H_MAX,
    N_MAX,
    N_MIN,
    render_counts_html,
    render_d_head_html,
    render_diagram_html,
    render_heatmaps_html,
    render_shape_html,
    render_shape_table_html,
    shape_view,
)

__all__ = [
    "shape_explorer",
    "kv_cache_explorer",
    "cost_explorer",
    "update_timings",
    "default_states",
    "stable_model_id",
    # The pure functions behind them, re-exported for convenience.
    *explorers.__all__,
]

# ---------------------------------------------------------------------------------------------
# The widgets: thin layers over the pure functions
# ---------------------------------------------------------------------------------------------


def _widgets():
    import ipywidgets

    return ipywidgets


_SLIDER_STYLE = {"description_width": "88px"}
# The explorers' layout (issue 26): on a 1366 x 768 laptop the sliders and everything they change
# stay in view together. Controls are one narrow column (or one row) beside or above the
# pictures; the layer diagram is scaled to the window's height; tables are compact.
_CONTROL_WIDTH = "340px"
KV_TABLE_MAX_VH = 34  # the real models' table scrolls beyond this share of the window's height

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# ---------------------------------------------------------------------------------------------
# Persistence: fixed model ids, the picture output and its updates
# ---------------------------------------------------------------------------------------------

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
def _random_model_ids():
    """Explorers made inside get ordinary (random) ids: they never retire a displayed one."""
    global _RANDOM_IDS
    before, _RANDOM_IDS = _RANDOM_IDS, True
    try:
        yield
    finally:
        _RANDOM_IDS = before


class _Explorer:
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
        self._picture_style = _html(display="none")
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
            f"<style>{hidden}{{display:none}}"
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


def _html(value="", **layout):
    W = _widgets()
    return W.HTML(value=value, layout=W.Layout(**layout) if layout else W.Layout())


def _int_slider(description, value, lo, hi, step=1, tooltip="", width=_CONTROL_WIDTH):
    W = _widgets()
    return W.IntSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=description,
        description_allow_html=False,
        continuous_update=True,
        style=_SLIDER_STYLE,
        tooltip=tooltip or description,
        layout=W.Layout(width=width),
    )


def _row(*children, **layout):
    """Side by side where there is room, wrapping onto the next line where there is not."""
    W = _widgets()
    return W.HBox(
        list(children),
        layout=W.Layout(flex_flow="row wrap", align_items="flex-start", width="100%", **layout),
    )


def _with_value(options, value) -> list:
    """A dropdown's (label, value) options, with ``value`` added (labelled by itself) if absent."""
    options = list(options)
    if value not in [v for _, v in options]:
        options = sorted([*options, (f"{value:,}", value)], key=lambda o: o[1])
    return options


def _column(*children, width):
    W = _widgets()
    return W.VBox(
        list(children), layout=W.Layout(width=width, flex="0 0 auto", margin="0 24px 8px 0")
    )


@lru_cache(maxsize=None)
def _classes():
    W = _widgets()

    class ShapeExplorer(_Explorer, W.VBox):
        """Sliders d_model, h, n; shows d_head, the message, shapes and counts, heatmaps."""

        title = "Shape explorer"
        kind = "shape"

        def __init__(self, d_model=8, h=2, n=3):
            self.d_head_label = _html()
            self.message = _html()
            self.counts = _html()  # parameters and FLOPs
            self.diagram = _html(flex="1 1 300px", min_width="0")  # redrawn as the sliders move
            self.body = _html(flex="0 1 auto", margin="0 24px 8px 0")  # the shape table
            self.heatmaps = _html(flex="1 1 250px", min_width="0")
            controls = {
                "d_model": _int_slider(
                    "d_model",
                    d_model,
                    D_MODEL_MIN,
                    D_MODEL_MAX,
                    D_MODEL_STEP,
                    "model width: features per token",
                ),
                "h": _int_slider("h", h, 1, H_MAX, 1, "number of heads"),
                "n": _int_slider("n", n, N_MIN, N_MAX, 1, "number of tokens"),
            }
            # Sliders, d_head and the counts in a column beside the diagram; the shape table
            # beside the heatmaps below (each pair one above the other in a narrow window).
            left = _column(
                *controls.values(),
                self.d_head_label,
                self.message,
                self.counts,
                width=_CONTROL_WIDTH,
            )
            super().__init__(children=[_row(left, self.diagram), _row(self.body, self.heatmaps)])
            self.add_class("mha-shape-explorer")
            self._setup(controls)
            self.refresh()

        def _view(self, d_model, h, n):
            return shape_view(d_model, h, n)

        def _show(self, view):
            # Set only what changed: each assignment is one message to the browser.
            for child, value in (
                (self.d_head_label, render_d_head_html(view)),
                (self.message, render_message_html(view.message)),
                (self.counts, render_counts_html(view)),
                (self.diagram, render_diagram_html(view, max_height_vh=DIAGRAM_MAX_VH)),
                (self.body, render_shape_table_html(view)),
                (self.heatmaps, render_heatmaps_html(view, scroll=True)),
            ):
                if child.value != value:
                    child.value = value

        def _show_error(self, text):
            self.message.value = render_message_html(text)

        def _static_html(self, view):
            return render_shape_html(view)

    class KVCacheExplorer(_Explorer, W.VBox):
        """Layers, query heads, KV heads, d_head, context length and bytes -> cache sizes."""

        title = "KV-cache explorer"
        kind = "kv_cache"

        def __init__(
            self,
            num_layers=80,
            num_heads=64,
            num_kv_heads=8,
            d_head=128,
            seq_len=4096,
            bytes_per_element=2,
            latent_dim=0,
            window=0,
        ):
            self.summary = _html()
            presets = [("(set by hand)", "")] + [
                (f"{_label(c)} ({c.kind})", c.name) for c in menu_models()
            ]
            self.preset = W.Dropdown(
                options=presets,
                value="",
                description="load model",
                style=_SLIDER_STYLE,
                layout=W.Layout(width=_CONTROL_WIDTH),
            )
            self.kind_buttons = W.ToggleButtons(
                options=["MHA", "GQA", "MQA", "MLA"],
                value=None,
                description="sharing",
                style={**_SLIDER_STYLE, "button_width": "56px"},
                layout=W.Layout(width=_CONTROL_WIDTH),
                tooltips=[
                    "one KV head per query head",
                    "a few KV heads (8 when possible)",
                    "a single KV head",
                    "a compressed latent per token (DeepSeek-V2's multi-head latent attention)",
                ],
            )
            self.kind_buttons.add_class("widget-inline-hbox")  # its label beside the buttons
            d_heads = sorted(set(KV_D_HEADS) | {int(d_head)})
            contexts = sorted(set(KV_CONTEXTS) | {int(seq_len)})
            controls = {
                "num_layers": _int_slider("layers", num_layers, 1, KV_MAX_LAYERS),
                "num_heads": _int_slider("query heads", num_heads, 1, KV_MAX_HEADS),
                "num_kv_heads": _int_slider("KV heads", num_kv_heads, 1, KV_MAX_HEADS),
                "d_head": W.Dropdown(
                    options=d_heads,
                    value=int(d_head),
                    description="d_head",
                    style=_SLIDER_STYLE,
                    layout=W.Layout(width=_CONTROL_WIDTH),
                ),
                "seq_len": W.SelectionSlider(
                    options=contexts,
                    value=int(seq_len),
                    description="context",
                    style=_SLIDER_STYLE,
                    continuous_update=True,
                    layout=W.Layout(width=_CONTROL_WIDTH),
                ),
                "bytes_per_element": W.Dropdown(
                    options=list(KV_DTYPES),
                    value=bytes_per_element,
                    description="bytes",
                    style=_SLIDER_STYLE,
                    layout=W.Layout(width=_CONTROL_WIDTH),
                ),
                # Lesson 08: MLA's latent (d_c + d_h^R numbers per token and layer) and a
                # sliding window. Each shares a row with a short menu (d_head, bytes), so the
                # explorer is no taller than before and still fits a laptop screen.
                "latent_dim": W.Dropdown(
                    options=_with_value(KV_LATENTS, int(latent_dim)),
                    value=int(latent_dim),
                    description="latent",
                    style={"description_width": "44px"},
                    layout=W.Layout(width="198px"),
                ),
                "window": W.Dropdown(
                    options=_with_value(KV_WINDOWS, int(window)),
                    value=int(window),
                    description="window",
                    style={"description_width": "50px"},
                    layout=W.Layout(width="138px"),
                ),
            }
            controls["d_head"].layout.width = "140px"
            controls["d_head"].style.description_width = "50px"
            controls["bytes_per_element"].layout.width = "200px"
            controls["bytes_per_element"].style.description_width = "40px"
            self.models_table = _html(width="100%")
            self.summary.layout = W.Layout(flex="1 1 300px", min_width="0")
            # The controls in a column beside the headline sizes; the real models below.
            c = controls
            left = _column(
                self.preset,
                c["num_layers"],
                c["num_heads"],
                c["num_kv_heads"],
                W.HBox([c["d_head"], c["latent_dim"]], layout=W.Layout(width=_CONTROL_WIDTH)),
                c["seq_len"],
                W.HBox(
                    [c["bytes_per_element"], c["window"]], layout=W.Layout(width=_CONTROL_WIDTH)
                ),
                self.kind_buttons,
                width=_CONTROL_WIDTH,
            )
            super().__init__(children=[_row(left, self.summary), self.models_table])
            self.add_class("mha-kv-cache-explorer")
            self._setup(controls)
            self.preset.observe(self._load_preset, names="value")
            self.kind_buttons.observe(self._set_kind, names="value")
            self.refresh()

        def _load_preset(self, change):
            cfg = MODEL_CONFIGS.get(change["new"])
            if cfg is not None:
                self.set_values(
                    num_layers=cfg.num_layers,
                    num_heads=cfg.num_heads,
                    # MLA has no KV heads: the slider keeps a valid value it does not use.
                    num_kv_heads=cfg.num_heads if cfg.num_kv_heads is None else cfg.num_kv_heads,
                    d_head=cfg.d_head,
                    latent_dim=cfg.kv_latent_dim or 0,
                    window=cfg.sliding_window or 0,
                )
            else:  # "(set by hand)" chosen: the menu goes back to a model the settings match
                self.refresh()

        def _set_kind(self, change):
            h = self.controls["num_heads"].value
            if change["new"] == "MLA":
                latent = self.controls["latent_dim"].value or 576  # DeepSeek-V2's 512 + 64
                g = self.controls["num_kv_heads"].value
                self.set_values(latent_dim=latent, num_kv_heads=g if h % g == 0 else h)
                return
            g = {"MHA": h, "MQA": 1, "GQA": _gqa_kv_heads(h)}.get(change["new"])
            if g is not None:
                self.set_values(num_kv_heads=g, latent_dim=0)
            else:  # GQA needs a divisor of h strictly between 1 and h; say so
                self.refresh()
                if change["new"] == "GQA":
                    self.summary.value = (
                        render_message_html(
                            f"GQA needs a number of KV heads strictly between 1 and {h} that divides "
                            f"{h}, and {h} has none. Change the query heads first."
                        )
                        + self.summary.value
                    )

        def _view(self, **values):
            return kv_cache_view(**values)

        def _show(self, view):
            self.summary.value = render_kv_cache_summary_html(view)
            table = render_kv_cache_table_html(view, max_height_vh=KV_TABLE_MAX_VH)
            if self.models_table.value != table:
                self.models_table.value = table
            # Keep the sharing buttons and the model menu truthful without triggering them.
            kind = view.kind if view.ok else None
            if self.kind_buttons.value != kind:
                self.kind_buttons.unobserve(self._set_kind, names="value")
                self.kind_buttons.value = kind
                self.kind_buttons.observe(self._set_kind, names="value")
            choice = menu_choice(view.matches, self.preset.value)
            if self.preset.value != choice:
                self.preset.unobserve(self._load_preset, names="value")
                self.preset.value = choice
                self.preset.observe(self._load_preset, names="value")

        def _show_error(self, text):
            self.summary.value = render_message_html(text)

        def _static_html(self, view):
            return render_kv_cache_html(view)

    class CostExplorer(_Explorer, W.VBox):
        """d_model, h, n -> FLOPs and parameters versus h and versus n."""

        title = "Cost explorer"
        kind = "cost"

        def __init__(self, d_model=768, h=12, n=1024):
            self.summary = _html()
            ns = sorted(set(COST_NS) | {int(n)})
            controls = {
                "d_model": _int_slider(
                    "d_model", d_model, COST_D_MODEL_MIN, COST_D_MODEL_MAX, COST_D_MODEL_STEP
                ),
                "h": _int_slider("h", h, 1, COST_H_MAX),
                "n": W.SelectionSlider(
                    options=ns,
                    value=int(n),
                    description="n",
                    style=_SLIDER_STYLE,
                    continuous_update=True,
                    layout=W.Layout(width=_CONTROL_WIDTH),
                ),
            }
            # The three sliders in one row above the two tables (they wrap in a narrow window).
            sliders = _row(*controls.values())
            for control in controls.values():
                control.layout.width = "290px"
                control.layout.margin = "0 12px 4px 0"
            super().__init__(children=[sliders, self.summary])
            self.add_class("mha-cost-explorer")
            self._setup(controls)
            self.refresh()

        def _view(self, **values):
            return cost_view(**values)

        def _show(self, view):
            self.summary.value = render_cost_html(view, include_settings=False)

        def _show_error(self, text):
            self.summary.value = render_message_html(text)

        def _static_html(self, view):
            return render_cost_html(view)

    return {"shape": ShapeExplorer, "kv_cache": KVCacheExplorer, "cost": CostExplorer}


def shape_explorer(d_model: int = 8, h: int = 2, n: int = 3):
    """Sliders ``d_model``, ``h`` and ``n``; shows d_head, every shape, the parameter count, the
    FLOPs and per-head heatmaps of a seeded example. Returns the widget (display it by making it
    the last expression of a cell).

    The defaults are the course's example, whose sizes are all different so no shape can be
    misread: x is (3, 8), each head's Q is (2, 3, 4) and its scores are (2, 3, 3).

    ``explorer.controls["h"].value = 3`` moves a slider from code; ``explorer.view`` is the
    :class:`ShapeView` currently shown.
    """
    return _classes()["shape"](d_model=d_model, h=h, n=n)


def kv_cache_explorer(
    num_layers: int = 80,
    num_heads: int = 64,
    num_kv_heads: int = 8,
    d_head: int = 128,
    seq_len: int = 4096,
    bytes_per_element: float = 2,
    latent_dim: int = 0,
    window: int = 0,
):
    """Controls for layers, query heads, KV heads (MHA / GQA / MQA), d_head, context length and
    bytes per element; shows the cache per token and per sequence, and real models' caches.
    ``latent_dim`` > 0 caches an MLA latent of that many numbers per token and layer instead of
    K and V heads (DeepSeek-V2: 576); ``window`` > 0 keeps only the last ``window`` positions
    (a sliding window's rolling buffer; Mistral 7B: 4096). Both come from lesson 08.

    The defaults are Llama 2 70B in fp16 (1.25 GiB at 4096 tokens).
    """
    return _classes()["kv_cache"](
        num_layers=num_layers,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        d_head=d_head,
        seq_len=seq_len,
        bytes_per_element=bytes_per_element,
        latent_dim=latent_dim,
        window=window,
    )


def cost_explorer(d_model: int = 768, h: int = 12, n: int = 1024):
    """Sliders ``d_model``, ``h`` and ``n``; shows FLOPs and parameters versus h at fixed
    d_model (constant) and versus n (projections linear, attention quadratic).

    The defaults are one GPT-2 small attention layer over 1024 tokens.
    """
    return _classes()["cost"](d_model=d_model, h=h, n=n)


_FACTORIES = {"shape": shape_explorer, "kv_cache": kv_cache_explorer, "cost": cost_explorer}


def default_states(explorer_name: str) -> list[dict]:
    """A sweep of slider settings for benchmarks, including the largest sizes and invalid ones."""
    if explorer_name == "shape":
        return [
            {"d_model": d, "h": h, "n": n}
            for d in (8, 64, 256, 512, 768, 1024)
            for h in (1, 2, 3, 8, 16, 32)
            for n in (4, 8)
        ]
    if explorer_name == "kv_cache":
        return [
            {"num_layers": L, "num_heads": h, "num_kv_heads": g, "seq_len": s}
            for L in (12, 80)
            for h in (32, 64)
            for g in (1, 6, 8, 32)
            for s in (4096, 131072)
        ]
    if explorer_name == "cost":
        return [
            {"d_model": d, "h": h, "n": n}
            for d in (64, 768, 4096)
            for h in (1, 5, 12, 64)
            for n in (128, 1024, 32768)
        ]
    raise ValueError(f"unknown explorer {explorer_name!r}; choose from {sorted(_FACTORIES)}")


def update_timings(explorer_name: str, states=None, repeat: int = 1) -> list[float]:
    """Seconds taken by each update of an explorer, one per state (a dict of control values).

    Each update is what a slider move costs in the kernel: compute the view and replace the
    HTML. ``explorer_name`` is ``"shape"``, ``"kv_cache"`` or ``"cost"``; ``states`` defaults to
    :func:`default_states`. The explorer (and the seeded example) is built before timing starts.

    >>> t = update_timings("shape", [{"d_model": 16, "h": 4}])
    >>> len(t)
    1
    """
    states = default_states(explorer_name) if states is None else list(states)
    with _random_model_ids():  # never retire an explorer the notebook is showing
        explorer = _FACTORIES[explorer_name]()
    out = []
    try:
        for _ in range(repeat):
            for state in states:
                t0 = time.perf_counter()
                explorer.set_values(**state)
                out.append(time.perf_counter() - t0)
    finally:
        explorer.close()
    return out


def __getattr__(name):
    """The pure functions of :mod:`mha_helpers.explorers` are re-exported here (see __all__)."""
    if name in explorers.__all__:
        return getattr(explorers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
