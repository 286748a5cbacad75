"""What an attention layer costs: parameters, forward FLOPs, KV-cache bytes, real models.

Names: ``d_model`` (d), ``num_heads`` (h query heads), ``num_kv_heads`` (g key/value heads,
default h), ``d_head`` (head width, default d / h), ``n`` tokens. One multiply-add counts as
2 FLOPs. The FLOP counts are the matrix products only. Softmax and masking are not counted,
but they are not lower order: at about 5 operations per attention weight (a rough count for a
textbook softmax; the course's ``scaled_dot_product_attention`` makes two passes over the
weights, the exponential and the row sums), ``5 h n^2`` grows as n^2 like the score products,
and its ratio to their ``4 n^2 d`` FLOPs is ``5 / (4 d_head)`` whatever n is. That is a count of
operations, not time: on a GPU a non-matmul operation costs far more than a matmul FLOP (about
16 times on an A100: FlashAttention-2, arXiv 2307.08691, §3.1), and on a CPU one exponential
can cost as much time as many matmul FLOPs (lesson 04, section 4, measures it on the learner's
machine).

>>> f = attention_flops(1024, 768, 12)     # GPT-2 small, d_head = 64: softmax work / score FLOPs
>>> 5 * 12 * 1024**2 / (f["scores"] + f["weighted_sum"]) == 5 / (4 * 64)
True

>>> attention_params(768, 12)              # BERT-base / GPT-2 small: 4 d^2 + 4 d
2362368
>>> attention_flops(1024, 768, 12)["total"] == 8 * 1024 * 768**2 + 4 * 1024**2 * 768
True
>>> format_bytes(kv_cache_bytes(80, 8, 128, 4096))    # Llama 2 70B, fp16
'1.25 GiB'
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from .shapes import head_width, kv_group_size, positive_int

__all__ = [
    "attention_params",
    "attention_flops",
    "kv_cache_bytes",
    "format_bytes",
    "decode_attention_cost",
    "decoder_params",
    "batch_where_cache_exceeds",
    "ModelConfig",
    "MODEL_CONFIGS",
]


def _heads(d_model, num_heads, num_kv_heads, d_head):
    d_model = positive_int(d_model, "d_model")
    num_heads = positive_int(num_heads, "num_heads")
    g = num_heads if num_kv_heads is None else positive_int(num_kv_heads, "num_kv_heads")
    kv_group_size(num_heads, g)
    d_h = head_width(d_model, num_heads) if d_head is None else positive_int(d_head, "d_head")
    return d_model, num_heads, g, d_h


def attention_params(d_model, num_heads, num_kv_heads=None, d_head=None, bias=True) -> int:
    """Parameters of one attention layer.

    Weights: ``w_q`` (d, h d_h) and ``w_o`` (h d_h, d), ``w_k`` and ``w_v`` (d, g d_h).
    Biases (when ``bias``): h d_h + 2 g d_h + d. Standard MHA: 4 d^2 + 4 d, whatever h is.
    """
    d, h, g, d_h = _heads(d_model, num_heads, num_kv_heads, d_head)
    weights = 2 * d * h * d_h + 2 * d * g * d_h
    biases = h * d_h + 2 * g * d_h + d
    return weights + (biases if bias else 0)


def attention_flops(n, d_model, num_heads, num_kv_heads=None, d_head=None) -> dict:
    """Forward FLOPs of one self-attention layer over ``n`` tokens, by step.

    Keys: ``projections`` (Q, K and V), ``scores`` (Q K^T), ``weighted_sum`` (weights times V),
    ``output_projection`` (W_O) and ``total``. Standard MHA totals 8 n d^2 + 4 n^2 d, the same
    for every h: each of the h heads does 1/h of the work of one full-width head.
    """
    n = positive_int(n, "n")
    d, h, g, d_h = _heads(d_model, num_heads, num_kv_heads, d_head)
    out = {
        "projections": 2 * n * d * h * d_h + 2 * (2 * n * d * g * d_h),
        "scores": 2 * n * n * h * d_h,
        "weighted_sum": 2 * n * n * h * d_h,
        "output_projection": 2 * n * h * d_h * d,
    }
    out["total"] = sum(out.values())
    return out


def kv_cache_bytes(num_layers, num_kv_heads, d_head, seq_len, bytes_per_element=2, batch=1) -> int:
    """Bytes of the key/value cache: 2 (K and V) x layers x g x d_head x bytes x tokens x batch.

    During generation every layer keeps the keys and values of all earlier tokens, one
    ``d_head``-wide vector per KV head, so the cache grows linearly with ``seq_len`` and with
    ``num_kv_heads`` (not with the number of query heads). ``bytes_per_element`` is 2 for
    fp16/bf16, 4 for fp32 (fractions such as 0.5 for 4-bit are allowed).

    >>> kv_cache_bytes(num_layers=32, num_kv_heads=8, d_head=128, seq_len=1)   # Llama 3 8B
    131072
    """
    for value, name in (
        (num_layers, "num_layers"),
        (num_kv_heads, "num_kv_heads"),
        (d_head, "d_head"),
        (seq_len, "seq_len"),
        (batch, "batch"),
    ):
        positive_int(value, name)
    if (
        isinstance(bytes_per_element, bool)
        or not isinstance(bytes_per_element, numbers.Real)
        or not bytes_per_element > 0
    ):
        raise ValueError(
            f"bytes_per_element must be positive (2 for fp16), got {bytes_per_element!r}"
        )
    total = 2 * num_layers * num_kv_heads * d_head * bytes_per_element * seq_len * batch
    return int(total) if float(total).is_integer() else total


def decode_attention_cost(
    num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element=2, batch=1
) -> dict:
    """What attention costs to generate ONE token per sequence with a KV cache of ``seq_len`` tokens.

    The new token's query, in every layer and every one of the h query heads, meets all
    ``seq_len`` cached keys (scores: 2 d_head FLOPs per key) and takes the weighted sum of as
    many cached values (2 d_head FLOPs per value). Every cached key and value is read from
    memory once per step, whatever h is: the cache holds g = ``num_kv_heads`` heads.

    Returns a dict:

    * ``flops``: 4 x layers x h x d_head x seq_len x batch;
    * ``bytes``: the KV cache read, 2 x layers x g x d_head x seq_len x bytes x batch
      (:func:`kv_cache_bytes`);
    * ``intensity``: flops / bytes = 2 (h / g) / bytes_per_element FLOPs per byte read. The
      batch cancels: each sequence has its own cache, so batching does not raise it.

    The projections and the rest of the model are not counted here.

    >>> c = decode_attention_cost(32, 32, 32, 128, seq_len=4096)    # Llama 2 7B (MHA), fp16
    >>> c["intensity"]
    1.0
    >>> decode_attention_cost(80, 64, 8, 128, seq_len=4096)["intensity"]   # Llama 2 70B (GQA)
    8.0
    """
    for value, name in (
        (num_layers, "num_layers"),
        (d_head, "d_head"),
        (seq_len, "seq_len"),
        (batch, "batch"),
    ):
        positive_int(value, name)
    h = positive_int(num_heads, "num_heads")
    g = positive_int(num_kv_heads, "num_kv_heads")
    kv_group_size(h, g)
    flops = 4 * num_layers * h * d_head * seq_len * batch
    read = kv_cache_bytes(num_layers, g, d_head, seq_len, bytes_per_element, batch)
    return {"flops": flops, "bytes": read, "intensity": flops / read}


def decoder_params(
    d_model,
    num_layers,
    num_heads,
    num_kv_heads,
    d_head,
    d_ff,
    vocab_size,
    gated_ffn=True,
    tied_embeddings=False,
) -> int:
    """Parameters of a decoder-only transformer without biases, in the Llama layout.

    Per layer: attention (:func:`attention_params` with ``bias=False``), a feed-forward block
    with hidden width ``d_ff`` (three ``d_model x d_ff`` matrices when ``gated_ffn``, as in
    SwiGLU; two otherwise) and two normalisation weight vectors of ``d_model``. Then the token
    embedding ``(vocab_size, d_model)``, a final normalisation and, unless ``tied_embeddings``,
    a separate output matrix ``(d_model, vocab_size)``.

    >>> decoder_params(4096, 32, 32, 32, 128, d_ff=11008, vocab_size=32000)   # Llama 2 7B
    6738415616
    """
    d = positive_int(d_model, "d_model")
    layers = positive_int(num_layers, "num_layers")
    d_ff = positive_int(d_ff, "d_ff")
    vocab = positive_int(vocab_size, "vocab_size")
    attention = attention_params(d, num_heads, num_kv_heads, d_head, bias=False)
    ffn = (3 if gated_ffn else 2) * d * d_ff
    per_layer = attention + ffn + 2 * d  # (two norms)
    embeddings = vocab * d * (1 if tied_embeddings else 2)
    return layers * per_layer + embeddings + d  # (+ the final norm)


def batch_where_cache_exceeds(weight_bytes, cache_bytes_per_sequence) -> int:
    """The smallest batch whose KV cache holds more bytes than the model's weights.

    During generation every sequence in the batch keeps its own cache, while the weights are
    stored once; past this batch size the cache is the larger of the two.

    >>> batch_where_cache_exceeds(10, 4), batch_where_cache_exceeds(12, 4)
    (3, 4)
    """
    if not weight_bytes > 0 or not cache_bytes_per_sequence > 0:
        raise ValueError(
            f"weight_bytes and cache_bytes_per_sequence must be positive, got "
            f"{weight_bytes!r} and {cache_bytes_per_sequence!r}"
        )
    return int(weight_bytes // cache_bytes_per_sequence) + 1


def format_bytes(n) -> str:
    """Readable binary units: ``format_bytes(327680) == '320 KiB'``."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    value, unit = float(n), 0
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    text = f"{value:.2f}".rstrip("0").rstrip(".") if unit else f"{value:.0f}"
    return f"{text} {units[unit]}"


