"""What every explorer's HTML shares: number formats, colours that read in any theme, boxes.

The pictures are plain HTML with inline styles (no stylesheet, no script), so they look the same
in JupyterLab (light or dark), on the course website (light or dark), on GitHub and in an HTML
export. Three rules keep their text readable everywhere (WCAG AA, checked in tests/test_site.py
with axe-core):

- text takes the page's own colour (nothing sets a text colour on the page's background);
  secondary text is that colour at reduced opacity (:data:`MUTED`), never a fixed grey;
- anything drawn with fixed colours (heatmap cells, the layer diagram, the error box) brings its
  own background, and the text on it is black or white, whichever contrasts more;
- code inside a picture keeps the page's text colour (themes give ``<code>`` a tinted colour
  that suits their own background only).
"""

from __future__ import annotations

import html
from functools import lru_cache

from ..plots import CMAP

# Secondary text: the page's own text colour, lighter. On a white page (#222 text) this is
# about 7:1, on a dark one (#ddd text on #121212) about 9:1: both above WCAG AA's 4.5:1.
MUTED = "opacity:0.82"
SMALL = "font-size:12px"
# Code inside a picture: monospace in the page's text colour, on no background of its own.
CODE = "color:inherit;background:none;border:none;padding:0;font-size:0.92em;white-space:normal"
# Two ends of cividis, for bar charts: colour-blind safe and distinct in greyscale; the bars get
# an outline, so the dark end still shows on a dark page.
DARK, LIGHT = "#00224e", "#fee838"
BAR_OUTLINE = "#8a8a8a"
# The error box brings its own background: dark red on pale red, 10:1.
ERROR_BORDER, ERROR_BG, ERROR_FG = "#b00020", "#fdecea", "#5f0010"
BOX = '<div style="line-height:1.45">'


# ---------------------------------------------------------------------------------------------
# Numbers and words
# ---------------------------------------------------------------------------------------------


def fmt_int(n) -> str:
    """``2362368 -> '2,362,368'``."""
    return f"{int(n):,}"


def fmt_si(x) -> str:
    """Short decimal form for big counts: ``4831838208 -> '4.83 G'``; small numbers unchanged."""
    x = float(x)
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}"
    return f"{x:g}"


def fmt_count(n, unit="") -> str:
    """Exact count, with a short form when the number is long: ``'4,831,838,208 (4.83 G)'``."""
    text = fmt_int(n) + (f" {unit}" if unit else "")
    return text + (f" ({fmt_si(n)}{unit})" if n >= 10_000 else "")


def fmt_shape(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def divisors(n: int, limit: int) -> list[int]:
    return [k for k in range(1, min(n, limit) + 1) if n % k == 0]


def join_or(items, word="or") -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} " + items[-1]


def join_and(items) -> str:
    return join_or(items, "and")


def esc(text) -> str:
    return html.escape(str(text), quote=True)


# ---------------------------------------------------------------------------------------------
# Colours
# ---------------------------------------------------------------------------------------------


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def relative_luminance(rgb) -> float:
    """WCAG 2 relative luminance of an (r, g, b) colour with channels in 0..1."""
    r, g, b = (_linear(float(c)) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(rgb_a, rgb_b) -> float:
    """WCAG 2 contrast ratio between two colours (1 to 21)."""
    la, lb = sorted((relative_luminance(rgb_a), relative_luminance(rgb_b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_on(rgb) -> str:
    """Black or white, whichever contrasts more with the background ``rgb`` (channels 0..1).

    Every colour has at least 4.58:1 with one of them, so the text always meets WCAG AA.

    >>> text_on((1.0, 1.0, 1.0)), text_on((0.0, 0.13, 0.31))
    ('#000000', '#ffffff')
    """
    black = contrast_ratio(rgb, (0, 0, 0))
    white = contrast_ratio(rgb, (1, 1, 1))
    return "#000000" if black >= white else "#ffffff"


def hex_rgb(colour: str) -> tuple[float, float, float]:
    c = colour.lstrip("#")
    return tuple(int(c[i : i + 2], 16) / 255 for i in (0, 2, 4))


@lru_cache(maxsize=1)
def _cividis_lut() -> tuple[tuple[str, str], ...]:
    """256 (background, text) colour pairs for weights 0..1 on the cividis scale."""
    from matplotlib import colormaps

    cmap = colormaps[CMAP]
    out = []
    for i in range(256):
        r, g, b, _ = cmap(i / 255)
        bg = f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
        out.append((bg, text_on(hex_rgb(bg))))
    return tuple(out)


def weight_colour(w: float) -> tuple[str, str]:
    """(background, text) for an attention weight in 0..1 on the cividis scale."""
    return _cividis_lut()[min(255, max(0, int(round(float(w) * 255))))]


# ---------------------------------------------------------------------------------------------
# Pieces every explorer uses
# ---------------------------------------------------------------------------------------------


def code(text) -> str:
    return f'<code style="{CODE}">{esc(text)}</code>'


def muted(text_html: str, extra: str = "") -> str:
    """Secondary text (already HTML): the page's colour, lighter."""
    return f'<span style="{MUTED}{";" + extra if extra else ""}">{text_html}</span>'


def render_message_html(message: str) -> str:
    """What is wrong with the sliders and what to change, in a box with its own colours."""
    if not message:
        return ""
    return (
        f'<div class="mha-message" role="status" style="border-left:4px solid {ERROR_BORDER};'
        f"padding:6px 10px;margin:4px 0;line-height:1.45;background-color:{ERROR_BG};"
        f'color:{ERROR_FG}">{esc(message)}</div>'
    )


def settings_line(text: str) -> str:
    """The first line of a picture: which settings it shows."""
    return f'<div style="{MUTED};line-height:1.45">{esc(text)}</div>'


def table_style(font: str = "font-size:13px") -> str:
    # line-height set here: a widget's HTML box would otherwise give each row 28 px.
    return f"border-collapse:collapse;border:none;margin:2px 0;{font};line-height:1.3;width:auto"


def cell(align: str = "right", pad: str = "1px 6px") -> str:
    """Inline style of a table cell: no borders, no background of its own (the theme's rows)."""
    return (
        f"padding:{pad};border:none;text-align:{align};vertical-align:top;background:none;"
        f"line-height:1.3"
    )


def flex_row(*children: str, gap: str = "8px 24px", align: str = "flex-start") -> str:
    """Side by side when there is room, one under the other when not (a phone, a narrow pane)."""
    return (
        f'<div style="display:flex;flex-wrap:wrap;gap:{gap};align-items:{align}">'
        + "".join(children)
        + "</div>"
    )
