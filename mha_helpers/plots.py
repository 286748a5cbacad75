"""Attention heatmaps with the course's conventions.

Rows are queries (the token doing the looking), columns are keys (the token looked at), both
labelled with the tokens; the colormap is ``cividis`` (perceptually uniform and colour-blind
safe) on a fixed 0..1 scale so heads can be compared by eye.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from .figures import DARK_BACKGROUND, KEEP_INK, figure_html, site_figure_html
from .figures import register as _register_figure_html
from .style import COURSE_STYLE, SMALLEST_TEXT_PT  # noqa: F401  (re-exported)

__all__ = [
    "plot_attention",
    "plot_heads",
    "plot_layer_diagram",
    "layer_diagram_layout",
    "layer_diagram_svg",
    "head_colour",
    "HEAD_COLOURS",
    "CMAP",
    "COURSE_STYLE",
    "use_course_style",
    "figure_html",
    "site_figure_html",
    "DARK_BACKGROUND",
]

CMAP = "cividis"

# The course's matplotlib style and its smallest text size live in .style (figures.py needs
# them too, and imports nothing of this module); re-exported here, where lessons look for them.
#: The numbers written in heatmap cells (plot_attention's ``annotate``).
ANNOTATION_PT = 11.0


def use_course_style() -> None:
    """Apply :data:`COURSE_STYLE` to matplotlib (idempotent). Done when this module is imported
    after matplotlib (every lesson imports ``matplotlib.pyplot`` first) and by each plotting
    helper, so figures drawn with plain ``plt.subplots`` in a lesson follow it too."""
    import matplotlib

    matplotlib.rcParams.update(COURSE_STYLE)
    _register_figure_html()


def plot_attention(
    weights,
    tokens,
    ax=None,
    title="Attention weights",
    key_tokens=None,
    annotate=None,
    colorbar=True,
):
    """Draw one ``(n_q, n_k)`` attention matrix as a labelled heatmap; return the axes.

    ``tokens`` labels the queries (rows); ``key_tokens`` the keys (columns), default ``tokens``.
    ``annotate`` writes each weight in its cell (default: when the matrix is at most 8 x 8), in
    black or white, whichever contrasts more with the cell's colour.
    """
    import matplotlib.pyplot as plt

    use_course_style()
    weights = np.asarray(weights)
    if weights.ndim != 2:
        raise ValueError(f"weights has shape {weights.shape}, expected (n_q, n_k) for one head")
    key_tokens = tokens if key_tokens is None else key_tokens
    if len(tokens) != weights.shape[0] or len(key_tokens) != weights.shape[1]:
        raise ValueError(
            f"got {len(tokens)} query labels and {len(key_tokens)} key labels for weights of "
            f"shape {weights.shape}: one label per row and one per column"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * weights.shape[1] + 2.2, 0.5 * weights.shape[0] + 1.6))
    im = ax.imshow(weights, cmap=CMAP, vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(key_tokens)), labels=list(key_tokens), rotation=45, ha="right")
    ax.set_yticks(range(len(tokens)), labels=list(tokens))
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    if annotate is None:
        annotate = max(weights.shape) <= 8
    if annotate:
        cmap = plt.get_cmap(CMAP)
        for i in range(weights.shape[0]):
            for j in range(weights.shape[1]):
                w = weights[i, j]
                ax.text(
                    j,
                    i,
                    f"{w:.2f}",
                    ha="center",
                    va="center",
                    fontsize=ANNOTATION_PT,
                    gid=KEEP_INK,  # chosen for the cell's colour: the dark variant keeps it
                    color=ink_for(cmap(float(np.clip(w, 0.0, 1.0)))),  # the higher contrast
                )
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


def plot_heads(
    weights, tokens, title="Attention weights per head", key_tokens=None, max_cols=4, figure=None
):
    """Draw ``(h, n_q, n_k)`` weights as a grid of labelled heatmaps, one per head.

    Returns the figure. Pass ``figure`` to redraw into an existing figure (widgets do this so
    plots replace each other instead of piling up).
    """
    import matplotlib.pyplot as plt

    use_course_style()
    weights = np.asarray(weights)
    if weights.ndim != 3:
        raise ValueError(f"weights has shape {weights.shape}, expected (h, n_q, n_k)")
    h = weights.shape[0]
    cols = min(h, max_cols)
    rows = -(-h // cols)
    n_k = weights.shape[2]
    size = (2.6 * cols + 0.6, 2.4 * rows + 0.6) if n_k <= 10 else (3.2 * cols, 3.0 * rows)
    if figure is None:
        figure = plt.figure(figsize=size, layout="constrained")
    else:
        figure.clear()
        figure.set_size_inches(*size)
    axes = figure.subplots(rows, cols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= h:
            ax.set_axis_off()
            continue
        plot_attention(
            weights[i],
            tokens,
            ax=ax,
            title=f"head {i}",
            key_tokens=key_tokens,
            annotate=False,
            colorbar=False,
        )
        if i % cols:
            ax.set_ylabel("")
        if i < h - cols:
            ax.set_xlabel("")
    # One colour scale for all heads (every heatmap uses 0..1), so one colorbar serves them all.
    figure.colorbar(axes.flat[0].images[0], ax=axes, fraction=0.046, pad=0.04, label="weight")
    figure.suptitle(title)
    return figure


# ---------------------------------------------------------------------------------------------
# The block diagram of one multi-head attention layer
# ---------------------------------------------------------------------------------------------
#
# One function, :func:`layer_diagram_layout`, decides where every block goes and which colour it
# has; two thin renderers draw that layout: :func:`plot_layer_diagram` with matplotlib (lessons)
# and :func:`layer_diagram_svg` as inline SVG (the shape explorer, which must redraw in a few
# milliseconds). Coordinates are in abstract units (0.08 inch when drawn), y pointing down.

#: Paul Tol's "muted" qualitative scheme: nine colours that stay distinct for the common forms
#: of colour-vision deficiency. Head i gets HEAD_COLOURS[i % 9].
HEAD_COLOURS = (
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#999933",
    "#DDCC77",
    "#CC6677",
    "#882255",
    "#AA4499",
)
_INK, _GREY, _LINE = "#222222", "#bbbbbb", "#555555"
_INCH_PER_UNIT = 0.08  # drawn size: 1 unit = 0.08 inch
_PT_PER_UNIT = 72 * _INCH_PER_UNIT  # font sizes are in points
MAX_HEADS_DRAWN = 4  # lanes drawn; the concatenation and W_O always show all h blocks


def head_colour(i: int) -> str:
    """The colour of head ``i`` in every course diagram (colour-blind safe; repeats after 9)."""
    return HEAD_COLOURS[i % len(HEAD_COLOURS)]


def _relative_luminance(rgb) -> float:
    """WCAG 2 relative luminance of an sRGB colour given as three floats in 0..1."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ink_for(rgb) -> str:
    """Black or white, whichever has the higher WCAG contrast ratio on the colour ``rgb``."""
    lum = _relative_luminance(rgb)
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def _text_colour(fill: str) -> str:
    return ink_for([int(fill[k : k + 2], 16) / 255 for k in (1, 3, 5)])


