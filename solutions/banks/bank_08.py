"""Questions for exercise 08: attention at scale (``solutions/08_attention_at_scale.ipynb``).

Lesson: ``notebooks/08_attention_at_scale.ipynb``. Four questions, 11 points, all graded
automatically:

* ``q08_online_update`` (3): one step of the online softmax (running max, running sum,
  rescaled output);
* ``q08_tiled`` (4): exact attention computed block by block over the keys;
* ``q08_mla_cache`` (2): DeepSeek-V2's latent KV cache per token, in bytes;
* ``q08_decode_bound`` (2): a lower bound on Llama 2 7B's time per generated token on an H100.

The classic slips of tiling each get their own hint: forgetting to rescale the running output,
rescaling it twice, a maximum that is not carried across blocks, and the last short block
dropped. Every case set has blocks whose maximum rises, and key counts that are not a multiple
of the block size.
"""

from __future__ import annotations

import numpy as np

from mha_helpers.grading import Mistake, Question, register

ASSIGNMENT = "08_attention_at_scale"

__all__ = ["ASSIGNMENT"]

# --- q08_online_update --------------------------------------------------------------------------


def _update(m, ell, acc, scores, v_block, slip=None):
    m, ell, acc, scores, v_block = (
        np.asarray(a, dtype=float) for a in (m, ell, acc, scores, v_block)
    )
    if slip == "max not carried":  # each block measured against its own max, old sums not rescaled
        m_new = scores.max(axis=-1)  # (n_q,)
        p = np.exp(scores - m_new[:, None])  # (n_q, b)
        return m_new, ell + p.sum(axis=-1), acc + p @ v_block
    m_new = np.maximum(m, scores.max(axis=-1))  # (n_q,)
    rescale = np.exp(m - m_new)  # (n_q,)
    p = np.exp(scores - m_new[:, None])  # (n_q, b)
    if slip == "acc not rescaled":
        return m_new, rescale * ell + p.sum(axis=-1), acc + p @ v_block
    if slip == "rescaled twice":
        return m_new, rescale**2 * ell + p.sum(axis=-1), rescale[:, None] ** 2 * acc + p @ v_block
    if slip == "nothing rescaled":
        return m_new, ell + p.sum(axis=-1), acc + p @ v_block
    if slip == "normalised":  # divided by the running sum at every step
        ell_new = rescale * ell + p.sum(axis=-1)
        return m_new, ell_new, (rescale[:, None] * acc + p @ v_block) / ell_new[:, None]
    return m_new, rescale * ell + p.sum(axis=-1), rescale[:, None] * acc + p @ v_block


def _update_reference(m, ell, acc, scores, v_block):
    return _update(m, ell, acc, scores, v_block)


def _running_state(rng, n_q, d_v, seen):
    """The true state after `seen` earlier keys (or the empty state when seen == 0)."""
    if seen == 0:
        return np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, d_v))
    s = rng.normal(scale=2.0, size=(n_q, seen))
    v = rng.normal(size=(seen, d_v))
    m = s.max(axis=1)
    e = np.exp(s - m[:, None])
    return m, e.sum(axis=1), e @ v


