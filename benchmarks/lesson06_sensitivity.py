"""How far lesson 06's printed numbers move when the last bits of a computation change.

    .venv/bin/python benchmarks/lesson06_sensitivity.py              # 4 perturbed runs, ~3 min
    .venv/bin/python benchmarks/lesson06_sensitivity.py --runs 8

Another processor (another SIMD kernel in NumPy, another OpenBLAS kernel) sums in another order,
so every matrix product can differ in its last bit. One such difference is enough: a training
run of hundreds of steps amplifies it, and the trained model ends somewhere slightly different
(a 600-step model in lesson 06 printed 17.6 % on one processor and 18.0 % on another).

This script measures that spread on one machine. It runs the lesson's code cells once as they
are, then ``--runs`` more times with every starting weight of every ``init_model`` call changed
by one unit in the last place (multiplied by ``1 + k * 2**-52`` with ``k`` in -1, 0, 1 at random,
a fresh pattern per run): the size of difference a different summation order makes. For each
code cell it prints the largest change of each kind of printed number, percentages (in points)
and other decimals, over the runs. Lesson 06's cells whose numbers come from trained models
carry a tolerance in their metadata (``mha_course.tolerance``, checked by the root
``conftest.py`` when nbval runs the lesson); it must cover what this script measures, with a
margin, and stay small enough that a real change to the lesson still fails.

The measured spread is printed and written to ``benchmarks/results/sensitivity_*.json``
(not committed); ``benchmarks/README.md`` records the last run.
Give ``solutions/06_what_heads_learn.ipynb`` as the argument to measure the solution instead.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # as the lesson sets it, before NumPy loads

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import mha_helpers.training as training  # noqa: E402
from mha_helpers.tolerance import numbers_in  # noqa: E402

LESSON = HERE.parent / "notebooks" / "06_what_heads_learn.ipynb"


def run_lesson(perturb_seed=None, notebook=LESSON) -> dict[int, str]:
    """Execute a notebook's code cells in one namespace; return each cell's printed text.

    Cells that call the self-check (``check(``, ``score_summary(``) are skipped: they would
    record scores, and print no number that depends on rounding.
    """
    original = training.init_model
    if perturb_seed is not None:
        rng = np.random.default_rng(perturb_seed)

        def init_model(*args, **kwargs):
            params = original(*args, **kwargs)
            return {
                name: w * (1 + rng.integers(-1, 2, size=w.shape) * 2.0**-52)
                for name, w in params.items()
            }

        training.init_model = init_model
    plt.show = lambda *args, **kwargs: plt.close("all")
    namespace: dict = {"__name__": "__main__"}
    printed = {}
    try:
        for index, cell in enumerate(json.loads(Path(notebook).read_text())["cells"]):
            source = "".join(cell["source"])
            if cell["cell_type"] != "code" or "check(" in source or "score_summary(" in source:
                continue
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                exec(compile(source, f"cell {index}", "exec"), namespace)
            printed[index] = buffer.getvalue()
    finally:
        training.init_model = original
    return printed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="perturbed runs (default 4)")
    parser.add_argument(
        "notebook", nargs="?", default=str(LESSON), help="default: lesson 06 (or solution 06)"
    )
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    reference = run_lesson(notebook=args.notebook)
    spread: dict[int, dict[str, float]] = {}
    for run in range(args.runs):
        printed = run_lesson(perturb_seed=run, notebook=args.notebook)
        for index, text in printed.items():
            ref_numbers, new_numbers = numbers_in(reference[index]), numbers_in(text)
            cell = spread.setdefault(index, {"%": 0.0, "number": 0.0, "changed layout": 0})
            if [kind for kind, _ in ref_numbers] != [kind for kind, _ in new_numbers]:
                cell["changed layout"] += 1
                continue
            for (kind, a), (_, b) in zip(ref_numbers, new_numbers):
                cell[kind] = max(cell[kind], abs(a - b))
        print(f"  run {run + 1} of {args.runs} done ({time.perf_counter() - t0:.0f} s)")
    print(f"\nlargest change over {args.runs} runs with the starting weights moved by 1 ulp")
    print(f"{'cell':>5} {'% (points)':>11} {'other numbers':>14} {'layout changed':>15}")
    for index, cell in spread.items():
        if any(cell.values()):
            print(
                f"{index:>5} {cell['%']:>11.1f} {cell['number']:>14.3g} "
                f"{cell['changed layout']:>15}"
            )
    print(f"(cells not listed printed the same text every time; {time.perf_counter() - t0:.0f} s)")
    out = HERE / "results" / f"sensitivity_{Path(args.notebook).parent.name}_06.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"notebook": args.notebook, "runs": args.runs, "spread": spread}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
