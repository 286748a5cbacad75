"""The verdict on one answer: the single rule book the self-check and the grader both use.

Neither side runs reference code here. The caller supplies what the answer did on each case
(:class:`~.cases.CaseResult`) and what was expected:

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

import decimal
import hashlib
import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from .cases import NO_OUTPUT
from .compare import _close, difference
from .outcome import base_verdict, not_attempted, unjudged
from .recorded import recorded_verdict

__all__ = [
    "question_meta",
    "function_verdict",
    "value_verdict",
    "value_data",
    "value_hashes",
    "value_hashes_near",
    "value_info",
    "helper_message",
    "answer_type",
    "error_hint",
    "differential",
    "TRAITS",
]


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
        "answer_type": answer_type(q),
        # a constraint the question states on the memory one call may hold (watched during
        # the call: see sandbox.inside.watch.run_cases)
        "limits": (getattr(q, "extra", None) or {}).get("limits"),
        # the names of a tuple result's items (``extra={"outputs": [...]}``), for feedback
        "outputs": list((getattr(q, "extra", None) or {}).get("outputs") or []),
        # a function whose spec gives an output shape returns ONE array: a Python list or
        # tuple of arrays in its place is a form error, unless the question says it allows one
        # (``extra={"list_output": True}``); ``extra={"output_shape": "(h, n, d_head)"}``
        # names the shape in the message
        "list_output": bool((getattr(q, "extra", None) or {}).get("list_output")),
        "output_shape": str((getattr(q, "extra", None) or {}).get("output_shape") or ""),
    }


def answer_type(q) -> str:
    """``"int"`` (only integers) or ``"bool"`` (only booleans) when a bank says so in
    ``extra={"answer_type": ...}``, ``""`` otherwise. Function questions need no flag: the type
    is inferred from the expected output (a boolean array, or an int)."""
    return str((getattr(q, "extra", None) or {}).get("answer_type") or "")


def helper_message(names) -> str:
    """What to say about an answer that calls a forbidden function: the course's own helper,
    or another library's function (named in full, e.g. ``scipy.special.softmax``)."""
    course = [n for n in names if "." not in n]
    other = [n for n in names if "." in n]
    parts = []
    if course:
        listed = ", ".join(f"`{n}`" for n in course)
        parts.append(f"the course's own {listed}")
    if other:
        parts.append(", ".join(f"`{n}`" for n in other))
    return (
        f"your answer calls {' and '.join(parts)}, which does the very thing this question "
        "asks you to write; write it yourself (the lesson shows how), then check again"
    )


# --- type discipline ----------------------------------------------------------------------------

BOOL_MASK_WHY = (
    "A mask must be boolean (True = may attend): build it with comparisons (<, <=, ==) and "
    "&, |, ~, or convert with .astype(bool). A 0/1 integer or float mask is not the same thing: "
    "the course's multi_head_attention rejects it, PyTorch refuses an integer key_padding_mask "
    "and *adds* a float mask to the scores instead of blocking keys (the output then silently "
    "changes), and ~ on integers gives -1 and -2, not False and True."
)
INT_COUNT_WHY = (
    "A count is a whole number, so return an int. In Python 3, / always gives a float, even "
    "when it divides evenly (768 / 12 is 64.0): use // for sizes such as d_head = d_model // h, "
    "or int(...) at the end."
)


def _type_problem(want, got, answer_type: str = "", public: bool = True) -> str | None:
    """Why ``got`` has the wrong *type* for ``want`` (``None`` when the type is fine).

    A boolean array is answered only by a boolean array; an integer (a count) only by an
    integer, never a float or a bool. Without ``public`` (a hidden case) the answer's value is
    not shown."""
    if answer_type == "bool" or (isinstance(want, np.ndarray) and want.dtype.kind == "b"):
        if isinstance(got, np.ndarray) and got.dtype.kind != "b":
            return f"your mask has dtype {got.dtype}, not bool. {BOOL_MASK_WHY}"
        if isinstance(got, (list, tuple)):
            return (
                f"your mask is a Python {type(got).__name__}, not a boolean array. {BOOL_MASK_WHY}"
            )
        return None
    if answer_type == "int" or (
        isinstance(want, (int, np.integer)) and not isinstance(want, (bool, np.bool_))
    ):
        if isinstance(got, (bool, np.bool_)):
            return f"your answer is {got}, a truth value, not a count."
        if isinstance(got, (int, np.integer)):
            return None
        if isinstance(got, (float, np.floating)):
            shown = f" {float(got)!r}" if public else ""
            return (
                f"your answer is the float{shown}, not an int: write a count as a whole number. "
                f"{INT_COUNT_WHY}"
            )
        if isinstance(got, np.ndarray) and got.ndim == 0 and got.dtype.kind in "iu":
            return None
        if isinstance(got, np.ndarray) and got.ndim == 0:
            return f"your answer is a 0-d array of dtype {got.dtype}, not an int. {INT_COUNT_WHY}"
        if isinstance(got, (list, tuple)) and any(isinstance(v, (float, np.floating)) for v in got):
            return (
                "your answer holds floats, not whole numbers (ints): write each size as a whole "
                f"number. {INT_COUNT_WHY}"
            )
    return None


def _form_problem(want, got, meta: dict, public: bool = True, path: str = "") -> str | None:
    """Why a function's result has the wrong *form*: a Python list or tuple where the spec asks
    for one array (``None`` when the form is fine, or when the question allows a list). Tuple
    results are looked at item by item."""
    if meta.get("list_output"):
        return None
    if isinstance(want, tuple) and isinstance(got, (tuple, list)) and len(got) == len(want):
        names = list(meta.get("outputs") or [])
        for j, (w, g) in enumerate(zip(want, got)):
            item = names[j] if j < len(names) else f"item {j}"
            problem = _form_problem(w, g, meta | {"output_shape": ""}, public, f"{item} of ")
            if problem:
                return problem
        return None
    if not (isinstance(want, np.ndarray) and want.ndim >= 1 and isinstance(got, (list, tuple))):
        return None
    shape, here = meta.get("output_shape") or "", str(tuple(int(s) for s in want.shape))
    if public:
        shape = f"{shape}, here {here}" if shape else here
    asked = f"one array of shape {shape}" if shape else "one array"
    return (
        f"{path}your result is a Python {type(got).__name__} of {len(got)} items, not an "
        f"array: the question asks for {asked}. Return one array, e.g. with np.stack(pieces) "
        "(which puts the pieces along a new first axis) or np.array(...)."
    )


# --- errors: where, and what a known one means -----------------------------------------------

# (text the exception's type and message contain, hint). The first that matches gives the hint.
KNOWN_ERRORS = (
    (
        ("arraytoolarge", "held an array of shape"),  # seen: one array of n_q x n_k entries
        "The question forbids building the whole n_q x n_k score matrix, and your function "
        "held it (the array named above) during the call. Compute the scores of one block of "
        "keys at a time, q @ k[start:stop].T, fold them into the running m, ell and acc with "
        "the online update, and let each block's scores go before the next.",
        "full score matrix",
    ),
    (
        ("arraytoolarge",),  # only the memory held is known, not which arrays held it
        "The question forbids building the whole n_q x n_k score matrix, and your function "
        "held as much memory at once during the call (at least half of that matrix, in one "
        "or several arrays). Compute the scores of one block of keys at a time, "
        "q @ k[start:stop].T, fold them into the running m, ell and acc with the online "
        "update, let each block's scores go before the next, and keep no more copies of the "
        "inputs than one each.",
        None,
    ),
    (
        ("nokeyblocks",),
        "The question asks for the scores over blocks of block_size keys, and your function "
        "held a row of scores (or weights) over all the keys at once: taking one query at a "
        "time over every key still computes, per query, the whole row the tiling avoids. Loop "
        "over the keys, for start in range(0, n_k, block_size), score q (all queries, or a "
        "block of them) against k[start:start + block_size] only, and fold each block into "
        "the running m, ell and acc with your online_update.",
        "no key blocks",
    ),
    (
        ("truth value of an array", "ambiguous"),
        "`if mask:` (or `mask and ...`, `mask or ...`) asks NumPy for one True/False for a "
        "whole array, which it refuses. To test whether a mask was given, write "
        "`if mask is not None:`; to combine masks elementwise, use & and |.",
        "if mask",  # named only when the line that raised tests a mask (see error_cause)
    ),
    (
        ("float", "cannot be interpreted as an integer"),
        "A size is a float: d_model / num_heads gives a float in Python 3 even when it divides "
        "evenly (8 / 2 is 4.0), and reshape, range and np.zeros refuse floats. Use // : "
        "d_head = d_model // num_heads.",
        "float size",
    ),
    (
        ("cannot be interpreted as an integer",),
        "A value used as a size or a count (in range, reshape, np.zeros, ...) is not an "
        "integer: the message names its type. Print it just before that line; sizes come "
        "from .shape and whole-number arithmetic (//).",
        None,
    ),
    (
        ("indices must be integers", "not float"),
        "An index is a float: d_model / num_heads gives a float even when it divides "
        "evenly. Use // (d_head = d_model // num_heads) for sizes and positions.",
        "float index",
    ),
    (
        ("list indices must be integers", "not tuple"),
        "A Python list was indexed like an array, x[i, j]: a list takes one index at a time. "
        "Convert it first with np.asarray(...); where the question allows a list as input, an "
        "argument may be one.",
        "list, not an array",
    ),
    (
        ("indices must be integers",),
        "An index or slice bound is not an integer (the message names what it got): print it "
        "just before that line. A size computed with / is a float even when it divides evenly "
        "(use //).",
        None,
    ),
    (
        ("only integers, slices",),
        "An index is not an integer, a slice or a boolean/integer array (for example a float, "
        "as d_model / num_heads gives even when it divides evenly): print it just before that "
        "line; use // for sizes and positions.",
        None,
    ),
    (
        ("cannot reshape array of size",),
        "A reshape asks for a shape whose sizes do not multiply to the array's size. Print the "
        "shape you reshape and the shape you ask for; take the sizes from this input "
        "(n, d_model = x.shape; d_head = d_model // num_heads).",
        None,
    ),
    (
        ("array split does not result in an equal division",),
        "np.split(x, k, axis) needs that axis's length to be a multiple of k. Check which axis "
        "you split (without axis=, np.split cuts axis 0, the tokens; heads split the features, "
        "axis=-1) and into how many pieces.",
        None,
    ),
    (
        ("matmul", "mismatch in its core dimension"),
        "A matrix product's inner sizes do not match: (a x b) @ (b x c) needs the same b on "
        "both sides. Print the shapes of both operands just before that line and compare them "
        "with the shapes the question gives.",
        None,
    ),
    (
        ("shapes", "not aligned"),
        "A matrix product's inner sizes do not match: (a x b) @ (b x c) needs the same b on "
        "both sides. Print the shapes of both operands just before that line.",
        None,
    ),
    (
        ("too many indices",),
        "You indexed more axes than the array has. Print the array's shape just before that "
        "line: it has fewer axes than your code expects.",
        None,
    ),
    (
        ("tuple index out of range",),
        "You asked for an axis the array does not have (x.shape[i] with i too large). Print "
        "the shape just before that line.",
        None,
    ),
    (
        ("is not defined",),
        "Your function uses a name that is defined nowhere it can see: a variable from "
        "another cell (or the lesson) that this notebook did not define, or a typo. Compute "
        "it inside the function from the arguments.",
        "undefined name",
    ),
    (
        ("missing 1 required positional argument",),
        "The check calls your function without one of its arguments (an optional one, such as "
        "mask): give that parameter its default in the def line, for example `mask=None`.",
        "missing default",
    ),
    (
        ("cannot cast array data from dtype('float64') to dtype('int64')",),
        "A count is a float: num_heads / num_kv_heads gives a float even when it divides "
        "evenly, and np.repeat and np.tile need whole numbers. Use //.",
        "float count",
    ),
    (
        ("is out of bounds for axis",),
        "An index runs past the end of an axis. Print the shape of the array you index and the "
        "largest index you use on that line, for the case named above: take every size from "
        "this input (for example n = weights.shape[-1]), never from the lesson's example.",
        None,
    ),
    (
        ("nonetype",),  # before "has no attribute 'shape'": None is no list or number
        "A value on that line is None, not an array: a function of yours that ends without "
        "`return` (or returns what an in-place method such as .sort() gives) hands back None. "
        "Print it just before that line and follow it back to where it was made.",
        None,
    ),
    (
        ("'list' object has no attribute",),
        "A value on that line is a Python list, not a NumPy array: a list has no array methods "
        "such as .shape, .T, .transpose or .reshape. Convert it first with np.asarray(...) (or "
        "np.stack for a list of arrays); where the question allows a list as input, an "
        "argument may be one.",
        "list, not an array",
    ),
    (
        ("has no attribute 'shape'",),
        "A value on that line has no .shape: it is not a NumPy array (a list, a tuple or a "
        "number). Convert it first with np.asarray(...).",
        "not an array",
    ),
    (
        ("boolean index did not match",),
        "A boolean mask was used to index an array of another shape (the sizes in the message "
        "differ on one axis). A mask and the scores are both (n_q, n_k): rows are queries, "
        "columns are keys. Print both shapes: if the mask's is the scores' reversed, it is "
        "transposed.",
        None,
    ),
    (
        ("zero-size array to reduction operation",),
        "A reduction (max, sum, ...) got an empty array: some slice or block had no entries. "
        "Print the sizes of the pieces you cut; blocks must be slices of block_size keys each, "
        "k[start:start + block_size] for start in range(0, n_k, block_size), the last one "
        "shorter, never empty.",
        None,
    ),
    (
        ("division by zero",),
        "Something divides by zero: print the sizes and counts you divide by on that line, "
        "for the case named above.",
        None,
    ),
)