def _update_cases(rng):
    """(m, ell, acc, scores, v_block). The first case has a block whose maximum exceeds the old
    one in some rows and not in others (so every slip shows); one starts from the empty state;
    one has masked (-inf) entries; one has scores in the hundreds (a naive exp overflows)."""
    cases = []
    for n_q, d_v, seen, b, shift in [
        (3, 2, 4, 3, np.array([3.0, -3.0, 0.5])),  # rows where the max rises, falls, is close
        (2, 3, 0, 4, np.zeros(2)),  # the first block: empty state
        (4, 1, 6, 5, np.array([4.0, 0.0, -2.0, 6.0])),
        (2, 2, 3, 2, np.array([2.0, 1.0])),  # with masked entries, below
        (3, 2, 5, 1, np.array([5.0, -5.0, 0.0])),  # a block of one key
        (int(rng.integers(2, 5)), 2, int(rng.integers(2, 8)), int(rng.integers(2, 6)), None),
    ]:
        m, ell, acc = _running_state(rng, n_q, d_v, seen)
        if shift is None:
            shift = rng.normal(scale=3.0, size=n_q)
        scores = rng.normal(scale=2.0, size=(n_q, b)) + shift[:, None]
        v_block = rng.normal(size=(b, d_v))
        cases.append((m, ell, acc, scores, v_block))
    m, ell, acc, scores, v_block = cases[3]
    scores = scores.copy()
    scores[0, 1] = -np.inf  # a masked key (each row keeps at least one allowed key)
    cases[3] = (m, ell, acc, scores, v_block)
    # Scores in the hundreds: the old state at 800, the block reaching 810, past where
    # np.exp overflows float64 (about 709.78), so an exp of raw scores gives inf and nan.
    m, ell, acc = _running_state(rng, 2, 2, 3)
    cases.append((m + 800.0, ell, acc, rng.normal(size=(2, 3)) + 810.0, rng.normal(size=(3, 2))))
    return cases


def _bits(flags) -> str:
    return "".join("1" if f else "0" for f in flags)


def _update_traits(m, ell, acc, scores, v_block):
    """Row properties (one row per query): where the block's maximum is above the running one,
    where a key is masked, where the state is still empty; and whether the scores are in the
    hundreds (past where a naive np.exp overflows)."""
    m, scores = np.asarray(m, dtype=float), np.asarray(scores, dtype=float)
    first = np.isneginf(m)
    rose = (scores.max(axis=-1) > m) & ~first
    big = np.abs(np.concatenate([m[np.isfinite(m)], scores[np.isfinite(scores)]]))
    return (["scores in the hundreds"] if big.size and big.max() > 700 else []) + [
        f"rows:the maximum rose:{_bits(rose)}",
        f"rows:a masked key:{_bits(np.isneginf(scores).any(axis=-1))}",
        f"rows:the first block:{_bits(first)}",
    ]


def _slip(name):
    def answer(m, ell, acc, scores, v_block):
        return _update(m, ell, acc, scores, v_block, slip=name)

    return answer


register(
    Question(
        grade_id="q08_online_update",
        assignment=ASSIGNMENT,
        points=3,
        kind="function",
        prompt="Implement online_update(m, ell, acc, scores, v_block): fold one block of scores "
        "(n_q, b) and values (b, d_v) into the running max m (n_q,), running sum ell (n_q,) and "
        "unnormalised output acc (n_q, d_v); return (m_new, ell_new, acc_new).",
        reference=_update_reference,
        cases=_update_cases,
        traits=_update_traits,
        extra={"outputs": ["m_new", "ell_new", "acc_new"]},
        mistakes=(
            Mistake(
                "acc not rescaled",
                _slip("acc not rescaled"),
                "acc_new is wrong where the maximum rose: you rescaled ell but not acc. Both sums "
                "were taken relative to the old maximum, so multiply acc by exp(m - m_new) too, "
                "before adding the block's p @ v_block.",
            ),
            Mistake(
                "rescaled twice",
                _slip("rescaled twice"),
                "ell_new and acc_new are too small where the maximum rose: you multiplied the old "
                "sums by exp(m - m_new) twice. Rescale them exactly once per block.",
            ),
            Mistake(
                "max not carried",
                _slip("max not carried"),
                "m_new is the block's own maximum, not the running one, and the old sums were not "
                "rescaled to it. Carry the maximum across blocks: m_new = np.maximum(m, "
                "scores.max(axis=-1)), then rescale the old ell and acc by exp(m - m_new).",
            ),
            Mistake(
                "nothing rescaled",
                _slip("nothing rescaled"),
                "m_new is right, but neither ell nor acc was rescaled. The old sums were taken "
                "relative to the old maximum: multiply both by exp(m - m_new) before adding the "
                "block's terms.",
            ),
            Mistake(
                "normalised",
                _slip("normalised"),
                "You divided acc by the running sum. acc stays unnormalised during the loop (a sum "
                "of exp(score - m) * value); divide by ell only once, after the last block.",
            ),
        ),
        hint="m_new = np.maximum(m, scores.max(axis=-1)); rescale = np.exp(m - m_new); "
        "p = np.exp(scores - m_new[:, None]); ell_new = rescale * ell + p.sum(axis=-1); "
        "acc_new = rescale[:, None] * acc + p @ v_block.",
        forbidden=("mha_helpers.tiling.online_softmax_update",),
    )
)

