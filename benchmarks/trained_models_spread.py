"""How far the course's shipped trained models move when they are retrained elsewhere.

    .venv/bin/python benchmarks/trained_models_spread.py        # about a minute on one core

``mha_helpers/trained.py`` ships small trained models and checks that retraining reproduces
them within ``WEIGHT_TOLERANCE``. This script measures what that tolerance must cover and what
it must still catch, for every model of ``RECIPES``, as the largest change of any weight
against a reference retrained here:

* **processor**: retrained in a fresh process on the generic kernels (``OPENBLAS_CORETYPE``
  set to the most basic kernel, every NumPy SIMD dispatch target disabled), as a machine
  without AVX2 computes it;
* **rounding**: every starting weight changed by one unit in the last place (3 random
  patterns), the size of difference another summation order makes, and by 1e-12 (relative),
  which shows whether training amplifies such differences;
* **real changes**: the learning rate changed by one part in a million, one step fewer,
  another data seed. The tolerance must be far below these.

The module docstring of ``mha_helpers/trained.py`` records the last run.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy loads: these products are tiny

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mha_helpers.trained import (  # noqa: E402
    RECIPES,
    WEIGHT_TOLERANCE,
    starting_params,
    train_recipe,
)


def largest_difference(a: dict, b: dict) -> float:
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def perturbed(recipe, relative, pattern):
    """Train ``recipe`` with every starting weight multiplied by ``1 + k * relative``, k in
    {-1, 0, 1} at random (``pattern`` seeds the choice)."""
    rng = np.random.default_rng(pattern)
    start = {
        k: w * (1 + rng.integers(-1, 2, size=w.shape) * relative)
        for k, w in starting_params(recipe).items()
    }
    return train_recipe(recipe, start=start)


def generic_kernels_retrained(tmp: Path) -> dict:
    """Every model retrained in a fresh process on the generic kernels; ``{name: params}``."""
    import numpy._core._multiarray_umath as umath

    features = " ".join(f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f))
    core = "ARMV8" if platform.machine() in ("aarch64", "arm64") else "Prescott"
    env = dict(os.environ, OPENBLAS_CORETYPE=core, NPY_DISABLE_CPU_FEATURES=features)
    path = tmp / "generic.npz"
    command = [sys.executable, "-m", "mha_helpers.trained", "--path", str(path)]
    subprocess.run(command, env=env, check=True, capture_output=True)
    with np.load(path) as data:
        return {
            name: {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith(name + "/")}
            for name in RECIPES
        }


def main() -> int:
    import tempfile

    print(f"NumPy {np.__version__}, {platform.machine()}, tolerance {WEIGHT_TOLERANCE:g}")
    with tempfile.TemporaryDirectory() as tmp:
        generic = generic_kernels_retrained(Path(tmp))
    for name, recipe in RECIPES.items():
        reference = train_recipe(recipe)
        rows = [("generic kernels (fresh process)", largest_difference(reference, generic[name]))]
        for relative, label in ((2.0**-52, "1 ulp"), (1e-12, "1e-12")):
            worst = max(
                largest_difference(reference, perturbed(recipe, relative, p)) for p in range(3)
            )
            rows.append((f"starting weights changed by {label} (3 patterns)", worst))
        for label, changed in (
            ("learning rate x (1 + 1e-6)", replace(recipe, lr=recipe.lr * (1 + 1e-6))),
            ("one step fewer", replace(recipe, steps=recipe.steps - 1)),
            ("data seed + 1", replace(recipe, data_seed=recipe.data_seed + 1)),
        ):
            rows.append((label, largest_difference(reference, train_recipe(changed))))
        print(f"\n{name}: largest change of any weight")
        for label, value in rows:
            print(f"  {label:<48} {value:9.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
