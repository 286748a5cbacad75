"""What the interactive explorers show, as pure functions of their slider values.

Each explorer of :mod:`mha_helpers.widgets` is two layers, and this module is the first: a
**pure function** from the slider values to a plain dataclass of what to show
(:func:`shape_view`, :func:`kv_cache_view`, :func:`cost_view`), and a pure function from that
dataclass to HTML (:func:`render_shape_html`, ...). Tests call these directly, and the
KV-cache explorer's small decisions too (which models keep a cache, :func:`cache_models`;
which model the menu names, :func:`matching_models` and :func:`menu_choice`; how a cache
compares with yours, :func:`compared_text`). Nothing here imports ipywidgets.

The attention heatmaps are drawn as HTML tables coloured with ``cividis`` on a fixed 0..1
scale (the convention of :mod:`mha_helpers.plots`), because rebuilding a grid of matplotlib
axes on every slider move is far slower than the 50 ms a slider needs to feel live.

All formulas come from :mod:`mha_helpers.cost` and all attention from :mod:`mha_helpers.heads`;
nothing is re-derived here.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .attention import scaled_dot_product_attention
from .cost import MODEL_CONFIGS, attention_flops, attention_params, format_bytes, kv_cache_bytes
from .heads import merge_heads, split_heads
from .plots import CMAP, head_colour, layer_diagram_svg

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

# ---------------------------------------------------------------------------------------------
# Constants shared by the pure functions and the sliders
# ---------------------------------------------------------------------------------------------

#: The fixed example sentence; the first ``n`` words label the heatmaps.
TOKENS = ("the", "cat", "sat", "on", "a", "warm", "red", "mat")
SEED = 0
D_MODEL_MIN, D_MODEL_MAX, D_MODEL_STEP = 4, 1024, 4
H_MAX = 32
N_MIN, N_MAX = 2, len(TOKENS)
MAX_HEADS_SHOWN = 8

KV_D_HEADS = (32, 64, 80, 96, 128, 256)
KV_CONTEXTS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 131072)
KV_DTYPES = (
    ("fp32 (4 bytes)", 4),
    ("fp16 / bf16 (2 bytes)", 2),
    ("int8 / fp8 (1 byte)", 1),
    ("int4 (0.5 bytes)", 0.5),
)
KV_MAX_HEADS = 128
KV_MAX_LAYERS = 128

COST_D_MODEL_MIN, COST_D_MODEL_MAX, COST_D_MODEL_STEP = 64, 4096, 64
COST_H_MAX = 64
COST_NS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)

# Two ends of cividis, for bar charts: colour-blind safe and distinct in greyscale.
_DARK, _LIGHT = "#00224e", "#fee838"
_MUTED = "#666666"


# ---------------------------------------------------------------------------------------------
# Small formatting helpers
# ---------------------------------------------------------------------------------------------


def _int(n) -> str:
    """``2362368 -> '2,362,368'``."""
    return f"{int(n):,}"


def _si(x) -> str:
    """Short decimal form for big counts: ``4831838208 -> '4.83 G'``; small numbers unchanged."""
    x = float(x)
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}"
    return f"{x:g}"


def _count(n, unit="") -> str:
    """Exact count, with a short form when the number is long: ``'4,831,838,208 (4.83 G)'``."""
    text = _int(n) + (f" {unit}" if unit else "")
    return text + (f" ({_si(n)}{unit})" if n >= 10_000 else "")


def _shape(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _divisors(n: int, limit: int) -> list[int]:
    return [k for k in range(1, min(n, limit) + 1) if n % k == 0]


def _join_or(items, word="or") -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} " + items[-1]


def _join_and(items) -> str:
    return _join_or(items, "and")


@lru_cache(maxsize=1)
def _cividis_lut() -> tuple[tuple[str, str], ...]:
    """256 (background, text) colour pairs for weights 0..1 on the cividis scale."""
    from matplotlib import colormaps

    cmap = colormaps[CMAP]
    out = []
    for i in range(256):
        r, g, b, _ = cmap(i / 255)
        luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
        out.append(
            (
                f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}",
                "#000000" if luminance > 0.45 else "#ffffff",
            )
        )
    return tuple(out)


def _colour(w: float) -> tuple[str, str]:
    return _cividis_lut()[min(255, max(0, int(round(float(w) * 255))))]


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


# ---------------------------------------------------------------------------------------------
# 1. Shape explorer: d_model, h, n -> d_head, shapes, counts, per-head heatmaps
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShapeStep:
    """One row of the shape table: what happens, the code, the symbolic and numeric shape."""

    step: str
    code: str
    symbolic: str
    shape: tuple


@dataclass(frozen=True, eq=False)
class ShapeView:
    """Everything :func:`shape_explorer` shows for one setting of its sliders."""

    d_model: int
    h: int
    n: int
    ok: bool
    d_head: int | None
    d_head_text: str  # "d_head = 4" (or why there is none)
    message: str  # "" when the sliders are valid; otherwise what is wrong and what to change
    steps: tuple = ()  # ShapeStep rows, input to output
    params: int | None = None  # parameters of the layer (weights and biases), independent of h
    flops: dict = field(default_factory=dict)  # "projections", "attention", "total"
    tokens: tuple = ()
    weights: np.ndarray | None = None  # (heads shown, n, n) attention weights of the example
    heads_note: str = ""  # "showing heads 0-7 of 32" when not every head is drawn


@lru_cache(maxsize=1)
def _example_weights() -> tuple[np.ndarray, ...]:
    """Seeded ``x`` (N_MAX, D_MODEL_MAX) and four (D_MODEL_MAX, D_MODEL_MAX) matrices.

    Each setting of the sliders uses the top-left corner of these, so the example is fixed for
    a given (d_model, n) and moving a slider never waits for fresh random numbers.
    """
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((N_MAX, D_MODEL_MAX))
    ws = rng.standard_normal((4, D_MODEL_MAX, D_MODEL_MAX))
    return (x, *ws)


def _project(x, w, scale):
    """``(x @ w) * scale`` for a few rows of x, computed without the BLAS thread pool.

    With only n <= 8 rows the product is tiny (at most 8 x 1024 x 1024 multiply-adds), but a
    multithreaded BLAS still wakes its threads for it, and on a busy machine waiting for them
    takes tens of milliseconds. ``einsum`` (not optimised) runs the same sum on one thread in
    about a millisecond, which keeps slider moves live.
    """
    return np.einsum("nd,de->ne", x, w) * scale  # (n, d_out)


def _not_divisible_message(d_model: int, h: int) -> str:
    fits = _divisors(d_model, H_MAX)
    step = D_MODEL_STEP * h // math.gcd(D_MODEL_STEP, h)  # multiples of h that the slider can reach
    below = d_model // step * step
    multiples = [m for m in (below, below + step) if D_MODEL_MIN <= m <= D_MODEL_MAX]
    change_d = (
        f" or set d_model to a multiple of {h} such as {_join_or(multiples)}" if multiples else ""
    )
    return (
        f"d_model = {d_model} is not divisible by h = {h}: the {h} heads cannot share "
        f"{d_model} features equally ({d_model} / {h} is not a whole number). "
        f"To fix it, set h to a divisor of {d_model} ({_join_or(fits)}){change_d}."
    )


def shape_view(d_model: int, h: int, n: int) -> ShapeView:
    """What the shape explorer shows for ``d_model``, ``h`` heads and ``n`` tokens (pure).

    Runs the seeded example through :func:`split_heads`, :func:`scaled_dot_product_attention`
    and :func:`merge_heads`, and records the shape after every step, the parameter count
    (:func:`attention_params`) and the FLOPs (:func:`attention_flops`).

    >>> v = shape_view(8, 2, 3)
    >>> v.d_head_text, v.steps[3].shape, v.steps[4].shape, v.params
    ('d_head = 4', (2, 3, 4), (2, 3, 3), 288)
    >>> shape_view(8, 3, 3).ok
    False
    """
    d_model, h, n = int(d_model), int(h), int(n)
    if not (1 <= n <= N_MAX):
        return ShapeView(
            d_model,
            h,
            n,
            False,
            None,
            "d_head = ?",
            f"n = {n} tokens is outside the example sentence: choose n from 1 to {N_MAX}.",
        )
    if not (1 <= d_model <= D_MODEL_MAX) or h < 1:
        return ShapeView(
            d_model,
            h,
            n,
            False,
            None,
            "d_head = ?",
            f"d_model must be between 1 and {D_MODEL_MAX} and h at least 1; "
            f"got d_model = {d_model}, h = {h}.",
        )
    if d_model % h:
        return ShapeView(
            d_model,
            h,
            n,
            False,
            None,
            f"d_head = {d_model} / {h} is not a whole number",
            _not_divisible_message(d_model, h),
        )

    d_head = d_model // h
    x_all, *w_all = _example_weights()
    # Views, not copies: the weights are (d_model, d_model) corners of the seeded matrices,
    # scaled by 1/sqrt(d_model) (applied after each product, which is cheaper) so that every
    # projection's entries stay near unit size.
    scale = 1.0 / np.sqrt(d_model)
    x = x_all[:n, :d_model]  # (n, d_model)
    w_q, w_k, w_v, w_o = (w[:d_model, :d_model] for w in w_all)  # (d_model, d_model) each

    q, k, v = (
        _project(x, w_q, scale),
        _project(x, w_k, scale),
        _project(x, w_v, scale),
    )  # (n, d_model)
    qh, kh, vh = split_heads(q, h), split_heads(k, h), split_heads(v, h)  # (h, n, d_head)
    scores = qh @ kh.swapaxes(-1, -2) / np.sqrt(d_head)  # (h, n, n), shown as a shape only
    out_h, weights = scaled_dot_product_attention(qh, kh, vh)  # (h, n, d_head), (h, n, n)
    concat = merge_heads(out_h)  # (n, h * d_head) = (n, d_model)
    y = _project(concat, w_o, scale)  # (n, d_model)

    steps = (
        ShapeStep("input: one row per token", "x", "(n, d_model)", x.shape),
        ShapeStep("weights W_Q, W_K, W_V, W_O (each)", "w_q", "(d_model, d_model)", w_q.shape),
        ShapeStep("project: Q = x W_Q (same for K, V)", "q = x @ w_q", "(n, d_model)", q.shape),
        ShapeStep(
            "split into heads (Q, K, V each)", "split_heads(q, h)", "(h, n, d_head)", qh.shape
        ),
        ShapeStep(
            "scores per head: Q_i K_i^T / sqrt(d_head)",
            "qh @ kh.swapaxes(-1, -2)",
            "(h, n, n)",
            scores.shape,
        ),
        ShapeStep(
            "weights per head: softmax over keys", "softmax(scores)", "(h, n, n)", weights.shape
        ),
        ShapeStep("outputs per head: weights V_i", "weights @ vh", "(h, n, d_head)", out_h.shape),
        ShapeStep("concatenate the heads", "merge_heads(out)", "(n, h * d_head)", concat.shape),
        ShapeStep("output projection: concat W_O", "concat @ w_o", "(n, d_model)", y.shape),
    )
    f = attention_flops(n, d_model, h)
    flops = {
        "projections": f["projections"] + f["output_projection"],
        "attention": f["scores"] + f["weighted_sum"],
        "total": f["total"],
    }
    shown = min(h, MAX_HEADS_SHOWN)
    note = "" if shown == h else f"showing heads 0-{shown - 1} of {h}"
    return ShapeView(
        d_model,
        h,
        n,
        True,
        d_head,
        f"d_head = {d_head}",
        "",
        steps,
        attention_params(d_model, h),
        flops,
        TOKENS[:n],
        weights[:shown],
        note,
    )


def _heatmap_table(weights, tokens, title: str, swatch: str = "") -> str:
    """One head's (n, n) weights as an HTML table: rows = queries, columns = keys. ``swatch`` is
    the head's colour in the layer diagram, shown next to the title."""
    cell = (
        "width:34px;height:26px;text-align:center;padding:0;border:1px solid #ffffff;font-size:10px"
    )
    head = "padding:0 4px;font-size:11px;font-weight:normal;border:none"
    rows = [
        f'<tr><td style="{head};text-align:right;color:{_MUTED}">query \u2193 key \u2192</td>'
        + "".join(f'<th style="{head};text-align:center">{_esc(t)}</th>' for t in tokens)
        + "</tr>"
    ]
    for i, qt in enumerate(tokens):
        tds = []
        for j, kt in enumerate(tokens):
            w = float(weights[i, j])
            bg, fg = _colour(w)
            tds.append(
                f'<td style="{cell};background-color:{bg};color:{fg}" '
                f'title="{_esc(qt)} \u2192 {_esc(kt)}: {w:.2f}">{w:.2f}</td>'
            )
        rows.append(f'<tr><th style="{head};text-align:right">{_esc(qt)}</th>{"".join(tds)}</tr>')
    mark = (
        f'<span style="display:inline-block;width:10px;height:10px;margin-right:4px;'
        f'background-color:{swatch}"></span>'
        if swatch
        else ""
    )
    return (
        f'<div style="display:inline-block;vertical-align:top;margin:0 14px 10px 0">'
        f'<div style="text-align:center;font-weight:bold;margin-bottom:2px">{mark}{_esc(title)}</div>'
        f'<table style="border-collapse:collapse;border:none">{"".join(rows)}</table></div>'
    )


