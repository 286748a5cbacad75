"""Independent checks of battery D: every wrong entry is really wrong, every right entry right.

The reference implementations below are written from the exercise texts (and the lessons) alone.
An entry is run on several inputs per question, edge cases included (``n_k`` not a multiple of the
block size, a block size of 1 or larger than ``n_k``, ``d_model`` different from
``h * d_head``, non-divisible head counts, ``d_v != d_k``, ``n_q != n_k``, scores of 800 and
of -1800, ``-inf`` entries, lists where the text allows them, a call without the optional mask).

An answer is **wrong** when, on at least one input, it

* raises;
* returns a value of the wrong form: a count that is not an ``int`` (``bool`` and floats,
  ``64.0`` included, are not: the learner guide says a count is written as a whole number), a
  shape that is not a tuple of ``int``, a mask that is not a boolean NumPy array, a letter that
  is not one of the options as text, a tuple of the wrong length;
* returns a different value: arrays are compared with ``rtol=1e-6, atol=1e-8`` (the learner
  guide's tolerance) and must have the expected shape; counts exactly; the decode bound must
  round to 4.59 at 3 significant figures (the question's precision);
* changes one of its input arrays in place;
* breaks a rule the exercise states: it uses a course helper the question forbids (found in
  its source), or, for ``q08_tiled``, it allocates memory of the size of the full
  ``(n_q, n_k)`` score matrix (watched with ``tracemalloc``, on ``n_q = 256, n_k = 4096``, block
  32: the whole matrix is 8 MiB, a block 64 KiB; the limit is half the matrix).

A **right** answer does none of these on every input.
"""

from __future__ import annotations

import copy
import re
import tracemalloc
import warnings

import numpy as np

from .format import Right, Wrong
from .harness import build

RTOL, ATOL = 1e-6, 1e-8


# ------------------------------------------------------------------------------------------
# Reference implementations (from the exercise texts)
# ------------------------------------------------------------------------------------------
def _softmax(s):
    s = np.asarray(s, dtype=float)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


def _attend(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _softmax(s)
    return w @ v, w


def _split(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)


def _merge(x):
    h, n, dh = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * dh)


def ref_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / np.sqrt(w_q.shape[1])


def ref_masked(q, k, v, mask):
    return _attend(q, k, v, mask)


def ref_per_head(x, w_q, w_k, w_v, h):
    q, k, v = (_split(x @ w, h) for w in (w_q, w_k, w_v))
    return _attend(q, k, v)


def ref_full_layer(x, w_q, w_k, w_v, w_o, h, mask=None):
    return np.stack(
        [_merge(_attend(*(_split(s @ w, h) for w in (w_q, w_k, w_v)), mask)[0]) @ w_o for s in x]
    )


def ref_concat_project(head_outputs, w_o):
    return np.concatenate([np.asarray(o) for o in head_outputs], axis=-1) @ w_o


