"""The schema of the sandbox's report, checked as a whole before the grader reads any of it.

The report is written by the runner in the same process as student code, so a submission can
replace it with anything (a forged line, a huge number, a wrong type). :func:`check_report`
checks every part the grader reads: the keys, the types, the ranges and the sizes. A report
with any problem is not read at all: the submission's automatic questions score 0 (fail closed)
and its row is flagged with a note that says what was wrong. Nothing in the report can make
the grader itself fail.

The values a function answer returned are checked again, in depth, by :mod:`..rules.codec`
(limits on size and nesting) and :func:`..rules.verdict.answer_results` when they are compared.
"""

from __future__ import annotations

import math

__all__ = ["check_report", "ANSWER_STATUSES", "MAX_CASES"]

ANSWER_STATUSES = {"ok", "undefined", "none", "not-callable", "timeout", "error"}
MAX_CASES = 1000
_REPORT_KEYS = {"cells", "answers", "output_chars", "defined_by", "times"}
_TIMES = {"start", "ready", "cells_done", "eval_done"}
_ANSWER_KEYS = {"status", "value", "results", "helpers", "uses", "error", "type"}


class _Problem(Exception):
    pass


def _need(condition: bool, where: str, what: str) -> None:
    if not condition:
        raise _Problem(f"{where}: {what}")


def _text(x, where: str, limit: int) -> None:
    _need(isinstance(x, str), where, "not text")
    _need(len(x) <= limit, where, f"longer than {limit} characters")


def _count(x, where: str, limit: int) -> None:
    _need(isinstance(x, int) and not isinstance(x, bool), where, "not a whole number")
    _need(0 <= x <= limit, where, f"outside 0..{limit}")


def _error(x, where: str) -> None:
    _need(isinstance(x, dict) and set(x) <= {"type", "message"}, where, "not an error record")
    _text(x.get("type", ""), f"{where}.type", 80)
    _text(x.get("message", ""), f"{where}.message", 300)


def _answer(rec, where: str, kind: str | None) -> None:
    _need(isinstance(rec, dict), where, "not an object")
    _need(set(rec) <= _ANSWER_KEYS, where, "unknown keys")
    status = rec.get("status")
    _need(status in ANSWER_STATUSES, f"{where}.status", "unknown status")
    if "error" in rec:
        _error(rec["error"], f"{where}.error")
    if "type" in rec:
        _text(rec["type"], f"{where}.type", 80)
    uses = rec.get("uses", {})
    _need(isinstance(uses, dict) and len(uses) <= 50, f"{where}.uses", "not a small object")
    for name, index in uses.items():
        _text(name, f"{where}.uses", 200)
        _count(index, f"{where}.uses[{name[:20]}]", 100_000)
    helpers = rec.get("helpers", [])
    _need(isinstance(helpers, list) and len(helpers) <= 20, f"{where}.helpers", "not a short list")
    for h in helpers:
        _text(h, f"{where}.helpers", 60)
    if status == "ok" and kind == "function":
        results = rec.get("results")
        _need(isinstance(results, list), f"{where}.results", "missing")
        _need(len(results) <= MAX_CASES, f"{where}.results", f"more than {MAX_CASES} cases")
        for i, row in enumerate(results):
            w = f"{where}.results[{i}]"
            _need(
                isinstance(row, dict) and set(row) <= {"value", "raised", "mutated", "where"},
                w,
                "bad",
            )
            where = row.get("where")
            if where is not None:
                _need(
                    isinstance(where, dict)
                    and set(where) <= {"function", "line", "code", "caller"},
                    f"{w}.where",
                    "bad",
                )
                for key, limit in (("function", 60), ("code", 160), ("caller", 60)):
                    if where.get(key) is not None:
                        _text(where[key], f"{w}.where.{key}", limit)
                if where.get("line") is not None:
                    _count(where["line"], f"{w}.where.line", 10**7)
            raised = row.get("raised")
            if raised is not None:
                _need(isinstance(raised, list) and len(raised) == 2, f"{w}.raised", "bad")
                _text(raised[0], f"{w}.raised", 80)
                _text(raised[1], f"{w}.raised", 300)
            mutated = row.get("mutated") or []
            _need(isinstance(mutated, list) and len(mutated) <= 20, f"{w}.mutated", "bad")
            for m in mutated:
                _text(m, f"{w}.mutated", 40)
    if status == "ok" and kind == "value":
        _need("value" in rec, f"{where}.value", "missing")


def check_report(report, n_cells: int, kinds: dict) -> list[str]:
    """Problems of ``report`` against the schema (empty when it follows it).

    ``n_cells`` is how many cells the program had, ``kinds`` maps each question the job asked
    about to its kind (``"value"`` or ``"function"``).
    """
    try:
        _need(isinstance(report, dict), "report", "not an object")
        _need(set(report) <= _REPORT_KEYS, "report", "unknown keys")
        cells = report.get("cells", [])
        _need(isinstance(cells, list), "cells", "not a list")
        _need(len(cells) <= n_cells, "cells", f"more than the program's {n_cells} cells")
        for i, rec in enumerate(cells):
            w = f"cells[{i}]"
            _need(isinstance(rec, dict) and set(rec) <= {"error", "timeout"}, w, "bad record")
            _need(isinstance(rec.get("timeout", False), bool), f"{w}.timeout", "not true/false")
            if rec.get("error") is not None:
                _error(rec["error"], f"{w}.error")
        answers = report.get("answers", {})
        _need(isinstance(answers, dict), "answers", "not an object")
        _need(set(answers) <= set(kinds), "answers", "answers to questions not asked")
        for gid, rec in answers.items():
            _answer(rec, f"answers[{gid}]", kinds.get(gid))
        if "output_chars" in report:
            _count(report["output_chars"], "output_chars", 2**62)
        defined = report.get("defined_by", {})
        _need(isinstance(defined, dict) and len(defined) <= 500, "defined_by", "bad")
        for name, index in defined.items():
            _text(name, "defined_by", 200)
            _count(index, "defined_by", 100_000)
        times = report.get("times", {})
        _need(isinstance(times, dict) and set(times) <= _TIMES, "times", "bad")
        for key, t in times.items():
            _need(
                isinstance(t, float | int)
                and not isinstance(t, bool)
                and abs(t) < 1e11
                and math.isfinite(t),
                f"times.{key}",
                "not a time",
            )
    except _Problem as p:
        return [str(p)]
    except Exception as exc:  # noqa: BLE001 - whatever it is, the report is not read
        return [f"report: could not be checked ({type(exc).__name__})"]
    return []
