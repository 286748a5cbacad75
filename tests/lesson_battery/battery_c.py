"""Battery C: realistic learner answers to every auto-graded question of exercises 01-08.

Written only from the lessons, the exercise notebooks, the learner guide and the public helper
modules (never the judge, the banks or the earlier batteries). ``WRONG`` are answers a learner
plausibly writes after reading the lessons; ``RIGHT`` are correct answers in unusual but
legitimate forms. Every wrong entry's ``causes`` were fixed before the battery first ran.
"""

from __future__ import annotations

from textwrap import dedent, indent

from .format import Right, Wrong

WRONG: list[Wrong] = []
RIGHT: list[Right] = []


def W(gid, name, source, target, *causes):
    WRONG.append(Wrong(gid, name, dedent(source).strip() + "\n", target, tuple(causes)))


def R(gid, name, source, target):
    RIGHT.append(Right(gid, name, dedent(source).strip() + "\n", target))


def V(gid, name, value_src, *causes, target="ans"):
    """A value answer: ``<target> = <value_src>``."""
    W(gid, name, f"{target} = {value_src}", target, *causes)


def RV(gid, name, value_src, target="ans"):
    R(gid, name, f"{target} = {value_src}", target)


# Cause patterns shared by several questions -------------------------------------------------
TRANSPOSE = (r"transpos", r"\.T\b", r"swap\w*[^.]{0,40}(axes|axis|rows|columns)",
             r"rows and columns", r"(rows|columns) are (the )?(keys|queries)")
INPLACE = (r"in[ -]?place", r"(modif|chang|mutat|overwr|alter)\w*[^.]{0,40}(input|argument|array|w_o|acc)",
           r"\bcopy\b")
NO_RETURN = (r"forg[eo]t\w* (the |to )?return", r"returns? None", r"\bNone\b", r"no return", r"missing return", r"print\w*[^.]{0,30}instead")
WHOLE = (r"whole number", r"\bint\b", r"integer", r"float", r"//")
TEXT = (r"\bstr(ing)?\b", r"\btext\b", r"quot", r"not a (number|tuple)", r"a number, not", r"tuple, not")
MASK_DATA = (r"0/1", r"0 and 1", r"(added|adds?|adding) (the mask )?to (the )?scores", r"as (data|numbers)",
             r"float mask", r"additive", r"bool(ean)? (mask|array)", r"not (a )?bool", r"dtype")
MASK_POLARITY = (r"invert", r"polarity", r"opposite", r"the other way", r"~\s*mask", r"negat", r"flip",
                 r"True (=|means|is)\s*(blocked|may not|padding)", r"wrong way round")
MASK_FORGOT = (r"(ignor|forg[eo]t|miss|without|never appl|not appl|no)\w*[^.]{0,30}\bmask",
               r"mask\w*[^.]{0,30}(not|never|isn.t) (used|applied)", r"unmasked", r"blocked (keys|scores) (get|have|receive)")
D_MODEL_SCALE = (r"(√|sqrt)\W{0,3}d_model", r"d_model\W[^.]{0,40}(scale|instead|not d_k|rather)",
                 r"(scale|scaled|scaling|divid\w*)[^.]{0,40}d_model", r"width of (x|the input|the model)")
NO_SCALE = (r"(forg[eo]t\w*|missing|without|no|never)\s+(the\s+)?(\w+\s+)?scal", r"not scaled", r"unscaled",
            r"scal\w* (is |was )?missing")
SQRT = (r"square root", r"(√|sqrt)[^.]{0,20}(not|instead|rather)", r"(not|instead of|rather than)[^.]{0,20}(√|sqrt)",
        r"d_k itself", r"by d_k\b(?!\))")
FORBIDDEN = (r"(course|mha_helpers)[^.]{0,80}(off limits|not allowed|forbidden|flag|scores? 0|own)",
             r"(calls?|uses?|using|calling) (the )?(course|mha_helpers|scipy)", r"do not call", r"off limits")
SOFTMAX_AXIS = (r"axis", r"over (the )?(queries|columns)", r"columns? sum", r"normali[sz]\w* over", r"wrong axis")
FLOAT32 = (r"float32", r"float64", r"precision", r"single")

# =============================================================================================
# Exercise 01
# =============================================================================================
g = "q01_scores"
W(g, "scale by sqrt(d_model)", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / np.sqrt(x.shape[1])
""", "attention_scores", *D_MODEL_SCALE)
W(g, "no scale at all", """
def attention_scores(x, w_q, w_k):
    return (x @ w_q) @ (x @ w_k).T
""", "attention_scores", *NO_SCALE)
W(g, "divides by d_k, not its square root", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / q.shape[1]
""", "attention_scores", *SQRT)
W(g, "keys as rows (K Q^T)", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return k @ q.T / np.sqrt(k.shape[1])
""", "attention_scores", *TRANSPOSE)
W(g, "multiplies by sqrt(d_k)", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T * np.sqrt(q.shape[-1])
""", "attention_scores", r"multipl\w*[^.]{0,30}(√|sqrt|instead)", r"times (√|sqrt)", r"instead of divid", r"divide,? (not|instead)")
W(g, "keys projected with w_q", """
def attention_scores(x, w_q, w_k):
    q = x @ w_q
    k = x @ w_q
    return q @ k.T / np.sqrt(q.shape[1])
""", "attention_scores", r"w_k", r"same (weight|projection|matrix)", r"keys?\b[^.]{0,30}w_q")
W(g, "scale by the number of tokens", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / np.sqrt(len(x))
""", "attention_scores", r"number of (tokens|rows|queries)", r"sequence length", r"len\(x\)", r"x\.shape\[0\]", r"\bn\b[^.]{0,20}instead")
W(g, "returns the softmax weights", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""", "attention_scores", r"softmax", r"rows? sum to (one|1)", r"normali[sz]", r"weights,? not (the )?scores")
W(g, "scales both q and k by 1/sqrt(d_k)", """
def attention_scores(x, w_q, w_k):
    d_k = w_q.shape[1]
    q = x @ w_q / np.sqrt(d_k)
    k = x @ w_k / np.sqrt(d_k)
    return q @ k.T
""", "attention_scores", r"twice", r"both (q|queries) and (k|keys)", r"scal\w* (applied )?two", *SQRT)
W(g, "np.dot without the transpose", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return np.dot(q, k) / np.sqrt(q.shape[1])
""", "attention_scores", *TRANSPOSE, r"not aligned", r"shapes?\b[^.]{0,30}(mismatch|do not match|don.t match)")
W(g, "prints instead of returning", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    print(q @ k.T / np.sqrt(q.shape[1]))
""", "attention_scores", *NO_RETURN)
W(g, "float32 computation", """
def attention_scores(x, w_q, w_k):
    x, w_q, w_k = (a.astype(np.float32) for a in (x, w_q, w_k))
    q, k = x @ w_q, x @ w_k
    return q @ k.T / np.float32(np.sqrt(q.shape[1]))
""", "attention_scores", *FLOAT32)
W(g, "scale by sqrt of the key count d_k of x @ w_k rows", """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / np.sqrt(w_q.shape[0])
""", "attention_scores", *D_MODEL_SCALE, r"w_q\.shape\[0\]", r"rows of w_q")
R(g, "einsum", """
def attention_scores(x, w_q, w_k):
    q = np.einsum("nd,dk->nk", x, w_q)
    k = np.einsum("nd,dk->nk", x, w_k)
    return np.einsum("ik,jk->ij", q, k) / np.sqrt(q.shape[-1])
""", "attention_scores")
R(g, "scale x before projecting Q, matmul", """
def attention_scores(x, w_q, w_k):
    d_k = w_k.shape[-1]
    q = np.matmul(x, w_q) * d_k ** -0.5
    return np.matmul(q, np.matmul(x, w_k).T)
""", "attention_scores")

g = "q01_softmax"
W(g, "softmax over the queries (axis 0)", """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
""", "softmax_over_keys", *SOFTMAX_AXIS)
W(g, "no max subtraction (overflows at 800)", """
def softmax_over_keys(scores):
    e = np.exp(scores)
    return e / e.sum(axis=1, keepdims=True)
""", "softmax_over_keys", r"overflow", r"subtract\w*[^.]{0,30}max", r"\binf\b", r"\bnan\b", r"large (scores|values)")
W(g, "global max, not each row's", """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max())
    return e / e.sum(axis=1, keepdims=True)
""", "softmax_over_keys", r"(each|every|per) row", r"row'?s (own )?max", r"global max", r"whole (matrix|array)", r"underflow")
W(g, "normalised by the grand total", """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum()
""", "softmax_over_keys", r"(each|every) row", r"sum to (1|one) (along|over|in) (each|every|the) row", r"whole (matrix|array)", r"total", r"axis")
W(g, "max without keepdims (broadcasts along the wrong axis)", """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=1))
    return e / e.sum(axis=1, keepdims=True)
""", "softmax_over_keys", r"keepdims", r"broadcast", r"\[:, None\]", r"column")
W(g, "sum without keepdims", """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1)
""", "softmax_over_keys", r"keepdims", r"broadcast", r"\[:, None\]", r"column")
W(g, "-inf replaced by a min before exp (nan_to_num)", """
def softmax_over_keys(scores):
    s = np.nan_to_num(scores, neginf=0.0)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""", "softmax_over_keys", r"-\s*inf", r"blocked", r"exactly (0|zero)", r"nan_to_num")
W(g, "modifies scores in place", """
def softmax_over_keys(scores):
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores
""", "softmax_over_keys", *INPLACE)
W(g, "divides by the row max instead of subtracting", """
def softmax_over_keys(scores):
    e = np.exp(scores / np.abs(scores).max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""", "softmax_over_keys", r"divid\w*[^.]{0,30}max", r"subtract", r"instead of subtract")
W(g, "sigmoid instead of exp-normalise", """
def softmax_over_keys(scores):
    return 1.0 / (1.0 + np.exp(-scores))
""", "softmax_over_keys", r"sigmoid", r"sum to (1|one)", r"normali[sz]")
W(g, "uses scipy's softmax", """
def softmax_over_keys(scores):
    from scipy.special import softmax
    return softmax(scores, axis=1)
""", "softmax_over_keys", r"scipy", *FORBIDDEN)
W(g, "uses the course's softmax", """
def softmax_over_keys(scores):
    from mha_helpers import softmax
    return softmax(scores, axis=-1)
""", "softmax_over_keys", *FORBIDDEN)
W(g, "returns log-probabilities", """
def softmax_over_keys(scores):
    s = scores - scores.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))
""", "softmax_over_keys", r"\blog", r"negative", r"exp", r">=?\s*0")
R(g, "log-sum-exp then exp", """
def softmax_over_keys(scores):
    m = np.max(scores, axis=-1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(scores - m), axis=-1, keepdims=True))
    return np.exp(scores - lse)
""", "softmax_over_keys")
R(g, "transpose, softmax over axis 0, transpose back", """
def softmax_over_keys(scores):
    t = np.asarray(scores, dtype=float).T
    e = np.exp(t - t.max(axis=0))
    return (e / e.sum(axis=0)).T
""", "softmax_over_keys")
R(g, "row by row in a loop", """
def softmax_over_keys(scores):
    out = np.zeros_like(scores, dtype=float)
    for i, row in enumerate(scores):
        e = np.exp(row - np.max(row))
        out[i] = e / e.sum()
    return out
""", "softmax_over_keys")

g = "q01_masked_attention"
W(g, "mask polarity inverted", """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    s = np.where(mask, -np.inf, s)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", *MASK_POLARITY)
W(g, "0/1 mask added to the scores", """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1]) + mask
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", *MASK_DATA)
W(g, "mask ignored", """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", *MASK_FORGOT)
W(g, "mask applied after the softmax, rows not renormalised", """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True) * mask
    return w @ v, w
""", "masked_attention", r"after (the )?softmax", r"before (the )?softmax", r"renormali[sz]", r"sum to (1|one)")
W(g, "scores multiplied by the mask (blocked = 0, not -inf)", """
def masked_attention(q, k, v, mask):
    s = (q @ k.T / np.sqrt(q.shape[1])) * mask
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", r"-\s*inf", r"multipl\w*[^.]{0,30}mask", r"(score|set) (of )?0", r"zero (score|instead)", *MASK_DATA)
W(g, "returns (weights, output)", """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w, w @ v
""", "masked_attention", r"order", r"(output|weights) first", r"swap", r"\(output, weights\)")
W(g, "output v @ weights.T shape slip (uses weights.T @ v)", """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w.T @ v, w
""", "masked_attention", *TRANSPOSE)
W(g, "scale by sqrt(d_v)", """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(v.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", r"d_v", r"width of (a|the) (value|v)", r"v\.shape")
W(g, "softmax over the queries", """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=0, keepdims=True))
    w = e / e.sum(axis=0, keepdims=True)
    return w @ v, w
