"""The shape explorer: d_model, h and n -> d_head, every shape, the counts, per-head heatmaps.

:func:`shape_view` runs a seeded example through the course's own functions and records what to
show; the ``render_*`` functions turn that into HTML. The live widget
(:mod:`mha_helpers.widgets`) puts each piece in its own place (sliders and counts beside the
layer diagram, the shape table beside the heatmaps); :func:`render_shape_html` is the whole
picture, for a saved notebook and the website.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..attention import scaled_dot_product_attention
from ..cost import attention_flops, attention_params
from ..heads import merge_heads, split_heads
from ..plots import head_colour, layer_diagram_svg
from .common import (
    BOX,
    MUTED,
    SMALL,
    cell,
    code,
    divisors,
    esc,
    flex_row,
    fmt_count,
    fmt_shape,
    join_or,
    muted,
    render_message_html,
    settings_line,
    table_style,
    weight_colour,
)
from .live import (
    CONTROL_WIDTH,
    Explorer,
    choice_slider,
    column,
    html_box,
    int_slider,
    live_class,
    row,
)

#: The example sentence (lesson 02's "cats chase mice", continued); the first ``n`` words label
#: the heatmaps.
TOKENS = ("cats", "chase", "mice", "that", "steal", "the", "old", "cheese")
SEED = 0
D_MODEL_MIN, D_MODEL_MAX = 4, 1024
# The sliders' stops (issue 35: an IntSlider over 4..1024 moved d_model from 8 to 596 in a 90 px
# drag): at most 11 each, so a 90 px drag moves a few. d_model: powers of two, 12 and GPT-2's
# 768, so h = 3 and 6 divide some; h: the counts the lessons use, 5 included (it divides no
# power of two: the not-divisible message).
D_MODEL_CHOICES = (4, 8, 12, 16, 32, 64, 128, 256, 512, 768, 1024)
H_CHOICES = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32)
H_MAX = 32
N_MIN, N_MAX = 2, len(TOKENS)
MAX_HEADS_SHOWN = 8
# The layer diagram takes at most this share of the window's height in the live explorer (and
# this width in the picture), so the sliders and what they change stay in view together.
DIAGRAM_MAX_VH = 40
DIAGRAM_MAX_PX = 620


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
    fits = [k for k in divisors(d_model, H_MAX) if k in H_CHOICES]  # stops of the h slider
    # The slider's nearest stops below and above d_model that h divides.
    below = [m for m in D_MODEL_CHOICES if m < d_model and m % h == 0][-1:]
    above = [m for m in D_MODEL_CHOICES if m > d_model and m % h == 0][:1]
    multiples = below + above
    change_d = (
        f" or set d_model to a multiple of {h} such as {join_or(multiples)}" if multiples else ""
    )
    return (
        f"d_model = {d_model} is not divisible by h = {h}: the {h} heads cannot share "
        f"{d_model} features equally ({d_model} / {h} is not a whole number). "
        f"To fix it, set h to a divisor of {d_model} ({join_or(fits)}){change_d}."
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
    invalid = _invalid_view(d_model, h, n)
    if invalid is not None:
        return invalid
    d_head = d_model // h
    steps, weights = _run_example(d_model, h, n)
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


def _invalid_view(d_model: int, h: int, n: int) -> ShapeView | None:
    """The view of sliders that give no layer (too many tokens, sizes out of range, d_model
    not divisible by h): what is wrong and what to change. None when they are valid."""
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

    return None


def _run_example(d_model: int, h: int, n: int) -> tuple[tuple, np.ndarray]:
    """Run the seeded example through the layer: the shape after every step, and each head's
    attention weights ``(h, n, n)``."""
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
            "qh @ kh.swapaxes(-1, -2) / np.sqrt(d_head)",
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
    return steps, weights


def render_d_head_html(view: ShapeView) -> str:
    """d_head in large type, in the page's own colour (the message box below says what is wrong
    when there is no d_head: a fixed red headline would not read on a dark page)."""
    detail = (
        f' <span style="font-weight:normal;{MUTED}">= d_model / h = {view.d_model} / {view.h}</span>'
        if view.ok
        else ""
    )
    return (
        f'<div style="font-size:1.25em;font-weight:bold;line-height:1.5" class="mha-d-head">'
        f"{esc(view.d_head_text)}{detail}</div>"
    )


def render_diagram_html(view: ShapeView, max_height_vh: float | None = None) -> str:
    """The layer's block diagram for these sliders (empty when they are invalid): the column
    blocks of W_Q, W_K, W_V each head owns, one pattern per head, the concatenation and the row
    blocks of W_O, one colour per head. The drawing is
    :func:`mha_helpers.plots.layer_diagram_svg` (the same layout the lessons draw with
    matplotlib), scaled here: at most ``DIAGRAM_MAX_PX`` wide, and with ``max_height_vh`` at most
    that share of the window's height. Its card and ink follow JupyterLab's theme (its lines and
    labels are ``currentColor``; white and #222 where no theme sets the variables, as on the
    website); the coloured blocks bring their own text colour."""
    if not view.ok:
        return ""
    svg = layer_diagram_svg(view.d_model, view.h, view.n)
    # The ink on the card (#222 labels and outlines, #555 arrows) takes the card's text colour.
    svg = re.sub(r'(fill|stroke)="#(?:222222|555555)"', r'\1="currentColor"', svg)
    box = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    aspect = float(box.group(1)) / float(box.group(2)) if box else 1.4
    width = f"min(100%, {DIAGRAM_MAX_PX}px"
    if max_height_vh is not None:
        width += f", {max_height_vh * aspect:.1f}vh"
    width += ")"
    return (
        f'<div class="mha-layer-diagram" style="width:{width};box-sizing:border-box;'
        f"background-color:var(--jp-layout-color0,#ffffff);color:var(--jp-ui-font-color1,#222222);"
        f'border-radius:4px;padding:4px;border:1px solid var(--jp-border-color1,#c8c8c8)">{svg}</div>'
    )


def render_counts_html(view: ShapeView) -> str:
    """The parameter count and the FLOPs (empty when the sliders are invalid)."""
    if not view.ok:
        return ""
    d = view.d_model
    f = view.flops
    share = f["attention"] / f["total"]
    share_text = f"{share:.0%}" if share >= 0.095 else f"{share:.1%}"
    return (
        f'<div class="mha-counts" style="line-height:1.45;{SMALL}">'
        f"<div><b>Parameters of the layer:</b> {fmt_count(view.params)} "
        f"= 4 d_model\u00b2 + 4 d_model = 4\u00b7{d}\u00b2 + 4\u00b7{d} "
        f"{muted('(weights and biases; the same for every h that divides d_model)')}</div>"
        f'<div style="margin-top:4px"><b>FLOPs for n = {view.n} tokens:</b> projections '
        f"(Q, K, V and W_O) {fmt_count(f['projections'])}; attention (scores and weighted sums) "
        f"{fmt_count(f['attention'])}; total {fmt_count(f['total'])} "
        f"{muted(f'(attention is {share_text} of the total)')}</div></div>"
    )


def render_shape_table_html(view: ShapeView) -> str:
    """Every step's code and shape, input to output (empty when the sliders are invalid)."""
    if not view.ok:
        return ""
    left = cell("left", "1px 8px 1px 0")
    rows = "".join(
        f'<tr><td style="{left};max-width:13em">{esc(s.step)}</td>'
        f'<td style="{left};max-width:15em">{code(s.code)}</td>'
        f'<td style="{left};white-space:nowrap">{code(s.symbolic)}</td>'
        f'<td style="{left};white-space:nowrap;font-weight:bold">{code(fmt_shape(s.shape))}</td></tr>'
        for s in view.steps
    )
    header = "".join(
        f'<th scope="col" style="{left}">{t}</th>' for t in ("step", "code", "shape", "here")
    )
    return (
        f'<table class="mha-shape-table" style="{table_style("font-size:12.5px")}">'
        f"<thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"
    )