def _colour_legend() -> str:
    stops = "".join(
        f'<span style="display:inline-block;width:16px;height:12px;'
        f'background-color:{_colour(v / 10)[0]}"></span>'
        for v in range(11)
    )
    return (
        f'<div style="font-size:11px;color:{_MUTED};margin:2px 0 6px 0">weight '
        f"0 {stops} 1 (cividis; each row sums to 1)</div>"
    )


def render_heatmaps_html(view: ShapeView) -> str:
    """The grid of per-head attention heatmaps (with title, token labels and colour scale)."""
    if not view.ok:
        return ""
    heads = "".join(
        _heatmap_table(view.weights[i], view.tokens, f"head {i}", head_colour(i))
        for i in range(view.weights.shape[0])
    )
    note = (
        f' <span style="color:{_MUTED}">({_esc(view.heads_note)})</span>' if view.heads_note else ""
    )
    return (
        f'<div style="margin-top:6px;line-height:1.45"><div style="font-weight:bold">Attention weights per head '
        f'for the example "{_esc(" ".join(view.tokens))}" (seeded weights){note}</div>'
        f"{_colour_legend()}<div>{heads}</div>"
        f'<div style="font-size:11px;color:{_MUTED}">Rows: the query token (attending); '
        f"columns: the key token (attended to). Each head has its own pattern; the square by its "
        f"name is its colour in the diagram above.</div></div>"
    )


