"""mha_helpers.pytorch against torch.nn.MultiheadAttention itself.

The conversion is right only if PyTorch, loaded with the converted state dict and given the
converted masks, computes what the course computes. So every torch test builds a real
``torch.nn.MultiheadAttention(d_model, h, batch_first=True)``, loads it, runs it, and compares
outputs and per-head weights with ``multi_head_attention`` (or, with biases, which the course's
layer does not have, with the same computation assembled from the course's pieces), in float32
to 1e-6. Where PyTorch is not installed these tests skip with a reason; under CI=true they fail
(``_torch_or_skip`` from test_attention.py).

The tests without torch check what does not need it: round trips, the errors for bad shapes,
the mask conversions' layout, and that neither the helpers nor lesson 07 import torch.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_attention import _torch_or_skip

from mha_helpers import (
    causal_mask,
    from_pytorch_state_dict,
    merge_heads,
    multi_head_attention,
    pytorch_state_dict,
    scaled_dot_product_attention,
    split_heads,
    to_pytorch_attn_mask,
    to_pytorch_key_padding_mask,
)

ROOT = Path(__file__).resolve().parents[1]
TOL = dict(rtol=1e-6, atol=1e-6)


def random_weights(rng, d_model, dtype=np.float32):
    scale = 1 / math.sqrt(d_model)
    return [rng.normal(scale=scale, size=(d_model, d_model)).astype(dtype) for _ in range(4)]


def random_biases(rng, d_model, dtype=np.float32):
    return [rng.normal(scale=0.5, size=d_model).astype(dtype) for _ in range(4)]


def course_with_biases(x, w, b, h, context=None, mask=None):
    """The course's layer with a bias after each projection, from the course's own pieces."""
    w_q, w_k, w_v, w_o = w
    b_q, b_k, b_v, b_o = b
    context = x if context is None else context
    q = split_heads(x @ w_q + b_q, h)  # (batch, h, n_q, d_head)
    k = split_heads(context @ w_k + b_k, h)  # (batch, h, n_k, d_head)
    v = split_heads(context @ w_v + b_v, h)  # (batch, h, n_k, d_head)
    mask = None if mask is None else (mask if mask.ndim == 2 else mask[:, None])  # one per head
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ w_o + b_o, weights  # (batch, n_q, d_model), (batch, h, n_q, n_k)


def torch_layer(torch, state, d_model, h):
    bias = "in_proj_bias" in state
    layer = torch.nn.MultiheadAttention(d_model, h, bias=bias, batch_first=True)
    layer.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    return layer.eval()


def run_torch(torch, layer, x, context=None, attn_mask=None, key_padding_mask=None):
    t = torch.from_numpy
    kv = t(x if context is None else context)
    with torch.no_grad():
        y, weights = layer(
            t(x),
            kv,
            kv,
            attn_mask=None if attn_mask is None else t(attn_mask),
            key_padding_mask=None if key_padding_mask is None else t(key_padding_mask),
            need_weights=True,
            average_attn_weights=False,
        )
    return y.numpy(), weights.numpy()


# --- the course's layer, loaded into PyTorch ---------------------------------------------------


@pytest.mark.parametrize("bias", [False, True])
def test_state_dict_has_the_keys_shapes_and_dtype_of_torch(bias):
    torch = _torch_or_skip()
    rng = np.random.default_rng(0)
    d_model, h = 12, 3
    w = random_weights(rng, d_model)
    state = pytorch_state_dict(*w, **({"b_v": np.ones(d_model, np.float32)} if bias else {}))
    reference = torch.nn.MultiheadAttention(d_model, h, bias=bias, batch_first=True).state_dict()
    assert list(state) == list(reference)
    for key, value in reference.items():
        assert state[key].shape == tuple(value.shape), key
        assert state[key].dtype == np.float32, key


MASKS = ["none", "shared", "per_sequence", "padding", "shared_and_padding"]


def _case(rng, mask_kind, cross, h, batch=3, n=5, n_k=7, d_model=16):
    """x, context, the course's mask, and PyTorch's (attn_mask, key_padding_mask) for it."""
    n_k = n_k if cross else n
    x = rng.normal(size=(batch, n, d_model)).astype(np.float32)
    context = rng.normal(size=(batch, n_k, d_model)).astype(np.float32) if cross else None
    lengths = np.array([n_k, 2, n_k - 1])[:batch]  # sequence 1 has 2 real keys, the rest padding
    key_valid = np.arange(n_k) < lengths[:, None]  # (batch, n_k), True = real token
    if cross:  # a mask shared by the batch; every row keeps key 0 or 1, real in every sequence
        shared = rng.random((n, n_k)) < 0.6
        shared[np.arange(n), rng.integers(0, 2, size=n)] = True
    else:
        shared = causal_mask(n)
    per_sequence = rng.random((batch, n, n_k)) < 0.5
    per_sequence[:, np.arange(n), rng.integers(0, n_k, size=n)] = True
    if mask_kind == "none":
        return x, context, None, None, None
    if mask_kind == "shared":  # causal for self-attention
        return x, context, shared, to_pytorch_attn_mask(shared), None
    if mask_kind == "per_sequence":
        return x, context, per_sequence, to_pytorch_attn_mask(per_sequence, num_heads=h), None
    padding = np.broadcast_to(key_valid[:, None, :], (batch, n, n_k))  # (batch, n_q, n_k)
    if mask_kind == "padding":
        return x, context, padding, None, to_pytorch_key_padding_mask(key_valid)
    combined = shared[None] & padding  # (batch, n_q, n_k)
    return (
        x,
        context,
        combined,
        to_pytorch_attn_mask(shared),
        to_pytorch_key_padding_mask(key_valid),
    )


@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
@pytest.mark.parametrize("mask_kind", MASKS)
def test_torch_loaded_with_the_state_dict_computes_the_course_layer(mask_kind, cross, bias):
    torch = _torch_or_skip()
    rng = np.random.default_rng(MASKS.index(mask_kind) + 10 * cross + 100 * bias)
    d_model, h = 16, 4
    x, context, mask, attn_mask, key_padding_mask = _case(rng, mask_kind, cross, h, d_model=d_model)
    w = random_weights(rng, d_model)
    if bias:
        b = random_biases(rng, d_model)
        state = pytorch_state_dict(*w, b_q=b[0], b_k=b[1], b_v=b[2], b_o=b[3])
        y, weights = course_with_biases(x, w, b, h, context=context, mask=mask)
    else:
        state = pytorch_state_dict(*w)
        y, weights = multi_head_attention(
            x, *w, num_heads=h, context=context, mask=mask, return_weights=True
        )
    yt, wt = run_torch(
        torch, torch_layer(torch, state, d_model, h), x, context, attn_mask, key_padding_mask
    )
    assert y.dtype == yt.dtype == np.float32
    np.testing.assert_allclose(yt, y, **TOL)
    np.testing.assert_allclose(wt, weights, **TOL)  # (batch, h, n_q, n_k), per head
    if mask is not None:
        assert np.all(
            wt[np.broadcast_to((~mask)[:, None] if mask.ndim == 3 else ~mask, wt.shape)] == 0
        )


def test_only_some_biases_given_are_the_others_zero():
    torch = _torch_or_skip()
    rng = np.random.default_rng(3)
    d_model, h = 8, 2
    x = rng.normal(size=(2, 4, d_model)).astype(np.float32)
    w = random_weights(rng, d_model)
    b_k = rng.normal(size=d_model).astype(np.float32)
    b_o = rng.normal(size=d_model).astype(np.float32)
    zero = np.zeros(d_model, np.float32)
    y, weights = course_with_biases(x, w, (zero, b_k, zero, b_o), h)
    yt, wt = run_torch(
        torch, torch_layer(torch, pytorch_state_dict(*w, b_k=b_k, b_o=b_o), d_model, h), x
    )
    np.testing.assert_allclose(yt, y, **TOL)
    np.testing.assert_allclose(wt, weights, **TOL)
    # A key bias adds the same amount to every score of a query, so the weights do not move:
    np.testing.assert_allclose(
        wt, multi_head_attention(x, *w, num_heads=h, return_weights=True)[1], **TOL
    )


def test_unbatched_input_and_averaged_weights():
    torch = _torch_or_skip()
    rng = np.random.default_rng(4)
    d_model, h, n = 8, 2, 3
    x = rng.normal(size=(n, d_model)).astype(np.float32)
    w = random_weights(rng, d_model)
    layer = torch_layer(torch, pytorch_state_dict(*w), d_model, h)
    y, weights = multi_head_attention(x, *w, num_heads=h, mask=causal_mask(n), return_weights=True)
    with torch.no_grad():
        xt = torch.from_numpy(x)
        yt, averaged = layer(
            xt, xt, xt, attn_mask=torch.from_numpy(to_pytorch_attn_mask(causal_mask(n)))
        )
    np.testing.assert_allclose(yt.numpy(), y, **TOL)
    # need_weights=True and average_attn_weights=True (the defaults): the mean over heads.
    np.testing.assert_allclose(averaged.numpy(), weights.mean(axis=0), **TOL)
    assert averaged.shape == (n, n) and weights.shape == (h, n, n)


def test_the_course_mask_without_inversion_is_a_different_layer():
    """The classic mistake: passing the course's mask (True = may attend) to PyTorch as it is."""
    torch = _torch_or_skip()
    rng = np.random.default_rng(5)
    d_model, h, n = 8, 2, 4
    x = rng.normal(size=(1, n, d_model)).astype(np.float32)
    w = random_weights(rng, d_model)
    allowed = np.ones((n, n), bool)
    allowed[:, 0] = False  # nobody may attend to token 0
    y = multi_head_attention(x, *w, num_heads=h, mask=allowed)
    layer = torch_layer(torch, pytorch_state_dict(*w), d_model, h)
    right, _ = run_torch(torch, layer, x, attn_mask=to_pytorch_attn_mask(allowed))
    wrong, wrong_weights = run_torch(torch, layer, x, attn_mask=allowed)
    np.testing.assert_allclose(right, y, **TOL)
    assert np.abs(wrong - y).max() > 1e-2
    np.testing.assert_array_equal(wrong_weights[..., 1:], 0)  # only token 0 was attended