# --- q08_tiled ----------------------------------------------------------------------------------


def _tiled(q, k, v, block_size, slip=None):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    n_q, d_k = q.shape
    n_k, d_v = v.shape
    scale = 1.0 if slip == "no scale" else 1.0 / np.sqrt(d_k)
    stop = n_k - n_k % block_size if slip == "last block dropped" and n_k > block_size else n_k
    update_slip = {
        "acc not rescaled": "acc not rescaled",
        "rescaled twice": "rescaled twice",
        "max not carried": "max not carried",
    }.get(slip)
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, d_v))
    for start in range(0, stop, block_size):
        block = slice(start, min(start + block_size, n_k))
        scores = (q @ k[block].T) * scale  # (n_q, b)
        m, ell, acc = _update(m, ell, acc, scores, v[block], slip=update_slip)
    if slip == "not divided":
        return acc
    return acc / ell[:, None]  # (n_q, d_v)


def _tiled_reference(q, k, v, block_size):
    return _tiled(q, k, v, block_size)


def _tiled_cases(rng):
    """(q, k, v, block_size): key counts that are not multiples of the block (and one that is),
    scores that rise from block to block, a block larger than all keys, and scores in the
    hundreds, where a softmax without the running maximum overflows."""
    cases = []
    for n_q, n_k, d_k, d_v, block, rise in [
        (3, 10, 4, 2, 4, 1.0),  # blocks 4, 4, 2; later keys score higher
        (2, 7, 3, 3, 3, -1.0),  # blocks 3, 3, 1; earlier keys score higher
        (4, 12, 4, 2, 4, 0.5),  # a multiple of the block
        (2, 5, 2, 2, 8, 0.0),  # one block, larger than the keys
        (3, 9, 5, 4, 2, 1.5),
        (int(rng.integers(2, 5)), int(rng.integers(6, 15)), 4, 3, int(rng.integers(2, 5)), 1.0),
    ]:
        q = rng.normal(size=(n_q, d_k))
        k = rng.normal(size=(n_k, d_k)) + rise * np.linspace(0.0, 2.0, n_k)[:, None] * np.sign(
            q.sum(axis=0)
        )
        v = rng.normal(size=(n_k, d_v))
        cases.append((q, k, v, block))
    q = 20 * rng.normal(size=(2, 4))  # scores of several hundred
    cases.append((q, 20 * rng.normal(size=(9, 4)), rng.normal(size=(9, 2)), 4))
    # every score below -1000: exp of a score underflows to 0 unless the running maximum
    # starts at -inf and follows the scores down (a maximum started at 0 gives 0 / 0)
    q = 30 + 10 * np.abs(rng.normal(size=(2, 4)))
    cases.append((q, -(30 + 10 * np.abs(rng.normal(size=(6, 4)))), rng.normal(size=(6, 2)), 3))
    # many keys, a block wider than all the queries: the whole (n_q, n_k) score matrix is
    # 25 times one block's scores, so building it (or blocking the queries instead of the
    # keys) shows in the memory the call holds (the question's "never forming" is checked);
    # n_q, d_k, d_v, block_size and n_k all differ, so an array with an axis of all n_k keys
    # and no feature axis is a row of scores over every key (one query at a time over all
    # the keys: no key blocks), told apart from the keys' own copies (n_k, d_k), (n_k, d_v)
    n_q, n_k, d_k, d_v, block = 24, 800, 3, 5, 32
    cases.append(
        (
            rng.normal(size=(n_q, d_k)),
            rng.normal(size=(n_k, d_k)),
            rng.normal(size=(n_k, d_v)),
            block,
        )
    )
    return cases


