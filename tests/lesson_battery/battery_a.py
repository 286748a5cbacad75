"""Battery A: answers to the 34 auto-graded questions, written from the lessons and the exercise
texts alone (never the solutions, the judge, the self-check data or another battery).

``WRONG`` holds realistic slips, each with the regular expressions that recognise feedback naming
its cause; ``RIGHT`` holds correct answers in unusual but legitimate forms. Every entry is checked
against independent references in ``verify_a.py`` (each wrong answer differs from the reference on
an input the question allows, or breaks a rule the question states; each right one agrees).
"""

from __future__ import annotations

from textwrap import dedent

from .format import Right, Wrong


def _w(grade_id, name, target, source, *causes):
    return Wrong(grade_id, name, dedent(source).lstrip("\n"), target, tuple(causes))


def _r(grade_id, name, target, source):
    return Right(grade_id, name, dedent(source).lstrip("\n"), target)


# Cause patterns shared by several questions (each names one specific slip).
SCALE_D_MODEL = (
    r"d_?model",
    r"width of (x|the input)",
    r"(instead of|not) (the )?(query|head)'?s? width",
    r"√ ?d_?model",
    r"sqrt\(d_?model",
)
NO_SCALE = (
    r"(not|no|never|forg[oe]t\w*|missing|without|omit\w*|left out)\W+(\w+\W+){0,4}(scal\w*|divid\w*|sqrt|√)",
    r"unscaled",
    r"1 ?/ ?√",
)
BARE_RESHAPE = (r"bare reshape", r"reshape", r"transpose", r"mix\w* tokens")
INTERLEAVED = (
    r"interleav",
    r"strid",
    r"every h",
    r"contiguous",
    r"consecutive",
    r"block of (d_head )?(features|columns)",
    r"(head|feature) axis.{0,40}(order|first|before)",
)
AXIS_QUERIES = (
    r"axis",
    r"over (the )?(keys|queries|rows|columns)",
    r"sum(s)? to (one|1)",
    r"normali[sz]\w* (over|along|across)",
)
IN_PLACE = (
    r"in[- ]place",
    r"copy",
    r"(chang|modif|overwr)\w* (its|the|your) (input|argument|array)",
    r"input.{0,30}(changed|modified)",
)
FLOAT_COUNT = (r"float", r"//", r"whole number", r"integer", r"\bint\b")
STRING_FOR_TUPLE = (r"string", r"\bstr\b", r"text", r"tuple", r"quot")
FORBIDDEN = (
    r"course'?s? (own )?(helper|function)",
    r"not allowed",
    r"forbidden",
    r"off[- ]limits",
    r"flag",
    r"(may|must) not (call|use)",
    r"do not call",
    r"own (code|implementation)",
)
MASK_POLARITY = (
    r"polarity",
    r"invert",
    r"opposite",
    r"negat",
    r"revers",
    r"True ?(=|means) ?(may attend|allowed)",
    r"(blocks?|blocked) the (allowed|wrong)",
    r"~ ?mask",
)
MASK_ADDED = (
    r"add\w*.{0,40}(mask|0/1|boolean)",
    r"(mask|0/1|boolean).{0,40}add",
    r"0/1",
    r"as (numbers|data)",
    r"-inf",
    r"float mask",
)
MASK_ZERO = (
    r"(set|to|as|with|by) (0|zero)\b",
    r"-inf",
    r"0 instead",
    r"multipl\w* (by )?(the )?mask",
    r"zero(ed)? scores",
)
MASK_AFTER = (
    r"after (the )?softmax",
    r"before (the )?softmax",
    r"re-?normali[sz]",
    r"sum(s)? to (one|1)",
)
TRANSPOSED_SCORES = (
    r"transpos",
    r"rows? (are|=|as|for) (the )?keys",
    r"swap",
    r"(keys|k) (as|on) (the )?rows",
    r"rows? (=|are|should be) quer",
    r"k ?@ ?q",
)
WRONG_OUTPUT_PROJ = (r"w_o\b", r"output projection", r"W_O")
MERGE_SUM = (r"\bsum", r"\badd(s|ed|ing)?\b", r"concatenat", r"join\w*.{0,20}side by side")
LETTER_LIST = (r"string", r"\bstr\b", r"list", r"one letter", r"a letter")
TWO_LETTERS = (
    r"(one|single|only one|exactly one) (letter|answer|option|choice)",
    r"more than one",
    r"two letters",
)
NUMBER_FOR_LETTER = (r"letter", r"string", r"\bstr\b", r"not a number")
IF_MASK = (r"if mask", r"is not None", r"is None", r"truth value", r"ambiguous")
OFF_BY_ONE = (
    r"off[- ]by[- ]one",
    r"one (row|column|key|feature|position) (too many|too few|short|extra|missing)",
    r"exclusive",
    r"inclusive",
)


WRONG: list[Wrong] = []
RIGHT: list[Right] = []