# --- PyTorch's layer, read into the course ------------------------------------------------------


def test_a_torch_layer_read_back_gives_the_course_layer():
    torch = _torch_or_skip()
    torch.manual_seed(0)
    d_model, h = 12, 3
    layer = torch.nn.MultiheadAttention(d_model, h, bias=False, batch_first=True).eval()
    w = from_pytorch_state_dict(layer.state_dict())
    x = np.random.default_rng(6).normal(size=(2, 5, d_model)).astype(np.float32)
    yt, wt = run_torch(torch, layer, x)
    y, weights = multi_head_attention(x, *w, num_heads=h, return_weights=True)
    np.testing.assert_allclose(y, yt, **TOL)
    np.testing.assert_allclose(weights, wt, **TOL)


def test_a_torch_layer_with_biases_read_back():
    torch = _torch_or_skip()
    torch.manual_seed(1)
    d_model, h = 8, 4
    layer = torch.nn.MultiheadAttention(d_model, h, batch_first=True).eval()
    # PyTorch initialises the biases to zero, so the weights alone describe a fresh layer.
    fresh = from_pytorch_state_dict(layer.state_dict())
    with torch.no_grad():
        layer.in_proj_bias.normal_()
        layer.out_proj.bias.normal_()
    with pytest.raises(ValueError, match="biases=True"):
        from_pytorch_state_dict(layer.state_dict())
    w, b = from_pytorch_state_dict(layer.state_dict(), biases=True)
    for a, c in zip(w, fresh):
        np.testing.assert_array_equal(a, c)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 3, d_model)).astype(np.float32)
    context = rng.normal(size=(2, 6, d_model)).astype(np.float32)
    yt, wt = run_torch(torch, layer, x, context)
    y, weights = course_with_biases(x, w, b, h, context=context)
    np.testing.assert_allclose(y, yt, **TOL)
    np.testing.assert_allclose(weights, wt, **TOL)


