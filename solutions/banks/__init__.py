"""The course's question banks: one module per exercise, ``bank_NN.py``, instructor-only.

Each module declares its questions with ``register(Question(...))``: points, public cases,
the reference answer and the classic mistakes with their hints. These modules hold the answers,
so they live beside the solutions and never reach students: ``mha-course release`` turns them
into the self-check data in ``mha_helpers/grading/selfcheck/data/`` (public cases, expected
outputs, the mistakes' outputs, hashes of value answers), and the grader imports them in its own
trusted process, outside the sandbox that runs student code.

They are loaded by path as the package ``mha_course_banks`` (see
``mha_helpers.grading.classroom.banks``, the only module that imports them), so a bank may
import a sibling with ``from .bank_01 import ...``.
"""
