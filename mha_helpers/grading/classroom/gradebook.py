"""The gradebook: rows in, one CSV out, nothing lost.

* The gradebook CSV has the columns ``student_id, student, assignment, <one per question>,
  total, max, pending, late, late_factor, score, status, file, notes``. Rows are keyed by
  (``student_id``, assignment): ``student_id`` is the LMS identity, ``student`` the display
  name. ``max`` counts every point of the assignment, written answers included; ``pending`` the
  points of written answers not yet scored; ``score`` is ``total`` times ``late_factor`` (1 for
  work on time), what an export uploads. ``mha-course`` writes it as the view of the gradebook
  database (:mod:`.gradebook_db`, with the decisions applied by :mod:`.gradebook_view`, hand
  edits caught by :mod:`.gradebook_store`); :func:`merge_rows` merges the automatic records
  (rows graded now replace theirs, every other row is kept). It is written atomically. A
  gradebook of the older layout (no ``student_id``), or re-saved by a spreadsheet (``;``, a
  byte-order mark, decimal commas), is read too.
* ``--manual SCORES.csv`` (``student_id`` or ``student``, ``grade_id``, ``points``, optional
  ``comment``; separated by ``,`` ``;`` or tab) is read by :func:`manual_targets`: unknown
  students or questions, ambiguous names and points out of range are reported, not merged (the
  command records the rest as decisions).
* Every cell a spreadsheet could read as a formula is neutralised, whatever separator the
  spreadsheet splits on: all fields are quoted, and any text (or part of it after a separator)
  that starts with ``= + - @`` or a tab gets a leading apostrophe.
* The feedback files for students are written by :mod:`.feedback`.
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from pathlib import Path

from .untrusted import clean_text, normalise_name, safe_cell, starts_formula

__all__ = [
    "write_gradebook",
    "read_gradebook",
    "merge_rows",
    "apply_manual",
    "manual_targets",
    "summary_text",
    "atomic_write",
    "record_key",
    "to_float",
    "neutralise",
    "FIXED_BEFORE",
    "FIXED_AFTER",
]

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


# The statuses of a row that holds no automatic result (nothing was graded, or not this copy).
UNGRADED = frozenset(
    {
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
    }
)


def neutralise(text: str) -> str:
    """A cell no spreadsheet runs as a formula, whatever separator it splits the cell by
    (every part is checked by :func:`.untrusted.starts_formula`, numbers included).

    >>> neutralise("=HYPERLINK(1)"), neutralise("ok; =1+1"), neutralise("alice")
    ("'=HYPERLINK(1)", "ok; '=1+1", 'alice')
    """
    text = str(text).replace("\r", " ").replace("\n", " ")

    def fix(part: str) -> str:
        if not starts_formula(part):
            return part
        spaces = len(part) - len(part.lstrip(" "))
        return part[:spaces] + safe_cell(part[spaces:], keep_numbers=False)

    return fix(re.sub(r"(^|[;,|\t])([^;,|\t]*)", lambda m: m.group(1) + fix(m.group(2)), text))


def _number(x) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return f"{x:g}"
    return str(x)


def atomic_write(path: Path, text: str):
    """Write ``text`` to ``path`` all at once: a crash leaves the old file or the new one."""
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
    factor = to_float(rec.get("late_factor") or 1) if rec.get("late") == "yes" else 1.0
    rec["score"] = _number(round(to_float(rec.get("total")) * factor, 4))


def set_late_factor(rec: dict, factor: float) -> None:
    """Apply a late policy to a late record (``late_factor`` and ``score``)."""
    if rec.get("late") == "yes":
        rec["late_factor"] = _number(float(factor))
    rescore(rec)


def read_gradebook(path) -> tuple[list[str], list[dict]]:
    """Columns and records of an existing gradebook (apostrophes added on writing removed).

    A gradebook re-saved by a spreadsheet is read too: a byte-order mark, ``;`` or tab between
    fields, and decimal commas in the number columns (``8,5`` is read as ``8.5``)."""
    text = Path(path).read_text(encoding="utf-8-sig")
    first = text.split("\n", 1)[0]
    delimiter = max(",;\t", key=lambda d: len(next(csv.reader([first], delimiter=d), [])))
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    columns = list(reader.fieldnames or [])
    records = []
    for rec in reader:
        records.append(
            {
                k: _decimal_point(v[1:] if isinstance(v, str) and v.startswith("'") else (v or ""))
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


def _decimal_point(text: str) -> str:
    """``8,5`` -> ``8.5`` (a number as a spreadsheet in many locales writes it); other text as
    it is."""
    return text.replace(",", ".") if re.fullmatch(r"-?\d+,\d+", text or "") else text


def record_key(rec) -> tuple:
    """The key of a gradebook record: (student_id as compared, assignment)."""
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
    new_keys = {record_key(r) for r in new_records}
    old_by_key = {}
    for r in old_records:
        old_by_key.setdefault(record_key(r), r)
    counts = {"added": 0, "replaced": 0, "kept": 0}
    for r in new_records:
        old = old_by_key.get(record_key(r))
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
    kept = [r for r in old_records if record_key(r) not in new_keys]
    counts["kept"] = len(kept)
    return kept + new_records, counts


def to_float(text) -> float:
    """A record's number (0 for an empty or unreadable cell)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def _set_manual(rec: dict, gid: str, points, maximum: float):
    """Put written-answer points into a record, moving them from pending into the total."""
    was = rec.get(gid)
    value = float(points)
    if was == "pending":
        rec["pending"] = _number(max(0.0, to_float(rec["pending"]) - maximum))
    elif was not in (None, ""):
        rec["total"] = _number(to_float(rec["total"]) - to_float(was))
    rec[gid] = _number(value)
    rec["total"] = _number(to_float(rec["total"]) + value)
    rescore(rec)


