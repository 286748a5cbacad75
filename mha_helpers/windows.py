"""Sliding-window attention, its rolling-buffer KV cache, and attention sinks (lesson 08).

A sliding window of ``window`` positions lets query i attend to keys i - window + 1, ..., i:
itself and the ``window - 1`` tokens before it (Mistral 7B, Jiang et al. 2023, arXiv 2310.06825,
§2). Stacked layers pass information further: after L layers, token i can be influenced by
tokens up to L (window - 1) positions back. Because no query ever looks further back than the
window, generation needs only the last ``window`` keys and values: a rolling buffer that writes
the keys and values of position t into slot ``t % window``.

An attention sink (Xiao et al. 2023, "StreamingLLM", arXiv 2309.17453) keeps the first few
positions in the cache as well, forever: :func:`sink_window_mask`. With rotary position
embeddings a cache with sinks is not enough to stream past the length a model was trained on:
keys rotated by their positions in the text put a sink 10,000 positions away from the query
after 10,000 tokens. StreamingLLM (§3.2) caches keys *before* rotation and assigns positions
within the cache at every step, so no distance ever exceeds the cache's size:
:meth:`RollingKVCache.cache_positions` and :func:`streaming_attention`.

>>> sliding_window_mask(4, 2).astype(int)
array([[1, 0, 0, 0],
       [1, 1, 0, 0],
       [0, 1, 1, 0],
       [0, 0, 1, 1]])
"""

from __future__ import annotations

import numpy as np

from .attention import scaled_dot_product_attention
from .latent import rope
from .shapes import _fmt, as_float_array, positive_int

__all__ = [
    "sliding_window_mask",
    "sink_window_mask",
    "receptive_field",
    "RollingKVCache",
    "streaming_attention",
]


def sliding_window_mask(n, window) -> np.ndarray:
    """Boolean ``(n, n)`` mask, True where query i may attend to key j: ``i - window < j <= i``.

    ``window >= n`` gives the causal mask.
    """
    n = positive_int(n, "n", " of tokens")
    window = positive_int(window, "window", " of positions")
    i = np.arange(n)[:, None]  # (n, 1): query positions
    j = np.arange(n)[None, :]  # (1, n): key positions
    return (j <= i) & (j > i - window)  # (n, n)


def sink_window_mask(n, window, sinks) -> np.ndarray:
    """A sliding window plus the first ``sinks`` positions, which every later query may see.

    The cache of a streaming model that keeps ``sinks`` attention sinks and the last ``window``
    tokens (Xiao et al. 2023). ``sinks=0`` is :func:`sliding_window_mask`.

    >>> sink_window_mask(4, 1, 1).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [1, 0, 1, 0],
           [1, 0, 0, 1]])
    """
    mask = sliding_window_mask(n, window)  # (n, n)
    if isinstance(sinks, bool) or not isinstance(sinks, (int, np.integer)) or sinks < 0:
        raise ValueError(
            f"sinks must be a whole number >= 0 (the first positions kept), got {sinks!r}"
        )
    causal = np.tril(np.ones((n, n), dtype=bool))  # (n, n)
    mask[:, :sinks] |= causal[:, :sinks]
    return mask


def receptive_field(n, window, num_layers) -> np.ndarray:
    """How many input positions can influence each position after each layer.

    Returns an int array ``(num_layers, n)``: row L - 1, column i counts the positions j whose
    token can reach position i through L stacked sliding-window layers (the residual stream
    carries each position's own state upwards). Computed by composing the boolean mask with
    itself, so it makes no assumption about the closed form ``min(i, L (window - 1)) + 1``.

    >>> receptive_field(6, 2, 3)[:, -1]          # the last token, after 1, 2, 3 layers
    array([2, 3, 4])
    """
    mask = sliding_window_mask(n, window).astype(np.int64)  # (n, n): who reads whom, one layer
    num_layers = positive_int(num_layers, "num_layers")
    reach = np.eye(n, dtype=np.int64)  # (n, n): before any layer, each position is itself
    rows = []
    for _ in range(num_layers):
        reach = np.minimum(mask @ reach, 1)  # (n, n): j reaches i through one more layer
        rows.append(reach.sum(axis=1))  # (n,)
    return np.stack(rows)  # (num_layers, n)