@dataclass(frozen=True)
class ModelConfig:
    """One real model's attention configuration, with where the numbers come from."""

    name: str
    d_model: int
    num_layers: int  # the decoder's layers for encoder-decoder models; the whole stack otherwise
    num_heads: int
    num_kv_heads: int | None  # None for latent attention (MLA), see kv_latent_dim
    d_head: int
    context: int | None
    kind: str  # "MHA", "GQA", "MQA" or "MLA"
    source: str
    layers_text: str = ""  # as the source writes it, e.g. "6+6" for encoder + decoder
    kv_latent_dim: int | None = None  # MLA: cached elements per token per layer
    sliding_window: int | None = None  # attends to (and caches) at most this many positions
    # Encoder-only models (BERT, ViT) read the whole input at once and generate nothing token
    # by token, so they keep no KV cache. Encoder-decoder models (T5, the original Transformer)
    # keep one in the decoder only; their num_layers counts the decoder's layers.
    encoder_only: bool = False
    encoder_decoder: bool = False

    def __post_init__(self):
        if self.encoder_only and self.encoder_decoder:
            raise ValueError(f"{self.name}: a model is encoder-only or encoder-decoder, not both")

    @property
    def has_kv_cache(self) -> bool:
        """True for models that generate token by token (decoder-only and encoder-decoder)."""
        return not self.encoder_only

    def _check_has_kv_cache(self):
        if self.encoder_only:
            raise ValueError(
                f"{self.name} is encoder-only: it reads the whole input at once and generates "
                f"nothing token by token, so it keeps no KV cache. Only decoders (decoder-only "
                f"models, and the decoder of an encoder-decoder model) have one."
            )

    def kv_cache_bytes_per_token(self, bytes_per_element=2) -> int:
        """Cache bytes added per generated token (one sequence, all layers).

        Raises ``ValueError`` for an encoder-only model, which keeps no cache.
        """
        self._check_has_kv_cache()
        if self.kv_latent_dim is not None:
            return self.kv_latent_dim * self.num_layers * bytes_per_element
        return kv_cache_bytes(self.num_layers, self.num_kv_heads, self.d_head, 1, bytes_per_element)

    def cache_bytes(self, seq_len, bytes_per_element=2, batch=1) -> int:
        """Cache bytes for ``batch`` sequences of ``seq_len`` tokens; a sliding window caps the
        number of cached positions (Mistral 7B keeps a rolling buffer of 4096)."""
        seq_len = positive_int(seq_len, "seq_len")
        kept = seq_len if self.sliding_window is None else min(seq_len, self.sliding_window)
        return (
            self.kv_cache_bytes_per_token(bytes_per_element) * kept * positive_int(batch, "batch")
        )


