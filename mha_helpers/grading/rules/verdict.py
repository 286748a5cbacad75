"""Verdicts from the rules: each question's record in the sandbox's (untrusted) report, judged.

The report says what the learner's program did: which cells raised, and what each answer
returned on each case. Nothing in it is believed beyond its shape: it is validated against a
strict schema (:func:`answer_results`), anything malformed costs the question its points (fail
closed) and flags the row, and every verdict is computed here with :mod:`.judge` from expected
outputs this process computed itself from the question banks. The cases' hidden part was drawn
here with a fresh seed, so a program cannot know what to claim except by computing it.
"""

from __future__ import annotations

from . import codec
from .cases import CaseResult, case_traits
from .judge import (
    function_verdict,
    question_meta,
    value_data,
    value_verdict,
)
from .outcome import not_attempted, not_callable

__all__ = [
    "answer_results",
    "question_verdict",
    "written_verdict",
    "BadReport",
    "written_answered",
]

WRITTEN_STUB = "YOUR ANSWER HERE"  # what the release puts in a written answer's cell


class BadReport(ValueError):
    """A part of the report that does not follow the schema."""


def _str(x, limit=300) -> str:
    if not isinstance(x, str):
        raise BadReport("expected text")
    return x[:limit]


def _where(w) -> dict | None:
    """Where the learner's code raised (function, line, the line's text), validated."""
    if w is None:
        return None
    if not isinstance(w, dict) or set(w) - {"function", "line", "code", "caller"}:
        raise BadReport("malformed error location")
    out = {"function": _str(w.get("function", ""), 60)}
    line = w.get("line")
    if line is not None:
        if not isinstance(line, int) or isinstance(line, bool) or not 0 <= line < 10**7:
            raise BadReport("malformed error location")
        out["line"] = line
    for key, limit in (("code", 160), ("caller", 60)):
        if w.get(key) is not None:
            out[key] = _str(w[key], limit)
    return out


def answer_results(rec) -> tuple[list, list]:
    """Validate one function answer's record: ``(list of CaseResult, helpers called)``."""
    if not isinstance(rec, dict):
        raise BadReport("answer record is not an object")
    rows = rec.get("results")
    if not isinstance(rows, list) or len(rows) > 1000:
        raise BadReport("results missing")
    results = []
    for row in rows:
        if not isinstance(row, dict) or set(row) - {"value", "raised", "mutated", "where"}:
            raise BadReport("malformed case result")
        raised = row.get("raised")
        if raised is not None:
            if not (isinstance(raised, list) and len(raised) == 2):
                raise BadReport("malformed exception")
            raised = (_str(raised[0], 80), _str(raised[1]))
        mutated = row.get("mutated") or []
        if not isinstance(mutated, list) or len(mutated) > 20:
            raise BadReport("malformed mutation list")
        value = None if raised else codec.decode(row.get("value"), codec.Limits())
        results.append(
            CaseResult(
                value=value,
                raised=raised,
                mutated=[_str(m, 40) for m in mutated],
                where=_where(row.get("where")) if raised else None,
            )
        )
    helpers = rec.get("helpers") or []
    if not isinstance(helpers, list) or len(helpers) > 20:
        raise BadReport("malformed helper list")
    return results, [_str(h, 60) for h in helpers]


def question_verdict(q, rec, cases, skipped: bool) -> dict:
    """The verdict on one automatically graded question from its record in the report.

    ``cases`` is ``(n_public, cases, expected, mistakes)`` computed by the grader. Raises
    :class:`BadReport` when the record does not follow the schema.
    """
    meta = question_meta(q)
    base = not_attempted(meta) | {"status": "failed", "message": "", "hint": q.hint}
    if skipped:
        return base | {
            "status": "error",
            "message": "checking your answer stopped the program (it was skipped)",
        }
    if rec is None:
        return base | {"status": "error", "message": "no result for this question (fail closed)"}
    if not isinstance(rec, dict):
        raise BadReport("answer record is not an object")
    status = rec.get("status")
    if status == "timeout":
        return base | {"status": "timeout", "message": "checking your answer ran out of time"}
    if status == "undefined":
        return not_attempted(meta) | {
            "message": "not defined (the answer cell did not run or does not define it)"
        }
    if status == "none":
        return not_attempted(meta)
    if status == "not-callable":
        return not_callable(meta, _str(rec.get("type", "?"), 80))
    if status == "error":
        err = rec.get("error") if isinstance(rec.get("error"), dict) else {}
        kind = _str(err.get("type", "Exception"), 80)
        return base | {
            "status": "error",
            "message": f"reading your answer raised {kind}",
            "memory": kind == "MemoryError",
        }
    if status != "ok":
        raise BadReport(f"unknown status {str(status)[:40]!r}")
    if q.kind == "value":
        actual = codec.decode(rec.get("value"), codec.Limits())
        if isinstance(actual, codec.Unsupported):
            return base | {
                "status": "error",
                "message": f"your answer could not be read ({actual.what})",
            }
        info, mistake_hashes = value_data(q)
        return value_verdict(meta, info, mistake_hashes, actual)
    results, helpers = answer_results(rec)
    known = {d.rsplit(".", 1)[-1] for d in q.forbidden} | set(q.forbidden)
    helpers = [h for h in helpers if h in known]
    n_public, case_list, expected, mistakes = cases  # an Unsupported value fails its case
    traits = case_traits(q, case_list)
    verdict = function_verdict(meta, results, expected, mistakes, n_public, helpers, traits)
    verdict["memory"] = any(r.raised and r.raised[0] == "MemoryError" for r in results)
    return verdict


def written_verdict(q, text) -> dict:
    meta = question_meta(q)
    if not written_answered(text):
        return not_attempted(meta) | {
            "status": "unanswered",
            "points": 0.0,
            "message": "no written answer",
        }
    return not_attempted(meta) | {
        "status": "manual",
        "points": None,
        "message": "to be graded by your instructor",
    }


def written_answered(text: str | None) -> bool:
    """True when a written answer holds more than the release's placeholder."""
    if text is None:
        return False
    body = text.replace(WRITTEN_STUB, "").strip()
    return bool(body)
