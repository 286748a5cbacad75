"""A tiny attention-only transformer that trains in seconds with nothing but NumPy.

The model (lesson 06):

* token embedding ``embed`` ``(vocab, d_model)`` plus positional embedding ``pos``
  ``(seq_len, d_model)`` make the *residual stream* ``x`` of shape ``(batch, n, d_model)``;
* each layer ``l`` adds causal multi-head self-attention to it: ``x = x + mha(x)``, with weights
  ``layers.l.w_q``, ``w_k``, ``w_v``, ``w_o`` (the course's ``x @ w`` convention);
* a linear readout ``unembed`` ``(d_model, num_outputs)`` turns each position into logits;
* the loss is softmax cross-entropy, averaged over the positions whose target is not ``-1``.

There are no MLPs, layer norms or biases. The readout reads the sum of the embeddings and the
layers' writes (a residual connection), so the embeddings also reach the logits without passing
through attention. In the vote-table task of lessons 02 and 03 they say nothing useful on their
own: lesson 02 removes both heads' writes of its trained model and measures that it is then
right less often than a constant answer. Parameters live in a plain ``dict`` of arrays, so a
gradient check, the optimizer and head pruning are all a loop over its entries.

Everything is determined by seeds: the same seed gives the same weights, the same batches and
bit-for-bit the same trained model on the same machine and library versions.
"""

from __future__ import annotations

import math

import numpy as np

from .attention import causal_mask, scaled_dot_product_attention
from .backward import mha_backward, mha_forward
from .heads import merge_heads, split_heads
from .shapes import _fmt

__all__ = [
    "PATH_ABLATIONS",
    "init_model",
    "num_layers",
    "forward",
    "cross_entropy",
    "loss_and_grads",
    "numerical_gradients",
    "max_relative_error",
    "learning_rate",
    "adam_step",
    "train",
    "accuracy",
    "prune_head",
    "head_importance",
    "pruning_order",
    "accuracy_after_pruning",
    "head_output_tables",
]

WEIGHTS = ("w_q", "w_k", "w_v", "w_o")


def init_model(vocab_size, seq_len, d_model, num_layers, num_outputs=None, seed=0) -> dict:
    """Random parameters: embeddings ``N(0, 1)``, weight matrices ``N(0, 1/d_model)``.

    ``num_outputs`` is the number of classes the readout predicts (default ``vocab_size``).
    The number of heads is not part of the parameters: the same four ``(d_model, d_model)``
    matrices serve any ``h`` that divides ``d_model`` (lesson 02).

    >>> p = init_model(vocab_size=5, seq_len=4, d_model=8, num_layers=1)
    >>> {name: w.shape for name, w in p.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'embed': (5, 8), 'pos': (4, 8), 'layers.0.w_q': (8, 8), 'layers.0.w_k': (8, 8),
     'layers.0.w_v': (8, 8), 'layers.0.w_o': (8, 8), 'unembed': (8, 5)}
    """
    rng = np.random.default_rng(seed)
    num_outputs = vocab_size if num_outputs is None else num_outputs
    std = 1.0 / math.sqrt(d_model)
    params = {
        "embed": rng.normal(size=(vocab_size, d_model)),  # (vocab, d_model)
        "pos": rng.normal(size=(seq_len, d_model)),
    }  # (seq_len, d_model)
    for layer in range(num_layers):
        for name in WEIGHTS:
            params[f"layers.{layer}.{name}"] = rng.normal(scale=std, size=(d_model, d_model))
    params["unembed"] = rng.normal(scale=std, size=(d_model, num_outputs))  # (d_model, num_outputs)
    return params


def num_layers(params) -> int:
    """How many attention layers a parameter dict holds."""
    return sum(1 for name in params if name.endswith(".w_q"))


def _check_tokens(params, tokens):
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(
            f"tokens has shape {_fmt(tokens.shape)} and dtype {tokens.dtype}, expected "
            f"integer token ids of shape (batch, n)"
        )
    vocab, seq_len = params["embed"].shape[0], params["pos"].shape[0]
    if tokens.shape[1] > seq_len:
        raise ValueError(
            f"tokens has {tokens.shape[1]} positions, but the model has positional "
            f"embeddings for at most seq_len={seq_len}"
        )
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab):
        raise ValueError(
            f"token ids must lie in [0, {vocab}), got values from {tokens.min()} to {tokens.max()}"
        )
    return tokens