def render_diagram_html(view: ShapeView) -> str:
    """The layer's block diagram for these sliders (empty when they are invalid): the column
    blocks of W_Q, W_K, W_V each head owns, one pattern per head, the concatenation and the row
    blocks of W_O, one colour per head. The layout is :func:`mha_helpers.plots.layer_diagram_layout`,
    the same one the lessons draw with matplotlib."""
    if not view.ok:
        return ""
    return (
        f'<div class="mha-layer-diagram" style="margin:6px 0">'
        f"{layer_diagram_svg(view.d_model, view.h, view.n)}</div>"
    )


_BOX = '<div style="line-height:1.45">'


def render_d_head_html(view: ShapeView) -> str:
    colour = "inherit" if view.ok else "#b00020"
    detail = (
        f' <span style="font-weight:normal;color:{_MUTED}">= d_model / h = '
        f"{view.d_model} / {view.h}</span>"
        if view.ok
        else ""
    )
    return (
        f'<div style="font-size:1.25em;font-weight:bold;line-height:1.6;color:{colour}" class="mha-d-head">'
        f"{_esc(view.d_head_text)}{detail}</div>"
    )


def render_message_html(message: str) -> str:
    if not message:
        return ""
    return (
        f'<div class="mha-message" style="border-left:4px solid #b00020;padding:6px 10px;'
        f'margin:4px 0;line-height:1.45;background-color:#fdecea;color:#5f0010">{_esc(message)}</div>'
    )


