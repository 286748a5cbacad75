"""Feedback for students: one Markdown file and one self-contained HTML file per student per
assignment, ``DIR/<assignment>/<name>_<student_id>.md`` (``<student>.md`` for plain folders).

File names are unique per student (case-insensitively). Feedback shows each question's verdict,
its points and its hint, the row's status and notes; never the grader's hidden cases or
expected outputs (the verdicts on hidden cases are worded without them, :mod:`..rules.judge`).
:func:`refresh_feedback` updates the written-answer points in existing feedback after
``--manual``.
"""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path

from .gradebook import atomic_write, to_float
from .untrusted import FOR_INSTRUCTOR, clean_text, normalise_name

__all__ = [
    "write_feedback",
    "refresh_feedback",
    "feedback_markdown",
    "feedback_html",
    "feedback_stem",
    "safe_name",
    "md_escape",
    "md_unescape",
    "STATUSES",
]

# Row statuses, with what each means (the instructor guide lists them too).
STATUSES = {
    "ok": "graded normally",
    "flagged": "graded, but the sandbox's report was malformed (tampered with?): the affected "
    "questions score 0 (see notes)",
    "kernel-died": "the program died in a step (os._exit, a signal, a crash); that step was "
    "skipped and the rest graded",
    "timeout": "a cell, a function call or the whole notebook ran out of time",
    "memory": "a cell or function call ran out of memory",
    "superseded": "another copy of this assignment from the same student counts (see notes)",
    "refused": "not graded: a symbolic link, an unsafe or unreadable archive, or more notebooks "
    "of this assignment than are graded per student (see notes)",
    "unknown-assignment": "no assignment of the course matches this notebook",
    "not-a-notebook": "JSON, but not a Jupyter notebook (or a folder)",
    "not-json": "not readable as JSON (or not UTF-8)",
    "empty": "an empty file",
    "too-large": "larger than the size limit; not opened",
    "old-format": "a notebook format that could not be converted",
    "missing": "no submission for this assignment (see notes)",
    "excused": "excused from this assignment by the instructor (no grade)",
    "grader-error": "the grader itself failed on this submission (a bug: please report it)",
}


def safe_name(student: str) -> str:
    """A file name for a student, distinct for distinct (normalised) names, case-insensitively:
    names made only of ``a-z 0-9 . _ -`` are kept; any other gets a readable stem plus a hash.

    >>> safe_name("alice"), safe_name("Alice") != safe_name("alice"), safe_name("a/b") != safe_name("a_b")
    ('alice', True, True)
    """
    name = normalise_name(student)
    if re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,79}", name) and not re.search(r"-[0-9a-f]{10}$", name):
        return name
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:60].lower() or "student"
    return f"{stem}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:10]}"


def _verdict_word(d) -> str:
    return {
        "passed": "passed",
        "manual": "written answer, pending: to be graded by your instructor",
        "scored": "written answer, graded by your instructor",
        "unanswered": "no written answer",
        "not-attempted": "not attempted",
    }.get(d["status"], "not yet")


def _lines(row: dict) -> list[str]:
    lines = [f"## {row['assignment'] or 'unrecognised notebook'}", ""]
    shown = row.get("shown") or Path(str(row["file"])).name
    if row["status"] != "missing":
        lines.append(f"Submitted file: {shown}" + (" (late)" if row.get("late") else ""))
    lines.append(f"Status: {row['status']} ({STATUSES.get(row['status'], '')})")
    if row["max"] and row["status"] != "missing":
        lines.append(_score_line(row["total"], row["max"], row["pending"]))
        factor = float(row.get("late_factor") or 1)
        if row.get("late") and factor != 1:
            lines.append(
                f"Late: the course's late policy counts {factor:g} of the points, "
                f"{row['total'] * factor:g}"
            )
    lines.append("")
    for gid, d in row["questions"].items():
        if d["status"] == "manual":
            pts = f"{d['max_points']:g} points"
        else:
            pts = f"{(d['points'] or 0):g}/{d['max_points']:g}"
        lines.append(f"- {gid}: {_verdict_word(d)} [{pts}]")
        if d["status"] not in ("passed", "manual", "scored") and d.get("message"):
            lines.append(f"  - {d['message']}")
        if d["status"] == "scored" and d.get("comment"):
            lines.append(f"  - your instructor's comment: {d['comment']}")
        if d.get("hint") and d["status"] not in ("passed", "scored"):
            lines.append(f"  - hint: {d['hint']}")
    shown_notes = [n for n in row["notes"] if not str(n).startswith(FOR_INSTRUCTOR)]
    if shown_notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in shown_notes]
    lines.append("")
    return lines


