"""The cost formulas of mha_helpers.cost, checked two independent ways.

1. Against explicit counts: the entries of the weight arrays a layer actually needs (and that
   ``grouped_query_attention`` accepts), and the multiply-adds of a plain-Python attention
   layer that counts every one of them in its loops (and whose output matches the helper's).
2. Against the worked numbers of the course's fact sheet (shared/reference/mha_facts.md).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mha_helpers import (
    MODEL_CONFIGS,
    ModelConfig,
    attention_flops,
    attention_params,
    format_bytes,
    grouped_query_attention,
    kv_cache_bytes,
    multi_head_attention,
)
from mha_helpers.cost import batch_where_cache_exceeds, decode_attention_cost, decoder_params

# (d_model, num_heads, num_kv_heads, d_head): MHA, GQA, MQA, and h * d_head != d_model.
SMALL_CONFIGS = [
    (8, 1, 1, None),
    (8, 2, 2, None),
    (8, 4, 2, None),
    (8, 4, 1, None),
    (12, 6, 3, None),
    (6, 2, 1, 5),  # h * d_head = 10 != d_model = 6
    (4, 3, 3, 2),  # h * d_head = 6 != d_model = 4
]


def build_layer(d_model, num_heads, num_kv_heads, d_head, rng):
    """The arrays of one attention layer, shaped as the course applies them (x @ w + b)."""
    d_h = d_model // num_heads if d_head is None else d_head
    shapes = {
        "w_q": (d_model, num_heads * d_h),
        "w_k": (d_model, num_kv_heads * d_h),
        "w_v": (d_model, num_kv_heads * d_h),
        "w_o": (num_heads * d_h, d_model),
        "b_q": (num_heads * d_h,),
        "b_k": (num_kv_heads * d_h,),
        "b_v": (num_kv_heads * d_h,),
        "b_o": (d_model,),
    }
    return {name: rng.normal(size=shape) for name, shape in shapes.items()}


@pytest.mark.parametrize("d_model, num_heads, num_kv_heads, d_head", SMALL_CONFIGS)
def test_params_equal_entries_of_the_weight_arrays(d_model, num_heads, num_kv_heads, d_head):
    layer = build_layer(d_model, num_heads, num_kv_heads, d_head, np.random.default_rng(0))
    weights = sum(a.size for name, a in layer.items() if name.startswith("w_"))
    biases = sum(a.size for name, a in layer.items() if name.startswith("b_"))
    assert attention_params(d_model, num_heads, num_kv_heads, d_head, bias=False) == weights
    assert attention_params(d_model, num_heads, num_kv_heads, d_head) == weights + biases


@pytest.mark.parametrize(
    "d_model, num_heads, num_kv_heads, d_head", [c for c in SMALL_CONFIGS if c[3] is None]
)
def test_counted_arrays_are_the_ones_the_helper_accepts(d_model, num_heads, num_kv_heads, d_head):
    layer = build_layer(d_model, num_heads, num_kv_heads, d_head, np.random.default_rng(1))
    x = np.random.default_rng(2).normal(size=(3, d_model))
    y = grouped_query_attention(
        x, layer["w_q"], layer["w_k"], layer["w_v"], layer["w_o"], num_heads, num_kv_heads
    )
    assert y.shape == (3, d_model)


class MacCounter:
    """Plain-Python attention that counts every multiply-add it performs."""

    def __init__(self):
        self.macs = {"projections": 0, "scores": 0, "weighted_sum": 0, "output_projection": 0}

    def matmul(self, a, b, step):
        rows, inner, cols = len(a), len(b), len(b[0])
        out = [[0.0] * cols for _ in range(rows)]
        for i in range(rows):
            for j in range(cols):
                acc = 0.0
                for k in range(inner):
                    acc += a[i][k] * b[k][j]
                    self.macs[step] += 1
                out[i][j] = acc
        return out

    def attention(self, x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, d_head):
        x, w_q, w_k, w_v, w_o = (a.tolist() for a in (x, w_q, w_k, w_v, w_o))
        q = self.matmul(x, w_q, "projections")  # (n, h * d_head)
        k = self.matmul(x, w_k, "projections")  # (n, g * d_head)
        v = self.matmul(x, w_v, "projections")  # (n, g * d_head)
        group = num_heads // num_kv_heads
        heads = []
        for i in range(num_heads):
            kv = i // group  # repeat: query heads 0..group-1 read KV head 0, and so on
            cols = slice(i * d_head, (i + 1) * d_head)
            kv_cols = slice(kv * d_head, (kv + 1) * d_head)
            q_i = [row[cols] for row in q]  # (n, d_head)
            k_i = [row[kv_cols] for row in k]  # (n, d_head)
            v_i = [row[kv_cols] for row in v]  # (n, d_head)
            k_t = [list(col) for col in zip(*k_i)]  # (d_head, n)
            scores = self.matmul(q_i, k_t, "scores")  # (n, n)
            weights = []
            for row in scores:
                row = [s / math.sqrt(d_head) for s in row]
                m = max(row)
                e = [math.exp(s - m) for s in row]
                weights.append([t / sum(e) for t in e])
            heads.append(self.matmul(weights, v_i, "weighted_sum"))  # (n, d_head)
        concat = [sum((h[t] for h in heads), []) for t in range(len(x))]  # (n, h * d_head)
        return np.array(self.matmul(concat, w_o, "output_projection"))  # (n, d_model)


@pytest.mark.parametrize("n", [1, 3, 4])
@pytest.mark.parametrize("d_model, num_heads, num_kv_heads, d_head", SMALL_CONFIGS)
def test_flops_equal_twice_the_counted_multiply_adds(n, d_model, num_heads, num_kv_heads, d_head):
    rng = np.random.default_rng(3)
    layer = build_layer(d_model, num_heads, num_kv_heads, d_head, rng)
    x = rng.normal(size=(n, d_model))
    d_h = d_model // num_heads if d_head is None else d_head
    counter = MacCounter()
    y = counter.attention(
        x, layer["w_q"], layer["w_k"], layer["w_v"], layer["w_o"], num_heads, num_kv_heads, d_h
    )
    flops = attention_flops(n, d_model, num_heads, num_kv_heads, d_head)
    for step, macs in counter.macs.items():
        assert flops[step] == 2 * macs, step  # one multiply-add = 2 FLOPs
    assert flops["total"] == 2 * sum(counter.macs.values())
    if d_head is None:  # the counted loops compute the same layer as the helper
        expected = grouped_query_attention(
            x, layer["w_q"], layer["w_k"], layer["w_v"], layer["w_o"], num_heads, num_kv_heads
        )
        np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)


def divisors(d):
    return [h for h in range(1, d + 1) if d % h == 0]


@pytest.mark.parametrize("d_model", [8, 64, 768])
def test_params_and_flops_do_not_depend_on_h(d_model):
    n = 16
    params = {attention_params(d_model, h) for h in divisors(d_model)}
    flops = {attention_flops(n, d_model, h)["total"] for h in divisors(d_model)}
    assert params == {4 * d_model**2 + 4 * d_model}
    assert flops == {8 * n * d_model**2 + 4 * n**2 * d_model}


def test_sharing_kv_heads_saves_only_the_k_and_v_projections():
    d, h, d_h = 4096, 32, 128
    mha, mqa = attention_params(d, h, bias=False), attention_params(d, h, 1, bias=False)
    assert mha - mqa == 2 * d * (h - 1) * d_h
    f_mha, f_gqa = attention_flops(100, d, h), attention_flops(100, d, h, 8)
    for step in ("scores", "weighted_sum", "output_projection"):
        assert f_mha[step] == f_gqa[step]
    assert f_mha["projections"] - f_gqa["projections"] == 2 * 2 * 100 * d * (h - 8) * d_h


# ---------------------------------------------------------------- the fact sheet's numbers


def test_fact_sheet_parameters():
    assert attention_params(768, 12) == 2_362_368  # BERT-base / GPT-2 small attention layer
    # torch.nn.MultiheadAttention(16, 4) has 1088 parameters (fact sheet, checked with PyTorch)
    assert attention_params(16, 4) == 1088 == 4 * 16**2 + 4 * 16


def test_fact_sheet_flops_gpt2_small():
    f = attention_flops(1024, 768, 12)
    assert round((f["projections"] + f["output_projection"]) / 1e9, 2) == 4.83
    assert round((f["scores"] + f["weighted_sum"]) / 1e9, 2) == 3.22
    assert f["projections"] == 6 * 1024 * 768**2
    assert f["output_projection"] == 2 * 1024 * 768**2


def test_fact_sheet_stored_attention_weights():
    gpt2 = MODEL_CONFIGS["GPT-2 small"]
    entries = gpt2.num_heads * 1024**2
    assert round(entries / 1e6, 1) == 12.6
    assert format_bytes(entries * 4) == "48 MiB"
    llama = MODEL_CONFIGS["Llama 2 7B"]
    assert format_bytes(llama.num_heads * 4096**2 * 2) == "1 GiB"


FACT_SHEET_CACHE = {  # model: (per token, 4096 tokens), fp16
    "Llama 2 70B": ("320 KiB", "1.25 GiB"),
    "Llama 3 8B": ("128 KiB", "512 MiB"),
    "Llama 2 7B": ("512 KiB", "2 GiB"),
    "Mistral 7B": ("128 KiB", "512 MiB"),
    "Falcon-7B": ("8 KiB", "32 MiB"),
    "Gemma 2B": ("18 KiB", "72 MiB"),
    "GPT-3 175B": ("4.5 MiB", "18 GiB"),
}


@pytest.mark.parametrize("name", sorted(FACT_SHEET_CACHE))
def test_fact_sheet_kv_cache_table(name):
    c = MODEL_CONFIGS[name]
    per_token, at_4096 = FACT_SHEET_CACHE[name]
    assert format_bytes(kv_cache_bytes(c.num_layers, c.num_kv_heads, c.d_head, 1)) == per_token
    assert format_bytes(kv_cache_bytes(c.num_layers, c.num_kv_heads, c.d_head, 4096)) == at_4096
    assert format_bytes(c.kv_cache_bytes_per_token()) == per_token
    assert format_bytes(c.cache_bytes(4096)) == at_4096


def test_fact_sheet_llama2_70b_without_gqa():
    assert format_bytes(kv_cache_bytes(80, 64, 128, 4096)) == "10 GiB"


def test_mistral_rolling_buffer_caps_the_cache():
    c = MODEL_CONFIGS["Mistral 7B"]
    assert c.cache_bytes(8192) == c.cache_bytes(4096) == 4096 * c.kv_cache_bytes_per_token()
    assert c.cache_bytes(100) == 100 * c.kv_cache_bytes_per_token()


def test_fact_sheet_deepseek_latent_cache():
    c = MODEL_CONFIGS["DeepSeek-V2"]
    elements = c.kv_cache_bytes_per_token(bytes_per_element=1)
    assert elements == (512 + 64) * 60 == 34_560
    mha_elements = kv_cache_bytes(60, 128, 128, 1, bytes_per_element=1)
    assert round(100 * elements / mha_elements, 1) == 1.8


def test_kv_cache_scales_with_every_factor():
    base = kv_cache_bytes(2, 3, 4, 5)
    assert base == 2 * 2 * 3 * 4 * 5 * 2
    assert kv_cache_bytes(2, 3, 4, 5, bytes_per_element=4, batch=7) == base * 2 * 7
    assert kv_cache_bytes(2, 3, 4, 5, bytes_per_element=0.5) == base // 4


# ---------------------------------------------------------------- the model table itself


def test_model_configs_are_consistent():
    assert {
        "Llama 2 70B",
        "Llama 3 8B",
        "Mistral 7B",
        "Falcon-7B",
        "Gemma 2B",
        "GPT-3 175B",
    } <= set(MODEL_CONFIGS)
    for name, c in MODEL_CONFIGS.items():
        assert c.name == name and c.source
        if c.kind == "MLA":
            assert c.num_kv_heads is None and c.kv_latent_dim
            continue
        assert c.num_heads % c.num_kv_heads == 0, name
        g, h = c.num_kv_heads, c.num_heads
        assert c.kind == ("MHA" if g == h else "MQA" if g == 1 else "GQA"), name
        if name != "PaLM 540B":  # PaLM's heads are 48 x 256 = 12288 wide, d_model 18432
            assert c.num_heads * c.d_head == c.d_model, name
    assert MODEL_CONFIGS["PaLM 540B"].num_heads * MODEL_CONFIGS["PaLM 540B"].d_head == 12288


def test_only_models_that_generate_keep_a_kv_cache():
    encoder_only = {n for n, c in MODEL_CONFIGS.items() if c.encoder_only}
    assert encoder_only == {"BERT-base", "BERT-large", "ViT-B/16"}
    assert {n for n, c in MODEL_CONFIGS.items() if c.encoder_decoder} == {
        "Transformer base",
        "Transformer big",
        "T5-base",
    }
    bert = MODEL_CONFIGS["BERT-base"]
    assert not bert.has_kv_cache and MODEL_CONFIGS["T5-base"].has_kv_cache
    for call in (bert.kv_cache_bytes_per_token, lambda: bert.cache_bytes(512)):
        with pytest.raises(ValueError, match="BERT-base is encoder-only.*keeps no KV cache"):
            call()
    # An encoder-decoder model's cache is its decoder's: 12 of T5-base's 12+12 layers.
    t5 = MODEL_CONFIGS["T5-base"]
    assert t5.layers_text == "12+12" and t5.kv_cache_bytes_per_token() == kv_cache_bytes(
        12, 12, 64, 1
    )
    with pytest.raises(ValueError, match="not both"):
        ModelConfig(
            "x", 8, 1, 2, 2, 4, None, "MHA", "test", encoder_only=True, encoder_decoder=True
        )


# ---------------------------------------------------------------- decoding arithmetic


def _decode_step(num_layers, num_heads, num_kv_heads, d_head, seq_len, rng):
    """One generated token, layer by layer, with fp16 caches: the bytes of every cache array
    the step reads, and the multiply-adds of its products, counted from the arrays' shapes."""
    group = num_heads // num_kv_heads
    read, macs = 0, 0
    for _ in range(num_layers):
        k = rng.normal(size=(num_kv_heads, seq_len, d_head)).astype(np.float16)  # cached keys
        v = rng.normal(size=(num_kv_heads, seq_len, d_head)).astype(np.float16)  # cached values
        q = rng.normal(size=(num_heads, 1, d_head)).astype(np.float16)  # the new token's queries
        read += k.nbytes + v.nbytes  # every cached number, read once
        k_h = np.repeat(k, group, axis=0)  # (h, s, d_head): each query head's KV head
        scores = q @ k_h.swapaxes(-1, -2)  # (h, 1, s): each entry sums d_head products
        macs += scores.size * q.shape[-1]
        out = scores @ np.repeat(v, group, axis=0)  # (h, 1, d_head): each entry sums s products
        macs += out.size * scores.shape[-1]
    return read, 2 * macs


