"""Between the commands and the gradebook database: opening it for a CSV (importing a CSV
written before the database), noticing hand edits of the CSV, and rewriting the CSV view.

The CSV is a view: after every command it is rewritten from the database, and what was
written is remembered (its sha256 and its cells). Before a command changes anything it
compares the CSV with that: a cell changed by hand is never overwritten. With
``--import-edits`` the changes become decisions (a written answer's points, a changed
``score`` as an adjustment, ``late`` set to ``no`` as an extension, ``status`` set to
``excused`` as a waiver, a deleted row as a removal); without it the command stops and says
how. Changes that mean no decision (a changed ``total``, a name, a note) are refused either
way, listed, so the instructor can undo them or use the command that does it.
"""

from __future__ import annotations

import getpass
import hashlib
from dataclasses import dataclass
from pathlib import Path

from . import gradebook as gb
from .gradebook_db import Gradebook, db_path, student_key

__all__ = [
    "open_for_csv",
    "origin_of",
    "find_edits",
    "check_edits",
    "write_view",
    "question_columns",
    "Edit",
]


def origin_of(command: str, grader: str | None = None) -> str:
    """Who decided, and with which command: ``"grade --manual (by alice)"``."""
    try:
        who = grader or getpass.getuser()
    except Exception:  # no user name on this machine
        who = grader or "unknown"
    return f"{command} (by {who})"


def _key(rec) -> str:
    return f"{student_key(rec['student_id'])}\x1f{rec['assignment']}"


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def open_for_csv(csv_path, manual_ids: dict, origin: str) -> tuple[Gradebook, str]:
    """The database beside ``csv_path`` (created when new). A gradebook CSV written before the
    database is imported into it first (its written-answer points and typed scores become
    decisions). Returns the database and a line to print (empty when nothing was imported).
    Raises ValueError for a CSV that is not a gradebook, or a database too new."""
    csv_path = Path(csv_path)
    records = None
    if not db_path(csv_path).exists() and csv_path.exists():
        _, records = gb.read_gradebook(csv_path)  # not a gradebook: raise before creating one
    db = Gradebook.open(db_path(csv_path))
    if db.is_empty() and db.get_meta("csv_sha256") is None and csv_path.exists():
        if records is None:
            _, records = gb.read_gradebook(csv_path)
        made = db.import_records(records, manual_ids, origin + ", imported from " + csv_path.name)
        with db.transaction():
            _remember(db, csv_path)
        return db, (
            f"imported {csv_path.name} into {db.path.name} ({len(records)} rows, {made} "
            "decisions kept from it: written-answer points, typed scores)"
        )
    return db, ""


def _remember(db: Gradebook, csv_path: Path) -> None:
    """Remember what the CSV holds now (its sha256 and its cells, as read back)."""
    _, records = gb.read_gradebook(csv_path)
    db.set_meta("csv_sha256", _sha(csv_path))
    db.set_meta("csv_records", {_key(r): r for r in records})


@dataclass
class Edit:
    student_id: str
    assignment: str
    column: str  # a column, or "" for a whole row (deleted or added)
    old: str
    new: str

    def __str__(self) -> str:
        where = f"{self.student_id} {self.assignment}"
        if not self.column:
            return f"{where}: row {'deleted' if self.new == '' else 'added'}"
        return f"{where}: {self.column} {self.old!r} -> {self.new!r}"


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return abs(float(a) - float(b)) < 1e-9
    except (TypeError, ValueError):
        return False


def find_edits(db: Gradebook, csv_path) -> list[Edit]:
    """The cells of the CSV changed since mha-course last wrote it (none when it is as
    written, or absent)."""
    csv_path = Path(csv_path)
    if not csv_path.exists() or db.get_meta("csv_sha256") in (None, _sha(csv_path)):
        return []
    _, now_records = gb.read_gradebook(csv_path)
    then = db.get_meta("csv_records", {})
    now = {_key(r): r for r in now_records}
    edits = []
    for k, old in then.items():
        new = now.get(k)
        if new is None:
            edits.append(Edit(old["student_id"], old["assignment"], "", "row", ""))
            continue
        for col in sorted(set(old) | set(new)):
            if not _same(str(old.get(col, "")), str(new.get(col, ""))):
                edits.append(
                    Edit(old["student_id"], old["assignment"], col, old.get(col, ""), new[col])
                    if col in new
                    else Edit(old["student_id"], old["assignment"], col, old.get(col, ""), "")
                )
    for k, new in now.items():
        if k not in then:
            edits.append(Edit(new["student_id"], new["assignment"], "", "", "row"))
    return edits