_SHAPES = re.compile(r"\(([\d, ]+)\)")


def error_hint(kind: str, text: str, public: bool = True) -> str:
    """The targeted hint for a known kind of error (``""`` when none fits). Without ``public``
    (a hidden case) no size from the message is repeated."""
    low = f"{kind}: {text}".lower()
    if "could not be broadcast" in low:
        shapes = [tuple(int(v) for v in m.split(",") if v.strip()) for m in _SHAPES.findall(text)]
        shapes = [s for s in shapes if len(s) >= 2]
        for a in shapes:
            for b in shapes:
                if a != b and a[-2:] == b[-2:][::-1]:
                    shapes = (
                        f": one is ({', '.join(map(str, a))}) and the other "
                        f"({', '.join(map(str, b))})"
                        if public
                        else ""
                    )
                    return (
                        f"Two arrays do not line up{shapes}, the same sizes with the last two "
                        "axes swapped: one of them has its axes the other way round (transposed "
                        "once too often or too few times, or built as (n_k, n_q)). A "
                        "mask and the scores are both (n_q, n_k): rows are queries, columns "
                        "are keys."
                    )
        return (
            "Two arrays' shapes do not line up for an elementwise operation (broadcasting "
            "matches axes from the right, each pair equal or 1). Print both shapes just before "
            "that line."
        )
    for needles, hint, _ in KNOWN_ERRORS:
        if all(n in low for n in needles):
            return hint
    return ""


# a line that asks for one truth value of a mask: `if mask:`, `mask and ...`, `not mask`
_MASK_TRUTH = re.compile(
    r"(\bif\s+(not\s+)?\(?\s*\w*mask\w*\s*\)?\s*(:|and\b|or\b))"
    r"|(\w*mask\w*\s+(and|or)\b)|(\b(and|or|not)\s+\(?\w*mask\w*\b(?!\s*(is|==|!=|\.|\[)))"
)


def error_cause(kind: str, text: str, code: str | None = None) -> str | None:
    """The cause :func:`error_hint`'s hint names for this error, or ``None`` when the hint only
    says where to look (the error alone does not tell the cause). A cause is named only when
    the error's message (and, for ``if mask``, the line that raised, ``code``) proves it:
    "the truth value of an array is ambiguous" also comes from ``max(a, b)``, ``if x > 0:`` or
    ``a and b`` on arrays that are not masks; swapped shapes in a broadcast also come from a
    reshape or a mask built the other way round, not only a transpose."""
    low = f"{kind}: {text}".lower()
    if "could not be broadcast" in low:
        return None  # the shapes say the axes are swapped, not why
    for needles, _, cause in KNOWN_ERRORS:
        if all(n in low for n in needles):
            if cause == "if mask" and not (code and _MASK_TRUTH.search(code)):
                return None
            return cause
    return None


def _error_and_recipe(kind: str, text: str, public: bool, recipe: str) -> str:
    """The hint for a raise: a known error's own hint; when that hint only says where to look
    (it names no cause), the question's recipe after it."""
    hint = error_hint(kind, text, public)
    if not hint:
        return recipe
    if error_cause(kind, text) is None and recipe:
        return f"{hint} The recipe: {recipe}"
    return hint


def _location_text(where) -> str:
    if not isinstance(where, dict) or not where.get("function"):
        return ""
    text = f"in your function `{where['function']}`"
    if where.get("caller"):
        text += f" (called from `{where['caller']}`)"
    if where.get("line"):
        text += f", line {where['line']}"
    if where.get("code"):
        text += f": {where['code']}"
    return text


# --- differential diagnosis: which property of the cases breaks the answer --------------------

# name -> (the cases without it, the cases with it, where to look). The banks tag each case with
# the names of the properties it has; the wording here is the grader's, free of any numbers.
TRAITS = {
    "several heads": (
        "with one head",
        "with several heads",
        "look at how the heads are split, scaled and combined; with one head none of that matters",
    ),
    "mask": (
        "without a mask",
        "with a mask",
        "look at how the mask is applied: it is boolean (True = may attend) and chooses, "
        "np.where(mask, scores, -inf): -inf where it is False, before the softmax. Used as "
        "numbers (added to the scores, or multiplied with them) it blocks nothing, and with "
        "the opposite polarity (True = blocked) it blocks the wrong keys",
    ),
    "rectangular": (
        "when there are as many keys as queries",
        "when the numbers of queries and keys differ",
        "rows are queries and columns are keys: check which axis you index, reduce or transpose",
    ),
    "batch": (
        "for a single sequence",
        "with several sequences in the batch",
        "each sequence must be handled on its own, and no token may attend to the tokens of "
        "other sequences: keep the batch axis in front",
    ),
    "n != d_k": (
        "when the number of tokens equals the width d_k",
        "when the number of tokens differs from the width d_k",
        "somewhere you use the number of tokens (shape[0]) where the width (shape[-1]) belongs, "
        "or the other way round",
    ),
    "d_k != d_v": (
        "when keys and values have the same width",
        "when values are wider or narrower than keys",
        "the scale uses the width of the queries and keys, d_k, not the values' d_v",
    ),
    "shared kv": (
        "when every query head has its own key/value head",
        "when key/value heads are shared by several query heads",
        "look at which key/value head each query head reads: head i reads KV head "
        "i // (num_heads // num_kv_heads)",
    ),
    "bias": (
        "without biases",
        "with biases",
        "look at how you count the bias vectors: one per output feature of each projection",
    ),
    "not one byte": (
        "with 1 byte per number",
        "with more than 1 byte per number",
        "look at how you use bytes_per_element",
    ),
    "partial block": (
        "when the number of keys is a multiple of block_size",
        "when the last block of keys is shorter than block_size",
        "look at the last, shorter block of keys: loop over range(0, n_k, block_size) and "
        "slice up to min(start + block_size, n_k)",
    ),
    "h does not divide d_model": (
        "when the number of heads divides d_model",
        "when it does not (d_model // num_heads * num_heads < d_model)",
        "then h * d_head is less than d_model: size every matrix from h * d_head (W_Q is "
        "(d_model, h * d_head), W_O is (h * d_head, d_model)), not from d_model alone",
    ),
    "d_model / h rounds up": (
        "when d_model / num_heads is whole or its fraction is below 1/2",
        "when its fraction is 1/2 or more (where rounding to the nearest whole number would "
        "round it up)",
        "d_head = d_model // num_heads rounds DOWN: use // (or int(d_model / num_heads)), not "
        "round() or math.ceil, so h * d_head is at most d_model",
    ),
    "several blocks": (
        "when all keys fit in one block",
        "with several blocks of keys",
        "the arithmetic of one block is right; look at how the keys are cut into blocks: every "
        "key must be in exactly one block, none skipped and none in two (blocks that stop one "
        "key short or overlap by one break this), the last, shorter block included: loop over "
        "range(0, n_k, block_size) and take k[start:start + block_size]",
    ),
    "causal part": (
        "when the mask only blocks padding keys",
        "when it also hides real keys from some queries (a causal part)",
        "a key is padding only when NO query may attend to it; a causal mask hides later keys "
        "from early queries, but those keys are real. Look down each whole column (any over "
        "the query axis, -2), not along one row or the diagonal",
    ),
    "not two heads": (
        "with 2 heads",
        "with another number of heads",
        "take the number of heads from the input (len(head_outputs), x.shape[0] or "
        "num_heads), never a fixed 2: nothing may be hard-coded to the example's two heads",
    ),
    "list input": (
        "when the heads come as one array",
        "when the heads come as a Python list of arrays",
        "the question allows both: turn the input into one array first (np.asarray or "
        "np.stack), or use only what works on both (np.concatenate)",
    ),
    "scores in the hundreds": (
        "when the scores are small",
        "when the scores are in the hundreds (above about 709, where np.exp overflows float64)",
        "np.exp of a raw score that large is inf, and inf / inf is nan: exponentiate only "
        "differences from the running maximum, exp(scores - m_new[:, None]) and exp(m - m_new), "
        "which are never above 1",
    ),
    "padding": (
        "when no sequence is padded",
        "when some sequences are padded",
        "look at how the padding keys are blocked",
    ),
}