def ref_params(d_model, h, bias):
    hd = h * (d_model // h)
    return 4 * d_model * hd + ((3 * hd + d_model) if bias else 0)


def ref_flops(n, d_model, h):
    dh = d_model // h
    hd = h * dh
    return 3 * 2 * n * d_model * hd + h * (2 * n * dh * n + 2 * n * n * dh) + 2 * n * hd * d_model


def ref_gqa(x, w_q, w_k, w_v, w_o, h, g):
    dh = x.shape[1] // h
    q = (x @ w_q).reshape(len(x), h, dh).transpose(1, 0, 2)
    k = (x @ w_k).reshape(len(x), g, dh).transpose(1, 0, 2)
    v = (x @ w_v).reshape(len(x), g, dh).transpose(1, 0, 2)
    idx = np.arange(h) // (h // g)
    return _merge(_attend(q, k[idx], v[idx])[0]) @ w_o


def ref_mean_pool(w, h, g):
    d, c = w.shape
    dh = c // h
    return w.reshape(d, g, h // g, dh).mean(axis=2).reshape(d, g * dh)


def ref_cache(num_layers, num_heads, num_kv_heads, d_head, seq_len, bpe, batch):
    return 2 * num_layers * num_kv_heads * d_head * seq_len * bpe * batch


def ref_backward(q, k, v, d_out):
    n, d = q.shape
    s = q @ k.T / np.sqrt(d)
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    a = _softmax(s)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(d)
    return ds @ k, ds.T @ q, a.T @ d_out


def ref_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack(
        [weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1
    )


def ref_remove_head(w_o, head, h):
    w = w_o.copy()
    d = w.shape[0] // h
    w[head * d : (head + 1) * d] = 0
    return w


def ref_padding_causal(lengths, n):
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return (j <= i)[None] & (j[None] < np.asarray(lengths)[:, None, None])


def ref_key_padding(mask):
    return ~np.asarray(mask).any(axis=1)


def ref_in_proj(w_q, w_k, w_v):
    return np.concatenate([w_q.T, w_k.T, w_v.T], axis=0)


def ref_online(m, ell, acc, scores, v_block):
    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(axis=1), c[:, None] * acc + p @ v_block


def ref_tiled(q, k, v, block_size):
    return _attend(q, k, v)[0]


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------
def _rng(seed):
    return np.random.default_rng(1000 + seed)


def _mask(rng, n_q, n_k):
    m = rng.random((n_q, n_k)) < 0.5
    m[np.arange(n_q), rng.integers(0, n_k, n_q)] = True  # every row may attend somewhere
    return m


def cases_scores():
    out = []
    for s, (n, d, dk) in enumerate([(5, 6, 3), (4, 8, 2), (3, 4, 4), (7, 5, 6)]):
        r = _rng(s)
        out.append((r.normal(size=(n, d)), r.normal(size=(d, dk)), r.normal(size=(d, dk))))
    return out


def cases_softmax():
    r = _rng(10)
    a = r.normal(size=(3, 5))
    b = r.normal(size=(4, 4)) * 3
    big = np.array([[800.0, 799.0, 0.0], [1.0, 2.0, 3.0]])
    wide = np.array([[1000.0, -1000.0, 0.0], [-800.0, -801.0, -799.0]])
    inf = r.normal(size=(3, 4))
    inf[0, 1] = inf[2, 0] = inf[2, 3] = -np.inf
    mixed = np.array([[800.0, 799.0], [-800.0, -801.0]])
    return [(a,), (b,), (big,), (wide,), (inf,), (mixed,), (np.array([[2.0], [5.0]]),)]


def cases_masked():
    out = []
    for s, (nq, nk, dk, dv) in enumerate([(4, 5, 3, 2), (3, 3, 2, 4), (5, 6, 4, 3)]):
        r = _rng(20 + s)
        out.append(
            (
                r.normal(size=(nq, dk)),
                r.normal(size=(nk, dk)),
                r.normal(size=(nk, dv)),
                _mask(r, nq, nk),
            )
        )
    r = _rng(29)
    out.append(
        (
            r.normal(size=(4, 3)),
            r.normal(size=(4, 3)),
            r.normal(size=(4, 2)),
            np.tril(np.ones((4, 4), dtype=bool)),
        )
    )
    return out


def cases_split():
    out = []
    for s, (n, d, h) in enumerate([(3, 8, 2), (5, 12, 3), (2, 12, 4), (4, 6, 1)]):
        out.append((_rng(30 + s).normal(size=(n, d)), h))
    return out


def cases_merge():
    return [
        (_rng(40 + s).normal(size=shape),)
        for s, shape in enumerate([(2, 3, 4), (3, 5, 2), (4, 2, 3), (1, 3, 2)])
    ]


def cases_per_head():
    out = []
    for s, (n, d, h) in enumerate([(5, 8, 2), (4, 12, 3), (3, 8, 4), (6, 6, 1)]):
        r = _rng(50 + s)
        out.append((r.normal(size=(n, d)), *(r.normal(size=(d, d)) for _ in range(3)), h))
    return out


def cases_full_layer():
    """(args, kwargs): without the mask argument, with a random mask, with a causal one."""
    out = []
    for s, (b, n, d, h) in enumerate([(2, 4, 8, 2), (3, 5, 12, 3), (2, 3, 8, 4)]):
        r = _rng(60 + s)
        args = (r.normal(size=(b, n, d)), *(r.normal(size=(d, d)) for _ in range(4)), h)
        m = _mask(r, n, n)
        m[np.arange(n), np.arange(n)] = True
        out.append((args, {}))
        out.append((args, {"mask": m}))
        out.append((args, {"mask": np.tril(np.ones((n, n), dtype=bool))}))
    return out


def cases_concat_project():
    out = []
    for s, (h, n, dh, dm) in enumerate([(2, 3, 2, 5), (3, 4, 2, 6), (4, 2, 3, 7), (2, 2, 2, 4)]):
        r = _rng(70 + s)
        heads = r.normal(size=(h, n, dh))
        w_o = r.normal(size=(h * dh, dm))
        out.append((heads, w_o))
        out.append(([heads[i].copy() for i in range(h)], w_o))
    return out


def cases_params():
    return [
        (8, 2, True),
        (8, 2, False),
        (10, 3, True),
        (10, 3, False),
        (768, 12, True),
        (7, 7, True),
        (9, 4, False),
        (1, 1, True),
    ]


def cases_flops():
    return [(4, 8, 2), (5, 10, 3), (1024, 768, 12), (3, 9, 4), (7, 6, 6), (2, 1, 1)]


def cases_gqa():
    out = []
    for s, (n, d, h, g) in enumerate(
        [(4, 8, 4, 2), (5, 8, 4, 1), (3, 8, 4, 4), (4, 12, 6, 3), (6, 12, 6, 2)]
    ):
        r = _rng(80 + s)
        dh = d // h
        out.append(
            (
                r.normal(size=(n, d)),
                r.normal(size=(d, d)),
                r.normal(size=(d, g * dh)),
                r.normal(size=(d, g * dh)),
                r.normal(size=(d, d)),
                h,
                g,
            )
        )
    return out


def cases_mean_pool():
    out = []
    for s, (d, h, g, dh) in enumerate(
        [(5, 4, 2, 3), (6, 6, 2, 2), (3, 4, 1, 2), (7, 4, 4, 2), (8, 6, 3, 2)]
    ):
        out.append((_rng(90 + s).normal(size=(d, h * dh)), h, g))
    return out


def cases_cache():
    return [
        (2, 8, 2, 4, 10, 2, 3),
        (80, 64, 8, 128, 4096, 2, 1),
        (1, 4, 4, 2, 3, 1, 1),
        (3, 12, 1, 5, 7, 4, 2),
        (32, 32, 32, 128, 100, 2, 5),
        (5, 6, 3, 7, 11, 1, 13),
    ]


def cases_backward():
    out = []
    for s, (n, dk, dv) in enumerate([(4, 3, 2), (5, 2, 4), (3, 4, 4), (6, 3, 1)]):
        r = _rng(100 + s)
        out.append(
            (
                r.normal(size=(n, dk)),
                r.normal(size=(n, dk)),
                r.normal(size=(n, dv)),
                r.normal(size=(n, dv)),
            )
        )
    return out


def cases_roles():
    out = []
    for s, (b, h, n) in enumerate([(3, 2, 6), (5, 4, 10), (2, 3, 5)]):
        r = _rng(110 + s)
        w = r.random((b, h, n, n)) * np.tril(np.ones((n, n)))
        out.append((w / w.sum(-1, keepdims=True),))
    return out


def cases_remove_head():
    out = []
    for s, (d, h, head) in enumerate([(8, 2, 0), (8, 2, 1), (12, 3, 1), (12, 4, 3), (6, 6, 2)]):
        out.append((_rng(120 + s).normal(size=(d, d)), head, h))
    return out


def cases_padding_causal():
    return [
        (np.array([3, 1]), 3),
        (np.array([4, 2, 1]), 4),
        (np.array([5]), 5),
        (np.array([2, 5, 3]), 5),
        (np.array([1, 1]), 2),
    ]


def cases_key_padding():
    out = []
    for lengths, n in [([4, 2], 4), ([3, 1, 2], 3), ([5, 5], 5)]:
        out.append((ref_padding_causal(np.array(lengths), n),))
    valid = np.arange(4) < np.array([4, 2])[:, None]
    out.append((np.repeat(valid[:, None, :], 4, axis=1),))  # padding only
    cross = np.arange(6) < np.array([6, 3, 2])[:, None]  # cross-attention, n_q = 3
    out.append((np.repeat(cross[:, None, :], 3, axis=1),))
    return out


def cases_in_proj():
    out = []
    for s, d in enumerate([2, 3, 4, 5]):
        r = _rng(130 + s)
        out.append(tuple(r.normal(size=(d, d)) for _ in range(3)))
    return out


def cases_online():
    out = []
    for s, (nq, b, dv) in enumerate([(3, 4, 2), (4, 2, 3), (2, 5, 1)]):
        r = _rng(140 + s)
        m = r.normal(size=nq)
        m[0] += 3.0  # the running max sometimes stays, sometimes rises
        ell = r.random(nq) + 0.5
        acc = r.normal(size=(nq, dv))
        scores = r.normal(size=(nq, b)) * 2
        scores[-1, 0] = -np.inf
        out.append((m, ell, acc, scores, r.normal(size=(b, dv))))
    r = _rng(149)
    out.append(
        (
            np.full(3, -np.inf),
            np.zeros(3),
            np.zeros((3, 2)),
            r.normal(size=(3, 4)),
            r.normal(size=(4, 2)),
        )
    )  # the first block
    big = np.array([[800.0, 799.0], [790.0, 805.0]])
    out.append(
        (
            np.array([795.0, 801.0]),
            np.array([1.0, 2.0]),
            np.ones((2, 2)),
            big,
            r.normal(size=(2, 2)),
        )
    )
    return out


def cases_tiled():
    out = []
    for s, (nq, nk, dk, dv, bs) in enumerate(
        [
            (3, 10, 4, 2, 4),
            (4, 8, 3, 5, 4),
            (2, 5, 2, 3, 1),
            (5, 7, 4, 4, 16),
            (3, 9, 2, 2, 3),
            (4, 13, 3, 2, 5),
        ]
    ):
        r = _rng(150 + s)
        out.append(
            (r.normal(size=(nq, dk)), r.normal(size=(nk, dk)) * 2, r.normal(size=(nk, dv)), bs)
        )
    q = np.full((2, 4), 30.0)
    k = -np.full((6, 4), 30.0) + _rng(159).normal(size=(6, 4))
    out.append((q, k, _rng(158).normal(size=(6, 3)), 4))  # scores near -1800
    return out


# ------------------------------------------------------------------------------------------
# What each question accepts
# ------------------------------------------------------------------------------------------
def _is_count(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _same_array(got, want):
    try:
        g = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False
    return g.shape == np.shape(want) and bool(
        np.allclose(g, want, rtol=RTOL, atol=ATOL, equal_nan=False)
    )


def _same_mask(got, want):
    return (
        isinstance(got, np.ndarray)
        and got.dtype == np.bool_
        and got.shape == want.shape
        and bool((got == want).all())
    )


def _same_tuple_of_arrays(got, want):
    return (
        isinstance(got, (tuple, list))
        and len(got) == len(want)
        and all(_same_array(g, w) for g, w in zip(got, want))
    )


def _same_count(got, want):
    return _is_count(got) and int(got) == want


def _shape_value(want):
    return lambda x: (
        isinstance(x, tuple)
        and len(x) == len(want)
        and all(_is_count(s) for s in x)
        and tuple(int(s) for s in x) == want
    )


def _letter(want):
    return lambda x: isinstance(x, str) and x.strip().lower() == want


def _identity(x):
    if isinstance(x, (str, bytes)) or np.ndim(x) != 1:
        return False
    return _same_array(x, np.array([1.0, 2.0, 3.0, 4.0]))


def _changes(x):
    return (
        isinstance(x, tuple)
        and len(x) == 4
        and all(isinstance(b, (bool, np.bool_)) for b in x)
        and tuple(bool(b) for b in x) == (False, False, True, True)
    )


def _roles(x):
    return isinstance(x, tuple) and x == ("first", "previous", "first", "previous")


def _decode(x):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.floating, np.integer)):
        return False
    return f"{float(x):.3g}" == "4.59"


DECODE_EXACT = (13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1e3

VALUES = {
    "q02_weights_shape": _shape_value((2, 5, 5)),
    "q03_d_head": lambda x: _same_count(x, 64),
    "q03_identity_output": _identity,
    "q03_concat_vs_average": _letter("b"),
    "q04_changes_with_h": _changes,
    "q04_weight_entries": lambda x: _same_count(x, 12 * 1024 * 1024),
    "q05_max_batch": lambda x: _same_count(x, 32),
    "q06_roles_seed7": _roles,
    "q06_prune_prediction": _letter("b"),
    "q07_cross_shape": _shape_value((2, 4, 5, 7)),
    "q07_pytorch_call": _letter("b"),
    "q08_mla_cache": lambda x: _same_count(x, 60 * (512 + 64) * 2),
    "q08_decode_bound": _decode,
}

# grade_id -> (reference, cases, comparison)
FUNCTIONS = {
    "q01_scores": (ref_scores, cases_scores, _same_array),
    "q01_softmax": (_softmax, cases_softmax, _same_array),
    "q01_masked_attention": (ref_masked, cases_masked, _same_tuple_of_arrays),
    "q02_split_heads": (_split, cases_split, _same_array),
    "q02_merge_heads": (_merge, cases_merge, _same_array),
    "q02_per_head_attention": (ref_per_head, cases_per_head, _same_tuple_of_arrays),
    "q02_full_layer": (ref_full_layer, cases_full_layer, _same_array),
    "q03_concat_project": (ref_concat_project, cases_concat_project, _same_array),
    "q04_params": (ref_params, cases_params, _same_count),
    "q04_flops": (ref_flops, cases_flops, _same_count),
    "q05_gqa": (ref_gqa, cases_gqa, _same_array),
    "q05_mean_pool": (ref_mean_pool, cases_mean_pool, _same_array),
    "q05_cache_bytes": (ref_cache, cases_cache, _same_count),
    "q06_head_backward": (ref_backward, cases_backward, _same_tuple_of_arrays),
    "q06_measure_roles": (ref_roles, cases_roles, _same_array),
    "q06_remove_head": (ref_remove_head, cases_remove_head, _same_array),
    "q07_padding_causal_mask": (ref_padding_causal, cases_padding_causal, _same_mask),
    "q07_key_padding_mask": (ref_key_padding, cases_key_padding, _same_mask),
    "q07_in_proj_weight": (ref_in_proj, cases_in_proj, _same_array),
    "q08_online_update": (ref_online, cases_online, _same_tuple_of_arrays),
    "q08_tiled": (ref_tiled, cases_tiled, _same_array),
}

# Course helpers a question forbids (the exercise texts), found in the answer's source.
FORBIDDEN = {
    "q01": r"mha_helpers",
    "q02": r"mha_helpers",
    "q03_concat_project": r"\bmerge_heads\b|\bmulti_head_attention\b",
    "q04": r"\battention_params\b|\battention_flops\b",
    "q05_gqa": r"\bgrouped_query_attention\b|\bmulti_head_attention\b",
    "q05_cache_bytes": r"\bkv_cache_bytes\b",
    "q06": r"mha_helpers\.(backward|tasks|training)|\bprune_head\b|\brole_scores\b|\bhead_roles\b",
    "q07_in_proj_weight": r"\bpytorch_state_dict\b",
    "q08": r"\btiled_attention\b|\bonline_softmax_update\b|\bsoftmax\b(?!_)|scaled_dot_product_attention",
}


def _forbidden(entry) -> bool:
    for key, pattern in FORBIDDEN.items():
        if entry.grade_id.startswith(key):
            if re.search(pattern, entry.source):
                return True
    return False


def _arrays(args, kwargs):
    out = [a for a in args if isinstance(a, np.ndarray)]
    for a in args:
        if isinstance(a, list):
            out += [x for x in a if isinstance(x, np.ndarray)]
    return out + [v for v in kwargs.values() if isinstance(v, np.ndarray)]


def _full_matrix_allocated(fn) -> bool:
    r = _rng(170)
    n_q, n_k = 256, 4096
    q, k, v = r.normal(size=(n_q, 8)), r.normal(size=(n_k, 8)), r.normal(size=(n_k, 4))
    tracemalloc.start()
    try:
        fn(q, k, v, 32)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak >= n_q * n_k * 8 // 2


def problems(entry) -> list[str]:
    """Why the entry fails the question (empty: the entry is right)."""
    found = []
    if _forbidden(entry):
        found.append("uses a forbidden course helper")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answer = build(entry)
    except Exception as exc:  # noqa: BLE001 (a learner's cell may raise anything)
        return [*found, f"the cell raises {type(exc).__name__}"]
    gid = entry.grade_id
    if gid in VALUES:
        if not VALUES[gid](answer):
            found.append(f"wrong value {answer!r:.80}")
        return found
    ref, cases, same = FUNCTIONS[gid]
    if not callable(answer):
        return [*found, "not a function"]
    for i, case in enumerate(cases()):
        args, kwargs = case if gid == "q02_full_layer" else (case, {})
        want = ref(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        given = copy.deepcopy((args, kwargs))
        before = [a.copy() for a in _arrays(*given)]
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                got = answer(*given[0], **given[1])
        except Exception as exc:  # noqa: BLE001
            found.append(f"case {i} raises {type(exc).__name__}: {exc!s:.60}")
            continue
        after = _arrays(*given)
        if any(not np.array_equal(b, a, equal_nan=True) for b, a in zip(before, after)):
            found.append(f"case {i} changes its input")
        if not same(got, want):
            found.append(f"case {i} wrong result")
    if gid == "q08_tiled" and not found:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if _full_matrix_allocated(answer):
                found.append("allocates the full score matrix")
    return found


def verify(entries) -> list[str]:
    """Entries that are not what they claim: a wrong one that is right, a right one that fails."""
    bad = []
    for e in entries:
        p = problems(e)
        if isinstance(e, Wrong) and not p:
            bad.append(f"WRONG entry is right: {e.grade_id}: {e.name}")
        elif isinstance(e, Right) and p:
            bad.append(f"RIGHT entry fails: {e.grade_id}: {e.name}: {p[:2]}")
    return bad


def self_test() -> list[str]:
    """The references agree with the facts the exercise texts state."""
    out = []
    x = _rng(0).normal(size=(3, 8))
    if not np.allclose(_merge(_split(x, 2)), x):
        out.append("merge(split(x)) != x")
    if ref_params(768, 12, True) != 4 * 768 * 768 + 4 * 768:
        out.append("params")
    if ref_flops(1024, 768, 1) != ref_flops(1024, 768, 12):
        out.append("flops depend on h")
    if f"{DECODE_EXACT:.4f}" != "4.5857":
        out.append("decode bound")
    if ref_cache(80, 64, 8, 128, 4096, 2, 1) * 32 != 40 * 2**30:
        out.append("max batch")
    return out