def render_shape_body_html(view: ShapeView) -> str:
    """Shape table, parameter count and FLOPs (empty when the sliders are invalid)."""
    if not view.ok:
        return ""
    td = "padding:2px 10px;text-align:left;border:none"
    rows = "".join(
        f'<tr><td style="{td}">{_esc(s.step)}</td><td style="{td}"><code>{_esc(s.code)}</code></td>'
        f'<td style="{td}"><code>{_esc(s.symbolic)}</code></td>'
        f'<td style="{td};font-weight:bold"><code>{_shape(s.shape)}</code></td></tr>'
        for s in view.steps
    )
    header = "".join(f'<th style="{td}">{t}</th>' for t in ("step", "code", "shape", "here"))
    d = view.d_model
    f = view.flops
    share = f["attention"] / f["total"]
    share_text = f"{share:.0%}" if share >= 0.095 else f"{share:.1%}"
    counts = (
        f'<div style="margin-top:6px"><b>Parameters of the layer:</b> {_count(view.params)} '
        f"= 4 d_model\u00b2 + 4 d_model = 4\u00b7{d}\u00b2 + 4\u00b7{d} "
        f'<span style="color:{_MUTED}">(weights and biases; the same for every h that divides '
        f"d_model)</span></div>"
        f"<div><b>FLOPs for n = {view.n} tokens:</b> projections (Q, K, V and W_O) "
        f"{_count(f['projections'])}; attention (scores and weighted sums) "
        f"{_count(f['attention'])}; total {_count(f['total'])} "
        f'<span style="color:{_MUTED}">(attention is {share_text} of the total)</span></div>'
    )
    return (
        f'{_BOX}<table style="border-collapse:collapse;margin-top:4px"><tr>{header}</tr>{rows}'
        f"</table>{counts}</div>"
    )


def render_shape_html(view: ShapeView) -> str:
    """The whole shape explorer output as one HTML fragment (the static rendering)."""
    settings = (
        f'<div style="color:{_MUTED};line-height:1.45">Shape explorer at d_model = {view.d_model}, '
        f"h = {view.h}, n = {view.n}.</div>"
    )
    return (
        "<div>"
        + settings
        + render_d_head_html(view)
        + render_message_html(view.message)
        + render_diagram_html(view)
        + render_shape_body_html(view)
        + render_heatmaps_html(view)
        + "</div>"
    )


