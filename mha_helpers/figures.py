"""How a lesson figure is shown: in the light and the dark theme, one image per panel.

A matplotlib figure displayed in a notebook (``plt.show()`` or a figure as a cell's result) gets,
besides its usual PNG, an HTML view (``Figure._repr_html_``, set by
:func:`mha_helpers.plots.use_course_style`):

* **one image per panel**: a figure with several plots (three heads side by side) is cut into
  one picture per plot, each with its colour bar, written inline one after another, so a narrow
  window puts them one under the other at full size instead of shrinking the whole row; the
  figure's overall title becomes a line of text above them;
* **a dark variant** of every picture, drawn from the same figure with a dark background and
  light text, lines and axes (colormaps, and the numbers written in heatmap cells, which already
  take the ink of their cell, are kept). The light picture is shown; the dark one carries
  ``style="display:none"`` and is swapped in by the theme's CSS: JupyterLab's dark theme
  (``body[data-jp-theme-light="false"]``) and VS Code's (``body.vscode-dark``) by a ``<style>``
  in the output, which JupyterLab keeps only for a trusted notebook (it strips ``<style>`` from
  an untrusted one and keeps the images, classes and inline styles), and by the course's
  custom CSS (``postBuild``) for every notebook; the website by ``_static/mha_figures.css``
  (:func:`site_figure_html` turns the view into files on the site). Anywhere else (Colab, a
  plain Jupyter, GitHub) the light picture alone is shown, never both.

The HTML holds the pictures as base64 PNG, which depends on the machine's fonts and libraries:
``tests/nbval_sanitize.cfg`` replaces it before nbval compares the HTML. Nothing else in it
depends on the machine (no sizes; the alt text comes from the figure's titles).
"""

from __future__ import annotations

import base64
import html as _html
import io
import math
import re
import struct

#: The dark variant's background: near the website's dark theme (#14181e) and JupyterLab's.
DARK_BACKGROUND = "#1b1e24"
_DARK_INK = 0.9  # the lightness black text and lines get
#: ``gid`` of a text whose colour was chosen for what it sits on (a heatmap cell, a coloured
#: block): the dark variant leaves it alone.
KEEP_INK = "mha-keep-ink"
FIGURE_CLASS = "mha-figure"
#: Inline in the HTML: swaps the pictures in JupyterLab's and VS Code's dark themes (trusted
#: notebooks; postBuild installs the same rules as JupyterLab custom CSS for all).
THEME_CSS = (
    'body[data-jp-theme-light="false"] .mha-figure img.mha-light,'
    "body.vscode-dark .mha-figure img.mha-light{display:none!important}"
    'body[data-jp-theme-light="false"] .mha-figure img.mha-dark,'
    "body.vscode-dark .mha-figure img.mha-dark{display:inline!important}"
)


# --- the dark variant -------------------------------------------------------------------------


def _neutral_dark(rgba):
    """The dark theme's version of a colour: a grey (black text, white background, grey grid)
    has its lightness turned over; a colour keeps its hue and lightness."""
    r, g, b, a = rgba
    if max(r, g, b) - min(r, g, b) > 0.12:  # a colour (a line of the colour cycle, a head)
        return (r, g, b, a)
    v = (r + g + b) / 3
    dark = tuple(int(DARK_BACKGROUND[k : k + 2], 16) / 255 for k in (1, 3, 5))
    if v > 0.97:  # white: the background
        return (*dark, a)
    w = dark[0] + (1.0 - v) * (_DARK_INK - dark[0])
    return (w, w, w, a)


class _Recolour:
    """Recolour a figure for the dark variant and put every colour back afterwards."""

    def __init__(self, fig):
        self.fig, self.undo = fig, []

    def _set(self, getter, setter, mapped):
        old = getter()
        self.undo.append((setter, old))
        setter(mapped(old))

    def __enter__(self):
        import matplotlib.colors as mcolors
        from matplotlib.collections import Collection
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        from matplotlib.text import Text

        def one(c):
            if isinstance(c, str) and c in ("none", "None"):
                return c
            return _neutral_dark(mcolors.to_rgba(c))

        def many(cs):
            import numpy as np

            arr = np.asarray(cs)
            if arr.ndim != 2 or not len(arr):
                return cs
            return [_neutral_dark(tuple(row)) for row in arr]

        fig = self.fig
        seen = set()  # a figure's patch is found twice (the figure, its rectangle): map it once
        for artist in fig.findobj(include_self=True):
            if id(artist) in seen or artist is fig.patch:
                continue
            seen.add(id(artist))
            if artist is fig:
                self._set(fig.get_facecolor, fig.set_facecolor, one)
            elif isinstance(artist, Text):
                if artist.get_gid() != KEEP_INK:
                    self._set(artist.get_color, artist.set_color, one)
                box = artist.get_bbox_patch()
                if box is not None:
                    self._set(box.get_facecolor, box.set_facecolor, one)
                    self._set(box.get_edgecolor, box.set_edgecolor, one)
            elif isinstance(artist, Line2D):
                self._set(artist.get_color, artist.set_color, one)
                self._set(artist.get_markerfacecolor, artist.set_markerfacecolor, one)
                self._set(artist.get_markeredgecolor, artist.set_markeredgecolor, one)
            elif isinstance(artist, Patch):
                self._set(artist.get_facecolor, artist.set_facecolor, one)
                self._set(artist.get_edgecolor, artist.set_edgecolor, one)
            elif isinstance(artist, Collection) and artist.get_array() is None:
                self._set(artist.get_facecolor, artist.set_facecolor, many)
                self._set(artist.get_edgecolor, artist.set_edgecolor, many)
        return self

    def __exit__(self, *exc):
        for setter, old in reversed(self.undo):
            setter(old)
        return False


