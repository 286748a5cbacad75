"""Helper attention against its limits.

For each (n, d_model, h) and dtype, four contenders are timed in interleaved rounds:

* ``helper``: ``mha_helpers.multi_head_attention(x, w_q, w_k, w_v, w_o, h)`` (self-attention,
  no mask, one sequence), as the lessons call it;
* ``floor``: the same matrix products timed alone, on ready-made operands of the same shapes
  and dtype: x @ w_q, x @ w_k, x @ w_v, the batched Q K^T and A V over all heads, and
  concat @ w_o. Nothing else (no softmax, no reshapes, no checks), so no unfused NumPy
  implementation can be faster than this;
* ``naive``: a per-head Python loop (slice the head's columns, attend, concatenate);
* ``torch``: ``torch.nn.MultiheadAttention`` loaded with the same weights, with
  ``torch.set_num_threads`` equal to NumPy's BLAS thread count, called under
  ``torch.inference_mode()`` with ``need_weights=False`` (its fastest path, a fused attention
  kernel). Reported as skipped when PyTorch is not installed.

``softmax`` (the helper's softmax passes over the (h, n, n) scores: exp, row sums, divide) is
timed in the same rounds to show what limits the helper once the scores no longer fit in cache.
"""

from __future__ import annotations

import numpy as np
from common import (
    INFO,
    SKIPPED,
    Row,
    fmt_time,
    interleaved,
    judged,
    median,
    paired_ratio,
    set_blas_threads,
)

from mha_helpers import multi_head_attention

SECTION = "attention"
CONFIGS = [(128, 256, 8), (512, 512, 8), (1024, 768, 12)]
DTYPES = [np.float32, np.float64]
FLOOR_TARGET = 1.3  # helper / matrix-product floor, at n <= 512
TORCH_TARGET = 1.5  # helper / torch.nn.MultiheadAttention, at n <= 512
TARGET_MAX_N = 512


def naive_per_head(x, w_q, w_k, w_v, w_o, num_heads):
    """The loop the helper avoids: one head at a time, each slicing its own columns."""
    d_head = x.shape[1] // num_heads
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    outs = []
    for i in range(num_heads):
        cols = slice(i * d_head, (i + 1) * d_head)
        scores = q[:, cols] @ k[:, cols].T / np.sqrt(d_head).astype(x.dtype)  # (n, n)
        scores = np.exp(scores - scores.max(axis=1, keepdims=True))
        weights = scores / scores.sum(axis=1, keepdims=True)
        outs.append(weights @ v[:, cols])  # (n, d_head)
    return np.concatenate(outs, axis=1) @ w_o  # (n, d_model)


def _torch_module(w_q, w_k, w_v, w_o, num_heads, threads):
    """torch.nn.MultiheadAttention holding our weights (torch applies weights as x @ W^T)."""
    try:
        import torch
    except ImportError:
        return None, None
    if threads:
        torch.set_num_threads(threads)
    d_model = w_q.shape[0]
    dtype = torch.float32 if w_q.dtype == np.float32 else torch.float64
    mha = torch.nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True, dtype=dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([w_q.T, w_k.T, w_v.T])))
        mha.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(w_o.T)))
    mha.eval()
    return torch, mha


