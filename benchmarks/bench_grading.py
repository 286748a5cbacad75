"""Grading throughput: submissions per second for a generated class, with 1 and 2 workers.

(First written by the grader's author for exercise 03 alone; extended to every assignment,
hostile submissions, a check of the verdicts and the nbgrader comparison.)

The class is built in a temporary folder from the released exercise notebooks (exercises/) and
the solutions, one folder per student, one notebook per assignment:

* ``correct_a``, ``correct_b``: every answer cell holds the solution's code;
* ``wrong``: every answer is filled in but wrong (stubs return 0, values are 0);
* ``unattempted``: the released exercise as it is;
* ``hostile_exit``: the first answer cell kills its process (``os._exit``), the rest are wrong;
* ``hostile_patch``: the first answer cell makes NumPy's comparisons always say "equal", and
  reads the course's solutions folder; the rest are wrong.

Submissions that loop forever are left out on purpose: each one costs the cell time limit by
design, so they measure the limit, not the grader. ``mha_helpers.grading.grader.grade_paths``
grades the folder as ``mha-course grade`` does, once unmeasured (to warm the file cache), then
with 1 and with 2 workers. Every row's ``timing`` splits a submission's time into the worker's
start-up (process start, imports, IPython shell), execution (cells and checks) and, the rest of
its wall time, the grader's own work (reading, rebuilding the program, verdicts).

Run alone: ``.venv/bin/python benchmarks/bench_grading.py [--quick]``.
"""

from __future__ import annotations

import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import INFO, MISSED, SKIPPED, Row, judged  # noqa: E402

from mha_helpers.notebooks import COURSE_ROOT

SECTION = "grading"
TARGET_PER_S = 1.0  # with two workers
SEED = 12345
STUDENTS = ("correct_a", "correct_b", "wrong", "unattempted", "hostile_exit", "hostile_patch")


def _answer_cells(nb):
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader", {})
        if md.get("solution") and cell.cell_type == "code":
            yield md["grade_id"], cell


def _wrong(source: str) -> str:
    """A filled-in but wrong answer: stubs return 0, top-level answers become 0."""
    source = re.sub(r"raise NotImplementedError\(.*\)", "return 0", source)
    return re.sub(r"^(\w+) = None\s*$", r"\1 = 0", source, flags=re.M)


HOSTILE = {
    "hostile_exit": "import os\nos._exit(0)\n",
    "hostile_patch": (
        "import numpy as np\n"
        "np.allclose = lambda *a, **k: True\n"
        "np.array_equal = lambda *a, **k: True\n"
        "np.testing.assert_allclose = lambda *a, **k: None\n"
        "try:\n"
        f"    print(open({str(COURSE_ROOT / 'solutions')!r} + '/../README.md').read()[:80])\n"
        "except Exception as exc:\n"
        "    print('refused:', type(exc).__name__)\n"),
}


def build_class(folder: Path, assignments: list[str]) -> int:
    """Write one notebook per (student, assignment) under ``folder``; return how many."""
    count = 0
    for name in assignments:
        exercise = nbformat.read(COURSE_ROOT / "exercises" / f"{name}.ipynb", as_version=4)
        solution = nbformat.read(COURSE_ROOT / "solutions" / f"{name}.ipynb", as_version=4)
        solved = {gid: cell.source for gid, cell in _answer_cells(solution)}
        for student in STUDENTS:
            nb = nbformat.from_dict(exercise)  # a fresh copy
            for i, (gid, cell) in enumerate(_answer_cells(nb)):
                if student.startswith("correct"):
                    cell.source = solved.get(gid, cell.source)
                elif student != "unattempted":
                    cell.source = _wrong(cell.source)
                    if i == 0 and student in HOSTILE:
                        cell.source = HOSTILE[student] + cell.source
            path = folder / student / f"{name}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
            count += 1
    return count


