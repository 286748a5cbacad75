"""Battery D: realistic learner answers to every auto-graded question of exercises 01-08.

Written from what a learner reads (the lessons, the exercise notebooks, the learner guide and the
public helper modules), never from the judge, the banks or the other batteries. It is held out:
it measures the self-check after others finished changing it, so its entries' names and the
feedback they get are not listed anywhere but here and in the figures.

``WRONG``: answers a learner could plausibly write, each wrong (``verify_d`` shows how), each with
the regular expressions that feedback naming *its* cause would match. ``RIGHT``: correct answers
in unusual but legitimate forms. The causes were fixed (committed) before the first run.
"""

from __future__ import annotations

from .format import Right, Wrong

TARGET = {
    "q01_scores": "attention_scores",
    "q01_softmax": "softmax_over_keys",
    "q01_masked_attention": "masked_attention",
    "q02_weights_shape": "weights_shape",
    "q02_split_heads": "split_heads",
    "q02_merge_heads": "merge_heads",
    "q02_per_head_attention": "per_head_attention",
    "q02_full_layer": "multi_head_layer",
    "q03_d_head": "d_head",
    "q03_identity_output": "identity_output",
    "q03_concat_vs_average": "concat_vs_average",
    "q03_concat_project": "concat_project",
    "q04_params": "count_params",
    "q04_flops": "count_flops",
    "q04_changes_with_h": "changes_with_h",
    "q04_weight_entries": "weight_entries",
    "q05_gqa": "gqa",
    "q05_mean_pool": "mean_pool_kv",
    "q05_cache_bytes": "cache_bytes",
    "q05_max_batch": "max_batch",
    "q06_head_backward": "head_backward",
    "q06_measure_roles": "measure_roles",
    "q06_roles_seed7": "roles_seed_7",
    "q06_remove_head": "remove_head",
    "q06_prune_prediction": "prune_prediction",
    "q07_cross_shape": "cross_shape",
    "q07_padding_causal_mask": "padding_causal_mask",
    "q07_key_padding_mask": "to_key_padding_mask",
    "q07_in_proj_weight": "in_proj_weight",
    "q07_pytorch_call": "pytorch_call",
    "q08_online_update": "online_update",
    "q08_tiled": "tiled",
    "q08_mla_cache": "mla_bytes_per_token",
    "q08_decode_bound": "decode_ms",
}

WRONG: list[Wrong] = []
RIGHT: list[Right] = []


def W(grade_id: str, name: str, source: str, *causes: str) -> None:
    assert causes, name
    WRONG.append(Wrong(grade_id, name, source.strip("\n") + "\n", TARGET[grade_id], causes))


def R(grade_id: str, name: str, source: str) -> None:
    RIGHT.append(Right(grade_id, name, source.strip("\n") + "\n", TARGET[grade_id]))


# Cause fragments shared by many entries (case-insensitive).
SQRT_DMODEL = r"√\s*d_model|sqrt\(?\s*d_model|scal[^.|]*d_model|d_model[^.|]*scal|width of (the input|x)|model width|full width"
NO_SCALE = r"scal|√|sqrt|1\s*/\s*√|divid"
TRANSPOSED = r"transpos|rows? (and|&) columns|swap|keys?\W+(as|on|for) (the )?rows|queries? (as|on) (the )?columns|\.T\b|k\s*@\s*q"
AXIS = r"axis|wrong direction|columns? (sum|add) to 1|sum(s)? to 1 (down|along) (the )?columns|over (the )?quer|normali[sz]\w* (over|along) (the )?(wrong|quer|column)"
POLARITY = r"polarity|invert|revers|opposite|true\W+(means|=)\W+(blocked|may not)|~\s*(mask|key_valid|causal)|flip|swapp|the wrong way round"
ADDED_MASK = r"0/1|add(ed|s|ing)? (the )?mask|mask (is |was )?added|boolean mask|float mask|numbers? (as|for) (a )?mask|mask (of|as) (0|numbers)|np\.where"
MUTATES = r"in.?place|mutat|chang\w* (its|the|your) input|modif\w* (its|the) input|copy|input (array|was) changed"
COURSE_HELPER = r"course'?s? (own )?(helper|function)|mha_helpers|own helper|off.?limits|not allowed|do not call|don't call|forbidden|flag(s|ged)?\b|calls? the course"
WHOLE = r"whole number|\bint\b|integer|//|float"
TUPLE_FORM = r"tuple|string|text|not a number|quot|\btype\b"
LETTER_FORM = r"(one|single|a single) letter|just one|only one|one of (the )?(letters|options)|\"?a\"?, \"?b\"?, \"?c\"?,? or \"?d\"?|letter as (text|a string)|as a string|as text|string, not|not a (string|letter)|choose one"
RETURN_ORDER = r"order|swap|\(output, weights\)|\(outputs, weights\)|\(d_q, d_k, d_v\)|\(m_new, ell_new, acc_new\)|wrong place|other way round|revers"
BARE_RESHAPE = r"reshape|bare|transpos|mix(es|ed)? (the )?(tokens|features)|tokens into heads|wrong contents|split_heads"
SHAPE = r"shape|dimension|axis|axes"

# ------------------------------------------------------------------------------------------
# Exercise 01 · Self-attention with one head
# ------------------------------------------------------------------------------------------
G = "q01_scores"
W(
    G,
    "scale by sqrt(d_model)",
    """
def attention_scores(x, w_q, w_k):
    q = x @ w_q
    k = x @ w_k
    return q @ k.T / np.sqrt(x.shape[1])
""",
    SQRT_DMODEL,
)
W(
    G,
    "no scale at all",
    """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T
""",
    r"scal|√|sqrt|divid|1\s*/",
)
W(
    G,
    "divides by d_k, not its square root",
    """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / q.shape[1]
""",
    r"square root|sqrt|√|d_k\b.*not|instead of √",
)
W(
    G,
    "keys on the rows (k @ q.T)",
    """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return k @ q.T / np.sqrt(k.shape[1])
""",
    TRANSPOSED,
)
W(
    G,
    "scale by sqrt(n), the number of tokens",
    """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T / np.sqrt(len(x))
""",
    r"√\s*n\b|sqrt\(?n\)|number of tokens|sequence length|len\(x\)|shape\[0\]|scal\w* by n\b",
)
W(
    G,
    "multiplies by sqrt(d_k)",
    """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    return q @ k.T * np.sqrt(q.shape[-1])
""",
    r"multipl|instead of divid|\*\s*√|times √|inverse|reciprocal|divide,? not",
)
W(
    G,
    "projects keys with w_q too",
    """
def attention_scores(x, w_q, w_k):
    q = x @ w_q
    k = x @ w_q
    return q @ k.T / np.sqrt(q.shape[1])
""",
    r"w_k|key (projection|weights)|same (weights|projection)|keys?\b.*w_q",
)
W(
    G,
    "skips the projections (x @ x.T)",
    """
def attention_scores(x, w_q, w_k):
    d_k = w_q.shape[1]
    return x @ x.T / np.sqrt(d_k)
""",
    r"project|w_q|w_k|queries and keys|x\s*@\s*x",
)
W(
    G,
    "returns the softmax weights, not the scores",
    """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""",
    r"softmax|normali[sz]|sum to 1|probabilit|not the scores|scores, not",
)
W(
    G,
    "keys projected with w_k transposed",
    """
def attention_scores(x, w_q, w_k):
    q = x @ w_q
    k = x @ w_k.T
    return q @ k.T / np.sqrt(q.shape[1])
""",
    r"w_k|transpos|keys?|\.T\b",
)
W(
    G,
    "scales in place, changing x",
    """
def attention_scores(x, w_q, w_k):
    x /= np.sqrt(np.sqrt(w_q.shape[1]))
    q, k = x @ w_q, x @ w_k
    return q @ k.T
""",
    MUTATES,
)

R(
    G,
    "einsum over the feature axis",
    """
def attention_scores(x, w_q, w_k):
    q = np.einsum("nd,dk->nk", x, w_q)
    k = np.einsum("nd,dk->nk", x, w_k)
    return np.einsum("ik,jk->ij", q, k) / np.sqrt(q.shape[-1])
""",
)
R(
    G,
    "scale the queries first, with the width of w_k",
    """
def attention_scores(x, w_q, w_k):
    d_k = w_k.shape[1]
    q = (x @ w_q) / d_k ** 0.5
    return q @ (x @ w_k).T
""",
)
R(
    G,
    "loops over query and key rows",
    """
def attention_scores(x, w_q, w_k):
    q, k = x @ w_q, x @ w_k
    n = len(x)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = float(np.dot(q[i], k[j])) / np.sqrt(q.shape[1])
    return out
""",
)

G = "q01_softmax"
W(
    G,
    "normalises down the columns (axis=0)",
    """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
""",
    AXIS,
)
W(
    G,
    "no max subtraction: overflows at 800",
    """
def softmax_over_keys(scores):
    e = np.exp(scores)
    return e / e.sum(axis=1, keepdims=True)
""",
    r"overflow|max|800|nan|stab|infinite",
)
W(
    G,
    "subtracts the max without keepdims",
    """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=1))
    return e / e.sum(axis=1, keepdims=True)
""",
    r"keepdims|broadcast|each row'?s? max|row max|column|\[:, None\]|None\]",
)
W(
    G,
    "sums without keepdims",
    """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1)
""",
    r"keepdims|broadcast|row sums?|each row|\[:, None\]|None\]",
)
W(
    G,
    "normalises by the sum of the whole matrix",
    """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum()
""",
    r"whole matrix|all entries|every entry|total|each row|per row|global|row sums?",
)
W(
    G,
    "forgets to normalise",
    """
def softmax_over_keys(scores):
    return np.exp(scores - scores.max(axis=1, keepdims=True))
""",
    r"normali[sz]|divid|sum to 1|row sums?",
)
W(
    G,
    "returns the log-softmax",
    """
def softmax_over_keys(scores):
    z = scores - scores.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))
""",
    r"log|negative|≥\s*0|>=\s*0|nonnegative|non-negative",
)
W(
    G,
    "replaces -inf by 0 to avoid nan",
    """
def softmax_over_keys(scores):
    s = np.where(np.isinf(scores), 0.0, scores)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""",
    r"-\s*inf|blocked|masked|exactly 0|weight 0|zero weight|infinit",
)
W(
    G,
    "subtracts the max in place",
    """
def softmax_over_keys(scores):
    scores -= scores.max(axis=1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=1, keepdims=True)
""",
    MUTATES,
)
W(
    G,
    "subtracts one global maximum",
    """
def softmax_over_keys(scores):
    e = np.exp(scores - np.max(scores))
    return e / e.sum(axis=1, keepdims=True)
""",
    r"each row|per row|row'?s? max|global|whole matrix|underflow|one max",
)
W(
    G,
    "subtracts the row mean instead of the max",
    """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.mean(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""",
    r"\bmean\b|average|max|overflow|large",
)
W(
    G,
    "calls the course's softmax",
    """
from mha_helpers import softmax

def softmax_over_keys(scores):
    return softmax(scores, axis=-1)
""",
    COURSE_HELPER,
)
W(
    G,
    "max over the last axis but sum over the first",
    """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
""",
    AXIS,
)

R(
    G,
    "keys on the last axis, negative indexing",
    """
def softmax_over_keys(scores):
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
""",
)
R(
    G,
    "log-sum-exp form",
    """
def softmax_over_keys(scores):
    m = scores.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(scores - m).sum(axis=1, keepdims=True))
    return np.exp(scores - lse)
""",
)
R(
    G,
    "row by row loop",
    """
def softmax_over_keys(scores):
    out = np.empty_like(scores, dtype=float)
    for i, row in enumerate(scores):
        e = np.exp(row - row.max())
        out[i] = e / e.sum()
    return out
""",
)

G = "q01_masked_attention"
W(
    G,
    "mask polarity inverted",
    """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    s = np.where(mask, -np.inf, s)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""",
    POLARITY,
)
W(
    G,
    "adds the 0/1 mask to the scores",
    """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1]) + mask
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""",
    ADDED_MASK,
)
W(
    G,
    "zeroes blocked weights after the softmax, no renormalising",
    """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    w = w * mask
    return w @ v, w
""",
    r"before the softmax|after the softmax|renormali[sz]|sum to 1|rows? (do not|don't) sum|sum(s)? to less",
)
W(
    G,
    "blocked scores set to 0 instead of -inf",
    """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    s[~mask] = 0.0
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""",
    r"-\s*inf|minus infinity|zero score|score of 0|exp\(0\)|set to 0|infinit",
)
W(
    G,
    "no scale",
    """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""",
    NO_SCALE,
)
W(
    G,
    "scales by sqrt(d_v)",
    """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(v.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""",
    r"d_v|width of (a )?value|value width|v\.shape|d_k",
)
W(
    G,
    "returns (weights, output)",
    """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w, w @ v
""",
    RETURN_ORDER,
)
W(
    G,
    "returns only the output",
    """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v
""",
    r"tuple|pair|\(output, weights\)|both (the )?output and|two (values|things|arrays)|also return",
)
W(
    G,
    "softmax over the queries",
    """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=0, keepdims=True))
    w = e / e.sum(axis=0, keepdims=True)
    return w @ v, w
""",
    AXIS,
)
W(
    G,
    "scale applied after the softmax",
    """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True) / np.sqrt(q.shape[1])
    return w @ v, w
""",
    r"after the softmax|before the softmax|scale.*(scores|before)|sum to 1|rows? (do not|don't) sum",
)
W(
    G,
    "multiplies the scores by the mask",
    """
def masked_attention(q, k, v, mask):
    s = (q @ k.T / np.sqrt(q.shape[1])) * mask
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
""",
    r"multipl|-\s*inf|zero score|score of 0|exp\(0\)|infinit|\* mask",
)
W(
    G,
    "weights transposed before the values",
    """
def masked_attention(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w.T @ v, w
""",
    TRANSPOSED,
)

