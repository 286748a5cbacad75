"""Questions for exercise 05: sharing keys and values (``solutions/05_variants.ipynb``).

Lesson: ``notebooks/05_variants.ipynb``. Four questions, 11 points, all graded automatically:

* ``q05_gqa`` (4): grouped-query attention from the multi-head pieces (repeat, not tile);
* ``q05_mean_pool`` (3): convert MHA K/V weights to GQA by mean-pooling each group's heads;
* ``q05_cache_bytes`` (2): the KV-cache size formula (the number of query heads is given and
  must not be used);
* ``q05_max_batch`` (2): how many Llama 2 70B sequences fit in a 40 GiB cache budget.

Every GQA and pooling case set includes 1 < g < h, where repeat and tile differ.
"""

from __future__ import annotations

import numpy as np

from mha_helpers.grading import Mistake, Question, register

ASSIGNMENT = "05_variants"

__all__ = ["ASSIGNMENT"]

# --- q05_gqa ----------------------------------------------------------------------------------


def _split(a, heads):
    n, width = a.shape
    return a.reshape(n, heads, width // heads).transpose(1, 0, 2)  # (heads, n, d_head)


def _attend(q, k, v, scale, causal=False, axis=-1):
    s = q @ k.transpose(0, 2, 1) * scale  # (h, n, n)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    s = np.exp(s - s.max(axis=axis, keepdims=True))
    w = s / s.sum(axis=axis, keepdims=True)  # softmax over keys (axis -1)
    return w @ v  # (h, n, d_head)


def _gqa_generic(
    x,
    w_q,
    w_k,
    w_v,
    w_o,
    num_heads,
    num_kv_heads,
    order="repeat",
    scale=None,
    project=True,
    causal=False,
    axis=-1,
    bare_merge=False,
):
    x, w_q, w_k, w_v, w_o = (np.asarray(a, dtype=float) for a in (x, w_q, w_k, w_v, w_o))
    n, d_model = x.shape
    d_head = d_model // num_heads
    group = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)  # (h, n, d_head)
    k = _split(x @ w_k, num_kv_heads)  # (g, n, d_head)
    v = _split(x @ w_v, num_kv_heads)  # (g, n, d_head)
    if order == "repeat":
        k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)  # (h, n, d_head)
    else:
        k, v = np.tile(k, (group, 1, 1)), np.tile(v, (group, 1, 1))  # wrong order
    out = _attend(q, k, v, 1 / np.sqrt(d_head) if scale is None else scale, causal, axis)
    if bare_merge:
        concat = out.reshape(n, num_heads * d_head)  # same shape, tokens scrambled
    else:
        concat = out.transpose(1, 0, 2).reshape(n, num_heads * d_head)  # (n, h * d_head)
    return concat @ w_o if project else concat


