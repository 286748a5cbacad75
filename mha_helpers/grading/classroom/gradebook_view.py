"""The gradebook as the CSV shows it: each row's automatic record with the instructor's
decisions applied, and a note for every decision that changed it.

The rules (the instructor guide, "What can change a grade, and how you see it"):

* a written answer's points (``manual``) stand only while the student's answer is the text
  they were given for (its sha256); a new or changed answer is ``pending`` again, with a note
  saying what the earlier text had;
* an extension makes late work count as on time (``late`` no, ``late_factor`` 1);
* a waiver excuses the student from the assignment (status ``excused``, no score);
* adjustments add to the score (after the late factor), each with its reason in the notes;
* a removed row is left out while it is the file it was removed for.
"""

from __future__ import annotations

from .gradebook import _number, rescore, to_float

__all__ = ["view_records", "apply_decisions", "standing_manual", "visible"]


def standing_manual(decisions: list, grade_id: str, sha: str):
    """``(decision, earlier)``: the latest manual decision for exactly this text, and (when
    none) the latest for another text of the same answer."""
    mine = [d for d in decisions if d.kind == "manual" and d.grade_id == grade_id]
    same = [d for d in mine if d.answer_sha256 == sha]
    if same:
        return same[-1], None
    return None, (mine[-1] if mine else None)


def visible(state: dict, decisions: list) -> bool:
    """False for a row removed by the instructor (while it is the same file)."""
    removed = [d for d in decisions if d.kind == "remove"]
    return not removed or removed[-1].answer_sha256 != (state.get("file_sha256") or "")


def _apply_written(rec: dict, written: dict, decisions: list, notes: list) -> list:
    """Put the standing written-answer points into the record; return the comments
    ``(grade_id, points, comment)`` for the feedback."""
    comments = []
    for gid, (sha, maximum, answered) in written.items():
        decision, earlier = standing_manual(decisions, gid, sha)
        value = rec.get(gid)
        if decision is None:
            if earlier is not None and answered:
                notes.append(
                    f"{gid}: the written answer changed since it was scored "
                    f"({earlier.points:g} points for the earlier text): pending again"
                )
            continue
        if value == "pending":
            rec["pending"] = _number(max(0.0, to_float(rec.get("pending")) - float(maximum)))
        elif value not in (None, ""):
            rec["total"] = _number(to_float(rec.get("total")) - to_float(value))
        rec[gid] = _number(float(decision.points))
        rec["total"] = _number(to_float(rec.get("total")) + float(decision.points))
        comments.append((gid, float(decision.points), decision.comment))
    return comments


def apply_decisions(rec: dict, written: dict, decisions: list) -> tuple[dict, list]:
    """The record as the CSV shows it, and the written-answer comments (see the module)."""
    rec, comments, _ = _apply(rec, written, decisions)
    return rec, comments


def _apply(rec: dict, written: dict, decisions: list) -> tuple[dict, list, list]:
    """:func:`apply_decisions`, and the notes the decisions added."""
    rec = dict(rec)
    notes: list = []
    comments = _apply_written(rec, written, decisions, notes)
    ext = [d for d in decisions if d.kind == "extension"]
    if ext and rec.get("late") == "yes":
        rec["late"], rec["late_factor"] = "no", "1"
        notes.append(f"extension granted ({ext[-1].comment or 'no reason given'}): counted on time")
    rescore(rec)
    adjust = [d for d in decisions if d.kind == "adjust"]
    if adjust and rec.get("score", "") != "":
        delta = sum(float(d.points or 0) for d in adjust)
        rec["score"] = _number(round(to_float(rec["score"]) + delta, 4))
        for d in adjust:
            notes.append(f"score adjusted by {float(d.points or 0):+g} ({d.comment})")
    waived = [d for d in decisions if d.kind == "waiver"]
    if waived:
        rec["status"], rec["score"] = "excused", ""
        notes.append(f"excused by the instructor ({waived[-1].comment or 'no reason given'})")
    rec["notes"] = "; ".join(([rec["notes"]] if rec.get("notes") else []) + notes)
    return rec, comments, notes


def view_records(db, assignment=None, with_comments: bool = False) -> list:
    """Every visible row's record with its decisions applied (with ``with_comments``:
    ``(record, comments, notes the decisions added)``)."""
    decided = db.decisions_by_row()
    out = []
    for st in db.row_states(assignment):
        mine = decided.get((st["key"], st["assignment"]), [])
        if not visible(st, mine):
            continue
        rec, comments, notes = _apply(st["record"], st["written"], mine)
        out.append((rec, comments, notes) if with_comments else rec)
    return out
