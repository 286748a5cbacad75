"""The same layer in PyTorch: convert weights and masks between the course and
``torch.nn.MultiheadAttention``.

Nothing here imports PyTorch: every function takes and returns NumPy arrays (PyTorch tensors on
the CPU are accepted wherever an array is, because NumPy can read them). The conventions differ
in three places, each a silent bug when forgotten:

==================  ==========================================  ===========================================
                    the course (``multi_head_attention``)       ``torch.nn.MultiheadAttention``
==================  ==========================================  ===========================================
projection          ``x @ w``; ``w`` is ``(d_in, d_out)``       ``nn.Linear``: ``x @ A.T + b``; ``A`` is
                                                                ``(d_out, d_in)``
Q, K, V weights     ``w_q``, ``w_k``, ``w_v``, each             ``in_proj_weight`` ``(3 * d_model, d_model)``
                    ``(d_model, d_model)``                      = rows ``[w_q.T; w_k.T; w_v.T]``
output weights      ``w_o``                                     ``out_proj.weight`` = ``w_o.T``
boolean mask        True = may attend                           ``attn_mask``, ``key_padding_mask``:
                                                                True = may NOT attend
==================  ==========================================  ===========================================

The state dict does not record the number of heads: give PyTorch the same ``num_heads`` as the
course. PyTorch's biases are all or nothing (``bias=True`` creates ``in_proj_bias`` and
``out_proj.bias``), while the course's layer has none; see :func:`pytorch_state_dict`.

>>> import numpy as np
>>> w_q, w_k, w_v, w_o = (np.full((2, 2), k, dtype=np.float32) for k in range(4))
>>> state = pytorch_state_dict(w_q, w_k, w_v, w_o)
>>> {key: value.shape for key, value in state.items()}
{'in_proj_weight': (6, 2), 'out_proj.weight': (2, 2)}
"""

from __future__ import annotations

import numpy as np

from .shapes import _fmt, as_float_array, check_shape, positive_int

__all__ = [
    "pytorch_state_dict",
    "from_pytorch_state_dict",
    "to_pytorch_attn_mask",
    "to_pytorch_key_padding_mask",
]

_WEIGHT_KEYS = ("in_proj_weight", "out_proj.weight")
_BIAS_KEYS = ("in_proj_bias", "out_proj.bias")


def _weight(w, name: str, d_model: int) -> np.ndarray:
    w = as_float_array(w, name)
    hint = "the course's weights are (d_model, d_model), applied as x @ w"
    check_shape(w, (d_model, d_model), name, hint)
    return w


def _bias(b, name: str, d_model: int) -> np.ndarray:
    b = as_float_array(b, name)
    check_shape(b, (d_model,), name, "one bias per output feature, (d_model,)")
    return b


