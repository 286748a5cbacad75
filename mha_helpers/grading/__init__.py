"""Graded exercises: the question registry, the learner's self-check, release and grading.

Exercise notebooks import two names::

    from mha_helpers.grading import check, score_summary
"""

from .rules.registry import Mistake, Question, get_question, questions_for, register
from .selfcheck.check import check, score_summary, self_check

__all__ = [
    "check",
    "score_summary",
    "self_check",
    "Question",
    "Mistake",
    "register",
    "get_question",
    "questions_for",
]
