"""Independent check of battery B: is every wrong entry really wrong, every right one right?

The references here are written from the exercise texts and the lessons (not from the course's
solutions or its self-check). An entry counts as **wrong** when, on an input the question
allows, it raises, returns something that differs from the reference (shape, dtype, type or
value beyond a stated tolerance), changes one of its input arrays, or breaks a rule the
question states (calling a course function the question forbids, building the whole score
matrix in the tiled question, a float where the question or the learner guide asks for a
whole number, a numeric mask where a boolean mask is asked). A **right** entry must do none of
these on every case.

Tolerances: arrays agree to ``rtol=1e-7, atol=1e-10`` (every reference is float64 NumPy, so a
correct answer agrees far better); whole numbers exactly; the decode bound of exercise 08 to a
relative 1e-3 (a reading to four significant figures); letters after ``strip().lower()``.
"""

from __future__ import annotations

import ast
import copy
import functools
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .format import Right, Wrong
from .harness import build

RTOL, ATOL = 1e-7, 1e-10


# ------------------------------------------------------------------ references (from the text)
def _softmax_rows(s):
    s = np.asarray(s, dtype=float)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


def ref_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / math.sqrt(w_q.shape[1])


def ref_softmax(scores):
    return _softmax_rows(scores)


def ref_masked(q, k, v, mask):
    s = np.where(mask, q @ k.T / math.sqrt(q.shape[1]), -np.inf)
    w = _softmax_rows(s)
    return (w @ v, w)


def ref_split(x, num_heads):
    n, d = x.shape
    dh = d // num_heads
    return np.stack([x[:, i * dh : (i + 1) * dh] for i in range(num_heads)])


def ref_merge(x):
    return np.concatenate([x[i] for i in range(x.shape[0])], axis=1)


