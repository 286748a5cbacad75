"""Lesson 08's other helpers: latent attention (MLA), sliding windows, the decode roofline.

MLA's absorbed form (the latent cache only) must equal its unabsorbed form (every head's keys
and values built), and a step-by-step decode from the latent cache must equal the full pass.
A rolling-buffer cache must give what sliding-window attention over the whole sequence gives.
The roofline numbers must follow from the formulas written out independently here.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_helpers import (
    H100_SXM,
    MODEL_CONFIGS,
    RollingKVCache,
    batch_capacity,
    causal_mask,
    mla_absorption_costs,
    mla_attention,
    mla_attention_from_cache,
    mla_cache_elements,
    mla_fold_weights,
    mla_latent_cache,
    mla_weights,
    receptive_field,
    roofline_time,
    rope,
    scaled_dot_product_attention,
    sink_window_mask,
    sliding_window_mask,
    step_cost,
    streaming_attention,
)
from mha_helpers.cost import decoder_params


@pytest.mark.parametrize(
    "seed, n, d_model, h, d_head, d_c, d_r", [(0, 6, 16, 4, 4, 8, 4), (1, 9, 12, 3, 5, 6, 2)]
)
def test_mla_absorbed_and_unabsorbed_forms_agree(seed, n, d_model, h, d_head, d_c, d_r):
    rng = np.random.default_rng(seed)
    w = mla_weights(rng, d_model, h, d_head, d_c, d_r)
    x = rng.normal(size=(n, d_model))
    for mask in (None, causal_mask(n)):
        full = mla_attention(x, w, h, mask=mask)
        absorbed = mla_attention(x, w, h, mask=mask, absorbed=True)
        assert full.shape == (n, d_model)
        np.testing.assert_allclose(absorbed, full, rtol=1e-10, atol=1e-12)


def test_mla_is_multi_head_attention_on_reconstructed_keys_and_values():
    """Written out independently: build each head's K and V from the latent, attend, project."""
    rng = np.random.default_rng(2)
    n, d_model, h, d_head, d_c, d_r = 5, 8, 2, 3, 4, 2
    w = mla_weights(rng, d_model, h, d_head, d_c, d_r)
    x = rng.normal(size=(n, d_model))
    pos = np.arange(n)
    c = x @ w["w_dkv"]
    k_r = rope(x @ w["w_kr"], pos)
    heads = []
    for i in range(h):
        cols = slice(i * d_head, (i + 1) * d_head)
        rcols = slice(i * d_r, (i + 1) * d_r)
        q = np.concatenate([x @ w["w_q"][:, cols], rope(x @ w["w_qr"][:, rcols], pos)], axis=1)
        k = np.concatenate([c @ w["w_uk"][:, cols], k_r], axis=1)
        out, _ = scaled_dot_product_attention(q, k, c @ w["w_uv"][:, cols], causal_mask(n))
        heads.append(out)
    expected = np.concatenate(heads, axis=1) @ w["w_o"]
    np.testing.assert_allclose(mla_attention(x, w, h, mask=causal_mask(n)), expected, rtol=1e-12)


