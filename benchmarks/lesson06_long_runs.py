"""The longer training runs behind lesson 06, too slow for the notebook itself.

    .venv/bin/python benchmarks/lesson06_long_runs.py            # everything, about 5 min of CPU
    .venv/bin/python benchmarks/lesson06_long_runs.py --only vote
    .venv/bin/python benchmarks/lesson06_long_runs.py --only induction  # a few minutes
    .venv/bin/python benchmarks/lesson06_long_runs.py --only pruning    # about 10 s

Lesson 06 trains every model it shows in under half a minute. (Times are CPU time on one core
of the 2-core machine the course is built on; `benchmarks/README.md` records the last run.) Two of its questions need more
runs than that budget allows, so this script answers them with the lesson's own helpers and
set-ups, and the lesson quotes its output, labelled as such:

1. **vote**: how far one head gets on the vote-table task with more training. One head (h = 1)
   and two heads (h = 2), d_model = 32, for every combination of 3 vote tables
   (``table_seed`` 0-2) and 3 seeds (0-2), with budgets of 300, 1,000, 3,000 and 10,000 steps
   for h = 1 and 300 and 1,000 for h = 2 (each budget is its own run: the learning rate warms
   up for 100 steps, then decays to zero at the run's last step). Accuracy on 1,000 fresh
   test sequences per table.
2. **induction**: how many seeds learn the repeated-segment task under each loss (a loss on
   the second copy only, as in the lesson's section 5, or the next token at every position,
   section 6), 12 seeds each, 600 steps, and for each run the measurements that say *how* it
   solved the task: layer 0's previous-token score at the induction keys, its duplicate-token
   score, layer 1's induction score, and path-specific ablations: accuracy with layer 0's
   output removed from one reader at a time, layer 1's queries, keys or values (Q-, K- or
   V-composition) or the readout, everything else unchanged. Each path is ablated three ways
   (``mha_helpers.training.PATH_ABLATIONS``): zeroed, replaced by its mean over the test set
   at each position, and resampled from another test sequence (5 random pairings, without a
   sequence paired with itself; their mean is reported, and their spread).
3. **pruning**: whether the 16-head pruning of section 4 holds beyond the lesson's seed 0.
   The lesson's cell exactly (vote table 0, d_model = 64, 16 heads of width 4, 300 steps at
   batch 32; heads ranked greedily on 150 validation sequences, ``default_rng(999)``; accuracy
   on the first 250 of the 1,000 test sequences, ``default_rng(1000)``; 5 random orders from
   ``default_rng(3)``) for seeds 0-7: how many heads go for at most 1 point, and what as many
   removed at random cost on average.

Everything is seeded: the same machine and library versions give the same numbers. The
results are printed and written to ``benchmarks/results/lesson06_long_runs.json`` (not
committed); ``benchmarks/README.md`` records the last run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

# Before NumPy loads: the models are tiny, and one BLAS thread trains them several times faster
# than two (the same numbers either way, as lesson 06 sets it too). Set the variable to override.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mha_helpers.tasks import (  # noqa: E402
    duplicate_token_scores,
    induction_scores,
    previous_token_score,
    repeated_segment_task,
    segment_positions,
    vote_table_task,
)
from mha_helpers.training import (  # noqa: E402
    accuracy,
    accuracy_after_pruning,
    forward,
    init_model,
    pruning_order,
    train,
)

VOTE = dict(lr=1e-2, warmup=100, batch_size=64)  # lesson 06, section 2 (steps vary here)
VOTE_BUDGETS = {1: (300, 1000, 3000, 10000), 2: (300, 1000)}
INDUCTION = dict(steps=600, lr=1e-2, warmup=100, batch_size=32)  # lesson 06, sections 5 and 6
LEARNED = 0.8  # a run "learns the task" when it gets at least 80 % of the second copy right
READERS = {"1.q": "queries", "1.k": "keys", "1.v": "values", "readout": "readout"}
INDUCTION_SEEDS = 12
RESAMPLINGS = 5  # random pairings of test sequences for resample ablation
USED = 0.1  # a path is used when removing it costs at least 10 points of accuracy


def circuit(acc, without) -> str:
    """Name how a run composes its two layers, from its path-specific ablations.

    The main composition is the one of layer 1's queries, keys and values whose loss of layer
    0's output costs most accuracy; any other that costs at least ``USED`` is named too.
    """
    if acc < LEARNED:
        return "not learned"
    cost = {"Q": acc - without["1.q"], "K": acc - without["1.k"], "V": acc - without["1.v"]}
    main = max(cost, key=cost.get)
    also = [c for c in "QKV" if c != main and cost[c] >= USED]
    return f"{main}-composition" + (f", {' and '.join(also)} too" if also else "")


def vote_runs(log) -> list[dict]:
    rows = []
    for table_seed in range(3):
        make_votes = vote_table_task(vocab_size=16, seq_len=10, table_seed=table_seed)
        test = make_votes(np.random.default_rng(1000), 1000)
        for h, budgets in VOTE_BUDGETS.items():
            for steps in budgets:
                for seed in range(3):
                    t0 = time.perf_counter()
                    start = init_model(
                        vocab_size=16, seq_len=10, d_model=32, num_layers=1, seed=seed
                    )
                    model, losses = train(start, make_votes, h, steps=steps, seed=seed, **VOTE)
                    row = {
                        "table_seed": table_seed,
                        "h": h,
                        "steps": steps,
                        "seed": seed,
                        "accuracy": accuracy(model, *test, num_heads=h),
                        "final_loss": float(losses[-20:].mean()),
                        "seconds": time.perf_counter() - t0,
                    }
                    rows.append(row)
                    log(
                        f"  vote table {table_seed}  h = {h}  {steps:>6} steps  seed {seed}: "
                        f"{row['accuracy']:.1%}  ({row['seconds']:.1f} s)"
                    )
    return rows


PRUNING_SEEDS = 8


def pruning_runs(log) -> list[dict]:
    """Lesson 06's cell l06-17b for several seeds (the lesson shows seed 0)."""
    make_votes = vote_table_task(vocab_size=16, seq_len=10, table_seed=0)
    test_tokens, test_targets = make_votes(np.random.default_rng(1000), 1000)
    val_tokens, val_targets = make_votes(np.random.default_rng(999), 150)
    few_tokens, few_targets = test_tokens[:250], test_targets[:250]
    rows = []
    for seed in range(PRUNING_SEEDS):
        t0 = time.perf_counter()
        start = init_model(vocab_size=16, seq_len=10, d_model=64, num_layers=1, seed=seed)
        wide, _ = train(start, make_votes, 16, steps=300, seed=seed, **dict(VOTE, batch_size=32))
        order = pruning_order(wide, val_tokens, val_targets, num_heads=16)
        by_importance = accuracy_after_pruning(wide, few_tokens, few_targets, 16, order)
        shuffles = np.random.default_rng(3)
        at_random = np.array(
            [
                accuracy_after_pruning(wide, few_tokens, few_targets, 16, shuffles.permutation(16))
                for _ in range(5)
            ]
        )
        free = int(np.nonzero(by_importance >= by_importance[0] - 0.01)[0].max())
        row = {
            "seed": seed,
            "full": float(by_importance[0]),
            "free": free,
            "random_loss": float(by_importance[0] - at_random[:, free].mean()),
            "seconds": time.perf_counter() - t0,
        }
        rows.append(row)
        log(
            f"  pruning seed {seed}: full {row['full']:.1%}, {free} of 16 heads go for at most "
            f"1 point, random orders lose {row['random_loss']:.1%} ({row['seconds']:.1f} s)"
        )
    return rows


