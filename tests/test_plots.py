"""The heatmap helpers label what a learner needs to read them."""

import matplotlib
import matplotlib.colors
import matplotlib.text

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mha_helpers import plot_attention, plot_heads  # noqa: E402


def _weights(h, n):
    return np.random.default_rng(0).dirichlet(np.ones(n), size=(h, n))


def test_plot_attention_labels_rows_as_queries_and_columns_as_keys():
    ax = plot_attention(_weights(1, 3)[0], ["a", "b", "c"], title="one head")
    assert ax.get_title() == "one head"
    assert ax.get_ylabel().startswith("query") and ax.get_xlabel().startswith("key")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert ax.images[0].get_cmap().name == "cividis" and ax.images[0].get_clim() == (0.0, 1.0)
    plt.close("all")


def test_plot_attention_refuses_labels_that_do_not_match_the_matrix():
    with pytest.raises(ValueError, match="one label per row and one per column"):
        plot_attention(_weights(1, 3)[0], ["a", "b"])
    with pytest.raises(ValueError, match=r"expected \(n_q, n_k\)"):
        plot_attention(_weights(2, 3), ["a", "b", "c"])


def test_plot_heads_draws_one_titled_heatmap_per_head_and_one_colorbar():
    fig = plot_heads(_weights(5, 4), list("wxyz"), title="five heads")
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in heatmaps] == [f"head {i}" for i in range(5)]
    assert fig._suptitle.get_text() == "five heads"
    colorbars = [ax for ax in fig.axes if ax.get_ylabel() == "weight"]
    assert len(colorbars) == 1
    # Redrawing into the same figure replaces the heatmaps instead of adding more.
    plot_heads(_weights(2, 4), list("wxyz"), figure=fig)
    assert len([ax for ax in fig.axes if ax.images]) == 2
    plt.close("all")


# ---------------------------------------------------------------------------------------------
# The block diagram of the layer (lessons 02 and 03, and the shape explorer)
# ---------------------------------------------------------------------------------------------

import re  # noqa: E402

from mha_helpers.plots import (  # noqa: E402
    HEAD_COLOURS,
    MAX_HEADS_DRAWN,
    Arrow,
    Box,
    Label,
    head_colour,
    layer_diagram_layout,
    layer_diagram_svg,
    plot_layer_diagram,
)

ROLES = ("w_q", "w_k", "w_v", "q", "k", "v", "pattern", "head_out", "concat", "w_o", "write")


@pytest.mark.parametrize("d_model, h", [(8, 2), (12, 3), (8, 4), (768, 12), (1024, 32), (8, 1)])
def test_each_head_has_one_colour_in_every_block_it_owns(d_model, h):
    lay = layer_diagram_layout(d_model, h)
    d_head = d_model // h
    for i in range(h):
        fills = {b.fill for b in lay.boxes() if b.head == i and b.role in ROLES}
        assert fills == {head_colour(i)}, i
    for role in ("w_q", "w_k", "w_v", "concat", "w_o"):
        blocks = sorted((b for b in lay.boxes(role) if b.head is not None), key=lambda b: b.head)
        assert [b.head for b in blocks] == list(range(h)), role
        frame = next(b for b in lay.boxes(role) if b.outline)
        # column blocks (rows for W_O) tile the matrix in head order, each d_head / d_model of it
        if role == "w_o":
            edges = [(b.y - frame.y) / frame.h for b in blocks] + [1.0]
            sizes = [b.h / frame.h for b in blocks]
            assert all(abs(b.w - frame.w) < 1e-9 for b in blocks)
        else:
            edges = [(b.x - frame.x) / frame.w for b in blocks] + [1.0]
            sizes = [b.w / frame.w for b in blocks]
            assert all(abs(b.h - frame.h) < 1e-9 for b in blocks)
        np.testing.assert_allclose(edges, np.arange(h + 1) * d_head / d_model, atol=1e-9)
        np.testing.assert_allclose(sizes, d_head / d_model)
    drawn = list(range(min(h, MAX_HEADS_DRAWN)))
    for role in ("q", "k", "v", "pattern", "head_out", "write"):  # one lane per drawn head
        assert [b.head for b in lay.boxes(role)] == drawn, role


