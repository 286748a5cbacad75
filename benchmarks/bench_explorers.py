"""Explorer updates: the time one slider move costs in the kernel, for each explorer.

``mha_helpers.widgets.update_timings(name)`` builds the explorer, then for each slider setting
of ``default_states(name)`` (up to d_model = 1024 and h = 32 for the shape explorer, including
settings that only produce an explanation, such as h not dividing d_model) times one update:
compute the view and replace the HTML. The browser's own drawing is not included.
"""

from __future__ import annotations

import statistics

from common import Row, fmt_time, judged

from mha_helpers import widgets

SECTION = "explorers"
TARGET_MEDIAN_S = 0.050
EXPLORERS = ("shape", "kv_cache", "cost")


def run(args, blas) -> list[Row]:
    rows = []
    repeat = 1 if args.quick else 3
    for name in EXPLORERS:
        states = widgets.default_states(name)
        times = widgets.update_timings(name, states, repeat=repeat)
        med, worst = statistics.median(times), max(times)
        rows.append(Row(
            SECTION, f"{name}_explorer update ({len(states)} settings x {repeat})",
            f"median {fmt_time(med)}, worst {fmt_time(worst)}",
            f"median < {TARGET_MEDIAN_S * 1e3:.0f} ms", judged(med < TARGET_MEDIAN_S),
            {"median_s": med, "worst_s": worst, "updates": len(times),
             "p90_s": statistics.quantiles(times, n=10)[-1] if len(times) >= 10 else worst}))
    return rows
