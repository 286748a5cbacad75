"""Compare an answer with the expected one and say, in words, how they differ.

Used by the learner's self-check (in the notebook) and by the instructor's grader (in its own
process, outside the sandbox), so the verdict is the same in both places.

A difference is a :class:`Difference`: a string a learner can read, plus ``kind`` and
``generic``, a wording with no numbers from the case (what the grader shows for its hidden
cases, so feedback never reveals them).
"""

from __future__ import annotations

import numpy as np

__all__ = ["difference", "matches", "Difference"]


class Difference(str):
    """The text of a difference, with ``kind`` and a case-free ``generic`` wording."""

    kind: str
    generic: str

    def __new__(cls, text: str, kind: str, generic: str | None = None):
        obj = super().__new__(cls, text)
        obj.kind = kind
        obj.generic = generic if generic is not None else text
        return obj


def _describe(x) -> str:
    if (
        hasattr(x, "what") and type(x).__name__ == "Unsupported"
    ):  # a value the sandbox could not send
        return f"something that could not be read back ({x.what})"
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape}"
    if isinstance(x, str):
        return "text"
    name = type(x).__name__
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _kind(x) -> str:
    """:func:`_describe` without anything the answer chose (no shape, no text): for
    ``generic``, the wording about a hidden case."""
    if isinstance(x, np.ndarray):
        return "an array"
    return "text" if isinstance(x, str) else f"a {type(x).__name__}"[:40]


def difference(expected, actual, rtol=1e-6, atol=1e-8, path="result", equal_nan=False):
    """Return ``None`` when ``actual`` matches ``expected``, else a :class:`Difference`.

    Tuples are compared item by item (for functions that return ``(output, weights)``);
    strings case-insensitively after stripping; anything numeric as an array: same shape, then
    ``allclose``, with NaN equal to nothing (unless ``equal_nan``: used to recognise a classic
    mistake, whose NaNs are part of what it returns). Text never passes for a number, and
    ``None`` never passes for anything but ``None``.

    >>> print(difference([1.0, 2.0], [2.0, 1.0]))
    result has the right shape (2,) but wrong values (largest difference 1)
    >>> difference(3, "3").kind
    'type'
    >>> print(difference(np.zeros((2, 3)), np.zeros((3, 2))))
    result is transposed: shape (3, 2), expected (2, 3)
    >>> print(difference(np.zeros((8, 4)), np.ones((8, 2))))
    result has shape (8, 2), expected shape (8, 4) (the number of rows is right; 2 columns where 4 are expected, half as many)
    """
    if isinstance(expected, str):
        return _text_difference(expected, actual, path)
    if actual is None and expected is not None:
        return Difference(f"{path} is None", "none")
    if isinstance(expected, tuple):
        return _tuple_difference(expected, actual, rtol, atol, path, equal_nan)
    if isinstance(expected, (bool, np.bool_)) or expected is None:
        return _flag_difference(expected, actual, path)
    return _number_difference(expected, actual, rtol, atol, path, equal_nan)


def _text_difference(expected: str, actual, path: str):
    """Text matches text, case-insensitively after stripping; nothing else matches it."""
    if not isinstance(actual, str):
        return Difference(
            f"{path} should be text, got {_describe(actual)}",
            "type",
            f"{path} should be text, got {_kind(actual)}",
        )
    if actual.strip().lower() == expected.strip().lower():
        return None
    return Difference(f"{path} is {actual[:80]!r}", "text", f"{path} is not the expected text")


def _tuple_difference(expected: tuple, actual, rtol, atol, path: str, equal_nan: bool):
    """A tuple (or list) of as many items, each matching (the first that does not is named)."""
    if not isinstance(actual, (tuple, list)):
        return Difference(
            f"{path} should be a tuple of {len(expected)} items, got {_describe(actual)}",
            "type",
            f"{path} should be a tuple of {len(expected)} items, got {_kind(actual)}",
        )
    if len(actual) != len(expected):
        return Difference(
            f"{path} should be a tuple of {len(expected)} items, got {len(actual)}",
            "tuple-len",
            f"{path} should be a tuple of {len(expected)} items",
        )
    for i, (e, a) in enumerate(zip(expected, actual)):
        d = difference(e, a, rtol, atol, f"{path}[{i}]", equal_nan)
        if d:
            return d
    return None


def _flag_difference(expected, actual, path: str):
    """A truth value (or ``None``) is matched by itself, or by an int or bool equal to it."""
    ok = actual is expected or (isinstance(actual, (bool, np.bool_, int)) and actual == expected)
    if ok:
        return None
    return Difference(f"{path} is {str(actual)[:80]}", "value", f"{path} is not the expected value")