def test_mla_decodes_token_by_token_from_the_latent_cache():
    rng = np.random.default_rng(3)
    n, d_model, h = 7, 16, 4
    w = mla_weights(rng, d_model, h, 4, 8, 4)
    x = rng.normal(size=(n, d_model))
    full = mla_attention(x, w, h, mask=causal_mask(n))
    c, k_r = mla_latent_cache(x, w)
    assert c.shape == (n, 8) and k_r.shape == (n, 4)
    for t in range(n):
        step = mla_attention_from_cache(
            x[t : t + 1], np.array([t]), (c[: t + 1], k_r[: t + 1]), w, h
        )
        np.testing.assert_allclose(step, full[t : t + 1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_mla_regrouped_and_folded_forms_equal_the_unabsorbed_one(seed):
    """The regrouped products (the helper's absorbed path, as implementations compute it) and
    the folded matrices (the proof) both give the unabsorbed layer's output, for random sizes,
    positions and masks, to float64 round-off."""
    rng = np.random.default_rng(100 + seed)
    n, d_model, h = rng.integers(2, 9), rng.integers(4, 17), rng.integers(1, 5)
    d_head, d_c, d_r = rng.integers(1, 7), rng.integers(1, 9), 2 * rng.integers(1, 4)
    w = mla_weights(rng, d_model, h, d_head, d_c, d_r)
    x = rng.normal(size=(n, d_model))
    mask = causal_mask(n) & (rng.random((n, n)) < 0.7) | np.eye(n, dtype=bool)
    unabsorbed = mla_attention(x, w, h, mask=mask)
    c, k_r = mla_latent_cache(x, w)
    regrouped = mla_attention_from_cache(x, np.arange(n), (c, k_r), w, h, mask=mask)
    np.testing.assert_allclose(regrouped, unabsorbed, rtol=1e-10, atol=1e-12)
    # Folded: one (d_model, d_c) matrix per head for the scores, one (d_c, d_model) for the output.
    w_q_folded, w_o_folded = mla_fold_weights(w, h)
    assert w_q_folded.shape == (h, d_model, d_c) and w_o_folded.shape == (h, d_c, d_model)
    q_r = rope((x @ w["w_qr"]).reshape(n, h, d_r).transpose(1, 0, 2), np.arange(n))
    scores = (x @ w_q_folded @ c.T + q_r @ k_r.T) / np.sqrt(d_head + d_r)  # (h, n, n)
    e = np.exp(np.where(mask, scores, -np.inf) - scores.max(axis=-1, keepdims=True))
    a = e / e.sum(axis=-1, keepdims=True)
    folded = sum((a[i] @ c) @ w_o_folded[i] for i in range(h))  # (n, d_model)
    np.testing.assert_allclose(folded, unabsorbed, rtol=1e-10, atol=1e-12)


def test_mla_absorption_costs_count_the_arrays_and_deepseek_v2s_shape():
    # The parameter counts are the sizes of the arrays: the folded ones from mla_fold_weights,
    # the pieces from mla_weights (no query compression: d_query_latent = d_model).
    d_model, h, d_head, d_c, d_r = 12, 3, 4, 5, 2
    w = mla_weights(np.random.default_rng(0), d_model, h, d_head, d_c, d_r)
    costs = mla_absorption_costs(d_model, h, d_head, d_c, d_r)
    w_q_folded, w_o_folded = mla_fold_weights(w, h)
    assert costs["query_params"] == {
        "apart": w["w_q"].size + w["w_uk"].size,
        "folded": w_q_folded.size,
    }
    assert costs["output_params"] == {
        "apart": w["w_uv"].size + w["w_o"].size,
        "folded": w_o_folded.size,
    }
    # DeepSeek-V2 (arXiv 2405.04434, §3.1.2): d_model 5120, 128 heads of 128, d_c 512,
    # d'_c 1536, d_h^R 64. The figures of issue 34, item 8 and 9, worked out by hand:
    ds = mla_absorption_costs(5120, 128, 128, 512, 64, d_query_latent=1536)
    assert ds["query_params"] == {"apart": 1536 * 16384 + 512 * 16384, "folded": 128 * 1536 * 512}
    assert round(ds["query_params"]["folded"] / 1e6) == 101  # against 25 M + 8.4 M
    assert round(ds["output_params"]["folded"] / 1e6) == 336  # against 8.4 M + 84 M
    assert round(ds["output_flops"]["apart"] / 1e6) == 185
    assert round(ds["output_flops"]["folded"] / 1e6) == 671
    flops = ds["attention_flops_per_cached_token"]
    assert flops["absorbed"] == 128 * (2 * 576 + 2 * 512) == 278_528
    assert flops["mha"] == 65_536 and flops["absorbed"] / flops["mha"] == 4.25
    # About 242 FLOPs per byte of cache read (576 fp16 numbers per token and layer).
    assert round(flops["absorbed"] / (2 * ds["cached_numbers_per_token"])) == 242


def test_rope_scores_depend_only_on_the_distance():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(1, 6)), rng.normal(size=(1, 6))
    s = [rope(a, np.array([p])) @ rope(b, np.array([p + 3])).T for p in (0, 5, 40)]
    np.testing.assert_allclose(s[1], s[0])
    np.testing.assert_allclose(s[2], s[0])
    np.testing.assert_allclose(np.linalg.norm(rope(a, np.array([7]))), np.linalg.norm(a))
    with pytest.raises(ValueError, match="even"):
        rope(np.ones((2, 3)), np.arange(2))


def test_mla_refuses_mismatched_weights():
    rng = np.random.default_rng(5)
    w = mla_weights(rng, 8, 2, 3, 4, 2)
    w["w_uv"] = w["w_uv"][:, :-1]
    with pytest.raises(ValueError, match="w_uv has shape"):
        mla_attention(rng.normal(size=(3, 8)), w, 2)
    with pytest.raises(ValueError, match="missing"):
        mla_attention(rng.normal(size=(3, 8)), {"w_q": w["w_q"]}, 2)


def test_deepseek_v2_cache_per_token():
    ds = MODEL_CONFIGS["DeepSeek-V2"]
    assert (
        mla_cache_elements(512, 64, ds.num_layers)
        == (512 + 64) * 60
        == ds.kv_cache_bytes_per_token(1)
    )


def test_sliding_window_mask_and_sinks():
    n, window = 7, 3
    mask = sliding_window_mask(n, window)
    for i in range(n):
        assert [j for j in range(n) if mask[i, j]] == list(range(max(0, i - window + 1), i + 1))
    assert np.array_equal(sliding_window_mask(n, n), causal_mask(n))
    sinks = sink_window_mask(n, 2, 1)
    assert (
        sinks[:, 0].all()
        and sinks[6].sum() == 3
        and np.array_equal(sink_window_mask(n, 2, 0), sliding_window_mask(n, 2))
    )
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(4, 0)


@pytest.mark.parametrize("n, window, layers", [(20, 3, 5), (40, 4, 12), (9, 9, 2)])
def test_receptive_field_grows_by_window_minus_one_per_layer(n, window, layers):
    field = receptive_field(n, window, layers)
    for depth in range(1, layers + 1):
        expected = np.minimum(np.arange(n), depth * (window - 1)) + 1
        assert np.array_equal(field[depth - 1], expected)


@pytest.mark.parametrize("sinks", [0, 2])
def test_rolling_buffer_decode_equals_window_attention(sinks):
    rng = np.random.default_rng(7)
    n, window, d = 17, 4, 3
    q, k, v = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, 2))
    expected, _ = scaled_dot_product_attention(q, k, v, sink_window_mask(n, window, sinks))
    cache = RollingKVCache(window, d, 2, sinks=sinks)
    for t in range(n):
        cache.append(k[t], v[t])
        held = cache.filled()
        assert held.sum() == min(t + 1, window + sinks)
        assert cache.keys.shape == (window + sinks, d)  # fixed memory, however long the stream
        out, _ = scaled_dot_product_attention(q[t : t + 1], cache.keys[held], cache.values[held])
        np.testing.assert_allclose(out[0], expected[t], rtol=1e-12)
    with pytest.raises(ValueError, match=r"expected \(3,\)"):
        cache.append(np.ones(2), np.ones(2))


