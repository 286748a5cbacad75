"""Interactive explorers: move a slider, watch shapes, counts and caches change.

Three explorers, each embedded in a lesson with one line::

    from mha_helpers.widgets import shape_explorer
    shape_explorer()              # d_model, h and n sliders; d_head, the layer's diagram,
                                  # shapes, counts, heatmaps

    kv_cache_explorer()           # layers, query heads, KV heads, d_head, context, bytes
    cost_explorer()               # FLOPs and parameters versus h (fixed d_model) and versus n

Each explorer lives in one module of :mod:`mha_helpers.explorers` (:mod:`~.explorers.shape`,
:mod:`~.explorers.kv_cache`, :mod:`~.explorers.cost`): its pure view function, its HTML rendering
and its widget, a **thin** ``ipywidgets.VBox`` whose sliders call the view function and put the
rendered HTML into ``ipywidgets.HTML`` children. Redraws replace the previous content (there are
no figures to pile up), and one update takes a few milliseconds even at d_model = 1024 and
h = 32. This module only re-exports them, under the names the lessons use.

Explorers survive a save. Displaying one writes two outputs: a **picture** of its state (static
HTML, kept up to date as the sliders move, hidden by a style rule inside the live widget while
the widget is shown) and the **live widget**. After a save, a kernel shutdown and a reopen (or in
a viewer without widgets: GitHub, nbviewer, an HTML export) the picture shows the explorer's last
state with a line saying how to make it live again. The live widget's model id is fixed per
explorer (:func:`stable_model_id`; :mod:`mha_helpers.explorers.live` has what the three widgets
share), so the placeholder that ``mha-course execute`` stores under that id in the lesson's
widget metadata matches the output of a learner's own Run All too, and JupyterLab never shows
"Error displaying widget: model not found" (it does not save widget state by default). The
picture is deterministic, so strict nbval can compare it.
"""

from __future__ import annotations

from . import explorers
from .explorers.cost import cost_explorer
from .explorers.kv_cache import kv_cache_explorer
from .explorers.kv_cache import render_kv_cache_summary_html as render_kv_cache_summary_html
from .explorers.kv_cache import render_kv_cache_table_html as render_kv_cache_table_html
from .explorers.live import stable_model_id
from .explorers.shape import render_counts_html as render_counts_html
from .explorers.shape import render_d_head_html as render_d_head_html
from .explorers.shape import render_diagram_html as render_diagram_html
from .explorers.shape import render_heatmaps_html as render_heatmaps_html
from .explorers.shape import render_shape_table_html as render_shape_table_html
from .explorers.shape import shape_explorer
from .explorers.timings import default_states, update_timings

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


def __getattr__(name):
    """The pure functions of :mod:`mha_helpers.explorers` are re-exported here (see __all__)."""
    if name in explorers.__all__:
        return getattr(explorers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
