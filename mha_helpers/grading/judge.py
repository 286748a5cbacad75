"""The verdict on one answer: the single rule book the self-check and the grader both use.

Neither side runs reference code here. The caller supplies what the answer did on each case
(:class:`~.watch.CaseResult`) and what was expected:

* the **self-check** takes the expected outputs, and each classic mistake's outputs, from the
  data ``mha-course release`` generated (public cases only);
* the **grader** computes them in its own process from the question bank, for the public cases
  and for fresh hidden ones, after the sandbox has sent back the answer's outputs.

So a learner and an instructor see the same verdict for the same behaviour, and feedback on a
hidden case uses wording with no numbers from that case.

Value questions (a number, a shape, a letter) are matched through :func:`value_hashes`:
the self-check data holds salted hashes of the expected value rounded to 6 and to 5
significant digits, never the value itself. Why two roundings: any rounding has boundaries, so
a value computed on another processor, a few units in the last place away, can round the other
way and change one hash. The boundaries of the two roundings never coincide (a 5-digit
boundary ``d.dddd5`` is a 6-digit number, at least half a unit of the 6th digit away from every
6-digit boundary), and the two snap-to-zero thresholds differ tenfold, so a last-bit change can
move at most one of the two hashes and the verdict, which accepts either, does not depend on
the last bits. Drift checks compare stored hashes with :func:`value_hashes_near`. A value the self-check confirms is still a value a
learner can find by guessing (a multiple-choice letter has four candidates); weigh such points
accordingly.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from .compare import difference

__all__ = [
    "question_meta",
    "function_verdict",
    "value_verdict",
    "value_hashes",
    "value_hashes_near",
    "value_info",
    "NO_OUTPUT",
    "helper_message",
    "not_attempted",
    "not_callable",
    "public_cases",
    "expected_outputs",
]


class _NoOutput:
    def __repr__(self):
        return "<no output>"


NO_OUTPUT = _NoOutput()  # a classic mistake that raised on this case


def question_meta(q) -> dict:
    """The parts of a question both sides need (no reference, no expected values)."""
    return {
        "grade_id": q.grade_id,
        "assignment": q.assignment,
        "kind": q.kind,
        "points": float(q.points),
        "prompt": q.prompt,
        "hint": q.hint,
        "rtol": q.rtol,
        "atol": q.atol,
        "forbidden": list(q.forbidden),
        "mistakes": [{"name": m.name, "hint": m.hint} for m in q.mistakes],
    }


def _base(meta) -> dict:
    return {
        "grade_id": meta["grade_id"],
        "status": "failed",
        "points": 0.0,
        "max_points": float(meta["points"]),
        "message": "",
        "hint": "",
        "case": None,
        "public": True,
        "expected": None,
        "actual": None,
    }


def not_attempted(meta) -> dict:
    return _base(meta) | {"status": "not-attempted", "message": "not attempted yet"}


def not_callable(meta, type_name: str) -> dict:
    return _base(meta) | {
        "status": "error",
        "message": f"expected a function, got {type_name}",
        "hint": "pass the function itself, without calling it: check(id, my_function)",
    }


def helper_message(names) -> str:
    listed = ", ".join(f"`{n}`" for n in names)
    return (
        f"your answer calls the course's own {listed}, which does the very thing this "
        "question asks you to write; write it yourself (the lesson shows how), then check again"
    )


def function_verdict(
    meta: dict, results: list, expected: list, mistakes: list, n_public: int, helpers: list = ()
) -> dict:
    """Judge a function answer.

    ``results[i]`` is what the answer did on case ``i`` (it may stop early after a raise);
    ``expected[i]`` the right output; ``mistakes[i][j]`` what mistake ``j`` returns on case ``i``
    (or :data:`NO_OUTPUT`). Cases ``0 .. n_public - 1`` are public: messages about them may
    show numbers; later ones are the grader's hidden cases, described without any.
    """
    r = _base(meta)
    if helpers:
        r.update(message=helper_message(helpers), hint="")
        r["helpers"] = list(helpers)
        return r
    for i, want in enumerate(expected):
        public = i < n_public
        where = f"case {i + 1}" if public else "one of the grader's hidden cases"
        if i >= len(results) or results[i] is None:
            r.update(
                status="error",
                case=i,
                public=public,
                hint=meta["hint"],
                message=f"no result for {where} (the answer stopped before it)",
            )
            return r
        res = results[i]
        if res.raised:
            kind, text = res.raised
            if kind == "NotImplementedError":
                return not_attempted(meta)
            shown = f"{kind}: {text}" if public else kind
            r.update(
                status="error",
                case=i,
                public=public,
                hint=meta["hint"],
                message=f"{where} raised {shown}",
            )
            return r
        if res.mutated:
            names = ", ".join(f"`{n}`" for n in res.mutated)
            r.update(
                case=i,
                public=public,
                hint="",
                message=f"your function changes its input {names} in place, so the caller's "
                f"array is different afterwards (the next cell would see the change). "
                f"Work on a copy (for example `w = w.copy()`) or build a new array.",
            )
            return r
        if res.value is None and want is not None:
            r.update(
                case=i,
                public=public,
                hint="",
                message="your function returned None: did you forget `return`?",
            )
            return r
        diff = difference(want, res.value, meta["rtol"], meta["atol"])
        if diff is None:
            continue
        hint = meta["hint"]
        for m, out in zip(meta["mistakes"], mistakes[i] if i < len(mistakes) else []):
            if (
                out is not NO_OUTPUT
                and difference(out, res.value, meta["rtol"], meta["atol"], equal_nan=True) is None
            ):
                hint = m["hint"]
                break
        r.update(
            case=i, public=public, hint=hint, message=f"{where}: {diff if public else diff.generic}"
        )
        if public:
            r.update(expected=want, actual=res.value)
        return r
    r.update(status="passed", points=float(meta["points"]))
    return r


def public_cases(q) -> list:
    """The public cases of a function question (the same every time: the self-check's)."""
    return list(q.cases(np.random.default_rng(q.public_seed)))


def expected_outputs(q, cases) -> tuple[list, list]:
    """What the reference returns on each case, and what each classic mistake returns
    (:data:`NO_OUTPUT` where a mistake raises). Runs the question bank's code: only ever in the
    instructor's process (release, grader, tests), never where student code runs."""
    import warnings

    from .watch import copy_args

    def run(fn, args):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*copy_args(args))

    expected = [run(q.reference, c) for c in cases]
    mistakes = []
    for c in cases:
        row = []
        for m in q.mistakes:
            if not callable(m.answer):
                row.append(m.answer)
                continue
            try:
                row.append(run(m.answer, c))
            except Exception:
                row.append(NO_OUTPUT)
        mistakes.append(row)
    return expected, mistakes