# --- panels -----------------------------------------------------------------------------------


def _is_colorbar(ax) -> bool:
    return getattr(ax, "_colorbar", None) is not None


def _drawn(ax) -> bool:
    return ax.get_visible() and (
        ax.axison or bool(ax.images or ax.lines or ax.patches or ax.texts or ax.collections)
    )


def panels(fig) -> list[list]:
    """The figure's panels: each plot with the colour bars beside it. One panel (the whole
    figure) when it has one plot, or text or a legend of its own that a cut would split."""
    main = [ax for ax in fig.axes if _drawn(ax) and not _is_colorbar(ax)]
    sup = getattr(fig, "_suptitle", None)
    own_text = [t for t in fig.texts if t is not sup and t.get_text()]
    if len(main) < 2 or fig.legends or own_text:
        return [main or list(fig.axes)]
    groups = {id(ax): [ax] for ax in main}
    for cb in (ax for ax in fig.axes if _is_colorbar(ax) and _drawn(ax)):
        box = cb.get_position()

        def distance(ax, box=box):
            p = ax.get_position()
            overlap = min(p.y1, box.y1) - max(p.y0, box.y0)
            gap = box.x0 - p.x1 if box.x0 >= p.x1 - 1e-6 else 10 + abs(box.x0 - p.x1)
            return (overlap <= 0, gap)

        groups[id(min(main, key=distance))].append(cb)
    return [groups[id(ax)] for ax in main]


def _small_png(image) -> bytes:
    """A 256-colour PNG: about a third of matplotlib's RGBA PNG in bytes (two pictures of every
    figure are stored and the website sends one), with no visible change."""
    out = io.BytesIO()
    image.convert("RGB").quantize(colors=256).save(out, "PNG", optimize=True)
    return out.getvalue()


def _whole(fig) -> bytes:
    from PIL import Image  # matplotlib's own dependency

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", facecolor=fig.get_facecolor())
    buf.seek(0)
    return _small_png(Image.open(buf))


def _cut(fig, groups) -> list[bytes]:
    """Draw the figure once and cut the panels out of that very drawing, where they were
    measured (a layout engine may move them a little at each drawing, and saving with a crop
    box would lay the figure out again)."""
    from matplotlib.transforms import Bbox
    from PIL import Image

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [Bbox.union([ax.get_tightbbox(renderer) for ax in group]) for group in groups]
    full = Image.fromarray(__import__("numpy").asarray(fig.canvas.buffer_rgba()))
    height = full.height
    pad = 6
    return [
        _small_png(
            full.crop(
                (
                    max(0, int(b.x0) - pad),
                    max(0, int(height - b.y1) - pad),
                    min(full.width, int(b.x1 + 1) + pad),
                    min(height, int(height - b.y0 + 1) + pad),
                )
            )
        )
        for b in boxes
    ]


def render_panels(fig) -> tuple[list[tuple[bytes, bytes]], str]:
    """``([(light_png, dark_png) per panel], title)``: the title is the figure's suptitle when
    the figure is cut into panels (it becomes text above them), else ``""``."""
    groups = panels(fig)
    if len(groups) == 1:
        light = [_whole(fig)]
        with _Recolour(fig):
            dark = [_whole(fig)]
        return list(zip(light, dark)), ""
    sup = getattr(fig, "_suptitle", None)
    title = sup.get_text() if sup is not None else ""
    light = _cut(fig, groups)
    with _Recolour(fig):
        dark = _cut(fig, groups)
    fig.canvas.draw()  # as it was, for whatever draws it next
    return list(zip(light, dark)), title


