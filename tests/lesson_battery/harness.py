"""Run a battery through the learner's self-check and classify every verdict.

For a wrong answer the outcome is one of

* ``wrong-pass``: the self-check passed it;
* ``hinted``: the feedback names its cause (one of the entry's ``causes`` matches);
* ``wrong-cause``: the feedback names a cause, and it is not this answer's;
* ``unhinted``: the feedback names no cause (it may still say which property fails).

A verdict "names a cause" when its ``cause`` field is set (the judge fills it when it attributes
the failure to a specific slip, and leaves it ``None`` when it only reports the property that
fails); a judge without that field is taken to name a cause whenever it gives a hint.

For a right answer the outcome is ``passed`` or ``false-reject``.

A stricter reading of ``hinted`` is reported beside it: ``strict`` counts a wrong answer as
hinted only when a cause pattern matches the feedback *without* the question's own generic
hint (the recipe every failing answer to that question is shown, e.g. "Q @ K.T / sqrt(d_k)").
A pattern that only matches the recipe does not show that the feedback named this answer's
cause (battery C's writer found 62 such matches), so ``strict`` is the figure to trust.
"""

from __future__ import annotations

import collections
import contextlib
import io
import re
import warnings
from dataclasses import dataclass

import numpy as np

from .format import Right, Wrong


def _self_check():
    from mha_helpers.grading import self_check

    return self_check


def build(entry: Wrong | Right):
    """The object the entry's source defines (a fresh namespace, ``np`` imported)."""
    namespace = {"np": np, "__name__": "__battery__"}
    code = compile(entry.source, f"<battery: {entry.grade_id}: {entry.name}>", "exec")
    exec(code, namespace)
    return namespace[entry.target]


@dataclass(frozen=True)
class Outcome:
    entry: Wrong | Right
    outcome: str
    status: str
    feedback: str
    strict: bool = False  # hinted by the feedback without the question's generic hint


def feedback_text(verdict: dict) -> str:
    parts = [verdict.get("message"), verdict.get("hint"), verdict.get("cause")]
    return " | ".join(str(p) for p in parts if p)


def _generic_hint(grade_id: str) -> str:
    """The question's own hint, shown to every failing answer (from the self-check data)."""
    from mha_helpers.grading.selfcheck import check

    return str(check._load_data().get(grade_id, {}).get("hint") or "")


def specific_text(grade_id: str, verdict: dict) -> str:
    """The feedback without the question's generic hint: what was said of this answer."""
    generic = _generic_hint(grade_id)
    hint = str(verdict.get("hint") or "")
    if generic:
        hint = hint.replace(generic, " ")
    parts = [verdict.get("message"), hint, verdict.get("cause")]
    return " | ".join(str(p) for p in parts if p)


def names_a_cause(verdict: dict) -> bool:
    if "cause" in verdict:
        return bool(verdict["cause"])
    return bool(verdict.get("hint"))


def classify(entry: Wrong | Right, verdict: dict) -> str:
    status = verdict.get("status")
    if isinstance(entry, Right):
        return "passed" if status == "passed" else "false-reject"
    if status == "passed":
        return "wrong-pass"
    text = feedback_text(verdict)
    if any(re.search(c, text, flags=re.IGNORECASE) for c in entry.causes):
        return "hinted"
    return "wrong-cause" if names_a_cause(verdict) else "unhinted"


def run_entry(entry: Wrong | Right) -> Outcome:
    self_check = _self_check()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        answer = build(entry)
        verdict = self_check(entry.grade_id, answer)
    outcome = classify(entry, verdict)
    strict = outcome == "hinted" and any(
        re.search(c, specific_text(entry.grade_id, verdict), flags=re.IGNORECASE)
        for c in entry.causes
    )
    return Outcome(entry, outcome, str(verdict.get("status")), feedback_text(verdict), strict)


def run(entries) -> list[Outcome]:
    return [run_entry(e) for e in entries]


def exercise_of(grade_id: str) -> str:
    return grade_id[1:3]  # "q05_gqa" -> "05"


def rates(outcomes: list[Outcome]) -> dict:
    """Counts and rates: hinted, wrong-cause, wrong-pass (of wrong answers), false-reject (of
    right answers), overall and per exercise."""

    def summarise(group):
        wrong = [o for o in group if isinstance(o.entry, Wrong)]
        right = [o for o in group if isinstance(o.entry, Right)]
        count = collections.Counter(o.outcome for o in group)
        n = max(len(wrong), 1)
        return {
            "wrong": len(wrong),
            "right": len(right),
            "hinted": count["hinted"] / n,
            "strict": sum(o.strict for o in wrong) / n,
            "wrong_cause": count["wrong-cause"] / n,
            "wrong_pass": count["wrong-pass"] / n,
            "unhinted": count["unhinted"] / n,
            "false_reject": count["false-reject"] / max(len(right), 1),
            "counts": dict(count),
        }

    by_exercise = collections.defaultdict(list)
    for o in outcomes:
        by_exercise[exercise_of(o.entry.grade_id)].append(o)
    return {
        "all": summarise(outcomes),
        "by_exercise": {k: summarise(v) for k, v in sorted(by_exercise.items())},
    }


def table(outcomes: list[Outcome]) -> str:
    """The rates as a small text table (for ``make bench`` and ``pytest -s``)."""
    r = rates(outcomes)
    lines = ["exercise  wrong  hinted  strict  wrong-cause  wrong-pass  right  false-reject"]
    for ex, s in [*r["by_exercise"].items(), ("all", r["all"])]:
        lines.append(
            f"{ex:>8}  {s['wrong']:>5}  {s['hinted']:>6.1%}  {s['strict']:>6.1%}  "
            f"{s['wrong_cause']:>11.1%}  "
            f"{s['wrong_pass']:>10.1%}  {s['right']:>5}  {s['false_reject']:>12.1%}"
        )
    return "\n".join(lines)
