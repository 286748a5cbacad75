"""Every student-derived string about any case comes from a program that had no hidden case in
its memory (course issue 31, item 2).

The grader sends a run its hidden cases only after the run's report (the first ``result``
line) has arrived. Each attack below gets the hidden inputs for real, in the way that suits
its channel: it steals them from its own standard input after forging an early report, or
uses them once they arrive, through an exception's name, an error text, a function's name,
a text returned, an input changed in place or an exit code. The test first checks, in the
raw output of the sandboxes, that each attack did hold the hidden inputs (so it can fail),
then that none of them reaches the feedback, the gradebook's notes or the console.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from grading_helpers import ROOT, make_notebook, require_sandbox, with_answer, write_nb

from mha_helpers.cli import main
from mha_helpers.grading import get_question
from mha_helpers.grading.classroom.assignments import expected_cases
from mha_helpers.grading.classroom.banks import load_banks
from mha_helpers.grading.course import find_course
from mha_helpers.grading.sandbox import process

SEED = 11
GID = "q03_concat_project"
CORRECT = "    return np.concatenate(list(h), axis=-1) @ w\n"
INTS = (
    "def _ints(arrays):\n"
    "    vals = []\n"
    "    for a in arrays:\n"
    "        vals += [abs(int(v * 1e6)) for v in np.asarray(a, dtype=float).ravel()[:6]]\n"
    "    return '_'.join(map(str, vals))\n"
)
STEAL = (
    "import os, json\n"
    "from mha_helpers.grading.rules import codec\n" + INTS + "for fd in range(3, 64):\n"
    "    try:\n"
    '        os.write(fd, b\'result {"cells": [], "answers": {}}\\n\')\n'
    "    except OSError:\n"
    "        pass\n"
    "data = b''\n"
    "while not data.endswith(b'\\n'):\n"
    "    chunk = os.read(0, 1 << 20)\n"
    "    if not chunk:\n"
    "        break\n"
    "    data += chunk\n"
    "stolen = _ints([a for cases in json.loads(data).values() for c in cases for a in codec.decode(c)])\n"
)


def _n_public() -> int:
    load_banks(find_course(start=ROOT))
    return expected_cases(get_question(GID), SEED)[0]


def _on_hidden(action: str) -> str:
    """An answer right on the public cases that does ``action`` once the hidden ones come."""
    return (
        INTS
        + "calls = [0]\ndef concat_project(h, w):\n    calls[0] += 1\n"
        + f"    if calls[0] > {_n_public()}:\n"
        + "".join(f"        {line}\n" for line in action.splitlines())
        + CORRECT
    )


def attacks() -> dict:
    return {
        # an early forged report, then the hidden cases read from stdin and quoted everywhere
        "steals_stdin": with_answer(
            "q03_d_head", STEAL + "d_head = stolen[:40]\nraise ValueError(stolen[:200])\n"
        ),
        "steals_stdin_function": with_answer(
            GID, STEAL + "def concat_project(h, w):\n    raise KeyError(stolen[:200])\n"
        ),
        # once the hidden cases arrive: every channel a failing case has
        "names_exception": with_answer(
            GID, _on_hidden("raise type('E' + _ints([*h, w])[:70], (Exception,), {})()")
        ),
        "error_text": with_answer(GID, _on_hidden("raise ValueError(_ints([*h, w]))")),
        "function_name": with_answer(
            GID,
            _on_hidden(
                "exec(f'def f_{_ints([*h, w])[:60]}():\\n    raise ValueError(1)', globals())\n"
                "globals()[[k for k in globals() if k.startswith('f_')][0]]()"
            ),
        ),
        "returns_text": with_answer(GID, _on_hidden("return 'x' + _ints([*h, w])")),
        "changes_input": with_answer(
            GID, _on_hidden("w[...] = 0.5\nreturn np.concatenate(list(h), axis=-1) @ w")
        ),
        "exit_code": with_answer(GID, _on_hidden("import os\nos._exit(int(_ints([w])[:6]) % 256)")),
        "chosen_signal": with_answer(
            GID,
            _on_hidden(
                "import os, signal\n"
                "sigs = [signal.SIGHUP, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2]\n"
                "os.kill(os.getpid(), sigs[int(_ints([w])[:6]) % 4])"
            ),
        ),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    require_sandbox()
    folder = tmp_path_factory.mktemp("public_only")
    for student, answers in attacks().items():
        write_nb(folder, student, make_notebook(answers))
    out = tmp_path_factory.mktemp("out")
    raw = []
    real = process.run_process

    def recording(*args, **kwargs):
        result = real(*args, **kwargs)
        raw.append(result[1])
        return result

    mp = pytest.MonkeyPatch()
    mp.setattr(process, "run_process", recording)
    try:
        yield folder, out, raw
    finally:
        mp.undo()


def _hidden_numbers() -> set:
    load_banks(find_course(start=ROOT))
    n_public, cases, _, _ = expected_cases(get_question(GID), SEED)
    out = set()
    for case in cases[n_public:]:
        for a in case:
            for v in np.asarray(a, dtype=float).ravel()[:6]:
                if abs(int(v * 1e6)) >= 1000:
                    out.add(str(abs(int(v * 1e6))))
    return out


def test_no_hidden_input_reaches_feedback_notes_or_the_console(graded, capfd):
    folder, out, raw = graded
    main(
        [
            "grade",
            str(folder),
            "--out",
            str(out / "book.csv"),
            "--feedback",
            str(out / "feedback"),
            "--course",
            str(ROOT),
            "--seed",
            str(SEED),
            "--timeout",
            "20",
        ]
    )
    console = capfd.readouterr()
    hidden = _hidden_numbers()
    assert len(hidden) > 20
    # The attacks held the hidden inputs: the sandboxes' raw output carries them.
    leaked = set(re.findall(rb"\d{4,}", b"".join(raw)))
    assert {h.encode() for h in hidden} & leaked, "the attacks never got the hidden inputs"
    texts = {p.name: p.read_text(encoding="utf-8") for p in (out / "feedback").rglob("*.*")}
    assert len(texts) == 2 * len(attacks())
    texts["gradebook"] = (out / "book.csv").read_text(encoding="utf-8")
    texts["console"] = console.out + console.err
    for where, text in texts.items():
        found = set(re.findall(r"\d{4,}", text)) & hidden
        assert not found, (where, sorted(found)[:5])
    for name in ("E", "f_"):  # no name the program chose after it had the hidden cases
        assert not re.search(rf"\b{name}\d", texts["gradebook"])
    for text in texts.values():  # nor which signal ended it, or with which code
        assert not re.search(r"SIG[A-Z]{2,}|exit(ed)? (with )?code \d", text), text[:300]
    assert "while checking q03_concat_project: it stopped" in texts["gradebook"]