""", "masked_attention", *SOFTMAX_AXIS)
W(g, "mask transposed", """
def masked_attention(q, k, v, mask):
    s = np.where(mask.T, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", *TRANSPOSE)
W(g, "-1 instead of -inf for blocked keys", """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -1.0)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", r"-\s*inf", r"exactly (0|zero)", r"large negative", r"not blocked")
W(g, "if mask: on an array", """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    if mask:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", r"if mask", r"truth value", r"ambiguous", r"is None", r"\.any\(\)|\.all\(\)")
W(g, "writes -inf into a shared score via in-place q scaling", """
def masked_attention(q, k, v, mask):
    q /= np.sqrt(q.shape[1])
    s = np.where(mask, q @ k.T, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention", *INPLACE)
W(g, "returns only the output", """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v
""", "masked_attention", r"tuple", r"\(output, weights\)", r"both", r"two (values|things|arrays)")
R(g, "large negative (-1e9) instead of -inf", """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = np.where(mask, s, -1e9)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ v, w
""", "masked_attention")
R(g, "softmax then zero and renormalise", """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    s = np.where(mask, s, s.min())
    e = np.exp(s - s.max(axis=1, keepdims=True)) * mask
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "masked_attention")
R(g, "returns a list [output, weights]? no: tuple built from a generator of row loops", """
def masked_attention(q, k, v, mask):
    rows = []
    for i in range(q.shape[0]):
        s = k[mask[i]] @ q[i] / np.sqrt(q.shape[1])
        e = np.exp(s - s.max())
        w = np.zeros(k.shape[0])
        w[mask[i]] = e / e.sum()
        rows.append(w)
    w = np.array(rows)
    return (w @ v, w)
""", "masked_attention")

# =============================================================================================
# Exercise 02
# =============================================================================================
g = "q02_weights_shape"
V(g, "no head axis", "(5, 5)", r"head", r"(all|every|both) heads", r"\bh\b")
V(g, "per-head width instead of keys", "(2, 5, 4)", r"d_head", r"keys", r"n_k", r"\(n_q, n_k\)", r"n, n")
V(g, "head axis last", "(5, 5, 2)", r"head axis first", r"head axis", r"order")
V(g, "d_model in the shape", "(2, 5, 8)", r"d_model", r"keys", r"n_k", r"\(n_q, n_k\)")
V(g, "tuple written as a string", "'(2, 5, 5)'", *TEXT)
V(g, "list of the two head matrices' size", "[2, 5, 5]", r"tuple", r"\blist\b")
V(g, "total count instead of a shape", "50", r"tuple", r"shape", r"a number", r"count")
V(g, "floats in the shape", "(2.0, 5.0, 5.0)", *WHOLE)
V(g, "batch axis invented", "(1, 2, 5, 5)", r"batch", r"(three|3) (axes|numbers|entries)", r"length", r"extra")
RV(g, "computed from named sizes", "(lambda h, n: (h, n, n))(2, 5)")
RV(g, "tuple() of a list", "tuple([2, 5, 5])")

g = "q02_split_heads"
W(g, "bare reshape", """
def split_heads(x, num_heads):
    n, d = x.shape
    return x.reshape(num_heads, n, d // num_heads)
""", "split_heads", r"reshape", r"bare", r"contents", r"transpos")
W(g, "reshape then transpose the wrong axes (0, 2, 1)", """
def split_heads(x, num_heads):
    n, d = x.shape
    return x.reshape(n, num_heads, d // num_heads).transpose(0, 2, 1)
""", "split_heads", r"transpose\(1, 0, 2\)", r"axes", r"head axis first", *TRANSPOSE)
W(g, "reshape (n, d_head, h) then move axes", """
def split_heads(x, num_heads):
    n, d = x.shape
    return x.reshape(n, d // num_heads, num_heads).transpose(2, 0, 1)
""", "split_heads", r"interleav", r"strided", r"every h-?th", r"consecutive", r"contiguous", r"slice")
W(g, "token axis first (n, h, d_head)", """
def split_heads(x, num_heads):
    n, d = x.shape
    return x.reshape(n, num_heads, d // num_heads)
""", "split_heads", r"head axis first", r"transpos", r"axes", r"\(num_heads, n, d_head\)", r"order")
W(g, "d_head with true division", """
def split_heads(x, num_heads):
    n, d = x.shape
    d_head = d / num_heads
    return np.stack([x[:, i * d_head:(i + 1) * d_head] for i in range(num_heads)])
""", "split_heads", r"float", r"//", r"integer", r"slice indices")
W(g, "slices the tokens instead of the features", """
def split_heads(x, num_heads):
    n, d = x.shape
    step = n // num_heads
    return np.stack([x[i * step:(i + 1) * step] for i in range(num_heads)])
""", "split_heads", r"tokens", r"rows", r"feature axis", r"axis 1", r"columns")
W(g, "np.split into d_head pieces", """
def split_heads(x, num_heads):
    d_head = x.shape[1] // num_heads
    return np.stack(np.split(x, d_head, axis=1))
""", "split_heads", r"num_heads (pieces|parts)", r"d_head (pieces|parts)", r"number of (heads|pieces)", r"swap")
W(g, "off-by-one slice end", """
def split_heads(x, num_heads):
    d_head = x.shape[1] // num_heads
    return np.stack([x[:, i * d_head:(i + 1) * d_head - 1] for i in range(num_heads)])
""", "split_heads", r"off.by.one", r"one (feature|column) (short|too few)", r"d_head - 1", r"not including")
W(g, "np.array_split on axis 0", """
def split_heads(x, num_heads):
    return np.stack(np.array_split(x, num_heads, axis=0))
""", "split_heads", r"tokens", r"rows", r"feature axis", r"axis ?(1|=\s*1|-1)", r"columns")
R(g, "np.split on the feature axis and stack", """
def split_heads(x, num_heads):
    return np.stack(np.split(x, num_heads, axis=-1), axis=0)
""", "split_heads")
R(g, "swapaxes after reshape", """
def split_heads(x, num_heads):
    n, d = x.shape
    return np.swapaxes(x.reshape(n, num_heads, d // num_heads), 0, 1)
""", "split_heads")
R(g, "einsum-free explicit loop with preallocation", """
def split_heads(x, num_heads):
    n, d = x.shape
    d_head = d // num_heads
    out = np.empty((num_heads, n, d_head), dtype=x.dtype)
    for i in range(num_heads):
        for t in range(n):
            out[i, t] = x[t, i * d_head:(i + 1) * d_head]
    return out
""", "split_heads")

g = "q02_merge_heads"
W(g, "bare reshape", """
def merge_heads(x):
    h, n, d = x.shape
    return x.reshape(n, h * d)
""", "merge_heads", r"reshape", r"bare", r"contents", r"transpos")
W(g, "concatenate along the token axis then reshape", """
def merge_heads(x):
    h, n, d = x.shape
    return np.concatenate(list(x), axis=0).reshape(n, h * d)
""", "merge_heads", r"reshape", r"axis", r"token", r"side by side", r"feature")
W(g, "transpose (1, 2, 0): features interleaved", """
def merge_heads(x):
    h, n, d = x.shape
    return x.transpose(1, 2, 0).reshape(n, h * d)
""", "merge_heads", r"interleav", r"transpose\(1, 0, 2\)", r"order", r"axes", r"head 0'?s features")
W(g, "sums the heads", """
def merge_heads(x):
    return x.sum(axis=0)
""", "merge_heads", r"\bsum", r"adds?", r"join", r"concatenat", r"\+")
W(g, "heads in reverse order", """
def merge_heads(x):
    return np.concatenate(list(x[::-1]), axis=1)
""", "merge_heads", r"revers", r"order", r"head 0 first", r"head 0'?s features")
W(g, "returns (h*d_head, n)", """
def merge_heads(x):
    h, n, d = x.shape
    return x.reshape(h * d, n)
""", "merge_heads", *TRANSPOSE, r"shape", r"\(n, h \* d_head\)")
W(g, "averages the heads", """
def merge_heads(x):
    return x.mean(axis=0)
""", "merge_heads", r"average", r"mean", r"concatenat", r"join")
W(g, "np.stack on axis 1 without reshape", """
def merge_heads(x):
    return np.stack(list(x), axis=1)
""", "merge_heads", r"shape", r"reshape", r"3-?d", r"(two|2) axes")
R(g, "np.hstack of the array", """
def merge_heads(x):
    return np.hstack(x)
""", "merge_heads")
R(g, "np.concatenate over a list on the last axis", """
def merge_heads(x):
    return np.concatenate([x[i] for i in range(x.shape[0])], axis=-1)
""", "merge_heads")
R(g, "moveaxis then reshape with -1", """
def merge_heads(x):
    return np.moveaxis(x, 0, 1).reshape(x.shape[1], -1)
""", "merge_heads")

PHA_OK = """
def _split(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)
def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""
g = "q02_per_head_attention"
W(g, "scale by sqrt(d_model)", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[1]))
    return w @ v, w
""", "per_head_attention", *D_MODEL_SCALE)
W(g, "bare-reshape split", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    n, d = x.shape
    q, k, v = ((x @ w).reshape(num_heads, n, d // num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(d // num_heads))
    return w @ v, w
""", "per_head_attention", r"reshape", r"split", r"contents", r"transpos")
W(g, "k.T on a 3-d array", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.T / np.sqrt(q.shape[-1]))
    return w @ v, w
""", "per_head_attention", r"\.T\b", r"(all|reverses?) (the )?(three )?axes", r"swapaxes|transpose\(0, 2, 1\)", r"last two axes")
W(g, "softmax over the queries", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""", "per_head_attention", *SOFTMAX_AXIS)
W(g, "one big head, then split the output", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    w = _softmax(q @ k.T / np.sqrt(q.shape[1] // num_heads))
    return _split(w @ v, num_heads), np.stack([w] * num_heads)
""", "per_head_attention", r"(every|each) head", r"one head", r"per head", r"same weights", r"split (before|first)")
W(g, "returns merged outputs", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    o = w @ v
    return o.transpose(1, 0, 2).reshape(x.shape[0], -1), w
""", "per_head_attention", r"merg", r"\(h, n, d_head\)", r"shape", r"concatenat")
W(g, "weights transposed (keys as rows)", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    return w @ v, w.transpose(0, 2, 1)
""", "per_head_attention", *TRANSPOSE)
W(g, "w_q used for the keys too", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_q, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    return w @ v, w
""", "per_head_attention", r"w_k", r"same (weight|projection)", r"keys?\b[^.]{0,30}w_q")
W(g, "splits x first, then projects each head with a column slice of the full x", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    d_head = x.shape[1] // num_heads
    outs, ws = [], []
    for i in range(num_heads):
        cols = slice(i * d_head, (i + 1) * d_head)
        xi = x[:, cols]
        q, k, v = xi @ w_q[cols, cols], xi @ w_k[cols, cols], xi @ w_v[cols, cols]
        w = _softmax(q @ k.T / np.sqrt(d_head))
        outs.append(w @ v); ws.append(w)
    return np.stack(outs), np.stack(ws)
""", "per_head_attention", r"project (first|before)", r"split (after|the projections)", r"whole (of )?x", r"all (of the )?features", r"block")
W(g, "causal mask added although none is asked", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    n = x.shape[0]
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    w = _softmax(s)
    return w @ v, w
""", "per_head_attention", r"causal", r"without a mask", r"no mask", r"mask")
W(g, "outputs and weights swapped in the return", PHA_OK + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    return w, w @ v
""", "per_head_attention", r"order", r"swap", r"\(outputs, weights\)", r"(outputs|weights) first")
R(g, "loop over heads with slices, np.stack", """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    d_head = x.shape[1] // num_heads
    Q, K, V = x @ w_q, x @ w_k, x @ w_v
    outs, ws = [], []
    for i in range(num_heads):
        c = slice(i * d_head, (i + 1) * d_head)
        s = Q[:, c] @ K[:, c].T / np.sqrt(d_head)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        w = e / e.sum(axis=1, keepdims=True)
        outs.append(w @ V[:, c]); ws.append(w)
    return np.stack(outs), np.stack(ws)
""", "per_head_attention")
R(g, "einsum throughout", """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    n, d = x.shape
    dh = d // num_heads
    q, k, v = (np.einsum("nd,de->ne", x, w).reshape(n, num_heads, dh) for w in (w_q, w_k, w_v))
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(dh)
    s = s - s.max(-1, keepdims=True)
    w = np.exp(s); w /= w.sum(-1, keepdims=True)
    return np.einsum("hqk,khd->hqd", w, v), w
""", "per_head_attention")

FL_OK = """
def _split(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)
def _merge(x):
    h, n, d = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * d)
def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""


def FL(name, body, *causes):
    W("q02_full_layer", name, FL_OK + dedent(body), "multi_head_layer", *causes)


FL("mask polarity inverted", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, -np.inf, s)
        out.append(_merge(_softmax(s) @ v) @ w_o)
    return np.stack(out)
""", *MASK_POLARITY)
FL("0/1 mask added to the scores", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = s + mask
        out.append(_merge(_softmax(s) @ v) @ w_o)
    return np.stack(out)
""", *MASK_DATA)
FL("mask ignored", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        out.append(_merge(_softmax(s) @ v) @ w_o)
    return np.stack(out)
""", *MASK_FORGOT)
FL("w_o forgotten", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        out.append(_merge(_softmax(s) @ v))
    return np.stack(out)
""", r"w_o", r"output projection", r"W_O")
FL("sequences of the batch attend to each other", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    b, n, d = x.shape
    flat = x.reshape(b * n, d)
    q, k, v = (_split(flat @ w, num_heads) for w in (w_q, w_k, w_v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(np.kron(np.ones((b, b)), mask).astype(bool), s, -np.inf)
    return (_merge(_softmax(s) @ v) @ w_o).reshape(b, n, d)
""", r"batch", r"(within|each) (its own |own )?sequence", r"across (the )?sequences", r"other sequences", r"each other")
FL("scale by sqrt(d_model)", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(xb.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        out.append(_merge(_softmax(s) @ v) @ w_o)
    return np.stack(out)
""", *D_MODEL_SCALE)
FL("if mask: on an array", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask:
            s = np.where(mask, s, -np.inf)
        out.append(_merge(_softmax(s) @ v) @ w_o)
    return np.stack(out)
""", r"if mask", r"truth value", r"ambiguous", r"is None", r"is not None")
FL("always causal, whatever the mask", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    n = x.shape[1]
    causal = np.tril(np.ones((n, n), dtype=bool))
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = np.where(causal, q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), -np.inf)
        out.append(_merge(_softmax(s) @ v) @ w_o)
    return np.stack(out)
""", r"causal", r"(given|the) mask (argument|you are given|passed)", r"(random|no) mask")
FL("mask after the softmax, rows not renormalised", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        wts = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
        if mask is not None:
            wts = wts * mask
        out.append(_merge(wts @ v) @ w_o)
    return np.stack(out)
""", r"after (the )?softmax", r"before (the )?softmax", r"renormali[sz]", r"sum to (1|one)")
FL("mask transposed", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask.T, s, -np.inf)
        out.append(_merge(_softmax(s) @ v) @ w_o)
    return np.stack(out)
""", *TRANSPOSE)
FL("bare reshape to split and merge", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    b, n, d = x.shape
    out = []
    for xb in x:
        q, k, v = ((xb @ w).reshape(num_heads, n, d // num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d // num_heads)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        out.append((_softmax(s) @ v).reshape(n, d) @ w_o)
    return np.stack(out)
""", r"reshape", r"split", r"contents", r"transpos")
FL("calls the course's multi_head_attention", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    from mha_helpers import multi_head_attention
    return multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=num_heads, mask=mask)
""", *FORBIDDEN, r"multi_head_attention")
FL("w_o applied before merging, per head with the whole matrix", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    out = []
    for xb in x:
        q, k, v = (_split(xb @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        o = _softmax(s) @ v
        dh = o.shape[-1]
        out.append(sum(o[i] @ w_o[:dh] for i in range(num_heads)))
    return np.stack(out)
""", r"w_o", r"(block|rows) of w_o", r"head i'?s (block|rows)", r"same rows")
R("q02_full_layer", "leading batch axis, -1e30 for blocked scores", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    b, n, d = x.shape
    dh = d // num_heads
    def split(t):
        return t.reshape(b, n, num_heads, dh).transpose(0, 2, 1, 3)
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(dh)
    if mask is not None:
        s = np.where(mask[None, None], s, -1e30)
    s = s - s.max(-1, keepdims=True)
    a = np.exp(s); a = a / a.sum(-1, keepdims=True)
    o = (a @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
    return o @ w_o
""", "multi_head_layer")
R("q02_full_layer", "W_O applied as a sum over heads' blocks", """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    b, n, d = x.shape
    dh = d // num_heads
    out = np.zeros((b, n, w_o.shape[1]))
    for bi in range(b):
        for i in range(num_heads):
            c = slice(i * dh, (i + 1) * dh)
            s = (x[bi] @ w_q[:, c]) @ (x[bi] @ w_k[:, c]).T / np.sqrt(dh)
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            a = e / e.sum(axis=1, keepdims=True)
            out[bi] += (a @ (x[bi] @ w_v[:, c])) @ w_o[c]
    return out
""", "multi_head_layer")

# =============================================================================================
# Exercise 03
# =============================================================================================
g = "q03_d_head"
V(g, "true division gives 64.0", "768 / 12", *WHOLE, target="d_head")
V(g, "heads times d_model", "768 * 12", r"divid", r"768\s*//\s*12", r"d_model\s*//\s*h", r"multipl")
V(g, "string", "'64'", *TEXT, target="d_head")
V(g, "d_model itself", "768", r"divid", r"one head", r"split", r"d_model\s*//", target="d_head")
V(g, "number of heads", "12", r"heads?,? not", r"width", r"number of heads", target="d_head")
V(g, "the 3 projections' width (3 * 64)", "192", r"three|3\b", r"q, k(,| and) v", r"one head", target="d_head")
V(g, "off by a factor two (half the width)", "32", r"half", r"factor", r"768\s*/\s*24", target="d_head")
V(g, "numpy float from np.divide", "np.divide(768, 12)", *WHOLE, target="d_head")
RV(g, "floor division", "768 // 12", target="d_head")
RV(g, "int() of a true division", "int(768 / 12)", target="d_head")

g = "q03_identity_output"
V(g, "the w_mix output reused", "[4.0, 6.0, -2.0, -2.0]", r"w_mix", r"identity", r"np\.eye", target="identity_output")
V(g, "the heads added", "np.array([4.0, 6.0])", r"add", r"\+", r"concatenat", r"(four|4) (numbers|entries|features)", r"join", target="identity_output")
V(g, "heads joined in reverse order", "[3.0, 4.0, 1.0, 2.0]", r"order", r"revers", r"head 0 first", r"head 0'?s features", target="identity_output")
V(g, "average of the heads", "[2.0, 3.0]", r"average", r"mean", r"concatenat", r"(four|4) (numbers|entries|features)", target="identity_output")
V(g, "stacked 2x2 instead of joined", "np.array([[1.0, 2.0], [3.0, 4.0]])", r"shape", r"stack", r"flat", r"(four|4) (numbers|entries)", r"1-?d", target="identity_output")
V(g, "interleaved features", "[1.0, 3.0, 2.0, 4.0]", r"interleav", r"order", r"head 0'?s features", target="identity_output")
V(g, "the sum of the joined vector", "10.0", r"sum", r"(four|4) (numbers|entries)", r"vector", r"list", target="identity_output")
V(g, "string of the list", "'[1, 2, 3, 4]'", *TEXT, target="identity_output")
V(g, "the identity matrix itself", "np.eye(4)", r"matrix", r"shape", r"identity", r"(four|4) (numbers|entries)", target="identity_output")
RV(g, "list of ints", "[1, 2, 3, 4]", target="identity_output")
RV(g, "computed with np.eye", "np.concatenate([np.array([1.0, 2.0]), np.array([3.0, 4.0])]) @ np.eye(4)", target="identity_output")
RV(g, "tuple-free numpy arange", "np.arange(1.0, 5.0)", target="identity_output")

g = "q03_concat_vs_average"
CVA_A = (r"undo", r"averag\w*[^.]{0,60}(lose|loses|lost|cannot|can.t|not invertible|same vector)", r"information")
V(g, "a: W_O can undo it", "'a'", *CVA_A, target="concat_vs_average")
V(g, "c: just a factor h", "'c'", r"factor", r"shrink", r"(multiply|multiplying|scal\w*)[^.]{0,40}(h|average)", r"information", r"same vector", target="concat_vs_average")
V(g, "d: weights sum to one", "'d'", r"sum to (one|1)", r"(each|every) head'?s? (own )?weights", r"per head", r"softmax", target="concat_vs_average")
V(g, "two letters", "'b, c'", r"one letter", r"single letter", r"(only )?one (answer|option)", target="concat_vs_average")
V(g, "the statement's number", "2", *TEXT, r"letter", target="concat_vs_average")
V(g, "the letter in a list", "['b']", *TEXT, r"letter", r"\blist\b", target="concat_vs_average")
V(g, "the statement text instead of the letter", "'Concatenating keeps each head separate'", r"one letter", r"single letter", r"the letter", target="concat_vs_average")
RV(g, "capital letter", "'B'", target="concat_vs_average")
RV(g, "letter with spaces", "' b '", target="concat_vs_average")

g = "q03_concat_project"
W(g, "heads added with +", """
def concat_project(head_outputs, w_o):
    total = head_outputs[0]
    for o in head_outputs[1:]:
        total = total + o
    return total @ w_o
""", "concat_project", r"\+", r"add", r"sum", r"join", r"concatenat")
W(g, "concatenate along the token axis", """
def concat_project(head_outputs, w_o):
    return np.concatenate(list(head_outputs), axis=0) @ w_o
""", "concat_project", r"axis", r"token", r"feature", r"side by side", r"last axis")
W(g, "bare reshape of the stacked heads", """
def concat_project(head_outputs, w_o):
    a = np.asarray(head_outputs)
    h, n, d = a.shape
    return a.reshape(n, h * d) @ w_o
""", "concat_project", r"reshape", r"bare", r"contents", r"transpos")
W(g, "array-only transpose (crashes on a list)", """
def concat_project(head_outputs, w_o):
    h, n, d = head_outputs.shape
    return head_outputs.transpose(1, 0, 2).reshape(n, h * d) @ w_o
""", "concat_project", r"\blist\b", r"np\.asarray", r"np\.array", r"attribute")
W(g, "averages the heads then tiles", """
def concat_project(head_outputs, w_o):
    a = np.asarray(head_outputs)
    m = a.mean(axis=0)
    return np.tile(m, (1, a.shape[0])) @ w_o
""", "concat_project", r"average", r"mean", r"concatenat", r"join")
W(g, "interleaved features via stack axis=2", """
def concat_project(head_outputs, w_o):
    a = np.stack(list(head_outputs), axis=2)
    return a.reshape(a.shape[0], -1) @ w_o
""", "concat_project", r"interleav", r"order", r"head 0'?s (row|features)", r"axis")
W(g, "w_o transposed", """
def concat_project(head_outputs, w_o):
    joined = np.concatenate(list(head_outputs), axis=-1)
    return joined @ w_o.T
""", "concat_project", *TRANSPOSE)
W(g, "heads in reverse order", """
def concat_project(head_outputs, w_o):
    return np.concatenate(list(head_outputs)[::-1], axis=-1) @ w_o
""", "concat_project", r"revers", r"order", r"head 0 first", r"head 0'?s (row|features)")
W(g, "calls the course's merge_heads", """
def concat_project(head_outputs, w_o):
    from mha_helpers import merge_heads
    return merge_heads(np.asarray(head_outputs)) @ w_o
""", "concat_project", *FORBIDDEN, r"merge_heads")
W(g, "projects each head with the first block of w_o", """
def concat_project(head_outputs, w_o):
    a = np.asarray(head_outputs)
    d = a.shape[-1]
    return sum(o @ w_o[:d] for o in a)
""", "concat_project", r"block", r"rows of w_o", r"head i'?s (block|rows)", r"same rows")
W(g, "returns the joined heads without projecting", """
def concat_project(head_outputs, w_o):
    return np.concatenate(list(head_outputs), axis=-1)
""", "concat_project", r"w_o", r"project", r"W_O")
W(g, "projection before the join (w_o @ joined.T)", """
def concat_project(head_outputs, w_o):
    joined = np.concatenate(list(head_outputs), axis=1)
    return (w_o.T @ joined.T)
""", "concat_project", *TRANSPOSE, r"shape", r"\(n, d_model\)")
R(g, "np.hstack (list or array)", """
def concat_project(head_outputs, w_o):
    return np.hstack(head_outputs) @ w_o
""", "concat_project")
R(g, "stack on axis 1 then reshape", """
def concat_project(head_outputs, w_o):
    a = np.stack([np.asarray(o) for o in head_outputs], axis=1)
    return a.reshape(a.shape[0], -1) @ w_o
""", "concat_project")
R(g, "sum over heads of o_i @ W_O block i", """
def concat_project(head_outputs, w_o):
    outs = [np.asarray(o, dtype=float) for o in head_outputs]
    d = outs[0].shape[1]
    return sum(o @ w_o[i * d:(i + 1) * d] for i, o in enumerate(outs))
""", "concat_project")

# =============================================================================================
# Exercise 04
# =============================================================================================
g = "q04_params"
W(g, "uses d_model for the heads' width", """
def count_params(d_model, num_heads, bias):
    n = 4 * d_model * d_model
    if bias:
        n += 4 * d_model
    return n
""", "count_params", r"num_heads \* d_head", r"(does not|doesn.t|not) divide", r"less than d_model", r"narrower", r"d_head")
W(g, "bias ignored", """
def count_params(d_model, num_heads, bias):
    d_head = d_model // num_heads
    return 4 * d_model * num_heads * d_head
""", "count_params", r"bias")
W(g, "w_o's bias counted at the heads' width", """
def count_params(d_model, num_heads, bias):
    inner = num_heads * (d_model // num_heads)
    return 4 * d_model * inner + (4 * inner if bias else 0)
""", "count_params", r"bias\w*[^.]{0,60}(w_o|output)", r"(w_o|output projection)\W[^.]{0,60}bias", r"output feature")
W(g, "w_o forgotten", """
def count_params(d_model, num_heads, bias):
    inner = num_heads * (d_model // num_heads)
    return 3 * d_model * inner + (3 * inner if bias else 0)
""", "count_params", r"w_o", r"output projection", r"W_O")
W(g, "every head gets full-width projections", """
def count_params(d_model, num_heads, bias):
    d_head = d_model // num_heads
    per_head = 4 * d_model * d_head * num_heads + (3 * d_head * num_heads + d_model if bias else 0)
    return per_head * num_heads
""", "count_params", r"per head", r"(every|each) head", r"times (h|num_heads|the (number of )?heads)", r"multipl\w* by (h|num_heads)", r"grows with")
W(g, "true division for d_head", """
def count_params(d_model, num_heads, bias):
    d_head = d_model / num_heads
    inner = num_heads * d_head
    return 4 * d_model * inner + (3 * inner + d_model if bias else 0)
""", "count_params", *WHOLE)
W(g, "one bias per projection", """
def count_params(d_model, num_heads, bias):
    inner = num_heads * (d_model // num_heads)
    return 4 * d_model * inner + (4 if bias else 0)
""", "count_params", r"bias\w*[^.]{0,40}(per|each|every) (output )?feature", r"one bias per", r"bias")
W(g, "only one head's Q, K, V counted", """
def count_params(d_model, num_heads, bias):
    d_head = d_model // num_heads
    inner = num_heads * d_head
    return 3 * d_model * d_head + inner * d_model + (3 * d_head + d_model if bias else 0)
""", "count_params", r"one head", r"(all|every) heads?", r"num_heads \* d_head", r"per head")
W(g, "biases counted twice (a bias per input and per output feature)", """
def count_params(d_model, num_heads, bias):
    inner = num_heads * (d_model // num_heads)
    return 4 * d_model * inner + (4 * (d_model + inner) if bias else 0)
""", "count_params", r"bias")
W(g, "returns a float via math", """
def count_params(d_model, num_heads, bias):
    import math
    inner = num_heads * math.floor(d_model / num_heads)
    return float(4 * d_model * inner + (3 * inner + d_model if bias else 0))
""", "count_params", *WHOLE)
W(g, "calls the course's attention_params", """
def count_params(d_model, num_heads, bias):
    from mha_helpers import attention_params
    return attention_params(d_model, num_heads, bias=bias)
""", "count_params", *FORBIDDEN, r"attention_params")
R(g, "entries summed from the shapes", """
def count_params(d_model, num_heads, bias):
    inner = (d_model // num_heads) * num_heads
    shapes = [(d_model, inner)] * 3 + [(inner, d_model)]
    total = sum(r * c for r, c in shapes)
    if bias:
        total += sum(c for _, c in shapes)
    return int(total)
""", "count_params")
R(g, "bias as an int factor", """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    return 4 * d_model * hd + int(bool(bias)) * (3 * hd + d_model)
""", "count_params")

g = "q04_flops"
FLOP_CORRECT = """
    hd = d_model // num_heads
    inner = num_heads * hd
"""
W(g, "multiply-adds, not FLOPs", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 4 * n * d_model * inner + 2 * num_heads * n * n * hd
""", "count_flops", r"multiply.adds?", r"factor (of )?2", r"2 FLOPs", r"twice", r"half")
W(g, "output projection forgotten", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 2 * (3 * n * d_model * inner + 2 * num_heads * n * n * hd)
""", "count_flops", r"w_o", r"output projection", r"W_O")
W(g, "only the Q projection", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 2 * (n * d_model * inner + 2 * num_heads * n * n * hd + n * inner * d_model)
""", "count_flops", r"\bK and V\b", r"(k|key)s? and (v|value)s? projections?", r"(three|3|all) (input )?projections", r"only (the )?q")
W(g, "weighted sum of the values forgotten", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 2 * (4 * n * d_model * inner + num_heads * n * n * hd)
""", "count_flops", r"weighted sum", r"(A|weights)\s*(@|v)", r"values", r"AV\b")
W(g, "scores counted for one head only", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 2 * (4 * n * d_model * inner + 2 * n * n * hd)
""", "count_flops", r"(every|each|all) heads?", r"per head", r"one head", r"times (h|num_heads)")
W(g, "softmax counted too", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 2 * (4 * n * d_model * inner + 2 * num_heads * n * n * hd) + 5 * num_heads * n * n
""", "count_flops", r"softmax")
W(g, "projections counted per head at full width", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    return 2 * num_heads * (4 * n * d_model * d_model + 2 * n * n * hd)
""", "count_flops", r"per head", r"(every|each) head", r"times (h|num_heads)", r"projections?[^.]{0,40}(once|shared|all heads)")
W(g, "d_model used for the heads' width (ignores non-dividing h)", """
def count_flops(n, d_model, num_heads):
    return 2 * (4 * n * d_model * d_model + 2 * n * n * d_model)
""", "count_flops", r"num_heads \* d_head", r"(does not|doesn.t|not) divide", r"less than d_model", r"d_head")
W(g, "true division d_head, float result", """
def count_flops(n, d_model, num_heads):
    hd = d_model / num_heads
    return 2 * (4 * n * d_model * num_heads * hd + 2 * num_heads * n * n * hd)
""", "count_flops", *WHOLE)
W(g, "K and V counted as one projection", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 2 * (2 * n * d_model * inner + 2 * num_heads * n * n * hd + n * inner * d_model)
""", "count_flops", r"\bK and V\b", r"(k|key)s? and (v|value)s?", r"(three|3|all) (input )?projections", r"v projection")
W(g, "score product counted as n*n (no d_head)", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 2 * (4 * n * d_model * inner + num_heads * n * n + num_heads * n * n * hd)
""", "count_flops", r"scores", r"QK", r"d_head", r"a \* b \* c")
W(g, "four FLOPs per multiply-add", """
def count_flops(n, d_model, num_heads):
    hd = d_model // num_heads
    inner = num_heads * hd
    return 4 * (4 * n * d_model * inner + 2 * num_heads * n * n * hd)
""", "count_flops", r"2 FLOPs", r"multiply.add", r"factor", r"twice", r"double")
W(g, "calls the course's attention_flops", """
def count_flops(n, d_model, num_heads):
    from mha_helpers import attention_flops
    return attention_flops(n, d_model, num_heads)
""", "count_flops", *FORBIDDEN, r"attention_flops")
R(g, "product by product with a helper", """
def count_flops(n, d_model, num_heads):
    def mm(a, b, c):
        return 2 * a * b * c
    dh = d_model // num_heads
    total = 3 * mm(n, d_model, num_heads * dh)
    total += num_heads * (mm(n, dh, n) + mm(n, n, dh))
    total += mm(n, num_heads * dh, d_model)
    return total
""", "count_flops")
R(g, "factored formula", """
def count_flops(n, d_model, num_heads):
    inner = num_heads * (d_model // num_heads)
    return 4 * n * inner * (2 * d_model + n)
""", "count_flops")

g = "q04_changes_with_h"
V(g, "FLOPs said to change", "(False, True, True, True)", r"flops", target="changes_with_h")
V(g, "parameters said to change", "(True, False, True, True)", r"param", target="changes_with_h")
V(g, "attention weights said not to change", "(False, False, False, True)", r"(attention )?weights", r"h \* n|n \* n|per head", target="changes_with_h")
V(g, "d_head said not to change", "(False, False, True, False)", r"d_head", target="changes_with_h")
V(g, "meaning of True inverted", "(True, True, False, False)", r"True means", r"inverted|opposite|the other way", r"changes", target="changes_with_h")
V(g, "tuple as a string", "'(False, False, True, True)'", *TEXT, target="changes_with_h")
V(g, "strings instead of booleans", "('False', 'False', 'True', 'True')", r"bool", r"True/False", r"string", r"text", r"quot", target="changes_with_h")
V(g, "only three values", "(False, False, True)", r"four", r"4", r"length", r"one (value|entry) per", target="changes_with_h")
V(g, "everything changes", "(True, True, True, True)", r"param", r"flops", target="changes_with_h")
RV(g, "built with a comparison", "tuple(x != 0 for x in (0, 0, 1, 1))", target="changes_with_h")
RV(g, "numpy bools turned into Python bools", "tuple(bool(b) for b in np.array([False, False, True, True]))", target="changes_with_h")

g = "q04_weight_entries"
V(g, "one head only", "1024 * 1024", r"(all|every|12) heads", r"per head", r"one head", r"times (12|the (number of )?heads|h)", target="weight_entries")
V(g, "only the causal half", "12 * 1024 * 1025 // 2", r"causal", r"half", r"diagonal", r"zeros", r"n\(n\+1\)", r"every entry", target="weight_entries")
V(g, "bytes in float32", "12 * 1024 * 1024 * 4", r"bytes", r"float32", r"entries,? not", r"4 bytes", target="weight_entries")
V(g, "rounded to 5 significant figures", "12583000", r"exact", r"round", target="weight_entries")
V(g, "whole-number float", "12582912.0", *WHOLE, target="weight_entries")
V(g, "formatted string", "'12,582,912'", *TEXT, target="weight_entries")
V(g, "all 12 layers", "12 * 12 * 1024 * 1024", r"(one|single) layer", r"layers", target="weight_entries")
V(g, "n times d_model", "12 * 1024 * 768", r"d_model", r"n\s*[x×*]\s*n", r"keys", target="weight_entries")
V(g, "n times d_head per head", "12 * 1024 * 64", r"d_head", r"n\s*[x×*]\s*n", r"keys", target="weight_entries")
V(g, "off by one: positions 1023", "12 * 1023 * 1023", r"off.by.one", r"1024", r"tokens", target="weight_entries")
V(g, "scientific float", "1.2582912e7", *WHOLE, target="weight_entries")
V(g, "the strict lower triangle", "12 * 1024 * 1023 // 2", r"causal", r"half", r"diagonal", r"zeros", r"every entry", target="weight_entries")
RV(g, "power of two", "12 * 2**20", target="weight_entries")
RV(g, "int() of a computed float", "int(12 * 1024.0 ** 2)", target="weight_entries")

# =============================================================================================
# Exercise 05
# =============================================================================================
GQA_OK = """
def _split(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)
def _merge(x):
    h, n, d = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * d)
def _attend(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v
"""


def GQ(name, body, *causes):
    W("q05_gqa", name, GQA_OK + dedent(body), "gqa", *causes)


GROUP_IDX = (r"i\s*//\s*(group|\(?num_heads\s*//\s*num_kv_heads)", r"group size", r"//\s*num_kv_heads",
             r"(wrong|which) (kv|key.value) head", r"group'?s (kv|key.value) head", r"head.group")
GQ("kv head i // num_kv_heads", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    q = _split(x @ w_q, num_heads)
    k, v = _split(x @ w_k, num_kv_heads), _split(x @ w_v, num_kv_heads)
    outs = [_attend(q[i], k[min(i // num_kv_heads, num_kv_heads - 1)], v[min(i // num_kv_heads, num_kv_heads - 1)]) for i in range(num_heads)]
    return _merge(np.stack(outs)) @ w_o
""", *GROUP_IDX)
GQ("kv head i % num_kv_heads (interleaved)", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    q = _split(x @ w_q, num_heads)
    k, v = _split(x @ w_k, num_kv_heads), _split(x @ w_v, num_kv_heads)
    outs = [_attend(q[i], k[i % num_kv_heads], v[i % num_kv_heads]) for i in range(num_heads)]
    return _merge(np.stack(outs)) @ w_o
""", r"modulo", r"%", r"interleav", r"round.robin", r"consecutive", r"cycl", r"np\.tile")
GQ("np.tile instead of np.repeat", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)
    k = np.tile(_split(x @ w_k, num_kv_heads), (g, 1, 1))
    v = np.tile(_split(x @ w_v, num_kv_heads), (g, 1, 1))
    return _merge(_attend(q, k, v)) @ w_o
""", r"np\.tile", r"tile", r"np\.repeat", r"interleav", r"consecutive", r"%", r"modulo")
GQ("every query head reads KV head 0", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    q = _split(x @ w_q, num_heads)
    k, v = _split(x @ w_k, num_kv_heads), _split(x @ w_v, num_kv_heads)
    return _merge(_attend(q, k[0], v[0])) @ w_o
""", r"(only|always)[^.]{0,30}(first|head 0|one kv head)", r"kv head 0", r"every query head[^.]{0,30}(same|first)", *GROUP_IDX)
GQ("scale by sqrt(d_model)", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)
    k = np.repeat(_split(x @ w_k, num_kv_heads), g, axis=0)
    v = np.repeat(_split(x @ w_v, num_kv_heads), g, axis=0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[1])
    e = np.exp(s - s.max(-1, keepdims=True))
    return _merge((e / e.sum(-1, keepdims=True)) @ v) @ w_o
""", *D_MODEL_SCALE)
GQ("output projection forgotten", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)
    k = np.repeat(_split(x @ w_k, num_kv_heads), g, axis=0)
    v = np.repeat(_split(x @ w_v, num_kv_heads), g, axis=0)
    return _merge(_attend(q, k, v))
""", r"w_o", r"output projection", r"W_O")
GQ("group computed upside down (num_kv_heads // num_heads)", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_kv_heads // num_heads
    q = _split(x @ w_q, num_heads)
    k, v = _split(x @ w_k, num_kv_heads), _split(x @ w_v, num_kv_heads)
    outs = [_attend(q[i], k[i // g], v[i // g]) for i in range(num_heads)]
    return _merge(np.stack(outs)) @ w_o
""", r"num_heads\s*//\s*num_kv_heads", r"zero ?division", r"division by zero", r"group size", r"upside down")
GQ("K and V split into num_heads heads", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    q = _split(x @ w_q, num_heads)
    k, v = _split(x @ w_k, num_heads), _split(x @ w_v, num_heads)
    return _merge(_attend(q, k, v)) @ w_o
""", r"num_kv_heads (heads|pieces)", r"split\w*[^.]{0,40}num_kv_heads", r"kv heads", r"d_head")
GQ("causal mask although no mask is asked", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    n = x.shape[0]
    q = _split(x @ w_q, num_heads)
    k = np.repeat(_split(x @ w_k, num_kv_heads), g, axis=0)
    v = np.repeat(_split(x @ w_v, num_kv_heads), g, axis=0)
    s = np.where(np.tril(np.ones((n, n), bool)), q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return _merge((e / e.sum(-1, keepdims=True)) @ v) @ w_o
""", r"causal", r"no mask", r"without a mask", r"mask")
GQ("KV heads mapped in reverse", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)
    k, v = _split(x @ w_k, num_kv_heads), _split(x @ w_v, num_kv_heads)
    outs = [_attend(q[i], k[num_kv_heads - 1 - i // g], v[num_kv_heads - 1 - i // g]) for i in range(num_heads)]
    return _merge(np.stack(outs)) @ w_o
""", r"revers", *GROUP_IDX)
GQ("K repeated but V not (v from head 0 pattern)", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)
    k = np.repeat(_split(x @ w_k, num_kv_heads), g, axis=0)
    v = np.tile(_split(x @ w_v, num_kv_heads), (g, 1, 1))
    return _merge(_attend(q, k, v)) @ w_o
""", r"\bv\b[^.]{0,40}(repeat|group|tile|different)", r"values?[^.]{0,40}(repeat|group|kv head)", r"(k|keys) and (v|values)[^.]{0,30}(same|differ)")
GQ("queries averaged per group (MQA-style reduction)", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)
    qg = q.reshape(num_kv_heads, g, *q.shape[1:]).mean(axis=1)
    k, v = _split(x @ w_k, num_kv_heads), _split(x @ w_v, num_kv_heads)
    o = np.repeat(_attend(qg, k, v), g, axis=0)
    return _merge(o) @ w_o
""", r"(every|each) query head", r"own quer", r"average\w*[^.]{0,30}quer", r"queries[^.]{0,30}(averag|mean|shared)")
GQ("calls the course's grouped_query_attention", """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    from mha_helpers import grouped_query_attention
    return grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads=num_heads, num_kv_heads=num_kv_heads)
""", *FORBIDDEN, r"grouped_query_attention")
R("q05_gqa", "np.repeat with the allowed course helpers", """
from mha_helpers import merge_heads, scaled_dot_product_attention, split_heads
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    q = split_heads(x @ w_q, num_heads)
    k = np.repeat(split_heads(x @ w_k, num_kv_heads), g, axis=0)
    v = np.repeat(split_heads(x @ w_v, num_kv_heads), g, axis=0)
    out, _ = scaled_dot_product_attention(q, k, v)
    return merge_heads(out) @ w_o
""", "gqa")
R("q05_gqa", "grouped reshape without repeating K and V", GQA_OK + """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    n = x.shape[0]
    q = _split(x @ w_q, num_heads).reshape(num_kv_heads, g, n, -1)
    k = _split(x @ w_k, num_kv_heads)[:, None]
    v = _split(x @ w_v, num_kv_heads)[:, None]
    o = _attend(q, k, v).reshape(num_heads, n, -1)
    return _merge(o) @ w_o
""", "gqa")
R("q05_gqa", "loop over query heads with the group index", GQA_OK + """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    group = num_heads // num_kv_heads
    q = _split(x @ w_q, num_heads)
    k, v = _split(x @ w_k, num_kv_heads), _split(x @ w_v, num_kv_heads)
    outs = []
    for i in range(num_heads):
        j = i // group
        outs.append(_attend(q[i], k[j], v[j]))
    return np.concatenate(outs, axis=-1) @ w_o
""", "gqa")

g = "q05_mean_pool"
W(g, "sum instead of mean", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh, g = c // num_heads, num_heads // num_kv_heads
    return w.reshape(d, num_kv_heads, g, dh).sum(axis=2).reshape(d, -1)
""", "mean_pool_kv", r"\bsum", r"mean", r"average", r"divid\w* by (the )?group", r"factor")
W(g, "groups interleaved (heads j, j+kv, ...)", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh, g = c // num_heads, num_heads // num_kv_heads
    return w.reshape(d, g, num_kv_heads, dh).mean(axis=1).reshape(d, -1)
""", "mean_pool_kv", r"interleav", r"consecutive", r"stride", r"%", r"modulo")
W(g, "averages over the feature columns inside each head", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh = c // num_heads
    heads = w.reshape(d, num_heads, dh)
    return heads.reshape(d, num_kv_heads, -1).mean(axis=2).repeat(dh, axis=1)
""", "mean_pool_kv", r"(feature|column)s? (inside|within)", r"axis", r"d_head", r"heads of (the|a) group")
W(g, "keeps the first head of each group", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh, g = c // num_heads, num_heads // num_kv_heads
    return np.concatenate([w[:, j * g * dh:(j * g + 1) * dh] for j in range(num_kv_heads)], axis=1)
""", "mean_pool_kv", r"first head", r"only (one|the first)", r"subsampl", r"pick", r"mean", r"average")
W(g, "d_head from d_model", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh, g = d // num_heads, num_heads // num_kv_heads
    return np.stack([w[:, j * g * dh:(j + 1) * g * dh].reshape(d, g, dh).mean(axis=1) for j in range(num_kv_heads)], axis=1).reshape(d, -1)
""", "mean_pool_kv", r"d_model", r"w\.shape\[1\]", r"need not", r"columns", r"d_head")
W(g, "averages over the rows (input features)", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh = c // num_heads
    g = num_heads // num_kv_heads
    m = w.reshape(d, num_kv_heads, g, dh).mean(axis=0)
    return np.broadcast_to(m.mean(axis=1).reshape(1, -1), (d, num_kv_heads * dh)).copy()
""", "mean_pool_kv", r"axis", r"rows", r"input features")
W(g, "output transposed", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh, g = c // num_heads, num_heads // num_kv_heads
    return w.reshape(d, num_kv_heads, g, dh).mean(axis=2).reshape(d, -1).T
""", "mean_pool_kv", *TRANSPOSE, r"shape")
W(g, "mean over all heads for every KV head", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh = c // num_heads
    m = w.reshape(d, num_heads, dh).mean(axis=1)
    return np.tile(m, (1, num_kv_heads))
""", "mean_pool_kv", r"(all|every) heads", r"group", r"(its|own) group")
W(g, "group slice one head too short", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh, g = c // num_heads, num_heads // num_kv_heads
    cols = []
    for j in range(num_kv_heads):
        heads = [w[:, k * dh:(k + 1) * dh] for k in range(j * g, max((j + 1) * g - 1, j * g + 1))]
        cols.append(np.mean(heads, axis=0))
    return np.concatenate(cols, axis=1)
""", "mean_pool_kv", r"off.by.one", r"(j \+ 1) \* group - 1", r"last head", r"one head (short|too few)", r"inclusive")
W(g, "modifies w in place while pooling", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d, c = w.shape
    dh, g = c // num_heads, num_heads // num_kv_heads
    for j in range(num_kv_heads):
        block = w[:, j * g * dh:(j + 1) * g * dh].reshape(d, g, dh).mean(axis=1)
        w[:, j * dh:(j + 1) * dh] = block
    return w[:, :num_kv_heads * dh].copy()
""", "mean_pool_kv", *INPLACE)
R(g, "loop over groups with np.mean of a list", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d_head = w.shape[1] // num_heads
    group = num_heads // num_kv_heads
    out = []
    for j in range(num_kv_heads):
        heads = [w[:, k * d_head:(k + 1) * d_head] for k in range(j * group, (j + 1) * group)]
        out.append(np.mean(heads, axis=0))
    return np.hstack(out)
""", "mean_pool_kv")
R(g, "averaging matrix", """
def mean_pool_kv(w, num_heads, num_kv_heads):
    d_head = w.shape[1] // num_heads
    group = num_heads // num_kv_heads
    p = np.kron(np.kron(np.eye(num_kv_heads), np.ones((group, 1)) / group), np.eye(d_head))
    return w @ p
""", "mean_pool_kv")

g = "q05_cache_bytes"
CB_SIG = "def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):\n"


def CB(name, expr, *causes):
    W("q05_cache_bytes", name, CB_SIG + f"    return {expr}\n", "cache_bytes", *causes)


CB("query heads instead of KV heads", "2 * num_layers * num_heads * d_head * seq_len * bytes_per_element * batch",
   r"num_heads", r"query heads", r"num_kv_heads", r"kv heads")
CB("K and V counted once", "num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch",
   r"\bK and V\b", r"keys? and values?", r"factor (of )?2", r"twice", r"both")
CB("batch forgotten", "2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element",
   r"batch\b[^.]{0,30}(forg|miss|not|times|multipl|factor)", r"(forg|miss|without|leav|ignor)\w*[^.]{0,20}batch", r"(several|many|all) sequences")
CB("layers forgotten", "2 * num_kv_heads * d_head * seq_len * bytes_per_element * batch",
   r"layers?\b[^.]{0,30}(forg|miss|not|times|multipl|factor)", r"(forg|miss|without|every|all|each|ignor)\w*[^.]{0,20}layers?")
CB("bits instead of bytes", "2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch * 8",
   r"bits", r"\b8\b", r"bytes")
CB("elements, not bytes", "2 * num_layers * num_kv_heads * d_head * seq_len * batch",
   r"bytes_per_element", r"elements", r"bytes")
CB("both head counts multiplied", "2 * num_layers * num_heads * num_kv_heads * d_head * seq_len * bytes_per_element * batch",
   r"num_heads", r"query heads", r"only those", r"every argument")
CB("result in GiB (float)", "2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch / 2**30",
   r"GiB", r"units?", r"bytes", *WHOLE)
CB("one token too many", "2 * num_layers * num_kv_heads * d_head * (seq_len + 1) * bytes_per_element * batch",
   r"off.by.one", r"seq_len \+ 1", r"one (token|position) too many", r"extra token")
CB("group size instead of KV heads", "2 * num_layers * (num_heads // num_kv_heads) * d_head * seq_len * bytes_per_element * batch",
   r"group", r"num_heads\s*//\s*num_kv_heads", r"num_kv_heads", r"kv heads")
CB("float from a true division of heads", "2 * num_layers * num_heads / (num_heads / num_kv_heads) * d_head * seq_len * bytes_per_element * batch",
   *WHOLE)
W(g, "calls the course's kv_cache_bytes", """
from mha_helpers import kv_cache_bytes
def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return kv_cache_bytes(num_layers=num_layers, num_kv_heads=num_kv_heads, d_head=d_head,
                          seq_len=seq_len, bytes_per_element=bytes_per_element, batch=batch)
""", "cache_bytes", *FORBIDDEN, r"kv_cache_bytes")
R(g, "per-token bytes then scale", CB_SIG + """    per_token_layer = 2 * num_kv_heads * d_head * bytes_per_element
    return per_token_layer * num_layers * seq_len * batch
""", "cache_bytes")
R(g, "K and V added separately, int() at the end", CB_SIG + """    k = num_layers * batch * seq_len * num_kv_heads * d_head
    v = k
    return int((k + v) * bytes_per_element)
""", "cache_bytes")

g = "q05_max_batch"
V(g, "64 query heads instead of 8 KV heads", "4", r"(query|64) heads", r"kv heads", r"num_kv_heads", r"\b8\b", target="max_batch")
V(g, "K only (factor 2 forgotten)", "64", r"\bK and V\b", r"keys? and values?", r"factor (of )?2", r"twice", target="max_batch")
V(g, "40e9 instead of GiB", "29", r"GiB", r"2\*\*30", r"10\*\*9|1e9|GB\b", target="max_batch")
V(g, "fp32 instead of fp16", "16", r"fp16", r"2 bytes", r"bytes per", target="max_batch")
V(g, "whole-number float", "40 * 2**30 / (2 * 80 * 8 * 128 * 2 * 4096)", *WHOLE, target="max_batch")
V(g, "string", "'32'", *TEXT, target="max_batch")
V(g, "layers forgotten", "2560", r"layers?", r"\b80\b", target="max_batch")
V(g, "bytes per sequence instead of sequences", "1342177280", r"sequences", r"divid", r"per sequence", r"budget", target="max_batch")
V(g, "GiB per sequence", "1.25", r"sequences", r"divid", r"per sequence", r"whole", target="max_batch")
V(g, "one left free 'for safety'", "31", r"round(ed|ing)? down", r"exact", r"off.by.one", r"\bfloor\b", target="max_batch")
V(g, "the 65B model's head count 64 for KV and no factor 2", "8", r"(query|64) heads", r"kv heads", r"\bK and V\b", r"factor", target="max_batch")
RV(g, "floor division of the expression", "(40 * 2**30) // (2 * 80 * 8 * 128 * 2 * 4096)", target="max_batch")
RV(g, "int() of the quotient", "int(40 * 2**30 / (2 * 80 * 8 * 128 * 2 * 4096))", target="max_batch")

# =============================================================================================
# Exercise 06
# =============================================================================================
HB_HEAD = """
def _weights(q, k):
    n = q.shape[0]
    s = np.where(np.tril(np.ones((n, n), bool)), q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
"""


def HB(name, body, *causes):
    W("q06_head_backward", name, HB_HEAD + dedent(body), "head_backward", *causes)


HB("causal mask forgotten in the recompute", """
def head_backward(q, k, v, d_out):
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    a = e / e.sum(axis=1, keepdims=True)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
    return ds @ k, ds.T @ q, a.T @ d_out
""", r"causal", *MASK_FORGOT)
HB("scale forgotten in the backward", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True))
    return ds @ k, ds.T @ q, a.T @ d_out
""", *NO_SCALE)
HB("d_v without the transpose", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
    return ds @ k, ds.T @ q, a @ d_out
""", *TRANSPOSE, r"A\^?T")
HB("row-sum term forgotten", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * da / np.sqrt(q.shape[1])
    return ds @ k, ds.T @ q, a.T @ d_out
""", r"row sums?", r"subtract", r"softmax'?s? (jacobian|backward|derivative)", r"(da|∂A) \* A")
HB("row sums along the wrong axis", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=0, keepdims=True)) / np.sqrt(q.shape[1])
    return ds @ k, ds.T @ q, a.T @ d_out
""", r"axis", r"row sums?", r"columns?")
HB("d_q and d_k swapped", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
    return ds.T @ q, ds @ k, a.T @ d_out
""", r"swap", r"d_q and d_k", r"d_k and d_q", r"order")
HB("d_k = dS @ q (transpose missing)", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
    return ds @ k, ds @ q, a.T @ d_out
""", *TRANSPOSE, r"dS\^?T|∂S\^?T")
HB("scale by sqrt(d_v)", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(v.shape[1])
    return ds @ k, ds.T @ q, a.T @ d_out
""", r"d_v", r"v\.shape", r"width of (the )?values?")
HB("scale applied twice", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / q.shape[1]
    return ds @ k, ds.T @ q, a.T @ d_out
""", r"twice", r"square root", r"d_k\b[^.]{0,20}(instead|not)", r"once")
HB("returns (d_v, d_q, d_k)", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
    return a.T @ d_out, ds @ k, ds.T @ q
""", r"order", r"\(d_q, d_k, d_v\)", r"swap")
HB("dA = v @ d_out.T (transposed)", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = (d_out @ v.T).T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
    return ds @ k, ds.T @ q, a.T @ d_out
""", *TRANSPOSE)
HB("q scaled in place", """
def head_backward(q, k, v, d_out):
    q /= np.sqrt(q.shape[1])
    n = q.shape[0]
    s = np.where(np.tril(np.ones((n, n), bool)), q @ k.T, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    a = e / e.sum(axis=1, keepdims=True)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True))
    return ds @ k / 1.0, ds.T @ q, a.T @ d_out
""", *INPLACE)
HB("sign of the gradient flipped", """
def head_backward(q, k, v, d_out):
    a = _weights(q, k)
    da = d_out @ v.T
    ds = a * ((da * a).sum(axis=1, keepdims=True) - da) / np.sqrt(q.shape[1])
    return ds @ k, ds.T @ q, a.T @ d_out
""", r"sign", r"negat", r"opposite", r"minus")
HB("uses the course's backward", """
def head_backward(q, k, v, d_out):
    from mha_helpers.backward import attention_backward
    n = q.shape[0]
    return attention_backward(q, k, v, d_out, mask=np.tril(np.ones((n, n), bool)))
""", *FORBIDDEN, r"attention_backward", r"backward pass")
R("q06_head_backward", "weights computed row by row, einsum gradients", """
def head_backward(q, k, v, d_out):
    n, d_k = q.shape
    a = np.zeros((n, n))
    for i in range(n):
        s = k[:i + 1] @ q[i] / np.sqrt(d_k)
        e = np.exp(s - s.max())
        a[i, :i + 1] = e / e.sum()
    da = np.einsum("id,jd->ij", d_out, v)
    dv = np.einsum("ij,id->jd", a, d_out)
    ds = a * (da - np.einsum("ij,ij->i", da, a)[:, None])
    ds = ds / np.sqrt(d_k)
    return np.einsum("ij,jd->id", ds, k), np.einsum("ij,id->jd", ds, q), dv
""", "head_backward")
R("q06_head_backward", "scale folded into q and k products", """
def head_backward(q, k, v, d_out):
    n, d = q.shape
    c = 1.0 / np.sqrt(d)
    s = (q * c) @ k.T
    s[np.triu_indices(n, 1)] = -np.inf
    a = np.exp(s - s.max(axis=1)[:, None])
    a /= a.sum(axis=1)[:, None]
    da = d_out @ v.T
    ds = a * (da - np.sum(da * a, axis=1)[:, None])
    return c * (ds @ k), c * (ds.T @ q), a.T @ d_out
""", "head_backward")

g = "q06_measure_roles"
MR_START = (r"t\s*>=\s*2", r"from (t\s*=\s*)?2", r"positions? (0 and )?1", r"t = 1", r"off.by.one", r"query positions")
W(g, "t from 1", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(1, n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
""", "measure_roles", *MR_START)
W(g, "t from 0 (t-1 wraps to the last key)", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
""", "measure_roles", *MR_START, r"wrap", r"-1")
W(g, "columns swapped", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, 0].mean(axis=(0, 2)), weights[:, :, t, t - 1].mean(axis=(0, 2))], axis=1)
""", "measure_roles", r"swap", r"column 0", r"columns?", r"order")
W(g, "rows and columns swapped (keys as rows)", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t - 1, t].mean(axis=(0, 2)), weights[:, :, 0, t].mean(axis=(0, 2))], axis=1)
""", "measure_roles", *TRANSPOSE, r"rows = queries")
W(g, "returns (2, h)", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))])
""", "measure_roles", *TRANSPOSE, r"\(h, 2\)", r"shape")
W(g, "sum instead of mean", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t - 1].sum(axis=(0, 2)), weights[:, :, t, 0].sum(axis=(0, 2))], axis=1)
""", "measure_roles", r"\bsum", r"mean", r"average")
W(g, "the next token (t + 1)", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n - 1)
    return np.stack([weights[:, :, t, t + 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
""", "measure_roles", r"next", r"t\s*\+\s*1", r"previous", r"t\s*-\s*1")
W(g, "first-token score over all query positions", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, :, 0].mean(axis=(0, 2))], axis=1)
""", "measure_roles", *MR_START, r"all (query )?positions", r"column 1")
W(g, "averaged over heads instead of batch", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n)
    prev = weights[:, :, t, t - 1].mean(axis=(1, 2))
    first = weights[:, :, t, 0].mean(axis=(1, 2))
    return np.stack([prev, first], axis=1)
""", "measure_roles", r"axis", r"batch", r"heads?", r"shape")
W(g, "diagonal slice (t, t) instead of (t, t-1)", """
def measure_roles(weights):
    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
""", "measure_roles", r"diagonal", r"itself", r"t\s*-\s*1", r"current token", r"previous")
W(g, "slicing mixes t and t-1 as an outer product", """
def measure_roles(weights):
    n = weights.shape[-1]
    prev = weights[:, :, 2:, 1:-1].mean(axis=(0, 2, 3))
    first = weights[:, :, 2:, 0].mean(axis=(0, 2))
    return np.stack([prev, first], axis=1)
""", "measure_roles", r"outer", r"block", r"diagonal", r"fancy", r"pair(s|ed)", r"\[t, t - 1\]")
W(g, "the course's role measurement", """
def measure_roles(weights):
    from mha_helpers.training import measure_roles as course_roles
    return course_roles(weights)
""", "measure_roles", *FORBIDDEN, r"measure_roles", r"role measurement")
R(g, "explicit loops", """
def measure_roles(weights):
    b, h, n, _ = weights.shape
    out = np.zeros((h, 2))
    for i in range(h):
        prev = [weights[s, i, t, t - 1] for s in range(b) for t in range(2, n)]
        first = [weights[s, i, t, 0] for s in range(b) for t in range(2, n)]
        out[i] = [np.mean(prev), np.mean(first)]
    return out
""", "measure_roles")
R(g, "np.diagonal with offset", """
def measure_roles(weights):
    prev = np.diagonal(weights, offset=-1, axis1=2, axis2=3)[:, :, 1:]
    first = weights[:, :, 2:, 0]
    return np.column_stack([prev.mean(axis=(0, 2)), first.mean(axis=(0, 2))])
""", "measure_roles")

