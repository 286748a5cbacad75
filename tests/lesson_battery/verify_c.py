"""Independent references for battery C, written from the exercise texts alone.

``verify(entries)`` returns the entries that are not what they claim: a ``Wrong`` entry that is
in fact right (on every input below, without mutating its inputs and without breaking a rule
the question states), or a ``Right`` entry that is wrong on some input, mutates an input, or
breaks a rule.

Tolerances (the learner guide's): arrays a function returns are compared with
``np.allclose(got, expected, rtol=1e-6, atol=1e-8)`` and must have the expected shape; masks
must be boolean arrays and equal exactly; counts must be Python ``int`` (not ``bool``, not a
float, even a whole one) and equal exactly; shapes are tuples of ``int``; a letter is a ``str``
compared after ``strip().lower()``; ``q08_decode_bound`` passes when the number rounds to the
reference at 3 significant figures. Rules checked: an input array changed in place; a call to
the course's helpers (other than those a question allows) or to SciPy; for ``q08_tiled``, any
intermediate array with a key axis longer than ``block_size`` next to an axis that is not a
feature width (the full score matrix, or rows of it), watched by an ndarray subclass.
"""

from __future__ import annotations

import copy
import re

import numpy as np

from .format import Right, Wrong
from .harness import build

RTOL, ATOL = 1e-6, 1e-8


# ---------------------------------------------------------------- references
def _softmax(s):
    s = np.asarray(s, dtype=float)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _split(x, h):
    n, d = x.shape
    dh = d // h
    return np.stack([x[:, i * dh:(i + 1) * dh] for i in range(h)])


def _merge(x):
    return np.concatenate(list(x), axis=1)