def test_prefix_reads_the_attention_of_a_transformer_layer():
    torch = _torch_or_skip()
    torch.manual_seed(2)
    block = torch.nn.TransformerEncoderLayer(
        d_model=8, nhead=2, dim_feedforward=16, batch_first=True
    )
    w, b = from_pytorch_state_dict(block.state_dict(), biases=True, prefix="self_attn.")
    state = pytorch_state_dict(*w, b_q=b[0], b_k=b[1], b_v=b[2], b_o=b[3], prefix="self_attn.")
    for key, value in state.items():
        np.testing.assert_array_equal(value, block.state_dict()[key].numpy())


# --- without PyTorch ------------------------------------------------------------------------------


def test_round_trip_is_exact_and_keeps_dtype():
    rng = np.random.default_rng(8)
    for dtype in (np.float32, np.float64):
        w = random_weights(rng, 6, dtype)
        b = random_biases(rng, 6, dtype)
        back = from_pytorch_state_dict(pytorch_state_dict(*w))
        for a, c in zip(back, w):
            assert a.dtype == dtype
            np.testing.assert_array_equal(a, c)
        back_w, back_b = from_pytorch_state_dict(
            pytorch_state_dict(*w, b_q=b[0], b_k=b[1], b_v=b[2], b_o=b[3], prefix="attn."),
            biases=True,
            prefix="attn.",
        )
        for a, c in zip(back_w + back_b, w + b):
            np.testing.assert_array_equal(a, c)
    assert from_pytorch_state_dict(pytorch_state_dict(*w), biases=True)[1] is None


