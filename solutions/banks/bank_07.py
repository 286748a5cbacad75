"""Questions for exercise 07: multi-head attention at work (``solutions/07_attention_at_work.ipynb``).

Lesson: ``notebooks/07_attention_at_work.ipynb``. Six questions, 12 points, 10 of them graded
automatically:

* ``q07_cross_shape`` (1): the shape of cross-attention's weights for given batch, h, n_q, n_k;
* ``q07_padding_causal_mask`` (3): a decoder's mask from sequence lengths, padding AND causal;
* ``q07_key_padding_mask`` (2): PyTorch's ``key_padding_mask`` from the course's boolean mask;
* ``q07_in_proj_weight`` (3): PyTorch's ``in_proj_weight`` from W_Q, W_K, W_V;
* ``q07_pytorch_call`` (1): multiple choice, which PyTorch call computes the course's layer;
* ``q07_explain`` (2): why padding changes real tokens without a mask, graded by hand.

The public cases of each function question are chosen so that every listed mistake gives a
result different from the right one and from every other mistake on the first case, so each
gets its own hint (``tests/test_bank_07.py`` checks this on the public and on fresh cases).
"""

from __future__ import annotations

import numpy as np

from mha_helpers.grading import Mistake, Question, register

ASSIGNMENT = "07_attention_at_work"

# --- q07_cross_shape -----------------------------------------------------------------------------

register(
    Question(
        grade_id="q07_cross_shape",
        assignment=ASSIGNMENT,
        points=1,
        kind="value",
        prompt="A batch of 2 decoder inputs of n_q = 5 target tokens attends, with h = 4 heads, to an "
        "encoder output of n_k = 7 source tokens (context=). What is the shape of the weights "
        "that multi_head_attention(..., return_weights=True) returns?",
        expected=[2, 4, 5, 7],
        extra={"answer_type": "int"},
        mistakes=(
            Mistake(
                "swapped",
                [2, 4, 7, 5],
                "Rows are queries and columns are keys: the queries come from the decoder (5 target "
                "tokens), the keys from the encoder (7 source tokens).",
            ),
            Mistake(
                "square from queries",
                [2, 4, 5, 5],
                "That is the shape of the decoder's self-attention. In cross-attention the keys come "
                "from the encoder's output, so there is one column per source token.",
            ),
            Mistake(
                "square from keys",
                [2, 4, 7, 7],
                "That is the shape of the encoder's self-attention. In cross-attention the queries "
                "come from the decoder, so there is one row per target token.",
            ),
            Mistake(
                "averaged over heads",
                [2, 5, 7],
                "That is what torch.nn.MultiheadAttention returns by default (averaged over heads). "
                "The course's function keeps one matrix per head.",
            ),
            Mistake(
                "heads before the batch",
                [4, 2, 5, 7],
                "The order of the axes is wrong: the batch axis comes first, then the heads: "
                "(batch, h, n_q, n_k).",
            ),
            Mistake(
                "no batch axis",
                [4, 5, 7],
                "One matrix per head for each query token and key token, and all of that once per "
                "sequence in the batch: do not forget the batch axis in front.",
            ),
        ),
        hint="(batch, heads, queries, keys): the queries are the decoder's tokens, the keys the "
        "encoder's.",
    )
)

# --- q07_padding_causal_mask -------------------------------------------------------------------


def _padding_causal_reference(lengths, n):
    """(batch,) lengths and the padded length n -> boolean (batch, n, n), True = may attend."""
    lengths = np.asarray(lengths)
    key_valid = np.arange(n) < lengths[:, None]  # (batch, n_k): True = real token
    causal = np.tril(np.ones((n, n), dtype=bool))  # (n_q, n_k): j <= i
    return causal[None] & key_valid[:, None, :]  # (batch, n_q, n_k)


def _padding_causal_cases(rng):
    """The first case has one full and one short sequence, so every mistake below differs."""
    batch = int(rng.integers(2, 5))
    n = int(rng.integers(4, 7))
    lengths = rng.integers(1, n + 1, size=batch)
    lengths[0] = n  # one sequence without padding
    lengths[1] = int(rng.integers(1, n - 1))  # and one with at least two padding tokens
    # and one without any padding (only the causal part matters there)
    # the last: every sequence shorter than the padded length n (the mask is (batch, n, n)
    # whatever the longest sequence); lengths stay an integer array, as the question says
    return [
        (np.array([4, 2]), 4),
        (np.array([3, 1, 5]), 5),
        (lengths, n),
        (np.array([4, 4]), 4),
        (np.array([3, 1, 2]), 5),
    ]