def manual_targets(records: list, path, manual_ids: dict) -> tuple[list, list[str]]:
    """Read a written-answer scores file (``student_id`` or ``student``, ``grade_id``,
    ``points``, optionally ``comment``): ``[(record, grade_id, points, comment)]`` for every
    line that names one row and fits, and the problems of the others."""
    from .lms import RosterError, read_csv

    try:
        table, _ = read_csv(path)
    except RosterError as exc:
        return [], [str(exc)]
    fields = [c.strip().lower() for c in (table[0] if table else [])]
    if not {"grade_id", "points"} <= set(fields) or not {"student", "student_id"} & set(fields):
        return [], [
            f"{path}: needs the columns student_id (or student), grade_id, points (has "
            f"{', '.join(fields) or 'none'})"
        ]
    rows = [{k: (v or "").strip() for k, v in zip(fields, r)} for r in table[1:]]
    owner = {gid: a for a, ids in manual_ids.items() for gid in ids}
    index = _manual_index(records)
    found, problems = [], []
    for n, row in enumerate(rows, start=2):
        where = f"{Path(path).name} line {n}"
        hit = _manual_line(index, row, owner, manual_ids)
        if isinstance(hit, str):
            problems.append(f"{where}: {hit}")
        else:
            found.append(hit)
    return found, problems


def _manual_index(records: list) -> dict:
    """Records that can take written-answer points, by (assignment, "id" or "name", key)."""
    index: dict = {}
    for r in records:
        if r["status"] in ("superseded", "excused"):
            continue
        index.setdefault(
            (r["assignment"], "id", normalise_name(r["student_id"]).casefold()), []
        ).append(r)
        index.setdefault(
            (r["assignment"], "name", normalise_name(r["student"]).casefold()), []
        ).append(r)
    return index


def _manual_line(index: dict, row: dict, owner: dict, manual_ids: dict):
    """One scores line: ``(records, grade_id, points, comment)`` or what is wrong with it."""
    gid, pts = row.get("grade_id", ""), row.get("points", "")
    assignment = owner.get(gid)
    if assignment is None:
        return f"{gid!r} is not a written-answer question of the course"
    if row.get("student_id"):
        who = row["student_id"]
        targets = index.get((assignment, "id", normalise_name(who).casefold()), [])
    else:
        who = normalise_name(row.get("student", ""))
        targets = index.get((assignment, "name", who.casefold()), [])
        if len({r["student_id"] for r in targets}) > 1:
            return (
                f"{len(targets)} students named {who!r} in {assignment} "
                f"(student_id {', '.join(sorted(r['student_id'] for r in targets))}); "
                "give a student_id column"
            )
    if not targets:
        return f"no row for student {who!r} in assignment {assignment}"
    try:
        value = float(pts.replace(",", "."))
    except ValueError:
        return f"points {pts!r} is not a number"
    maximum = manual_ids[assignment][gid]
    if not (0 <= value <= maximum):
        return f"{value:g} points is outside 0..{maximum:g} for {gid}"
    return targets, gid, value, row.get("comment", "")


def apply_manual(records: list, path, manual_ids: dict) -> tuple[int, list[str], set]:
    """Merge ``student_id`` (or ``student``), ``grade_id``, ``points`` rows into records (no
    database); return (how many merged, problems, keys of the records changed)."""
    found, problems = manual_targets(records, path, manual_ids)
    changed = set()
    for targets, gid, value, _comment in found:
        for rec in targets:
            _set_manual(rec, gid, value, manual_ids[rec["assignment"]][gid])
            changed.add(record_key(rec))
    return len(found), problems, changed


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
    atomic_write(Path(out), buf.getvalue())
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


# --- summary ---------------------------------------------------------------------------------


def summary_text(rows: list, questions_by_assignment: dict) -> str:
    """Per question: mean points and share with full marks; per status: the count."""
    lines = []
    counts: dict = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines.append(f"{len(rows)} rows: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for assignment, qs in sorted(questions_by_assignment.items()):
        graded = [r for r in rows if r["assignment"] == assignment and r["status"] not in UNGRADED]
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
