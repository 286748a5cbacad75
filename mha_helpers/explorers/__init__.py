"""The interactive explorers, one module each: what it shows, as pure functions of its slider
values, and its widget.

Each explorer is three layers in one module, each readable on its own: a **pure function** from
the slider values to a plain dataclass of what to show, pure functions from that dataclass to
HTML, and a thin widget whose sliders call the first and display the second (the lessons import
it from :mod:`mha_helpers.widgets`):

- :mod:`.shape`: d_model, h, n -> d_head, every shape, the counts, per-head heatmaps
  (:func:`shape_view`, :func:`render_shape_html`, ``shape_explorer``);
- :mod:`.kv_cache`: layers, heads, KV heads, d_head, context, bytes -> cache sizes and real
  models (:func:`kv_cache_view`, :func:`render_kv_cache_html`, ``kv_cache_explorer``, and the
  small decisions of the widget: :func:`cache_models`, :func:`matching_models`,
  :func:`menu_choice`, :func:`compared_text`);
- :mod:`.cost`: FLOPs and parameters versus h and versus n (:func:`cost_view`,
  :func:`render_cost_html`, ``cost_explorer``);
- :mod:`.live`: what the three widgets share (fixed model ids, the picture that survives a
  save, the controls); :mod:`.timings`: the time one update takes (benchmarks);
- :mod:`.common`: number formats, colours and boxes that read in any theme (light or dark,
  JupyterLab or the website) and meet WCAG AA contrast.

Tests call the pure functions directly. Importing this package does not import ipywidgets:
each widget class is made on first use. The attention heatmaps are HTML
tables coloured with ``cividis`` on a fixed 0..1 scale (the convention of
:mod:`mha_helpers.plots`), because rebuilding a grid of matplotlib axes on every slider move is
far slower than the 50 ms a slider needs to feel live. All formulas come from
:mod:`mha_helpers.cost` and all attention from :mod:`mha_helpers.heads`; nothing is re-derived.
"""

from __future__ import annotations

from .cost import cost_view, render_cost_html
from .kv_cache import (
    cache_models,
    compared_text,
    kv_cache_view,
    matching_models,
    menu_choice,
    menu_models,
    render_kv_cache_html,
)
from .shape import TOKENS, render_shape_html, shape_view

__all__ = [
    "shape_view",
    "kv_cache_view",
    "cost_view",
    "cache_models",
    "menu_models",
    "matching_models",
    "menu_choice",
    "compared_text",
    "render_shape_html",
    "render_kv_cache_html",
    "render_cost_html",
    "TOKENS",
]