R(
    G,
    "-1e9 instead of -inf",
    """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = np.where(mask, s, -1e9)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ v, w
""",
)
R(
    G,
    "zeroes exponentials of blocked keys before normalising",
    """
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[1])
    m = np.max(np.where(mask, s, -np.inf), axis=1, keepdims=True)
    e = np.where(mask, np.exp(np.minimum(s - m, 0.0)), 0.0)
    w = e / e.sum(axis=1, keepdims=True)
    return (w @ v, w)
""",
)
R(
    G,
    "own softmax on a masked copy of the scores",
    """
def softmax_over_keys(scores):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

def masked_attention(q, k, v, mask):
    scores = q @ k.T / np.sqrt(k.shape[1])
    scores = scores.copy()
    scores[~mask] = -np.inf
    weights = softmax_over_keys(scores)
    return weights @ v, weights
""",
)

# ------------------------------------------------------------------------------------------
# Exercise 02 · Heads
# ------------------------------------------------------------------------------------------
G = "q02_weights_shape"
W(
    G,
    "one head's matrix only",
    "weights_shape = (5, 5)\n",
    r"head axis|all heads|every head|one (matrix )?per head|heads together|number of heads",
)
W(
    G,
    "d_head in place of n_k",
    "weights_shape = (2, 5, 4)\n",
    r"d_head|keys|n_k|\(n, n\)|n × n|n x n",
)
W(
    G,
    "head axis last",
    "weights_shape = (5, 5, 2)\n",
    r"head axis first|order|head axis|heads? (go|come)s? first|axis order",
)
W(
    G,
    "d_model heads",
    "weights_shape = (8, 5, 5)\n",
    r"d_model|number of heads|2 heads|h = 2|two heads",
)
W(
    G,
    "adds a batch axis",
    "weights_shape = (1, 2, 5, 5)\n",
    r"batch|three|3 (axes|numbers|entries)|extra|too many",
)
W(G, "floats in the tuple", "weights_shape = (2.0, 5.0, 5.0)\n", WHOLE)
W(
    G,
    "the array instead of its shape",
    "weights_shape = np.zeros((2, 5, 5))\n",
    r"tuple|shape|\.shape|array",
)
W(
    G,
    "flattened per head",
    "weights_shape = (2, 25)\n",
    r"\(n, n\)|n × n|n x n|flatten|three|3 (axes|numbers)",
)

R(G, "tuple from arithmetic with //", "h, n = 2, 5\nweights_shape = (h, n, n)\n")
R(
    G,
    "shape of an array built to check",
    "weights_shape = tuple(int(s) for s in np.zeros((2, 5, 5)).shape)\n",
)

G = "q02_split_heads"
W(
    G,
    "bare reshape",
    """
def split_heads(x, num_heads):
    n, d_model = x.shape
    return x.reshape(num_heads, n, d_model // num_heads)
""",
    BARE_RESHAPE,
)
W(
    G,
    "reshape without the transpose",
    """
def split_heads(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, num_heads, d_model // num_heads)
""",
    r"transpos|head axis first|axis|order|swap",
)
W(
    G,
    "cuts features in the wrong order (interleaved)",
    """
def split_heads(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, d_model // num_heads, num_heads).transpose(2, 0, 1)
""",
    r"interleav|stride|every h|consecutive|contiguous|i \* d_head",
)
W(
    G,
    "transpose puts features before tokens",
    """
def split_heads(x, num_heads):
    n, d_model = x.shape
    return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 2, 0)
""",
    r"transpos|axis|order|\(num_heads, n, d_head\)|shape",
)
W(
    G,
    "float d_head from /",
    """
def split_heads(x, num_heads):
    n, d_model = x.shape
    d_head = d_model / num_heads
    return x.reshape(n, num_heads, d_head).transpose(1, 0, 2)
""",
    WHOLE,
)
W(
    G,
    "strided slices x[:, i::h]",
    """
def split_heads(x, num_heads):
    return np.stack([x[:, i::num_heads] for i in range(num_heads)])
""",
    r"interleav|stride|every h|consecutive|contiguous|i::|i \* d_head|slice",
)
W(
    G,
    "splits the tokens instead of the features",
    """
def split_heads(x, num_heads):
    return np.stack(np.split(x, num_heads, axis=0))
""",
    r"tokens|rows|axis|feature|wrong axis|split (along|over) (the )?(token|row)",
)
W(
    G,
    "d_head from the number of tokens",
    """
def split_heads(x, num_heads):
    n = x.shape[0]
    d_head = n // num_heads
    return np.stack([x[:, i * d_head:(i + 1) * d_head] for i in range(num_heads)])
""",
    r"x\.shape\[1\]|d_model\s*//|number of tokens|width of x|features, not tokens|tokens, not",
)
W(
    G,
    "heads in reverse order",
    """
def split_heads(x, num_heads):
    d_head = x.shape[1] // num_heads
    heads = [x[:, i * d_head:(i + 1) * d_head] for i in range(num_heads)]
    return np.stack(heads[::-1])
""",
    r"revers|order|head 0|first head|backwards",
)
W(
    G,
    "slices off by one feature",
    """
def split_heads(x, num_heads):
    d_head = x.shape[1] // num_heads
    return np.stack([x[:, i * d_head + 1:(i + 1) * d_head + 1] for i in range(num_heads)])
""",
    r"off.by.one|shift|one feature|boundar|edge|i \* d_head|\+ ?1",
)
W(
    G,
    "x.T reshaped",
    """
def split_heads(x, num_heads):
    n, d_model = x.shape
    return x.T.reshape(num_heads, d_model // num_heads, n)
""",
    r"transpos|axis|order|shape|\(num_heads, n, d_head\)",
)

R(
    G,
    "np.split along the features, then stack",
    """
def split_heads(x, num_heads):
    return np.stack(np.split(x, num_heads, axis=1), axis=0)
""",
)
R(
    G,
    "reshape then swapaxes",
    """
def split_heads(x, num_heads):
    n, d_model = x.shape
    return np.ascontiguousarray(x.reshape(n, num_heads, -1).swapaxes(0, 1))
""",
)
R(
    G,
    "einops-like moveaxis",
    """
def split_heads(x, num_heads):
    n = x.shape[0]
    return np.moveaxis(x.reshape(n, num_heads, x.shape[1] // num_heads), 1, 0)
""",
)

G = "q02_merge_heads"
W(
    G,
    "bare reshape",
    """
def merge_heads(x):
    h, n, d_head = x.shape
    return x.reshape(n, h * d_head)
""",
    BARE_RESHAPE,
)
W(
    G,
    "concatenates along the token axis",
    """
def merge_heads(x):
    return np.concatenate(list(x), axis=0)
""",
    r"axis|token|rows|side by side|feature|\(n, h \* d_head\)|shape",
)
W(
    G,
    "interleaves the features",
    """
def merge_heads(x):
    h, n, d_head = x.shape
    return x.transpose(1, 2, 0).reshape(n, h * d_head)
""",
    r"interleav|order|transpos|head 0'?s features|side by side|axis|consecutive",
)
W(
    G,
    "sums the heads",
    """
def merge_heads(x):
    return x.sum(axis=0)
""",
    r"sum|add|\+|join|concat|side by side",
)
W(
    G,
    "averages the heads",
    """
def merge_heads(x):
    return x.mean(axis=0)
""",
    r"mean|averag|join|concat|side by side",
)
W(
    G,
    "vstack of the heads",
    """
def merge_heads(x):
    return np.vstack(x)
""",
    r"vstack|axis|token|rows|side by side|hstack",
)
W(
    G,
    "reverses the heads",
    """
def merge_heads(x):
    return np.concatenate(list(x)[::-1], axis=1)
""",
    r"revers|order|head 0|backwards",
)
W(
    G,
    "transpose (2, 1, 0) then reshape",
    """
def merge_heads(x):
    h, n, d_head = x.shape
    return x.transpose(2, 1, 0).reshape(h * d_head, n).T
""",
    r"interleav|order|transpos|axis|side by side",
)

R(G, "np.hstack over the heads", "def merge_heads(x):\n    return np.hstack(x)\n")
R(
    G,
    "concatenate the head list along the features",
    """
def merge_heads(x):
    return np.concatenate([head for head in x], axis=-1)
""",
)
R(
    G,
    "swapaxes and -1 in reshape",
    """
def merge_heads(x):
    return x.swapaxes(0, 1).reshape(x.shape[1], -1)
""",
)

G = "q02_per_head_attention"
PRE = """
def _split(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)

def _softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""
W(
    G,
    "scale by sqrt(d_model)",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[1]))
    return w @ v, w
""",
    SQRT_DMODEL,
)
W(
    G,
    "bare reshape split",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    n, d = x.shape
    q, k, v = ((x @ w).reshape(num_heads, n, d // num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(d // num_heads))
    return w @ v, w
""",
    BARE_RESHAPE,
)
W(
    G,
    "softmax over the queries",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), axis=1)
    return w @ v, w
""",
    AXIS,
)
W(
    G,
    "no scale",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1))
    return w @ v, w
""",
    NO_SCALE,
)
W(
    G,
    "returns (weights, outputs)",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    return w, w @ v
""",
    RETURN_ORDER,
)
W(
    G,
    "returns the merged outputs",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    out = w @ v
    return out.transpose(1, 0, 2).reshape(x.shape[0], -1), w
""",
    r"merg|shape|\(h, n, d_head\)|per head|split|head axis",
)
W(
    G,
    "adds a causal mask nobody asked for",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    n = x.shape[0]
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    w = _softmax(s)
    return w @ v, w
""",
    r"causal|mask|above the diagonal|no mask|without a mask|triangular",
)
W(
    G,
    "scores transposed (keys on rows)",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(k @ q.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    return w @ v, w
""",
    TRANSPOSED,
)
W(
    G,
    "scale by sqrt(num_heads)",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(num_heads))
    return w @ v, w
""",
    r"num_heads|number of heads|\bh\b|d_head|head'?s? (own )?width",
)
W(
    G,
    "values projected with w_k",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_k))
    w = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
    return w @ v, w
""",
    r"w_v|value projection|values? (are|is) projected|projection of (the )?values",
)
W(
    G,
    "all heads share head 0's keys",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    q, k, v = (_split(x @ w, num_heads) for w in (w_q, w_k, w_v))
    w = _softmax(q @ k[0].T / np.sqrt(q.shape[-1]))
    return w @ v, w
""",
    r"head 0|same keys|its own keys|own k|share|keys? of (each|every)|k\[0\]",
)
W(
    G,
    "projects after splitting x, with the full weights per head",
    PRE
    + """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    d_head = x.shape[1] // num_heads
    outs, ws = [], []
    for i in range(num_heads):
        cols = slice(i * d_head, (i + 1) * d_head)
        q = x[:, cols] @ w_q[cols, cols]
        k = x[:, cols] @ w_k[cols, cols]
        v = x[:, cols] @ w_v[cols, cols]
        w = _softmax(q @ k.T / np.sqrt(d_head))
        outs.append(w @ v)
        ws.append(w)
    return np.stack(outs), np.stack(ws)
""",
    r"project (first|before)|before split|split (x|the input)|whole x|full (x|input)|projection|rows of w",
)

R(
    G,
    "loop over heads with column slices",
    """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    d_head = w_q.shape[1] // num_heads
    Q, K, V = x @ w_q, x @ w_k, x @ w_v
    outs, weights = [], []
    for i in range(num_heads):
        c = slice(i * d_head, (i + 1) * d_head)
        s = Q[:, c] @ K[:, c].T / np.sqrt(d_head)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        outs.append(a @ V[:, c])
        weights.append(a)
    return np.stack(outs), np.stack(weights)
""",
)
R(
    G,
    "einsum with the head axis",
    """
def per_head_attention(x, w_q, w_k, w_v, num_heads):
    n, d = x.shape
    dh = d // num_heads
    q, k, v = ((x @ w).reshape(n, num_heads, dh) for w in (w_q, w_k, w_v))
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(dh)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return np.einsum("hqk,khd->hqd", a, v), a
""",
)

G = "q02_full_layer"
PRE2 = """
def split_heads(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)

def merge_heads(x):
    h, n, dh = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * dh)

def _softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""
W(
    G,
    "forgets the output projection",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        outs.append(merge_heads(_softmax(s) @ v))
    return np.stack(outs)
""",
    r"w_o|output projection|W_O|project(ion)? at the end|last product",
)
W(
    G,
    "mask polarity inverted",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, -np.inf, s)
        outs.append(merge_heads(_softmax(s) @ v) @ w_o)
    return np.stack(outs)
