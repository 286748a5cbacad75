"""Gradebook and feedback: rows in, files out, nothing lost.

* The gradebook CSV has the columns ``student_id, student, assignment, <one per question>,
  total, max, pending, late, late_factor, score, status, file, notes``. Rows are keyed by
  (``student_id``, assignment): ``student_id`` is the LMS identity, ``student`` the display
  name. ``max`` counts every point of the assignment, written answers included; ``pending`` the
  points of written answers not yet scored; ``score`` is ``total`` times ``late_factor`` (1 for
  work on time), what an export uploads. When the file exists, rows for the keys graded now
  replace the old ones and every other row is kept (written-answer points already entered are
  carried over); it is written atomically. A gradebook of the older layout (no
  ``student_id``) is read with ``student_id`` = ``student``.
* ``--manual SCORES.csv`` (``student_id`` or ``student``, ``grade_id``, ``points``; separated
  by ``,`` ``;`` or tab) merges the instructor's points for written answers; unknown students
  or questions, ambiguous names and points out of range are reported, not merged.
* Every cell a spreadsheet could read as a formula is neutralised, whatever separator the
  spreadsheet splits on: all fields are quoted, and any text (or part of it after a separator)
  that starts with ``= + - @`` or a tab gets a leading apostrophe.
* Feedback: one Markdown file and one self-contained HTML file per student per assignment,
  ``DIR/<assignment>/<name>_<student_id>.md`` (``<student>.md`` for plain folders); file names
  are unique per student (case-insensitively); :func:`refresh_feedback` updates written-answer
  points in existing feedback after ``--manual``.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import os
import re
import tempfile
from pathlib import Path

from .untrusted import clean_text, normalise_name

__all__ = [
    "write_gradebook",
    "read_gradebook",
    "merge_rows",
    "apply_manual",
    "write_feedback",
    "feedback_markdown",
    "feedback_html",
    "summary_text",
    "safe_name",
    "neutralise",
    "FIXED_BEFORE",
    "FIXED_AFTER",
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
    "refused": "not graded: a symbolic link, or an unsafe or unreadable archive (see notes)",
    "unknown-assignment": "no assignment of the course matches this notebook",
    "not-a-notebook": "JSON, but not a Jupyter notebook (or a folder)",
    "not-json": "not readable as JSON (or not UTF-8)",
    "empty": "an empty file",
    "too-large": "larger than the size limit; not opened",
    "old-format": "a notebook format that could not be converted",
    "missing": "no submission for this assignment (see notes)",
    "grader-error": "the grader itself failed on this submission (a bug: please report it)",
}

FIXED_BEFORE = ["student_id", "student", "assignment"]
FIXED_AFTER = [
    "total",
    "max",
    "pending",
    "late",
    "late_factor",
    "score",
    "status",
    "file",
    "notes",
]
OLD_BEFORE = ["student", "assignment"]  # the layout before student_id
_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def neutralise(text: str) -> str:
    """A cell no spreadsheet runs as a formula.

    >>> neutralise("=HYPERLINK(1)"), neutralise("ok; =1+1"), neutralise("alice")
    ("'=HYPERLINK(1)", "ok; '=1+1", 'alice')
    """
    text = str(text).replace("\r", " ").replace("\n", " ")

    def fix(part: str) -> str:
        stripped = part.lstrip(" ")
        if stripped.startswith(_TRIGGERS):
            return part[: len(part) - len(stripped)] + "'" + stripped
        return part

    return fix(re.sub(r"(^|[;,|\t])([^;,|\t]*)", lambda m: m.group(1) + fix(m.group(2)), text))


def _number(x) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return f"{x:g}"
    return str(x)


def _atomic_write(path: Path, text: str):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# --- rows as gradebook records --------------------------------------------------------------


def row_record(row: dict, late_factor: float = 1.0) -> dict:
    """A graded row as a flat gradebook record (strings), before neutralising."""
    rec = {
        "student_id": row.get("student_id") or row["student"],
        "student": row["student"],
        "assignment": row["assignment"] or "",
        "total": _number(row["total"]),
        "max": _number(row["max"]),
        "pending": _number(row["pending"]),
        "late": "yes" if row.get("late") else "no",
        "late_factor": _number(float(late_factor) if row.get("late") else 1.0),
        "status": row["status"],
        "file": row.get("shown") or Path(str(row["file"])).name,
        "notes": "; ".join(row["notes"]),
    }
    for gid, pts in row["points"].items():
        rec[gid] = "pending" if pts == "pending" else _number(pts)
    rescore(rec)
    return rec


def rescore(rec: dict) -> None:
    """``score`` = ``total`` x ``late_factor`` (empty for a row without a submission)."""
    if rec.get("status") in ("missing", "superseded"):
        rec["score"] = ""
        return
    factor = _to_float(rec.get("late_factor") or 1) if rec.get("late") == "yes" else 1.0
    rec["score"] = _number(round(_to_float(rec.get("total")) * factor, 4))


def set_late_factor(rec: dict, factor: float) -> None:
    """Apply a late policy to a late record (``late_factor`` and ``score``)."""
    if rec.get("late") == "yes":
        rec["late_factor"] = _number(float(factor))
    rescore(rec)


def read_gradebook(path) -> tuple[list[str], list[dict]]:
    """Columns and records of an existing gradebook (apostrophes added on writing removed)."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns = list(reader.fieldnames or [])
        records = []
        for rec in reader:
            records.append(
                {
                    k: (v[1:] if isinstance(v, str) and v.startswith("'") else (v or ""))
                    for k, v in rec.items()
                    if k is not None
                }
            )
    old_layout = columns[:2] == OLD_BEFORE and {"total", "max", "status", "notes"} <= set(columns)
    if not old_layout and (columns[:3] != FIXED_BEFORE or not set(FIXED_AFTER) <= set(columns)):
        raise ValueError(
            f"{path} is not a gradebook written by mha-course grade (columns: "
            f"{', '.join(columns[:6])}...)"
        )
    if old_layout:
        columns = ["student_id"] + columns
        for rec in records:
            rec["student_id"] = rec["student"]
            rec.setdefault("late_factor", "1")
            rec.setdefault("file", "")
            rescore(rec)
    return columns, records