@pytest.mark.parametrize("d_model, h", [(8, 2), (12, 3), (1024, 32)])
def test_the_diagram_draws_the_whole_data_flow_of_each_drawn_head(d_model, h):
    """x feeds each lane; Q_i and K_i feed the pattern; the pattern and V_i feed o_i; o_i goes
    to its block of the concatenation; W_O's row block i writes head i's term; the writes add
    up to the output."""
    lay = layer_diagram_layout(d_model, h)
    arrows = [it for it in lay.items if isinstance(it, Arrow)]

    def box(role, head=None):
        return next(b for b in lay.boxes(role) if b.head == head and not b.outline)

    def enters(b):  # arrows whose head lies on the box's edge (0.5 units of slack)
        return [
            a for a in arrows
            if b.x - 0.5 <= a.x1 <= b.x + b.w + 0.5 and b.y - 0.5 <= a.y1 <= b.y + b.h + 0.5
        ]  # fmt: skip

    def leaves(b):
        return [
            a for a in arrows
            if b.x - 0.5 <= a.x0 <= b.x + b.w + 0.5 and b.y - 0.5 <= a.y0 <= b.y + b.h + 0.5
        ]  # fmt: skip

    assert box("x") and box("output")
    for i in range(min(h, MAX_HEADS_DRAWN)):
        for role in ("q", "k", "v"):
            assert enters(box(role, i)), (role, i)  # from x
        assert len(enters(box("pattern", i))) == 2  # from Q_i and K_i
        assert len(enters(box("head_out", i))) == 2  # from the pattern and from V_i
        assert leaves(box("head_out", i))  # into the concatenation
        assert enters(box("write", i))  # from W_O's row block i
        concat = box("concat", i)
        assert any(concat.x <= a.x1 <= concat.x + concat.w for a in leaves(box("head_out", i)))
    texts = [it.text for it in lay.items if isinstance(it, Label)]
    assert any("sum of the writes" in t for t in texts)


@pytest.mark.parametrize("d_model, h, n", [(8, 2, 3), (1024, 32, None)])
def test_every_label_is_at_least_9_pt_at_the_default_size(d_model, h, n):
    lay = layer_diagram_layout(d_model, h, n)
    assert min(it.size for it in lay.items if isinstance(it, Label)) >= 9
    ax = plot_layer_diagram(d_model, h, n)
    assert min(t.get_fontsize() for t in ax.texts) >= 9
    width_in = ax.figure.get_size_inches()[0]
    assert abs(width_in - lay.width * 0.08) < 1e-9  # drawn at the layout's own size
    plt.close("all")
    svg = layer_diagram_svg(d_model, h, n)
    px_per_unit = float(svg.split("max-width:")[1].split("px")[0]) / lay.width
    sizes = [float(v) for v in re.findall(r'font-size="([0-9.]+)"', svg)]
    assert min(sizes) * px_per_unit * 72 / 96 >= 9 - 0.05  # CSS px -> pt at the default width


def test_neighbouring_heads_never_share_a_colour_and_nine_heads_are_all_distinct():
    assert len(set(HEAD_COLOURS)) == len(HEAD_COLOURS) == 9
    assert all(head_colour(i) != head_colour(i + 1) for i in range(40))


def test_the_legend_names_each_heads_columns_and_rows_from_d_model_and_h():
    texts = [it.text for it in layer_diagram_layout(8, 2, n=3).items if hasattr(it, "text")]
    assert any(
        "head 0: columns 0\u20133 of W_Q, W_K and W_V" in t and "rows 0\u20133 of W_O" in t
        for t in texts
    )
    assert any("head 1: columns 4\u20137" in t for t in texts)
    assert any("d_model = 8, h = 2, d_head = 4" in t for t in texts)
    assert any("(3, 3)" in t for t in texts)  # n = 3 written into the pattern shape
    many = [it.text for it in layer_diagram_layout(1024, 32).items if hasattr(it, "text")]
    assert any("heads 0\u20133 of 32 drawn" in t for t in many)
    assert any("head 31: columns 992\u20131023" in t for t in many)


def test_an_impossible_split_raises_a_teaching_error():
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        layer_diagram_layout(8, 3)


def test_matplotlib_and_svg_draw_the_same_layout():
    lay = layer_diagram_layout(12, 3, n=4)
    ax = plot_layer_diagram(12, 3, n=4)
    filled = [p for p in ax.patches if p.get_fill()]
    assert len(filled) == len([b for b in lay.items if isinstance(b, Box) and not b.outline])
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in filled}
    assert {head_colour(i).lower() for i in range(3)} <= colours
    assert lay.title in [t.get_text() for t in ax.texts]
    plt.close("all")
    svg = layer_diagram_svg(12, 3, n=4)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<rect") == len(lay.boxes())
    for i in range(3):
        assert svg.count(f'data-head="{i}"') == len(
            [b for b in lay.boxes() if b.head == i and not b.outline]
        )
    assert svg == layer_diagram_svg(12, 3, n=4)  # deterministic (strict nbval compares it)
    assert "href" not in svg and "<script" not in svg and "url(" not in svg  # nothing fetched


def test_plot_layer_diagram_draws_into_given_axes_without_warnings():
    import warnings

    fig, ax = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = plot_layer_diagram(8, 2, ax=ax)
        fig.canvas.draw()
    assert out is ax and not ax.axison
    plt.close("all")


def test_heatmap_numbers_take_the_higher_contrast_ink_on_every_cell():
    """White on the mid-grey cividis cells (weights about 0.4-0.5) was hard to read; each number
    now gets black or white, whichever contrasts more, which is at least 4.5:1 everywhere."""
    from mha_helpers.plots import _relative_luminance

    weights = np.linspace(0, 1, 16).reshape(4, 4)
    ax = plot_attention(weights, list("abcd"))
    cmap = plt.get_cmap("cividis")
    for text in ax.texts:
        w = float(text.get_text())
        bg = _relative_luminance(cmap(w))
        ink = _relative_luminance(matplotlib.colors.to_rgb(text.get_color()))
        hi, lo = max(bg, ink), min(bg, ink)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, (w, text.get_color())
    plt.close("all")