def pruning_table(rows) -> str:
    lines = [
        "Pruning a 16-head vote-task layer (lesson 06, section 4), one row per seed",
        f"{'seed':>4} {'full model':>10} {'heads free':>10} {'random orders lose':>19}",
    ]
    for r in rows:
        lines.append(f"{r['seed']:>4} {r['full']:>10.1%} {r['free']:>10} {r['random_loss']:>19.1%}")
    return "\n".join(lines)


def derangement(rng, n):
    """A random permutation of range(n) that moves every element (no sequence reads itself)."""
    while True:
        perm = rng.permutation(n)
        if not (perm == np.arange(n)).any():
            return perm


def ablations(model, tokens, targets) -> dict:
    """Accuracy with layer 0's output removed from each reader, zeroed, mean and resampled."""
    out = {}
    perms = [derangement(np.random.default_rng(s), len(tokens)) for s in range(RESAMPLINGS)]
    for reader, name in READERS.items():

        def acc(how, reader=reader):
            return accuracy(model, tokens, targets, num_heads=1, remove_paths=[(0, reader, how)])

        out[f"without_layer0_at_{name}"] = acc("zero")  # the lesson's first table: zeroed
        out[f"mean_at_{name}"] = acc("mean")
        resampled = [acc(lambda y, p=p: y[p]) for p in perms]
        out[f"resample_at_{name}"] = float(np.mean(resampled))
        out[f"resample_spread_at_{name}"] = (min(resampled), max(resampled))
    return out