def forward(
    params,
    tokens,
    num_heads,
    head_masks=None,
    return_cache=False,
    output_masks=None,
    remove_paths=None,
):
    """Run the model on a batch of token ids.

    Parameters
    ----------
    params : dict from :func:`init_model`
    tokens : (batch, n) integer token ids
    num_heads : h, the same for every layer
    head_masks : optional list with one ``(h,)`` array of 0/1 per layer (1 keeps a head,
        0 prunes it), or None to keep every head
    return_cache : also return what :func:`loss_and_grads` needs for the backward pass
    output_masks : optional list with one entry per layer, None or a ``(batch, n)`` array of
        0/1: the layer's output at position ``t`` is multiplied by it before it is added to the
        residual stream, so 0 removes what the layer writes *there* (an ablation; later
        layers then read the stream without it). Not supported with ``return_cache``.
    remove_paths : optional collection of ``(source, reader)`` pairs, a *path-specific*
        ablation: the output of layer ``source`` is removed from what one reader sees, and from
        nothing else. ``reader`` is ``"L.q"``, ``"L.k"`` or ``"L.v"`` (the queries, keys or
        values of a later layer ``L``) or ``"readout"`` (the logits). ``(0, "1.k")`` asks: how
        well does the model do if layer 1's keys cannot see what layer 0 wrote (K-composition),
        while its queries, its values and the readout still can? An optional third entry,
        ``"zero"`` (default), ``"mean"``, ``"resample"`` (:data:`PATH_ABLATIONS`) or a function
        of the removed output, says what the reader sees instead. Not with ``return_cache``.

    Returns ``(logits, weights)``: logits ``(batch, n, num_outputs)`` and a list with each
    layer's attention weights ``(batch, h, n, n)`` (plus the cache when asked).
    """
    tokens = _check_tokens(params, tokens)
    n = tokens.shape[1]
    layers = num_layers(params)
    _check_output_masks(output_masks, layers, tokens.shape, return_cache)
    removed = _check_paths(remove_paths, layers, return_cache)  # reader -> source layers
    mask = causal_mask(n)  # (n, n)
    x = params["embed"][tokens] + params["pos"][:n]  # (batch, n, d_model)
    caches, weights, outputs = [], [], []
    for layer in range(layers):
        w = [params[f"layers.{layer}.{name}"] for name in WEIGHTS]
        head_mask = None if head_masks is None else head_masks[layer]
        if any(f"{layer}.{part}" in removed for part in "qkv"):
            # each of q, k, v reads the stream with the outputs removed from it replaced
            xq, xk, xv = (
                _replaced(x, outputs, removed.get(f"{layer}.{part}", ())) for part in "qkv"
            )
            y, cache = _mha_three_inputs(xq, xk, xv, *w, num_heads, mask, head_mask)
        else:
            y, cache = mha_forward(x, *w, num_heads=num_heads, mask=mask, head_mask=head_mask)
        if output_masks is not None and output_masks[layer] is not None:
            y = y * np.asarray(output_masks[layer], dtype=y.dtype)[..., None]  # (batch, n, d_model)
        x = x + y  # (batch, n, d_model): each layer adds to the residual stream
        outputs.append(y)
        caches.append(cache)
        weights.append(cache["weights"])  # (batch, h, n, n)
    read = _replaced(x, outputs, removed.get("readout", ()))  # (batch, n, d_model)
    logits = read @ params["unembed"]  # (batch, n, num_outputs)
    if return_cache:
        return logits, weights, {"tokens": tokens, "x_final": x, "layers": caches}
    return logits, weights


def _check_output_masks(output_masks, layers, shape, return_cache) -> None:
    """Validate ``output_masks`` of :func:`forward`: one entry per layer, each None or one 0/1
    per position (``shape`` is the tokens' ``(batch, n)``)."""
    if output_masks is None:
        return
    if return_cache:
        raise ValueError(
            "output_masks is for measuring a trained model; it cannot be "
            "combined with return_cache (the backward pass does not use it)"
        )
    if len(output_masks) != layers:
        raise ValueError(
            f"output_masks has {len(output_masks)} entries, expected one per "
            f"layer ({layers}), each None or a (batch, n) array"
        )
    for layer, m in enumerate(output_masks):
        if m is not None and np.shape(m) != shape:
            raise ValueError(
                f"output_masks[{layer}] has shape {_fmt(np.shape(m))}, expected "
                f"(batch, n) = {_fmt(shape)}: one 0/1 per position"
            )


