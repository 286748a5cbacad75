"""How a self-check verdict is shown: HTML in JupyterLab, plain text everywhere else.

One verdict, two renderings with the same content in the same order:

1. the verdict itself, in words ("passed", "not yet", "not attempted", ...) with the points;
   in HTML also an icon and a colour, never the only signal (the word is always there);
2. what failed (the first failing case, in a few words), then the hint;
3. a compact expected-versus-got: for arrays, the first rows and columns side by side with the
   entries that differ marked (bold, underlined and shaded, with a marker after the number,
   so it reads without colour), each number in its own cell so none is ever broken across
   lines.

The HTML sets both the text colour and the background of everything it colours, so its
contrast holds on JupyterLab's light and dark themes alike (WCAG AA, 4.5:1 or more); the rest
inherits the theme's colours. Everything that comes from the answer is escaped.
"""

from __future__ import annotations

import html

import numpy as np

from ..rules.compare import difference

__all__ = ["Verdict", "plain_text", "html_text", "STYLES"]

_MAX_SHOWN = 240
_ROWS, _COLS = 6, 8

# status -> (word, icon, text colour, background). Each pair has a contrast ratio of at least
# 4.5 (white on #1a7f37: 5.1; white on #b42318: 6.2; white on #57606a: 6.3; white on #0a58ca:
# 6.6), whatever the theme around it.
STYLES = {
    "passed": ("passed", "✔", "#ffffff", "#1a7f37"),
    "failed": ("not yet", "✘", "#ffffff", "#b42318"),
    "error": ("not yet", "✘", "#ffffff", "#b42318"),
    "timeout": ("not yet", "✘", "#ffffff", "#b42318"),
    "not-attempted": ("not attempted", "○", "#ffffff", "#57606a"),
    "manual": ("written answer", "✎", "#ffffff", "#0a58ca"),
    "recorded": ("recorded", "●", "#ffffff", "#0a58ca"),
}
_MARK_FG, _MARK_BG = "#000000", "#ffd866"  # a differing entry: 14:1


def _points(r) -> str:
    if r["status"] in ("manual", "recorded"):
        return f"[{r['max_points']:g} points]"
    return f"[{r['points']:g}/{r['max_points']:g} points]"


def _headline(r) -> str:
    gid, status = r["grade_id"], r["status"]
    if status == "passed":
        return f"{gid}: passed {_points(r)}"
    if status == "not-attempted":
        return f"{gid}: not attempted yet {_points(r)}"
    if status == "manual":
        return f"{gid}: written answer, graded by your instructor {_points(r)}"
    if status == "recorded":
        return f"{gid}: recorded, checked at grading {_points(r)}"
    return f"{gid}: not yet {_points(r)}"


def _show(x) -> str:
    """A compact, single-line rendering of a value for plain-text feedback."""
    if isinstance(x, tuple):
        return "(" + ", ".join(_show(v) for v in x) + ")"
    if isinstance(x, np.ndarray):
        with np.printoptions(precision=3, suppress=True, threshold=20, edgeitems=2):
            text = f"array of shape {x.shape}: " + " ".join(str(x).split())
    else:
        text = repr(x)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _pair(r):
    """The (label, expected, got) to show side by side: for a tuple, its first item that
    differs; ``None`` when the verdict has nothing to compare."""
    want, got = r.get("expected"), r.get("actual")
    if want is None:
        return None
    label = "result"
    if isinstance(want, tuple) and isinstance(got, (tuple, list)) and len(got) == len(want):
        for i, (w, g) in enumerate(zip(want, got)):
            if difference(w, g, r.get("rtol", 1e-6), r.get("atol", 1e-8)) is not None:
                return f"result[{i}]", w, g
    return label, want, got


def plain_text(r) -> str:
    """The verdict as plain text (a terminal, a script, nbgrader's logs)."""
    lines = [_headline(r)]
    if r["status"] not in ("passed", "not-attempted", "manual"):
        if r.get("message"):
            lines.append(f"  {r['message']}")
        if r.get("hint"):
            lines.append(f"  hint: {r['hint']}")
        if r.get("expected") is not None:
            lines.append(f"  expected: {_show(r['expected'])}")
            lines.append(f"  got:      {_show(r['actual'])}")
    return "\n".join(lines)


def _num(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)[:12]
    if f.is_integer() and abs(f) < 1e15:
        return str(int(f))
    return f"{f:.4g}"