# Properties of the *rows* of a case (a bank tags them as "rows:<name>:<0/1 per row>" among the
# case's traits): the verdict says when an answer is wrong exactly in the rows that have one.
ROW_TRAITS = {
    "the maximum rose": (
        "in those rows the block's maximum is above the running one, so the old sums ell and "
        "acc were taken against a maximum that is no longer the running one: rescale both, "
        "exactly once, by exp(m - m_new) (with the old m minus the new m_new, which is at most "
        "1), before adding the block's terms; in the other rows that factor is 1"
    ),
    "a masked key": (
        "those rows hold a masked key, whose score is -inf: exp(-inf - m_new) is 0, so it adds "
        "nothing to ell or acc. Keep -inf as it is (replacing it by 0 gives exp(0 - m_new), "
        "not 0)"
    ),
    "the first block": (
        "those rows start from the empty state, m = -inf and ell = acc = 0: exp(m - m_new) "
        "is then 0, so m_new is the block's maximum and the sums are the block's own"
    ),
    # derived by _row_flags from the two above: neither the maximum rose nor the state is empty
    "the block's maximum is below the running one": (
        "in those rows the running maximum m stays the maximum, so m_new = max(m, the block's "
        "row maximum) is m itself and the rescale factor exp(m - m_new) is exactly 1; only the "
        "block's terms exp(scores - m_new) are added to ell and acc"
    ),
}


def _row_flags(traits_i) -> dict:
    out = {}
    for t in traits_i or ():
        if isinstance(t, str) and t.startswith("rows:"):
            _, name, bits = t.split(":", 2)
            out[name] = [b == "1" for b in bits]
    rose, first = out.get("the maximum rose"), out.get("the first block")
    if rose is not None and first is not None and len(rose) == len(first):
        out["the block's maximum is below the running one"] = [
            not (r or f) for r, f in zip(rose, first)
        ]
    return out


def _rows_differing(want, got, rtol, atol):
    """Per row (axis 0 of every item of a tuple), whether the answer differs; ``None`` when the
    answer has another structure."""
    items_w = want if isinstance(want, tuple) else (want,)
    items_g = got if isinstance(got, (tuple, list)) else (got,)
    if len(items_w) != len(items_g):
        return None
    rows = None
    for w, g in zip(items_w, items_g):
        try:
            w, g = np.asarray(w, dtype=float), np.asarray(g, dtype=float)
        except (TypeError, ValueError):
            return None
        if w.ndim == 0 or w.shape != g.shape:
            return None
        same = np.isclose(g, w, rtol=rtol, atol=atol) | (np.isinf(w) & (g == w))
        bad = ~same.reshape(len(w), -1).all(axis=1)
        if rows is not None and len(rows) != len(bad):
            return None
        rows = bad if rows is None else rows | bad
    return rows


def row_diagnosis(traits: list, results: list, expected: list, rtol: float, atol: float) -> str:
    """The row property that separates the rows an answer gets wrong from those it gets right,
    over every case it returned a value on (``""`` when none does)."""
    if not traits:
        return ""
    for name, advice in ROW_TRAITS.items():
        seen_wrong, ok = False, True
        for i, want in enumerate(expected):
            if i >= len(results) or i >= len(traits):
                break
            res = results[i]
            if res is None or res.raised:
                break
            flags = _row_flags(traits[i]).get(name)
            rows = _rows_differing(want, res.value, rtol, atol)
            if flags is None or rows is None or len(flags) != len(rows):
                ok = False
                break
            if [bool(r) for r in rows] != flags:
                ok = False
                break
            seen_wrong = seen_wrong or bool(np.any(rows))
        if ok and seen_wrong:
            return f"wrong exactly in the rows where {name}, right in every other row: {advice}."
    return ""


# Additive terms of a count (a bank tags each case with "term:<name>:<value>"): when an answer
# is off by the same whole multiple of one term on every case, the verdict says which term.
TERMS = {
    "projection": (
        "one projection's 2 n d_model^2 FLOPs",
        "count the four projections, Q, K, V and W_O, each a (n, d_model) @ (d_model, d_model) "
        "product of 2 n d_model^2 FLOPs",
    ),
    "attention product": (
        "one attention product's 2 n^2 d_model FLOPs (summed over the heads)",
        "count the two products of every head, the scores Q K^T and the weighted sum A V, each "
        "2 n^2 d_head per head, so 2 n^2 d_model over the h heads",
    ),
    "softmax-size": (
        "a multiple of h n^2, the number of attention weights",
        "the question counts the matrix products only: the softmax, the scaling and the mask "
        "(a few operations per attention weight, h n^2 weights) are left out",
    ),
    "weight matrix": (
        "one weight matrix of d_model x (h * d_head) entries",
        "count the four matrices, W_Q, W_K, W_V (d_model, h*d_head) and W_O (h*d_head, d_model)",
    ),
    "projection bias": (
        "one bias vector of h * d_head entries",
        "with bias, Q, K and V each have h*d_head biases and W_O has d_model",
    ),
    "output bias": (
        "the output projection's d_model biases",
        "with bias, W_O has one bias per output feature, d_model of them",
    ),
}


def _terms_of(traits_i) -> dict:
    out = {}
    for t in traits_i or ():
        if isinstance(t, str) and t.startswith("term:"):
            _, name, value = t.split(":", 2)
            out[name] = int(value)
    return out


def _as_count(x):
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)) and float(x).is_integer() and abs(x) < 2**63:
        return int(x)
    return None


# How many interchangeable items of the same size a term stands for (the four projections, the
# scores and the weighted sum, ...): an answer short or over by exactly one such item matches as
# many different slips, so no single cause may be named for it.
TERM_ITEMS = {
    "projection": 4,
    "attention product": 2,
    "weight matrix": 4,
    "projection bias": 3,
}


AMBIGUOUS_COUNT = (
    "More than one slip gives exactly this count (any one of several terms of the same size "
    "left out, or counted twice), so the check cannot tell which one you made: "
)
AMBIGUOUS_SAME = (
    "More than one slip gives exactly these results, so the check cannot tell which one you "
    "made: compare each step of your function with the question."
)


def term_off_by(traits: list, results: list, expected: list):
    """``(term name, k)`` when the answer is off by the same whole multiple ``k`` of one term
    on every case (``None`` otherwise)."""
    pairs = _count_pairs(results, expected)
    found = _term_multiples(traits, pairs) if pairs else []
    return found[0] if found else None


def _count_pairs(results: list, expected: list) -> list | None:
    """``(case, right count, answer's count)`` for the cases up to the first that raised, or
    ``None`` when a value is not a count, fewer than two cases ran, or every count is right."""
    pairs = []
    for i, want in enumerate(expected):
        if i >= len(results) or results[i] is None or results[i].raised:
            break
        w, g = _as_count(want), _as_count(results[i].value)
        if w is None or g is None:
            return None
        pairs.append((i, w, g))
    if len(pairs) < 2 or all(w == g for _, w, g in pairs):
        return None
    return pairs


