"""The learner's self-check: ``check(grade_id, answer)`` after each exercise.

It works from the self-check data that ``mha-course release`` generates into
``mha_helpers/grading/selfcheck/data/`` (public cases, the expected outputs on them, each
classic mistake's outputs, and salted hashes of value answers), never from reference code: a
student's copy of the course holds no solutions. It prints one short verdict with points:

* passed;
* not attempted yet (the stub still raises ``NotImplementedError``, or the answer is ``None``);
* the first failing case, what was expected and what came back, and a hint, targeted when the
  answer matches one of the classic mistakes.

The rules are those of :mod:`..rules.judge`, which the instructor's grader uses too, so the
self-check and the grader agree on every answer they both see. The grader also uses fresh hidden
cases.

It never raises in JupyterLab, so an exercise notebook runs top to bottom even when nothing is
answered. (Under nbgrader it raises for an answer that did not pass; see :func:`check`.)
``score_summary(assignment)`` prints the points collected so far in this kernel.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..rules import codec
from ..rules.cases import NO_OUTPUT, case_traits, expected_outputs, public_cases
from ..rules.judge import function_verdict, question_meta, value_data, value_verdict
from ..rules.outcome import not_attempted, not_callable
from ..sandbox.inside.watch import run_cases
from .render import Verdict, _show, plain_text  # noqa: F401  (_show: kept for callers)

__all__ = ["check", "score_summary", "evaluate", "self_check", "DATA_DIR"]

DATA_DIR = Path(__file__).resolve().parent / "data"

# Points earned in this kernel, by grade_id (the latest check of each question counts).
_SCORES: dict[str, float] = {}
_DATA: dict | None = None

_MAX_SHOWN = 240


class NoData(Exception):
    """The self-check data is not here (inside the grading sandbox it is hidden on purpose)."""


def _load_data() -> dict:
    """grade_id -> question data, from every assignment's data file (read once)."""
    global _DATA
    if _DATA is None:
        found = {}
        if not DATA_DIR.is_dir():
            raise NoData(str(DATA_DIR))
        for path in sorted(DATA_DIR.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            for q in data.get("questions", []):
                found[q["grade_id"]] = q
        _DATA = found
    return _DATA


def assignment_data(assignment: str) -> dict:
    """The whole data file of one assignment (template and questions)."""
    path = DATA_DIR / f"{assignment}.json"
    if not path.is_file():
        raise NoData(str(path))
    return json.loads(path.read_text(encoding="utf-8"))


def _rich_display() -> bool:
    """True in a Jupyter kernel (JupyterLab, Notebook, VS Code), which renders HTML."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _show_verdict(r: dict) -> None:
    """HTML (with the plain text beside it) in Jupyter; plain text anywhere else."""
    if _rich_display():
        from IPython.display import display

        display(Verdict(r))
    else:
        print(plain_text(r))


def decode_mistakes(rows):
    """The classic mistakes' outputs from the self-check data (:data:`NO_OUTPUT` where one raised)."""
    out = []
    for row in rows:
        out.append(
            [NO_OUTPUT if isinstance(v, codec.Unsupported) else v for v in codec.decode(row)]
        )
    return out


def _judge(meta: dict, answer, cases, expected, mistakes, value=None, traits=None) -> dict:
    """Judge an answer in this process (cases, expected outputs and mistakes' outputs given)."""
    if meta["kind"] == "manual":
        return {
            "grade_id": meta["grade_id"],
            "status": "manual",
            "points": 0.0,
            "max_points": float(meta["points"]),
            "message": "graded by your instructor",
            "hint": "",
            "case": None,
            "expected": None,
            "actual": None,
        }
    if meta["kind"] == "value":
        return value_verdict(meta, value[0], value[1], answer)
    if answer is None or answer is Ellipsis:
        return not_attempted(meta)
    if not callable(answer):
        return not_callable(meta, type(answer).__name__)
    results, helpers = run_cases(answer, cases, meta["forbidden"], limits=meta.get("limits"))
    return function_verdict(meta, results, expected, mistakes, len(cases), helpers, traits)


def data_meta(q: dict) -> dict:
    """A question's entry in the self-check data, without its public cases: the same fields as
    :func:`~.judge.question_meta` gives from the bank."""
    return {k: v for k, v in q.items() if k != "public"}


def self_check(grade_id: str, answer) -> dict:
    """The verdict on an answer from the release's self-check data (what :func:`check` prints)."""
    q = _load_data()[grade_id]
    meta = data_meta(q)
    pub = q.get("public") or {}
    if q["kind"] == "function":
        cases = [tuple(codec.decode(c)) for c in pub["cases"]]
        expected = [codec.decode(e) for e in pub["expected"]]
        return _judge(
            meta,
            answer,
            cases,
            expected,
            decode_mistakes(pub["mistakes"]),
            traits=pub.get("traits"),
        )
    if q["kind"] == "value":
        return _judge(meta, answer, None, None, None, value=(pub["info"], pub["mistakes"]))
    return _judge(meta, answer, None, None, None)


def evaluate(q, answer, cases=None) -> dict:
    """Judge ``answer`` for the bank question ``q`` in this process, with the same rules as the
    self-check and the grader, computing the expected outputs from the reference. ``cases``
    default to the public ones. For tests and instructors (it needs the question banks).

    Returns a dict with ``status`` (``passed``, ``failed``, ``not-attempted``, ``error``,
    ``manual``), ``points``, ``message`` and ``hint``.
    """
    meta = question_meta(q)
    if q.kind == "function":
        cases = public_cases(q) if cases is None else cases
        expected, mistakes = expected_outputs(q, cases)
        return _judge(meta, answer, cases, expected, mistakes, traits=case_traits(q, cases))
    if q.kind == "value":
        return _judge(meta, answer, None, None, None, value=value_data(q))
    return _judge(meta, answer, None, None, None)


def _under_nbgrader() -> bool:
    """True while ``nbgrader autograde`` or ``nbgrader validate`` runs this notebook.

    nbgrader sets ``NBGRADER_EXECUTION`` for the kernels it starts, and gives a check cell its
    points when the cell runs without raising.
    """
    return os.environ.get("NBGRADER_EXECUTION") in ("autograde", "validate")


def check(grade_id: str, answer) -> None:
    """Check an answer and print the verdict.

    In JupyterLab it never raises, so an exercise notebook runs top to bottom whatever state
    the answers are in. Under nbgrader (``NBGRADER_EXECUTION`` set) it raises ``AssertionError``
    after printing, unless the answer passed: nbgrader scores a check cell by whether it raises,
    so without this every wrong or unanswered question would get full marks there.
    """
    verdict = _check(grade_id, answer)
    if verdict not in ("passed", "manual") and _under_nbgrader():
        raise AssertionError(f"{grade_id}: {verdict}")


def _check(grade_id: str, answer) -> str:
    """Print the verdict; return the status (or "error" when the answer could not be checked)."""
    try:
        r = self_check(grade_id, answer)
    except NoData:
        print(
            f"{grade_id}: the self-check data is not available here (while grading, the "
            "grader checks answers itself; elsewhere, reinstall the course package)"
        )
        return "error"
    except KeyError:
        print(f"{grade_id}: no such question; check the first argument of check()")
        return "error"
    except Exception as exc:  # an answer so odd that comparing it failed: say so, do not crash
        print(f"{grade_id}: could not check this answer ({type(exc).__name__}: {exc})")
        return "error"
    _SCORES[grade_id] = r["points"]
    r.setdefault("rtol", _load_data()[grade_id].get("rtol", 1e-6))
    r.setdefault("atol", _load_data()[grade_id].get("atol", 1e-8))
    _show_verdict(r)
    return r["status"]


def score_summary(assignment: str) -> None:
    """Print this kernel's score for one assignment, question by question."""
    try:
        qs = [q for q in _load_data().values() if q["assignment"] == assignment]
    except NoData:
        print(f"Score for {assignment}: the self-check data is not available here")
        return
    auto = [q for q in qs if q["kind"] != "manual"]
    earned = sum(_SCORES.get(q["grade_id"], 0.0) for q in auto)
    total = sum(q["points"] for q in auto)
    width = max((len(q["grade_id"]) for q in qs), default=8)
    print(f"Score so far for {assignment}: {earned:g} / {total:g} points (self-checked)")
    for q in qs:
        gid = q["grade_id"]
        if q["kind"] == "manual":
            state = f"written answer, graded by your instructor ({q['points']:g} points)"
        elif gid not in _SCORES:
            state = "not checked yet"
        else:
            state = f"{_SCORES[gid]:g} / {q['points']:g}"
        print(f"  {gid:<{width}}  {state}")