""",
    POLARITY,
)
W(
    G,
    "adds the 0/1 mask to the scores",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = s + mask.astype(float)
        outs.append(merge_heads(_softmax(s) @ v) @ w_o)
    return np.stack(outs)
""",
    ADDED_MASK,
)
W(
    G,
    "ignores the mask",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        outs.append(merge_heads(_softmax(s) @ v) @ w_o)
    return np.stack(outs)
""",
    r"mask (is )?(ignored|not (used|applied))|ignor|without (the|a) mask|no mask|apply the mask|mask has no effect|same as without",
)
W(
    G,
    "one long sequence across the batch",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    b, n, d = x.shape
    flat = x.reshape(b * n, d)
    q, k, v = (split_heads(flat @ w, num_heads) for w in (w_q, w_k, w_v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(np.tile(mask, (b, b)), s, -np.inf)
    return (merge_heads(_softmax(s) @ v) @ w_o).reshape(b, n, d)
""",
    r"across (the )?(batch|sequences)|within (its|each|a|one) sequence|each sequence (attends|separately|on its own)|mix(es|ing)? (the )?sequences|other sequences?|one long sequence|batch (axis|as)",
)
W(
    G,
    "scale by sqrt(d_model)",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(x.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        outs.append(merge_heads(_softmax(s) @ v) @ w_o)
    return np.stack(outs)
""",
    SQRT_DMODEL,
)
W(
    G,
    "bare reshape to split and merge",
    """
def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    n, d = x.shape[1:]
    for seq in x:
        q, k, v = ((seq @ w).reshape(num_heads, n, d // num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d // num_heads)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        outs.append((_softmax(s) @ v).reshape(n, d) @ w_o)
    return np.stack(outs)
""",
    BARE_RESHAPE,
)
W(
    G,
    "merge without bringing tokens first",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        o = _softmax(s) @ v
        outs.append(o.reshape(seq.shape[0], -1) @ w_o)
    return np.stack(outs)
""",
    r"merg|reshape|transpos|token axis first|bare|head axis",
)
W(
    G,
    "zeroes weights after the softmax",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        a = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))
        if mask is not None:
            a = a * mask
        outs.append(merge_heads(a @ v) @ w_o)
    return np.stack(outs)
""",
    r"before the softmax|after the softmax|renormali[sz]|sum to 1|-\s*inf",
)
W(
    G,
    "always applies a causal mask",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    n = x.shape[1]
    if mask is None:
        mask = np.tril(np.ones((n, n), dtype=bool))
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = np.where(mask, q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), -np.inf)
        outs.append(merge_heads(_softmax(s) @ v) @ w_o)
    return np.stack(outs)
""",
    r"causal|no mask|without (a|the) mask|mask=None|default",
)
W(
    G,
    "`if mask:` on an array",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask:
            s = np.where(mask, s, -np.inf)
        outs.append(merge_heads(_softmax(s) @ v) @ w_o)
    return np.stack(outs)
""",
    r"if mask|is not none|is none|truth value|ambiguous",
)
W(
    G,
    "w_o transposed",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        outs.append(merge_heads(_softmax(s) @ v) @ w_o.T)
    return np.stack(outs)
""",
    r"w_o|transpos|\.T\b|output projection",
)
W(
    G,
    "softmax over the queries",
    PRE2
    + """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    outs = []
    for seq in x:
        q, k, v = (split_heads(seq @ w, num_heads) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        outs.append(merge_heads(np.nan_to_num(_softmax(s, axis=-2)) @ v) @ w_o)
    return np.stack(outs)
""",
    AXIS,
)
W(
    G,
    "calls the course's multi_head_attention",
    """
from mha_helpers import multi_head_attention

def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    return multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=num_heads, mask=mask)
""",
    COURSE_HELPER,
)

R(
    G,
    "batched with a leading axis and einsum",
    """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    b, n, d = x.shape
    dh = d // num_heads
    q, k, v = ((x @ w).reshape(b, n, num_heads, dh) for w in (w_q, w_k, w_v))
    s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh)
    if mask is not None:
        s = np.where(mask[None, None], s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True)
    o = np.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, n, d)
    return o @ w_o
""",
)
R(
    G,
    "loop over sequences and heads, sum over heads' W_O blocks",
    """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    b, n, d = x.shape
    dh = d // num_heads
    y = np.zeros((b, n, w_o.shape[1]))
    for s_i in range(b):
        Q, K, V = x[s_i] @ w_q, x[s_i] @ w_k, x[s_i] @ w_v
        for h in range(num_heads):
            c = slice(h * dh, (h + 1) * dh)
            s = Q[:, c] @ K[:, c].T / np.sqrt(dh)
            if mask is not None:
                s[~mask] = -np.inf
            e = np.exp(s - s.max(axis=1, keepdims=True))
            a = e / e.sum(axis=1, keepdims=True)
            y[s_i] += (a @ V[:, c]) @ w_o[c]
    return y
""",
)
R(
    G,
    "mask as -1e30 fill and explicit `is None` test",
    """
def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):
    b, n, d = x.shape
    dh = d // num_heads
    def split(t):
        return t.reshape(b, n, num_heads, dh).transpose(0, 2, 1, 3)
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -1e30)
    a = np.exp(s - s.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True)
    return (a @ v).transpose(0, 2, 1, 3).reshape(b, n, d) @ w_o
""",
)

# ------------------------------------------------------------------------------------------
# Exercise 03 · Concatenate, then project
# ------------------------------------------------------------------------------------------
G = "q03_d_head"
W(G, "float from /", "d_head = 768 / 12\n", WHOLE)
W(G, "multiplies instead of dividing", "d_head = 768 * 12\n", r"divid|multipl|d_model\s*//\s*h|//")
W(G, "divides by 8 heads", "d_head = 768 // 8\n", r"12 heads|number of heads|//\s*12|/ 12|h = 12")
W(G, "forgets to divide", "d_head = 768\n", r"divid|d_model\s*//|split|whole model|d_model")
W(
    G,
    "gives the number of heads",
    "d_head = 12\n",
    r"number of heads|width|d_model\s*//|heads?,? not",
)
W(G, "as text", 'd_head = "64"\n', r"string|text|number|quot|\bint\b")
W(
    G,
    "width of Q, K and V together",
    "d_head = 3 * 768 // 12\n",
    r"three|q, k,? (and )?v|qkv|one head",
)
W(
    G,
    "ratio upside down",
    "d_head = 12 / 768\n",
    r"invert|upside|d_model\s*/\s*h|//|divid|whole number|the other way",
)

R(G, "integer division", "d_model, h = 768, 12\nd_head = d_model // h\n")
R(G, "int() of the division", "d_head = int(768 / 12)\n")

G = "q03_identity_output"
W(
    G,
    "adds the heads",
    "identity_output = np.array([1.0, 2.0]) + np.array([3.0, 4.0])\n",
    r"add|sum|\+|concat|join|side by side|four|4 numbers|shape|length",
)
W(
    G,
    "averages the heads",
    "identity_output = [2.0, 3.0]\n",
    r"averag|mean|concat|join|four|4 numbers|shape|length",
)
W(
    G,
    "copies the w_mix output from the example",
    "identity_output = [4.0, 6.0, -2.0, -2.0]\n",
    r"w_mix|example|identity|np\.eye|unchanged|mix",
)
W(G, "heads in reverse order", "identity_output = [3.0, 4.0, 1.0, 2.0]\n", r"order|revers|head 0")
W(
    G,
    "only head 0",
    "identity_output = [1.0, 2.0, 0.0, 0.0]\n",
    r"head 1|both heads|second head|every head|zeros?",
)
W(
    G,
    "nested per head",
    "identity_output = [[1.0, 2.0], [3.0, 4.0]]\n",
    r"nested|shape|four numbers|flat|1-?d|one list|\(4,\)|concat|join",
)
W(
    G,
    "the identity matrix itself",
    "identity_output = np.eye(4)\n",
    r"matrix|shape|four numbers|\(4,\)|joined @|product",
)
W(
    G,
    "sum of all features",
    "identity_output = 10.0\n",
    r"four numbers|list|array|sum|shape|single number|scalar",
)

R(
    G,
    "the product with np.eye",
    """
head_outputs = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
joined = np.concatenate(head_outputs)
identity_output = joined @ np.eye(4)
""",
)
R(G, "a list of ints", "identity_output = [1, 2, 3, 4]\n")
R(G, "np.arange", "identity_output = np.arange(1.0, 5.0)\n")

G = "q03_concat_vs_average"
W(
    G,
    "a: W_O can undo averaging",
    'concat_vs_average = "a"\n',
    r"undo|cannot (be )?undo|lost|lose|information|invert|same vector|different pairs",
)
W(
    G,
    "c: average times h",
    'concat_vs_average = "c"\n',
    r"shrink|factor|multipl|times h|scal|different pairs|same vector|lost|information",
)
W(
    G,
    "d: weights must sum to one",
    'concat_vs_average = "d"\n',
    r"sum to (one|1)|each head'?s? (own )?weights|softmax|attention weights|normali",
)
W(G, "two letters", 'concat_vs_average = "b, a"\n', LETTER_FORM)
W(G, "an index instead of a letter", "concat_vs_average = 1\n", LETTER_FORM)
W(
    G,
    "copies the statement",
    'concat_vs_average = "Concatenating keeps each head\'s features in separate positions"\n',
    LETTER_FORM,
)

R(G, "capital letter", 'concat_vs_average = "B"\n')
R(G, "letter with spaces", 'concat_vs_average = " b "\n')

G = "q03_concat_project"
W(
    G,
    "adds the heads with +",
    """
def concat_project(head_outputs, w_o):
    total = sum(head_outputs)
    h = len(head_outputs)
    return np.tile(total, h) @ w_o
""",
    r"\+|add|sum|join|concat|side by side",
)
W(
    G,
    "bare reshape",
    """
def concat_project(head_outputs, w_o):
    x = np.asarray(head_outputs)
    h, n, d_head = x.shape
    return x.reshape(n, h * d_head) @ w_o
""",
    BARE_RESHAPE,
)
W(
    G,
    "averages the heads then tiles",
    """
def concat_project(head_outputs, w_o):
    x = np.asarray(head_outputs)
    return np.tile(x.mean(axis=0), (1, x.shape[0])) @ w_o
""",
    r"averag|mean|concat|join|side by side",
)
W(
    G,
    "transpose method fails on a list",
    """
def concat_project(head_outputs, w_o):
    h, n, d_head = head_outputs.shape
    return head_outputs.transpose(1, 0, 2).reshape(n, h * d_head) @ w_o
""",
    r"list|np\.asarray|np\.array|attribute|transpose|\.shape",
)
W(
    G,
    "w_o transposed",
    """
def concat_project(head_outputs, w_o):
    joined = np.concatenate(list(head_outputs), axis=-1)
    return joined @ w_o.T
""",
    r"w_o|transpos|\.T\b",
)
W(
    G,
    "interleaves features via stack on the last axis",
    """
def concat_project(head_outputs, w_o):
    x = np.stack(list(head_outputs), axis=-1)
    return x.reshape(x.shape[0], -1) @ w_o
""",
    r"interleav|order|head 0'?s? row|side by side|stack|consecutive|transpos",
)
W(
    G,
    "heads in reverse order",
    """
def concat_project(head_outputs, w_o):
    return np.concatenate(list(head_outputs)[::-1], axis=1) @ w_o
""",
    r"revers|order|head 0",
)
W(
    G,
    "assumes d_model = h * d_head",
    """
def concat_project(head_outputs, w_o):
    x = np.asarray(head_outputs)
    n = x.shape[1]
    d_model = w_o.shape[1]
    return x.transpose(1, 0, 2).reshape(n, d_model) @ w_o
""",
    r"h \* d_head|w_o\.shape\[0\]|need not|d_model (need not|is not|≠|!=)|square",
)
W(
    G,
    "calls the course's merge_heads",
    """
from mha_helpers import merge_heads

def concat_project(head_outputs, w_o):
    return merge_heads(np.asarray(head_outputs)) @ w_o
""",
    COURSE_HELPER,
)
W(
    G,
    "projects every head with the whole W_O and stacks",
    """
def concat_project(head_outputs, w_o):
    d_head = np.asarray(head_outputs).shape[-1]
    return np.stack([o @ w_o[:d_head] for o in head_outputs])
""",
    r"sum|add|concat|join|block|rows? of w_o",
)
W(
    G,
    "uses only head i's first block of W_O for every head",
    """
def concat_project(head_outputs, w_o):
    d_head = np.asarray(head_outputs).shape[-1]
    return sum(o @ w_o[:d_head] for o in head_outputs)
""",
    r"block|rows? of w_o|w_o\^?\(i\)|own (block|rows)|each head'?s|head i",
)
W(
    G,
    "joins along the token axis",
    """
def concat_project(head_outputs, w_o):
    x = np.concatenate(list(head_outputs), axis=0)
    n = x.shape[0] // len(head_outputs)
    return x.reshape(n, -1) @ w_o
""",
    r"axis|token|rows|feature|side by side|order|reshape",
)

R(
    G,
    "np.hstack of the list",
    """
def concat_project(head_outputs, w_o):
    return np.hstack(list(head_outputs)) @ w_o
""",
)
R(
    G,
    "sum of blocks, the lesson's identity",
    """
def concat_project(head_outputs, w_o):
    heads = [np.asarray(o) for o in head_outputs]
    d_head = heads[0].shape[1]
    return sum(o @ w_o[i * d_head:(i + 1) * d_head] for i, o in enumerate(heads))
""",
)
R(
    G,
    "np.asarray then transpose",
    """
def concat_project(head_outputs, w_o):
    x = np.asarray(head_outputs)
    h, n, d_head = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * d_head) @ w_o
""",
)
R(
    G,
    "einsum with W_O reshaped per head",
    """
def concat_project(head_outputs, w_o):
    x = np.asarray(head_outputs, dtype=float)
    h, n, d_head = x.shape
    return np.einsum("hnd,hdm->nm", x, w_o.reshape(h, d_head, -1))
""",
)

# ------------------------------------------------------------------------------------------
# Exercise 04 · What heads cost
# ------------------------------------------------------------------------------------------
G = "q04_params"
W(
    G,
    "ignores the biases",
    """
def count_params(d_model, num_heads, bias):
    d_head = d_model // num_heads
    return 4 * d_model * num_heads * d_head
""",
    r"bias",
)
W(
    G,
    "forgets W_O's bias",
    """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    return 4 * d_model * hd + (3 * hd if bias else 0)
""",
    r"w_o|output projection|bias of|four biases|every projection|each projection|d_model biases",
)
W(
    G,
    "d_model wide biases everywhere",
    """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    return 4 * d_model * hd + (4 * d_model if bias else 0)
""",
    r"num_heads \* d_head|h \* d_head|output features?|not divid|narrower|bias\w* (of|per) output",
)
W(
    G,
    "assumes heads fill d_model",
    """
def count_params(d_model, num_heads, bias):
    return 4 * d_model * d_model + (4 * d_model if bias else 0)
""",
    r"divid|num_heads \* d_head|h \* d_head|d_model //|narrower|less than d_model|not divid|d_head",
)
W(
    G,
    "forgets W_O",
    """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    return 3 * d_model * hd + (3 * hd if bias else 0)
""",
    r"w_o|output projection|fourth|four (weight|projection)",
)
W(
    G,
    "counts the weights once per head",
    """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    n = 4 * d_model * hd + ((3 * hd + d_model) if bias else 0)
    return num_heads * n
""",
    r"per head|once|every head|times (the number of )?heads|num_heads|\bh\b",
)
W(
    G,
    "float d_head",
    """
def count_params(d_model, num_heads, bias):
    d_head = d_model / num_heads
    hd = num_heads * d_head
    return 4 * d_model * hd + ((3 * hd + d_model) if bias else 0)
""",
    WHOLE,
)
W(
    G,
    "adds the boolean itself",
    """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    return 4 * d_model * hd + bias
""",
    r"bias",
)
W(
    G,
    "one bias per projection",
    """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    return 4 * d_model * hd + (4 if bias else 0)
""",
    r"per output feature|one per (output )?feature|one bias per|bias (vector|per feature)|biases? per projection",
)
W(
    G,
    "only Q, K, V bias; W_O counted d_model x d_model",
    """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    return 3 * d_model * hd + d_model * d_model + ((3 * hd + d_model) if bias else 0)
""",
    r"w_o|output projection|num_heads \* d_head|h \* d_head|not divid",
)
W(
    G,
    "calls attention_params",
    """
from mha_helpers.cost import attention_params

def count_params(d_model, num_heads, bias):
    return attention_params(d_model, num_heads, bias=bias)
""",
    COURSE_HELPER,
)

R(
    G,
    "sum over the weight shapes",
    """
def count_params(d_model, num_heads, bias):
    hd = num_heads * (d_model // num_heads)
    shapes = [(d_model, hd)] * 3 + [(hd, d_model)]
    total = sum(a * b for a, b in shapes)
    if bias:
        total += sum(b for _, b in shapes)
    return int(total)
""",
)
R(
    G,
    "int() at the end of a float-free formula",
    """
def count_params(d_model, num_heads, bias):
    d_head = d_model // num_heads
    w = 4 * d_model * num_heads * d_head
    b = 3 * num_heads * d_head + d_model
    return int(w + b * bool(bias))
""",
)

G = "q04_flops"


def _fl(body):
    return "def count_flops(n, d_model, num_heads):\n" + body


W(
    G,
    "multiply-adds, not FLOPs",
    _fl("""    hd = num_heads * (d_model // num_heads)
    return 4 * n * d_model * hd + 2 * n * n * hd
"""),
    r"2 flops|two flops|multiply.add|factor (of )?2|half|twice|double",
)
W(
    G,
    "only the Q projection",
    _fl("""    dh = d_model // num_heads
    hd = num_heads * dh
    proj = 2 * n * d_model * hd
    attn = num_heads * (2 * n * n * dh + 2 * n * n * dh)
    out = 2 * n * hd * d_model
    return proj + attn + out
"""),
    r"three projections|q, k(,)? and v|k and v|key and value|projections? (are )?missing|missing.*projection|2 projections|two projections",
)
W(
    G,
    "forgets the output projection",
    _fl("""    dh = d_model // num_heads
    hd = num_heads * dh
    return 3 * 2 * n * d_model * hd + num_heads * 4 * n * n * dh
"""),
    r"w_o|output projection",
)
W(
    G,
    "forgets the weighted sum of values",
    _fl("""    dh = d_model // num_heads
    hd = num_heads * dh
    return 8 * n * d_model * hd + num_heads * 2 * n * n * dh
"""),
    r"weighted sum|values|a ?@ ?v|av\b|weights @ v|second (product|term)",
)
W(
    G,
    "per head attention with d_model instead of d_head",
    _fl("""    hd = num_heads * (d_model // num_heads)
    return 8 * n * d_model * hd + num_heads * 4 * n * n * d_model
"""),
    r"d_head|per head|every head|d_model|head'?s? width|times h",
)
W(
    G,
    "attention counted for one head only",
    _fl("""    dh = d_model // num_heads
    hd = num_heads * dh
    return 8 * n * d_model * hd + 4 * n * n * dh
"""),
    r"every head|all heads|each head|num_heads|one head|times h|per head",
)
W(
    G,
    "counts the softmax too",
    _fl("""    dh = d_model // num_heads
    hd = num_heads * dh
    return 8 * n * d_model * hd + num_heads * 4 * n * n * dh + num_heads * n * n
"""),
    r"softmax|do not count|extra|n \* n|n²|exp\(",
)
W(
    G,
    "assumes heads fill d_model",
    _fl("""    return 8 * n * d_model * d_model + 4 * n * n * d_model
"""),
    r"num_heads \* d_head|h \* d_head|divid|d_model //|less than|narrower|d_head|not divid",
)
W(
    G,
    "float d_head",
    _fl("""    dh = d_model / num_heads
    hd = num_heads * dh
    return 8 * n * d_model * hd + num_heads * 4 * n * n * dh
"""),
    WHOLE,
)
W(
    G,
    "scores counted as n * d_head, not n * n * d_head",
    _fl("""    dh = d_model // num_heads
    hd = num_heads * dh
    return 8 * n * d_model * hd + num_heads * 2 * (n * dh + n * n * dh)
"""),
    r"scores|qk|q ?@ ?k|n \* n|n × n|n x n|score",
)
W(
    G,
    "2 FLOPs only on the projections",
    _fl("""    dh = d_model // num_heads
    hd = num_heads * dh
    return 8 * n * d_model * hd + num_heads * 2 * n * n * dh
"""),
    r"2 flops|two flops|multiply.add|factor (of )?2|half|twice|double|attention (terms|products)",
)
W(
    G,
    "calls attention_flops",
    """
from mha_helpers.cost import attention_flops

def count_flops(n, d_model, num_heads):
    return attention_flops(n, d_model, num_heads)["total"]
""",
    COURSE_HELPER,
)

R(
    G,
    "term by term with a helper for a product",
    """
def count_flops(n, d_model, num_heads):
    def mm(a, b, c):
        return 2 * a * b * c
    dh = d_model // num_heads
    hd = num_heads * dh
    total = 3 * mm(n, d_model, hd)
    for _ in range(num_heads):
        total += mm(n, dh, n) + mm(n, n, dh)
    total += mm(n, hd, d_model)
    return total
""",
)
R(
    G,
    "closed form",
    """
def count_flops(n, d_model, num_heads):
    hd = (d_model // num_heads) * num_heads
    return 8 * n * d_model * hd + 4 * n * n * hd
""",
)

G = "q04_changes_with_h"
W(
    G,
    "everything changes",
    "changes_with_h = (True, True, True, True)\n",
    r"param|flops|same|do not change|unchanged|constant",
)
W(
    G,
    "attention weights do not change",
    "changes_with_h = (False, False, False, True)\n",
    r"attention weights|third (entry|value|item|element)|h × n|h \* n|one matrix per head|per head|n × n",
)
W(
    G,
    "FLOPs change",
    "changes_with_h = (False, True, True, True)\n",
    r"flops|second (entry|value|item|element)|same|products|unchanged",
)
W(
    G,
    "parameters change",
    "changes_with_h = (True, False, True, True)\n",
    r"param|first (entry|value|item|element)|w_q|weights? (matrices|shapes)|same|unchanged",
)
W(
    G,
    "d_head does not change",
    "changes_with_h = (False, False, True, False)\n",
    r"d_head|fourth (entry|value|item|element)|d_model // h|halves|width",
)
W(
    G,
    "three values",
    "changes_with_h = (False, False, True)\n",
    r"four|4 values|length|tuple|number of (entries|values)",
)
W(
    G,
    "strings",
    'changes_with_h = ("False", "False", "True", "True")\n',
    r"string|text|bool|true/false|quot|type",
)
W(
    G,
    "the opposite of every answer",
    "changes_with_h = (True, True, False, False)\n",
    r"param|flops|attention weights|d_head|polarity|opposite|true means",
)

R(
    G,
    "booleans computed from comparisons",
    "changes_with_h = (1 != 1, 2 == 3, 12 != 24, 64 != 32)\n",
)
R(G, "bool() of numbers", "changes_with_h = (bool(0), bool(0), bool(1), bool(1))\n")

G = "q04_weight_entries"
W(
    G,
    "one head only",
    "weight_entries = 1024 * 1024\n",
    r"heads|every head|all heads|one head|times 12",
)
W(
    G,
    "only the causal half",
    "weight_entries = 12 * 1024 * 1025 // 2\n",
    r"causal|zeros?|half|above the diagonal|n\(n\+1\)/2|count them|masked",
)
W(G, "float", "weight_entries = 12 * 1024 ** 2 / 1\n", WHOLE)
W(
    G,
    "n * d_head per head",
    "weight_entries = 12 * 1024 * 64\n",
    r"n × n|n x n|n \* n|d_head|n_k|keys|queries",
)
W(G, "d_model in place of heads", "weight_entries = 768 * 1024 * 1024\n", r"heads|d_model|768")
W(
    G,
    "in bytes, float32",
    "weight_entries = 12 * 1024 * 1024 * 4\n",
    r"bytes|float32|4 bytes|count, not|number of weights",
)
W(G, "all 12 layers", "weight_entries = 12 * 12 * 1024 * 1024\n", r"layers?|one layer|12 layers")
W(
    G,
    "rounded to 5 significant digits",
    "weight_entries = 12583000\n",
    r"exact|round|digits|significant|precise|approximat",
)
W(G, "1000 tokens", "weight_entries = 12 * 1000 * 1000\n", r"1024|sequence length|tokens")

R(G, "power of two", "weight_entries = 12 * 2 ** 20\n")
R(G, "bit shift", "weight_entries = 12 << 20\n")
R(G, "int of a product", "n, h = 1024, 12\nweight_entries = int(h * n * n)\n")

# ------------------------------------------------------------------------------------------
# Exercise 05 · Variants (GQA, mean-pooling, the KV cache)
# ------------------------------------------------------------------------------------------
G = "q05_gqa"
PRE5 = """
from mha_helpers import merge_heads, scaled_dot_product_attention, split_heads
"""


def _gqa(idx="i // group", scale_q="", out="@ w_o", q_heads="num_heads", kv_heads="num_kv_heads"):
    return (
        PRE5
        + f"""
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    q = split_heads(x @ w_q, {q_heads})
    k = split_heads(x @ w_k, {kv_heads})
    v = split_heads(x @ w_v, {kv_heads})
    group = num_heads // num_kv_heads
    heads = []
    for i in range(q.shape[0]):
        j = {idx}
        heads.append(scaled_dot_product_attention(q[i]{scale_q}, k[j], v[j])[0])
    return merge_heads(np.stack(heads)) {out}
"""
    )


W(
    G,
    "KV head i // num_kv_heads",
    _gqa(idx="i // num_kv_heads"),
    r"i // \(?num_heads // num_kv_heads\)?|i // group|kv head (index|of)|which kv head|wrong kv head|group size|reads kv head",
)
W(
    G,
    "KV head i % num_kv_heads (interleaved)",
    _gqa(idx="i % num_kv_heads"),
    r"i // \(?num_heads // num_kv_heads\)?|i // group|%|modulo|interleav|consecutive|contiguous|tile|repeat\b|wrong kv head|which kv head",
)
W(
    G,
    "every query head reads KV head 0",
    _gqa(idx="0"),
    r"kv head 0|head 0|every query head|same kv head|group|i // ",
)
W(G, "forgets W_O", _gqa(out=""), r"w_o|output projection")
W(
    G,
    "K and V split into num_heads heads",
    _gqa(kv_heads="num_heads", idx="i"),
    r"num_kv_heads|kv heads|split\w* (k|v|keys|the keys)|k and v (into|in) num_heads",
)
W(
    G,
    "query index off by one group",
    _gqa(idx="min(i // group + 1, num_kv_heads - 1)"),
    r"off.by.one|i // group|\+ ?1|which kv head|wrong kv head|next group",
)
W(
    G,
    "extra 1/sqrt(d_head) on the queries",
    _gqa(scale_q=" / np.sqrt(q.shape[-1])"),
    r"scal|twice|double|√|sqrt",
)
W(
    G,
    "np.tile to share the KV heads",
    PRE5
    + """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    q = split_heads(x @ w_q, num_heads)
    k = np.tile(split_heads(x @ w_k, num_kv_heads), (num_heads // num_kv_heads, 1, 1))
    v = np.tile(split_heads(x @ w_v, num_kv_heads), (num_heads // num_kv_heads, 1, 1))
    return merge_heads(scaled_dot_product_attention(q, k, v)[0]) @ w_o
""",
    r"tile|repeat|interleav|consecutive|contiguous|i // group|i // \(?num_heads|%|wrong kv head|which kv head",
)
W(
    G,
    "scale by sqrt(d_model)",
    PRE5
    + """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    q = split_heads(x @ w_q, num_heads)
    k = np.repeat(split_heads(x @ w_k, num_kv_heads), num_heads // num_kv_heads, axis=0)
    v = np.repeat(split_heads(x @ w_v, num_kv_heads), num_heads // num_kv_heads, axis=0)
    d = x.shape[1]
    s = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return merge_heads(a @ v) @ w_o
""",
    SQRT_DMODEL,
)
W(
    G,
    "causal mask added",
    PRE5
    + """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    n = x.shape[0]
    q = split_heads(x @ w_q, num_heads)
    k = np.repeat(split_heads(x @ w_k, num_kv_heads), num_heads // num_kv_heads, axis=0)
    v = np.repeat(split_heads(x @ w_v, num_kv_heads), num_heads // num_kv_heads, axis=0)
    mask = np.tril(np.ones((n, n), dtype=bool))
    return merge_heads(scaled_dot_product_attention(q, k, v, mask=mask)[0]) @ w_o
""",
    r"causal|mask|no mask|triangular",
)
W(
    G,
    "queries split into num_kv_heads heads",
    _gqa(q_heads="num_kv_heads", idx="i"),
    r"num_heads|query heads|split.*q|d_head|width|scal",
)
W(
    G,
    "group mean of the queries",
    PRE5
    + """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    group = num_heads // num_kv_heads
    q = split_heads(x @ w_q, num_heads)
    k = split_heads(x @ w_k, num_kv_heads)
    v = split_heads(x @ w_v, num_kv_heads)
    q_g = q.reshape(num_kv_heads, group, *q.shape[1:]).mean(axis=1)
    o = scaled_dot_product_attention(q_g, k, v)[0]
    return merge_heads(np.repeat(o, group, axis=0)) @ w_o
""",
    r"quer(y|ies)|each query head|own quer|averag|mean|pool",
)
W(
    G,
    "calls grouped_query_attention",
    """
from mha_helpers import grouped_query_attention

def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    return grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads=num_heads, num_kv_heads=num_kv_heads)
""",
    COURSE_HELPER,
)

R(
    G,
    "np.repeat the KV heads",
    PRE5
    + """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    g = num_heads // num_kv_heads
    q = split_heads(x @ w_q, num_heads)
    k = np.repeat(split_heads(x @ w_k, num_kv_heads), g, axis=0)
    v = np.repeat(split_heads(x @ w_v, num_kv_heads), g, axis=0)
    return merge_heads(scaled_dot_product_attention(q, k, v)[0]) @ w_o
""",
)
R(
    G,
    "pure NumPy loop with column slices",
    """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    dh = x.shape[1] // num_heads
    Q, K, V = x @ w_q, x @ w_k, x @ w_v
    outs = []
    for i in range(num_heads):
        j = i // (num_heads // num_kv_heads)
        q = Q[:, i * dh:(i + 1) * dh]
        k = K[:, j * dh:(j + 1) * dh]
        v = V[:, j * dh:(j + 1) * dh]
        s = q @ k.T / np.sqrt(dh)
        a = np.exp(s - s.max(axis=1, keepdims=True))
        outs.append((a / a.sum(axis=1, keepdims=True)) @ v)
    return np.concatenate(outs, axis=1) @ w_o
""",
)
R(
    G,
    "grouped einsum",
    """
def gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads):
    n, d = x.shape
    dh = d // num_heads
    g = num_heads // num_kv_heads
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

G = "q05_mean_pool"


def _mp(body):
    return "def mean_pool_kv(w, num_heads, num_kv_heads):\n" + body


W(
    G,
    "sums instead of averaging",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    g = num_heads // num_kv_heads
    return w.reshape(d, num_kv_heads, g, dh).sum(axis=2).reshape(d, -1)
"""),
    r"sum|mean|averag|divid|group size|factor",
)
W(
    G,
    "interleaved groups",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    g = num_heads // num_kv_heads
    return w.reshape(d, g, num_kv_heads, dh).mean(axis=1).reshape(d, -1)
"""),
    r"consecutive|interleav|j \* group|group j|order|which heads|heads of (each|the) group",
)
W(
    G,
    "averages adjacent columns, not heads",
    _mp("""    d, c = w.shape
    g = num_heads // num_kv_heads
    return w.reshape(d, c // g, g).mean(axis=2)
"""),
    r"columns|head'?s? (block|columns)|d_head|whole heads?|adjacent|reshape|feature",
)
W(
    G,
    "takes the first head of each group",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    g = num_heads // num_kv_heads
    return np.concatenate([w[:, j * g * dh:(j * g + 1) * dh] for j in range(num_kv_heads)], axis=1)
"""),
    r"mean|averag|first head|every head|all heads|one head",
)
W(
    G,
    "averages all heads into one and tiles",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    m = w.reshape(d, num_heads, dh).mean(axis=1)
    return np.tile(m, (1, num_kv_heads))
"""),
    r"group|all heads|every head|each group|per group",
)
W(
    G,
    "d_head from d_model",
    _mp("""    d, c = w.shape
    dh = d // num_heads
    g = num_heads // num_kv_heads
    return w.reshape(d, num_kv_heads, g, dh).mean(axis=2).reshape(d, -1)
"""),
    r"need not|w\.shape\[1\]|d_model\s*//|columns? (per|of each) head|d_head = w\.shape|not d_model",
)
W(
    G,
    "returns 3-d (d_model, kv, d_head)",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    g = num_heads // num_kv_heads
    return w.reshape(d, num_kv_heads, g, dh).mean(axis=2)
"""),
    SHAPE,
)
W(
    G,
    "writes the mean into w in place",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    g = num_heads // num_kv_heads
    out = w.reshape(d, num_kv_heads, g, dh)
    out[:, :, 0] = out.mean(axis=2)
    return out[:, :, 0].reshape(d, -1)
"""),
    MUTATES,
)
W(
    G,
    "group from num_kv_heads // num_heads",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    group = max(num_kv_heads // num_heads, 1)
    cols = [w[:, j * group * dh:(j + 1) * group * dh].reshape(d, group, dh).mean(axis=1) for j in range(num_kv_heads)]
    return np.concatenate(cols, axis=1)
"""),
    r"group|num_heads // num_kv_heads|upside|invert",
)
W(
    G,
    "averages over the rows (axis 0)",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    g = num_heads // num_kv_heads
    blocks = [w[:, j * g * dh:(j + 1) * g * dh].reshape(d * g, dh) for j in range(num_kv_heads)]
    return np.concatenate([b.reshape(g, d, dh).mean(axis=0) for b in blocks], axis=1)
"""),
    r"axis|rows|columns|reshape|order|which entries|head'?s? (block|columns)",
)

R(
    G,
    "loop over groups and heads",
    _mp("""    d, c = w.shape
    dh = c // num_heads
    g = num_heads // num_kv_heads
    out = np.zeros((d, num_kv_heads * dh))
    for j in range(num_kv_heads):
        for k in range(j * g, (j + 1) * g):
            out[:, j * dh:(j + 1) * dh] += w[:, k * dh:(k + 1) * dh] / g
    return out
"""),
)
R(
    G,
    "reshape and mean with -1",
    _mp("""    dh = w.shape[1] // num_heads
    return w.reshape(w.shape[0], num_kv_heads, -1, dh).mean(axis=2).reshape(w.shape[0], -1)
"""),
)
R(
    G,
    "split into heads then np.mean of each group",
    _mp("""    heads = np.split(np.asarray(w), num_heads, axis=1)
    g = num_heads // num_kv_heads
    return np.hstack([np.mean(heads[j * g:(j + 1) * g], axis=0) for j in range(num_kv_heads)])
"""),
)

G = "q05_cache_bytes"
SIG5 = "def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):\n"
W(
    G,
    "forgets V (no factor 2)",
    SIG5
    + """    return num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch
""",
    r"k and v|keys and values|factor (of )?2|both|twice",
)
W(
    G,
    "uses num_heads, not num_kv_heads",
    SIG5
    + """    return 2 * num_layers * num_heads * d_head * seq_len * bytes_per_element * batch
""",
    r"num_kv_heads|kv heads|query heads",
)
W(
    G,
    "forgets the batch",
    SIG5
    + """    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element
""",
    r"batch|sequences",
)
W(
    G,
    "forgets the layers",
    SIG5
    + """    return 2 * num_kv_heads * d_head * seq_len * bytes_per_element * batch
""",
    r"layers?",
)
W(
    G,
    "bits, not bytes",
    SIG5
    + """    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * 8 * batch
""",
    r"bits|factor (of )?8|times 8|bytes, not bits",
)
W(
    G,
    "both head counts multiplied in",
    SIG5
    + """    return 2 * num_layers * num_heads * num_kv_heads * d_head * seq_len * bytes_per_element * batch
""",
    r"num_heads|query heads|only those|every argument|extra factor",
)
W(
    G,
    "divides by the group size",
    SIG5
    + """    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch // (num_heads // num_kv_heads)
""",
    r"group|num_heads|only those|divid|extra factor",
)
W(
    G,
    "float result from / 1",
    SIG5
    + """    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch / 1
""",
    WHOLE,
)
W(
    G,
    "returns GiB",
    SIG5
    + """    return 2 * num_layers * num_kv_heads * d_head * seq_len * bytes_per_element * batch / 2**30
""",
    r"gib|2\*\*30|unit|gigabyte|in bytes|bytes, not",
)
W(
    G,
    "one token too many (seq_len + 1)",
    SIG5
    + """    return 2 * num_layers * num_kv_heads * d_head * (seq_len + 1) * bytes_per_element * batch
""",
    r"seq_len|tokens|off.by.one|one token|\+ ?1",
)
W(
    G,
    "bytes_per_element ignored (always fp16)",
    SIG5
    + """    return 2 * num_layers * num_kv_heads * d_head * seq_len * 2 * batch
""",
    r"bytes_per_element|fp16|bytes per (number|element)|hard.?coded|2 bytes",
)
W(
    G,
    "calls kv_cache_bytes",
    """
from mha_helpers.cost import kv_cache_bytes

def cache_bytes(num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, batch):
    return kv_cache_bytes(num_layers, num_kv_heads, d_head, seq_len, bytes_per_element, batch)
""",
    COURSE_HELPER,
)

R(
    G,
    "per token then times tokens",
    SIG5
    + """    per_token_layer = 2 * num_kv_heads * d_head
    return per_token_layer * num_layers * seq_len * batch * bytes_per_element
""",
)
R(
    G,
    "math.prod with int()",
    "import math\n\n"
    + SIG5
    + """    return int(math.prod([2, num_layers, num_kv_heads, d_head, seq_len, bytes_per_element, batch]))
""",
)

G = "q05_max_batch"
W(
    G,
    "all 64 heads cached",
    "max_batch = (40 * 2**30) // (2 * 80 * 64 * 128 * 4096 * 2)\n",
    r"kv heads|8 kv|num_kv_heads|query heads|64 (query )?heads",
)
W(
    G,
    "forgets V",
    "max_batch = (40 * 2**30) // (80 * 8 * 128 * 4096 * 2)\n",
    r"k and v|keys and values|factor (of )?2|both|twice",
)
W(G, "float from /", "max_batch = (40 * 2**30) / (2 * 80 * 8 * 128 * 4096 * 2)\n", WHOLE)
W(
    G,
    "GB instead of GiB",
    "max_batch = int(40e9 // (2 * 80 * 8 * 128 * 4096 * 2))\n",
    r"gib|2\*\*30|gb|1e9|10\*\*9",
)
W(
    G,
    "fp32",
    "max_batch = (40 * 2**30) // (2 * 80 * 8 * 128 * 4096 * 4)\n",
    r"fp16|2 bytes|bytes per|float32|fp32",
)
W(G, "forgets the layers", "max_batch = (40 * 2**30) // (2 * 8 * 128 * 4096 * 2)\n", r"layers?|80")
W(G, "as text", 'max_batch = "32"\n', r"string|text|number|quot|\bint\b")
W(
    G,
    "bytes of one sequence instead",
    "max_batch = 2 * 80 * 8 * 128 * 4096 * 2\n",
    r"divid|budget|bytes of one|per sequence|sequences",
)
W(
    G,
    "2048-token sequences",
    "max_batch = (40 * 2**30) // (2 * 80 * 8 * 128 * 2048 * 2)\n",
    r"4096|tokens|sequence length|seq_len",
)

R(
    G,
    "int() of the floor",
    "max_batch = int(np.floor(40 * 2**30 / (2 * 80 * 8 * 128 * 4096 * 2)))\n",
)
R(
    G,
    "step by step",
    """
per_token = 2 * 80 * 8 * 128 * 2
per_sequence = per_token * 4096
max_batch = (40 * 2**30) // per_sequence
""",
)

# ------------------------------------------------------------------------------------------
# Exercise 06 · What heads learn
# ------------------------------------------------------------------------------------------
G = "q06_head_backward"


def _bw(
    *,
    mask=True,
    scale_dq=True,
    rowsum=True,
    dv="a.T @ d_out",
    dk="ds.T @ q",
    dq="ds @ k",
    extra_scale="",
    order="d_q, d_k, d_v",
    rows="axis=1",
):
    m = "s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)" if mask else "pass"
    sc = "ds = ds / np.sqrt(d)" if scale_dq else "pass"
    rs = f"ds = a * (da - (da * a).sum({rows}, keepdims=True))" if rowsum else "ds = a * da"
    return f"""
def head_backward(q, k, v, d_out):
    n, d = q.shape
    s = q @ k.T / np.sqrt(d)
    {m}
    e = np.exp(s - s.max(axis=1, keepdims=True))
    a = e / e.sum(axis=1, keepdims=True)
    da = d_out @ v.T
    d_v = {dv}
    {rs}
    {sc}{extra_scale}
    d_q = {dq}
    d_k = {dk}
    return {order}
"""


W(G, "forgets the causal mask", _bw(mask=False), r"causal|mask|above the diagonal")
W(G, "forgets the scale in the gradient", _bw(scale_dq=False), NO_SCALE)
W(
    G,
    "softmax backward without the row-sum term",
    _bw(rowsum=False),
    r"row.?sum|softmax (backward|gradient|jacobian)|\(∂a - |subtract|da \* a",
)
W(
    G,
    "d_v = A @ d_out",
    _bw(dv="a @ d_out"),
    r"transpos|a\.t|a\^t|a⊤|d_v = |only d_v|d_v (is wrong|differs)",
)
W(
    G,
    "d_k = dS @ q",
    _bw(dk="ds @ q"),
    r"transpos|ds\.t|∂s\^?t|∂s⊤|d_k = |only d_k|d_k (is wrong|differs)",
)
W(
    G,
    "scale applied twice",
    _bw(extra_scale="\n    ds = ds / np.sqrt(d)"),
    r"twice|double|scal|√|sqrt",
)
W(
    G,
    "row sums over the columns",
    _bw(rows="axis=0"),
    r"row.?sum|axis|column|softmax (backward|gradient)",
)
W(G, "returns (d_v, d_k, d_q)", _bw(order="d_v, d_k, d_q"), RETURN_ORDER)
W(
    G,
    "d_q from dS.T",
    _bw(dq="ds.T @ k"),
    r"transpos|ds\.t|∂s\^?t|d_q = |only d_q|d_q (is wrong|differs)",
)
W(
    G,
    "scale by sqrt(n)",
    """
def head_backward(q, k, v, d_out):
    n, d = q.shape
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T / np.sqrt(n), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    a = e / e.sum(axis=1, keepdims=True)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True)) / np.sqrt(n)
    return ds @ k, ds.T @ q, a.T @ d_out
