"""Battery A checked against independent references, without the self-check.

Every wrong answer of ``battery_a`` must be wrong by the question's own words: on some input the
question allows it returns something else than a reference written here from the exercise texts
and the lessons (or raises, or changes its input, or returns the wrong type), or it breaks a rule
the question states (it calls a course function the question forbids, or it builds the whole
score matrix where the question forbids that). Every right answer must agree with the reference
on every input and break no rule.

The references and inputs here are this battery's own: they use no code from ``solutions/``, the
judge or the self-check. Run with

    .venv/bin/python -m pytest tests/lesson_battery/verify_a.py -n0 -p no:cacheprovider -q
"""

from __future__ import annotations

import ast
import copy
import numbers
import warnings

import numpy as np
import pytest

from . import battery_a
from .format import Right, Wrong
from .harness import build

# ---------------------------------------------------------------------------------------------
# References, written from the question texts
# ---------------------------------------------------------------------------------------------


def _softmax_rows(s):
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


def _attend(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    a = _softmax_rows(s)
    return a @ v, a


def _split(x, h):
    n, d = x.shape
    return np.stack([x[:, i * (d // h) : (i + 1) * (d // h)] for i in range(h)])


def _merge(x):
    return np.concatenate(list(x), axis=1)


def ref_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / np.sqrt(q.shape[1])


def ref_softmax(scores):
    return _softmax_rows(scores)


def ref_masked(q, k, v, mask):
    out, w = _attend(q, k, v, mask)
    return out, w


def ref_split(x, num_heads):
    return _split(x, num_heads)


def ref_merge(x):
    return _merge(x)


def ref_per_head(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    return _attend(q, k, v)


def ref_full_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (_split(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        o, _ = _attend(q, k, v, mask)
        outs.append(_merge(o) @ w_o)
    return np.stack(outs)


def ref_concat_project(head_outputs, w_o):
    return np.concatenate([np.asarray(o) for o in head_outputs], axis=1) @ w_o


def ref_params(d_model, num_heads, bias):  # exercise 04 Q1 is multi-head attention only
    d_head = d_model // num_heads
    q_cols, kv_cols = num_heads * d_head, num_heads * d_head
    weights = d_model * q_cols + 2 * d_model * kv_cols + q_cols * d_model
    biases = q_cols + 2 * kv_cols + d_model
    return weights + (biases if bias else 0)


def ref_flops(n, d_model, num_heads):
    d_head = d_model // num_heads

    def mm(a, b, c):
        return 2 * a * b * c

    return (
        3 * mm(n, d_model, d_model)
        + num_heads * (mm(n, d_head, n) + mm(n, n, d_head))
        + mm(n, d_model, d_model)
    )


def ref_gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    group = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)
    k = _split(x @ w_k, num_kv_heads)
    v = _split(x @ w_v, num_kv_heads)
    outs = [_attend(q[i], k[i // group], v[i // group])[0] for i in range(num_heads)]
    return _merge(np.stack(outs)) @ w_o


def ref_mean_pool(w, num_heads, num_kv_heads):
    d_head = w.shape[1] // num_heads
    group = num_heads // num_kv_heads
    cols = []
    for j in range(num_kv_heads):
        heads = [w[:, h * d_head : (h + 1) * d_head] for h in range(j * group, (j + 1) * group)]
        cols.append(sum(heads) / group)
    return np.concatenate(cols, axis=1)


def ref_cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch


def ref_head_backward(q, k, v, d_out):
    n, d_k = q.shape
    causal = np.tril(np.ones((n, n), dtype=bool))
    s = np.where(causal, q @ k.T / np.sqrt(d_k), -np.inf)
    a = _softmax_rows(s)
    d_a = d_out @ v.T
    d_v = a.T @ d_out
    d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True))
    d_s = d_s / np.sqrt(d_k)
    return d_s @ k, d_s.T @ q, d_v


def ref_measure_roles(weights):
    b, h, n, _ = weights.shape
    out = np.zeros((h, 2))
    for head in range(h):
        out[head, 0] = np.mean([weights[s, head, t, t - 1] for s in range(b) for t in range(2, n)])
        out[head, 1] = np.mean([weights[s, head, t, 0] for s in range(b) for t in range(2, n)])
    return out


def ref_remove_head(w_o, head, num_heads):
    d_head = w_o.shape[0] // num_heads
    out = w_o.copy()
    out[head * d_head : (head + 1) * d_head] = 0
    return out


def ref_padding_causal_mask(lengths, n):
    out = np.zeros((len(lengths), n, n), dtype=bool)
    for b, length in enumerate(lengths):
        for i in range(n):
            for j in range(n):
                out[b, i, j] = j <= i and j < length
    return out


def ref_key_padding_mask(mask):
    return ~mask.any(axis=1)


def ref_in_proj_weight(w_q, w_k, w_v):
    return np.concatenate([w_q.T, w_k.T, w_v.T], axis=0)


def ref_online_update(m, ell, acc, scores, v_block):
    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(axis=1), c[:, None] * acc + p @ v_block


def ref_tiled(q, k, v, block_size):
    return _attend(q, k, v)[0]


# ---------------------------------------------------------------------------------------------
# Inputs the questions allow
# ---------------------------------------------------------------------------------------------

RNG = np.random.default_rng(20240607)


def _n(*shape, scale=1.0):
    return RNG.normal(size=shape) * scale


def _random_mask(n_q, n_k):
    mask = RNG.random((n_q, n_k)) < 0.6
    mask[np.arange(n_q), RNG.integers(0, n_k, n_q)] = True  # every row allows a key
    return mask


def _causal(n):
    return np.tril(np.ones((n, n), dtype=bool))


def _roles_weights(b, h, n):
    s = np.where(_causal(n), _n(b, h, n, n, scale=2.0), -np.inf)
    return _softmax_rows(s)


def _pad_mask(lengths, n_q, n_k, causal):
    valid = np.arange(n_k)[None, :] < np.asarray(lengths)[:, None]
    mask = np.broadcast_to(valid[:, None, :], (len(lengths), n_q, n_k))
    if causal:
        mask = mask & np.tril(np.ones((n_q, n_k), dtype=bool))[None]
    return np.array(mask)


def _online_states():
    cases = []
    for n_q, b, d_v in ((3, 4, 2), (4, 3, 5)):
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, d_v))
        s1 = _n(n_q, b, scale=2.0)
        v1 = _n(b, d_v)
        cases.append(((m, ell, acc, s1, v1), {}))  # the first block
        m, ell, acc = ref_online_update(m, ell, acc, s1, v1)
        s2 = _n(n_q, b, scale=2.0)
        s2[0] += 6.0  # a new max in row 0
        s2[1] -= 6.0  # none in row 1
        s2[2, 1:] = -np.inf  # masked keys
        cases.append(((m, ell, acc, s2, _n(b, d_v)), {}))
    return cases


def _tiled_cases():
    cases = []
    for n_q, n_k, d_k, d_v, block in (
        (3, 10, 4, 2, 4),
        (5, 7, 3, 3, 1),
        (4, 8, 2, 5, 8),
        (2, 6, 4, 3, 10),
        (4, 9, 3, 2, 2),
    ):
        cases.append(((_n(n_q, d_k), _n(n_k, d_k), _n(n_k, d_v), block), {}))
    cases.append(((_n(3, 4, scale=30.0), _n(11, 4, scale=30.0), _n(11, 2), 4), {}))  # large scores
    q = 20.0 + _n(2, 4, scale=0.1)
    k = -20.0 + _n(6, 4, scale=0.1)
    cases.append(((q, k, _n(6, 3), 4), {}))  # all near -800
    return cases


def _args(*cases):
    return [(c, {}) for c in cases]


CASES = {
    "q01_scores": _args(
        (_n(5, 6), _n(6, 3), _n(6, 3)),
        (_n(3, 4), _n(4, 2), _n(4, 2)),
        (_n(7, 8), _n(8, 4), _n(8, 4)),
    ),
    "q01_softmax": _args(
        (_n(3, 5),),
        (_n(4, 2, scale=3.0),),
        (np.array([[800.0, 1.0, 0.0, 799.5], [0.5, -0.3, 0.2, 0.1]]),),
        (
            np.array(
                [[1.0, -np.inf, 2.0, 0.5], [-np.inf, 0.3, -np.inf, 1.0], [0.0, 0.0, 0.0, -np.inf]]
            ),
        ),
    ),
    "q01_masked_attention": _args(
        (_n(4, 3), _n(6, 3), _n(6, 2), _random_mask(4, 6)),
        (_n(5, 4), _n(5, 4), _n(5, 3), _causal(5)),
        (_n(3, 2), _n(4, 2), _n(4, 5), np.ones((3, 4), dtype=bool)),
        (_n(6, 3, scale=3.0), _n(3, 3), _n(3, 2), _random_mask(6, 3)),
    ),
    "q02_split_heads": _args(
        (10.0 * np.arange(4)[:, None] + np.arange(6), 2),
        (10.0 * np.arange(4)[:, None] + np.arange(6), 3),
        (_n(5, 8), 4),
        (_n(3, 4), 1),
        (_n(6, 8), 2),
    ),
    "q02_merge_heads": _args((_n(2, 4, 3),), (_n(3, 5, 2),), (_n(4, 2, 2),), (_n(1, 3, 4),)),
    "q02_per_head_attention": _args(
        (_n(5, 8), _n(8, 8), _n(8, 8), _n(8, 8), 2),
        (_n(4, 6), _n(6, 6), _n(6, 6), _n(6, 6), 3),
        (_n(6, 8), _n(8, 8), _n(8, 8), _n(8, 8), 4),
    ),
    "q02_full_layer": [
        ((_n(2, 5, 8), _n(8, 8), _n(8, 8), _n(8, 8), _n(8, 8), 2), {}),
        ((_n(3, 4, 6), _n(6, 6), _n(6, 6), _n(6, 6), _n(6, 6), 3), {"mask": _random_mask(4, 4)}),
        ((_n(2, 5, 8), _n(8, 8), _n(8, 8), _n(8, 8), _n(8, 8), 4), {"mask": _causal(5)}),
    ],
    "q03_concat_project": _args(
        (_n(3, 4, 2), _n(6, 5)),
        ([_n(4, 3), _n(4, 3)], _n(6, 7)),
        (_n(4, 2, 3), _n(12, 12)),
        ([_n(3, 2), _n(3, 2), _n(3, 2)], _n(6, 4)),
    ),
    "q04_params": _args(
        (512, 8, True),
        (512, 8, False),
        (4096, 32, False),
        (10, 4, True),
        (768, 12, True),
        (96, 6, True),
        (64, 8, False),
        (10, 4, False),
    ),
    "q04_flops": _args((3, 8, 2), (1024, 768, 12), (10, 6, 3), (7, 16, 16), (5, 8, 1)),
    "q05_gqa": _args(
        *[
            (_n(n, d), _n(d, d), _n(d, kv * (d // h)), _n(d, kv * (d // h)), _n(d, d), h, kv)
            for n, d, h, kv in (
                (5, 8, 4, 2),
                (4, 12, 6, 3),
                (6, 16, 8, 2),
                (3, 8, 4, 1),
                (4, 8, 2, 2),
            )
        ]
    ),
    "q05_mean_pool": _args(
        (_n(5, 8), 4, 2), (_n(7, 18), 6, 3), (_n(6, 16), 8, 2), (_n(3, 8), 4, 4), (_n(4, 6), 3, 1)
    ),
    "q05_cache_bytes": _args(
        (80, 64, 8, 128, 4096, 2, 1),
        (32, 32, 32, 128, 4096, 2, 4),
        (2, 4, 2, 8, 10, 1, 3),
        (28, 28, 4, 128, 32768, 4, 2),
    ),
    "q06_head_backward": _args(
        (_n(4, 3), _n(4, 3), _n(4, 2), _n(4, 2)),
        (_n(5, 2), _n(5, 2), _n(5, 4), _n(5, 4)),
        (_n(3, 4), _n(3, 4), _n(3, 4), _n(3, 4)),
    ),
    "q06_measure_roles": _args(
        (_roles_weights(3, 2, 6),),
        (_roles_weights(2, 3, 5),),
        (_roles_weights(4, 1, 10),),
        (_roles_weights(2, 2, 10),),
    ),
    "q06_remove_head": _args(
        (_n(8, 8), 1, 2), (_n(12, 12), 0, 3), (_n(6, 6), 2, 3), (_n(4, 4), 3, 4)
    ),
    "q07_padding_causal_mask": _args(
        (np.array([3, 1]), 3), (np.array([5, 2, 4]), 5), (np.array([1, 6]), 7)
    ),
    "q07_key_padding_mask": _args(
        (_pad_mask([4, 2], 4, 4, causal=True),),
        (_pad_mask([5, 2], 3, 5, causal=False),),
        (_pad_mask([3, 1, 5], 5, 5, causal=True),),
        (_pad_mask([2, 4], 4, 4, causal=False),),
    ),
    "q07_in_proj_weight": _args(
        (_n(3, 3), _n(3, 3), _n(3, 3)),
        (_n(4, 4), _n(4, 4), _n(4, 4)),
        (_n(2, 2), _n(2, 2), _n(2, 2)),
    ),
    "q08_online_update": _online_states(),
    "q08_tiled": _tiled_cases(),
}

REFERENCES = {
    "q01_scores": ref_scores,
    "q01_softmax": ref_softmax,
    "q01_masked_attention": ref_masked,
    "q02_split_heads": ref_split,
    "q02_merge_heads": ref_merge,
    "q02_per_head_attention": ref_per_head,
    "q02_full_layer": ref_full_layer,
    "q03_concat_project": ref_concat_project,
    "q04_params": ref_params,
    "q04_flops": ref_flops,
    "q05_gqa": ref_gqa,
    "q05_mean_pool": ref_mean_pool,
    "q05_cache_bytes": ref_cache_bytes,
    "q06_head_backward": ref_head_backward,
    "q06_measure_roles": ref_measure_roles,
    "q06_remove_head": ref_remove_head,
    "q07_padding_causal_mask": ref_padding_causal_mask,
    "q07_key_padding_mask": ref_key_padding_mask,
    "q07_in_proj_weight": ref_in_proj_weight,
    "q08_online_update": ref_online_update,
    "q08_tiled": ref_tiled,
}

# Course functions each question forbids in its own words.
FORBIDDEN_CALLS = {
    "q01_scores": {"softmax", "scaled_dot_product_attention", "multi_head_attention"},
    "q01_softmax": {"softmax", "scaled_dot_product_attention", "multi_head_attention"},
    "q01_masked_attention": {"softmax", "scaled_dot_product_attention", "multi_head_attention"},
    "q02_split_heads": {
        "split_heads",
        "merge_heads",
        "scaled_dot_product_attention",
        "multi_head_attention",
    },
    "q02_merge_heads": {
        "split_heads",
        "merge_heads",
        "scaled_dot_product_attention",
        "multi_head_attention",
    },
    "q02_per_head_attention": {
        "split_heads",
        "merge_heads",
        "scaled_dot_product_attention",
        "multi_head_attention",
    },
    "q02_full_layer": {
        "split_heads",
        "merge_heads",
        "scaled_dot_product_attention",
        "multi_head_attention",
    },
    "q03_concat_project": {"merge_heads", "multi_head_attention"},
    "q04_params": {"attention_params"},
    "q04_flops": {"attention_flops"},
    "q05_gqa": {"grouped_query_attention", "multi_head_attention"},
    "q05_cache_bytes": {"kv_cache_bytes"},
    "q07_in_proj_weight": {"pytorch_state_dict"},
    "q08_online_update": {"online_softmax_update"},
    "q08_tiled": {
        "tiled_attention",
        "online_softmax_update",
        "softmax",
        "scaled_dot_product_attention",
    },
}

# Value questions: the reference and how strictly the question's words ask for the form.
W7B = 13_214_687_232
DECODE_MS = (W7B + 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1e3


def _is_whole(a):
    return isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_))


def _tuple_of_whole(expected):
    return lambda a: (
        isinstance(a, tuple)
        and len(a) == len(expected)
        and all(_is_whole(x) and x == e for x, e in zip(a, expected))
    )


def _whole(expected):
    return lambda a: _is_whole(a) and a == expected


def _letter(expected):
    return lambda a: isinstance(a, str) and a == expected


def _four_numbers(a):
    if not isinstance(a, (list, np.ndarray)):
        return False
    arr = np.asarray(a)
    return arr.shape == (4,) and arr.dtype.kind in "iuf" and np.allclose(arr, [1, 2, 3, 4])


def _bools(expected):
    return lambda a: (
        isinstance(a, tuple)
        and len(a) == len(expected)
        and all(isinstance(x, bool) and x == e for x, e in zip(a, expected))
    )


def _close(expected):
    return lambda a: (
        isinstance(a, numbers.Real)
        and not isinstance(a, (bool, np.bool_))
        and abs(a - expected) <= 1e-9 * abs(expected)
    )


VALUES = {
    "q02_weights_shape": _tuple_of_whole((2, 5, 5)),
    "q03_d_head": _whole(64),
    "q03_identity_output": _four_numbers,
    "q03_concat_vs_average": _letter("b"),
    "q04_changes_with_h": _bools((False, False, True, True)),
    "q04_weight_entries": _whole(12 * 1024 * 1024),
    "q05_max_batch": _whole((40 * 2**30) // (2 * 80 * 8 * 128 * 2 * 4096)),
    "q06_prune_prediction": _letter("b"),
    "q07_cross_shape": _tuple_of_whole((2, 4, 5, 7)),
    "q07_pytorch_call": _letter("b"),
    "q08_mla_cache": _whole((512 + 64) * 60 * 2),
    "q08_decode_bound": _close(DECODE_MS),
}


# ---------------------------------------------------------------------------------------------
# Comparing an answer with the reference
# ---------------------------------------------------------------------------------------------


def _same(got, want) -> str | None:
    """None when ``got`` is ``want``; otherwise why not."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return f"expected a tuple of {len(want)}, got {type(got).__name__}"
        for i, (g, w) in enumerate(zip(got, want)):
            why = _same(g, w)
            if why:
                return f"item {i}: {why}"
        return None
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"expected an array, got {type(got).__name__}"
        got = np.asarray(got)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        if want.dtype == bool:
            if got.dtype != bool:
                return f"dtype {got.dtype}, expected bool"
            return None if np.array_equal(got, want) else "different entries"
        if got.dtype.kind not in "fiu":
            return f"dtype {got.dtype}"
        if not np.allclose(got, want, rtol=1e-9, atol=1e-12):
            return f"values differ by up to {np.nanmax(np.abs(got - want)):.3g}"
        return None
    if _is_whole(want):
        if not _is_whole(got):
            return f"expected a whole number, got {type(got).__name__}"
        return None if got == want else f"{got} != {want}"
    raise TypeError(want)


class _Tracked(np.ndarray):
    """An array that records the shape of every matrix product it takes part in."""

    products: list = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [np.asarray(i) if isinstance(i, _Tracked) else i for i in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(
                np.asarray(o) if isinstance(o, _Tracked) else o for o in kwargs["out"]
            )
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if ufunc is np.matmul and isinstance(result, np.ndarray):
            _Tracked.products.append(result.shape)
        return result.view(_Tracked) if isinstance(result, np.ndarray) and result.ndim else result


def _forbidden_calls(entry) -> set:
    names = FORBIDDEN_CALLS.get(entry.grade_id, set())
    used = set()
    for node in ast.walk(ast.parse(entry.source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mha_helpers"):
            used |= {a.name for a in node.names} & names
        if isinstance(node, ast.Attribute) and node.attr in names:
            used.add(node.attr)
    return used


def _plain(obj):
    if isinstance(obj, tuple):
        return tuple(_plain(o) for o in obj)
    if isinstance(obj, _Tracked):
        return np.asarray(obj)
    return obj


def problems(entry) -> list[str]:
    """Why the entry is not a right answer (an empty list when it is)."""
    found = []
    used = _forbidden_calls(entry)
    if used:
        found.append(f"calls the forbidden {sorted(used)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answer = build(entry)
        if entry.grade_id == "q06_roles_seed7":
            ok = _roles_truth() == answer if isinstance(answer, tuple) else False
            return found + ([] if ok else [f"{answer!r} is not {_roles_truth()!r}"])
        if entry.grade_id in VALUES:
            return found + (
                [] if VALUES[entry.grade_id](answer) else [f"{answer!r} is not the answer"]
            )
        ref = REFERENCES[entry.grade_id]
        for i, (args, kwargs) in enumerate(CASES[entry.grade_id]):
            want = ref(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            given = copy.deepcopy(args)
            if entry.grade_id == "q08_tiled":
                given = tuple(a.view(_Tracked) if isinstance(a, np.ndarray) else a for a in given)
                _Tracked.products = []
            try:
                got = answer(*given, **copy.deepcopy(kwargs))
            except Exception as exc:  # noqa: BLE001 (a wrong answer may raise anything)
                found.append(f"case {i}: raises {type(exc).__name__}: {exc}")
                continue
            if entry.grade_id == "q08_tiled":
                n_k, block = args[1].shape[0], args[3]
                if n_k > block and any(s and s[-1] == n_k for s in _Tracked.products):
                    found.append(f"case {i}: a product with all {n_k} keys at once")
                got = _plain(got)
            why = _same(got, want)
            if why:
                found.append(f"case {i}: {why}")
            for a, b in zip(_flat(given), _flat(args)):
                if isinstance(a, np.ndarray) and not np.array_equal(
                    np.asarray(a), b, equal_nan=True
                ):
                    found.append(f"case {i}: changes its input")
                    break
            if entry.grade_id == "q01_masked_attention" and not why:
                if np.any(got[1][~args[3]] != 0):
                    found.append(f"case {i}: blocked keys not exactly 0")
            if entry.grade_id == "q01_softmax" and not why:
                if np.any(got[np.isneginf(args[0])] != 0):
                    found.append(f"case {i}: -inf entries not exactly 0")
    return found


def _flat(args):
    for a in args:
        if isinstance(a, list):
            yield from a
        else:
            yield a


# ---------------------------------------------------------------------------------------------
# Exercise 06's trained model (question 3's roles and question 5's prediction), measured here
# ---------------------------------------------------------------------------------------------

_TRAINED = {}


def _seed7():
    if not _TRAINED:
        from mha_helpers.tasks import vote_table_task
        from mha_helpers.training import accuracy, forward, init_model, train

        make_votes = vote_table_task(vocab_size=16, seq_len=10, table_seed=0)
        tokens, targets = make_votes(np.random.default_rng(1000), 1000)
        model = train(
            init_model(16, 10, 32, num_layers=1, seed=7),
            make_votes,
            num_heads=4,
            steps=300,
            lr=1e-2,
            warmup=100,
            batch_size=64,
            seed=7,
        )[0]
        _, (weights,) = forward(model, tokens, num_heads=4)
        roles = ref_measure_roles(weights)
        _TRAINED["roles"] = tuple("previous" if r[0] > r[1] else "first" for r in roles)

        def acc_without(heads):
            pruned = dict(model)
            for h in heads:
                pruned["layers.0.w_o"] = ref_remove_head(pruned["layers.0.w_o"], h, 4)
            return accuracy(pruned, tokens, targets, num_heads=4)

        first_table, previous_table = make_votes.tables
        answers = targets[:, 2:]
        alone = {
            "first": (first_table[tokens[:, :1]].argmax(-1) == answers).mean(),
            "previous": (previous_table[tokens[:, 1:-1]].argmax(-1) == answers).mean(),
        }
        _TRAINED["pruning"] = dict(
            both=acc_without([]),
            alone=alone,
            roles=_TRAINED["roles"],
            without={h: acc_without([h]) for h in range(4)},
        )
    return _TRAINED


def _roles_truth():
    return _seed7()["roles"]


# ---------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------

GRADE_IDS = {
    "q01_scores",
    "q01_softmax",
    "q01_masked_attention",
    "q02_weights_shape",
    "q02_split_heads",
    "q02_merge_heads",
    "q02_per_head_attention",
    "q02_full_layer",
    "q03_d_head",
    "q03_identity_output",
    "q03_concat_vs_average",
    "q03_concat_project",
    "q04_params",
    "q04_flops",
    "q04_changes_with_h",
    "q04_weight_entries",
    "q05_gqa",
    "q05_mean_pool",
    "q05_cache_bytes",
    "q05_max_batch",
    "q06_head_backward",
    "q06_measure_roles",
    "q06_roles_seed7",
    "q06_remove_head",
    "q06_prune_prediction",
    "q07_cross_shape",
    "q07_padding_causal_mask",
    "q07_key_padding_mask",
    "q07_in_proj_weight",
    "q07_pytorch_call",
    "q08_online_update",
    "q08_tiled",
    "q08_mla_cache",
    "q08_decode_bound",
}


def _id(entry):
    return f"{entry.grade_id}: {entry.name}"


def test_battery_covers_every_question():
    wrong = {e.grade_id for e in battery_a.WRONG}
    assert wrong == GRADE_IDS
    for gid in GRADE_IDS:
        assert sum(e.grade_id == gid for e in battery_a.WRONG) >= 5, gid
    assert len(battery_a.WRONG) >= 180
    assert len(battery_a.RIGHT) >= 25
    assert not any(e.grade_id == "q06_roles_seed7" for e in battery_a.RIGHT)


def test_entries_are_distinct():
    for group in (battery_a.WRONG, battery_a.RIGHT):
        keys = [(e.grade_id, e.name) for e in group]
        assert len(keys) == len(set(keys))
        sources = [(e.grade_id, e.source) for e in group]
        assert len(sources) == len(set(sources))


@pytest.mark.parametrize("entry", battery_a.WRONG, ids=_id)
def test_wrong_answer_is_wrong(entry: Wrong):
    assert entry.causes, "every wrong answer names its cause"
    assert problems(entry), "this 'wrong' answer agrees with the reference on every input"


@pytest.mark.parametrize("entry", battery_a.RIGHT, ids=_id)
def test_right_answer_is_right(entry: Right):
    assert problems(entry) == []


def test_the_references_know_a_wrong_answer_when_they_see_one():
    """The comparison itself can fail: a reference perturbed by one entry is told apart."""
    for gid, ref in REFERENCES.items():
        args, kwargs = CASES[gid][0]
        want = ref(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        bad = want[0] if isinstance(want, tuple) else want
        if isinstance(bad, np.ndarray) and bad.dtype != bool:
            bad = bad.copy()
            bad.flat[0] += 1e-3
        elif isinstance(bad, np.ndarray):
            bad = ~bad
        else:
            bad = bad + 1
        changed = (bad, *want[1:]) if isinstance(want, tuple) else bad
        assert _same(changed, want), gid


def test_the_prune_prediction_is_measured():
    """Question 5's letter from the measurement: with four heads (seed 7), one head removed
    leaves clearly less than all four heads and clearly more than either vote alone ("b")."""
    p = _seed7()["pruning"]
    assert p["both"] > 0.9
    for head in range(4):
        left = p["without"][head]
        assert max(p["alone"].values()) + 0.15 < left < p["both"] - 0.2, (head, left, p)
