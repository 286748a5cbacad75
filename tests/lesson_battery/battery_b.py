"""Battery B: realistic learner answers to every auto-graded question of exercises 01-08.

Written by helper batB from what a learner reads (the lessons, the exercise notebooks, the
learner guide and the public helpers), without reading the self-check, its banks, the
solutions or battery A. ``WRONG`` holds realistic wrong answers, each with regular expressions
(fixed before the first run against the self-check) that recognise feedback naming its cause;
``RIGHT`` holds correct answers in unusual but legitimate forms. ``verify_b.py`` checks every
entry against independent reference implementations written from the lesson text.
"""

from __future__ import annotations

import textwrap

from .format import Right, Wrong

WRONG: list[Wrong] = []
RIGHT: list[Right] = []


def W(grade_id: str, name: str, causes, source: str, target: str | None = None) -> None:
    source = textwrap.dedent(source).strip() + "\n"
    if target is None:
        target = _first_name(source)
    WRONG.append(Wrong(grade_id, name, source, target, tuple(causes)))


def R(grade_id: str, name: str, source: str, target: str | None = None) -> None:
    source = textwrap.dedent(source).strip() + "\n"
    if target is None:
        target = _first_name(source)
    RIGHT.append(Right(grade_id, name, source, target))


def _first_name(source: str) -> str:
    """The name an entry defines: its last top-level ``def`` or, failing that, the last name
    assigned at the top level."""
    import ast

    tree = ast.parse(source)
    defs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    if defs:
        return defs[-1]
    names = [
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    ]
    return names[-1]


# Cause patterns shared by several questions.
IN_PLACE = (r"in[- ]place", r"modif", r"chang\w* (your |the |its )?input", r"\bcopy\b")
FLOAT_COUNT = (r"\bfloat\b", r"whole number", r"integer", r"//", r"\bint\b")
NOT_NUMBER = (r"\bstr(ing)?\b", r"\btext\b", r"not a number", r"a number")


# ---------------------------------------------------------------- exercise 01: one head
SC = "q01_scores"
W(
    SC,
    "scale by sqrt(d_model), the width of x",
    (r"d_model", r"width of (x|the input)", r"√\s*d_model", r"sqrt\(d_model\)"),
    """
    def attention_scores(x, w_q, w_k):
        q, k = x @ w_q, x @ w_k
        return q @ k.T / np.sqrt(x.shape[1])
""",
)
W(
    SC,
    "d_model taken from w_q.shape[0]",
    (r"d_model", r"width of (x|the input)", r"shape\[0\]", r"√\s*d_model"),
    """
    def attention_scores(x, w_q, w_k):
        d = w_q.shape[0]
        return (x @ w_q) @ (x @ w_k).T / d ** 0.5
""",
)
W(
    SC,
    "no scale at all",
    (r"scal", r"sqrt", r"√"),
    """
    def attention_scores(x, w_q, w_k):
        return (x @ w_q) @ (x @ w_k).T
""",
)
W(
    SC,
    "divides by d_k, not its square root",
    (r"square root", r"sqrt", r"√", r"by d_k\b"),
    """
    def attention_scores(x, w_q, w_k):
        q, k = x @ w_q, x @ w_k
        return q @ k.T / q.shape[1]
""",
)
W(
    SC,
    "keys times queries (transposed scores)",
    (r"transpos", r"rows?\b.*quer", r"K\s*Q", r"swap"),
    """
    def attention_scores(x, w_q, w_k):
        q, k = x @ w_q, x @ w_k
        return k @ q.T / np.sqrt(q.shape[1])
""",
)
W(
    SC,
    "forgets the projections (x x^T)",
    (r"project", r"w_q", r"w_k"),
    """
    def attention_scores(x, w_q, w_k):
        return x @ x.T / np.sqrt(w_q.shape[1])
""",
)
W(
    SC,
    "uses w_q for the keys too",
    (r"w_k", r"\bkeys?\b", r"same (weight|projection)"),
    """
    def attention_scores(x, w_q, w_k):
        q = x @ w_q
        k = x @ w_q
        return q @ k.T / np.sqrt(q.shape[-1])
""",
)
W(
    SC,
    "scale by sqrt(n), the number of tokens",
    (r"number of tokens", r"sqrt\(n\)", r"√\s*n\b", r"\bn\b.*instead"),
    """
    def attention_scores(x, w_q, w_k):
        q, k = x @ w_q, x @ w_k
        return q @ k.T / np.sqrt(len(x))
""",
)
W(
    SC,
    "multiplies by sqrt(d_k) instead of dividing",
    (r"multipl", r"divid", r"invert", r"reciprocal", r"1\s*/\s*√"),
    """
    def attention_scores(x, w_q, w_k):
        q, k = x @ w_q, x @ w_k
        return q @ k.T * np.sqrt(q.shape[1])
""",
)
W(
    SC,
    "returns the softmax weights instead of the scores",
    (r"softmax", r"weights? instead", r"not the weights"),
    """
    def attention_scores(x, w_q, w_k):
        s = (x @ w_q) @ (x @ w_k).T / np.sqrt(w_q.shape[1])
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
""",
)
W(
    SC,
    "scales the weights in place (w_q /= sqrt(d_k))",
    IN_PLACE,
    """
    def attention_scores(x, w_q, w_k):
        w_q /= np.sqrt(w_q.shape[1])
        return (x @ w_q) @ (x @ w_k).T
""",
)
W(
    SC,
    "elementwise product summed over features",
    (r"element\W?wise", r"matrix product", r"\bshape\b", r"@"),
    """
    def attention_scores(x, w_q, w_k):
        q, k = x @ w_q, x @ w_k
        return (q * k).sum(axis=1) / np.sqrt(q.shape[1])
""",
)

SM = "q01_softmax"
W(
    SM,
    "softmax over axis 0 (over the queries)",
    (r"axis", r"column", r"over the quer", r"rows? (do not|don't) sum"),
    """
    def softmax_over_keys(scores):
        e = np.exp(scores - scores.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)
""",
)
W(
    SM,
    "no max subtracted: overflows at 800",
    (r"overflow", r"\bmax", r"\bnan\b", r"stab", r"\binf"),
    """
    def softmax_over_keys(scores):
        e = np.exp(scores)
        return e / e.sum(axis=1, keepdims=True)
""",
)
W(
    SM,
    "subtracts the global max, not each row's",
    (r"each row", r"per.row", r"row'?s max", r"global", r"whole (matrix|array)", r"underflow"),
    """
    def softmax_over_keys(scores):
        e = np.exp(scores - np.max(scores))
        return e / e.sum(axis=1, keepdims=True)
""",
)
W(
    SM,
    "row max without keepdims (broadcasts along the wrong axis)",
    (r"keepdims", r"broadcast", r"each row", r"\[:, None\]"),
    """
    def softmax_over_keys(scores):
        e = np.exp(scores - scores.max(axis=1))
        return e / e.sum(axis=1, keepdims=True)
""",
)
W(
    SM,
    "row sum without keepdims",
    (r"keepdims", r"broadcast", r"\[:, None\]", r"row sum"),
    """
    def softmax_over_keys(scores):
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.sum(axis=1)
""",
)
W(
    SM,
    "normalises by the sum of the whole matrix",
    (r"each row", r"along the row", r"whole (matrix|array)", r"all entries", r"sum to 1"),
    """
    def softmax_over_keys(scores):
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.sum()
""",
)
W(
    SM,
    "calls the course's softmax",
    (r"course", r"mha_helpers", r"helper", r"own", r"not allowed", r"off limits"),
    """
    from mha_helpers import softmax

    def softmax_over_keys(scores):
        return softmax(scores, axis=-1)
""",
)
W(
    SM,
    "turns -inf into 0 before the softmax",
    (r"-\s*inf", r"blocked", r"\bmask", r"weight (exactly )?0"),
    """
    def softmax_over_keys(scores):
        s = np.where(np.isinf(scores), 0.0, scores)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
""",
)
W(
    SM,
    "subtracts the max in place",
    IN_PLACE,
    """
    def softmax_over_keys(scores):
        scores -= scores.max(axis=1, keepdims=True)
        e = np.exp(scores)
        return e / e.sum(axis=1, keepdims=True)
""",
)
W(
    SM,
    "exponentiates but never normalises",
    (r"normali", r"sum to 1", r"divid", r"row sum"),
    """
    def softmax_over_keys(scores):
        return np.exp(scores - scores.max(axis=1, keepdims=True))
""",
)
W(
    SM,
    "subtracts the row minimum instead of the maximum",
    (r"\bmax", r"\bmin", r"overflow", r"\bnan\b"),
    """
    def softmax_over_keys(scores):
        s = scores - scores.min(axis=1, keepdims=True)
        e = np.exp(s)
        return e / e.sum(axis=1, keepdims=True)
""",
)
W(
    SM,
    "normalises by the row max instead of the row sum",
    (r"row sum", r"sum to 1", r"normali", r"divid"),
    """
    def softmax_over_keys(scores):
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.max(axis=1, keepdims=True)
""",
)