@dataclass(frozen=True)
class Box:
    """A filled rectangle. ``role`` names the block (``"w_q"``, ``"pattern"``, ``"w_o"``...) and
    ``head`` the head it belongs to (None for a block shared by all heads)."""

    x: float
    y: float
    w: float
    h: float
    fill: str
    role: str = ""
    head: int | None = None
    outline: bool = False  # a frame around a whole matrix (fill "none")


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    size: float = 8.0  # points
    anchor: str = "middle"  # "start" | "middle" | "end"
    colour: str = _INK
    bold: bool = False


@dataclass(frozen=True)
class Arrow:
    x0: float
    y0: float
    x1: float
    y1: float
    colour: str = _LINE
    width: float = 0.8  # points


@dataclass(frozen=True)
class DiagramLayout:
    """Everything a renderer needs: the canvas size (in layout units) and the items in drawing
    order."""

    d_model: int
    num_heads: int
    d_head: int
    width: float
    height: float
    items: tuple
    title: str

    def boxes(self, role: str | None = None) -> list:
        return [b for b in self.items if isinstance(b, Box) and (role is None or b.role == role)]


def _blocks(d_model: int, h: int) -> list[tuple[int, int]]:
    d_head = d_model // h
    return [(i * d_head, (i + 1) * d_head - 1) for i in range(h)]