def pytorch_state_dict(
    w_q, w_k, w_v, w_o, *, b_q=None, b_k=None, b_v=None, b_o=None, prefix: str = ""
) -> dict:
    """The course's weights as the state dict of ``torch.nn.MultiheadAttention``.

    Parameters
    ----------
    w_q, w_k, w_v, w_o : (d_model, d_model) arrays, applied as ``x @ w`` (the course's layout)
    b_q, b_k, b_v, b_o : optional (d_model,) biases, added after each projection
    prefix : put in front of every key, e.g. ``"self_attn."`` for the attention inside
        ``torch.nn.TransformerEncoderLayer``

    Returns a dict of NumPy arrays with the keys and shapes of the state dict of
    ``torch.nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True)`` when no bias
    is given, and of the layer with its default ``bias=True`` when any bias is given (the
    default layer's ``load_state_dict`` refuses a bias-free dict: "Missing key(s):
    in_proj_bias, out_proj.bias"):

    * ``in_proj_weight`` ``(3 * d_model, d_model)``: ``w_q.T``, ``w_k.T``, ``w_v.T`` stacked
      row-wise, in that order (``nn.Linear`` computes ``x @ A.T``, so each block is transposed);
    * ``out_proj.weight`` ``(d_model, d_model)``: ``w_o.T``;
    * only when at least one bias is given: ``in_proj_bias`` ``(3 * d_model,)`` (``b_q``, ``b_k``,
      ``b_v`` end to end) and ``out_proj.bias`` ``(d_model,)``. PyTorch has all four biases or
      none, so a bias that is not given is stored as zeros, which adds nothing: the layer
      computes exactly what the given biases say. With no bias at all the dict has no bias
      keys and loads into ``MultiheadAttention(..., bias=False)``.

    The arrays are new (changing them does not change the inputs) and keep the inputs' float
    dtype. Load them with ``layer.load_state_dict({k: torch.from_numpy(v) for k, v in
    state.items()})``; the layer needs the same ``num_heads`` as the course.

    >>> w_q, w_k, w_v, w_o = np.eye(2), 2 * np.eye(2), 3 * np.eye(2), np.eye(2)
    >>> state = pytorch_state_dict(w_q, w_k, w_v, w_o, b_o=np.ones(2))
    >>> state["in_proj_weight"]
    array([[1., 0.],
           [0., 1.],
           [2., 0.],
           [0., 2.],
           [3., 0.],
           [0., 3.]])
    >>> list(state), state["in_proj_bias"]
    (['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'], array([0., 0., 0., 0., 0., 0.]))
    """
    w_q = as_float_array(w_q, "w_q")
    if w_q.ndim != 2 or w_q.shape[0] != w_q.shape[1]:
        raise ValueError(
            f"w_q has shape {_fmt(w_q.shape)}, expected (d_model, d_model): a square "
            f"matrix applied as x @ w_q"
        )
    d_model = w_q.shape[0]
    w_k, w_v, w_o = (
        _weight(w, name, d_model) for w, name in ((w_k, "w_k"), (w_v, "w_v"), (w_o, "w_o"))
    )
    # nn.Linear computes x @ A.T, so each block is the course's weight transposed.
    w_in = np.concatenate([w_q.T, w_k.T, w_v.T], axis=0)  # (3 d_model, d_model)
    w_out = np.array(w_o.T)  # (d_model, d_model)
    biases = {"b_q": b_q, "b_k": b_k, "b_v": b_v, "b_o": b_o}
    if all(b is None for b in biases.values()):
        return {f"{prefix}in_proj_weight": w_in, f"{prefix}out_proj.weight": w_out}
    b_q, b_k, b_v, b_o = (
        np.zeros(d_model, w_in.dtype) if b is None else _bias(b, name, d_model)
        for name, b in biases.items()
    )
    return {  # the order of PyTorch's state_dict()
        f"{prefix}in_proj_weight": w_in,
        f"{prefix}in_proj_bias": np.concatenate([b_q, b_k, b_v]),  # (3 d_model,)
        f"{prefix}out_proj.weight": w_out,
        f"{prefix}out_proj.bias": np.array(b_o),  # (d_model,)
    }


def from_pytorch_state_dict(state, *, biases: bool = False, prefix: str = ""):
    """The course's weights from the state dict of ``torch.nn.MultiheadAttention``.

    ``state`` maps the keys of :func:`pytorch_state_dict` (after ``prefix``) to arrays or CPU
    tensors; ``layer.state_dict()`` can be passed as it is. Other keys are ignored, so the state
    of a whole model works with the right ``prefix``.

    Returns ``(w_q, w_k, w_v, w_o)``, each ``(d_model, d_model)`` for ``x @ w``. With
    ``biases=True`` it returns ``((w_q, w_k, w_v, w_o), (b_q, b_k, b_v, b_o))`` instead, each bias
    ``(d_model,)``, or ``None`` for all four when the state has no biases. With the default
    ``biases=False``, a state whose biases are not all zero raises ``ValueError``: the course's
    layer has no biases, and dropping them silently would change what the layer computes.

    Layers built with ``kdim``/``vdim`` (separate ``q_proj_weight``, ``k_proj_weight``,
    ``v_proj_weight``) or ``add_bias_kv`` are not supported and raise ``ValueError``.

    >>> w = [np.arange(4.0).reshape(2, 2) + 10 * k for k in range(4)]
    >>> w_q, w_k, w_v, w_o = from_pytorch_state_dict(pytorch_state_dict(*w))
    >>> w_k
    array([[10., 11.],
           [12., 13.]])
    """
    keys = [k[len(prefix) :] for k in state if k.startswith(prefix)]
    _check_keys(state, keys, prefix)
    weights, d_model = _weights_from_state(state, prefix)
    bias_arrays = _biases_from_state(state, keys, prefix, d_model)
    if biases:
        return weights, bias_arrays
    if bias_arrays is not None and any(np.any(b != 0) for b in bias_arrays):
        raise ValueError(
            "the state has nonzero biases (in_proj_bias, out_proj.bias) and the course's "
            "multi_head_attention has none: pass biases=True to get them as well, or build the "
            "PyTorch layer with bias=False"
        )
    return weights