g = "q06_roles_seed7"
V(g, "roles inverted (argmin / columns mixed up)", "('previous', 'first', 'previous', 'first')", r"swap", r"column", r"the other way", r"opposite", r"larger", r"invert", target="roles_seed_7")
V(g, "two heads as in the lesson", "('previous', 'first')", r"four", r"4", r"length", r"one per head", r"heads? 2 and 3", target="roles_seed_7")
V(g, "head indices as numbers", "(1, 0, 1, 0)", r"names?", r"\"previous\"", r"'previous'", r"string", r"words?", target="roles_seed_7")
V(g, "abbreviation 'prev'", "('first', 'prev', 'first', 'prev')", r"spell", r"exact(ly)?", r"\"previous\"", r"'previous'", r"prev\b", target="roles_seed_7")
V(g, "tuple as a string", "\"('first', 'previous', 'first', 'previous')\"", *TEXT, target="roles_seed_7")
V(g, "only three heads", "('first', 'previous', 'first')", r"four", r"4", r"length", r"one per head", target="roles_seed_7")
V(g, "one head misread", "('first', 'previous', 'previous', 'previous')", r"head 2", r"larger", target="roles_seed_7")
V(g, "the score array instead of names", "np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])", r"names?", r"tuple", r"\"previous\"", r"string", target="roles_seed_7")
RV(g, "computed from measured scores", "tuple('previous' if p > f else 'first' for p, f in [(0.0004, 0.9993), (0.994, 0.002), (0.0046, 0.9927), (0.995, 0.002)])", target="roles_seed_7")
RV(g, "literal tuple", "('first', 'previous', 'first', 'previous')", target="roles_seed_7")