def _sup(i: int) -> str:
    return str(i).translate(
        str.maketrans("0123456789", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
    )


def _span(a: int, b: int) -> str:
    return f"{a}" if a == b else f"{a}\u2013{b}"


def layer_diagram_layout(d_model: int, num_heads: int, n: int | None = None) -> DiagramLayout:
    """Where every block of the multi-head attention diagram goes, for ``d_model`` and ``h``.

    The whole data flow, left to right, one lane per head (the first
    :data:`MAX_HEADS_DRAWN` heads are drawn): the input x; head i's projections
    Q_i = x W_Q^(i), K_i = x W_K^(i), V_i = x W_V^(i), made with the column block of W_Q, W_K,
    W_V that the head owns (the three matrices are drawn above the lanes); the head's pattern
    softmax(Q_i K_i^T / sqrt(d_head)); its output o_i = pattern_i V_i; the concatenation, where
    o_i fills block i; W_O, whose row block i receives block i; head i's write,
    o_i W_O^(i), of shape (n, d_model); and the output, the sum of the writes. Head i has the
    same colour everywhere (:func:`head_colour`). ``n`` (optional) writes the number of tokens
    into the shapes. Text is at least 9 pt when drawn at the layout's own size.

    >>> lay = layer_diagram_layout(8, 2)
    >>> [(b.role, b.head) for b in lay.boxes("w_o")]  # one row block per head, then the outline
    [('w_o', 0), ('w_o', 1), ('w_o', None)]
    >>> [b.head for b in lay.boxes("write")]  # one write per head, added up into the output
    [0, 1]
    """
    from .shapes import head_width

    d_model = int(d_model)
    h = int(num_heads)
    d_head = head_width(d_model, h)
    g = _Frame(
        d_model=d_model,
        h=h,
        d_head=d_head,
        nn="n" if n is None else str(int(n)),
        blocks=_blocks(d_model, h),
        shown=min(h, MAX_HEADS_DRAWN),
    )
    title = f"One multi-head attention layer: d_model = {d_model}, h = {h}, d_head = {d_head}"
    items: list = [Label(2.0, 3.6, title, size=10.5, bold=True, anchor="start")]
    items += _step_headings(g)
    items += _projection_matrices(g)
    lane_items, lanes = _input_and_lanes(g)
    items += lane_items
    concat_items, cy = _concatenation(g, lanes)
    items += concat_items
    w_o_items, wy = _w_o(g, cy)
    items += w_o_items
    write_items, oy = _writes_and_output(g, lanes, wy)
    items += write_items
    legend_items, bottom = _legend(g, max(oy + _WH + 7.0, g.top + g.band + 7.5))
    items += legend_items
    return DiagramLayout(d_model, h, d_head, _WIDTH, bottom, tuple(items), title)


# Column positions of the diagram (layout units; 1 unit = 0.08 inch)
_XX, _XW = 2.0, 6.0  # the input x
_BUS = 11.5  # where x's arrow splits into Q, K and V
_QX, _QW, _QH = 14.0, 8.0, 3.2  # Q_i, K_i, V_i, stacked in each lane
_PX, _PS = 27.0, 7.2  # the pattern, a square
_OX, _OW = 39.5, 7.0  # the head's output o_i
_CX, _CW, _CH = 53.0, 16.0, 4.0  # the concatenation
_WX, _WS = 75.0, 12.0  # W_O
_RX, _RW = 96.0, 14.0  # the writes, and the output under them
_WH = _QH  # a write's height
_WIDTH = _RX + _RW + 3.0
_MTOP, _MSZ = 12.0, 7.0  # the three projection matrices, above the lanes
_FS = 9.0  # every label is at least 9 pt at the layout's own size
_LANE = 3 * _QH + 2 * 1.0 + 3.2  # three stacked boxes, two gaps, room for the shapes


@dataclass(frozen=True)
class _Frame:
    """What every part of the diagram is placed by: the sizes and the lanes drawn."""

    d_model: int
    h: int
    d_head: int
    nn: str  # the number of tokens as written in the shapes ("n" when not given)
    blocks: list  # head i's columns (first, last) of d_model
    shown: int  # lanes drawn

    @property
    def top(self) -> float:  # the first lane's top
        return _MTOP + _MSZ + 6.5

    @property
    def band(self) -> float:  # the lanes' height together
        return self.shown * _LANE


def _step_headings(g: _Frame) -> list:
    """The name of each step above its column."""
    return [
        Label(x, 9.0, text, size=_FS, bold=True)
        for x, text in (
            (_QX + _QW / 2, "project"),
            (_PX + _PS / 2, "attend"),
            (_OX + _OW / 2, "weigh V"),
            (_CX + _CW / 2, "concatenate"),
            (_WX + _WS / 2, "W_O"),
            (_RX + _RW / 2, "writes add up"),
        )
    ]


def _projection_matrices(g: _Frame) -> list:
    """W_Q, W_K and W_V, head i owning a block of columns of each, and the formulas beside."""
    items = []
    for k, (name, role) in enumerate((("W_Q", "w_q"), ("W_K", "w_k"), ("W_V", "w_v"))):
        mx = 12.0 + k * 11.0
        for i, (a, b) in enumerate(g.blocks):
            items.append(
                Box(mx + _MSZ * a / g.d_model, _MTOP, _MSZ * (b - a + 1) / g.d_model, _MSZ,
                    head_colour(i), role, i)
            )  # fmt: skip
        items.append(Box(mx, _MTOP, _MSZ, _MSZ, "none", role, None, outline=True))
        items.append(Label(mx + _MSZ / 2, _MTOP + _MSZ + 2.2, name, size=_FS, bold=True))
    d_model, d_head = g.d_model, g.d_head
    for k, text in enumerate(
        (
            f"W_Q, W_K, W_V: each ({d_model}, {d_model}); head i owns columns "
            f"i\u00b7{d_head} to (i+1)\u00b7{d_head} \u2212 1",
            "Q_i = x W_Q\u207d\u2071\u207e (head i's columns), and K_i, V_i the same way",
            f"A_i = softmax(Q_i K_i\u1d40 / \u221a{d_head}), head i's attention pattern",
            "o_i = A_i V_i, head i's output",
        )
    ):
        items.append(Label(46.0, _MTOP + 0.9 + 2.45 * k, text, size=_FS, anchor="start"))
    return items


def _input_and_lanes(g: _Frame) -> tuple[list, list]:
    """The input x, then one lane per drawn head: Q_i, K_i, V_i, the pattern A_i, the output
    o_i (the shapes under the first lane). Returns the items and each lane's ``(o_i's middle,
    lane top)``."""
    top, band, nn = g.top, g.band, g.nn
    xy0 = top
    items = [
        Box(_XX, xy0, _XW, band - 3.2, _GREY, "x", None),
        Box(_XX, xy0, _XW, band - 3.2, "none", "x", None, outline=True),
        Label(_XX + _XW / 2, xy0 + (band - 3.2) / 2 + 0.5, "x", size=11, bold=True),
        Label(_XX - 1.0, xy0 + band - 1.2, f"({nn}, {g.d_model})", size=_FS, anchor="start"),
    ]
    lanes = []
    for i in range(g.shown):
        y = top + i * _LANE
        items += _lane(g, i, y)
        lanes.append((y + 2 * (_QH + 1.0) + _QH / 2, y))  # o_i sits level with V_i
    if g.shown < g.h:
        items.append(
            Label(_QX, top + band + 3.4, f"(heads 0\u2013{g.shown - 1} of {g.h} drawn; the others "
                  "work the same way)", size=_FS, anchor="start")
        )  # fmt: skip
    return items, lanes


def _lane(g: _Frame, i: int, y: float) -> list:
    """Head i's lane, from ``y`` down: Q_i, K_i and V_i from x, the pattern from Q_i and K_i,
    the output from the pattern and V_i."""
    items = []
    col, ink = head_colour(i), _text_colour(head_colour(i))
    ys = [y + j * (_QH + 1.0) for j in range(3)]  # tops of Q_i, K_i, V_i
    mid = (ys[0] + ys[2] + _QH) / 2
    items.append(Arrow(_XX + _XW + 0.3, mid, _BUS, mid))
    for j, name in enumerate(("Q", "K", "V")):
        items.append(Arrow(_BUS, mid, _QX - 0.3, ys[j] + _QH / 2, width=0.6))
        items.append(Box(_QX, ys[j], _QW, _QH, col, name.lower(), i))
        items.append(Label(_QX + _QW / 2, ys[j] + _QH / 2 + 0.55, f"{name}{i}", size=_FS,
                           colour=ink))  # fmt: skip
    # the pattern, from Q_i and K_i
    pys = (ys[0] + ys[1] + _QH) / 2 - _PS / 2
    items.append(Arrow(_QX + _QW + 0.3, ys[0] + _QH / 2, _PX - 0.3, pys + _PS * 0.3, colour=col))
    items.append(Arrow(_QX + _QW + 0.3, ys[1] + _QH / 2, _PX - 0.3, pys + _PS * 0.7, colour=col))
    items.append(Box(_PX, pys, _PS, _PS, col, "pattern", i))
    items.append(Label(_PX + _PS / 2, pys + _PS / 2 + 0.55, f"A{i}", size=_FS, colour=ink))
    # the output o_i = pattern_i V_i: the values go round the pattern
    oy = ys[2]
    vy = ys[2] + _QH / 2
    items.append(Arrow(_QX + _QW + 0.3, vy, _OX - 0.3, vy, colour=col))
    items.append(Arrow(_PX + _PS / 2, pys + _PS + 0.2, _OX - 0.3, oy + 0.4, colour=col))
    items.append(Box(_OX, oy, _OW, _QH, col, "head_out", i))
    items.append(Label(_OX + _OW / 2, oy + _QH / 2 + 0.55, f"o{i}", size=_FS, colour=ink))
    if i == 0:  # the shapes, once
        sy = ys[2] + _QH + 2.0
        items.append(Label(_QX + _QW / 2, sy, f"({g.nn}, {g.d_head}) each", size=_FS))
        items.append(Label(_PX + _PS / 2, sy + 0.0, f"({g.nn}, {g.nn})", size=_FS))
        items.append(Label(_OX + _OW / 2, sy, f"({g.nn}, {g.d_head})", size=_FS))
    return items


def _concatenation(g: _Frame, lanes: list) -> tuple[list, float]:
    """The concatenation, o_i filling block i, with an arrow from each drawn o_i. Returns the
    items and its top."""
    items = []
    cy = g.top + g.band / 2 - _CH / 2 - 2.3
    for i, (a, b) in enumerate(g.blocks):
        items.append(
            Box(_CX + _CW * a / g.d_model, cy, _CW * (b - a + 1) / g.d_model, _CH, head_colour(i),
                "concat", i)
        )  # fmt: skip
    items.append(Box(_CX, cy, _CW, _CH, "none", "concat", None, outline=True))
    for i, (ly, _) in enumerate(lanes):
        a, b = g.blocks[i]
        xe = _CX + _CW * (a + b + 1) / 2 / g.d_model
        ye = cy - 0.3 if ly < cy else cy + _CH + 0.3
        items.append(Arrow(_OX + _OW + 0.3, ly, xe, ye, colour=head_colour(i), width=1.0))
    # (its labels go under the lanes, where no arrow from an o_i crosses them)
    items.append(
        Label(_CX + _CW / 2, g.top + g.band + 0.4, f"({g.nn}, {g.d_model}): o_i fills block i",
              size=_FS)
    )  # fmt: skip
    return items, cy


def _w_o(g: _Frame, cy: float) -> tuple[list, float]:
    """W_O, block i of the concatenation meeting only row block i. Returns the items and its
    top."""
    d_model = g.d_model
    wy = cy + _CH / 2 - _WS / 2
    items = [Label(_CX + _CW + 3.0, cy + _CH / 2 + 1.0, "@", size=11, bold=True)]
    for i, (a, b) in enumerate(g.blocks):
        items.append(
            Box(_WX, wy + _WS * a / d_model, _WS, _WS * (b - a + 1) / d_model, head_colour(i),
                "w_o", i)
        )  # fmt: skip
    items.append(Box(_WX, wy, _WS, _WS, "none", "w_o", None, outline=True))
    items.append(Label(_WX + _WS / 2, wy + _WS + 2.4, f"({d_model}, {d_model})", size=_FS))
    items.append(Label(_WX + _WS / 2, wy + _WS + 4.7, "row block i", size=_FS))
    items.append(Label(_WX + _WS / 2, wy + _WS + 7.0, "for head i", size=_FS))
    return items, wy


def _writes_and_output(g: _Frame, lanes: list, wy: float) -> tuple[list, float]:
    """Each drawn head's write o_i W_O^(i), one (n, d_model) term, added up into the output.
    Returns the items and the output's top."""
    items = []
    h = g.h
    for i, (ly, _) in enumerate(lanes):
        a, b = g.blocks[i]
        ry = ly - _WH / 2
        col = head_colour(i)
        items.append(
            Arrow(_WX + _WS + 0.3, wy + _WS * (a + b + 1) / 2 / g.d_model, _RX - 0.3, ly,
                  colour=col, width=1.0)
        )  # fmt: skip
        items.append(Box(_RX, ry, _RW, _WH, col, "write", i))
        items.append(Label(_RX + _RW / 2, ry + _WH / 2 + 0.55, f"o{i} W_O\u207d{_sup(i)}\u207e",
                           size=_FS, colour=_text_colour(col)))  # fmt: skip
        if i < g.shown - 1:
            items.append(Label(_RX + _RW / 2, ly + _LANE / 2 + 1.0, "+", size=11, bold=True))
    out_y = g.top + g.band + 0.6
    if g.shown < h:
        items.append(Label(_RX + _RW / 2, out_y - 0.6, f"+ \u2026 + o{h - 1} W_O\u207d{_sup(h - 1)}\u207e",
                           size=_FS))  # fmt: skip
        out_y += 2.6
    items.append(Label(_RX + _RW / 2, out_y, "= the sum of the writes", size=_FS))
    oy = out_y + 1.6
    items.append(Box(_RX, oy, _RW, _WH, _GREY, "output", None))
    items.append(Box(_RX, oy, _RW, _WH, "none", "output", None, outline=True))
    items.append(Label(_RX + _RW / 2, oy + _WH / 2 + 0.55, "output", size=_FS, bold=True))
    items.append(Label(_RX + _RW / 2, oy + _WH + 2.4, f"({g.nn}, {g.d_model})", size=_FS))
    return items, oy


def _legend(g: _Frame, y: float) -> tuple[list, float]:
    """What each colour means, in numbers (four heads at most, with an ellipsis), from ``y``
    down. Returns the items and the diagram's height."""
    items = []
    h = g.h
    rows = list(range(h)) if h <= 4 else [0, 1, None, h - 1]
    for i in rows:
        if i is None:
            items.append(
                Label(
                    2.0,
                    y + 0.6,
                    "\u2026 (one colour per head; the nine colours repeat from head 9 on)"
                    if h > 9
                    else "\u2026",
                    size=_FS,
                    anchor="start",
                )
            )
        else:
            a, b = g.blocks[i]
            items.append(Box(2.0, y - 1.3, 2.6, 2.6, head_colour(i), "legend", i))
            sp, pl = _span(a, b), "" if a == b else "s"
            items.append(
                Label(
                    5.6,
                    y + 0.6,
                    f"head {i}: column{pl} {sp} of W_Q, W_K and W_V "
                    f"\u2192 feature{pl} {sp} of the concatenation "
                    f"\u2192 row{pl} {sp} of W_O",
                    size=_FS,
                    anchor="start",
                )
            )
        y += 3.4
    return items, y + 0.6


def plot_layer_diagram(d_model: int, num_heads: int, n: int | None = None, ax=None):
    """Draw the layer's block diagram (see :func:`layer_diagram_layout`) with matplotlib.

    Returns the axes. Each head has one colour: its columns of W_Q, W_K, W_V, its attention
    pattern, its block of the concatenation and its rows of W_O.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    lay = layer_diagram_layout(d_model, num_heads, n)
    if ax is None:
        fig = plt.figure(figsize=(lay.width * _INCH_PER_UNIT, lay.height * _INCH_PER_UNIT))
        ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.height, 0)
    ax.set_aspect("equal")
    ax.set_axis_off()
    for it in lay.items:
        if isinstance(it, Box):
            if it.outline:
                ax.add_patch(
                    Rectangle((it.x, it.y), it.w, it.h, fill=False, edgecolor=_INK, linewidth=0.8)
                )
            else:
                ax.add_patch(
                    Rectangle((it.x, it.y), it.w, it.h, facecolor=it.fill, edgecolor="none")
                )
        elif isinstance(it, Label):
            ax.text(
                it.x,
                it.y,
                it.text,
                fontsize=it.size,
                color=it.colour,
                gid=None if it.colour == _INK else KEEP_INK,  # ink chosen for a block's colour
                ha={"start": "left", "middle": "center", "end": "right"}[it.anchor],
                va="baseline",
                fontweight="bold" if it.bold else "normal",
            )
        else:
            ax.annotate(
                "",
                xy=(it.x1, it.y1),
                xytext=(it.x0, it.y0),
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": it.colour,
                    "lw": it.width,
                    "shrinkA": 0,
                    "shrinkB": 0,
                    "mutation_scale": 8,
                },
            )
    return ax


def _f(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def layer_diagram_svg(
    d_model: int, num_heads: int, n: int | None = None, max_width: int | None = None
) -> str:
    """The same diagram as inline SVG (no scripts, no external fonts): what the shape explorer
    shows, drawn from :func:`layer_diagram_layout`.

    ``max_width`` (CSS pixels) defaults to the layout's own size at 96 pixels per inch, where
    every label is at least 9 pt; the picture shrinks to fit a narrower container."""
    import html as _html

    lay = layer_diagram_layout(d_model, num_heads, n)
    if max_width is None:
        max_width = round(lay.width * _INCH_PER_UNIT * 96)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_f(lay.width)} {_f(lay.height)}" '
        f'style="width:100%;max-width:{max_width}px;height:auto" role="img" '
        f'aria-label="{_html.escape(lay.title, quote=True)}" '
        f'font-family="DejaVu Sans, Verdana, sans-serif">'
        f"<title>{_html.escape(lay.title)}</title>"
    ]
    for it in lay.items:
        if isinstance(it, Box):
            if it.outline:
                parts.append(
                    f'<rect x="{_f(it.x)}" y="{_f(it.y)}" width="{_f(it.w)}" height="{_f(it.h)}" '
                    f'fill="none" stroke="{_INK}" stroke-width="0.12"/>'
                )
            else:
                head = "" if it.head is None else f' data-head="{it.head}"'
                parts.append(
                    f'<rect x="{_f(it.x)}" y="{_f(it.y)}" width="{_f(it.w)}" height="{_f(it.h)}" '
                    f'fill="{it.fill}" data-role="{it.role}"{head}/>'
                )
        elif isinstance(it, Label):
            weight = ' font-weight="bold"' if it.bold else ""
            parts.append(
                f'<text x="{_f(it.x)}" y="{_f(it.y)}" font-size="{_f(it.size / _PT_PER_UNIT)}" '
                f'text-anchor="{it.anchor}" fill="{it.colour}"{weight}>{_html.escape(it.text)}</text>'
            )
        else:
            dx, dy = it.x1 - it.x0, it.y1 - it.y0
            length = (dx * dx + dy * dy) ** 0.5 or 1.0
            ux, uy = dx / length, dy / length
            head_len, half = 1.1, 0.45
            bx, by = it.x1 - ux * head_len, it.y1 - uy * head_len
            width = it.width / _PT_PER_UNIT
            parts.append(
                f'<line x1="{_f(it.x0)}" y1="{_f(it.y0)}" x2="{_f(bx)}" y2="{_f(by)}" '
                f'stroke="{it.colour}" stroke-width="{_f(width)}"/>'
                f'<polygon points="{_f(it.x1)},{_f(it.y1)} {_f(bx - uy * half)},{_f(by + ux * half)} '
                f'{_f(bx + uy * half)},{_f(by - ux * half)}" fill="{it.colour}"/>'
            )
    parts.append("</svg>")
    return "".join(parts)


if "matplotlib" in sys.modules:  # a lesson that imported matplotlib first: its figures too
    use_course_style()
