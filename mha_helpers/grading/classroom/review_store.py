"""The one place where ``mha-course review`` and ``mha-course report`` meet the gradebook and
the submissions (an adapter: the rest of review and report works on plain data).

* :func:`class_answers`: every counted submission's written answers and answer code, read from
  the class's download the way the grader reads it (:func:`..sandbox.program.build_program`),
  identities from the LMS layout and the roster as ``mha-course grade`` gives them.
* :func:`save_results` / :func:`load_results`: what each question's verdict said (status,
  points, the classic mistake the judge named), saved by ``mha-course grade`` beside the
  gradebook as ``GRADEBOOK.results.json`` (the CSV keeps points only).
* :func:`recorded_decisions` / :func:`record_decisions`: the instructor's written-answer
  decisions (points and comment per answer, keyed to the sha256 of the answer's text), kept in
  ``GRADEBOOK.decisions.json`` (append-only: every decision with its time and the file it came
  from) and put into the gradebook's question column. A decision counts only for the exact
  answer it was given for.

This implementation works on today's CSV gradebook; the gradebook database (issue 30) is meant
to take its place behind the same functions.
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
    "class_answers",
    "save_results",
    "load_results",
    "results_path",
    "decisions_path",
    "recorded_decisions",
    "record_decisions",
    "student_key",
    "solution_cells",
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


def results_path(gradebook) -> Path:
    g = Path(gradebook)
    return (
        g.with_name(g.name + ".results.json")
        if g.suffix != ".csv"
        else g.with_suffix(".results.json")
    )


def decisions_path(gradebook) -> Path:
    g = Path(gradebook)
    return (
        g.with_name(g.name + ".decisions.json")
        if g.suffix != ".csv"
        else g.with_suffix(".decisions.json")
    )


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


@dataclass
class Recorded:
    recorded: int = 0
    unchanged: int = 0
    problems: list = field(default_factory=list)
    changed_keys: set = field(default_factory=set)  # gradebook record keys changed


def record_decisions(gradebook, files: list, manual_ids: dict, current: dict | None = None):
    """Record decisions files into the gradebook. ``current`` (optional): (student key,
    assignment, grade_id) -> the sha256 of the answer as it is now; a decision for another
    text is refused (the answer changed: it is pending again). Returns :class:`Recorded` and
    the gradebook's columns and records (written when anything was recorded)."""
    from .review_decisions import DecisionsError, read_decisions

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