@pytest.mark.parametrize(
    "layers, h, g, d_head, s", [(2, 4, 4, 8, 10), (3, 8, 2, 4, 7), (1, 6, 1, 16, 5)]
)
def test_decode_cost_counts_the_cache_read_and_the_products_of_one_step(layers, h, g, d_head, s):
    read, flops = _decode_step(layers, h, g, d_head, s, np.random.default_rng(0))
    c = decode_attention_cost(layers, h, g, d_head, s)
    assert c["bytes"] == read and c["flops"] == flops
    assert c["intensity"] == flops / read == 2 * (h / g) / 2
    batched = decode_attention_cost(layers, h, g, d_head, s, batch=5)
    assert batched["bytes"] == 5 * read and batched["flops"] == 5 * flops
    assert batched["intensity"] == c["intensity"]  # every sequence reads its own cache


def test_decode_intensity_of_real_models():
    def intensity(name, b=2):
        m = MODEL_CONFIGS[name]
        return decode_attention_cost(m.num_layers, m.num_heads, m.num_kv_heads, m.d_head, 4096, b)[
            "intensity"
        ]

    assert intensity("Llama 2 7B") == 1.0  # MHA, fp16: one FLOP per byte
    assert intensity("Llama 2 70B") == 8.0  # 64 query heads share 8 KV heads
    assert intensity("Falcon-7B") == 71.0  # MQA: 71 query heads share one
    assert intensity("Llama 2 7B", b=4) == 0.5