def _term_multiples(traits: list, pairs: list) -> list:
    """Every ``(term name, k)``, in TERMS' order, such that each case's count is off by the same
    whole multiple ``k != 0`` of that term."""
    found = []
    for name in TERMS:
        ks = set()
        for i, w, g in pairs:
            t = _terms_of(traits[i] if i < len(traits) else ()).get(name)
            if not t or (g - w) % t:
                ks = None
                break
            ks.add((g - w) // t)
        if ks and len(ks) == 1 and 0 not in ks:
            found.append((name, ks.pop()))
    return found


def same_rows_note(meta: dict, results: list, expected: list, n_public: int) -> str:
    """On the first public case an answer gets wrong: an output (an item of a tuple result, by
    the name the question gives it) that has the same value in every row where the right one
    differs from row to row (one maximum or sum for all queries, say). ``""`` otherwise."""
    rtol, atol = meta["rtol"], meta["atol"]
    for i, want in enumerate(expected[:n_public]):
        if i >= len(results) or results[i] is None or results[i].raised:
            return ""
        got = results[i].value
        wants = want if isinstance(want, tuple) else (want,)
        gots = got if isinstance(got, (tuple, list)) else (got,)
        if len(wants) != len(gots):
            return ""
        names = list(meta.get("outputs") or [])
        names += [f"result[{j}]" for j in range(len(names), len(wants))]
        if not isinstance(want, tuple):
            names = ["your result"]
        wrong_here = False
        for j, (w, g) in enumerate(zip(wants, gots)):
            try:
                w, g = np.asarray(w, dtype=float), np.asarray(g, dtype=float)
            except (TypeError, ValueError):
                return ""
            if w.shape != g.shape or w.ndim == 0 or len(w) < 2 or _close(g, w, rtol, atol):
                continue
            wrong_here = True
            if not (np.all(np.isfinite(g)) and np.all(np.isfinite(w))):
                continue
            g_same = np.allclose(g, g[:1], rtol=rtol, atol=atol)
            w_same = np.allclose(w, w[:1], rtol=rtol, atol=atol)
            if g_same and not w_same:
                return (
                    f"in case {i + 1}, {names[j]} has the same value in every row, where the "
                    "right one differs from row to row: each row (each query) has its own"
                )
        if wrong_here:
            return ""
    return ""


def _blocks_of(x, k: int) -> list:
    return [x[b * x.shape[1] : (b + 1) * x.shape[1]] for b in range(k)]


def block_note(results: list, expected: list, n_public: int, rtol: float, atol: float) -> str:
    """For a result made of square blocks stacked on top of each other ((k d, d), k = 2..4,
    such as Q, K and V's weights in one matrix), on the first public case it gets wrong: which
    blocks are right, which are the transpose of the right one, which hold another block's
    content; or that every row is a right row in another order. ``""`` when none of that holds.
    Statements of what the answer is, so they never name a cause."""
    for i, want in enumerate(expected[:n_public]):
        if i >= len(results) or results[i] is None or results[i].raised:
            return ""
        w = want if isinstance(want, np.ndarray) else None
        try:
            g = np.asarray(results[i].value, dtype=float)
        except (TypeError, ValueError):
            return ""
        if w is None or w.ndim != 2 or g.shape != w.shape or _close(g, w, rtol, atol):
            continue
        rows, d = w.shape
        if d < 2 or rows % d or not 2 <= rows // d <= 4:
            return ""
        k = rows // d
        wb, gb = _blocks_of(w, k), _blocks_of(g, k)
        said = []
        for b in range(k):
            span = f"block {b} (rows {b * d}-{(b + 1) * d - 1})"
            if _close(gb[b], wb[b], rtol, atol):
                said.append(f"{span} is right")
            elif _close(gb[b].T, wb[b], rtol, atol):
                said.append(f"{span} is the transpose of the right block")
            else:
                other = [c for c in range(k) if c != b and _close(gb[b], wb[c], rtol, atol)]
                if other:
                    said.append(
                        f"{span} holds what block {other[0]} should hold (check which matrix "
                        "goes in which block, in the order the question gives)"
                    )
                else:
                    said.append(f"{span} is wrong")
        if all(x.endswith("is wrong") for x in said):
            mine = {tuple(np.round(r, 9)) for r in g}
            theirs = {tuple(np.round(r, 9)) for r in w}
            if mine == theirs and len(theirs) == rows:
                return (
                    f"in case {i + 1}, every row of your result is a right row, in another order "
                    "(rows interleaved, or blocks stacked in another order)."
                )
            return ""
        return f"in case {i + 1}, your result is {k} blocks of {d} rows: " + "; ".join(said) + "."
    return ""


def term_diagnosis_where(traits: list, results: list, expected: list) -> str:
    """:func:`term_diagnosis` on the cases without one property of :data:`TRAITS` (h not
    dividing d_model, ...) when it holds there and not on every case: "on every case when the
    number of heads divides d_model, your count is off by exactly one projection's ...". True
    of the answer whatever the cause (``""`` when no such subset has a term)."""
    if term_diagnosis(traits, results, expected):
        return ""
    n = min(len(traits or ()), len(results), len(expected))
    for name, (without, _with, _advice) in TRAITS.items():
        keep = [i for i in range(n) if name not in (traits[i] or ())]
        if len(keep) < 2 or len(keep) == n:
            continue
        if any(results[i] is None or results[i].raised for i in keep):
            continue
        sub = term_diagnosis(
            [traits[i] for i in keep], [results[i] for i in keep], [expected[i] for i in keep]
        )
        if sub and sub.startswith("on every case your count"):
            return sub.replace(
                "on every case your count", f"on every case {without}, your count", 1
            )
    return ""


def term_diagnosis(traits: list, results: list, expected: list) -> str:
    """For a count: the term the answer is off by, the same whole multiple on every case, or the
    same ratio to the right count on every case (``""`` when neither holds)."""
    pairs = _count_pairs(results, expected)
    if not pairs:
        return ""
    for name, k in _term_multiples(traits, pairs):
        if abs(k) <= 6:
            what, advice = TERMS[name]
            more = "too many" if k > 0 else "missing"
            times = f"{abs(k)} x " if abs(k) != 1 else ""
            return f"on every case your count is off by exactly {times}{what} ({more}): {advice}"
    ratios = {g / w for _, w, g in pairs if w}
    if len(ratios) == 1 and len(pairs) == sum(1 for _, w, _ in pairs if w):
        r = ratios.pop()
        if r not in (0.0, 1.0) and (r.is_integer() or (1 / r).is_integer()):
            factor = f"{int(r)} times" if r.is_integer() else f"1/{int(1 / r)} of"
            return (
                f"on every case your count is exactly {factor} the right one: a factor is "
                "wrong (a count of things counted once too often, or one left out); check each "
                "factor of your product against the question"
            )
    return ""


def differential(traits: list, passed: list) -> str:
    """The property that separates the cases an answer gets right from those it gets wrong
    (``""`` when none does, or when every case fails)."""
    if not traits or all(passed) or not any(passed):
        return ""
    n = min(len(traits), len(passed))
    for name, (without, with_, advice) in TRAITS.items():
        has = [name in (traits[i] or ()) for i in range(n)]
        if all(has[i] != passed[i] for i in range(n)):
            return f"right {without}, wrong {with_}: {advice}."
        if all(has[i] == passed[i] for i in range(n)):
            return f"right {with_}, wrong {without}: {advice}."
    # Weaker, still true: every case without the property is right, and every wrong case has
    # it (a few cases with it may come out right by chance, e.g. where one key dominates).
    # When several properties qualify, the one most of whose cases are wrong is said: the
    # narrower property (d_model / h rounding up, say, inside h not dividing d_model).
    best, best_share = "", 0.0
    for name, (without, with_, advice) in TRAITS.items():
        has = [name in (traits[i] or ()) for i in range(n)]
        wrong_with = sum(1 for i in range(n) if has[i] and not passed[i])
        if (
            any(not h for h in has)
            and all(passed[i] for i in range(n) if not has[i])
            and wrong_with > 0
            and 2 * wrong_with >= sum(has)
            and wrong_with / sum(has) > best_share
        ):
            best = f"right in every case {without}, wrong {with_}: {advice}."
            best_share = wrong_with / sum(has)
    return best


def _matches_mistake(j, results, mistakes, n_cases, rtol, atol) -> bool:
    """True when the answer did what mistake ``j`` does on every case it was run on: the same
    output, or a raise where the mistake raises too."""
    seen = 0
    for c in range(min(n_cases, len(results))):
        res = results[c]
        if res is None or c >= len(mistakes) or j >= len(mistakes[c]):
            return False
        out = mistakes[c][j]
        if res.raised:
            return out is NO_OUTPUT and seen > 0
        if out is NO_OUTPUT or difference(out, res.value, rtol, atol, equal_nan=True) is not None:
            return False
        seen += 1
    return seen > 0


def function_verdict(
    meta: dict,
    results: list,
    expected: list,
    mistakes: list,
    n_public: int,
    helpers: list = (),
    traits: list | None = None,
) -> dict:
    """Judge a function answer.

    ``results[i]`` is what the answer did on case ``i`` (it may stop early after a raise);
    ``expected[i]`` the right output; ``mistakes[i][j]`` what mistake ``j`` returns on case ``i``
    (or :data:`NO_OUTPUT`); ``traits[i]`` the names of the properties case ``i`` has (see
    :data:`TRAITS`). Cases ``0 .. n_public - 1`` are public: messages about them may show
    numbers and the learner's code; later ones are the grader's hidden cases, described without
    any.

    The answer fails at its first wrong case, but the diagnosis looks at all of them: a
    listed mistake's hint is given only when the answer returns what that mistake returns on
    *every* case (so an unlisted slip that happens to agree with one mistake on one case is not
    named as that mistake); otherwise, when one property separates the cases it gets right
    from those it gets wrong, the verdict says which.
    """
    try:  # a learner's odd result (complex, NaN) must not make the diagnoses print warnings
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return _function_verdict(meta, results, expected, mistakes, n_public, helpers, traits)
    except Exception as exc:  # noqa: BLE001  (the rules answer, whatever a result holds)
        return unjudged(meta, exc)


def _function_verdict(
    meta: dict,
    results: list,
    expected: list,
    mistakes: list,
    n_public: int,
    helpers: list = (),
    traits: list | None = None,
) -> dict:
    """:func:`function_verdict` without its guard."""
    if helpers:
        r = base_verdict(meta)
        r.update(message=helper_message(helpers), hint="", cause="forbidden helper")
        r["helpers"] = list(helpers)
        return r
    scan = _scan_cases(meta, results, expected, n_public)
    if scan.stop is not None:
        i = scan.stop.get("case")
        if (  # right on every case before the one that raised: which property is new there?
            scan.stop["status"] == "error"
            and i is not None
            and traits
            and scan.passed
            and all(scan.passed)
            and len(scan.passed) == i
        ):
            diagnosis = differential(list(traits[: i + 1]), scan.passed + [False])
            if diagnosis:
                scan.stop["diagnosis"] = diagnosis
                scan.stop["hint"] = diagnosis[0].upper() + diagnosis[1:] + " " + scan.stop["hint"]
        return scan.stop
    if scan.first is None and scan.type_note is None:
        return base_verdict(meta) | {"status": "passed", "points": float(meta["points"])}
    if scan.first is None:  # right values, wrong type
        i, problem = scan.type_note
        public = i < n_public
        r = base_verdict(meta)
        r.update(
            case=i,
            public=public,
            hint="",
            message=f"{_case_name(i, public)}: {problem}",
            cause="type",
        )
        return r
    try:
        return _wrong_values(meta, scan, results, expected, mistakes, n_public, traits)
    except Exception:  # noqa: BLE001  (a diagnosis must never crash the check: say what fails)
        return _plain_wrong_values(meta, scan, results, expected, n_public)


def _plain_wrong_values(meta, scan: "_Scan", results, expected, n_public) -> dict:
    """The verdict on wrong values with no diagnosis at all: the first wrong case and the
    question's own hint. Used when an answer's result has a structure the diagnoses cannot take
    apart (ragged tuples, nested objects), so the check still answers instead of raising."""
    i, diff = scan.first
    public = i < n_public
    r = base_verdict(meta)
    r.update(
        case=i,
        public=public,
        hint=meta["hint"],
        message=f"{_case_name(i, public)}: {diff if public else diff.generic}",
    )
    r["mistake"] = None
    r["diagnosis"] = ""
    if public:
        r.update(expected=expected[i], actual=results[i].value)
    return r


def _case_name(i: int, public: bool) -> str:
    """How a verdict names case ``i``: by number when public, never when hidden."""
    return f"case {i + 1}" if public else "one of the grader's hidden cases"


@dataclass
class _Scan:
    """What the answer did over the cases, as :func:`function_verdict` needs it."""

    stop: dict | None = None  # the verdict, when a case stopped the answer (see _stopped_at)
    first: tuple | None = None  # (case, Difference) of the first case with wrong values
    type_note: tuple | None = None  # (case, problem) of the first case with a wrong type
    passed: list = field(default_factory=list)  # per case compared: right or not
    kinds: list = field(default_factory=list)  # per case compared: the difference's kind
    complete: bool = True  # every case up to the end (or to a raise) was seen


def _scan_cases(meta: dict, results: list, expected: list, n_public: int) -> _Scan:
    """Walk the cases in order: stop at a case the answer did not get through (no result, a
    raise, an input changed in place, ``None``) unless an earlier case already had wrong
    values; otherwise compare every case's value and type."""
    rtol, atol = meta["rtol"], meta["atol"]
    scan = _Scan()
    for i, want in enumerate(expected):
        public = i < n_public
        res = results[i] if i < len(results) else None
        if scan.first is not None and (
            res is None or res.raised or res.mutated or (res.value is None and want is not None)
        ):
            # report the earlier wrong case; a raise here still counts for recognising a
            # mistake that raises here too
            scan.complete = res is not None and bool(res.raised) and not res.mutated
            break
        if res is None:
            scan.stop = base_verdict(meta)
            scan.stop.update(
                status="error",
                case=i,
                public=public,
                hint=meta["hint"],
                message=f"no result for {_case_name(i, public)} (the answer stopped before it)",
            )
            return scan
        scan.stop = _stopped_at(meta, i, res, want, public)
        if scan.stop is not None:
            return scan
        diff = difference(want, res.value, rtol, atol)
        scan.passed.append(diff is None)
        scan.kinds.append(getattr(diff, "kind", None))
        if scan.type_note is None:
            problem = _type_problem(
                want, res.value, meta.get("answer_type", ""), public
            ) or _form_problem(want, res.value, meta, public)
            if problem:
                scan.type_note = (i, problem)
        if diff is not None and scan.first is None:
            scan.first = (i, diff)
    return scan


def _narrow_error_cause(r: dict, meta: dict, res, kind: str, text: str, public: bool) -> None:
    """Where the error's message names a cause the rest of what was seen does not prove, the
    verdict ``r`` says what fails instead (in place): a truth-value error on a line that tests
    no mask, an argument the check leaves out that is no optional mask, a call inside the
    learner's own code that misses one."""
    if error_hint(kind, text, public).startswith("`if mask:`") and r["cause"] is None:
        # the line that raised tests no mask: say what NumPy refused, not why
        r["hint"] = (
            "Python asked for one True/False for a whole array, which NumPy refuses: an "
            "`if`, `and`, `or`, `not`, or Python's own max()/min() applied to arrays (use "
            "np.maximum/np.minimum elementwise, & and | to combine boolean arrays, and "
            "`mask is not None` to test whether a mask was given). " + (meta["hint"] or "")
        )
    missing = re.findall(r"argument[s]?: '(\w+)'", text)
    if (
        r["cause"] == "missing default"
        and not (getattr(res, "where", None) or {}).get("function")
        and missing
        and not all("mask" in name for name in missing)
    ):
        # the check leaves out only an optional argument (a mask); another name is a
        # parameter the question does not have, or one too many
        r.update(
            cause=None,
            hint=f"Your function asks for an argument the check does not pass "
            f"({', '.join(missing)}): its parameters must be the ones the question lists, "
            "in that order, the optional ones with their defaults. " + (meta["hint"] or ""),
        )
    if r["cause"] == "missing default" and (getattr(res, "where", None) or {}).get("function"):
        # raised inside the learner's own code: one of *their* calls misses an argument
        r.update(
            cause=None,
            hint="A call inside your function misses an argument (see the line above): "
            "compare it with the definition of the function it calls. " + (meta["hint"] or ""),
        )


def _stopped_at(meta: dict, i: int, res, want, public: bool) -> dict | None:
    """The verdict when case ``i`` stops the answer: it raised (the release's stub raises
    ``NotImplementedError``: not attempted), changed an input in place, or returned ``None``
    where a value was expected. ``None`` when the case went through."""
    where = _case_name(i, public)
    r = base_verdict(meta)
    if res.raised:
        kind, text = res.raised
        if kind == "NotImplementedError":
            return not_attempted(meta)
        shown = f"{kind}: {text}" if public else kind
        message = f"{where} raised {shown}"
        located = _location_text(getattr(res, "where", None)) if public else ""
        if located:
            message += f"\n  {located}"
        r.update(
            status="error",
            case=i,
            public=public,
            hint=_error_and_recipe(kind, text, public, meta["hint"]),
            message=message,
            cause=error_cause(kind, text, (getattr(res, "where", None) or {}).get("code"))
            if error_hint(kind, text, public)
            else None,
        )
        _narrow_error_cause(r, meta, res, kind, text, public)
        if public:
            r["where"] = getattr(res, "where", None)
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
            cause="in place",
        )
        return r
    if res.value is None and want is not None:
        r.update(
            case=i,
            public=public,
            hint="",
            message="your function returned None: a function without a `return` of its "
            "result gives None, and so does returning what an in-place method gives (.sort(), "
            ".append(), .fill(), np.copyto(...) return None): return the array you built",
            # None is what was seen; which of these gave it is not
            cause=None,
        )
        return r
    return None


