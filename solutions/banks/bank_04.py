"""Questions for exercise 04: what heads cost (``solutions/04_cost.ipynb``).

Lesson: ``notebooks/04_cost.ipynb``. Five questions, 12 points, 10 of them graded automatically:

* ``q04_params`` (3): parameters of a multi-head attention layer, with or without biases;
* ``q04_flops`` (3): forward FLOPs of a multi-head attention layer (multiply-add = 2 FLOPs);
* ``q04_changes_with_h`` (2): which of four quantities change when h doubles;
* ``q04_weight_entries`` (2): the attention weights one GPT-2 small layer stores at 1024 tokens;
* ``q04_explain`` (2): why measured time can grow with h, graded by hand.
"""

from __future__ import annotations

from mha_helpers.grading import Mistake, Question, register

ASSIGNMENT = "04_cost"

__all__ = ["ASSIGNMENT"]

# --- q04_params -------------------------------------------------------------------------------
# Multi-head attention only: grouped-query attention (fewer key/value heads) is lesson 05's, so
# exercise 04 does not use it (course issue 33).


def _params_reference(d_model, num_heads, bias):
    d_head = d_model // num_heads
    width = num_heads * d_head  # d_model when num_heads divides it, less otherwise
    weights = 3 * d_model * width + width * d_model
    biases = 3 * width + d_model
    return weights + (biases if bias else 0)