def _sanity(rows) -> tuple[bool, str]:
    """The fast grader must also be right: correct = full marks, everyone else less."""
    bad = []
    for r in rows:
        student = Path(r["file"]).parent.name
        full = r["max"] > 0 and r["total"] == r["max"]
        if student.startswith("correct") and not full:
            bad.append(f"{student}/{r['assignment']} scored {r['total']}/{r['max']} ({r['status']})")
        if not student.startswith("correct") and full and r["max"] > 0:
            bad.append(f"{student}/{r['assignment']} scored full marks")
    return not bad, "; ".join(bad[:3])


def run(args, blas) -> list[Row]:
    from mha_helpers.grading.grader import grade_paths

    assignments = sorted(p.stem for p in (COURSE_ROOT / "exercises").glob("*.ipynb")
                         if (COURSE_ROOT / "solutions" / p.name).is_file())
    if args.quick:
        assignments = assignments[:1]
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="mha-bench-class-"))
    try:
        n = build_class(folder, assignments)
        grade_paths([folder], jobs=1, timeout=60.0, seed=SEED)  # warm the file cache, not measured
        results = {}
        for jobs in (1, 2):
            t0 = time.perf_counter()
            graded = grade_paths([folder], jobs=jobs, timeout=60.0, seed=SEED)
            wall = time.perf_counter() - t0
            results[jobs] = (wall, graded)
            start = [r["timing"]["start"] for r in graded]
            execute = [r["timing"]["execute"] for r in graded]
            own = [r["timing"]["wall"] - s - e for r, s, e in zip(graded, start, execute)]
            per_s = len(graded) / wall
            target = f">= {TARGET_PER_S:g}/s" if jobs == 2 else "report"
            rows.append(Row(
                SECTION, f"{len(graded)} submissions ({len(assignments)} assignments x "
                         f"{len(STUDENTS)} students), {jobs} worker{'s' * (jobs > 1)}",
                f"{per_s:.2f}/s ({wall:.1f} s)",
                target, judged(per_s >= TARGET_PER_S) if jobs == 2 else INFO,
                {"submissions": len(graded), "wall_s": round(wall, 3), "per_second": per_s,
                 "start_s_median": statistics.median(start),
                 "execute_s_median": statistics.median(execute),
                 "grader_s_median": statistics.median(own),
                 "start_s_sum": sum(start), "execute_s_sum": sum(execute),
                 "statuses": sorted({r["status"] for r in graded})}))
            rows.append(Row(
                SECTION, f"where the time goes, {jobs} worker{'s' * (jobs > 1)} (median per "
                         f"submission)",
                f"worker start-up {statistics.median(start) * 1e3:.0f} ms, execution "
                f"{statistics.median(execute) * 1e3:.0f} ms, grader {statistics.median(own) * 1e3:.0f} ms",
                "report", INFO))
        wall1, wall2 = results[1][0], results[2][0]
        rows.append(Row(SECTION, "speed-up from 1 to 2 workers", f"{wall1 / wall2:.2f}x", "report",
                        INFO, {"speedup": wall1 / wall2}))
        ok, why = _sanity(results[2][1])
        rows.append(Row(SECTION, "verdicts of the benchmark class",
                        "correct ones full marks, others less" if ok else f"wrong: {why}",
                        "all right", judged(ok)))
        if len(results[2][1]) != n:
            rows[-1].status = MISSED
            rows[-1].measured += f"; {len(results[2][1])} rows for {n} notebooks"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if shutil.which("nbgrader") is None:
        rows.append(Row(SECTION, "nbgrader autograde on the same honest submissions",
                        "skipped (nbgrader not installed; it is optional)", ">= 2x its throughput",
                        SKIPPED))
    else:
        rows.append(Row(SECTION, "nbgrader autograde on the same honest submissions",
                        "skipped (nbgrader is installed, but the side-by-side run is not "
                        "implemented yet)", ">= 2x its throughput", SKIPPED))
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="grading throughput only")
    parser.add_argument("--quick", action="store_true")
    for row in run(parser.parse_args(), {}):
        print(f"{row.name}: {row.measured} [{row.target}: {row.status}]")