def _which_mistake(meta: dict, results: list, mistakes: list, n_cases: int, complete: bool):
    """``(hint, name)`` of the classic mistake the answer matches on every case it was run on
    (``(the question's hint, None)`` when none does, or when the cases were not all seen)."""
    matched = [
        m
        for j, m in enumerate(meta["mistakes"] if complete else ())
        if _matches_mistake(j, results, mistakes, n_cases, meta["rtol"], meta["atol"])
    ]
    if len(matched) == 1:  # two listed mistakes that agree on every case: neither is named
        return matched[0]["hint"], matched[0]["name"]
    return (AMBIGUOUS_SAME if matched else meta["hint"]), None


def _ranges(rows) -> str:
    rows = sorted(rows)
    if not rows:
        return "none"
    if rows == list(range(rows[0], rows[-1] + 1)) and len(rows) > 1:
        return f"{rows[0]} to {rows[-1]}"
    return ", ".join(map(str, rows))


def _zero_rows_note(want, got) -> str:
    """When the right result is a matrix with whole rows of zeros (a removed head's block of
    W_O), which rows the answer zeroes instead: the property that differs, in a few words,
    and what it means when that is unambiguous (the same number of rows, one block later;
    one row more or fewer; columns instead of rows)."""
    try:
        w, g = np.asarray(want, dtype=float), np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return ""
    if w.ndim != 2 or g.shape != w.shape or not np.all(np.isfinite(g)):
        return ""
    zw = [int(r) for r in np.flatnonzero(np.all(w == 0, axis=1))]
    zg = [int(r) for r in np.flatnonzero(np.all(g == 0, axis=1))]
    if not zw or zw == zg:
        return ""
    yours = f"yours in rows {_ranges(zg)}" if zg else "yours has no row of zeros"
    text = f"the right result has zeros in rows {_ranges(zw)}; {yours}"
    zc = [int(c) for c in np.flatnonzero(np.all(g == 0, axis=0))]
    if not zg and zc:
        return text + f" (and zeros in columns {_ranges(zc)}): clear rows, not columns"
    if set(zw) < set(zg) and len(zg) == len(zw) + 1:
        return text + ": one row too many (the block's end is exclusive: rows start up to, "
        "not including, start + d_head)"
    if set(zg) < set(zw) and len(zg) == len(zw) - 1:
        return text + ": one row too few (the block has d_head rows)"
    if len(zg) == len(zw) and zg and zg[0] - zw[0] == len(zw):
        return (
            text + ": one head later; heads are counted from 0 (head 0 owns rows 0 to d_head - 1)"
        )
    if len(zg) == len(zw) and zg and zw[0] - zg[0] == len(zw):
        return text + ": one head earlier; heads are counted from 0"
    if len(zg) == 1 and len(zw) > 1:
        return text + ": a head owns a whole block of d_head rows, not one row"
    return text


def _weights_like(x) -> bool:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return False
    if a.ndim < 2 or a.size == 0 or not np.all(np.isfinite(a)):
        return False
    return bool(np.all(a >= -1e-12) and np.allclose(a.sum(axis=-1), 1.0, atol=1e-6))


def _sums_note(want, got) -> str:
    """When the right result (or an item of it) is a matrix of attention weights, rows summing
    to 1 over the keys, and the answer's rows do not: over which axis they sum to 1 instead."""
    items_w = want if isinstance(want, tuple) else (want,)
    items_g = got if isinstance(got, (tuple, list)) and isinstance(want, tuple) else (got,)
    for j, (w, g) in enumerate(zip(items_w, items_g)):
        if not _weights_like(w):
            continue
        try:
            g = np.asarray(g, dtype=float)
        except (TypeError, ValueError):
            return ""
        if g.shape != np.shape(w) or not np.all(np.isfinite(g)):
            continue
        if np.allclose(g.sum(axis=-1), 1.0, atol=1e-6):
            continue
        name = f"result[{j}]" if isinstance(want, tuple) else "your result"
        other = [ax for ax in range(g.ndim - 1) if np.allclose(g.sum(axis=ax), 1.0, atol=1e-6)]
        if other:
            return (
                f"{name} holds attention weights, whose rows must sum to 1 over the keys (the "
                f"last axis); yours sum to 1 over axis {other[0]} instead: the softmax (its max, "
                "its exponentials and its sum) runs over the last axis, axis=-1"
            )
        return (
            f"{name} holds attention weights, whose rows must sum to 1 over the keys (the last "
            "axis); yours do not: divide by the sum over the last axis (keepdims=True)"
        )
    return ""


def _items_note(meta, want, got, rtol, atol) -> str:
    """For a tuple result: which of its items are right and which differ, by the names the
    question gives them (``extra={"outputs": [...]}``)."""
    if not isinstance(want, tuple) or not isinstance(got, (tuple, list)) or len(got) != len(want):
        return ""
    names = list(meta.get("outputs") or [])
    names += [f"result[{j}]" for j in range(len(names), len(want))]
    wrong = [names[j] for j, (w, g) in enumerate(zip(want, got)) if difference(w, g, rtol, atol)]
    right = [n for n in names[: len(want)] if n not in wrong]
    if not wrong or not right:
        return ""
    return f"{', '.join(right)} {'is' if len(right) == 1 else 'are'} right; {', '.join(wrong)} " + (
        "is wrong" if len(wrong) == 1 else "are wrong"
    )


def _safe_note(note, *args) -> str:
    """A note, or none when the answer's result has a structure that note cannot take apart
    (a tuple of arrays of different shapes, say): one note failing must not crash the check."""
    try:
        return note(*args)
    except Exception:  # noqa: BLE001
        return ""


def _size_one_note(diff, want, got) -> str:
    """The right numbers with an extra (or a missing) axis of size 1."""
    if getattr(diff, "kind", "") != "reshaped":
        return ""
    a, b = tuple(np.shape(want)), tuple(np.shape(np.asarray(got, dtype=object)))
    if tuple(s for s in a if s != 1) != tuple(s for s in b if s != 1):
        return ""
    if len(b) > len(a):
        return (
            f"your result has the right numbers with an extra axis of size 1 ({b} for {a}): a "
            "reduction with keepdims=True, or an x[:, None], left it; drop it (keepdims=False, "
            "or .squeeze(axis))"
        )
    return (
        f"your result has the right numbers but lacks an axis of size 1 ({b} for {a}): keep it "
        "(keepdims=True, or x[:, None])"
    )


def _scale_note(meta, want, got) -> str:
    """An array (or tuple items) that is the right one times a constant factor, c != 1."""
    items_w = want if isinstance(want, tuple) else (want,)
    items_g = got if isinstance(got, (tuple, list)) and isinstance(want, tuple) else (got,)
    if len(items_w) != len(items_g):
        return ""
    names = list(meta.get("outputs") or [])
    names += [f"result[{j}]" for j in range(len(names), len(items_w))]
    scaled = []
    for j, (w, g) in enumerate(zip(items_w, items_g)):
        try:
            w, g = np.asarray(w, dtype=float), np.asarray(g, dtype=float)
        except (TypeError, ValueError):
            return ""
        if (
            w.shape != g.shape
            or w.size < 2
            or not (np.all(np.isfinite(w)) and np.all(np.isfinite(g)))
        ):
            return ""
        ww = float(np.sum(w * w))
        if ww == 0:
            continue
        c = float(np.sum(g * w)) / ww
        if abs(c - 1) < 1e-6:
            continue
        if c == 0 or not np.allclose(g, c * w, rtol=1e-6, atol=1e-9):
            return ""
        scaled.append((names[j] if isinstance(want, tuple) else "your result", c))
    if not scaled:
        return ""
    parts = ", ".join(f"{n} is {c:.4g} times the right one" for n, c in scaled)
    return (
        f"{parts} (a constant factor, the same for every entry): a scale is wrong somewhere, "
        "a factor multiplied where it should divide, one left out, or one too many"
    )


