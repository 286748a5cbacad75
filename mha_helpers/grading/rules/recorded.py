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
    "your work is graded (this copy of the course checks the form of a value or a letter "
    "only, never the answer itself)"
)


# The only fields of a value question's entry a copy for graded work keeps: what the notebook
# shows anyway (the prompt, the points) and the answer's form. Everything else (hashes, the
# classic mistakes' names and hints, the question's hint, the precision) is dropped, so the
# entry is the same whatever the answer is (tests/test_for_grading.py checks it by changing
# the answer and the mistakes and comparing).
_KEPT = ("grade_id", "assignment", "kind", "points", "prompt", "forbidden", "answer_type")
_FORM = ("type", "shape", "length", "sequence", "letter", "flags")


def for_grading_entry(entry: dict) -> dict:
    """A value question's self-check entry with everything value-dependent removed: its form
    only. No hashes of the answer or of the classic mistakes, no mistake names or hints (for
    a multiple choice they are the wrong letters, so the right one would be the letter left),
    no hint text (a hint can spell out the answer)."""
    info = (entry.get("public") or {}).get("info") or {}
    form = {"type": info.get("type"), "recorded": True}
    for key in _FORM:
        if key in info:
            form[key] = info[key]
    out = {k: entry[k] for k in _KEPT if k in entry}
    out.update(
        hint="",
        mistakes=[],
        rtol=1e-6,
        atol=1e-8,
        limits=None,
        public={"info": form, "mistakes": []},
    )
    return out


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
    elif info.get("tuple") and isinstance(actual, list | np.ndarray):
        what = "a list [...]" if isinstance(actual, list) else "a NumPy array"
        message = f"write it as a tuple, (…), as the question asks: your answer is {what}"
    elif meta.get("answer_type") == "int" and _has_float(actual):
        message = "write a count as a whole number (an int, for example with //), not a float"
    elif info.get("letter") and not (
        isinstance(actual, str) and len(actual.strip()) == 1 and actual.strip().isalpha()
    ):
        message = "answer with a single letter (one option), as text, for example 'a'"
    else:
        return r | {"status": "recorded", "message": RECORDED_MESSAGE, "hint": ""}
    return r | {"message": message}


def _has_float(x) -> bool:
    if isinstance(x, float | np.floating):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind == "f"
    return isinstance(x, tuple | list) and any(isinstance(v, float | np.floating) for v in x)


def _numeric(x) -> bool:
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        return False
    return arr.dtype.kind in "biuf"
