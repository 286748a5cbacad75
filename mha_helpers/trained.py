"""Small models the course trained with its own NumPy code, shipped inside the package.

Lessons 02 and 03 show the heads of a model that learned its weights, beside the random and
hand-written ones, long before lesson 06 teaches training. The models are trained by
:func:`mha_helpers.training.train` on :func:`mha_helpers.tasks.vote_table_task`, the task of
lesson 06, section 2: sequences of 10 random letters, and at every position ``t >= 2`` the
answer is the letter with the largest sum of two votes, one from a fixed random table indexed
by the *first* letter, one from another indexed by the *previous* letter. Each recipe below is
one of lesson 06's runs (``runs[h, 0]`` there): lesson 06 retrains the same models from scratch.

Their weights ship as ``mha_helpers/data/trained_heads.npz`` (float64, about 90 KB), so a lesson
opened anywhere loads them with the installed package alone (:func:`load_trained_model`). The
file is made, and checked, by one command::

    python -m mha_helpers.trained              # retrain every model (seconds), write the file
    python -m mha_helpers.trained --check      # retrain, compare with the shipped file

**Reproducibility.** Retraining gives the same weights bit for bit on the same machine and
library versions. Another processor sums in another order, and the check allows for that:
every retrained weight must lie within :data:`WEIGHT_TOLERANCE` (``1e-8``, absolute; the
largest weights are about 4) of the shipped one, and what the lessons print from the models
(each head's attention on the first and the previous token, the test accuracy) within
:data:`SHOWN_TOLERANCE`. How that was chosen (``benchmarks/trained_models_spread.py``
measures it; numbers from 2026-12-01, NumPy 2.4 with OpenBLAS 0.3.31 on x86-64):

* retrained in a fresh process on the generic kernels (``OPENBLAS_CORETYPE=Prescott``, every
  NumPy SIMD dispatch target disabled), the weights moved by at most 1.3e-15;
* every starting weight changed by one unit in the last place (3 random patterns): at most
  2.7e-15. Training these models barely amplifies rounding: a relative change of 1e-12 in the
  starting weights moved the trained ones by at most 4.1e-12;
* real changes are far larger: the learning rate changed by one part in a million moved the
  weights by 5.3e-7, one training step fewer by 5.6e-4 or more, another data seed by 0.15.

So ``1e-8`` is over a million times the spread a processor causes, and 50 times smaller than
the smallest real change measured.

>>> sorted(RECIPES)
['votes_one_head', 'votes_two_heads']
>>> model = load_trained_model("votes_two_heads")
>>> model.num_heads, model.params["layers.0.w_q"].shape
(2, (32, 32))
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from .tasks import role_scores, vote_table_task
from .training import accuracy, forward, init_model, train

__all__ = [
    "Recipe",
    "RECIPES",
    "TrainedModel",
    "WEIGHT_TOLERANCE",
    "SHOWN_TOLERANCE",
    "shipped_file",
    "starting_params",
    "train_recipe",
    "load_trained_model",
    "save_trained_models",
    "shown_numbers",
    "compare_models",
    "check_trained_models",
    "main",
]

WEIGHT_TOLERANCE = 1e-8  # largest |retrained - shipped| per weight; see the module docstring
# What the lessons print: attention fractions to 2 decimals, accuracies to 0.1 %.
SHOWN_TOLERANCE = {"attention": 1e-6, "accuracy": 1e-3}
FORMAT = 1  # bump when the file's layout changes
TEST_SEED, TEST_SEQUENCES = 1000, 1000  # the held-out sequences the check (and lesson 06) use


@dataclass(frozen=True)
class Recipe:
    """Everything that fixes a trained model: task, size, optimiser settings and seeds."""

    num_heads: int
    d_model: int = 32
    num_layers: int = 1
    vocab_size: int = 16
    seq_len: int = 10
    table_seed: int = 0  # the two vote tables
    init_seed: int = 0  # the starting weights (init_model)
    data_seed: int = 0  # the training batches (train)
    steps: int = 300
    lr: float = 1e-2
    warmup: int = 100
    batch_size: int = 64

    def make_batch(self):
        """The task's batch generator, ``make_batch(rng, batch_size) -> (tokens, targets)``."""
        return vote_table_task(self.vocab_size, self.seq_len, self.table_seed)


