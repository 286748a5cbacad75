"""Compare an answer with the expected one and say, in words, how they differ.

Used both by the learner's self-check (in the notebook) and by the instructor's grader (in the
grading process, outside the student's Python), so the verdict is the same in both places.
"""

from __future__ import annotations

import numpy as np

__all__ = ["difference", "matches"]


def difference(expected, actual, rtol=1e-6, atol=1e-8, path="result"):
    """Return ``None`` when ``actual`` matches ``expected``, else a short description.

    Tuples are compared element by element (for functions that return ``(output, weights)``);
    strings are compared case-insensitively after stripping; anything numeric is compared as an
    array: same shape, then ``allclose`` with NaN never equal to anything.
    """
    if isinstance(expected, str):
        if not isinstance(actual, str):
            return f"{path} should be text, got {type(actual).__name__}"
        return None if actual.strip().lower() == expected.strip().lower() else f"{path} is {actual!r}"
    if isinstance(expected, tuple):
        if not isinstance(actual, (tuple, list)):
            got = (f"an array of shape {actual.shape}" if isinstance(actual, np.ndarray)
                   else f"a {type(actual).__name__}")
            return f"{path} should be a tuple of {len(expected)} items, got {got}"
        if len(actual) != len(expected):
            return f"{path} should be a tuple of {len(expected)} items, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            d = difference(e, a, rtol, atol, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(expected, bool) or expected is None:
        return None if actual is expected or actual == expected else f"{path} is {actual!r}"
    try:
        a = np.asarray(actual, dtype=float)
    except (TypeError, ValueError):
        return f"{path} is not numeric (got {type(actual).__name__})"
    e = np.asarray(expected, dtype=float)
    if a.shape != e.shape:
        return f"{path} has shape {a.shape}, expected shape {e.shape}"
    if not np.all(np.isfinite(a)):
        return f"{path} contains NaN or infinity"
    if not np.allclose(a, e, rtol=rtol, atol=atol):
        err = float(np.max(np.abs(a - e))) if a.size else 0.0
        return f"{path} has the right shape {a.shape} but wrong values (largest difference {err:.3g})"
    return None


def matches(expected, actual, rtol=1e-6, atol=1e-8) -> bool:
    """True when :func:`difference` finds nothing."""
    return difference(expected, actual, rtol, atol) is None