class RollingKVCache:
    """A fixed-size KV cache for sliding-window attention: position t lives in slot t % window.

    Keeps the keys and values of the last ``window`` positions (and, with ``sinks``, of the
    first ``sinks`` positions too, in slots of their own that are never overwritten). Memory is
    fixed however long the stream runs.

    >>> cache = RollingKVCache(window=2, d_k=1, d_v=1)
    >>> for t in range(5):
    ...     cache.append(np.array([float(t)]), np.array([float(t)]))
    >>> cache.positions()                     # the slots hold positions 4 and 3
    array([4, 3])
    """

    def __init__(self, window, d_k, d_v, sinks=0):
        self.window = positive_int(window, "window", " of positions")
        if isinstance(sinks, bool) or not isinstance(sinks, (int, np.integer)) or sinks < 0:
            raise ValueError(f"sinks must be a whole number >= 0, got {sinks!r}")
        self.sinks = int(sinks)
        size = self.sinks + self.window
        self.keys = np.zeros((size, positive_int(d_k, "d_k")))  # (sinks + window, d_k)
        self.values = np.zeros((size, positive_int(d_v, "d_v")))  # (sinks + window, d_v)
        self._pos = np.full(size, -1)  # the position held by each slot, -1 = empty
        self.t = 0  # positions appended so far

    def slot(self, t) -> int:
        """Where position ``t`` is written: its own slot if it is a sink, else a rolling one."""
        return t if t < self.sinks else self.sinks + (t - self.sinks) % self.window

    def append(self, k, v):
        """Store the key ``(d_k,)`` and value ``(d_v,)`` of the next position."""
        k, v = as_float_array(k, "k"), as_float_array(v, "v")
        for name, arr, width in (("k", k, self.keys.shape[1]), ("v", v, self.values.shape[1])):
            if arr.shape != (width,):
                raise ValueError(
                    f"{name} has shape {_fmt(arr.shape)}, expected ({width},): one position's "
                    f"{'key' if name == 'k' else 'value'}"
                )
        s = self.slot(self.t)
        self.keys[s], self.values[s], self._pos[s] = k, v, self.t
        self.t += 1

    def filled(self) -> np.ndarray:
        """Boolean ``(sinks + window,)``: which slots hold a position."""
        return self._pos >= 0

    def positions(self) -> np.ndarray:
        """The positions held by the filled slots, in slot order (not time order)."""
        return self._pos[self.filled()]

    def cache_positions(self) -> np.ndarray:
        """The position each filled slot gets *within the cache*, in slot order (StreamingLLM,
        Xiao et al. 2023, §3.2): the sinks keep 0 .. sinks - 1, and the other held positions,
        taken in time order, follow as sinks, sinks + 1, ... So the newest token's position is
        the number of filled slots minus one, however long the stream.

        >>> cache = RollingKVCache(window=4, d_k=2, d_v=1, sinks=4)
        >>> for t in range(10):                  # tokens 0 .. 9; 4 and 5 have left the window
        ...     cache.append(np.zeros(2), np.zeros(1))
        >>> cache.positions(), cache.cache_positions()
        (array([0, 1, 2, 3, 8, 9, 6, 7]), array([0, 1, 2, 3, 6, 7, 4, 5]))
        """
        held = self.positions()  # (filled,): positions in the text, slot order
        order = np.argsort(held, kind="stable")  # slots from the oldest to the newest
        ranks = np.empty(len(held), dtype=np.int64)
        ranks[order] = np.arange(len(held))  # (filled,): the rank of each slot in time order
        return ranks


def streaming_attention(q, cache, base: float = 10000.0):
    """Attend the newest token's query to a :class:`RollingKVCache` of keys stored *before*
    rotation, with rotary positions assigned within the cache (StreamingLLM, Xiao et al. 2023,
    §3.2): each cached key is rotated by :meth:`RollingKVCache.cache_positions`, the query by
    the position of the newest entry (its own key must already be appended).

    ``q``: ``(d_k,)`` or ``(1, d_k)``, not yet rotated, ``d_k`` even. Returns
    ``(output, weights)``, ``(1, d_v)`` and ``(1, filled slots)``, as
    :func:`mha_helpers.scaled_dot_product_attention` does. The model then sees the same
    scores as for a short sequence made of the cached tokens in time order at positions
    0, 1, 2, ...: no distance between a query and a key exceeds ``sinks + window - 1``, which
    is what lets a model trained on short sequences run on an endless stream.
    """
    if not isinstance(cache, RollingKVCache):
        raise ValueError(f"cache must be a RollingKVCache, got {type(cache).__name__}")
    q = as_float_array(q, "q").reshape(1, -1) if np.ndim(q) == 1 else as_float_array(q, "q")
    d_k = cache.keys.shape[1]
    if q.shape != (1, d_k):
        raise ValueError(
            f"q has shape {_fmt(q.shape)}, expected ({d_k},) or (1, {d_k}): the newest token's "
            f"query, as wide as the cached keys"
        )
    held = cache.filled()
    if not held.any():
        raise ValueError("the cache is empty: append the newest token's key and value first")
    positions = cache.cache_positions()  # (filled,)
    keys = rope(cache.keys[held], positions, base)  # (filled, d_k): rotated at every step
    query = rope(q, np.array([positions.max()]), base)  # (1, d_k): the newest position
    return scaled_dot_product_attention(query, keys, cache.values[held])