# ---------------------------------------------------------------------------------------------
# 2. KV-cache explorer: layers, heads, KV heads, d_head, context, bytes -> cache sizes
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCacheRow:
    """One real model in the KV-cache table (only models that generate token by token)."""

    name: str  # the key in MODEL_CONFIGS
    label: str  # as shown: "T5-base decoder" for an encoder-decoder model, whose decoder caches
    kind: str
    num_layers: int
    num_heads: int
    num_kv_heads: int | None
    d_head: int
    per_token: int | float
    per_sequence: int | float
    source: str
    context: int | None = None  # the model's maximum context (None: not fixed by the source)
    compared: str = ""  # per token, against your settings: "26.7× smaller", "14.4× larger", "same"


@dataclass(frozen=True)
class KVCacheView:
    """Everything :func:`kv_cache_explorer` shows for one setting of its controls."""

    num_layers: int
    num_heads: int
    num_kv_heads: int
    d_head: int
    seq_len: int
    bytes_per_element: float
    ok: bool
    message: str
    kind: str = ""  # "MHA", "GQA" or "MQA"
    kind_text: str = ""
    per_token: int | float | None = None
    per_sequence: int | float | None = None
    per_token_text: str = ""
    per_sequence_text: str = ""
    formula_text: str = ""
    mha_per_sequence: int | float | None = None  # the same model with one KV head per query head
    models: tuple = ()  # ModelCacheRow for every model of MODEL_CONFIGS that keeps a KV cache
    matches: tuple = ()  # names of the menu's models whose layers and heads equal your settings


def _gqa_kv_heads(num_heads: int) -> int | None:
    """A typical GQA choice: 8 KV heads when possible, else the proper divisor nearest h / 8."""
    proper = [k for k in range(2, num_heads) if num_heads % k == 0]
    if not proper:
        return None
    return 8 if 8 in proper else min(proper, key=lambda k: (abs(k - num_heads / 8), k))


def _kind(num_heads: int, num_kv_heads: int) -> str:
    if num_kv_heads == num_heads:
        return "MHA"
    return "MQA" if num_kv_heads == 1 else "GQA"


def _label(cfg) -> str:
    """A model's name as the KV-cache explorer shows it: an encoder-decoder model's cache is its
    decoder's, so it is named that way ("T5-base decoder")."""
    return f"{cfg.name} decoder" if cfg.encoder_decoder else cfg.name


def cache_models() -> tuple:
    """The models of MODEL_CONFIGS that keep a KV cache: those that generate token by token.

    Encoder-only models (BERT, ViT) read the whole input at once and keep none.

    >>> names = [c.name for c in cache_models()]
    >>> "Llama 2 70B" in names, "BERT-base" in names
    (True, False)
    """
    return tuple(c for c in MODEL_CONFIGS.values() if c.has_kv_cache)


def menu_models() -> tuple:
    """The models the "load model" menu offers: those that cache K and V heads (not a latent)."""
    return tuple(c for c in cache_models() if c.num_kv_heads is not None)


def matching_models(num_layers: int, num_heads: int, num_kv_heads: int, d_head: int) -> tuple:
    """Names of the menu's models with exactly these layers, query heads, KV heads and d_head.

    >>> matching_models(80, 64, 8, 128)
    ('Llama 2 70B', 'Llama 3 70B')
    >>> matching_models(80, 64, 4, 128)
    ()
    """
    settings = (num_layers, num_heads, num_kv_heads, d_head)
    return tuple(
        c.name
        for c in menu_models()
        if (c.num_layers, c.num_heads, c.num_kv_heads, c.d_head) == settings
    )


def menu_choice(matches: tuple, current: str = "") -> str:
    """The model the menu should show: the current choice while the settings still match it,
    else the first model they match, else "" ("(set by hand)").

    >>> seventy_b = ("Llama 2 70B", "Llama 3 70B")
    >>> menu_choice(seventy_b), menu_choice(seventy_b, current="Llama 3 70B")
    ('Llama 2 70B', 'Llama 3 70B')
    >>> menu_choice((), "Falcon-7B")
    ''
    """
    if current in matches:
        return current
    return matches[0] if matches else ""


def compared_text(theirs, yours) -> str:
    """How a cache compares with yours, always in one format.

    >>> compared_text(12, 320), compared_text(4608, 320), compared_text(320, 320)
    ('26.7× smaller', '14.4× larger', 'same')
    >>> compared_text(4_718_592, 32)
    '147,456× larger'
    """
    ratio = theirs / yours
    factor = ratio if ratio >= 1 else 1 / ratio
    text = f"{factor:,.0f}" if factor >= 100 else f"{factor:.3g}"
    if text == "1":
        return "same"
    return f"{text}\u00d7 " + ("larger" if ratio > 1 else "smaller")


