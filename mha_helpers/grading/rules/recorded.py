"""Self-check data for graded work: value answers are recorded, never confirmed.

A value question (a number, a shape, a multiple-choice letter) has a small answer space. If the
learner's copy can confirm an exact answer, from a hash or anything else, a script can try
every candidate offline and read the answer off: the plain student copy's salted hashes gave
up all 11 value answers of the course in about 10 s. That is fine for self-study and not for
graded work. ``mha-course release --student-copy DIR --for-grading`` therefore writes, for
each value question, only the form of the answer (number or text, its shape, a tuple's length)
and nothing that depends on its value: the self-check confirms the form and says that the
answer is recorded and checked at grading. Function questions keep their public cases (the
grader uses fresh hidden ones).
"""

from __future__ import annotations

import numpy as np

from .outcome import not_attempted

__all__ = ["for_grading_entry", "recorded_verdict", "RECORDED_MESSAGE"]

RECORDED_MESSAGE = (
    "your answer has the expected form and is recorded; whether it is right is checked when "
    "your work is graded (this copy of the course does not confirm exact values)"
)


def for_grading_entry(entry: dict) -> dict:
    """A value question's self-check entry with everything value-dependent removed: its form
    only (no hashes of the answer or of the classic mistakes)."""
    info = (entry.get("public") or {}).get("info") or {}
    form = {"type": info.get("type"), "recorded": True}
    for key in ("shape", "length"):
        if key in info:
            form[key] = info[key]
    return dict(entry, public={"info": form, "mistakes": []})


def recorded_verdict(meta: dict, info: dict, actual) -> dict:
    """The self-check's verdict on a value answer in a copy for graded work: the form is
    checked (type, shape, length); the value is recorded, never confirmed."""
    r = not_attempted(meta) | {"status": "failed", "message": "", "hint": meta.get("hint", "")}
    kind = info.get("type")
    try:
        shape = list(np.shape(np.asarray(actual, dtype=object)))
    except (ValueError, TypeError):
        shape = None
    if kind == "number" and isinstance(actual, str | bytes):
        message = "your answer should be a number, not text"
    elif kind == "number" and isinstance(actual, bool | complex):
        message = f"your answer should be a real number, not a {type(actual).__name__}"
    elif kind == "number" and not _numeric(actual):
        message = f"your answer should be a number or an array, got a {type(actual).__name__}"
    elif kind == "number" and shape != info.get("shape"):
        message = (
            f"your answer has shape {tuple(shape or ())}, expected shape "
            f"{tuple(info.get('shape') or ())}"
        )
    elif kind == "text" and not isinstance(actual, str):
        message = f"your answer should be text, got a {type(actual).__name__}"
    elif kind == "tuple" and (
        not isinstance(actual, tuple | list) or len(actual) != info.get("length")
    ):
        message = f"your answer should be a tuple of {info.get('length')} items"
    else:
        return r | {"status": "recorded", "message": RECORDED_MESSAGE, "hint": ""}
    return r | {"message": message}


def _numeric(x) -> bool:
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        return False
    return arr.dtype.kind in "biuf"
