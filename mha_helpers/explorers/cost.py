"""The cost explorer: FLOPs and parameters versus h (at a fixed d_model) and versus n.

:func:`cost_view` counts with :mod:`mha_helpers.cost` for every h that divides d_model and for a
range of sequence lengths; :func:`render_cost_html` shows the two tables side by side (one under
the other where the page is narrow), each row with a bar of the attention's share of the FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..cost import attention_flops, attention_params
from .common import (
    BAR_OUTLINE,
    BOX,
    DARK,
    LIGHT,
    MUTED,
    cell,
    divisors,
    flex_row,
    fmt_int,
    fmt_si,
    join_or,
    render_message_html,
    settings_line,
    table_style,
)
from .live import (
    Explorer,
    choice_slider,
    html_box,
    live_class,
    row,
)

# The sliders' stops, at most 11 each so a 90 px drag moves a few (issue 35; an IntSlider moved
# 29 steps of 64): real models' widths (GPT-2's 768 to 1,280, Llama's 4,096) and powers of two;
# head counts of real models, 5 included (768 / 5 is not whole: the not-divisible message).
COST_D_MODEL_CHOICES = (64, 128, 256, 512, 640, 768, 1024, 1280, 2048, 3072, 4096)
COST_H_CHOICES = (1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64)
COST_H_MAX = 64
COST_NS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


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
        fits = [k for k in divisors(d_model, COST_H_MAX) if k in COST_H_CHOICES]
        return CostView(
            d_model,
            h,
            n,
            False,
            f"d_model = {d_model} is not divisible by h = {h}: each head needs "
            f"d_model / h features. To fix it, set h to a divisor of {d_model} "
            f"({join_or(fits)}).",
        )
    by_heads = tuple(_cost_row(k, n, d_model, k) for k in divisors(d_model, COST_H_MAX))
    ns = sorted(set(COST_NS) | {n})
    by_tokens = tuple(_cost_row(m, m, d_model, h) for m in ns)
    return CostView(d_model, h, n, True, "", d_model // h, by_heads, by_tokens, 2 * d_model)


def _share_bar(a, b, width=56) -> str:
    """A bar split in proportion a : b (projections dark, attention light), with b's share. The
    bar has an outline, so its dark part shows on a dark page too."""
    wa = round(width * a / (a + b))
    return (
        f'<div style="display:flex;align-items:center;white-space:nowrap">'
        f'<div style="display:flex;width:{width}px;height:10px;outline:1px solid {BAR_OUTLINE}">'
        f'<div style="width:{wa}px;background-color:{DARK}"></div>'
        f'<div style="width:{width - wa}px;background-color:{LIGHT}"></div></div>'
        f'<div style="margin-left:6px">{b / (a + b):.0%}</div></div>'
    )


_COLUMNS = {
    # key: (header, value of a CostRow as text)
    "d_head": ("d_head", lambda r: str(r.d_head)),
    # Soft hyphens: in a 5.5em column an unbroken "parameters" spilled 8 px into its neighbour.
    "params": ("param\u00adeters", lambda r: fmt_int(r.params)),
    # A soft hyphen: in its 5.5em column the word may break ("projec-tions"); unbroken it ran
    # into the next header ("projectionsattention").
    "projections": ("FLOPs: projec\u00adtions", lambda r: fmt_si(r.projections)),
    "attention": ("attention", lambda r: fmt_si(r.attention)),
    "total": ("total", lambda r: fmt_si(r.total)),
    "total_flops": ("total FLOPs", lambda r: fmt_si(r.total)),
    "weights": ("weights h\u00b7n\u00b2", lambda r: fmt_si(r.score_entries)),
}


def _cost_table(rows, first: str, current: int, columns: tuple, caption: str) -> str:
    """One table; the row of the current setting in bold. Only the columns that change along it
    (the parameters do not change with n, nor d_head), so two tables fit side by side."""
    td, tl = cell("right", "1px 4px"), cell("left", "1px 4px")
    head = (
        f'<th scope="col" style="{td};vertical-align:bottom">{first}</th>'
        + "".join(
            f'<th scope="col" style="{td};vertical-align:bottom;max-width:5.5em">{_COLUMNS[c][0]}</th>'
            for c in columns
        )
        + f'<th scope="col" style="{tl};vertical-align:bottom;max-width:8em">attention share</th>'
    )
    body = []
    for r in rows:
        bold = ' style="font-weight:bold"' if r.label == current else ""
        body.append(
            f'<tr{bold}><td style="{td}">{fmt_int(r.label)}</td>'
            + "".join(
                f'<td style="{td};white-space:nowrap">{_COLUMNS[c][1](r)}</td>' for c in columns
            )
            + f'<td style="{tl}">{_share_bar(r.projections, r.attention)}</td></tr>'
        )
    return (
        f'<div style="flex:0 1 auto;max-width:100%">'
        f'<div style="font-weight:bold;max-width:30em;font-size:13px;line-height:1.35">{caption}</div>'
        f'<table style="{table_style()}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def render_cost_html(view: CostView, include_settings: bool = True) -> str:
    """The cost explorer's output as HTML: a table and bars versus h, then versus n."""
    parts = ['<div class="mha-cost-picture">']
    if include_settings:
        parts.append(
            settings_line(
                f"Cost explorer at d_model = {view.d_model}, h = {view.h}, n = {fmt_int(view.n)}."
            )
        )
    if not view.ok:
        parts.append(render_message_html(view.message))
        parts.append("</div>")
        return "".join(parts)
    legend = (
        f'<div style="font-size:11px;margin-top:4px"><span style="{MUTED}">Bars:</span> '
        f'<span style="display:inline-block;width:12px;height:10px;background-color:{DARK};'
        f'outline:1px solid {BAR_OUTLINE}"></span> <span style="{MUTED}">projections (Q, K, V, '
        f'W_O)</span> <span style="display:inline-block;width:12px;height:10px;'
        f'background-color:{LIGHT};outline:1px solid {BAR_OUTLINE}"></span> '
        f'<span style="{MUTED}">attention (scores and weighted sums). One multiply-add counts as '
        f"2 FLOPs.</span></div>"
    )
    by_h = _cost_table(
        view.by_heads,
        "h",
        view.h,
        ("d_head", "params", "total_flops", "weights"),
        f"Versus h, at d_model = {view.d_model} and n = {fmt_int(view.n)}: the parameters and "
        f"the matrix-product FLOPs do not change; the attention weights (h\u00b7n\u00b2) "
        f"and the softmax work on them do",
    )
    by_n = _cost_table(
        view.by_tokens,
        "n",
        view.n,
        ("projections", "attention", "total", "weights"),
        f"Versus n, at d_model = {view.d_model} and h = {view.h}: projections grow "
        f"like n, attention like n\u00b2 (they are equal at n = 2\u00b7d_model = "
        f"{fmt_int(view.crossover_n)})",
    )
    parts.append(BOX + flex_row(by_h, by_n, gap="8px 16px") + legend + "</div></div>")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# The widget: sliders d_model, h and n