""",
    r"√\s*n\b|sqrt\(n\)|number of tokens|√\s*d_k|sqrt\(d_k\)|width of (a )?(query|key)",
)
W(
    G,
    "scales q in place",
    """
def head_backward(q, k, v, d_out):
    n, d = q.shape
    q /= np.sqrt(d)
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    a = e / e.sum(axis=1, keepdims=True)
    da = d_out @ v.T
    ds = a * (da - (da * a).sum(axis=1, keepdims=True))
    return ds @ k / np.sqrt(d), ds.T @ q, a.T @ d_out
""",
    MUTATES,
)
W(
    G,
    "calls the course's attention_backward",
    """
from mha_helpers.backward import attention_backward

def head_backward(q, k, v, d_out):
    n, d = q.shape
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), q @ k.T / np.sqrt(d), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    a = e / e.sum(axis=1, keepdims=True)
    return attention_backward(q, k, v, a, d_out)
""",
    COURSE_HELPER,
)
W(
    G,
    "dA transposed (v @ d_out.T)",
    _bw().replace("da = d_out @ v.T", "da = v @ d_out.T"),
    r"∂a|d_?a\b|d_weights|transpos|d_out @ v|v\.t|v⊤",
)

R(
    G,
    "loop over query rows for the softmax backward",
    """