LLAMA2 = {  # config.json of meta-llama/Llama-2-7b-hf and -70b-hf: (d_ff, vocab)
    "Llama 2 7B": (11008, 32000),
    "Llama 2 70B": (28672, 32000),
}


def _llama_shapes(c, d_ff, vocab):
    """The weight shapes of a Llama checkpoint, by name, as its state dict lists them."""
    d, kv = c.d_model, c.num_kv_heads * c.d_head
    per_layer = {
        "q_proj": (d, c.num_heads * c.d_head),
        "k_proj": (d, kv),
        "v_proj": (d, kv),
        "o_proj": (c.num_heads * c.d_head, d),
        "gate_proj": (d, d_ff),
        "up_proj": (d, d_ff),
        "down_proj": (d_ff, d),
        "input_layernorm": (d,),
        "post_attention_layernorm": (d,),
    }
    shapes = {"embed_tokens": (vocab, d), "norm": (d,), "lm_head": (vocab, d)}
    for layer in range(c.num_layers):
        shapes.update({f"layers.{layer}.{k}": v for k, v in per_layer.items()})
    return shapes


@pytest.mark.parametrize("name", sorted(LLAMA2))
def test_decoder_params_equal_the_entries_of_the_weight_arrays(name):
    c = MODEL_CONFIGS[name]
    d_ff, vocab = LLAMA2[name]
    counted = sum(math.prod(shape) for shape in _llama_shapes(c, d_ff, vocab).values())
    assert (
        decoder_params(c.d_model, c.num_layers, c.num_heads, c.num_kv_heads, c.d_head, d_ff, vocab)
        == counted
    )
    assert counted == {"Llama 2 7B": 6_738_415_616, "Llama 2 70B": 68_976_648_192}[name]