def _pcm_parts(lengths, n):
    lengths = np.asarray(lengths)
    i = np.arange(n)[:, None]  # query index, (n_q, 1)
    j = np.arange(n)[None, :]  # key index, (1, n_k)
    L = lengths[:, None, None]  # (batch, 1, 1)
    return i, j, L


def _pcm_polarity(lengths, n):
    return ~_padding_causal_reference(lengths, n)


def _pcm_rows(lengths, n):
    i, j, L = _pcm_parts(lengths, n)
    return (j <= i) & (i < L)  # padding applied to the queries (rows) instead of the keys


def _pcm_no_causal(lengths, n):
    i, j, L = _pcm_parts(lengths, n)
    return np.broadcast_to(j < L, (len(lengths), n, n)).copy()


def _pcm_no_padding(lengths, n):
    i, j, L = _pcm_parts(lengths, n)
    return np.broadcast_to(j <= i, (len(lengths), n, n)).copy()


def _pcm_upper(lengths, n):
    i, j, L = _pcm_parts(lengths, n)
    return (j >= i) & (j < L)


def _pcm_off_by_one(lengths, n):
    i, j, L = _pcm_parts(lengths, n)
    return (j <= i) & (j <= L)


def _pcm_strict(lengths, n):
    i, j, L = _pcm_parts(lengths, n)
    return (j < i) & (j < L)


register(
    Question(
        grade_id="q07_padding_causal_mask",
        assignment=ASSIGNMENT,
        points=3,
        kind="function",
        prompt="Implement padding_causal_mask(lengths, n): the lengths of the sequences in a batch, "
        "padded at the end to n tokens -> the decoder's boolean mask (batch, n, n), True where "
        "query i of sequence b may attend to key j: j <= i and key j is a real token.",
        reference=_padding_causal_reference,
        cases=_padding_causal_cases,
        mistakes=(
            Mistake(
                "polarity flipped",
                _pcm_polarity,
                "Every entry is the opposite: you wrote PyTorch's convention (True = blocked). In "
                "the course, True means the query MAY attend to the key.",
            ),
            Mistake(
                "padding over the queries",
                _pcm_rows,
                "You blocked the padding *queries* (rows) instead of the padding *keys* (columns). "
                "The padding mask says which keys nobody may look at: compare the key index j with "
                "the length, and broadcast it over the rows, key_valid[:, None, :]. Blocking rows "
                "also leaves padding queries with no key at all.",
            ),
            Mistake(
                "no causal mask",
                _pcm_no_causal,
                "The padding is right but every query can see later tokens: combine it with the "
                "causal mask (key j <= query i) using &.",
            ),
            Mistake(
                "no padding mask",
                _pcm_no_padding,
                "That is the causal mask alone: real tokens can still attend to padding keys. "
                "Combine it with the padding mask (key j < length of the sequence) using &.",
            ),
            Mistake(
                "causal upside down",
                _pcm_upper,
                "Your causal part lets each query see the keys *after* it (j >= i). A decoder "
                "token may see itself and the tokens before it: j <= i, the lower triangle.",
            ),
            Mistake(
                "padding off by one",
                _pcm_off_by_one,
                "One padding key too many is allowed: a sequence of length L has real tokens at "
                "positions 0 .. L - 1, so key j is real when j < L.",
            ),
            Mistake(
                "no self",
                _pcm_strict,
                "Each query must be allowed to attend to itself: the causal condition is j <= i, "
                "not j < i (with j < i the first query has no key at all).",
            ),
        ),
        hint="Build key_valid = np.arange(n) < lengths[:, None] (batch, n) and the causal mask "
        "np.tril(np.ones((n, n), bool)) (n, n), then combine: causal[None] & key_valid[:, None, :].",
        traits=lambda lengths, n: ["padding"] if np.any(np.asarray(lengths) < n) else [],
    )
)

# --- q07_key_padding_mask ----------------------------------------------------------------------


def _key_padding_reference(mask):
    """The course's boolean mask (batch, n_q, n_k), True = may attend -> PyTorch's
    key_padding_mask (batch, n_k), True = a padding key that no query may attend to."""
    mask = np.asarray(mask, dtype=bool)
    return ~mask.any(axis=-2)  # (batch, n_k)


def _key_padding_cases(rng):
    """A decoder's mask (causal and padding), a cross-attention padding mask (n_q != n_k),
    and a random decoder's mask."""
    cross_valid = np.arange(5) < np.array([5, 3, 1])[:, None]  # (batch, n_k) source lengths
    cross = np.broadcast_to(cross_valid[:, None, :], (3, 3, 5)).copy()  # (batch, n_q=3, n_k=5)
    _, _, (lengths, n), *_ = _padding_causal_cases(rng)
    return [
        (_padding_causal_reference(np.array([4, 2]), 4),),
        (cross,),
        (_padding_causal_reference(lengths, n),),
    ]


