"""The grader against bad and hostile submissions (course issues 3 and 11).

One module-scoped batch grades a folder with one submission per attack, built from the released
exercise notebook, through the real sandbox. Each test then checks its row: the status, the
points it earned (never more than a correct answer earns, never less for the answers that are
right), what its notes and feedback say, and that nothing outside the sandbox changed.

Several answers below *observe* the sandbox from inside: they set an answer to the right value
only if the thing they looked for (the solutions, the self-check data, another student's
notebook, the grader's process...) was out of reach, so a point earned is a point of evidence.
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
from grading_helpers import (
    A03,
    CORRECT,
    FULL,
    POINTS,
    ROOT,
    SOLUTIONS,
    make_notebook,
    others_full,
    require_sandbox,
    with_answer,
    write_nb,
)

from mha_helpers.grading import get_question
from mha_helpers.grading.classroom import assignments, commands, feedback, grade, gradebook
from mha_helpers.grading.classroom.collect import DEFAULT_MAX_BYTES
from mha_helpers.grading.course import PACKAGE_DIR, find_course
from mha_helpers.grading.selfcheck.check import evaluate

SEED = 20260401
TIMEOUT = 12.0  # seconds per notebook in these tests (generous: CI runs other tests alongside)
CELL_TIMEOUT = 4.0
GRADER_PID = os.getpid()


def _delete_checks(nb):
    nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]


def _fake_checks(nb):
    for c in nb.cells:
        md = c.metadata.get("nbgrader", {})
        if md.get("grade") and not md.get("solution"):
            c.source = 'print("passed")'


def _unreachable(*paths) -> str:
    """Source of an expression that is True when none of ``paths`` can be seen or read."""
    checks = " and ".join(f"not _seen({str(p)!r})" for p in paths)
    return (
        "import os\n"
        "def _seen(p):\n"
        "    try:\n"
        "        if os.path.isdir(p):\n"
        "            return bool(os.listdir(p))\n"
        "        open(p, 'rb').read(1)\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
        f"d_head = 64 if ({checks}) else 65\n"
    )


def build_batch(folder: Path, elsewhere: Path) -> dict:
    """One submission per attack; returns {student: path}."""
    subs = {}
    victim = folder / "good" / "exercise_03.ipynb"  # a classmate's notebook, by its real path
    grader_file = PACKAGE_DIR / "grading" / "classroom" / "grade.py"
    forged = (
        'result {"cells": [], "answers": {"q03_concat_project": {"status": "ok", "results": '
        '[{"value": 1.0, "raised": null, "mutated": []}], "helpers": []}}}'
    )
    nbs = {
        "good": make_notebook(),
        "blank": make_notebook({}),
        "raises": make_notebook(
            with_answer(
                "q03_concat_project", "def concat_project(h, w):\n    raise ValueError('nope')\n"
            )
        ),
        "loops_cell": make_notebook(
            with_answer("q03_d_head", "d_head = 64\nwhile True:\n    pass\n")
        ),
        "loops_call": make_notebook(
            with_answer(
                "q03_concat_project", "def concat_project(h, w):\n    while True:\n        pass\n"
            )
        ),
        # Ignores the per-cell alarm: only the wall-clock limit from outside stops it.
        "loops_stubborn": make_notebook(
            with_answer(
                "q03_d_head",
                "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nd_head = 64\n"
                "while True:\n    pass\n",
            )
        ),
        "sys_exit": make_notebook(
            with_answer("q03_d_head", "import sys\nd_head = 64\nsys.exit(0)\n")
        ),
        "os_exit": make_notebook(
            with_answer(
                "q03_identity_output", "import os\nidentity_output = [1, 2, 3, 4]\nos._exit(0)\n"
            )
        ),
        "kills_itself": make_notebook(
            with_answer(
                "q03_concat_vs_average",
                "import os, signal\nconcat_vs_average = 'b'\n"
                "os.kill(os.getpid(), signal.SIGKILL)\n",
            )
        ),
        "exit_in_call": make_notebook(
            with_answer(
                "q03_concat_project", "import os\ndef concat_project(h, w):\n    os._exit(3)\n"
            )
        ),
        "prints": make_notebook(
            with_answer("q03_d_head", "for _ in range(3000):\n    print('x' * 1000)\nd_head = 64\n")
        ),
        "memory": make_notebook(
            with_answer("q03_d_head", "hog = bytearray(8 * 2**30)\nd_head = 64\n")
        ),
        "deleted_checks": make_notebook(
            with_answer("q03_d_head", "d_head = 65"), edit=_delete_checks
        ),
        "fake_checks": make_notebook(with_answer("q03_d_head", "d_head = 65"), edit=_fake_checks),
        "redefines_check": make_notebook(
            with_answer(
                "q03_d_head",
                "import mha_helpers.grading as g\ndef check(*args, **kwargs):\n    print('passed')\n"
                "g.check = check\nd_head = 65\n",
            )
        ),
        "patches_numpy": make_notebook(
            {
                "q03_d_head": "np.allclose = lambda *a, **k: True\nnp.array_equal = lambda *a, **k: True\n"
                "np.isclose = lambda *a, **k: True\nd_head = 65\n",
                "q03_identity_output": "identity_output = [0, 0, 0, 0]",
                "q03_concat_vs_average": 'concat_vs_average = "a"',
                "q03_concat_project": "def concat_project(h, w):\n    return np.zeros((len(h[0]), w.shape[1]))\n",
            }
        ),
        "patches_helpers": make_notebook(
            with_answer(
                "q03_concat_project",
                "import mha_helpers.grading.rules.compare as cmp, mha_helpers.grading.rules.judge as j\n"
                "cmp.difference = lambda *a, **k: None\nj.difference = lambda *a, **k: None\n"
                "def concat_project(h, w):\n    return np.zeros(3)\n",
            )
        ),
        "transformer": make_notebook(
            with_answer(
                "q03_d_head",
                "d_head = 64\nip = get_ipython()\n"
                "ip.input_transformers_cleanup.append(lambda lines: ['pass\\n'])\n"
                "ip.input_transformers_post.append(lambda lines: ['pass\\n'])\n",
            )
        ),
        # Observations from inside: each earns q03_d_head only if nothing was reachable.
        "sees_solutions": make_notebook(
            with_answer(
                "q03_d_head",
                _unreachable(
                    SOLUTIONS, SOLUTIONS / f"{A03}.ipynb", SOLUTIONS / "banks", ROOT / "README.md"
                ),
            )
        ),
        "sees_selfcheck_data": make_notebook(
            with_answer(
                "q03_d_head",
                _unreachable(
                    PACKAGE_DIR / "grading" / "selfcheck" / "data",
                    "/course/mha_helpers/grading/selfcheck/data",
                    PACKAGE_DIR / "grading" / "selfcheck" / "data" / f"{A03}.json",
                ),
            )
        ),
        "sees_classmates": make_notebook(
            with_answer(
                "q03_d_head",
                _unreachable(
                    folder, victim, elsewhere, elsewhere / "gradebook.csv", Path.home() / ".bashrc"
                ),
            )
        ),
        "imports_banks": make_notebook(
            with_answer(
                "q03_concat_project",
                "from mha_course_banks import bank_03 as b\n"
                "concat_project = getattr(b, '_concat_project' + '_reference')\n",
            )
        ),
        "writes_elsewhere": make_notebook(
            with_answer(
                "q03_d_head",
                f"d_head = 64\nfor p in [{str(victim)!r}, {str(grader_file)!r}, {str(elsewhere / 'planted.txt')!r}]:\n"
                "    try:\n        open(p, 'w').write('pwned')\n    except OSError:\n        pass\n"
                f"import shutil\ntry:\n    shutil.rmtree({str(folder / 'blank')!r})\nexcept OSError:\n    pass\n",
            )
        ),
        "signals_grader": make_notebook(
            with_answer(
                "q03_d_head",
                "import os, signal\nd_head = 64\n"
                f"for attempt in [lambda: os.kill({GRADER_PID}, signal.SIGSTOP), lambda: os.kill({GRADER_PID}, signal.SIGKILL),\n"
                "                lambda: os.kill(os.getppid(), signal.SIGKILL), lambda: os.kill(-1, signal.SIGKILL),\n"
                f"                lambda: os.pidfd_open({GRADER_PID})]:\n"
                "    try:\n        attempt()\n    except Exception:\n        pass\n",
            )
        ),
        "escapes": make_notebook(
            with_answer(
                "q03_d_head",
                "d_head = 64\nimport os, subprocess, socket, threading\n"
                "for attempt in [lambda: subprocess.Popen(['sleep', '600'], start_new_session=True),\n"
                "                lambda: os.fork(), lambda: os.setsid(),\n"
                "                lambda: socket.create_connection(('127.0.0.1', 22), timeout=0.2),\n"
                "                lambda: threading.Thread(target=__import__('time').sleep, args=(600,)).start()]:\n"
                "    try:\n        attempt()\n    except Exception:\n        pass\n",
            )
        ),
        "fork_bomb": make_notebook(
            with_answer(
                "q03_identity_output",
                "import os\nidentity_output = joined @ np.eye(4)\n"
                "try:\n    while True:\n        os.fork()\nexcept OSError:\n    pass\n",
            )
        ),
        "fills_disk": make_notebook(
            with_answer(
                "q03_d_head",
                "import os\nfor i in range(200):\n    try:\n"
                "        open(f'big{i}', 'wb').write(b'x' * 2**20)\n    except OSError:\n        break\n"
                "d_head = 64\n",
            )
        ),
        "forges_report": make_notebook(
            with_answer(
                "q03_concat_project",
                f"import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, {forged!r}.encode() + b'\\n')\n"
                "    except OSError:\n        pass\n"
                "def concat_project(h, w):\n    return None\n",
            )
        ),
        "forges_nonsense": make_notebook(
            with_answer(
                "q03_concat_project",
                "import os\nfor fd in range(3, 64):\n    try:\n"
                '        os.write(fd, b\'result {"answers": {"q03_concat_project": {"status": "ok", "results": 7}}}\\n\')\n'
                "    except OSError:\n        pass\nos._exit(0)\n",
            )
        ),
        "calls_helper": make_notebook(
            with_answer(
                "q03_concat_project",
                "from mha_helpers import merge_heads\n"
                "def concat_project(h, w):\n    return merge_heads(np.asarray(h)) @ w\n",
            )
        ),
        "hides_helper": make_notebook(
            with_answer(
                "q03_concat_project",
                "import importlib\nm = importlib.import_module('mha_helpers.' + 'heads')\n"
                "f = getattr(m, 'merge' + '_heads')\n"
                "def concat_project(h, w):\n    return f(np.asarray(h)) @ w\n",
            )
        ),
        # Correct answers that old in-process guards punished.
        "catches_recursion": make_notebook(
            with_answer(
                "q03_concat_project",
                "def concat_project(head_outputs, w_o):\n"
                "    def deep(k):\n        return deep(k + 1)\n"
                "    try:\n        deep(0)\n    except RecursionError:\n        pass\n"
                "    return np.concatenate(list(head_outputs), axis=-1) @ w_o\n",
            )
        ),
        "deep_expression": make_notebook(
            with_answer("q03_d_head", "d_head = " + "(" * 3000 + "64" + ")" * 3000)
        ),
        "plots": make_notebook(
            with_answer(
                "q03_concat_project",
                "import matplotlib.pyplot as plt\n_ = plt.plot([1, 2, 3])\nplt.show()\n"
                + CORRECT["q03_concat_project"],
            )
        ),
        # Raises with its arguments only on the grader's hidden cases (after the 4 public ones).
        "leaks_hidden": make_notebook(
            with_answer(
                "q03_concat_project",
                "calls = [0]\ndef concat_project(h, w):\n    calls[0] += 1\n    if calls[0] > 4:\n"
                "        raise ValueError(repr(np.asarray(h)) + repr(np.asarray(w)))\n"
                "    return np.concatenate(list(h), axis=-1) @ w\n",
            )
        ),
        # Reads its whole job (hidden cases included) from its own memory and raises it.
        "leaks_job": make_notebook(
            with_answer(
                "q03_d_head",
                "import gc\njobs = [o for o in gc.get_objects() if isinstance(o, dict) and 'cells' in o and 'questions' in o]\n"
                "cases = [q['cases'] for q in jobs[0]['questions'] if q.get('cases')][0]\n"
                "raise ValueError(' '.join(a['b64'] for c in cases[3:] for a in c['__tuple__']))\n",
            )
        ),
        "bare_reshape": make_notebook(
            with_answer(
                "q03_concat_project",
                "def concat_project(h, w):\n    h = np.asarray(h)\n"
                "    return h.reshape(h.shape[1], -1) @ w\n",
            )
        ),
        "in_place": make_notebook(
            with_answer(
                "q03_concat_project",
                "def concat_project(h, w):\n    w *= 1.0\n    w[0] = 0.0\n"
                "    return np.concatenate(list(h), axis=-1) @ w\n",
            )
        ),
        "renamed": make_notebook(drop_metadata=True),
        "empty_written": make_notebook(written=None),
    }
    for student, nb in nbs.items():
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
    raw("huge", b" " * (DEFAULT_MAX_BYTES + 10))
    raw("deep_json", b"[" * 100_000 + b"]" * 100_000)
    raw("old_format", nbformat.writes(make_notebook(), version=3).encode())
    big = make_notebook(
        with_answer("q03_concat_project", "x = 1\n" * 300_000 + CORRECT["q03_concat_project"])
    )
    subs["huge_cell"] = write_nb(folder, "huge_cell", big)
    lesson = nbformat.read(ROOT / "notebooks" / "01_recap_self_attention.ipynb", as_version=4)
    subs["lesson_instead"] = write_nb(folder, "lesson_instead", lesson)
    subs["twice_a"] = write_nb(folder, "twice", make_notebook(), "first.ipynb")
    subs["twice_b"] = write_nb(
        folder, "twice", make_notebook(with_answer("q03_d_head", "d_head = 12")), "second.ipynb"
    )
    (folder / "linked").mkdir()
    os.symlink(subs["good"], folder / "linked" / "exercise_03.ipynb")  # someone else's work
    subs["linked"] = folder / "linked" / "exercise_03.ipynb"
    os.symlink(folder / "good", folder / "linked_folder")
    (folder / "nothing_here").mkdir()
    (folder / "nothing_here" / "readme.txt").write_text("forgot to attach")
    return subs


def _hashes(*folders) -> dict:
    out = {}
    for folder in folders:
        for p in sorted(Path(folder).rglob("*")) if Path(folder).is_dir() else [Path(folder)]:
            if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    require_sandbox()
    folder = tmp_path_factory.mktemp("submissions")
    elsewhere = tmp_path_factory.mktemp("instructor")
    (elsewhere / "gradebook.csv").write_text("student,assignment\n")
    subs = build_batch(folder, elsewhere)
    watched = (folder, elsewhere, PACKAGE_DIR / "grading" / "classroom" / "grade.py")
    before = _hashes(*watched)
    rows = grade.grade_paths(
        [folder],
        jobs=2,
        timeout=TIMEOUT,
        cell_timeout=CELL_TIMEOUT,
        seed=SEED,
        memory_mb=1024,
        course=find_course(start=ROOT),
    )
    by_file = {r["file"]: r for r in rows}
    out = tmp_path_factory.mktemp("out")
    records = [gradebook.row_record(r) for r in rows]
    qids = list(POINTS) + ["q03_explain"]
    book = gradebook.write_gradebook(records, out / "gradebook.csv", qids)
    feedback.write_feedback(rows, out / "feedback")
    return {
        "folder": folder,
        "elsewhere": elsewhere,
        "subs": subs,
        "rows": rows,
        "before": before,
        "after": _hashes(*watched),
        "gradebook": book,
        "row": lambda student: by_file[str(subs[student])],
        "feedback": out / "feedback" / A03,
    }


# ---------------------------------------------------------------------------------------------
# The batch as a whole


def test_every_submission_has_exactly_one_row(batch):
    files = sorted(r["file"] for r in batch["rows"])
    expected = sorted(
        [str(p) for p in batch["subs"].values()]
        + [str(batch["folder"] / "nothing_here"), str(batch["folder"] / "linked_folder")]
    )
    assert files == expected


def test_nothing_outside_the_sandbox_changed(batch):
    """Submissions, the instructor's folder, the grader's code and the solutions are unchanged,
    and no file was planted anywhere."""
    assert batch["after"] == batch["before"]
    assert not (batch["elsewhere"] / "planted.txt").exists()


def test_correct_submission_scores_full_marks(batch):
    row = batch["row"]("good")
    assert row["status"] == "ok", row["notes"]
    assert row["total"] == FULL and row["max"] == FULL + 2
    assert row["pending"] == 2 and row["points"]["q03_explain"] == "pending"


def test_fresh_exercise_scores_zero_without_errors(batch):
    row = batch["row"]("blank")
    assert row["status"] == "ok", row["notes"]
    assert row["total"] == 0
    assert {d["status"] for g, d in row["questions"].items() if g in POINTS} == {"not-attempted"}


def test_an_empty_written_answer_scores_zero_instead_of_pending(batch):
    row = batch["row"]("empty_written")
    assert row["points"]["q03_explain"] == 0 and row["pending"] == 0
    assert row["questions"]["q03_explain"]["status"] == "unanswered"


# ---------------------------------------------------------------------------------------------
# Files that are not what they should be


@pytest.mark.parametrize(
    "student,status",
    [
        ("not_json", "not-json"),
        ("binary", "not-json"),
        ("deep_json", "not-json"),
        ("not_notebook", "not-a-notebook"),
        ("json_list", "not-a-notebook"),
        ("empty", "empty"),
        ("huge", "too-large"),
        ("huge_cell", "too-large"),
        ("lesson_instead", "unknown-assignment"),
        ("linked", "refused"),
    ],
)
def test_unreadable_files_get_a_status_and_no_points(batch, student, status):
    row = batch["row"](student)
    assert row["status"] == status, row["notes"]
    assert row["total"] == 0


def test_a_linked_student_folder_gets_a_refused_row(batch):
    [row] = [r for r in batch["rows"] if r["file"] == str(batch["folder"] / "linked_folder")]
    assert row["status"] == "refused" and "symbolic link" in " ".join(row["notes"])


def test_old_format_is_converted_and_graded(batch):
    row = batch["row"]("old_format")
    assert row["status"] == "ok", row["notes"]
    assert row["total"] == FULL
    assert any("converted from notebook format 3" in n for n in row["notes"])


def test_renamed_file_without_metadata_is_identified_by_its_answer_cells(batch):
    row = batch["row"]("renamed")
    assert row["assignment"] == A03 and row["total"] == FULL


def test_a_student_who_handed_in_twice_has_one_counted_copy_and_says_so(batch):
    a, b = batch["row"]("twice_a"), batch["row"]("twice_b")
    assert (a["status"], b["status"]) == ("superseded", "ok")  # the later copy counts
    assert a["total"] == FULL and b["total"] == FULL - 1
    assert "2 copies" in " ".join(b["notes"]) and "first.ipynb (ok" in " ".join(b["notes"])
    assert "status was ok" in " ".join(a["notes"])


def test_folder_without_notebook_is_reported(batch):
    [row] = [r for r in batch["rows"] if r["student"] == "nothing_here"]
    # the folder holds only a readme: the row names it (course issue 30), never "no submission"
    assert row["status"] == "not-a-notebook"
    assert "readme.txt, which is not a notebook" in "; ".join(row["notes"])


# ---------------------------------------------------------------------------------------------
# Answers that misbehave: the other answers still count


def test_answer_that_raises_scores_zero_for_that_question_only(batch):
    row = batch["row"]("raises")
    assert row["status"] == "ok"
    assert row["points"]["q03_concat_project"] == 0 and others_full(row, {"q03_concat_project"})
    assert "raised ValueError" in row["questions"]["q03_concat_project"]["message"]


@pytest.mark.parametrize(
    "student,bad",
    [
        ("loops_cell", set()),
        ("loops_call", {"q03_concat_project"}),
        ("loops_stubborn", {"q03_d_head"}),
    ],
)
def test_infinite_loops_time_out(batch, student, bad):
    row = batch["row"](student)
    assert row["status"] == "timeout", row["notes"]
    assert others_full(row, bad)
    assert all(row["points"][g] == 0 for g in bad)


def test_sys_exit_is_harmless(batch):
    row = batch["row"]("sys_exit")
    assert row["status"] == "ok" and row["total"] == FULL


@pytest.mark.parametrize(
    "student,bad",
    [
        ("os_exit", {"q03_identity_output"}),
        ("kills_itself", {"q03_concat_vs_average"}),
        ("exit_in_call", {"q03_concat_project"}),
    ],
)
def test_a_dead_program_reruns_without_the_step_that_killed_it(batch, student, bad):
    row = batch["row"](student)
    assert row["status"] == "kernel-died"
    assert row["timing"]["attempts"] == 2
    assert others_full(row, bad) and all(row["points"][g] == 0 for g in bad)
    assert any("the program stopped" in n for n in row["notes"])


def test_megabytes_of_output_are_dropped_and_noted(batch):
    row = batch["row"]("prints")
    assert row["status"] == "ok" and row["total"] == FULL
    assert any("printed" in n for n in row["notes"])


def test_memory_hog_is_stopped(batch):
    row = batch["row"]("memory")
    assert row["status"] == "memory", row["notes"]
    assert others_full(row, {"q03_d_head"})  # the cell stopped before it set d_head


def test_a_full_disk_is_the_submissions_problem_only(batch):
    row = batch["row"]("fills_disk")
    assert row["status"] == "ok" and row["total"] == FULL


# ---------------------------------------------------------------------------------------------
# Attempts to fake a score


@pytest.mark.parametrize("student", ["deleted_checks", "fake_checks", "redefines_check"])
def test_check_cells_come_from_the_course_not_the_submission(batch, student):
    row = batch["row"](student)
    assert row["points"]["q03_d_head"] == 0  # d_head = 65 is wrong whatever the checks say
    assert others_full(row, {"q03_d_head"})


def test_monkeypatched_numpy_earns_nothing(batch):
    assert batch["row"]("patches_numpy")["total"] == 0


def test_monkeypatched_grading_code_earns_nothing(batch):
    row = batch["row"]("patches_helpers")
    assert row["points"]["q03_concat_project"] == 0 and others_full(row, {"q03_concat_project"})


def test_input_transformer_cannot_rewrite_course_cells(batch):
    assert batch["row"]("transformer")["total"] == FULL


def test_a_forged_report_claims_nothing_the_answer_does_not_compute(batch):
    row = batch["row"]("forges_report")
    assert row["points"]["q03_concat_project"] == 0
    assert others_full(row, {"q03_concat_project"})


def test_a_malformed_report_is_flagged_and_scores_nothing(batch):
    row = batch["row"]("forges_nonsense")
    assert row["status"] == "flagged", row["notes"]
    assert row["points"]["q03_concat_project"] == 0


# ---------------------------------------------------------------------------------------------
# What the sandbox keeps out of reach (observed from inside)


@pytest.mark.parametrize("student", ["sees_solutions", "sees_selfcheck_data", "sees_classmates"])
def test_the_instructors_files_and_other_submissions_are_out_of_reach(batch, student):
    row = batch["row"](student)
    assert row["points"]["q03_d_head"] == 1, row["notes"]


def test_the_question_banks_cannot_be_imported(batch):
    row = batch["row"]("imports_banks")
    assert row["points"]["q03_concat_project"] == 0
    assert any("ModuleNotFoundError" in n for n in row["notes"])


def test_writes_outside_the_sandbox_fail_quietly(batch):
    row = batch["row"]("writes_elsewhere")
    assert row["status"] == "ok" and row["total"] == FULL
    assert batch["subs"]["blank"].exists()


def test_the_grader_cannot_be_signalled(batch):
    """A submission that signals the grader's PID (SIGSTOP, SIGKILL), its parent, or every
    process it can see: the batch finished (this test runs), and the row is graded normally."""
    row = batch["row"]("signals_grader")
    assert row["status"] == "ok" and row["total"] == FULL


def test_processes_threads_and_network_are_refused(batch):
    row = batch["row"]("escapes")
    assert row["status"] == "ok" and row["total"] == FULL
    for pid in os.listdir("/proc"):  # nothing it tried to start outlived its sandbox
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            assert cmd != b"sleep\x00600\x00"


def test_a_fork_bomb_goes_nowhere(batch):
    row = batch["row"]("fork_bomb")
    assert row["status"] == "ok" and row["total"] == FULL


# ---------------------------------------------------------------------------------------------
# Honest answers are never punished by the grader's own machinery


@pytest.mark.parametrize("student", ["catches_recursion", "plots"])
def test_correct_answers_that_recurse_or_plot_get_full_marks(batch, student):
    row = batch["row"](student)
    assert (row["status"], row["total"]) == ("ok", FULL), row["notes"]


def test_a_very_deep_expression_costs_at_most_its_own_question(batch):
    row = batch["row"]("deep_expression")
    assert row["status"] == "ok", row["notes"]
    assert others_full(row, {"q03_d_head"})


# ---------------------------------------------------------------------------------------------
# Verdicts: the same rule book as the self-check


@pytest.mark.parametrize("student", ["calls_helper", "hides_helper"])
def test_calling_the_course_helper_scores_zero_and_says_why(batch, student):
    row = batch["row"](student)
    d = row["questions"]["q03_concat_project"]
    assert d["points"] == 0 and "merge_heads" in d["message"]
    assert others_full(row, {"q03_concat_project"})


def test_the_grader_and_the_self_check_agree(batch):
    """Same answers, same verdict: run each answer of the batch through the self-check's rules
    in this process and compare with the grader's verdict."""

    q = get_question("q03_concat_project")
    for student in ("bare_reshape", "in_place", "calls_helper", "good"):
        ns = {"np": np}
        source = batch["row"]  # the grader's row
        nb = nbformat.read(batch["subs"][student], as_version=4)
        cell = next(
            c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == q.grade_id
        )
        exec(cell.source, ns)
        mine = evaluate(q, ns["concat_project"])
        theirs = source(student)["questions"][q.grade_id]
        assert (mine["status"], mine["points"], mine["hint"]) == (
            theirs["status"],
            theirs["points"],
            theirs["hint"],
        ), student