g = "q06_remove_head"
W(g, "modifies w_o in place", """
def remove_head(w_o, head, num_heads):
    d_head = w_o.shape[0] // num_heads
    w_o[head * d_head:(head + 1) * d_head] = 0
    return w_o
""", "remove_head", *INPLACE)
W(g, "zeroes the columns", """
def remove_head(w_o, head, num_heads):
    w = w_o.copy()
    d_head = w.shape[1] // num_heads
    w[:, head * d_head:(head + 1) * d_head] = 0
    return w
""", "remove_head", r"columns?", r"rows")
W(g, "heads counted from 1", """
def remove_head(w_o, head, num_heads):
    w = w_o.copy()
    d_head = w.shape[0] // num_heads
    w[(head - 1) * d_head:head * d_head] = 0
    return w
""", "remove_head", r"from 0", r"zero.based", r"head - 1", r"index", r"off.by.one", r"next head|previous head|neighbou?r")
W(g, "one row too many (inclusive end)", """
def remove_head(w_o, head, num_heads):
    w = w_o.copy()
    d_head = w.shape[0] // num_heads
    w[head * d_head:(head + 1) * d_head + 1] = 0
    return w
""", "remove_head", r"off.by.one", r"one row too many", r"inclusive", r"extra row", r"not including")
W(g, "only one row cleared", """
def remove_head(w_o, head, num_heads):
    w = w_o.copy()
    w[head] = 0
    return w
""", "remove_head", r"d_head", r"one row", r"block", r"all (of )?(its|the head's) rows")
W(g, "keeps only that head", """
def remove_head(w_o, head, num_heads):
    w = np.zeros_like(w_o)
    d_head = w.shape[0] // num_heads
    w[head * d_head:(head + 1) * d_head] = w_o[head * d_head:(head + 1) * d_head]
    return w
""", "remove_head", r"keeps? only", r"other heads", r"inverted|opposite", r"the rest")
W(g, "deletes the rows", """
def remove_head(w_o, head, num_heads):
    d_head = w_o.shape[0] // num_heads
    return np.delete(w_o, np.s_[head * d_head:(head + 1) * d_head], axis=0)
""", "remove_head", r"shape", r"delet", r"set to (0|zero)", r"(same|keep the) shape")
W(g, "view instead of a copy (w_o[:])", """
def remove_head(w_o, head, num_heads):
    w = w_o[:]
    d_head = w.shape[0] // num_heads
    w[head * d_head:(head + 1) * d_head] = 0
    return w
""", "remove_head", *INPLACE, r"view")
W(g, "d_head from the wrong count (num_heads + 1)", """
def remove_head(w_o, head, num_heads):
    w = w_o.copy()
    d_head = w.shape[0] // (num_heads + 1)
    w[head * d_head:(head + 1) * d_head] = 0
    return w
""", "remove_head", r"d_head", r"w_o\.shape\[0\]\s*//\s*num_heads", r"block")
W(g, "zeroes row and column blocks", """
def remove_head(w_o, head, num_heads):
    w = w_o.copy()
    d_head = w.shape[0] // num_heads
    s = slice(head * d_head, (head + 1) * d_head)
    w[s] = 0
    w[:, s] = 0
    return w
""", "remove_head", r"columns?", r"only (the )?rows")
R(g, "mask multiplication", """
def remove_head(w_o, head, num_heads):
    d_head = w_o.shape[0] // num_heads
    keep = np.ones((w_o.shape[0], 1))
    keep[head * d_head:(head + 1) * d_head] = 0
    return w_o * keep
""", "remove_head")
R(g, "np.where on row indices", """
def remove_head(w_o, head, num_heads):
    d_head = len(w_o) // num_heads
    rows = np.arange(len(w_o))[:, None] // d_head
    return np.where(rows == head, 0.0, w_o)
""", "remove_head")