def _kpm_polarity(mask):
    return np.asarray(mask).any(axis=-2)


def _kpm_wrong_axis(mask):
    return ~np.asarray(mask).any(axis=-1)  # (batch, n_q): one flag per query


def _kpm_all(mask):
    return ~np.asarray(mask).all(axis=-2)


def _kpm_batch_axis(mask):
    return ~np.asarray(mask).any(axis=0)  # (n_q, n_k): reduced over the sequences


def _kpm_traits(mask):
    m = np.asarray(mask)
    causal = bool(np.any(~m & m.any(axis=-2, keepdims=True)))  # a real key hidden from some query
    return (["rectangular"] if m.shape[-1] != m.shape[-2] else []) + (
        ["causal part"] if causal else []
    )


def _kpm_whole_mask(mask):
    return ~np.asarray(mask)  # (batch, n_q, n_k): an attn_mask, not a key_padding_mask


register(
    Question(
        grade_id="q07_key_padding_mask",
        assignment=ASSIGNMENT,
        points=2,
        kind="function",
        prompt="Implement to_key_padding_mask(mask): the course's boolean mask (batch, n_q, n_k), "
        "True = may attend, built from padding (and perhaps a causal mask) -> PyTorch's "
        "key_padding_mask (batch, n_k), True for a padding key, i.e. a key no query may attend to.",
        reference=_key_padding_reference,
        cases=_key_padding_cases,
        mistakes=(
            Mistake(
                "polarity flipped",
                _kpm_polarity,
                "Every flag is the opposite: PyTorch's key_padding_mask is True for the keys to "
                "IGNORE (padding), the reverse of the course's convention.",
            ),
            Mistake(
                "wrong axis",
                _kpm_wrong_axis,
                "You reduced over the keys (axis -1), which gives one flag per *query*. A key is "
                "padding when no query may attend to it: reduce over the query axis, -2.",
            ),
            Mistake(
                "all instead of any",
                _kpm_all,
                "With a causal mask even a real key is hidden from the queries before it, so "
                "'not every query may attend' (or 'the first query may not attend', reading "
                "only the first row) marks real tokens as padding. A key is padding when "
                "NO query may attend to it: use any over the queries, then invert.",
            ),
            Mistake(
                "whole mask inverted",
                _kpm_whole_mask,
                "That is a (batch, n_q, n_k) attn_mask. PyTorch's key_padding_mask has one flag "
                "per key: shape (batch, n_k).",
            ),
            Mistake(
                "batch axis",
                _kpm_batch_axis,
                "You reduced over axis 0, the sequences of the batch. Each sequence has its own "
                "padding: reduce over the query axis, -2, keeping (batch, n_k).",
            ),
        ),
        hint="A key is padding when no query may attend to it: look down each column (axis -2) with "
        "any, then invert, since PyTorch marks padding with True.",
        traits=_kpm_traits,
        forbidden=(
            "mha_helpers.pytorch.to_pytorch_key_padding_mask",
            "mha_helpers.pytorch.to_pytorch_attn_mask",
        ),
    )
)

# --- q07_in_proj_weight ------------------------------------------------------------------------


def _in_proj_reference(w_q, w_k, w_v):
    """Three (d_model, d_model) course weights (x @ w) -> PyTorch's in_proj_weight (3 d_model, d_model)."""
    return np.concatenate(
        [np.asarray(w).T for w in (w_q, w_k, w_v)], axis=0
    )  # (3 d_model, d_model)


def _in_proj_cases(rng):
    sizes = [4, int(rng.choice([6, 8])), int(rng.choice([2, 3, 5]))]
    return [tuple(rng.normal(size=(d, d)) for _ in range(3)) for d in sizes]


def _ipw_no_transpose(w_q, w_k, w_v):
    return np.concatenate([w_q, w_k, w_v], axis=0)


def _ipw_columns(w_q, w_k, w_v):
    return np.concatenate([w_q, w_k, w_v], axis=1)  # (d_model, 3 d_model): the course's layout


def _ipw_columns_transposed(w_q, w_k, w_v):
    return np.concatenate([w_q.T, w_k.T, w_v.T], axis=1)  # (d_model, 3 d_model)


def _ipw_stacked(w_q, w_k, w_v):
    return np.stack([w_q.T, w_k.T, w_v.T])  # (3, d_model, d_model)


