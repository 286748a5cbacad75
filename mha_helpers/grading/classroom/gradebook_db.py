"""The gradebook database: every point, where it came from, and every instructor decision.

The gradebook is a SQLite file (Python's own :mod:`sqlite3`, no server) beside the CSV:
``gradebook.csv`` -> ``gradebook.sqlite``. The CSV is a *view* of it, rewritten after every
command (:mod:`.gradebook` writes it); the database is what commands read.

What it holds (schema version :data:`SCHEMA_VERSION`, in ``PRAGMA user_version``):

* ``submissions``: every file graded: its name as shown, size, sha256, where the student's
  identity came from, the LMS's user and submission ids, its time, whether it was late and who
  said so, its status and notes, when and by whom it was graded, and whether it counts;
* ``results``: the automatic result of every question of every submission (status, points,
  maximum, the judge's named mistake, the message);
* ``answers``: the text of every written answer and its sha256, per submission and grade_id;
* ``rows``: one per (student, assignment): the automatic record of the copy that counts;
* ``decisions``: what an instructor decided, each with its time and origin, never replaced by
  grading: a written answer's points and comment (``manual``, keyed to the answer text's
  sha256: it stands only while the text is the same), an adjustment of the score with its
  reason (``adjust``), an extension (``extension``: the work counts as on time), a waiver
  (``waiver``: the student is excused from the assignment), a removed row (``remove``, for the
  file it had), and which copy counts (``pick``).

Stable API (used by ``mha-course review`` and ``report``; names are added, never renamed)::

    db_path(where) -> Path
    answer_sha256(text) -> str
    Gradebook.open(where, create=True) -> Gradebook    # also a context manager; .close()
    gb.assignments() -> list[str]
    gb.written_answers(assignment, grade_id) -> list[WrittenAnswer]
    gb.pending(assignment=None, grade_id=None) -> list[WrittenAnswer]
    gb.record_manual(student_id, assignment, grade_id, answer_sha256, points, comment="",
                     origin="") -> Decision          # raises DecisionError (a ValueError)
    gb.results(assignment=None, counted_only=True) -> Iterator[Result]
    gb.decisions(student_id=None, assignment=None, kind=None) -> list[Decision]
    gb.view(assignment=None) -> list[dict]           # the gradebook records, as in the CSV

``where`` is a course folder (``<folder>/gradebook.sqlite``), a gradebook CSV (its ``.sqlite``
sibling) or the database file itself. ``student_id`` is the LMS identity as in the CSV.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .untrusted import normalise_name

__all__ = [
    "SCHEMA_VERSION",
    "DB_NAME",
    "db_path",
    "answer_sha256",
    "student_key",
    "Gradebook",
    "WrittenAnswer",
    "Result",
    "Decision",
    "DecisionError",
]

SCHEMA_VERSION = 1
DB_NAME = "gradebook.sqlite"
DECISION_KINDS = ("manual", "adjust", "extension", "waiver", "remove", "pick")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY,
    student_key TEXT NOT NULL, student_id TEXT NOT NULL, student TEXT NOT NULL,
    assignment TEXT NOT NULL, file TEXT, size INTEGER, sha256 TEXT,
    identity_source TEXT, lms_user_id TEXT, lms_submission_id TEXT,
    submitted_at TEXT, late INTEGER, late_source TEXT,
    status TEXT, notes TEXT, graded_at TEXT, origin TEXT, counted INTEGER
);
CREATE INDEX IF NOT EXISTS submissions_key ON submissions (student_key, assignment);
CREATE TABLE IF NOT EXISTS results (
    submission_id INTEGER NOT NULL, grade_id TEXT NOT NULL, kind TEXT, status TEXT,
    points REAL, max_points REAL, mistake TEXT, message TEXT, cause TEXT,
    PRIMARY KEY (submission_id, grade_id)
);
CREATE TABLE IF NOT EXISTS answers (
    submission_id INTEGER NOT NULL, grade_id TEXT NOT NULL, text TEXT, sha256 TEXT,
    max_points REAL, answered INTEGER,
    PRIMARY KEY (submission_id, grade_id)
);
CREATE TABLE IF NOT EXISTS rows (
    student_key TEXT NOT NULL, assignment TEXT NOT NULL, student_id TEXT NOT NULL,
    student TEXT NOT NULL, submission_id INTEGER, file_sha256 TEXT, record TEXT NOT NULL,
    written TEXT NOT NULL, updated_at TEXT, origin TEXT,
    PRIMARY KEY (student_key, assignment)
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY, uid TEXT UNIQUE NOT NULL, kind TEXT NOT NULL,
    student_key TEXT NOT NULL, student_id TEXT NOT NULL, assignment TEXT NOT NULL,
    grade_id TEXT, answer_sha256 TEXT, points REAL, comment TEXT,
    created_at TEXT NOT NULL, origin TEXT
);
CREATE INDEX IF NOT EXISTS decisions_key ON decisions (student_key, assignment);
"""


