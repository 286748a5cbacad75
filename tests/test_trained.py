"""The trained models shipped inside the package (mha_helpers/trained.py): they load from the
installed package alone, and retraining them with the documented command reproduces them within
the stated tolerance, on this machine's kernels and on the generic ones."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from mha_helpers.trained import (
    RECIPES,
    SHOWN_TOLERANCE,
    WEIGHT_TOLERANCE,
    check_trained_models,
    compare_models,
    load_trained_model,
    shipped_file,
    shown_numbers,
    starting_params,
)
from mha_helpers.training import init_model

ONE_THREAD = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def _generic_kernels() -> dict:
    import numpy._core._multiarray_umath as umath

    return {
        "OPENBLAS_CORETYPE": "ARMV8" if platform.machine() in ("aarch64", "arm64") else "Prescott",
        "NPY_DISABLE_CPU_FEATURES": " ".join(
            f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)
        ),
    }


def _check_command(extra_env: dict, *args) -> subprocess.CompletedProcess:
    """The documented command, in a fresh process (the kernels are chosen when NumPy loads)."""
    return subprocess.run(
        [sys.executable, "-m", "mha_helpers.trained", "--check", *args],
        env={**os.environ, **ONE_THREAD, **extra_env},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_shipped_model_loads_with_the_shapes_of_its_recipe(name):
    model = load_trained_model(name)
    recipe = RECIPES[name]
    assert model.recipe == recipe and model.num_heads == recipe.num_heads
    fresh = init_model(recipe.vocab_size, recipe.seq_len, recipe.d_model, recipe.num_layers)
    assert {k: w.shape for k, w in model.params.items()} == {k: w.shape for k, w in fresh.items()}
    assert all(w.dtype == np.float64 and np.isfinite(w).all() for w in model.params.values())
    # trained, not the starting weights
    start = starting_params(recipe)
    assert np.abs(model.params["layers.0.w_q"] - start["layers.0.w_q"]).max() > 0.1


def test_the_file_is_small_and_inside_the_package():
    path = shipped_file()
    assert path.parent.parent.name == "mha_helpers" and path.is_file()
    assert path.stat().st_size < 200_000


def test_retraining_reproduces_the_shipped_models():
    run = _check_command({})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "reproduced within tolerance" in run.stdout
    assert run.stdout.count("largest weight difference") == len(RECIPES)


def test_retraining_on_generic_kernels_reproduces_the_shipped_models():
    run = _check_command(_generic_kernels())
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_comparison_fails_beyond_the_tolerance_and_passes_within_it():
    model = load_trained_model("votes_two_heads")
    params = model.params
    assert compare_models(params, params, model.recipe) == ([], 0.0)
    for factor, fails in ((0.5, False), (2.0, True)):
        moved = {k: w.copy() for k, w in params.items()}
        moved["layers.0.w_k"][3, 5] += factor * WEIGHT_TOLERANCE
        problems, largest = compare_models(params, moved, model.recipe)
        assert bool(problems) == fails and largest == pytest.approx(factor * WEIGHT_TOLERANCE)
    broken = {k: w.copy() for k, w in params.items()}
    broken["embed"][0, 0] = np.nan
    assert compare_models(params, broken, model.recipe)[0]
    # a head swapped for another changes what the lessons show (which head looks where)
    d_head = model.recipe.d_model // model.num_heads
    order = np.r_[d_head : 2 * d_head, 0:d_head]
    swapped = dict(params)
    for w in ("w_q", "w_k", "w_v"):
        swapped[f"layers.0.{w}"] = params[f"layers.0.{w}"][:, order]
    swapped["layers.0.w_o"] = params["layers.0.w_o"][order]
    problems, _ = compare_models(params, swapped, model.recipe, tolerance=np.inf)
    assert any("attention numbers differ" in p for p in problems)


def test_the_check_refuses_a_file_made_with_another_recipe(tmp_path):
    with np.load(shipped_file()) as data:
        arrays = {k: data[k] for k in data.files}
    info = json.loads(str(arrays.pop("info")))
    for recipe in info["recipes"].values():
        recipe["steps"] += 1
    np.savez(tmp_path / "other.npz", info=np.array(json.dumps(info)), **arrays)
    problems = check_trained_models(tmp_path / "other.npz", report=lambda line: None)
    assert len(problems) == len(RECIPES) and all("another recipe" in p for p in problems)
    run = _check_command({}, "--path", str(tmp_path / "missing.npz"))
    assert run.returncode == 1 and "missing" in run.stdout


def test_the_lessons_claims_hold_for_the_shipped_models():
    """Lessons 02 and 03 say: each head of the two-head model attends to one place, a different
    place per head (the first token, the previous token), and it answers every test position
    right; the one-head model splits its attention and answers fewer."""
    two, one = load_trained_model("votes_two_heads"), load_trained_model("votes_one_head")
    shown = shown_numbers(two.params, two.recipe)
    prev, first = shown["attention"].T  # (h,) each
    assert sorted(np.round(first, 2).tolist()) == [0.0, 1.0]
    assert sorted(np.round(prev, 2).tolist()) == [0.0, 1.0]
    assert shown["accuracy"] > 0.99
    one_shown = shown_numbers(one.params, one.recipe)
    assert 0.1 < one_shown["attention"][0, 0] < 0.9 and 0.1 < one_shown["attention"][0, 1] < 0.9
    assert one_shown["accuracy"] < shown["accuracy"] - 0.2
    assert set(SHOWN_TOLERANCE) == set(shown)


def test_an_unknown_name_is_explained():
    with pytest.raises(ValueError, match="votes_two_heads"):
        load_trained_model("gpt2")
