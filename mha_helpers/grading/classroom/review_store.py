"""The one place where ``mha-course review`` and ``mha-course report`` meet the gradebook and
the submissions (an adapter: the rest of review and report works on plain data).

Two back ends, chosen per gradebook:

* **the gradebook database** (``GRADEBOOK.sqlite`` beside the CSV, :mod:`.gradebook_db`), when
  it exists and has rows: the written answers' texts, the instructor's decisions (points and
  comment, keyed to the sha256 of the answer's text: a changed answer is pending again) and
  the verdicts' named mistakes come from it, decisions are recorded into it
  (``record_manual``) and the CSV is rewritten from its view;
* **the CSV gradebook** otherwise: the texts are read from the submissions
  (:func:`class_answers`), decisions are kept in ``GRADEBOOK.decisions.json`` (append-only,
  each with its time and origin) and put into the CSV's question column, and the verdicts'
  details in ``GRADEBOOK.results.json``, which ``mha-course grade`` writes
  (:func:`save_results`).

:func:`class_answers` also gives the answer code the report compares, read from the class's
download the way the grader reads it (:func:`..sandbox.program.build_program`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import gradebook as gb
from .untrusted import clean_text, normalise_name

__all__ = [
    "Submitted",
    "uses_database",
    "review_answers",
    "comments_by_answer",
    "class_answers",
    "save_results",
    "load_results",
    "results_path",
    "decisions_path",
    "recorded_decisions",
    "record_decisions",
    "student_key",
    "solution_cells",
    "verdict_results",
    "Recorded",
]


def student_key(student_id: str) -> str:
    """A student id as compared (the gradebook's rule)."""
    return normalise_name(str(student_id)).casefold()


@dataclass
class Submitted:
    """One counted submission: whose, which file, its written answers and answer code."""

    student_id: str
    student: str
    assignment: str
    file: str
    late: bool = False
    written: dict = field(default_factory=dict)  # grade_id -> text
    code: dict = field(default_factory=dict)  # grade_id -> source


def _pick(copies: list, counted_file: str | None):
    """The copy that counts: the one the gradebook graded, else the latest."""
    if counted_file:
        for sub in copies:
            if Path(sub.shown).name == Path(counted_file).name:
                return sub
    return max(copies, key=lambda s: (s.picked, tuple(s.rank)))


def class_answers(paths, templates: dict, roster=None, gradebook=None) -> list[Submitted]:
    """The written answers and answer code of every counted submission under ``paths``."""
    from ..sandbox.program import build_program, notebook_cells
    from .assignments import identify
    from .collect import collect, read_notebook

    counted = {}
    if gradebook is not None and Path(gradebook).is_file():
        _, records = gb.read_gradebook(gradebook)
        counted = {
            (student_key(r["student_id"]), r["assignment"]): r.get("file", "")
            for r in records
            if r.get("status") != "superseded"
        }
    collection = collect(paths)
    try:
        by_key: dict = {}
        for sub in collection.submissions:
            if sub.status or sub.path is None:
                continue
            if roster is not None:
                hit = roster.find(sub.student_id, sub.student)
                if hit is not None:
                    sub.student_id, sub.student = hit.id, hit.name
            try:
                nb, _ = read_notebook(Path(sub.path))
                assignment, _ = identify(nb, templates)
                if assignment is None:
                    continue
                program = build_program(templates[assignment].template, notebook_cells(nb))
            except Exception:  # unreadable: the gradebook row already says why
                continue
            entry = (sub, assignment, program)
            by_key.setdefault((student_key(sub.student_id), assignment), []).append(entry)
        out = []
        for key, entries in sorted(by_key.items()):
            sub = _pick([e[0] for e in entries], counted.get(key))
            _, assignment, program = next(e for e in entries if e[0] is sub)
            out.append(
                Submitted(
                    sub.student_id,
                    sub.student,
                    assignment,
                    sub.shown,
                    bool(sub.late),
                    dict(program.written),
                    dict(program.answers),
                )
            )
        return out
    finally:
        collection.close()


def solution_cells(course, assignment: str) -> dict:
    """grade_id -> the solution notebook's answer (code or written), the solution markers
    removed."""
    import re

    import nbformat

    for path in sorted(course.solutions.glob("*.ipynb")):
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:
            continue
        if (nb.metadata.get("mha_course", {}).get("assignment") or path.stem) != assignment:
            continue
        out = {}
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid and cell.metadata.get("nbgrader", {}).get("solution"):
                text = re.sub(r"^\s*#+\s*(BEGIN|END) SOLUTION\s*$", "", cell.source, flags=re.M)
                out[gid] = text.strip()
        return out
    return {}


# --- the verdicts beside the gradebook -------------------------------------------------------


def _beside(gradebook, suffix: str) -> Path:
    """``gradebook.csv`` -> ``gradebook<suffix>`` (any other name: the name plus suffix)."""
    g = Path(gradebook)
    return g.with_suffix(suffix) if g.suffix.lower() == ".csv" else g.with_name(g.name + suffix)


def results_path(gradebook) -> Path:
    """Where grade keeps the verdicts' details: ``GRADEBOOK.results.json``."""
    return _beside(gradebook, ".results.json")


def decisions_path(gradebook) -> Path:
    """Where the CSV back end keeps the decisions: ``GRADEBOOK.decisions.json``."""
    return _beside(gradebook, ".decisions.json")


def _mistake_names(assignment: str) -> dict:
    """hint -> mistake name for an assignment's questions (a value verdict gives the hint)."""
    from .banks import questions_for

    try:
        return {m.hint: m.name for q in questions_for(assignment) for m in q.mistakes}
    except Exception:
        return {}


def save_results(rows: list, gradebook) -> Path:
    """Keep each graded row's verdicts (status, points, the mistake named) beside the
    gradebook: rows graded now replace their (student_id, assignment) entry."""
    path = results_path(gradebook)
    old = load_results(gradebook)
    names: dict = {}
    for r in rows:
        if r.get("status") == "superseded" or not r.get("assignment"):
            continue
        a = r["assignment"]
        if a not in names:
            names[a] = _mistake_names(a)
        questions = {}
        for gid, d in (r.get("questions") or {}).items():
            mistake = d.get("mistake") or (
                names[a].get(d.get("hint")) if d.get("status") != "passed" else None
            )
            questions[gid] = {
                "status": d.get("status"),
                "points": d.get("points"),
                "max_points": d.get("max_points"),
                "mistake": mistake,
            }
        old[(student_key(r["student_id"]), a)] = {
            "student_id": r["student_id"],
            "student": r["student"],
            "assignment": a,
            "status": r["status"],
            "questions": questions,
        }
    gb.atomic_write(path, json.dumps(sorted(old.values(), key=_entry_order), indent=0) + "\n")
    return path


def _entry_order(e) -> tuple:
    return (e["assignment"], student_key(e["student_id"]))


def load_results(gradebook) -> dict:
    """(student key, assignment) -> the saved verdicts (empty when none were saved)."""
    path = results_path(gradebook)
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {(student_key(e["student_id"]), e["assignment"]): e for e in entries}


# --- the instructor's decisions ----------------------------------------------------------------


def _read_log(gradebook) -> list:
    path = decisions_path(gradebook)
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: not a decisions log (a JSON list)")
    return data


def recorded_decisions(gradebook) -> dict:
    """(student key, assignment, grade_id) -> the latest decision recorded (points, comment,
    sha256 of the answer it was given for, time, origin)."""
    latest = {}
    for d in _read_log(gradebook):
        latest[(student_key(d["student_id"]), d["assignment"], d["grade_id"])] = d
    return latest


def uses_database(gradebook) -> bool:
    """Whether the gradebook has a database with rows (else the CSV back end is used)."""
    from .gradebook_db import Gradebook, db_path

    if not db_path(gradebook).is_file():
        return False
    with Gradebook.open(gradebook, create=False) as db:
        return not db.is_empty()


def review_answers(gradebook, assignment: str, grade_id: str, subs=None) -> list:
    """The answered written answers to one question as review :class:`.review_page.Answer`
    objects, with the decision that stands for each text (and a note for a changed one)."""
    from .review_page import Answer

    out = []
    if uses_database(gradebook):
        from .gradebook_db import Gradebook

        with Gradebook.open(gradebook, create=False) as db:
            for w in db.written_answers(assignment, grade_id):
                if not w.answered:
                    continue
                a = Answer(w.student_id, w.student, w.text, w.sha256)
                if w.decision is not None:
                    a.points, a.comment = float(w.decision.points), w.decision.comment
                elif w.earlier is not None:
                    a.note = _changed_note(w.earlier.points, w.earlier.created_at)
                out.append(a)
        return out
    from ..rules.verdict import written_answered

    decided = recorded_decisions(gradebook)
    _, records = gb.read_gradebook(gradebook)
    in_book = {
        gb.record_key(r): r.get(grade_id, "") for r in records if r["assignment"] == assignment
    }
    for s in subs or []:
        text = s.written.get(grade_id)
        if s.assignment != assignment or not written_answered(text):
            continue
        a = Answer(s.student_id, s.student, text)
        key = student_key(s.student_id)
        old = decided.get((key, assignment, grade_id))
        if old and old["sha256"] == a.sha256:
            a.points, a.comment = float(old["points"]), old.get("comment", "")
        elif old:
            a.note = _changed_note(old["points"], old["at"])
        elif in_book.get((key, assignment), "") not in ("", "pending"):
            a.points = gb.to_float(in_book[(key, assignment)])  # merged from a --manual CSV
            a.note = "scored in the gradebook (a --manual CSV); a new score here replaces it"
        out.append(a)
    return out


def _changed_note(points, when) -> str:
    return (
        f"the answer changed since it was scored ({float(points):g} points on "
        f"{str(when)[:10]}): pending again"
    )


def comments_by_answer(gradebook) -> dict:
    """(student key, assignment, grade_id) -> the comment that stands for the answer now."""
    if uses_database(gradebook):
        from .gradebook_db import Gradebook
        from .gradebook_view import standing_manual

        out = {}
        with Gradebook.open(gradebook, create=False) as db:
            decided = db.decisions_by_row()
            for st in db.row_states():
                mine = decided.get((st["key"], st["assignment"]), [])
                for gid, (sha, _, _) in st["written"].items():
                    d, _ = standing_manual(mine, gid, sha)
                    if d is not None and d.comment:
                        out[(st["key"], st["assignment"], gid)] = d.comment
        return out
    return {k: d.get("comment", "") for k, d in recorded_decisions(gradebook).items()}


def verdict_results(gradebook) -> dict:
    """(student key, assignment) -> {"questions": {grade_id: {"status", "points",
    "mistake"}}}: the sidecar's when ``mha-course grade`` wrote one, else the database's."""
    saved = load_results(gradebook)
    if saved or not uses_database(gradebook):
        return saved
    from .gradebook_db import Gradebook

    out: dict = {}
    with Gradebook.open(gradebook, create=False) as db:
        for r in db.results():
            entry = out.setdefault((student_key(r.student_id), r.assignment), {"questions": {}})
            entry["questions"][r.grade_id] = {
                "status": r.status,
                "points": r.points,
                "mistake": r.mistake,
            }
    return out


@dataclass
class Recorded:
    recorded: int = 0
    unchanged: int = 0
    problems: list = field(default_factory=list)
    # the gradebook record keys of the decisions read (recorded now or already): their
    # feedback files are brought up to date
    changed_keys: set = field(default_factory=set)


def record_decisions(
    gradebook,
    files: list,
    manual_ids: dict,
    current: dict | None = None,
    templates=None,
    import_edits: bool = False,
):
    """Record decisions files into the gradebook. ``current`` (optional): (student key,
    assignment, grade_id) -> the sha256 of the answer as it is now; a decision for another
    text is refused (the answer changed: it is pending again). Returns :class:`Recorded` and
    the gradebook's columns and records (written when anything was recorded)."""
    from .review_decisions import DecisionsError, read_decisions

    if uses_database(gradebook):
        return _record_in_database(gradebook, files, manual_ids, templates, import_edits)
    out = Recorded()
    columns, records = gb.read_gradebook(gradebook)
    by_key = {gb.record_key(r): r for r in records if r.get("status") != "superseded"}
    log = _read_log(gradebook)
    latest = recorded_decisions(gradebook)
    for f in files:
        try:
            meta, decisions = read_decisions(f, manual_ids)
        except DecisionsError as exc:
            out.problems.append(str(exc))
            continue
        a, gid = meta["assignment"], meta["grade_id"]
        for d in decisions:
            key = (student_key(d["student_id"]), a, gid)
            rec = by_key.get((key[0], a))
            who = f"{Path(f).name}: student {clean_text(d['student_id'], max_chars=80)}"
            if rec is None:
                out.problems.append(f"{who} has no row in {a} in {Path(gradebook).name}")
                continue
            if current is not None and current.get(key) != d["sha256"]:
                out.problems.append(
                    f"{who}: the answer to {gid} is not the one scored (changed or gone "
                    "since the page was made): not recorded, it stays pending"
                )
                continue
            old = latest.get(key)
            same = old and (old["sha256"], old["points"], old.get("comment", "")) == (
                d["sha256"],
                d["points"],
                d["comment"],
            )
            if same and rec.get(gid) not in ("", "pending", None):
                out.unchanged += 1
                out.changed_keys.add(gb.record_key(rec))  # its feedback is refreshed too
                continue
            gb._set_manual(rec, gid, d["points"], manual_ids[a][gid])
            entry = {
                "student_id": rec["student_id"],
                "assignment": a,
                "grade_id": gid,
                "sha256": d["sha256"],
                "points": d["points"],
                "comment": d["comment"],
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "origin": Path(f).name,
            }
            log.append(entry)
            latest[key] = entry
            out.recorded += 1
            out.changed_keys.add(gb.record_key(rec))
    if out.recorded:
        qids = [c for c in columns if c not in gb.FIXED_BEFORE + gb.FIXED_AFTER]
        gb.write_gradebook(records, gradebook, qids)
        gb.atomic_write(decisions_path(gradebook), json.dumps(log, indent=0) + "\n")
    return out, columns, records


def _record_in_database(gradebook, files, manual_ids: dict, templates=None, import_edits=False):
    """:func:`record_decisions` on the gradebook database: each decision through
    ``record_manual`` (which refuses a decision for a text that is no longer the answer),
    then the CSV rewritten from the database's view. A CSV changed by hand since mha-course
    wrote it is never overwritten: nothing is recorded (ValueError, saying how to go on)."""
    from . import gradebook_store as store
    from .gradebook_db import DecisionError, Gradebook
    from .review_decisions import DecisionsError, read_decisions

    out = Recorded()
    with Gradebook.open(gradebook, create=False) as db:
        if Path(gradebook).suffix.lower() == ".csv" and Path(gradebook).is_file():
            refusal, lines = store.check_edits(
                db, gradebook, import_edits, manual_ids, "review --record"
            )
            if refusal:
                raise ValueError(refusal)
            for line in lines:
                print(line)
        for f in files:
            try:
                meta, decisions = read_decisions(f, manual_ids)
            except DecisionsError as exc:
                out.problems.append(str(exc))
                continue
            a, gid = meta["assignment"], meta["grade_id"]
            standing = {(student_key(w.student_id)): w for w in db.written_answers(a, gid)}
            for d in decisions:
                w = standing.get(student_key(d["student_id"]))
                if (
                    w is not None
                    and w.decision is not None
                    and (w.decision.answer_sha256, w.decision.points, w.decision.comment)
                    == (d["sha256"], d["points"], d["comment"])
                ):
                    out.unchanged += 1
                    out.changed_keys.add((student_key(d["student_id"]), a))
                    continue
                try:
                    db.record_manual(
                        d["student_id"],
                        a,
                        gid,
                        d["sha256"],
                        d["points"],
                        d["comment"],
                        origin=f"review {Path(f).name}",
                    )
                except DecisionError as exc:
                    out.problems.append(f"{Path(f).name}: {exc}: not recorded")
                    continue
                out.recorded += 1
                out.changed_keys.add((student_key(d["student_id"]), a))
        records = db.view()
        columns, _ = gb.read_gradebook(gradebook) if Path(gradebook).is_file() else ([], [])
        if out.recorded and templates is not None:
            records = store.write_view(db, gradebook, templates)
        elif out.recorded:
            qids = [c for c in columns if c not in gb.FIXED_BEFORE + gb.FIXED_AFTER]
            gb.write_gradebook(records, gradebook, qids)
    return out, columns, records
