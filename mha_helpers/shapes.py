"""Shape and dtype checks that explain what went wrong.

Every public function in the course validates its inputs with these helpers, so a wrong shape
raises a ``ValueError`` that names the argument, the shape it got, the shape it expected and the
likely cause, instead of a broadcasting error from deep inside NumPy.

Lessons use :func:`check_shape` the way d2l uses ``check_shape``: to verify shapes with code
rather than by eye.

>>> import numpy as np
>>> check_shape(np.zeros((3, 8)), (3, 8), "x")
(3, 8)
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_shape", "head_width", "kv_group_size"]


def _fmt(shape) -> str:
    """Render a shape the way NumPy prints it, with ``None`` shown as ``*`` (any size)."""
    parts = ["*" if s is None else str(s) for s in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def check_shape(array, expected, name: str = "array", hint: str = "") -> tuple:
    """Raise ``ValueError`` unless ``array.shape`` matches ``expected``; return the shape.

    ``expected`` is a tuple of ints; ``None`` in a position accepts any size there.

    >>> check_shape(np.ones((2, 3, 4)), (2, None, 4), "weights")
    (2, 3, 4)
    """
    shape = tuple(np.shape(array))
    expected = tuple(expected)
    ok = len(shape) == len(expected) and all(e is None or s == e for s, e in zip(shape, expected))
    if not ok:
        msg = f"{name} has shape {_fmt(shape)}, expected {_fmt(expected)}"
        if hint:
            msg += f": {hint}"
        raise ValueError(msg)
    return shape


def positive_int(value, name: str, what: str = "") -> int:
    """Return ``value`` as an int if it is a whole number >= 1; otherwise raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive whole number{what}, got {value!r}")
    return int(value)


def head_width(d_model: int, num_heads: int) -> int:
    """Return ``d_head = d_model // num_heads``, or explain why it does not exist.

    >>> head_width(768, 12)
    64
    """
    num_heads = positive_int(num_heads, "num_heads")
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}: each head needs "
            f"d_model / num_heads features; choose num_heads among the divisors of d_model "
            f"({', '.join(str(k) for k in range(1, d_model + 1) if d_model % k == 0 and k <= 64)})"
        )
    return d_model // num_heads


def kv_group_size(num_heads: int, num_kv_heads: int) -> int:
    """Return how many query heads share one key/value head, ``num_heads // num_kv_heads``.

    >>> kv_group_size(32, 8)        # Llama 3 8B: groups of 4 query heads
    4
    """
    num_heads = positive_int(num_heads, "num_heads")
    num_kv_heads = positive_int(num_kv_heads, "num_kv_heads")
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads={num_heads} is not divisible by num_kv_heads={num_kv_heads}: every KV "
            f"head serves a group of num_heads / num_kv_heads query heads, so num_kv_heads must "
            f"divide num_heads"
        )
    return num_heads // num_kv_heads


def as_float_array(x, name: str) -> np.ndarray:
    """Return ``x`` as a floating-point array, keeping float32/float64 as they are.

    Integers and lists become float64 (so the lessons' small worked examples just work).
    """
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name} must be numeric, got an array of dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} must be real, got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    return arr


def check_mask(mask, n_q: int, n_k: int, name: str = "mask") -> np.ndarray:
    """Validate a boolean attention mask (True = may attend) against ``(..., n_q, n_k)``."""
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(
            f"{name} must be a boolean array (True = may attend, False = blocked), got dtype "
            f"{mask.dtype}. A 0/1 float mask added to the scores blocks nothing; build it with a "
            f"comparison, for example causal_mask(n) or mask == 1"
        )
    if mask.ndim < 2 or mask.shape[-2] not in (1, n_q) or mask.shape[-1] not in (1, n_k):
        raise ValueError(
            f"{name} has shape {_fmt(mask.shape)}, expected (..., n_q, n_k) = (..., {n_q}, {n_k}): "
            f"one row per query and one column per key"
        )
    return mask