# ---------------------------------------------------------------------------------------------


def cost_explorer(d_model: int = 768, h: int = 12, n: int = 1024):
    """Sliders ``d_model``, ``h`` and ``n``; shows FLOPs and parameters versus h at fixed
    d_model (constant) and versus n (projections linear, attention quadratic).

    The defaults are one GPT-2 small attention layer over 1024 tokens.
    """
    return _widget_class()(d_model=d_model, h=h, n=n)


@lru_cache(maxsize=None)
def _widget_class():
    """The widget class (made on first use: importing this module does not import ipywidgets)."""
    return live_class(CostExplorer)


class CostExplorer(Explorer):
    """d_model, h, n -> FLOPs and parameters versus h and versus n."""

    title = "Cost explorer"
    kind = "cost"

    def __init__(self, d_model=768, h=12, n=1024):
        self.summary = html_box()
        ns = sorted(set(COST_NS) | {int(n)})
        controls = {
            "d_model": choice_slider("d_model", d_model, COST_D_MODEL_CHOICES),
            "h": choice_slider("h", h, COST_H_CHOICES),
            # Labelled in the explorers' one number format: 16,384, as in the tables.
            "n": choice_slider("n", n, ns),
        }
        # The three sliders in one row above the two tables (they wrap in a narrow window).
        sliders = row(*controls.values())
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
