"""Notebook execution: every notebook in notebooks/ and solutions/, headless, in a fresh kernel.

Uses ``mha_helpers.notebooks.execute_notebook(path, write=False)`` (the same code path as
``mha-course execute``, without storing anything), which returns the kernel start-up time and
the time to run every cell, separately.
"""

from __future__ import annotations

import tempfile

from common import INFO, MISSED, Row, judged, kernel_stderr_to

from mha_helpers.notebooks import COURSE_ROOT, execute_notebook, find_notebooks

SECTION = "notebooks"
TARGET_S = 10.0
TRAINING_TARGET_S = 30.0  # the lesson that trains models
TRAINING_PREFIX = "06_"


def target_for(name: str) -> float:
    return TRAINING_TARGET_S if name.startswith(TRAINING_PREFIX) else TARGET_S


def run(args, blas) -> list[Row]:
    folders = [COURSE_ROOT / "notebooks", COURSE_ROOT / "solutions"]
    paths = find_notebooks([f for f in folders if f.is_dir()])
    if args.quick:
        paths = paths[:2]
    rows = []
    starts, executes = [], []
    for path in paths:
        rel = path.relative_to(COURSE_ROOT)
        target = target_for(path.name)
        with tempfile.TemporaryFile(mode="w+") as log:
            try:
                with kernel_stderr_to(log):
                    t = execute_notebook(path, write=False)
            except Exception as exc:  # a failing notebook is a result too
                log.seek(0)
                rows.append(
                    Row(
                        SECTION,
                        str(rel),
                        f"failed: {type(exc).__name__}",
                        f"< {target:g} s",
                        MISSED,
                        note=(str(exc)[-300:] + " " + log.read()[-300:]).strip(),
                    )
                )
                continue
        starts.append(t["kernel_start"])
        executes.append(t["execute"])
        rows.append(
            Row(
                SECTION,
                str(rel),
                f"{t['execute']:.1f} s execution + {t['kernel_start']:.1f} s kernel start",
                f"< {target:g} s execution",
                judged(t["execute"] < target),
                {
                    "kernel_start_s": round(t["kernel_start"], 3),
                    "execute_s": round(t["execute"], 3),
                },
            )
        )
    if executes:
        rows.append(
            Row(
                SECTION,
                f"all {len(executes)} notebooks",
                f"{sum(executes):.1f} s execution + {sum(starts):.1f} s kernel starts",
                "report",
                INFO,
                {"execute_s": round(sum(executes), 3), "kernel_start_s": round(sum(starts), 3)},
            )
        )
    return rows