def ref_scores(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T / np.sqrt(w_q.shape[1])


def ref_masked(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    w = _softmax(s)
    return w @ v, w


def ref_pha(x, w_q, w_k, w_v, h):
    q, k, v = (_split(x @ w, h) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    return w @ v, w


def ref_layer(x, w_q, w_k, w_v, w_o, h, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, h) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        out.append(_merge(_softmax(s) @ v) @ w_o)
    return np.stack(out)


def ref_concat_project(heads, w_o):
    return np.concatenate([np.asarray(o) for o in heads], axis=1) @ w_o


def ref_params(d, h, bias):
    inner = h * (d // h)
    return 4 * d * inner + ((3 * inner + d) if bias else 0)


def ref_flops(n, d, h):
    dh = d // h
    inner = h * dh
    return 2 * (3 * n * d * inner + h * 2 * n * n * dh + n * inner * d)


def ref_gqa(x, w_q, w_k, w_v, w_o, h, kv):
    g = h // kv
    q, k, v = _split(x @ w_q, h), _split(x @ w_k, kv), _split(x @ w_v, kv)
    outs = []
    for i in range(h):
        w = _softmax(q[i] @ k[i // g].T / np.sqrt(q.shape[-1]))
        outs.append(w @ v[i // g])
    return _merge(np.stack(outs)) @ w_o


def ref_mean_pool(w, h, kv):
    dh, g = w.shape[1] // h, h // kv
    cols = []
    for j in range(kv):
        cols.append(np.mean([w[:, c * dh:(c + 1) * dh] for c in range(j * g, (j + 1) * g)], axis=0))
    return np.concatenate(cols, axis=1)


def ref_cache(L, h, kv, dh, seq, bpe, batch):
    return 2 * L * kv * dh * seq * bpe * batch


def ref_backward(q, k, v, d_out):
    n, d = q.shape
    s = np.where(np.tril(np.ones((n, n), bool)), q @ k.T / np.sqrt(d), -np.inf)
    a = _softmax(s)
    da = d_out @ v.T
    dv = a.T @ d_out
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(d)
    return ds @ k, ds.T @ q, dv


def ref_roles(w):
    n = w.shape[-1]
    out = np.zeros((w.shape[1], 2))
    for i in range(w.shape[1]):
        out[i, 0] = np.mean([w[b, i, t, t - 1] for b in range(w.shape[0]) for t in range(2, n)])
        out[i, 1] = np.mean([w[b, i, t, 0] for b in range(w.shape[0]) for t in range(2, n)])
    return out


def ref_remove(w_o, head, h):
    w = w_o.copy()
    dh = w.shape[0] // h
    w[head * dh:(head + 1) * dh] = 0
    return w


def ref_pad_causal(lengths, n):
    out = np.zeros((len(lengths), n, n), dtype=bool)
    for b, L in enumerate(lengths):
        for i in range(n):
            for j in range(n):
                out[b, i, j] = (j <= i) and (j < L)
    return out


def ref_kpm(mask):
    return ~np.any(mask, axis=1)


def ref_in_proj(w_q, w_k, w_v):
    return np.vstack([w_q.T, w_k.T, w_v.T])


def ref_online(m, ell, acc, scores, v):
    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(axis=1), c[:, None] * acc + p @ v


def ref_tiled(q, k, v, block_size):
    return _softmax(q @ k.T / np.sqrt(q.shape[1])) @ v


# ---------------------------------------------------------------- inputs
def _rng(seed):
    return np.random.default_rng(seed)


def _mask(rng, n_q, n_k):
    m = rng.random((n_q, n_k)) < 0.5
    m[np.arange(n_q), rng.integers(0, n_k, n_q)] = True
    return m


def cases(gid):
    r = _rng(11)
    N = r.normal
    if gid == "q01_scores":
        return [(N(size=(4, 6)), N(size=(6, 3)), N(size=(6, 3))), (N(size=(1, 2)), N(size=(2, 2)), N(size=(2, 2))),
                (N(size=(5, 3)), N(size=(3, 5)), N(size=(3, 5)))]
    if gid == "q01_softmax":
        a = N(size=(3, 5))
        b = np.array([[800.0, 799.0, -np.inf], [0.0, 1.0, 2.0], [-np.inf, 3.0, -np.inf]])
        return [(a,), (b,), (np.array([[5.0]]),), (N(size=(2, 7)) * 30,), (np.array([[800.0, 799.0], [0.0, 1.0]]),)]
    if gid == "q01_masked_attention":
        out = []
        for n_q, n_k, d_k, d_v in ((3, 5, 4, 2), (4, 4, 3, 3), (1, 3, 2, 5)):
            out.append((N(size=(n_q, d_k)), N(size=(n_k, d_k)), N(size=(n_k, d_v)), _mask(r, n_q, n_k)))
        out.append((N(size=(4, 2)), N(size=(4, 2)), N(size=(4, 3)), np.tril(np.ones((4, 4), bool))))
        return out
    if gid == "q02_split_heads":
        return [(N(size=(5, 8)), 2), (N(size=(3, 12)), 3), (N(size=(4, 6)), 1), (N(size=(2, 4)), 4)]
    if gid == "q02_merge_heads":
        return [(N(size=(2, 5, 4)),), (N(size=(3, 3, 4)),), (N(size=(1, 4, 6)),), (N(size=(4, 2, 1)),)]
    if gid == "q02_per_head_attention":
        out = []
        for n, d, h in ((5, 8, 2), (4, 12, 3), (3, 4, 1), (6, 8, 4)):
            out.append((N(size=(n, d)), *(N(size=(d, d)) for _ in range(3)), h))
        return out
    if gid == "q02_full_layer":
        out = []
        for b, n, d, h, mk in ((2, 4, 8, 2, None), (3, 5, 6, 3, "rand"), (2, 4, 8, 4, "causal"), (1, 3, 4, 1, "rand")):
            mask = None if mk is None else (_mask(r, n, n) if mk == "rand" else np.tril(np.ones((n, n), bool)))
            args = (N(size=(b, n, d)), *(N(size=(d, d)) for _ in range(4)), h)
            out.append(args if mask is None else (*args, mask))
        return out
    if gid == "q03_concat_project":
        out = []
        for h, n, dh, dm in ((2, 3, 2, 5), (3, 4, 2, 6), (1, 2, 3, 3)):
            heads = N(size=(h, n, dh))
            out.append((heads, N(size=(h * dh, dm))))
            out.append(([heads[i].copy() for i in range(h)], N(size=(h * dh, dm))))
        return out
    if gid == "q04_params":
        return [(768, 12, True), (768, 12, False), (10, 3, True), (10, 4, False), (8, 8, True), (7, 1, True)]
    if gid == "q04_flops":
        return [(1024, 768, 12), (10, 3, 1), (10, 4, 3), (7, 7, 7), (5, 10, 3)]
    if gid == "q05_gqa":
        out = []
        for n, d, h, kv in ((5, 8, 4, 2), (4, 8, 4, 1), (3, 8, 4, 4), (4, 16, 8, 2), (3, 12, 2, 1)):
            dh = d // h
            out.append((N(size=(n, d)), N(size=(d, d)), N(size=(d, kv * dh)), N(size=(d, kv * dh)), N(size=(d, d)), h, kv))
        return out
    if gid == "q05_mean_pool":
        return [(N(size=(6, 12)), 4, 2), (N(size=(6, 12)), 4, 1), (N(size=(6, 12)), 4, 4), (N(size=(5, 12)), 6, 3),
                (N(size=(3, 16)), 8, 2)]
    if gid == "q05_cache_bytes":
        return [(80, 64, 8, 128, 4096, 2, 1), (2, 4, 2, 3, 5, 1, 3), (32, 32, 32, 128, 4096, 2, 2), (3, 12, 4, 5, 7, 2, 2),
                (1, 1, 1, 1, 1, 4, 1)]
    if gid == "q06_head_backward":
        return [(N(size=(4, 3)), N(size=(4, 3)), N(size=(4, 2)), N(size=(4, 2))),
                (N(size=(1, 2)), N(size=(1, 2)), N(size=(1, 3)), N(size=(1, 3))),
                (N(size=(5, 2)), N(size=(5, 2)), N(size=(5, 4)), N(size=(5, 4)))]
    if gid == "q06_measure_roles":
        out = []
        for b, h, n in ((2, 3, 6), (1, 1, 3), (3, 2, 5)):
            s = np.where(np.tril(np.ones((n, n), bool)), N(size=(b, h, n, n)) * 2, -np.inf)
            out.append((_softmax(s),))
        return out
    if gid == "q06_remove_head":
        return [(N(size=(6, 6)), 0, 3), (N(size=(6, 6)), 2, 3), (N(size=(4, 4)), 0, 1), (N(size=(8, 8)), 3, 4),
                (N(size=(8, 8)), 1, 4)]
    if gid == "q07_padding_causal_mask":
        return [(np.array([3, 1]), 3), (np.array([4, 2, 4]), 4), (np.array([1]), 1), (np.array([5, 3]), 5)]
    if gid == "q07_key_padding_mask":
        ex = np.tril(np.ones((4, 4), bool))[None] & (np.arange(4) < np.array([4, 2])[:, None])[:, None, :]
        cross = np.broadcast_to((np.arange(5) < np.array([5, 3, 1])[:, None])[:, None, :], (3, 3, 5)).copy()
        pad = np.broadcast_to((np.arange(3) < np.array([2, 3])[:, None])[:, None, :], (2, 3, 3)).copy()
        ex2 = np.tril(np.ones((5, 5), bool))[None] & (np.arange(5) < np.array([3, 5, 1])[:, None])[:, None, :]
        return [(ex,), (cross,), (pad,), (ex2,)]
    if gid == "q07_in_proj_weight":
        return [tuple(N(size=(d, d)) for _ in range(3)) for d in (4, 3, 2)]
    if gid == "q08_online_update":
        out = []
        n_q, b, dv = 3, 4, 2
        out.append((np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, dv)), N(size=(n_q, b)), N(size=(b, dv))))
        s = N(size=(n_q, b)) + np.array([[3.0], [-3.0], [0.0]])
        s[0, 1] = -np.inf
        out.append((np.array([1.0, 0.5, 0.2]), np.array([2.0, 1.5, 1.1]), N(size=(n_q, dv)), s, N(size=(b, dv))))
        out.append((np.array([0.3, 2.0]), np.array([1.2, 3.0]), N(size=(2, 3)), np.array([[5.0], [-1.0]]), N(size=(1, 3))))
        big = N(size=(2, 3)) + 700.0
        out.append((np.array([699.0, 701.0]), np.array([1.0, 2.0]), N(size=(2, 2)), big, N(size=(3, 2))))
        return out
    if gid == "q08_tiled":
        return [(N(size=(5, 3)), N(size=(11, 3)), N(size=(11, 2)), 4), (N(size=(2, 4)), N(size=(6, 4)), N(size=(6, 3)), 1),
                (N(size=(3, 2)), N(size=(4, 2)), N(size=(4, 2)), 4), (N(size=(4, 3)), N(size=(9, 3)), N(size=(9, 5)), 3),
                (N(size=(7, 5)), N(size=(11, 5)), N(size=(11, 6)), 4)]
    raise KeyError(gid)


REFS = {
    "q01_scores": ref_scores, "q01_softmax": _softmax, "q01_masked_attention": ref_masked,
    "q02_split_heads": _split, "q02_merge_heads": _merge, "q02_per_head_attention": ref_pha,
    "q02_full_layer": ref_layer, "q03_concat_project": ref_concat_project, "q04_params": ref_params,
    "q04_flops": ref_flops, "q05_gqa": ref_gqa, "q05_mean_pool": ref_mean_pool, "q05_cache_bytes": ref_cache,
    "q06_head_backward": ref_backward, "q06_measure_roles": ref_roles, "q06_remove_head": ref_remove,
    "q07_padding_causal_mask": ref_pad_causal, "q07_key_padding_mask": ref_kpm,
    "q07_in_proj_weight": ref_in_proj, "q08_online_update": ref_online, "q08_tiled": ref_tiled,
}
COUNT_FUNCS = {"q04_params", "q04_flops", "q05_cache_bytes"}
MASK_FUNCS = {"q07_padding_causal_mask", "q07_key_padding_mask"}
TUPLE_FUNCS = {"q01_masked_attention": 2, "q02_per_head_attention": 2, "q06_head_backward": 3, "q08_online_update": 3}

VALUES = {
    "q02_weights_shape": ("shape", (2, 5, 5)),
    "q03_d_head": ("count", 64),
    "q03_identity_output": ("vector", [1.0, 2.0, 3.0, 4.0]),
    "q03_concat_vs_average": ("letter", "b"),
    "q04_changes_with_h": ("bools", (False, False, True, True)),
    "q04_weight_entries": ("count", 12 * 1024 * 1024),
    "q05_max_batch": ("count", 32),
    "q06_roles_seed7": ("exact", ("first", "previous", "first", "previous")),
    "q06_prune_prediction": ("letter", "b"),
    "q07_cross_shape": ("shape", (2, 4, 5, 7)),
    "q07_pytorch_call": ("letter", "b"),
    "q08_mla_cache": ("count", (512 + 64) * 60 * 2),
    "q08_decode_bound": ("sig3", (13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1e3),
}

ALLOWED_HELPERS = {
    "q05_gqa": {"split_heads", "merge_heads", "scaled_dot_product_attention"},
    "q07_padding_causal_mask": {"causal_mask"},
}


# ---------------------------------------------------------------- comparisons
def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _close(got, exp):
    try:
        g = np.asarray(got)
    except Exception:
        return False
    if g.dtype == object or g.dtype.kind not in "fiu" or g.shape != np.shape(exp):
        return False
    return bool(np.allclose(g.astype(float), exp, rtol=RTOL, atol=ATOL, equal_nan=False))


def value_ok(gid, x) -> bool:
    kind, exp = VALUES[gid]
    if kind == "count":
        return _is_int(x) and x == exp
    if kind == "shape":
        return isinstance(x, tuple) and all(_is_int(e) for e in x) and x == exp
    if kind == "letter":
        return isinstance(x, str) and x.strip().lower() == exp
    if kind == "bools":
        return isinstance(x, tuple) and all(isinstance(e, bool) for e in x) and x == exp
    if kind == "exact":
        return isinstance(x, tuple) and x == exp
    if kind == "vector":
        if isinstance(x, (str, bytes)):
            return False
        return _close(x, np.array(exp))
    if kind == "sig3":
        if isinstance(x, (bool, str)) or not isinstance(x, (int, float, np.floating, np.integer)):
            return False
        return f"{float(x):.3g}" == f"{exp:.3g}"
    raise KeyError(kind)


def _same_inputs(before, after):
    for a, b in zip(before, after):
        if isinstance(a, np.ndarray):
            if not (isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)):
                return False
        elif isinstance(a, list):
            if not _same_inputs(a, b):
                return False
    return True


def result_ok(gid, got, exp) -> bool:
    if gid in COUNT_FUNCS:
        return _is_int(got) and got == exp
    if gid in MASK_FUNCS:
        return isinstance(got, np.ndarray) and got.dtype == bool and got.shape == exp.shape and np.array_equal(got, exp)
    if gid in TUPLE_FUNCS:
        if not isinstance(got, tuple) or len(got) != TUPLE_FUNCS[gid]:
            return False
        return all(_close(g, e) for g, e in zip(got, exp))
    return _close(got, exp)


def breaks_helper_rule(gid, source) -> bool:
    if re.search(r"\bscipy\b", source):
        return True
    allowed = ALLOWED_HELPERS.get(gid, set())
    for _mod, names in re.findall(r"from\s+(mha_helpers[\w.]*)\s+import\s+([\w ,]+)", source):
        for name in (n.strip().split(" as ")[0] for n in names.split(",")):
            if name and name not in allowed:
                return True
    return bool(re.search(r"\bmha_helpers\.\w+\(", source))


class _Watch(np.ndarray):
    """Records the shape of every array a ufunc or NumPy function produces from a watched one."""

    log: list = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(np.asarray(i) if isinstance(i, _Watch) else i for i in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, _Watch) else o for o in kwargs["out"])
        res = getattr(ufunc, method)(*inputs, **kwargs)
        return _wrap(res)

    def __array_function__(self, func, types, args, kwargs):
        args = _unwatch(args)
        kwargs = _unwatch(kwargs)
        return _wrap(func(*args, **kwargs))


def _unwatch(obj):
    if isinstance(obj, _Watch):
        return np.asarray(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unwatch(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _unwatch(v) for k, v in obj.items()}
    return obj


def _wrap(res):
    if isinstance(res, np.ndarray) and not isinstance(res, _Watch):
        _Watch.log.append(res.shape)
        return res.view(_Watch)
    if isinstance(res, (tuple, list)):
        return type(res)(_wrap(r) for r in res)
    return res


def builds_full_scores(fn) -> bool:
    """True when ``tiled`` makes an array with a key axis next to a non-feature axis."""
    r = _rng(5)
    n_q, n_k, d_k, d_v, bs = 7, 11, 5, 6, 4
    q, k, v = r.normal(size=(n_q, d_k)), r.normal(size=(n_k, d_k)), r.normal(size=(n_k, d_v))
    _Watch.log = []
    try:
        fn(q.view(_Watch), k.view(_Watch), v.view(_Watch), bs)
    except Exception:
        return False
    for shape in _Watch.log:
        if len(shape) >= 2 and n_k in shape[-2:]:
            other = shape[-1] if shape[-2] == n_k else shape[-2]
            if other not in (d_k, d_v):
                return True
    return False


# ---------------------------------------------------------------- verdicts
def is_right(entry) -> tuple[bool, str]:
    """(right?, why not) for one entry, by the references above."""
    gid = entry.grade_id
    try:
        obj = build(entry)
    except Exception as e:  # noqa: BLE001
        return False, f"does not build: {e!r}"
    if gid in VALUES:
        return (True, "") if value_ok(gid, obj) else (False, f"value {obj!r}")
    if breaks_helper_rule(gid, entry.source):
        return False, "calls a forbidden helper"
    if not callable(obj):
        return False, "not callable"
    for args in cases(gid):
        before = copy.deepcopy(args)
        exp = REFS[gid](*copy.deepcopy(args))
        try:
            with np.errstate(all="ignore"):
                got = obj(*args)
        except Exception as e:  # noqa: BLE001
            return False, f"raises {type(e).__name__}"
        if not _same_inputs(before, args):
            return False, "modifies an input"
        if not result_ok(gid, got, exp):
            return False, "wrong result"
    if gid == "q08_tiled" and builds_full_scores(obj):
        return False, "builds score rows over all keys"
    return True, ""


def verify(entries) -> list[tuple[object, str]]:
    """The entries that are not what they claim, with the reason."""
    bad = []
    for e in entries:
        ok, why = is_right(e)
        if isinstance(e, Wrong) and ok:
            bad.append((e, "wrong entry is right"))
        elif isinstance(e, Right) and not ok:
            bad.append((e, f"right entry fails: {why}"))
    return bad