def _as_decision(db: Gradebook, e: Edit, manual_ids: dict, origin: str) -> str | None:
    """Record one edit as a decision; return why it cannot be one (None when recorded)."""
    st = db.find_row(e.student_id, e.assignment)
    if st is None:
        return "a row added by hand (grade the file instead)"
    if not e.column:
        db.add_decision(
            "remove", st["student_id"], e.assignment, answer_sha256=st["file_sha256"] or "",
            comment="row deleted from the CSV by hand", origin=origin,
        )  # fmt: skip
        return None
    if e.column in manual_ids.get(e.assignment, {}):
        w = st["written"][e.column] if e.column in st["written"] else None
        try:
            value = float(e.new)
        except ValueError:
            return "not a number of points"
        if w is None or not 0 <= value <= float(w[1]):
            return "points outside the question's range"
        db.add_decision(
            "manual", st["student_id"], e.assignment, grade_id=e.column, answer_sha256=w[0],
            points=value, comment="", origin=origin,
        )  # fmt: skip
        return None
    if e.column == "score":
        try:
            delta = round(float(e.new) - float(e.old), 4)
        except ValueError:
            return "not a number (use mha-course adjust)"
        db.add_decision(
            "adjust", st["student_id"], e.assignment, points=delta,
            comment="typed into the score column of the CSV", origin=origin,
        )  # fmt: skip
        return None
    if e.column == "late" and e.old == "yes" and e.new == "no":
        db.add_decision("extension", st["student_id"], e.assignment,
                        comment="late set to no in the CSV", origin=origin)  # fmt: skip
        return None
    if e.column == "status" and e.new == "excused":
        db.add_decision("waiver", st["student_id"], e.assignment,
                        comment="status set to excused in the CSV", origin=origin)  # fmt: skip
        return None
    return "this column is computed (use mha-course adjust, extend or remove)"


def check_edits(
    db: Gradebook, csv_path, import_edits: bool, manual_ids: dict, origin: str
) -> tuple[str | None, list[str]]:
    """``(refusal, lines)``: the message to stop with when the CSV was edited by hand and the
    edits are not (or cannot all be) imported; else None and lines to print about the edits
    imported as decisions."""
    edits = find_edits(db, csv_path)
    if not edits:
        return None, []
    name = Path(csv_path).name
    shown = "; ".join(str(e) for e in edits[:8]) + (" ..." if len(edits) > 8 else "")
    if not import_edits:
        return (
            f"{name} was changed by hand since mha-course wrote it ({len(edits)} change(s): "
            f"{shown}). Nothing was written. Run the command again with --import-edits to keep "
            f"them as decisions (recorded in {db.path.name}), or undo them; {name} is never "
            "overwritten while it holds changes of yours",
            [],
        )
    with db.transaction():
        problems = [
            (e, _as_decision(db, e, manual_ids, origin + ", edited in " + name)) for e in edits
        ]
        bad = [f"{e} ({why})" for e, why in problems if why]
        if bad:
            db.conn.rollback()
    if bad:
        return (
            f"{name} was changed by hand in ways that are not decisions: " + "; ".join(bad)
            + f". Nothing was written or imported; undo these changes in {name} (the others can "
            "then be imported with --import-edits)",
            [],
        )  # fmt: skip
    return None, [f"imported {len(edits)} hand edit(s) of {name} as decisions: {shown}"]


def question_columns(records: list, templates: dict, old_columns=()) -> list[str]:
    """The question columns: every assignment's in the course's order, then any others."""
    qids: list = []
    for a in sorted({r["assignment"] for r in records if r["assignment"]}):
        t = templates.get(a)
        qids += [q.grade_id for q in (t.questions if t else []) if q.grade_id not in qids]
    for r in records:
        for c in r:
            if c not in qids and c not in gb.FIXED_BEFORE + gb.FIXED_AFTER:
                qids.append(c)
    qids += [c for c in old_columns if c not in qids and c not in gb.FIXED_BEFORE + gb.FIXED_AFTER]
    return qids


def write_view(db: Gradebook, csv_path, templates: dict) -> list:
    """Rewrite the CSV from the database and remember it; return the records written."""
    records = db.view()
    gb.write_gradebook(records, Path(csv_path), question_columns(records, templates))
    with db.transaction():
        _remember(db, Path(csv_path))
    return records