def _replaced(x, outputs, paths):
    """The stream ``x`` with each ``(source, replacement)`` path's output replaced."""
    return x - sum(outputs[s] - swap(outputs[s]) for s, swap in paths)  # (batch, n, d_model)


#: What a path-specific ablation puts in place of the removed output, for the one reader:
#: ``"zero"`` nothing; ``"mean"`` that output averaged over the batch at each position (what the
#: reader sees on average); ``"resample"`` that output computed on another sequence of the
#: batch (sequence b gets sequence b - 1's). Zero ablation also moves the reader's input far
#: from anything it saw in training; mean and resample ablation keep it in range, so a large
#: loss under them says more about what the path carries.
PATH_ABLATIONS = {
    "zero": lambda y: 0.0,
    "mean": lambda y: y.mean(axis=0, keepdims=True),  # (1, n, d_model)
    "resample": lambda y: y[np.roll(np.arange(len(y)), 1)],  # (batch, n, d_model)
}


def _check_paths(remove_paths, layers, return_cache) -> dict:
    """Validate ``remove_paths`` of :func:`forward`; return
    ``{reader: [(source layer, replacement function)]}``."""
    if not remove_paths:
        return {}
    if return_cache:
        raise ValueError(
            "remove_paths is for measuring a trained model; it cannot be combined with "
            "return_cache (the backward pass does not use it)"
        )
    removed: dict = {}
    for pair in remove_paths:
        ok = isinstance(pair, (tuple, list)) and len(pair) in (2, 3)
        source, reader = pair[:2] if ok else (None, None)
        how = pair[2] if ok and len(pair) == 3 else "zero"
        if not callable(how) and how not in PATH_ABLATIONS:
            raise ValueError(
                f"remove_paths entry {pair!r}: the replacement must be one of "
                f"{list(PATH_ABLATIONS)} or a function of the removed output, got {how!r}"
            )
        if reader == "readout":
            later = True
        elif isinstance(reader, str) and reader.count(".") == 1:
            target, part = reader.split(".")
            later = part in ("q", "k", "v") and target.isdigit() and int(target) < layers
            later = later and isinstance(source, (int, np.integer)) and int(target) > source
        else:
            later = False
        if not (ok and later and isinstance(source, (int, np.integer)) and 0 <= source < layers):
            raise ValueError(
                f"remove_paths entry {pair!r} is not a (source layer, reader) pair: expected "
                f"e.g. (0, '1.k'), a source layer in 0..{layers - 1} and a reader that comes "
                f"after it, 'L.q', 'L.k' or 'L.v' of a later layer L, or 'readout'"
            )
        swap = how if callable(how) else PATH_ABLATIONS[how]
        removed.setdefault(reader, []).append((int(source), swap))
    return removed


def _mha_three_inputs(xq, xk, xv, w_q, w_k, w_v, w_o, num_heads, mask, head_mask):
    """Multi-head attention whose queries, keys and values read different inputs.

    The same steps as :func:`~mha_helpers.backward.mha_forward` (for measurements only: the
    cache holds just the attention weights).
    """
    qh, kh, vh = (
        split_heads(x @ w, num_heads) for x, w in ((xq, w_q), (xk, w_k), (xv, w_v))
    )  # (batch, h, n, d_head) each
    out, weights = scaled_dot_product_attention(qh, kh, vh, mask)  # (batch, h, n, d_head)
    if head_mask is not None:
        out = out * np.asarray(head_mask, dtype=out.dtype)[:, None, None]
    return merge_heads(out) @ w_o, {"weights": weights}  # (batch, n, d_model)


def cross_entropy(logits, targets):
    """Mean softmax cross-entropy over the positions whose target is not ``-1``.

    Returns ``(loss, d_logits)``, the gradient having the shape of ``logits``
    ``(batch, n, num_outputs)`` and zeros at ignored positions.

    >>> loss, d = cross_entropy(np.zeros((1, 2, 4)), np.array([[3, -1]]))
    >>> bool(np.isclose(loss, np.log(4))), d[0, 1].tolist()
    (True, [0.0, 0.0, 0.0, 0.0])
    """
    targets = np.asarray(targets)
    if targets.shape != logits.shape[:-1]:
        raise ValueError(
            f"targets has shape {_fmt(targets.shape)}, expected {_fmt(logits.shape[:-1])}: "
            f"one class id (or -1 for no loss) per position"
        )
    used = targets >= 0  # (batch, n)
    count = int(used.sum())
    if count == 0:
        raise ValueError("every target is -1: there is no position to compute a loss on")
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (batch, n, C)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (batch, n, C)
    safe = np.where(used, targets, 0)  # (batch, n)
    picked = np.take_along_axis(log_probs, safe[..., None], axis=-1)[..., 0]  # (batch, n)
    loss = float(-(picked * used).sum() / count)
    d_logits = np.exp(log_probs)  # (batch, n, C): softmax probabilities
    np.put_along_axis(
        d_logits,
        safe[..., None],
        np.take_along_axis(d_logits, safe[..., None], axis=-1) - 1.0,
        axis=-1,
    )
    d_logits = np.where(used[..., None], d_logits / count, 0.0)  # (batch, n, C)
    return loss, d_logits


