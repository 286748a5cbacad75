"""What the learner's kernel runs: ``check()`` after each exercise, ``score_summary()`` at the end.

:mod:`.check` works from ``data/`` (one JSON file per assignment, written by ``mha-course
release``: public cases, expected outputs, the classic mistakes' outputs, hashes of value
answers; never reference code) with the rules of :mod:`..rules`, and calls the learner's
function with :mod:`..sandbox.inside.watch`, as the sandbox does. It imports nothing of
:mod:`..classroom`; inside the grading sandbox ``data/`` is hidden.
"""