def render_shape_body_html(view: ShapeView) -> str:
    """Shape table, parameter count and FLOPs (empty when the sliders are invalid)."""
    if not view.ok:
        return ""
    return f"{BOX}{render_shape_table_html(view)}{render_counts_html(view)}</div>"


def _heatmap_table(weights, tokens, title: str, swatch: str = "") -> str:
    """One head's (n, n) weights as an HTML table: rows = queries, columns = keys. ``swatch`` is
    the head's colour in the layer diagram, shown next to the title."""
    n = len(tokens)
    size = "width:30px;height:22px" if n <= 5 else "width:26px;height:18px"
    value = f"{size};text-align:center;padding:0;border:1px solid #ffffff;font-size:10px"
    label = "padding:0 3px;font-size:11px;font-weight:normal;border:none;background:none"
    rows = [
        # A short corner ("q ↓ k →"; the note under the heatmaps says it in words), so that two
        # heads sit side by side beside the shape table at 1366 px and more heads wrap.
        f'<tr><td style="{label};text-align:right;{MUTED}" title="rows: queries; columns: keys">'
        "q \u2193 k \u2192</td>"
        + "".join(
            f'<th scope="col" style="{label};text-align:center">{esc(t)}</th>' for t in tokens
        )
        + "</tr>"
    ]
    for i, qt in enumerate(tokens):
        tds = []
        for j, kt in enumerate(tokens):
            w = float(weights[i, j])
            bg, fg = weight_colour(w)
            tds.append(
                f'<td style="{value};background-color:{bg};color:{fg}" '
                f'title="{esc(qt)} \u2192 {esc(kt)}: {w:.2f}">{w:.2f}</td>'
            )
        rows.append(
            f'<tr><th scope="row" style="{label};text-align:right">{esc(qt)}</th>'
            f"{''.join(tds)}</tr>"
        )
    mark = (
        f'<span style="display:inline-block;width:10px;height:10px;margin-right:4px;'
        f'border:1px solid #8a8a8a;background-color:{swatch}"></span>'
        if swatch
        else ""
    )
    return (
        f'<div style="flex:none">'
        f'<div style="text-align:center;font-weight:bold;font-size:13px">{mark}{esc(title)}</div>'
        f'<table style="{table_style("font-size:11px")}">{"".join(rows)}</table></div>'
    )


