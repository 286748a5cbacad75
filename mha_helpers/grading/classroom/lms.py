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

from .untrusted import clean_text, normalise_name, safe_cell

__all__ = [
    "Roster",
    "RosterError",
    "read_csv",
    "read_roster",
    "assignment_column",
    "export_canvas",
    "export_moodle",
    "CANVAS_IDENTITY",
    "safe_cell",
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
    columns: dict = field(default_factory=dict)  # Moodle: the English name -> this file's

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
    if (header[:2] == ["Student", "ID"] or _split_names(header)) and "Section" in header:
        return _canvas_roster(Path(path), header, body)
    columns = moodle_columns(header, body)
    if columns is not None:
        return _moodle_roster(Path(path), header, body, columns)
    raise RosterError(
        f"{path}: not a Canvas gradebook export (Student, ID, SIS User ID, SIS Login ID, "
        "Section, ...) nor a Moodle grading worksheet (Identifier, Full name, ..., Grade, ...); "
        f"its header starts {', '.join(header[:5])}"
    )


def _cell(row, i) -> str:
    return row[i].strip() if 0 <= i < len(row) else ""


SPLIT_NAMES = (["LastName", "FirstName"], ["Last Name", "First Name"])


def _split_names(header: list) -> list | None:
    """Canvas's export with student names split (``LastName, FirstName, ID, ...``)."""
    return next((n for n in SPLIT_NAMES if header[:3] == n + ["ID"]), None)


def _canvas_name(row, col: dict) -> str:
    if "Student" in col:
        return _cell(row, col["Student"])
    last, first = (_cell(row, col[h]) for h in _split_names(list(col)))
    if last.startswith("Points Possible") or first.startswith("Points Possible"):
        return "Points Possible"
    return f"{last}, {first}" if last and first else last or first


def _canvas_roster(path, header, body) -> Roster:
    col = {h: i for i, h in enumerate(header)}
    roster = Roster("canvas", path, header, [], [])
    for row in body:
        name, ident = _canvas_name(row, col), _cell(row, col["ID"])
        if name == "Points Possible" or (not ident and name.startswith("Points Possible")):
            roster.points_row = row
            continue
        if not re.fullmatch(r"[0-9]+", ident):  # ASCII digits only: "５" is not an id
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


# Moodle's worksheet columns in a few site languages (the structure decides for the others).
MOODLE_NAMES = {
    "Feedback comments": ("Feedback comments", "Feedback als Kommentar", "Commentaires de "
                          "feedback", "Comentarios de retroalimentación"),
    "Email address": ("Email address", "E-Mail-Adresse", "Adresse de courriel", "Dirección de "
                      "correo"),
}  # fmt: skip
LATE_WORDS = r"\b(late|verspätet|en retard|retraso|tarde|ritardo|te laat)\b"


def _numeric(values: list) -> bool:
    return bool(values) and all(_number(v) is not None for v in values)


def moodle_columns(header: list, body: list) -> dict | None:
    """The worksheet's columns by their English names (``Identifier, Full name, Email
    address, Status, Grade, Maximum Grade, Last modified (grade), Feedback comments``), from
    the English header or, in any site language, from the worksheet's structure: the first
    column is a word and a participant number on every row, the maximum grade the first
    column whose cells are all the same number, the grade and the status just before it, the
    feedback comments last. None when it is not a worksheet."""
    if all(h in header for h in MOODLE_REQUIRED):
        return {h: h for h in header} | {"Identifier": "Identifier", "Grade": "Grade"}
    rows = [r for r in body if any(c.strip() for c in r)]
    if len(header) < 6 or not rows:
        return None
    if not all(re.fullmatch(r"[^0-9]+?\s*[0-9]+", _cell(r, 0)) for r in rows):
        return None
    maxcol = next(
        (
            i
            for i in range(3, len(header))
            if _numeric([_cell(r, i) for r in rows]) and len({_cell(r, i) for r in rows}) == 1
        ),
        None,
    )
    if maxcol is None or not all(_cell(r, maxcol - 1) == "" or _number(_cell(r, maxcol - 1))
                                 is not None for r in rows):  # fmt: skip
        return None
    out = {"Identifier": header[0], "Full name": header[1], "Status": header[maxcol - 2],
           "Grade": header[maxcol - 1], "Maximum Grade": header[maxcol]}  # fmt: skip
    for english, names in MOODLE_NAMES.items():
        found = [h for h in header if h in names]
        if found:
            out[english] = found[0]
    emails = [h for i, h in enumerate(header[2 : maxcol - 2], start=2)
              if all("@" in _cell(r, i) for r in rows)]  # fmt: skip
    if emails and "Email address" not in out:
        out["Email address"] = emails[0]
    if "Feedback comments" not in out and len(header) >= maxcol + 5:
        out["Feedback comments"] = header[-1]
    if "Feedback comments" in out:
        out["Last modified (grade)"] = header[header.index(out["Feedback comments"]) - 1]
    return out


def _moodle_roster(path, header, body, columns: dict) -> Roster:
    col = {english: header.index(h) for english, h in columns.items() if h in header}
    roster = Roster("moodle", path, header, [], [], columns=columns)
    for row in body:
        m = re.search(r"(?<![0-9])([0-9]+)\s*$", _cell(row, col["Identifier"]), re.ASCII)
        if not m:
            continue
        roster.rows.append(row)
        name = _cell(row, col["Full name"])
        keys = {_norm(name), _norm(m.group(1))}
        if "Email address" in col and _cell(row, col["Email address"]):
            email = _cell(row, col["Email address"])
            keys |= {_norm(email), _norm(email.split("@")[0])}
        status = _cell(row, col["Status"]).lower() if "Status" in col else ""
        late = bool(re.search(LATE_WORDS, status)) if "Status" in col else None
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


def _kept(existing: str, ours: str | None, overwrite: bool, who: str, conflicts: list) -> str:
    """The cell to write where the LMS already holds ``existing``: ours when the LMS has
    nothing (or the same), else the LMS's kept (``EX`` always) unless ``overwrite``, the
    conflict listed either way."""
    if ours is None:
        return existing
    if existing == "" or _same_grade(existing, ours):
        return ours
    verb = "overwritten (--overwrite)" if overwrite else "kept (--overwrite to replace it)"
    conflicts.append(f"conflict: {who}: the LMS has {existing!r}, the gradebook {ours!r}; {verb}")
    return ours if overwrite else existing


def _same_grade(a: str, b: str) -> bool:
    x, y = _number(a), _number(b)
    return a.strip() == b.strip() or (x is not None and y is not None and abs(x - y) < 0.005)


def _canvas_headers(roster: Roster, assignments: list, columns: dict, problems: list) -> list:
    headers = []
    for a in assignments:
        own = columns.get(a) or assignment_column(roster.header, a)
        if own is None:
            problems.append(
                f"{a}: no column for it in {roster.path.name}; written as a new column "
                f"{a!r} (Canvas creates an assignment for it on import; map it to its column "
                "with --column ASSIGNMENT=COLUMN)"
            )
        headers.append(own or a)
    return headers


def _canvas_scales(records, roster, assignments, headers, scale: bool, problems) -> dict:
    """Per assignment, the factor from the course's points to Canvas's points possible (1
    unless ``scale``; a difference is noted either way)."""
    col = {h: i for i, h in enumerate(roster.header)}
    factors = {}
    for a, h in zip(assignments, headers):
        factors[a] = 1.0
        if roster.points_row is None:
            continue
        possible = _number(_cell(roster.points_row, col.get(h, -1)))
        mine = {_number(r.get("max")) or 0.0 for r in records if r["assignment"] == a}
        if possible is None or not mine or not all(abs(possible - m) > 1e-9 for m in mine):
            continue
        if scale and max(mine) > 0:
            factors[a] = possible / max(mine)
            problems.append(
                f"{h}: Canvas says {_fmt(possible)} points possible, the course's exercise has "
                f"{_fmt(max(mine))}; grades scaled to {_fmt(possible)} (--scale)"
            )
        else:
            problems.append(
                f"{h}: Canvas says {_fmt(possible)} points possible, the course's exercise has "
                f"{_fmt(max(mine))}; the points are exported as they are (--scale scales them)"
            )
    return factors


def export_canvas(
    records: list,
    roster: Roster,
    assignments: list,
    columns: dict | None = None,
    overwrite: bool = False,
    scale: bool = False,
) -> tuple[str, list[str]]:
    """The CSV text for Canvas's gradebook import, and problems worth a look (conflicts with
    what Canvas holds among them, starting ``conflict:``). ``columns`` maps an assignment to
    its column; what Canvas holds (``EX``, a grade) is kept unless ``overwrite``."""
    problems: list = []
    conflicts: list = []
    col = {h: i for i, h in enumerate(roster.header)}
    ident = (_split_names(roster.header) or []) + [h for h in CANVAS_IDENTITY if h in col]
    headers = _canvas_headers(roster, assignments, columns or {}, problems)
    factors = _canvas_scales(records, roster, assignments, headers, scale, problems)
    by_key = {(r["student_id"], r["assignment"]): r for r in records}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([safe_cell(h) for h in ident + headers])
    exact = {"ID", "SIS User ID", "SIS Login ID"}
    for s in roster.students:
        row = roster.rows[s.row]
        out = [_cell(row, col[h]) if h in exact else safe_cell(_cell(row, col[h])) for h in ident]
        for a, h in zip(assignments, headers):
            rec = by_key.get((s.id, a))
            value = _score(rec) if rec else None
            ours = None if value is None else _fmt(value * factors[a])
            if rec is not None and rec.get("status") == "excused":
                ours = "EX"
            existing = _cell(row, col[h]) if h in col else ""
            if existing.upper() == "EX" and not overwrite and ours not in (None, "EX"):
                conflicts.append(
                    f"conflict: {s.name} ({s.id}) {h}: excused (EX) in Canvas, the gradebook "
                    f"has {ours}; EX kept (--overwrite to replace it)"
                )
                out.append(existing)
                continue
            out.append(_kept(existing, ours, overwrite, f"{s.name} ({s.id}) {h}", conflicts))
        w.writerow(out)
    problems += _strangers(records, roster, set(assignments), "not exported")
    return buf.getvalue(), problems + conflicts


def _strangers(records, roster, assignments: set, what: str) -> list:
    roster_ids = {s.id for s in roster.students}
    return [
        f"{clean_text(r['student'], max_chars=80)} ({r['student_id']}) is not in "
        f"{roster.path.name}: {r['assignment']} {what}"
        for r in records
        if r["assignment"] in assignments
        and r["student_id"] not in roster_ids
        and r.get("status") != "superseded"
    ]


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
    records: list,
    roster: Roster,
    assignment: str,
    question_ids: list,
    overwrite: bool = False,
    comments: dict | None = None,
) -> tuple[str, list[str]]:
    """The worksheet with ``Grade`` and ``Feedback comments`` filled, other cells untouched
    (text a spreadsheet would run as a formula neutralised, ``Identifier`` exact). A grade or
    a comment the worksheet already holds is kept unless ``overwrite``; conflicts are listed
    (starting ``conflict:``). ``comments`` (student id -> text,
    :func:`.lms_feedback.moodle_comments`) gives each student's whole feedback for the
    comment; without it, a one-line summary."""
    problems, conflicts = [], []
    header = list(roster.header)
    col = {h: i for i, h in enumerate(header)}
    g = roster.columns.get("Grade", "Grade")
    fc = roster.columns.get("Feedback comments", "Feedback comments")
    if fc not in col:
        header.append(fc)
        col[fc] = len(header) - 1
        problems.append(
            "the worksheet has no 'Feedback comments' column (is the assignment's 'Feedback "
            "comments' feedback type on?); added one"
        )
    if roster.columns.get("Last modified (grade)", "Last modified (grade)") not in col:
        problems.append(
            "the worksheet has no 'Last modified (grade)' column: Moodle's upload needs it "
            "(download the worksheet again from the assignment)"
        )
    by_key = {(r["student_id"], r["assignment"]): r for r in records}
    exact = {col[c] for c in (roster.columns.get("Identifier", "Identifier"), g) if c in col}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for s in roster.students:
        row = list(roster.rows[s.row]) + [""] * (len(header) - len(roster.rows[s.row]))
        row = [c if i in exact else safe_cell(c) for i, c in enumerate(row)]
        rec = by_key.get((s.id, assignment))
        value = _score(rec) if rec else None
        if value is not None:
            value = _moodle_scaled(value, rec, row, roster, assignment, problems)
            who = f"{s.name} ({s.id})"
            row[col[g]] = _kept(
                row[col[g]].strip(), _fmt(value), overwrite, f"{who} grade", conflicts
            )
            ours = safe_cell((comments or {}).get(s.id) or summary_comment(rec, question_ids))
            existing = row[col[fc]].strip()
            if existing and existing != ours and not overwrite:
                conflicts.append(
                    f"conflict: {who}: the worksheet already has feedback comments; kept "
                    "(--overwrite to replace them)"
                )
            else:
                row[col[fc]] = ours
        w.writerow(row)
    problems += _strangers(records, roster, {assignment}, "not exported")
    return buf.getvalue(), problems + conflicts


def _moodle_scaled(value: float, rec: dict, row: list, roster: Roster, assignment, problems):
    """A grade scaled to the worksheet's maximum grade (noted once)."""
    col = {h: i for i, h in enumerate(roster.header)}
    theirs = _number(_cell(row, col.get(roster.columns.get("Maximum Grade", "Maximum Grade"), -1)))
    mine = _number(rec.get("max")) or 0.0
    if theirs and mine and abs(theirs - mine) > 1e-9:
        note = (
            f"{assignment}: Moodle's maximum grade is {_fmt(theirs)}, the course's "
            f"{_fmt(mine)}; grades scaled to {_fmt(theirs)}"
        )
        if note not in problems:
            problems.append(note)
        return value * theirs / mine
    return value
