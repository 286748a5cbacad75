"""Run battery B through the learner's self-check and print the harness's table, then every
wrong pass and false reject (``python -m tests.lesson_battery.run_battery_b``)."""

from __future__ import annotations

from . import harness
from .battery_b import ENTRIES


def main() -> None:
    outcomes = harness.run(ENTRIES)
    print(harness.table(outcomes))
    for o in outcomes:
        if o.outcome in ("wrong-pass", "false-reject"):
            print(f"{o.outcome}: {o.entry.grade_id}: {o.entry.name} | {o.feedback[:200]}")


if __name__ == "__main__":
    main()