def _score_line(total, maximum, pending) -> str:
    pending_text = (
        f"; {pending:g} points for written answers are still to be graded by your instructor"
        if pending
        else ""
    )
    return f"Score: {total:g} of {maximum:g} points{pending_text}"


# Markdown that text could use to become markup: emphasis, code, links and images, raw HTML
# and entities, headings, tables, strike-through. A backslash before any ASCII punctuation is
# an escape in CommonMark, so escaping and unescaping are exact.
_MD_SPECIAL = re.compile(
    r"[\\`*{}<>#|~&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"  # emphasis, code, HTML, headings
    r"|\](?=[(\[:])|\[(?=[^\]]*\][(\[:])|(?<=!)\[|^\["  # any bracket a link or image needs
    r"|(?<=\])\("  # and the parenthesis after one: "](" never appears, even escaped
)
_MD_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])|&lt;")


def _escaped(m: re.Match) -> str:
    """One special character, escaped: ``<`` as ``&lt;`` (no ``<tag`` in the text at all)."""
    return "&lt;" if m.group(0) == "<" else "\\" + m.group(0)


_MD_PREFIXES = ("## ", "# ", "  - ", "- ")


def md_escape(text: str) -> str:
    """``text`` as literal Markdown: every character that could start markup is escaped (an
    underscore inside a word, as in ``q03_d_head``, cannot and stays, and so does a bracket
    that no link could use, as in ``[1/1]``), a list or heading marker at the start too, and
    URLs are not turned into links. A backslash the student wrote is escaped like any other
    character (it can never escape what follows it), and ``](`` never appears in the result.
    The result is one line, without white space at either end (no code block, no setext
    heading, no hard line break).

    >>> print(md_escape("[click](http://x) <b>*hi*</b> q03_d_head [1/1]"))
    \\[click\\]\\(http:\\/\\/x) &lt;b\\>\\*hi\\*&lt;/b\\> q03_d_head [1/1]
    """
    text = re.sub(r"[\t\n\r\v\f\x1c-\x1e\x85\u2028\u2029]", " ", text).strip()  # one line:
    out = _MD_SPECIAL.sub(_escaped, text)  # no block a student starts
    out = out.replace("://", ":\\/\\/").replace("www.", "www\\.")
    out = re.sub(r"^(\s*)([-+=])", lambda m: m.group(1) + "\\" + m.group(2), out)
    return re.sub(r"^(\s*\d+)([.)])", lambda m: m.group(1) + "\\" + m.group(2), out)


def md_unescape(text: str) -> str:
    """The inverse of :func:`md_escape`."""
    return _MD_ESCAPED.sub(lambda m: m.group(1) or "<", text)


def _md_line(line: str) -> str:
    """One feedback line as Markdown: the line's own markup kept, everything else literal."""
    for prefix in _MD_PREFIXES:
        if line.startswith(prefix):
            return prefix + md_escape(line[len(prefix) :])
    return md_escape(line)


def _markdown(lines: list) -> str:
    return "\n".join(_md_line(line) for line in lines)


def feedback_markdown(student: str, row: dict) -> str:
    """A student's feedback on one assignment: verdicts, points and hints; never the grader's
    hidden cases or expected outputs. Every text in it is escaped (:func:`md_escape`)."""
    return _markdown([f"# Feedback for {student}", ""] + _lines(row))


def feedback_html(student: str, row: dict) -> str:
    """The same feedback as a self-contained HTML page (no scripts, no external files)."""
    return _html_page(f"Feedback for {student}: {row['assignment']}", _lines(row))


def _html_page(title: str, lines: list) -> str:
    body = []
    in_list = False
    for line in lines:
        if line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("- "):
            if not in_list:
                body.append("<ul>")
                in_list = True
            body.append(f"<li>{html.escape(line[2:])}")
        elif line.startswith("  - "):
            body.append(f"<div class='detail'>{html.escape(line[4:])}</div>")
        else:
            if in_list:
                body.append("</ul>")
                in_list = False
            if line:
                body.append(f"<p>{html.escape(line)}</p>")
    if in_list:
        body.append("</ul>")
    title = html.escape(title)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{title}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;"
        "line-height:1.5}li{margin:.4em 0}.detail{margin-left:1.2em;color:#444}</style></head>"
        f"<body><h1>{title}</h1>" + "\n".join(body) + "</body></html>\n"
    )