def _cfg(*args, **kw):
    c = ModelConfig(*args, **kw)
    return c.name, c


# Each model's `source` names where a learner can check its numbers without an account: the
# paper (with its arXiv number) and table, or a public repository's file; docs/sources.md links
# every paper. Llama 2 gives no shapes on its model card or in its paper (§2.2 only says it
# follows Llama 1's architecture), and its Hugging Face configs, which do, are gated. Its
# attention dimensions (d_model, layers, heads) are those of LLaMA 7B and 65B, so they are cited
# to the LLaMA paper's Table 2; only those are shared: the feed-forward widths of LLaMA 65B and
# Llama 2 70B differ (22,016 and 28,672; lesson 05). Its context (4096) and grouped-query
# attention (70B: 8 KV heads) are cited to the Llama 2 paper, Table 1 and Appendix A.2.1.
# A table, one model per line: kept out of the formatter's hands.
# fmt: off
MODEL_CONFIGS: dict[str, ModelConfig] = dict([
    _cfg("Transformer base", 512, 6, 8, 8, 64, None, "MHA", "Vaswani et al. 2017, §3.2.2, Table 3", "6+6",
         encoder_decoder=True),
    _cfg("Transformer big", 1024, 6, 16, 16, 64, None, "MHA", "Vaswani et al. 2017, Table 3", "6+6",
         encoder_decoder=True),
    _cfg("BERT-base", 768, 12, 12, 12, 64, 512, "MHA", "google-research/bert, uncased_L-12_H-768_A-12",
         encoder_only=True),
    _cfg("BERT-large", 1024, 24, 16, 16, 64, 512, "MHA", "google-research/bert, uncased_L-24_H-1024_A-16",
         encoder_only=True),
    _cfg("GPT-2 small", 768, 12, 12, 12, 64, 1024, "MHA", "nanoGPT model.py config_args"),
    _cfg("GPT-2 medium", 1024, 24, 16, 16, 64, 1024, "MHA", "nanoGPT model.py config_args"),
    _cfg("GPT-2 large", 1280, 36, 20, 20, 64, 1024, "MHA", "nanoGPT model.py config_args"),
    _cfg("GPT-2 XL", 1600, 48, 25, 25, 64, 1024, "MHA", "nanoGPT model.py config_args"),
    _cfg("GPT-3 175B", 12288, 96, 96, 96, 128, 2048, "MHA",
         "Brown et al. 2020, arXiv 2005.14165, Table 2.1; context 2048: §2.1"),
    _cfg("T5-base", 768, 12, 12, 12, 64, 512, "MHA", "Raffel et al. 2020, §3.1", "12+12",
         encoder_decoder=True),
    _cfg("ViT-B/16", 768, 12, 12, 12, 64, 197, "MHA", "google-research/vision_transformer configs",
         encoder_only=True),
    _cfg("Llama 2 7B", 4096, 32, 32, 32, 128, 4096, "MHA",
         "LLaMA, arXiv 2302.13971, Table 2 (7B); Llama 2, arXiv 2307.09288, §2.2, Table 1"),
    _cfg("Llama 2 70B", 8192, 80, 64, 8, 128, 4096, "GQA",
         "LLaMA, arXiv 2302.13971, Table 2 (65B); Llama 2, arXiv 2307.09288, §2.2, Table 1, A.2.1"),
    _cfg("Llama 3 8B", 4096, 32, 32, 8, 128, 8192, "GQA",
         "Llama 3, arXiv 2407.21783, Table 3; context 8192: meta-llama/llama3 README"),
    _cfg("Llama 3 70B", 8192, 80, 64, 8, 128, 8192, "GQA",
         "Llama 3, arXiv 2407.21783, Table 3; context 8192: meta-llama/llama3 README"),
    _cfg("Mistral 7B", 4096, 32, 32, 8, 128, 8192, "GQA", "Jiang et al. 2023, Table 1 (sliding window 4096)",
         sliding_window=4096),
    _cfg("Falcon-7B", 4544, 32, 71, 1, 64, 2048, "MQA",
         "transformers FalconConfig (multi_query=True); context 2048: tiiuae/falcon-7b model card"),
    _cfg("PaLM 540B", 18432, 118, 48, 1, 256, 2048, "MQA", "Chowdhery et al. 2022, Table 1"),
    _cfg("Gemma 2B", 2048, 18, 8, 1, 256, 8192, "MQA", "google/gemma_pytorch config.py"),
    _cfg("DeepSeek-V2", 5120, 60, 128, None, 128, 128 * 1024, "MLA",
         "DeepSeek-V2, arXiv 2405.04434, §3.1.2 (d_c = 512, + 64 RoPE dims)", kv_latent_dim=512 + 64),
])
# fmt: on