def _gqa_reference(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    return _gqa_generic(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads)


def _gqa_cases(rng):
    """(x, w_q, w_k, w_v, w_o, h, g): GQA with groups of 2 and 3, MQA, and MHA."""
    cases = []
    for n, d_model, h, g in [
        (3, 8, 4, 2),
        (5, 12, 6, 2),
        (4, 12, 6, 3),
        (3, 8, 4, 1),
        (int(rng.integers(2, 6)), 16, 8, 4),
        (4, 6, 3, 3),
        (3, 8, 1, 1),  # one head (and one KV head)
    ]:
        d_head = d_model // h
        x = rng.normal(size=(n, d_model))  # (n, d_model)
        w_q = rng.normal(size=(d_model, d_model)) / np.sqrt(d_model)
        w_k = rng.normal(size=(d_model, g * d_head)) / np.sqrt(d_model)
        w_v = rng.normal(size=(d_model, g * d_head)) / np.sqrt(d_model)
        w_o = rng.normal(size=(d_model, d_model)) / np.sqrt(d_model)
        cases.append((x, w_q, w_k, w_v, w_o, h, g))
    # W_O the identity: output columns i * d_head ... (i + 1) * d_head - 1 are query head i's
    # own output, so the verdict can say which query heads are wrong (groups of 3, where
    # i // num_kv_heads and i // group differ)
    n, d_model, h, g = 4, 12, 6, 2
    d_head = d_model // h
    x = rng.normal(size=(n, d_model))
    w_q = rng.normal(size=(d_model, d_model)) / np.sqrt(d_model)
    w_k = rng.normal(size=(d_model, g * d_head)) / np.sqrt(d_model)
    w_v = rng.normal(size=(d_model, g * d_head)) / np.sqrt(d_model)
    cases.append((x, w_q, w_k, w_v, np.eye(d_model), h, g))
    return cases


def _gqa_tiled(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    return _gqa_generic(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, order="tile")


def _gqa_sqrt_d_model(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    d_model = np.shape(x)[-1]
    return _gqa_generic(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, scale=1 / np.sqrt(d_model))


def _gqa_no_scale(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    return _gqa_generic(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, scale=1.0)


def _gqa_no_projection(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    return _gqa_generic(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, project=False)


def _gqa_slip(**kwargs):
    def wrong(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        return _gqa_generic(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, **kwargs)

    return wrong


def _gqa_traits(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    w_o = np.asarray(w_o)
    identity = w_o.shape[0] == w_o.shape[1] and np.array_equal(w_o, np.eye(len(w_o)))
    return (
        (["several heads"] if num_heads > 1 else [])
        + (["shared kv"] if num_kv_heads < num_heads else [])
        + (["groups"] if 1 < num_kv_heads < num_heads else [])
        + (
            [f"headblocks:{np.shape(x)[-1] // num_heads}:{num_heads // num_kv_heads}"]
            if identity
            else []
        )
    )


register(
    Question(
        grade_id="q05_gqa",
        assignment=ASSIGNMENT,
        points=4,
        kind="function",
        prompt="Implement gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads): grouped-query "
        "self-attention of x (n, d_model), where w_k and w_v are (d_model, num_kv_heads * "
        "d_head) and query head i reads KV head i // (num_heads // num_kv_heads).",
        reference=_gqa_reference,
        cases=_gqa_cases,
        mistakes=(
            Mistake(
                "tile",
                _gqa_tiled,
                "Right shape, wrong pairing: you tiled the KV heads (0, 1, 0, 1, ...). Each KV "
                "head serves a block of consecutive query heads, so repeat it: "
                "np.repeat(k_heads, num_heads // num_kv_heads, axis=0) gives 0, 0, 1, 1, ...",
            ),
            Mistake(
                "scale sqrt(d_model)",
                _gqa_sqrt_d_model,
                "You scaled the scores by 1/sqrt(d_model). Each head's dot products have d_head "
                "terms: scale by 1/sqrt(d_head).",
            ),
            Mistake(
                "no scale",
                _gqa_no_scale,
                "You did not scale the scores: divide Q K^T by sqrt(d_head) before the softmax.",
            ),
            Mistake(
                "no output projection",
                _gqa_no_projection,
                "You concatenated the heads but did not multiply by w_o.",
            ),
            Mistake(
                "bare reshape merge",
                _gqa_slip(bare_merge=True),
                "Right shape, scrambled tokens: you merged the heads' outputs (h, n, d_head) with "
                "a bare reshape to (n, h * d_head), which mixes rows of different tokens. "
                "Transpose to (n, h, d_head) first, then reshape.",
            ),
            Mistake(
                "causal mask",
                _gqa_slip(causal=True),
                "You applied a causal mask. This question's gqa is plain self-attention over all "
                "n tokens, with no mask: every query may attend to every key.",
            ),
            Mistake(
                "softmax over queries",
                _gqa_slip(axis=-2),
                "Your softmax runs over the query axis: each query's weights must sum to 1 over "
                "the keys, so normalise over the last axis (axis=-1) of the (h, n, n) scores.",
            ),
        ),
        hint="Project (q = x @ w_q, k = x @ w_k, v = x @ w_v), split Q into num_heads heads and "
        "K, V into num_kv_heads heads (each: reshape to (n, heads, d_head), then transpose to "
        "(heads, n, d_head)), repeat each KV head for its group (np.repeat, axis 0: query head "
        "i reads KV head i // (num_heads // num_kv_heads)), attend per head with scale "
        "1/sqrt(d_head), merge the heads and multiply by w_o.",
        forbidden=(
            "mha_helpers.heads.grouped_query_attention",
            "mha_helpers.heads.multi_head_attention",
            "torch.nn.functional.scaled_dot_product_attention",
        ),
        traits=_gqa_traits,
    )
)

# --- q05_mean_pool ----------------------------------------------------------------------------


def _pool_reference(w, num_heads, num_kv_heads):
    w = np.asarray(w, dtype=float)
    d_model, width = w.shape
    d_head, group = width // num_heads, num_heads // num_kv_heads
    heads = w.reshape(d_model, num_kv_heads, group, d_head)  # (d_model, g, group, d_head)
    return heads.mean(axis=2).reshape(d_model, num_kv_heads * d_head)  # (d_model, g * d_head)


def _pool_cases(rng):
    """(w, h, g) with groups of 2, 3 and 4; one case has d_model != h * d_head."""
    cases = []
    for d_model, h, d_head, g in [
        (8, 4, 2, 2),
        (12, 6, 2, 2),
        (10, 8, 3, 2),
        (16, 8, 2, 4),
        (8, 4, 2, 1),
        (int(rng.integers(4, 9)), 6, 3, 3),
    ]:
        cases.append((rng.normal(size=(d_model, h * d_head)), h, g))
    return cases


def _pool_strided(w, num_heads, num_kv_heads):
    w = np.asarray(w, dtype=float)
    d_model, width = w.shape
    d_head, group = width // num_heads, num_heads // num_kv_heads
    heads = w.reshape(d_model, group, num_kv_heads, d_head)  # groups heads i, i+g, i+2g, ...
    return heads.mean(axis=1).reshape(d_model, num_kv_heads * d_head)


def _pool_sum(w, num_heads, num_kv_heads):
    return _pool_reference(w, num_heads, num_kv_heads) * (num_heads // num_kv_heads)


def _pool_first_head(w, num_heads, num_kv_heads):
    w = np.asarray(w, dtype=float)
    d_model, width = w.shape
    d_head, group = width // num_heads, num_heads // num_kv_heads
    heads = w.reshape(d_model, num_kv_heads, group, d_head)
    return heads[:, :, 0].reshape(d_model, num_kv_heads * d_head)


def _pool_last_head(w, num_heads, num_kv_heads):
    w = np.asarray(w, dtype=float)
    d_model, width = w.shape
    d_head, group = width // num_heads, num_heads // num_kv_heads
    heads = w.reshape(d_model, num_kv_heads, group, d_head)
    return heads[:, :, -1].reshape(d_model, num_kv_heads * d_head)


def _pool_rows(w, num_heads, num_kv_heads):
    w = np.asarray(w, dtype=float)
    return w.reshape(w.shape[0], num_heads, -1).mean(axis=1)  # one head's width, all heads mixed


register(
    Question(
        grade_id="q05_mean_pool",
        assignment=ASSIGNMENT,
        points=3,
        kind="function",
        prompt="Implement mean_pool_kv(w, num_heads, num_kv_heads): from an MHA key (or value) "
        "projection w of shape (d_model, num_heads * d_head), build the GQA one, (d_model, "
        "num_kv_heads * d_head), whose KV head j is the mean of the heads of group j.",
        reference=_pool_reference,
        cases=_pool_cases,
        mistakes=(
            Mistake(
                "strided groups",
                _pool_strided,
                "You averaged heads j, j + g, j + 2g, ... (a tiled grouping). Group j is the "
                "consecutive heads j*group ... (j+1)*group - 1: reshape the columns to "
                "(d_model, num_kv_heads, group, d_head) and average over the group axis.",
            ),
            Mistake(
                "sum",
                _pool_sum,
                "You added the heads of each group. Mean-pooling divides by the group size, so a "
                "KV head stays on the scale of the heads it replaces.",
            ),
            Mistake(
                "first head",
                _pool_first_head,
                "You kept one head of each group (its first). The conversion averages all heads "
                "of the group, so every head contributes.",
            ),
            Mistake(
                "last head",
                _pool_last_head,
                "You kept one head of each group (its last). The conversion averages all heads "
                "of the group, so every head contributes.",
            ),
            Mistake(
                "all heads into one",
                _pool_rows,
                "You averaged all heads into one. Average within each group, keeping "
                "num_kv_heads heads.",
            ),
        ),
        hint="Head k owns columns k*d_head ... (k+1)*d_head - 1, and group j is heads j*group ... "
        "(j+1)*group - 1: reshape to (d_model, num_kv_heads, group, d_head), mean over axis 2.",
        traits=lambda w, num_heads, num_kv_heads: (
            (["shared kv"] if num_kv_heads < num_heads else [])
            + (["groups"] if 1 < num_kv_heads < num_heads else [])
        ),
    )
)

# --- q05_cache_bytes --------------------------------------------------------------------------


def _cache_reference(
    num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch
):
    # num_heads (query heads) is given on purpose: the cache does not depend on it.
    return 2 * num_layers * num_kv_heads * d_head * bytes_per_element * seq_len * batch


def _cache_cases(rng):
    """(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch).

    Chosen so that every mistake below gives its own number on the first case where it is
    wrong: the first case stores 1 byte per number (an 8-bit cache) in 3 sequences, with 12
    query heads in groups of 3, so "K only" (x 1/2), "one layer" (x 1/18), "one sequence"
    (x 1/3), "hard-coded 2 bytes" (x 2), "query heads" (x 3) and "group size" (x 3/4) all
    differ; "numbers, not bytes" is right there (1 byte per number) and shows first on the
    second case, in fp32 (x 1/4), where no other mistake gives a quarter."""
    return [
        (18, 12, 4, 64, 100, 1, 3),  # an 8-bit cache, three sequences
        (32, 32, 8, 128, 2048, 4, 2),  # Llama 3 8B's shape in fp32, two sequences
        (80, 64, 8, 128, 4096, 2, 1),  # Llama 2 70B, fp16: 1.25 GiB
        (32, 71, 1, 64, 2048, 2, 3),  # Falcon-7B (MQA), three sequences
        (
            int(rng.integers(2, 40)),
            16,
            int(rng.choice([1, 2, 8])),
            64,
            int(rng.integers(10, 5000)),
            2,
            int(rng.integers(2, 9)),
        ),
    ]


def _cache_no_two(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return num_layers * num_kv_heads * d_head * bytes_per_element * seq_len * batch


def _cache_no_layers(
    num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch
):
    return 2 * num_kv_heads * d_head * bytes_per_element * seq_len * batch


def _cache_no_batch(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return 2 * num_layers * num_kv_heads * d_head * bytes_per_element * seq_len


def _cache_elements(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return 2 * num_layers * num_kv_heads * d_head * seq_len * batch


def _cache_two_bytes(
    num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch
):
    return 2 * num_layers * num_kv_heads * d_head * 2 * seq_len * batch


def _cache_query_heads(
    num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch
):
    return 2 * num_layers * num_heads * d_head * bytes_per_element * seq_len * batch


def _cache_gib(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return (
        _cache_reference(
            num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch
        )
        / 2**30
    )


def _cache_gb(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return (
        _cache_reference(
            num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch
        )
        / 1e9
    )


def _cache_bits(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return 8 * _cache_reference(
        num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch
    )


def _cache_traits(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return (["not one byte"] if bytes_per_element != 1 else []) + (["batch"] if batch > 1 else [])


def _cache_group_size(
    num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch
):
    group = num_heads // num_kv_heads
    return 2 * num_layers * group * d_head * bytes_per_element * seq_len * batch


register(
    Question(
        grade_id="q05_cache_bytes",
        assignment=ASSIGNMENT,
        points=2,
        kind="function",
        prompt="Implement cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, "
        "bytes_per_element, batch): the bytes of the KV cache for batch sequences of seq_len "
        "tokens, in a decoder whose num_heads query heads share num_kv_heads key/value heads.",
        reference=_cache_reference,
        cases=_cache_cases,
        mistakes=(
            Mistake(
                "K only",
                _cache_no_two,
                "Exactly half: the cache stores keys and values, so count both (a factor of 2).",
            ),
            Mistake(
                "one layer",
                _cache_no_layers,
                "You counted one layer. Every layer keeps its own keys and values.",
            ),
            Mistake(
                "one sequence",
                _cache_no_batch,
                "You counted one sequence. Every sequence in the batch has its own cache.",
            ),
            Mistake(
                "numbers, not bytes",
                _cache_elements,
                "You counted numbers, not bytes: multiply by bytes_per_element.",
            ),
            Mistake(
                "hard-coded 2 bytes",
                _cache_two_bytes,
                "You used 2 bytes per number whatever bytes_per_element says. fp16 has 2, but "
                "fp32 has 4 and an 8-bit cache 1: multiply by the bytes_per_element argument.",
            ),
            Mistake(
                "query heads",
                _cache_query_heads,
                "You counted one K and one V head per query head. The cache holds the "
                "num_kv_heads shared heads only; the number of query heads does not appear.",
            ),
            Mistake(
                "group size",
                _cache_group_size,
                "You used the group size, num_heads // num_kv_heads (query heads per KV head), "
                "where the number of KV heads belongs. The cache holds num_kv_heads heads.",
            ),
            Mistake(
                "GiB",
                _cache_gib,
                "Your answer is in GiB (divided by 2**30). The function returns bytes, a whole "
                "number; convert to GiB only when you print it.",
            ),
            Mistake(
                "GB",
                _cache_gb,
                "Your answer is in GB (divided by 10**9). The function returns bytes, a whole "
                "number; convert only when you print it.",
            ),
            Mistake(
                "bits",
                _cache_bits,
                "Your answer is 8 times too large: that is bits. bytes_per_element is already "
                "in bytes.",
            ),
        ),
        hint="Per token and layer the cache holds num_kv_heads * d_head numbers for K and as many for "
        "V; multiply by layers, tokens, sequences and bytes_per_element.",
        forbidden=("mha_helpers.cost.kv_cache_bytes",),
        traits=_cache_traits,
    )
)

# --- q05_max_batch ----------------------------------------------------------------------------

register(
    Question(
        grade_id="q05_max_batch",
        assignment=ASSIGNMENT,
        points=2,
        kind="value",
        prompt="Llama 2 70B (80 layers, 8 KV heads of width 128) in fp16: how many sequences of 4096 "
        "tokens fit in a KV-cache budget of 40 GiB (40 * 2**30 bytes)? A whole number.",
        expected=32,
        mistakes=(
            Mistake(
                "MHA",
                4,
                "That is the answer with 64 KV heads, one per query head. Llama 2 70B shares "
                "8 KV heads among its 64 query heads.",
            ),
            Mistake(
                "K only",
                64,
                "Twice too many: the cache holds both keys and values (or: you counted numbers, "
                "and fp16 stores 2 bytes per number).",
            ),
            Mistake("fp32", 16, "That is for 4-byte numbers. fp16 uses 2 bytes per number."),
            Mistake(
                "GB",
                29,
                "That is for 40 GB = 40 * 10**9 bytes. The budget is 40 GiB = 40 * 2**30 bytes.",
            ),
            Mistake("one layer", 2560, "Every one of the 80 layers keeps its own cache."),
            Mistake(
                "bytes of one sequence",
                2 * 80 * 8 * 128 * 2 * 4096,
                "That is the size of one sequence's cache in bytes (1.25 GiB). The question asks "
                "how many sequences fit: divide the budget by it.",
            ),
            Mistake(
                "GiB of one sequence",
                1.25,
                "That is one sequence's cache in GiB. The question asks how many sequences fit "
                "in 40 GiB: divide 40 GiB by it.",
            ),
        ),
        hint="One sequence needs 2 * 80 * 8 * 128 * 2 * 4096 bytes; divide the budget by that and "
        "round down.",
        extra={"answer_type": "int"},  # a whole number of sequences
    )
)
