"""The grader against bad and hostile submissions (course issue 3).

One module-scoped batch grades a folder with one submission per item of the hostile list,
built from the released exercise notebook, so the whole file needs only one grading run plus a
few small ones. Each test then checks the row of its submission: its status, the points it
earned (never more than a correct answer earns, never less for the answers that are right), and
what its notes and feedback say.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from mha_helpers.grading import grader
from mha_helpers.grading.check import _call
from mha_helpers.grading.questions import get_question

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "03_concatenate_and_project.ipynb"
SOLUTIONS = ROOT / "solutions"
A03 = "03_concatenate_and_project"
SEED = 20260401
TIMEOUT = 8.0  # seconds per notebook in these tests
CELL_TIMEOUT = 2.0

CORRECT = {
    "q03_d_head": "d_head = 768 // 12",
    "q03_identity_output": "identity_output = joined @ np.eye(4)",
    "q03_concat_vs_average": 'concat_vs_average = "b"',
    "q03_concat_project": (
        "def concat_project(head_outputs, w_o):\n"
        "    joined = np.concatenate([np.asarray(x) for x in head_outputs], axis=-1)\n"
        "    return joined @ w_o\n"),
}
FULL = 8.0  # automatic points of exercise 03
POINTS = {"q03_d_head": 1, "q03_identity_output": 1, "q03_concat_vs_average": 2,
          "q03_concat_project": 4}


def make_notebook(answers=None, drop_metadata=False, edit=None):
    """A student notebook: the released exercise with some answer cells filled in."""
    nb = nbformat.read(EXERCISE, as_version=4)
    answers = dict(CORRECT if answers is None else answers)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    if edit:
        edit(nb)
    if drop_metadata:
        nb.metadata.pop("mha_course", None)
    return nb


def with_answer(gid, source):
    answers = dict(CORRECT)
    answers[gid] = source
    return answers


def write_nb(folder: Path, student: str, nb, name="exercise_03.ipynb") -> Path:
    path = folder / student / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _delete_checks(nb):
    nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]


def _fake_checks(nb):
    for c in nb.cells:
        md = c.metadata.get("nbgrader", {})
        if md.get("grade") and not md.get("solution"):
            c.source = 'print("passed")'


def build_batch(folder: Path) -> dict:
    """One submission per hostile item; returns {student: path}."""
    subs = {}
    sol_path = SOLUTIONS / f"{A03}.ipynb"
    paths = {
        "good": make_notebook(),
        "blank": make_notebook({}),
        "raises": make_notebook(with_answer("q03_concat_project",
                                            "def concat_project(h, w):\n    raise ValueError('nope')\n")),
        "loops_cell": make_notebook(with_answer("q03_d_head", "d_head = 64\nwhile True:\n    pass\n")),
        "loops_call": make_notebook(with_answer("q03_concat_project",
                                                "def concat_project(h, w):\n    while True:\n        pass\n")),
        # Catches the grader's alarm and keeps looping: only the wall-clock kill stops it.
        "loops_stubborn": make_notebook(with_answer(
            "q03_d_head",
            "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nd_head = 64\n"
            "while True:\n    pass\n")),
        "sys_exit": make_notebook(with_answer("q03_d_head", "import sys\nd_head = 64\nsys.exit(0)\n")),
        "os_exit": make_notebook(with_answer("q03_identity_output",
                                             "import os\nidentity_output = [1, 2, 3, 4]\nos._exit(0)\n")),
        "kills_kernel": make_notebook(with_answer(
            "q03_concat_vs_average",
            "import os, signal\nconcat_vs_average = 'b'\nos.kill(os.getpid(), signal.SIGKILL)\n")),
        "exit_in_call": make_notebook(with_answer(
            "q03_concat_project", "import os\ndef concat_project(h, w):\n    os._exit(3)\n")),
        "prints": make_notebook(with_answer("q03_d_head",
                                            "for _ in range(3000):\n    print('x' * 1000)\nd_head = 64\n")),
        "memory": make_notebook(with_answer("q03_d_head",
                                            "hog = bytearray(8 * 2**30)\nd_head = 64\n")),
        "deleted_checks": make_notebook(with_answer("q03_d_head", "d_head = 65"), edit=_delete_checks),
        "fake_checks": make_notebook(with_answer("q03_d_head", "d_head = 65"), edit=_fake_checks),
        "redefines_check": make_notebook(with_answer(
            "q03_d_head",
            "import mha_helpers.grading as g\n"
            "def check(*args, **kwargs):\n    print('passed')\n"
            "g.check = check\nd_head = 65\n")),
        "patches_numpy": make_notebook({
            "q03_d_head": "np.allclose = lambda *a, **k: True\nnp.array_equal = lambda *a, **k: True\n"
                          "np.isclose = lambda *a, **k: True\nd_head = 65\n",
            "q03_identity_output": "identity_output = [0, 0, 0, 0]",
            "q03_concat_vs_average": 'concat_vs_average = "a"',
            "q03_concat_project": "def concat_project(h, w):\n    return np.zeros((len(h[0]), w.shape[1]))\n",
        }),
        "patches_helpers": make_notebook(with_answer(
            "q03_concat_project",
            "import mha_helpers.grading.compare as cmp, mha_helpers.grading.check as chk\n"
            "cmp.difference = lambda *a, **k: None\nchk.difference = lambda *a, **k: None\n"
            "def concat_project(h, w):\n    return np.zeros(3)\n")),
        # Registers a transformer that blanks every later cell, including the course's cells.
        "transformer": make_notebook(with_answer(
            "q03_d_head",
            "d_head = 64\nip = get_ipython()\n"
            "ip.input_transformers_cleanup.append(lambda lines: ['pass\\n'])\n"
            "ip.input_transformers_post.append(lambda lines: ['pass\\n'])\n")),
        "reads_files": make_notebook(with_answer(
            "q03_concat_project",
            f"import json, os\ntry:\n    names = os.listdir({str(sol_path.parent)!r})\nexcept OSError:\n    pass\n"
            f"sol = json.load(open({str(sol_path)!r}))\n"
            "src = ''.join(''.join(c['source']) for c in sol['cells'] if 'def concat_project' in ''.join(c['source']))\n"
            "exec(src)\n")),
        "calls_reference": make_notebook(with_answer(
            "q03_concat_project",
            "from mha_helpers import merge_heads\n"
            "def concat_project(h, w):\n    return merge_heads(np.asarray(h)) @ w\n")),
        "calls_bank": make_notebook(with_answer(
            "q03_concat_project",
            "from mha_course_banks import bank_03 as b\n"
            "concat_project = getattr(b, '_concat_project' + '_reference')\n")),
        "hides_reference": make_notebook(with_answer(
            "q03_concat_project",
            "import importlib\nm = importlib.import_module('mha_helpers.' + 'heads')\n"
            "f = getattr(m, 'merge' + '_heads')\n"
            "def concat_project(h, w):\n    return f(np.asarray(h)) @ w\n")),
        # Switches the call monitor off before calling the course's implementation.
        "unhooks_monitor": make_notebook(with_answer(
            "q03_concat_project",
            "import sys, importlib\nf = getattr(importlib.import_module('mha_helpers.' + 'heads'), 'merge' + '_heads')\n"
            "def concat_project(h, w):\n    sys.setprofile(None)\n    return f(np.asarray(h)) @ w\n")),
        "escapes": make_notebook(with_answer(
            "q03_d_head",
            "d_head = 64\nimport os, subprocess, socket, threading\n"
            "for attempt in [lambda: os.kill(os.getppid(), 0), lambda: subprocess.run(['true']),\n"
            "                lambda: socket.create_connection(('127.0.0.1', 9), timeout=0.1),\n"
            "                lambda: threading.Thread(target=__import__('time').sleep, args=(5,), daemon=True).start()]:\n"
            "    try:\n        attempt()\n    except Exception:\n        pass\n")),
        "leaks_inputs": make_notebook(with_answer(
            "q03_concat_project", "def concat_project(h, w):\n    raise ValueError(repr(np.asarray(h)))\n")),
        "bare_reshape": make_notebook(with_answer(
            "q03_concat_project",
            "def concat_project(h, w):\n    h = np.asarray(h)\n"
            "    return h.reshape(h.shape[1], -1) @ w\n")),
        "renamed": make_notebook(drop_metadata=True),
    }
    for student, nb in paths.items():
        name = "my work (final).ipynb" if student == "renamed" else "exercise_03.ipynb"
        subs[student] = write_nb(folder, student, nb, name)

    def raw(student, data: bytes, name="exercise_03.ipynb"):
        p = folder / student / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        subs[student] = p

    raw("not_json", b"{this is not json")
    raw("binary", bytes(range(256)) * 10)
    raw("not_notebook", json.dumps({"hello": "world", "cells": 3}).encode())
    raw("json_list", b"[1, 2, 3]")
    raw("empty", b"")
    raw("huge", b" " * (grader.DEFAULT_MAX_BYTES + 10))
    raw("deep_json", b"[" * 100_000 + b"]" * 100_000)
    raw("old_format", nbformat.writes(make_notebook(), version=3).encode())
    lesson = nbformat.read(ROOT / "notebooks" / "02_heads.ipynb", as_version=4) \
        if (ROOT / "notebooks" / "02_heads.ipynb").exists() else make_notebook(drop_metadata=True)
    if lesson.metadata.get("mha_course") is None:
        for c in lesson.cells:
            c.metadata.pop("nbgrader", None)
    write_nb(folder, "lesson_instead", lesson)
    subs["lesson_instead"] = folder / "lesson_instead" / "exercise_03.ipynb"
    # Two submissions from one student: both rows are kept and marked.
    subs["twice_a"] = write_nb(folder, "twice", make_notebook(), "first.ipynb")
    subs["twice_b"] = write_nb(folder, "twice", make_notebook(with_answer("q03_d_head", "d_head = 12")),
                               "second.ipynb")
    (folder / "linked").mkdir()
    os.symlink(subs["good"], folder / "linked" / "exercise_03.ipynb")  # someone else's work
    subs["linked"] = folder / "linked" / "exercise_03.ipynb"
    (folder / "nothing_here").mkdir()
    (folder / "nothing_here" / "readme.txt").write_text("forgot to attach")
    return subs


def _hashes(folder: Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    subs = build_batch(folder)
    before = _hashes(folder)
    rows = grader.grade_paths([folder], jobs=2, timeout=TIMEOUT, cell_timeout=CELL_TIMEOUT,
                              seed=SEED, memory_mb=1024)
    by_file = {r["file"]: r for r in rows}
    out = tmp_path_factory.mktemp("out")
    gradebook = grader.write_gradebook(rows, out / "gradebook.csv")
    feedback = grader.write_feedback(rows, out / "feedback")
    return {"folder": folder, "subs": subs, "rows": rows, "before": before,
            "row": lambda student: by_file[str(subs[student])],
            "gradebook": gradebook, "feedback": out / "feedback"}


def q_points(row):
    return {k: v for k, v in row["points"].items() if k in POINTS}


# ---------------------------------------------------------------------------------------------
# The batch as a whole


def test_every_submission_has_exactly_one_row(batch):
    files = sorted(r["file"] for r in batch["rows"])
    expected = sorted([str(p) for p in batch["subs"].values()] + [str(batch["folder"] / "nothing_here")])
    assert files == expected


def test_no_submission_file_is_changed(batch):
    assert _hashes(batch["folder"]) == batch["before"]


def test_correct_submission_scores_full_marks(batch):
    row = batch["row"]("good")
    assert row["status"] == "ok", row["notes"]
    assert row["total"] == row["max"] == FULL
    assert row["manual_pending"] == 2
    assert row["points"]["q03_explain"] == "pending"


def test_fresh_exercise_scores_zero_without_errors(batch):
    row = batch["row"]("blank")
    assert row["status"] == "ok", row["notes"]
    assert row["total"] == 0
    assert {d["status"] for g, d in row["questions"].items() if g in POINTS} == {"not-attempted"}


# ---------------------------------------------------------------------------------------------
# Files that are not what they should be


@pytest.mark.parametrize("student,status", [
    ("not_json", "not-json"), ("binary", "not-json"), ("deep_json", "not-json"),
    ("not_notebook", "not-a-notebook"), ("json_list", "not-a-notebook"),
    ("empty", "empty"), ("huge", "too-large"), ("lesson_instead", "unknown-assignment"),
    ("linked", "not-a-notebook"),
])
def test_unreadable_files_get_a_status_and_no_points(batch, student, status):
    row = batch["row"](student)
    assert row["status"] == status
    assert row["total"] == 0 and row["points"] == {}


def test_old_format_is_converted_and_graded(batch):
    row = batch["row"]("old_format")
    assert row["status"] == "ok", row["notes"]
    assert row["total"] == FULL
    assert any("converted from notebook format 3" in n for n in row["notes"])


def test_renamed_file_without_metadata_is_identified_by_its_answer_cells(batch):
    row = batch["row"]("renamed")
    assert row["assignment"] == A03 and row["total"] == FULL


def test_another_assignment_is_graded_as_that_assignment(tmp_path):
    others = [p for p in sorted((ROOT / "exercises").glob("*.ipynb")) if A03 not in p.name]
    assert others, "the course has more than one exercise notebook"
    nb = nbformat.read(others[0], as_version=4)
    write_nb(tmp_path, "carol", nb, "exercise_03.ipynb")  # the wrong notebook, under our name
    [row] = grader.grade_paths([tmp_path], jobs=1, timeout=TIMEOUT, cell_timeout=CELL_TIMEOUT)
    assert row["assignment"] == nb.metadata["mha_course"]["assignment"] != A03
    assert row["status"] == "ok" and row["total"] == 0  # a blank exercise earns nothing


def test_duplicate_student_keeps_both_rows_and_says_so(batch):
    a, b = batch["row"]("twice_a"), batch["row"]("twice_b")
    assert a["status"] == b["status"] == "duplicate"
    assert a["total"] == FULL and b["total"] == FULL - 1
    assert all("graded status was ok" in " ".join(r["notes"]) for r in (a, b))


def test_folder_without_notebook_is_reported(batch):
    [row] = [r for r in batch["rows"] if r["student"] == "nothing_here"]
    assert row["status"] == "missing"


# ---------------------------------------------------------------------------------------------
# Answers that misbehave: the other answers still count


def _others_full(row, bad):
    return all(row["points"][g] == POINTS[g] for g in POINTS if g not in bad)


def test_answer_that_raises_scores_zero_for_that_question_only(batch):
    row = batch["row"]("raises")
    assert row["status"] == "ok"
    assert row["points"]["q03_concat_project"] == 0 and _others_full(row, {"q03_concat_project"})
    assert "raised ValueError" in row["questions"]["q03_concat_project"]["message"]


@pytest.mark.parametrize("student,bad", [("loops_cell", set()), ("loops_call", {"q03_concat_project"}),
                                         ("loops_stubborn", {"q03_d_head"})])
def test_infinite_loops_time_out(batch, student, bad):
    row = batch["row"](student)
    assert row["status"] == "timeout", row["notes"]
    assert _others_full(row, bad)
    assert all(row["points"][g] == 0 for g in bad)


def test_sys_exit_is_harmless(batch):
    row = batch["row"]("sys_exit")
    assert row["status"] == "ok" and row["total"] == FULL


@pytest.mark.parametrize("student,bad", [("os_exit", {"q03_identity_output"}),
                                         ("kills_kernel", {"q03_concat_vs_average"}),
                                         ("exit_in_call", {"q03_concat_project"})])
def test_dead_worker_reruns_without_the_step_that_killed_it(batch, student, bad):
    row = batch["row"](student)
    assert row["status"] == "kernel-died"
    assert row["timing"]["attempts"] == 2
    assert _others_full(row, bad) and all(row["points"][g] == 0 for g in bad)
    assert any("worker stopped" in n for n in row["notes"])


def test_megabytes_of_output_are_capped(batch):
    row = batch["row"]("prints")
    assert row["status"] == "output-limit" and row["total"] == FULL


def test_memory_hog_is_stopped(batch):
    row = batch["row"]("memory")
    assert row["status"] == "memory", row["notes"]
    assert _others_full(row, {"q03_d_head"})  # the cell stopped before it set d_head


# ---------------------------------------------------------------------------------------------
# Attempts to fake a score


@pytest.mark.parametrize("student", ["deleted_checks", "fake_checks", "redefines_check"])
def test_check_cells_come_from_the_course_not_the_submission(batch, student):
    row = batch["row"](student)
    assert row["points"]["q03_d_head"] == 0  # d_head = 65 is wrong whatever the checks say
    assert _others_full(row, {"q03_d_head"})


def test_monkeypatched_numpy_earns_nothing(batch):
    row = batch["row"]("patches_numpy")
    assert row["total"] == 0


def test_monkeypatched_test_helpers_earn_nothing(batch):
    row = batch["row"]("patches_helpers")
    assert row["points"]["q03_concat_project"] == 0
    assert _others_full(row, {"q03_concat_project"})


def test_input_transformer_cannot_rewrite_course_cells(batch):
    row = batch["row"]("transformer")
    # The course's cell that defines `joined` still ran, so the later correct answers pass.
    assert row["total"] == FULL, row["notes"]


def test_reading_the_solutions_is_refused_and_flagged(batch):
    row = batch["row"]("reads_files")
    assert row["status"] == "flagged"
    assert row["points"]["q03_concat_project"] == 0
    assert any("refused: read" in n and "solutions" in n for n in row["notes"])
    assert any("refused: list" in n for n in row["notes"])


@pytest.mark.parametrize("student", ["calls_reference", "calls_bank", "hides_reference",
                                     "unhooks_monitor"])
def test_calling_the_reference_is_flagged_and_scores_zero(batch, student):
    row = batch["row"](student)
    assert row["status"] == "flagged"
    assert row["points"]["q03_concat_project"] == 0
    assert row["questions"]["q03_concat_project"]["status"] == "flagged"
    assert _others_full(row, {"q03_concat_project"})


def test_processes_signals_network_and_threads_are_refused_or_flagged(batch):
    row = batch["row"]("escapes")
    assert row["status"] == "flagged" and row["total"] == FULL
    notes = " | ".join(row["notes"])
    for what in ["signal process", "start a process", "network address"]:
        assert what in notes
    # Python 3.12+ has an audit event for new threads (refused: "start a thread"); 3.10 and
    # 3.11 do not, so there a new thread is only noticed afterwards ("started a thread").
    assert re.search(r"start(ed)? a thread", notes)


def test_classic_mistake_gets_its_targeted_hint(batch):
    d = batch["row"]("bare_reshape")["questions"]["q03_concat_project"]
    assert d["points"] == 0
    assert d["hint"] == next(m.hint for m in get_question("q03_concat_project").mistakes
                             if m.name == "bare reshape")


def test_evil_submission_cannot_write_outside_its_folder(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    nb = make_notebook(with_answer(
        "q03_d_head",
        f"d_head = 64\ntry:\n    open({str(victim)!r}, 'w').write('pwned')\nexcept OSError:\n    pass\n"
        f"import os\ntry:\n    os.remove({str(victim)!r})\nexcept OSError:\n    pass\n"))
    write_nb(tmp_path / "subs", "mallory", nb)
    [row] = grader.grade_paths([tmp_path / "subs"], jobs=1, timeout=TIMEOUT, cell_timeout=CELL_TIMEOUT)
    assert victim.read_text() == "precious"
    assert row["status"] == "flagged" and row["total"] == FULL


# ---------------------------------------------------------------------------------------------
# Outputs: gradebook and feedback


def test_gradebook_has_one_row_per_submission_and_the_points(batch):
    with open(batch["gradebook"], newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(batch["rows"])
    for col in ["student", "assignment", "file", "status", "total", "max", "notes", *POINTS]:
        assert col in table[0]
    good = next(r for r in table if r["file"] == str(batch["subs"]["good"]))
    assert float(good["total"]) == FULL and float(good["q03_concat_project"]) == 4


def test_gradebook_is_written_atomically(tmp_path, monkeypatch, batch):
    out = tmp_path / "gradebook.csv"
    out.write_text("previous gradebook\n")

    def crash(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError):
        grader.write_gradebook(batch["rows"], out)
    assert out.read_text() == "previous gradebook\n"
    assert [p.name for p in tmp_path.iterdir()] == ["gradebook.csv"]


def test_gradebook_cells_cannot_become_formulas():
    assert grader._cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert grader._cell("alice") == "alice"


def _hidden_numbers():
    """Every test input and reference output of this run, as text a feedback file could show."""
    q = get_question("q03_concat_project")
    numbers = set()
    for args in grader._cases(q, SEED):
        for arr in list(args) + [_call(q.reference, args)]:
            for v in np.asarray(arr, dtype=float).ravel():
                numbers |= {f"{v:.3f}", f"{v:.4f}", repr(float(v))[:8]}
    return {n for n in numbers if len(n.lstrip("-")) >= 5}  # skip short ones like 0.10


def test_feedback_never_shows_hidden_inputs_or_reference_outputs(batch):
    hidden = _hidden_numbers()
    files = sorted(batch["feedback"].glob("*.md"))
    assert len(files) == len({r["student"] for r in batch["rows"]})
    for path in files:
        text = path.read_text(encoding="utf-8")
        leaked = [n for n in hidden if n in text]
        assert not leaked, (path.name, leaked[:3])
        assert "expected:" not in text


def test_feedback_masks_numbers_an_answer_puts_in_its_error(batch):
    text = (batch["feedback"] / "leaks_inputs.md").read_text(encoding="utf-8")
    assert "raised ValueError" in text
    assert not re.search(r"\d\.\d", text.split("q03_concat_project", 1)[1].split("\n- ", 1)[0])


def test_feedback_names_passed_and_failed_questions(batch):
    text = (batch["feedback"] / "bare_reshape.md").read_text(encoding="utf-8")
    assert "- q03_d_head: passed [1/1]" in text
    assert "- q03_concat_project: not yet [0/4]" in text
    assert "q03_explain: written answer" in text


def test_command_line_writes_gradebook_and_feedback(tmp_path, capsys):
    from mha_helpers.cli import main

    write_nb(tmp_path / "subs", "dana", make_notebook())
    rc = main(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "gb.csv"),
               "--feedback", str(tmp_path / "fb"), "--jobs", "1", "--timeout", str(TIMEOUT)])
    assert rc == 0
    rows = list(csv.DictReader(open(tmp_path / "gb.csv", newline="")))
    assert [(r["student"], r["status"], float(r["total"])) for r in rows] == [("dana", "ok", FULL)]
    assert (tmp_path / "fb" / "dana.md").is_file()


# ---------------------------------------------------------------------------------------------
# The solutions: every graded question scores full marks


def test_check_solutions_passes_for_every_solution_notebook(capsys):
    assert grader.check_solutions(SOLUTIONS, timeout=60) == 0, capsys.readouterr().out


def test_check_solutions_fails_when_a_solution_is_wrong(tmp_path, capsys):
    nb = nbformat.read(SOLUTIONS / f"{A03}.ipynb", as_version=4)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "q03_d_head":
            c.source = c.source.replace("768 // 12", "768 // 6")
    nbformat.write(nb, tmp_path / f"{A03}.ipynb")
    assert grader.check_solutions(tmp_path, timeout=60) == 1


def test_students_are_named_by_their_folder_whatever_path_is_given(tmp_path):
    subs = tmp_path / "submissions"
    for rel in ["alice/hw.ipynb", "bob/nested/renamed.ipynb", "carl.ipynb"]:
        (subs / rel).parent.mkdir(parents=True, exist_ok=True)
        (subs / rel).write_text("{}")
    (subs / "dan").mkdir()
    (subs / ".ipynb_checkpoints").mkdir()
    found = {(s.student, Path(s.path).name) for s in grader.collect_submissions([subs])}
    assert found == {("alice", "hw.ipynb"), ("bob", "renamed.ipynb"), ("carl", "carl.ipynb"),
                     ("dan", "dan")}
    assert [s.student for s in grader.collect_submissions([subs / "alice"])] == ["alice"]
    assert [s.student for s in grader.collect_submissions([subs / "alice" / "hw.ipynb"])] == ["alice"]


# ---------------------------------------------------------------------------------------------
# The learner's self-check (the same question declarations, in the notebook)


def test_self_check_verdicts(capsys):
    from mha_helpers.grading import check
    from mha_helpers.grading.check import evaluate

    q = get_question("q03_concat_project")

    def stub(h, w):
        raise NotImplementedError("join along the last axis")

    def bare_reshape(h, w):
        h = np.asarray(h)
        return h.reshape(h.shape[1], -1) @ w

    def right(h, w):
        return np.concatenate(list(h), axis=-1) @ w

    assert evaluate(q, stub)["status"] == "not-attempted"
    assert evaluate(q, None)["status"] == "not-attempted"
    assert evaluate(q, right)["points"] == 4
    wrong = evaluate(q, bare_reshape)
    assert wrong["status"] == "failed" and wrong["points"] == 0
    assert wrong["hint"] == next(m.hint for m in q.mistakes if m.name == "bare reshape")
    assert evaluate(get_question("q03_concat_vs_average"), " B ")["points"] == 2
    check("q03_concat_project", bare_reshape)
    out = capsys.readouterr().out
    assert "expected: array of shape (3, 8)" in out and "hint: The shape is right" in out


def test_self_check_never_raises(capsys):
    from mha_helpers.grading import check

    class Weird:
        def __array__(self, *a, **k):
            raise RuntimeError("no")

    check("no_such_question", 1)
    check("q03_d_head", Weird())
    check("q03_concat_project", 42)
    out = capsys.readouterr().out
    assert "no such question" in out and out.count("q03_") == 2


def test_self_check_explains_a_missing_tuple_instead_of_failing_to_compare():
    """A function that should return (output, weights) but returns only the output gets a
    plain explanation, not 'could not check this answer'."""
    from mha_helpers.grading.check import evaluate

    def output_only(q, k, v, mask):
        scores = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        return weights @ v

    r = evaluate(get_question("q01_masked_attention"), output_only)
    assert r["status"] == "failed"
    assert "should be a tuple of 2 items, got an array of shape" in r["message"]


@pytest.mark.parametrize("mode", ["autograde", "validate"])
def test_under_nbgrader_a_check_that_does_not_pass_raises(monkeypatch, capsys, mode):
    """nbgrader gives a check cell full points when it does not raise; so under nbgrader (which
    sets NBGRADER_EXECUTION) a wrong or unanswered answer must raise, a right one must not."""
    from mha_helpers.grading import check

    monkeypatch.setenv("NBGRADER_EXECUTION", mode)
    check("q03_d_head", 64)
    check("q03_explain", None)  # a written answer is graded by hand, never by the check cell
    for wrong in (768 * 12, None):
        with pytest.raises(AssertionError, match="q03_d_head"):
            check("q03_d_head", wrong)
    with pytest.raises(AssertionError):
        check("no_such_question", 1)
    out = capsys.readouterr().out
    assert "q03_d_head: passed" in out and "not attempted yet" in out


def test_in_jupyterlab_a_check_never_raises(monkeypatch):
    from mha_helpers.grading import check

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    check("q03_d_head", 768 * 12)
    check("q03_d_head", None)


def test_an_answer_that_plots_while_debugging_is_not_flagged(tmp_path):
    """matplotlib re-creates its (already existing) config folder when a cell plots; that must
    not count as writing outside the submission's folder."""
    answer = ("import matplotlib.pyplot as plt\n_ = plt.plot([1, 2, 3])\nplt.title('debug')\n"
              "plt.show()\n" + CORRECT["q03_concat_project"])
    write_nb(tmp_path, "dana", make_notebook(with_answer("q03_concat_project", answer)))
    [row] = grader.grade_paths([tmp_path], jobs=1, timeout=TIMEOUT, cell_timeout=CELL_TIMEOUT)
    assert (row["status"], row["total"], row["notes"]) == ("ok", FULL, [])