def _contenders(n, d_model, h, dtype, threads):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d_model)).astype(dtype)
    w_q, w_k, w_v, w_o = (
        rng.normal(scale=d_model**-0.5, size=(d_model, d_model)).astype(dtype) for _ in range(4)
    )
    d_head = d_model // h
    # Ready-made operands of the floor's products, contiguous (the best case for BLAS).
    qh = rng.normal(size=(h, n, d_head)).astype(dtype)  # (h, n, d_head)
    kh = rng.normal(size=(h, n, d_head)).astype(dtype)  # (h, n, d_head)
    vh = rng.normal(size=(h, n, d_head)).astype(dtype)  # (h, n, d_head)
    a = rng.random(size=(h, n, n)).astype(dtype)  # (h, n, n) weights
    concat = rng.normal(size=(n, d_model)).astype(dtype)  # (n, d_model)
    scores = rng.normal(size=(h, n, n)).astype(dtype)  # (h, n, n) scores

    def floor():
        x @ w_q
        x @ w_k
        x @ w_v
        qh @ kh.swapaxes(-1, -2)  # (h, n, n)
        a @ vh  # (h, n, d_head)
        concat @ w_o

    ones = np.ones(n, dtype=dtype)

    def softmax_alone():  # the helper's passes over the scores when no shift is needed
        e = np.exp(scores)  # (h, n, n)
        e /= (e @ ones)[..., None]

    contenders = {
        "helper": lambda: multi_head_attention(x, w_q, w_k, w_v, w_o, h),
        "floor": floor,
        "naive": lambda: naive_per_head(x, w_q, w_k, w_v, w_o, h),
        "softmax": softmax_alone,
    }
    # Same answer before timing: a fast wrong contender would be worthless.
    y = multi_head_attention(x, w_q, w_k, w_v, w_o, h)
    tol = dict(rtol=1e-3, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(naive_per_head(x, w_q, w_k, w_v, w_o, h), y, **tol)
    torch, mha = _torch_module(w_q, w_k, w_v, w_o, h, threads)
    if mha is not None:
        xt = torch.from_numpy(x)[None]  # (1, n, d_model)

        def torch_forward():
            with torch.inference_mode():
                return mha(xt, xt, xt, need_weights=False)[0]

        np.testing.assert_allclose(torch_forward()[0].numpy(), y, **tol)
        contenders["torch"] = torch_forward
    return contenders, torch


def run(args, blas) -> list[Row]:
    """Every size and dtype at 1 BLAS thread, then at NumPy's own thread count (if more).

    One thread measures the implementation with the least noise on a shared machine; the
    default thread count is what a learner gets. ``--threads N`` measures only N.
    """
    default = blas.get("threads") or 1
    thread_counts = [args.threads] if args.threads else sorted({1, default})
    rows = []
    try:
        for threads in thread_counts:
            if not set_blas_threads(threads) and threads != default:
                rows.append(
                    Row(
                        SECTION,
                        f"{threads} thread(s)",
                        "cannot set NumPy's BLAS threads",
                        "",
                        SKIPPED,
                    )
                )
                continue
            rows += _run_threads(args, threads)
    finally:
        set_blas_threads(default)
    return rows


def _run_threads(args, threads) -> list[Row]:
    rows = []
    rounds = 5 if args.quick else 15
    configs = CONFIGS[:2] if args.quick else CONFIGS
    for n, d_model, h in configs:
        for dtype in DTYPES:
            dname = np.dtype(dtype).name
            label = f"n={n} d_model={d_model} h={h} {dname}, {threads} thread{'s' * (threads > 1)}"
            contenders, torch = _contenders(n, d_model, h, dtype, threads)
            s = interleaved(contenders, rounds=rounds)
            times = {k: median(v) for k, v in s.items()}
            targeted = n <= TARGET_MAX_N
            r_floor = paired_ratio(s, "helper", "floor")
            values = {
                "n": n,
                "d_model": d_model,
                "h": h,
                "dtype": dname,
                "rounds": rounds,
                "threads": threads,
                "median_seconds": times,
                "helper_over_floor": r_floor,
            }
            rows.append(
                Row(
                    SECTION,
                    f"helper / matmul floor, {label}",
                    f"{r_floor:.2f}x ({fmt_time(times['helper'])} vs {fmt_time(times['floor'])})",
                    f"<= {FLOOR_TARGET}x" if targeted else "report",
                    judged(r_floor <= FLOOR_TARGET) if targeted else INFO,
                    values,
                )
            )
            r_naive = paired_ratio(s, "naive", "helper")
            rows.append(
                Row(
                    SECTION,
                    f"naive per-head loop / helper, {label}",
                    f"{r_naive:.2f}x ({fmt_time(times['naive'])})",
                    "report",
                    INFO,
                    {"naive_over_helper": r_naive},
                )
            )
            if "torch" in s:
                r_torch = paired_ratio(s, "helper", "torch")
                rows.append(
                    Row(
                        SECTION,
                        f"helper / torch MHA, {label}",
                        f"{r_torch:.2f}x (torch {fmt_time(times['torch'])}, {torch.__version__})",
                        f"<= {TORCH_TARGET}x" if targeted else "report",
                        judged(r_torch <= TORCH_TARGET) if targeted else INFO,
                        {
                            "helper_over_torch": r_torch,
                            "torch_version": torch.__version__,
                            "torch_threads": torch.get_num_threads(),
                        },
                    )
                )
            else:
                rows.append(
                    Row(
                        SECTION,
                        f"helper / torch MHA, {label}",
                        "PyTorch not installed",
                        f"<= {TORCH_TARGET}x" if targeted else "report",
                        SKIPPED,
                    )
                )
            if not targeted:
                share = paired_ratio(s, "softmax", "helper")
                score_mib = h * n * n * np.dtype(dtype).itemsize / 2**20
                rows.append(
                    Row(
                        SECTION,
                        f"what limits it, {label}",
                        f"the softmax's passes over the (h, n, n) scores alone take {share:.0%} of "
                        f"the helper's time: the scores are {score_mib:.0f} MiB, far larger than "
                        f"the caches, so each pass runs at memory speed"
                        + (
                            f", on one core while the matrix products use {threads}"
                            if threads > 1
                            else ""
                        ),
                        "report",
                        INFO,
                        {"softmax_share": share, "scores_mib": score_mib},
                    )
                )
    return rows