def _key(rec) -> tuple:
    return (normalise_name(rec["student_id"]).casefold(), rec["assignment"])


def merge_rows(
    new_records: list, old_records: list, manual_ids: dict, keep_names: bool = False
) -> tuple[list, dict]:
    """Replace old records by new ones for the same (student_id, assignment); keep the rest.

    Written-answer points already in an old record are carried into its replacement; with
    ``keep_names`` (a run without a roster) so is the display name (a roster's name is not
    lost by regrading one file). Returns the merged records and counts ``added, replaced,
    kept``.
    """
    new_keys = {_key(r) for r in new_records}
    old_by_key = {}
    for r in old_records:
        old_by_key.setdefault(_key(r), r)
    counts = {"added": 0, "replaced": 0, "kept": 0}
    for r in new_records:
        old = old_by_key.get(_key(r))
        if old is None:
            counts["added"] += 1
            continue
        counts["replaced"] += 1
        if keep_names and old.get("student"):
            r["student"] = old["student"]
        for gid in manual_ids.get(r["assignment"], {}):
            if r.get(gid) == "pending" and old.get(gid) not in (None, "", "pending"):
                _set_manual(r, gid, old[gid], manual_ids[r["assignment"]][gid])
                r["notes"] += f"; {gid}: written-answer points kept from the previous gradebook"
    kept = [r for r in old_records if _key(r) not in new_keys]
    counts["kept"] = len(kept)
    return kept + new_records, counts


