"""Attention heatmaps with the course's conventions.

Rows are queries (the token doing the looking), columns are keys (the token looked at), both
labelled with the tokens; the colormap is ``cividis`` (perceptually uniform and colour-blind
safe) on a fixed 0..1 scale so heads can be compared by eye.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "plot_attention",
    "plot_heads",
    "plot_layer_diagram",
    "layer_diagram_layout",
    "layer_diagram_svg",
    "head_colour",
    "HEAD_COLOURS",
    "CMAP",
]

CMAP = "cividis"


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
    ``annotate`` writes each weight in its cell (default: when the matrix is at most 8 x 8).
    """
    import matplotlib.pyplot as plt

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
        for i in range(weights.shape[0]):
            for j in range(weights.shape[1]):
                w = weights[i, j]
                ax.text(
                    j,
                    i,
                    f"{w:.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="black" if w > 0.6 else "white",
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
MAX_PATTERNS_DRAWN = 8


def head_colour(i: int) -> str:
    """The colour of head ``i`` in every course diagram (colour-blind safe; repeats after 9)."""
    return HEAD_COLOURS[i % len(HEAD_COLOURS)]


def _text_colour(fill: str) -> str:
    r, g, b = (int(fill[k : k + 2], 16) / 255 for k in (1, 3, 5))
    return "#000000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "#ffffff"


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


def _span(a: int, b: int) -> str:
    return f"{a}" if a == b else f"{a}\u2013{b}"


def layer_diagram_layout(d_model: int, num_heads: int, n: int | None = None) -> DiagramLayout:
    """Where every block of the multi-head attention diagram goes, for ``d_model`` and ``h``.

    Reading left to right: the column blocks of W_Q, W_K, W_V that each head owns; one
    attention pattern per head (at most 8 drawn); the concatenation, where head i's output
    fills block i; the row blocks of W_O, in the same colours; the output. Head i has the same
    colour everywhere (:func:`head_colour`). ``n`` (optional) writes the number of tokens into
    the shapes.

    >>> lay = layer_diagram_layout(8, 2)
    >>> [(b.role, b.head) for b in lay.boxes("w_o")]  # one row block per head, then the outline
    [('w_o', 0), ('w_o', 1), ('w_o', None)]
    >>> len({b.fill for b in lay.items if isinstance(b, Box) and b.head == 1})
    1
    """
    from .shapes import head_width

    d_model = int(d_model)
    h = int(num_heads)
    d_head = head_width(d_model, h)
    nn = "n" if n is None else str(int(n))
    items: list = []
    blocks = _blocks(d_model, h)

    title = f"One multi-head attention layer: d_model = {d_model}, h = {h}, d_head = {d_head}"
    items.append(Label(56, 2.6, title, size=10, bold=True))

    # Column headers
    top = 13.0
    for x, text in (
        (15, "1. project"),
        (40, "2. attend, per head"),
        (70, "3. concatenate"),
        (99, "4. project with W_O"),
    ):
        items.append(Label(x, 8.4, text, size=8.5, bold=True))

    # 1. W_Q, W_K, W_V: column blocks
    side, x0 = 14.0, 8.0
    for k, (name, role) in enumerate((("W_Q", "w_q"), ("W_K", "w_k"), ("W_V", "w_v"))):
        y0 = top + k * (side + 4.0)
        for i, (a, b) in enumerate(blocks):
            items.append(
                Box(
                    x0 + side * a / d_model,
                    y0,
                    side * (b - a + 1) / d_model,
                    side,
                    head_colour(i),
                    role,
                    i,
                )
            )
        items.append(Box(x0, y0, side, side, "none", role, None, outline=True))
        items.append(Label(x0 - 1.0, y0 + side / 2 + 0.5, name, size=9, anchor="end", bold=True))
    bottom = top + 3 * side + 8.0  # 63
    items.append(Label(x0 + side / 2, bottom + 2.6, f"each ({d_model}, {d_model}):", size=7))
    items.append(Label(x0 + side / 2, bottom + 4.8, "head i owns columns", size=7))
    items.append(
        Label(x0 + side / 2, bottom + 7.0, "i\u00b7d_head to (i+1)\u00b7d_head \u2212 1", size=7)
    )

    # 2. one pattern per head
    shown = min(h, MAX_PATTERNS_DRAWN)
    band = bottom - top
    s = min(8.0, (band - (shown - 1) * 2.0) / shown)
    gap = 2.0 if shown > 1 else 0.0
    stack = shown * s + (shown - 1) * gap
    px = 36.0
    py0 = top + (band - stack) / 2
    centres = []
    items.append(Arrow(x0 + side + 1.0, top + band / 2, px - 1.5, top + band / 2))
    for i in range(shown):
        y = py0 + i * (s + gap)
        fill = head_colour(i)
        items.append(Box(px, y, s, s, fill, "pattern", i))
        items.append(
            Label(
                px + s / 2,
                y + s / 2 + 0.45,
                f"head {i}" if s >= 6.5 else str(i),
                size=7 if s >= 6.5 else 6,
                colour=_text_colour(fill),
            )
        )
        centres.append((px + s, y + s / 2))
    if shown < h:
        items.append(
            Label(px + s / 2, bottom + 2.6, f"(heads 0\u2013{shown - 1} of {h} drawn)", size=7)
        )
    items.append(Label(px + 4, bottom + 4.8, f"softmax(Q_i K_i\u1d40 / \u221a{d_head})", size=7))
    items.append(Label(px + 4, bottom + 7.0, f"shape ({nn}, {nn}) each", size=7))

    # 3. concatenation: head i's output (n, d_head) fills block i
    cx, cw, ch = 58.0, 24.0, 6.0
    cy = top + band / 2 - ch / 2
    for i, (a, b) in enumerate(blocks):
        items.append(
            Box(
                cx + cw * a / d_model,
                cy,
                cw * (b - a + 1) / d_model,
                ch,
                head_colour(i),
                "concat",
                i,
            )
        )
    items.append(Box(cx, cy, cw, ch, "none", "concat", None, outline=True))
    for i, (xs, ys) in enumerate(centres):
        a, b = blocks[i]
        xe = cx + cw * (a + b + 1) / 2 / d_model
        ye = cy - 0.4 if ys < cy else cy + ch + 0.4
        items.append(Arrow(xs + 0.6, ys, xe, ye, colour=head_colour(i), width=1.0))
    # (all labels above the bar: the arrows arrive from the left, above and below it)
    items.append(
        Label(cx + cw / 2, top + 1.5, f"concat: ({nn}, h\u00b7d_head) = ({nn}, {d_model})", size=7)
    )
    items.append(Label(cx + cw / 2, top + 4.5, "head i's output,", size=7))
    items.append(
        Label(cx + cw / 2, top + 6.7, f"pattern_i \u00b7 V_i of shape ({nn}, {d_head}),", size=7)
    )
    items.append(Label(cx + cw / 2, top + 8.9, "fills block i", size=7))

    # 4. W_O: row blocks, then the output
    ox, ow = 90.0, 18.0
    oy = top + band / 2 - ow / 2 - 6.0
    items.append(Label(cx + cw + 4.0, cy + ch / 2 + 0.6, "@", size=11, bold=True))
    for i, (a, b) in enumerate(blocks):
        items.append(
            Box(ox, oy + ow * a / d_model, ow, ow * (b - a + 1) / d_model, head_colour(i), "w_o", i)
        )
    items.append(Box(ox, oy, ow, ow, "none", "w_o", None, outline=True))
    items.append(Label(ox + ow / 2, oy - 1.2, f"W_O ({d_model}, {d_model}): head i's rows", size=7))
    out_y = oy + ow + 7.0
    items.append(Arrow(ox + ow / 2, oy + ow + 0.6, ox + ow / 2, out_y - 0.6))
    items.append(Box(ox, out_y, ow, ch, _GREY, "output", None))
    items.append(Box(ox, out_y, ow, ch, "none", "output", None, outline=True))
    items.append(Label(ox + ow / 2, out_y + ch / 2 + 0.6, f"output ({nn}, {d_model})", size=7))
    items.append(Label(ox + ow / 2, out_y + ch + 2.8, "= sum over heads of", size=7))
    items.append(Label(ox + ow / 2, out_y + ch + 5.0, "block i @ rows i of W_O", size=7))

    # Legend: what each colour means, in numbers
    y = bottom + 11.5
    rows = list(range(h)) if h <= 4 else [0, 1, None, h - 1]
    for i in rows:
        if i is None:
            items.append(
                Label(
                    8.0,
                    y + 0.6,
                    "\u2026 (one colour per head; the nine colours repeat from head 9 on)"
                    if h > 9
                    else "\u2026",
                    size=7.5,
                    anchor="start",
                )
            )
        else:
            a, b = blocks[i]
            items.append(Box(8.0, y - 1.2, 2.4, 2.4, head_colour(i), "legend", i))
            sp, pl = _span(a, b), "" if a == b else "s"
            items.append(
                Label(
                    11.5,
                    y + 0.6,
                    f"head {i}: column{pl} {sp} of W_Q, W_K and W_V "
                    f"\u2192 its own pattern \u2192 feature{pl} {sp} of the concatenation "
                    f"\u2192 row{pl} {sp} of W_O",
                    size=7.5,
                    anchor="start",
                )
            )
        y += 3.2
    return DiagramLayout(d_model, h, d_head, 112.0, y + 0.8, tuple(items), title)


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
    d_model: int, num_heads: int, n: int | None = None, max_width: int = 820
) -> str:
    """The same diagram as inline SVG (no scripts, no external fonts): what the shape explorer
    shows, drawn from :func:`layer_diagram_layout`."""
    import html as _html

    lay = layer_diagram_layout(d_model, num_heads, n)
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