def induction_runs(log) -> list[dict]:
    make_repeats = repeated_segment_task(vocab_size=24, seq_len=20, min_len=4, max_len=9)

    def make_next_token(rng, batch_size):  # the same sequences, the next token everywhere
        tokens, _ = make_repeats(rng, batch_size)
        targets = np.where(np.arange(20) < 19, np.roll(tokens, -1, axis=1), -1)
        return tokens, targets

    tokens, targets = make_repeats(np.random.default_rng(2000), 1000)  # the lesson's test set
    parts = segment_positions(targets)
    rows = []
    for loss, make_batch in (("second copy", make_repeats), ("every position", make_next_token)):
        for seed in range(INDUCTION_SEEDS):
            t0 = time.perf_counter()
            start = init_model(
                vocab_size=25, seq_len=20, d_model=32, num_layers=2, num_outputs=24, seed=seed
            )
            model, _ = train(start, make_batch, num_heads=1, seed=seed, **INDUCTION)
            _, weights = forward(model, tokens, num_heads=1)
            acc = accuracy(model, tokens, targets, num_heads=1)
            ablated = ablations(model, tokens, targets)
            without = {r: ablated[f"without_layer0_at_{READERS[r]}"] for r in READERS}
            label = circuit(acc, without)
            row = {
                "loss": loss,
                "seed": seed,
                "accuracy": acc,
                "previous_at_keys": float(
                    previous_token_score(weights[0], parts["induction_keys"])[0]
                ),
                "duplicate": float(duplicate_token_scores(weights[0], tokens, targets)[0]),
                "induction": float(induction_scores(weights[1], tokens, targets)[0]),
                **ablated,
                "label": label,
                "label_mean": circuit(acc, {r: ablated[f"mean_at_{READERS[r]}"] for r in READERS}),
                "label_resample": circuit(
                    acc, {r: ablated[f"resample_at_{READERS[r]}"] for r in READERS}
                ),
                "seconds": time.perf_counter() - t0,
            }
            rows.append(row)
            log(
                f"  induction, loss on {loss:<14} seed {seed}: {acc:.1%}  {label} / "
                f"{row['label_mean']} / {row['label_resample']}  ({row['seconds']:.1f} s)"
            )
    return rows


def vote_table(rows) -> str:
    lines = [
        "One head vs two on the vote-table task (d_model = 32; 3 tables x 3 seeds per cell)",
        f"{'h':>2} {'steps':>7} {'min':>7} {'mean':>7} {'max':>7}   every run (table, seed)",
    ]
    for h, budgets in VOTE_BUDGETS.items():
        for steps in budgets:
            accs = [r["accuracy"] for r in rows if r["h"] == h and r["steps"] == steps]
            every = " ".join(f"{a:.0%}" for a in accs)
            lines.append(
                f"{h:>2} {steps:>7} {min(accs):>7.1%} {np.mean(accs):>7.1%} "
                f"{max(accs):>7.1%}   {every}"
            )
    return "\n".join(lines)