g = "q06_prune_prediction"
V(g, "a: another head takes over", "'a'", r"another head", r"redundan", r"(take|takes) over", r"backup", r"(all|both) four", target="prune_prediction")
V(g, "c: as with two heads", "'c'", r"two heads", r"other vote alone", r"(still )?shares?", r"in between", target="prune_prediction")
V(g, "d: chance", "'d'", r"chance", r"1/16", r"in between", target="prune_prediction")
V(g, "two letters", "'bc'", r"one letter", r"single letter", r"(only )?one (answer|option)", target="prune_prediction")
V(g, "letter index as int", "1", *TEXT, r"letter", target="prune_prediction")
V(g, "the word instead of the letter", "'in between'", r"one letter", r"single letter", r"the letter", target="prune_prediction")
RV(g, "capital letter", "'B'", target="prune_prediction")
RV(g, "letter with a trailing newline", "'b\\n'", target="prune_prediction")

# =============================================================================================
# Exercise 07
# =============================================================================================
g = "q07_cross_shape"
V(g, "keys and queries swapped", "(2, 4, 7, 5)", *TRANSPOSE, r"queries", r"keys", r"n_q", target="cross_shape")
V(g, "no head axis", "(2, 5, 7)", r"head", r"(four|4) (numbers|axes)", target="cross_shape")
V(g, "heads before batch", "(4, 2, 5, 7)", r"batch", r"order", r"axis", target="cross_shape")
V(g, "self-attention shape (keys = queries)", "(2, 4, 5, 5)", r"encoder", r"keys", r"n_k", r"\b7\b", r"source", target="cross_shape")
V(g, "batch and heads merged", "(8, 5, 7)", r"batch", r"head", r"(four|4) (numbers|axes)", target="cross_shape")
V(g, "tuple as a string", "'(2, 4, 5, 7)'", *TEXT, target="cross_shape")
V(g, "heads after queries", "(2, 5, 4, 7)", r"order", r"heads?", r"axis", r"\(batch, heads, queries, keys\)", target="cross_shape")
V(g, "floats", "(2.0, 4.0, 5.0, 7.0)", *WHOLE, target="cross_shape")
V(g, "encoder length for both", "(2, 4, 7, 7)", r"queries", r"n_q", r"\b5\b", r"decoder", target="cross_shape")
RV(g, "computed from names", "(lambda b, h, n_q, n_k: (b, h, n_q, n_k))(2, 4, 5, 7)", target="cross_shape")
RV(g, "tuple() of ints from a list", "tuple(int(s) for s in [2, 4, 5, 7])", target="cross_shape")

