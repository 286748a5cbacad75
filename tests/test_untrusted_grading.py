"""Untrusted text through the whole grader (course issue 21, classes 1, 2 and 3).

One batch of hostile submissions is graded by the real command (``mha-course grade``, in a
subprocess whose console can only encode ASCII), through the real sandbox. Then:

* class 1: every row is written, the gradebook, the feedback and the console hold no control,
  escape or bidi character and no lone surrogate, whatever the names and messages were;
* class 2: no hidden case's input reaches the feedback or the gradebook, in any notation the
  submissions tried (decimals, integers of value x 10^6, exception names, "changes its input"
  names, exit codes, forged reports);
* class 3: a report that breaks its schema (``times.ready = 10**400``, wrong types) costs only
  that submission's automatic points, with a note that says why.

And the write phase is isolated per row: a row or a feedback file that cannot be written is an
error row or a listed failure, and every other row is written.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import unicodedata

import numpy as np
import pytest
from grading_helpers import (
    A03,
    CORRECT,
    FULL,
    POINTS,
    ROOT,
    make_notebook,
    require_sandbox,
    with_answer,
    write_nb,
)

from mha_helpers.cli import main
from mha_helpers.grading import get_question
from mha_helpers.grading.classroom import feedback, gradebook
from mha_helpers.grading.classroom.assignments import expected_cases
from mha_helpers.grading.classroom.banks import load_banks
from mha_helpers.grading.course import find_course

SEED = 7
GID = "q03_concat_project"
CORRECT_FN = "    return np.concatenate(list(h), axis=-1) @ w\n"
# Finds the job (hidden cases included) in the program's own memory, as an attacker would.
JOB = (
    "import gc\n"
    "def _job():\n"
    "    return [o for o in gc.get_objects() if isinstance(o, dict) and 'cells' in o and 'questions' in o][0]\n"
    "def _hidden_ints():\n"
    "    from mha_helpers.grading.rules import codec\n"
    "    q = [q for q in _job()['questions'] if q.get('cases')][0]\n"
    "    vals = []\n"
    "    for case in q['cases'][3:]:\n"
    "        for a in codec.decode(case):\n"
    "            vals += [int(v * 1e6) for v in np.asarray(a, dtype=float).ravel()[:6]]\n"
    "    return ' '.join(map(str, vals))\n"
)


def hostile_notebooks() -> dict:
    forged = (
        "import os, json\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.write(fd, b'result ' + json.dumps({'cells': [], 'answers': {"
        f"'{GID}': {{'status': 'ok', 'helpers': [], 'results': ["
        "{'value': None, 'raised': None, 'mutated': _hidden_ints().split()[:20]}] * 6}}, "
        "'times': {'ready': 10**400}}).encode() + b'\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
    )
    return {
        # Class 1: names and messages with every kind of bad character.
        "dirty_messages": make_notebook(
            with_answer(
                "q03_d_head",
                "d_head = 64\nraise ValueError('bad \\ud800 \\x00 \\x1b[2J\\x1b[31m red \\u202e evil \\x9b')",
            )
        ),
        "dirty_public_error": make_notebook(
            with_answer(
                GID,
                "def concat_project(h, w):\n    raise KeyError('\\x00\\x1b]0;pwned\\x07\\ud83d')\n",
            )
        ),
        # Class 2: hidden inputs, as integers, through every channel.
        "ints_in_message": make_notebook(
            with_answer(
                GID,
                JOB + "calls = [0]\ndef concat_project(h, w):\n    calls[0] += 1\n"
                "    if calls[0] > 3:\n        raise ValueError(_hidden_ints())\n" + CORRECT_FN,
            )
        ),
        "ints_in_exception_name": make_notebook(
            with_answer(
                GID,
                JOB + "calls = [0]\ndef concat_project(h, w):\n    calls[0] += 1\n"
                "    if calls[0] > 3:\n"
                "        raise type('E' + _hidden_ints().replace(' ', '_').replace('-', 'm')[:70], (Exception,), {})()\n"
                + CORRECT_FN,
            )
        ),
        "ints_in_cell_error": make_notebook(
            with_answer("q03_d_head", JOB + "d_head = 64\nraise ValueError(_hidden_ints())\n")
        ),
        "ints_in_public_error": make_notebook(
            with_answer(
                GID, JOB + "def concat_project(h, w):\n    raise ValueError(_hidden_ints())\n"
            )
        ),
        "ints_in_exit_code": make_notebook(
            with_answer(
                GID,
                JOB
                + "import os\ndef concat_project(h, w):\n    os._exit(int(_hidden_ints().split()[0]) % 256)\n",
            )
        ),
        # Class 2 and 3 together: a forged report with hidden data in the mutated names and a
        # time no float can hold.
        "forged_report": make_notebook(with_answer(GID, JOB + forged)),
        "forged_types": make_notebook(
            with_answer(
                "q03_d_head",
                "import os\nfor fd in range(3, 64):\n    try:\n"
                '        os.write(fd, b\'result {"cells": "many", "answers": {"q03_d_head": {"status": "ok", "value": 64}}}\\n\')\n'
                "    except OSError:\n        pass\nos._exit(0)\n",
            )
        ),
        "good": make_notebook(),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    require_sandbox()
    folder = tmp_path_factory.mktemp("hostile")
    paths = {}
    for student, nb in hostile_notebooks().items():
        paths[student] = write_nb(folder, student, nb)
    # A student folder whose name is not UTF-8 and holds a terminal escape.
    odd = os.fsdecode(b"\xff\x1b[31mmallory\xe2\x80\xae")
    paths["odd_name"] = write_nb(folder, odd, make_notebook())
    out = tmp_path_factory.mktemp("out")
    env = dict(os.environ, PYTHONIOENCODING="ascii", LANG="C", LC_ALL="C")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mha_helpers.cli",
            "grade",
            str(folder),
            "--out",
            str(out / "gradebook.csv"),
            "--feedback",
            str(out / "feedback"),
            "--course",
            str(ROOT),
            "--seed",
            str(SEED),
            "--timeout",
            "20",
        ],
        capture_output=True,
        env=env,
        timeout=600,
    )
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    load_banks(find_course(start=ROOT))
    return {"proc": proc, "rows": rows, "out": out, "paths": paths}


def _row(graded, student):
    (row,) = [r for r in graded["rows"] if student in r["student"] or student in r["notes"]]
    return row


def _feedback(graded) -> dict:
    return {p: p.read_text(encoding="utf-8") for p in (graded["out"] / "feedback").rglob("*.*")}


def _bad_characters(text: str) -> list:
    return [
        ch
        for ch in text
        if ch not in "\n" and unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Zl", "Zp"}
    ]


def test_every_row_is_written_and_nothing_written_holds_a_bad_character(graded):
    proc = graded["proc"]
    assert proc.returncode == 1, proc.stderr[-3000:]  # rows need a look; nothing crashed
    assert len(graded["rows"]) == len(graded["paths"]), [r["student"] for r in graded["rows"]]
    proc.stdout.decode("ascii")  # the console took only what it could show
    assert b"\x1b" not in proc.stdout and b"\x1b" not in proc.stderr
    assert "Traceback" not in proc.stderr.decode("ascii", "replace")
    book = (graded["out"] / "gradebook.csv").read_text(encoding="utf-8")
    assert not _bad_characters(book.replace("\n", ""))
    for path, text in _feedback(graded).items():
        assert not _bad_characters(text), (path, _bad_characters(text)[:5])
        path.name.encode("utf-8")  # file names are valid UTF-8 too
    assert "mallory" in proc.stderr.decode("ascii") and "mallory" in book  # the progress line
    dirty = _row(graded, "dirty_messages")
    assert dirty["q03_d_head"] == "1" and "ValueError" in dirty["notes"]
    assert "red" in dirty["notes"] and "evil" in dirty["notes"]


def _hidden_numbers() -> set:
    q = get_question(GID)
    n_public, cases, _, _ = expected_cases(q, SEED)
    out = set()
    for case in cases[n_public:]:
        for a in case:
            for v in np.asarray(a, dtype=float).ravel()[:6]:
                if abs(int(v * 1e6)) >= 1000:
                    out.add(str(abs(int(v * 1e6))))
    return out


def test_no_hidden_input_reaches_a_student_in_any_notation(graded):
    hidden = _hidden_numbers()
    assert len(hidden) > 20
    texts = dict(_feedback(graded))
    texts["gradebook"] = (graded["out"] / "gradebook.csv").read_text(encoding="utf-8")
    for where, text in texts.items():
        digits = set(re.findall(r"\d{4,}", text))
        assert not digits & hidden, (where, sorted(digits & hidden)[:5])
    # The leaks' own feedback says what happened in the grader's words.
    name = _row(graded, "ints_in_exception_name")["notes"]
    assert "E" not in re.findall(r"raised (\w+)", name)
    public = [t for p, t in texts.items() if "ints_in_public_error" in str(p) and p.suffix == ".md"]
    assert public and "case 1 raised ValueError" in public[0]


def test_a_students_own_error_text_shows_for_public_cases_only_cleaned(graded):
    (md,) = [
        t
        for p, t in _feedback(graded).items()
        if "dirty_public_error" in p.name and p.suffix == ".md"
    ]
    assert "case 1 raised KeyError" in md and "pwned" in md  # their text, cleaned
    assert "\x1b" not in md and "\x07" not in md


def test_a_report_that_breaks_its_schema_costs_only_its_automatic_points(graded):
    for student in ("forged_report", "forged_types"):
        row = _row(graded, student)
        assert row["status"] == "flagged", row
        assert row["total"] == "0", row
        assert "does not follow its schema" in row["notes"], row["notes"]
    assert _row(graded, "good")["total"] == f"{FULL:g}"


def test_a_row_or_feedback_that_cannot_be_written_costs_only_itself(tmp_path, monkeypatch, capsys):
    require_sandbox()
    for student in ("ann", "bob", "cy"):
        write_nb(tmp_path / "subs", student, make_notebook())
    real_record, real_write = gradebook.row_record, feedback._write_feedback_row

    def record(row, *a, **k):
        if row["student"] == "bob":
            raise OverflowError("cannot write this row")
        return real_record(row, *a, **k)

    def write(folder, row, used):
        if row["student"] == "cy":
            raise OSError(28, "No space left on device")
        return real_write(folder, row, used)

    monkeypatch.setattr(gradebook, "row_record", record)
    monkeypatch.setattr(feedback, "_write_feedback_row", write)
    book, fb = tmp_path / "book.csv", tmp_path / "fb"
    code = main(
        [
            "grade",
            str(tmp_path / "subs"),
            "--out",
            str(book),
            "--feedback",
            str(fb),
            "--course",
            str(ROOT),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    rows = {r["student"]: r for r in csv.DictReader(book.open(encoding="utf-8"))}
    assert set(rows) == {"ann", "bob", "cy"}
    assert rows["ann"]["total"] == rows["cy"]["total"] == f"{FULL:g}"
    assert (
        rows["bob"]["status"] == "grader-error" and "could not be written" in rows["bob"]["notes"]
    )
    assert sorted(p.stem for p in (fb / A03).glob("*.md")) == ["ann", "bob"]
    assert "could not write the feedback of cy" in out


def test_points_of_honest_answers_are_untouched(graded):
    good = _row(graded, "good")
    assert all(good[g] == f"{POINTS[g]:g}" for g in POINTS)
    assert json.dumps(CORRECT)  # the same answers the batch started from
