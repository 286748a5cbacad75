"""The whole test suite's wall time (target: under 5 minutes on a 2-core machine).

Running the suite takes minutes, so a plain ``make bench`` does not: it reports the last
measurement, saved in ``benchmarks/results/test_suite.json``. Measure it with
``.venv/bin/python benchmarks/run.py --only tests``, which runs ``python -m pytest -q`` (the
project's own settings: every test and notebook, two xdist workers) and times it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from common import INFO, MISSED, Row, judged

from mha_helpers.notebooks import COURSE_ROOT

SECTION = "tests"
TARGET_S = 300.0
SAVED = Path(__file__).resolve().parent / "results" / "test_suite.json"


def measure() -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=COURSE_ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.strip().splitlines() if ln.strip()]
    result = {
        "wall_s": round(wall, 1),
        "returncode": proc.returncode,
        "summary": lines[-1] if lines else "",
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    SAVED.parent.mkdir(parents=True, exist_ok=True)
    SAVED.write_text(json.dumps(result, indent=1) + "\n")
    return result


def run(args, blas) -> list[Row]:
    if args.measure_tests:
        result = measure()
    elif SAVED.is_file():
        result = json.loads(SAVED.read_text())
    else:
        return [
            Row(
                SECTION,
                "whole test suite (make test)",
                "not measured: run `.venv/bin/python benchmarks/run.py --only tests`",
                f"< {TARGET_S / 60:g} min",
                INFO,
            )
        ]
    ok = result["returncode"] == 0 and result["wall_s"] < TARGET_S
    status = judged(ok) if result["returncode"] == 0 else MISSED
    return [
        Row(
            SECTION,
            "whole test suite (make test)",
            f"{result['wall_s'] / 60:.1f} min ({result['summary']}; measured {result['date_utc']})",
            f"< {TARGET_S / 60:g} min",
            status,
            result,
        )
    ]