def _ipw_kqv(w_q, w_k, w_v):
    return np.concatenate([w_k.T, w_q.T, w_v.T], axis=0)


def _ipw_vkq(w_q, w_k, w_v):
    return np.concatenate([w_v.T, w_k.T, w_q.T], axis=0)


def _ipw_qvk(w_q, w_k, w_v):
    return np.concatenate([w_q.T, w_v.T, w_k.T], axis=0)


_COLUMNS_HINT = (
    "Your result has d_model rows and 3 * d_model columns. PyTorch stacks the three "
    "blocks on top of each other: 3 * d_model rows, d_model columns (axis 0), each "
    "block transposed because nn.Linear computes x @ weight.T."
)

register(
    Question(
        grade_id="q07_in_proj_weight",
        assignment=ASSIGNMENT,
        points=3,
        kind="function",
        prompt="Implement in_proj_weight(w_q, w_k, w_v): three (d_model, d_model) weights of the "
        "course (applied as x @ w) -> torch.nn.MultiheadAttention's in_proj_weight, shape "
        "(3 * d_model, d_model).",
        reference=_in_proj_reference,
        cases=_in_proj_cases,
        mistakes=(
            Mistake(
                "W not transposed",
                _ipw_no_transpose,
                "Right shape, wrong numbers: the blocks are not transposed. nn.Linear computes "
                "x @ weight.T, so the block that reproduces x @ w_q is w_q.T.",
            ),
            Mistake("side by side", _ipw_columns, _COLUMNS_HINT),
            Mistake("side by side, transposed", _ipw_columns_transposed, _COLUMNS_HINT),
            Mistake(
                "np.stack",
                _ipw_stacked,
                "np.stack adds a new axis: (3, d_model, d_model). in_proj_weight is one 2-D matrix, "
                "the three blocks one above the other: np.concatenate(..., axis=0).",
            ),
            Mistake(
                "order K, Q, V",
                _ipw_kqv,
                "The blocks are in the wrong order: PyTorch reads rows 0 .. d_model - 1 as the "
                "query projection, then the key projection, then the value projection (Q, K, V).",
            ),
            Mistake(
                "order V, K, Q",
                _ipw_vkq,
                "The blocks are in reverse order: PyTorch packs them as Q, K, V from the top.",
            ),
            Mistake(
                "order Q, V, K",
                _ipw_qvk,
                "W_K and W_V are swapped: PyTorch packs the blocks as Q, then K, then V.",
            ),
        ),
        hint="Transpose each weight (nn.Linear computes x @ weight.T), then put the three blocks on "
        "top of each other in the order Q, K, V: shape (3 * d_model, d_model).",
        forbidden=("mha_helpers.pytorch.pytorch_state_dict",),
    )
)

# --- q07_pytorch_call (multiple choice) and q07_explain (manual) --------------------------------

register(
    Question(
        grade_id="q07_pytorch_call",
        assignment=ASSIGNMENT,
        points=1,
        kind="value",
        prompt="Which call of torch.nn.MultiheadAttention(d_model, h, bias=False, batch_first=True), "
        "loaded with "
        "the course's weights, computes the course's layer with mask = causal[None] & "
        "key_valid[:, None, :]? Answer with one letter, a to d (the options are in the notebook).",
        expected="b",
        mistakes=(
            Mistake(
                "a",
                "a",
                "PyTorch's boolean masks mean the opposite of the course's: True = may NOT attend. "
                "Both masks have to be inverted.",
            ),
            Mistake(
                "c",
                "c",
                "The causal mask is inverted, but key_padding_mask still has the course's polarity: "
                "it would block the real tokens and let the padding through.",
            ),
            Mistake(
                "d",
                "d",
                "This layer was built with batch_first=True, so it reads x as (batch, n, d_model), "
                "which is what x already is. Transposed, it would read the positions as sequences "
                "and attend across the batch (and key_padding_mask would no longer be "
                "(batch, n_k)).",
            ),
        ),
        hint="Answer with a single letter: 'a', 'b', 'c' or 'd'.",
    )
)

register(
    Question(
        grade_id="q07_explain",
        assignment=ASSIGNMENT,
        points=2,
        kind="manual",
        prompt="In two or three sentences: without a padding mask, why do the outputs of the real "
        "tokens change when only the padding changes, and what does the padding mask change?",
        extra={
            "criteria": (
                "1 point: without a mask the softmax runs over the padding keys too, so part of "
                "each real token's weight (and the padding's values) enters its output",
                "1 point: the mask sets padding keys' scores to minus infinity, so their "
                "weights are exactly 0 and each sequence is computed as if alone",
            )
        },
    )
)