def loss_and_grads(params, tokens, targets, num_heads, head_masks=None):
    """Loss and the gradient of every parameter: ``(loss, grads)``, ``grads`` keyed like ``params``.

    The backward pass walks the forward pass in reverse: readout, then each layer's attention
    (the residual connection passes the gradient through unchanged and adds the attention
    branch's), then the two embeddings, whose rows collect the gradient of every position that
    used them.
    """
    logits, _, cache = forward(params, tokens, num_heads, head_masks, return_cache=True)
    loss, d_logits = cross_entropy(logits, targets)
    x = cache["x_final"]
    d_model = x.shape[-1]
    grads = {
        "unembed": x.reshape(-1, d_model).T @ d_logits.reshape(-1, d_logits.shape[-1])
    }  # (d_model, C)
    d_x = d_logits @ params["unembed"].T  # (batch, n, d_model)
    for layer in reversed(range(num_layers(params))):
        d_branch, g = mha_backward(d_x, cache["layers"][layer])
        d_x = d_x + d_branch  # (batch, n, d_model): residual path + attention path
        for name in WEIGHTS:
            grads[f"layers.{layer}.{name}"] = g[name]
    tokens = cache["tokens"]
    n = tokens.shape[1]
    one_hot = np.eye(params["embed"].shape[0])[tokens.reshape(-1)]  # (batch * n, vocab)
    d_embed = one_hot.T @ d_x.reshape(-1, d_model)  # (vocab, d_model): each row sums its uses
    d_pos = np.zeros_like(params["pos"])  # (seq_len, d_model)
    d_pos[:n] = d_x.sum(axis=0)
    grads["embed"], grads["pos"] = d_embed, d_pos
    return loss, {name: grads[name] for name in params}


def numerical_gradients(params, tokens, targets, num_heads, eps=1e-5, head_masks=None) -> dict:
    """Central finite differences of the loss for every entry of every parameter.

    ``(L(p + eps) - L(p - eps)) / (2 eps)``, one entry at a time: slow (two forward passes per
    entry) but obviously right, which is what a check of a hand-written backward pass needs.
    Use float64 parameters.
    """
    grads = {}
    for name, w in params.items():
        g = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            old = w[idx]
            w[idx] = old + eps
            plus, _ = cross_entropy(forward(params, tokens, num_heads, head_masks)[0], targets)
            w[idx] = old - eps
            minus, _ = cross_entropy(forward(params, tokens, num_heads, head_masks)[0], targets)
            w[idx] = old
            g[idx] = (plus - minus) / (2 * eps)
        grads[name] = g
    return grads


def max_relative_error(analytic: dict, numeric: dict, floor=1e-6) -> float:
    """Largest ``|a - n| / max(|a|, |n|)`` over entries whose gradient exceeds ``floor``.

    Entries below ``floor`` in both are skipped: their relative error measures rounding, not
    the backward pass.

    >>> max_relative_error({"w": np.array([1.0, 1e-9])}, {"w": np.array([1.000001, 0.0])}) < 2e-6
    True
    """
    worst = 0.0
    for name in analytic:
        a, n = np.abs(analytic[name]), np.abs(numeric[name])
        big = np.maximum(a, n)
        keep = big > floor
        if keep.any():
            err = np.abs(analytic[name] - numeric[name])[keep] / big[keep]
            worst = max(worst, float(err.max()))
    return worst