def _heads_attend(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _softmax_rows(s)
    return w @ v, w


def ref_per_head(x, w_q, w_k, w_v, num_heads):
    q, k, v = (ref_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    return _heads_attend(q, k, v)


def ref_full_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for seq in x:
        q, k, v = (ref_split(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        o, _ = _heads_attend(q, k, v, mask)
        out.append(ref_merge(o) @ w_o)
    return np.stack(out)


def ref_concat_project(head_outputs, w_o):
    return np.concatenate([np.asarray(h) for h in head_outputs], axis=1) @ w_o


def ref_params(d_model, num_heads, bias):
    """Exercise 04 Q1 as rewritten: every head d_model // num_heads wide, so the heads together
    are num_heads * d_head wide (less than d_model when num_heads does not divide it)."""
    width = num_heads * (d_model // num_heads)
    weights = 3 * d_model * width + width * d_model  # w_q, w_k, w_v, then w_o
    biases = 3 * width + d_model  # one per output feature of each projection
    return weights + (biases if bias else 0)


def ref_flops(n, d_model, num_heads):
    dh = d_model // num_heads
    hd = num_heads * dh
    mm = 3 * (n * d_model * hd)  # Q, K, V projections
    mm += num_heads * (n * dh * n)  # scores in every head
    mm += num_heads * (n * n * dh)  # weighted sum of the values in every head
    mm += n * hd * d_model  # W_O
    return 2 * mm


def ref_gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    dh = x.shape[1] // num_heads
    group = num_heads // num_kv_heads
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    outs = []
    for i in range(num_heads):
        j = i // group
        qi = q[:, i * dh : (i + 1) * dh]
        kj, vj = k[:, j * dh : (j + 1) * dh], v[:, j * dh : (j + 1) * dh]
        outs.append(_softmax_rows(qi @ kj.T / math.sqrt(dh)) @ vj)
    return np.concatenate(outs, axis=1) @ w_o


def ref_mean_pool(w, num_heads, num_kv_heads):
    dh = w.shape[1] // num_heads
    group = num_heads // num_kv_heads
    cols = []
    for j in range(num_kv_heads):
        heads = [w[:, h * dh : (h + 1) * dh] for h in range(j * group, (j + 1) * group)]
        cols.append(sum(heads) / group)
    return np.concatenate(cols, axis=1)


def ref_cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch


def ref_head_backward(q, k, v, d_out):
    n, d_k = q.shape
    causal = np.tril(np.ones((n, n), dtype=bool))
    a = _softmax_rows(np.where(causal, q @ k.T / math.sqrt(d_k), -np.inf))
    d_a = d_out @ v.T
    d_v = a.T @ d_out
    d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True))
    d_s = d_s / math.sqrt(d_k)
    return (d_s @ k, d_s.T @ q, d_v)


def ref_measure_roles(weights):
    b, h, n, _ = weights.shape
    out = np.zeros((h, 2))
    for i in range(h):
        out[i, 0] = np.mean([weights[:, i, t, t - 1] for t in range(2, n)])
        out[i, 1] = np.mean([weights[:, i, t, 0] for t in range(2, n)])
    return out


def ref_remove_head(w_o, head, num_heads):
    dh = w_o.shape[0] // num_heads
    out = w_o.copy()
    out[head * dh : (head + 1) * dh, :] = 0
    return out


def ref_padding_causal(lengths, n):
    lengths = np.asarray(lengths)
    out = np.zeros((len(lengths), n, n), dtype=bool)
    for b in range(len(lengths)):
        for i in range(n):
            for j in range(n):
                out[b, i, j] = j <= i and j < lengths[b]
    return out


def ref_key_padding(mask):
    batch, n_q, n_k = mask.shape
    out = np.zeros((batch, n_k), dtype=bool)
    for b in range(batch):
        for j in range(n_k):
            out[b, j] = not any(mask[b, i, j] for i in range(n_q))
    return out


def ref_in_proj(w_q, w_k, w_v):
    return np.concatenate([w_q.T, w_k.T, w_v.T], axis=0)


def ref_online_update(m, ell, acc, scores, v_block):
    m_new = np.maximum(m, scores.max(axis=1))
    shift = np.where(np.isneginf(m_new), 0.0, m_new)
    r = np.exp(m - shift)
    p = np.exp(scores - shift[:, None])
    return (m_new, r * ell + p.sum(axis=1), r[:, None] * acc + p @ v_block)


def ref_tiled(q, k, v, block_size):
    return _softmax_rows(q @ k.T / math.sqrt(q.shape[1])) @ v


# ------------------------------------------------------------------------------ the cases
def _rng(seed):
    return np.random.default_rng(seed)


def _random_mask(rng, n_q, n_k):
    mask = rng.random((n_q, n_k)) < 0.6
    mask[np.arange(n_q), rng.integers(0, n_k, n_q)] = True  # every row has a key
    return mask


def cases_scores():
    r = _rng(1)
    return [
        (r.normal(size=(5, 6)), r.normal(size=(6, 3)), r.normal(size=(6, 3))),
        (r.normal(size=(4, 4)), r.normal(size=(4, 2)), r.normal(size=(4, 2))),
        (r.normal(size=(3, 8)), r.normal(size=(8, 8)), r.normal(size=(8, 8))),
    ]


def cases_softmax():
    r = _rng(2)
    blocked = r.normal(size=(3, 4))
    blocked[0, 1] = blocked[2, 0] = blocked[2, 3] = -np.inf
    return [
        (r.normal(size=(3, 5)),),
        (r.normal(size=(4, 4)) * 3,),
        (np.array([[800.0, 799.0, 0.0], [1.0, 2.0, 3.0]]),),
        (blocked,),
        (np.array([[0.0, 0.0, 1.0], [800.0, 801.0, 800.0], [-5.0, -5.0, -5.0]]),),
    ]


def cases_masked():
    r = _rng(3)
    n = 5
    return [
        (
            r.normal(size=(4, 3)),
            r.normal(size=(6, 3)),
            r.normal(size=(6, 2)),
            _random_mask(r, 4, 6),
        ),
        (
            r.normal(size=(n, 4)),
            r.normal(size=(n, 4)),
            r.normal(size=(n, 3)),
            np.tril(np.ones((n, n), dtype=bool)),
        ),
        (
            r.normal(size=(3, 2)),
            r.normal(size=(3, 2)),
            r.normal(size=(3, 5)),
            _random_mask(r, 3, 3),
        ),
    ]


def cases_split():
    r = _rng(4)
    return [(r.normal(size=(3, 8)), 2), (r.normal(size=(5, 12)), 3), (r.normal(size=(4, 8)), 4)]


def cases_merge():
    r = _rng(5)
    return [(r.normal(size=(2, 3, 4)),), (r.normal(size=(3, 5, 2)),), (r.normal(size=(4, 2, 3)),)]


def _weights(r, d, count):
    return [r.normal(size=(d, d)) / math.sqrt(d) for _ in range(count)]


def cases_per_head():
    r = _rng(6)
    return [
        (r.normal(size=(4, 8)), *_weights(r, 8, 3), 2),
        (r.normal(size=(5, 12)), *_weights(r, 12, 3), 3),
        (r.normal(size=(3, 8)), *_weights(r, 8, 3), 4),
    ]


def cases_full_layer():
    r = _rng(7)
    n = 4
    return [
        ((r.normal(size=(2, n, 8)), *_weights(r, 8, 4), 2), {}),
        ((r.normal(size=(3, n, 8)), *_weights(r, 8, 4), 2), {"mask": _random_mask(r, n, n)}),
        (
            (r.normal(size=(2, n, 12)), *_weights(r, 12, 4), 3),
            {"mask": np.tril(np.ones((n, n), dtype=bool))},
        ),
    ]


def cases_concat_project():
    r = _rng(8)
    return [
        ([r.normal(size=(4, 2)) for _ in range(3)], r.normal(size=(6, 5))),
        (r.normal(size=(2, 3, 4)), r.normal(size=(8, 8))),
        (r.normal(size=(4, 5, 3)), r.normal(size=(12, 7))),
        ([r.normal(size=(3, 4))], r.normal(size=(4, 6))),
    ]


def cases_params():
    return [
        (8, 2, True),
        (8, 4, False),
        (768, 12, True),
        (16, 16, False),
        (10, 3, True),  # the question allows num_heads not dividing d_model: 9 columns of 10
        (11, 4, False),  # d_head 2 (11 / 4 = 2.75 rounds to 3, not 2)
        (12, 5, True),
        (7, 1, False),
    ]


def cases_flops():
    return [(4, 8, 2), (16, 12, 3), (7, 8, 8), (1024, 768, 12), (5, 10, 5)]


def cases_gqa():
    r = _rng(9)
    out = []
    for n, d, h, g in ((5, 8, 4, 2), (4, 8, 4, 1), (3, 8, 4, 4), (4, 12, 6, 3), (6, 12, 6, 2)):
        dh = d // h
        out.append(
            (
                r.normal(size=(n, d)),
                r.normal(size=(d, d)) / math.sqrt(d),
                r.normal(size=(d, g * dh)) / math.sqrt(d),
                r.normal(size=(d, g * dh)) / math.sqrt(d),
                r.normal(size=(d, d)) / math.sqrt(d),
                h,
                g,
            )
        )
    return out


def cases_mean_pool():
    r = _rng(10)
    return [
        (r.normal(size=(8, 8)), 4, 2),
        (r.normal(size=(6, 12)), 4, 2),
        (r.normal(size=(5, 12)), 6, 2),
        (r.normal(size=(4, 8)), 4, 4),
        (r.normal(size=(3, 8)), 4, 1),
    ]


def cases_cache_bytes():
    return [
        (32, 32, 8, 128, 4096, 2, 1),
        (2, 4, 2, 8, 10, 4, 3),
        (3, 6, 3, 5, 7, 1, 2),
        (80, 64, 8, 128, 4096, 2, 5),
    ]


def cases_head_backward():
    r = _rng(11)
    return [
        (
            r.normal(size=(4, 3)),
            r.normal(size=(4, 3)),
            r.normal(size=(4, 2)),
            r.normal(size=(4, 2)),
        ),
        (
            r.normal(size=(5, 2)),
            r.normal(size=(5, 2)),
            r.normal(size=(5, 3)),
            r.normal(size=(5, 3)),
        ),
        (
            r.normal(size=(3, 4)),
            r.normal(size=(3, 4)),
            r.normal(size=(3, 4)),
            r.normal(size=(3, 4)),
        ),
    ]


def _random_weights(r, shape):
    return _softmax_rows(r.normal(size=shape) * 2)


def cases_measure_roles():
    r = _rng(12)
    return [
        (_random_weights(r, (3, 2, 6, 6)),),
        (_random_weights(r, (2, 3, 10, 10)),),
        (_random_weights(r, (4, 1, 4, 4)),),
    ]


def cases_remove_head():
    r = _rng(13)
    return [
        (r.normal(size=(8, 8)), 1, 2),
        (r.normal(size=(12, 12)), 2, 3),
        (r.normal(size=(8, 8)), 0, 4),
    ]


def cases_padding_causal():
    return [
        (np.array([3, 1]), 3),
        (np.array([4, 2, 5]), 5),
        (np.array([1, 2]), 2),
        (np.array([6]), 6),
    ]


def cases_key_padding():
    def pc(lengths, n):
        return ref_padding_causal(np.array(lengths), n)

    cross = np.broadcast_to((np.arange(5) < np.array([5, 2])[:, None])[:, None, :], (2, 3, 5))
    return [(pc([4, 2], 4),), (pc([3, 1, 5], 5),), (np.array(cross),), (pc([2], 2),)]


def cases_in_proj():
    r = _rng(14)
    return [
        tuple(r.normal(size=(4, 4)) for _ in range(3)),
        tuple(r.normal(size=(3, 3)) for _ in range(3)),
    ]


def cases_online_update():
    r = _rng(15)
    n_q, b, d_v = 3, 4, 2
    masked = r.normal(size=(n_q, b))
    masked[0, :2] = -np.inf
    masked[2, 3] = -np.inf
    square = r.normal(size=(4, 4)) * 2
    return [
        (
            np.full(n_q, -np.inf),
            np.zeros(n_q),
            np.zeros((n_q, d_v)),
            r.normal(size=(n_q, b)),
            r.normal(size=(b, d_v)),
        ),
        (
            np.array([0.5, 2.0, -1.0]),
            np.array([1.5, 2.5, 1.0]),
            r.normal(size=(n_q, d_v)),
            masked,
            r.normal(size=(b, d_v)),
        ),
        (
            np.array([3.0, -2.0, 0.0]),
            np.array([1.0, 4.0, 2.0]),
            r.normal(size=(n_q, d_v)),
            r.normal(size=(n_q, b)),
            r.normal(size=(b, d_v)),
        ),
        (
            np.array([1.0, 0.0, -3.0, 2.0]),
            np.array([2.0, 1.0, 1.0, 3.0]),
            r.normal(size=(4, 3)),
            square,
            r.normal(size=(4, 3)),
        ),
    ]


def cases_tiled():
    r = _rng(16)
    q, k, v = r.normal(size=(4, 3)), r.normal(size=(10, 3)), r.normal(size=(10, 2))
    q2, k2, v2 = r.normal(size=(2, 4)) * 2, r.normal(size=(7, 4)), r.normal(size=(7, 5))
    return [(q, k, v, 3), (q, k, v, 5), (q, k, v, 1), (q2, k2, v2, 16), (q2, k2, v2, 4)]


# ---------------------------------------------------------------------------- comparisons
def _is_count(x) -> bool:
    return isinstance(x, (numbers.Integral, np.integer)) and not isinstance(x, (bool, np.bool_))


def _differs(expected, got, path="output") -> str | None:
    """Why ``got`` is not ``expected`` (None when it agrees)."""
    if isinstance(expected, tuple):
        if not isinstance(got, tuple):
            return f"{path}: expected a tuple, got {type(got).__name__}"
        if len(got) != len(expected):
            return f"{path}: expected {len(expected)} items, got {len(got)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            why = _differs(e, g, f"{path}[{i}]")
            if why:
                return why
        return None
    if isinstance(expected, (int, np.integer)) and not isinstance(expected, bool):
        if not _is_count(got):
            return f"{path}: expected a whole number, got {type(got).__name__} {got!r}"
        return None if int(got) == int(expected) else f"{path}: {got} != {expected}"
    if isinstance(expected, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"{path}: expected an array, got {type(got).__name__}"
        if got.shape != expected.shape:
            return f"{path}: shape {got.shape} != {expected.shape}"
        if expected.dtype == bool:
            if got.dtype != bool:
                return f"{path}: dtype {got.dtype}, a boolean mask is asked"
            return None if np.array_equal(got, expected) else f"{path}: mask entries differ"
        if not np.issubdtype(got.dtype, np.number):
            return f"{path}: dtype {got.dtype}"
        with np.errstate(invalid="ignore"):
            same = np.allclose(got, expected, rtol=RTOL, atol=ATOL, equal_nan=False)
        if not same:
            inf_ok = np.array_equal(np.isneginf(got), np.isneginf(expected))
            finite = np.isfinite(expected)
            if inf_ok and np.allclose(got[finite], expected[finite], rtol=RTOL, atol=ATOL):
                return None
            return f"{path}: values differ"
        return None
    raise TypeError(f"no comparison for {type(expected)}")


def _snapshot(args):
    return copy.deepcopy(args)


def _changed(before, after) -> bool:
    if isinstance(before, np.ndarray):
        return not (
            isinstance(after, np.ndarray)
            and before.shape == after.shape
            and np.array_equal(before, after, equal_nan=True)
        )
    if isinstance(before, (list, tuple)):
        return len(before) != len(after) or any(_changed(b, a) for b, a in zip(before, after))
    if isinstance(before, dict):
        return any(_changed(before[k], after[k]) for k in before)
    return False


# --------------------------------------------------------------------- forbidden helpers
COURSE_ATTENTION = {"softmax", "scaled_dot_product_attention", "multi_head_attention"}
FORBIDDEN = {
    "q01_scores": COURSE_ATTENTION,
    "q01_softmax": COURSE_ATTENTION,
    "q01_masked_attention": COURSE_ATTENTION,
    "q02_split_heads": {"split_heads", "merge_heads"} | COURSE_ATTENTION,
    "q02_merge_heads": {"split_heads", "merge_heads"} | COURSE_ATTENTION,
    "q02_per_head_attention": {"split_heads", "merge_heads", "grouped_query_attention"}
    | COURSE_ATTENTION,
    "q02_full_layer": {"split_heads", "merge_heads", "grouped_query_attention"} | COURSE_ATTENTION,
    "q03_concat_project": {"merge_heads", "multi_head_attention"},
    "q04_params": {"attention_params"},
    "q04_flops": {"attention_flops"},
    "q05_gqa": {"grouped_query_attention", "multi_head_attention"},
    "q05_cache_bytes": {"kv_cache_bytes"},
    "q06_head_backward": {"attention_backward", "softmax_backward", "mha_backward"},
    "q07_in_proj_weight": {"pytorch_state_dict"},
    "q08_online_update": {"online_softmax_update"},
    "q08_tiled": {
        "tiled_attention",
        "online_softmax_update",
        "softmax",
        "scaled_dot_product_attention",
    },
}


def forbidden_calls(grade_id: str, source: str) -> set[str]:
    """The course functions the question rules out that the source imports from mha_helpers."""
    banned = FORBIDDEN.get(grade_id, set())
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mha_helpers"):
            found |= {a.name for a in node.names if a.name in banned}
        if isinstance(node, ast.Attribute) and node.attr in banned:
            base = node.value
            if isinstance(base, ast.Name) and base.id.startswith("mha_helpers"):
                found.add(node.attr)
    return found


# ------------------------------------------------------- the tiled question's own rule
class _Tracked(np.ndarray):
    """An array that records the shape of every matrix product it takes part in."""

    products: list = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(i) if isinstance(i, _Tracked) else i for i in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(o) for o in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        if ufunc is np.matmul:
            _Tracked.products.append(np.shape(result))
        return result.view(_Tracked) if isinstance(result, np.ndarray) else result


def builds_whole_score_matrix(fn) -> bool:
    q, k, v = np.ones((3, 2)) * 0.1, np.linspace(0, 1, 16).reshape(8, 2), np.ones((8, 2))
    _Tracked.products = []
    try:
        fn(q.view(_Tracked), k.view(_Tracked), v.view(_Tracked), 3)
    except Exception:
        return False
    return any(tuple(s[-2:]) == (3, 8) for s in _Tracked.products if len(s) >= 2)


# ------------------------------------------------------------------------------ specs
@dataclass(frozen=True)
class FunctionSpec:
    reference: Callable
    cases: Callable  # () -> list of args tuples, or of (args, kwargs)


FUNCTIONS = {
    "q01_scores": FunctionSpec(ref_scores, cases_scores),
    "q01_softmax": FunctionSpec(ref_softmax, cases_softmax),
    "q01_masked_attention": FunctionSpec(ref_masked, cases_masked),
    "q02_split_heads": FunctionSpec(ref_split, cases_split),
    "q02_merge_heads": FunctionSpec(ref_merge, cases_merge),
    "q02_per_head_attention": FunctionSpec(ref_per_head, cases_per_head),
    "q02_full_layer": FunctionSpec(ref_full_layer, cases_full_layer),
    "q03_concat_project": FunctionSpec(ref_concat_project, cases_concat_project),
    "q04_params": FunctionSpec(ref_params, cases_params),
    "q04_flops": FunctionSpec(ref_flops, cases_flops),
    "q05_gqa": FunctionSpec(ref_gqa, cases_gqa),
    "q05_mean_pool": FunctionSpec(ref_mean_pool, cases_mean_pool),
    "q05_cache_bytes": FunctionSpec(ref_cache_bytes, cases_cache_bytes),
    "q06_head_backward": FunctionSpec(ref_head_backward, cases_head_backward),
    "q06_measure_roles": FunctionSpec(ref_measure_roles, cases_measure_roles),
    "q06_remove_head": FunctionSpec(ref_remove_head, cases_remove_head),
    "q07_padding_causal_mask": FunctionSpec(ref_padding_causal, cases_padding_causal),
    "q07_key_padding_mask": FunctionSpec(ref_key_padding, cases_key_padding),
    "q07_in_proj_weight": FunctionSpec(ref_in_proj, cases_in_proj),
    "q08_online_update": FunctionSpec(ref_online_update, cases_online_update),
    "q08_tiled": FunctionSpec(ref_tiled, cases_tiled),
}


@functools.lru_cache(maxsize=1)
def seed7_four_head_roles() -> tuple:
    """Exercise 06 Q3 as rewritten: the lesson's model with four heads trained with seed 7 (the
    exercise's own training cell), each head named by the larger of its two scores from this
    file's ``ref_measure_roles``."""
    from mha_helpers.tasks import vote_table_task
    from mha_helpers.training import forward, init_model, train

    make_votes = vote_table_task(vocab_size=16, seq_len=10, table_seed=0)
    tokens, _ = make_votes(np.random.default_rng(1000), 1000)
    model, _ = train(
        init_model(16, 10, 32, num_layers=1, seed=7),
        make_votes,
        num_heads=4,
        steps=300,
        lr=1e-2,
        warmup=100,
        batch_size=64,
        seed=7,
    )
    _, (weights,) = forward(model, tokens, num_heads=4)
    return tuple("previous" if s[0] > s[1] else "first" for s in ref_measure_roles(weights))


@functools.lru_cache(maxsize=1)
def seed7_measurements() -> dict:
    """Lesson 06's two-head model trained with seed 7 (the model question 5, the pruning
    prediction, speaks of: "one of the two heads"), measured with this file's
    ``ref_measure_roles`` and ``ref_remove_head``."""
    from mha_helpers.tasks import vote_table_task
    from mha_helpers.training import accuracy, forward, init_model, train

    make_votes = vote_table_task(vocab_size=16, seq_len=10, table_seed=0)
    tokens, targets = make_votes(np.random.default_rng(1000), 1000)
    model, _ = train(
        init_model(16, 10, 32, num_layers=1, seed=7),
        make_votes,
        num_heads=2,
        steps=300,
        lr=1e-2,
        warmup=100,
        batch_size=64,
        seed=7,
    )
    _, (weights,) = forward(model, tokens, num_heads=2)
    scores = ref_measure_roles(weights)
    roles = tuple("previous" if s[0] > s[1] else "first" for s in scores)

    def without(head):
        pruned = dict(model)
        pruned["layers.0.w_o"] = ref_remove_head(pruned["layers.0.w_o"], head, 2)
        return accuracy(pruned, tokens, targets, num_heads=2)

    first_table, previous_table = make_votes.tables
    answers = targets[:, 2:]
    first_vote = (first_table[tokens[:, :1]].argmax(-1) == answers).mean()
    previous_vote = (previous_table[tokens[:, 1:-1]].argmax(-1) == answers).mean()
    return {
        "roles": roles,
        "both": accuracy(model, tokens, targets, num_heads=2),
        "without": {0: without(0), 1: without(1)},
        "vote": {"first": first_vote, "previous": previous_vote},
    }


def prune_letter() -> str:
    """The option the measurement supports: each single remaining head scores about its own
    table's vote alone ('b'), well below both heads and well above chance."""
    m = seed7_measurements()
    roles = m["roles"]
    for removed in (0, 1):
        kept_role = roles[1 - removed]
        if abs(m["without"][removed] - m["vote"][kept_role]) > 0.05:
            return "?"
    if min(m["without"].values()) < 1 / 16 + 0.1 or max(m["without"].values()) > m["both"] - 0.2:
        return "?"
    return "b"


def _tuple_of_counts(expected):
    def check(x):
        if not isinstance(x, tuple):
            return f"expected a tuple, got {type(x).__name__}"
        if len(x) != len(expected) or not all(_is_count(v) for v in x):
            return f"expected a tuple of {len(expected)} whole numbers, got {x!r}"
        return None if tuple(int(v) for v in x) == expected else f"{x!r} != {expected!r}"

    return check


def _count(expected):
    def check(x):
        if not _is_count(x):
            return f"expected a whole number, got {type(x).__name__} {x!r}"
        return None if int(x) == expected else f"{x} != {expected}"

    return check


def _letter(expected_fn):
    def check(x):
        if not isinstance(x, str):
            return f"expected a letter as a string, got {type(x).__name__}"
        expected = expected_fn()
        return None if x.strip().lower() == expected else f"{x!r} is not {expected!r}"

    return check


def _identity_output(x):
    if isinstance(x, (str, bytes)) or not isinstance(x, (list, np.ndarray)):
        return f"expected a list or an array of four numbers, got {type(x).__name__}"
    a = np.asarray(x)
    if a.shape != (4,) or not np.issubdtype(a.dtype, np.number):
        return f"shape {a.shape}, dtype {a.dtype}"
    return None if np.allclose(a, [1, 2, 3, 4], rtol=0, atol=1e-12) else f"{x!r} != [1, 2, 3, 4]"


def _changes(x):
    expected = (False, False, True, True)  # params, FLOPs, number of weights (h n^2), d_head
    if not isinstance(x, tuple) or len(x) != 4:
        return f"expected a tuple of four booleans, got {x!r}"
    if not all(isinstance(v, (bool, np.bool_)) for v in x):
        return f"not booleans: {x!r}"
    return None if tuple(bool(v) for v in x) == expected else f"{x!r} != {expected}"


def _roles(x):
    expected = seed7_four_head_roles()
    if not isinstance(x, tuple) or len(x) != 4 or not all(isinstance(v, str) for v in x):
        return f"expected a tuple of four role names, got {x!r}"
    return None if x == expected else f"{x!r} != {expected!r}"


DECODE_BYTES = 13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096
DECODE_MS = DECODE_BYTES / 3.35e12 * 1e3


def _decode(x):
    if isinstance(x, (bool, np.bool_, str)) or not isinstance(x, (numbers.Real, np.floating)):
        return f"expected a number of milliseconds, got {type(x).__name__}"
    return None if abs(float(x) - DECODE_MS) <= 1e-3 * DECODE_MS else f"{x} != {DECODE_MS:.6g}"


VALUES: dict[str, Callable] = {
    "q02_weights_shape": _tuple_of_counts((2, 5, 5)),  # (h, n_q, n_k), head axis first
    "q03_d_head": _count(768 // 12),
    "q03_identity_output": _identity_output,
    "q03_concat_vs_average": _letter(lambda: "b"),
    "q04_changes_with_h": _changes,
    "q04_weight_entries": _count(12 * 1024 * 1024),
    "q05_max_batch": _count(40 * 2**30 // (2 * 80 * 8 * 128 * 4096 * 2)),
    "q06_roles_seed7": _roles,
    "q06_prune_prediction": _letter(prune_letter),
    "q07_cross_shape": _tuple_of_counts((2, 4, 5, 7)),
    "q07_pytorch_call": _letter(lambda: "b"),  # ~ on both masks; batch_first needs no transpose
    "q08_mla_cache": _count((512 + 64) * 60 * 2),
    "q08_decode_bound": _decode,
}


# ------------------------------------------------------------------------------ verdicts
def problems(entry: Wrong | Right) -> list[str]:
    """Every reason this entry's answer is not right (empty: it agrees with the reference)."""
    reasons = []
    banned = forbidden_calls(entry.grade_id, entry.source)
    if banned:
        reasons.append(f"calls the forbidden course function(s) {sorted(banned)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            answer = build(entry)
        except Exception as exc:  # a value cell that raises is wrong too
            return [*reasons, f"the cell raises {type(exc).__name__}: {exc}"]
        if entry.grade_id in VALUES:
            why = VALUES[entry.grade_id](answer)
            return reasons + ([why] if why else [])
        spec = FUNCTIONS[entry.grade_id]
        if not callable(answer):
            return [*reasons, "not a function"]
        for case in spec.cases():
            args, kwargs = case if isinstance(case[-1], dict) and len(case) == 2 else (case, {})
            expected = spec.reference(*_snapshot(args), **_snapshot(kwargs))
            given, given_kw = _snapshot(args), _snapshot(kwargs)
            kept, kept_kw = _snapshot(args), _snapshot(kwargs)
            try:
                with np.errstate(all="ignore"):
                    got = answer(*given, **given_kw)
            except Exception as exc:
                reasons.append(f"raises {type(exc).__name__} on a case: {exc}")
                break
            if _changed(kept, given) or _changed(kept_kw, given_kw):
                reasons.append("changes its input")
                break
            why = _differs(expected, got)
            if why:
                reasons.append(why)
                break
        if entry.grade_id == "q08_tiled" and builds_whole_score_matrix(answer):
            reasons.append("builds the whole (n_q, n_k) score matrix")
    return reasons


def verify(entries) -> dict:
    """``not_wrong``: wrong entries that agree with the reference; ``not_right``: right entries
    that do not, with the reasons."""
    not_wrong, not_right = [], []
    for e in entries:
        p = problems(e)
        if isinstance(e, Wrong) and not p:
            not_wrong.append(e)
        if isinstance(e, Right) and p:
            not_right.append((e, p))
    return {"not_wrong": not_wrong, "not_right": not_right}


def reference_gradients_agree_with_finite_differences() -> float:
    """The largest gap between ``ref_head_backward`` and central differences (a self-test)."""

    def forward(q, k, v):
        n = len(q)
        causal = np.tril(np.ones((n, n), dtype=bool))
        return _softmax_rows(np.where(causal, q @ k.T / math.sqrt(q.shape[1]), -np.inf)) @ v

    worst = 0.0
    for q, k, v, d_out in cases_head_backward():
        grads = ref_head_backward(q, k, v, d_out)
        for which, g in enumerate(grads):
            arrays = [q.copy(), k.copy(), v.copy()]
            x = arrays[which]
            for idx in np.ndindex(x.shape):
                old = x[idx]
                x[idx] = old + 1e-6
                plus = (forward(*arrays) * d_out).sum()
                x[idx] = old - 1e-6
                minus = (forward(*arrays) * d_out).sum()
                x[idx] = old
                worst = max(worst, abs((plus - minus) / 2e-6 - g[idx]))
    return worst


if __name__ == "__main__":
    from .battery_b import ENTRIES

    result = verify(ENTRIES)
    for e in result["not_wrong"]:
        print("NOT WRONG:", e.grade_id, "|", e.name)
    for e, p in result["not_right"]:
        print("NOT RIGHT:", e.grade_id, "|", e.name, "|", p)
    print(f"gradient self-test: {reference_gradients_agree_with_finite_differences():.1e}")
    print(
        f"{len(ENTRIES)} entries, {len(result['not_wrong'])} not wrong, {len(result['not_right'])} not right"
    )
