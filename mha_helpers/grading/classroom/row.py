"""One gradebook row per submission: its fields, its points from the verdicts, its status, and
which of a student's copies of an assignment counts.

A row is a plain dict: ``student_id, student, assignment, file, shown, late, status, points
{grade_id: points or "pending"}, questions {grade_id: verdict}, total, max, pending, notes,
timing``. :func:`ungraded_row` is the row of a submission that never reached a verdict (refused,
unreadable, unknown assignment); :func:`graded_row` adds up a graded one. The gradebook
(:mod:`.gradebook`) and the feedback (:mod:`.feedback`) write rows out; this module only makes
them.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from .untrusted import normalise_name

__all__ = [
    "ungraded_row",
    "graded_row",
    "points_of",
    "without_paths",
    "resolve_copies",
    "row_key",
    "RUN_STATUS_ORDER",
    "UNISOLATED_NOTE",
]

# A graded row's status: the first of these that happened (feedback.STATUSES says what each
# means).
RUN_STATUS_ORDER = ["flagged", "kernel-died", "timeout", "memory", "ok"]
UNISOLATED_NOTE = (
    "graded WITHOUT a sandbox (--unsafe-no-sandbox): this submission's code could "
    "read and change the grader's files"
)


def _whose(sub, assignment: str) -> dict:
    """The fields that say whose row it is and which file it graded (a row starts with them)."""
    return {
        "student_id": sub.student_id,
        "student": sub.student,
        "assignment": assignment,
        "file": sub.display,
        "shown": sub.shown,
        "late": sub.late,
        "identity": getattr(sub, "identity", ""),
        "lms_submission_id": getattr(sub, "lms_submission_id", ""),
        "late_source": getattr(sub, "late_source", "") or ("" if not sub.late else "the download"),
    }


def ungraded_row(sub, status: str, notes: list, assignment="", questions=()) -> dict:
    """The row of a submission that got no verdicts: every question of its assignment (if it
    has one) at 0 points, ``status`` saying why."""
    qs = list(questions)
    return {
        **_whose(sub, assignment),
        "status": status,
        "points": {q.grade_id: 0.0 for q in qs},
        "questions": {},
        "total": 0.0,
        "max": float(sum(q.points for q in qs)),
        "pending": 0.0,
        "notes": list(sub.notes) + notes,
        "timing": {"start": 0.0, "execute": 0.0, "wall": 0.0, "attempts": 0},
    }


def points_of(questions, details: dict) -> tuple[dict, float, float, float]:
    """``(points, total, max, pending)`` from each question's verdict: a written answer that
    waits for the instructor is "pending" (its points counted in ``pending``), every other
    question scores its verdict's points; ``max`` counts every question."""
    points = {}
    total = maximum = pending = 0.0
    for q in questions:
        maximum += q.points
        d = details[q.grade_id]
        if q.kind == "manual":
            if d["status"] == "manual":
                pending += q.points
                points[q.grade_id] = "pending"
            else:
                points[q.grade_id] = 0.0
            continue
        points[q.grade_id] = float(d["points"])
        total += float(d["points"])
    return points, total, maximum, pending


def graded_row(
    sub, assignment: str, questions, details: dict, flags: set, notes: list, timing
) -> dict:
    """The row of a graded submission: its points from the verdicts (:func:`points_of`), its
    status the first of :data:`RUN_STATUS_ORDER` among ``flags`` (else ``ok``)."""
    points, total, maximum, pending = points_of(questions, details)
    status = next(s for s in RUN_STATUS_ORDER if s in flags or s == "ok")
    return {
        **_whose(sub, assignment),
        "status": status,
        "points": points,
        "questions": details,
        "total": total,
        "max": maximum,
        "pending": pending,
        "notes": notes,
        "timing": timing,
    }


def without_paths(note: str, sub) -> str:
    """A note without the instructor's paths: the submission's own path is shown as the
    instructor gave it (relative), any other absolute path by its last component."""
    text = str(note)
    if sub.display and sub.display != sub.shown:
        text = text.replace(str(sub.display), sub.shown)
    return re.sub(r"(?<![\w.])/(?:[^\s/:;,'\"]+/)+([^\s/:;,'\"]+)", r"\1", text)


def resolve_copies(rows: list, subs: list, picks: dict | None = None) -> None:
    """One counted row per (student_id, assignment); the other copies say ``superseded``.

    The rule (documented in the instructor guide, the same on every full regrade): a file the
    instructor gave by itself, or recorded as picked in the gradebook (``picks``: key ->
    file as shown), counts; otherwise the latest copy: Canvas's resubmission number (``-1``,
    ``-2``), then its submission number, then the file's modification time, then its name.
    """
    picks = picks or {}
    groups: dict = {}
    for row, sub in zip(rows, subs):
        if row["assignment"] and row["status"] != "missing":
            groups.setdefault(row_key(row), []).append((row, sub))
    for key, group in groups.items():
        if len(group) < 2:
            row, sub = group[0]
            if sub.picked:
                row["notes"].append("picked by the instructor (graded by itself)")
            continue
        picked = picks.get(key)
        group.sort(
            key=lambda item, picked=picked: (
                item[1].picked or _same_file(item[0]["shown"], picked),
                tuple(item[1].rank),
            )
        )
        (winner, wsub), losers = group[-1], group[:-1]
        why = (
            "picked by the instructor"
            if wsub.picked or _same_file(winner["shown"], picked)
            else "the latest copy counts"
        )
        others = ", ".join(
            f"{r['shown']} ({r['status']}, {r['total']:g} of {r['max']:g})" for r, _ in losers
        )
        winner["notes"].append(
            f"{len(group)} copies of {winner['assignment']}; this one counts ({why}); "
            f"not counted: {others}"
        )
        for r, _ in losers:
            r["notes"].append(
                f"not counted: {winner['shown']} counts instead (status was {r['status']})"
            )
            r["status"] = "superseded"


def _same_file(shown: str, picked) -> bool:
    """Whether a file as shown now is the one picked earlier (shown relative to another
    folder, perhaps: the file name decides; Canvas and Moodle names are unique)."""
    return bool(picked) and PurePosixPath(shown).name == PurePosixPath(str(picked)).name


def row_key(row) -> tuple:
    """The key of a gradebook row: (student_id, assignment)."""
    return (normalise_name(row["student_id"]).casefold(), row["assignment"] or "")