def _number_difference(expected, actual, rtol, atol, path: str, equal_nan: bool):
    """Anything numeric, as an array: never text, a dict or a function; the same shape (or a
    transposed or reshaped copy of the right numbers, said so); finite where expected; then
    ``allclose``."""
    if isinstance(actual, (str, bytes)):
        return Difference(
            f"{path} should be a number, got text {str(actual)[:40]!r}",
            "type",
            f"{path} should be a number, got text",
        )
    if isinstance(actual, dict) or callable(actual):
        return Difference(
            f"{path} should be a number or an array, got {_describe(actual)}",
            "type",
            f"{path} should be a number or an array, got {_kind(actual)}",
        )
    try:
        raw = np.asarray(actual)
        if np.iscomplexobj(raw) and not np.iscomplexobj(np.asarray(expected)):
            return Difference(  # a cast to float would drop the imaginary part silently
                f"{path} holds complex numbers (dtype {raw.dtype}); the result is real",
                "type",
                f"{path} holds complex numbers; the result is real",
            )
        a = np.asarray(actual, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return Difference(
            f"{path} is not numeric (got {_describe(actual)})",
            "type",
            f"{path} is not numeric (got {_kind(actual)})",
        )
    e = np.asarray(expected, dtype=float)
    if a.shape != e.shape:
        return _shape_difference(a, e, rtol, atol, path, equal_nan)
    if _is_count(expected):  # a count is exact: 12,582,913 is not 12,582,912
        if _exactly(expected, actual, a, e):
            return None
        finite = np.isfinite(a)
        err = float(np.max(np.abs(a - e)[finite])) if finite.any() else float("nan")
        return Difference(
            f"{path} has the right shape {a.shape} but wrong values (off by {err:.6g}; "
            "counts are compared exactly)",
            "values",
            f"{path} has the right shape but wrong values",
        )
    if not np.all(np.isfinite(a)) and not np.array_equal(np.isfinite(a), np.isfinite(e)):
        return Difference(f"{path} contains NaN or infinity", "nonfinite")
    if not _close(a, e, rtol, atol, equal_nan):
        finite = np.isfinite(a) & np.isfinite(e)
        err = float(np.max(np.abs(a - e)[finite])) if finite.any() else float("nan")
        return Difference(
            f"{path} has the right shape {a.shape} but wrong values (largest difference {err:.3g})",
            "values",
            f"{path} has the right shape but wrong values",
        )
    return None


def _is_count(expected) -> bool:
    """An integer (or an integer array), not a truth value: compared exactly."""
    if isinstance(expected, (bool, np.bool_)):
        return False
    if isinstance(expected, (int, np.integer)):
        return True
    return isinstance(expected, np.ndarray) and expected.dtype.kind in "iu"


def _exactly(expected, actual, a, e) -> bool:
    """Equal exactly (whole-number floats equal to the count included: their *type* is judged
    separately). Python ints are compared as ints, so no size is rounded."""
    if isinstance(expected, (int, np.integer)) and isinstance(actual, (int, np.integer)):
        return int(expected) == int(actual)
    return bool(np.all(np.isfinite(a))) and bool(np.array_equal(a, e))


def _shape_difference(a, e, rtol, atol, path: str, equal_nan: bool):
    """Arrays of different shapes: transposed, the right numbers reshaped, or just wrong."""
    if a.ndim == 2 and a.T.shape == e.shape and _close(a.T, e, rtol, atol, equal_nan):
        return Difference(
            f"{path} is transposed: shape {a.shape}, expected {e.shape}",
            "transposed",
            f"{path} is transposed",
        )
    if a.size == e.size and _close(a.reshape(e.shape), e, rtol, atol, equal_nan):
        return Difference(
            f"{path} has the right numbers but shape {a.shape}, expected shape {e.shape}",
            "reshaped",
            f"{path} has the right numbers in the wrong shape",
        )
    return Difference(
        f"{path} has shape {a.shape}, expected shape {e.shape}{_axes_note(a.shape, e.shape)}",
        "shape",
        f"{path} has the wrong shape",
    )


def _axes_note(got: tuple, want: tuple) -> str:
    """For two 2-d shapes that share one axis: which axis is right and by what factor the other
    is off (the number of rows right, half as many columns), a property of the answer."""
    if len(got) != 2 or len(want) != 2 or (got[0] == want[0]) == (got[1] == want[1]):
        return ""
    axis = 1 if got[0] == want[0] else 0
    same, other = ("rows", "columns") if axis == 1 else ("columns", "rows")
    g, w = got[axis], want[axis]
    ratio = ""
    if g and w and max(g, w) % min(g, w) == 0:
        k = max(g, w) // min(g, w)
        if k == 2:
            ratio = ", twice as many" if g > w else ", half as many"
        else:
            ratio = f", {k} times as many" if g > w else f", 1/{k} as many"
    return f" (the number of {same} is right; {g} {other} where {w} are expected{ratio})"


def _close(a, e, rtol, atol, equal_nan=False) -> bool:
    """allclose where infinities must match exactly and NaN matches nothing (or, with
    ``equal_nan``, only NaN)."""
    same_inf = np.isinf(e) & (a == e)
    finite = np.isfinite(a) & np.isfinite(e)
    both_nan = np.isnan(a) & np.isnan(e) if equal_nan else False
    if not np.all(same_inf | finite | both_nan):
        return False
    return bool(np.allclose(a[finite], e[finite], rtol=rtol, atol=atol))


def matches(expected, actual, rtol=1e-6, atol=1e-8) -> bool:
    """True when :func:`difference` finds nothing."""
    return difference(expected, actual, rtol, atol) is None