def test_decoder_params_options():
    untied = decoder_params(64, 2, 4, 4, 16, d_ff=256, vocab_size=100)
    assert (
        decoder_params(64, 2, 4, 4, 16, d_ff=256, vocab_size=100, tied_embeddings=True)
        == untied - 100 * 64
    )
    assert (
        decoder_params(64, 2, 4, 4, 16, d_ff=256, vocab_size=100, gated_ffn=False)
        == untied - 2 * 64 * 256
    )


def test_where_the_kv_cache_outweighs_the_weights():
    """Llama 2 at 4096 tokens in fp16: the cache passes the weights at 7 sequences (7B) and at
    103 (70B); with one KV head per query head the 70B model would get there at 13."""
    for name, at in (("Llama 2 7B", 7), ("Llama 2 70B", 103)):
        c = MODEL_CONFIGS[name]
        weights = 2 * decoder_params(
            c.d_model, c.num_layers, c.num_heads, c.num_kv_heads, c.d_head, *LLAMA2[name]
        )
        per_sequence = c.cache_bytes(4096)
        batch = batch_where_cache_exceeds(weights, per_sequence)
        assert batch == at
        assert batch * per_sequence > weights >= (batch - 1) * per_sequence
    c = MODEL_CONFIGS["Llama 2 70B"]
    weights = 2 * decoder_params(
        c.d_model, c.num_layers, c.num_heads, c.num_kv_heads, c.d_head, *LLAMA2["Llama 2 70B"]
    )
    assert batch_where_cache_exceeds(weights, kv_cache_bytes(80, 64, 128, 4096)) == 13
    with pytest.raises(ValueError, match="must be positive"):
        batch_where_cache_exceeds(10, 0)