def test_classic_mistake_gets_its_targeted_hint(batch):
    d = batch["row"]("bare_reshape")["questions"]["q03_concat_project"]
    assert d["points"] == 0
    assert d["hint"] == next(
        m.hint for m in get_question("q03_concat_project").mistakes if m.name == "bare reshape"
    )


def test_an_in_place_answer_is_told_so(batch):
    d = batch["row"]("in_place")["questions"]["q03_concat_project"]
    assert d["points"] == 0 and "in place" in d["message"]


# ---------------------------------------------------------------------------------------------
# Outputs: gradebook and feedback


def test_gradebook_has_the_contract_columns_and_the_points(batch):
    with open(batch["gradebook"], newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == [
        "student_id",
        "student",
        "assignment",
        *POINTS,
        "q03_explain",
        "total",
        "max",
        "pending",
        "late",
        "late_factor",
        "score",
        "status",
        "file",
        "notes",
    ]
    assert len(table) == len(batch["rows"])
    good = next(r for r in table if r["student"] == "good")
    assert float(good["total"]) == FULL and float(good["max"]) == FULL + 2
    assert float(good["pending"]) == 2 and good["q03_explain"] == "pending"


def test_gradebook_is_written_atomically(tmp_path, monkeypatch, batch):
    out = tmp_path / "gradebook.csv"
    out.write_text("previous gradebook\n")

    def crash(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError):
        gradebook.write_gradebook(
            [gradebook.row_record(r) for r in batch["rows"]], out, list(POINTS)
        )
    assert out.read_text() == "previous gradebook\n"
    assert [p.name for p in tmp_path.iterdir()] == ["gradebook.csv"]


def _hidden_numbers():
    """Every hidden test input and reference output of this run, as feedback could show them."""
    q = get_question("q03_concat_project")
    n_public, cases, expected, _ = assignments.expected_cases(q, SEED)
    numbers = set()
    for args, out in list(zip(cases, expected))[n_public:]:
        for arr in list(args) + [out]:
            for v in np.asarray(arr, dtype=float).ravel():
                numbers |= {f"{v:.3f}", f"{v:.4f}", repr(float(v))[:8]}
    return {n for n in numbers if len(n.lstrip("-")) >= 5}


def _hidden_encodings():
    """The hidden inputs as they travel in the job (base64 of their bytes), 24 characters each."""
    from mha_helpers.grading.rules import codec

    q = get_question("q03_concat_project")
    n_public, cases, _, _ = assignments.expected_cases(q, SEED)
    found = set()
    for args in cases[n_public:]:
        for arr in args:
            enc = codec.encode(np.asarray(arr))
            if isinstance(enc, dict) and len(enc.get("b64", "")) >= 40:
                found.add(enc["b64"][8:32])
    return found


def test_feedback_never_shows_hidden_inputs_or_outputs(batch):
    hidden = _hidden_numbers() | _hidden_encodings()
    files = sorted(batch["feedback"].glob("*.md")) + sorted(batch["feedback"].glob("*.html"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        leaked = [n for n in hidden if n in text]
        assert not leaked, (path.name, leaked[:3])
    text = (batch["feedback"] / "leaks_hidden.md").read_text(encoding="utf-8")
    assert "hidden cases raised ValueError" in text


def test_feedback_names_passed_failed_and_written_questions(batch):
    text = (batch["feedback"] / "bare_reshape.md").read_text(encoding="utf-8")
    assert "- q03_d_head: passed [1/1]" in text
    assert "- q03_concat_project: not yet [0/4]" in text
    assert "q03_explain: written answer, pending: to be graded by your instructor" in text
    html = (batch["feedback"] / "bare_reshape.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html


# ---------------------------------------------------------------------------------------------
# The solutions: every graded question scores full marks


def test_check_solutions_passes_for_every_solution_notebook(capsys):
    require_sandbox()
    assert commands.check_solutions(find_course(start=ROOT), timeout=60) == 0, (
        capsys.readouterr().out
    )


def test_check_solutions_fails_when_a_solution_is_wrong(tmp_path, capsys):
    require_sandbox()
    import shutil

    course = tmp_path / "course"
    shutil.copytree(SOLUTIONS, course / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    nb = nbformat.read(course / "solutions" / f"{A03}.ipynb", as_version=4)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "q03_d_head":
            c.source = c.source.replace("768 // 12", "768 // 6")
    nbformat.write(nb, course / "solutions" / f"{A03}.ipynb")
    assert commands.check_solutions(find_course(course), timeout=60) == 1
    assert "FAIL 03_concatenate_and_project" in capsys.readouterr().out


def test_gradebook_cells_cannot_become_formulas():
    for evil in ["=HYPERLINK(1)", "+1", "-1+1", "@SUM(A1)", "\t=1", " =1", "\uff1d1"]:
        assert gradebook.neutralise(evil).lstrip(" ").startswith("'"), evil
    text = gradebook.neutralise("fine; =cmd|' /C calc'!A0, +1\t@x|-2")
    for part in re.split(r"[;,|\t]", text):
        assert not part.lstrip(" ").startswith(("=", "+", "-", "@")), part
    assert gradebook.neutralise("alice") == "alice"
