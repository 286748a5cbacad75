"""Measure the course's speed: ``make bench`` (or ``.venv/bin/python benchmarks/run.py``).

Prints one table (measurement, result, target, met / missed) and writes it, with the machine
it ran on and every raw number, to ``benchmarks/results/latest.json``.

    python benchmarks/run.py                      # every section
    python benchmarks/run.py --only attention     # one section (repeatable)
    python benchmarks/run.py --quick              # fewer repeats and sizes, for development
    python benchmarks/run.py --threads 1          # pin NumPy's BLAS (and PyTorch) to 1 thread

Sections: attention (helper vs matmul floor, naive loop, PyTorch), notebooks (execution time
of each lesson and solution), explorers (slider update times), grading (submissions per
second), selfcheck (the learner's check: time per call, hint rate of a battery of wrong
answers), site (the website's build time), review (the written-answer review page's opening time
in Chromium and the class report's build time, 200 students), tests (the whole test suite's duration; measured only
when asked with --only tests).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import textwrap
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# The attention section interleaves NumPy (OpenBLAS threads) and PyTorch (OpenMP threads). Left
# alone, each library's idle threads keep spinning after a call (OpenBLAS for about 0.1 s) on
# the cores the next contender needs, which doubled some timings on 2 cores. Both libraries read
# these settings once, when they load: set them for this process only, load both, then restore
# the environment, so notebook kernels and grading workers start exactly as a learner's would.
IDLE_THREADS = {"OPENBLAS_THREAD_TIMEOUT": "4", "OMP_WAIT_POLICY": "PASSIVE"}
_saved_env = {k: os.environ.get(k) for k in IDLE_THREADS}
for _k, _v in IDLE_THREADS.items():
    os.environ.setdefault(_k, _v)
import numpy  # noqa: E402,F401

try:
    import torch  # noqa: F401
except ImportError:
    pass
for _k, _v in _saved_env.items():
    if _v is None:
        os.environ.pop(_k, None)
    else:
        os.environ[_k] = _v

from common import MISSED, SKIPPED, Row, blas_info, machine_info, set_blas_threads  # noqa: E402

SECTIONS = {
    "attention": "bench_attention",
    "notebooks": "bench_notebooks",
    "explorers": "bench_explorers",
    "grading": "bench_grading",
    "selfcheck": "bench_selfcheck",
    "site": "bench_site",
    "review": "bench_review",
    "tests": "bench_tests",
}
DEFAULT_OUT = HERE / "results" / "latest.json"


def print_table(rows: list[Row], machine: dict, blas: dict) -> None:
    print(
        f"\nMeasured {machine['date_utc']} on {machine['cpu']}, {machine['cores']} cores, "
        f"{machine['memory_gib']} GiB, {machine['os']}; Python {machine['python']}, NumPy "
        f"{machine['numpy']} with {blas['name']} {blas['version']} ({blas['core']} kernels, "
        f"{blas['threads']} threads); load average at start {machine['load_average_at_start']}"
    )
    headers = ("section", "measurement", "result", "target", "status")
    wrap = {1: 52, 2: 60}
    table = [(r.section, r.name, r.measured, r.target, r.status) for r in rows]
    widths = [
        max(len(headers[i]), *(min(len(t[i]), wrap.get(i, 99)) for t in table))
        if table
        else len(headers[i])
        for i in range(5)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    print("\n" + line + "\n" + "-" * len(line))
    for t in table:
        cells = [textwrap.wrap(c, wrap[i]) or [""] if i in wrap else [c] for i, c in enumerate(t)]
        for k in range(max(map(len, cells))):
            print(
                "  ".join(
                    (c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths)
                ).rstrip()
            )
    notes = [r for r in rows if r.note]
    if notes:
        print("\nNotes:")
        for r in notes:
            print(textwrap.fill(f"- {r.name}: {r.note}", 100, subsequent_indent="  "))
    missed = [r for r in rows if r.status == MISSED]
    print(
        f"\n{len(rows)} rows: {sum(r.status == 'met' for r in rows)} met, {len(missed)} missed, "
        f"{sum(r.status == SKIPPED for r in rows)} skipped, {sum(r.status == 'info' for r in rows)} reported"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(SECTIONS),
        help="run only this section (repeatable); default: all but 'tests' "
        "measured, 'tests' read from its last measurement",
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats and sizes (development)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS and PyTorch threads (default: what NumPy's BLAS already uses)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    args = parser.parse_args(argv)

    if args.threads is not None and not set_blas_threads(args.threads):
        print(f"warning: could not set NumPy's BLAS threads to {args.threads}", file=sys.stderr)
    blas = blas_info()
    machine = machine_info()
    selected = args.only or list(SECTIONS)
    args.measure_tests = bool(args.only and "tests" in args.only)
    rows: list[Row] = []
    started = time.perf_counter()
    for name in selected:
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(SECTIONS[name])
            section_rows = module.run(args, blas)
        except Exception as exc:  # one broken section must not hide the others
            traceback.print_exc()
            section_rows = [Row(name, "section failed", f"{type(exc).__name__}: {exc}", "", MISSED)]
        rows += section_rows
        print(
            f"[bench] {name} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True
        )

    print_table(rows, machine, blas)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": machine,
        "blas": blas,
        "idle_thread_settings": IDLE_THREADS,
        "sections": selected,
        "quick": args.quick,
        "seconds": round(time.perf_counter() - started, 1),
        "rows": [r.as_dict() for r in rows],
    }
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(
        f"\nwrote {args.out.relative_to(Path.cwd()) if args.out.is_relative_to(Path.cwd()) else args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