def test_layout_of_the_state_dict():
    rng = np.random.default_rng(9)
    d = 4
    w_q, w_k, w_v, w_o = random_weights(rng, d)
    b_q = np.arange(d, dtype=np.float32)
    state = pytorch_state_dict(w_q, w_k, w_v, w_o, b_q=b_q)
    np.testing.assert_array_equal(state["in_proj_weight"][:d], w_q.T)
    np.testing.assert_array_equal(state["in_proj_weight"][d : 2 * d], w_k.T)
    np.testing.assert_array_equal(state["in_proj_weight"][2 * d :], w_v.T)
    np.testing.assert_array_equal(state["out_proj.weight"], w_o.T)
    np.testing.assert_array_equal(state["in_proj_bias"], np.concatenate([b_q, np.zeros(2 * d)]))
    np.testing.assert_array_equal(state["out_proj.bias"], np.zeros(d))
    # The result owns its memory: editing it leaves the course's weights alone.
    state["out_proj.weight"][0, 0] = 99.0
    state["in_proj_bias"][0] = 99.0
    assert w_o[0, 0] != 99.0 and b_q[0] == 0.0


def test_inputs_are_not_modified():
    rng = np.random.default_rng(10)
    w = random_weights(rng, 4)
    copies = [a.copy() for a in w]
    state = pytorch_state_dict(*w)
    state_copy = {k: v.copy() for k, v in state.items()}
    back = from_pytorch_state_dict(state)
    back[0][0, 0] = 99.0
    for a, c in zip(w, copies):
        np.testing.assert_array_equal(a, c)
    for k in state:
        np.testing.assert_array_equal(state[k], state_copy[k])


