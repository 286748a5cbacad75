"""The only grading code that runs in one process with student code, inside the sandbox.

:mod:`.runner` is started by :func:`..bubblewrap.run` (``python -m
mha_helpers.grading.sandbox.inside.runner``); :mod:`.watch` calls answers on cases (the
learner's self-check uses it too). Nothing here is trusted by the grader, and nothing here
imports more than :mod:`...rules` (codec, cases): no launcher, no classroom, no banks.
"""