def test_cache_positions_are_streamingllms_example():
    """Xiao et al. 2023, §3.2: a cache holding tokens [0, 1, 2, 3, 6, 7, 8] that decodes token 9
    assigns positions [0, 1, 2, 3, 4, 5, 6, 7], not the text's [0, 1, 2, 3, 6, 7, 8, 9]."""
    cache = RollingKVCache(window=4, d_k=2, d_v=1, sinks=4)
    for t in range(10):
        cache.append(np.full(2, float(t)), np.zeros(1))
    by_time = dict(zip(cache.positions(), cache.cache_positions()))
    assert by_time == {0: 0, 1: 1, 2: 2, 3: 3, 6: 4, 7: 5, 8: 6, 9: 7}


@pytest.mark.parametrize("sinks, window", [(1, 3), (4, 4), (2, 6)])
def test_streaming_attention_sees_a_short_sequence_however_long_the_stream(sinks, window):
    """At every step the scores are those of a fresh sequence made of the cached tokens, in time
    order, at positions 0, 1, 2, ... (computed here with rope and attention directly). Before
    anything is evicted that is ordinary causal RoPE attention; after, no position exceeds
    sinks + window - 1 while the text's positions keep growing."""
    rng = np.random.default_rng(sinks * 10 + window)
    n, d = 60, 4
    q, k, v = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, 3))
    cache = RollingKVCache(window, d_k=d, d_v=3, sinks=sinks)
    full_rope, _ = scaled_dot_product_attention(
        rope(q, np.arange(n)), rope(k, np.arange(n)), v, causal_mask(n)
    )
    for t in range(n):
        cache.append(k[t], v[t])  # keys stored before rotation
        out, weights = streaming_attention(q[t], cache)
        kept = np.sort(cache.positions())  # the cached tokens, in time order
        fresh = np.arange(len(kept))  # their positions in a short sequence
        expected, _ = scaled_dot_product_attention(
            rope(q[t : t + 1], fresh[-1:]), rope(k[kept], fresh), v[kept]
        )
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)
        assert weights.shape == (1, len(kept)) and cache.cache_positions().max() == len(kept) - 1
        assert cache.cache_positions().max() <= sinks + window - 1
        if t < sinks + window:  # nothing evicted yet: the text's own positions
            np.testing.assert_allclose(out[0], full_rope[t], rtol=1e-12, atol=1e-14)
    # After eviction, keys rotated by their positions in the text give other scores: the
    # distance from the last query to the first sink is n - 1 = 59, not sinks + window - 1.
    held = cache.filled()
    pre_rotated, _ = scaled_dot_product_attention(
        rope(q[-1:], np.array([n - 1])),
        rope(k[cache.positions()], cache.positions()),
        cache.values[held],
    )
    assert np.abs(pre_rotated - out).max() > 1e-3