# --- value questions ------------------------------------------------------------------------


def _zero_below(digits: int, scale: float) -> float:
    """Entries this small read as 0 (noise around an exact zero). The threshold depends on
    ``digits`` (1e-9 of the array's largest entry at 6 digits, 1e-8 at 5) so that the two
    roundings never share a boundary there either."""
    return max(10.0 ** -(digits + 6), 10.0 ** -(digits + 3) * scale)


def _number_text(v: float, digits: int, scale: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if abs(v) <= _zero_below(digits, scale):
        return "0"
    text = f"{v:.{digits}g}"
    return "0" if text in ("-0", "0") else text


def _canonical(x, digits: int, depth: int = 0):
    if depth > 8:
        return None
    if isinstance(x, str):
        return "s:" + " ".join(x.strip().lower().split())
    if x is None:
        return "none"
    if isinstance(x, (list, tuple)) and any(isinstance(v, str) or v is None for v in x):
        parts = [_canonical(v, digits, depth + 1) for v in x]
        return None if None in parts else "t(" + "|".join(parts) + ")"
    try:
        arr = np.asarray(x)
        if arr.dtype.kind not in "biuf":
            return None
        arr = arr.astype(float)
    except (TypeError, ValueError, OverflowError):
        return None
    flat = arr.ravel()
    finite = flat[np.isfinite(flat)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    return f"a{arr.shape}:" + ",".join(
        _number_text(float(v), digits, scale) for v in flat[:100_000]
    )


def value_hashes(grade_id: str, x) -> list | None:
    """Salted hashes of ``x`` rounded to 6 and to 5 significant digits (``None`` when ``x`` is
    not a number, an array, text or a tuple of those). Two values match when either hash
    agrees: whatever the value, at least one of the two roundings is not near a boundary, so a
    right answer computed a little differently still matches.

    >>> value_hashes("q", 64) == value_hashes("q", 64.0000000001)
    True
    >>> value_hashes("q", " B ") == value_hashes("q", "b")
    True
    """
    out = []
    for digits in (6, 5):
        c = _canonical(x, digits)
        if c is None:
            return None
        out.append(_salted(grade_id, c))
    return out


def _salted(grade_id: str, canonical: str) -> str:
    return hashlib.sha256(f"{grade_id}\x00{canonical}".encode("utf-8")).hexdigest()


def _canonical_near(x, digits: int, rtol: float, atol: float, limit: int):
    """Every canonical text (see :func:`_canonical`) of a value within ``rtol * |v| + atol`` of
    ``x`` element by element, or None when there would be more than ``limit`` of them."""
    if isinstance(x, str) or x is None:
        return {_canonical(x, digits)}
    if isinstance(x, (list, tuple)) and any(isinstance(v, str) or v is None for v in x):
        options = [_canonical_near(v, digits, rtol, atol, limit) for v in x]
        if any(o is None or None in o for o in options):
            return None
        return _joined(options, "t(", "|", ")", limit)
    if _canonical(x, digits) is None:
        return {None}
    arr = np.asarray(x).astype(float)
    flat = arr.ravel()[:100_000]
    finite = flat[np.isfinite(flat)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    scales = (scale * (1 - rtol) - atol, scale, scale * (1 + rtol) + atol)
    options = []
    for v in map(float, flat):
        d = rtol * abs(v) + atol if math.isfinite(v) else 0.0
        # rounding is monotonic in v, and d is far smaller than a unit of the 5th digit, so the
        # interval's two ends and its middle give every text a value in it can have
        options.append(
            sorted(
                {_number_text(w, digits, max(s, 0.0)) for w in (v - d, v, v + d) for s in scales}
            )
        )
    return _joined(options, f"a{arr.shape}:", ",", "", limit)


def _joined(options: list, head: str, sep: str, tail: str, limit: int):
    import itertools

    count = 1
    for o in options:
        count *= len(o)
        if count > limit:
            return None
    return {head + sep.join(parts) + tail for parts in itertools.product(*options)}


def value_hashes_near(grade_id: str, x, rtol: float, atol: float, limit: int = 256):
    """For each of the two roundings of :func:`value_hashes`, the set of hashes that a value
    within ``rtol * |v| + atol`` of ``x`` (element by element) can have; None when ``x`` has
    more than ``limit`` such values (then only an exact match can be recognised).

    The drift check uses it: a stored hash that is in the set belongs to a value within the
    tolerance of the freshly computed one, so it is up to date.

    >>> a = 1.234565; b = math.nextafter(a, 2)  # one unit in the last place apart
    >>> [x == y for x, y in zip(value_hashes("q", a), value_hashes("q", b))]  # 6 digits differ
    [False, True]
    >>> [x in near for x, near in zip(value_hashes("q", a), value_hashes_near("q", b, 1e-9, 0))]
    [True, True]
    >>> [x in near for x, near in zip(value_hashes("q", 1.23458), value_hashes_near("q", b, 1e-9, 0))]
    [False, True]
    """
    out = []
    for digits in (6, 5):
        texts = _canonical_near(x, digits, rtol, atol, limit)
        if texts is None or None in texts:
            return None
        out.append({_salted(grade_id, c) for c in texts})
    return out


def _kind_of(x) -> str:
    if isinstance(x, str):
        return "text"
    if isinstance(x, tuple) and any(isinstance(v, str) for v in x):
        return "tuple"
    return "number"


def value_info(grade_id: str, expected) -> dict:
    """What the self-check may know about an expected value: its hashes and its form."""
    kind = _kind_of(expected)
    info = {"hashes": value_hashes(grade_id, expected), "type": kind}
    if kind == "number":
        info["shape"] = list(np.shape(np.asarray(expected, dtype=float)))
    elif kind == "tuple":
        info["length"] = len(expected)
    return info


def value_verdict(meta: dict, info: dict, mistake_hashes: list, actual) -> dict:
    """Judge a value answer from the expected value's :func:`value_info` and the classic
    mistakes' hashes (``mistake_hashes[j]`` belongs to ``meta["mistakes"][j]``)."""
    r = _base(meta)
    if actual is None or actual is Ellipsis:
        return not_attempted(meta)
    if info.get("recorded"):  # a copy for graded work: the form only (see recorded.py)
        from .recorded import recorded_verdict

        return recorded_verdict(meta, info, actual)
    gid = meta["grade_id"]
    got = value_hashes(gid, actual)
    want = info.get("hashes") or []
    if got and want and (got[0] == want[0] or got[1] == want[1]):
        r.update(status="passed", points=float(meta["points"]))
        return r
    hint = meta["hint"]
    for m, hashes in zip(meta["mistakes"], mistake_hashes):
        if got and hashes and (got[0] == hashes[0] or got[1] == hashes[1]):
            hint = m["hint"]
            break
    kind = info.get("type")
    try:
        shape = list(np.shape(np.asarray(actual, dtype=object)))
    except (ValueError, TypeError):
        shape = None
    if kind == "number" and isinstance(actual, (str, bytes)):
        message = f"your answer should be a number, got text {str(actual)[:40]!r}"
    elif kind == "text" and not isinstance(actual, str):
        message = f"your answer should be text, got a {type(actual).__name__}"
    elif kind == "number" and got is None:
        message = f"your answer should be a number or an array, got a {type(actual).__name__}"
    elif kind == "number" and shape is not None and shape != info.get("shape"):
        message = (
            f"your answer has shape {tuple(shape)}, expected shape {tuple(info.get('shape') or ())}"
        )
    elif kind == "tuple" and (
        not isinstance(actual, (tuple, list)) or len(actual) != info.get("length")
    ):
        message = f"your answer should be a tuple of {info.get('length')} items"
    else:
        message = "your answer is not the expected value"
    r.update(message=message, hint=hint)
    return r
