"""Graded exercises: the learner's self-check, the rules it shares with the grader, the sandbox
that student code runs in, and the instructor's tools.

Exercise notebooks import two names::

    from mha_helpers.grading import check, score_summary

The sub-packages are named for where their code runs (``CONTRIBUTING.md`` has the map):

* :mod:`.rules`: the rule book, the same in the learner's kernel and in the grader;
* :mod:`.selfcheck`: what the learner's kernel runs (``check``, ``score_summary``, its data);
* :mod:`.sandbox`: the wall around student code; only :mod:`.sandbox.inside` runs in one
  process with it;
* :mod:`.classroom`: the instructor's process (and ``mha-course validate``): collect, grade,
  gradebook, LMS files, release; the only code that imports the question banks.

``get_question`` and ``questions_for`` load the course's question banks when none are loaded
yet, so they come from :mod:`.classroom.banks`, imported only when one of them is first used
(never by a learner's ``check`` nor inside the sandbox).
"""

from .rules.registry import Mistake, Question, register
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

_FROM_THE_BANKS = ("get_question", "questions_for")


def __getattr__(name):
    """``get_question`` and ``questions_for``, from :mod:`.classroom.banks` on first use."""
    if name in _FROM_THE_BANKS:
        from .classroom import banks

        return getattr(banks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