def _to_float(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def _set_manual(rec: dict, gid: str, points, maximum: float):
    """Put written-answer points into a record, moving them from pending into the total."""
    was = rec.get(gid)
    value = float(points)
    if was == "pending":
        rec["pending"] = _number(max(0.0, _to_float(rec["pending"]) - maximum))
    elif was not in (None, ""):
        rec["total"] = _number(_to_float(rec["total"]) - _to_float(was))
    rec[gid] = _number(value)
    rec["total"] = _number(_to_float(rec["total"]) + value)
    rescore(rec)


def apply_manual(records: list, path, manual_ids: dict) -> tuple[int, list[str], set]:
    """Merge ``student_id`` (or ``student``), ``grade_id``, ``points`` rows; return (how many
    merged, problems, keys of the records changed)."""
    from .lms import RosterError, read_csv

    problems, merged, changed = [], 0, set()
    try:
        table, _ = read_csv(path)
    except RosterError as exc:
        return 0, [str(exc)], changed
    fields = [c.strip().lower() for c in (table[0] if table else [])]
    if not {"grade_id", "points"} <= set(fields) or not {"student", "student_id"} & set(fields):
        return (
            0,
            [
                f"{path}: needs the columns student_id (or student), grade_id, points (has "
                f"{', '.join(fields) or 'none'})"
            ],
            changed,
        )
    rows = [{k: (v or "").strip() for k, v in zip(fields, r)} for r in table[1:]]
    owner = {gid: a for a, ids in manual_ids.items() for gid in ids}
    for n, row in enumerate(rows, start=2):
        gid, pts = row.get("grade_id", ""), row.get("points", "")
        where = f"{Path(path).name} line {n}"
        assignment = owner.get(gid)
        if assignment is None:
            problems.append(f"{where}: {gid!r} is not a written-answer question of the course")
            continue
        mine = [r for r in records if r["assignment"] == assignment and r["status"] != "superseded"]
        if row.get("student_id"):
            who = row["student_id"]
            key = normalise_name(who).casefold()
            targets = [r for r in mine if normalise_name(r["student_id"]).casefold() == key]
        else:
            who = normalise_name(row.get("student", ""))
            targets = [r for r in mine if normalise_name(r["student"]).casefold() == who.casefold()]
            if len({r["student_id"] for r in targets}) > 1:
                problems.append(
                    f"{where}: {len(targets)} students named {who!r} in {assignment} "
                    f"(student_id {', '.join(sorted(r['student_id'] for r in targets))}); "
                    "give a student_id column"
                )
                continue
        if not targets:
            problems.append(f"{where}: no row for student {who!r} in assignment {assignment}")
            continue
        try:
            value = float(pts.replace(",", "."))
        except ValueError:
            problems.append(f"{where}: points {pts!r} is not a number")
            continue
        maximum = manual_ids[assignment][gid]
        if not (0 <= value <= maximum):
            problems.append(f"{where}: {value:g} points is outside 0..{maximum:g} for {gid}")
            continue
        for rec in targets:
            _set_manual(rec, gid, value, maximum)
            changed.add(_key(rec))
        merged += 1
    return merged, problems, changed


def write_gradebook(records: list, out, question_ids: list) -> Path:
    """Write records (flat dicts) to ``out`` atomically, every field quoted and neutralised."""
    columns = FIXED_BEFORE + question_ids + FIXED_AFTER
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    w.writerow(columns)
    for rec in sorted(records, key=_sort_key):
        try:  # one row that cannot be written becomes an error row; the others are written
            line = io.StringIO()
            csv.writer(line, lineterminator="\n", quoting=csv.QUOTE_ALL).writerow(
                [neutralise(clean_text(rec.get(c, ""))) for c in columns]
            )
        except Exception as exc:
            line = io.StringIO()
            csv.writer(line, lineterminator="\n", quoting=csv.QUOTE_ALL).writerow(
                [neutralise(x) for x in _error_record(rec, exc, columns)]
            )
        buf.write(line.getvalue())
    _atomic_write(Path(out), buf.getvalue())
    return Path(out)


def _sort_key(rec) -> tuple:
    try:
        return (
            str(rec["assignment"]),
            normalise_name(str(rec["student"])).casefold(),
            str(rec.get("student_id", "")),
        )
    except Exception:
        return ("", "", "")


def _error_record(rec, exc: BaseException, columns: list) -> list:
    """The gradebook line of a record that could not be written: who, and why."""
    get = rec.get if isinstance(rec, dict) else (lambda key, default="": default)
    fixed = {
        "student_id": clean_text(get("student_id", "") or get("student", ""), max_chars=200),
        "student": clean_text(get("student", ""), max_chars=200),
        "assignment": clean_text(get("assignment", ""), max_chars=200),
        "status": "grader-error",
        "notes": f"this row could not be written ({type(exc).__name__}); its points are not "
        "in the gradebook: regrade this submission",
    }
    return [fixed.get(c, "") for c in columns]


# --- feedback --------------------------------------------------------------------------------


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
        "manual": "written answer, to be graded by your instructor",
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
        if d.get("hint") and d["status"] != "passed":
            lines.append(f"  - hint: {d['hint']}")
    if row["notes"]:
        lines += ["", "Notes:"] + [f"- {n}" for n in row["notes"]]
    lines.append("")
    return lines


def _score_line(total, maximum, pending) -> str:
    pending_text = (
        f"; {pending:g} points for written answers are still to be graded by your instructor"
        if pending
        else ""
    )
    return f"Score: {total:g} of {maximum:g} points{pending_text}"


def feedback_markdown(student: str, row: dict) -> str:
    """A student's feedback on one assignment: verdicts, points and hints; never the grader's
    hidden cases or expected outputs."""
    return "\n".join([f"# Feedback for {student}", ""] + _lines(row))


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
    md = "\n".join([f"# Feedback for {r['student']}", ""] + _lines(r))
    path = Path(folder) / assignment / f"{base}.md"
    _atomic_write(path, md)
    _atomic_write(path.with_suffix(".html"), feedback_html(r["student"], r))
    return path


def refresh_feedback(folder, records: list, manual_ids: dict) -> list[Path]:
    """After ``--manual``: put the written-answer points now in ``records`` into their
    students' existing feedback files (Markdown and HTML); return the files changed."""
    changed = []
    for rec in records:
        a = rec["assignment"]
        path = Path(folder) / a / f"{feedback_stem(rec['student_id'], rec['student'])}.md"
        if not a or not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").split("\n")
        new = []
        for line in lines:
            m = re.match(r"- (\S+): written answer, (?:to be )?graded by your instructor \[", line)
            gid = m.group(1) if m else None
            value = rec.get(gid) if gid else None
            if gid in manual_ids.get(a, {}) and value not in (None, "", "pending"):
                line = (
                    f"- {gid}: written answer, graded by your instructor "
                    f"[{_to_float(value):g}/{manual_ids[a][gid]:g}]"
                )
            elif line.startswith("Score: "):
                line = _score_line(
                    _to_float(rec["total"]), _to_float(rec["max"]), _to_float(rec["pending"])
                )
            elif line.startswith("Late: ") and rec.get("late") == "yes":
                factor = _to_float(rec.get("late_factor") or 1)
                line = (
                    f"Late: the course's late policy counts {factor:g} of the points, "
                    f"{_to_float(rec['total']) * factor:g}"
                )
            new.append(line)
        if new != lines:
            _atomic_write(path, "\n".join(new))
            title = f"Feedback for {rec['student']}: {a}"
            _atomic_write(path.with_suffix(".html"), _html_page(title, new[2:]))
            changed.append(path)
    return changed


# --- summary ---------------------------------------------------------------------------------


def summary_text(rows: list, questions_by_assignment: dict) -> str:
    """Per question: mean points and share with full marks; per status: the count."""
    lines = []
    counts: dict = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines.append(f"{len(rows)} rows: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for assignment, qs in sorted(questions_by_assignment.items()):
        graded = [
            r
            for r in rows
            if r["assignment"] == assignment
            and r["status"]
            not in (
                "missing",
                "superseded",
                "refused",
                "not-json",
                "not-a-notebook",
                "empty",
                "too-large",
                "old-format",
                "unknown-assignment",
                "grader-error",
            )
        ]
        if not graded:
            continue
        lines.append(f"{assignment} ({len(graded)} graded):")
        width = max(len(q.grade_id) for q in qs)
        for q in qs:
            pts = [r["points"].get(q.grade_id) for r in graded]
            scored = [p for p in pts if isinstance(p, (int, float))]
            if q.kind == "manual":
                mean = f", mean {sum(scored) / len(scored):.2f} of {q.points:g}" if scored else ""
                lines.append(
                    f"  {q.grade_id:<{width}}  written answer: {len(pts) - len(scored)} "
                    f"pending, {len(scored)} scored{mean}"
                )
                continue
            mean = sum(scored) / len(scored)
            full = sum(1 for p in scored if p >= q.points) / len(scored)
            pending = len(pts) - len(scored)
            lines.append(
                f"  {q.grade_id:<{width}}  mean {mean:.2f} of {q.points:g}, full marks "
                f"{100 * full:.0f}%" + (f" ({pending} pending)" if pending else "")
            )
    return "\n".join(lines)