def head_backward(q, k, v, d_out):
    n, d = q.shape
    s = q @ k.T / np.sqrt(d)
    s[np.triu_indices(n, 1)] = -np.inf
    a = np.exp(s - s.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    da = d_out @ v.T
    ds = np.zeros_like(a)
    for i in range(n):
        jac = np.diag(a[i]) - np.outer(a[i], a[i])
        ds[i] = jac @ da[i]
    ds /= np.sqrt(d)
    return ds @ k, ds.T @ q, a.T @ d_out
""",
)
R(
    G,
    "einsum form, list return",
    """
def head_backward(q, k, v, d_out):
    n, d = q.shape
    s = np.einsum("id,jd->ij", q, k) / np.sqrt(d)
    s = np.where(np.arange(n)[None, :] <= np.arange(n)[:, None], s, -np.inf)
    a = np.exp(s - s.max(1, keepdims=True))
    a = a / a.sum(1, keepdims=True)
    da = np.einsum("iv,jv->ij", d_out, v)
    ds = a * (da - np.einsum("ij,ij->i", da, a)[:, None]) / np.sqrt(d)
    return (np.einsum("ij,jd->id", ds, k), np.einsum("ij,id->jd", ds, q), np.einsum("ij,iv->jv", a, d_out))
""",
)

G = "q06_measure_roles"


def _mr(body):
    return "def measure_roles(weights):\n" + body


W(
    G,
    "queries from t = 1",
    _mr("""    n = weights.shape[-1]
    t = np.arange(1, n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
"""),
    r"t ≥ 2|t >= 2|t = 1|from 2|arange\(2|position 1|query positions|which positions",
)
W(
    G,
    "queries from t = 0 (wraps to -1)",
    _mr("""    n = weights.shape[-1]
    t = np.arange(n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
"""),
    r"t ≥ 2|t >= 2|t = 0|from 2|arange\(2|wrap|query positions|which positions",
)
W(
    G,
    "columns swapped",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, 0].mean(axis=(0, 2)), weights[:, :, t, t - 1].mean(axis=(0, 2))], axis=1)
"""),
    r"column|swap|order|previous.*first|first.*previous",
)
W(
    G,
    "query and key swapped (A[t-1, t])",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t - 1, t].mean(axis=(0, 2)), weights[:, :, 0, t].mean(axis=(0, 2))], axis=1)
