"""The learning platform's side: rosters in, grades out (Canvas and Moodle).

* :func:`read_roster` reads the LMS's own export, recognised by its header:

  - a **Canvas gradebook export** (``Student, ID, SIS User ID, SIS Login ID, Section, ...``,
    possibly with a ``Points Possible`` row under the header); a student's identity is the
    Canvas user id (``ID``), the number in every file name of Canvas's bulk download;
  - a **Moodle grading worksheet** (``Identifier, Full name, Email address, Status, Grade,
    Maximum Grade, ...``); a student's identity is the participant number of ``Identifier``
    ("Participant 12345"), the number in every file or folder name of Moodle's bulk download.
    Its ``Status`` says when a submission was late ("... 2 days late" on an English site).

* :func:`export_canvas` writes a CSV for Canvas's gradebook import: the roster's ``Student, ID,
  SIS User ID, SIS Login ID, Section`` for every roster student, then one column per assignment
  (the roster's own column for it when there is one, matched by name) holding the score.
* :func:`export_moodle` writes the worksheet back with ``Grade`` and ``Feedback comments``
  filled, every other column as it was (Moodle's importer matches rows by ``Identifier`` and
  refuses a row whose grade changed in Moodle after ``Last modified (grade)``).

Both read files saved by a spreadsheet: a byte-order mark, and ``,`` ``;`` or tab as the
separator (Excel in many European locales saves ``;``).
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from .untrusted import clean_text, normalise_name

__all__ = [
    "Roster",
    "RosterError",
    "read_csv",
    "read_roster",
    "assignment_column",
    "export_canvas",
    "export_moodle",
    "CANVAS_IDENTITY",
]

CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_REQUIRED = ["Identifier", "Full name", "Grade"]


class RosterError(ValueError):
    """A roster or worksheet that cannot be used (a usage error: exit 2)."""


def read_csv(path) -> tuple[list[list[str]], str]:
    """Rows of a CSV file as a spreadsheet saves it: UTF-8 with or without a byte-order mark,
    separated by ``,``, ``;`` or tab (whichever splits the header into the most columns)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise RosterError(f"{path}: not UTF-8 text (save it as CSV UTF-8)") from None
    except OSError as exc:
        raise RosterError(
            f"{path}: cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None
    first = text.split("\n", 1)[0]
    delimiter = max(",;\t", key=lambda d: len(next(csv.reader([first], delimiter=d), [])))
    rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)]
    return [r for r in rows if any(c.strip() for c in r)], delimiter


@dataclass
class Student:
    id: str
    name: str
    keys: set = field(default_factory=set)  # other ways a folder may name this student
    late: bool | None = None  # Moodle's Status says late (None: the roster does not say)
    row: int = 0  # index into Roster.rows


@dataclass
class Roster:
    kind: str  # "canvas" or "moodle"
    path: Path
    header: list
    rows: list  # data rows (lists), as read
    students: list
    points_row: list | None = None  # Canvas's "Points Possible" row
    by_id: dict = field(default_factory=dict)

    def find(self, student_id: str, name: str = "") -> Student | None:
        """The roster student with this LMS id; else one whose SIS login, SIS id, email or
        (unique) name is ``student_id`` (a plain folder per student)."""
        if student_id in self.by_id:
            return self.by_id[student_id]
        key = normalise_name(student_id).casefold()
        hits = [s for s in self.students if key in s.keys]
        return hits[0] if len(hits) == 1 else None


def _norm(text: str) -> str:
    return normalise_name(text).casefold()


def read_roster(path) -> Roster:
    """Read a Canvas gradebook export or a Moodle grading worksheet; raise :class:`RosterError`
    for anything else."""
    rows, _ = read_csv(path)
    if not rows:
        raise RosterError(f"{path}: empty")
    header = [h.strip() for h in rows[0]]
    body = rows[1:]
    if header[:2] == ["Student", "ID"] and "Section" in header:
        return _canvas_roster(Path(path), header, body)
    if all(h in header for h in MOODLE_REQUIRED):
        return _moodle_roster(Path(path), header, body)
    raise RosterError(
        f"{path}: not a Canvas gradebook export (Student, ID, SIS User ID, SIS Login ID, "
        "Section, ...) nor a Moodle grading worksheet (Identifier, Full name, ..., Grade, ...); "
        f"its header starts {', '.join(header[:5])}"
    )