def _off_by_one_note(diff, want, got) -> str:
    """A shape that differs from the right one on one axis by exactly one entry."""
    if getattr(diff, "kind", "") != "shape":
        return ""
    try:
        a, b = np.shape(want), np.shape(np.asarray(got, dtype=float))
    except (TypeError, ValueError):
        return ""
    if len(a) != len(b):
        return ""
    axes = [i for i in range(len(a)) if a[i] != b[i]]
    if len(axes) != 1 or abs(a[axes[0]] - b[axes[0]]) != 1:
        return ""
    ax = axes[0]
    word = "one entry too many" if b[ax] > a[ax] else "one entry too few"
    return (
        f"axis {ax - len(a)} of your result has {word} ({b[ax]} instead of {a[ax]}), every "
        "other axis is right: an off-by-one in a slice bound or a size (a slice's end is "
        "exclusive: x[a:b] has b - a entries)"
    )


def _heads(names) -> str:
    return ("query head " if len(names) == 1 else "query heads ") + ", ".join(names)


def head_blocks_note(traits: list, results: list, expected: list, n_public: int) -> str:
    """On a public case whose output projection is the identity (tagged
    "headblocks:<d_head>:<group>"), output columns i * d_head ... are query head i's own
    output: which query heads are right and which wrong (``""`` when all or none are)."""
    for i in range(min(n_public, len(expected), len(results), len(traits or []))):
        tags = [t for t in traits[i] or () if isinstance(t, str) and t.startswith("headblocks:")]
        res = results[i]
        if not tags or res is None or res.raised:
            continue
        _, d_head, group = tags[0].split(":")
        d_head, group = int(d_head), int(group)
        try:
            w, g = np.asarray(expected[i], dtype=float), np.asarray(res.value, dtype=float)
        except (TypeError, ValueError):
            return ""
        if w.shape != g.shape or w.ndim != 2 or d_head < 1 or w.shape[1] % d_head:
            return ""
        ok = [
            bool(
                np.allclose(
                    g[:, b * d_head : (b + 1) * d_head],
                    w[:, b * d_head : (b + 1) * d_head],
                    rtol=1e-6,
                    atol=1e-8,
                )
            )
            for b in range(w.shape[1] // d_head)
        ]
        if all(ok) or not any(ok):
            return ""
        right = [str(b) for b, o in enumerate(ok) if o]
        wrong = [str(b) for b, o in enumerate(ok) if not o]
        return (
            f"on case {i + 1}, whose W_O is the identity (so output columns i*d_head to "
            f"(i+1)*d_head - 1 are query head i's own output), {_heads(wrong)} "
            f"{'is' if len(wrong) == 1 else 'are'} wrong and {_heads(right)} right: look at "
            "which key/value head each "
            f"query head reads. Query head i reads KV head i // group, with the group size "
            f"group = num_heads // num_kv_heads ({group} here): heads 0 to {group - 1} share KV "
            "head 0, and so on"
        )
    return ""


def _wrong_values(meta, scan: _Scan, results, expected, mistakes, n_public, traits) -> dict:
    """The verdict on an answer with wrong values: the first wrong case, the classic mistake
    it matches, else the property of the cases that separates right from wrong."""
    i, diff = scan.first
    public = i < n_public
    hint, named = _which_mistake(meta, results, mistakes, len(expected), scan.complete)
    # one item of a sum missing (or one too many) where the sum has several items of that size
    # (Q, K, V and W_O): a listed slip and its unlisted siblings give the same count
    off = term_off_by(traits or [], results, expected)
    ambiguous = ""
    if off and 0 < abs(off[1]) < TERM_ITEMS.get(off[0], 1):  # some of the items, not which
        hint, named = meta["hint"], None
        ambiguous = AMBIGUOUS_COUNT + term_diagnosis(traits or [], results, expected) + "."
    elif named is None and hint is AMBIGUOUS_SAME:  # two listed mistakes agree everywhere
        ambiguous = AMBIGUOUS_SAME
    diagnosis = differential(traits or [], scan.passed)
    if named is None:  # which query heads are wrong says more than "with several heads"
        blocks = head_blocks_note(traits or [], results, expected, n_public)
        diagnosis = blocks or diagnosis
    if named is None and not diagnosis:
        diagnosis = row_diagnosis(traits or [], results, expected, meta["rtol"], meta["atol"])
    if named is None and not diagnosis:
        diagnosis = term_diagnosis(traits or [], results, expected)
    if named is None and not diagnosis:
        diagnosis = _safe_note(block_note, results, expected, n_public, meta["rtol"], meta["atol"])
    if named is None and not diagnosis:
        diagnosis = _safe_note(same_rows_note, meta, results, expected, n_public)
    if named is None:  # a count off by a term on the cases without a property: said as well
        where = term_diagnosis_where(traits or [], results, expected)
        if where and where not in diagnosis:
            diagnosis = f"{diagnosis.rstrip('.')}; also, {where}" if diagnosis else where
    if named is None and diagnosis:
        hint = diagnosis[0].upper() + diagnosis[1:] + " " + meta["hint"]
    if ambiguous:  # say what is true of the answer, and that no one cause can be named
        also = (
            f" {diagnosis[0].upper()}{diagnosis[1:]}"
            if diagnosis and diagnosis not in ambiguous
            else ""
        )
        diagnosis = diagnosis or ambiguous
        hint = f"{ambiguous}{also} {meta['hint']}"
    if named is None and not diagnosis and public:
        want, got = expected[i], results[i].value
        note = (
            _safe_note(_zero_rows_note, want, got)
            or _safe_note(_sums_note, want, got)
            or _safe_note(_off_by_one_note, diff, want, got)
            or _safe_note(_size_one_note, diff, want, got)
            or _safe_note(_scale_note, meta, want, got)
            or _safe_note(_items_note, meta, want, got, meta["rtol"], meta["atol"])
        )
        if note:
            diagnosis = note
            first = note.split(" ", 1)[0]
            hint = note if ("_" in first or "[" in first) else note[0].upper() + note[1:]
            hint += ". " + meta["hint"]
    message = f"{_case_name(i, public)}: {diff if public else diff.generic}"
    if diff.kind != "transposed" and any(
        k == "transposed" for k in scan.kinds[:n_public] if k
    ):  # a square first case hides it: say what a later one shows
        message += "; on another case your result is the transpose of the expected one"
    if scan.type_note is not None:  # say it too, in a few words (the hint is about the values)
        message += "; also, " + scan.type_note[1].split(". ", 1)[0].replace("your answer", "it", 1)
    r = base_verdict(meta)
    r.update(case=i, public=public, hint=hint, message=message)
    r["mistake"] = named
    r["cause"] = named
    r["diagnosis"] = diagnosis
    if public:
        r.update(expected=expected[i], actual=results[i].value)
    return r


# --- value questions ------------------------------------------------------------------------


def _zero_below(digits: int, scale: float) -> float:
    """Entries this small read as 0 (noise around an exact zero). The threshold depends on
    ``digits`` (1e-9 of the array's largest entry at 6 digits, 1e-8 at 5) so that the two
    roundings never share a boundary there either."""
    return max(10.0 ** -(digits + 6), 10.0 ** -(digits + 3) * scale)


def _number_text(v: float, digits: int, scale: float, half_up: bool = False) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))  # a whole number is compared exactly, whatever its size (a count)
    if abs(v) <= _zero_below(digits, scale):
        return "0"
    text = f"{_half_up(v, digits) if half_up else v:.{digits}g}"
    return "0" if text in ("-0", "0") else text


def _half_up(v: float, digits: int) -> float:
    """``v`` rounded to ``digits`` significant figures the way a person rounds what they wrote:
    from its decimal text (the shortest repr), halves away from zero. Binary rounding would
    take 4.585 (stored as 4.58499...) to 4.58 and 4.595 to 4.59, so an answer written "4.585"
    for a value of 4.5857 "to 3 significant figures" would fail and "4.595" pass."""
    try:
        d = decimal.Decimal(repr(v))
        if d == 0 or not d.is_finite():
            return v
        quantum = decimal.Decimal(1).scaleb(d.adjusted() - digits + 1)
        return float(d.quantize(quantum, rounding=decimal.ROUND_HALF_UP))
    except (decimal.InvalidOperation, ValueError, OverflowError):
        return v


def _canonical(x, digits: int, depth: int = 0, half_up: bool = False):
    if depth > 8:
        return None
    if isinstance(x, str):
        return "s:" + " ".join(x.strip().lower().split())
    if x is None:
        return "none"
    if isinstance(x, (list, tuple)) and any(isinstance(v, str) or v is None for v in x):
        parts = [_canonical(v, digits, depth + 1, half_up) for v in x]
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
        _number_text(float(v), digits, scale, half_up) for v in flat[:100_000]
    )


def value_hashes(grade_id: str, x, sig_figs: int | None = None) -> list | None:
    """Salted hashes of ``x`` rounded to 6 and to 5 significant digits (``None`` when ``x`` is
    not a number, an array, text or a tuple of those). With ``sig_figs`` (a question that states
    its precision), one hash of ``x`` rounded to that many significant figures. Whole numbers
    are written out exactly (a count is never rounded). Two values match when either hash
    agrees: whatever the value, at least one of the two roundings is not near a boundary, so a
    right answer computed a little differently still matches.

    >>> value_hashes("q", 64) == value_hashes("q", 64.0000000001)
    True
    >>> value_hashes("q", " B ") == value_hashes("q", "b")
    True
    """
    out = []
    for digits in (sig_figs,) if sig_figs else (6, 5):
        # a stated precision is rounded as a person rounds what they wrote (see _half_up)
        c = _canonical(x, digits, half_up=bool(sig_figs))
        if c is None:
            return None
        out.append(_salted(grade_id, c))
    return out


def sig_figs_of(q) -> int | None:
    """The precision a real-valued value question states (``extra={"sig_figs": k}``): answers
    are compared to ``k`` significant figures. ``None``: compared to 6 (or 5) digits."""
    k = (getattr(q, "extra", None) or {}).get("sig_figs")
    return int(k) if k else None


