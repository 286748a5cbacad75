"""Values as plain JSON, in both directions, with no pickle anywhere.

Three things cross a boundary as JSON and use this one encoding:

* the self-check data that ``mha-course release`` writes (public cases, expected outputs);
* the job the grader sends into the sandbox (the program and the cases);
* the report that comes back out of the sandbox: **untrusted**, because student code runs in the
  process that writes it. :func:`decode` therefore validates everything it reads (types, sizes,
  depth, array lengths) and raises :class:`CodecError` instead of trusting the input.

Encoding: ``None``, booleans, integers, floats and strings are themselves; special floats,
tuples, dicts and NumPy arrays are tagged objects. Arrays travel as base64 of their raw bytes in
a small set of dtypes, so ``-inf`` in a mask or ``nan`` in a wrong answer survive exactly.

>>> import numpy as np
>>> x = (np.arange(6.0).reshape(2, 3), 3, "b", float("-inf"))
>>> y = decode(encode(x))
>>> type(y).__name__, y[0].shape, y[1:]
('tuple', (2, 3), (3, 'b', -inf))
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np

__all__ = ["encode", "decode", "dumps", "loads", "CodecError", "Limits"]

# dtype codes that may cross the boundary; anything else is converted or refused.
_DTYPES = {
    "f8": np.float64,
    "f4": np.float32,
    "i8": np.int64,
    "i4": np.int32,
    "b1": np.bool_,
    "c16": np.complex128,
}


class CodecError(ValueError):
    """Input that does not follow the encoding (or breaks a limit)."""


class Limits:
    """Bounds applied while decoding untrusted input."""

    def __init__(self, elements=2_000_000, depth=32, string=10_000, items=100_000):
        self.elements, self.depth, self.string, self.items = elements, depth, string, items


def _dtype_code(arr: np.ndarray) -> str:
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if kind == "b":
        return "b1"
    if kind in "iu":
        return "i4" if kind == "i" and size <= 4 else "i8"
    if kind == "f":
        return "f4" if size == 4 else "f8"
    if kind == "c":
        return "c16"
    raise TypeError(arr.dtype)


def encode(x, budget: list | None = None, depth: int = 0, max_string: int | None = None):
    """Turn ``x`` into JSON-able data. ``budget`` (a one-item list) caps the total number of
    array elements; anything beyond it, too deep, or of an unknown type becomes an
    ``{"__unsupported__": reason}`` marker (never an exception)."""
    if depth > 30:
        return {"__unsupported__": "nested too deeply"}
    t = type(x)
    if x is None or t is bool:
        return x
    if t is int:
        return x if abs(x) < 2**53 else {"__int__": str(x)[:400]}
    if t is float:
        return x if math.isfinite(x) else {"__float__": repr(x)}
    if t is str:
        return x if max_string is None else x[:max_string]
    if t is tuple:
        return {"__tuple__": [encode(v, budget, depth + 1, max_string) for v in x[:10_000]]}
    if t is list:
        return [encode(v, budget, depth + 1, max_string) for v in x[:10_000]]
    if t is dict:
        return {
            "__dict__": [
                [str(k)[:200], encode(v, budget, depth + 1, max_string)]
                for k, v in list(x.items())[:10_000]
            ]
        }
    if isinstance(x, np.generic):
        return encode(x.item(), budget, depth + 1, max_string)
    if isinstance(x, np.ndarray):
        arr = x
    else:
        return {"__unsupported__": type(x).__name__[:80]}
    try:
        code = _dtype_code(arr)
    except TypeError:
        return {"__unsupported__": f"array of dtype {str(arr.dtype)[:40]}"}
    if budget is not None:
        budget[0] -= arr.size
        if budget[0] < 0:
            return {"__unsupported__": "too large"}
    data = np.ascontiguousarray(arr, dtype=np.dtype(_DTYPES[code]).newbyteorder("<"))
    return {
        "__array__": [int(s) for s in arr.shape],
        "dtype": code,
        "b64": base64.b64encode(data.tobytes()).decode("ascii"),
    }


def decode(obj, limits: Limits | None = None, _depth: int = 0, _count: list | None = None):
    """Inverse of :func:`encode`, validating as it goes (raises :class:`CodecError`).

    ``{"__unsupported__": ...}`` markers decode to :class:`Unsupported` objects, which compare
    unequal to everything, so an answer the sandbox could not send simply fails.
    """
    limits = limits or Limits()
    count = _count if _count is not None else [0]
    if _depth > limits.depth:
        raise CodecError("nested too deeply")
    if obj is None or isinstance(obj, (bool, int)):
        return obj
    if isinstance(obj, float):
        return obj
    if isinstance(obj, str):
        if len(obj) > limits.string:
            raise CodecError("string too long")
        return obj
    if isinstance(obj, list):
        if len(obj) > limits.items:
            raise CodecError("list too long")
        return [decode(v, limits, _depth + 1, count) for v in obj]
    if not isinstance(obj, dict) or len(obj) > 3:
        raise CodecError(f"unexpected {type(obj).__name__}")
    if "__tuple__" in obj and len(obj) == 1 and isinstance(obj["__tuple__"], list):
        return tuple(decode(obj["__tuple__"], limits, _depth + 1, count))
    if "__dict__" in obj and len(obj) == 1 and isinstance(obj["__dict__"], list):
        out = {}
        for pair in obj["__dict__"]:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise CodecError("malformed dict")
            out[pair[0]] = decode(pair[1], limits, _depth + 1, count)
        return out
    if "__float__" in obj and len(obj) == 1:
        text = obj["__float__"]
        if text not in ("nan", "inf", "-inf"):
            raise CodecError("malformed float")
        return float(text)
    if "__int__" in obj and len(obj) == 1:
        text = obj["__int__"]
        if not isinstance(text, str) or len(text) > 400 or not text.lstrip("-").isdigit():
            raise CodecError("malformed int")
        return int(text)
    if "__unsupported__" in obj and len(obj) == 1:
        return Unsupported(str(obj["__unsupported__"])[:80])
    if "__array__" in obj and set(obj) == {"__array__", "dtype", "b64"}:
        shape, code, b64 = obj["__array__"], obj["dtype"], obj["b64"]
        if (
            not isinstance(shape, list)
            or len(shape) > 8
            or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s for s in shape)
        ):
            raise CodecError("malformed array shape")
        if code not in _DTYPES or not isinstance(b64, str):
            raise CodecError("malformed array dtype")
        size = 1
        for s in shape:
            size *= s
        count[0] += size
        if size > limits.elements or count[0] > limits.elements:
            raise CodecError("too many array elements")
        dtype = np.dtype(_DTYPES[code]).newbyteorder("<")
        if len(b64) > 4 * (size * dtype.itemsize + 2) // 3 + 4:
            raise CodecError("array data longer than its shape")
        try:
            raw = base64.b64decode(b64.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise CodecError("malformed array data") from None
        if len(raw) != size * dtype.itemsize:
            raise CodecError("array data does not match its shape")
        return np.frombuffer(raw, dtype=dtype).astype(_DTYPES[code]).reshape(shape)
    raise CodecError("unknown tagged object")


class Unsupported:
    """Stands for a value the sandbox could not encode; equal to nothing."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self):
        return f"<{self.what}>"

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__


def dumps(obj) -> str:
    """Strict JSON text (no NaN literals: special floats are already tagged)."""
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


def _no_constants(name):
    raise CodecError(f"{name} is not allowed")


def loads(text: str | bytes):
    """Parse strict JSON; NaN/Infinity literals, deep nesting and bad UTF-8 raise CodecError."""
    try:
        return json.loads(text, parse_constant=_no_constants)
    except CodecError:
        raise
    except (ValueError, RecursionError, UnicodeDecodeError, TypeError) as exc:
        raise CodecError(f"not valid JSON ({type(exc).__name__})") from None