def _as_grid(x):
    """A 2-D view of at most _ROWS x _COLS entries (the first slice of a higher-dimensional
    array) and a caption saying which part it is."""
    a = np.asarray(x)
    caption = ""
    while a.ndim > 2:
        caption += "[0]"
        a = a[0]
    if a.ndim == 0:
        a = a.reshape(1, 1)
    elif a.ndim == 1:
        a = a.reshape(1, -1)
    cut = a[:_ROWS, :_COLS]
    if cut.shape != a.shape:
        caption += f" first {cut.shape[0]} x {cut.shape[1]} entries"
    return cut, caption


def _differs(w, g) -> np.ndarray:
    try:
        wf, gf = w.astype(float), g.astype(float)
    except (TypeError, ValueError):
        return np.ones(w.shape, dtype=bool)
    same = np.isclose(gf, wf, rtol=1e-6, atol=1e-8) | (np.isnan(wf) & np.isnan(gf))
    return ~same


def _table(a, marks=None) -> str:
    rows = []
    for i in range(a.shape[0]):
        cells = []
        for j in range(a.shape[1]):
            text = html.escape(_num(a[i, j]))
            if marks is not None and marks[i, j]:
                cells.append(
                    f'<td style="padding:1px 6px;white-space:nowrap;text-align:right;'
                    f"font-weight:bold;text-decoration:underline;color:{_MARK_FG};"
                    f'background:{_MARK_BG}">{text}&thinsp;•</td>'
                )
            else:
                cells.append(
                    f'<td style="padding:1px 6px;white-space:nowrap;text-align:right">{text}</td>'
                )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<table style="border-collapse:collapse;font-family:monospace;font-size:90%;'
        'margin:0">' + "".join(rows) + "</table>"
    )


def _comparison_html(r) -> str:
    pair = _pair(r)
    if pair is None:
        return ""
    label, want, got = pair
    esc = html.escape
    try:
        w = np.asarray(want)
        g = np.asarray(got)
        numeric = w.dtype.kind in "biuf" and g.dtype.kind in "biuf"
    except (TypeError, ValueError):
        numeric = False
    if not numeric or w.size > 100_000 or g.size > 100_000:
        return (
            f'<div style="font-family:monospace;white-space:pre-wrap;word-break:normal">'
            f"expected: {esc(_show(want))}<br>got:&nbsp;&nbsp;&nbsp;&nbsp;&nbsp; {esc(_show(got))}"
            "</div>"
        )
    wg, wcap = _as_grid(w)
    gg, gcap = _as_grid(g)
    marks = _differs(wg, gg) if wg.shape == gg.shape else None
    count = ""
    if w.shape == g.shape:
        n = int(np.count_nonzero(_differs(w, g)))
        count = f" ({n} of {w.size} entries differ, marked •)"
    head = f"{esc(label)}: expected shape {esc(str(w.shape))}, got {esc(str(g.shape))}{esc(count)}"
    return (
        f'<div style="margin-top:4px">{head}</div>'
        '<div style="display:flex;flex-wrap:wrap;gap:16px;margin-top:2px">'
        f"<div><div>expected{esc(wcap)}</div>{_table(wg)}</div>"
        f"<div><div>got{esc(gcap)}</div>{_table(gg, marks)}</div>"
        "</div>"
    )


def html_text(r) -> str:
    """The verdict as HTML for JupyterLab (escaped; colours set in pairs; see the module)."""
    word, icon, fg, bg = STYLES.get(r["status"], STYLES["failed"])
    esc = html.escape
    badge = (
        f'<span style="display:inline-block;padding:1px 8px;border-radius:4px;color:{fg};'
        f'background:{bg};font-weight:bold" role="status">'
        f'<span aria-hidden="true">{icon}</span> {esc(word)}</span>'
    )
    parts = [
        f'<div class="mha-check" style="line-height:1.5;margin:2px 0">'
        f"{badge} <code>{esc(r['grade_id'])}</code> {esc(_points(r))}</div>"
    ]
    if r["status"] not in ("passed", "not-attempted", "manual"):
        body = []
        if r.get("message"):
            body.append(f"<div>{esc(r['message'])}</div>")
        if r.get("hint"):
            body.append(f"<div><b>hint:</b> {esc(r['hint'])}</div>")
        body.append(_comparison_html(r))
        parts.append(
            f'<div style="margin-left:1em;border-left:3px solid {bg};padding-left:8px">'
            + "".join(body)
            + "</div>"
        )
    return "".join(parts)


class Verdict:
    """A verdict as a displayable object: JupyterLab shows its HTML, anything else its text."""

    def __init__(self, r: dict):
        self.r = r

    def _repr_html_(self) -> str:
        return html_text(self.r)

    def __repr__(self) -> str:
        return plain_text(self.r)
