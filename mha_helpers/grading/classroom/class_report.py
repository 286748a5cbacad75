"""``mha-course report``: the class at a glance, one HTML page per assignment.

``DIR/<assignment>/report.html`` with its figures beside it (``scores.svg``,
``full_marks.svg``, ``mistakes.svg``): the score distribution, the share of full marks per
question, and per question the classic mistakes the judge named across the class ("bare
reshape: 7 students"); then tables of the rows that need a look, the written answers still
pending, late work, and pairs of submissions whose answer code is identical once names, white
space and comments are set aside (:mod:`.similarity`), worded as a similarity for the
instructor's judgement. Every figure has alt text and its numbers in a table beside it; the
page follows the reader's light or dark setting (figures sit on a light card in both).

The mistakes come from the verdicts kept beside the gradebook (:func:`.review_store.
verdict_results`: the database's results, or ``GRADEBOOK.results.json``); a gradebook graded
before either existed gets the report without the mistakes, and says so.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

from . import gradebook as gb
from .collect import NEEDS_A_LOOK
from .review_store import solution_cells, student_key, verdict_results
from .similarity import identical_pairs
from .untrusted import clean_text

__all__ = ["write_reports", "report_data"]

UNGRADED = gb.UNGRADED
INK, BAR, ACCENT = "#1b1b1b", "#3b6ea8", "#c1502e"


def _esc(x) -> str:
    return html.escape(clean_text(x, max_chars=400), quote=True)


def report_data(records: list, results: dict, questions: list, assignment: str) -> dict:
    """The numbers the report shows for one assignment (plain data; tested directly)."""
    rows = [r for r in records if r["assignment"] == assignment and r["status"] != "superseded"]
    graded = [r for r in rows if r["status"] not in UNGRADED]
    full, mistakes, pending = {}, {}, {}
    for q in questions:
        gid = q.grade_id
        if q.kind == "manual":
            pending[gid] = [r for r in graded if r.get(gid) == "pending"]
            continue
        pts = [gb.to_float(r.get(gid)) for r in graded if r.get(gid) not in ("", "pending")]
        full[gid] = (sum(p >= q.points - 1e-9 for p in pts), len(pts))
        tally: Counter = Counter()
        for r in graded:
            d = (results.get((student_key(r["student_id"]), assignment)) or {}).get("questions", {})
            name = (d.get(gid) or {}).get("mistake")
            if name:
                tally[name] += 1
        mistakes[gid] = tally.most_common()
    return {
        "rows": rows,
        "graded": graded,
        "scores": [gb.to_float(r.get("score")) for r in graded],
        "max": max((gb.to_float(r.get("max")) for r in graded), default=0.0),
        "full": full,
        "mistakes": mistakes,
        "pending": pending,
        "look": [r for r in rows if r["status"] != "ok" or _flagged(r)],
        "late": [r for r in rows if r.get("late") == "yes"],
        "has_results": bool(results),
    }


# The notes that put an ``ok`` row on grade's list of rows to look at (commands.NOT_IN_ROSTER,
# collect.NEEDS_A_LOOK).
_LOOK_NOTES = ("not in the roster", NEEDS_A_LOOK)


def _notes(r) -> list:
    return [n for n in str(r.get("notes") or "").split("; ") if n]


def _flagged(r) -> bool:
    return any(n.startswith(_LOOK_NOTES) for n in _notes(r))


def _first_note(r) -> str:
    notes = _notes(r)
    return next((n for n in notes if n.startswith(_LOOK_NOTES)), notes[0] if notes else "")


def _figure(width=6.4, height=3.2):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    fig.patch.set_facecolor("white")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return plt, fig, ax


def _save(plt, fig, path: Path) -> None:
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def _score_figure(data: dict, path: Path) -> str:
    plt, fig, ax = _figure()
    scores, top = data["scores"], data["max"] or 1.0
    bins = [x - 0.5 for x in range(int(top) + 2)] if top <= 40 else 20
    ax.hist(scores, bins=bins, color=BAR, edgecolor="white")
    ax.set_xlabel(f"score (of {top:g} points)", color=INK)
    ax.set_ylabel("students", color=INK)
    ax.yaxis.get_major_locator().set_params(integer=True)
    _save(plt, fig, path)
    if not scores:
        return "Score distribution: no graded submissions."
    s = sorted(scores)
    median = s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2
    return (
        f"Histogram of the scores of {len(s)} graded submissions, out of {top:g} points: "
        f"lowest {s[0]:g}, median {median:g}, highest {s[-1]:g}; "
        f"{sum(x >= top for x in s)} with full marks."
    )


def _bars(labels: list, values: list, path: Path, xlabel: str, xmax=None) -> None:
    plt, fig, ax = _figure(height=max(1.6, 0.42 * len(labels) + 0.9))
    y = list(range(len(labels)))[::-1]
    ax.barh(y, values, color=BAR)
    ax.set_yticks(y, labels, color=INK)
    ax.set_xlabel(xlabel, color=INK)
    ax.xaxis.get_major_locator().set_params(integer=True)
    if xmax:
        ax.set_xlim(0, xmax)
    for yi, v in zip(y, values):
        ax.text(v, yi, f" {v:g}", va="center", color=INK, fontsize=9)
    _save(plt, fig, path)


def _full_figure(data: dict, path: Path) -> str:
    ids = list(data["full"])
    rates = [100 * k / n if n else 0.0 for k, n in data["full"].values()]
    _bars(ids, [round(r) for r in rates], path, "share of graded students with full marks (%)", 100)
    parts = [f"{g} {r:.0f}%" for g, r in zip(ids, rates)]
    return "Bar chart of the share of students with full marks per question: " + ", ".join(parts)


def _mistake_figure(data: dict, path: Path) -> str | None:
    pairs = [(g, name, n) for g, tally in data["mistakes"].items() for name, n in tally]
    if not pairs:
        return None
    _bars([f"{g}: {name}" for g, name, _ in pairs], [n for *_, n in pairs], path, "students")
    parts = [f"{g}, {name}: {n}" for g, name, n in pairs]
    return "Bar chart of the classic mistakes the grader named, students per mistake: " + "; ".join(
        parts
    )


def _table(headers: list, rows: list) -> str:
    if not rows:
        return "<p class='none'>None.</p>"
    head = "".join(f"<th scope='col'>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _who(r) -> str:
    """A student as the report names them: name (id); ``r`` a record or a ``Submitted``."""
    name, sid = (
        (r["student"], r.get("student_id", ""))
        if isinstance(r, dict)
        else (r.student, r.student_id)
    )
    return f"{name} ({sid})" if sid and sid != name else name


def _fig_html(name: str, alt: str | None, caption: str) -> str:
    if alt is None:
        return ""
    return (
        f"<figure><img src='{name}' alt='{_esc(alt)}' width='640'>"
        f"<figcaption>{_esc(caption)}</figcaption></figure>"
    )


def _sections(data: dict, found: dict | None) -> list[str]:
    out = []
    full_rows = [
        [g, f"{k} of {n}", f"{100 * k / n:.0f}%" if n else "-"]
        for g, (k, n) in data["full"].items()
    ]
    out.append(
        "<h2>Full marks per question</h2>"
        + _table(["question", "students with full marks", "share"], full_rows)
    )
    m_rows = [
        [g, name, f"{n} student{'s' if n != 1 else ''}"]
        for g, tally in data["mistakes"].items()
        for name, n in tally
    ]
    note = (
        ""
        if data["has_results"]
        else (
            "<p class='none'>No verdict details beside this gradebook (grade again with this "
            "version to get them).</p>"
        )
    )
    out.append(
        "<h2>Classic mistakes named by the grader</h2>"
        + note
        + _figure_slot("mistakes")
        + _table(["question", "mistake", "how many"], m_rows)
    )
    out.append(
        "<h2>Rows that need a look</h2>"
        + _table(
            ["student", "status", "first note"],
            [[_who(r), r["status"], _first_note(r)] for r in data["look"]],
        )
    )
    p_rows = [
        [g, str(len(rs)), ", ".join(_who(r) for r in rs[:30]) + (" ..." if len(rs) > 30 else "")]
        for g, rs in data["pending"].items()
    ]
    out.append(
        "<h2>Written answers still to score</h2>"
        + _table(["question", "pending", "students"], p_rows)
        + "<p>Score them with <code>mha-course review</code>.</p>"
    )
    out.append(
        "<h2>Late work</h2>"
        + _table(
            ["student", "late factor", "score"],
            [[_who(r), r.get("late_factor", ""), r.get("score", "")] for r in data["late"]],
        )
    )
    out.append(_pairs_html(found))
    return out


def _figure_slot(name: str) -> str:
    return f"<!--figure:{name}-->"


def _pairs_html(found: dict | None) -> str:
    head = "<h2>Submissions with identical answer code</h2>"
    if found is None:
        return head + (
            "<p class='none'>Not compared: give the submissions to <code>mha-course report"
            "</code> as well.</p>"
        )
    intro = (
        "<p>These submissions have answer code that is the same once names, layout and "
        "comments are set aside. Identical code can have innocent causes (a shared hint, the "
        "lesson's own code, a short answer with one natural form); it is listed for your "
        "judgement only, not as a finding. "
        f"{found['solution']} submission(s) whose code is the solution's own are not listed."
        "</p>"
    )
    rows = [[_who(p["a"]), _who(p["b"]), ", ".join(p["questions"])] for p in found["pairs"]]
    rows += [
        [
            f"{len(g['subs'])} submissions: "
            + ", ".join(_who(s) for s in g["subs"][:20])
            + (" ..." if len(g["subs"]) > 20 else ""),
            "(the same code; a common form?)",
            ", ".join(g["questions"]),
        ]
        for g in found["groups"]
    ]
    return head + intro + _table(["submission", "same code as", "answer cells written"], rows)


def _page(assignment: str, data: dict, figures: dict, sections: list) -> str:
    n, g = len(data["rows"]), len(data["graded"])
    body = "\n".join(sections)
    for name, fig in figures.items():
        body = body.replace(_figure_slot(name), fig)
    summary = (
        f"<p>{n} students in the gradebook, {g} graded, {len(data['late'])} late, "
        f"{len(data['look'])} rows to look at, "
        f"{sum(len(v) for v in data['pending'].values())} written answers pending.</p>"
    )
    title = f"Class report: {assignment}"
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
        "content='width=device-width, initial-scale=1'>"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body><main>"
        f"<h1>{_esc(title)}</h1>{summary}<h2>Scores</h2>{figures.get('scores', '')}"
        f"{figures.get('full', '')}{body}</main></body></html>\n"
    )


def write_reports(
    book: Path, templates: dict, subs: list, out: Path, course, only=None
) -> list[Path]:
    """Write one report per assignment in the gradebook; return the pages written."""
    _, records = gb.read_gradebook(book)
    results = verdict_results(book)
    written = []
    for a in sorted({r["assignment"] for r in records if r["assignment"]}):
        if (only and a not in only) or a not in templates:
            continue
        t = templates[a]
        folder = out / a
        folder.mkdir(parents=True, exist_ok=True)
        data = report_data(records, results, t.questions, a)
        alt_scores = _score_figure(data, folder / "scores.svg")
        alt_full = _full_figure(data, folder / "full_marks.svg")
        alt_mistakes = _mistake_figure(data, folder / "mistakes.svg")
        figures = {
            "scores": _fig_html("scores.svg", alt_scores, "Score distribution"),
            "full": _fig_html("full_marks.svg", alt_full, "Full marks per question"),
            "mistakes": _fig_html("mistakes.svg", alt_mistakes, "Classic mistakes, by question"),
        }
        mine = [s for s in subs if s.assignment == a]
        stubs = {c["grade_id"]: c["source"] for c in t.template["cells"] if c["kind"] == "answer"}
        found = identical_pairs(mine, stubs, solution_cells(course, a)) if mine else None
        page = _page(a, data, figures, _sections(data, found))
        gb.atomic_write(folder / "report.html", page)
        written.append(folder / "report.html")
    return written


_CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1b;--muted:#555;--line:#c8c8c8}
@media (prefers-color-scheme:dark){:root{--bg:#16181c;--fg:#e8e8e8;--muted:#b0b0b0;
--line:#454a52}}
body{background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,sans-serif;margin:0}
main{max-width:60em;margin:auto;padding:1em}
figure{background:#fff;border:1px solid var(--line);border-radius:6px;padding:.5em;
margin:1em 0;max-width:100%}figure img{max-width:100%;height:auto}
figcaption{color:#333;font-size:.9em}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid var(--line);
padding:.25em .6em;text-align:left;vertical-align:top}.none{color:var(--muted)}
"""
