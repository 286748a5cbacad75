"""Reading a decisions file written by the review page (:mod:`.review_page` documents its
format). Everything in it is checked before anything is recorded: the format and version, an
assignment and written-answer question the course has, each decision's student id, answer
sha256 (64 hex digits), points within the question's range, and its comment (cleaned text, at
most :data:`MAX_COMMENT_CHARS` characters). A file with any bad decision is refused whole,
with every problem named, so a half-recorded file never happens.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from .review_page import DECISIONS_FORMAT
from .untrusted import clean_text

__all__ = ["read_decisions", "DecisionsError", "MAX_COMMENT_CHARS"]

MAX_COMMENT_CHARS = 4000
_SHA = re.compile(r"[0-9a-f]{64}")


class DecisionsError(ValueError):
    """A decisions file that cannot be recorded (nothing of it is)."""


def _load(path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DecisionsError(f"{path}: cannot be read ({type(exc).__name__})") from None
    except ValueError as exc:
        raise DecisionsError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != DECISIONS_FORMAT:
        raise DecisionsError(
            f'{path}: not a decisions file of mha-course review (no "format": "{DECISIONS_FORMAT}")'
        )
    if data.get("version") != 1:
        raise DecisionsError(f"{path}: decisions format version {data.get('version')!r} (1 known)")
    return data


def _one(n: int, d, maximum: float) -> tuple[dict | None, str | None]:
    where = f"decision {n}"
    if not isinstance(d, dict):
        return None, f"{where}: not an object"
    sid, sha, pts = d.get("student_id"), d.get("sha256"), d.get("points")
    if not isinstance(sid, str) or not sid.strip():
        return None, f"{where}: no student_id"
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        return (
            None,
            f"{where} (student {clean_text(sid, max_chars=60)}): sha256 is not 64 hex digits",
        )
    if isinstance(pts, bool) or not isinstance(pts, (int, float)) or not math.isfinite(pts):
        return None, f"{where} (student {clean_text(sid, max_chars=60)}): points is not a number"
    if not 0 <= pts <= maximum:
        return None, (
            f"{where} (student {clean_text(sid, max_chars=60)}): {pts:g} points is outside "
            f"0..{maximum:g}"
        )
    comment = d.get("comment") or ""
    if not isinstance(comment, str):
        return None, f"{where} (student {clean_text(sid, max_chars=60)}): comment is not text"
    return {
        "student_id": sid.strip(),
        "sha256": sha,
        "points": float(pts),
        "comment": clean_text(comment, max_chars=MAX_COMMENT_CHARS, keep_newlines=True).strip(),
    }, None


def read_decisions(path, manual_ids: dict) -> tuple[dict, list]:
    """``(meta, decisions)`` of a decisions file; raises :class:`DecisionsError` naming every
    problem. ``manual_ids``: assignment -> {grade_id: points} of the written answers."""
    data = _load(path)
    a, gid = data.get("assignment"), data.get("grade_id")
    if a not in manual_ids or gid not in manual_ids.get(a, {}):
        raise DecisionsError(
            f"{path}: {gid!r} of {a!r} is not a written-answer question of the course"
        )
    maximum = manual_ids[a][gid]
    items = data.get("decisions")
    if not isinstance(items, list):
        raise DecisionsError(f"{path}: no list of decisions")
    decisions, problems, seen = [], [], {}
    for n, d in enumerate(items, start=1):
        ok, problem = _one(n, d, maximum)
        if problem:
            problems.append(problem)
            continue
        if ok["student_id"] in seen and seen[ok["student_id"]] != ok:
            problems.append(
                f"decision {n}: a second, different decision for student "
                f"{clean_text(ok['student_id'], max_chars=60)}"
            )
            continue
        seen[ok["student_id"]] = ok
        decisions.append(ok)
    if problems:
        raise DecisionsError(f"{path}: nothing recorded: " + "; ".join(problems[:10]))
    return {"assignment": a, "grade_id": gid, "max_points": maximum}, decisions