RECIPES = {
    "votes_two_heads": Recipe(num_heads=2),  # 2 heads of width 16
    "votes_one_head": Recipe(num_heads=1),  # 1 head of width 32: same parameters
}


@dataclass(frozen=True)
class TrainedModel:
    """A trained model: its name, its recipe and its parameters (see :mod:`.training`)."""

    name: str
    recipe: Recipe
    params: dict

    @property
    def num_heads(self) -> int:
        return self.recipe.num_heads

    def make_batch(self, rng, batch_size):
        """Sequences of the task it was trained on: ``(tokens, targets)``, each ``(batch, n)``."""
        return self.recipe.make_batch()(rng, batch_size)

    @property
    def tables(self):
        """The task's two vote tables ``(first, previous)``, each ``(vocab, vocab)``."""
        return self.recipe.make_batch().tables

    def forward(self, tokens, **kwargs):
        """:func:`mha_helpers.training.forward` with this model: ``(logits, weights)``."""
        return forward(self.params, tokens, self.num_heads, **kwargs)


def shipped_file() -> Path:
    """Where the package keeps the trained weights (inside the installed package)."""
    return Path(str(resources.files("mha_helpers") / "data" / "trained_heads.npz"))


def starting_params(recipe: Recipe) -> dict:
    """The recipe's starting weights (:func:`mha_helpers.training.init_model`, ``init_seed``)."""
    return init_model(
        recipe.vocab_size, recipe.seq_len, recipe.d_model, recipe.num_layers, seed=recipe.init_seed
    )


def train_recipe(recipe: Recipe, start=None) -> dict:
    """Train a model by ``recipe``; return its parameters (float64).

    ``start`` replaces the recipe's starting weights (to measure how sensitive training is to
    them; ``benchmarks/trained_models_spread.py``).
    """
    trained, _ = train(
        starting_params(recipe) if start is None else start,
        recipe.make_batch(),
        recipe.num_heads,
        steps=recipe.steps,
        lr=recipe.lr,
        warmup=recipe.warmup,
        batch_size=recipe.batch_size,
        seed=recipe.data_seed,
    )
    return trained


def save_trained_models(models: dict, path) -> Path:
    """Write ``{name: params}`` (names from :data:`RECIPES`) with their recipes to ``path``."""
    arrays = {f"{name}/{key}": w for name, params in models.items() for key, w in params.items()}
    recipes = {name: asdict(RECIPES[name]) for name in models}
    info = json.dumps({"format": FORMAT, "recipes": recipes}, sort_keys=True)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, info=np.array(info), **arrays)
    return path


def _read(path) -> tuple[dict, dict]:
    """``(info, {name: params})`` from a file written by :func:`save_trained_models`."""
    with np.load(path, allow_pickle=False) as data:
        info = json.loads(str(data["info"]))
        models: dict = {}
        for key in data.files:
            if "/" in key:
                name, param = key.split("/", 1)
                models.setdefault(name, {})[param] = data[key]
    return info, models


def load_trained_model(name: str, path=None) -> TrainedModel:
    """Load one of the shipped models by name (``"votes_two_heads"``, ``"votes_one_head"``)."""
    if name not in RECIPES:
        raise ValueError(
            f"no trained model named {name!r}; the course ships {', '.join(sorted(RECIPES))}"
        )
    path = shipped_file() if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the package's trained weights were not installed. Reinstall "
            f"the course, or remake them with: python -m mha_helpers.trained"
        )
    info, models = _read(path)
    if name not in models:
        raise ValueError(
            f"{path} holds no model {name!r}: remake it (python -m mha_helpers.trained)"
        )
    return TrainedModel(name, Recipe(**info["recipes"][name]), models[name])