g = "q07_padding_causal_mask"
PC_BAD_QUERY = (r"quer(y|ies)", r"rows", r"keys", r"columns?")
W(g, "padding blocks queries (rows) instead of keys", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < lengths[:, None]
    return causal[None] & valid[:, :, None]
""", "padding_causal_mask", *PC_BAD_QUERY)
W(g, "j <= lengths[b] (one key too many)", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] <= lengths[:, None]
    return causal[None] & valid[:, None, :]
""", "padding_causal_mask", r"off.by.one", r"<=\s*length", r"j < lengths", r"one (key|token) too many", r"first padding")
W(g, "causal part forgotten", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    valid = np.arange(n)[None, :] < lengths[:, None]
    return np.broadcast_to(valid[:, None, :], (len(lengths), n, n)).copy()
""", "padding_causal_mask", r"causal", r"j\s*<=\s*i", r"future")
W(g, "padding forgotten", """
def padding_causal_mask(lengths, n):
    causal = np.tril(np.ones((n, n), dtype=bool))
    return np.broadcast_to(causal, (len(lengths), n, n)).copy()
""", "padding_causal_mask", r"padding", r"lengths?", r"real tokens?")
W(g, "upper triangle (np.triu)", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.triu(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < lengths[:, None]
    return causal[None] & valid[:, None, :]
""", "padding_causal_mask", r"upper", r"triu", r"transpos", r"j\s*<=\s*i", r"future", r"lower")
W(g, "strict causal (no diagonal)", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool), k=-1)
    valid = np.arange(n)[None, :] < lengths[:, None]
    return causal[None] & valid[:, None, :]