def _model_rows(seq_len: int, bytes_per_element, yours_per_token=None) -> tuple:
    rows = []
    for cfg in cache_models():
        per_token = cfg.kv_cache_bytes_per_token(bytes_per_element)
        compared = "" if yours_per_token is None else compared_text(per_token, yours_per_token)
        rows.append(
            ModelCacheRow(
                cfg.name,
                _label(cfg),
                cfg.kind,
                cfg.num_layers,
                cfg.num_heads,
                cfg.num_kv_heads,
                cfg.d_head,
                per_token,
                cfg.cache_bytes(seq_len, bytes_per_element),
                cfg.source,
                cfg.context,
                compared,
            )
        )
    return tuple(rows)


def kv_cache_view(
    num_layers: int = 80,
    num_heads: int = 64,
    num_kv_heads: int = 8,
    d_head: int = 128,
    seq_len: int = 4096,
    bytes_per_element: float = 2,
) -> KVCacheView:
    """What the KV-cache explorer shows (pure). Sizes come from :func:`kv_cache_bytes`.

    >>> v = kv_cache_view(80, 64, 8, 128, 4096, 2)   # Llama 2 70B in fp16
    >>> v.kind, v.per_token_text, v.per_sequence_text
    ('GQA', '320 KiB', '1.25 GiB')
    >>> kv_cache_view(80, 64, 6, 128, 4096, 2).ok
    False
    """
    args = (
        int(num_layers),
        int(num_heads),
        int(num_kv_heads),
        int(d_head),
        int(seq_len),
        bytes_per_element,
    )
    L, h, g, d_h, n, b = args
    matches = matching_models(L, h, g, d_h)
    if min(L, h, g, d_h, n) < 1 or not b > 0:
        return KVCacheView(
            *args,
            ok=False,
            models=(),
            matches=matches,
            message="Every count must be at least 1 and bytes per element positive.",
        )
    if h % g:
        fits = _divisors(h, KV_MAX_HEADS)
        return KVCacheView(
            *args,
            ok=False,
            models=_model_rows(n, b),
            matches=matches,
            message=(
                f"{h} query heads are not divisible by {g} KV heads: each KV head must serve "
                f"a group of the same number of query heads (query heads / KV heads must be a "
                f"whole number). To fix it, set the KV heads to a divisor of {h} "
                f"({_join_or(fits)})."
            ),
        )
    per_token = kv_cache_bytes(L, g, d_h, 1, b)
    per_sequence = kv_cache_bytes(L, g, d_h, n, b)
    models = _model_rows(n, b, per_token)
    mha = kv_cache_bytes(L, h, d_h, n, b)
    kind = _kind(h, g)
    if kind == "MHA":
        kind_text = f"MHA: every one of the {h} query heads has its own key and value head"
    elif kind == "MQA":
        kind_text = f"MQA: all {h} query heads share a single key and value head"
    else:
        kind_text = f"GQA: {g} KV heads, each shared by a group of {h // g} query heads"
    b_text = f"{b:g} byte" + ("" if b == 1 else "s")
    formula = (
        f"2 (K and V) \u00d7 {L} layers \u00d7 {g} KV heads \u00d7 {d_h} (d_head) \u00d7 "
        f"{b_text} = {_int(per_token) if float(per_token).is_integer() else per_token} "
        f"bytes per token"
    )
    return KVCacheView(
        *args,
        ok=True,
        message="",
        kind=kind,
        kind_text=kind_text,
        per_token=per_token,
        per_sequence=per_sequence,
        per_token_text=format_bytes(per_token),
        per_sequence_text=format_bytes(per_sequence),
        formula_text=formula,
        mha_per_sequence=mha,
        models=models,
        matches=matches,
    )


