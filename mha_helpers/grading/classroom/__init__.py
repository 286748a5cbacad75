"""The instructor's process: everything that handles submissions, the banks and the gradebook.

Nothing here runs student code: submissions are read as data, their programs run in
:mod:`..sandbox`. This is the only place that imports the question banks (:mod:`.banks`).

- the commands (:mod:`.commands`: ``grade``, ``check-solutions``; :mod:`.export`; the
  gradebook's own, :mod:`.gradebook_commands`: ``pending``, ``adjust``, ``extend``,
  ``remove``, ``merge``), the grader (:mod:`.grade`) and ``validate`` (:mod:`.validate`, the
  learner's check before submitting);
- the course: :mod:`.banks` (the reference answers), :mod:`.assignments` (templates and
  cases), :mod:`.release` (the exercises and the self-check data, the student copy);
- the stages of grading: :mod:`.collect` (folders, Canvas and Moodle downloads, zips),
  :mod:`.recognise` (answer cells whose metadata was lost), :mod:`.report` (the report in the
  grader's words), :mod:`.row` (one row per submission), the gradebook (:mod:`.gradebook_db`
  the database and its API, :mod:`.gradebook_view` the decisions applied,
  :mod:`.gradebook_store` the CSV view and hand edits, :mod:`.gradebook` the CSV itself),
  :mod:`.feedback` (the students' files), :mod:`.lms` (Canvas and Moodle rosters in, grades
  out);
- after grading: ``review`` and ``report`` (:mod:`.review_commands`, options in
  :mod:`.review_cli`): the written-answer page (:mod:`.review_page`) and its decisions file
  (:mod:`.review_decisions`), the class report (:mod:`.class_report`, identical code:
  :mod:`.similarity`), both through one adapter to the gradebook and the submissions
  (:mod:`.review_store`); feedback packed for Canvas and Moodle (:mod:`.lms_feedback`);
- :mod:`.untrusted`: the one cleaner of text that comes from outside.
"""