def _tiled_slip(name):
    def answer(q, k, v, block_size):
        return _tiled(q, k, v, block_size, slip=name)

    return answer


register(
    Question(
        grade_id="q08_tiled",
        assignment=ASSIGNMENT,
        points=4,
        kind="function",
        prompt="Implement tiled(q, k, v, block_size): softmax(q k^T / sqrt(d_k)) v for q (n_q, d_k), "
        "k (n_k, d_k), v (n_k, d_v), computed block by block over the keys with the online "
        "softmax, never forming the whole (n_q, n_k) score matrix; n_k need not be a multiple of "
        "block_size.",
        reference=_tiled_reference,
        cases=_tiled_cases,
        traits=lambda q, k, v, block_size: (
            (["partial block"] if len(k) % block_size else [])
            + (["several blocks"] if len(k) > block_size else [])
            + (["d_k != d_v"] if np.shape(q)[-1] != np.shape(v)[-1] else [])
        ),
        # "never forming the whole (n_q, n_k) score matrix": no call may hold half of it
        # "over blocks of block_size keys": no array over all the keys without a feature axis
        extra={
            "limits": {
                "peak": {"dims": [[0, 0], [1, 0]], "fraction": 0.5, "min_bytes": 65536},
                "key_blocks": {
                    "queries": [0, 0],
                    "keys": [1, 0],
                    "block": 3,
                    "other": [[0, 1], [2, 1]],
                },
            }
        },
        mistakes=(
            Mistake(
                "last block dropped",
                _tiled_slip("last block dropped"),
                "Right when n_k is a multiple of block_size, wrong otherwise: the last, shorter "
                "block of keys is missing. Loop over range(0, n_k, block_size) and slice up to "
                "min(start + block_size, n_k).",
            ),
            Mistake(
                "acc not rescaled",
                _tiled_slip("acc not rescaled"),
                "Wrong when a later block has larger scores: the running output was not rescaled "
                "when the maximum rose. Multiply acc by exp(m - m_new) before adding the block.",
            ),
            Mistake(
                "rescaled twice",
                _tiled_slip("rescaled twice"),
                "Wrong when a later block has larger scores: the old sums were multiplied by "
                "exp(m - m_new) twice. Rescale once per block.",
            ),
            Mistake(
                "max not carried",
                _tiled_slip("max not carried"),
                "Each block's exponentials were taken against that block's own maximum and added "
                "to sums taken against another. Carry one running maximum across the blocks and "
                "rescale the old sums when it rises.",
            ),
            Mistake(
                "no scale",
                _tiled_slip("no scale"),
                "The scores were not scaled: divide q k^T by sqrt(d_k).",
            ),
            Mistake(
                "not divided",
                _tiled_slip("not divided"),
                "You returned the running output without dividing by the running sum: after the "
                "last block, return acc / ell[:, None].",
            ),
        ),
        hint="Start with m = -inf, ell = 0, acc = 0; for each block of keys, compute its scaled "
        "scores and apply the online update from question 1; after the loop return acc / ell.",
        forbidden=(
            "mha_helpers.tiling.tiled_attention",
            "mha_helpers.tiling.online_softmax_update",
            "mha_helpers.attention.scaled_dot_product_attention",
            "mha_helpers.attention.softmax",
        ),
    )
)

# --- q08_mla_cache ------------------------------------------------------------------------------