def _accepted_at(grade_id: str, x, digits: int) -> list:
    """The hashes of every ``digits``-significant-figure text that a right answer may round to:
    the expected value's own rounding, and its neighbour when the value sits within a millionth
    of a rounding boundary (then a right answer computed in another order may round either
    way)."""
    texts = set()
    arr = np.asarray(x, dtype=float)
    for f in (1.0, 1 - 1e-6, 1 + 1e-6):
        c = _canonical(arr * f, digits, half_up=True)
        if c is not None:
            texts.add(c)
    return sorted(_salted(grade_id, c) for c in texts)


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
        d = rtol * abs(v) + atol if math.isfinite(v) and not v.is_integer() else 0.0
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


def _letter(x) -> bool:
    return isinstance(x, str) and len(x.strip()) == 1 and x.strip().isalpha()


# Factors by which a count or a quantity is typically off (units, K and V, bytes per number),
# besides the numbers the question's own prompt gives (see :func:`_factor_hashes`).
_UNIT_FACTORS = {
    2: "2",
    3: "3",
    4: "4",
    8: "8 (8 bits a byte, or 8 bytes a float64 number)",
    1000: "1000 (a unit: seconds and milliseconds, or ms and microseconds, are 1000 apart)",
    10**6: "a million (a unit: seconds and microseconds)",
    1024: "1024 (a unit: 1 KiB is 1024 bytes)",
    2**20: "2**20 (a unit: 1 MiB is 2**20 bytes)",
    2**30: "2**30 (a unit: 1 GiB is 2**30 bytes)",
}


def _prompt_numbers(prompt: str) -> list:
    """The whole numbers a question's prompt gives (its layers, heads, widths, ...)."""
    out = []
    for m in re.finditer(r"(?<![\w.^*])(\d[\d,]*)(?![\w.]\d)", prompt or ""):
        text = m.group(1).replace(",", "")
        if text.isdigit() and 2 <= int(text) <= 10**7 and int(text) not in out:
            out.append(int(text))
    return out


def _factor_hashes(grade_id: str, expected, prompt: str, sig_figs) -> list:
    """For a scalar value answer: hashes of the right value multiplied and divided by each
    factor (units, small counts, and every number the prompt gives), so that the verdict can
    say "exactly N times the right value" (the property) without naming a cause."""
    try:
        e = float(expected)
    except (TypeError, ValueError):
        return []
    if not math.isfinite(e) or e == 0:
        return []
    factors = dict(_UNIT_FACTORS)
    for n in _prompt_numbers(prompt):
        factors.setdefault(n, f"{n}, a number the question gives")
    out = []
    for f, label in factors.items():
        for direction, value in (("times", e * f), ("divided by", e / f)):
            h = value_hashes(grade_id, value, sig_figs)
            if h:
                out.append({"h": h, "f": f"{direction} {label}", "n": f, "d": direction})
    return out


def value_info(grade_id: str, expected, sig_figs: int | None = None) -> dict:
    """What the self-check may know about an expected value: its hashes and its form.

    ``sig_figs``: the question states its precision; ``hashes`` then lists every rounding to
    that many significant figures that a right answer may have (see :func:`_accepted_at`)."""
    kind = _kind_of(expected)
    if sig_figs:
        info = {"hashes": _accepted_at(grade_id, expected, sig_figs), "sig_figs": int(sig_figs)}
    else:
        info = {"hashes": value_hashes(grade_id, expected)}
    info["type"] = kind
    if isinstance(expected, tuple):  # the question asks for a tuple: a list is a slip of form
        info["tuple"] = True
    if kind == "number":
        info["shape"] = list(np.shape(np.asarray(expected, dtype=float)))
        if isinstance(expected, (tuple, list)):
            info["sequence"] = True
            if all(isinstance(v, (bool, np.bool_)) for v in expected):
                info["flags"] = True
            elif all(isinstance(v, (int, np.integer)) for v in expected):
                info["shape_parts"] = _shape_parts(grade_id, expected)
    elif kind == "tuple":
        info["length"] = len(expected)
    elif kind == "text" and _letter(expected):
        info["letter"] = True
    return info


def _shape_parts(grade_id: str, sizes) -> dict:
    """Hashes of properties of a shape answer (its sizes sorted, without axes of size 1, their
    product), so the verdict can say which property of a wrong shape is right: the right sizes
    in another order, an extra axis of size 1, or axes merged (the same total)."""
    sizes = [int(v) for v in sizes]
    return {
        "sorted": _salted(grade_id, "sorted:" + ",".join(map(str, sorted(sizes)))),
        "squeezed": _salted(grade_id, "squeezed:" + ",".join(str(v) for v in sizes if v != 1)),
        "product": _salted(grade_id, f"product:{int(np.prod(sizes))}"),
    }


def _shape_note(grade_id: str, info: dict, actual) -> str:
    """What is right and what is wrong about a wrong shape answer (``""`` when nothing fits)."""
    parts = info.get("shape_parts")
    if not parts or not isinstance(actual, (tuple, list)):
        return ""
    try:
        sizes = [int(v) for v in actual]
    except (TypeError, ValueError, OverflowError):
        return ""
    if any(float(v) != s for v, s in zip(actual, sizes)) or len(sizes) > 12:
        return ""
    mine = _shape_parts(grade_id, sizes)
    n = (info.get("shape") or [0])[0]
    if mine["sorted"] == parts["sorted"]:
        return (
            "your sizes are the right ones but in the wrong order: check the order of the axes "
            "the question gives"
        )
    if mine["squeezed"] == parts["squeezed"] and len(sizes) > n:
        return (
            f"your shape has {len(sizes)} sizes, the right one {n}: you added an extra axis of "
            "size 1 (a leading 1, or a batch axis the question does not have)"
        )
    if mine["squeezed"] == parts["squeezed"] and len(sizes) < n:
        return f"your shape has {len(sizes)} sizes, the right one {n}: an axis of size 1 is missing"
    if mine["product"] == parts["product"] and len(sizes) != n:
        return (
            f"your shape has {len(sizes)} sizes, the right one {n}, with the same total number "
            "of entries: two axes are merged into one (or one is split); keep each axis "
            "separate"
        )
    return ""


def value_data(q) -> tuple[dict, list]:
    """``(value_info, mistake hashes)`` of a bank's value question, as the self-check data
    holds them and as the grader judges with them."""
    k = sig_figs_of(q)
    info = value_info(q.grade_id, q.expected, k)
    factors = (
        _factor_hashes(q.grade_id, q.expected, q.prompt, k) if not np.shape(q.expected) else []
    )
    if factors and not isinstance(q.expected, str):
        info["factors"] = factors
    hashes = [value_hashes(q.grade_id, m.answer, k) for m in q.mistakes]
    ambiguous = _ambiguous_mistakes(q, hashes, k)
    if ambiguous:
        info["ambiguous"] = ambiguous
    return info, hashes


AMBIGUOUS_NOTE = (
    "More than one slip gives exactly this number, so the check cannot tell which one you "
    "made: {what}. Check each part of your calculation against the question."
)
_SWAP_WHAT = (
    "one factor of your product is off: your number is the right product with one of its "
    "factors replaced by another size of the question"
)
_SAME_WHAT = "two of the slips this question knows give the same number"


def value_swaps(q) -> dict:
    """The unlisted but plausible slips of a value question the judge can enumerate: the right
    product (the bank's ``extra={"product": {factor: size}}``) with one factor replaced by
    another size (``extra={"sizes": {name: size}}``). ``{label: value}``; ``{}`` when the bank
    declares no product."""
    extra = getattr(q, "extra", None) or {}
    product, sizes = extra.get("product") or {}, extra.get("sizes") or {}
    out = {}
    for f, v in product.items():
        rest = 1
        for g, w in product.items():
            rest *= w if g != f else 1
        for name, size in sizes.items():
            if size != v:
                out[f"{f}->{name}"] = rest * size
    return out


def _ambiguous_mistakes(q, hashes: list, k) -> list:
    """Indices of the listed mistakes whose value another cause gives too (another listed
    mistake, or an enumerated slip of :func:`value_swaps` the bank does not declare as that
    mistake's own in ``extra={"mistake_swaps": {name: [labels]}}``), each with the note the
    verdict gives instead of naming a cause. Computed at release time (the self-check data
    holds it)."""
    own = (getattr(q, "extra", None) or {}).get("mistake_swaps") or {}
    swaps = {label: value_hashes(q.grade_id, v, k) for label, v in value_swaps(q).items()}
    out = []
    for j, (m, h) in enumerate(zip(q.mistakes, hashes)):
        if not h:
            continue
        same = [i for i, o in enumerate(hashes) if i != j and o and o[0] == h[0]]
        other = [
            label
            for label, sh in swaps.items()
            if sh and sh[0] == h[0] and label not in (own.get(m.name) or ())
        ]
        if same or other:
            out.append(
                {"j": j, "note": AMBIGUOUS_NOTE.format(what=_SWAP_WHAT if other else _SAME_WHAT)}
            )
            continue
        if _common_factor(q, m.answer):  # the verdict says the factor (see _factor_note)
            out.append({"j": j, "note": AMBIGUOUS_FACTOR})
    return out


# The stored note of a listed mistake at a common factor (no digits: the data holds no number);
# the verdict replaces it with :func:`_factor_note`, built from the matching factor entry.
AMBIGUOUS_FACTOR = (
    "Your answer is the expected value times a factor that several slips give, so the check "
    "cannot tell which one you made. One slip that gives this: "
)


# Factors that several common slips produce, whatever the question: a listed mistake whose value
# is the right one times (or divided by) one of them is never named as the cause (battery C:
# q08_mla_cache in fp32, 4 bytes a number, gives exactly the "latent cached for K and for V"
# value, twice the right one). Each with the slips known to give it.
_COMMON_FACTORS = {
    2: "K and V both counted (or only one of them), 2 bytes a number against 4 (fp16 against "
    "fp32), a term counted twice or left out",
    4: "4 bytes a number (fp32) against 1, or bytes against entries; four matrices against one",
    8: "8 bits a byte, 8 bytes a number (float64) against 1, or 8 of something the question gives",
    1000: "a unit: thousands, or seconds against milliseconds",
    10**6: "a unit: millions, or seconds against microseconds",
    1024: "a unit: KiB against bytes",
    2**20: "a unit: MiB against bytes",
    2**30: "a unit: GiB against bytes",
}


def _factor_slips(f: int, given: bool) -> str:
    slips = [_COMMON_FACTORS[f]] if f in _COMMON_FACTORS else []
    if given or not slips:
        slips.append(f"{f}, a number the question gives, used once too often or left out")
    return "; or ".join(slips)


def _common_factor(q, answer) -> tuple | None:
    """``(direction, factor, slips)`` when the scalar ``answer`` (a listed mistake's value) is
    exactly the expected value times or divided by a common factor (:data:`_COMMON_FACTORS`,
    or a number the prompt gives); ``None`` otherwise (or for shapes and text)."""
    if isinstance(q.expected, (str, tuple, list)) or np.shape(q.expected):
        return None
    try:
        e, v = float(q.expected), float(answer)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(e) and math.isfinite(v)) or e == 0 or v == 0:
        return None
    given = _prompt_numbers(q.prompt)
    for f in sorted(set(_COMMON_FACTORS) | set(given)):
        for direction, value in (("times", e * f), ("divided by", e / f)):
            if math.isclose(v, value, rel_tol=1e-9, abs_tol=0.0):
                return direction, f, _factor_slips(f, f in given)
    return None


