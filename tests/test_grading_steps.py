"""The grader's named steps, each on its own, without a sandbox (course issue 29).

``tests/test_grading.py`` grades whole submissions; these pin down what single steps decide: how
a run is retried without the step that killed it, what a death or a failed cell says in the
notes, what the feedback may repeat of a report, how a row adds up its points, which archive
members are refused.
"""

from __future__ import annotations

import zipfile
from types import SimpleNamespace

from mha_helpers.grading.classroom import grade, report, row
from mha_helpers.grading.classroom.collect import ZIP_MAX_RATIO, _member_refusal

CELLS = [{"label": "course cell setup"}, {"label": "answer cell q_a"}]


def test_a_run_is_retried_without_the_step_that_killed_it():
    run = grade._Run(attempts=1)
    assert grade._skip_next(run, ("cell", 1), n_cells=2) and run.skipped_cells == {1}
    assert grade._skip_next(run, ("eval", "q_a"), n_cells=2) and run.skipped == {"q_a"}
    # no step to leave out, a cell the program does not have, or the retries used up: stop
    assert not grade._skip_next(grade._Run(attempts=1), None, n_cells=2)
    assert not grade._skip_next(grade._Run(attempts=1), ("cell", 7), n_cells=2)
    assert not grade._skip_next(grade._Run(attempts=grade.MAX_RETRIES + 1), ("cell", 0), 2)


def test_the_job_for_a_retry_runs_pass_for_a_skipped_cell_and_leaves_out_a_question():
    program = SimpleNamespace(cells=[{"source": "x = 1"}, {"source": "import os; os._exit(0)"}])
    specs = {
        "q_a": {"grade_id": "q_a", "kind": "value"},
        "q_b": {"grade_id": "q_b", "kind": "value"},
        "q_c": {"grade_id": "q_c", "kind": "function", "cases": ["p0", "p1", "h0", "h1"]},
    }
    run = grade._Run(skipped_cells={1}, skipped={"q_b"})
    job, hidden = grade._job(program, specs, {"q_c": 2}, run, per_cell=3.0)
    assert job["cells"] == [{"source": "x = 1"}, {"source": "pass"}]
    assert job["questions"] == [
        {"grade_id": "q_a", "kind": "value"},
        {"grade_id": "q_c", "kind": "function", "cases": ["p0", "p1"]},  # public cases only
    ]
    assert job["cell_timeout"] == 3.0
    assert hidden == {"q_c": ["h0", "h1"]}  # sent only after the report


def test_the_step_a_program_died_in_is_named_in_the_notes_and_flags_the_row():
    assert report.culprit(["cell 0", "cell 1"]) == ("cell", 1)
    assert report.culprit(["cell 0", "eval q_a"]) == ("eval", "q_a")
    assert report.culprit(["something else"]) is None and report.culprit([]) is None
    notes, flags = report.death_notes(
        [(("cell", 1), "killed by SIGKILL"), (("eval", "q_a"), "timeout"), (None, "cpu-time")],
        CELLS,
    )
    assert notes == [
        "the program stopped in answer cell q_a: killed by SIGKILL",
        "the program stopped while checking q_a: timeout",
        "the program stopped before any cell ran: cpu-time",
    ]
    assert flags == {"kernel-died", "timeout"}
    assert report.grader_reason("exited with code 3") == "it exited before reporting"


def test_a_cell_that_raised_is_noted_with_its_numbers_masked():
    rep = {
        "cells": [
            {"error": {"type": "ValueError", "message": "x = 0.25 and 1e-3"}},
            {"error": {"type": "Exception"}, "timeout": True},
        ]
    }
    notes, flags = report.cell_notes(rep, CELLS, per_cell=4.0)
    assert notes == [
        "course cell setup raised ValueError: x = #.# and #.#",
        "answer cell q_a ran out of time (4 s per cell)",
    ]
    assert flags == {"timeout"}


