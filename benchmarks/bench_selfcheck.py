"""The learner's self-check: how long one ``check`` takes, and how well its hints diagnose.

* **Time per call** of ``self_check`` (what ``check(grade_id, answer)`` runs in the notebook)
  for every function question on its public cases, with the right answer (every case is run
  and compared) and with a wrong answer from the battery (the diagnosis compares the answer
  with every listed mistake on every case, and looks for the property that breaks it). Each
  figure is the median of the interleaved rounds of :func:`common.interleaved`; the slowest
  question is reported against the target (< 50 ms per call).
* **Hint rate**: the battery of realistic wrong answers in ``tests/wrong_answers.py`` (at least 8
  per function question), per exercise: how many pass (target 0) and how many verdicts name the
  cause (target >= 90 %). ``tests/test_wrong_answers.py`` asserts the same targets.
* **Independent batteries** (``tests/lesson_battery/battery_*.py``, written from the lessons
  and exercises alone), per battery and per exercise: hinted (>= 90 %), wrong-cause (0: a hint
  that names a cause must name the right one), wrong-pass and false-reject (both 0, asserted by
  ``tests/test_lesson_battery.py``).

Run alone: ``.venv/bin/python benchmarks/bench_selfcheck.py [--quick]``.
"""

from __future__ import annotations

import statistics
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import INFO, Row, interleaved, judged  # noqa: E402

SECTION = "selfcheck"
TARGET_S = 0.050


def run(args, blas) -> list[Row]:
    from wrong_answers import BATTERY, measure, summary

    from mha_helpers.grading.classroom.banks import load_banks
    from mha_helpers.grading.course import find_course
    from mha_helpers.grading.rules.registry import REGISTRY
    from mha_helpers.grading.selfcheck.check import _load_data, self_check

    load_banks(find_course(HERE.parent))
    _load_data()
    rows: list[Row] = []

    # --- hint rate ---------------------------------------------------------------------------
    results = measure(self_check)
    per = summary(results)
    total = sum(n for n, _, _ in per.values())
    passed = sum(p for _, p, _ in per.values())
    good = sum(g for _, _, g in per.values())
    for ex, (n, p, g) in sorted(per.items()):
        rows.append(
            Row(
                SECTION,
                f"exercise {ex}: wrong answers hinted right",
                f"{g}/{n} ({100 * g / n:.0f} %), {p} pass",
                ">= 90 %, none pass",
                judged(g >= 0.9 * n and p == 0),
                {"answers": n, "passed": p, "hinted": g},
            )
        )
    rows.append(
        Row(
            SECTION,
            "all exercises: wrong answers hinted right",
            f"{good}/{total} ({100 * good / total:.1f} %), {passed} pass",
            ">= 90 %, none pass",
            judged(good >= 0.9 * total and passed == 0),
            {"answers": total, "passed": passed, "hinted": good},
        )
    )

    rows += battery_rows()

    # --- time per call -----------------------------------------------------------------------
    rounds = 5 if getattr(args, "quick", False) else 15
    first_wrong = {}
    for w in BATTERY:
        first_wrong.setdefault(w.grade_id, w.answer)
    times = {}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for q in REGISTRY.values():
            if q.kind != "function":
                continue
            contenders = {
                "right": lambda q=q: self_check(q.grade_id, q.reference),
                "wrong": lambda q=q: self_check(q.grade_id, first_wrong[q.grade_id]),
            }
            samples = interleaved(contenders, rounds=rounds, round_time=0.05)
            times[q.grade_id] = {k: statistics.median(v) for k, v in samples.items()}
    worst = max(times, key=lambda g: max(times[g].values()))
    worst_s = max(times[worst].values())
    rows.append(
        Row(
            SECTION,
            "self-check time per call, slowest function question",
            f"{worst_s * 1e3:.1f} ms ({worst})",
            f"< {TARGET_S * 1e3:.0f} ms",
            judged(worst_s < TARGET_S),
            {g: {k: round(v * 1e3, 3) for k, v in t.items()} for g, t in times.items()},
        )
    )
    med = statistics.median(v for t in times.values() for v in t.values())
    rows.append(
        Row(
            SECTION,
            "self-check time per call, median over questions",
            f"{med * 1e3:.1f} ms",
            "",
            INFO,
        )
    )
    return rows


def battery_rows() -> list[Row]:
    """The independent batteries of ``tests/lesson_battery/`` (every ``battery_*.py``, found by
    name), per battery and per exercise: hinted (target >= 90 %; in brackets the strict figure,
    where the question's generic hint alone does not count: see harness.py), wrong-cause (target 0),
    wrong-pass and false-reject (both must be 0; ``tests/test_lesson_battery.py`` asserts it)."""
    import importlib

    from lesson_battery import harness

    rows = []
    folder = HERE.parent / "tests" / "lesson_battery"
    for name in sorted(p.stem for p in folder.glob("battery_*.py")):
        module = importlib.import_module(f"lesson_battery.{name}")
        outcomes = harness.run(list(module.WRONG) + list(module.RIGHT))
        r = harness.rates(outcomes)
        for ex, s in [*r["by_exercise"].items(), ("all", r["all"])]:
            ok = s["hinted"] >= 0.9 and s["wrong_cause"] == 0
            ok = ok and s["wrong_pass"] == 0 and s["false_reject"] == 0
            rows.append(
                Row(
                    SECTION,
                    f"{name}, exercise {ex}: hinted (strict) / wrong-cause / wrong-pass / "
                    "false-reject",
                    f"{s['hinted']:.1%} ({s['strict']:.1%}) / {s['wrong_cause']:.1%} / "
                    f"{s['wrong_pass']:.1%} / {s['false_reject']:.1%} "
                    f"({s['wrong']} wrong, {s['right']} right)",
                    ">= 90 % / 0 / 0 / 0",
                    judged(ok),
                    {
                        k: s[k]
                        for k in (
                            "wrong",
                            "right",
                            "hinted",
                            "strict",
                            "wrong_cause",
                            "wrong_pass",
                            "unhinted",
                            "false_reject",
                        )
                    },
                )
            )
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    a = parser.parse_args()
    for row in run(a, None):
        print(f"{row.status:7} {row.name}: {row.measured}  (target {row.target})")
        if row.name.startswith("self-check time per call, slowest"):
            for gid, t in row.values.items():
                print(f"          {gid:26} right {t['right']:6.2f} ms  wrong {t['wrong']:6.2f} ms")