class DecisionError(ValueError):
    """A decision that cannot be recorded (no such row or question, points out of range, an
    answer that changed since it was read)."""


def db_path(where) -> Path:
    """The database for a course folder, a gradebook CSV or the database file itself."""
    p = Path(where)
    if p.suffix.lower() in (".sqlite", ".db", ".sqlite3"):
        return p
    if p.suffix.lower() == ".csv":
        return p.with_suffix(".sqlite")
    return p / DB_NAME


def answer_sha256(text) -> str:
    """The sha256 of a written answer's text, line endings and surrounding space ignored."""
    body = str(text or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def student_key(student_id) -> str:
    """A student id as compared (normalised, case-folded), as the CSV's rows are keyed."""
    return normalise_name(str(student_id)).casefold()


def now() -> str:
    """The time now, UTC, ISO 8601 to the millisecond."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


@dataclass
class Decision:
    id: int
    kind: str  # one of DECISION_KINDS
    student_id: str
    assignment: str
    grade_id: str | None
    answer_sha256: str | None  # manual: the text scored; remove: the file removed
    points: float | None  # manual: the points; adjust: the change of the score
    comment: str  # manual: the comment for the student; otherwise the reason
    created_at: str
    origin: str
    uid: str = ""


@dataclass
class WrittenAnswer:
    student_id: str
    student: str
    assignment: str
    grade_id: str
    max_points: float
    text: str
    sha256: str
    answered: bool  # False: the student left it empty (it scores 0, it is not pending)
    file: str  # the file it came from, as shown
    decision: Decision | None  # the instructor's points for exactly this text, if any
    earlier: Decision | None  # the latest points given for another (earlier) text, if any

    @property
    def status(self) -> str:
        """``scored``, ``pending``, ``changed`` (pending again: scored for another text) or
        ``unanswered``."""
        if self.decision is not None:
            return "scored"
        if not self.answered:
            return "unanswered"
        return "changed" if self.earlier is not None else "pending"


@dataclass
class Result:
    student_id: str
    student: str
    assignment: str
    grade_id: str
    kind: str  # function, value, choice, manual
    status: str  # passed, failed, error, timeout, manual, unanswered, ...
    points: float | None
    max_points: float
    mistake: str | None  # the judge's name for a classic mistake it recognised
    message: str
    submission_id: int
    counted: bool
    cause: str | None = None  # the judge's diagnosis (what separates right from wrong), if any


def _state(r) -> dict:
    """A row's stored state from its database row."""
    return {
        "key": r["student_key"],
        "assignment": r["assignment"],
        "student_id": r["student_id"],
        "student": r["student"],
        "submission_id": r["submission_id"],
        "file_sha256": r["file_sha256"],
        "record": json.loads(r["record"]),
        "written": json.loads(r["written"]),
        "updated_at": r["updated_at"] or "",
    }


def _decision(r) -> Decision:
    return Decision(
        r["id"],
        r["kind"],
        r["student_id"],
        r["assignment"],
        r["grade_id"],
        r["answer_sha256"],
        r["points"],
        r["comment"] or "",
        r["created_at"],
        r["origin"] or "",
        r["uid"],
    )


class Gradebook:
    """One gradebook database (see the module's docstring for the API)."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn, self.path = conn, path

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, where, create: bool = True) -> Gradebook:
        """Open (or, with ``create``, create) the database for ``where``; raise
        FileNotFoundError when it does not exist and ``create`` is False, ValueError for a
        database of a newer schema than this version knows."""
        path = db_path(where)
        if not path.exists() and not create:
            raise FileNotFoundError(f"no gradebook database {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=30)
        conn.row_factory = sqlite3.Row
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            conn.close()
            raise ValueError(
                f"{path} is a gradebook of schema {version}; this mha-course knows up to "
                f"{SCHEMA_VERSION} (update mha-course)"
            )
        if version < SCHEMA_VERSION:
            with conn:
                conn.executescript(_SCHEMA)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        return cls(conn, path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @contextmanager
    def transaction(self):
        """Everything inside is written at once, or (on an error) not at all."""
        with self.conn:
            yield self

    def is_empty(self) -> bool:
        return self.conn.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == 0

    def get_meta(self, key: str, default=None):
        r = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if r is None else json.loads(r[0])

    def set_meta(self, key: str, value) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
        )

    # --- reading ------------------------------------------------------------------------

    def assignments(self) -> list[str]:
        """The assignments with a row in the gradebook."""
        q = "SELECT DISTINCT assignment FROM rows WHERE assignment != '' ORDER BY assignment"
        return [r[0] for r in self.conn.execute(q)]

    def row_states(self, assignment=None) -> list[dict]:
        """Every row's stored state: ``key, assignment, student_id, student, submission_id,
        file_sha256, record`` (the automatic record) and ``written`` ({grade_id: [sha256, max,
        answered]})."""
        sql = "SELECT * FROM rows" + (" WHERE assignment = ?" if assignment else "")
        return [_state(r) for r in self.conn.execute(sql, (assignment,) if assignment else ())]

    def decisions(self, student_id=None, assignment=None, kind=None) -> list[Decision]:
        """Decisions, oldest first, optionally of one student, assignment and kind."""
        sql, args = "SELECT * FROM decisions WHERE 1", []
        if student_id is not None:
            sql, args = sql + " AND student_key = ?", args + [student_key(student_id)]
        if assignment is not None:
            sql, args = sql + " AND assignment = ?", args + [assignment]
        if kind is not None:
            sql, args = sql + " AND kind = ?", args + [kind]
        return [_decision(r) for r in self.conn.execute(sql + " ORDER BY created_at, id", args)]

    def decisions_by_row(self) -> dict:
        """All decisions grouped by (student_key, assignment), oldest first."""
        out: dict = {}
        for r in self.conn.execute("SELECT * FROM decisions ORDER BY created_at, id"):
            out.setdefault((r["student_key"], r["assignment"]), []).append(_decision(r))
        return out

    def written_answers(self, assignment: str, grade_id: str) -> list[WrittenAnswer]:
        """Every counted row's written answer to ``grade_id`` (rows removed or excused left
        out), with the decision that stands for its text and the latest one for another."""
        from .gradebook_view import standing_manual, visible

        decided = self.decisions_by_row()
        out = []
        for st in self.row_states(assignment):
            mine = decided.get((st["key"], assignment), [])
            w = st["written"].get(grade_id)
            if w is None or not visible(st, mine):
                continue
            sha, maximum, answered = w[0], float(w[1]), bool(w[2])
            decision, earlier = standing_manual(mine, grade_id, sha)
            out.append(
                WrittenAnswer(
                    st["student_id"],
                    st["student"],
                    assignment,
                    grade_id,
                    maximum,
                    self._answer_text(st["submission_id"], grade_id),
                    sha,
                    answered,
                    st["record"].get("file", ""),
                    decision,
                    earlier,
                )
            )
        return sorted(out, key=lambda a: (normalise_name(a.student).casefold(), a.student_id))

    def _answer_text(self, submission_id, grade_id) -> str:
        if submission_id is None:
            return ""
        r = self.conn.execute(
            "SELECT text FROM answers WHERE submission_id = ? AND grade_id = ?",
            (submission_id, grade_id),
        ).fetchone()
        return (r[0] or "") if r else ""

    def written_ids(self, assignment=None) -> list[tuple[str, str]]:
        """(assignment, grade_id) of every written-answer question in the gradebook."""
        seen: dict = {}
        for st in self.row_states(assignment):
            for gid in st["written"]:
                seen.setdefault((st["assignment"], gid), None)
        return sorted(seen)

    def pending(self, assignment=None, grade_id=None) -> list[WrittenAnswer]:
        """Written answers waiting for the instructor: answered, and no points for this text
        (a changed answer is pending again; its ``earlier`` decision says what it had)."""
        out = []
        for a, gid in self.written_ids(assignment):
            if grade_id is not None and gid != grade_id:
                continue
            out += [w for w in self.written_answers(a, gid) if w.status in ("pending", "changed")]
        return out

    def results(self, assignment=None, counted_only: bool = True) -> Iterator[Result]:
        """The automatic result of every question, per submission (by default only of the
        copies that count, the rows of the gradebook)."""
        sql = (
            "SELECT s.student_id, s.student, s.assignment, s.counted, r.* FROM results r "
            "JOIN submissions s ON s.id = r.submission_id WHERE 1"
        )
        args: list = []
        if assignment is not None:
            sql, args = sql + " AND s.assignment = ?", [assignment]
        if counted_only:
            sql += " AND s.id IN (SELECT submission_id FROM rows WHERE submission_id IS NOT NULL)"
        for r in self.conn.execute(sql + " ORDER BY s.assignment, s.student_id, r.grade_id", args):
            yield Result(
                r["student_id"],
                r["student"],
                r["assignment"],
                r["grade_id"],
                r["kind"] or "",
                r["status"] or "",
                r["points"],
                float(r["max_points"] or 0),
                r["mistake"],
                r["message"] or "",
                r["submission_id"],
                bool(r["counted"]),
                r["cause"],
            )

    def view(self, assignment=None) -> list[dict]:
        """The gradebook's records (flat dicts, as the CSV shows them): each row's automatic
        record with every decision applied (:mod:`.gradebook_view`)."""
        from .gradebook_view import view_records

        return view_records(self, assignment)

    # --- decisions ----------------------------------------------------------------------

    def add_decision(
        self,
        kind: str,
        student_id: str,
        assignment: str,
        *,
        grade_id=None,
        answer_sha256=None,
        points=None,
        comment: str = "",
        origin: str = "",
        created_at: str | None = None,
        uid: str | None = None,
    ) -> Decision:
        """Record a decision (inside the caller's transaction, if any); never replaces one."""
        if kind not in DECISION_KINDS:
            raise DecisionError(f"unknown decision kind {kind!r}")
        created_at = created_at or now()
        key = student_key(student_id)
        fields = [kind, key, assignment, grade_id, answer_sha256, points, comment, created_at]
        uid = uid or hashlib.sha256(json.dumps(fields + [origin]).encode()).hexdigest()[:32]
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO decisions (uid, kind, student_key, student_id, assignment, "
            "grade_id, answer_sha256, points, comment, created_at, origin) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (uid, kind, key, str(student_id), assignment, grade_id, answer_sha256, points,
             comment, created_at, origin),
        )  # fmt: skip
        r = self.conn.execute("SELECT * FROM decisions WHERE uid = ?", (uid,)).fetchone()
        del cur
        return _decision(r)

    def find_row(self, student_id: str, assignment: str) -> dict | None:
        """The stored state of one row (see :meth:`row_states`), or None."""
        r = self.conn.execute(
            "SELECT * FROM rows WHERE student_key = ? AND assignment = ?",
            (student_key(student_id), assignment),
        ).fetchone()
        return None if r is None else _state(r)

    def record_manual(
        self,
        student_id: str,
        assignment: str,
        grade_id: str,
        answer_sha256: str,
        points: float,
        comment: str = "",
        origin: str = "",
    ) -> Decision:
        """Record the instructor's points (and comment) for one written answer, for the text
        whose sha256 is ``answer_sha256``: they stand only while the student's answer is that
        text. Raises :class:`DecisionError` when there is no such row or question, the points
        are outside 0..max, or the answer is no longer that text (read it again)."""
        st = self.find_row(student_id, assignment)
        if st is None:
            raise DecisionError(f"no row for student {student_id!r} in assignment {assignment}")
        w = st["written"].get(grade_id)
        if w is None:
            raise DecisionError(f"{grade_id!r} is not a written-answer question of {assignment}")
        try:
            value = float(points)
        except (TypeError, ValueError):
            raise DecisionError(f"points {points!r} is not a number") from None
        if not 0 <= value <= float(w[1]):
            raise DecisionError(f"{value:g} points is outside 0..{float(w[1]):g} for {grade_id}")
        if answer_sha256 != w[0]:
            raise DecisionError(
                f"the written answer of {student_id} to {grade_id} is not the text scored "
                "(it changed since it was read): read it again"
            )
        with self.transaction():
            return self.add_decision(
                "manual",
                st["student_id"],
                assignment,
                grade_id=grade_id,
                answer_sha256=w[0],
                points=value,
                comment=str(comment or ""),
                origin=origin,
            )

    # --- storing what grading found -----------------------------------------------------

    def store(
        self, rows: list, records: list, manual_ids: dict, origin: str = "", copies=(), kinds=None
    ) -> None:
        """Store a grading run in one transaction: a submission (with its results and
        written answers) for every row graded now, and every record (the automatic state of
        each row: graded now, kept, or a roster's missing row) as its row's state.

        ``rows`` are :mod:`.row` rows (with ``written`` {grade_id: text} and ``submitted``
        {size, sha256, mtime} when grading read them); ``records`` their flat gradebook
        records, keyed like the rows; ``manual_ids`` {assignment: {grade_id: max points}};
        ``copies`` the rows of copies that do not count (stored as submissions, counted 0);
        ``kinds`` {assignment: {grade_id: kind}} the questions' kinds, for :meth:`results`."""
        stamp = now()
        self._kinds = kinds or {}
        by_key = {}
        for row in rows:
            by_key[
                (student_key(row.get("student_id") or row["student"]), row["assignment"] or "")
            ] = row
        with self.transaction():
            for row in copies:
                self._store_submission(row, manual_ids, stamp, origin, counted=0)
            for rec in records:
                key = (student_key(rec["student_id"]), rec["assignment"] or "")
                row = by_key.get(key)
                if row is not None:
                    self._store_graded(key, row, rec, manual_ids, stamp, origin)
                else:
                    self.conn.execute(
                        "UPDATE rows SET record = ?, student = ? WHERE student_key = ? "
                        "AND assignment = ?",
                        (json.dumps(rec), rec["student"], key[0], key[1]),
                    )

    def _store_graded(self, key, row: dict, rec: dict, manual_ids: dict, stamp, origin) -> None:
        """One row graded now: its submission, results and answers, and its row state."""
        sub = row.get("submitted") or {}
        texts = row.get("written") or {}
        sub_id = None
        if row.get("status") != "missing":
            sub_id = self._store_submission(row, manual_ids, stamp, origin, counted=1, rec=rec)
            self.conn.execute(
                "UPDATE submissions SET counted = 0 WHERE student_key = ? AND assignment = ? "
                "AND id != ?",
                (key[0], key[1], sub_id),
            )
        written = {}
        for gid, maximum in manual_ids.get(key[1], {}).items():
            text = texts.get(gid)
            answered = (row.get("questions", {}).get(gid) or {}).get("status") == "manual"
            written[gid] = [answer_sha256(text if answered else ""), float(maximum), answered]
        self.conn.execute(
            "INSERT OR REPLACE INTO rows (student_key, assignment, student_id, student, "
            "submission_id, file_sha256, record, written, updated_at, origin) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key[0], key[1], rec["student_id"], rec["student"], sub_id, sub.get("sha256") or "",
             json.dumps(rec), json.dumps(written), stamp, origin),
        )  # fmt: skip

    def _store_submission(self, row, manual_ids, stamp, origin, counted: int, rec=None) -> int:
        """One file graded: its facts, its results and its written answers; returns its id."""
        sub = row.get("submitted") or {}
        key = (student_key(row.get("student_id") or row["student"]), row["assignment"] or "")
        notes = rec.get("notes") if rec else "; ".join(map(str, row.get("notes") or []))
        sub_id = self.conn.execute(
            "INSERT INTO submissions (student_key, student_id, student, assignment, file, "
            "size, sha256, identity_source, lms_user_id, lms_submission_id, submitted_at, "
            "late, late_source, status, notes, graded_at, origin, counted) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key[0], row.get("student_id") or row["student"], row["student"], key[1],
             (rec or {}).get("file") or row.get("shown", ""), sub.get("size"), sub.get("sha256"),
             row.get("identity", ""), row.get("lms_user_id", ""),
             row.get("lms_submission_id", ""), sub.get("mtime"), 1 if row.get("late") else 0,
             row.get("late_source", ""), row.get("status"), notes, stamp, origin, counted),
        ).lastrowid  # fmt: skip
        kinds = getattr(self, "_kinds", {}).get(key[1], {})
        self._store_results(
            sub_id, row, row.get("written") or {}, manual_ids.get(key[1], {}), kinds
        )
        return sub_id

    def _store_results(self, sub_id: int, row, texts: dict, manual: dict, kinds: dict) -> None:
        for gid, d in (row.get("questions") or {}).items():
            kind = "manual" if gid in manual else kinds.get(gid, d.get("kind", ""))
            cause = d.get("diagnosis")
            cause = "; ".join(map(str, cause)) if isinstance(cause, list) else cause
            self.conn.execute(
                "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (sub_id, gid, kind, d.get("status"),
                 d.get("points"), d.get("max_points"), d.get("mistake"),
                 str(d.get("message") or ""), cause or None),
            )  # fmt: skip
        for gid, maximum in manual.items():
            text = texts.get(gid) or ""
            answered = ((row.get("questions") or {}).get(gid) or {}).get("status") == "manual"
            self.conn.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                (sub_id, gid, text, answer_sha256(text if answered else ""), float(maximum),
                 1 if answered else 0),
            )  # fmt: skip

    def import_records(self, records: list, manual_ids: dict, origin: str) -> int:
        """Import the records of a gradebook CSV written before the database (schema 0): each
        becomes a row; written-answer points in it become ``manual`` decisions for the text
        graded then (unknown: they stand until the answer is graded again, then it is pending
        again with a note), and a score that differs from ``total`` x ``late_factor`` (a
        deduction typed into the CSV) an ``adjust`` decision. Returns the decisions made."""
        from .gradebook import rescore

        made = 0
        stamp = now()
        with self.transaction():
            for rec in records:
                rec = dict(rec)
                key = (student_key(rec["student_id"]), rec["assignment"] or "")
                as_written = dict(rec)
                rescore(as_written)  # the score the CSV's own cells give
                typed = rec.get("score", "")
                if typed not in ("", None) and as_written.get("score", "") != "":
                    delta = round(_float(typed) - _float(as_written["score"]), 4)
                    if abs(delta) > 1e-9:
                        self.add_decision("adjust", rec["student_id"], key[1], points=delta,
                                          comment="typed into the score column of the CSV",
                                          origin=origin, created_at=stamp)  # fmt: skip
                        made += 1
                written = {}
                for gid, maximum in manual_ids.get(key[1], {}).items():
                    value = rec.get(gid, "")
                    answered = value not in ("", "0")
                    written[gid] = [answer_sha256(""), float(maximum), answered]
                    if not answered or value == "pending":
                        continue
                    points = _float(value)
                    self.add_decision("manual", rec["student_id"], key[1], grade_id=gid,
                                      answer_sha256=answer_sha256(""), points=points,
                                      origin=origin, created_at=stamp)  # fmt: skip
                    made += 1
                    rec["total"] = _fmt(_float(rec.get("total")) - points)
                    rec["pending"] = _fmt(_float(rec.get("pending")) + float(maximum))
                    rec[gid] = "pending"
                rescore(rec)
                self.conn.execute(
                    "INSERT OR REPLACE INTO rows (student_key, assignment, student_id, student, "
                    "submission_id, file_sha256, record, written, updated_at, origin) "
                    "VALUES (?, ?, ?, ?, NULL, '', ?, ?, ?, ?)",
                    (key[0], key[1], rec["student_id"], rec["student"], json.dumps(rec),
                     json.dumps(written), stamp, origin),
                )  # fmt: skip
        return made

    # --- merging another grader's database ----------------------------------------------

    def merge_from(self, other: Gradebook) -> dict:
        """Merge another grader's database into this one, in one transaction: every decision
        of theirs not here yet is added (nothing of either is replaced); a row graded more
        recently there replaces the automatic state here (its submission, results and
        answers copied). Returns counts ``decisions, rows`` and ``conflicts``: written answers
        given different points for the same text (the later decision stands)."""
        counts = {"decisions": 0, "rows": 0, "conflicts": []}
        mine = {(st["key"], st["assignment"]): st for st in self.row_states()}
        with self.transaction():
            for d in other.decisions():
                before = self.conn.total_changes
                self.add_decision(
                    d.kind, d.student_id, d.assignment, grade_id=d.grade_id,
                    answer_sha256=d.answer_sha256, points=d.points, comment=d.comment,
                    origin=d.origin, created_at=d.created_at, uid=d.uid,
                )  # fmt: skip
                counts["decisions"] += self.conn.total_changes > before
            for st in other.row_states():
                here = mine.get((st["key"], st["assignment"]))
                if here is None or st["updated_at"] > here["updated_at"]:
                    self._copy_row(other, st)
                    counts["rows"] += 1
        counts["conflicts"] = self._conflicts()
        return counts

    def _copy_row(self, other: Gradebook, st: dict) -> None:
        """Copy one row's state, with its submission, results and answers, from ``other``."""
        sub_id = None
        if st["submission_id"] is not None:
            r = other.conn.execute(
                "SELECT * FROM submissions WHERE id = ?", (st["submission_id"],)
            ).fetchone()
            cols = [k for k in r.keys() if k != "id"]
            sub_id = self.conn.execute(
                f"INSERT INTO submissions ({', '.join(cols)}) VALUES "
                f"({', '.join('?' for _ in cols)})",
                [r[k] for k in cols],
            ).lastrowid
            for table in ("results", "answers"):
                for row in other.conn.execute(
                    f"SELECT * FROM {table} WHERE submission_id = ?", (st["submission_id"],)
                ):
                    values = [sub_id] + list(row)[1:]
                    self.conn.execute(
                        f"INSERT OR REPLACE INTO {table} VALUES ({', '.join('?' for _ in values)})",
                        values,
                    )
        self.conn.execute(
            "INSERT OR REPLACE INTO rows (student_key, assignment, student_id, student, "
            "submission_id, file_sha256, record, written, updated_at, origin) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (st["key"], st["assignment"], st["student_id"], st["student"], sub_id,
             st["file_sha256"], json.dumps(st["record"]), json.dumps(st["written"]),
             st["updated_at"], "merged"),
        )  # fmt: skip

    def _conflicts(self) -> list[str]:
        """Written answers given different points for the same text by different graders
        (the ``(by NAME)`` of their origins)."""
        out = []
        seen: dict = {}
        for d in self.decisions(kind="manual"):
            seen.setdefault((d.student_id, d.assignment, d.grade_id, d.answer_sha256), []).append(d)
        for (sid, a, gid, _), ds in sorted(seen.items()):
            graders = {
                (re.search(r"\(by ([^)]*)\)", d.origin) or [d.origin, d.origin])[1] for d in ds
            }
            if len({d.points for d in ds}) > 1 and len(graders) > 1:
                given = ", ".join(f"{d.points:g} ({d.origin}, {d.created_at})" for d in ds)
                out.append(f"{sid} {a} {gid}: {given}; the latest stands")
        return out


def _float(text) -> float:
    try:
        return float(str(text).replace(",", "."))
    except (TypeError, ValueError):
        return 0.0


def _fmt(x: float) -> str:
    return f"{float(x):g}"
