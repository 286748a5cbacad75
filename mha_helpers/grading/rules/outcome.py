"""The shape of a verdict, and the verdicts that need no judging.

Every verdict, in the self-check and in the grader, for every kind of question, is one dict with
the same fields: ``grade_id``, ``status``, ``points``, ``max_points``, ``message``, ``hint``,
``case``, ``public``, ``expected`` and ``actual`` (some verdicts add more: ``mistake``,
``diagnosis``, ``helpers``, ``where``, ``memory``). :func:`base_verdict` is that dict before
anything is known; :func:`not_attempted` and :func:`not_callable` are the two verdicts every
caller gives before it asks the rules.
"""

from __future__ import annotations

__all__ = ["base_verdict", "not_attempted", "not_callable"]


def base_verdict(meta) -> dict:
    """A failed verdict with no points and nothing said yet."""
    return {
        "grade_id": meta["grade_id"],
        "status": "failed",
        "points": 0.0,
        "max_points": float(meta["points"]),
        "message": "",
        "hint": "",
        "case": None,
        "public": True,
        "expected": None,
        "actual": None,
        # what the hint attributes the failure to (a classic mistake's name, "type", "form",
        # a known error, ...), or None when the verdict only says which property fails
        "cause": None,
    }


def not_attempted(meta) -> dict:
    """No answer yet: the stub still raises ``NotImplementedError``, or the answer is ``None``."""
    return base_verdict(meta) | {"status": "not-attempted", "message": "not attempted yet"}


def not_callable(meta, type_name: str) -> dict:
    """A function question answered with something that is not a function."""
    return base_verdict(meta) | {
        "status": "error",
        "message": f"expected a function, got {type_name}",
        "hint": "pass the function itself, without calling it: check(id, my_function)",
        "cause": "not a function",
    }


def unjudged(meta, exc: BaseException) -> dict:
    """A function's result the rules could not compare with the expected one at all (a
    structure nothing in the question allows, on which a comparison itself raised): no points,
    and a message that says so instead of a crash of the check."""
    what = "what your function returned" if meta.get("kind") == "function" else "your answer"
    return base_verdict(meta) | {
        "message": (
            f"the check could not compare {what} with the expected result "
            f"({type(exc).__name__}): give exactly the arrays or numbers the question asks for, "
            "with the shapes and types it gives"
        ),
        "hint": meta.get("hint", ""),
    }