def _colour_legend() -> str:
    stops = "".join(
        f'<span style="display:inline-block;width:12px;height:10px;'
        f'background-color:{weight_colour(v / 10)[0]}"></span>'
        for v in range(11)
    )
    return (
        f'<div style="font-size:11px;margin:1px 0 4px 0"><span style="{MUTED}">weight 0</span> '
        f'{stops} <span style="{MUTED}">1 (cividis; each row sums to 1)</span></div>'
    )


def render_heatmaps_html(view: ShapeView, scroll: bool = False) -> str:
    """The per-head attention heatmaps (with title, token labels and colour scale).

    ``scroll``: the heads sit in one row that scrolls sideways (the live explorer, whose height
    must not grow with h); otherwise they wrap onto as many rows as they need (the picture).
    """
    if not view.ok:
        return ""
    heads = "".join(
        _heatmap_table(view.weights[i], view.tokens, f"head {i}", head_colour(i))
        for i in range(view.weights.shape[0])
    )
    note = f" {muted('(' + esc(view.heads_note) + ')')}" if view.heads_note else ""
    # Scrolling: width 0 and min-width 100% let the strip take its box's width without ever
    # asking for the width of all its heads (which would widen and clip the whole box).
    strip = (
        "flex-wrap:nowrap;overflow-x:auto;padding-bottom:4px;width:0;min-width:100%"
        if scroll
        else "flex-wrap:wrap"
    )
    return (
        f'<div class="mha-heatmaps" style="line-height:1.4;max-width:100%;white-space:normal">'
        f'<div style="font-weight:bold;font-size:13px">Attention weights per head for the '
        f'example "{esc(" ".join(view.tokens))}" (seeded weights){note}</div>'
        f"{_colour_legend()}"
        f'<div role="group" aria-label="attention weights, one table per head" tabindex="0" '
        f'style="display:flex;gap:4px 12px;{strip};max-width:100%">{heads}</div>'
        f'<div style="font-size:11px;{MUTED};max-width:44em">Rows: the query token (attending); '
        f"columns: the key token (attended to). Each head has its own pattern; the square by its "
        f"name is its colour in the diagram.</div></div>"
    )