"""),
    TRANSPOSED + r"|rows? = quer",
)
W(
    G,
    "averages over the heads, not the batch",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(1, 2)), weights[:, :, t, 0].mean(axis=(1, 2))], axis=1)
"""),
    AXIS + r"|over the batch|batch axis|per head",
)
W(
    G,
    "sums instead of averaging",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t - 1].sum(axis=(0, 2)), weights[:, :, t, 0].sum(axis=(0, 2))], axis=1)
"""),
    r"sum|mean|averag|divid",
)
W(
    G,
    "divides by all n positions",
    _mr("""    b, h, n, _ = weights.shape
    t = np.arange(2, n)
    prev = weights[:, :, t, t - 1].sum(axis=(0, 2)) / (b * n)
    first = weights[:, :, t, 0].sum(axis=(0, 2)) / (b * n)
    return np.stack([prev, first], axis=1)
"""),
    r"n - 2|positions t ≥ 2|t >= 2|divid|count|number of (query )?positions|mean|averag",
)
W(
    G,
    "returns (2, h)",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))])
"""),
    r"shape|\(h, 2\)|transpos|axis|rows?.*columns?",
)
W(
    G,
    "next token (t + 1) instead of previous",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n - 1)
    return np.stack([weights[:, :, t, t + 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
"""),
    r"t - 1|previous|t \+ 1|next|diagonal|offset",
)
W(
    G,
    "only the first sequence of the batch",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n)
    w = weights[0]
    return np.stack([w[:, t, t - 1].mean(axis=1), w[:, t, 0].mean(axis=1)], axis=1)
"""),
    r"batch|every sequence|all sequences|first sequence|average over",
)
W(
    G,
    "last token instead of first",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, -1].mean(axis=(0, 2))], axis=1)
"""),
    r"first token|column 0|a\[t, 0\]|key 0|position 0|last",
)
W(
    G,
    "diagonal (t, t) for previous",
    _mr("""    n = weights.shape[-1]
    t = np.arange(2, n)
    return np.stack([weights[:, :, t, t].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], axis=1)
"""),
    r"t - 1|previous|diagonal|offset|itself|same token",
)

R(
    G,
    "python loops",
    _mr("""    b, h, n, _ = weights.shape
    out = np.zeros((h, 2))
    for i in range(h):
        out[i, 0] = np.mean([weights[s, i, t, t - 1] for s in range(b) for t in range(2, n)])
        out[i, 1] = np.mean([weights[s, i, t, 0] for s in range(b) for t in range(2, n)])
    return out
"""),
)
R(
    G,
    "np.diagonal with offset",
    _mr("""    prev = np.diagonal(weights, offset=-1, axis1=2, axis2=3)[:, :, 1:]
    first = weights[:, :, 2:, 0]
    return np.column_stack([prev.mean(axis=(0, 2)), first.mean(axis=(0, 2))])
"""),
)

G = "q06_roles_seed7"
W(
    G,
    "the lesson's two-head answer",
    'roles_seed_7 = ("previous", "first")\n',
    r"four|4 heads|length|every head|heads 0, 1, 2 and 3|measure",
)
W(
    G,
    "all roles swapped",
    'roles_seed_7 = ("previous", "first", "previous", "first")\n',
    r"swap|column|larger|order|previous.*first",
)
W(
    G,
    "every head 'first'",
    'roles_seed_7 = ("first", "first", "first", "first")\n',
    r"measure|larger|previous|each head|heads? 1|heads? 3",
)
W(
    G,
    "heads 2 and 3 swapped",
    'roles_seed_7 = ("first", "previous", "previous", "first")\n',
    r"head 2|head 3|heads 2 and 3|larger",
)
W(
    G,
    "the scores instead of names",
    """
roles_seed_7 = ((0.0004, 0.9993), (0.9941, 0.0019), (0.0046, 0.9927), (0.9952, 0.0021))
""",
    r"names?|strings?|\"previous\"|\"first\"|text|words?",
)
W(
    G,
    "abbreviations",
    'roles_seed_7 = ("f", "p", "f", "p")\n',
    r"\"previous\"|\"first\"|spell|names?|words?|exact",
)
W(
    G,
    "column indices",
    "roles_seed_7 = (1, 0, 1, 0)\n",
    r"names?|strings?|\"previous\"|\"first\"|text|argmax|index",
)
W(
    G,
    "one comma-separated string",
    'roles_seed_7 = "first, previous, first, previous"\n',
    r"tuple|one string|single string|four|separate",
)

R(
    G,
    "computed from measured scores",
    """
scores = np.array([[0.0004, 0.9993], [0.9941, 0.0019], [0.0046, 0.9927], [0.9952, 0.0021]])
roles_seed_7 = tuple("previous" if p > f else "first" for p, f in scores)
""",
)
R(G, "typed out", "roles_seed_7 = ('first', 'previous', 'first', 'previous')\n")

G = "q06_remove_head"


def _rh(body):
    return "def remove_head(w_o, head, num_heads):\n" + body


W(
    G,
    "zeroes columns instead of rows",
    _rh("""    w = w_o.copy()
    d = w.shape[0] // num_heads
    w[:, head * d:(head + 1) * d] = 0
    return w
"""),
    r"columns?|rows|axis|transpos|w\[:,",
)
W(
    G,
    "changes w_o in place",
    _rh("""    d = w_o.shape[0] // num_heads
    w_o[head * d:(head + 1) * d] = 0
    return w_o
"""),
    MUTATES,
)
W(
    G,
    "a slice is a view, not a copy",
    _rh("""    w = w_o[:]
    d = w.shape[0] // num_heads
    w[head * d:(head + 1) * d] = 0.0
    return w
"""),
    MUTATES + r"|view",
)
W(
    G,
    "removes the next head",
    _rh("""    w = w_o.copy()
    d = w.shape[0] // num_heads
    w[(head + 1) * d:(head + 2) * d] = 0
    return w
"""),
    r"off.by.one|block|head \+ 1|next head|wrong head|which rows|head i'?s? rows|i \* d_head",
)
W(
    G,
    "keeps only that head",
    _rh("""    w = np.zeros_like(w_o)
    d = w.shape[0] // num_heads
    w[head * d:(head + 1) * d] = w_o[head * d:(head + 1) * d]
    return w
"""),
    r"only (that|this|the) head|keeps?|the other heads?|opposite|invert|every other|remaining",
)
W(
    G,
    "strided rows (every num_heads-th)",
    _rh("""    w = w_o.copy()
    w[head::num_heads] = 0
    return w
"""),
    r"stride|interleav|consecutive|block|contiguous|every h|i \* d_head|::",
)
W(
    G,
    "deletes the rows",
    _rh("""    d = w_o.shape[0] // num_heads
    return np.delete(w_o, np.s_[head * d:(head + 1) * d], axis=0)
"""),
    r"shape|delete|zero|set to 0|same shape|remov",
)
W(
    G,
    "block one row too long",
    _rh("""    w = w_o.copy()
    d = w.shape[0] // num_heads
    w[head * d:(head + 1) * d + 1] = 0
    return w
"""),
    r"off.by.one|one row|extra row|\+ ?1|boundar|edge|block|which rows",
)
W(
    G,
    "d_head from num_heads rows",
    _rh("""    w = w_o.copy()
    w[head * num_heads:(head + 1) * num_heads] = 0
    return w
"""),
    r"d_head|block|w_o\.shape\[0\] // num_heads|which rows|width|num_heads",
)
W(
    G,
    "calls the course's prune_head",
    """
from mha_helpers.training import prune_head

def remove_head(w_o, head, num_heads):
    return prune_head(w_o, head, num_heads)
""",
    COURSE_HELPER + r"|prune_head",
)

R(
    G,
    "np.where over row indices",
    _rh("""    d = w_o.shape[0] // num_heads
    rows = np.arange(w_o.shape[0]) // d
    return np.where((rows == head)[:, None], 0.0, w_o)
"""),
)
R(
    G,
    "multiply by a keep vector",
    _rh("""    d = w_o.shape[0] // num_heads
    keep = np.ones(w_o.shape[0])
    keep[head * d:(head + 1) * d] = 0
    return w_o * keep[:, None]
"""),
)
R(
    G,
    "np.array copy then reshape view",
    _rh("""    w = np.array(w_o, dtype=float)
    w.reshape(num_heads, -1, w.shape[1])[head] = 0
    return w