def test_feedback_repeats_only_the_graders_words_of_a_report():
    q = SimpleNamespace(grade_id="q_a", kind="function", reference=lambda heads, w_o: None)
    rep = {
        "cells": [{"error": {"type": "EvilError\x1b[31m", "message": "bad \x1b[2Jshape"}}],
        "answers": {
            "q_a": {
                "status": "ok",
                "results": [
                    {"value": 1, "raised": ["ValueError", "bad \x1b[2Jshape"], "mutated": ["w_o"]},
                    {"value": 2, "raised": None, "mutated": ["secret_name"], "where": {"line": 3}},
                    {"value": 3, "raised": ["ValueError", "a row past the public cases"]},
                ],
            }
        },
    }
    said = report.in_grader_words(rep, [q], {"q_a": 2})
    assert said["cells"][0]["error"] == {"type": "Exception", "message": "bad [2Jshape"}
    first, second = said["answers"]["q_a"]["results"]  # cut to the public cases
    assert first["raised"] == ["ValueError", "bad [2Jshape"] and first["mutated"] == ["w_o"]
    assert second["mutated"] == ["one of the arguments"] and second["where"] == {"line": 3}
    assert rep["cells"][0]["error"]["type"].startswith("EvilError")  # the input is not changed
    # what the program did on the hidden cases reaches the verdict in fixed words only
    hidden = {
        "answers": {
            "q_a": {
                "status": "ok",
                "results": [
                    {
                        "value": 0,
                        "raised": ["KeyError", "0.123"],
                        "mutated": ["w_o"],
                        "where": {"function": "f", "line": 2, "code": "x = 0.123"},
                    },
                    {"value": [0.123], "raised": None, "mutated": []},
                ],
            }
        }
    }
    merged = report.with_hidden(said, hidden, {"q_a": 2}, [q])
    third, fourth = merged["answers"]["q_a"]["results"][2:]
    assert third == {
        "value": None,
        "raised": ["an exception", ""],
        "mutated": ["one of the arguments"],
        "where": None,
    }
    assert fourth == {"value": [0.123], "raised": None, "mutated": [], "where": None}
    timed = report.with_hidden(
        report.in_grader_words(rep, [q], {"q_a": 2}),
        {"answers": {"q_a": {"status": "timeout"}}},
        {"q_a": 2},
        [q],
    )
    # a hidden case that ran out of time is a failed hidden case, as the student reads it (the
    # status stays "ok": a wrong value reads the same); the instructor's note comes from the flag
    timed_q = timed["answers"]["q_a"]
    assert timed_q["status"] == "ok" and timed_q["hidden_timeout"] is True
    assert timed_q["results"][2:] == [report.hidden_row({"raised": True})]


def test_a_row_adds_up_points_and_leaves_written_answers_pending():
    qs = [
        SimpleNamespace(grade_id="q_a", kind="function", points=4.0),
        SimpleNamespace(grade_id="q_b", kind="manual", points=2.0),
        SimpleNamespace(grade_id="q_c", kind="manual", points=1.0),
        SimpleNamespace(grade_id="q_d", kind="value", points=1.0),
    ]
    details = {
        "q_a": {"status": "passed", "points": 4.0},
        "q_b": {"status": "manual", "points": None},
        "q_c": {"status": "unanswered", "points": 0.0},
        "q_d": {"status": "failed", "points": 0.0},
    }
    points, total, maximum, pending = row.points_of(qs, details)
    assert points == {"q_a": 4.0, "q_b": "pending", "q_c": 0.0, "q_d": 0.0}
    assert (total, maximum, pending) == (4.0, 8.0, 2.0)
    sub = SimpleNamespace(student_id="7", student="Ann", display="/x/ann.ipynb", shown="ann.ipynb")
    sub.late, sub.notes = False, []
    graded = row.graded_row(sub, "a1", qs, details, {"memory", "timeout"}, [], {})
    assert graded["status"] == "timeout"  # the first of RUN_STATUS_ORDER that happened
    assert row.graded_row(sub, "a1", qs, details, set(), [], {})["status"] == "ok"


def test_archive_members_that_are_refused_and_why():
    def member(**kw):
        info = zipfile.ZipInfo("alice/hw.ipynb")
        for k, v in kw.items():
            setattr(info, k, v)
        return info

    assert _member_refusal(member(file_size=10, compress_size=10), total=0) is None
    assert _member_refusal(member(external_attr=0o120777 << 16), 0) == "a symbolic link"
    assert "encrypted" in _member_refusal(member(flag_bits=0x1), 0)
    big = 4 * 2**20
    bomb = member(file_size=big, compress_size=big // (ZIP_MAX_RATIO + 1))
    assert "zip bomb" in _member_refusal(bomb, 0)
    assert "limit was reached" in _member_refusal(member(file_size=10, compress_size=10), 2**40)