""", "padding_causal_mask", r"diagonal", r"itself", r"j\s*<=\s*i", r"strict", r"k\s*=\s*-1")
W(g, "0/1 integers instead of booleans", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=int))
    valid = (np.arange(n)[None, :] < lengths[:, None]).astype(int)
    return causal[None] * valid[:, None, :]
""", "padding_causal_mask", *MASK_DATA)
W(g, "| instead of &", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < lengths[:, None]
    return causal[None] | valid[:, None, :]
""", "padding_causal_mask", r"\bor\b", r"\|", r"&", r"\band\b", r"both")
W(g, "polarity inverted (True = blocked)", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < lengths[:, None]
    return ~(causal[None] & valid[:, None, :])
""", "padding_causal_mask", *MASK_POLARITY)
W(g, "queries and keys both blocked at padding", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < lengths[:, None]
    return causal[None] & valid[:, None, :] & valid[:, :, None]
""", "padding_causal_mask", r"quer(y|ies)", r"rows", r"padding queries")
W(g, "axes in the order (n, n, batch)", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[:, None] < lengths[None, :]
    return causal[:, :, None] & valid[None, :, :]
""", "padding_causal_mask", r"shape", r"batch", r"axis", r"\(batch, n, n\)")
W(g, "lengths - 1 (j < lengths[b] - 1)", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < lengths[:, None] - 1
    return causal[None] & valid[:, None, :]
""", "padding_causal_mask", r"off.by.one", r"last real", r"j < lengths", r"one (key|token) too few")
W(g, "valid mask broadcast over the wrong axis (no [:, None, :])", """
def padding_causal_mask(lengths, n):
    lengths = np.asarray(lengths)
    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n) < lengths[:, None]
    return causal[None] & valid[:, :, None]
""", "padding_causal_mask", *PC_BAD_QUERY, r"broadcast", r"\[:, None, :\]")
R(g, "loops filling a boolean array", """
def padding_causal_mask(lengths, n):
    out = np.zeros((len(lengths), n, n), dtype=bool)
    for b, length in enumerate(lengths):
        for i in range(n):
            for j in range(min(i + 1, int(length))):
                out[b, i, j] = True
    return out
""", "padding_causal_mask")
R(g, "index comparison broadcasting", """
def padding_causal_mask(lengths, n):
    i = np.arange(n)[None, :, None]
    j = np.arange(n)[None, None, :]
    L = np.asarray(lengths)[:, None, None]
    return (j <= i) & (j < L)
""", "padding_causal_mask")
R(g, "with the course's causal_mask (allowed)", """
from mha_helpers import causal_mask
def padding_causal_mask(lengths, n):
    key_valid = np.arange(n) < np.asarray(lengths)[:, None]
    return np.logical_and(causal_mask(n)[None, :, :], key_valid[:, None, :])
""", "padding_causal_mask")

g = "q07_key_padding_mask"
W(g, "polarity not inverted", """
def to_key_padding_mask(mask):
    return mask.any(axis=1)
""", "to_key_padding_mask", *MASK_POLARITY)
W(g, "reduced over the keys axis", """
def to_key_padding_mask(mask):
    return ~mask.any(axis=2)
""", "to_key_padding_mask", r"axis", r"quer(y|ies)", r"keys", r"rows")
W(g, "read off the diagonal", """
def to_key_padding_mask(mask):
    return ~np.diagonal(mask, axis1=1, axis2=2)
""", "to_key_padding_mask", r"diagonal", r"cross", r"n_q\s*!=\s*n_k", r"square", r"any query", r"no query")
W(g, "first query row only", """
def to_key_padding_mask(mask):
    return ~mask[:, 0, :]
""", "to_key_padding_mask", r"first (query|row)", r"row 0", r"causal", r"any query", r"no query", r"one (query|row)")
W(g, "blocked for some query (~all)", """
def to_key_padding_mask(mask):
    return ~mask.all(axis=1)
""", "to_key_padding_mask", r"\ball\b", r"\bany\b", r"some quer", r"every query", r"no query", r"causal")
W(g, "0/1 integers", """
def to_key_padding_mask(mask):
    return (mask.sum(axis=1) == 0).astype(int)
""", "to_key_padding_mask", *MASK_DATA)
W(g, "transposed result (n_k, batch)", """
def to_key_padding_mask(mask):
    return ~mask.any(axis=1).T
""", "to_key_padding_mask", *TRANSPOSE, r"shape", r"\(batch, n_k\)")
W(g, "additive float mask", """
def to_key_padding_mask(mask):
    return np.where(mask.any(axis=1), 0.0, -np.inf)
""", "to_key_padding_mask", r"bool", r"float", r"-\s*inf", r"additive")
W(g, "the course's helper", """
def to_key_padding_mask(mask):
    from mha_helpers import to_pytorch_key_padding_mask
    return to_pytorch_key_padding_mask(mask)
""", "to_key_padding_mask", *FORBIDDEN, r"to_pytorch_key_padding_mask")
R(g, "sum == 0", """
def to_key_padding_mask(mask):
    return np.asarray(mask).sum(axis=-2) == 0
""", "to_key_padding_mask")
R(g, "logical_not of any over the query axis", """
def to_key_padding_mask(mask):
    return np.logical_not(np.any(mask, axis=-2))
""", "to_key_padding_mask")
R(g, "all(~mask) over queries", """
def to_key_padding_mask(mask):
    return np.all(~mask, axis=1)
""", "to_key_padding_mask")

g = "q07_in_proj_weight"
W(g, "no transposes", """
def in_proj_weight(w_q, w_k, w_v):
    return np.concatenate([w_q, w_k, w_v], axis=0)
""", "in_proj_weight", *TRANSPOSE)
W(g, "order K, Q, V", """
def in_proj_weight(w_q, w_k, w_v):
    return np.concatenate([w_k.T, w_q.T, w_v.T], axis=0)
""", "in_proj_weight", r"order", r"query block", r"(q|query)[^.]{0,20}(first|on top)", r"swap")
W(g, "side by side (d_model, 3 d_model)", """
def in_proj_weight(w_q, w_k, w_v):
    return np.concatenate([w_q.T, w_k.T, w_v.T], axis=1)
""", "in_proj_weight", r"axis", r"shape", r"rows", r"side by side", r"\(3 \* d_model, d_model\)")
W(g, "np.stack gives (3, d, d)", """
def in_proj_weight(w_q, w_k, w_v):
    return np.stack([w_q.T, w_k.T, w_v.T])
""", "in_proj_weight", r"shape", r"3-?d", r"stack", r"\(3 \* d_model, d_model\)", r"(three|3) axes")
W(g, "vstack then transpose the whole", """
def in_proj_weight(w_q, w_k, w_v):
    return np.vstack([w_q, w_k, w_v]).T
""", "in_proj_weight", r"shape", r"\(3 \* d_model, d_model\)", r"(each|every) block", r"transpos")
W(g, "only w_q transposed", """
def in_proj_weight(w_q, w_k, w_v):
    return np.concatenate([w_q.T, w_k, w_v], axis=0)
""", "in_proj_weight", *TRANSPOSE, r"(each|every) block", r"key (block|weight)")
W(g, "inverse instead of transpose", """
def in_proj_weight(w_q, w_k, w_v):
    return np.concatenate([np.linalg.inv(w) for w in (w_q, w_k, w_v)], axis=0)
""", "in_proj_weight", r"invers", r"transpos")
W(g, "order V, K, Q", """
def in_proj_weight(w_q, w_k, w_v):
    return np.concatenate([w_v.T, w_k.T, w_q.T], axis=0)
""", "in_proj_weight", r"order", r"revers", r"query block", r"(q|query)[^.]{0,20}(first|on top)")
W(g, "the course's pytorch_state_dict", """
def in_proj_weight(w_q, w_k, w_v):
    from mha_helpers import pytorch_state_dict
    d = w_q.shape[0]
    sd = pytorch_state_dict(w_q, w_k, w_v, np.eye(d))
    return np.asarray(sd["in_proj_weight"])
""", "in_proj_weight", *FORBIDDEN, r"pytorch_state_dict")
W(g, "transposes in place via a shared buffer (modifies w_q)", """
def in_proj_weight(w_q, w_k, w_v):
    for w in (w_q, w_k, w_v):
        w[...] = w.T.copy()
    return np.concatenate([w_q, w_k, w_v], axis=0)
""", "in_proj_weight", *INPLACE)
R(g, "concatenate along columns, transpose once", """
def in_proj_weight(w_q, w_k, w_v):
    return np.concatenate([w_q, w_k, w_v], axis=1).T
""", "in_proj_weight")
R(g, "np.vstack of transposes", """
def in_proj_weight(w_q, w_k, w_v):
    return np.vstack([np.transpose(w) for w in (w_q, w_k, w_v)])
""", "in_proj_weight")
R(g, "preallocated blocks", """
def in_proj_weight(w_q, w_k, w_v):
    d = w_q.shape[0]
    out = np.empty((3 * d, d))
    for i, w in enumerate((w_q, w_k, w_v)):
        out[i * d:(i + 1) * d] = w.T
    return out
""", "in_proj_weight")

g = "q07_pytorch_call"
V(g, "a: course polarity kept", "'a'", *MASK_POLARITY, r"True = may not", target="pytorch_call")
V(g, "c: only the causal mask inverted", "'c'", r"key_padding_mask", r"padding", *MASK_POLARITY, target="pytorch_call")
V(g, "d: sequence-first transpose", "'d'", r"batch_first", r"transpos", r"sequence.first", target="pytorch_call")
V(g, "two letters", "'b or d'", r"one letter", r"single letter", r"(only )?one (answer|option)", target="pytorch_call")
V(g, "a boolean", "True", *TEXT, r"letter", target="pytorch_call")
V(g, "the call written out", "'layer(x, x, x, attn_mask=~causal, key_padding_mask=~key_valid)'", r"one letter", r"single letter", r"the letter", target="pytorch_call")
RV(g, "capital with spaces", "' B'", target="pytorch_call")
RV(g, "letter from a list", "['a', 'b', 'c', 'd'][1]", target="pytorch_call")

# =============================================================================================
# Exercise 08
# =============================================================================================
OU_SIG = "def online_update(m, ell, acc, scores, v_block):\n"


def OU(name, body, *causes):
    W("q08_online_update", name, OU_SIG + indent(dedent(body).strip("\n"), "    "), "online_update", *causes)


ACC_RESCALE = (r"acc\w*[^.]{0,60}(rescal|exp\(m|alpha|correction)", r"rescal\w*[^.]{0,60}(acc|both)", r"both (old )?sums")
OU("acc not rescaled", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), acc + p @ v_block
""", *ACC_RESCALE)
OU("ell not rescaled", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""", r"ell\w*[^.]{0,60}(rescal|exp\(m|alpha|correction)", r"rescal\w*[^.]{0,60}(ell|both|sum)", r"both (old )?sums")
OU("acc rescaled twice", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] ** 2 * acc + p @ v_block
""", r"twice", r"once", r"double", r"squared")
OU("block's own max used as the running max", """
    m_new = scores.max(axis=1)
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""", r"running max", r"block'?s (own )?max", r"max(imum)? (seen )?so far", r"np\.maximum", r"carr")
OU("correction inverted exp(m_new - m)", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(np.where(np.isinf(m), -np.inf, m_new - m))
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""", r"invert", r"exp\(m_new\s*-\s*m\)", r"sign", r"m - m_new", r"reciprocal", r"the other way")
OU("acc divided by ell (normalised)", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    ell_new = alpha * ell + p.sum(axis=1)
    return m_new, ell_new, (alpha[:, None] * acc + p @ v_block) / ell_new[:, None]
""", r"divid", r"normali[sz]", r"not divided", r"unnormali[sz]ed")
OU("new block's terms use the old max", """
    m_new = np.maximum(m, scores.max(axis=1))
    m_safe = np.where(np.isinf(m), m_new, m)
    p = np.exp(scores - m_safe[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""", r"m_new", r"new (running )?max", r"old max", r"exp\(scores - m\)")