def test_attn_mask_repeats_each_sequence_once_per_head():
    rng = np.random.default_rng(11)
    batch, h, n_q, n_k = 3, 2, 4, 5
    mask = rng.random((batch, n_q, n_k)) < 0.5
    converted = to_pytorch_attn_mask(mask, num_heads=h)
    assert converted.shape == (batch * h, n_q, n_k)
    for b in range(batch):
        for i in range(h):
            np.testing.assert_array_equal(converted[b * h + i], ~mask[b])
    np.testing.assert_array_equal(to_pytorch_attn_mask(mask[0]), ~mask[0])
    np.testing.assert_array_equal(to_pytorch_key_padding_mask(mask[:, 0]), ~mask[:, 0])


BAD_SHAPES = [
    (
        lambda w, b: pytorch_state_dict(w[0][:, :3], *w[1:]),
        r"w_q has shape \(4, 3\), expected \(d_model, d_model\)",
    ),
    (
        lambda w, b: pytorch_state_dict(w[0], w[1][:3], *w[2:]),
        r"w_k has shape \(3, 4\), expected \(4, 4\)",
    ),
    (
        lambda w, b: pytorch_state_dict(*w[:3], w[3][None]),
        r"w_o has shape \(1, 4, 4\), expected \(4, 4\)",
    ),
    (lambda w, b: pytorch_state_dict(*w, b_v=b[2][:3]), r"b_v has shape \(3,\), expected \(4,\)"),
    (
        lambda w, b: pytorch_state_dict(*w, b_o=b[3][:, None]),
        r"b_o has shape \(4, 1\), expected \(4,\)",
    ),
    (
        lambda w, b: from_pytorch_state_dict(
            {"in_proj_weight": np.zeros((4, 12)), "out_proj.weight": w[3]}
        ),
        r"in_proj_weight has shape \(4, 12\), expected \(3 \* d_model, d_model\) = \(12, 4\); it looks transposed",
    ),
    (
        lambda w, b: from_pytorch_state_dict(
            {"in_proj_weight": np.zeros((10, 4)), "out_proj.weight": w[3]}
        ),
        r"in_proj_weight has shape \(10, 4\), expected \(3 \* d_model, d_model\) = \(12, 4\)",
    ),
    (
        lambda w, b: from_pytorch_state_dict(
            {"in_proj_weight": np.zeros((12, 4)), "out_proj.weight": w[3][:2]}
        ),
        r"out_proj.weight has shape \(2, 4\), expected \(4, 4\)",
    ),
    (
        lambda w, b: from_pytorch_state_dict(
            {
                "in_proj_weight": np.zeros((12, 4)),
                "out_proj.weight": w[3],
                "in_proj_bias": np.zeros(4),
                "out_proj.bias": np.zeros(4),
            },
            biases=True,
        ),
        r"in_proj_bias has shape \(4,\), expected \(12,\)",
    ),
]


@pytest.mark.parametrize("call, message", BAD_SHAPES, ids=range(len(BAD_SHAPES)))
def test_bad_shapes_raise_value_error_naming_the_expected_shape(call, message):
    rng = np.random.default_rng(12)
    with pytest.raises(ValueError, match=message):
        call(random_weights(rng, 4), random_biases(rng, 4))


def test_other_bad_inputs_explain_themselves():
    w = random_weights(np.random.default_rng(13), 4)
    with pytest.raises(ValueError, match="no out_proj.weight"):
        from_pytorch_state_dict({"in_proj_weight": np.zeros((12, 4))})
    with pytest.raises(ValueError, match="has in_proj_bias but not out_proj.bias"):
        from_pytorch_state_dict({**pytorch_state_dict(*w), "in_proj_bias": np.zeros(12)})
    with pytest.raises(ValueError, match="kdim/vdim"):
        from_pytorch_state_dict(
            {
                "q_proj_weight": w[0],
                "k_proj_weight": w[1],
                "v_proj_weight": w[2],
                "out_proj.weight": w[3],
            }
        )
    with pytest.raises(ValueError, match="must be a boolean array"):
        to_pytorch_attn_mask(causal_mask(3).astype(float))
    with pytest.raises(ValueError, match="pass num_heads"):
        to_pytorch_attn_mask(np.ones((2, 3, 3), bool))
    with pytest.raises(ValueError, match=r"expected \(batch, n_k\)"):
        to_pytorch_key_padding_mask(np.ones((2, 3, 3), bool))


