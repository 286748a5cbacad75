"""The graded questions of exercise 07 (multi-head attention at work).

For every question: the reference answer passes on the public cases and on fresh cases (the
instructor's grader draws new ones), each classic mistake fails *and* gets its own targeted hint,
the mistakes differ from each other on the public cases, and the reference agrees with the
course's implementation (and, for the PyTorch questions, with PyTorch itself where installed).

The checks every bank gets (references on fresh cases, mistakes failing and told apart, each
mistake's own hint from the bank and from the released data) are in tests/test_banks.py and
tests/test_selfcheck.py; this file keeps what is particular to these exercises.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_attention import _torch_or_skip

from mha_helpers import (
    causal_mask,
    multi_head_attention,
    pytorch_state_dict,
    to_pytorch_attn_mask,
    to_pytorch_key_padding_mask,
)
from mha_helpers.grading import get_question, questions_for
from mha_helpers.grading.selfcheck.check import evaluate

ASSIGNMENT = "07_attention_at_work"
QUESTIONS = [q for q in questions_for(ASSIGNMENT) if q.kind != "manual"]
SEEDS = [None, 1, 2, 3, 17, 123]


@pytest.mark.parametrize(
    "gid, answer",
    [
        (
            "q07_in_proj_weight",
            lambda w_q, w_k, w_v: pytorch_state_dict(w_q, w_k, w_v, w_q)["in_proj_weight"],
        ),
        (
            "q07_key_padding_mask",
            lambda mask: to_pytorch_key_padding_mask(np.asarray(mask).any(axis=-2)),
        ),
    ],
)
def test_an_answer_that_calls_the_conversion_helper_scores_nothing(gid, answer):
    r = evaluate(get_question(gid), answer)
    assert r["points"] == 0 and r["status"] != "passed"
    assert "course's own" in r["message"]


def test_stubs_are_not_attempted():
    def stub(*args):
        raise NotImplementedError("write me")

    for q in QUESTIONS:
        assert evaluate(q, stub if q.kind == "function" else None)["status"] == "not-attempted"


def test_other_forms_of_right_answers_pass():
    assert evaluate(get_question("q07_cross_shape"), (2, 4, 5, 7))["status"] == "passed"
    assert evaluate(get_question("q07_cross_shape"), np.array([2, 4, 5, 7]))["status"] == "passed"
    assert evaluate(get_question("q07_pytorch_call"), " B ")["status"] == "passed"

    def with_loops(lengths, n):  # an answer written differently, entry by entry
        out = np.zeros((len(lengths), n, n), dtype=bool)
        for b, length in enumerate(lengths):
            for i in range(n):
                for j in range(min(i + 1, length)):
                    out[b, i, j] = True
        return out

    assert evaluate(get_question("q07_padding_causal_mask"), with_loops)["status"] == "passed"
    last_row = lambda mask: ~np.asarray(mask)[:, -1, :]  # noqa: E731 - right for these masks too
    assert evaluate(get_question("q07_key_padding_mask"), last_row)["status"] == "passed"
    stacked_then_transposed = lambda w_q, w_k, w_v: np.hstack([w_q, w_k, w_v]).T  # noqa: E731
    assert (
        evaluate(get_question("q07_in_proj_weight"), stacked_then_transposed)["status"] == "passed"
    )


# --- the references agree with the course ----------------------------------------------------


def test_cross_shape_is_what_multi_head_attention_returns():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 8))
    context = rng.normal(size=(2, 7, 8))
    w = [rng.normal(size=(8, 8)) for _ in range(4)]
    _, weights = multi_head_attention(x, *w, num_heads=4, context=context, return_weights=True)
    assert list(weights.shape) == get_question("q07_cross_shape").expected


@pytest.mark.parametrize("seed", SEEDS[1:])
def test_padding_causal_reference_is_the_lessons_mask_and_works(seed):
    q = get_question("q07_padding_causal_mask")
    rng = np.random.default_rng(seed)
    for lengths, n in q.cases(rng):
        mask = q.reference(lengths, n)
        key_valid = np.arange(n) < np.asarray(lengths)[:, None]
        np.testing.assert_array_equal(mask, causal_mask(n)[None] & key_valid[:, None, :])
        assert mask.dtype == bool and mask.shape == (len(lengths), n, n)
        # With this mask, the padded batch computes each sequence as if it were alone.
        x = rng.normal(size=(len(lengths), n, 6))
        w = [rng.normal(size=(6, 6)) for _ in range(4)]
        y = multi_head_attention(x, *w, num_heads=2, mask=mask)
        for b, length in enumerate(lengths):
            alone = multi_head_attention(x[b, :length], *w, num_heads=2, mask=causal_mask(length))
            np.testing.assert_allclose(y[b, :length], alone, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS[1:])
def test_key_padding_reference_matches_the_helper(seed):
    q = get_question("q07_key_padding_mask")
    for (mask,) in q.cases(np.random.default_rng(seed)):
        key_valid = mask.any(axis=-2)  # (batch, n_k)
        np.testing.assert_array_equal(q.reference(mask), to_pytorch_key_padding_mask(key_valid))
        assert q.reference(mask).shape == (mask.shape[0], mask.shape[2])


@pytest.mark.parametrize("seed", SEEDS[1:])
def test_in_proj_reference_matches_the_helper(seed):
    q = get_question("q07_in_proj_weight")
    for w_q, w_k, w_v in q.cases(np.random.default_rng(seed)):
        state = pytorch_state_dict(w_q, w_k, w_v, np.eye(len(w_q)))
        np.testing.assert_array_equal(q.reference(w_q, w_k, w_v), state["in_proj_weight"])


# --- the PyTorch answers, checked in PyTorch ------------------------------------------------


def test_in_proj_reference_loads_into_torch_and_reproduces_the_course():
    torch = _torch_or_skip()
    q = get_question("q07_in_proj_weight")
    rng = np.random.default_rng(4)
    d_model, h = 8, 2
    w_q, w_k, w_v, w_o = (
        rng.normal(scale=d_model**-0.5, size=(d_model, d_model)).astype(np.float32)
        for _ in range(4)
    )
    layer = torch.nn.MultiheadAttention(d_model, h, bias=False, batch_first=True).eval()
    layer.load_state_dict(
        {
            "in_proj_weight": torch.from_numpy(q.reference(w_q, w_k, w_v)),
            "out_proj.weight": torch.from_numpy(w_o.T.copy()),
        }
    )
    x = rng.normal(size=(2, 3, d_model)).astype(np.float32)
    with torch.no_grad():
        xt = torch.from_numpy(x)
        yt, _ = layer(xt, xt, xt)
    y = multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=h)
    np.testing.assert_allclose(yt.numpy(), y, rtol=1e-6, atol=1e-6)


def test_only_option_b_of_the_multiple_choice_computes_the_course_layer():
    torch = _torch_or_skip()
    rng = np.random.default_rng(5)
    d_model, h, n = 8, 2, 4
    lengths = np.array([4, 2])
    w = [
        rng.normal(scale=d_model**-0.5, size=(d_model, d_model)).astype(np.float32)
        for _ in range(4)
    ]
    x = rng.normal(size=(2, n, d_model)).astype(np.float32)
    causal = causal_mask(n)
    key_valid = np.arange(n) < lengths[:, None]
    y = multi_head_attention(x, *w, num_heads=h, mask=causal[None] & key_valid[:, None, :])
    layer = torch.nn.MultiheadAttention(d_model, h, bias=False, batch_first=True).eval()
    layer.load_state_dict({k: torch.from_numpy(v) for k, v in pytorch_state_dict(*w).items()})
    t = torch.from_numpy
    xt, c, kv = t(x), t(causal), t(key_valid)
    xs = xt.transpose(0, 1)
    options = {
        "a": lambda: layer(xt, xt, xt, attn_mask=c, key_padding_mask=kv)[0],
        "b": lambda: layer(xt, xt, xt, attn_mask=~c, key_padding_mask=~kv)[0],
        "c": lambda: layer(xt, xt, xt, attn_mask=~c, key_padding_mask=kv)[0],
        "d": lambda: layer(xs, xs, xs, attn_mask=~c, key_padding_mask=~kv)[0],
    }
    agrees = {}
    for letter, call in options.items():
        try:
            with torch.no_grad():
                out = call().numpy()
        except (AssertionError, RuntimeError):  # option d: the padding mask no longer fits
            agrees[letter] = False
            continue
        agrees[letter] = out.shape == y.shape and bool(np.allclose(out, y, rtol=1e-5, atol=1e-5))
    assert agrees == {"a": False, "b": True, "c": False, "d": False}
    assert get_question("q07_pytorch_call").expected == "b"
    assert to_pytorch_attn_mask(causal).tolist() == (~causal).tolist()
