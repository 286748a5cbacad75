"""Gradebook and feedback: rows in, files out, nothing lost.

* The gradebook CSV has the columns ``student, assignment, <one per question>, total, max,
  late, pending, status, notes``. ``max`` counts every point of the assignment, written answers
  included; ``pending`` the points of written answers not yet scored. When the file exists,
  rows for the (student, assignment) pairs graded now replace the old ones and every other row
  is kept (written-answer points already entered are carried over); it is written atomically.
* ``--manual SCORES.csv`` (``student, grade_id, points``) merges the instructor's points for
  written answers; unknown students or questions and points out of range are reported, not
  merged.
* Every cell a spreadsheet could read as a formula is neutralised, whatever separator the
  spreadsheet splits on: all fields are quoted, and any text (or part of it after a separator)
  that starts with ``= + - @`` or a tab gets a leading apostrophe.
* Feedback: one Markdown file and one self-contained HTML file per student per assignment,
  ``DIR/<assignment>/<student>.md``; file names are unique per student (case-insensitively).
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

from .collect import normalise_name
from .untrusted import clean_text
from .verdict import STATUSES

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
]

FIXED_BEFORE = ["student", "assignment"]
FIXED_AFTER = ["total", "max", "late", "pending", "status", "notes"]
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


def row_record(row: dict) -> dict:
    """A graded row as a flat gradebook record (strings), before neutralising."""
    rec = {
        "student": row["student"],
        "assignment": row["assignment"] or "",
        "total": _number(row["total"]),
        "max": _number(row["max"]),
        "late": "yes" if row.get("late") else "no",
        "pending": _number(row["pending"]),
        "status": row["status"],
        "notes": "; ".join(row["notes"] + [f"file: {row['file']}"]),
    }
    for gid, pts in row["points"].items():
        rec[gid] = "pending" if pts == "pending" else _number(pts)
    return rec


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
    if columns[:2] != FIXED_BEFORE or not set(FIXED_AFTER) <= set(columns):
        raise ValueError(
            f"{path} is not a gradebook written by mha-course grade (columns: "
            f"{', '.join(columns[:6])}...)"
        )
    return columns, records


def _key(rec) -> tuple:
    return (normalise_name(rec["student"]).casefold(), rec["assignment"])


def merge_rows(new_records: list, old_records: list, manual_ids: dict) -> tuple[list, dict]:
    """Replace old records by new ones for the same (student, assignment); keep the rest.

    Written-answer points already in an old record are carried into its replacement.
    Returns the merged records and counts ``added, replaced, kept``.
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


def apply_manual(records: list, path, manual_ids: dict) -> tuple[int, list[str]]:
    """Merge ``student, grade_id, points`` rows; return (how many merged, problems)."""
    problems, merged = [], 0
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            fields = [c.strip().lower() for c in reader.fieldnames or []]
            if not {"student", "grade_id", "points"} <= set(fields):
                return 0, [
                    f"{path}: needs the columns student, grade_id, points (has "
                    f"{', '.join(fields) or 'none'})"
                ]
            rows = [
                {(k or "").strip().lower(): (v or "").strip() for k, v in r.items()} for r in reader
            ]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        return 0, [f"{path}: could not be read ({type(exc).__name__})"]
    owner = {gid: a for a, ids in manual_ids.items() for gid in ids}
    for n, row in enumerate(rows, start=2):
        student, gid, pts = (
            normalise_name(row.get("student", "")),
            row.get("grade_id", ""),
            row.get("points", ""),
        )
        where = f"{Path(path).name} line {n}"
        assignment = owner.get(gid)
        if assignment is None:
            problems.append(f"{where}: {gid!r} is not a written-answer question of the course")
            continue
        targets = [
            r
            for r in records
            if r["assignment"] == assignment
            and normalise_name(r["student"]).casefold() == student.casefold()
        ]
        if not targets:
            problems.append(f"{where}: no row for student {student!r} in assignment {assignment}")
            continue
        try:
            value = float(pts)
        except ValueError:
            problems.append(f"{where}: points {pts!r} is not a number")
            continue
        maximum = manual_ids[assignment][gid]
        if not (0 <= value <= maximum):
            problems.append(f"{where}: {value:g} points is outside 0..{maximum:g} for {gid}")
            continue
        for rec in targets:
            _set_manual(rec, gid, value, maximum)
        merged += 1
    return merged, problems


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
        return (str(rec["assignment"]), normalise_name(str(rec["student"])).casefold())
    except Exception:
        return ("", "")