def _factor_verdict_note(info: dict, got: list, hint: str) -> str:
    """:func:`_factor_note` for the factor entry of ``info`` that ``got`` matches."""
    for entry in info.get("factors") or ():
        if "n" in entry and any(g == h for g, h in zip(got, entry.get("h") or ())):
            n = int(entry["n"])
            given = "a number the question gives" in str(entry.get("f"))
            return _factor_note((entry.get("d", "times"), n, _factor_slips(n, given)), hint)
    return AMBIGUOUS_FACTOR + hint


def _factor_words(direction: str, f: int) -> str:
    if f == 2:
        return "twice" if direction == "times" else "half"
    return f"{f:,} times" if direction == "times" else f"1/{f:,} of"


def _factor_note(factor: tuple, hint: str) -> str:
    """What is true of an answer that is the right value times a common factor: the factor,
    the slips that give it, and the listed mistake's hint as one of them (no cause named)."""
    direction, f, slips = factor
    return (
        f"Your answer is exactly {_factor_words(direction, f)} the expected value. Several slips "
        f"give this factor, so the check cannot tell which one you made: {slips}. One slip that "
        f"gives this: {hint}"
    )


def _a(type_name: str) -> str:
    """``"an int"``, ``"a float"``: the type's name with its article."""
    return ("an " if type_name[:1].lower() in "aeiou" else "a ") + type_name


FLAGS_FORM = (
    "your answer should be a tuple of truth values, True or False (no quotes), one per "
    "item, not words or numbers"
)


def _same_form(info: dict, actual) -> bool:
    """Whether a listed mistake's own value could have this answer's form: only a number that
    is not whole (a count in millions, 12.6) has the form of the mistake it matches; strings
    and booleans never do."""
    return (
        info.get("type") == "number"
        and isinstance(actual, (float, np.floating))
        and not float(actual).is_integer()
    )


def _not_whole(actual) -> bool:
    """Whether ``actual`` is a float that is not a whole number (so no count written as a
    float): its value, not only its type, is wrong for a count."""
    return isinstance(actual, (float, np.floating)) and not float(actual).is_integer()


def _prompt_words(prompt) -> list:
    """The quoted words a prompt offers as the items of a tuple of words ('previous' / 'first')."""
    out = []
    for w in re.findall(r"'([A-Za-z][A-Za-z _-]{0,30})'", prompt or ""):
        if w.strip().lower() not in out:
            out.append(w.strip().lower())
    return out


def _words_form(info: dict, prompt, actual) -> str:
    """For a tuple of words whose prompt quotes the words allowed: an item that is not one of
    them (an abbreviation, a column index, another word) is a slip of form, said with the
    words (``""`` when every item is one of them, or the prompt quotes fewer than two)."""
    words = _prompt_words(prompt)
    if info.get("type") != "tuple" or len(words) < 2 or not isinstance(actual, (tuple, list)):
        return ""
    allowed = " or ".join(repr(w) for w in words)
    for i, item in enumerate(actual):
        if not isinstance(item, str):
            return (
                f"each item should be one of the words the question gives, {allowed}, as text; "
                f"item {i} of yours is {_a(type(item).__name__)}"
            )
        if item.strip().lower() not in words:
            return (
                f"each item should be one of the words the question gives, {allowed}, written "
                f"out in full; item {i} of yours, {item[:20]!r}, is not one of them"
            )
    return ""


def tuple_form(info: dict, actual) -> str:
    """The form slip of a list (or an array) where the question asks for a tuple (``""`` when
    the answer is a tuple, or the question asks for no tuple): one wording for every such
    question, answered whatever the content, never passed (as 64.0 for a count is not)."""
    if not info.get("tuple") or not isinstance(actual, (list, np.ndarray)):
        return ""
    what = "a list [...]" if isinstance(actual, list) else "a NumPy array"
    return f"write it as a tuple, (…), as the question asks: your answer is {what}"


def _value_form(info: dict, actual, got) -> str:
    """What is wrong with the *form* of a value answer (``""`` when its form is right): the
    same wording for every question of a kind."""
    kind = info.get("type")
    try:
        shape = list(np.shape(np.asarray(actual, dtype=object)))
    except (ValueError, TypeError):
        shape = None
    if info.get("letter"):
        if not isinstance(actual, str):
            return f"answer with a single letter, as text (for example 'a'), not {_a(type(actual).__name__)}"
        if not _letter(actual):
            return "answer with a single letter (one option), as text, for example 'a'"
        return ""
    if info.get("flags") and not (
        isinstance(actual, (tuple, list, np.ndarray))
        and all(isinstance(v, (bool, np.bool_)) for v in actual)
        and len(actual) == (info.get("shape") or [0])[0]
    ):
        if isinstance(actual, (str, bytes)) or (
            isinstance(actual, (tuple, list, np.ndarray))
            and not all(isinstance(v, (bool, np.bool_)) for v in actual)
        ):
            return FLAGS_FORM
    if kind == "number" and isinstance(actual, (str, bytes)):
        if info.get("sequence"):
            n = (info.get("shape") or [0])[0]
            return (
                f"your answer should be a tuple of {n} whole numbers, for example (2, 3), "
                "not text (a string)"
            )
        return "your answer should be a number, not text (a string): remove the quotes"
    if kind == "text" and not isinstance(actual, str):
        return f"your answer should be text, got {_a(type(actual).__name__)}"
    if kind == "number" and got is None:
        return f"your answer should be a number or an array, got {_a(type(actual).__name__)}"
    if kind == "number" and shape is not None and shape != info.get("shape"):
        return (
            f"your answer has shape {tuple(shape)}, expected shape {tuple(info.get('shape') or ())}"
        )
    if kind == "tuple" and (
        not isinstance(actual, (tuple, list)) or len(actual) != info.get("length")
    ):
        return f"your answer should be a tuple of {info.get('length')} items"
    return ""


def value_verdict(meta: dict, info: dict, mistake_hashes: list, actual) -> dict:
    """Judge a value answer from the expected value's :func:`value_info` and the classic
    mistakes' hashes (``mistake_hashes[j]`` belongs to ``meta["mistakes"][j]``).

    Counts are compared exactly and must be whole numbers of type int (a float such as 64.0
    is answered "write it as a whole number", in every question); a real number to the
    precision its question states (``sig_figs``), else to 6 significant figures."""
    try:
        r = _value_verdict(meta, info, mistake_hashes, actual)
        note = tuple_form(info, actual)  # a list where a tuple is asked, with wrong content
        if note and r.get("status") != "passed" and note not in str(r.get("message") or ""):
            r["message"] = (
                f"{r.get('message') or 'your answer is not the expected value'}; also, {note}"
            )
        return r
    except Exception as exc:  # noqa: BLE001  (an object whose comparisons raise, say)
        return unjudged(meta, exc)


def _value_verdict(meta: dict, info: dict, mistake_hashes: list, actual) -> dict:
    """:func:`value_verdict` without its guard."""
    r = base_verdict(meta)
    if actual is None or actual is Ellipsis:
        return not_attempted(meta)
    if info.get("recorded"):  # a copy for graded work: the form only (see recorded.py)
        return recorded_verdict(meta, info, actual)
    gid = meta["grade_id"]
    k = info.get("sig_figs")
    got = value_hashes(gid, actual, k)
    want = info.get("hashes") or []
    if k:
        right = bool(got) and got[0] in want
    else:
        right = bool(got and want) and (got[0] == want[0] or got[1] == want[1])
    form = _value_form(info, actual, got) or _words_form(info, meta.get("prompt"), actual)
    container = tuple_form(info, actual)
    if right and not form:
        problem = _type_problem(None, actual, meta.get("answer_type", ""))
        if problem:
            r.update(message=problem, hint="", cause="type")
            return r
        if container:  # the right content as a list: a slip of form, told so, not passed
            r.update(message=container, hint="", cause="form")
            return r
        r.update(status="passed", points=float(meta["points"]))
        return r
    problem = _type_problem(None, actual, meta.get("answer_type", ""))
    hint, cause = meta["hint"], None
    matched = [
        j
        for j, hashes in enumerate(mistake_hashes)
        if got and hashes and any(g == h for g, h in zip(got, hashes))
    ]
    ambiguous = {a.get("j"): a.get("note", "") for a in info.get("ambiguous") or ()}
    if len(matched) == 1 and matched[0] not in ambiguous:
        hint, cause = meta["mistakes"][matched[0]]["hint"], meta["mistakes"][matched[0]]["name"]
    elif matched:  # more than one cause gives this number: say what is true of it, name none
        hint = ambiguous.get(matched[0]) or AMBIGUOUS_NOTE.format(what=_SAME_WHAT)
        if hint == AMBIGUOUS_FACTOR:  # the factor, its slips, and this mistake as one of them
            hint = _factor_verdict_note(info, got, meta["mistakes"][matched[0]]["hint"])
    # how many sizes or items: a property of the answer, not a cause
    structural = form.startswith("your answer has shape") or form.endswith(" items")
    if ((form and not structural) or problem) and cause and not _same_form(info, actual):
        # a form slip (strings for booleans, text or a float for a count) is told its form,
        # never a content cause: its content was not written the way the question asks
        hint, cause = meta["hint"], None
    # A float that is a whole number is a slip of form alone; one that is not (67.5 for a count)
    # is a wrong value first: it is told so below, with its type as an aside, and no cause.
    if problem and not form and cause is None and not _not_whole(actual):
        r.update(message=problem, hint="", cause="type")
        return r
    note = "" if cause or matched else _shape_note(gid, info, actual)
    if form:  # a classic mistake's hint when it is one, else the form, in the same words
        r.update(
            message=form,
            hint=hint if cause else (note or (meta["hint"] if structural else "")),
            cause=cause or (None if structural else "form"),
        )
        return r
    if note:
        r.update(message="your answer is not the expected shape", hint=note, cause=None)
        return r
    if cause is None and got and not matched:
        for entry in info.get("factors") or ():
            if any(g == h for g, h in zip(got, entry.get("h") or ())):
                hint = (
                    f"Your answer is exactly the right value {entry['f']}: one factor of your "
                    "calculation is off (a count used once too often or left out, or a unit). "
                    + meta["hint"]
                )
                break
    message = "your answer is not the expected value"
    if k:
        message += f" to {k} significant figures"
    if problem and cause is None:
        message += "; also, " + problem.split(". ", 1)[0].replace("your answer", "it", 1)
    r.update(message=message, hint=hint, cause=cause)
    return r
