"""The learner's self-check: ``check(grade_id, answer)`` after each exercise.

It runs the question's public cases (a fixed seed, the same every time) against the learner's
answer and prints one short verdict with points:

* passed;
* not attempted yet (the stub still raises ``NotImplementedError``, or the answer is ``None``);
* the first failing case, what was expected and what came back, and a hint, targeted when the
  answer matches one of the classic mistakes.

It never raises in JupyterLab, so an exercise notebook runs top to bottom even when nothing is
answered. (Under nbgrader it raises for an answer that did not pass; see :func:`check`.)
``score_summary(assignment)`` prints the points collected so far in this kernel.

Public cases are not secret: the instructor's grader uses fresh random cases instead.
"""

from __future__ import annotations

import os

import numpy as np

from .compare import difference
from .questions import Question, get_question, questions_for

__all__ = ["check", "score_summary", "evaluate"]

# Points earned in this kernel, by grade_id (the latest check of each question counts).
_SCORES: dict[str, float] = {}

_MAX_SHOWN = 240


def _show(x) -> str:
    """A compact, single-line rendering of a value for feedback."""
    if isinstance(x, tuple):
        return "(" + ", ".join(_show(v) for v in x) + ")"
    if isinstance(x, np.ndarray):
        with np.printoptions(precision=3, suppress=True, threshold=20, edgeitems=2):
            text = f"array of shape {x.shape}: " + " ".join(str(x).split())
    else:
        text = repr(x)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _call(fn, args):
    """Call fn on copies of the arguments, so an answer that modifies its inputs in place
    cannot change the case the next comparison uses."""
    return fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])


def _matching_mistake(q: Question, args, actual):
    for m in q.mistakes:
        try:
            wrong = _call(m.answer, args) if callable(m.answer) else m.answer
        except Exception:
            continue
        if difference(wrong, actual, q.rtol, q.atol) is None:
            return m
    return None


def evaluate(q: Question, answer, cases=None) -> dict:
    """Judge ``answer`` for question ``q``; return a dict with status, points and messages.

    ``status`` is one of ``passed``, ``failed``, ``not-attempted``, ``error``, ``manual``.
    ``cases`` defaults to the public cases; the grader passes fresh ones.
    """
    result = {"grade_id": q.grade_id, "points": 0.0, "max_points": q.points, "status": "failed",
              "message": "", "hint": "", "case": None, "expected": None, "actual": None}
    if q.kind == "manual":
        result.update(status="manual", message="graded by your instructor")
        return result
    if answer is None or answer is Ellipsis:
        result.update(status="not-attempted", message="not attempted yet")
        return result
    if q.kind == "value":
        diff = difference(q.expected, answer, q.rtol, q.atol, "your answer")
        if diff is None:
            result.update(status="passed", points=q.points)
            return result
        m = _matching_mistake(q, (), answer)
        result.update(message=diff, hint=m.hint if m else q.hint, actual=answer)
        return result
    if not callable(answer):
        result.update(status="error", message=f"expected a function, got {type(answer).__name__}",
                      hint="pass the function itself, without calling it: check(id, my_function)")
        return result
    if cases is None:
        cases = q.cases(np.random.default_rng(q.public_seed))
    for i, args in enumerate(cases):
        try:
            actual = _call(answer, args)
        except NotImplementedError:
            result.update(status="not-attempted", message="not attempted yet")
            return result
        except Exception as exc:  # the learner's code failed: report it, do not crash
            result.update(status="error", case=i,
                          message=f"case {i + 1} raised {type(exc).__name__}: {exc}",
                          hint=q.hint)
            return result
        expected = _call(q.reference, args)
        diff = difference(expected, actual, q.rtol, q.atol)
        if diff is not None:
            m = _matching_mistake(q, args, actual)
            result.update(case=i, message=f"case {i + 1}: {diff}", hint=m.hint if m else q.hint,
                          expected=expected, actual=actual)
            return result
    result.update(status="passed", points=q.points)
    return result


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
        q = get_question(grade_id)
        r = evaluate(q, answer)
    except KeyError:
        print(f"{grade_id}: no such question; check the first argument of check()")
        return "error"
    except Exception as exc:  # an answer so odd that comparing it failed: say so, do not crash
        print(f"{grade_id}: could not check this answer ({type(exc).__name__}: {exc})")
        return "error"
    _SCORES[grade_id] = r["points"]
    pts = f"[{r['points']:g}/{q.points:g} points]"
    if r["status"] == "passed":
        print(f"{grade_id}: passed {pts}")
    elif r["status"] == "not-attempted":
        print(f"{grade_id}: not attempted yet {pts}")
    elif r["status"] == "manual":
        print(f"{grade_id}: written answer, graded by your instructor [{q.points:g} points]")
    else:
        print(f"{grade_id}: not yet {pts}")
        print(f"  {r['message']}")
        if r["expected"] is not None:
            print(f"  expected: {_show(r['expected'])}")
            print(f"  got:      {_show(r['actual'])}")
        if r["hint"]:
            print(f"  hint: {r['hint']}")
    return r["status"]


def score_summary(assignment: str) -> None:
    """Print this kernel's score for one assignment, question by question."""
    qs = questions_for(assignment)
    auto = [q for q in qs if q.kind != "manual"]
    earned = sum(_SCORES.get(q.grade_id, 0.0) for q in auto)
    total = sum(q.points for q in auto)
    width = max((len(q.grade_id) for q in qs), default=8)
    print(f"Score so far for {assignment}: {earned:g} / {total:g} points (self-checked)")
    for q in qs:
        if q.kind == "manual":
            state = f"written answer, graded by your instructor ({q.points:g} points)"
        elif q.grade_id not in _SCORES:
            state = "not checked yet"
        else:
            state = f"{_SCORES[q.grade_id]:g} / {q.points:g}"
        print(f"  {q.grade_id:<{width}}  {state}")