def _check_keys(state, keys: list, prefix: str) -> None:
    """Refuse a state of a layer the course's does not match (kdim/vdim, add_bias_kv), or
    without the weights; the message lists the keys expected."""
    unsupported = sorted(
        {"q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k", "bias_v"} & set(keys)
    )
    if unsupported:
        raise ValueError(
            f"the state has {unsupported}: a layer with kdim/vdim (separate projection weights) or "
            f"add_bias_kv=True, which the course's multi_head_attention does not have"
        )
    missing = [k for k in _WEIGHT_KEYS if k not in keys]
    if missing:
        raise ValueError(
            f"the state has no {', '.join(prefix + k for k in missing)}; expected the keys of "
            f"torch.nn.MultiheadAttention(d_model, num_heads).state_dict(): "
            f"{', '.join(prefix + k for k in _WEIGHT_KEYS + _BIAS_KEYS)} (biases optional)"
            + (f". Keys found: {', '.join(list(state)[:6])}" if len(state) else "")
        )


def _weights_from_state(state, prefix: str) -> tuple[tuple, int]:
    """``((w_q, w_k, w_v, w_o), d_model)`` from ``in_proj_weight`` (W_Q.T, W_K.T, W_V.T stacked
    as rows) and ``out_proj.weight`` (W_O.T), each ``(d_model, d_model)`` for ``x @ w``."""
    w_in = as_float_array(state[prefix + "in_proj_weight"], prefix + "in_proj_weight")
    if w_in.ndim != 2 or w_in.shape[0] != 3 * w_in.shape[1]:
        d = w_in.shape[-1] if w_in.ndim else 0
        hint = ""
        if w_in.ndim == 2 and w_in.shape[1] == 3 * w_in.shape[0]:
            d = w_in.shape[0]
            hint = (
                "; it looks transposed: PyTorch stacks W_Q.T, W_K.T, W_V.T as rows "
                "(3 * d_model rows, d_model columns)"
            )
        raise ValueError(
            f"{prefix}in_proj_weight has shape {_fmt(w_in.shape)}, expected "
            f"(3 * d_model, d_model) = ({3 * d}, {d}){hint}"
        )
    d_model = w_in.shape[1]
    w_out = as_float_array(state[prefix + "out_proj.weight"], prefix + "out_proj.weight")
    check_shape(
        w_out,
        (d_model, d_model),
        prefix + "out_proj.weight",
        f"(d_model, d_model) with d_model = {d_model} from in_proj_weight",
    )
    w_q, w_k, w_v = (
        np.array(block.T) for block in np.split(w_in, 3, axis=0)
    )  # 3 x (d_model, d_model)
    return (w_q, w_k, w_v, np.array(w_out.T)), d_model