def induction_table(rows) -> str:
    lines = [
        "Repeated-segment task, 2 layers x 1 head, 600 steps; accuracy on the second copy of "
        "the lesson's 1,000 test sequences",
        f"{'loss on':<15} {'seed':>4} {'accuracy':>9} {'L0 t-1 at keys':>15} "
        f"{'L0 earlier copy':>16} {'L1 induction':>13}   without layer 0 at layer 1's "
        f"{'queries':>8} {'keys':>6} {'values':>6} {'readout':>8}  how",
    ]
    for r in rows:
        lines.append(
            f"{r['loss']:<15} {r['seed']:>4} {r['accuracy']:>9.1%} "
            f"{r['previous_at_keys']:>15.2f} {r['duplicate']:>16.2f} {r['induction']:>13.2f} "
            f"{'':>28} {r['without_layer0_at_queries']:>8.1%} {r['without_layer0_at_keys']:>6.1%}"
            f" {r['without_layer0_at_values']:>6.1%} {r['without_layer0_at_readout']:>8.1%}"
            f"  {r['label']}"
        )
    for loss in ("second copy", "every position"):
        learned = sum(r["label"] != "not learned" for r in rows if r["loss"] == loss)
        total = sum(r["loss"] == loss for r in rows)
        where = {"second copy": "the second copy", "every position": "every position"}[loss]
        lines.append(
            f"loss on {where}: {learned} of {total} seeds learn the task "
            f"(accuracy >= {LEARNED:.0%})"
        )
    lines += [
        "",
        "The runs that learned the task, layer 0's output removed from one of layer 1's inputs "
        "three ways: zeroed / replaced by its mean / resampled (mean of 5 pairings, min-max)",
        f"{'loss on':<15} {'seed':>4} {'accuracy':>9}  {'queries':<34} {'keys':<34} "
        f"{'values':<34} how (zero / mean / resample)",
    ]
    for r in rows:
        if r["label"] == "not learned":
            continue
        cells = []
        for name in ("queries", "keys", "values"):
            lo, hi = r[f"resample_spread_at_{name}"]
            cells.append(
                f"{r[f'without_layer0_at_{name}']:.1%} / {r[f'mean_at_{name}']:.1%} / "
                f"{r[f'resample_at_{name}']:.1%} ({lo:.1%}-{hi:.1%})"
            )
        lines.append(
            f"{r['loss']:<15} {r['seed']:>4} {r['accuracy']:>9.1%}  "
            + " ".join(f"{c:<34}" for c in cells)
            + f" {r['label']} / {r['label_mean']} / {r['label_resample']}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        choices=("vote", "induction", "pruning"),
        action="append",
        help="run one part (repeatable); default: all three",
    )
    args = parser.parse_args(argv)
    parts = args.only or ["vote", "induction", "pruning"]
    t0 = time.perf_counter()
    results = {
        "machine": f"{platform.machine()}, {platform.system()}, Python "
        f"{platform.python_version()}, NumPy {np.__version__}"
    }
    tables = []
    if "vote" in parts:
        results["vote"] = vote_runs(print)
        tables.append(vote_table(results["vote"]))
    if "induction" in parts:
        results["induction"] = induction_runs(print)
        tables.append(induction_table(results["induction"]))
    if "pruning" in parts:
        results["pruning"] = pruning_runs(print)
        tables.append(pruning_table(results["pruning"]))
    results["seconds"] = time.perf_counter() - t0
    print()
    print("\n\n".join(tables))
    print(f"\ntotal: {results['seconds'] / 60:.1f} minutes ({results['machine']})")
    out = HERE / "results" / "lesson06_long_runs.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"written: {out.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
