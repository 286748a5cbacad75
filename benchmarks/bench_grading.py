"""Grader throughput: submissions per second with 1 and 2 workers, and where the time goes.

A folder of typical submissions of exercise 03 is generated from the released student notebook
(correct answers, blank ones, classic mistakes, an answer that raises) and graded with
``grade_paths`` as ``mha-course grade`` does. Reported per worker count: submissions per second
(wall clock for the whole batch) and, per submission, the worker's start-up (process start,
imports, IPython shell) against execution (the cells and the checks) and the grader's own
overhead (reading, rebuilding the program, computing verdicts).

Target (course issue 3): at least 1 submission per second with 2 workers on a 2-core machine.

Run alone: ``.venv/bin/python benchmarks/bench_grading.py [N]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import INFO, Row, judged  # noqa: E402

from mha_helpers.grading.grader import grade_paths  # noqa: E402

SECTION = "grading"
ROOT = HERE.parent
EXERCISE = ROOT / "exercises" / "03_concatenate_and_project.ipynb"
TARGET = 1.0  # submissions per second with 2 workers

_CORRECT = {
    "q03_d_head": "d_head = 768 // 12",
    "q03_identity_output": "identity_output = joined @ np.eye(4)",
    "q03_concat_vs_average": 'concat_vs_average = "b"',
    "q03_concat_project": "def concat_project(head_outputs, w_o):\n"
                          "    return np.concatenate(list(head_outputs), axis=-1) @ w_o\n",
}
_VARIANTS = [
    {},  # all correct
    {"q03_concat_project": "def concat_project(h, w):\n    h = np.asarray(h)\n"
                           "    return h.reshape(h.shape[1], -1) @ w\n"},  # bare reshape
    {"q03_d_head": "d_head = 768 * 12", "q03_concat_vs_average": 'concat_vs_average = "a"'},
    {"q03_concat_project": "def concat_project(h, w):\n    return np.mean(h, axis=0)\n"},
    {"q03_concat_project": "def concat_project(h, w):\n    raise ValueError('not finished')\n"},
    None,  # the untouched exercise
]


def make_submissions(folder: Path, n: int = 20) -> Path:
    base = nbformat.read(EXERCISE, as_version=4)
    for i in range(n):
        variant = _VARIANTS[i % len(_VARIANTS)]
        nb = nbformat.reads(nbformat.writes(base), as_version=4)  # a fresh copy
        if variant is not None:
            answers = dict(_CORRECT, **variant)
            for cell in nb.cells:
                gid = cell.metadata.get("nbgrader", {}).get("grade_id")
                if gid in answers:
                    cell.source = answers[gid]
        path = folder / f"student{i:02d}" / "exercise_03.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
    return folder


def measure(n: int = 20, jobs=(1, 2)) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_submissions(Path(tmp), n)
        grade_paths([folder], jobs=1, timeout=60)  # warm the file cache once, not measured
        for j in jobs:
            t0 = time.perf_counter()
            rows = grade_paths([folder], jobs=j, timeout=60)
            wall = time.perf_counter() - t0
            start = [r["timing"]["start"] for r in rows]
            execute = [r["timing"]["execute"] for r in rows]
            per = [r["timing"]["wall"] for r in rows]
            out[j] = {
                "submissions": len(rows), "wall_s": round(wall, 3),
                "per_second": round(len(rows) / wall, 3),
                "start_s_median": round(statistics.median(start), 4),
                "execute_s_median": round(statistics.median(execute), 4),
                "grader_s_median": round(statistics.median(
                    [w - s - e for w, s, e in zip(per, start, execute)]), 4),
                "statuses": sorted({r["status"] for r in rows}),
            }
    return out


def run(args, blas) -> list[Row]:
    n = 12 if getattr(args, "quick", False) else 20
    res = measure(n)
    rows = []
    for j, r in res.items():
        split = (f"per submission (median): worker start {r['start_s_median'] * 1000:.0f} ms, "
                 f"execution {r['execute_s_median'] * 1000:.0f} ms, grader "
                 f"{r['grader_s_median'] * 1000:.0f} ms")
        if j == 2:
            rows.append(Row(SECTION, f"grade {r['submissions']} submissions, 2 workers",
                            f"{r['per_second']:.2f} submissions/s", f">= {TARGET:g} /s",
                            judged(r["per_second"] >= TARGET), r, split))
        else:
            rows.append(Row(SECTION, f"grade {r['submissions']} submissions, {j} worker",
                            f"{r['per_second']:.2f} submissions/s", "", INFO, r, split))
    return rows


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for j, r in measure(n).items():
        print(f"{j} worker(s): {r}")