def render_shape_html(view: ShapeView) -> str:
    """The whole shape explorer as one HTML fragment (the picture): the settings, d_head, the
    message, then the diagram beside the counts, the shape table beside the heatmaps (one under
    the other where the page is narrow)."""
    top = flex_row(
        render_diagram_html(view),
        f'<div style="flex:1 1 16em;max-width:28em">{render_counts_html(view)}</div>',
    )
    bottom = flex_row(render_shape_table_html(view), render_heatmaps_html(view))
    return (
        '<div class="mha-shape-picture">'
        + settings_line(f"Shape explorer at d_model = {view.d_model}, h = {view.h}, n = {view.n}.")
        + render_d_head_html(view)
        + render_message_html(view.message)
        + (top + '<div style="height:8px"></div>' + bottom if view.ok else "")
        + "</div>"
    )


# ---------------------------------------------------------------------------------------------
# The widget: sliders d_model, h and n
# ---------------------------------------------------------------------------------------------


def shape_explorer(d_model: int = 8, h: int = 2, n: int = 3):
    """Sliders ``d_model``, ``h`` and ``n``; shows d_head, every shape, the parameter count, the
    FLOPs and per-head heatmaps of a seeded example. Returns the widget (display it by making it
    the last expression of a cell).

    The defaults are the course's example, whose sizes are all different so no shape can be
    misread: x is (3, 8), each head's Q is (2, 3, 4) and its scores are (2, 3, 3).

    ``explorer.controls["h"].value = 3`` moves a slider from code; ``explorer.view`` is the
    :class:`ShapeView` currently shown.
    """
    return _widget_class()(d_model=d_model, h=h, n=n)


@lru_cache(maxsize=None)
def _widget_class():
    """The widget class (made on first use: importing this module does not import ipywidgets)."""
    return live_class(ShapeExplorer)


class ShapeExplorer(Explorer):
    """Sliders d_model, h, n; shows d_head, the message, shapes and counts, heatmaps."""

    title = "Shape explorer"
    kind = "shape"

    def __init__(self, d_model=8, h=2, n=3):
        self.d_head_label = html_box()
        self.message = html_box()
        self.counts = html_box()  # parameters and FLOPs
        self.diagram = html_box(flex="1 1 300px", min_width="0")  # redrawn as the sliders move
        self.body = html_box(flex="0 1 auto", margin="0 24px 8px 0")  # the shape table
        self.heatmaps = html_box(flex="1 1 250px", min_width="0")
        controls = {
            "d_model": choice_slider(
                "d_model", d_model, D_MODEL_CHOICES, "model width: features per token"
            ),
            "h": choice_slider("h", h, H_CHOICES, "number of heads"),
            "n": int_slider("n", n, N_MIN, N_MAX, 1, "number of tokens"),
        }
        # Sliders, d_head and the counts in a column beside the diagram; the shape table
        # beside the heatmaps below (each pair one above the other in a narrow window).
        left = column(
            *controls.values(),
            self.d_head_label,
            self.message,
            self.counts,
            width=CONTROL_WIDTH,
        )
        super().__init__(children=[row(left, self.diagram), row(self.body, self.heatmaps)])
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
            # The heads wrap onto more rows (issue 35: a strip that scrolled sideways hid head 1).
            (self.heatmaps, render_heatmaps_html(view, scroll=False)),
        ):
            if child.value != value:
                child.value = value

    def _show_error(self, text):
        self.message.value = render_message_html(text)

    def _static_html(self, view):
        return render_shape_html(view)
