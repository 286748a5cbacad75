"""The course's matplotlib style (used by :mod:`mha_helpers.plots` and
:mod:`mha_helpers.figures`; ``plots`` re-exports both names)."""

from __future__ import annotations

#: The course's matplotlib style. A lesson's widest figures (three heatmaps side by side, about
#: 14 inches at 100 dpi) are shown at about 65 % in the website's column at 1280 px and about
#: 90 % in JupyterLab at 1366 px; at matplotlib's default sizes their tick labels came out at
#: 6 px. With these sizes the smallest text (tick labels, 11 pt = 15 px in the PNG) is at least
#: 9 px as displayed in both (checked in tests/test_site.py). In a notebook each figure is also
#: drawn in a dark variant and cut into one picture per panel (mha_helpers/figures.py).
COURSE_STYLE = {
    "font.size": 12.0,
    "axes.titlesize": 13.0,
    "axes.labelsize": 12.0,
    "xtick.labelsize": 11.0,
    "ytick.labelsize": 11.0,
    "legend.fontsize": 11.0,
    "legend.title_fontsize": 11.0,
    "figure.titlesize": 14.0,
    "figure.dpi": 100.0,
    "savefig.dpi": 100.0,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
}
#: The smallest text the course style draws, in points (what the site's test measures).
SMALLEST_TEXT_PT = min(v for k, v in COURSE_STYLE.items() if k.endswith("size"))