register(
    Question(
        grade_id="q08_mla_cache",
        assignment=ASSIGNMENT,
        points=2,
        kind="value",
        prompt="DeepSeek-V2 has 60 layers, 128 heads of width 128, a KV latent of d_c = 512 and "
        "a decoupled RoPE key of d_h^R = 64. How many bytes does its MLA cache hold per token "
        "(all layers), in fp16?",
        expected=(512 + 64) * 60 * 2,
        extra={"answer_type": "int"},
        mistakes=(
            Mistake(
                "latent only",
                512 * 60 * 2,
                "The cache also keeps the shared RoPE key, d_h^R = 64 numbers per token and "
                "layer, besides the latent of 512.",
            ),
            Mistake(
                "K and V",
                2 * (512 + 64) * 60 * 2,
                "Twice too much: MLA caches one latent from which both keys and values are "
                "rebuilt, not one for K and one for V.",
            ),
            Mistake(
                "numbers, not bytes",
                (512 + 64) * 60,
                "That is the number of cached numbers; fp16 stores each in 2 bytes.",
            ),
            Mistake(
                "one layer",
                (512 + 64) * 2,
                "That is one layer. Every one of the 60 layers keeps its own latent cache.",
            ),
            Mistake(
                "RoPE per head",
                (512 + 64 * 128) * 60 * 2,
                "The decoupled RoPE key is shared by all heads: 64 numbers per token and layer, "
                "not 64 per head (the queries have a RoPE part per head, the key does not).",
            ),
            Mistake(
                "MHA",
                2 * 128 * 128 * 60 * 2,
                "That is what multi-head attention with 128 heads of 128 would cache. MLA caches "
                "d_c + d_h^R numbers per token and layer.",
            ),
        ),
        hint="Per token and layer MLA caches d_c + d_h^R numbers; multiply by the layers and by 2 "
        "bytes.",
    )
)

# --- q08_decode_bound ---------------------------------------------------------------------------

_WEIGHTS = 13_214_687_232  # Llama 2 7B's weight matrices in fp16 (lesson 08, step_cost)
_CACHE = 2 * 32 * 32 * 128 * 2 * 4096  # its KV cache at 4096 tokens, fp16: 2 GiB
_BANDWIDTH = 3.35e12  # H100 SXM datasheet, bytes per second

register(
    Question(
        grade_id="q08_decode_bound",
        assignment=ASSIGNMENT,
        points=2,
        kind="value",
        prompt="Llama 2 7B generates one token for ONE sequence that already has 4096 tokens in "
        "its KV cache. Each step reads 13,214,687,232 bytes of weights and the whole cache "
        "(32 layers, 32 KV heads of width 128, fp16). With 3.35e12 bytes per second of memory "
        "bandwidth, what is the lower bound on the time per generated token, in milliseconds, to 3 "
        "significant figures (more digits are fine)?",
        extra={"sig_figs": 3},
        expected=(_WEIGHTS + _CACHE) / _BANDWIDTH * 1e3,
        mistakes=(
            Mistake(
                "weights only",
                _WEIGHTS / _BANDWIDTH * 1e3,
                "That counts the weights only. Each step also reads the whole KV cache of the "
                "sequence: 2 * 32 * 32 * 128 * 2 bytes per token, for 4096 tokens.",
            ),
            Mistake(
                "seconds",
                (_WEIGHTS + _CACHE) / _BANDWIDTH,
                "That is in seconds. The question asks for milliseconds.",
            ),
            Mistake(
                "K only",
                (_WEIGHTS + _CACHE / 2) / _BANDWIDTH * 1e3,
                "The cache holds keys and values: count both (the factor of 2).",
            ),
            Mistake(
                "cache only",
                _CACHE / _BANDWIDTH * 1e3,
                "That is the cache alone. Every step also reads all the weights.",
            ),
            Mistake(
                "cache in GB",
                (_WEIGHTS + 2e9) / _BANDWIDTH * 1e3,
                "The cache is 2 GiB = 2 * 2**30 bytes, not 2 * 10**9.",
            ),
        ),
        hint="time >= bytes read / bandwidth: (weights + cache bytes) / 3.35e12 seconds, times "
        "1000 for milliseconds.",
    )
)