OU("max over the wrong axis of the scores", """
    m_new = np.maximum(m, scores.max(axis=0).max())
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""", r"axis", r"(each|every|per) row", r"row'?s? max", r"global")
OU("block sum over the wrong axis", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(), alpha[:, None] * acc + p @ v_block
""", r"axis", r"(each|every|per) row", r"row sums?", r"total")
OU("updates acc and ell in place", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    acc *= alpha[:, None]
    acc += p @ v_block
    ell *= alpha
    ell += p.sum(axis=1)
    return m_new, ell, acc
""", *INPLACE)
OU("returns (m, acc, ell)", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha[:, None] * acc + p @ v_block, alpha * ell + p.sum(axis=1)
""", r"order", r"\(m_new, ell_new, acc_new\)", r"swap")
OU("masked scores replaced by 0", """
    s = np.where(np.isinf(scores), 0.0, scores)
    m_new = np.maximum(m, s.max(axis=1))
    p = np.exp(s - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""", r"mask", r"-\s*inf", r"blocked")
OU("no max subtraction in the block terms", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores)
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""", r"subtract", r"m_new", r"exp\(score\w* - m", r"overflow")
OU("value columns reversed (a transpose slip patched by hand)", """
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + (v_block.T @ p.T).T[:, ::-1]
""", r"order", r"revers", r"columns?", r"values?")
OU("the course's online_softmax_update", """
    from mha_helpers import online_softmax_update
    return online_softmax_update(m, ell, acc, scores, v_block)
""", *FORBIDDEN, r"online_softmax_update")
R("q08_online_update", "log-space correction with np.fmax", OU_SIG + """
    m_new = np.fmax(m, np.max(scores, axis=-1))
    scale = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, np.newaxis])
    ell_new = ell * scale + np.sum(p, axis=-1)
    acc_new = acc * scale[:, np.newaxis] + np.einsum("qb,bd->qd", p, v_block)
    return m_new, ell_new, acc_new
""", "online_update")
R("q08_online_update", "correction from the block max, clipped at 0", OU_SIG + """
    mb = scores.max(axis=1)
    m_new = np.maximum(m, mb)
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(np.minimum(m - mb, 0.0))
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""", "online_update")
R("q08_online_update", "row loop", OU_SIG + """
    m_new = np.empty_like(m, dtype=float); ell_new = np.empty_like(ell, dtype=float)
    acc_new = np.empty_like(acc, dtype=float)
    for i in range(len(m)):
        mi = max(m[i], scores[i].max())
        c = np.exp(m[i] - mi)
        p = np.exp(scores[i] - mi)
        m_new[i], ell_new[i], acc_new[i] = mi, c * ell[i] + p.sum(), c * acc[i] + p @ v_block
    return m_new, ell_new, acc_new
""", "online_update")

OU_OK = """
def online_update(m, ell, acc, scores, v_block):
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
"""


def TI(name, body, *causes):
    W("q08_tiled", name, OU_OK + dedent(body), "tiled", *causes)


FULL = (r"full (score|\(n_q, n_k\)|n_q|matrix)", r"whole (score|\(n_q, n_k\)|matrix)", r"n_q\s*[x×,]\s*n_k", r"score matrix",
        r"never build", r"all (the )?scores at once", r"(array|matrix) (sizes?|as large)")
TI("full score matrix for a global max", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    s_all = q @ k.T / np.sqrt(d_k)
    m = s_all.max(axis=1)
    ell, acc = np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        p = np.exp(q @ k[start:start + block_size].T / np.sqrt(d_k) - m[:, None])
        ell += p.sum(axis=1)
        acc += p @ v[start:start + block_size]
    return acc / ell[:, None]
""", *FULL)
TI("block scores concatenated, then one softmax", """
def tiled(q, k, v, block_size):
    d_k = q.shape[1]
    blocks = [q @ k[s:s + block_size].T / np.sqrt(d_k) for s in range(0, k.shape[0], block_size)]
    s = np.concatenate(blocks, axis=1)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v
""", *FULL)
TI("last shorter block dropped", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for b in range(k.shape[0] // block_size):
        s = slice(b * block_size, (b + 1) * block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(d_k), v[s])
    return acc / ell[:, None]
""", r"last block", r"shorter", r"(not a )?multiple", r"remainder", r"missing keys", r"keys? (left out|skipped|dropped)")
TI("overlapping blocks (step block_size - 1)", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    step = max(block_size - 1, 1)
    for start in range(0, k.shape[0], step):
        s = slice(start, start + block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(d_k), v[s])
    return acc / ell[:, None]
""", r"overlap", r"twice", r"more than once", r"step", r"counted (again|double)")
TI("block edges off by one (start + block_size - 1)", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size - 1)
        if s.stop <= s.start:
            continue
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(d_k), v[s])
    return acc / ell[:, None]
""", r"off.by.one", r"block (edges|boundar)", r"missing keys", r"keys? (left out|skipped|dropped)", r"last key of (each|every) block")
TI("running state reset every block", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    for start in range(0, k.shape[0], block_size):
        m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        s = slice(start, start + block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(d_k), v[s])
    return acc / ell[:, None]
""", r"reset", r"carr", r"running (max|state|sums)", r"only the last block", r"(each|every) block (starts|from scratch)")
TI("no scale", """
def tiled(q, k, v, block_size):
    n_q = q.shape[0]
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T, v[s])
    return acc / ell[:, None]
""", *NO_SCALE)
TI("scale by sqrt(d_v)", """
def tiled(q, k, v, block_size):
    n_q = q.shape[0]
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(v.shape[1]), v[s])
    return acc / ell[:, None]
""", r"d_v", r"v\.shape", r"width of (the )?values?", r"d_k")
TI("returns acc without dividing by ell", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(d_k), v[s])
    return acc
""", r"divid", r"ell", r"normali[sz]", r"acc / ell")
TI("ell starts at 1", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.zeros(n_q), np.ones(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(d_k), v[s])
    return acc / ell[:, None]
""", r"initial", r"start(ing)? (state|value)", r"ell\w*[^.]{0,30}(0|zero)", r"-\s*inf", r"empty")
TI("block scores k @ q.T reshaped instead of transposed", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size)
        sc = (k[s] @ q.T / np.sqrt(d_k)).reshape(n_q, -1)
        m, ell, acc = online_update(m, ell, acc, sc, v[s])
    return acc / ell[:, None]
""", *TRANSPOSE, r"reshape")
TI("values of the first block every time", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        kb = k[start:start + block_size]
        m, ell, acc = online_update(m, ell, acc, q @ kb.T / np.sqrt(d_k), v[:len(kb)])
    return acc / ell[:, None]
""", r"v_block", r"values? (block|slice)", r"same (slice|rows|block) of v", r"block'?s values")
TI("acc shaped with d_k instead of d_v", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, d_k))
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(d_k), v[s])
    return acc / ell[:, None]
""", r"d_v", r"shape", r"broadcast", r"acc")
TI("divides by ell inside the loop", """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size)
        m, ell, acc = online_update(m, ell, acc, q @ k[s].T / np.sqrt(d_k), v[s])
        acc = acc / ell[:, None]
    return acc / ell[:, None]
""", r"divid", r"normali[sz]", r"(inside|in) the loop", r"once", r"end")
TI("the course's tiled_attention", """
def tiled(q, k, v, block_size):
    from mha_helpers import tiled_attention
    return tiled_attention(q, k, v, block_size=block_size)
""", *FORBIDDEN, r"tiled_attention")
TI("the course's softmax on each block (blocks normalised separately)", """
def tiled(q, k, v, block_size):
    from mha_helpers import softmax
    d_k = q.shape[1]
    out = 0
    for start in range(0, k.shape[0], block_size):
        s = slice(start, start + block_size)
        out = out + softmax(q @ k[s].T / np.sqrt(d_k)) @ v[s]
    return out / len(range(0, k.shape[0], block_size))
""", *FORBIDDEN, r"softmax")
TI("blocks over the queries, full rows of scores", """
def tiled(q, k, v, block_size):
    d_k = q.shape[1]
    outs = []
    for start in range(0, q.shape[0], block_size):
        s = q[start:start + block_size] @ k.T / np.sqrt(d_k)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        outs.append((e / e.sum(axis=1, keepdims=True)) @ v)
    return np.concatenate(outs)
""", r"block\w* of keys", r"quer(y|ies) blocks?", r"online_update", r"over (the )?keys", *FULL)
R("q08_tiled", "while loop, min() for the last block", OU_OK + """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    n_k = k.shape[0]
    m = np.full(n_q, -np.inf); ell = np.zeros(n_q); acc = np.zeros((n_q, v.shape[1]))
    start = 0
    while start < n_k:
        stop = min(start + block_size, n_k)
        m, ell, acc = online_update(m, ell, acc, (q / np.sqrt(d_k)) @ k[start:stop].T, v[start:stop])
        start = stop
    return acc / ell[:, None]
""", "tiled")
R("q08_tiled", "np.array_split into blocks of block_size", OU_OK + """
def tiled(q, k, v, block_size):
    n_q, d_k = q.shape
    edges = list(range(block_size, k.shape[0], block_size))
    m, ell, acc = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for kb, vb in zip(np.split(k, edges), np.split(v, edges)):
        m, ell, acc = online_update(m, ell, acc, np.einsum("qd,kd->qk", q, kb) * d_k ** -0.5, vb)
    return acc / ell[:, None]
""", "tiled")

g = "q08_mla_cache"
V(g, "RoPE key forgotten", "512 * 60 * 2", r"rope", r"d_h\^?R", r"\b64\b", r"decoupled", target="mla_bytes_per_token")
V(g, "layers forgotten", "(512 + 64) * 2", r"layers?", r"\b60\b", target="mla_bytes_per_token")
V(g, "fp32 bytes", "(512 + 64) * 60 * 4", r"fp16", r"2 bytes", r"bytes per", target="mla_bytes_per_token")
V(g, "numbers, not bytes", "(512 + 64) * 60", r"bytes", r"fp16", r"numbers,? not", target="mla_bytes_per_token")
V(g, "latent cached per head", "(512 + 64) * 60 * 2 * 128", r"heads?", r"per head", r"shared", target="mla_bytes_per_token")
V(g, "RoPE key per head", "(512 + 64 * 128) * 60 * 2", r"rope key[^.]{0,40}(shared|one|per head)", r"heads?", r"per head", target="mla_bytes_per_token")
V(g, "whole-number float", "(512 + 64) * 60 * 2.0", *WHOLE, target="mla_bytes_per_token")
V(g, "string with units", "'69120 bytes'", *TEXT, target="mla_bytes_per_token")
V(g, "in KiB", "(512 + 64) * 60 * 2 / 1024", r"KiB", r"units?", r"bytes", *WHOLE, target="mla_bytes_per_token")
V(g, "MHA cache instead of the latent", "2 * 128 * 128 * 60 * 2", r"mha", r"latent", r"multi-head", r"d_c", r"K and V", target="mla_bytes_per_token")
V(g, "latent counted for K and for V", "2 * 512 * 60 * 2 + 64 * 60 * 2", r"latent[^.]{0,40}(once|shared|both)", r"K and V", r"twice", r"factor", target="mla_bytes_per_token")
V(g, "bits", "(512 + 64) * 60 * 16", r"bits", r"bytes", r"\b16\b", target="mla_bytes_per_token")
RV(g, "separate terms summed", "512 * 2 * 60 + 64 * 2 * 60", target="mla_bytes_per_token")
RV(g, "int() of a float product", "int((512 + 64) * 60 * 2.0)", target="mla_bytes_per_token")

g = "q08_decode_bound"
V(g, "cache forgotten", "13_214_687_232 / 3.35e12 * 1e3", r"(forg|miss|without|leav|ignor|add)\w*[^.]{0,30}cache",
  r"cache\w*[^.]{0,30}(missing|forgot|not (read|counted|included))", r"only (the )?weights", target="decode_ms")
V(g, "in seconds", "(13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12", r"millisecond", r"\bms\b", r"seconds?", r"units?", r"1000", target="decode_ms")
V(g, "K and V factor forgotten", "(13_214_687_232 + 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1e3", r"\bK and V\b", r"keys? and values?", r"factor (of )?2", r"twice", target="decode_ms")
V(g, "cache in fp32", "(13_214_687_232 + 2 * 32 * 32 * 128 * 4 * 4096) / 3.35e12 * 1e3", r"fp16", r"2 bytes", r"bytes per", target="decode_ms")
V(g, "microseconds", "(13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1e6", r"millisecond", r"\bms\b", r"micro", r"units?", r"1000", target="decode_ms")
V(g, "truncated to 4.58", "4.58", r"round", r"significant", r"truncat", target="decode_ms")
V(g, "only the cache", "2 * 32 * 32 * 128 * 2 * 4096 / 3.35e12 * 1e3", r"weights", r"weight matrices", target="decode_ms")
V(g, "string with units", "'4.59 ms'", *TEXT, target="decode_ms")
V(g, "bandwidth read as GiB/s (3.35 * 2**40)", "(13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) / (3.35 * 2**40) * 1e3", r"bandwidth", r"2\*\*40|TiB|GiB", r"1e12|10\^?12", target="decode_ms")
V(g, "cache for a batch of 32 (layers mistaken for the batch)", "(13_214_687_232 + 32 * 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1e3", r"one sequence", r"batch", target="decode_ms")
V(g, "multiplied by the bandwidth", "(13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) * 3.35e12 / 1e30", r"divid", r"bandwidth", r"bytes / bandwidth", target="decode_ms")
V(g, "tokens forgotten in the cache", "(13_214_687_232 + 2 * 32 * 32 * 128 * 2) / 3.35e12 * 1e3", r"4096", r"tokens", r"per token", target="decode_ms")
RV(g, "rounded to 3 significant figures", "4.59", target="decode_ms")
RV(g, "4 significant figures", "4.586", target="decode_ms")
RV(g, "full computation", "(13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1000", target="decode_ms")
RV(g, "numpy float64 via round", "np.round(15_362_170_880 / 3.35e9, 4)", target="decode_ms")
