"""A whole model's step on an accelerator: FLOPs, bytes, and the roofline bound (lesson 08).

One step of a decoder-only model processes ``new_tokens`` tokens in each of ``batch``
sequences that already have ``context`` tokens in their KV cache:

* prefill: ``context = 0``, ``new_tokens`` = the prompt length (all prompt tokens at once);
* decode: ``new_tokens = 1``, ``context`` = the tokens so far.

Every weight matrix is read from memory once per step, whatever the batch; every sequence's KV
cache is read once per step, and the new tokens' keys and values are written. Each byte is
counted once, so these are lower bounds on the traffic. FLOPs count the matrix products
(2 per multiply-add): 2 x the weight-matrix parameters per token, plus attention's
4 x layers x h x d_head per (query, key) pair. The roofline (Williams, Waterman and Patterson
2009) bounds the step's time from below by both::

    time >= max(FLOPs / peak FLOP/s, bytes / memory bandwidth)

Pope et al. 2022 ("Efficiently Scaling Transformer Inference", arXiv 2211.05102) analyse
inference this way; the H100 numbers are the datasheet's peaks (:data:`H100_SXM`).

>>> from mha_helpers import MODEL_CONFIGS
>>> c = step_cost(MODEL_CONFIGS["Llama 2 7B"], d_ff=11008, vocab_size=32000, context=0)
>>> round(c["weight_bytes"] / 1e9, 2)        # fp16 weight matrices read once per step
13.21
"""

from __future__ import annotations

import numpy as np

from .cost import ModelConfig, decoder_params
from .shapes import positive_int

__all__ = ["H100_SXM", "step_cost", "roofline_time", "batch_capacity"]

#: NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: FP16 Tensor Core 1,979 teraFLOPS
#: *with sparsity*, so about 990 for dense matrices; GPU memory bandwidth 3.35 TB/s; GPU memory
#: 80 GB, taken as 80 x 10^9 bytes like the TB/s (the lower reading: the memory holds 80 GiB).
H100_SXM = {"peak_flops": 1979e12 / 2, "bandwidth": 3.35e12, "memory": 80e9}


def _nonneg_int(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return int(value)


def step_cost(
    config: ModelConfig,
    d_ff,
    vocab_size,
    *,
    batch=1,
    context=0,
    new_tokens=1,
    bytes_per_element=2,
) -> dict:
    """FLOPs and bytes of one step of a decoder-only model (a ``ModelConfig`` with GQA/MHA/MQA
    heads), for ``batch`` sequences each adding ``new_tokens`` to a cache of ``context`` tokens.

    Returns a dict: ``flops`` (``matmul_flops`` + ``attention_flops``), ``weight_bytes``,
    ``cache_read_bytes``, ``cache_write_bytes``, ``bytes`` (their sum) and ``intensity``
    (FLOPs per byte). A sliding window caps how many cached positions are read and attended.
    The input embedding is a table look-up, not a matrix product: it is neither counted in the
    FLOPs nor read whole (a few rows per step, left out).
    """
    if config.num_kv_heads is None or config.encoder_only:
        raise ValueError(
            f"{config.name}: step_cost needs a decoder with num_kv_heads key/value heads "
            f"(MHA, GQA or MQA); got kind {config.kind!r}"
        )
    batch = positive_int(batch, "batch")
    context = _nonneg_int(context, "context")
    new_tokens = positive_int(new_tokens, "new_tokens")
    params = decoder_params(
        config.d_model,
        config.num_layers,
        config.num_heads,
        config.num_kv_heads,
        config.d_head,
        positive_int(d_ff, "d_ff"),
        positive_int(vocab_size, "vocab_size"),
    )
    matmul_params = params - vocab_size * config.d_model  # (all but the embedding table)
    tokens = batch * new_tokens
    # Query t (positions context .. context + new_tokens - 1) meets keys 0 .. t, or the last
    # `window` of them.
    t = np.arange(context, context + new_tokens)
    keys = t + 1 if config.sliding_window is None else np.minimum(t + 1, config.sliding_window)
    pairs = int(keys.sum()) * batch
    matmul_flops = 2 * matmul_params * tokens
    attention_flops = 4 * config.num_layers * config.num_heads * config.d_head * pairs
    per_token = config.kv_cache_bytes_per_token(bytes_per_element)
    cached = context if config.sliding_window is None else min(context, config.sliding_window)
    out = {
        "matmul_flops": matmul_flops,
        "attention_flops": attention_flops,
        "flops": matmul_flops + attention_flops,
        "weight_bytes": matmul_params * bytes_per_element,
        "cache_read_bytes": per_token * cached * batch,
        "cache_write_bytes": per_token * tokens,
    }
    out["bytes"] = out["weight_bytes"] + out["cache_read_bytes"] + out["cache_write_bytes"]
    out["intensity"] = out["flops"] / out["bytes"]
    return out


def roofline_time(
    flops, n_bytes, peak_flops=H100_SXM["peak_flops"], bandwidth=H100_SXM["bandwidth"]
):
    """Lower bounds on a step's time, in seconds: ``compute`` = FLOPs / peak, ``memory`` =
    bytes / bandwidth, ``time`` = the larger, and ``bound``: which one it is.

    >>> roofline_time(1e12, 3.35e9)["memory"]       # 3.35 GB at 3.35 TB/s: 1 ms
    0.001
    """
    if not flops >= 0 or not n_bytes >= 0 or not peak_flops > 0 or not bandwidth > 0:
        raise ValueError(
            f"flops and n_bytes must be >= 0, peak_flops and bandwidth > 0; got {flops!r}, "
            f"{n_bytes!r}, {peak_flops!r}, {bandwidth!r}"
        )
    compute, memory = flops / peak_flops, n_bytes / bandwidth
    return {
        "compute": compute,
        "memory": memory,
        "time": max(compute, memory),
        "bound": "compute" if compute > memory else "memory",
    }


def batch_capacity(
    config: ModelConfig,
    d_ff,
    vocab_size,
    context,
    memory_bytes=H100_SXM["memory"],
    bytes_per_element=2,
) -> int:
    """The most sequences of ``context`` tokens whose KV caches fit in ``memory_bytes`` beside
    the model's weights (every parameter stored once, the embedding table included).

    An upper bound: activations, workspace and fragmentation take memory too. A batch larger
    than this does not fit on the device, so a roofline read at such a batch describes no
    real step.

    >>> from mha_helpers import MODEL_CONFIGS
    >>> batch_capacity(MODEL_CONFIGS["Llama 2 7B"], 11008, 32000, context=4096)   # 80 GB H100
    30
    """
    if config.num_kv_heads is None or config.encoder_only:
        raise ValueError(
            f"{config.name}: batch_capacity needs a decoder with num_kv_heads key/value heads "
            f"(MHA, GQA or MQA); got kind {config.kind!r}"
        )
    if not memory_bytes > 0:
        raise ValueError(f"memory_bytes must be positive, got {memory_bytes!r}")
    params = decoder_params(
        config.d_model,
        config.num_layers,
        config.num_heads,
        config.num_kv_heads,
        config.d_head,
        positive_int(d_ff, "d_ff"),
        positive_int(vocab_size, "vocab_size"),
    )
    free = memory_bytes - params * bytes_per_element
    per_sequence = config.cache_bytes(positive_int(context, "context"), bytes_per_element)
    return max(int(free // per_sequence), 0)