def render_kv_cache_html(view: KVCacheView, include_settings: bool = True) -> str:
    """The KV-cache explorer's output as HTML: your configuration, then the real models."""
    parts = [_BOX]
    if include_settings:
        parts.append(
            f'<div style="color:{_MUTED}">KV-cache explorer at {view.num_layers} layers, '
            f"{view.num_heads} query heads, {view.num_kv_heads} KV heads, d_head = "
            f"{view.d_head}, {_int(view.seq_len)} tokens, {view.bytes_per_element:g} "
            f"bytes per element.</div>"
        )
    if view.ok:
        saving = same = ""
        if view.matches:
            labels = [_label(MODEL_CONFIGS[name]) for name in view.matches]
            same = (
                f'<div class="mha-kv-same">These are the layers and heads of '
                f"{_esc(_join_and(labels))}.</div>"
            )
        if view.kind != "MHA":
            saving = (
                f"<div>With one KV head per query head (MHA) the cache would be "
                f"{format_bytes(view.mha_per_sequence)}: sharing makes it "
                f"{view.num_heads // view.num_kv_heads}\u00d7 smaller.</div>"
            )
        parts.append(
            f'<div style="font-size:1.15em;font-weight:bold" class="mha-kv-total">'
            f"KV cache: {_esc(view.per_token_text)} per token, {_esc(view.per_sequence_text)} per "
            f"sequence of {_int(view.seq_len)} tokens</div>"
            f"<div>{_esc(view.kind_text)}.</div>"
            f'<div style="color:{_MUTED}">{_esc(view.formula_text)}; multiply by the number of '
            f"tokens and by the batch size.</div>{saving}{same}"
        )
    else:
        parts.append(render_message_html(view.message))
    td = "padding:2px 8px;border:none;text-align:right"
    tl = "padding:2px 8px;border:none;text-align:left"
    header = "".join(
        f'<th style="{tl if i < 2 else td}">{t}</th>'
        for i, t in enumerate(
            (
                "model",
                "type",
                "layers",
                "query heads",
                "KV heads",
                "d_head",
                "context",
                "per token",
                f"{_int(view.seq_len)} tokens",
                "per token, compared with yours",
            )
        )
    )
    body = []
    if view.ok:
        body.append(
            f'<tr style="font-weight:bold"><td style="{tl}">your settings</td><td style="{tl}">'
            f'{view.kind}</td><td style="{td}">{view.num_layers}</td><td style="{td}">'
            f'{view.num_heads}</td><td style="{td}">{view.num_kv_heads}</td><td style="{td}">'
            f'{view.d_head}</td><td style="{td}"></td><td style="{td}">{view.per_token_text}</td>'
            f'<td style="{td}">{view.per_sequence_text}</td><td style="{td}"></td></tr>'
        )
    beyond = False
    for r in view.models:
        kv = "latent" if r.num_kv_heads is None else str(r.num_kv_heads)
        mark = ""
        if r.context is not None and view.seq_len > r.context:
            mark, beyond = " *", True
        body.append(
            f'<tr><td style="{tl}" title="{_esc(r.source)}">{_esc(r.label)}</td><td style="{tl}">{r.kind}</td>'
            f'<td style="{td}">{r.num_layers}</td><td style="{td}">{r.num_heads}</td>'
            f'<td style="{td}">{kv}</td><td style="{td}">{r.d_head}</td>'
            f'<td style="{td}">{"" if r.context is None else _int(r.context)}</td>'
            f'<td style="{td}">{format_bytes(r.per_token)}</td>'
            f'<td style="{td}">{format_bytes(r.per_sequence)}{mark}</td>'
            f'<td style="{td}">{r.compared}</td></tr>'
        )
    footnote = (
        " * longer than the model's context: it cannot use that many tokens." if beyond else ""
    )
    enc_dec = [c.name for c in MODEL_CONFIGS.values() if c.encoder_decoder]
    enc_only = [c.name for c in MODEL_CONFIGS.values() if c.encoder_only]
    parts.append(
        f'<div style="margin-top:8px;font-weight:bold">Real models at the same context length and '
        f"bytes per element</div>"
        f'<table style="border-collapse:collapse"><tr>{header}</tr>{"".join(body)}</table>'
        f'<div style="font-size:11px;color:{_MUTED}">Configurations from mha_helpers.MODEL_CONFIGS '
        f"(hover a name for its primary source). Only models that generate token by token keep a KV "
        f"cache. For the encoder-decoder models ({_esc(_join_and(enc_dec))}) the cache and the "
        f"layers counted are the decoder's; encoder-only models ({_esc(_join_and(enc_only))}) "
        f"read the whole input at once and keep no cache, so they are not listed. DeepSeek-V2 "
        f"caches a compressed latent instead of K and V heads; Mistral 7B's rolling buffer caps "
        f"its cache at 4,096 positions.{footnote}</div>"
    )
    parts.append("</div>")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# 3. Cost explorer: FLOPs and parameters versus h (fixed d_model) and versus n
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostRow:
    label: int  # h (by heads) or n (by tokens)
    d_head: int
    params: int
    projections: int
    attention: int
    total: int
    score_entries: int  # h * n^2 attention weights per layer per sequence


@dataclass(frozen=True)
class CostView:
    """Everything :func:`cost_explorer` shows for one setting of its sliders."""

    d_model: int
    h: int
    n: int
    ok: bool
    message: str
    d_head: int | None = None
    by_heads: tuple = ()  # CostRow per h dividing d_model (fixed d_model and n)
    by_tokens: tuple = ()  # CostRow per n in COST_NS (fixed d_model and h)
    crossover_n: int | None = None  # n where attention FLOPs equal projection FLOPs (2 d_model)


def _cost_row(label, n, d_model, h) -> CostRow:
    f = attention_flops(n, d_model, h)
    return CostRow(
        label,
        d_model // h,
        attention_params(d_model, h),
        f["projections"] + f["output_projection"],
        f["scores"] + f["weighted_sum"],
        f["total"],
        h * n * n,
    )