def test_helpers_and_lesson_07_do_not_need_torch():
    """Learners may not have PyTorch: the helpers must work with torch unimportable, and the
    lesson must not import it."""
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any `import torch` now raises ImportError
        "import numpy as np, mha_helpers as m\n"
        "w = [np.eye(2)] * 4\n"
        "s = m.pytorch_state_dict(*w, b_q=np.ones(2))\n"
        "print(sorted(s), len(m.from_pytorch_state_dict(s, biases=True)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "['in_proj_bias',",
        "'in_proj_weight',",
        "'out_proj.bias',",
        "'out_proj.weight']",
        "2",
    ]
    lesson = json.loads((ROOT / "notebooks" / "07_attention_at_work.ipynb").read_text())
    code_cells = ["".join(c["source"]) for c in lesson["cells"] if c["cell_type"] == "code"]
    assert code_cells, "lesson 07 has no code"
    for source in code_cells:
        for line in source.splitlines():
            assert not line.lstrip().startswith(("import torch", "from torch")), line


# ---------------------------------------------------------------------------------------------
# What lessons 01 and 07 say about PyTorch, checked against PyTorch itself
# ---------------------------------------------------------------------------------------------


def test_the_bias_free_state_dict_loads_only_into_a_layer_built_with_bias_false():
    """Lesson 07 §4 and pytorch_state_dict's docstring: the default layer (bias=True) refuses
    the bias-free dict with 'Missing key(s)'; bias=False loads it."""
    torch = _torch_or_skip()
    w = [np.random.default_rng(1).normal(size=(8, 8)) for _ in range(4)]
    state = {k: torch.from_numpy(v).float() for k, v in pytorch_state_dict(*w).items()}
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*in_proj_bias.*out_proj\.bias"):
        torch.nn.MultiheadAttention(8, 2, batch_first=True).load_state_dict(state)
    torch.nn.MultiheadAttention(8, 2, bias=False, batch_first=True).load_state_dict(state)


def test_in_proj_weight_exists_only_when_kdim_and_vdim_equal_embed_dim():
    """Lesson 07 §4's table: with another kdim or vdim the layer stores q_proj_weight,
    k_proj_weight and v_proj_weight instead."""
    torch = _torch_or_skip()
    same = torch.nn.MultiheadAttention(8, 2).state_dict()
    other = torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=6).state_dict()
    assert "in_proj_weight" in same and "q_proj_weight" not in same
    assert "in_proj_weight" not in other
    assert tuple(other["k_proj_weight"].shape) == (8, 6) and tuple(
        other["v_proj_weight"].shape
    ) == (8, 6)


def test_a_batch_first_mask_without_batch_first_fails_only_when_batch_differs_from_n():
    """Lesson 07 §4: a (batch, n) key_padding_mask given to a batch_first=False layer raises
    when batch != n and is accepted silently when batch == n."""
    torch = _torch_or_skip()
    layer = torch.nn.MultiheadAttention(8, 2)  # batch_first=False: reads (n, batch, d)
    for batch, n, raises in ((3, 5, True), (4, 4, False)):
        x = torch.randn(batch, n, 8)
        pad = torch.zeros(batch, n, dtype=torch.bool)
        pad[:, -1] = True
        if raises:
            with pytest.raises(Exception, match="key_padded_mask"):
                layer(x, x, x, key_padding_mask=pad)
        else:
            out, _ = layer(x, x, x, key_padding_mask=pad)
            assert out.shape == (batch, n, 8)


