"""A student copy for graded work reveals no value answer (course issue 21, class 5).

The attack: a value question's answer space is small, so a script tries every candidate
against the copy's self-check data offline. On the plain (self-study) copy that recovers every
value answer; on a ``--for-grading`` copy it must recover none. The search below runs the copy's
own self-check on every candidate of each value question's answer space: on the plain copy
it finds the right answer (so the search works), on the graded copy every candidate of the
right form gets the very same verdict, "recorded", and none is confirmed.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys

import pytest
from grading_helpers import ROOT

from mha_helpers.cli import main
from mha_helpers.grading import get_question
from mha_helpers.grading.classroom.banks import load_banks
from mha_helpers.grading.course import find_course
from mha_helpers.grading.rules.judge import value_verdict
from mha_helpers.grading.selfcheck.check import data_meta


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    base = tmp_path_factory.mktemp("copies")
    assert main(["release", "--student-copy", str(base / "plain")]) == 0
    assert main(["release", "--student-copy", str(base / "graded"), "--for-grading"]) == 0
    load_banks(find_course(start=ROOT))
    return base / "plain", base / "graded"


def value_questions(copy):
    for path in sorted((copy / "mha_helpers" / "grading" / "selfcheck" / "data").glob("*.json")):
        for q in json.loads(path.read_text(encoding="utf-8"))["questions"]:
            if q["kind"] == "value":
                yield path, q


def answer_space(gid: str) -> list:
    """Every candidate of the question's answer space an attacker would try: all letters for a
    multiple choice, every combination for tuples of flags or names, shapes and small arrays
    exhaustively, integers up to 5000 and every a * 2**k, plus the classic mistakes and the
    answer itself (so that a copy that confirmed it would be caught)."""
    q = get_question(gid)
    x = q.expected
    out = [x] + [m.answer for m in q.mistakes]
    if isinstance(x, str):
        out += [chr(c) for c in range(ord("a"), ord("z") + 1)]
        out += [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    elif isinstance(x, tuple | list) and all(isinstance(v, bool) for v in x):
        out += [tuple(p) for p in itertools.product([False, True], repeat=len(x))]
    elif isinstance(x, tuple | list) and any(isinstance(v, str) for v in x):
        words = set(re.findall(r"[a-z]+", f"{q.prompt} {x} {[m.answer for m in q.mistakes]}"))
        out += [tuple(p) for p in itertools.product(sorted(words), repeat=len(x))]
    elif isinstance(x, tuple | list):
        pool = range(1, 10) if all(float(v).is_integer() for v in x) else range(0, 5)
        for p in itertools.product(pool, repeat=len(x)):
            out.append(type(x)(float(v) if isinstance(x[0], float) else v for v in p))
        out += [type(x)(p) for p in itertools.permutations(x)]
    else:
        out += list(range(0, 5001))
        out += [a * 2**k for a in range(1, 17) for k in range(0, 41)]
        out += [float(x) * f for f in (0.5, 1.0, 2.0)]
    return out


def test_the_plain_copy_confirms_value_answers(copies):
    """The control: on the self-study copy the search does find the answer."""
    plain, _ = copies
    found = 0
    for _, q in value_questions(plain):
        meta, pub = data_meta(q), q["public"]
        verdict = value_verdict(
            meta, pub["info"], pub["mistakes"], get_question(q["grade_id"]).expected
        )
        assert verdict["status"] == "passed", q["grade_id"]
        found += 1
    assert found >= 5


def test_a_for_grading_copy_gives_no_value_answer_away(copies):
    _, graded = copies
    searched = 0
    for _, q in value_questions(graded):
        gid = q["grade_id"]
        meta, pub = data_meta(q), q["public"]
        # Nothing that depends on the value: no hash of it or of a classic mistake.
        assert not re.search(r"[0-9a-f]{32,}", json.dumps(pub)), gid
        verdicts = {}
        for candidate in answer_space(gid):
            v = value_verdict(meta, pub["info"], pub["mistakes"], candidate)
            assert v["status"] != "passed", (gid, candidate)
            if v["status"] == "recorded":
                verdicts[json.dumps(v, sort_keys=True, default=str)] = candidate
            searched += 1
        # Every candidate of the right form gets one and the same verdict, the answer included.
        answer = value_verdict(meta, pub["info"], pub["mistakes"], get_question(gid).expected)
        assert answer["status"] == "recorded", gid
        assert len(verdicts) == 1, (gid, list(verdicts.values())[:3])
    assert searched > 10_000


def test_the_graded_copys_check_says_recorded_and_still_checks_the_form(copies, tmp_path):
    _, graded = copies
    code = (
        "from mha_helpers.grading import check\n"
        "check('q03_d_head', 64)\ncheck('q03_d_head', 65)\ncheck('q03_d_head', 'sixty-four')\n"
        "check('q03_concat_vs_average', 'b')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(graded)),
        timeout=60,
    )
    lines = out.stdout.splitlines()
    assert lines.count("q03_d_head: recorded, checked at grading [1 points]") == 2, out
    assert "passed" not in out.stdout, out
    assert "should be a number" in out.stdout, out
    assert "q03_concat_vs_average: recorded, checked at grading" in out.stdout, out
    readme = (graded / "README.md").read_text(encoding="utf-8")
    assert "checked when your work is graded" in readme


def test_for_grading_needs_a_student_copy(capsys):
    assert main(["release", "--for-grading"]) == 2
    assert "--for-grading goes with --student-copy" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Issue 31, class 1: the attacker reads the whole copy (not only the self-check's verdicts)


def _copy_text(copy) -> str:
    """Every text file of the copy, as the attacker would read it."""
    parts = []
    for path in sorted(copy.rglob("*")):
        if path.is_file() and path.suffix in (".json", ".py", ".ipynb", ".md", ".txt", ".toml"):
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def test_the_for_grading_copy_names_no_mistake_and_holds_no_value_hint(copies):
    plain, graded = copies
    text = _copy_text(graded)
    graded_entries = {q["grade_id"]: json.dumps(q) for _, q in value_questions(graded)}
    function_hints = set()
    for path in (plain / "mha_helpers" / "grading" / "selfcheck" / "data").glob("*.json"):
        for q in json.loads(path.read_text(encoding="utf-8"))["questions"]:
            if q["kind"] == "function":
                function_hints |= {m["hint"] for m in q["mistakes"]} | {q["hint"]}
    checked = 0
    for _, q in value_questions(plain):
        bank = get_question(q["grade_id"])
        # the classic mistakes' names and hints, and the question's own hint, appear nowhere
        # in the copy (for a multiple choice the mistakes are the wrong letters)
        for m in bank.mistakes:
            if m.hint not in function_hints:  # a shared hint about code ties to no answer
                assert json.dumps(m.hint)[1:-1] not in text, (bank.grade_id, m.name)
            assert json.dumps(m.name) not in graded_entries[bank.grade_id], (bank.grade_id, m.name)
        if len(bank.hint) > 20:
            assert json.dumps(bank.hint)[1:-1] not in text, bank.grade_id
        for h in q["public"]["info"].get("hashes") or []:  # no hash of the plain copy either
            assert h not in text, bank.grade_id
        checked += 1
    assert checked >= 10


def test_the_graded_entry_is_the_same_whatever_the_answer(copies):
    """Nothing of a value question's graded entry depends on the answer: change the answer's
    hashes, the mistakes, their names and hints and the hint, and the entry is the same."""
    from mha_helpers.grading.rules.recorded import for_grading_entry

    plain, graded = copies
    graded_entries = {q["grade_id"]: q for _, q in value_questions(graded)}
    for _, q in value_questions(plain):
        other = json.loads(json.dumps(q))
        other["hint"] = "the answer is 42"
        other["mistakes"] = [{"name": "x", "hint": "not x"}]
        other["public"]["info"]["hashes"] = ["0" * 64, "1" * 64]
        other["public"]["info"]["sig_figs"] = 9
        other["public"]["mistakes"] = [["2" * 64]]
        assert for_grading_entry(other) == for_grading_entry(q) == graded_entries[q["grade_id"]]


def _closed(q) -> bool:
    return bool(q["public"]["info"].get("letter"))


def test_an_attacker_with_only_the_copy_scores_no_better_than_chance(copies):
    """Play the attacker on every closed and every value question with nothing but the graded
    copy: try every letter (closed questions) and a wide numeric space (numbers: every integer
    up to 200,000, every a * 2**k, the true answer and every classic mistake), and keep any
    candidate the copy treats differently from the others. None is; so the attacker's best
    guess for a closed question is one of the options at random, 1 in the number of options."""
    _, graded = copies
    closed = numbers = 0
    for _, q in value_questions(graded):
        gid = q["grade_id"]
        meta, pub = data_meta(q), q["public"]
        bank = get_question(gid)
        if _closed(q):
            letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
            seen = {
                json.dumps(value_verdict(meta, pub["info"], pub["mistakes"], c), sort_keys=True)
                for c in letters
            }
            assert len(seen) == 1, gid  # every letter: the very same verdict
            # and the entry itself does not single out any letter of the prompt's options
            entry = json.dumps({k: v for k, v in q.items() if k != "prompt"})
            assert not re.search(r"""["'][a-e]["']""", entry), gid
            closed += 1
        elif pub["info"].get("type") == "number" and not pub["info"].get("shape"):
            ints = list(range(0, 200_001))
            candidates = ints + [a * 2**k for a in range(1, 33) for k in range(41)]
            candidates += [bank.expected] + [m.answer for m in bank.mistakes]
            if not isinstance(bank.expected, int):
                candidates += [float(c) / 1000 for c in range(0, 20_001)]
            right_form = [c for c in candidates if isinstance(c, type(bank.expected))]
            seen = {
                json.dumps(value_verdict(meta, pub["info"], pub["mistakes"], c), sort_keys=True)
                for c in right_form
            }
            assert len(seen) == 1, gid
            numbers += 1
    assert closed >= 3 and numbers >= 5