"""),
)

G = "q06_prune_prediction"
W(
    G,
    "a: another head takes over",
    'prune_prediction = "a"\n',
    r"another head|redundan|takes? over|drops?|falls?|lower|below|measure",
)
W(
    G,
    "c: like the lesson's two heads",
    'prune_prediction = "c"\n',
    r"lesson|two heads|one vote|vote alone|above|four heads|measure|in between",
)
W(G, "d: chance", 'prune_prediction = "d"\n', r"chance|1/16|all four|far above|measure")
W(G, "two letters", 'prune_prediction = "bc"\n', LETTER_FORM)
W(G, "option number", "prune_prediction = 2\n", LETTER_FORM)
W(G, "a letter that is not an option", 'prune_prediction = "e"\n', LETTER_FORM + r"|a, b, c|option")

R(G, "capital letter", 'prune_prediction = "B"\n')
R(G, "lower case with a trailing newline", 'prune_prediction = "b\\n"\n')

# ------------------------------------------------------------------------------------------
# Exercise 07 · Attention at work
# ------------------------------------------------------------------------------------------
G = "q07_cross_shape"
W(
    G,
    "queries and keys swapped",
    "cross_shape = (2, 4, 7, 5)\n",
    r"quer(y|ies)|keys|order|swap|n_q|n_k|rows",
)
W(G, "self-attention shape", "cross_shape = (2, 4, 5, 5)\n", r"keys|n_k|encoder|source|context")
W(G, "no head axis", "cross_shape = (2, 5, 7)\n", r"heads?|head axis|four|4 axes")
W(G, "no batch axis", "cross_shape = (4, 5, 7)\n", r"batch|four|4 axes|sequences")
W(
    G,
    "heads after queries",
    "cross_shape = (2, 5, 4, 7)\n",
    r"order|head axis|heads? (second|before)|\(batch, heads",
)
W(
    G,
    "batch and heads flattened",
    "cross_shape = (8, 5, 7)\n",
    r"batch|heads|flatten|four|4 axes|separate",
)
W(G, "floats", "cross_shape = (2.0, 4.0, 5.0, 7.0)\n", WHOLE)
W(G, "as text", 'cross_shape = "(2, 4, 5, 7)"\n', TUPLE_FORM)
W(G, "keys on both axes", "cross_shape = (2, 4, 7, 7)\n", r"quer(y|ies)|n_q|target|decoder")

R(G, "named sizes", "batch, h, n_q, n_k = 2, 4, 5, 7\ncross_shape = (batch, h, n_q, n_k)\n")
R(G, "tuple() of a list", "cross_shape = tuple([2, 4, 5, 7])\n")

G = "q07_padding_causal_mask"


def _pm(body):
    return "def padding_causal_mask(lengths, n):\n" + body


W(
    G,
    "causal only, ignores lengths",
    _pm("""    return np.broadcast_to(np.tril(np.ones((n, n), dtype=bool)), (len(lengths), n, n)).copy()
"""),
    r"padding|lengths|pad|real token|key_valid",
)
W(
    G,
    "padding only, not causal",
    _pm("""    valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
    return np.repeat(valid[:, None, :], n, axis=1)
"""),
    r"causal|j <= i|j ≤ i|future|above the diagonal|triangular",
)
W(
    G,
    "j <= lengths (one key too many)",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] <= np.asarray(lengths)[:, None]
    return causal[None] & valid[:, None, :]
"""),
    r"off.by.one|j < lengths|<=|≤|one (key|token) too many|strict|lengths\[b\]",
)
W(
    G,
    "padding on the query axis",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
    return causal[None] & valid[:, :, None]
"""),
    r"quer(y|ies)|keys?|axis|rows|columns|broadcast|\[:, None, :\]",
)
W(
    G,
    "padding on both axes",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
    return causal[None] & valid[:, :, None] & valid[:, None, :]
"""),
    r"quer(y|ies)|padding quer|rows|only (the )?keys|keys, not|both axes|axis",
)
W(
    G,
    "anti-causal (j >= i)",
    _pm("""    causal = np.triu(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
    return causal[None] & valid[:, None, :]
"""),
    r"causal|j <= i|j ≤ i|triu|tril|upper|lower|transpos|future|diagonal",
)
W(
    G,
    "| instead of &",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
    return causal[None] | valid[:, None, :]
"""),
    r"logical_and|both (conditions|masks)|combin|instead of &|\| instead|\bor\b instead|either (one|condition)|union",
)
W(
    G,
    "0/1 integers",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=int))
    valid = (np.arange(n)[None, :] < np.asarray(lengths)[:, None]).astype(int)
    return causal[None] * valid[:, None, :]
"""),
    r"bool|0/1|dtype|integers?|true/false",
)
W(
    G,
    "strictly causal (j < i)",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=bool), k=-1)
    valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
    return causal[None] & valid[:, None, :]
"""),
    r"diagonal|itself|j <= i|j ≤ i|strict|k=-1|own position",
)
W(
    G,
    "padding at the front",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] >= n - np.asarray(lengths)[:, None]
    return causal[None] & valid[:, None, :]
"""),
    r"(at the )?end|front|start|left|right|j < lengths|first tokens|real tokens",
)
W(
    G,
    "polarity inverted (True = blocked)",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
    return ~(causal[None] & valid[:, None, :])
"""),
    POLARITY,
)
W(
    G,
    "one (n, n) mask for the first sequence only",
    _pm("""    causal = np.tril(np.ones((n, n), dtype=bool))
    valid = np.arange(n) < lengths[0]
    return causal & valid[None, :]
"""),
    r"batch|shape|\(batch, n, n\)|every sequence|each sequence|first sequence",
)

R(
    G,
    "explicit triple loop",
    _pm("""    b = len(lengths)
    out = np.zeros((b, n, n), dtype=bool)
    for s in range(b):
        for i in range(n):
            for j in range(n):
                out[s, i, j] = (j <= i) and (j < lengths[s])
    return out
"""),
)
R(
    G,
    "index comparisons with broadcasting",
    _pm("""    i = np.arange(n)[None, :, None]
    j = np.arange(n)[None, None, :]
    L = np.asarray(lengths)[:, None, None]
    return (j <= i) & (j < L)
"""),
)
R(
    G,
    "using causal_mask",
    """
from mha_helpers import causal_mask

def padding_causal_mask(lengths, n):
    key_valid = np.arange(n) < np.asarray(lengths).reshape(-1, 1)
    return np.logical_and(causal_mask(n)[None, :, :], key_valid[:, None, :])
""",
)

G = "q07_key_padding_mask"


def _kp(body):
    return "def to_key_padding_mask(mask):\n" + body


W(
    G,
    "polarity not flipped",
    _kp("    return mask.any(axis=1)\n"),
    POLARITY + r"|true (for|=|means) (a )?padding",
)
W(
    G,
    "any over the keys (per query)",
    _kp("    return ~mask.any(axis=2)\n"),
    r"axis|quer(y|ies)|over the queries|cross",
)
W(
    G,
    "reads the diagonal",
    _kp("    return ~np.diagonal(mask, axis1=1, axis2=2)\n"),
    r"diagonal|no query|any query|every query|all queries|cross|n_q",
)
W(
    G,
    "first query row only",
    _kp("    return ~mask[:, 0, :]\n"),
    r"first (query|row)|no query|any query|every query|all queries|causal|row 0",
)
W(
    G,
    "all instead of any",
    _kp("    return ~mask.all(axis=1)\n"),
    r"\bany\b|no query|every query|causal|some quer|\.any",
)
W(
    G,
    "0/1 integers",
    _kp("    return (~mask.any(axis=1)).astype(int)\n"),
    r"bool|0/1|dtype|integers?|true/false",
)
W(
    G,
    "keeps the query axis",
    _kp("    return ~mask.any(axis=1, keepdims=True)\n"),
    r"shape|\(batch, n_k\)|keepdims|axis|dimension",
)
W(G, "reduces over the batch", _kp("    return ~mask.any(axis=0)\n"), r"axis|batch|shape")
W(
    G,
    "transposed result",
    _kp("    return (~mask.any(axis=1)).T\n"),
    r"shape|\(batch, n_k\)|transpos|axis",
)
R(G, "count of queries is zero", _kp("    return mask.sum(axis=1) == 0\n"))
R(G, "all blocked", _kp("    return np.logical_not(mask).all(axis=1)\n"))
R(G, "max over queries, negated", _kp("    return ~np.asarray(mask, dtype=bool).max(axis=-2)\n"))

G = "q07_in_proj_weight"


def _ip(body):
    return "def in_proj_weight(w_q, w_k, w_v):\n" + body


W(
    G,
    "no transpose",
    _ip("    return np.concatenate([w_q, w_k, w_v], axis=0)\n"),
    r"transpos|\.T\b|x @ weight\.T|nn\.linear|weight\.t",
)
W(
    G,
    "vstack then transpose (wrong shape)",
    _ip("    return np.vstack([w_q, w_k, w_v]).T\n"),
    SHAPE + r"|\(3 \* d_model, d_model\)|transpos",
)
W(
    G,
    "blocks in K, Q, V order",
    _ip("    return np.concatenate([w_k.T, w_q.T, w_v.T], axis=0)\n"),
    r"order|query block (on )?top|q, k, v|swap|first block",
)
W(
    G,
    "blocks in Q, V, K order",
    _ip("    return np.concatenate([w_q.T, w_v.T, w_k.T], axis=0)\n"),
    r"order|key block|q, k, v|swap|then the key",
)
W(
    G,
    "hstack of transposes",
    _ip("    return np.hstack([w_q.T, w_k.T, w_v.T])\n"),
    SHAPE + r"|\(3 \* d_model, d_model\)|rows|stack them as rows|hstack|vstack",
)
W(
    G,
    "np.stack (3, d, d)",
    _ip("    return np.stack([w_q.T, w_k.T, w_v.T])\n"),
    SHAPE + r"|\(3 \* d_model, d_model\)|stack|concatenate",
)
W(
    G,
    "only w_q transposed",
    _ip("    return np.concatenate([w_q.T, w_k, w_v], axis=0)\n"),
    r"transpos|each block|every block|key block|value block|\.T\b",
)
W(
    G,
    "bare reshape of side-by-side weights",
    _ip("""    d = w_q.shape[0]
    return np.concatenate([w_q, w_k, w_v], axis=1).reshape(3 * d, d)
"""),
    r"reshape|transpos|\.T\b|contents|blocks?",
)
W(
    G,
    "returns a list of blocks",
    _ip("    return [w_q.T, w_k.T, w_v.T]\n"),
    r"list|array|one matrix|single matrix|concatenat",
)
W(
    G,
    "calls pytorch_state_dict",
    """
from mha_helpers import pytorch_state_dict

def in_proj_weight(w_q, w_k, w_v):
    d = w_q.shape[0]
    return np.asarray(pytorch_state_dict(w_q, w_k, w_v, np.eye(d))["in_proj_weight"])
""",
    COURSE_HELPER + r"|pytorch_state_dict",
)

R(G, "hstack then transpose", _ip("    return np.hstack([w_q, w_k, w_v]).T.copy()\n"))
R(G, "vstack of transposes", _ip("    return np.vstack((w_q.T, w_k.T, w_v.T))\n"))
R(
    G,
    "fill an empty matrix",
    _ip("""    d = w_q.shape[0]
    out = np.empty((3 * d, d))
    for i, w in enumerate((w_q, w_k, w_v)):
        out[i * d:(i + 1) * d] = np.transpose(w)
    return out
"""),
)

G = "q07_pytorch_call"
W(
    G,
    "a: the course's polarity",
    'pytorch_call = "a"\n',
    r"polarity|opposite|true (= |means )(may not|blocked)|invert|~|negat",
)
W(
    G,
    "c: only the causal mask inverted",
    'pytorch_call = "c"\n',
    r"key_padding_mask|padding|polarity|both|~key_valid|invert",
)
W(
    G,
    "d: transposes a batch_first input",
    'pytorch_call = "d"\n',
    r"batch_first|transpos|\(batch, n, d_model\)|sequence first",
)
W(G, "two letters", 'pytorch_call = "b or d"\n', LETTER_FORM)
W(G, "option number", "pytorch_call = 2\n", LETTER_FORM)
W(
    G,
    "the call itself",
    'pytorch_call = "layer(x, x, x, attn_mask=~causal, key_padding_mask=~key_valid)"\n',
    LETTER_FORM,
)

R(G, "capital B", 'pytorch_call = "B"\n')
R(G, "b with spaces", 'pytorch_call = "  b"\n')

# ------------------------------------------------------------------------------------------
# Exercise 08 · Attention at scale
# ------------------------------------------------------------------------------------------
G = "q08_online_update"


def _ou(body):
    return "def online_update(m, ell, acc, scores, v_block):\n" + body


W(
    G,
    "never rescales the old sums",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - m_new[:, None])
    return m_new, ell + p.sum(axis=1), acc + p @ v_block
"""),
    r"rescal|exp\(m - m_new\)|old sums|correction|both old",
)
W(
    G,
    "rescales ell but not acc",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(axis=1), acc + p @ v_block
"""),
    r"\bacc\b|rescal|both|accumulator",
)
W(
    G,
    "rescales acc but not ell",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, ell + p.sum(axis=1), c[:, None] * acc + p @ v_block
"""),
    r"\bell\b|ℓ|rescal|both|sum of exp|denominator",
)
W(
    G,
    "rescales acc twice",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)[:, None]
    p = np.exp(scores - m_new[:, None])
    return m_new, np.exp(m - m_new) * ell + p.sum(axis=1), c * (c * acc) + p @ v_block