def test_pytorch_initialisation_scales_quoted_in_lesson_01():
    """Lesson 01 §2: nn.Linear draws U(+-1/sqrt(fan_in)), std 1/sqrt(3 fan_in);
    nn.MultiheadAttention draws its packed Q/K/V weight Xavier-uniform, std 1/sqrt(2 d), and sets
    its biases to 0."""
    torch = _torch_or_skip()
    torch.manual_seed(0)
    d = 512
    layer = torch.nn.MultiheadAttention(d, 8)
    linear = torch.nn.Linear(d, d)
    assert abs(layer.in_proj_weight.std().item() * math.sqrt(2 * d) - 1) < 0.01
    assert abs(linear.weight.std().item() * math.sqrt(3 * d) - 1) < 0.01
    assert (
        layer.in_proj_bias.abs().max().item() == 0 and layer.out_proj.bias.abs().max().item() == 0
    )


# --- what PyTorch returns for a fully masked row (lesson 07, section 3; issue 34, item 16) -------

MEASURED_TORCH = "2.13"  # lesson 07 states what this version does, as measured here


def _torch_as_measured():
    torch = _torch_or_skip()
    if not torch.__version__.startswith(MEASURED_TORCH + "."):
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI installs torch {MEASURED_TORCH}; found {torch.__version__}")
        pytest.skip(
            f"lesson 07 states what torch {MEASURED_TORCH} does; this is torch {torch.__version__}"
        )
    return torch


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("how", ["key_padding_mask", "attn_mask"])
@pytest.mark.parametrize(
    "training, grad, need_weights",
    [(t, g, w) for w in (False, True) for t in (True, False) for g in (True, False)],
)
def test_torch_multihead_attention_on_a_fully_masked_row(how, bias, training, grad, need_weights):
    """nn.MultiheadAttention (batch_first=True) on a query whose every key is masked, by a
    key_padding_mask that masks a whole sequence or by a row of attn_mask. Measured on torch
    2.13 (CPU): with need_weights=False that row's attention is 0 (the layer returns its
    out_proj bias there), in training mode or with gradients on; on the eval + no_grad fast
    path, which a layer with biases (the default, bias=True) takes, it is NaN; with
    need_weights=True it is NaN always. Lesson 07 states this, naming the version."""
    torch = _torch_as_measured()
    torch.manual_seed(0)
    layer = torch.nn.MultiheadAttention(8, 2, bias=bias, batch_first=True).train(training)
    if bias:
        with torch.no_grad():
            layer.in_proj_bias.normal_()
            layer.out_proj.bias.normal_()
    x = torch.randn(2, 3, 8)
    if how == "key_padding_mask":  # True = may NOT attend: sequence 1 has no key at all
        kwargs = {"key_padding_mask": torch.tensor([[False] * 3, [True] * 3])}
        rows, others = (slice(1, 2), slice(None)), (slice(0, 1), slice(None))
    else:  # query 1 of each sequence may attend to nothing
        mask = torch.tensor([[False, False, True], [True, True, True], [False, False, False]])
        kwargs = {"attn_mask": mask}
        rows, others = (slice(None), slice(1, 2)), (slice(None), slice(2, 3))
    with torch.set_grad_enabled(grad):
        y, _ = layer(x, x, x, need_weights=need_weights, **kwargs)
    y = y.detach().numpy()
    assert np.isfinite(y[others]).all()  # the rows with keys to attend to are fine
    fast_path = bias and not training and not grad and not need_weights
    if need_weights or fast_path:
        assert np.isnan(y[rows]).all()
    else:  # attention gave 0, so the output is the output projection's bias (or 0)
        b = layer.out_proj.bias.detach().numpy() if bias else np.zeros(8, np.float32)
        assert np.array_equal(y[rows], np.broadcast_to(b, y[rows].shape))


def test_torch_sdpa_returns_zero_for_a_fully_masked_row():
    """F.scaled_dot_product_attention (boolean mask, True = may attend) returns 0 there."""
    torch = _torch_as_measured()
    q = torch.randn(1, 2, 3, 4, generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[True, False, False], [False, False, False], [True, True, True]])
    for grad in (True, False):
        with torch.set_grad_enabled(grad):
            out = torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        out = out.detach().numpy()
        assert np.array_equal(out[0, :, 1], np.zeros((2, 4))) and np.isfinite(out).all()