def _biases_from_state(state, keys: list, prefix: str, d_model: int):
    """``(b_q, b_k, b_v, b_o)``, each ``(d_model,)``, or None when the state has no biases
    (PyTorch's layer has both bias tensors or neither)."""
    has_bias = [k in keys for k in _BIAS_KEYS]
    if any(has_bias) and not all(has_bias):
        raise ValueError(
            f"the state has {prefix + _BIAS_KEYS[has_bias.index(True)]} but not "
            f"{prefix + _BIAS_KEYS[has_bias.index(False)]}: PyTorch's layer has both "
            f"biases or neither"
        )
    if not all(has_bias):
        return None
    b_in = as_float_array(state[prefix + "in_proj_bias"], prefix + "in_proj_bias")
    check_shape(
        b_in,
        (3 * d_model,),
        prefix + "in_proj_bias",
        "(3 * d_model,): b_q, b_k, b_v end to end",
    )
    b_out = as_float_array(state[prefix + "out_proj.bias"], prefix + "out_proj.bias")
    check_shape(b_out, (d_model,), prefix + "out_proj.bias", "(d_model,)")
    return (*(np.array(b) for b in np.split(b_in, 3)), np.array(b_out))


def _bool_mask(mask, name: str) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(
            f"{name} must be a boolean array in the course's convention (True = may attend), got "
            f"dtype {mask.dtype}; build it with a comparison, for example lengths[:, None] > "
            f"np.arange(n)"
        )
    return mask


def to_pytorch_attn_mask(mask, num_heads: int | None = None) -> np.ndarray:
    """The course's boolean mask (True = may attend) as PyTorch's ``attn_mask`` (True = blocked).

    * ``(n_q, n_k)`` (one mask for the whole batch) -> ``(n_q, n_k)``, inverted;
    * ``(batch, n_q, n_k)`` (one mask per sequence) -> ``(batch * num_heads, n_q, n_k)``,
      inverted: PyTorch's 3-D ``attn_mask`` has one mask per sequence *and head*, at index
      ``b * num_heads + i``, so each sequence's mask is repeated ``num_heads`` times in a row
      (``np.repeat``; ``np.tile`` would hand sequence 1's mask to sequence 0's heads).

    >>> to_pytorch_attn_mask(np.tril(np.ones((2, 2), dtype=bool)))
    array([[False,  True],
           [False, False]])
    >>> to_pytorch_attn_mask(np.ones((2, 1, 3), dtype=bool), num_heads=4).shape
    (8, 1, 3)
    """
    mask = _bool_mask(mask, "mask")
    if mask.ndim == 2:
        return ~mask  # (n_q, n_k)
    if mask.ndim != 3:
        raise ValueError(
            f"mask has shape {_fmt(mask.shape)}, expected (n_q, n_k) or (batch, n_q, n_k)"
        )
    if num_heads is None:
        raise ValueError(
            f"mask has shape {_fmt(mask.shape)}, one mask per sequence: PyTorch wants one per "
            f"sequence and head, (batch * num_heads, n_q, n_k), so pass num_heads"
        )
    num_heads = positive_int(num_heads, "num_heads")
    return np.repeat(~mask, num_heads, axis=0)  # (batch * num_heads, n_q, n_k)


def to_pytorch_key_padding_mask(key_valid) -> np.ndarray:
    """Which keys are real tokens (True) as PyTorch's ``key_padding_mask`` (True = padding).

    ``key_valid`` is ``(batch, n_k)`` (or ``(n_k,)`` for one sequence): True for a real token,
    False for padding, the course's polarity. The result has the same shape, inverted.

    >>> lengths = np.array([3, 1])
    >>> key_valid = np.arange(3) < lengths[:, None]        # (batch, n_k)
    >>> to_pytorch_key_padding_mask(key_valid)
    array([[False, False, False],
           [False,  True,  True]])
    """
    key_valid = _bool_mask(key_valid, "key_valid")
    if key_valid.ndim not in (1, 2):
        raise ValueError(
            f"key_valid has shape {_fmt(key_valid.shape)}, expected (batch, n_k): one flag per key "
            f"(a full (batch, n_q, n_k) mask goes to to_pytorch_attn_mask)"
        )
    return ~key_valid  # (batch, n_k)