def _error_record(rec, exc: BaseException, columns: list) -> list:
    """The gradebook line of a record that could not be written: who, and why."""
    get = rec.get if isinstance(rec, dict) else (lambda key, default="": default)
    fixed = {
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
    lines.append(
        f"Submitted file: {Path(str(row['file'])).name}" + (" (late)" if row.get("late") else "")
    )
    lines.append(f"Status: {row['status']} ({STATUSES.get(row['status'], '')})")
    if row["max"]:
        pending = (
            f"; {row['pending']:g} points for written answers are still to be graded by "
            "your instructor"
            if row["pending"]
            else ""
        )
        lines.append(f"Score: {row['total']:g} of {row['max']:g} points{pending}")
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


def feedback_markdown(student: str, row: dict) -> str:
    """A student's feedback on one assignment: verdicts, points and hints; never the grader's
    hidden cases or expected outputs."""
    return "\n".join([f"# Feedback for {student}", ""] + _lines(row))


def feedback_html(student: str, row: dict) -> str:
    """The same feedback as a self-contained HTML page (no scripts, no external files)."""
    body = []
    in_list = False
    for line in _lines(row):
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
    title = html.escape(f"Feedback for {student}: {row['assignment']}")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{title}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;"
        "line-height:1.5}li{margin:.4em 0}.detail{margin-left:1.2em;color:#444}</style></head>"
        f"<body><h1>{title}</h1>" + "\n".join(body) + "</body></html>\n"
    )


def write_feedback(rows: list, folder, failed: list | None = None) -> list[Path]:
    """Write ``folder/<assignment>/<student>.md`` and ``.html`` for every row with an assignment
    (rows of one student for one assignment share a file only when they are duplicates).
    A file that cannot be written is skipped and, with ``failed``, listed there as
    ``(student, assignment, why)``; every other file is written."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(
            (r["assignment"] or "unrecognised", normalise_name(r["student"])), []
        ).append(r)
    used: dict = {}
    written = []
    for (assignment, student), rs in sorted(groups.items()):
        try:  # one student's feedback that cannot be written costs only that file
            written.append(_write_feedback_group(folder, assignment, student, rs, used))
        except Exception as exc:
            if failed is not None:
                failed.append((student, assignment, f"{type(exc).__name__}"))
    return written


def _write_feedback_group(folder, assignment, student, rs, used) -> Path:
    base = safe_name(student)
    key = (assignment, base.casefold())
    if key in used and used[key] != student:  # belt and braces: never two students in one file
        base = f"{base}-{hashlib.sha256(student.encode()).hexdigest()[:10]}"
    used[(assignment, base.casefold())] = student
    md = "\n".join([f"# Feedback for {student}", ""] + [line for r in rs for line in _lines(r)])
    path = Path(folder) / assignment / f"{base}.md"
    _atomic_write(path, md)
    _atomic_write(
        path.with_suffix(".html"),
        "\n".join(feedback_html(student, r) for r in rs[:1])
        if len(rs) == 1
        else _multi_html(student, rs),
    )
    return path


def _multi_html(student, rows) -> str:
    pages = [feedback_html(student, r) for r in rows]
    bodies = [p.split("<body>", 1)[1].rsplit("</body>", 1)[0] for p in pages]
    return pages[0].split("<body>", 1)[0] + "<body>" + "<hr>".join(bodies) + "</body></html>\n"


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