def _params_cases(rng):
    """With and without biases, heads that divide d_model and heads that do not (then
    h * d_head < d_model, which the question allows); the last two are drawn at random."""
    cases = [
        (8, 2, True),  # the lesson's layer: 288
        (768, 12, True),  # BERT-base / GPT-2 small
        (4096, 32, False),  # Llama 2 7B's attention shape, no biases
        (8, 2, False),  # the first case without biases: only the biases change
        # h does not divide d_model: h * d_head = 8 < d_model = 10, so W_Q and W_O are not
        # d_model x d_model
        (10, 4, True),
        (10, 4, False),
        (12, 5, True),
        # d_model / h = 2.75 and 3.6: rounding d_head to the nearest whole number (3 and 4)
        # differs from rounding it down (2 and 3), and so does rounding up; 10 / 4 = 2.5 and
        # 12 / 5 = 2.4 above round down with round() too, so they tell floor from ceil only
        (11, 4, True),
        (18, 5, False),
    ]
    for bias in (True, bool(rng.integers(0, 2))):
        h = int(rng.choice([4, 8, 16]))
        d_head = int(rng.choice([4, 8, 16]))
        cases.append((h * d_head, h, bias))
    # a fresh non-dividing shape whose d_model / h has a fraction above 1/2, so the hidden
    # cases, too, tell d_model // h from round(d_model / h) and from d_model / h
    h = int(rng.choice([3, 4, 5, 6, 7]))
    cases.append((h * int(rng.integers(2, 9)) + int(rng.integers(h // 2 + 1, h)), h, True))
    return cases


def _params_width(d_model, num_heads, bias, d_head):
    width = num_heads * d_head
    return 3 * d_model * width + width * d_model + ((3 * width + d_model) if bias else 0)


def _params_rounded(d_model, num_heads, bias):
    return _params_width(d_model, num_heads, bias, round(d_model / num_heads))


def _params_rounded_up(d_model, num_heads, bias):
    return _params_width(d_model, num_heads, bias, -(-d_model // num_heads))


def _params_no_biases(d_model, num_heads, bias):
    return _params_reference(d_model, num_heads, False)


def _params_no_w_o(d_model, num_heads, bias):
    width = num_heads * (d_model // num_heads)
    return 3 * d_model * width + (3 * width if bias else 0)


def _params_per_head_square(d_model, num_heads, bias):
    d_head = d_model // num_heads
    return 4 * num_heads * d_head**2 + (4 * num_heads * d_head if bias else 0)


def _params_kv_as_one(d_model, num_heads, bias):
    width = num_heads * (d_model // num_heads)
    return 2 * d_model * width + width * d_model + ((2 * width + d_model) if bias else 0)


def _params_bias_always(d_model, num_heads, bias):
    return _params_reference(d_model, num_heads, True)


def _params_four_d_biases(d_model, num_heads, bias):
    return _params_reference(d_model, num_heads, False) + (4 * d_model if bias else 0)


def _params_d_model_square(d_model, num_heads, bias):
    return 4 * d_model**2 + (4 * d_model if bias else 0)


def _params_traits(d_model, num_heads, bias):
    width = num_heads * (d_model // num_heads)
    terms = [f"term:weight matrix:{d_model * width}"]
    if bias:
        terms += [f"term:projection bias:{width}", f"term:output bias:{d_model}"]
    return (
        (["bias"] if bias else [])
        + (["h does not divide d_model"] if d_model % num_heads else [])
        + (["d_model / h rounds up"] if 2 * (d_model % num_heads) >= num_heads else [])
        + terms
    )


register(
    Question(
        grade_id="q04_params",
        assignment=ASSIGNMENT,
        points=3,
        kind="function",
        prompt="Implement count_params(d_model, num_heads, bias): the parameters of one "
        "multi-head attention layer with num_heads heads of width d_model // num_heads, with or "
        "without bias vectors.",
        reference=_params_reference,
        cases=_params_cases,
        mistakes=(
            Mistake(
                "no biases",
                _params_no_biases,
                "You left out the bias vectors. When bias is True, each of the four projections "
                "has one bias per output feature: h*d_head each for Q, K and V, and d_model for "
                "W_O.",
            ),
            Mistake(
                "no W_O",
                _params_no_w_o,
                "You counted Q, K and V but not the output projection W_O, (h*d_head, d_model), "
                "and its bias.",
            ),
            Mistake(
                "per-head square matrices",
                _params_per_head_square,
                "You gave each head its own d_head x d_head matrices. A head's projections map "
                "all d_model input features to its d_head outputs: its slice of W_Q is "
                "(d_model, d_head).",
            ),
            Mistake(
                "4 d biases",
                _params_four_d_biases,
                "Your weights are right, but the bias count 4*d_model holds only when the heads "
                "fill d_model. Q's, K's and V's biases have h*d_head entries each (one per output "
                "feature), W_O's has d_model.",
            ),
            Mistake(
                "K and V as one matrix",
                _params_kv_as_one,
                "You counted K and V as one matrix. They are two projections, W_K and W_V, each "
                "(d_model, h * d_head) with its own bias: count both.",
            ),
            Mistake(
                "biases when bias is False",
                _params_bias_always,
                "You counted the biases even when bias is False. Add them only when the bias "
                "argument is True.",
            ),
            Mistake(
                "d_head rounded",
                _params_rounded,
                "Right when num_heads divides d_model, and when d_model / num_heads rounds down "
                "anyway, but wrong when its fraction is 1/2 or more: you rounded d_head to the "
                "nearest whole number (round). The question's heads have width "
                "d_head = d_model // num_heads, rounded down: with d_model = 11 and 4 heads, "
                "d_head = 2, not 3.",
            ),
            Mistake(
                "d_head rounded up",
                _params_rounded_up,
                "Right when num_heads divides d_model, wrong whenever it does not: you rounded "
                "d_head up (math.ceil). The question's heads have width d_head = d_model // "
                "num_heads, rounded down, so h * d_head is at most d_model, never more.",
            ),
            Mistake(
                "d_model x d_model everywhere",
                _params_d_model_square,
                "Right when num_heads divides d_model, wrong when it does not: you sized every "
                "matrix d_model x d_model (or took d_head = d_model / num_heads, a fraction, "
                "which comes to the same). With d_head = d_model // num_heads the heads together "
                "are h * d_head wide, which is less than d_model here: W_Q, W_K and W_V are "
                "(d_model, h * d_head), W_O is (h * d_head, d_model).",
            ),
        ),
        hint="Weights: W_Q, W_K and W_V are (d_model, h*d_head) each, W_O is (h*d_head, "
        "d_model); biases: one per output feature of each (h*d_head for Q, K, V; d_model for "
        "W_O).",
        forbidden=("mha_helpers.cost.attention_params",),
        traits=_params_traits,
    )
)

# --- q04_flops --------------------------------------------------------------------------------


def _flops_width(d_model, num_heads):
    """h * d_head, the heads side by side: d_model when num_heads divides it, less otherwise."""
    return num_heads * (d_model // num_heads)


def _flops_reference(n, d_model, num_heads):
    w = _flops_width(d_model, num_heads)
    # Q, K, V: (n, d_model)(d_model, w); W_O: (n, w)(w, d_model); scores and weighted sum: h
    # products of n x d_head x n, that is n^2 w multiply-adds each
    return 8 * n * d_model * w + 4 * n**2 * w


def _flops_cases(rng):
    n = int(rng.integers(5, 40))
    return [
        (5, 8, 2),  # n != d_model / 2, so no two mistakes coincide
        (1024, 768, 12),  # GPT-2 small at full context
        (3, 8, 4),
        # h does not divide d_model: d_head = 10 // 4 = 2, the heads are 8 wide, not 10
        (6, 10, 4),
        (n, 64, int(rng.choice([2, 4, 8]))),
        (2 * n + 1, 12, 3),
        (n, 12, 5),  # d_head = 2, the heads 10 wide
        (5, 8, 1),  # the first case with one head: only h changes
    ]


def _flops_macs(n, d_model, num_heads):
    return _flops_reference(n, d_model, num_heads) // 2


def _flops_no_n_squared(n, d_model, num_heads):
    return 8 * n * d_model * _flops_width(d_model, num_heads)


def _flops_no_w_o(n, d_model, num_heads):
    w = _flops_width(d_model, num_heads)
    return 6 * n * d_model * w + 4 * n**2 * w


def _flops_no_weighted_sum(n, d_model, num_heads):
    w = _flops_width(d_model, num_heads)
    return 8 * n * d_model * w + 2 * n**2 * w


def _flops_one_head(n, d_model, num_heads):
    w = _flops_width(d_model, num_heads)
    return 8 * n * d_model * w + 4 * n**2 * (d_model // num_heads)


def _flops_projection_macs(n, d_model, num_heads):
    w = _flops_width(d_model, num_heads)
    return 4 * n * d_model * w + 4 * n**2 * w


def _flops_full_width_heads(n, d_model, num_heads):
    w = _flops_width(d_model, num_heads)
    return 8 * n * d_model * w + 4 * n**2 * d_model * num_heads


def _flops_heads_fill_d_model(n, d_model, num_heads):
    return 8 * n * d_model**2 + 4 * n**2 * d_model


def _flops_traits(n, d_model, num_heads):
    """The additive terms of the count, so a verdict can say which one an answer is off by."""
    w = _flops_width(d_model, num_heads)
    return (
        (["several heads"] if num_heads > 1 else [])
        + (["h does not divide d_model"] if w != d_model else [])
        + [
            f"term:projection:{2 * n * d_model * w}",
            f"term:attention product:{2 * n**2 * w}",
            f"term:softmax-size:{num_heads * n**2}",
        ]
    )


register(
    Question(
        grade_id="q04_flops",
        assignment=ASSIGNMENT,
        points=3,
        kind="function",
        prompt="Implement count_flops(n, d_model, num_heads): the forward FLOPs of one multi-head "
        "self-attention layer over n tokens (Q, K, V projections, scores, weighted sum, "
        "output projection; one multiply-add = 2 FLOPs; softmax not counted).",
        reference=_flops_reference,
        cases=_flops_cases,
        traits=_flops_traits,
        mistakes=(
            Mistake(
                "multiply-add as 1 FLOP",
                _flops_macs,
                "Your count is exactly half: you counted multiply-adds. A product (a x b)(b x c) "
                "is a*b*c multiply-adds, which is 2*a*b*c FLOPs (one multiply and one add).",
            ),
            Mistake(
                "no n^2 terms",
                _flops_no_n_squared,
                "You counted the four projections but not the attention itself: the scores "
                "Q K^T and the weighted sum of V cost 2 n^2 d_head per head each.",
            ),
            Mistake(
                "no W_O",
                _flops_no_w_o,
                "You left out the output projection, (n x d_model)(d_model x d_model).",
            ),
            Mistake(
                "no weighted sum",
                _flops_no_weighted_sum,
                "Your n^2 terms are half of what they should be. Either you counted the scores "
                "but not the weighted sum (weights (n x n) times V (n x d_head), in every head, "
                "costs as much as the scores), or you counted the multiply-adds of those two "
                "products as 1 FLOP each instead of 2.",
            ),
            Mistake(
                "one head's attention",
                _flops_one_head,
                "Your n^2 terms are those of one head: the scores and the weighted sum cost "
                "2 n^2 d_head each in EVERY head, so multiply by h.",
            ),
            Mistake(
                "projections as multiply-adds",
                _flops_projection_macs,
                "Your projection term is half the right one (4 n d_model^2 instead of "
                "8 n d_model^2 when h divides d_model; your n^2 terms are right). Two slips "
                "give exactly this: counting each projection as n d_model^2 multiply-adds "
                "instead of 2 n d_model^2 FLOPs, or counting only two of the four projections "
                "(for example Q and W_O, without K and V). There are four, Q, K, V and W_O, "
                "each 2 n d_model^2.",
            ),
            Mistake(
                "full-width heads",
                _flops_full_width_heads,
                "Your n^2 terms grow with h. Each head works in d_head = d_model / h dimensions, "
                "so h heads together cost 2 n^2 d_model for the scores, not h times that.",
            ),
            Mistake(
                "heads fill d_model",
                _flops_heads_fill_d_model,
                "Your count is right when num_heads divides d_model, not otherwise. Then "
                "d_head = d_model // num_heads rounds down and the heads together are only "
                "h * d_head wide: W_Q, W_K and W_V are (d_model, h * d_head), W_O is "
                "(h * d_head, d_model), and each head's products use d_head, so count with "
                "h * d_head where you used d_model.",
            ),
        ),
        hint="Add up the matrix products: three projections, scores and weighted sum in every head "
        "(each head has width d_head = d_model // h), and W_O; each (a x b)(b x c) product is 2abc FLOPs.",
        forbidden=("mha_helpers.cost.attention_flops",),
    )
)

# --- q04_changes_with_h -----------------------------------------------------------------------

register(
    Question(
        grade_id="q04_changes_with_h",
        assignment=ASSIGNMENT,
        points=2,
        kind="value",
        prompt="At fixed d_model and n, h doubles. Does each change: (parameters, matrix-product "
        "FLOPs, number of attention weights, d_head)? A tuple of four True/False.",
        expected=(False, False, True, True),
        mistakes=(
            Mistake(
                "weights fixed",
                (False, False, False, True),
                "Every head computes its own n x n matrix of attention weights: there are "
                "h * n^2 of them, so they double with h.",
            ),
            Mistake(
                "everything changes",
                (True, True, True, True),
                "Parameters and FLOPs do not depend on h: the heads are slices of the same four "
                "d_model x d_model matrices, and each head does 1/h of the work.",
            ),
            Mistake(
                "parameters change",
                (True, False, True, True),
                "The parameters do not depend on h: 4 d_model^2 + 4 d_model for any h.",
            ),
            Mistake(
                "FLOPs change",
                (False, True, True, True),
                "The matrix-product FLOPs do not depend on h: 8 n d^2 + 4 n^2 d for any h. What "
                "can change is the measured time, which is not the same thing.",
            ),
            Mistake(
                "nothing changes",
                (False, False, False, False),
                "d_head = d_model / h halves when h doubles, and every head has its own n x n "
                "matrix of attention weights, so there are h * n^2 of them.",
            ),
            Mistake(
                "only FLOPs and d_head",
                (False, True, False, True),
                "The matrix-product FLOPs do not depend on h (each head does 1/h of the work), "
                "but the number of attention weights does: h * n^2.",
            ),
            Mistake(
                "d_head fixed",
                (False, False, True, False),
                "d_head = d_model / h: doubling h halves each head's width.",
            ),
        ),
        hint="Use attention_params and attention_flops for two values of h, and remember that "
        "every head has its own n x n attention matrix.",
    )
)

# --- q04_weight_entries -----------------------------------------------------------------------

register(
    Question(
        grade_id="q04_weight_entries",
        assignment=ASSIGNMENT,
        points=2,
        kind="value",
        prompt="GPT-2 small (12 heads, d_model 768) processes one sequence of 1024 tokens. How many "
        "attention weights does one layer compute (all heads)? Count every entry of each head's "
        "n x n softmax output, the zeros the causal mask puts above the diagonal included.",
        expected=12 * 1024**2,
        mistakes=(
            Mistake(
                "one head",
                1024**2,
                "That is one head's n x n matrix. Each of the 12 heads has its own.",
            ),
            Mistake(
                "width instead of heads",
                768 * 1024**2,
                "You multiplied by d_model. The number of n x n matrices is the number of heads.",
            ),
            Mistake(
                "bytes",
                4 * 12 * 1024**2,
                "That looks like bytes in fp32. The question asks for the number of weights.",
            ),
            Mistake(
                "fp16 bytes",
                2 * 12 * 1024**2,
                "That looks like bytes in fp16 (2 per weight). The question asks for the number "
                "of weights, not their size in memory.",
            ),
            Mistake(
                "all 12 layers",
                12 * 12 * 1024**2,
                "That is all 12 layers of GPT-2 small. The question asks about one layer.",
            ),
            Mistake(
                "in millions",
                12 * 1024**2 / 1e6,
                "That is the count in millions, as the lesson's table prints it. Give the number "
                "itself (12 * 1024**2), not in millions.",
            ),
            Mistake(
                "in millions, rounded",
                12.6,
                "That is the count in millions, rounded, as the lesson's table prints it. Give "
                "the number itself (12 * 1024**2).",
            ),
            Mistake(
                "causal triangle",
                12 * 1024 * 1025 // 2,
                "That is 12 * 1024 * 1025 / 2: only the causal triangle, the n(n+1)/2 weights per "
                "head the mask leaves non-zero. The question counts the masked zeros too: the layer "
                "computes and stores the whole n x n matrix in every head, so count n * n per head.",
            ),
            Mistake(
                "masked zeros only",
                12 * 1024 * 1023 // 2,
                "That is 12 * 1024 * 1023 / 2: only the zeros the causal mask puts above the "
                "diagonal. The question asks for every weight, the zeros and the n(n+1)/2 allowed "
                "ones together: n * n per head.",
            ),
            Mistake(
                "one head's causal triangle",
                1024 * 1025 // 2,
                "That is one head's causal triangle, n(n+1)/2. Count every entry of the n x n "
                "matrix, masked zeros included, and every one of the 12 heads.",
            ),
            Mistake(
                "d_head matrices",
                64 * 1024**2,
                "You multiplied by d_head = 64. The number of n x n matrices is the number of "
                "heads, h = 12.",
            ),
            Mistake(
                "n times d_model",
                1024 * 768,
                "n x d_model is the size of the layer's input and output, not of its attention "
                "weights: each head compares every query with every key.",
            ),
        ),
        hint="Each head compares every one of the n queries with every one of the n keys.",
        extra={
            "answer_type": "int",  # a count
            # the count is heads x queries x keys: the judge enumerates each factor replaced by
            # another size of the question, so a listed mistake whose number such a swap also
            # gives (n x d_model = 12 x 1024 x d_head) names no cause
            "product": {"heads": 12, "queries": 1024, "keys": 1024},
            "sizes": {"h": 12, "n": 1024, "d_model": 768, "d_head": 64},
            "mistake_swaps": {
                "width instead of heads": ["heads->d_model"],
                "d_head matrices": ["heads->d_head"],
            },
        },
    )
)

# --- q04_explain (manual) ---------------------------------------------------------------------

register(
    Question(
        grade_id="q04_explain",
        assignment=ASSIGNMENT,
        points=2,
        kind="manual",
        prompt="The lesson measured multi_head_attention for h = 1 ... 128 at fixed d_model: the "
        "FLOP count is constant, but the time need not be. Give two reasons.",
        extra={
            "criteria": (
                "1 point per reason, 2 at most, such as: a fixed cost per head's matrix "
                "product (one call per head); thin products with little arithmetic per "
                "output, so memory traffic dominates; work the FLOP count leaves out (scaling, "
                "softmax, masking over h * n^2 weights) grows with h",
            )
        },
    )
)