MA = "q01_masked_attention"
_SOFT = """
    def softmax_over_keys(scores):
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
"""
W(
    MA,
    "mask polarity inverted (True blocks)",
    (
        r"polarity",
        r"invert",
        r"opposite",
        r"True\W+(=|means)?\W*(may|allowed)",
        r"~\s*mask",
        r"blocks? the allowed",
    ),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        s = q @ k.T / np.sqrt(q.shape[1])
        s = np.where(mask, -np.inf, s)
        w = softmax_over_keys(s)
        return w @ v, w
""",
)
W(
    MA,
    "mask applied after the softmax (no renormalising)",
    (r"after the softmax", r"before the softmax", r"renormali", r"sum to 1"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        w = softmax_over_keys(q @ k.T / np.sqrt(q.shape[1])) * mask
        return w @ v, w
""",
)
W(
    MA,
    "multiplies the scores by the mask (0 instead of -inf)",
    (r"-\s*inf", r"multipl", r"\bzero\b", r"0 (is not|instead)"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        s = q @ k.T / np.sqrt(q.shape[1]) * mask
        w = softmax_over_keys(s)
        return w @ v, w
""",
)
W(
    MA,
    "scale by sqrt(d_v)",
    (r"d_v", r"width of (a |the )?values?", r"wrong width"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        s = q @ k.T / np.sqrt(v.shape[1])
        w = softmax_over_keys(np.where(mask, s, -np.inf))
        return w @ v, w
""",
)
W(
    MA,
    "no scale",
    (r"scal", r"sqrt", r"√"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        w = softmax_over_keys(np.where(mask, q @ k.T, -np.inf))
        return w @ v, w
""",
)
W(
    MA,
    "returns (weights, output)",
    (r"order", r"swap", r"\(output, weights\)", r"tuple"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        w = softmax_over_keys(np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf))
        return w, w @ v
""",
)
W(
    MA,
    "softmax over the queries (axis 0)",
    (r"axis", r"column", r"over the keys", r"over the quer"),
    """
    def masked_attention(q, k, v, mask):
        s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
        e = np.exp(s - s.max(axis=0, keepdims=True))
        w = e / e.sum(axis=0, keepdims=True)
        return w @ v, w
""",
)
W(
    MA,
    "if mask: on an array",
    (r"if mask", r"truth value", r"ambiguous", r"np\.where"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        s = q @ k.T / np.sqrt(q.shape[1])
        if mask:
            s = np.where(mask, s, -np.inf)
        w = softmax_over_keys(s)
        return w @ v, w
""",
)
W(
    MA,
    "adds the boolean mask to the scores",
    (r"\badd", r"float mask", r"-\s*inf", r"boolean"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        s = q @ k.T / np.sqrt(q.shape[1]) + mask
        w = softmax_over_keys(s)
        return w @ v, w
""",
)
W(
    MA,
    "ignores the mask",
    (r"\bmask", r"ignor", r"blocked"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        w = softmax_over_keys(q @ k.T / np.sqrt(q.shape[1]))
        return w @ v, w
""",
)
W(
    MA,
    "scales q in place",
    IN_PLACE,
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        q /= np.sqrt(q.shape[1])
        w = softmax_over_keys(np.where(mask, q @ k.T, -np.inf))
        return w @ v, w
""",
)
W(
    MA,
    "calls the course's scaled_dot_product_attention",
    (
        r"course",
        r"mha_helpers",
        r"scaled_dot_product_attention",
        r"helper",
        r"not allowed",
        r"off limits",
    ),
    """
    from mha_helpers import scaled_dot_product_attention

    def masked_attention(q, k, v, mask):
        return scaled_dot_product_attention(q, k, v, mask=mask)
""",
)
W(
    MA,
    "scores transposed (k q^T)",
    (r"transpos", r"rows?\b.*quer", r"swap", r"K\s*Q"),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        s = k @ q.T / np.sqrt(q.shape[1])
        w = softmax_over_keys(np.where(mask, s, -np.inf))
        return w @ v, w
""",
)
W(
    MA,
    "sets -inf where the mask is True",
    (
        r"polarity",
        r"invert",
        r"opposite",
        r"True\W+(=|means)?\W*(may|allowed)",
        r"blocks? the allowed",
    ),
    _SOFT
    + """
    def masked_attention(q, k, v, mask):
        s = q @ k.T / np.sqrt(q.shape[1])
        s[mask.astype(float) == 1] = -np.inf
        w = softmax_over_keys(s)
        return w @ v, w
""",
)

R(
    SC,
    "einsum, width from w_k",
    """
    def attention_scores(x, w_q, w_k):
        q, k = x @ w_q, x @ w_k
        return np.einsum("id,jd->ij", q, k) / np.sqrt(w_k.shape[1])
""",
)
R(
    SC,
    "queries scaled first, power -0.5",
    """
    def attention_scores(x, w_q, w_k):
        q = (x @ w_q) * q_width(w_q) ** -0.5
        return q @ (x @ w_k).T

    def q_width(w):
        return w.shape[-1]
""",
    "attention_scores",
)
R(
    SM,
    "log-sum-exp form",
    """
    def softmax_over_keys(scores):
        m = np.max(scores, axis=-1, keepdims=True)
        lse = m + np.log(np.sum(np.exp(scores - m), axis=-1, keepdims=True))
        return np.exp(scores - lse)
""",
)
R(
    SM,
    "one row at a time",
    """
    def softmax_over_keys(scores):
        out = np.empty(np.shape(scores))
        for i, row in enumerate(np.asarray(scores, dtype=float)):
            e = np.exp(row - row.max())
            out[i] = e / e.sum()
        return out
""",
)
R(
    SM,
    "transposes, normalises columns, transposes back",
    """
    def softmax_over_keys(scores):
        t = np.asarray(scores).T
        e = np.exp(t - t.max(axis=0))
        return (e / e.sum(axis=0)).T
""",
)
R(
    MA,
    "fills blocked scores with -1e9",
    """
    def masked_attention(q, k, v, mask):
        s = q @ k.T / np.sqrt(k.shape[1])
        s = np.where(mask, s, -1e9)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        w = e / e.sum(axis=1, keepdims=True)
        return w @ v, w
""",
)
R(
    MA,
    "boolean indexing on the fresh score array, own softmax",
    """
    def softmax_over_keys(scores):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def masked_attention(q, k, v, mask):
        s = q @ k.T / q.shape[-1] ** 0.5
        s[~mask] = -np.inf
        w = softmax_over_keys(s)
        return w @ v, w
""",
    "masked_attention",
)
R(
    MA,
    "np.where(~mask, -inf, s) and einsum for the values",
    """
    def masked_attention(q, k, v, mask):
        s = np.where(~np.asarray(mask, dtype=bool), -np.inf, q @ k.T / np.sqrt(q.shape[1]))
        e = np.exp(s - np.max(s, axis=1)[:, None])
        w = e / np.sum(e, axis=1)[:, None]
        return np.einsum("qk,kd->qd", w, v), w
""",
)


# ---------------------------------------------------------------- exercise 02: heads
WS = "q02_weights_shape"
W(
    WS,
    "one head's matrix only",
    (r"all heads", r"head axis", r"every head", r"one \(n_q, n_k\) matrix per head", r"\bh\b"),
    "weights_shape = (5, 5)",
    "weights_shape",
)
W(
    WS,
    "token axis before the head axis",
    (r"head axis first", r"order", r"axis", r"convention"),
    "weights_shape = (5, 2, 5)",
    "weights_shape",
)
W(
    WS,
    "keys replaced by d_head",
    (r"d_head", r"n_k", r"keys", r"tokens"),
    "weights_shape = (2, 5, 4)",
    "weights_shape",
)
W(
    WS,
    "head axis last",
    (r"head axis first", r"order", r"axis", r"convention"),
    "weights_shape = (5, 5, 2)",
    "weights_shape",
)
W(
    WS,
    "the number of entries instead of the shape",
    (r"shape", r"tuple", r"entries"),
    "weights_shape = 2 * 5 * 5",
    "weights_shape",
)
W(
    WS,
    "the shape as text",
    (r"\bstr(ing)?\b", r"text", r"tuple"),
    "weights_shape = '(2, 5, 5)'",
    "weights_shape",
)
W(
    WS,
    "(h, d_head, d_head)",
    (r"d_head", r"tokens", r"n_q", r"n_k"),
    "weights_shape = (2, 4, 4)",
    "weights_shape",
)
W(
    WS,
    "d_model heads",
    (r"\bheads?\b", r"\bh\b", r"d_model"),
    "weights_shape = (8, 5, 5)",
    "weights_shape",
)

SP = "q02_split_heads"
W(
    SP,
    "bare reshape(num_heads, n, d_head)",
    (r"reshape", r"bare", r"mix", r"transpos", r"tokens? into heads"),
    """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(num_heads, n, d_model // num_heads)
""",
)
W(
    SP,
    "reshape only, no transpose ((n, h, d_head))",
    (r"transpos", r"head axis first", r"\bshape\b", r"axes"),
    """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(n, num_heads, d_model // num_heads)
""",
)
W(
    SP,
    "interleaved features (reshape(n, d_head, h))",
    (r"interleav", r"strid", r"contiguous", r"consecutive", r"slice", r"i \* d_head"),
    """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(n, d_model // num_heads, num_heads).transpose(2, 0, 1)
""",
)
W(
    SP,
    "d_head = d_model / num_heads (a float)",
    (r"\bfloat\b", r"//", r"integer", r"\bint\b"),
    """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        d_head = d_model / num_heads
        return x.reshape(n, num_heads, d_head).transpose(1, 0, 2)
""",
)
W(
    SP,
    "transpose(1, 2, 0): (h, d_head, n)",
    (r"transpos", r"axes", r"\bshape\b", r"\(num_heads, n, d_head\)"),
    """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 2, 0)
""",
)
W(
    SP,
    "np.split along the token axis",
    (r"axis", r"tokens?", r"features?", r"rows"),
    """
    def split_heads(x, num_heads):
        return np.stack(np.split(x, num_heads, axis=0))
""",
)
W(
    SP,
    "slices start at i instead of i * d_head",
    (r"slice", r"i \* d_head", r"offset", r"start", r"overlap"),
    """
    def split_heads(x, num_heads):
        d_head = x.shape[1] // num_heads
        return np.stack([x[:, i:i + d_head] for i in range(num_heads)])
""",
)
W(
    SP,
    "calls the course's split_heads",
    (r"course", r"mha_helpers", r"helper", r"not allowed", r"off limits", r"own"),
    """
    import mha_helpers

    def split_heads(x, num_heads):
        return mha_helpers.split_heads(x, num_heads)
""",
)
W(
    SP,
    "returns a list of heads",
    (r"\blist\b", r"np\.stack", r"array", r"\bshape\b"),
    """
    def split_heads(x, num_heads):
        d_head = x.shape[1] // num_heads
        return [x[:, i * d_head:(i + 1) * d_head] for i in range(num_heads)]
""",
)
W(
    SP,
    "transposes x, then a bare reshape",
    (r"transpos", r"reshape", r"mix", r"bare"),
    """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        d_head = d_model // num_heads
        return x.T.reshape(num_heads, n, d_head)
""",
)

MH = "q02_merge_heads"
W(
    MH,
    "bare reshape(n, h * d_head)",
    (r"reshape", r"bare", r"transpos", r"mix"),
    """
    def merge_heads(x):
        h, n, d_head = x.shape
        return x.reshape(n, h * d_head)
""",
)
W(
    MH,
    "concatenates along the token axis",
    (r"axis", r"feature", r"side by side", r"\bshape\b"),
    """
    def merge_heads(x):
        return np.concatenate(list(x), axis=0)
""",
)
W(
    MH,
    "sums the heads",
    (r"\bsum", r"\badd", r"\+", r"join", r"concat"),
    """
    def merge_heads(x):
        return x.sum(axis=0)
""",
)
W(
    MH,
    "averages the heads",
    (r"\bmean\b", r"averag"),
    """
    def merge_heads(x):
        return np.mean(x, axis=0)
""",
)
W(
    MH,
    "interleaves the heads (transpose(1, 2, 0))",
    (r"interleav", r"order", r"head 0", r"transpos"),
    """
    def merge_heads(x):
        h, n, d_head = x.shape
        return x.transpose(1, 2, 0).reshape(n, h * d_head)
""",
)
W(
    MH,
    "calls the course's merge_heads",
    (r"course", r"mha_helpers", r"helper", r"not allowed", r"off limits", r"own"),
    """
    from mha_helpers import merge_heads as course_merge

    def merge_heads(x):
        return course_merge(x)
""",
)
W(
    MH,
    "transposes but never reshapes",
    (r"reshape", r"\bshape\b", r"join"),
    """
    def merge_heads(x):
        return x.transpose(1, 0, 2)
""",
)
W(
    MH,
    "hard-codes two heads",
    (r"two heads", r"every head", r"all heads", r"hard", r"number of heads"),
    """
    def merge_heads(x):
        return np.concatenate([x[0], x[1]], axis=1)
""",
)
W(
    MH,
    "reshape(h * d_head, n).T",
    (r"reshape", r"transpos", r"mix"),
    """
    def merge_heads(x):
        h, n, d_head = x.shape
        return x.reshape(h * d_head, n).T
""",
)

PH = "q02_per_head_attention"
_SPLIT = """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 0, 2)

    def softmax(s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
"""
W(
    PH,
    "scale by sqrt(d_model)",
    (r"d_model", r"wrong width", r"√\s*d_model", r"head'?s (own )?width"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[1]))
        return w @ v, w
""",
)
W(
    PH,
    "bare reshape to split",
    (r"reshape", r"bare", r"mix", r"transpos"),
    """
    def softmax(s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        n, d = x.shape
        dh = d // num_heads
        q, k, v = ((x @ w).reshape(num_heads, n, dh) for w in (w_q, w_k, w_v))
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(dh))
        return w @ v, w
""",
)
W(
    PH,
    "softmax over the queries (axis 1)",
    (r"axis", r"over the quer", r"column", r"over the keys"),
    """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 0, 2)

    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(axis=1, keepdims=True))
        w = e / e.sum(axis=1, keepdims=True)
        return w @ v, w
""",
)
W(
    PH,
    "returns (weights, outputs)",
    (r"order", r"swap", r"tuple", r"\(outputs, weights\)"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
        return w, w @ v
""",
)
W(
    PH,
    "no scale",
    (r"scal", r"sqrt", r"√"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        w = softmax(q @ k.transpose(0, 2, 1))
        return w @ v, w
""",
)
W(
    PH,
    "keys projected with w_q",
    (r"w_k", r"\bkeys?\b", r"project"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_q, w_v))
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
        return w @ v, w
""",
)
W(
    PH,
    "values not projected (x split directly)",
    (r"w_v", r"values?", r"project"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k = split_heads(x @ w_q, num_heads), split_heads(x @ w_k, num_heads)
        v = split_heads(x, num_heads)
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
        return w @ v, w
""",
)
W(
    PH,
    "adds a causal mask the question does not ask for",
    (r"\bmask", r"causal"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        n = len(x)
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
        w = softmax(s)
        return w @ v, w
""",
)
W(
    PH,
    "returns the merged outputs (n, d_model)",
    (r"merge", r"\bshape\b", r"\(h, n, d_head\)"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
        o = w @ v
        return o.transpose(1, 0, 2).reshape(len(x), -1), w
""",
)
W(
    PH,
    "scores k q^T in every head",
    (r"transpos", r"rows?\b.*quer", r"swap", r"K\s*Q"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        w = softmax(k @ q.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
        return w @ v, w
""",
)
W(
    PH,
    "scale by sqrt(num_heads)",
    (r"num_heads", r"wrong width", r"√\s*h\b", r"d_head"),
    _SPLIT
    + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(num_heads))
        return w @ v, w
""",
)
W(
    PH,
    "interleaved split",
    (r"interleav", r"strid", r"consecutive", r"slice", r"order"),
    """
    def softmax(s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        n, d = x.shape
        dh = d // num_heads
        q, k, v = ((x @ w).reshape(n, dh, num_heads).transpose(2, 0, 1) for w in (w_q, w_k, w_v))
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(dh))
        return w @ v, w
""",
)
W(
    PH,
    "calls the course's scaled_dot_product_attention",
    (
        r"course",
        r"mha_helpers",
        r"scaled_dot_product_attention",
        r"helper",
        r"not allowed",
        r"off limits",
    ),
    """
    from mha_helpers import scaled_dot_product_attention, split_heads

    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        return scaled_dot_product_attention(q, k, v)
""",
)

FL = "q02_full_layer"
_PIECES = """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 0, 2)

    def merge_heads(x):
        h, n, d_head = x.shape
        return x.transpose(1, 0, 2).reshape(n, h * d_head)

    def softmax(s, axis=-1):
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
"""
W(
    FL,
    "forgets the output projection w_o",
    (r"w_o", r"output projection"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            out.append(merge_heads(softmax(s) @ v))
        return np.stack(out)
""",
)
W(
    FL,
    "mask polarity inverted",
    (r"polarity", r"invert", r"opposite", r"True\W+(=|means)?\W*(may|allowed)", r"~\s*mask"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, -np.inf, s)
            out.append(merge_heads(softmax(s) @ v) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "ignores the mask",
    (r"\bmask", r"ignor", r"causal"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            out.append(merge_heads(softmax(s) @ v) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "scale by sqrt(d_model)",
    (r"d_model", r"wrong width", r"√\s*d_model", r"head'?s (own )?width"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(seq.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            out.append(merge_heads(softmax(s) @ v) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "bare reshapes to split and merge",
    (r"reshape", r"bare", r"mix", r"transpos"),
    """
    def softmax(s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        b, n, d = x.shape
        dh = d // num_heads
        out = []
        for seq in x:
            q, k, v = ((seq @ w).reshape(num_heads, n, dh) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            out.append((softmax(s) @ v).reshape(n, d) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "attends across the whole batch (sequences flattened together)",
    (r"batch", r"sequence", r"within", r"across", r"flatten"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        b, n, d = x.shape
        flat = x.reshape(b * n, d)
        q, k, v = (split_heads(flat @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(np.kron(np.ones((b, b), dtype=bool), mask), s, -np.inf)
        return (merge_heads(softmax(s) @ v) @ w_o).reshape(b, n, d)
""",
)
W(
    FL,
    "mask multiplies the weights after the softmax",
    (r"after the softmax", r"before the softmax", r"renormali", r"sum to 1"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
            if mask is not None:
                w = w * mask
            out.append(merge_heads(w @ v) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "mask multiplies the scores (0 instead of -inf)",
    (r"-\s*inf", r"multipl", r"\bzero\b", r"0 (is not|instead)"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = s * mask
            out.append(merge_heads(softmax(s) @ v) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "if mask: instead of if mask is not None",
    (r"if mask", r"truth value", r"ambiguous", r"is not None"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask:
                s = np.where(mask, s, -np.inf)
            out.append(merge_heads(softmax(s) @ v) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "softmax over the queries",
    (r"axis", r"over the quer", r"column", r"over the keys"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            out.append(merge_heads(softmax(s, axis=-2) @ v) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "calls the course's multi_head_attention",
    (r"multi_head_attention", r"course", r"helper", r"not allowed", r"off limits", r"scores 0"),
    """
    from mha_helpers import multi_head_attention

    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        return multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=num_heads, mask=mask)
""",
)
W(
    FL,
    "mask transposed",
    (r"transpos", r"mask\.T", r"rows?\b.*quer", r"causal"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask.T, s, -np.inf)
            out.append(merge_heads(softmax(s) @ v) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "merges by summing the heads, w_o applied to the sum",
    (r"\bsum", r"\badd", r"concat", r"join", r"merge"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            o = (softmax(s) @ v).sum(axis=0)
            out.append(np.tile(o, num_heads) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "interleaved merge",
    (r"interleav", r"order", r"head 0", r"transpos"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        out = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            o = softmax(s) @ v
            out.append(o.transpose(1, 2, 0).reshape(len(seq), -1) @ w_o)
        return np.stack(out)
""",
)
W(
    FL,
    "only the first sequence of the batch",
    (r"batch", r"every sequence", r"each sequence", r"\bshape\b"),
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        seq = x[0]
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        return (merge_heads(softmax(s) @ v) @ w_o)[None]
""",
)

R(WS, "the shape of a zeros array", "weights_shape = np.zeros((2, 5, 5)).shape", "weights_shape")
R(
    WS,
    "NumPy integers in a tuple",
    "weights_shape = (np.int64(2), np.int64(5), np.int64(5))",
    "weights_shape",
)
R(
    WS,
    "tuple() of a list, computed from h and n",
    "h, n = 2, 5\nweights_shape = tuple([h, n, n])",
    "weights_shape",
)
R(
    SP,
    "np.split along the features, then np.stack",
    """
    def split_heads(x, num_heads):
        return np.stack(np.split(np.asarray(x), num_heads, axis=1))
""",
)
R(
    SP,
    "reshape then swapaxes",
    """
    def split_heads(x, num_heads):
        n = x.shape[0]
        return x.reshape(n, num_heads, -1).swapaxes(0, 1)
""",
)
R(
    SP,
    "a loop filling an empty array",
    """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        d_head = d_model // num_heads
        out = np.empty((num_heads, n, d_head), dtype=x.dtype)
        for i in range(num_heads):
            out[i] = x[:, i * d_head:(i + 1) * d_head]
        return out
""",
)
R(
    MH,
    "np.hstack of the heads",
    """
    def merge_heads(x):
        return np.hstack(list(x))
""",
)
R(
    MH,
    "np.concatenate on the last axis",
    """
    def merge_heads(x):
        return np.concatenate([head for head in x], axis=-1)
""",
)
R(
    MH,
    "moveaxis then reshape with -1",
    """
    def merge_heads(x):
        x = np.asarray(x)
        return np.moveaxis(x, 0, 1).reshape(x.shape[1], -1)
""",
)
R(
    PH,
    "a loop over heads with column slices, stacked",
    """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        dh = x.shape[1] // num_heads
        outs, ws = [], []
        for i in range(num_heads):
            cols = slice(i * dh, (i + 1) * dh)
            s = q[:, cols] @ k[:, cols].T / np.sqrt(dh)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            w = e / e.sum(axis=1, keepdims=True)
            outs.append(w @ v[:, cols])
            ws.append(w)
        return np.stack(outs), np.stack(ws)
""",
)
R(
    PH,
    "einsum throughout",
    """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        n, d = x.shape
        dh = d // num_heads
        q, k, v = (np.einsum("nd,de->ne", x, w).reshape(n, num_heads, dh) for w in (w_q, w_k, w_v))
        s = np.einsum("qhd,khd->hqk", q, k) / dh ** 0.5
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        return np.einsum("hqk,khd->hqd", w, v), w
""",
)
R(
    FL,
    "batched with a leading axis, default mask of ones",
    """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        b, n, d = x.shape
        dh = d // num_heads
        if mask is None:
            mask = np.ones((n, n), dtype=bool)
        q, k, v = ((x @ w).reshape(b, n, num_heads, dh).transpose(0, 2, 1, 3) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
        s = np.where(mask[None, None], s, -np.inf)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        o = (e / e.sum(axis=-1, keepdims=True)) @ v
        return o.transpose(0, 2, 1, 3).reshape(b, n, d) @ w_o
""",
)
R(
    FL,
    "sum over heads of o_i @ w_o's block (no merge)",
    """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        b, n, d = x.shape
        dh = d // num_heads
        y = np.zeros((b, n, w_o.shape[1]))
        for s_i, seq in enumerate(x):
            q, k, v = seq @ w_q, seq @ w_k, seq @ w_v
            for h in range(num_heads):
                c = slice(h * dh, (h + 1) * dh)
                s = q[:, c] @ k[:, c].T / np.sqrt(dh)
                if mask is not None:
                    s[~mask] = -np.inf
                a = np.exp(s - s.max(axis=1, keepdims=True))
                a /= a.sum(axis=1, keepdims=True)
                y[s_i] += (a @ v[:, c]) @ w_o[c]
        return y
""",
)
R(
    FL,
    "own pieces from questions 2-4, one sequence at a time",
    _PIECES
    + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        results = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask[None, :, :], s, -np.inf)
            results.append(merge_heads(softmax(s) @ v) @ w_o)
        return np.array(results)
""",
    "multi_head_layer",
)


# ---------------------------------------------------------------- exercise 03: concat, project
DH = "q03_d_head"
W(DH, "768 / 12: a float", FLOAT_COUNT, "d_head = 768 / 12", "d_head")
W(
    DH,
    "multiplies instead of dividing",
    (r"multipl", r"divid", r"d_model\s*/\s*h", r"d_model // h"),
    "d_head = 768 * 12",
    "d_head",
)
W(
    DH,
    "divides the wrong way round",
    (r"other way", r"divid", r"invert", r"d_model\s*/\s*h", r"upside"),
    "d_head = 12 / 768",
    "d_head",
)
W(DH, "the number as text", NOT_NUMBER, "d_head = '64'", "d_head")
W(
    DH,
    "d_model itself",
    (r"divid", r"\bheads?\b", r"one head", r"d_model"),
    "d_head = 768",
    "d_head",
)
W(
    DH,
    "the square root of d_model (the scale)",
    (r"sqrt", r"square root", r"scale", r"√"),
    "d_head = 768 ** 0.5",
    "d_head",
)
W(
    DH,
    "a one-element list",
    (r"\blist\b", r"single", r"a (whole )?number", r"\bint\b"),
    "d_head = [64]",
    "d_head",
)
W(
    DH,
    "the number of heads",
    (r"\bheads?\b", r"width", r"divid", r"d_model\s*/\s*h"),
    "d_head = 12",
    "d_head",
)

IO = "q03_identity_output"
W(
    IO,
    "kept w_mix instead of the identity",
    (r"w_mix", r"identity", r"np\.eye"),
    "identity_output = [4.0, 6.0, -2.0, -2.0]",
    "identity_output",
)
W(
    IO,
    "added the heads instead of joining them",
    (r"\bsum", r"\badd", r"join", r"concat", r"four"),
    "identity_output = np.array([1.0, 2.0]) + np.array([3.0, 4.0])",
    "identity_output",
)
W(
    IO,
    "averaged the heads",
    (r"\bmean\b", r"averag", r"join", r"concat"),
    "identity_output = [2.0, 3.0]",
    "identity_output",
)
W(
    IO,
    "the identity matrix itself",
    (r"\bshape\b", r"matrix", r"four numbers", r"np\.eye"),
    "identity_output = np.eye(4)",
    "identity_output",
)
W(
    IO,
    "interleaved the heads' features",
    (r"order", r"interleav", r"head 0"),
    "identity_output = [1, 3, 2, 4]",
    "identity_output",
)
W(
    IO,
    "head 1 before head 0",
    (r"order", r"head 0", r"first"),
    "identity_output = [3, 4, 1, 2]",
    "identity_output",
)
W(IO, "the numbers as text", NOT_NUMBER, "identity_output = '1 2 3 4'", "identity_output")
W(
    IO,
    "summed everything to one number",
    (r"\bshape\b", r"four", r"\bsum", r"single"),
    "identity_output = 10.0",
    "identity_output",
)

CA = "q03_concat_vs_average"
W(
    CA,
    "a: W_O can undo the averaging",
    (r"undo", r"invert", r"lost", r"recover", r"same vector", r"different pairs", r"cannot"),
    "concat_vs_average = 'a'",
    "concat_vs_average",
)
W(
    CA,
    "c: averaging only shrinks by h",
    (r"shrink", r"factor", r"multipl\w* by h", r"scal", r"same vector", r"different pairs"),
    "concat_vs_average = 'c'",
    "concat_vs_average",
)
W(
    CA,
    "d: the weights of all heads must sum to one",
    (r"sum to (one|1)", r"weights", r"each head'?s", r"per head"),
    "concat_vs_average = 'd'",
    "concat_vs_average",
)
W(
    CA,
    "the letter in a list",
    (r"\bstr(ing)?\b", r"\blist\b", r"letter"),
    "concat_vs_average = ['b']",
    "concat_vs_average",
)
W(
    CA,
    "two letters",
    (r"one letter", r"single", r"one of", r"only one"),
    "concat_vs_average = 'bd'",
    "concat_vs_average",
)
W(
    CA,
    "the option's index as a number",
    (r"\bstr(ing)?\b", r"letter", r"text"),
    "concat_vs_average = 1",
    "concat_vs_average",
)
W(
    CA,
    "a letter that is not an option",
    (r"one of", r"a, b, c", r"\ba\b.*\bd\b", r"letter", r"option"),
    "concat_vs_average = 'e'",
    "concat_vs_average",
)

CP = "q03_concat_project"
W(
    CP,
    "adds the heads instead of joining them",
    (r"\bsum", r"\badd", r"\+", r"join", r"concat", r"side by side"),
    """
    def concat_project(head_outputs, w_o):
        return np.sum(head_outputs, axis=0) @ w_o[: np.shape(head_outputs)[-1]]
""",
)
W(
    CP,
    "bare reshape of the (h, n, d_head) array",
    (r"reshape", r"bare", r"transpos", r"mix"),
    """
    def concat_project(head_outputs, w_o):
        ho = np.asarray(head_outputs)
        h, n, d_head = ho.shape
        return ho.reshape(n, h * d_head) @ w_o
""",
)
W(
    CP,
    "joins along the token axis",
    (r"axis", r"feature", r"side by side", r"\bshape\b"),
    """
    def concat_project(head_outputs, w_o):
        joined = np.concatenate(list(head_outputs), axis=0)
        return joined.reshape(-1, w_o.shape[0]) @ w_o
""",
)
W(
    CP,
    "forgets to project",
    (r"w_o", r"project"),
    """
    def concat_project(head_outputs, w_o):
        return np.concatenate(list(head_outputs), axis=-1)
""",
)
W(
    CP,
    "multiplies by w_o.T",
    (r"transpos", r"w_o\.T", r"\bshape\b"),
    """
    def concat_project(head_outputs, w_o):
        return np.concatenate(list(head_outputs), axis=-1) @ w_o.T
""",
)
W(
    CP,
    "calls the course's merge_heads",
    (r"merge_heads", r"course", r"helper", r"not allowed", r"off limits", r"scores 0"),
    """
    from mha_helpers import merge_heads

    def concat_project(head_outputs, w_o):
        return merge_heads(np.asarray(head_outputs)) @ w_o
""",
)
W(
    CP,
    "averages the heads, projects with the first block",
    (r"\bmean\b", r"averag", r"join", r"concat"),
    """
    def concat_project(head_outputs, w_o):
        avg = np.mean(head_outputs, axis=0)
        return avg @ w_o[: avg.shape[1]]
""",
)
W(
    CP,
    "interleaves the heads (stack on the last axis, reshape)",
    (r"interleav", r"order", r"head 0"),
    """
    def concat_project(head_outputs, w_o):
        stacked = np.stack(list(head_outputs), axis=-1)
        return stacked.reshape(stacked.shape[0], -1) @ w_o
""",
)
W(
    CP,
    "works for an array, not for a list",
    (r"\blist\b", r"np\.asarray", r"array", r"transpose"),
    """
    def concat_project(head_outputs, w_o):
        h, n, d_head = head_outputs.shape
        return head_outputs.transpose(1, 0, 2).reshape(n, h * d_head) @ w_o
""",
)
W(
    CP,
    "assumes d_model == h * d_head",
    (r"d_model", r"need not", r"h \* d_head", r"\bshape\b"),
    """
    def concat_project(head_outputs, w_o):
        joined = np.concatenate(list(head_outputs), axis=-1)
        out = np.zeros_like(joined)
        out[:] = joined @ w_o
        return out
""",
)
W(
    CP,
    "hard-codes two heads",
    (r"two heads", r"every head", r"all heads", r"hard", r"number of heads"),
    """
    def concat_project(head_outputs, w_o):
        return np.concatenate([head_outputs[0], head_outputs[1]], axis=1) @ w_o
""",
)
W(
    CP,
    "w_o @ joined.T, transposed back",
    (r"transpos", r"order", r"w_o @"),
    """
    def concat_project(head_outputs, w_o):
        joined = np.concatenate(list(head_outputs), axis=-1)
        return (w_o @ joined.T).T
""",
)

R(DH, "floor division", "d_head = 768 // 12", "d_head")
R(DH, "int() of the division", "d_head = int(768 / 12)", "d_head")
R(DH, "a NumPy integer", "d_head = np.int64(768) // np.int64(12)", "d_head")
R(IO, "a list of ints", "identity_output = [1, 2, 3, 4]", "identity_output")
R(
    IO,
    "computed with np.eye",
    "joined = np.concatenate([np.array([1.0, 2.0]), np.array([3.0, 4.0])])\nidentity_output = joined @ np.eye(4)",
    "identity_output",
)
R(IO, "a float array", "identity_output = np.array([1.0, 2.0, 3.0, 4.0])", "identity_output")
R(CA, "upper-case letter", "concat_vs_average = 'B'", "concat_vs_average")
R(CA, "letter with surrounding spaces", "concat_vs_average = ' b '", "concat_vs_average")
R(
    CP,
    "np.hstack of the list",
    """
    def concat_project(head_outputs, w_o):
        return np.hstack(list(head_outputs)) @ w_o
""",
)
R(
    CP,
    "sum over heads of o_i @ W_O block",
    """
    def concat_project(head_outputs, w_o):
        d_head = np.shape(head_outputs[0])[-1]
        return sum(o @ w_o[i * d_head:(i + 1) * d_head] for i, o in enumerate(head_outputs))
""",
)
R(
    CP,
    "einsum on the stacked heads",
    """
    def concat_project(head_outputs, w_o):
        ho = np.asarray(head_outputs, dtype=float)
        h, n, dh = ho.shape
        return np.einsum("hnd,hde->ne", ho, w_o.reshape(h, dh, -1))
""",
)


# ---------------------------------------------------------------- exercise 04: cost
PA = "q04_params"
# The question (rewritten): count_params(d_model, num_heads, bias), d_head = d_model // num_heads,
# and num_heads need not divide d_model: the heads together are num_heads * d_head wide, which
# can be less than d_model. Several slips below are right only when num_heads divides d_model.
NARROW = (
    r"divide",
    r"num_heads \* d_head",
    r"narrower",
    r"less than d_model",
    r"remainder",
    r"floor",
)
W(
    PA,
    "4 d_model^2 whether or not num_heads divides d_model",
    NARROW,
    """
    def count_params(d_model, num_heads, bias):
        return 4 * d_model * d_model + (4 * d_model if bias else 0)
""",
)
W(
    PA,
    "forgets the biases",
    (r"bias",),
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        return 4 * d_model * num_heads * d_head
""",
)
W(
    PA,
    "counts the biases even when bias is False",
    (r"bias",),
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        return 4 * d_model * num_heads * d_head + 3 * num_heads * d_head + d_model
""",
)
W(
    PA,
    "w_o's bias counted at the heads' width",
    (
        r"bias\w*.*(w_o|output)",
        r"(w_o|output)\w*.*bias",
        r"output feature",
        r"d_model biases",
    ),
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        w = 4 * d_model * num_heads * d_head
        b = 4 * num_heads * d_head
        return w + (b if bias else 0)
""",
)
W(
    PA,
    "every bias d_model wide",
    (
        r"bias\w*.*(w_q|w_k|w_v|q, k|heads|num_heads \* d_head)",
        r"(w_q|w_k|w_v)\w*.*bias",
        *NARROW,
    ),
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        w = 4 * d_model * num_heads * d_head
        return w + (4 * d_model if bias else 0)
""",
)
W(
    PA,
    "w_o taken as (d_model, d_model)",
    (r"w_o", r"output projection", *NARROW),
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        w = 3 * d_model * num_heads * d_head + d_model * d_model
        b = 3 * num_heads * d_head + d_model
        return w + (b if bias else 0)
""",
)
W(
    PA,
    "forgets w_o",
    (r"w_o", r"output projection"),
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        w = 3 * d_model * num_heads * d_head
        b = 3 * num_heads * d_head
        return w + (b if bias else 0)
""",
)
W(
    PA,
    "d_head = d_model / num_heads: a float",
    FLOAT_COUNT,
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model / num_heads
        w = 4 * d_model * num_heads * d_head
        b = 3 * num_heads * d_head + d_model
        return w + (b if bias else 0)
""",
)
W(
    PA,
    "d_head rounded to the nearest whole number",
    (r"//", r"floor", r"round", r"rounded down", *NARROW),
    """
    def count_params(d_model, num_heads, bias):
        d_head = round(d_model / num_heads)
        w = 4 * d_model * num_heads * d_head
        b = 3 * num_heads * d_head + d_model
        return w + (b if bias else 0)
""",
)
W(
    PA,
    "projection widths num_heads instead of num_heads * d_head",
    (r"d_head", r"width", r"num_heads \* d_head"),
    """
    def count_params(d_model, num_heads, bias):
        w = 4 * d_model * num_heads
        b = 3 * num_heads + d_model
        return w + (b if bias else 0)
""",
)
W(
    PA,
    "one head's projections only",
    (r"num_heads", r"every head", r"all (the )?heads", r"one head", r"per head", r"single head"),
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        w = 4 * d_model * d_head
        b = 3 * d_head + d_model
        return w + (b if bias else 0)
""",
)
W(
    PA,
    "calls the course's attention_params",
    (r"attention_params", r"course", r"helper", r"not allowed", r"flag"),
    """
    from mha_helpers import attention_params

    def count_params(d_model, num_heads, bias):
        return attention_params(d_model, num_heads, bias=bias)
""",
)
W(
    PA,
    "returns (weights, biases)",
    (r"whole number", r"\bint\b", r"tuple", r"single", r"a number"),
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        w = 4 * d_model * num_heads * d_head
        b = 3 * num_heads * d_head + d_model
        return w, (b if bias else 0)
""",
)

FP = "q04_flops"
W(
    FP,
    "multiply-adds, not FLOPs",
    (r"2 flops", r"multiply.add", r"factor (of )?2", r"twice", r"half"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 3 * n * d_model * hd + 2 * num_heads * n * n * dh + n * hd * d_model
""",
)
W(
    FP,
    "forgets the output projection",
    (r"w_o", r"output projection"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 2 * (3 * n * d_model * hd + 2 * num_heads * n * n * dh)
""",
)
W(
    FP,
    "forgets the weighted sum of the values",
    (r"weighted sum", r"\bvalues?\b", r"A\s*V", r"weights times"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 2 * (3 * n * d_model * hd + num_heads * n * n * dh + n * hd * d_model)
""",
)
W(
    FP,
    "counts the scores of one head only",
    (r"every head", r"per head", r"all heads", r"num_heads", r"\bh\b heads"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 2 * (3 * n * d_model * hd + 2 * n * n * dh + n * hd * d_model)
""",
)
W(
    FP,
    "per-head products with d_model instead of d_head",
    (r"d_head", r"per head", r"width", r"d_model"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 2 * (3 * n * d_model * hd + 2 * num_heads * n * n * d_model + n * hd * d_model)
""",
)
W(
    FP,
    "two input projections (V forgotten)",
    (r"\bv\b projection", r"three", r"q, k and v", r"w_v", r"projections"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 2 * (2 * n * d_model * hd + 2 * num_heads * n * n * dh + n * hd * d_model)
""",
)
W(
    FP,
    "d_head = d_model / num_heads: a float",
    FLOAT_COUNT,
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model / num_heads
        return 2 * (3 * n * d_model * num_heads * dh + 2 * num_heads * n * n * dh + n * num_heads * dh * d_model)
""",
)
W(
    FP,
    "counts the softmax too",
    (r"softmax",),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        mm = 2 * (3 * n * d_model * hd + 2 * num_heads * n * n * dh + n * hd * d_model)
        return mm + 3 * num_heads * n * n
""",
)
W(
    FP,
    "scores and weighted sum with one factor n",
    (r"n\^?2", r"n \* n", r"n²", r"quadratic", r"scores"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 2 * (3 * n * d_model * hd + 2 * num_heads * n * dh + n * hd * d_model)
""",
)
W(
    FP,
    "calls the course's attention_flops",
    (r"attention_flops", r"course", r"helper", r"not allowed", r"flag"),
    """
    from mha_helpers import attention_flops

    def count_flops(n, d_model, num_heads):
        return attention_flops(n, d_model, num_heads)["total"]
""",
)
W(
    FP,
    "the output projection counted once per head",
    (r"w_o", r"output projection", r"once", r"per head"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 2 * (3 * n * d_model * hd + 2 * num_heads * n * n * dh + num_heads * n * hd * d_model)
""",
)
W(
    FP,
    "one projection matrix product counted per head at full width",
    (r"d_head", r"per head", r"projections", r"num_heads"),
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        return 2 * (3 * num_heads * n * d_model * hd + 2 * num_heads * n * n * dh + n * hd * d_model)
""",
)

CH = "q04_changes_with_h"
W(
    CH,
    "everything changes",
    (r"param", r"flop", r"whatever h", r"same"),
    "changes_with_h = (True, True, True, True)",
    "changes_with_h",
)
W(
    CH,
    "the number of weights does not change",
    (r"weights", r"h \* n", r"every head", r"n \* n", r"per head"),
    "changes_with_h = (False, False, False, True)",
    "changes_with_h",
)
W(
    CH,
    "parameters change",
    (r"param", r"4 d", r"d_model\^?2", r"whatever h"),
    "changes_with_h = (True, False, True, True)",
    "changes_with_h",
)
W(
    CH,
    "FLOPs change",
    (r"flop", r"same work", r"1/h", r"whatever h"),
    "changes_with_h = (False, True, True, True)",
    "changes_with_h",
)
W(
    CH,
    "d_head does not change",
    (r"d_head", r"d_model // h", r"width"),
    "changes_with_h = (False, False, True, False)",
    "changes_with_h",
)
W(
    CH,
    "strings instead of booleans",
    (r"\bstr(ing)?\b", r"True/False", r"bool", r"text"),
    "changes_with_h = ('False', 'False', 'True', 'True')",
    "changes_with_h",
)
W(
    CH,
    "three values",
    (r"four", r"length", r"\b4\b"),
    "changes_with_h = (False, False, True)",
    "changes_with_h",
)
W(
    CH,
    "nothing changes",
    (r"weights", r"d_head", r"h \* n"),
    "changes_with_h = (False, False, False, False)",
    "changes_with_h",
)

WE = "q04_weight_entries"
W(
    WE,
    "one head's matrix",
    (r"all heads", r"\b12\b", r"every head", r"heads"),
    "weight_entries = 1024 * 1024",
    "weight_entries",
)
W(
    WE,
    "counts only the causal half",
    (r"causal", r"half", r"n\(n\s*\+\s*1\)", r"zeros", r"above the diagonal", r"whole"),
    "weight_entries = 12 * 1024 * 1025 // 2",
    "weight_entries",
)
W(
    WE,
    "d_head instead of n for the keys",
    (r"n \* n", r"n\^?2", r"n²", r"d_head", r"keys"),
    "weight_entries = 12 * 1024 * 64",
    "weight_entries",
)
W(
    WE,
    "bytes in float32 instead of entries",
    (r"bytes", r"float32", r"entries", r"\b4\b"),
    "weight_entries = 12 * 1024 * 1024 * 4",
    "weight_entries",
)
W(WE, "a float", FLOAT_COUNT, "weight_entries = 12 * 1024 ** 2 / 1", "weight_entries")
W(
    WE,
    "all 12 layers",
    (r"one layer", r"layers?"),
    "weight_entries = 12 * 12 * 1024 * 1024",
    "weight_entries",
)
W(
    WE,
    "one weight per query and head",
    (r"n \* n", r"n\^?2", r"n²", r"keys", r"square"),
    "weight_entries = 12 * 1024",
    "weight_entries",
)
W(
    WE,
    "rounded to three significant figures",
    (r"exact", r"round", r"significant", r"precis", r"whole number", r"\bfloat\b"),
    "weight_entries = 1.26e7",
    "weight_entries",
)
W(
    WE,
    "d_model instead of the heads",
    (r"heads", r"d_model", r"\b12\b"),
    "weight_entries = 768 * 1024 * 1024",
    "weight_entries",
)

R(
    PA,
    "a loop over the four projections",
    """
    def count_params(d_model, num_heads, bias):
        d_head = d_model // num_heads
        width = num_heads * d_head
        shapes = [(d_model, width), (d_model, width), (d_model, width), (width, d_model)]
        total = 0
        for rows, cols in shapes:
            total += rows * cols + (cols if bias else 0)
        return total
""",
)
R(
    PA,
    "from the sizes of zero arrays, converted with int()",
    """
    def count_params(d_model, num_heads, bias):
        dh = d_model // num_heads
        ws = [np.zeros((d_model, num_heads * dh)) for _ in range(3)]
        ws.append(np.zeros((num_heads * dh, d_model)))
        n = sum(w.size for w in ws)
        if bias:
            n += sum(w.shape[1] for w in ws)
        return int(n)
""",
)
R(
    PA,
    "the heads' width as d_model minus the remainder",
    """
    def count_params(d_model, num_heads, bias):
        width = d_model - d_model % num_heads
        return 4 * d_model * width + bias * (3 * width + d_model)
""",
)
R(
    FP,
    "sum of 2*a*b*c over a list of products",
    """
    def count_flops(n, d_model, num_heads):
        dh = d_model // num_heads
        hd = num_heads * dh
        products = [(n, d_model, hd)] * 3 + [(n, dh, n), (n, n, dh)] * num_heads + [(n, hd, d_model)]
        return sum(2 * a * b * c for a, b, c in products)
""",
)
R(
    FP,
    "NumPy integer arithmetic",
    """
    def count_flops(n, d_model, num_heads):
        n, d, h = np.int64(n), np.int64(d_model), np.int64(num_heads)
        dh = d // h
        return 2 * (3 * n * d * h * dh + 2 * h * n * n * dh + n * h * dh * d)
""",
)
R(
    CH,
    "NumPy booleans",
    "changes_with_h = tuple(np.array([False, False, True, True]))",
    "changes_with_h",
)
R(
    CH,
    "comparisons of computed quantities",
    """
    def quantities(h, d=768, n=16):
        dh = d // h
        return (4 * d * d, 8 * n * d * d + 4 * n * n * h * dh, h * n * n, dh)

    changes_with_h = tuple(a != b for a, b in zip(quantities(4), quantities(8)))
""",
    "changes_with_h",
)
R(WE, "12 * 1024**2", "weight_entries = 12 * 1024 ** 2", "weight_entries")
R(
    WE,
    "a NumPy integer from a shape",
    "weight_entries = np.prod((12, 1024, 1024))",
    "weight_entries",
)


# ---------------------------------------------------------------- exercise 05: variants
GQ = "q05_gqa"
_GQA_IMPORTS = """
    from mha_helpers import merge_heads, scaled_dot_product_attention, split_heads
"""
W(
    GQ,
    "np.tile instead of np.repeat (query head i reads KV head i % g)",
    (r"\btile", r"repeat", r"i // ", r"i % ", r"modulo", r"interleav", r"which kv head", r"group"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        q = split_heads(x @ w_q, num_heads)
        k = split_heads(x @ w_k, num_kv_heads)
        v = split_heads(x @ w_v, num_kv_heads)
        group = num_heads // num_kv_heads
        k, v = np.tile(k, (group, 1, 1)), np.tile(v, (group, 1, 1))
        return merge_heads(scaled_dot_product_attention(q, k, v)[0]) @ w_o
""",
)
W(
    GQ,
    "loop with KV head i % num_kv_heads",
    (r"i // ", r"i % ", r"modulo", r"\btile", r"repeat", r"which kv head", r"group"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        q = split_heads(x @ w_q, num_heads)
        k = split_heads(x @ w_k, num_kv_heads)
        v = split_heads(x @ w_v, num_kv_heads)
        outs = [scaled_dot_product_attention(q[i], k[i % num_kv_heads], v[i % num_kv_heads])[0]
                for i in range(num_heads)]
        return merge_heads(np.stack(outs)) @ w_o
""",
)
W(
    GQ,
    "forgets w_o",
    (r"w_o", r"output projection"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        g = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), g, axis=0)
        v = np.repeat(split_heads(x @ w_v, num_kv_heads), g, axis=0)
        return merge_heads(scaled_dot_product_attention(q, k, v)[0])
""",
)
W(
    GQ,
    "own attention scaled by sqrt(d_model)",
    (r"d_model", r"wrong width", r"√\s*d_model", r"head'?s (own )?width"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        g = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), g, axis=0)
        v = np.repeat(split_heads(x @ w_v, num_kv_heads), g, axis=0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return merge_heads((e / e.sum(axis=-1, keepdims=True)) @ v) @ w_o
""",
)
W(
    GQ,
    "splits K and V into num_heads heads",
    (r"num_kv_heads", r"kv heads", r"width", r"split"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        q = split_heads(x @ w_q, num_heads)
        k = split_heads(x @ w_k, num_heads)
        v = split_heads(x @ w_v, num_heads)
        return merge_heads(scaled_dot_product_attention(q, k, v)[0]) @ w_o
""",
)
W(
    GQ,
    "repeats K but not V",
    (r"\bv\b", r"values?", r"both", r"k and v", r"repeat"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        g = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), g, axis=0)
        v = split_heads(x @ w_v, num_kv_heads)
        return merge_heads(scaled_dot_product_attention(q, k, v)[0]) @ w_o
""",
)
W(
    GQ,
    "averages the query heads of each group",
    (r"query heads", r"num_heads", r"every query head", r"\bmean\b", r"averag"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        g = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        q = q.reshape(num_kv_heads, g, *q.shape[1:]).mean(axis=1)
        k = split_heads(x @ w_k, num_kv_heads)
        v = split_heads(x @ w_v, num_kv_heads)
        o = np.repeat(scaled_dot_product_attention(q, k, v)[0], g, axis=0)
        return merge_heads(o) @ w_o
""",
)
W(
    GQ,
    "every query head reads KV head 0",
    (r"group", r"i // ", r"kv head", r"which"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        q = split_heads(x @ w_q, num_heads)
        k = split_heads(x @ w_k, num_kv_heads)[:1]
        v = split_heads(x @ w_v, num_kv_heads)[:1]
        return merge_heads(scaled_dot_product_attention(q, k, v)[0]) @ w_o
""",
)
W(
    GQ,
    "calls the course's grouped_query_attention",
    (r"grouped_query_attention", r"course", r"helper", r"not allowed", r"flag"),
    """
    from mha_helpers import grouped_query_attention

    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        return grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads=num_heads,
                                       num_kv_heads=num_kv_heads)
""",
)
W(
    GQ,
    "repeats the KV weight columns and calls multi_head_attention",
    (r"multi_head_attention", r"course", r"helper", r"not allowed", r"flag"),
    """
    from mha_helpers import multi_head_attention

    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        d = x.shape[1]
        dh = d // num_heads
        g = num_heads // num_kv_heads
        rep = lambda w: np.repeat(w.reshape(d, num_kv_heads, dh), g, axis=1).reshape(d, num_heads * dh)
        return multi_head_attention(x, w_q, rep(w_k), rep(w_v), w_o, num_heads=num_heads)
""",
)
W(
    GQ,
    "bare reshape of K and V into heads",
    (r"reshape", r"bare", r"mix", r"transpos"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        n = x.shape[0]
        dh = x.shape[1] // num_heads
        g = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat((x @ w_k).reshape(num_kv_heads, n, dh), g, axis=0)
        v = np.repeat((x @ w_v).reshape(num_kv_heads, n, dh), g, axis=0)
        return merge_heads(scaled_dot_product_attention(q, k, v)[0]) @ w_o
""",
)
W(
    GQ,
    "adds a causal mask",
    (r"\bmask", r"causal"),
    _GQA_IMPORTS
    + """
    from mha_helpers import causal_mask

    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        g = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), g, axis=0)
        v = np.repeat(split_heads(x @ w_v, num_kv_heads), g, axis=0)
        return merge_heads(scaled_dot_product_attention(q, k, v, mask=causal_mask(len(x)))[0]) @ w_o
""",
)
W(
    GQ,
    "group = num_kv_heads // num_heads",
    (r"group", r"num_heads // num_kv_heads", r"zero", r"divid"),
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        group = num_kv_heads // num_heads
        q = split_heads(x @ w_q, num_heads)
        k = split_heads(x @ w_k, num_kv_heads)
        v = split_heads(x @ w_v, num_kv_heads)
        outs = [scaled_dot_product_attention(q[i], k[i // group], v[i // group])[0] for i in range(num_heads)]
        return merge_heads(np.stack(outs)) @ w_o
""",
)

MP = "q05_mean_pool"
W(
    MP,
    "averages interleaved heads (j, j + g, ...)",
    (r"consecutive", r"interleav", r"group", r"order", r"j \* group"),
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = w.shape[1] // num_heads
        group = num_heads // num_kv_heads
        return w.reshape(d, group, num_kv_heads, dh).mean(axis=1).reshape(d, num_kv_heads * dh)
""",
)
W(
    MP,
    "sums instead of averaging",
    (r"\bsum", r"\bmean\b", r"averag", r"divid"),
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = w.shape[1] // num_heads
        group = num_heads // num_kv_heads
        return w.reshape(d, num_kv_heads, group, dh).sum(axis=2).reshape(d, -1)
""",
)
W(
    MP,
    "keeps the first head of each group",
    (r"first", r"\bmean\b", r"averag", r"select", r"every head"),
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = w.shape[1] // num_heads
        group = num_heads // num_kv_heads
        return w.reshape(d, num_kv_heads, group, dh)[:, :, 0].reshape(d, -1)
""",
)
W(
    MP,
    "averages over the wrong axis (within each head)",
    (r"axis", r"d_head", r"\bshape\b", r"columns"),
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = w.shape[1] // num_heads
        group = num_heads // num_kv_heads
        pooled = w.reshape(d, num_kv_heads * group, dh).mean(axis=0)
        return np.tile(pooled[:num_kv_heads].reshape(1, -1), (d, 1))
""",
)
W(
    MP,
    "d_head from d_model (assumes d_model == num_heads * d_head)",
    (r"d_model", r"need not", r"w\.shape\[1\]", r"width", r"d_head"),
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = d // num_heads
        group = num_heads // num_kv_heads
        return w.reshape(d, num_kv_heads, group, dh).mean(axis=2).reshape(d, num_kv_heads * dh)
""",
)
W(
    MP,
    "columns read as (d_head, heads) instead of (heads, d_head)",
    (r"column", r"head k owns", r"consecutive", r"contiguous", r"order"),
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = w.shape[1] // num_heads
        group = num_heads // num_kv_heads
        heads = w.reshape(d, dh, num_heads).transpose(0, 2, 1)
        return heads.reshape(d, num_kv_heads, group, dh).mean(axis=2).reshape(d, -1)
""",
)
W(
    MP,
    "writes the means into w itself",
    IN_PLACE,
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        dh = w.shape[1] // num_heads
        group = num_heads // num_kv_heads
        for j in range(num_kv_heads):
            block = w[:, j * group * dh:(j + 1) * group * dh]
            w[:, j * dh:(j + 1) * dh] = block.reshape(w.shape[0], group, dh).mean(axis=1)
        return w[:, :num_kv_heads * dh]
""",
)
W(
    MP,
    "repeats the means back to num_heads heads",
    (r"\bshape\b", r"num_kv_heads \* d_head", r"repeat", r"\(d_model, num_kv_heads"),
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = w.shape[1] // num_heads
        group = num_heads // num_kv_heads
        means = w.reshape(d, num_kv_heads, group, dh).mean(axis=2, keepdims=True)
        return np.broadcast_to(means, (d, num_kv_heads, group, dh)).reshape(d, -1)
""",
)
W(
    MP,
    "group = num_kv_heads // num_heads",
    (r"group", r"num_heads // num_kv_heads", r"zero", r"divid"),
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = w.shape[1] // num_heads
        group = num_kv_heads // num_heads
        return w.reshape(d, num_kv_heads, group, dh).mean(axis=2).reshape(d, -1)
""",
)
W(
    MP,
    "group as a float (num_heads / num_kv_heads)",
    FLOAT_COUNT,
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        d = w.shape[0]
        dh = w.shape[1] // num_heads
        group = num_heads / num_kv_heads
        return w.reshape(d, num_kv_heads, group, dh).mean(axis=2).reshape(d, -1)
""",
)

CB = "q05_cache_bytes"
W(
    CB,
    "query heads instead of KV heads",
    (r"num_kv_heads", r"quer", r"kv heads", r"key/value heads"),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2 * num_layers * num_heads * d_head * seq_len * bytes_per_element * batch
""",
)
W(
    CB,
    "K only (factor 2 forgotten)",
    (r"k and v", r"both", r"factor (of )?2", r"twice", r"values?"),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch
""",
)
W(
    CB,
    "forgets the batch",
    (r"batch",),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element
""",
)
W(
    CB,
    "forgets the layers",
    (r"layers?",),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2 * num_kv_heads * d_head * seq_len * bytes_per_element * batch
""",
)
W(
    CB,
    "counts numbers, not bytes",
    (r"bytes", r"element", r"bytes_per_element"),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2 * num_layers * num_kv_heads * d_head * seq_len * batch
""",
)
W(
    CB,
    "bits instead of bytes",
    (r"\bbits?\b", r"\b8\b", r"bytes"),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * 8 * batch
""",
)
W(
    CB,
    "multiplies by num_heads as well",
    (r"num_heads", r"only those", r"quer", r"every argument"),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2 * num_layers * num_heads * num_kv_heads * d_head * seq_len * bytes_per_element * batch
""",
)
W(
    CB,
    "group size instead of KV heads",
    (r"group", r"num_kv_heads", r"kv heads"),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        group = num_heads // num_kv_heads
        return 2 * num_layers * group * d_head * seq_len * bytes_per_element * batch
""",
)
W(
    CB,
    "returns GiB",
    (r"gib", r"unit", r"bytes", r"2\s*\*\*\s*30"),
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch / 2 ** 30
""",
)
W(
    CB,
    "calls the course's kv_cache_bytes",
    (r"kv_cache_bytes", r"course", r"helper", r"not allowed", r"flag"),
    """
    from mha_helpers import kv_cache_bytes

    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return kv_cache_bytes(num_layers, num_kv_heads, d_head, seq_len, bytes_per_element, batch)
""",
)
W(
    CB,
    "K and V factor written 2.0 (a float result)",
    FLOAT_COUNT,
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return 2.0 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch
""",
)

MB = "q05_max_batch"
W(
    MB,
    "64 KV heads (the query heads)",
    (r"num_kv_heads", r"\bkv heads", r"8 kv", r"quer", r"\b64\b"),
    "max_batch = 4",
    "max_batch",
)
W(
    MB,
    "K only (factor 2 forgotten)",
    (r"k and v", r"both", r"factor (of )?2", r"twice"),
    "max_batch = 64",
    "max_batch",
)
W(
    MB,
    "fp32, 4 bytes per number",
    (r"fp16", r"2 bytes", r"bytes per"),
    "max_batch = 16",
    "max_batch",
)
W(
    MB,
    "a float",
    FLOAT_COUNT,
    "max_batch = 40 * 2 ** 30 / (2 * 80 * 8 * 128 * 4096 * 2)",
    "max_batch",
)
W(
    MB,
    "40e9 bytes instead of 40 GiB",
    (r"gib", r"2\s*\*\*\s*30", r"\bgb\b", r"10\s*\*\*\s*9", r"1e9"),
    "max_batch = int(40e9 // (2 * 80 * 8 * 128 * 4096 * 2))",
    "max_batch",
)
W(
    MB,
    "one layer's cache",
    (r"layers?", r"\b80\b"),
    "max_batch = 40 * 2 ** 30 // (2 * 8 * 128 * 4096 * 2)",
    "max_batch",
)
W(MB, "the number as text", NOT_NUMBER, "max_batch = '32'", "max_batch")
W(
    MB,
    "bits instead of bytes",
    (r"\bbits?\b", r"\b8\b", r"bytes"),
    "max_batch = 40 * 2 ** 30 // (2 * 80 * 8 * 128 * 4096 * 16)",
    "max_batch",
)
W(
    MB,
    "tokens in the budget, not sequences",
    (r"sequence", r"4096", r"tokens", r"per sequence"),
    "max_batch = 40 * 2 ** 30 // (2 * 80 * 8 * 128 * 2)",
    "max_batch",
)

R(
    GQ,
    "np.repeat on the KV heads, course's pieces",
    _GQA_IMPORTS
    + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        group = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), group, axis=0)
        v = np.repeat(split_heads(x @ w_v, num_kv_heads), group, axis=0)
        out = scaled_dot_product_attention(q, k, v)
        out = out[0] if isinstance(out, tuple) else out
        return merge_heads(out) @ w_o
""",
)
R(
    GQ,
    "a loop with its own softmax and column slices",
    """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        dh = x.shape[1] // num_heads
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        heads = []
        for i in range(num_heads):
            j = i // (num_heads // num_kv_heads)
            s = q[:, i * dh:(i + 1) * dh] @ k[:, j * dh:(j + 1) * dh].T / np.sqrt(dh)
            a = np.exp(s - s.max(axis=1, keepdims=True))
            heads.append((a / a.sum(axis=1, keepdims=True)) @ v[:, j * dh:(j + 1) * dh])
        return np.concatenate(heads, axis=1) @ w_o
""",
)
R(
    GQ,
    "groups as a broadcast axis (einsum)",
    """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        n, d = x.shape
        dh, g = d // num_heads, num_heads // num_kv_heads
        q = (x @ w_q).reshape(n, num_kv_heads, g, dh)
        k = (x @ w_k).reshape(n, num_kv_heads, dh)
        v = (x @ w_v).reshape(n, num_kv_heads, dh)
        s = np.einsum("qjgd,kjd->jgqk", q, k) / np.sqrt(dh)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        o = np.einsum("jgqk,kjd->qjgd", a, v).reshape(n, num_heads * dh)
        return o @ w_o
""",
)
R(
    MP,
    "a loop over groups with np.mean of a list",
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        dh = w.shape[1] // num_heads
        group = num_heads // num_kv_heads
        out = []
        for j in range(num_kv_heads):
            heads = [w[:, k * dh:(k + 1) * dh] for k in range(j * group, (j + 1) * group)]
            out.append(np.mean(heads, axis=0))
        return np.concatenate(out, axis=1)
""",
)
R(
    MP,
    "reshape into (d_model, g, group, d_head) and average",
    """
    def mean_pool_kv(w, num_heads, num_kv_heads):
        w = np.asarray(w, dtype=float)
        d, cols = w.shape
        dh = cols // num_heads
        return w.reshape(d, num_kv_heads, num_heads // num_kv_heads, dh).mean(axis=2).reshape(d, num_kv_heads * dh)
""",
)
R(
    CB,
    "product of a tuple with math.prod",
    """
    import math

    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        return math.prod((2, num_layers, num_kv_heads, d_head, seq_len, bytes_per_element, batch))
""",
)
R(
    CB,
    "per token, then times the tokens",
    """
    def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
        per_token = 2 * num_kv_heads * d_head * bytes_per_element * num_layers
        return per_token * seq_len * batch
""",
)
R(
    MB,
    "floor division of the budget",
    "per_sequence = 2 * 80 * 8 * 128 * 4096 * 2\nmax_batch = 40 * 2 ** 30 // per_sequence",
    "max_batch",
)
R(
    MB,
    "int() of the float quotient",
    "max_batch = int(40 * 2 ** 30 / (2 * 80 * 8 * 128 * 4096 * 2))",
    "max_batch",
)
R(MB, "a NumPy integer", "max_batch = np.int64(32)", "max_batch")


# ---------------------------------------------------------------- exercise 06: what heads learn
HB = "q06_head_backward"
_FWD = """
    def _weights(q, k, causal=True):
        n = len(q)
        s = q @ k.T / np.sqrt(q.shape[1])
        if causal:
            s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
"""
W(
    HB,
    "forgets the causal mask when recomputing A",
    (r"causal", r"\bmask", r"diagonal"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k, causal=False)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
""",
)
W(
    HB,
    "forgets the scale in the backward pass",
    (r"scal", r"sqrt", r"√", r"1\s*/\s*√"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True))
        return d_s @ k, d_s.T @ q, d_v
""",
)
W(
    HB,
    "d_v = A d_out (A not transposed)",
    (r"transpos", r"A\^?T", r"a\.T", r"weights\.T", r"d_v"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
""",
)
W(
    HB,
    "softmax backward without the row-sum term",
    (r"row sums?", r"softmax", r"subtract", r"jacobian"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_s = a * d_a / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, a.T @ d_out
""",
)
W(
    HB,
    "row sums taken over axis 0",
    (r"axis", r"row sums?", r"column"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_s = a * (d_a - (d_a * a).sum(axis=0, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, a.T @ d_out
""",
)
W(
    HB,
    "d_k = dS q (dS not transposed)",
    (r"transpos", r"d_?k", r"dS\^?T", r"d_s\.T"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s @ q, a.T @ d_out
""",
)
W(
    HB,
    "returns (d_k, d_q, d_v)",
    (r"order", r"swap", r"tuple", r"\(d_q, d_k, d_v\)"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s.T @ q, d_s @ k, a.T @ d_out
""",
)
W(
    HB,
    "mask above the diagonal kept, below blocked",
    (r"causal", r"\bmask", r"diagonal", r"polarity", r"upper"),
    """
    def head_backward(q, k, v, d_out):
        n = len(q)
        s = np.where(np.triu(np.ones((n, n), dtype=bool)), q @ k.T / np.sqrt(q.shape[1]), -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        d_a = d_out @ v.T
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, a.T @ d_out
""",
)
W(
    HB,
    "the scale applied twice",
    (r"scal", r"twice", r"sqrt", r"√"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        d_s = d_s / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, a.T @ d_out
""",
)
W(
    HB,
    "d_A = d_out v (v not transposed)",
    (r"transpos", r"v\.T", r"v\^?T", r"d_?A"),
    _FWD
    + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, a.T @ d_out
""",
)
W(
    HB,
    "calls the course's attention_backward",
    (r"course", r"helper", r"attention_backward", r"not allowed", r"off limits", r"backward pass"),
    """
    from mha_helpers.backward import attention_backward

    def head_backward(q, k, v, d_out):
        n = len(q)
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T / np.sqrt(q.shape[1]), -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        return attention_backward(q, k, v, a, d_out)
""",
)
W(
    HB,
    "scale by sqrt(d_v)",
    (r"d_v", r"d_k", r"width"),
    """
    def head_backward(q, k, v, d_out):
        n = len(q)
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T / np.sqrt(v.shape[1]), -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        d_a = d_out @ v.T
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(v.shape[1])
        return d_s @ k, d_s.T @ q, a.T @ d_out
""",
)
W(
    HB,
    "scales q in place",
    IN_PLACE,
    """
    def head_backward(q, k, v, d_out):
        n = len(q)
        scale = np.sqrt(q.shape[1])
        q /= scale
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T, -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        d_a = d_out @ v.T
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / scale
        return d_s @ k, d_s.T @ (q * scale), a.T @ d_out
""",
)

MR = "q06_measure_roles"
W(
    MR,
    "positions t >= 1",
    (r"t\s*(>=|≥)\s*2", r"from 2", r"arange\(2", r"positions?", r"t = 1"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(1, n)
        return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "every position (t - 1 wraps round at t = 0)",
    (r"t\s*(>=|≥)\s*2", r"from 2", r"arange\(2", r"positions?", r"wrap"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(n)
        return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "rows and columns swapped",
    (r"rows?", r"columns?", r"transpos", r"quer", r"keys"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.stack([weights[:, :, t - 1, t].mean(axis=(0, 2)), weights[:, :, 0, t].mean(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "averages over the wrong axes",
    (r"axis", r"axes", r"averag", r"mean over", r"\bshape\b"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 1)), weights[:, :, t, 0].mean(axis=(0, 1))], axis=1)
""",
)
W(
    MR,
    "columns in the wrong order (first, previous)",
    (r"column", r"order", r"swap", r"column 0"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.stack([weights[:, :, t, 0].mean(axis=(0, 2)), weights[:, :, t, t - 1].mean(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "sums instead of averaging",
    (r"\bsum", r"\bmean\b", r"averag"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.stack([weights[:, :, t, t - 1].sum(axis=(0, 2)), weights[:, :, t, 0].sum(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "returns (2, h)",
    (r"transpos", r"\bshape\b", r"\(h, 2\)"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.array([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))])
""",
)
W(
    MR,
    "the diagonal (A[t, t]) instead of the previous token",
    (r"previous", r"t\s*-\s*1", r"diagonal", r"itself", r"offset"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.stack([weights[:, :, t, t].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "the maximum instead of the mean",
    (r"\bmax", r"\bmean\b", r"averag"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.stack([weights[:, :, t, t - 1].max(axis=(0, 2)), weights[:, :, t, 0].max(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "the last key instead of the first",
    (r"first", r"column 0", r"key 0", r"\[t, 0\]"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, -1].mean(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "hard-codes n = 10",
    (r"hard", r"general", r"\bn\b", r"shape\[-1\]", r"\b10\b"),
    """
    def measure_roles(weights):
        t = np.arange(2, 10)
        return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
""",
)
W(
    MR,
    "first-token score averaged over every position",
    (r"t\s*(>=|≥)\s*2", r"from 2", r"positions?", r"same positions"),
    """
    def measure_roles(weights):
        n = weights.shape[-1]
        t = np.arange(2, n)
        return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, :, 0].mean(axis=(0, 2))], axis=1)
""",
)

RS = "q06_roles_seed7"
# The question (rewritten): the lesson's model with four heads, seed 7; a tuple of four roles.
W(
    RS,
    "heads 0 and 1 swapped",
    (r"head 0", r"head 1", r"swap", r"order", r"larger"),
    "roles_seed_7 = ('previous', 'first', 'first', 'previous')",
    "roles_seed_7",
)
W(
    RS,
    "the smaller score wins",
    (r"larger", r"smaller", r"flip", r"swap", r"opposite", r"every head", r"all (four )?heads"),
    "roles_seed_7 = ('previous', 'first', 'previous', 'first')",
    "roles_seed_7",
)
W(
    RS,
    "all four heads 'first'",
    (r"head [13]", r"larger", r"previous", r"all", r"every head"),
    "roles_seed_7 = ('first', 'first', 'first', 'first')",
    "roles_seed_7",
)
W(
    RS,
    "all four heads 'previous'",
    (r"head [02]", r"larger", r"first", r"all", r"every head"),
    "roles_seed_7 = ('previous', 'previous', 'previous', 'previous')",
    "roles_seed_7",
)
W(
    RS,
    "head 3 misread",
    (r"head 3", r"larger", r"one head", r"previous"),
    "roles_seed_7 = ('first', 'previous', 'first', 'first')",
    "roles_seed_7",
)
W(
    RS,
    "two roles, as for a two-head model",
    (r"four", r"\b4\b", r"each head", r"every head", r"length", r"heads 0, 1, 2"),
    "roles_seed_7 = ('first', 'previous')",
    "roles_seed_7",
)
W(
    RS,
    "one string with all four roles",
    (r"tuple", r"four", r"\bstr(ing)?\b"),
    "roles_seed_7 = 'first, previous, first, previous'",
    "roles_seed_7",
)
W(
    RS,
    "the winning columns' indices",
    (r"\bstr(ing)?\b", r"\"previous\"|'previous'", r"name", r"previous.*first|first.*previous"),
    "roles_seed_7 = (1, 0, 1, 0)",
    "roles_seed_7",
)
W(
    RS,
    "the score array itself",
    (r"tuple", r"name", r"\bstr(ing)?\b", r"previous.*first|first.*previous"),
    """
    roles_seed_7 = np.array([[0.0004, 0.9993], [0.9941, 0.0019], [0.0046, 0.9927], [0.9952, 0.0021]])
""",
    "roles_seed_7",
)
W(
    RS,
    "abbreviated role names",
    (r"\"previous\"|'previous'", r"spell", r"name", r"previous.*first|first.*previous"),
    "roles_seed_7 = ('first', 'prev', 'first', 'prev')",
    "roles_seed_7",
)

RH = "q06_remove_head"
W(
    RH,
    "zeroes columns instead of rows",
    (r"columns?", r"rows"),
    """
    def remove_head(w_o, head, num_heads):
        w = w_o.copy()
        d_head = w.shape[0] // num_heads
        w[:, head * d_head:(head + 1) * d_head] = 0
        return w
""",
)
W(
    RH,
    "changes w_o in place",
    IN_PLACE,
    """
    def remove_head(w_o, head, num_heads):
        d_head = w_o.shape[0] // num_heads
        w_o[head * d_head:(head + 1) * d_head] = 0
        return w_o
""",
)
W(
    RH,
    "block one row too long",
    (r"off.by.one", r"block", r"rows?", r"boundar", r"\bend\b", r"one row too"),
    """
    def remove_head(w_o, head, num_heads):
        w = w_o.copy()
        d_head = w.shape[0] // num_heads
        w[head * d_head:(head + 1) * d_head + 1] = 0
        return w
""",
)
W(
    RH,
    "clears only row `head`",
    (r"d_head", r"block", r"one row", r"rows"),
    """
    def remove_head(w_o, head, num_heads):
        w = w_o.copy()
        w[head] = 0
        return w
""",
)
W(
    RH,
    "keeps only that head",
    (r"other", r"keep", r"invert", r"rest", r"only"),
    """
    def remove_head(w_o, head, num_heads):
        d_head = w_o.shape[0] // num_heads
        w = np.zeros_like(w_o)
        w[head * d_head:(head + 1) * d_head] = w_o[head * d_head:(head + 1) * d_head]
        return w
""",
)
W(
    RH,
    "d_head confused with num_heads",
    (r"d_head", r"width", r"num_heads", r"w_o\.shape\[0\] // num_heads"),
    """
    def remove_head(w_o, head, num_heads):
        w = w_o.copy()
        w[head * num_heads:(head + 1) * num_heads] = 0
        return w
""",
)
W(
    RH,
    "a slice view instead of a copy",
    IN_PLACE + (r"\bview\b",),
    """
    def remove_head(w_o, head, num_heads):
        w = w_o[:]
        d_head = w.shape[0] // num_heads
        w[head * d_head:(head + 1) * d_head] = 0
        return w
""",
)
W(
    RH,
    "deletes the rows",
    (r"\bshape\b", r"delete", r"zero", r"set to 0"),
    """
    def remove_head(w_o, head, num_heads):
        d_head = w_o.shape[0] // num_heads
        return np.delete(w_o, np.s_[head * d_head:(head + 1) * d_head], axis=0)
""",
)
W(
    RH,
    "heads counted from 1",
    (r"index", r"0-based", r"zero-based", r"head 0", r"off.by.one", r"wrong head"),
    """
    def remove_head(w_o, head, num_heads):
        w = w_o.copy()
        d_head = w.shape[0] // num_heads
        w[(head - 1) * d_head:head * d_head] = 0
        return w
""",
)
W(
    RH,
    "forgets to return",
    (r"return", r"\bnone\b"),
    """
    def remove_head(w_o, head, num_heads):
        w = w_o.copy()
        d_head = w.shape[0] // num_heads
        w[head * d_head:(head + 1) * d_head] = 0
""",
)

PP = "q06_prune_prediction"
W(
    PP,
    "a: as high as with both heads",
    (r"vote", r"drop", r"each head", r"other head", r"redundan", r"both"),
    "prune_prediction = 'a'",
    "prune_prediction",
)
W(
    PP,
    "c: chance",
    (r"chance", r"1/16", r"other head", r"vote"),
    "prune_prediction = 'c'",
    "prune_prediction",
)
W(
    PP,
    "d: exactly 0",
    (r"exactly 0", r"zero", r"other head", r"vote"),
    "prune_prediction = 'd'",
    "prune_prediction",
)
W(
    PP,
    "the letter in a list",
    (r"\bstr(ing)?\b", r"\blist\b", r"letter"),
    "prune_prediction = ['b']",
    "prune_prediction",
)
W(
    PP,
    "the option's index",
    (r"\bstr(ing)?\b", r"letter", r"text"),
    "prune_prediction = 2",
    "prune_prediction",
)
W(
    PP,
    "two letters",
    (r"one letter", r"single", r"one of", r"only one"),
    "prune_prediction = 'b or c'",
    "prune_prediction",
)

R(
    HB,
    "the course's formula, step by step with named pieces",
    """
    def head_backward(q, k, v, d_out):
        n, d_k = q.shape
        scale = 1.0 / np.sqrt(d_k)
        scores = q @ k.T * scale
        scores[np.triu_indices(n, 1)] = -np.inf
        a = np.exp(scores - scores.max(axis=1, keepdims=True))
        a = a / a.sum(axis=1, keepdims=True)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        row = np.sum(d_a * a, axis=1, keepdims=True)
        d_s = a * (d_a - row) * scale
        return d_s @ k, d_s.T @ q, d_v
""",
)
R(
    HB,
    "einsum and a boolean causal mask, returned as a list-free tuple",
    """
    def head_backward(q, k, v, d_out):
        n = q.shape[0]
        mask = np.arange(n)[:, None] >= np.arange(n)[None, :]
        s = np.where(mask, np.einsum("id,jd->ij", q, k) / np.sqrt(q.shape[1]), -np.inf)
        a = np.exp(s - s.max(1)[:, None])
        a /= a.sum(1)[:, None]
        d_a = np.einsum("iv,jv->ij", d_out, v)
        d_s = a * (d_a - np.einsum("ij,ij->i", d_a, a)[:, None]) / np.sqrt(q.shape[1])
        return (np.einsum("ij,jd->id", d_s, k), np.einsum("ij,id->jd", d_s, q), np.einsum("ij,iv->jv", a, d_out))
""",
)
R(
    MR,
    "np.diagonal with offset -1",
    """
    def measure_roles(weights):
        prev = np.diagonal(weights, offset=-1, axis1=2, axis2=3)[..., 1:]
        first = weights[:, :, 2:, 0]
        return np.stack([prev.mean(axis=(0, 2)), first.mean(axis=(0, 2))], axis=-1)
""",
)
R(
    MR,
    "loops over heads and positions",
    """
    def measure_roles(weights):
        b, h, n, _ = weights.shape
        out = np.zeros((h, 2))
        for i in range(h):
            out[i, 0] = np.mean([weights[:, i, t, t - 1] for t in range(2, n)])
            out[i, 1] = np.mean([weights[:, i, t, 0] for t in range(2, n)])
        return out
""",
)
R(
    RS,
    "a tuple made from a list",
    "roles_seed_7 = tuple(['first', 'previous', 'first', 'previous'])",
    "roles_seed_7",
)
R(
    RS,
    "computed with measure_roles after training seed 7 with four heads",
    """
    from mha_helpers.tasks import vote_table_task
    from mha_helpers.training import forward, init_model, train

    def measure_roles(weights):
        t = np.arange(2, weights.shape[-1])
        return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)

    make_votes = vote_table_task(vocab_size=16, seq_len=10, table_seed=0)
    test_tokens, test_targets = make_votes(np.random.default_rng(1000), 1000)
    model7, _ = train(init_model(16, 10, 32, num_layers=1, seed=7), make_votes, num_heads=4,
                      steps=300, lr=1e-2, warmup=100, batch_size=64, seed=7)
    _, (weights7,) = forward(model7, test_tokens, num_heads=4)
    scores = measure_roles(weights7)
    roles_seed_7 = tuple("previous" if s[0] > s[1] else "first" for s in scores)
""",
    "roles_seed_7",
)
R(
    RH,
    "np.array copy and a boolean row mask",
    """
    def remove_head(w_o, head, num_heads):
        w = np.array(w_o, copy=True)
        d_head = w.shape[0] // num_heads
        rows = np.arange(w.shape[0]) // d_head == head
        w[rows, :] = 0.0
        return w
""",
)
R(
    RH,
    "multiply by a 0/1 column of row keeps",
    """
    def remove_head(w_o, head, num_heads):
        d_head = len(w_o) // num_heads
        keep = np.ones((len(w_o), 1))
        keep[head * d_head:(head + 1) * d_head] = 0
        return w_o * keep
""",
)
R(PP, "upper-case letter", "prune_prediction = 'B'", "prune_prediction")


# ---------------------------------------------------------------- exercise 07: at work
CS = "q07_cross_shape"
W(
    CS,
    "queries and keys swapped",
    (r"quer", r"keys", r"swap", r"order", r"n_q", r"n_k"),
    "cross_shape = (2, 4, 7, 5)",
    "cross_shape",
)
W(CS, "no head axis", (r"heads?",), "cross_shape = (2, 5, 7)", "cross_shape")
W(
    CS,
    "heads before the batch",
    (r"batch", r"order", r"axis", r"first"),
    "cross_shape = (4, 2, 5, 7)",
    "cross_shape",
)
W(
    CS,
    "self-attention's shape (5 keys)",
    (r"cross", r"encoder", r"n_k", r"source", r"\b7\b", r"keys"),
    "cross_shape = (2, 4, 5, 5)",
    "cross_shape",
)
W(
    CS,
    "encoder length for the queries too",
    (r"quer", r"n_q", r"\b5\b", r"target", r"decoder"),
    "cross_shape = (2, 4, 7, 7)",
    "cross_shape",
)
W(
    CS,
    "batch and heads merged",
    (r"batch", r"heads?", r"merge", r"flatten", r"separate"),
    "cross_shape = (8, 5, 7)",
    "cross_shape",
)
W(CS, "no batch axis", (r"batch",), "cross_shape = (4, 5, 7)", "cross_shape")
W(
    CS,
    "the shape as text",
    (r"\bstr(ing)?\b", r"text", r"tuple"),
    "cross_shape = '(2, 4, 5, 7)'",
    "cross_shape",
)

PM = "q07_padding_causal_mask"
_CM = """
    def causal(n):
        return np.tril(np.ones((n, n), dtype=bool))
"""
W(
    PM,
    "padding applied to the queries instead of the keys",
    (r"quer", r"keys?", r"axis", r"j < lengths", r"columns?"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return causal(n)[None] & valid[:, :, None]
""",
)
W(
    PM,
    "no causal part",
    (r"causal", r"j <= i", r"future"),
    """
    def padding_causal_mask(lengths, n):
        valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return np.broadcast_to(valid[:, None, :], (len(lengths), n, n)).copy()
""",
)
W(
    PM,
    "no padding part",
    (r"padding", r"lengths", r"key_valid", r"real token"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        return np.broadcast_to(causal(n), (len(lengths), n, n)).copy()
""",
)
W(
    PM,
    "j <= lengths[b] (one padding key too many)",
    (r"off.by.one", r"<=", r"j < lengths", r"edge", r"boundar", r"one (key|token) too"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        valid = np.arange(n)[None, :] <= np.asarray(lengths)[:, None]
        return causal(n)[None] & valid[:, None, :]
""",
)
W(
    PM,
    "anti-causal (j >= i)",
    (r"causal", r"transpos", r"j <= i", r"upper", r"diagonal", r"future"),
    """
    def padding_causal_mask(lengths, n):
        upper = np.triu(np.ones((n, n), dtype=bool))
        valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return upper[None] & valid[:, None, :]
""",
)
W(
    PM,
    "an integer 0/1 mask",
    (r"bool", r"dtype", r"0/1", r"integer", r"\bint\b"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return (causal(n)[None] & valid[:, None, :]).astype(int)
""",
)
W(
    PM,
    "PyTorch's polarity (True = blocked)",
    (r"polarity", r"invert", r"opposite", r"True\W+(=|means)?\W*(may|allowed)", r"~"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return ~(causal(n)[None] & valid[:, None, :])
""",
)
W(
    PM,
    "strictly causal (j < i)",
    (r"diagonal", r"j <= i", r"itself", r"strict", r"causal"),
    """
    def padding_causal_mask(lengths, n):
        strict = np.tril(np.ones((n, n), dtype=bool), k=-1)
        valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return strict[None] & valid[:, None, :]
""",
)
W(
    PM,
    "| instead of &",
    (r"\band\b", r"&", r"\bor\b", r"\|", r"both"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return causal(n)[None] | valid[:, None, :]
""",
)
W(
    PM,
    "padding at the start",
    (r"\bend\b", r"start", r"left", r"padded at"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        valid = np.arange(n)[None, :] >= n - np.asarray(lengths)[:, None]
        return causal(n)[None] & valid[:, None, :]
""",
)
W(
    PM,
    "blocks padding queries too",
    (r"quer", r"padding quer", r"rows?", r"only (the )?keys"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return causal(n)[None] & valid[:, None, :] & valid[:, :, None]
""",
)
W(
    PM,
    "a float mask",
    (r"bool", r"dtype", r"float", r"0/1"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        valid = (np.arange(n)[None, :] < np.asarray(lengths)[:, None]).astype(float)
        return causal(n)[None] * valid[:, None, :]
""",
)
W(
    PM,
    "a list of per-sequence masks",
    (r"\blist\b", r"array", r"\bshape\b", r"np\.stack"),
    _CM
    + """
    def padding_causal_mask(lengths, n):
        return [causal(n) & (np.arange(n) < length)[None, :] for length in lengths]
""",
)

KP = "q07_key_padding_mask"
W(
    KP,
    "keeps the course's polarity (True = real key)",
    (r"polarity", r"True\W+(=|means)?\W*(may not|padding|blocked)", r"invert", r"opposite", r"~"),
    """
    def to_key_padding_mask(mask):
        return mask.any(axis=1)
""",
)
W(
    KP,
    "reduces over the keys (axis 2)",
    (r"axis", r"quer", r"keys", r"n_k", r"\bshape\b"),
    """
    def to_key_padding_mask(mask):
        return ~mask.any(axis=2)
""",
)
W(
    KP,
    "reads only the first query's row",
    (r"first query", r"rows?", r"causal", r"any", r"no query"),
    """
    def to_key_padding_mask(mask):
        return ~mask[:, 0, :]
""",
)
W(
    KP,
    "all instead of any",
    (r"\ball\b", r"\bany\b", r"no query", r"some query", r"every query"),
    """
    def to_key_padding_mask(mask):
        return ~mask.all(axis=1)
""",
)
W(
    KP,
    "an integer mask",
    (r"bool", r"dtype", r"0/1", r"integer", r"\bint\b"),
    """
    def to_key_padding_mask(mask):
        return (~mask.any(axis=1)).astype(int)
""",
)
W(
    KP,
    "keeps the query axis (batch, 1, n_k)",
    (r"\bshape\b", r"\(batch, n_k\)", r"keepdims", r"axis"),
    """
    def to_key_padding_mask(mask):
        return ~mask.any(axis=1, keepdims=True)
""",
)
W(
    KP,
    "reduces over the batch",
    (r"axis", r"batch", r"\bshape\b"),
    """
    def to_key_padding_mask(mask):
        return ~mask.any(axis=0)
""",
)
W(
    KP,
    "reads the diagonal (self-attention only)",
    (r"cross", r"n_q", r"square", r"self-attention", r"diagonal"),
    """
    def to_key_padding_mask(mask):
        return ~np.diagonal(mask, axis1=1, axis2=2)
""",
)
W(
    KP,
    "int mask, polarity kept, from sum > 0",
    (r"polarity", r"bool", r"invert", r"dtype", r"True\W+(=|means)?\W*(may not|padding|blocked)"),
    """
    def to_key_padding_mask(mask):
        return (mask.sum(axis=1) > 0).astype(np.int64)
""",
)

IP = "q07_in_proj_weight"
W(
    IP,
    "stacks the course's weights without transposing",
    (r"transpos", r"weight\.T", r"x @ weight", r"nn\.Linear"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.vstack([w_q, w_k, w_v])
""",
)
W(
    IP,
    "side by side, no transpose ((d_model, 3 d_model))",
    (r"\bshape\b", r"rows", r"\(3 \* d_model, d_model\)", r"transpos", r"on top"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.hstack([w_q, w_k, w_v])
""",
)
W(
    IP,
    "order K, Q, V",
    (r"order", r"query block", r"on top", r"q, k, v", r"then the key"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.concatenate([w_k.T, w_q.T, w_v.T], axis=0)
""",
)
W(
    IP,
    "stacked, then the whole matrix transposed",
    (r"\bshape\b", r"transpos", r"each block"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.vstack([w_q, w_k, w_v]).T
""",
)
W(
    IP,
    "transposes only w_q",
    (r"transpos", r"each block", r"all three", r"w_k", r"w_v"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.concatenate([w_q.T, w_k, w_v], axis=0)
""",
)
W(
    IP,
    "calls the course's pytorch_state_dict",
    (r"pytorch_state_dict", r"course", r"helper", r"not allowed", r"flag"),
    """
    from mha_helpers import pytorch_state_dict

    def in_proj_weight(w_q, w_k, w_v):
        state = pytorch_state_dict(w_q, w_k, w_v, np.eye(len(w_q)))
        return np.asarray(state["in_proj_weight"])
""",
)
W(
    IP,
    "np.stack: a (3, d_model, d_model) array",
    (r"\bshape\b", r"stack", r"concatenat", r"one matrix", r"2-?d"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.stack([w_q.T, w_k.T, w_v.T])
""",
)
W(
    IP,
    "interleaves the rows of the three blocks",
    (r"interleav", r"block", r"order", r"on top"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        d = len(w_q)
        return np.stack([w_q.T, w_k.T, w_v.T], axis=1).reshape(3 * d, d)
""",
)
W(
    IP,
    "inverts instead of transposing",
    (r"\binv", r"transpos"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.vstack([np.linalg.inv(w) for w in (w_q, w_k, w_v)])
""",
)
W(
    IP,
    "w_q typed twice",
    (r"w_k", r"key block", r"order", r"keys"),
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.vstack([w_q.T, w_q.T, w_v.T])
""",
)

PC = "q07_pytorch_call"
W(
    PC,
    "a: the course's masks passed as they are",
    (r"polarity", r"opposite", r"True\W+(=|means)?\W*(may not|blocked)", r"~", r"invert"),
    "pytorch_call = 'a'",
    "pytorch_call",
)
W(
    PC,
    "c: key_padding_mask not inverted",
    (r"key_padding", r"polarity", r"both", r"~key_valid", r"invert"),
    "pytorch_call = 'c'",
    "pytorch_call",
)
W(
    PC,
    "d: transposes a batch-first input",
    (r"batch_first", r"transpos", r"\(batch, n"),
    "pytorch_call = 'd'",
    "pytorch_call",
)
W(
    PC,
    "the letter in a list",
    (r"\bstr(ing)?\b", r"\blist\b", r"letter"),
    "pytorch_call = ['b']",
    "pytorch_call",
)
W(
    PC,
    "two letters",
    (r"one letter", r"single", r"one of", r"only one"),
    "pytorch_call = 'b, d'",
    "pytorch_call",
)
W(
    PC,
    "the call itself as code text",
    (r"letter", r"one of", r"a, b, c"),
    "pytorch_call = 'layer(x, x, x, attn_mask=~causal, key_padding_mask=~key_valid)'",
    "pytorch_call",
)
W(
    PC,
    "the option's index",
    (r"\bstr(ing)?\b", r"letter", r"text"),
    "pytorch_call = 1",
    "pytorch_call",
)

R(
    CS,
    "the shape of a call on random arrays",
    """
    from mha_helpers import multi_head_attention

    rng = np.random.default_rng(0)
    d_model = 8
    x = rng.normal(size=(2, 5, d_model))
    encoder_out = rng.normal(size=(2, 7, d_model))
    w_q, w_k, w_v, w_o = (rng.normal(size=(d_model, d_model)) for _ in range(4))
    y, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=4, context=encoder_out,
                                      return_weights=True)
    cross_shape = weights.shape
""",
    "cross_shape",
)
R(CS, "NumPy integers in a tuple", "cross_shape = tuple(np.array([2, 4, 5, 7]))", "cross_shape")
R(
    PM,
    "the course's causal_mask and broadcasting",
    """
    from mha_helpers import causal_mask

    def padding_causal_mask(lengths, n):
        key_valid = np.arange(n) < np.asarray(lengths)[:, None]
        return causal_mask(n)[None, :, :] & key_valid[:, None, :]
""",
)
R(
    PM,
    "a loop filling a boolean array",
    """
    def padding_causal_mask(lengths, n):
        out = np.zeros((len(lengths), n, n), dtype=bool)
        for b, length in enumerate(lengths):
            for i in range(n):
                out[b, i, :min(i + 1, length)] = True
        return out
""",
)
R(
    PM,
    "index comparisons with np.ogrid",
    """
    def padding_causal_mask(lengths, n):
        b, i, j = np.ogrid[:len(lengths), :n, :n]
        return (j <= i) & (j < np.asarray(lengths)[b])
""",
)
R(
    KP,
    "no query attends: sum == 0",
    """
    def to_key_padding_mask(mask):
        return mask.sum(axis=1) == 0
""",
)
R(
    KP,
    "np.logical_not of np.any over axis -2",
    """
    def to_key_padding_mask(mask):
        return np.logical_not(np.any(np.asarray(mask, dtype=bool), axis=-2))
""",
)
R(
    IP,
    "hstack, then transpose",
    """
    def in_proj_weight(w_q, w_k, w_v):
        return np.hstack([w_q, w_k, w_v]).T
""",
)
R(
    IP,
    "filled into an empty matrix",
    """
    def in_proj_weight(w_q, w_k, w_v):
        d = w_q.shape[0]
        out = np.empty((3 * d, d))
        for i, w in enumerate((w_q, w_k, w_v)):
            out[i * d:(i + 1) * d] = np.transpose(w)
        return out
""",
)
R(PC, "upper-case letter", "pytorch_call = 'B'", "pytorch_call")
R(PC, "letter with a trailing newline", "pytorch_call = 'b\\n'", "pytorch_call")


# ---------------------------------------------------------------- exercise 08: at scale
OU = "q08_online_update"
W(
    OU,
    "rescales ell but not acc",
    (r"\bacc\b", r"both", r"rescal", r"exp\(m - m_new\)"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        p = np.exp(scores - m_new[:, None])
        return m_new, np.exp(m - m_new) * ell + p.sum(axis=1), acc + p @ v_block
""",
)
W(
    OU,
    "rescales acc but not ell",
    (r"\bell\b", r"both", r"rescal", r"exp\(m - m_new\)"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        p = np.exp(scores - m_new[:, None])
        return m_new, ell + p.sum(axis=1), np.exp(m - m_new)[:, None] * acc + p @ v_block
""",
)
W(
    OU,
    "the running max not carried (block max only)",
    (r"running max", r"carr", r"np\.maximum", r"old max", r"largest score seen so far", r"m_new"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = scores.max(axis=1)
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        return m_new, r * ell + p.sum(axis=1), r[:, None] * acc + p @ v_block
""",
)
W(
    OU,
    "rescale factor exp(m_new - m) (inverted)",
    (r"exp\(m - m_new\)", r"invert", r"sign", r"rescal", r"at most 1"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        r = np.exp(m_new - m)
        r = np.where(np.isfinite(r), r, 0.0)
        p = np.exp(scores - m_new[:, None])
        return m_new, r * ell + p.sum(axis=1), r[:, None] * acc + p @ v_block
""",
)
W(
    OU,
    "block terms taken relative to the old max",
    (r"m_new", r"old max", r"new max", r"\bnan\b", r"\binf"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        r = np.exp(m - m_new)
        p = np.exp(scores - m[:, None])
        return m_new, r * ell + p.sum(axis=1), r[:, None] * acc + p @ v_block
""",
)
W(
    OU,
    "returns acc divided by ell",
    (r"divid", r"normali", r"not divided", r"\bell\b"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        ell_new = r * ell + p.sum(axis=1)
        acc_new = r[:, None] * acc + p @ v_block
        return m_new, ell_new, acc_new / ell_new[:, None]
""",
)
W(
    OU,
    "one max over all rows",
    (r"each row", r"per.row", r"axis", r"global", r"whole block"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max())
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        return m_new, r * ell + p.sum(axis=1), r[:, None] * acc + p @ v_block
""",
)
W(
    OU,
    "the block's sum over the queries (axis 0)",
    (r"axis", r"sum over", r"row sum", r"keys"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        return m_new, r * ell + p.sum(axis=0), r[:, None] * acc + p @ v_block
""",
)
W(
    OU,
    "updates acc and ell in place",
    IN_PLACE,
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        ell *= r
        ell += p.sum(axis=1)
        acc *= r[:, None]
        acc += p @ v_block
        return m_new, ell, acc
""",
)
W(
    OU,
    "calls the course's online_softmax_update",
    (r"online_softmax_update", r"course", r"helper", r"not allowed", r"flag"),
    """
    from mha_helpers import online_softmax_update

    def online_update(m, ell, acc, scores, v_block):
        return online_softmax_update(m, ell, acc, scores, v_block)
""",
)
W(
    OU,
    "never rescales the old sums",
    (r"rescal", r"exp\(m - m_new\)", r"both", r"old sums"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        p = np.exp(scores - m_new[:, None])
        return m_new, ell + p.sum(axis=1), acc + p @ v_block
""",
)
W(
    OU,
    "subtracts m_new without [:, None]",
    (r"keepdims", r"broadcast", r"\[:, None\]", r"axis"),
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new)
        return m_new, r * ell + p.sum(axis=1), r[:, None] * acc + p @ v_block
""",
)

TI = "q08_tiled"
_OU = """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        r = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        return m_new, r * ell + p.sum(axis=1), r[:, None] * acc + p @ v_block
"""
W(
    TI,
    "drops the last, shorter block",
    (r"last block", r"shorter", r"partial", r"remainder", r"multiple", r"left.?over"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for b in range(n_k // block_size):
            sl = slice(b * block_size, (b + 1) * block_size)
            m, ell, acc = online_update(m, ell, acc, q @ k[sl].T / np.sqrt(q.shape[1]), v[sl])
        return acc / ell[:, None]
""",
)
W(
    TI,
    "block ends one key early",
    (r"off.by.one", r"edge", r"skip", r"\bend\b", r"every key", r"missing"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            stop = min(start + block_size - 1, len(k))
            if stop > start:
                m, ell, acc = online_update(m, ell, acc, q @ k[start:stop].T / np.sqrt(q.shape[1]), v[start:stop])
        return acc / ell[:, None]
""",
)
W(
    TI,
    "blocks overlap by one key",
    (r"overlap", r"off.by.one", r"edge", r"twice", r"counted twice"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            stop = start + block_size + 1
            m, ell, acc = online_update(m, ell, acc, q @ k[start:stop].T / np.sqrt(q.shape[1]), v[start:stop])
        return acc / ell[:, None]
""",
)
W(
    TI,
    "running max reset every block",
    (r"running max", r"carr", r"rescal", r"np\.maximum"),
    """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        ell, acc = np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            s = q @ k[start:start + block_size].T / np.sqrt(q.shape[1])
            p = np.exp(s - s.max(axis=1, keepdims=True))
            ell = ell + p.sum(axis=1)
            acc = acc + p @ v[start:start + block_size]
        return acc / ell[:, None]
""",
)
W(
    TI,
    "no scale",
    (r"scal", r"sqrt", r"√"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            sl = slice(start, start + block_size)
            m, ell, acc = online_update(m, ell, acc, q @ k[sl].T, v[sl])
        return acc / ell[:, None]
""",
)
W(
    TI,
    "scale by sqrt(d_v)",
    (r"d_v", r"d_k", r"width"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            sl = slice(start, start + block_size)
            m, ell, acc = online_update(m, ell, acc, q @ k[sl].T / np.sqrt(v.shape[1]), v[sl])
        return acc / ell[:, None]
""",
)
W(
    TI,
    "returns acc without dividing by ell",
    (r"divid", r"\bell\b", r"normali"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            sl = slice(start, start + block_size)
            m, ell, acc = online_update(m, ell, acc, q @ k[sl].T / np.sqrt(q.shape[1]), v[sl])
        return acc
""",
)
W(
    TI,
    "builds the whole score matrix, then loops over its blocks",
    (r"whole", r"full", r"score matrix", r"\(n_q, n_k\)", r"never build"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        s = q @ k.T / np.sqrt(q.shape[1])
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            sl = slice(start, start + block_size)
            m, ell, acc = online_update(m, ell, acc, s[:, sl], v[sl])
        return acc / ell[:, None]
""",
)
W(
    TI,
    "calls the course's tiled_attention",
    (r"tiled_attention", r"course", r"helper", r"not allowed", r"flag"),
    """
    from mha_helpers import tiled_attention

    def tiled(q, k, v, block_size):
        return tiled_attention(q, k, v, block_size=block_size)
""",
)
W(
    TI,
    "averages each block's own softmax output",
    (r"averag", r"rescal", r"running", r"weights? of (each|every) block", r"block"),
    """
    def tiled(q, k, v, block_size):
        outs = []
        for start in range(0, len(k), block_size):
            s = q @ k[start:start + block_size].T / np.sqrt(q.shape[1])
            p = np.exp(s - s.max(axis=1, keepdims=True))
            outs.append((p / p.sum(axis=1, keepdims=True)) @ v[start:start + block_size])
        return np.mean(outs, axis=0)
""",
)
W(
    TI,
    "acc / ell without [:, None]",
    (r"broadcast", r"\[:, None\]", r"keepdims", r"\bshape\b"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            sl = slice(start, start + block_size)
            m, ell, acc = online_update(m, ell, acc, q @ k[sl].T / np.sqrt(q.shape[1]), v[sl])
        return acc / ell
""",
)
W(
    TI,
    "starts from m = 0 and ell = 1",
    (r"\bell\b", r"initial", r"start", r"empty", r"-\s*inf", r"m = 0"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.zeros(n_q), np.ones(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            sl = slice(start, start + block_size)
            m, ell, acc = online_update(m, ell, acc, q @ k[sl].T / np.sqrt(q.shape[1]), v[sl])
        return acc / ell[:, None]
""",
)
W(
    TI,
    "the whole of v used for every block",
    (r"v_block", r"values?", r"block of v", r"\bshape\b"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            sl = slice(start, start + block_size)
            m, ell, acc = online_update(m, ell, acc, q @ k[sl].T / np.sqrt(q.shape[1]), v)
        return acc / ell[:, None]
""",
)
W(
    TI,
    "the state not carried between blocks",
    (r"carr", r"state", r"update", r"reassign", r"every block", r"last block"),
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for start in range(0, len(k), block_size):
            sl = slice(start, start + block_size)
            m_new, ell_new, acc_new = online_update(m, ell, acc, q @ k[sl].T / np.sqrt(q.shape[1]), v[sl])
        return acc_new / ell_new[:, None]
""",
)

ML = "q08_mla_cache"
W(
    ML,
    "numbers, not fp16 bytes",
    (r"fp16", r"2 bytes", r"bytes"),
    "mla_bytes_per_token = (512 + 64) * 60",
    "mla_bytes_per_token",
)
W(
    ML,
    "forgets the decoupled RoPE key",
    (r"rope", r"decoupled", r"\b64\b", r"d_h\^?r"),
    "mla_bytes_per_token = 512 * 60 * 2",
    "mla_bytes_per_token",
)
W(
    ML,
    "doubles for K and V as in MHA",
    (r"k and v", r"latent", r"once", r"both", r"twice"),
    "mla_bytes_per_token = 2 * (512 + 64) * 60 * 2",
    "mla_bytes_per_token",
)
W(
    ML,
    "one layer",
    (r"layers?", r"\b60\b"),
    "mla_bytes_per_token = (512 + 64) * 2",
    "mla_bytes_per_token",
)
W(
    ML,
    "per head",
    (r"heads?", r"\b128\b", r"shared"),
    "mla_bytes_per_token = 128 * (512 + 64) * 60 * 2",
    "mla_bytes_per_token",
)
W(ML, "a float", FLOAT_COUNT, "mla_bytes_per_token = (512 + 64) * 60 * 2.0", "mla_bytes_per_token")
W(
    ML,
    "bits",
    (r"\bbits?\b", r"\b8\b", r"bytes"),
    "mla_bytes_per_token = (512 + 64) * 60 * 16",
    "mla_bytes_per_token",
)
W(
    ML,
    "RoPE key as wide as a head (128)",
    (r"rope", r"\b64\b", r"d_h\^?r", r"decoupled"),
    "mla_bytes_per_token = (512 + 128) * 60 * 2",
    "mla_bytes_per_token",
)
W(ML, "the number as text", NOT_NUMBER, "mla_bytes_per_token = '69120'", "mla_bytes_per_token")

DB = "q08_decode_bound"
_DB_CACHE = "cache = 2 * 32 * 32 * 128 * 2 * 4096\n"
W(
    DB,
    "seconds instead of milliseconds",
    (r"second", r"milli", r"\bms\b", r"1000", r"unit"),
    _DB_CACHE + "decode_ms = (13_214_687_232 + cache) / 3.35e12",
    "decode_ms",
)
W(
    DB,
    "forgets the KV cache",
    (r"cache", r"\bkv\b"),
    "decode_ms = 13_214_687_232 / 3.35e12 * 1000",
    "decode_ms",
)
W(
    DB,
    "forgets the weights",
    (r"weights?",),
    _DB_CACHE + "decode_ms = cache / 3.35e12 * 1000",
    "decode_ms",
)
W(
    DB,
    "the cache of K only",
    (r"k and v", r"both", r"factor (of )?2", r"twice"),
    "cache = 32 * 32 * 128 * 2 * 4096\ndecode_ms = (13_214_687_232 + cache) / 3.35e12 * 1000",
    "decode_ms",
)
W(
    DB,
    "the cache of one layer",
    (r"layers?", r"\b32\b"),
    "cache = 2 * 32 * 128 * 2 * 4096\ndecode_ms = (13_214_687_232 + cache) / 3.35e12 * 1000",
    "decode_ms",
)
W(
    DB,
    "microseconds",
    (r"micro", r"µs", r"\bms\b", r"milli", r"unit", r"1000"),
    _DB_CACHE + "decode_ms = (13_214_687_232 + cache) / 3.35e12 * 1e6",
    "decode_ms",
)
W(
    DB,
    "the weights' bytes doubled again for fp16",
    (r"already", r"bytes", r"fp16", r"weights?"),
    _DB_CACHE + "decode_ms = (2 * 13_214_687_232 + cache) / 3.35e12 * 1000",
    "decode_ms",
)
W(
    DB,
    "truncated to two significant figures",
    (r"round", r"significant", r"precis", r"digits", r"tolerance"),
    "decode_ms = 4.5",
    "decode_ms",
)
W(DB, "the answer as text with its unit", NOT_NUMBER, "decode_ms = '4.59 ms'", "decode_ms")
W(
    DB,
    "the cache of one token",
    (r"4096", r"tokens", r"sequence", r"cache"),
    "cache = 2 * 32 * 32 * 128 * 2\ndecode_ms = (13_214_687_232 + cache) / 3.35e12 * 1000",
    "decode_ms",
)

R(
    OU,
    "with the guard for a row still at -inf",
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, np.max(scores, axis=-1))
        safe = np.where(np.isneginf(m_new), 0.0, m_new)
        alpha = np.exp(m - safe)
        p = np.exp(scores - safe[:, None])
        return m_new, alpha * ell + p.sum(-1), alpha[:, None] * acc + p @ v_block
""",
)
R(
    OU,
    "einsum and keepdims",
    """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        alpha = np.exp(m - m_new)
        p = np.exp(scores - m_new.reshape(-1, 1))
        acc_new = alpha.reshape(-1, 1) * acc + np.einsum("qb,bd->qd", p, v_block)
        return m_new, alpha * ell + p.sum(axis=1), acc_new
""",
)
R(
    TI,
    "a while loop with an explicit end clipped to n_k",
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q, d_k = q.shape
        n_k = k.shape[0]
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        start = 0
        while start < n_k:
            end = min(start + block_size, n_k)
            m, ell, acc = online_update(m, ell, acc, q @ k[start:end].T / np.sqrt(d_k), v[start:end])
            start = end
        return acc / ell[:, None]
""",
)
R(
    TI,
    "np.array_split into ceil(n_k / b) blocks of at most block_size",
    _OU
    + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        edges = list(range(block_size, len(k), block_size))
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        for kb, vb in zip(np.split(k, edges), np.split(v, edges)):
            m, ell, acc = online_update(m, ell, acc, (q / np.sqrt(q.shape[1])) @ kb.T, vb)
        return acc / ell[:, None]
""",
)
R(ML, "the product written out", "mla_bytes_per_token = (512 + 64) * 60 * 2", "mla_bytes_per_token")
R(ML, "a NumPy integer", "mla_bytes_per_token = np.int64(576) * 60 * 2", "mla_bytes_per_token")
R(
    DB,
    "computed exactly",
    _DB_CACHE + "decode_ms = (13_214_687_232 + cache) / 3.35e12 * 1e3",
    "decode_ms",
)
R(DB, "rounded to four significant figures", "decode_ms = 4.586", "decode_ms")
R(
    DB,
    "a NumPy float from bytes and bandwidth",
    "decode_ms = np.float64(15_362_170_880) / np.float64(3.35e9)",
    "decode_ms",
)


ENTRIES: list[Wrong | Right] = [*WRONG, *RIGHT]