def cost_view(d_model: int = 768, h: int = 12, n: int = 1024) -> CostView:
    """What the cost explorer shows (pure). Counts come from :mod:`mha_helpers.cost`.

    >>> v = cost_view(768, 12, 1024)
    >>> {r.total for r in v.by_heads} == {v.by_heads[0].total}   # the same for every h
    True
    >>> v.crossover_n
    1536
    """
    d_model, h, n = int(d_model), int(h), int(n)
    if min(d_model, h, n) < 1:
        return CostView(d_model, h, n, False, "d_model, h and n must all be at least 1.")
    if d_model % h:
        fits = _divisors(d_model, COST_H_MAX)
        return CostView(
            d_model,
            h,
            n,
            False,
            f"d_model = {d_model} is not divisible by h = {h}: each head needs "
            f"d_model / h features. To fix it, set h to a divisor of {d_model} "
            f"({_join_or(fits)}).",
        )
    by_heads = tuple(_cost_row(k, n, d_model, k) for k in _divisors(d_model, COST_H_MAX))
    ns = sorted(set(COST_NS) | {n})
    by_tokens = tuple(_cost_row(m, m, d_model, h) for m in ns)
    return CostView(d_model, h, n, True, "", d_model // h, by_heads, by_tokens, 2 * d_model)


def _share_bar(a, b, width=200) -> str:
    """A bar split in proportion a : b (projections dark, attention light), with b's share."""
    wa = round(width * a / (a + b))
    return (
        f'<div style="display:flex;align-items:center;white-space:nowrap">'
        f'<div style="width:{wa}px;height:11px;background-color:{_DARK}"></div>'
        f'<div style="width:{width - wa}px;height:11px;background-color:{_LIGHT}"></div>'
        f'<div style="margin-left:6px">{b / (a + b):.0%}</div></div>'
    )


def render_cost_html(view: CostView, include_settings: bool = True) -> str:
    """The cost explorer's output as HTML: a table and bars versus h, then versus n."""
    parts = [_BOX]
    if include_settings:
        parts.append(
            f'<div style="color:{_MUTED}">Cost explorer at d_model = {view.d_model}, '
            f"h = {view.h}, n = {_int(view.n)}.</div>"
        )
    if not view.ok:
        parts.append(render_message_html(view.message))
        parts.append("</div>")
        return "".join(parts)
    td = "padding:1px 8px;border:none;text-align:right"
    tl = "padding:1px 8px;border:none;text-align:left"
    legend = (
        f'<div style="font-size:11px;color:{_MUTED}">Bars: <span style="display:inline-block;'
        f'width:12px;height:10px;background-color:{_DARK}"></span> projections (Q, K, V, W_O) '
        f'<span style="display:inline-block;width:12px;height:10px;background-color:{_LIGHT};'
        f'border:1px solid #999"></span> attention (scores and weighted sums). One multiply-add '
        f"counts as 2 FLOPs.</div>"
    )

    def table(rows, first, current, note):
        head = (
            "".join(
                f'<th style="{td}">{t}</th>'
                for t in (
                    first,
                    "d_head",
                    "parameters",
                    "projection FLOPs",
                    "attention FLOPs",
                    "total FLOPs",
                    "attention weights h\u00b7n\u00b2",
                )
            )
            + f'<th style="{tl}">attention share of FLOPs</th>'
        )
        body = []
        for r in rows:
            bold = "font-weight:bold;" if r.label == current else ""
            body.append(
                f'<tr style="{bold}"><td style="{td}">{_int(r.label)}</td><td style="{td}">{r.d_head}</td>'
                f'<td style="{td}">{_int(r.params)}</td><td style="{td}">{_si(r.projections)}</td>'
                f'<td style="{td}">{_si(r.attention)}</td><td style="{td}">{_si(r.total)}</td>'
                f'<td style="{td}">{_si(r.score_entries)}</td>'
                f'<td style="{tl}">{_share_bar(r.projections, r.attention)}</td></tr>'
            )
        return (
            f'<div style="margin-top:8px;font-weight:bold">{note}</div>'
            f'<table style="border-collapse:collapse"><tr>{head}</tr>{"".join(body)}</table>'
        )

    parts.append(
        table(
            view.by_heads,
            "h",
            view.h,
            f"Versus h, at d_model = {view.d_model} and n = {_int(view.n)}: the parameters and "
            f"the matrix-product FLOPs do not change; the attention weights (h\u00b7n\u00b2) "
            f"and the softmax work on them do",
        )
    )
    parts.append(
        table(
            view.by_tokens,
            "n",
            view.n,
            f"Versus n, at d_model = {view.d_model} and h = {view.h}: projections grow "
            f"like n, attention like n\u00b2 (they are equal at n = 2\u00b7d_model = "
            f"{_int(view.crossover_n)})",
        )
    )
    parts.append(legend + "</div>")
    return "".join(parts)