def learning_rate(step, steps, lr, warmup) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to 0 at ``steps``.

    >>> [round(learning_rate(s, 10, 1.0, 2), 3) for s in (0, 1, 2, 6, 9)]
    [0.5, 1.0, 1.0, 0.5, 0.038]
    """
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * 0.5 * (1.0 + math.cos(math.pi * progress))


def adam_step(params, grads, state, lr, beta1=0.9, beta2=0.999, eps=1e-8) -> None:
    """One Adam update, in place: ``params`` and the moment estimates in ``state`` change.

    ``state`` starts as an empty dict; it keeps the step count and, per parameter, running
    averages of the gradient (``m``) and of its square (``v``).
    """
    t = state["t"] = state.get("t", 0) + 1
    for name, g in grads.items():
        m = state.setdefault("m." + name, np.zeros_like(g))
        v = state.setdefault("v." + name, np.zeros_like(g))
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * g * g
        m_hat = m / (1 - beta1**t)
        v_hat = v / (1 - beta2**t)
        params[name] -= lr * m_hat / (np.sqrt(v_hat) + eps)


def train(
    params, make_batch, num_heads, steps, lr, warmup=100, batch_size=64, seed=0, callback=None
):
    """Train a copy of ``params`` with Adam; return ``(trained_params, losses)``.

    ``make_batch(rng, batch_size)`` returns ``(tokens, targets)``; it gets its own generator,
    seeded with ``seed``, so the batches (and hence the trained model) are fixed by the seed.
    ``losses`` is the training loss at every step, shape ``(steps,)``. The learning rate warms
    up for ``warmup`` steps, then decays (:func:`learning_rate`). ``callback(step, params)``, if
    given, is called after every update (``step`` counts from 1), e.g. to measure the heads
    while they form; it must not change ``params``.
    """
    params = {name: w.copy() for name, w in params.items()}
    rng = np.random.default_rng(seed)
    state: dict = {}
    losses = np.empty(steps)
    for step in range(steps):
        tokens, targets = make_batch(rng, batch_size)
        loss, grads = loss_and_grads(params, tokens, targets, num_heads)
        adam_step(params, grads, state, learning_rate(step, steps, lr, warmup))
        losses[step] = loss
        if callback is not None:
            callback(step + 1, params)
    return params, losses


def accuracy(
    params, tokens, targets, num_heads, head_masks=None, output_masks=None, remove_paths=None
) -> float:
    """Fraction of the positions with a target (not ``-1``) where the top logit is right.

    ``head_masks``, ``output_masks`` and ``remove_paths`` are passed to :func:`forward`
    (pruning, ablations).
    """
    logits, _ = forward(
        params, tokens, num_heads, head_masks, output_masks=output_masks, remove_paths=remove_paths
    )
    used = np.asarray(targets) >= 0
    return float((logits.argmax(axis=-1) == targets)[used].mean())


def prune_head(w_o, head, num_heads) -> np.ndarray:
    """Return a copy of ``w_o`` with head ``head``'s rows set to 0: the head no longer writes.

    Head ``i`` owns rows ``[i * d_head, (i + 1) * d_head)`` of ``w_o`` (its slice of the
    concatenated head outputs). Zeroing its *queries* would not remove it: equal scores give
    uniform attention, and the head would still write the average of its values.

    >>> prune_head(np.ones((4, 4)), head=1, num_heads=2)[:, 0]
    array([1., 1., 0., 0.])
    """
    w_o = np.array(w_o, dtype=float)
    d_head = w_o.shape[0] // num_heads
    w_o[head * d_head : (head + 1) * d_head] = 0.0  # (d_model, d_model), one head's rows cleared
    return w_o


def _without(keep, head):
    """A copy of the 0/1 vector ``keep`` with ``head`` set to 0."""
    out = np.array(keep, dtype=float)
    out[head] = 0.0
    return out


def _logits_with_heads(params, tokens, num_heads, layer):
    """A function ``mask -> logits``: the model with ``layer``'s heads scaled by a 0/1 ``mask``.

    For the last layer the logits are linear in the mask: the heads' outputs reach the logits
    only through ``W_O`` and the readout, so each head's share of the logits is computed once
    and a mask only weights the shares (the same logits as :func:`forward` with ``head_masks``,
    up to rounding, and pruning searches try many masks). For an earlier layer, the later
    layers read the masked output, so every mask runs :func:`forward`.
    """
    layers = num_layers(params)
    if layer != layers - 1:

        def run(mask):
            masks = [np.ones(num_heads)] * layers
            masks[layer] = mask
            return forward(params, tokens, num_heads, masks)[0]

        return run
    _, _, cache = forward(params, tokens, num_heads, return_cache=True)
    inputs, concat = cache["layers"][layer]["x"], cache["layers"][layer]["concat"]
    w_o, unembed = params[f"layers.{layer}.w_o"], params["unembed"]
    d_head = w_o.shape[0] // num_heads
    base = inputs @ unembed  # (batch, n, C): the stream before this layer, read out
    shares = np.stack(
        [
            concat[..., i * d_head : (i + 1) * d_head]
            @ w_o[i * d_head : (i + 1) * d_head]
            @ unembed
            for i in range(num_heads)
        ]
    )  # (h, batch, n, C): what each head adds to the logits

    def combine(mask):
        return base + np.tensordot(np.asarray(mask, dtype=float), shares, axes=1)

    return combine


def head_importance(params, tokens, targets, num_heads, layer=0, keep=None) -> np.ndarray:
    """How much the loss rises when each head of ``layer`` is removed, one at a time: ``(h,)``.

    ``keep`` is the layer's current 0/1 head mask (default: every head kept); heads already
    removed get ``nan``. The other layers keep all their heads. A large value marks a head the
    model relies on; a value near 0 (or below) a head it can do without. Michel et al. (2019)
    estimate the same quantity with one gradient per head; here it is measured directly.
    """
    return _importance(
        _logits_with_heads(params, tokens, num_heads, layer), targets, num_heads, keep
    )


def _importance(logits_for, targets, num_heads, keep=None) -> np.ndarray:
    keep = np.ones(num_heads) if keep is None else np.asarray(keep, dtype=float)
    if keep.shape != (num_heads,):
        raise ValueError(f"keep has shape {_fmt(keep.shape)}, expected (h,) = ({num_heads},)")

    def loss(mask):
        return cross_entropy(logits_for(mask), targets)[0]

    base = loss(keep)
    return np.array(
        [loss(_without(keep, i)) - base if keep[i] else np.nan for i in range(num_heads)]
    )  # (h,)


def pruning_order(params, tokens, targets, num_heads, layer=0) -> list[int]:
    """Heads of ``layer`` in the order a greedy pruner removes them, least important first.

    At every step the importance of each remaining head is measured again
    (:func:`head_importance`, given the heads already removed) and the one whose removal
    raises the loss least goes next. Measure on data kept apart from the test set.
    """
    logits_for = _logits_with_heads(params, tokens, num_heads, layer)
    keep, order = np.ones(num_heads), []
    for _ in range(num_heads):
        importance = _importance(logits_for, targets, num_heads, keep)
        head = int(np.nanargmin(importance))
        order.append(head)
        keep[head] = 0.0
    return order


def accuracy_after_pruning(params, tokens, targets, num_heads, order, layer=0) -> np.ndarray:
    """Accuracy with the first k heads of ``order`` removed from ``layer``, for k = 0 .. len(order).

    Returns ``(len(order) + 1,)``: entry 0 is the full model's accuracy.

    >>> p = init_model(vocab_size=5, seq_len=4, d_model=8, num_layers=1)
    >>> tokens = np.zeros((2, 4), dtype=int); targets = np.zeros((2, 4), dtype=int)
    >>> accuracy_after_pruning(p, tokens, targets, num_heads=2, order=[1, 0]).shape
    (3,)
    """
    logits_for = _logits_with_heads(params, tokens, num_heads, layer)
    used = np.asarray(targets) >= 0
    keep, out = np.ones(num_heads), []
    for k in range(len(order) + 1):
        if k:
            keep = _without(keep, order[k - 1])
        right = logits_for(keep).argmax(axis=-1) == targets  # (batch, n)
        out.append(float(right[used].mean()))
    return np.array(out)


def head_output_tables(params, num_heads, layer=0) -> np.ndarray:
    """What each head adds to the logits for each token it reads: ``(h, vocab, num_outputs)``.

    A head that puts its attention on a position holding token ``a`` adds (the token's part of)
    ``embed[a] @ W_V[:, head] @ W_O[head] @ unembed`` to the logits: one fixed table, row ``a``,
    per head, whatever position it reads from (the positional embedding adds a further part,
    the same for every token, not included here). In a one-layer model this is the whole path
    from a token read by the head to the answer.
    """
    d_model = params["embed"].shape[1]
    d_head = d_model // num_heads
    w_v, w_o = params[f"layers.{layer}.w_v"], params[f"layers.{layer}.w_o"]
    tables = []
    for head in range(num_heads):
        cols = slice(head * d_head, (head + 1) * d_head)  # the head's columns of w_v, rows of w_o
        tables.append(params["embed"] @ w_v[:, cols] @ w_o[cols] @ params["unembed"])  # (vocab, C)
    return np.stack(tables)  # (h, vocab, num_outputs)