def _alt_parts(fig, n: int) -> list[str]:
    titles = [ax.get_title() for ax in fig.axes if _drawn(ax) and not _is_colorbar(ax)]
    sup = getattr(fig, "_suptitle", None)
    head = sup.get_text() if sup is not None and sup.get_text() else ""
    if n == 1:
        named = "; ".join(t for t in [head, *titles] if t)
        return [f"Figure: {named}" if named else "Figure"]
    return [
        f"Figure{': ' + head if head else ''}, panel {i + 1} of {n}"
        + (f": {titles[i]}" if i < len(titles) and titles[i] else "")
        for i in range(n)
    ]


def figure_html(fig) -> str | None:
    """The HTML view of a figure (see the module's docstring); None if it cannot be drawn, so
    the PNG alone is shown."""
    try:
        pictures, title = render_panels(fig)
        alts = _alt_parts(fig, len(pictures))
    except Exception:  # never an error under a learner's figure: the PNG is still there
        return None
    parts = [f'<div class="{FIGURE_CLASS}"><style>{THEME_CSS}</style>']
    if title:
        parts.append(f'<div class="mha-figure-title"><strong>{_html.escape(title)}</strong></div>')
    parts.append('<div class="mha-panels">')
    for (light, dark), alt in zip(pictures, alts):
        a = _html.escape(alt, quote=True)
        parts.append(
            f'<span class="mha-panel"><img class="mha-light" alt="{a}" '
            f'src="data:image/png;base64,{base64.b64encode(light).decode()}">'
            f'<img class="mha-dark" alt="{a}" style="display:none" '
            f'src="data:image/png;base64,{base64.b64encode(dark).decode()}"></span>'
        )
    parts.append("</div></div>")
    return "".join(parts)


_registered = False


def register() -> None:
    """Give matplotlib figures their HTML view (idempotent).

    Through ``Figure._repr_html_``, which IPython asks for a figure's HTML when no printer is
    registered: a printer registered with IPython's formatter would not last, because the inline
    backend removes every figure printer when it starts (on a lesson's first plot). The
    original ``_repr_html_`` (an interactive backend's view, e.g. ipympl) still comes first."""
    global _registered
    if _registered:
        return
    from matplotlib.figure import Figure

    original = getattr(Figure, "_repr_html_", None)

    def _repr_html_(self):
        own = original(self) if original is not None else None
        return own if own is not None else figure_html(self)

    _repr_html_.__doc__ = "The course's HTML view: light and dark pictures, one per panel."
    Figure._repr_html_ = _repr_html_
    _registered = True


# --- the website ------------------------------------------------------------------------------

_IMG = re.compile(
    r'<img class="mha-(light|dark)" alt="([^"]*)"(?: style="display:none")? '
    r'src="data:image/png;base64,([A-Za-z0-9+/=]+)">'
)
_TITLE = re.compile(r'<div class="mha-figure-title"><strong>(.*?)</strong></div>')


def is_figure_html(text: str) -> bool:
    return text.startswith(f'<div class="{FIGURE_CLASS}">')


def _png_size(data: bytes) -> tuple[int, int]:
    return struct.unpack(">II", data[16:24])


def _min_width(width: int) -> int:
    """The narrowest a picture ``width`` pixels wide may be shown with its smallest text still
    9 px (the course style's smallest size at its dpi): on a phone a wide panel scrolls
    sideways inside its output rather than shrinking below that."""
    from .style import COURSE_STYLE, SMALLEST_TEXT_PT

    px = SMALLEST_TEXT_PT * COURSE_STYLE["figure.dpi"] / 72
    return min(width, math.ceil(width * 9.0 / px))


def site_figure_html(text: str, alt: str, write) -> str:
    """The website's version of a figure's HTML view: every picture a file of its own
    (``write(png_bytes, "light"|"dark") -> url``), loaded lazily so the hidden variant is never
    fetched, with the cell's alt text (``mystnb.image.alt``) on the first panel and, on the
    others, the panel's place in it; the theme CSS is the site's own (mha_figures.css)."""
    found = _IMG.findall(text)
    title = _TITLE.search(text)
    n = len(found) // 2
    parts = [f'<div class="{FIGURE_CLASS}">']
    if title:
        parts.append(f'<div class="mha-figure-title"><strong>{title.group(1)}</strong></div>')
    parts.append('<div class="mha-panels">')
    for k in range(n):
        parts.append('<span class="mha-panel">')
        for variant, own_alt, data in found[2 * k : 2 * k + 2]:
            png = base64.b64decode(data)
            w, h = _png_size(png)
            a = alt if k == 0 else f"Panel {k + 1} of {n} of the figure above ({own_alt})"
            parts.append(
                f'<img class="mha-{variant}" src="{write(png, variant)}" width="{w}" '
                f'height="{h}" loading="lazy" style="min-width:{_min_width(w)}px" '
                f'alt="{a if k else _html.escape(a, quote=True)}">'
            )
        parts.append("</span>")
    parts.append("</div></div>")
    return "".join(parts)