def shown_numbers(params, recipe: Recipe) -> dict:
    """What the lessons print from a model, on :data:`TEST_SEQUENCES` held-out sequences.

    ``"attention"``: each head's mean attention on the first and on the previous token
    (``(h, 2)``: :func:`mha_helpers.tasks.role_scores`, columns previous, first);
    ``"accuracy"``: the fraction of answers right.
    """
    tokens, targets = recipe.make_batch()(np.random.default_rng(TEST_SEED), TEST_SEQUENCES)
    _, weights = forward(params, tokens, recipe.num_heads)
    return {
        "attention": role_scores(weights[0]),
        "accuracy": np.array(accuracy(params, tokens, targets, recipe.num_heads)),
    }


def compare_models(shipped: dict, fresh: dict, recipe: Recipe, tolerance=WEIGHT_TOLERANCE):
    """Differences between two parameter dicts beyond the tolerances: ``(problems, largest)``.

    ``problems`` is a list of sentences (empty when they agree); ``largest`` the largest weight
    difference found.
    """
    if set(shipped) != set(fresh):
        return [f"parameters {sorted(shipped)} differ from {sorted(fresh)}"], float("inf")
    problems, largest = [], 0.0
    for key in fresh:
        a, b = np.asarray(shipped[key]), np.asarray(fresh[key])
        if a.shape != b.shape:
            problems.append(f"{key}: shape {a.shape} shipped, {b.shape} retrained")
            continue
        diff = float(np.abs(a - b).max())
        largest = max(largest, diff)
        if not diff <= tolerance:  # also catches NaN
            problems.append(f"{key}: a weight differs by {diff:.3g} (tolerance {tolerance:g})")
    shown_a, shown_b = shown_numbers(shipped, recipe), shown_numbers(fresh, recipe)
    for what, tol in SHOWN_TOLERANCE.items():
        diff = float(np.abs(shown_a[what] - shown_b[what]).max())
        if not diff <= tol:
            problems.append(f"the lessons' {what} numbers differ by {diff:.3g} (tolerance {tol:g})")
    return problems, largest


def check_trained_models(path=None, tolerance=WEIGHT_TOLERANCE, report=print) -> list[str]:
    """Retrain every model and compare it with the file (default: the shipped one).

    Returns the problems found (empty: the file is reproduced); ``report`` gets one line per
    model.
    """
    path = shipped_file() if path is None else Path(path)
    if not path.is_file():
        return [f"{path} is missing: make it with python -m mha_helpers.trained"]
    info, models = _read(path)
    problems = []
    if info.get("format") != FORMAT:
        problems.append(f"{path} has format {info.get('format')!r}, expected {FORMAT}")
    for name, recipe in RECIPES.items():
        if name not in models:
            problems.append(f"{name}: not in {path}")
            continue
        if info["recipes"].get(name) != asdict(recipe):
            problems.append(f"{name}: the file was made with another recipe; remake it")
            continue
        found, largest = compare_models(models[name], train_recipe(recipe), recipe, tolerance)
        report(f"{name}: largest weight difference after retraining {largest:.2g}")
        problems += [f"{name}: {p}" for p in found]
    problems += [f"{name}: in the file but has no recipe" for name in set(models) - set(RECIPES)]
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mha_helpers.trained",
        description="Retrain the course's small trained models and write (or check) their file.",
    )
    parser.add_argument("--check", action="store_true", help="retrain and compare, write nothing")
    parser.add_argument("--path", type=Path, default=None, help="the file (default: the package's)")
    args = parser.parse_args(argv)
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        # These products are tiny: on a busy machine, BLAS threads waiting for a core made a
        # check take 2 minutes instead of seconds. The thread count must be set before NumPy
        # loads, so run again in a fresh process with one thread (the results do not change).
        one = {var: "1" for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        command = [sys.executable, "-m", "mha_helpers.trained", *sys.argv[1:]]
        return subprocess.call(
            command if argv is None else command[:3] + list(argv), env={**os.environ, **one}
        )
    if args.check:
        problems = check_trained_models(args.path)
        for p in problems:
            print("MISMATCH", p)
        print("reproduced within tolerance" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0
    models = {name: train_recipe(recipe) for name, recipe in RECIPES.items()}
    path = save_trained_models(models, shipped_file() if args.path is None else args.path)
    for name, params in models.items():
        shown = shown_numbers(params, RECIPES[name])
        print(f"{name}: test accuracy {float(shown['accuracy']):.1%}")
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