# --------------------------------------------------------------------------------------------
# Exercise 01: q01_scores
# --------------------------------------------------------------------------------------------
T = "attention_scores"
WRONG += [
    _w(
        "q01_scores",
        "scales by sqrt(d_model), the width of x",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_k
            return q @ k.T / np.sqrt(x.shape[1])
        """,
        *SCALE_D_MODEL,
    ),
    _w(
        "q01_scores",
        "forgets the scale",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_k
            return q @ k.T
        """,
        *NO_SCALE,
    ),
    _w(
        "q01_scores",
        "divides by d_k, not by its square root",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_k
            d_k = q.shape[1]
            return q @ k.T / d_k
        """,
        r"square root",
        r"root of",
        r"d_k (itself|alone|instead)",
        r"without (the )?(sqrt|√)",
        r"too (small|much|strong)",
        r"not (by )?(its|the) (square )?root",
    ),
    _w(
        "q01_scores",
        "rows are keys (k @ q.T)",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_k
            return k @ q.T / np.sqrt(q.shape[1])
        """,
        *TRANSPOSED_SCORES,
    ),
    _w(
        "q01_scores",
        "keys projected with w_q (copy-paste)",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_q
            return q @ k.T / np.sqrt(q.shape[1])
        """,
        r"w_k",
        r"(keys?|k) .{0,30}(w_q|same (weight|projection|matrix))",
        r"same (weight|projection|matrix)",
    ),
    _w(
        "q01_scores",
        "scales by sqrt(n), the number of tokens",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_k
            n = x.shape[0]
            return q @ k.T / np.sqrt(n)
        """,
        r"number of (tokens|rows|queries|keys)",
        r"sequence length",
        r"\bn\b.{0,20}(tokens|instead)",
        r"shape\[0\]",
        r"len\(",
    ),
    _w(
        "q01_scores",
        "multiplies by sqrt(d_k) instead of dividing",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_k
            return q @ k.T * np.sqrt(w_q.shape[1])
        """,
        r"multipl\w*",
        r"instead of divid",
        r"inverse",
        r"upside",
        r"1 ?/ ?√",
        r"too (large|big)",
    ),
    _w(
        "q01_scores",
        "goes on to the softmax and returns weights",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_k
            s = q @ k.T / np.sqrt(q.shape[1])
            e = np.exp(s - s.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        """,
        r"softmax",
        r"weights,? (not|instead of) (the )?scores",
        r"normali[sz]",
        r"sum(s)? to (one|1)",
        r"probabilit",
    ),
]
RIGHT += [
    _r(
        "q01_scores",
        "einsum with the scale as a power",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = np.einsum("nd,dk->nk", x, w_q)
            k = np.einsum("nd,dk->nk", x, w_k)
            return np.einsum("ik,jk->ij", q, k) * q.shape[-1] ** -0.5
        """,
    ),
    _r(
        "q01_scores",
        "loops over every query and key",
        T,
        """
        def attention_scores(x, w_q, w_k):
            q = x @ w_q
            k = x @ w_k
            n, d_k = q.shape
            out = np.zeros((n, n))
            for i in range(n):
                for j in range(n):
                    out[i, j] = np.dot(q[i], k[j]) / np.sqrt(d_k)
            return out
        """,
    ),
    _r(
        "q01_scores",
        "folds w_q w_k^T into one matrix first",
        T,
        """
        def attention_scores(x, w_q, w_k):
            d_k = w_k.shape[1]
            return x @ (w_q @ w_k.T) @ x.T / np.sqrt(d_k)
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q01_softmax
# --------------------------------------------------------------------------------------------
T = "softmax_over_keys"
WRONG += [
    _w(
        "q01_softmax",
        "normalises over the query axis",
        T,
        """
        def softmax_over_keys(scores):
            e = np.exp(scores - scores.max(axis=0, keepdims=True))
            return e / e.sum(axis=0, keepdims=True)
        """,
        *AXIS_QUERIES,
    ),
    _w(
        "q01_softmax",
        "no max subtraction: overflows at 800",
        T,
        """
        def softmax_over_keys(scores):
            e = np.exp(scores)
            return e / e.sum(axis=1, keepdims=True)
        """,
        r"overflow",
        r"subtract\w*.{0,30}max",
        r"max\w*.{0,30}subtract",
        r"\binf(inite|inity)?\b(?!.{0,10}blocked)",
        r"\bnan\b",
        r"large (scores|values|entries)",
    ),
    _w(
        "q01_softmax",
        "subtracts the global maximum, not each row's",
        T,
        """
        def softmax_over_keys(scores):
            e = np.exp(scores - np.max(scores))
            return e / e.sum(axis=1, keepdims=True)
        """,
        r"(each|every|per) row'?s? (own )?max",
        r"global max",
        r"(whole|entire) (matrix|array)'?s? max",
        r"one max",
        r"row max",
        r"underflow",
    ),
    _w(
        "q01_softmax",
        "turns -inf into 0 before exponentiating",
        T,
        """
        def softmax_over_keys(scores):
            s = np.where(np.isinf(scores), 0.0, scores)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        """,
        r"-inf",
        r"blocked",
        r"exactly (0|zero)",
        r"masked",
        r"(weight|zero) on .{0,20}block",
    ),
    _w(
        "q01_softmax",
        "normalises by the sum of the whole matrix",
        T,
        """
        def softmax_over_keys(scores):
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            return e / e.sum()
        """,
        r"(whole|entire|all).{0,20}(matrix|entries|array)",
        r"(each|every|per) row",
        r"along (the|each) row",
        r"rows? (do(es)? not|don'?t) sum",
        r"sum(s)? to (one|1)",
    ),
    _w(
        "q01_softmax",
        "divides by the row sums without keepdims",
        T,
        """
        def softmax_over_keys(scores):
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            return e / e.sum(axis=1)
        """,
        r"keepdims",
        r"broadcast",
        r"\[:, ?None\]",
        r"column",
        r"divid\w* (by )?the wrong",
    ),
    _w(
        "q01_softmax",
        "subtracts each column's maximum",
        T,
        """
        def softmax_over_keys(scores):
            e = np.exp(scores - scores.max(axis=0))
            return e / e.sum(axis=1, keepdims=True)
        """,
        r"(each|every|per) row'?s? (own )?max",
        r"column'?s? max",
        r"max\w* (over|along|of) (the )?(wrong|columns?|axis 0|quer)",
        r"row max",
    ),
    _w(
        "q01_softmax",
        "forgets to divide by the row sums",
        T,
        """
        def softmax_over_keys(scores):
            return np.exp(scores - scores.max(axis=1, keepdims=True))
        """,
        r"divid",
        r"normali[sz]",
        r"sum(s)? to (one|1)",
        r"(do(es)?|don'?t) (not )?sum",
    ),
    _w(
        "q01_softmax",
        "calls the course's softmax",
        T,
        """
        from mha_helpers import softmax

        def softmax_over_keys(scores):
            return softmax(scores, axis=-1)
        """,
        r"mha_helpers",
        r"softmax\(",
        *FORBIDDEN,
    ),
]
RIGHT += [
    _r(
        "q01_softmax",
        "one row at a time in a loop",
        T,
        """
        def softmax_over_keys(scores):
            out = np.zeros(scores.shape)
            for i, row in enumerate(scores):
                e = np.exp(row - row.max())
                out[i] = e / e.sum()
            return out
        """,
    ),
    _r(
        "q01_softmax",
        "through the log-sum-exp",
        T,
        """
        def softmax_over_keys(scores):
            m = np.max(scores, axis=-1, keepdims=True)
            lse = m + np.log(np.sum(np.exp(scores - m), axis=-1, keepdims=True))
            return np.exp(scores - lse)
        """,
    ),
    _r(
        "q01_softmax",
        "np.divide with the row sums as a column",
        T,
        """
        def softmax_over_keys(scores):
            shifted = scores - scores.max(axis=1)[:, None]
            e = np.exp(shifted)
            return np.divide(e, e.sum(axis=1)[:, None])
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q01_masked_attention
# --------------------------------------------------------------------------------------------
T = "masked_attention"
_SOFTMAX = """
    def softmax_over_keys(scores):
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

"""
WRONG += [
    _w(
        "q01_masked_attention",
        "blocks where the mask is True",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        scores = q @ k.T / np.sqrt(q.shape[1])
        scores = np.where(mask, -np.inf, scores)
        weights = softmax_over_keys(scores)
        return weights @ v, weights
    """,
        *MASK_POLARITY,
    ),
    _w(
        "q01_masked_attention",
        "adds the boolean mask to the scores",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        scores = q @ k.T / np.sqrt(q.shape[1]) + mask
        weights = softmax_over_keys(scores)
        return weights @ v, weights
    """,
        *MASK_ADDED,
    ),
    _w(
        "q01_masked_attention",
        "masks the weights after the softmax, no renormalising",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        weights = softmax_over_keys(q @ k.T / np.sqrt(q.shape[1]))
        weights = weights * mask
        return weights @ v, weights
    """,
        *MASK_AFTER,
    ),
    _w(
        "q01_masked_attention",
        "scales by the width of the values",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        scores = q @ k.T / np.sqrt(v.shape[1])
        scores = np.where(mask, scores, -np.inf)
        weights = softmax_over_keys(scores)
        return weights @ v, weights
    """,
        r"d_v",
        r"width of (the )?(values?|v)\b",
        r"value'?s? width",
        r"v\.shape",
    ),
    _w(
        "q01_masked_attention",
        "no scale",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        scores = np.where(mask, q @ k.T, -np.inf)
        weights = softmax_over_keys(scores)
        return weights @ v, weights
    """,
        *NO_SCALE,
    ),
    _w(
        "q01_masked_attention",
        "blocked scores set to 0 (multiplied by the mask)",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        scores = q @ k.T / np.sqrt(q.shape[1]) * mask
        weights = softmax_over_keys(scores)
        return weights @ v, weights
    """,
        *MASK_ZERO,
    ),
    _w(
        "q01_masked_attention",
        "returns (weights, output)",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        scores = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
        weights = softmax_over_keys(scores)
        return weights, weights @ v
    """,
        r"order",
        r"swap",
        r"(output|weights) (comes? )?first",
        r"\(output, weights\)",
    ),
    _w(
        "q01_masked_attention",
        "softmax over the query axis",
        T,
        """
    def masked_attention(q, k, v, mask):
        scores = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
        e = np.exp(scores - scores.max(axis=0, keepdims=True))
        weights = e / e.sum(axis=0, keepdims=True)
        return weights @ v, weights
    """,
        *AXIS_QUERIES,
    ),
    _w(
        "q01_masked_attention",
        "reads the mask transposed",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        scores = q @ k.T / np.sqrt(q.shape[1])
        scores[~mask.T] = -np.inf
        weights = softmax_over_keys(scores)
        return weights @ v, weights
    """,
        r"transpos",
        r"mask\.T",
        r"(rows|columns).{0,30}(queries|keys)",
        r"\(n_q, n_k\)",
    ),
    _w(
        "q01_masked_attention",
        "output from the transposed weights",
        T,
        _SOFTMAX
        + """
    def masked_attention(q, k, v, mask):
        scores = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
        weights = softmax_over_keys(scores)
        return weights.T @ v, weights
    """,
        r"transpos",
        r"weights\.T",
        r"weights ?@ ?v",
        r"output",
    ),
]
RIGHT += [
    _r(
        "q01_masked_attention",
        "zeroes the exponentials of blocked keys, max over allowed keys",
        T,
        """
        def masked_attention(q, k, v, mask):
            scores = q @ k.T / np.sqrt(q.shape[-1])
            m = np.where(mask, scores, -np.inf).max(axis=-1, keepdims=True)
            e = np.where(mask, np.exp(np.where(mask, scores, m) - m), 0.0)
            weights = e / e.sum(axis=-1, keepdims=True)
            return weights @ v, weights
        """,
    ),
    _r(
        "q01_masked_attention",
        "one query at a time",
        T,
        """
        def masked_attention(q, k, v, mask):
            n_q, n_k = mask.shape
            weights = np.zeros((n_q, n_k))
            for i in range(n_q):
                s = k @ q[i] / np.sqrt(len(q[i]))
                s[~mask[i]] = -np.inf
                e = np.exp(s - s.max())
                weights[i] = e / e.sum()
            return weights @ v, weights
        """,
    ),
    _r(
        "q01_masked_attention",
        "blocks with the most negative float",
        T,
        """
        def masked_attention(q, k, v, mask):
            scores = np.einsum("qd,kd->qk", q, k) / np.sqrt(q.shape[1])
            scores = np.where(mask, scores, np.finfo(scores.dtype).min)
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights = e / e.sum(axis=1, keepdims=True)
            return weights @ v, weights
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# Exercise 02: q02_weights_shape
# --------------------------------------------------------------------------------------------
T = "weights_shape"
WRONG += [
    _w(
        "q02_weights_shape",
        "one head's matrix only",
        T,
        "weights_shape = (5, 5)\n",
        r"(all|every|each|both) (the )?heads",
        r"head axis",
        r"one head",
        r"missing.{0,20}head",
        r"\bh\b.{0,10}first",
    ),
    _w(
        "q02_weights_shape",
        "token axis before the head axis",
        T,
        "weights_shape = (5, 2, 5)\n",
        r"head axis.{0,30}(first|front|leading)",
        r"(put|puts|place) the head",
        r"order of (the )?axes",
        r"axis order",
        r"\(h, n_q, n_k\)",
    ),
    _w(
        "q02_weights_shape",
        "head width in place of the keys",
        T,
        "weights_shape = (2, 5, 4)\n",
        r"d_head",
        r"(one|a) (column|weight) (per|for each) key",
        r"n_k",
        r"(n|keys|tokens) (by|x|×) (n|keys|tokens)",
        r"(outputs?|values?),? not (the )?weights",
    ),
    _w(
        "q02_weights_shape",
        "the tuple typed as a string",
        T,
        'weights_shape = "(2, 5, 5)"\n',
        *STRING_FOR_TUPLE,
    ),
    _w(
        "q02_weights_shape",
        "heads stacked along the rows",
        T,
        "weights_shape = (10, 5)\n",
        r"stack",
        r"concatenat",
        r"separate (axis|matrix)",
        r"head axis",
        r"three (axes|dimensions|numbers)",
    ),
    _w(
        "q02_weights_shape",
        "adds a batch axis",
        T,
        "weights_shape = (1, 2, 5, 5)\n",
        r"batch",
        r"extra (axis|dimension)",
        r"leading 1",
        r"three (axes|dimensions|numbers)",
    ),
    _w(
        "q02_weights_shape",
        "d_model heads",
        T,
        "weights_shape = (8, 5, 5)\n",
        r"d_model",
        r"number of heads",
        r"\bh\b ?= ?2",
        r"\b(2|two) heads",
    ),
    _w(
        "q02_weights_shape",
        "head axis last",
        T,
        "weights_shape = (5, 5, 2)\n",
        r"head axis.{0,30}(first|front|leading)",
        r"(put|puts|place) the head",
        r"order of (the )?axes",
        r"axis order",
        r"last",
    ),
]
RIGHT += [
    _r(
        "q02_weights_shape",
        "read off a zero array's shape",
        T,
        "weights_shape = np.zeros((2, 5, 5)).shape\n",
    ),
    _r(
        "q02_weights_shape",
        "a tuple of NumPy integers",
        T,
        "weights_shape = tuple(np.array([2, 5, 5]))\n",
    ),
]

# --------------------------------------------------------------------------------------------
# q02_split_heads
# --------------------------------------------------------------------------------------------
T = "split_heads"
WRONG += [
    _w(
        "q02_split_heads",
        "bare reshape",
        T,
        """
        def split_heads(x, num_heads):
            n, d_model = x.shape
            return x.reshape(num_heads, n, d_model // num_heads)
        """,
        *BARE_RESHAPE,
    ),
    _w(
        "q02_split_heads",
        "reshape without moving the head axis",
        T,
        """
        def split_heads(x, num_heads):
            n, d_model = x.shape
            return x.reshape(n, num_heads, d_model // num_heads)
        """,
        r"transpos",
        r"head axis",
        r"swapaxes",
        r"moveaxis",
        r"\(n, h, d_head\)",
        r"(axis|axes) order",
    ),
    _w(
        "q02_split_heads",
        "interleaved features (reshape n, d_head, h)",
        T,
        """
        def split_heads(x, num_heads):
            n, d_model = x.shape
            d_head = d_model // num_heads
            return x.reshape(n, d_head, num_heads).transpose(2, 0, 1)
        """,
        *INTERLEAVED,
    ),
    _w(
        "q02_split_heads",
        "each head transposed, (h, d_head, n)",
        T,
        """
        def split_heads(x, num_heads):
            n, d_model = x.shape
            return x.T.reshape(num_heads, d_model // num_heads, n)
        """,
        r"\(h, d_head, n\)",
        r"transpos",
        r"token axis",
        r"\(num_heads, n, d_head\)",
    ),
    _w(
        "q02_split_heads",
        "d_head with / (a float)",
        T,
        """
        def split_heads(x, num_heads):
            n, d_model = x.shape
            d_head = d_model / num_heads
            return x.reshape(n, num_heads, d_head).transpose(1, 0, 2)
        """,
        *FLOAT_COUNT,
    ),
    _w(
        "q02_split_heads",
        "slice one feature short",
        T,
        """
        def split_heads(x, num_heads):
            d_head = x.shape[1] // num_heads
            return np.stack([x[:, i * d_head:(i + 1) * d_head - 1] for i in range(num_heads)])
        """,
        *OFF_BY_ONE,
        r"slice",
    ),
    _w(
        "q02_split_heads",
        "splits the tokens, not the features",
        T,
        """
        def split_heads(x, num_heads):
            return np.stack(np.split(x, num_heads, axis=0))
        """,
        r"token axis",
        r"axis ?=? ?0",
        r"(rows|tokens) (instead of|not) (the )?(features|columns)",
        r"split\w* (the )?(tokens|rows)",
        r"feature axis",
    ),
    _w(
        "q02_split_heads",
        "reshape to (h, d_head, n) then swap the last two",
        T,
        """
        def split_heads(x, num_heads):
            n, d_model = x.shape
            return x.reshape(num_heads, d_model // num_heads, n).transpose(0, 2, 1)
        """,
        *BARE_RESHAPE,
        r"memory order",
        r"row-major",
    ),
]
RIGHT += [
    _r(
        "q02_split_heads",
        "np.split along the features, then stack",
        T,
        """
        def split_heads(x, num_heads):
            return np.stack(np.split(x, num_heads, axis=-1))
        """,
    ),
    _r(
        "q02_split_heads",
        "reshape then swapaxes",
        T,
        """
        def split_heads(x, num_heads):
            n = x.shape[0]
            return x.reshape(n, num_heads, -1).swapaxes(0, 1)
        """,
    ),
    _r(
        "q02_split_heads",
        "a loop that fills an empty array",
        T,
        """
        def split_heads(x, num_heads):
            n, d_model = x.shape
            d_head = d_model // num_heads
            out = np.empty((num_heads, n, d_head), dtype=x.dtype)
            for i in range(num_heads):
                for t in range(n):
                    out[i, t] = x[t, i * d_head:(i + 1) * d_head]
            return out
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q02_merge_heads
# --------------------------------------------------------------------------------------------
T = "merge_heads"
WRONG += [
    _w(
        "q02_merge_heads",
        "bare reshape",
        T,
        """
        def merge_heads(x):
            h, n, d_head = x.shape
            return x.reshape(n, h * d_head)
        """,
        *BARE_RESHAPE,
    ),
    _w(
        "q02_merge_heads",
        "transposes but never reshapes",
        T,
        """
        def merge_heads(x):
            return x.transpose(1, 0, 2)
        """,
        r"reshape",
        r"\(n, h, d_head\)",
        r"(three|3) (axes|dimensions)",
        r"flatten",
        r"join",
        r"2-?D",
    ),
    _w(
        "q02_merge_heads",
        "feature axis before the head axis (interleaves)",
        T,
        """
        def merge_heads(x):
            h, n, d_head = x.shape
            return x.transpose(1, 2, 0).reshape(n, h * d_head)
        """,
        *INTERLEAVED,
        r"order of (the )?features",
    ),
    _w(
        "q02_merge_heads",
        "adds the heads",
        T,
        """
        def merge_heads(x):
            return x.sum(axis=0)
        """,
        *MERGE_SUM,
    ),
    _w(
        "q02_merge_heads",
        "averages the heads",
        T,
        """
        def merge_heads(x):
            return x.mean(axis=0)
        """,
        r"average",
        r"mean",
        r"concatenat",
        r"join\w*.{0,20}side by side",
    ),
    _w(
        "q02_merge_heads",
        "joins along the token axis",
        T,
        """
        def merge_heads(x):
            return np.concatenate(list(x), axis=0)
        """,
        r"token axis",
        r"axis ?=? ?0",
        r"(feature|last) axis",
        r"axis ?= ?(-1|1)",
        r"(rows|tokens) (instead|not)",
        r"side by side",
    ),
    _w(
        "q02_merge_heads",
        "result transposed, (h * d_head, n)",
        T,
        """
        def merge_heads(x):
            h, n, d_head = x.shape
            return x.transpose(0, 2, 1).reshape(h * d_head, n)
        """,
        r"transpos",
        r"\(h ?\* ?d_head, n\)",
        r"\(n, h ?\* ?d_head\)",
        r"token axis",
    ),
    _w(
        "q02_merge_heads",
        "hard-codes two heads",
        T,
        """
        def merge_heads(x):
            return np.concatenate([x[0], x[1]], axis=-1)
        """,
        r"(two|2) heads",
        r"(every|all|each) heads?",
        r"hard[- ]?cod",
        r"only (the )?first (two|2)",
        r"number of heads",
    ),
]
RIGHT += [
    _r(
        "q02_merge_heads",
        "np.concatenate of the heads along axis 1",
        T,
        """
        def merge_heads(x):
            return np.concatenate(x, axis=1)
        """,
    ),
    _r(
        "q02_merge_heads",
        "np.hstack",
        T,
        """
        def merge_heads(x):
            return np.hstack(list(x))
        """,
    ),
    _r(
        "q02_merge_heads",
        "a loop into an empty array",
        T,
        """
        def merge_heads(x):
            h, n, d_head = x.shape
            out = np.empty((n, h * d_head), dtype=x.dtype)
            for i in range(h):
                out[:, i * d_head:(i + 1) * d_head] = x[i]
            return out
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q02_per_head_attention
# --------------------------------------------------------------------------------------------
T = "per_head_attention"
_SPLIT = """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 0, 2)

"""
WRONG += [
    _w(
        "q02_per_head_attention",
        "scales by sqrt(d_model)",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return a @ v, a
    """,
        *SCALE_D_MODEL,
    ),
    _w(
        "q02_per_head_attention",
        "bare-reshape split",
        T,
        """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        n, d = x.shape
        d_head = d // num_heads
        q, k, v = ((x @ w).reshape(num_heads, n, d_head) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d_head)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return a @ v, a
    """,
        *BARE_RESHAPE,
    ),
    _w(
        "q02_per_head_attention",
        "softmax over the query axis",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        return a @ v, a
    """,
        *AXIS_QUERIES,
    ),
    _w(
        "q02_per_head_attention",
        "softmax across the heads",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(axis=0, keepdims=True))
        a = e / e.sum(axis=0, keepdims=True)
        return a @ v, a
    """,
        r"head axis",
        r"across (the )?heads",
        r"axis ?=? ?0",
        r"over (the )?heads",
        r"over (the )?keys",
        r"sum(s)? to (one|1)",
    ),
    _w(
        "q02_per_head_attention",
        "scores k q^T (rows are keys)",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = k @ q.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return a @ v, a
    """,
        *TRANSPOSED_SCORES,
    ),
    _w(
        "q02_per_head_attention",
        "returns the merged output",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        out = a @ v
        return out.transpose(1, 0, 2).reshape(x.shape[0], -1), a
    """,
        r"merge",
        r"\(h, n, d_head\)",
        r"per head",
        r"(do not|don'?t|not) (merge|join|concatenate)",
    ),
    _w(
        "q02_per_head_attention",
        "forgets the scale",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return a @ v, a
    """,
        *NO_SCALE,
    ),
    _w(
        "q02_per_head_attention",
        "values not projected (V = x)",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q = split_heads(x @ w_q, num_heads)
        k = split_heads(x @ w_k, num_heads)
        v = split_heads(x, num_heads)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return a @ v, a
    """,
        r"w_v",
        r"value projection",
        r"project\w*.{0,20}(v|values)\b",
        r"\bV ?= ?x",
    ),
    _w(
        "q02_per_head_attention",
        "interleaved split",
        T,
        """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        n, d = x.shape
        split = lambda y: y.reshape(n, d // num_heads, num_heads).transpose(2, 0, 1)
        q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d // num_heads)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return a @ v, a
    """,
        *INTERLEAVED,
    ),
    _w(
        "q02_per_head_attention",
        "returns (weights, outputs)",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return a, a @ v
    """,
        r"order",
        r"swap",
        r"(outputs?|weights) (comes? )?first",
        r"\(outputs?, weights\)",
    ),
    _w(
        "q02_per_head_attention",
        "scales by sqrt(num_heads)",
        T,
        _SPLIT
        + """
    def per_head_attention(x, w_q, w_k, w_v, num_heads):
        q, k, v = (split_heads(x @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(num_heads)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return a @ v, a
    """,
        r"number of heads",
        r"num_heads",
        r"√ ?h\b",
        r"sqrt\(h\)",
    ),
]
RIGHT += [
    _r(
        "q02_per_head_attention",
        "a loop over heads with slices, then np.stack",
        T,
        """
        def per_head_attention(x, w_q, w_k, w_v, num_heads):
            q, k, v = x @ w_q, x @ w_k, x @ w_v
            d_head = x.shape[1] // num_heads
            outs, ws = [], []
            for i in range(num_heads):
                cols = slice(i * d_head, (i + 1) * d_head)
                s = q[:, cols] @ k[:, cols].T / np.sqrt(d_head)
                e = np.exp(s - s.max(axis=1, keepdims=True))
                a = e / e.sum(axis=1, keepdims=True)
                outs.append(a @ v[:, cols])
                ws.append(a)
            return np.stack(outs), np.stack(ws)
        """,
    ),
    _r(
        "q02_per_head_attention",
        "einsum on (n, h, d_head) arrays",
        T,
        """
        def per_head_attention(x, w_q, w_k, w_v, num_heads):
            n, d = x.shape
            q, k, v = ((x @ w).reshape(n, num_heads, d // num_heads) for w in (w_q, w_k, w_v))
            s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d // num_heads)
            s = s - s.max(axis=-1, keepdims=True)
            a = np.exp(s)
            a /= a.sum(axis=-1, keepdims=True)
            return np.einsum("hqk,khd->hqd", a, v), a
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q02_full_layer
# --------------------------------------------------------------------------------------------
T = "multi_head_layer"
_PIECES = """
    def split_heads(x, num_heads):
        n, d_model = x.shape
        return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 0, 2)

    def merge_heads(x):
        h, n, d_head = x.shape
        return x.transpose(1, 0, 2).reshape(n, h * d_head)

    def softmax_over_keys(s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

"""
WRONG += [
    _w(
        "q02_full_layer",
        "ignores the mask",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            a = softmax_over_keys(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
            outs.append(merge_heads(a @ v) @ w_o)
        return np.stack(outs)
    """,
        r"mask\w*.{0,30}(ignor|not (used|applied)|unused|no effect)",
        r"(ignor|not appl|without)\w*.{0,30}mask",
        r"(use|apply) the mask",
        r"blocked",
    ),
    _w(
        "q02_full_layer",
        "mask polarity inverted",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, -np.inf, s)
            outs.append(merge_heads(softmax_over_keys(s) @ v) @ w_o)
        return np.stack(outs)
    """,
        *MASK_POLARITY,
    ),
    _w(
        "q02_full_layer",
        "adds the mask to the scores",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = s + mask
            outs.append(merge_heads(softmax_over_keys(s) @ v) @ w_o)
        return np.stack(outs)
    """,
        *MASK_ADDED,
    ),
    _w(
        "q02_full_layer",
        "forgets w_o",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            outs.append(merge_heads(softmax_over_keys(s) @ v))
        return np.stack(outs)
    """,
        *WRONG_OUTPUT_PROJ,
    ),
    _w(
        "q02_full_layer",
        "merges with a bare reshape",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            o = softmax_over_keys(s) @ v
            outs.append(o.reshape(seq.shape[0], -1) @ w_o)
        return np.stack(outs)
    """,
        *BARE_RESHAPE,
        r"merge",
    ),
    _w(
        "q02_full_layer",
        "flattens the batch into one sequence",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        b, n, d = x.shape
        flat = x.reshape(b * n, d)
        q, k, v = (split_heads(flat @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(np.tile(mask, (b, b)), s, -np.inf)
        out = merge_heads(softmax_over_keys(s) @ v) @ w_o
        return out.reshape(b, n, d)
    """,
        r"(across|between|other) sequences",
        r"within (its|each|one|the) (own )?sequence",
        r"(mix|flatten)\w*.{0,20}batch",
        r"batch.{0,20}(mix|flatten)",
        r"sequences? of the batch",
    ),
    _w(
        "q02_full_layer",
        "scales by sqrt(d_model)",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            outs.append(merge_heads(softmax_over_keys(s) @ v) @ w_o)
        return np.stack(outs)
    """,
        *SCALE_D_MODEL,
    ),
    _w(
        "q02_full_layer",
        "tests the mask with `if mask:`",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask:
                s = np.where(mask, s, -np.inf)
            outs.append(merge_heads(softmax_over_keys(s) @ v) @ w_o)
        return np.stack(outs)
    """,
        *IF_MASK,
    ),
    _w(
        "q02_full_layer",
        "applies the mask transposed",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask.T, s, -np.inf)
            outs.append(merge_heads(softmax_over_keys(s) @ v) @ w_o)
        return np.stack(outs)
    """,
        r"transpos",
        r"mask\.T",
        r"upper",
        r"(future|later) (tokens|keys|positions)",
        r"rows? (are|=) quer",
    ),
    _w(
        "q02_full_layer",
        "blocked scores set to 0",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, 0.0)
            outs.append(merge_heads(softmax_over_keys(s) @ v) @ w_o)
        return np.stack(outs)
    """,
        *MASK_ZERO,
    ),
    _w(
        "q02_full_layer",
        "only the first sequence of the batch",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        seq = x[0]
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        return (merge_heads(softmax_over_keys(s) @ v) @ w_o)[None]
    """,
        r"(every|each|all) (the )?sequences?",
        r"first sequence",
        r"batch (axis|size|dimension)",
        r"\(batch, n, d_model\)",
        r"only one sequence",
    ),
    _w(
        "q02_full_layer",
        "softmax over the query axis",
        T,
        _PIECES
        + """
    def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
        outs = []
        for seq in x:
            q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            e = np.exp(s - s.max(axis=-2, keepdims=True))
            a = e / e.sum(axis=-2, keepdims=True)
            outs.append(merge_heads(a @ v) @ w_o)
        return np.stack(outs)
    """,
        *AXIS_QUERIES,
    ),
]
RIGHT += [
    _r(
        "q02_full_layer",
        "batched with a leading batch axis and einsum",
        T,
        """
        def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
            b, n, d = x.shape
            d_head = d // num_heads
            q, k, v = ((x @ w).reshape(b, n, num_heads, d_head) for w in (w_q, w_k, w_v))
            s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d_head)
            if mask is not None:
                s = np.where(mask[None, None], s, -np.inf)
            s = s - s.max(axis=-1, keepdims=True)
            a = np.exp(s)
            a = a / a.sum(axis=-1, keepdims=True)
            o = np.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, n, d)
            return o @ w_o
        """,
    ),
    _r(
        "q02_full_layer",
        "loops, with an all-True mask when none is given",
        T,
        """
        def split_heads(x, num_heads):
            return np.stack(np.split(x, num_heads, axis=1))

        def merge_heads(x):
            return np.concatenate(list(x), axis=1)

        def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
            b, n, d = x.shape
            if mask is None:
                mask = np.ones((n, n), dtype=bool)
            result = np.zeros((b, n, w_o.shape[1]))
            for i in range(b):
                q = split_heads(x[i] @ w_q, num_heads)
                k = split_heads(x[i] @ w_k, num_heads)
                v = split_heads(x[i] @ w_v, num_heads)
                heads = []
                for hq, hk, hv in zip(q, k, v):
                    s = hq @ hk.T / np.sqrt(hq.shape[1])
                    s[~mask] = -np.inf
                    e = np.exp(s - s.max(axis=1, keepdims=True))
                    heads.append((e / e.sum(axis=1, keepdims=True)) @ hv)
                result[i] = merge_heads(np.array(heads)) @ w_o
            return result
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# Exercise 03: q03_d_head
# --------------------------------------------------------------------------------------------
T = "d_head"
WRONG += [
    _w("q03_d_head", "a float", T, "d_head = 768 / 12\n", *FLOAT_COUNT),
    _w(
        "q03_d_head",
        "a string",
        T,
        'd_head = "64"\n',
        r"string",
        r"\bstr\b",
        r"text",
        r"quot",
        r"a number",
    ),
    _w(
        "q03_d_head",
        "multiplies instead of dividing",
        T,
        "d_head = 768 * 12\n",
        r"multipl",
        r"divid",
        r"product",
        r"d_model ?/ ?h",
        r"per head",
    ),
    _w(
        "q03_d_head",
        "the number of heads",
        T,
        "d_head = 12\n",
        r"number of heads,? not",
        r"(that'?s|that is|this is|you gave|you stored|is) (the number of heads|h\b)",
        r"heads? count",
        r"\bh\b,? not",
    ),
    _w(
        "q03_d_head",
        "the whole width",
        T,
        "d_head = 768\n",
        r"d_model",
        r"whole (model|width)",
        r"(split|divid)\w*",
        r"(all|every) heads",
    ),
    _w(
        "q03_d_head",
        "one third for Q, K, V",
        T,
        "d_head = 768 // 3\n",
        r"(Q|q), ?(K|k),? (and )?(V|v)",
        r"three",
    ),
]
RIGHT += [
    _r("q03_d_head", "a NumPy integer", T, "d_head = np.int64(768) // 12\n"),
    _r("q03_d_head", "computed with divmod", T, "d_head, _rest = divmod(768, 12)\n"),
]

# --------------------------------------------------------------------------------------------
# q03_identity_output
# --------------------------------------------------------------------------------------------
T = "identity_output"
WRONG += [
    _w(
        "q03_identity_output",
        "kept w_mix",
        T,
        "identity_output = [4.0, 6.0, -2.0, -2.0]\n",
        r"w_mix",
        r"identity",
        r"np\.eye",
        r"mix",
    ),
    _w("q03_identity_output", "added the heads", T, "identity_output = [4.0, 6.0]\n", *MERGE_SUM),
    _w(
        "q03_identity_output",
        "heads in the wrong order",
        T,
        "identity_output = [3.0, 4.0, 1.0, 2.0]\n",
        r"order",
        r"head 0",
        r"swap",
        r"first head",
    ),
    _w(
        "q03_identity_output",
        "heads not joined (nested)",
        T,
        "identity_output = [[1.0, 2.0], [3.0, 4.0]]\n",
        r"join",
        r"concatenat",
        r"flat",
        r"nested",
        r"2-?D",
        r"four numbers",
    ),
    _w(
        "q03_identity_output",
        "the identity matrix itself",
        T,
        "identity_output = np.eye(4)\n",
        r"(the )?matrix",
        r"product",
        r"joined ?@",
        r"four numbers",
        r"\(4,\)",
    ),
    _w(
        "q03_identity_output",
        "interleaved the heads",
        T,
        "identity_output = [1.0, 3.0, 2.0, 4.0]\n",
        r"interleav",
        r"order",
        r"head 0'?s? features",
    ),
    _w(
        "q03_identity_output",
        "averaged the heads",
        T,
        "identity_output = [2.0, 3.0]\n",
        r"average",
        r"mean",
        r"concatenat",
        r"join",
    ),
]
RIGHT += [
    _r(
        "q03_identity_output",
        "computed with np.eye",
        T,
        """
        head_outputs = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
        joined = np.concatenate(head_outputs)
        identity_output = joined @ np.eye(4)
        """,
    ),
    _r("q03_identity_output", "a list of ints", T, "identity_output = [1, 2, 3, 4]\n"),
    _r("q03_identity_output", "an integer array", T, "identity_output = np.arange(1, 5)\n"),
]

# --------------------------------------------------------------------------------------------
# q03_concat_vs_average
# --------------------------------------------------------------------------------------------
T = "concat_vs_average"
WRONG += [
    _w(
        "q03_concat_vs_average",
        "a: W_O can undo averaging",
        T,
        'concat_vs_average = "a"\n',
        r"(lose|loses|lost|discard\w*) information",
        r"cannot (be )?undo",
        r"not invertible",
        r"undo",
        r"(different|distinct) (pairs|inputs|head outputs).{0,40}same",
        r"same (vector|average)",
    ),
    _w(
        "q03_concat_vs_average",
        "c: averaging only rescales",
        T,
        'concat_vs_average = "c"\n',
        r"(lose|loses|lost|discard\w*) information",
        r"scal\w*.{0,30}(does not|doesn'?t|cannot|can'?t)",
        r"multiply\w* by h",
        r"(different|distinct) (pairs|inputs|head outputs).{0,40}same",
        r"same (vector|average)",
        r"not (just|only) (a )?(scal|shrink)",
    ),
    _w(
        "q03_concat_vs_average",
        "d: weights of all heads sum to one",
        T,
        'concat_vs_average = "d"\n',
        r"(each|every|per) head'?s?.{0,40}(own|separately|sum)",
        r"weights of (each|every|one) head",
        r"sum to (one|1) (in|within|per) (each|every)",
        r"nothing to do with (the )?(attention )?weights",
    ),
    _w(
        "q03_concat_vs_average",
        "hedges with two letters",
        T,
        'concat_vs_average = "bd"\n',
        *TWO_LETTERS,
    ),
    _w(
        "q03_concat_vs_average",
        "the letter in a list",
        T,
        'concat_vs_average = ["b"]\n',
        *LETTER_LIST,
    ),
    _w(
        "q03_concat_vs_average",
        "the option's number",
        T,
        "concat_vs_average = 2\n",
        *NUMBER_FOR_LETTER,
    ),
]

# --------------------------------------------------------------------------------------------
# q03_concat_project
# --------------------------------------------------------------------------------------------
T = "concat_project"
WRONG += [
    _w(
        "q03_concat_project",
        "joins with + (adds the heads)",
        T,
        """
        def concat_project(head_outputs, w_o):
            joined = head_outputs[0]
            for out in head_outputs[1:]:
                joined = joined + out
            return joined @ w_o
        """,
        *MERGE_SUM,
    ),
    _w(
        "q03_concat_project",
        "bare reshape of the stacked heads",
        T,
        """
        def concat_project(head_outputs, w_o):
            heads = np.asarray(head_outputs)
            h, n, d_head = heads.shape
            return heads.reshape(n, h * d_head) @ w_o
        """,
        *BARE_RESHAPE,
    ),
    _w(
        "q03_concat_project",
        "joins along the token axis",
        T,
        """
        def concat_project(head_outputs, w_o):
            return np.concatenate(list(head_outputs), axis=0) @ w_o
        """,
        r"token axis",
        r"axis ?=? ?0",
        r"(feature|last) axis",
        r"axis ?= ?(-1|1)",
        r"side by side",
    ),
    _w(
        "q03_concat_project",
        "assumes an array (fails on a list)",
        T,
        """
        def concat_project(head_outputs, w_o):
            h, n, d_head = head_outputs.shape
            return head_outputs.transpose(1, 0, 2).reshape(n, h * d_head) @ w_o
        """,
        r"\blist",
        r"np\.asarray",
        r"np\.array\(",
        r"shape.{0,20}attribute",
        r"attribute",
    ),
    _w(
        "q03_concat_project",
        "multiplies by w_o transposed",
        T,
        """
        def concat_project(head_outputs, w_o):
            joined = np.concatenate(list(head_outputs), axis=-1)
            return joined @ w_o.T
        """,
        r"transpos",
        r"w_o\.T",
        r"rows? (are|=) input",
        r"\(h ?\* ?d_head, d_model\)",
    ),
    _w(
        "q03_concat_project",
        "interleaves the heads' features",
        T,
        """
        def concat_project(head_outputs, w_o):
            heads = np.asarray(head_outputs)
            h, n, d_head = heads.shape
            return heads.transpose(1, 2, 0).reshape(n, h * d_head) @ w_o
        """,
        *INTERLEAVED,
    ),
    _w(
        "q03_concat_project",
        "every head through head 0's block of W_O",
        T,
        """
        def concat_project(head_outputs, w_o):
            d_head = head_outputs[0].shape[-1]
            return sum(out @ w_o[:d_head] for out in head_outputs)
        """,
        r"(block|rows) of w_o",
        r"(each|every) head'?s? (own )?(block|rows)",
        r"W_O\^?\(i\)",
        r"head 0'?s? (block|rows)",
    ),
    _w(
        "q03_concat_project",
        "slices W_O's columns per head",
        T,
        """
        def concat_project(head_outputs, w_o):
            d_head = head_outputs[0].shape[-1]
            return sum(out @ w_o[:, i * d_head:(i + 1) * d_head].T for i, out in enumerate(head_outputs))
        """,
        r"\brows\b",
        r"columns",
        r"block of (d_head )?rows",
        r"transpos",
    ),
    _w(
        "q03_concat_project",
        "calls the course's merge_heads",
        T,
        """
        from mha_helpers import merge_heads

        def concat_project(head_outputs, w_o):
            return merge_heads(np.asarray(head_outputs)) @ w_o
        """,
        r"merge_heads",
        *FORBIDDEN,
    ),
    _w(
        "q03_concat_project",
        "hard-codes two heads",
        T,
        """
        def concat_project(head_outputs, w_o):
            return np.concatenate([head_outputs[0], head_outputs[1]], axis=-1) @ w_o
        """,
        r"(two|2) heads",
        r"(every|all|each) heads?",
        r"hard[- ]?cod",
        r"only (the )?first (two|2)",
        r"number of heads",
    ),
]
RIGHT += [
    _r(
        "q03_concat_project",
        "sum over heads of o_i W_O^(i)",
        T,
        """
        def concat_project(head_outputs, w_o):
            heads = [np.asarray(o) for o in head_outputs]
            d_head = heads[0].shape[1]
            total = 0
            for i, o in enumerate(heads):
                total = total + o @ w_o[i * d_head:(i + 1) * d_head]
            return total
        """,
    ),
    _r(
        "q03_concat_project",
        "np.hstack of a list",
        T,
        """
        def concat_project(head_outputs, w_o):
            return np.hstack(list(head_outputs)) @ w_o
        """,
    ),
    _r(
        "q03_concat_project",
        "einsum with W_O cut into (h, d_head, d_model)",
        T,
        """
        def concat_project(head_outputs, w_o):
            heads = np.asarray(head_outputs)
            h, n, d_head = heads.shape
            return np.einsum("hnd,hdm->nm", heads, w_o.reshape(h, d_head, -1))
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# Exercise 04: q04_params
# --------------------------------------------------------------------------------------------
T = "count_params"
WRONG += [
    _w(
        "q04_params",
        "never counts the biases",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            return (d_model * num_heads * d_head + 2 * d_model * num_heads * d_head
                    + num_heads * d_head * d_model)
        """,
        r"bias",
    ),
    _w(
        "q04_params",
        "biases counted as 4 d_model",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            total = (d_model * num_heads * d_head + 2 * d_model * num_heads * d_head
                     + num_heads * d_head * d_model)
            if bias:
                total += 4 * d_model
            return total
        """,
        r"bias\w*.{0,60}(k|v|kv|key|value|num_heads|output feature)",
        r"(fewer|num_heads).{0,40}bias",
        r"one bias per output",
    ),
    _w(
        "q04_params",
        "counts biases even when bias is False",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            weights = (d_model * num_heads * d_head + 2 * d_model * num_heads * d_head
                       + num_heads * d_head * d_model)
            biases = num_heads * d_head + 2 * num_heads * d_head + d_model
            return weights + biases
        """,
        r"bias",
    ),
    _w(
        "q04_params",
        "forgets w_o",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            total = d_model * num_heads * d_head + 2 * d_model * num_heads * d_head
            if bias:
                total += num_heads * d_head + 2 * num_heads * d_head
            return total
        """,
        *WRONG_OUTPUT_PROJ,
        r"four",
    ),
    _w(
        "q04_params",
        "forgets w_v",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            total = d_model * num_heads * d_head + d_model * num_heads * d_head + num_heads * d_head * d_model
            if bias:
                total += num_heads * d_head + num_heads * d_head + d_model
            return total
        """,
        r"w_v",
        r"value",
        r"both (k|keys?) and (v|values?)",
        r"four",
    ),
    _w(
        "q04_params",
        "w_q and w_o as d_model x d_model when h does not divide d_model",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            total = 2 * d_model * d_model + 2 * d_model * num_heads * d_head
            if bias:
                total += 2 * d_model + 2 * num_heads * d_head
            return total
        """,
        r"d_head",
        r"(not|isn'?t) (a multiple|divisible)",
        r"num_heads ?\* ?d_head",
        r"h ?\* ?d_head",
        r"divid\w* evenly",
    ),
    _w(
        "q04_params",
        "d_head with / (a float)",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model / num_heads
            total = 2 * d_model * num_heads * d_head + 2 * d_model * num_heads * d_head
            if bias:
                total += num_heads * d_head + 2 * num_heads * d_head + d_model
            return total
        """,
        *FLOAT_COUNT,
    ),
    _w(
        "q04_params",
        "K and V sized num_heads x d_model (no d_head)",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            total = 2 * d_model * num_heads * d_head + 2 * d_model * num_heads
            if bias:
                total += num_heads * d_head + 2 * num_heads + d_model
            return total
        """,
        r"d_head",
        r"h ?\* ?d_head",
        r"width of (a|each|one) head",
    ),
    _w(
        "q04_params",
        "calls the course's attention_params",
        T,
        """
        from mha_helpers import attention_params

        def count_params(d_model, num_heads, bias):
            return attention_params(d_model, num_heads, bias=bias)
        """,
        r"attention_params",
        *FORBIDDEN,
    ),
]
RIGHT += [
    _r(
        "q04_params",
        "adds the shapes' entries with np.prod",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            shapes = [(d_model, num_heads * d_head), (d_model, num_heads * d_head),
                      (d_model, num_heads * d_head), (num_heads * d_head, d_model)]
            total = sum(int(np.prod(s)) for s in shapes)
            if bias:
                total += sum(s[1] for s in shapes)
            return total
        """,
    ),
    _r(
        "q04_params",
        "factored per input feature, bias as a 0/1 factor",
        T,
        """
        def count_params(d_model, num_heads, bias):
            d_head = d_model // num_heads
            q_width = num_heads * d_head
            kv_width = num_heads * d_head
            rows = d_model + int(bool(bias))
            return rows * (q_width + 2 * kv_width) + q_width * d_model + int(bool(bias)) * d_model
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q04_flops
# --------------------------------------------------------------------------------------------
T = "count_flops"
WRONG += [
    _w(
        "q04_flops",
        "counts multiply-adds, not FLOPs",
        T,
        """
        def count_flops(n, d_model, num_heads):
            d_head = d_model // num_heads
            proj = 4 * n * d_model * d_model
            attn = num_heads * 2 * n * n * d_head
            return proj + attn
        """,
        r"multiply-adds?",
        r"factor (of )?2",
        r"2 FLOPs",
        r"twice",
        r"half",
    ),
    _w(
        "q04_flops",
        "forgets the output projection",
        T,
        """
        def count_flops(n, d_model, num_heads):
            d_head = d_model // num_heads
            return 2 * 3 * n * d_model * d_model + num_heads * 2 * (2 * n * n * d_head)
        """,
        *WRONG_OUTPUT_PROJ,
    ),
    _w(
        "q04_flops",
        "scores and weighted sum for one head only",
        T,
        """
        def count_flops(n, d_model, num_heads):
            d_head = d_model // num_heads
            return 2 * 4 * n * d_model * d_model + 2 * 2 * n * n * d_head
        """,
        r"(every|each|all) (the )?heads?",
        r"times h\b",
        r"number of heads",
        r"per head",
    ),
    _w(
        "q04_flops",
        "forgets the weighted sum of the values",
        T,
        """
        def count_flops(n, d_model, num_heads):
            d_head = d_model // num_heads
            return 2 * 4 * n * d_model * d_model + num_heads * 2 * n * n * d_head
        """,
        r"weighted sum",
        r"values",
        r"A ?@ ?V",
        r"weights (times|@|×|x) V",
        r"\bA ?V\b",
    ),
    _w(
        "q04_flops",
        "counts only the Q projection",
        T,
        """
        def count_flops(n, d_model, num_heads):
            d_head = d_model // num_heads
            return 2 * 2 * n * d_model * d_model + num_heads * 2 * 2 * n * n * d_head
        """,
        r"Q, ?K,? and V",
        r"three projections",
        r"K and V",
        r"keys and values",
        r"(every|each|all) projection",
    ),
    _w(
        "q04_flops",
        "multiplies by h twice",
        T,
        """
        def count_flops(n, d_model, num_heads):
            return 2 * 4 * n * d_model * d_model + num_heads * 2 * 2 * n * n * d_model
        """,
        r"d_head",
        r"twice",
        r"extra factor",
        r"h times too",
        r"width of (one|a|each) head",
    ),
    _w(
        "q04_flops",
        "adds the softmax work",
        T,
        """
        def count_flops(n, d_model, num_heads):
            d_head = d_model // num_heads
            return 8 * n * d_model ** 2 + num_heads * 4 * n * n * d_head + 5 * num_heads * n * n
        """,
        r"softmax",
    ),
    _w(
        "q04_flops",
        "scores counted as n * d_head^2",
        T,
        """
        def count_flops(n, d_model, num_heads):
            d_head = d_model // num_heads
            return 8 * n * d_model ** 2 + num_heads * 2 * (2 * n * d_head * d_head)
        """,
        r"n ?\^ ?2|n²|n ?\* ?n|\bn x n\b|n ?× ?n",
        r"(n, n)|\(n, d_head\) ?@ ?\(d_head, n\)",
        r"quadratic",
        r"scores",
    ),
]
RIGHT += [
    _r(
        "q04_flops",
        "sums every product with a helper, head by head",
        T,
        """
        def count_flops(n, d_model, num_heads):
            d_head = d_model // num_heads

            def matmul(a, b, c):
                return 2 * a * b * c

            total = 3 * matmul(n, d_model, num_heads * d_head)
            for _ in range(num_heads):
                total += matmul(n, d_head, n) + matmul(n, n, d_head)
            total += matmul(n, num_heads * d_head, d_model)
            return total
        """,
    ),
    # (This was a right answer until battery D showed the count must size the projections
    # from num_heads * d_head too, as Question 1 does, when num_heads does not divide d_model.)
    _w(
        "q04_flops",
        "the closed form 8 n d^2 + 4 n^2 (h d_head): projections d_model wide",
        T,
        """
        def count_flops(n, d_model, num_heads):
            return 8 * n * d_model**2 + 4 * n**2 * (d_model // num_heads) * num_heads
        """,
        r"does not divide",
        r"h \* d_head",
        r"num_heads \* d_head",
    ),
]

# --------------------------------------------------------------------------------------------
# q04_changes_with_h
# --------------------------------------------------------------------------------------------
T = "changes_with_h"
WRONG += [
    _w(
        "q04_changes_with_h",
        "thinks the number of weights is fixed",
        T,
        "changes_with_h = (False, False, False, True)\n",
        r"attention weights",
        r"h ?(·|\*|x|×)? ?n ?(\^ ?2|²)",
        r"(own|each head'?s?) (n ?[x×] ?n|matrix|scores?)",
        r"third",
        r"number of weights",
    ),
    _w(
        "q04_changes_with_h",
        "everything changes",
        T,
        "changes_with_h = (True, True, True, True)\n",
        r"param",
        r"FLOP",
        r"second",
    ),
    _w(
        "q04_changes_with_h",
        "parameters change",
        T,
        "changes_with_h = (True, False, True, True)\n",
        r"param",
        r"same matri",
    ),
    _w(
        "q04_changes_with_h",
        "FLOPs change",
        T,
        "changes_with_h = (False, True, True, True)\n",
        r"FLOP",
        r"second",
        r"matrix products",
        r"cancel",
    ),
    _w(
        "q04_changes_with_h",
        "the tuple as a string",
        T,
        'changes_with_h = "False, False, True, True"\n',
        *STRING_FOR_TUPLE,
        r"True/False",
        r"boolean",
    ),
    _w(
        "q04_changes_with_h",
        "words instead of booleans",
        T,
        'changes_with_h = ("no", "no", "yes", "yes")\n',
        r"True",
        r"False",
        r"boolean",
        r"\bbool\b",
    ),
]
RIGHT += [
    _r(
        "q04_changes_with_h",
        "computed by comparing the quantities",
        T,
        """
        d, n, h = 768, 1024, 12
        params = lambda heads: 4 * d * d + 4 * d
        flops = lambda heads: 8 * n * d * d + 4 * n * n * d
        weights = lambda heads: heads * n * n
        width = lambda heads: d // heads
        changes_with_h = tuple(bool(f(h) != f(2 * h)) for f in (params, flops, weights, width))
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q04_weight_entries
# --------------------------------------------------------------------------------------------
T = "weight_entries"
WRONG += [
    _w(
        "q04_weight_entries",
        "one head only",
        T,
        "weight_entries = 1024 * 1024\n",
        r"(all|every|each|12) (the )?heads",
        r"times h\b",
        r"number of heads",
        r"one head",
    ),
    _w(
        "q04_weight_entries",
        "only the causal half",
        T,
        "weight_entries = 12 * 1024 * 1025 // 2\n",
        r"causal",
        r"above the diagonal",
        r"zeros",
        r"(whole|full) (n ?[x×] ?n|matrix)",
        r"n ?\(n ?\+ ?1\)",
        r"half",
    ),
    _w(
        "q04_weight_entries",
        "all 12 layers",
        T,
        "weight_entries = 12 * 12 * 1024 ** 2\n",
        r"layers?",
    ),
    _w(
        "q04_weight_entries",
        "bytes in float32, not entries",
        T,
        "weight_entries = 4 * 12 * 1024 ** 2\n",
        r"bytes?",
        r"float32",
        r"entries,? not",
    ),
    _w(
        "q04_weight_entries",
        "n x d_model instead of n x n",
        T,
        "weight_entries = 1024 * 768\n",
        r"n ?(\^ ?2|²)",
        r"n ?[x×*] ?n",
        r"d_model",
        r"\(n, n\)",
    ),
    _w(
        "q04_weight_entries",
        "a rounded float",
        T,
        "weight_entries = 12.6e6\n",
        r"exact",
        r"round",
        r"whole number",
        r"float",
        r"integer",
    ),
]
RIGHT += [
    _r(
        "q04_weight_entries",
        "a NumPy integer from the shape",
        T,
        "weight_entries = np.prod((12, 1024, 1024))\n",
    ),
    _r("q04_weight_entries", "with underscores", T, "weight_entries = 12_582_912\n"),
]

# --------------------------------------------------------------------------------------------
# Exercise 05: q05_gqa
# --------------------------------------------------------------------------------------------
T = "gqa"
_GQA_IMPORTS = (
    "    from mha_helpers import merge_heads, scaled_dot_product_attention, split_heads\n\n"
)
WRONG += [
    _w(
        "q05_gqa",
        "divides by num_kv_heads instead of the group size",
        T,
        _GQA_IMPORTS
        + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        q = split_heads(x @ w_q, num_heads)
        k = split_heads(x @ w_k, num_kv_heads)
        v = split_heads(x @ w_v, num_kv_heads)
        outs = []
        for i in range(num_heads):
            j = i // num_kv_heads
            out, _ = scaled_dot_product_attention(q[i], k[j], v[j])
            outs.append(out)
        return merge_heads(np.stack(outs)) @ w_o
    """,
        r"group size",
        r"num_heads ?// ?num_kv_heads",
        r"divid\w* by (the )?(number of kv heads|num_kv_heads)",
        r"i ?// ?\(?(group|num_heads ?// ?num_kv_heads)",
    ),
    _w(
        "q05_gqa",
        "own attention scaled by sqrt(d_model)",
        T,
        _GQA_IMPORTS
        + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        group = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), group, axis=0)
        v = np.repeat(split_heads(x @ w_v, num_kv_heads), group, axis=0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return merge_heads(a @ v) @ w_o
    """,
        *SCALE_D_MODEL,
    ),
    _w(
        "q05_gqa",
        "splits K and V into num_heads heads",
        T,
        _GQA_IMPORTS
        + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        q = split_heads(x @ w_q, num_heads)
        k = split_heads(x @ w_k, num_heads)
        v = split_heads(x @ w_v, num_heads)
        out, _ = scaled_dot_product_attention(q, k, v)
        return merge_heads(out) @ w_o
    """,
        r"num_kv_heads (heads|pieces)",
        r"split\w*.{0,40}(k|keys|kv|k and v).{0,40}num_kv_heads",
        r"kv heads",
        r"key/value heads",
    ),
    _w(
        "q05_gqa",
        "forgets w_o",
        T,
        _GQA_IMPORTS
        + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        group = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), group, axis=0)
        v = np.repeat(split_heads(x @ w_v, num_kv_heads), group, axis=0)
        out, _ = scaled_dot_product_attention(q, k, v)
        return merge_heads(out)
    """,
        *WRONG_OUTPUT_PROJ,
    ),
    _w(
        "q05_gqa",
        "own split with a bare reshape",
        T,
        _GQA_IMPORTS
        + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        n, d_model = x.shape
        d_head = d_model // num_heads
        group = num_heads // num_kv_heads
        q = (x @ w_q).reshape(num_heads, n, d_head)
        k = np.repeat((x @ w_k).reshape(num_kv_heads, n, d_head), group, axis=0)
        v = np.repeat((x @ w_v).reshape(num_kv_heads, n, d_head), group, axis=0)
        out, _ = scaled_dot_product_attention(q, k, v)
        return merge_heads(out) @ w_o
    """,
        *BARE_RESHAPE,
    ),
    _w(
        "q05_gqa",
        "calls the course's grouped_query_attention",
        T,
        """
    from mha_helpers import grouped_query_attention

    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        return grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads)
    """,
        r"grouped_query_attention",
        *FORBIDDEN,
    ),
    _w(
        "q05_gqa",
        "values projected with w_k (copy-paste)",
        T,
        _GQA_IMPORTS
        + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        group = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), group, axis=0)
        v = np.repeat(split_heads(x @ w_k, num_kv_heads), group, axis=0)
        out, _ = scaled_dot_product_attention(q, k, v)
        return merge_heads(out) @ w_o
    """,
        r"w_v",
        r"values?.{0,30}(w_k|keys?'? (weights|projection))",
        r"value projection",
    ),
    _w(
        "q05_gqa",
        "np.tile instead of np.repeat",
        T,
        _GQA_IMPORTS
        + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        group = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.tile(split_heads(x @ w_k, num_kv_heads), (group, 1, 1))
        v = np.tile(split_heads(x @ w_v, num_kv_heads), (group, 1, 1))
        out, _ = scaled_dot_product_attention(q, k, v)
        return merge_heads(out) @ w_o
    """,
        r"tile",
        r"repeat",
        r"interleav",
        r"consecutive",
        r"contiguous",
        r"i ?% ?",
        r"modulo",
        r"group",
    ),
]
RIGHT += [
    _r(
        "q05_gqa",
        "np.repeat the KV heads, one batched call",
        T,
        _GQA_IMPORTS
        + """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        group = num_heads // num_kv_heads
        q = split_heads(x @ w_q, num_heads)
        k = np.repeat(split_heads(x @ w_k, num_kv_heads), group, axis=0)
        v = np.repeat(split_heads(x @ w_v, num_kv_heads), group, axis=0)
        out, _ = scaled_dot_product_attention(q, k, v)
        return merge_heads(out) @ w_o
    """,
    ),
    _r(
        "q05_gqa",
        "plain NumPy: queries grouped as (g, group, n, d_head)",
        T,
        """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        n, d_model = x.shape
        d_head = d_model // num_heads
        group = num_heads // num_kv_heads
        q = (x @ w_q).reshape(n, num_kv_heads, group, d_head)
        k = (x @ w_k).reshape(n, num_kv_heads, d_head)
        v = (x @ w_v).reshape(n, num_kv_heads, d_head)
        s = np.einsum("qgjd,kgd->gjqk", q, k) / np.sqrt(d_head)
        a = np.exp(s - s.max(axis=-1, keepdims=True))
        a = a / a.sum(axis=-1, keepdims=True)
        o = np.einsum("gjqk,kgd->qgjd", a, v).reshape(n, num_heads * d_head)
        return o @ w_o
    """,
    ),
    _r(
        "q05_gqa",
        "a loop over query heads with column slices",
        T,
        """
    def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
        d_head = x.shape[1] // num_heads
        group = num_heads // num_kv_heads
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        pieces = []
        for i in range(num_heads):
            j = i // group
            qi = q[:, i * d_head:(i + 1) * d_head]
            kj = k[:, j * d_head:(j + 1) * d_head]
            vj = v[:, j * d_head:(j + 1) * d_head]
            s = qi @ kj.T / np.sqrt(d_head)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            pieces.append(e / e.sum(axis=1, keepdims=True) @ vj)
        return np.concatenate(pieces, axis=1) @ w_o
    """,
    ),
]

# --------------------------------------------------------------------------------------------
# q05_mean_pool
# --------------------------------------------------------------------------------------------
T = "mean_pool_kv"
WRONG += [
    _w(
        "q05_mean_pool",
        "groups strided heads (j, j + g, ...)",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_model = w.shape[0]
            d_head = w.shape[1] // num_heads
            group = num_heads // num_kv_heads
            return w.reshape(d_model, group, num_kv_heads, d_head).mean(axis=1).reshape(d_model, -1)
        """,
        r"consecutive",
        r"strid",
        r"interleav",
        r"modulo",
        r"j ?\* ?group",
        r"contiguous",
        r"(every|each) num_kv_heads",
    ),
    _w(
        "q05_mean_pool",
        "sums instead of averaging",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_model = w.shape[0]
            d_head = w.shape[1] // num_heads
            group = num_heads // num_kv_heads
            return w.reshape(d_model, num_kv_heads, group, d_head).sum(axis=2).reshape(d_model, -1)
        """,
        r"\bsum",
        r"\bmean\b",
        r"average",
        r"divid\w*",
        r"group size",
    ),
    _w(
        "q05_mean_pool",
        "averages each head's columns into one",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_model = w.shape[0]
            return w.reshape(d_model, num_kv_heads, -1).mean(axis=-1)
        """,
        r"d_head",
        r"(columns|features) (within|inside|of) (a|one|each) head",
        r"\(d_model, num_kv_heads ?\* ?d_head\)",
    ),
    _w(
        "q05_mean_pool",
        "keeps the first head of each group",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_model = w.shape[0]
            d_head = w.shape[1] // num_heads
            group = num_heads // num_kv_heads
            return w.reshape(d_model, num_kv_heads, group, d_head)[:, :, 0].reshape(d_model, -1)
        """,
        r"first head",
        r"\bmean\b",
        r"average",
        r"(all|every) heads? (of|in) the group",
    ),
    _w(
        "q05_mean_pool",
        "d_head from d_model, not from the columns",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_model = w.shape[0]
            d_head = d_model // num_heads
            group = num_heads // num_kv_heads
            cols = []
            for j in range(num_kv_heads):
                heads = [w[:, k * d_head:(k + 1) * d_head] for k in range(j * group, (j + 1) * group)]
                cols.append(np.mean(heads, axis=0))
            return np.concatenate(cols, axis=1)
        """,
        r"d_model",
        r"w\.shape\[1\]",
        r"need not",
        r"(number of )?columns",
    ),
    _w(
        "q05_mean_pool",
        "reshape with the feature axis first (mixes heads)",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_model = w.shape[0]
            d_head = w.shape[1] // num_heads
            group = num_heads // num_kv_heads
            return w.reshape(d_model, d_head, num_kv_heads, group).mean(axis=-1).reshape(d_model, -1)
        """,
        r"reshape",
        r"(column|memory) order",
        *INTERLEAVED,
    ),
    _w(
        "q05_mean_pool",
        "divides the group sum by num_kv_heads",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_model = w.shape[0]
            d_head = w.shape[1] // num_heads
            group = num_heads // num_kv_heads
            return w.reshape(d_model, num_kv_heads, group, d_head).sum(axis=2).reshape(d_model, -1) / num_kv_heads
        """,
        r"group size",
        r"num_heads ?// ?num_kv_heads",
        r"divid\w* by",
        r"\bmean\b",
        r"average",
    ),
    _w(
        "q05_mean_pool",
        "writes the result into w itself",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_head = w.shape[1] // num_heads
            group = num_heads // num_kv_heads
            for j in range(num_kv_heads):
                block = w[:, j * group * d_head:(j + 1) * group * d_head]
                w[:, j * d_head:(j + 1) * d_head] = block.reshape(w.shape[0], group, d_head).mean(axis=1)
            return w[:, :num_kv_heads * d_head]
        """,
        *IN_PLACE,
    ),
]
RIGHT += [
    _r(
        "q05_mean_pool",
        "a loop over KV heads and the heads of each group",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_head = w.shape[1] // num_heads
            group = num_heads // num_kv_heads
            out = np.zeros((w.shape[0], num_kv_heads * d_head))
            for j in range(num_kv_heads):
                for k in range(j * group, (j + 1) * group):
                    out[:, j * d_head:(j + 1) * d_head] += w[:, k * d_head:(k + 1) * d_head] / group
            return out
        """,
    ),
    _r(
        "q05_mean_pool",
        "one matrix product with an averaging matrix",
        T,
        """
        def mean_pool_kv(w, num_heads, num_kv_heads):
            d_head = w.shape[1] // num_heads
            group = num_heads // num_kv_heads
            heads_to_kv = np.repeat(np.eye(num_kv_heads), group, axis=0) / group   # (num_heads, num_kv_heads)
            return w @ np.kron(heads_to_kv, np.eye(d_head))
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q05_cache_bytes
# --------------------------------------------------------------------------------------------
T = "cache_bytes"
_SIG = "def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):\n"
WRONG += [
    _w(
        "q05_cache_bytes",
        "keys only (no factor 2)",
        T,
        _SIG
        + "    return num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch\n",
        r"(both )?(K|keys) and (V|values)",
        r"factor (of )?2",
        r"twice",
        r"values too",
    ),
    _w(
        "q05_cache_bytes",
        "uses the query heads",
        T,
        _SIG
        + "    return 2 * num_layers * num_heads * d_head * seq_len * bytes_per_element * batch\n",
        r"num_kv_heads",
        r"kv heads",
        r"query heads",
        r"key/value heads",
    ),
    _w(
        "q05_cache_bytes",
        "forgets the batch",
        T,
        _SIG + "    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element\n",
        r"batch",
    ),
    _w(
        "q05_cache_bytes",
        "forgets the layers",
        T,
        _SIG + "    return 2 * num_kv_heads * d_head * seq_len * bytes_per_element * batch\n",
        r"layers?",
    ),
    _w(
        "q05_cache_bytes",
        "counts numbers, not bytes",
        T,
        _SIG + "    return 2 * num_layers * num_kv_heads * d_head * seq_len * batch\n",
        r"bytes?_per_element",
        r"bytes per (element|number)",
        r"numbers,? not bytes",
        r"bytes",
    ),
    _w(
        "q05_cache_bytes",
        "multiplies query and KV heads",
        T,
        _SIG
        + "    return 2 * num_layers * num_heads * num_kv_heads * d_head * seq_len * bytes_per_element * batch\n",
        r"num_heads",
        r"query heads",
        r"only (those|the arguments)",
        r"every argument",
    ),
    _w(
        "q05_cache_bytes",
        "returns GiB",
        T,
        _SIG
        + "    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch / 2**30\n",
        r"GiB",
        r"unit",
        r"2 ?\*\* ?30",
        r"bytes,? not",
    ),
    _w(
        "q05_cache_bytes",
        "bits instead of bytes",
        T,
        _SIG
        + "    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch * 8\n",
        r"bits?",
        r"unit",
    ),
]
RIGHT += [
    _r(
        "q05_cache_bytes",
        "a loop over layers and sequences",
        T,
        _SIG
        + """\
    total = 0
    for _layer in range(num_layers):
        for _seq in range(batch):
            total += 2 * num_kv_heads * d_head * seq_len * bytes_per_element
    return total
""",
    ),
    _r(
        "q05_cache_bytes",
        "per token first, as a NumPy product cast to int",
        T,
        _SIG
        + """\
    per_token = int(np.prod([2, num_layers, num_kv_heads, d_head, bytes_per_element]))
    return per_token * seq_len * batch
""",
    ),
]

# --------------------------------------------------------------------------------------------
# q05_max_batch
# --------------------------------------------------------------------------------------------
T = "max_batch"
WRONG += [
    _w(
        "q05_max_batch",
        "one KV head per query head (64)",
        T,
        "max_batch = 4\n",
        r"(8|eight) (kv|key/value) heads",
        r"query heads",
        r"num_kv_heads",
        r"64 heads",
        r"kv heads",
    ),
    _w(
        "q05_max_batch",
        "forgets the factor 2 for K and V",
        T,
        "max_batch = 64\n",
        r"K and V",
        r"keys and values",
        r"factor (of )?2",
        r"both",
    ),
    _w(
        "q05_max_batch",
        "40 GB instead of 40 GiB",
        T,
        "max_batch = 29\n",
        r"GiB",
        r"2 ?\*\* ?30",
        r"10 ?\*\* ?9",
        r"\bGB\b",
        r"budget",
    ),
    _w(
        "q05_max_batch",
        "a float",
        T,
        "max_batch = 40 * 2**30 / (2 * 80 * 8 * 128 * 2 * 4096)\n",
        *FLOAT_COUNT,
    ),
    _w(
        "q05_max_batch",
        "4 bytes per number",
        T,
        "max_batch = 16\n",
        r"fp16",
        r"2 bytes",
        r"bytes per",
        r"float32",
    ),
    _w(
        "q05_max_batch",
        "forgets the sequence length (counts tokens)",
        T,
        "max_batch = 131072\n",
        r"tokens",
        r"sequence length",
        r"per sequence",
        r"seq_len",
    ),
]
RIGHT += [
    _r(
        "q05_max_batch",
        "a NumPy integer from floor division",
        T,
        "max_batch = np.int64(40 * 2**30) // (2 * 80 * 8 * 128 * 2 * 4096)\n",
    ),
    _r(
        "q05_max_batch",
        "int() of math.floor",
        T,
        """
        import math
        per_sequence = 2 * 80 * 8 * 128 * 2 * 4096
        max_batch = int(math.floor(40 * 2**30 / per_sequence))
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# Exercise 06: q06_head_backward
# --------------------------------------------------------------------------------------------
T = "head_backward"
_FWD = """
    def _weights(q, k, mask=True):
        n, d_k = q.shape
        s = q @ k.T / np.sqrt(d_k)
        if mask:
            s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

"""
WRONG += [
    _w(
        "q06_head_backward",
        "recomputes A without the causal mask",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k, mask=False)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True))
        d_s = d_s / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
    """,
        r"causal",
        r"mask",
        r"above the diagonal",
        r"future",
    ),
    _w(
        "q06_head_backward",
        "forgets the scale in dS",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True))
        return d_s @ k, d_s.T @ q, d_v
    """,
        *NO_SCALE,
        r"(the )?scale\b",
    ),
    _w(
        "q06_head_backward",
        "softmax backward without the row-sum term",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * d_a / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
    """,
        r"row sums?",
        r"softmax'?s? (backward|jacobian|derivative|gradient)",
        r"subtract",
        r"jacobian",
    ),
    _w(
        "q06_head_backward",
        "softmax backward without multiplying by A",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
    """,
        r"(multipl\w*|times) (by )?A\b",
        r"A ?⊙",
        r"A ?\*",
        r"softmax'?s? (backward|jacobian|derivative|gradient)",
        r"jacobian",
    ),
    _w(
        "q06_head_backward",
        "d_v = A d_out (no transpose)",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
    """,
        r"A\^?T|A\.T|A ?ᵀ|transpos",
        r"d_?v\b",
    ),
    _w(
        "q06_head_backward",
        "d_k = dS q (no transpose)",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s @ q, d_v
    """,
        r"transpos",
        r"dS\.?T|dS\^T|d_s\.T|∂S\^?T",
        r"d_?k\b",
    ),
    _w(
        "q06_head_backward",
        "d_q = dS^T k",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s.T @ k, d_s.T @ q, d_v
    """,
        r"transpos",
        r"dS\.?T|dS\^T|d_s\.T|∂S\^?T",
        r"d_?q\b",
    ),
    _w(
        "q06_head_backward",
        "dA = v d_out^T (transposed)",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = v @ d_out.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
    """,
        r"d_?A\b|∂A",
        r"transpos",
        r"d_?out ?@ ?v",
    ),
    _w(
        "q06_head_backward",
        "returns (d_k, d_q, d_v)",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s.T @ q, d_s @ k, d_v
    """,
        r"order",
        r"swap",
        r"\(d_q, d_k, d_v\)",
    ),
    _w(
        "q06_head_backward",
        "multiplies by sqrt(d_k) in the backward pass",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) * np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
    """,
        r"multipl\w*",
        r"divid\w*",
        r"inverse",
        r"1 ?/ ?√",
    ),
    _w(
        "q06_head_backward",
        "row sums taken over the wrong axis",
        T,
        _FWD
        + """
    def head_backward(q, k, v, d_out):
        a = _weights(q, k)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=0, keepdims=True)) / np.sqrt(q.shape[1])
        return d_s @ k, d_s.T @ q, d_v
    """,
        r"axis",
        r"row sums?",
        r"columns?",
    ),
    _w(
        "q06_head_backward",
        "scales by sqrt(d_v)",
        T,
        """
    def head_backward(q, k, v, d_out):
        n, d_k = q.shape
        scale = np.sqrt(v.shape[1])
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T / scale, -np.inf)
        a = np.exp(s - s.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / scale
        return d_s @ k, d_s.T @ q, d_v
    """,
        r"d_v",
        r"width of (the )?(v|values)",
        r"value width",
        r"v\.shape",
    ),
    _w(
        "q06_head_backward",
        "scales q in place",
        T,
        """
    def head_backward(q, k, v, d_out):
        n, d_k = q.shape
        q /= np.sqrt(d_k)
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T, -np.inf)
        a = np.exp(s - s.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        d_a = d_out @ v.T
        d_v = a.T @ d_out
        d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True))
        return d_s @ k / np.sqrt(d_k), d_s.T @ q, d_v
    """,
        *IN_PLACE,
    ),
]
RIGHT += [
    _r(
        "q06_head_backward",
        "row by row with the softmax Jacobian",
        T,
        """
        def head_backward(q, k, v, d_out):
            n, d_k = q.shape
            scale = 1 / np.sqrt(d_k)
            d_q = np.zeros(q.shape)
            d_k_ = np.zeros(k.shape)
            d_v = np.zeros(v.shape)
            for t in range(n):
                s = (k[:t + 1] @ q[t]) * scale               # keys 0..t only (causal)
                a = np.exp(s - s.max())
                a /= a.sum()
                d_v[:t + 1] += np.outer(a, d_out[t])
                d_a = v[:t + 1] @ d_out[t]
                jac = np.diag(a) - np.outer(a, a)
                d_s = jac @ d_a * scale
                d_q[t] = d_s @ k[:t + 1]
                d_k_[:t + 1] += np.outer(d_s, q[t])
            return d_q, d_k_, d_v
        """,
    ),
    _r(
        "q06_head_backward",
        "scales q first, einsum products",
        T,
        """
        def head_backward(q, k, v, d_out):
            n, d = q.shape
            c = 1.0 / np.sqrt(d)
            qs = q * c
            s = np.einsum("id,jd->ij", qs, k)
            s[np.triu_indices(n, 1)] = -np.inf
            a = np.exp(s - s.max(axis=-1, keepdims=True))
            a = a / a.sum(axis=-1, keepdims=True)
            d_a = np.einsum("ie,je->ij", d_out, v)
            d_v = np.einsum("ij,ie->je", a, d_out)
            d_s = a * (d_a - np.einsum("ij,ij->i", d_a, a)[:, None])
            d_qs = d_s @ k
            d_kk = d_s.T @ qs
            return d_qs * c, d_kk, d_v
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q06_measure_roles
# --------------------------------------------------------------------------------------------
T = "measure_roles"
WRONG += [
    _w(
        "q06_measure_roles",
        "query positions from t = 1",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(1, n)
            return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)),
                             weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
        """,
        r"t ?>=? ?2",
        r"t ?≥ ?2",
        r"from (t ?= ?)?2",
        r"t ?= ?1",
        r"position 1",
        r"(start|begin)\w* at",
    ),
    _w(
        "q06_measure_roles",
        "reads A[t - 1, t] (rows and columns swapped)",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(2, n)
            return np.stack([weights[:, :, t - 1, t].mean(axis=(0, 2)),
                             weights[:, :, 0, t].mean(axis=(0, 2))], axis=1)
        """,
        r"transpos",
        r"rows? (are|=) quer",
        r"\[t ?- ?1, ?t\]",
        r"(above|upper) (the )?diagonal",
        r"swap",
        r"columns? (are|=) keys",
    ),
    _w(
        "q06_measure_roles",
        "columns in the order (first, previous)",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(2, n)
            return np.stack([weights[:, :, t, 0].mean(axis=(0, 2)),
                             weights[:, :, t, t - 1].mean(axis=(0, 2))], axis=1)
        """,
        r"column",
        r"order",
        r"swap",
    ),
    _w(
        "q06_measure_roles",
        "averages over heads instead of the batch",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(2, n)
            return np.stack([weights[:, :, t, t - 1].mean(axis=(1, 2)),
                             weights[:, :, t, 0].mean(axis=(1, 2))], axis=1)
        """,
        r"axis",
        r"batch",
        r"(over|across) (the )?heads",
        r"\(h, 2\)",
    ),
    _w(
        "q06_measure_roles",
        "returns (2, h)",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(2, n)
            return np.array([weights[:, :, t, t - 1].mean(axis=(0, 2)),
                             weights[:, :, t, 0].mean(axis=(0, 2))])
        """,
        r"\(h, 2\)",
        r"transpos",
        r"\(2, h\)",
        r"(one )?row per head",
    ),
    _w(
        "q06_measure_roles",
        "sums instead of averaging",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(2, n)
            return np.stack([weights[:, :, t, t - 1].sum(axis=(0, 2)),
                             weights[:, :, t, 0].sum(axis=(0, 2))], axis=1)
        """,
        r"\bsum",
        r"\bmean\b",
        r"average",
    ),
    _w(
        "q06_measure_roles",
        "the first-token score over every query position",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(2, n)
            prev = weights[:, :, t, t - 1].mean(axis=(0, 2))
            first = weights[:, :, :, 0].mean(axis=(0, 2))
            return np.stack([prev, first], axis=1)
        """,
        r"t ?>=? ?2",
        r"t ?≥ ?2",
        r"from (t ?= ?)?2",
        r"(rows|positions|queries) 0 and 1",
        r"all (query )?positions",
    ),
    _w(
        "q06_measure_roles",
        "hard-codes n = 10",
        T,
        """
        def measure_roles(weights):
            t = np.arange(2, 10)
            return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)),
                             weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
        """,
        r"hard[- ]?cod",
        r"\bn\b.{0,20}(shape|size)",
        r"(other|different|any) (lengths|n\b|sizes|sequence)",
    ),
    _w(
        "q06_measure_roles",
        "fraction of rows whose largest weight is there",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(2, n)
            top = weights[:, :, t, :].argmax(axis=-1)           # (batch, h, n - 2)
            return np.stack([(top == t - 1).mean(axis=(0, 2)), (top == 0).mean(axis=(0, 2))], axis=1)
        """,
        r"mean attention",
        r"argmax",
        r"fraction",
        r"weights themselves",
        r"largest weight",
        r"(mean|average) (of the )?weight",
    ),
    _w(
        "q06_measure_roles",
        "the next token, A[t, t + 1]",
        T,
        """
        def measure_roles(weights):
            n = weights.shape[-1]
            t = np.arange(2, n - 1)
            return np.stack([weights[:, :, t, t + 1].mean(axis=(0, 2)),
                             weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
        """,
        r"next",
        r"t ?\+ ?1",
        r"previous",
        r"t ?- ?1",
    ),
]
RIGHT += [
    _r(
        "q06_measure_roles",
        "np.diagonal with offset -1",
        T,
        """
        def measure_roles(weights):
            prev = np.diagonal(weights, offset=-1, axis1=2, axis2=3)[..., 1:]   # (batch, h, n - 2)
            first = weights[:, :, 2:, 0]
            return np.stack([prev.mean(axis=(0, 2)), first.mean(axis=(0, 2))], axis=-1)
        """,
    ),
    _r(
        "q06_measure_roles",
        "explicit loops",
        T,
        """
        def measure_roles(weights):
            b, h, n, _ = weights.shape
            out = np.zeros((h, 2))
            for head in range(h):
                prev = first = 0.0
                count = 0
                for s in range(b):
                    for t in range(2, n):
                        prev += weights[s, head, t, t - 1]
                        first += weights[s, head, t, 0]
                        count += 1
                out[head] = prev / count, first / count
            return out
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q06_roles_seed7 (wrong answers only: the right answer is being changed)
# --------------------------------------------------------------------------------------------
T = "roles_seed_7"
WRONG += [
    _w(
        "q06_roles_seed7",
        "the tuple as one string",
        T,
        'roles_seed_7 = "first, previous"\n',
        *STRING_FOR_TUPLE,
    ),
    _w(
        "q06_roles_seed7",
        "abbreviated role name",
        T,
        'roles_seed_7 = ("first", "prev")\n',
        r"['\"]previous['\"]",
        r"['\"]first['\"]",
        r"spell",
        r"exact(ly)? (word|name)",
        r"one of",
        r"abbrev",
        r"full (word|name)",
    ),
    _w(
        "q06_roles_seed7",
        "column indices instead of names",
        T,
        "roles_seed_7 = (1, 0)\n",
        r"['\"]previous['\"]",
        r"['\"]first['\"]",
        r"names?",
        r"string",
        r"words?",
        r"column (number|index)",
    ),
    _w(
        "q06_roles_seed7",
        "the scores instead of the names",
        T,
        """
        roles_seed_7 = np.array([[0.0002, 0.9993], [0.9971, 0.0009]])
        """,
        r"['\"]previous['\"]",
        r"['\"]first['\"]",
        r"names?",
        r"tuple",
        r"scores,? not",
        r"words?",
        r"string",
    ),
    _w(
        "q06_roles_seed7",
        "smaller score wins (argmin)",
        T,
        'roles_seed_7 = ("previous", "first")\n',
        r"larger",
        r"argmax",
        r"argmin",
        r"smaller",
        r"swap",
        r"other way",
        r"(higher|bigger) score",
    ),
    _w(
        "q06_roles_seed7",
        "one role for both heads",
        T,
        'roles_seed_7 = ("first", "first")\n',
        r"seed 0",
        r"\bguess",
        r"measure",
        r"head 1",
        r"both heads",
    ),
]

# --------------------------------------------------------------------------------------------
# q06_remove_head
# --------------------------------------------------------------------------------------------
T = "remove_head"
WRONG += [
    _w(
        "q06_remove_head",
        "clears columns, not rows",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            out = w_o.copy()
            out[:, head * d_head:(head + 1) * d_head] = 0
            return out
        """,
        r"columns?",
        r"\brows\b",
    ),
    _w(
        "q06_remove_head",
        "changes w_o in place",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            w_o[head * d_head:(head + 1) * d_head] = 0
            return w_o
        """,
        *IN_PLACE,
    ),
    _w(
        "q06_remove_head",
        "one row too many",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            out = w_o.copy()
            out[head * d_head:(head + 1) * d_head + 1] = 0
            return out
        """,
        *OFF_BY_ONE,
    ),
    _w(
        "q06_remove_head",
        "clears only row `head`",
        T,
        """
        def remove_head(w_o, head, num_heads):
            out = w_o.copy()
            out[head] = 0
            return out
        """,
        r"block",
        r"d_head rows",
        r"(whole|all) (its |the head'?s? )?rows",
        r"single row",
        r"one row",
        r"row `?head`?",
    ),
    _w(
        "q06_remove_head",
        "keeps only that head",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            out = np.zeros_like(w_o)
            out[head * d_head:(head + 1) * d_head] = w_o[head * d_head:(head + 1) * d_head]
            return out
        """,
        r"other heads?",
        r"keeps? only",
        r"inverted",
        r"opposite",
        r"(everything|all) (but|except)",
    ),
    _w(
        "q06_remove_head",
        "blocks of num_heads rows",
        T,
        """
        def remove_head(w_o, head, num_heads):
            out = w_o.copy()
            out[head * num_heads:(head + 1) * num_heads] = 0
            return out
        """,
        r"d_head",
        r"num_heads",
        r"width",
        r"block size",
    ),
    _w(
        "q06_remove_head",
        "forgets to return",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            out = w_o.copy()
            out[head * d_head:(head + 1) * d_head] = 0
        """,
        r"return",
        r"None",
    ),
    _w(
        "q06_remove_head",
        "deletes the rows",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            return np.delete(w_o, np.arange(head * d_head, (head + 1) * d_head), axis=0)
        """,
        r"delete",
        r"(set|zero|0)\w* (them |the rows )?(to 0|to zero|instead)",
        r"same shape",
        r"\(d_model, d_model\)",
        r"fewer rows",
    ),
    _w(
        "q06_remove_head",
        "counts heads from 1",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            out = w_o.copy()
            out[(head - 1) * d_head:head * d_head] = 0
            return out
        """,
        r"index",
        r"(zero|0)-?based",
        r"head 0",
        r"count\w* from",
        r"off by one head",
        r"neighbou?r",
    ),
]
RIGHT += [
    _r(
        "q06_remove_head",
        "multiplies by a 0/1 column of row flags",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            keep = (np.arange(w_o.shape[0]) // d_head) != head
            return w_o * keep[:, None]
        """,
    ),
    _r(
        "q06_remove_head",
        "np.where on the row index",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = len(w_o) // num_heads
            rows = np.arange(len(w_o))[:, None]
            inside = (rows >= head * d_head) & (rows < (head + 1) * d_head)
            return np.where(inside, 0.0, w_o)
        """,
    ),
    _r(
        "q06_remove_head",
        "np.array copy, then a loop over the rows",
        T,
        """
        def remove_head(w_o, head, num_heads):
            d_head = w_o.shape[0] // num_heads
            out = np.array(w_o, copy=True)
            for r in range(head * d_head, (head + 1) * d_head):
                out[r, :] = 0.0
            return out
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q06_prune_prediction
# --------------------------------------------------------------------------------------------
T = "prune_prediction"
# Question 5 asks about exercise 06's FOUR-head seed-7 model (the answer is "b": one head
# removed leaves clearly less than all four and clearly more than either vote alone); the
# lesson's two-head result is "c" here, a wrong answer.
WRONG += [
    _w(
        "q06_prune_prediction",
        "a: as high as all four heads",
        T,
        'prune_prediction = "a"\n',
        r"takes? over",
        r"(its|their) own (part|rows)",
        r"(is|are) (simply )?missing",
        r"no other head",
    ),
    _w(
        "q06_prune_prediction",
        "c: the other vote alone, as with two heads",
        T,
        'prune_prediction = "c"\n',
        r"two-head",
        r"(a )?whole vote",
        r"four heads",
        r"well above",
    ),
    _w(
        "q06_prune_prediction",
        "d: chance",
        T,
        'prune_prediction = "d"\n',
        r"(three|other|remaining) heads",
        r"(still|remaining) (head|vote)",
        r"every head",
        r"all four",
    ),
    _w(
        "q06_prune_prediction",
        "hedges with two letters",
        T,
        'prune_prediction = "bc"\n',
        *TWO_LETTERS,
    ),
    _w(
        "q06_prune_prediction",
        "the letter in a list",
        T,
        'prune_prediction = ["b"]\n',
        *LETTER_LIST,
    ),
]

# --------------------------------------------------------------------------------------------
# Exercise 07: q07_cross_shape
# --------------------------------------------------------------------------------------------
T = "cross_shape"
WRONG += [
    _w(
        "q07_cross_shape",
        "queries and keys swapped",
        T,
        "cross_shape = (2, 4, 7, 5)\n",
        r"quer(y|ies).{0,30}(rows|first|before)",
        r"(rows|one row) (are|=|per|for) (each )?quer",
        r"swap",
        r"n_q, n_k",
        r"keys? (last|as columns)",
    ),
    _w(
        "q07_cross_shape",
        "no head axis",
        T,
        "cross_shape = (2, 5, 7)\n",
        r"head axis",
        r"heads?",
        r"four (axes|numbers)",
    ),
    _w(
        "q07_cross_shape",
        "heads before the batch",
        T,
        "cross_shape = (4, 2, 5, 7)\n",
        r"batch (axis )?first",
        r"order",
        r"\(batch, heads",
    ),
    _w(
        "q07_cross_shape",
        "self-attention's shape",
        T,
        "cross_shape = (2, 4, 5, 5)\n",
        r"encoder",
        r"(source|context) tokens",
        r"n_k",
        r"keys come from",
        r"cross",
    ),
    _w(
        "q07_cross_shape",
        "batch and heads merged, PyTorch style",
        T,
        "cross_shape = (8, 5, 7)\n",
        r"head axis",
        r"merge",
        r"separate",
        r"four (axes|numbers)",
        r"batch (and|x|×) heads",
    ),
    _w(
        "q07_cross_shape",
        "the tuple as a string",
        T,
        'cross_shape = "(2, 4, 5, 7)"\n',
        *STRING_FOR_TUPLE,
    ),
    _w(
        "q07_cross_shape",
        "heads after the queries",
        T,
        "cross_shape = (2, 5, 4, 7)\n",
        r"head axis",
        r"order",
        r"\(batch, heads",
        r"heads? (second|before)",
    ),
]
RIGHT += [
    _r(
        "q07_cross_shape",
        "computed from the named sizes",
        T,
        """
        batch, heads, n_q, n_k = 2, 4, 5, 7
        cross_shape = (batch, heads, n_q, n_k)
        """,
    ),
    _r(
        "q07_cross_shape",
        "read off an empty array's shape",
        T,
        "cross_shape = np.empty((2, 4, 5, 7)).shape\n",
    ),
]

# --------------------------------------------------------------------------------------------
# q07_padding_causal_mask
# --------------------------------------------------------------------------------------------
T = "padding_causal_mask"
WRONG += [
    _w(
        "q07_padding_causal_mask",
        "masks padding queries instead of keys",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=bool))
            valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            return causal[None] & valid[:, :, None]
        """,
        r"keys?",
        r"columns?",
        r"quer(y|ies) axis",
        r"\[:, ?None, ?:\]",
        r"wrong axis",
    ),
    _w(
        "q07_padding_causal_mask",
        "masks padding queries as well as keys",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=bool))
            valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            return causal[None] & valid[:, None, :] & valid[:, :, None]
        """,
        r"quer(y|ies)",
        r"padding (rows|queries)",
        r"only (the )?keys",
        r"rows? of padding",
        r"rows?",
    ),
    _w(
        "q07_padding_causal_mask",
        "j <= lengths[b] (one key too many)",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=bool))
            valid = np.arange(n)[None, :] <= np.asarray(lengths)[:, None]
            return causal[None] & valid[:, None, :]
        """,
        *OFF_BY_ONE,
        r"<=",
        r"j ?< ?length",
        r"strict",
    ),
    _w(
        "q07_padding_causal_mask",
        "diagonal excluded (j < i)",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=bool), k=-1)
            valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            return causal[None] & valid[:, None, :]
        """,
        r"diagonal",
        r"itself",
        r"j ?<= ?i",
        r"j ?≤ ?i",
        r"strict",
    ),
    _w(
        "q07_padding_causal_mask",
        "upper triangle (future keys)",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.triu(np.ones((n, n), dtype=bool))
            valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            return causal[None] & valid[:, None, :]
        """,
        r"upper",
        r"lower",
        r"triu",
        r"tril",
        r"future",
        r"transpos",
        r"j ?<= ?i",
        r"j ?≤ ?i",
    ),
    _w(
        "q07_padding_causal_mask",
        "returns 0/1 integers",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=int))
            valid = (np.arange(n)[None, :] < np.asarray(lengths)[:, None]).astype(int)
            return causal[None] * valid[:, None, :]
        """,
        r"bool",
        r"0/1",
        r"integers?",
        r"\bint\b",
        r"dtype",
    ),
    _w(
        "q07_padding_causal_mask",
        "padding at the start",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=bool))
            valid = np.arange(n)[None, :] >= n - np.asarray(lengths)[:, None]
            return causal[None] & valid[:, None, :]
        """,
        r"(at the )?end",
        r"\b(start|beginning|left)\b",
        r"j ?< ?length",
        r"first (length|tokens)",
    ),
    _w(
        "q07_padding_causal_mask",
        "combines with | instead of &",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=bool))
            valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            return causal[None] | valid[:, None, :]
        """,
        r"\band\b",
        r"&",
        r"\bor\b",
        r"\|",
        r"both",
    ),
    _w(
        "q07_padding_causal_mask",
        "PyTorch's polarity (True = blocked)",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=bool))
            valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            return ~(causal[None] & valid[:, None, :])
        """,
        *MASK_POLARITY,
        r"pytorch",
    ),
    _w(
        "q07_padding_causal_mask",
        "sized by the longest length, not n",
        T,
        """
        def padding_causal_mask(lengths, n):
            lengths = np.asarray(lengths)
            m = lengths.max()
            causal = np.tril(np.ones((m, m), dtype=bool))
            valid = np.arange(m)[None, :] < lengths[:, None]
            return causal[None] & valid[:, None, :]
        """,
        r"\bn\b",
        r"padded length",
        r"(batch, n, n)",
        r"max",
        r"longest",
    ),
    _w(
        "q07_padding_causal_mask",
        "causal only, padding ignored",
        T,
        """
        def padding_causal_mask(lengths, n):
            causal = np.tril(np.ones((n, n), dtype=bool))
            return np.broadcast_to(causal, (len(lengths), n, n)).copy()
        """,
        r"padding",
        r"lengths?",
        r"real tokens?",
        r"key_valid",
    ),
]
RIGHT += [
    _r(
        "q07_padding_causal_mask",
        "loops over the batch with the course's causal_mask",
        T,
        """
        from mha_helpers import causal_mask

        def padding_causal_mask(lengths, n):
            out = np.zeros((len(lengths), n, n), dtype=bool)
            for b, length in enumerate(lengths):
                out[b] = causal_mask(n)
                out[b, :, length:] = False
            return out
        """,
    ),
    _r(
        "q07_padding_causal_mask",
        "one comparison on broadcast index grids",
        T,
        """
        def padding_causal_mask(lengths, n):
            i = np.arange(n)[None, :, None]
            j = np.arange(n)[None, None, :]
            return np.logical_and(j <= i, j < np.asarray(lengths)[:, None, None])
        """,
    ),
    _r(
        "q07_padding_causal_mask",
        "j < min(i + 1, length)",
        T,
        """
        def padding_causal_mask(lengths, n):
            limit = np.minimum(np.arange(1, n + 1)[None, :], np.asarray(lengths)[:, None])  # (batch, n)
            return np.arange(n)[None, None, :] < limit[:, :, None]
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q07_key_padding_mask
# --------------------------------------------------------------------------------------------
T = "to_key_padding_mask"
WRONG += [
    _w(
        "q07_key_padding_mask",
        "True for real keys (course polarity)",
        T,
        """
        def to_key_padding_mask(mask):
            return mask.any(axis=1)
        """,
        *MASK_POLARITY,
        r"pytorch",
    ),
    _w(
        "q07_key_padding_mask",
        "reduces over the keys",
        T,
        """
        def to_key_padding_mask(mask):
            return ~mask.any(axis=2)
        """,
        r"axis",
        r"(over|across) (the )?quer(y|ies)",
        r"(batch, n_k)",
        r"keys? axis",
        r"reduc",
    ),
    _w(
        "q07_key_padding_mask",
        "padding when some query may not attend (all, not any)",
        T,
        """
        def to_key_padding_mask(mask):
            return ~mask.all(axis=1)
        """,
        r"\bany\b",
        r"\ball\b",
        r"no query",
        r"causal",
        r"every query",
        r"(some|one) query",
    ),
    _w(
        "q07_key_padding_mask",
        "reads the first query's row",
        T,
        """
        def to_key_padding_mask(mask):
            return ~mask[:, 0, :]
        """,
        r"(first|one|a single) (query|row)",
        r"causal",
        r"no query",
        r"(every|all|any) quer",
        r"\bany\b",
    ),
    _w(
        "q07_key_padding_mask",
        "returns 0/1 integers",
        T,
        """
        def to_key_padding_mask(mask):
            return (~mask.any(axis=1)).astype(int)
        """,
        r"bool",
        r"0/1",
        r"integers?",
        r"\bint\b",
        r"dtype",
    ),
    _w(
        "q07_key_padding_mask",
        "reads the diagonal (self-attention only)",
        T,
        """
        def to_key_padding_mask(mask):
            return ~np.diagonal(mask, axis1=1, axis2=2)
        """,
        r"diagonal",
        r"cross[- ]attention",
        r"n_q ?!= ?n_k",
        r"n_q ?≠ ?n_k",
        r"square",
    ),
    _w(
        "q07_key_padding_mask",
        "keeps the query axis (keepdims)",
        T,
        """
        def to_key_padding_mask(mask):
            return ~mask.any(axis=1, keepdims=True)
        """,
        r"keepdims",
        r"\(batch, n_k\)",
        r"(extra|third) (axis|dimension)",
        r"(batch, 1, n_k)",
    ),
    _w(
        "q07_key_padding_mask",
        "some query is blocked from the key",
        T,
        """
        def to_key_padding_mask(mask):
            return (~mask).any(axis=1)
        """,
        r"\bany\b",
        r"\ball\b",
        r"no query",
        r"causal",
        r"every query",
        r"(some|one) query",
    ),
]
RIGHT += [
    _r(
        "q07_key_padding_mask",
        "no query attends: the column sums are 0",
        T,
        """
        def to_key_padding_mask(mask):
            return mask.sum(axis=1) == 0
        """,
    ),
    _r(
        "q07_key_padding_mask",
        "np.logical_not of np.any over axis -2",
        T,
        """
        def to_key_padding_mask(mask):
            return np.logical_not(np.any(mask, axis=-2))
        """,
    ),
    _r(
        "q07_key_padding_mask",
        "a loop over sequences and keys",
        T,
        """
        def to_key_padding_mask(mask):
            batch, n_q, n_k = mask.shape
            out = np.zeros((batch, n_k), dtype=bool)
            for b in range(batch):
                for j in range(n_k):
                    out[b, j] = not mask[b, :, j].any()
            return out
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q07_in_proj_weight
# --------------------------------------------------------------------------------------------
T = "in_proj_weight"
WRONG += [
    _w(
        "q07_in_proj_weight",
        "no transpose",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.vstack([w_q, w_k, w_v])
        """,
        r"transpos",
        r"\.T\b",
        r"weight\.T",
        r"nn\.Linear",
    ),
    _w(
        "q07_in_proj_weight",
        "joins the transposes side by side",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.concatenate([w_q.T, w_k.T, w_v.T], axis=1)
        """,
        r"axis",
        r"\brows\b",
        r"\(3 ?\* ?d_model, d_model\)",
        r"(stack|join)\w* (them )?(as rows|vertically|on top)",
        r"on top",
    ),
    _w(
        "q07_in_proj_weight",
        "transposes the whole stack (d_model, 3 d_model)",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.vstack([w_q, w_k, w_v]).T
        """,
        r"\(3 ?\* ?d_model, d_model\)",
        r"(each|every) block",
        r"transpos\w* (each|every)",
        r"\brows\b",
        r"on top",
    ),
    _w(
        "q07_in_proj_weight",
        "a 3-D stack",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.stack([w_q.T, w_k.T, w_v.T])
        """,
        r"2-?D",
        r"one matrix",
        r"\(3, d_model, d_model\)",
        r"concatenat",
        r"vstack",
        r"(three|3) (axes|dimensions)",
    ),
    _w(
        "q07_in_proj_weight",
        "order Q, V, K",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.concatenate([w_q.T, w_v.T, w_k.T])
        """,
        r"order",
        r"key block",
        r"value block",
        r"Q, ?K, ?V",
        r"swap",
    ),
    _w(
        "q07_in_proj_weight",
        "transposes only the query block",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.concatenate([w_q.T, w_k, w_v])
        """,
        r"transpos",
        r"(each|every|all) (three )?blocks?",
        r"\.T\b",
        r"key block",
        r"value block",
    ),
    _w(
        "q07_in_proj_weight",
        "inverts instead of transposing",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.concatenate([np.linalg.inv(w) for w in (w_q, w_k, w_v)])
        """,
        r"inver",
        r"transpos",
    ),
    _w(
        "q07_in_proj_weight",
        "calls pytorch_state_dict",
        T,
        """
        from mha_helpers import pytorch_state_dict

        def in_proj_weight(w_q, w_k, w_v):
            d = w_q.shape[0]
            return pytorch_state_dict(w_q, w_k, w_v, np.eye(d))["in_proj_weight"]
        """,
        r"pytorch_state_dict",
        *FORBIDDEN,
    ),
]
RIGHT += [
    _r(
        "q07_in_proj_weight",
        "hstack, then one transpose",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.hstack([w_q, w_k, w_v]).T
        """,
    ),
    _r(
        "q07_in_proj_weight",
        "np.block",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            return np.block([[w_q.T], [w_k.T], [w_v.T]])
        """,
    ),
    _r(
        "q07_in_proj_weight",
        "fills an empty matrix block by block",
        T,
        """
        def in_proj_weight(w_q, w_k, w_v):
            d = w_q.shape[0]
            out = np.empty((3 * d, d))
            for i, w in enumerate((w_q, w_k, w_v)):
                out[i * d:(i + 1) * d] = np.transpose(w)
            return out
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q07_pytorch_call
# --------------------------------------------------------------------------------------------
T = "pytorch_call"
WRONG += [
    _w(
        "q07_pytorch_call",
        "a: the course's masks as they are",
        T,
        'pytorch_call = "a"\n',
        *MASK_POLARITY,
        r"True ?(=|means) ?(may not|masked|blocked|not allowed|ignored?)",
        r"~",
    ),
    _w(
        "q07_pytorch_call",
        "c: only the causal mask inverted",
        T,
        'pytorch_call = "c"\n',
        r"key_padding_mask",
        r"padding.{0,40}(polarity|invert|~|opposite)",
        r"both masks",
        r"~ ?key_valid",
    ),
    _w(
        "q07_pytorch_call",
        "d: transposes to (n, batch, d_model)",
        T,
        'pytorch_call = "d"\n',
        r"batch_first",
        r"transpos",
        r"\(batch, n, d_model\)",
        r"batch (axis )?first",
    ),
    _w("q07_pytorch_call", "the letter in a list", T, 'pytorch_call = ["b"]\n', *LETTER_LIST),
    _w("q07_pytorch_call", "hedges with two letters", T, 'pytorch_call = "bd"\n', *TWO_LETTERS),
]

# --------------------------------------------------------------------------------------------
# Exercise 08: q08_online_update
# --------------------------------------------------------------------------------------------
T = "online_update"
_UPD = "def online_update(m, ell, acc, scores, v_block):\n"
WRONG += [
    _w(
        "q08_online_update",
        "forgets to rescale acc",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), acc + p @ v_block
""",
        r"rescal\w*.{0,30}acc",
        r"acc.{0,40}rescal",
        r"exp\(m ?- ?m_new\)",
        r"\bacc\b",
    ),
    _w(
        "q08_online_update",
        "rescales acc twice",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * (alpha[:, None] * acc) + p @ v_block
""",
        r"twice",
        r"\bonce\b",
        r"double",
    ),
    _w(
        "q08_online_update",
        "the block's own max, not carried over",
        T,
        _UPD
        + """\
    m_new = scores.max(axis=1)
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""",
        r"(running|carr\w*|previous|old) max",
        r"m_new ?= ?max\(m",
        r"carr\w* over",
        r"max(imum)? of (m|the old)",
        r"np\.maximum",
    ),
    _w(
        "q08_online_update",
        "forgets to rescale ell",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""",
        r"\bell\b",
        r"ℓ",
        r"rescal\w*.{0,30}(sum|ell|ℓ)",
        r"(running )?sum",
    ),
    _w(
        "q08_online_update",
        "rescales by exp(m_new - m)",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m_new - m)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""",
        r"exp\(m ?- ?m_new\)",
        r"sign",
        r"invert",
        r"(≤|<=) ?1",
        r"grow",
        r"upside",
        r"wrong way",
        r"exp\(m_new ?- ?m\)",
    ),
    _w(
        "q08_online_update",
        "returns acc divided by ell",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    ell_new = alpha * ell + p.sum(axis=1)
    acc_new = alpha[:, None] * acc + p @ v_block
    return m_new, ell_new, acc_new / ell_new[:, None]
""",
        r"divid\w*",
        r"normali[sz]",
        r"not divided",
        r"acc ?/ ?ell",
        r"un-?normali[sz]ed",
    ),
    _w(
        "q08_online_update",
        "block terms relative to the old max",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""",
        r"m_new",
        r"new max",
        r"old max",
        r"\bnan\b",
        r"\binf\b",
    ),
    _w(
        "q08_online_update",
        "rescale factor not broadcast over d_v",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha * acc + p @ v_block
""",
        r"broadcast",
        r"\[:, ?None\]",
        r"column",
        r"axis",
        r"per row",
    ),
    _w(
        "q08_online_update",
        "masked -inf scores turned into 0",
        T,
        _UPD
        + """\
    scores = np.where(np.isinf(scores), 0.0, scores)
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""",
        r"-inf",
        r"mask",
        r"(blocked|masked) keys?",
    ),
    _w(
        "q08_online_update",
        "one max for all rows",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max())
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block
""",
        r"(each|every|per) row",
        r"global",
        r"axis",
        r"whole block",
    ),
    _w(
        "q08_online_update",
        "updates acc in place",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    alpha = np.exp(m - m_new)
    acc *= alpha[:, None]
    acc += p @ v_block
    return m_new, alpha * ell + p.sum(axis=1), acc
""",
        *IN_PLACE,
    ),
    _w(
        "q08_online_update",
        "no rescaling at all",
        T,
        _UPD
        + """\
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    return m_new, ell + p.sum(axis=1), acc + p @ v_block
""",
        r"rescal",
        r"exp\(m ?- ?m_new\)",
    ),
]
RIGHT += [
    _r(
        "q08_online_update",
        "row by row in a loop",
        T,
        _UPD
        + """\
    n_q = len(m)
    m_new = np.empty(n_q)
    ell_new = np.empty(n_q)
    acc_new = np.empty((n_q, v_block.shape[1]))
    for i in range(n_q):
        m_new[i] = max(m[i], scores[i].max())
        w = np.exp(scores[i] - m_new[i])
        c = np.exp(m[i] - m_new[i])
        ell_new[i] = c * ell[i] + w.sum()
        acc_new[i] = c * acc[i] + w @ v_block
    return m_new, ell_new, acc_new
""",
    ),
    _r(
        "q08_online_update",
        "np.fmax and einsum",
        T,
        _UPD
        + """\
    m_new = np.fmax(m, np.max(scores, axis=-1))
    scale = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, np.newaxis])
    ell_new = scale * ell + np.sum(p, axis=-1)
    acc_new = scale[:, np.newaxis] * acc + np.einsum("qb,bd->qd", p, v_block)
    return m_new, ell_new, acc_new
""",
    ),
]

# --------------------------------------------------------------------------------------------
# q08_tiled
# --------------------------------------------------------------------------------------------
T = "tiled"
_ONLINE = """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        alpha = np.exp(m - m_new)
        p = np.exp(scores - m_new[:, None])
        return m_new, alpha * ell + p.sum(axis=1), alpha[:, None] * acc + p @ v_block

"""
WRONG += [
    _w(
        "q08_tiled",
        "forgets the scale",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for start in range(0, n_k, block_size):
            s = q @ k[start:start + block_size].T
            m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size])
        return acc / ell[:, None]
    """,
        *NO_SCALE,
    ),
    _w(
        "q08_tiled",
        "drops the last, shorter block",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for b in range(n_k // block_size):
            start = b * block_size
            s = q @ k[start:start + block_size].T / np.sqrt(q.shape[1])
            m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size])
        return acc / ell[:, None]
    """,
        r"last (block|keys)",
        r"partial",
        r"shorter",
        r"remainder",
        r"leftover",
        r"(not )?a multiple of",
    ),
    _w(
        "q08_tiled",
        "each block one key short",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for start in range(0, n_k, block_size):
            stop = min(start + block_size - 1, n_k)
            s = q @ k[start:stop].T / np.sqrt(q.shape[1])
            m, ell, acc = online_update(m, ell, acc, s, v[start:stop])
        return acc / ell[:, None]
    """,
        *OFF_BY_ONE,
        r"block edges?",
        r"(skip\w*|miss\w*) (a |one |some )?keys?",
        r"every key",
    ),
    _w(
        "q08_tiled",
        "blocks overlap by one key",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for start in range(0, n_k, block_size):
            s = q @ k[start:start + block_size + 1].T / np.sqrt(q.shape[1])
            m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size + 1])
        return acc / ell[:, None]
    """,
        r"overlap",
        r"twice",
        *OFF_BY_ONE,
        r"block edges?",
    ),
    _w(
        "q08_tiled",
        "builds the full score matrix, then walks its blocks",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        scores = q @ k.T / np.sqrt(q.shape[1])
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for start in range(0, n_k, block_size):
            m, ell, acc = online_update(m, ell, acc, scores[:, start:start + block_size], v[start:start + block_size])
        return acc / ell[:, None]
    """,
        r"full score",
        r"whole (score )?matrix",
        r"\(n_q, n_k\)",
        r"never build",
        r"entire score",
    ),
    _w(
        "q08_tiled",
        "calls the course's tiled_attention",
        T,
        """
    from mha_helpers import tiled_attention

    def tiled(q, k, v, block_size):
        return tiled_attention(q, k, v, block_size=block_size)
    """,
        r"tiled_attention",
        *FORBIDDEN,
    ),
    _w(
        "q08_tiled",
        "forgets to divide by ell",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for start in range(0, n_k, block_size):
            s = q @ k[start:start + block_size].T / np.sqrt(q.shape[1])
            m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size])
        return acc
    """,
        r"\bell\b",
        r"ℓ",
        r"divid\w*",
        r"normali[sz]",
        r"acc ?/ ?ell",
    ),
    _w(
        "q08_tiled",
        "an update that never rescales acc",
        T,
        """
    def online_update(m, ell, acc, scores, v_block):
        m_new = np.maximum(m, scores.max(axis=1))
        p = np.exp(scores - m_new[:, None])
        return m_new, np.exp(m - m_new) * ell + p.sum(axis=1), acc + p @ v_block

    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for start in range(0, n_k, block_size):
            s = q @ k[start:start + block_size].T / np.sqrt(q.shape[1])
            m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size])
        return acc / ell[:, None]
    """,
        r"rescal",
        r"\bacc\b",
        r"online_update",
        r"exp\(m ?- ?m_new\)",
    ),
    _w(
        "q08_tiled",
        "starts the running max at 0",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m = np.zeros(n_q)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for start in range(0, n_k, block_size):
            s = q @ k[start:start + block_size].T / np.sqrt(q.shape[1])
            m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size])
        return acc / ell[:, None]
    """,
        r"-inf",
        r"(start|initial)\w*.{0,30}(max|\bm\b)",
        r"underflow",
        r"m ?= ?0",
        r"\bnan\b",
        r"very negative",
    ),
    _w(
        "q08_tiled",
        "np.array_split into block_size pieces",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q = len(q)
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for k_block, v_block in zip(np.array_split(k, block_size), np.array_split(v, block_size)):
            s = q @ k_block.T / np.sqrt(q.shape[1])
            m, ell, acc = online_update(m, ell, acc, s, v_block)
        return acc / ell[:, None]
    """,
        r"blocks? of (block_size|`block_size`) keys",
        r"number of blocks",
        r"array_split",
        r"block size",
        r"(pieces|parts|sections)",
        r"full score",
        r"(all|whole|every) (the )?keys at once",
    ),
    _w(
        "q08_tiled",
        "scales by sqrt(d_v)",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, n_k = len(q), len(k)
        m = np.full(n_q, -np.inf)
        ell = np.zeros(n_q)
        acc = np.zeros((n_q, v.shape[1]))
        for start in range(0, n_k, block_size):
            s = q @ k[start:start + block_size].T / np.sqrt(v.shape[1])
            m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size])
        return acc / ell[:, None]
    """,
        r"d_v",
        r"width of (the )?(v|values)",
        r"value width",
        r"v\.shape",
    ),
    _w(
        "q08_tiled",
        "blocks of queries, not of keys",
        T,
        """
    def tiled(q, k, v, block_size):
        out = []
        for start in range(0, len(q), block_size):
            s = q[start:start + block_size] @ k.T / np.sqrt(q.shape[1])
            e = np.exp(s - s.max(axis=1, keepdims=True))
            out.append(e / e.sum(axis=1, keepdims=True) @ v)
        return np.concatenate(out)
    """,
        r"blocks? of keys",
        r"online_update",
        r"(key|keys) (axis|blocks?)",
        r"full score",
        r"whole (score )?(matrix|row)",
        r"n_k",
    ),
]
RIGHT += [
    _r(
        "q08_tiled",
        "counts blocks with ceiling division",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        n_q, d_k = q.shape
        n_k = k.shape[0]
        state = (np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1])))
        for b in range(-(-n_k // block_size)):
            kb = k[b * block_size:min((b + 1) * block_size, n_k)]
            vb = v[b * block_size:min((b + 1) * block_size, n_k)]
            state = online_update(*state, (q @ kb.T) / np.sqrt(d_k), vb)
        m, ell, acc = state
        return acc / ell[:, None]
    """,
    ),
    _r(
        "q08_tiled",
        "a while loop, queries scaled first",
        T,
        _ONLINE
        + """
    def tiled(q, k, v, block_size):
        qs = q / np.sqrt(q.shape[-1])
        m = -np.inf * np.ones(len(q))
        ell = np.zeros(len(q))
        acc = np.zeros((len(q), v.shape[-1]))
        start = 0
        while start < len(k):
            stop = start + block_size
            m, ell, acc = online_update(m, ell, acc, qs @ k[start:stop].T, v[start:stop])
            start = stop
        return acc / ell[:, np.newaxis]
    """,
    ),
    _r(
        "q08_tiled",
        "one query at a time, inline update",
        T,
        """
    def tiled(q, k, v, block_size):
        n_q, d_k = q.shape
        out = np.zeros((n_q, v.shape[1]))
        for i in range(n_q):
            m, ell, acc = -np.inf, 0.0, np.zeros(v.shape[1])
            for start in range(0, len(k), block_size):
                s = k[start:start + block_size] @ q[i] / np.sqrt(d_k)
                m_new = max(m, s.max())
                p = np.exp(s - m_new)
                c = np.exp(m - m_new)
                ell = c * ell + p.sum()
                acc = c * acc + p @ v[start:start + block_size]
                m = m_new
            out[i] = acc / ell
        return out
    """,
    ),
]

# --------------------------------------------------------------------------------------------
# q08_mla_cache
# --------------------------------------------------------------------------------------------
T = "mla_bytes_per_token"
WRONG += [
    _w(
        "q08_mla_cache",
        "numbers, not bytes",
        T,
        "mla_bytes_per_token = (512 + 64) * 60\n",
        r"bytes",
        r"2 bytes",
        r"fp16",
        r"numbers,? not",
    ),
    _w(
        "q08_mla_cache",
        "one layer",
        T,
        "mla_bytes_per_token = (512 + 64) * 2\n",
        r"layers?",
    ),
    _w(
        "q08_mla_cache",
        "numbers of one layer",
        T,
        "mla_bytes_per_token = 512 + 64\n",
        r"layers?",
        r"bytes",
    ),
    _w(
        "q08_mla_cache",
        "forgets the RoPE key",
        T,
        "mla_bytes_per_token = 512 * 60 * 2\n",
        r"rope",
        r"d_h\^?R|d\^?R_h",
        r"rotary",
        r"decoupled",
    ),
    _w(
        "q08_mla_cache",
        "times the 128 heads",
        T,
        "mla_bytes_per_token = (512 + 64) * 60 * 2 * 128\n",
        r"heads?",
        r"shared",
        r"per head",
    ),
    _w(
        "q08_mla_cache",
        "the latent counted for K and for V",
        T,
        "mla_bytes_per_token = 2 * (512 + 64) * 60 * 2\n",
        r"K and V",
        r"keys and values",
        r"twice",
        r"factor (of )?2",
        r"one latent",
        r"joint",
    ),
    _w(
        "q08_mla_cache",
        "in KiB",
        T,
        "mla_bytes_per_token = (512 + 64) * 60 * 2 / 1024\n",
        r"KiB",
        r"units?",
        r"bytes,? not",
        r"1024",
    ),
]
RIGHT += [
    _r(
        "q08_mla_cache", "a NumPy integer", T, "mla_bytes_per_token = np.int64(512 + 64) * 60 * 2\n"
    ),
    _r(
        "q08_mla_cache",
        "named sizes",
        T,
        """
        d_c, d_r, layers, fp16 = 512, 64, 60, 2
        mla_bytes_per_token = (d_c + d_r) * layers * fp16
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# q08_decode_bound
# --------------------------------------------------------------------------------------------
T = "decode_ms"
_W7B = 13_214_687_232
WRONG += [
    _w(
        "q08_decode_bound",
        "seconds, not milliseconds",
        T,
        f"""
        cache = 2 * 32 * 32 * 128 * 2 * 4096
        decode_ms = ({_W7B} + cache) / 3.35e12
        """,
        r"millisecond",
        r"\bms\b",
        r"seconds?",
        r"units?",
        r"1000|1e3",
    ),
    _w(
        "q08_decode_bound",
        "weights only, no cache",
        T,
        f"decode_ms = {_W7B} / 3.35e12 * 1e3\n",
        r"cache",
        r"\bKV\b",
    ),
    _w(
        "q08_decode_bound",
        "cache only, no weights",
        T,
        """
        cache = 2 * 32 * 32 * 128 * 2 * 4096
        decode_ms = cache / 3.35e12 * 1e3
        """,
        r"weights?",
        r"weight matrices",
    ),
    _w(
        "q08_decode_bound",
        "keys only in the cache",
        T,
        f"""
        cache = 32 * 32 * 128 * 2 * 4096
        decode_ms = ({_W7B} + cache) / 3.35e12 * 1e3
        """,
        r"K and V",
        r"keys and values",
        r"both",
        r"factor (of )?2",
    ),
    _w(
        "q08_decode_bound",
        "microseconds",
        T,
        f"""
        cache = 2 * 32 * 32 * 128 * 2 * 4096
        decode_ms = ({_W7B} + cache) / 3.35e12 * 1e6
        """,
        r"millisecond",
        r"\bms\b",
        r"micro",
        r"units?",
        r"1000|1e3",
    ),
    _w(
        "q08_decode_bound",
        "cache of one layer",
        T,
        f"""
        cache = 2 * 32 * 128 * 2 * 4096
        decode_ms = ({_W7B} + cache) / 3.35e12 * 1e3
        """,
        r"layers?",
    ),
    _w(
        "q08_decode_bound",
        "weights doubled again for fp16",
        T,
        f"""
        cache = 2 * 32 * 32 * 128 * 2 * 4096
        decode_ms = (2 * {_W7B} + cache) / 3.35e12 * 1e3
        """,
        r"already (in )?bytes",
        r"weights?.{0,40}bytes",
        r"twice",
        r"fp16.{0,30}(already|counted)",
    ),
]
RIGHT += [
    _r(
        "q08_decode_bound",
        "a NumPy float from the total",
        T,
        f"""
        cache = 2 * 32 * 32 * 128 * 2 * 4096
        decode_ms = np.float64({_W7B} + cache) / np.float64(3.35e12) * 1000
        """,
    ),
    _r(
        "q08_decode_bound",
        "cache in GB, time in seconds converted",
        T,
        f"""
        cache_gb = 2 * 32 * 32 * 128 * 2 * 4096 / 1e9
        seconds = ({_W7B} / 1e9 + cache_gb) / 3.35e3
        decode_ms = seconds * 1e3
        cache = cache_gb * 1e9
        """,
    ),
]