# ---------------------------------------------------------------- errors and formatting


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: attention_params(8, 3), "not divisible by num_heads=3"),
        (lambda: attention_params(8, 4, 3), "not divisible by num_kv_heads=3"),
        (lambda: attention_params(8, 2, 4), "not divisible by num_kv_heads=4"),
        (lambda: attention_flops(0, 8, 2), "n must be a positive"),
        (lambda: attention_flops(3, 8, 2.0), "num_heads must be a positive"),
        (lambda: kv_cache_bytes(2, 1, 4, 10, bytes_per_element=0), "bytes_per_element"),
        (lambda: kv_cache_bytes(2, 1, 4, 10, bytes_per_element=True), "bytes_per_element"),
        (lambda: kv_cache_bytes(2, True, 4, 10), "num_kv_heads"),
    ],
)
def test_errors_name_the_argument(call, words):
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize(
    "value, text",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (327_680, "320 KiB"),
        (2**30 * 5 // 4, "1.25 GiB"),
        (2**40, "1 TiB"),
    ],
)
def test_format_bytes(value, text):
    assert format_bytes(value) == text


def test_mha_is_gqa_with_all_heads():
    # The cost functions treat num_kv_heads=None as num_kv_heads=num_heads; so do the layers.
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 8))
    w = [rng.normal(size=(8, 8)) for _ in range(4)]
    for h in (1, 2, 4, 8):
        assert np.array_equal(
            multi_head_attention(x, *w, num_heads=h),
            grouped_query_attention(x, *w, num_heads=h, num_kv_heads=h),
        )
        assert attention_params(8, h) == attention_params(8, h, h)