def _cell(row, i) -> str:
    return row[i].strip() if 0 <= i < len(row) else ""


def _canvas_roster(path, header, body) -> Roster:
    col = {h: i for i, h in enumerate(header)}
    roster = Roster("canvas", path, header, [], [])
    for row in body:
        name, ident = _cell(row, col["Student"]), _cell(row, col["ID"])
        if name == "Points Possible" or (not ident and name.startswith("Points Possible")):
            roster.points_row = row
            continue
        if not ident.isdigit():
            continue  # Canvas's other note rows (such as an old "Muted" row)
        roster.rows.append(row)
        keys = {_norm(name), _norm(ident)}
        for extra in ("SIS User ID", "SIS Login ID"):
            if extra in col and _cell(row, col[extra]):
                keys.add(_norm(_cell(row, col[extra])))
        if "," in name:  # "Perez, Ana" -> also "perezana", Canvas's file-name form
            last, first = name.split(",", 1)
            keys.add(_norm(re.sub(r"[^0-9a-z]", "", _ascii(last + first).lower())))
        student = Student(ident, normalise_name(name), keys, None, len(roster.rows) - 1)
        roster.students.append(student)
        roster.by_id[ident] = student
    return roster


def _moodle_roster(path, header, body) -> Roster:
    col = {h: i for i, h in enumerate(header)}
    roster = Roster("moodle", path, header, [], [])
    for row in body:
        m = re.search(r"(\d+)\s*$", _cell(row, col["Identifier"]))
        if not m:
            continue
        roster.rows.append(row)
        name = _cell(row, col["Full name"])
        keys = {_norm(name), _norm(m.group(1))}
        if "Email address" in col and _cell(row, col["Email address"]):
            email = _cell(row, col["Email address"])
            keys |= {_norm(email), _norm(email.split("@")[0])}
        status = _cell(row, col["Status"]).lower() if "Status" in col else ""
        late = bool(re.search(r"\blate\b", status)) if "Status" in col else None
        student = Student(m.group(1), normalise_name(name), keys, late, len(roster.rows) - 1)
        roster.students.append(student)
        roster.by_id[m.group(1)] = student
    return roster


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _title(text: str) -> str:
    """An assignment or column name compared loosely: no Canvas id suffix, lower case, words."""
    text = re.sub(r"\s*\(\d+\)\s*$", "", text)
    return " ".join(re.sub(r"[^0-9a-z]+", " ", _ascii(text).lower()).split())


def assignment_column(header: list, assignment: str) -> str | None:
    """The roster's own column for an assignment: the one whose name (without Canvas's
    ``(id)`` suffix) equals the assignment's, ignoring case and punctuation, else the only one
    that starts with the assignment's number (``02 Heads (123456)`` for ``02_heads``)."""
    want = _title(assignment)
    same = [h for h in header if _title(h) == want]
    if len(same) == 1:
        return same[0]
    number = want.split(" ")[0] if want[:2].isdigit() else None
    if number:
        starts = [
            h
            for h in header[len(CANVAS_IDENTITY) :]
            if _title(h).split(" ")[0] == number and re.search(r"\(\d+\)\s*$", h)
        ]
        if len(starts) == 1:
            return starts[0]
    return None


def _number(text) -> float | None:
    """A number as a spreadsheet may write it (``7.5`` or ``7,5``), or None."""
    try:
        return float(str(text).strip().replace(",", "."))
    except (TypeError, ValueError):
        return None


def _fmt(x: float) -> str:
    text = f"{round(x, 2):.2f}".rstrip("0").rstrip(".")
    return text or "0"


def _score(rec: dict) -> float | None:
    """A gradebook record's score for the LMS (None: nothing to upload)."""
    if rec.get("status") in ("missing", "superseded") or rec.get("score", "") == "":
        return None
    return _number(rec["score"])


