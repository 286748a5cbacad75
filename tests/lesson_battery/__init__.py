"""Independent batteries of answers to the graded exercises, written from the lessons alone.

Each battery was written by someone who had read only the lessons (``notebooks/``), the student
exercises (``exercises/``) and the learner guide: never the question banks, the judge, the
self-check data or the earlier battery (``tests/wrong_answers.py``). They measure how the
self-check diagnoses answers nobody told it about.

* :mod:`.format`: the entry types (``Wrong``, ``Right``);
* :mod:`.harness`: runs entries through the learner's self-check and classifies each verdict;
* ``battery_*.py``: the batteries themselves, each a list ``WRONG`` and a list ``RIGHT``.

The cause keywords of every wrong answer were fixed (committed) before the battery first ran
against the self-check, and are not tuned to its wording afterwards.
"""
