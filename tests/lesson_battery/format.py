"""The entries of an independent battery.

An entry is Python source, written the way a learner writes it in the exercise notebook, and the
name of the object it defines that goes into ``check(grade_id, <that object>)``: a function for
a function question, a variable for a value question. The source runs with ``np`` (NumPy)
already imported, in a fresh namespace of its own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    """A realistic wrong answer.

    ``causes`` are regular expressions (matched case-insensitively against the verdict's
    message, hint and named cause together): the feedback names the cause of this mistake when
    any of them matches. They are fixed before the battery first runs.
    """

    grade_id: str
    name: str  # what the learner did wrong, in a few words
    source: str
    target: str
    causes: tuple[str, ...]


@dataclass(frozen=True)
class Right:
    """A correct answer in an unusual but legitimate form (lists for arrays, a float that is a
    whole number, another correct algorithm, ...): it must pass."""

    grade_id: str
    name: str
    source: str
    target: str