def _ascii_slug(text: str) -> str:
    import unicodedata

    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", plain).strip("-")[:40] or "student"


def feedback_stem(student_id: str, student: str) -> str:
    """A student's feedback file name (without suffix): ``<name>_<id>`` for an LMS identity,
    so namesakes get two files; the folder's own safe name for a plain folder per student.

    >>> feedback_stem("300001", "zhangwei"), feedback_stem("300002", "zhangwei")
    ('zhangwei_300001', 'zhangwei_300002')
    >>> feedback_stem("12", "Kai Müller"), feedback_stem("alice", "alice")
    ('kai-muller_12', 'alice')
    """
    sid = normalise_name(student_id or student)
    if sid == normalise_name(student) or not re.fullmatch(r"[0-9A-Za-z]{1,40}", sid):
        return safe_name(sid)
    return f"{_ascii_slug(student)}_{sid.lower()}"


def write_feedback(rows: list, folder, failed: list | None = None) -> list[Path]:
    """Write ``folder/<assignment>/<stem>.md`` and ``.html`` for every counted row (one row per
    student and assignment; a superseded copy is listed in the counted row's notes).
    A file that cannot be written is skipped and, with ``failed``, listed there as
    ``(student, assignment, why)``; every other file is written."""
    used: dict = {}
    written = []
    for r in sorted(rows, key=lambda r: (r["assignment"] or "", r.get("student_id", ""))):
        if r["status"] == "superseded":
            continue
        try:  # one student's feedback that cannot be written costs only that file
            written.append(_write_feedback_row(folder, r, used))
        except Exception as exc:
            if failed is not None:
                failed.append(
                    (clean_text(r.get("student")), r.get("assignment"), type(exc).__name__)
                )
    return written


def _write_feedback_row(folder, r: dict, used: dict) -> Path:
    assignment = r["assignment"] or "unrecognised"
    ident = r.get("student_id") or r["student"]
    base = feedback_stem(ident, r["student"])
    key = (assignment, base.casefold())
    if key in used and used[key] != ident:  # belt and braces: never two students in one file
        base = f"{base}-{hashlib.sha256(ident.encode()).hexdigest()[:10]}"
    used[(assignment, base.casefold())] = ident
    md = feedback_markdown(r["student"], r)
    path = Path(folder) / assignment / f"{base}.md"
    atomic_write(path, md)
    atomic_write(path.with_suffix(".html"), feedback_html(r["student"], r))
    return path


def refresh_feedback(folder, records: list, manual_ids: dict, comments=None) -> list[Path]:
    """After ``--manual``: put the written-answer points (and the instructor's comments,
    ``comments`` {record key: {grade_id: text}}) now in ``records`` into their students'
    existing feedback files (Markdown and HTML); return the files changed."""
    changed = []
    comments = comments or {}
    for rec in records:
        a = rec["assignment"]
        path = Path(folder) / a / f"{feedback_stem(rec['student_id'], rec['student'])}.md"
        if not a or not path.is_file():
            continue
        lines = [md_unescape(x) for x in path.read_text(encoding="utf-8").split("\n")]
        said = comments.get((normalise_name(rec["student_id"]).casefold(), a), {})
        new = []
        for line in lines:
            m = re.match(
                r"- (\S+): written answer, (?:pending: )?(?:to be )?graded by your instructor \[",
                line,
            )
            gid = m.group(1) if m else None
            value = rec.get(gid) if gid else None
            if line.startswith("  - your instructor's comment: "):
                continue  # written again below its question
            if gid in manual_ids.get(a, {}) and value not in (None, "", "pending"):
                line = (
                    f"- {gid}: written answer, graded by your instructor "
                    f"[{to_float(value):g}/{manual_ids[a][gid]:g}]"
                )
                if said.get(gid):
                    new.append(line)
                    line = f"  - your instructor's comment: {clean_text(said[gid])}"
            elif line.startswith("Score: "):
                line = _score_line(
                    to_float(rec["total"]), to_float(rec["max"]), to_float(rec["pending"])
                )
            elif line.startswith("Late: ") and rec.get("late") == "yes":
                factor = to_float(rec.get("late_factor") or 1)
                line = (
                    f"Late: the course's late policy counts {factor:g} of the points, "
                    f"{to_float(rec['total']) * factor:g}"
                )
            new.append(line)
        if new != lines:
            atomic_write(path, _markdown(new))
            title = f"Feedback for {rec['student']}: {a}"
            atomic_write(path.with_suffix(".html"), _html_page(title, new[2:]))
            changed.append(path)
    return changed