"""),
    r"twice|double|once|squared|rescal",
)
W(
    G,
    "block max as the running max",
    _ou("""    m_new = scores.max(axis=1)
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(axis=1), c[:, None] * acc + p @ v_block
"""),
    r"running max|np\.maximum|max of (m|both)|block'?s? (own )?max|largest score seen|previous max|old max",
)
W(
    G,
    "correction exp(m_new - m) inverted",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(np.where(np.isinf(m), -np.inf, m_new - m))
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(axis=1), c[:, None] * acc + p @ v_block
"""),
    r"invert|sign|exp\(m - m_new\)|m_new - m|the other way|upside|revers",
)
W(
    G,
    "block terms relative to the old max",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    base = np.where(np.isinf(m), m_new, m)
    p = np.exp(scores - base[:, None])
    return m_new, c * ell + p.sum(axis=1), c[:, None] * acc + p @ v_block
"""),
    r"exp\(scores? - m_new\)|block'?s? (terms|exponentials?) (with|relative to|against)|new max(imum)? for the block|old max(imum)?|scores - m\b",
)
W(
    G,
    "divides acc by ell",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    ell_new = c * ell + p.sum(axis=1)
    return m_new, ell_new, (c[:, None] * acc + p @ v_block) / ell_new[:, None]
"""),
    r"divid|not divided|normali[sz]|by ell|/ ?ell|ℓ",
)
W(
    G,
    "max over the wrong axis",
    _ou("""    m_new = np.maximum(m, scores.max(axis=0).max())
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(axis=1), c[:, None] * acc + p @ v_block
"""),
    r"axis|each row|per row|row'?s? max|global|whole block|all rows",
)
W(
    G,
    "updates in place",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    ell *= c
    ell += p.sum(axis=1)
    acc *= c[:, None]
    acc += p @ v_block
    return m_new, ell, acc
"""),
    MUTATES,
)
W(
    G,
    "returns (m_new, acc_new, ell_new)",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c[:, None] * acc + p @ v_block, c * ell + p.sum(axis=1)
"""),
    RETURN_ORDER,
)
W(
    G,
    "m_new keeps a column axis",
    _ou("""    m_new = np.maximum(m[:, None], scores.max(axis=1, keepdims=True))
    c = np.exp(m[:, None] - m_new)
    p = np.exp(scores - m_new)
    return m_new, (c * ell[:, None] + p.sum(axis=1, keepdims=True)), c * acc + p @ v_block
"""),
    SHAPE + r"|\(n_q,\)|keepdims",
)
W(
    G,
    "exp without the max (unstable)",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores)
    scale_old = np.exp(m - m_new)
    return m_new, scale_old * ell + p.sum(axis=1) * np.exp(-m_new), scale_old[:, None] * acc + (p @ v_block) * np.exp(-m_new)[:, None]
"""),
    r"overflow|infinite|nan|large scores|stab|800|subtract the max",
)
W(
    G,
    "block terms summed over the whole block",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(), c[:, None] * acc + p @ v_block
"""),
    r"axis|\bell\b|ℓ|sum (over|along)|row sums?|each row",
)
W(
    G,
    "calls online_softmax_update",
    """
from mha_helpers.tiling import online_softmax_update

def online_update(m, ell, acc, scores, v_block):
    return online_softmax_update(m, ell, acc, scores, v_block)
""",
    COURSE_HELPER + r"|online_softmax_update",
)

R(
    G,
    "logaddexp-free, with np.fmax and explicit broadcasting",
    _ou("""    m = np.asarray(m, dtype=float)
    m_new = np.fmax(m, np.max(scores, axis=-1))
    alpha = np.exp(m - m_new)
    p = np.exp(scores - m_new.reshape(-1, 1))
    ell_new = alpha * ell + np.sum(p, axis=-1)
    acc_new = alpha.reshape(-1, 1) * acc + p @ v_block
    return (m_new, ell_new, acc_new)
"""),
)
R(
    G,
    "row-by-row loop",
    _ou("""    n_q = len(m)
    m_new = np.empty(n_q)
    ell_new = np.empty(n_q)
    acc_new = np.empty_like(acc, dtype=float)
    for i in range(n_q):
        m_new[i] = max(m[i], scores[i].max())
        a = np.exp(m[i] - m_new[i])
        p = np.exp(scores[i] - m_new[i])
        ell_new[i] = a * ell[i] + p.sum()
        acc_new[i] = a * acc[i] + p @ v_block
    return m_new, ell_new, acc_new
"""),
)
R(
    G,
    "returns a list",
    _ou("""    m_new = np.maximum(m, scores.max(axis=1))
    r = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return [m_new, r * ell + p.sum(axis=1), r[:, None] * acc + p @ v_block]
"""),
)

G = "q08_tiled"
OU = """
def online_update(m, ell, acc, scores, v_block):
    m_new = np.maximum(m, scores.max(axis=1))
    c = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, c * ell + p.sum(axis=1), c[:, None] * acc + p @ v_block
"""


def _tl(
    loop="range(0, n_k, block_size)",
    stop="start + block_size",
    scale="np.sqrt(q.shape[1])",
    ret="acc / ell[:, None]",
    init_m="np.full(n_q, -np.inf)",
    init_ell="np.zeros(n_q)",
    extra="",
):
    return (
        OU
        + f"""
def tiled(q, k, v, block_size):
    n_q, n_k = len(q), len(k)
    m, ell, acc = {init_m}, {init_ell}, np.zeros((n_q, v.shape[1]))
    for start in {loop}:
        stop = {stop}{extra}
        s = q @ k[start:stop].T / {scale}
        m, ell, acc = online_update(m, ell, acc, s, v[start:stop])
    return {ret}
"""
    )


W(
    G,
    "builds the full score matrix for a global max",
    OU
    + """
def tiled(q, k, v, block_size):
    n_q, n_k = len(q), len(k)
    full = q @ k.T / np.sqrt(q.shape[1])
    m, ell, acc = np.full(n_q, full.max(axis=1)), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, n_k, block_size):
        s = full[:, start:start + block_size]
        m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size])
    return acc / ell[:, None]
""",
    r"full|whole|score matrix|\(n_q, n_k\)|n_q × n_k|n_q x n_k|memory|never build|array size",
)
W(
    G,
    "drops the last partial block",
    _tl(loop="range(0, n_k - block_size + 1, block_size)"),
    r"last block|partial|shorter|multiple of block_size|remaining keys|leftover|not a multiple",
)
W(
    G,
    "overlapping blocks",
    _tl(loop="range(0, n_k, max(block_size - 1, 1))"),
    r"overlap|twice|counted twice|stride|step|block edges|boundar",
)
W(
    G,
    "block one key short",
    _tl(stop="start + block_size - 1", extra="\n        stop = max(stop, start + 1)"),
    r"off.by.one|skip|missing keys?|block edges|boundar|stop|end of (the|each) block|short",
)
W(G, "no scale", _tl(scale="1.0"), NO_SCALE)
W(
    G,
    "scale by sqrt(d_v)",
    _tl(scale="np.sqrt(v.shape[1])"),
    r"d_v|d_k|value width|width of (a )?(value|query)|v\.shape|q\.shape",
)
W(
    G,
    "returns acc, not divided by ell",
    _tl(ret="acc"),
    r"divid|/ ?ell|normali[sz]|by ell|ℓ|sum to 1",
)
W(
    G,
    "running max not carried",
    OU
    + """
def tiled(q, k, v, block_size):
    n_q, n_k = len(q), len(k)
    ell, acc = np.zeros(n_q), np.zeros((n_q, v.shape[1]))
    for start in range(0, n_k, block_size):
        m = np.full(n_q, -np.inf)
        s = q @ k[start:start + block_size].T / np.sqrt(q.shape[1])
        m, ell, acc = online_update(m, ell, acc, s, v[start:start + block_size])
    return acc / ell[:, None]
""",
    r"carr|running max|reset|m\b.*each block|previous (block|max)|across blocks",
)
W(
    G,
    "discards the new running max",
    _tl().replace("m, ell, acc = online_update(", "_, ell, acc = online_update("),
    r"running max|carr|m_new|update m|across blocks|previous (block|max)|only the last block",
)
W(
    G,
    "m starts at 0: underflows for very negative scores",
    _tl(init_m="np.zeros(n_q)"),
    r"-\s*inf|initial|start|m = 0|underflow|very negative|empty state|minus infinity",
)
W(
    G,
    "skips the first key",
    _tl(loop="range(1, n_k, block_size)"),
    r"first key|first block|start|range\(0|off.by.one|skip|missing",
)
W(
    G,
    "calls tiled_attention",
    """
from mha_helpers.tiling import tiled_attention

def tiled(q, k, v, block_size):
    return tiled_attention(q, k, v, block_size=block_size)
""",
    COURSE_HELPER + r"|tiled_attention",
)
W(
    G,
    "values always from the first block",
    _tl().replace("v[start:stop]", "v[:s.shape[1]]"),
    r"v_block|v\[|values? (of|from) (the|each|this) block|block'?s? values|wrong values? block",
)
R(
    G,
    "while loop with min for the last block",
    OU
    + """
def tiled(q, k, v, block_size):
    n_q, n_k = q.shape[0], k.shape[0]
    m = np.full(n_q, -np.inf)
    ell = np.zeros(n_q)
    acc = np.zeros((n_q, v.shape[1]))
    start = 0
    while start < n_k:
        stop = min(start + block_size, n_k)
        m, ell, acc = online_update(m, ell, acc, (q @ k[start:stop].T) * (1 / np.sqrt(q.shape[1])), v[start:stop])
        start = stop
    return acc / ell[:, None]
""",
)
R(
    G,
    "queries pre-scaled, np.array_split blocks",
    OU
    + """
def tiled(q, k, v, block_size):
    qs = q / np.sqrt(q.shape[-1])
    n_blocks = -(-len(k) // block_size)
    m, ell, acc = np.full(len(q), -np.inf), np.zeros(len(q)), np.zeros((len(q), v.shape[1]))
    for i in range(n_blocks):
        kb = k[i * block_size:(i + 1) * block_size]
        vb = v[i * block_size:(i + 1) * block_size]
        m, ell, acc = online_update(m, ell, acc, qs @ kb.T, vb)
    return acc / ell[:, None]
""",
)
R(
    G,
    "inline update, no helper",
    """
def tiled(q, k, v, block_size):
    scale = 1.0 / np.sqrt(k.shape[1])
    m = np.full(len(q), -np.inf)
    ell = np.zeros(len(q))
    acc = np.zeros((len(q), v.shape[1]))
    for s0 in range(0, len(k), block_size):
        s = (q @ k[s0:s0 + block_size].T) * scale
        m2 = np.maximum(m, s.max(1))
        a = np.exp(m - m2)
        p = np.exp(s - m2[:, None])
        ell = a * ell + p.sum(1)
        acc = a[:, None] * acc + p @ v[s0:s0 + block_size]
        m = m2
    return acc / ell[:, None]
""",
)

G = "q08_mla_cache"
W(
    G,
    "forgets the bytes",
    "mla_bytes_per_token = 60 * (512 + 64)\n",
    r"fp16|2 bytes|bytes per number|times 2|numbers, not bytes|count(ed)? numbers",
)
W(
    G,
    "forgets the RoPE key",
    "mla_bytes_per_token = 60 * 512 * 2\n",
    r"rope|d_h\^?r|64 numbers|decoupled",
)
W(G, "one layer only", "mla_bytes_per_token = (512 + 64) * 2\n", r"layers?")
W(
    G,
    "counts the latent for K and V separately",
    "mla_bytes_per_token = 2 * 60 * (512 + 64) * 2\n",
    r"k and v|one latent|shared (by|for)|twice|factor (of )?2|counted once|both k and v",
)
W(
    G,
    "multi-head cache instead",
    "mla_bytes_per_token = 2 * 60 * 128 * 128 * 2\n",
    r"latent|d_c|mla|heads|512|multi-head",
)
W(G, "float", "mla_bytes_per_token = 60 * (512 + 64) * 2.0\n", WHOLE)
W(
    G,
    "RoPE key per head",
    "mla_bytes_per_token = 60 * (512 + 128 * 64) * 2\n",
    r"rope|per head|shared|one rope key|decoupled",
)
W(G, "in bits", "mla_bytes_per_token = 60 * (512 + 64) * 16\n", r"bits|bytes, not bits|8 bits")
W(G, "in KiB", "mla_bytes_per_token = 60 * (512 + 64) * 2 // 1024\n", r"kib|bytes|1024|unit")

R(
    G,
    "named quantities",
    "layers, d_c, d_rope = 60, 512, 64\nmla_bytes_per_token = layers * (d_c + d_rope) * 2\n",
)
R(G, "int() of a float product", "mla_bytes_per_token = int(60 * 576 * 2.0)\n")

G = "q08_decode_bound"
W(
    G,
    "forgets the cache",
    "decode_ms = 13_214_687_232 / 3.35e12 * 1000\n",
    r"cache|kv|keys and values",
)
W(
    G,
    "in seconds",
    "decode_ms = (13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12\n",
    r"millisecond|\bms\b|seconds|1000|unit",
)
W(
    G,
    "cache without the factor 2 for K and V",
    "decode_ms = (13_214_687_232 + 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1e3\n",
    r"k and v|keys and values|factor (of )?2|both|twice",
)
W(
    G,
    "cache in fp32",
    "decode_ms = (13_214_687_232 + 2 * 32 * 32 * 128 * 4 * 4096) / 3.35e12 * 1e3\n",
    r"fp16|2 bytes|bytes per|fp32|float32",
)
W(G, "2 significant figures", "decode_ms = 4.6\n", r"significant|precision|digits|round")
W(G, "truncated, not rounded", "decode_ms = 4.58\n", r"significant|precision|digits|round|truncat")
W(
    G,
    "in microseconds",
    "decode_ms = (13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) / 3.35e12 * 1e6\n",
    r"millisecond|\bms\b|micro|µs|1000|unit",
)
W(G, "as text with the unit", 'decode_ms = "4.59 ms"\n', r"string|text|number|quot|float|unit")
W(
    G,
    "bandwidth taken as bits per second",
    "decode_ms = (13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) * 8 / 3.35e12 * 1e3\n",
    r"bits|bytes per second|factor (of )?8|bandwidth",
)
W(
    G,
    "multiplies by the bandwidth",
    "decode_ms = (13_214_687_232 + 2 * 32 * 32 * 128 * 2 * 4096) * 3.35e12 / 1e3 / 1e27\n",
    r"divid|bandwidth|bytes / bandwidth|bytes read|time\s*>=|invert",
)

R(G, "4 significant figures", "decode_ms = 4.586\n")
R(G, "3 significant figures", "decode_ms = 4.59\n")
R(
    G,
    "computed in full",
    """
weights = 13_214_687_232
cache = 2 * 32 * 32 * 128 * 2 * 4096
decode_ms = (weights + cache) / 3.35e12 * 1000
""",
)
R(G, "round() to 3 decimals", "decode_ms = round((13214687232 + 2147483648) / 3.35e9, 3)\n")
R(G, "numpy float", "decode_ms = np.float64(15_362_170_880) / np.float64(3.35e12) * 1e3\n")
