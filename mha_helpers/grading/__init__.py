"""Graded exercises: the question registry, the learner's self-check, release and grading.

Exercise notebooks import two names::

    from mha_helpers.grading import check, score_summary
"""

from .check import check, score_summary
from .questions import Mistake, Question, get_question, questions_for, register

__all__ = [
    "check",
    "score_summary",
    "Question",
    "Mistake",
    "register",
    "get_question",
    "questions_for",
]