def _texts(fig):
    return [
        t for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip() and t.get_visible()
    ]


def test_the_course_style_keeps_figure_text_readable_where_figures_are_shown():
    """Issue 35: figure text at least 9 px as displayed. The widest lesson figures are 14 in at
    100 dpi, shown about 910 px wide in the website's column at 1280 px (tests/test_site.py
    measures that scale): every text the helpers draw is at least SMALLEST_TEXT_PT there."""
    from mha_helpers import plots

    fig = plot_heads(_weights(3, 6), list("abcdef"))
    ax = plot_attention(_weights(1, 6)[0], list("abcdef"))
    for figure in (fig, ax.figure):
        sizes = [t.get_fontsize() for t in _texts(figure)]
        assert sizes and min(sizes) >= plots.SMALLEST_TEXT_PT, sorted(sizes)[:5]
    assert plots.SMALLEST_TEXT_PT / 72 * (910 / 14) >= 9.0  # px as displayed
    assert matplotlib.rcParams["xtick.labelsize"] == plots.COURSE_STYLE["xtick.labelsize"]
    # Figures keep an opaque white background (the site shows them undimmed in its dark theme).
    assert matplotlib.colors.to_hex(fig.get_facecolor()) == "#ffffff"
    plt.close("all")


# ---------------------------------------------------------------------------------------------
# How a figure is shown: a light and a dark picture of each panel (mha_helpers/figures.py)
# ---------------------------------------------------------------------------------------------

import base64  # noqa: E402
import io  # noqa: E402

from mha_helpers import figures  # noqa: E402
from mha_helpers.plots import ink_for  # noqa: E402


def _pictures(html):
    found = re.findall(r'<img class="mha-(light|dark)" alt="([^"]*)"( style="display:none")? '
                       r'src="data:image/png;base64,([^"]+)">', html)  # fmt: skip
    return [(v, alt, bool(hidden), base64.b64decode(d)) for v, alt, hidden, d in found]


def _mean_rgb(png):
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float).mean() / 255


def test_a_three_head_figure_becomes_three_panels_each_light_and_dark():
    fig, axes = plt.subplots(1, 3, figsize=(12, 4), layout="constrained")
    for i, ax in enumerate(axes):
        plot_attention(_weights(1, 4)[0], list("wxyz"), ax=ax, title=f"head {i}", colorbar=i == 2)
    fig.suptitle("three heads")
    before = [t.get_color() for t in fig.findobj(matplotlib.text.Text)]
    html = fig._repr_html_()  # what IPython shows (plots.use_course_style sets it up)
    pictures = _pictures(html)
    assert [(v, hidden) for v, _, hidden, _ in pictures] == [("light", False), ("dark", True)] * 3
    assert "<strong>three heads</strong>" in html  # the suptitle, as text above the panels
    assert all("panel" in alt and "head" in alt for _, alt, _, _ in pictures)
    light, dark = _mean_rgb(pictures[0][3]), _mean_rgb(pictures[1][3])
    assert light > 0.35 and dark < light - 0.15, (light, dark)
    # The figure itself is left as it was drawn: same colours, so the PNG beside it is light.
    assert [t.get_color() for t in fig.findobj(matplotlib.text.Text)] == before
    assert matplotlib.colors.to_hex(fig.get_facecolor()) == "#ffffff"
    plt.close("all")


def test_the_dark_variant_turns_black_text_light_and_keeps_the_ink_chosen_for_a_cell():
    fig, ax = plt.subplots()
    plot_attention(np.array([[0.9, 0.1], [0.1, 0.9]]), ["a", "b"], ax=ax, annotate=True)
    cells = [t for t in ax.texts if t.get_gid() == figures.KEEP_INK]
    assert len(cells) == 4
    with figures._Recolour(fig):
        assert matplotlib.colors.to_hex(fig.get_facecolor()) == figures.DARK_BACKGROUND
        title = matplotlib.colors.to_rgb(ax.title.get_color())
        assert min(title) > 0.8  # black title -> light
        assert [t.get_color() for t in cells] == [
            ink_for(plt.get_cmap("cividis")(w)) for w in (0.9, 0.1, 0.1, 0.9)
        ]
    assert matplotlib.colors.to_hex(fig.get_facecolor()) == "#ffffff"
    plt.close("all")


def test_a_one_plot_figure_is_one_panel_and_the_site_gets_files_with_the_cells_alt():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0], "k-")
    ax.set_title("a line")
    html = figures.figure_html(fig)
    assert len(_pictures(html)) == 2
    written = {}

    def write(png, variant):
        written[variant] = png
        return f"../_images/mha/x-{variant}.png"

    site = figures.site_figure_html(html, "A falling black line on a white ground.", write)
    assert set(written) == {"light", "dark"}
    assert site.count('loading="lazy"') == 2 and "base64" not in site and "<style>" not in site
    assert site.count('alt="A falling black line on a white ground."') == 2
    plt.close("all")
