"""The wall around student code.

Only :mod:`.inside` runs in one process with student code: :mod:`.inside.runner` runs a
learner's program and reports what it did, :mod:`.inside.watch` calls their answers on the
cases. Everything else here runs in the grader's process and never runs student code:

- :mod:`.bubblewrap`: what the sandbox sees and the bwrap command that makes it; ``run()``;
- :mod:`.seccomp`: the system-call allowlist; :mod:`.cgroups`: memory and processes counted,
  and an end the inside cannot prevent; :mod:`.limits`: what one run may use;
  :mod:`.process`: one run's process, fed, read with caps, ended;
- :mod:`.program`: what goes in (the course's cells with the learner's in place);
  :mod:`.report_schema`: the check of what comes out, before anything in it is read.

Nothing here imports :mod:`..classroom`.
"""