def test_streaming_attention_refuses_bad_input():
    cache = RollingKVCache(window=2, d_k=4, d_v=1)
    with pytest.raises(ValueError, match="empty"):
        streaming_attention(np.ones(4), cache)
    cache.append(np.ones(4), np.ones(1))
    with pytest.raises(ValueError, match=r"expected \(4,\) or \(1, 4\)"):
        streaming_attention(np.ones(3), cache)
    with pytest.raises(ValueError, match="RollingKVCache"):
        streaming_attention(np.ones(4), {"keys": np.ones((1, 4))})


def test_decode_step_of_llama_2_7b_by_hand():
    c = MODEL_CONFIGS["Llama 2 7B"]
    params = decoder_params(4096, 32, 32, 32, 128, 11008, 32000)
    matrices = params - 32000 * 4096
    per_token = 2 * 32 * 32 * 128 * 2  # K and V, layers, heads, d_head, fp16
    for batch, context in [(1, 1), (8, 4096), (3, 100)]:
        s = step_cost(c, 11008, 32000, batch=batch, context=context)
        assert s["weight_bytes"] == 2 * matrices
        assert s["cache_read_bytes"] == batch * context * per_token
        assert s["cache_write_bytes"] == batch * per_token
        assert s["flops"] == 2 * matrices * batch + 4 * 32 * 32 * 128 * (context + 1) * batch
    one = step_cost(c, 11008, 32000, context=1)
    assert 3.9e-3 < roofline_time(one["flops"], one["bytes"])["time"] < 4.0e-3  # about 4 ms


def test_prefill_is_compute_bound_and_decode_memory_bound_on_the_h100():
    c = MODEL_CONFIGS["Llama 2 7B"]
    prefill = step_cost(c, 11008, 32000, new_tokens=2048)
    decode = step_cost(c, 11008, 32000, context=2048)
    ridge = H100_SXM["peak_flops"] / H100_SXM["bandwidth"]
    assert prefill["intensity"] > ridge > decode["intensity"]
    assert roofline_time(prefill["flops"], prefill["bytes"])["bound"] == "compute"
    assert roofline_time(decode["flops"], decode["bytes"])["bound"] == "memory"
    # Prefill's causal attention: query t meets t + 1 keys, 2048 * 2049 / 2 pairs.
    assert prefill["attention_flops"] == 4 * 32 * 32 * 128 * 2048 * 2049 // 2


def test_a_sliding_window_caps_the_cache_read():
    m = MODEL_CONFIGS["Mistral 7B"]
    short, long = (step_cost(m, 14336, 32000, context=s)["cache_read_bytes"] for s in (4096, 32768))
    assert short == long == m.cache_bytes(4096)
    with pytest.raises(ValueError, match="MLA"):
        step_cost(MODEL_CONFIGS["DeepSeek-V2"], 1, 1)
    with pytest.raises(ValueError, match="context"):
        step_cost(m, 14336, 32000, context=-1)


def test_batch_capacity_of_an_80_gb_h100():
    """Llama 2 7B in fp16 stores 6,738,415,616 parameters (13.48 GB); each 4096-token sequence
    caches 2 * 32 layers * 32 heads * 128 * 2 bytes * 4096 = 2 GiB. Into 80 x 10^9 bytes: 30
    sequences (the 31st does not fit); into 80 GiB: 33."""
    c = MODEL_CONFIGS["Llama 2 7B"]
    weights, per_sequence = 2 * 6_738_415_616, 2 * 32 * 32 * 128 * 2 * 4096
    assert H100_SXM["memory"] == 80e9
    b = batch_capacity(c, 11008, 32000, context=4096)
    assert b == 30 and weights + b * per_sequence <= 80e9 < weights + (b + 1) * per_sequence
    assert batch_capacity(c, 11008, 32000, context=4096, memory_bytes=80 * 2**30) == 33
    # Shorter sequences: more of them. A window caps the cache: Mistral 7B at 32k = at 4096.
    assert batch_capacity(c, 11008, 32000, context=1024) == int(
        (80e9 - weights) // (per_sequence / 4)
    )
    m = MODEL_CONFIGS["Mistral 7B"]
    assert batch_capacity(m, 14336, 32000, 32768) == batch_capacity(m, 14336, 32000, 4096)
    assert batch_capacity(c, 11008, 32000, 4096, memory_bytes=1e9) == 0  # weights alone too big
    with pytest.raises(ValueError, match="MLA"):
        batch_capacity(MODEL_CONFIGS["DeepSeek-V2"], 1, 1, 4096)