def export_canvas(records: list, roster: Roster, assignments: list) -> tuple[str, list[str]]:
    """The CSV text for Canvas's gradebook import, and problems worth a look."""
    problems = []
    col = {h: i for i, h in enumerate(roster.header)}
    ident = [h for h in CANVAS_IDENTITY if h in col]
    headers = []
    for a in assignments:
        own = assignment_column(roster.header, a)
        if own is None:
            problems.append(
                f"{a}: no column for it in {roster.path.name}; written as a new column "
                f"{a!r} (Canvas creates an assignment for it on import)"
            )
        headers.append(own or a)
    by_key = {(r["student_id"], r["assignment"]): r for r in records}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(ident + headers)
    roster_ids = {s.id for s in roster.students}
    if roster.points_row is not None:
        for a, h in zip(assignments, headers):
            possible = _number(_cell(roster.points_row, col.get(h, -1)))
            mine = {_number(r.get("max")) or 0.0 for r in records if r["assignment"] == a}
            if possible is not None and mine and all(abs(possible - m) > 1e-9 for m in mine):
                problems.append(
                    f"{h}: Canvas says {_fmt(possible)} points possible, the course's exercise has "
                    f"{_fmt(max(mine))}; the points are exported as they are"
                )
    for s in roster.students:
        row = roster.rows[s.row]
        out = [_cell(row, col[h]) for h in ident]
        for a in assignments:
            rec = by_key.get((s.id, a))
            value = _score(rec) if rec else None
            out.append("" if value is None else _fmt(value))
        w.writerow(out)
    for r in records:
        if r["assignment"] in assignments and r["student_id"] not in roster_ids:
            if r.get("status") != "superseded":
                problems.append(
                    f"{clean_text(r['student'], max_chars=80)} ({r['student_id']}) is not in "
                    f"{roster.path.name}: {r['assignment']} not exported"
                )
    return buf.getvalue(), problems


def summary_comment(rec: dict, question_ids: list) -> str:
    """A short plain-text feedback comment for the LMS: points, per question, late factor."""
    parts = [f"{rec.get('total', '')} of {rec.get('max', '')} points"]
    if rec.get("late") == "yes" and rec.get("late_factor") not in ("", "1", None):
        parts.append(f"late: x{rec['late_factor']} = {rec.get('score', '')}")
    qs = [f"{g} {rec[g]}" for g in question_ids if rec.get(g, "") != ""]
    if qs:
        parts.append("; ".join(qs))
    if rec.get("status") not in ("ok", None, ""):
        parts.append(f"status {rec['status']}")
    return clean_text(". ".join(parts), max_chars=1000)


def export_moodle(
    records: list, roster: Roster, assignment: str, question_ids: list, comments=None
) -> tuple[str, list[str]]:
    """The worksheet with ``Grade`` and ``Feedback comments`` filled, other cells untouched.
    ``comments`` (student id -> text, :func:`.lms_feedback.moodle_comments`) gives the whole
    feedback for the comment; without it, a one-line summary."""
    problems = []
    header = list(roster.header)
    col = {h: i for i, h in enumerate(header)}
    if "Feedback comments" not in col:
        header.append("Feedback comments")
        col["Feedback comments"] = len(header) - 1
        problems.append(
            "the worksheet has no 'Feedback comments' column (is the assignment's 'Feedback "
            "comments' feedback type on?); added one"
        )
    if "Last modified (grade)" not in col:
        problems.append(
            "the worksheet has no 'Last modified (grade)' column: Moodle's upload needs it "
            "(download the worksheet again from the assignment)"
        )
    by_key = {(r["student_id"], r["assignment"]): r for r in records}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for s in roster.students:
        row = list(roster.rows[s.row]) + [""] * (len(header) - len(roster.rows[s.row]))
        rec = by_key.get((s.id, assignment))
        value = _score(rec) if rec else None
        if value is not None:
            theirs = _number(_cell(row, col.get("Maximum Grade", -1)))
            mine = _number(rec.get("max")) or 0.0
            if theirs and mine and abs(theirs - mine) > 1e-9:
                value = value * theirs / mine
                note = (
                    f"{assignment}: Moodle's maximum grade is {_fmt(theirs)}, the course's "
                    f"{_fmt(mine)}; grades scaled to {_fmt(theirs)}"
                )
                if note not in problems:
                    problems.append(note)
            row[col["Grade"]] = _fmt(value)
            row[col["Feedback comments"]] = (comments or {}).get(s.id) or summary_comment(
                rec, question_ids
            )
        w.writerow(row)
    roster_ids = {s.id for s in roster.students}
    for r in records:
        if r["assignment"] == assignment and r["student_id"] not in roster_ids:
            if r.get("status") != "superseded":
                problems.append(
                    f"{clean_text(r['student'], max_chars=80)} ({r['student_id']}) is not in "
                    f"{roster.path.name}: not exported"
                )
    return buf.getvalue(), problems
