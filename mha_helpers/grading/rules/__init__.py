"""The rule book: the same verdict in the learner's kernel and in the grader.

Pure functions of data, no files, no processes, no student code: given what an answer did on
each case (or the value it gave) and what was expected, the verdict, worded for the learner.
The self-check (:mod:`..selfcheck`) and the grader (:mod:`..classroom`) both call these, so
they agree on every answer they both see. Nothing here imports anything outside ``rules/``.

- :mod:`.registry`: what a question is (``Question``, ``Mistake``, ``register``);
- :mod:`.cases`: a question's cases, what the reference and the mistakes return on them, what
  one call of an answer did;
- :mod:`.judge`: the verdict on a function answer or a value answer, its wording, its hints;
  :mod:`.compare`: how two values differ, in words; :mod:`.recorded`: value answers in a copy
  for graded work; :mod:`.outcome`: the shape of a verdict;
- :mod:`.verdict`: the grader's step "verdicts from the rules": each question's record in the
  sandbox's (untrusted) report, validated, then judged;
- :mod:`.codec`: values as JSON, validated when read (the self-check data, the job, the report).
"""
