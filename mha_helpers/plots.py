"""Attention heatmaps with the course's conventions.

Rows are queries (the token doing the looking), columns are keys (the token looked at), both
labelled with the tokens; the colormap is ``cividis`` (perceptually uniform and colour-blind
safe) on a fixed 0..1 scale so heads can be compared by eye.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plot_attention", "plot_heads", "CMAP"]

CMAP = "cividis"


def plot_attention(weights, tokens, ax=None, title="Attention weights", key_tokens=None,
                   annotate=None, colorbar=True):
    """Draw one ``(n_q, n_k)`` attention matrix as a labelled heatmap; return the axes.

    ``tokens`` labels the queries (rows); ``key_tokens`` the keys (columns), default ``tokens``.
    ``annotate`` writes each weight in its cell (default: when the matrix is at most 8 x 8).
    """
    import matplotlib.pyplot as plt

    weights = np.asarray(weights)
    if weights.ndim != 2:
        raise ValueError(f"weights has shape {weights.shape}, expected (n_q, n_k) for one head")
    key_tokens = tokens if key_tokens is None else key_tokens
    if len(tokens) != weights.shape[0] or len(key_tokens) != weights.shape[1]:
        raise ValueError(
            f"got {len(tokens)} query labels and {len(key_tokens)} key labels for weights of "
            f"shape {weights.shape}: one label per row and one per column"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * weights.shape[1] + 2.2, 0.5 * weights.shape[0] + 1.6))
    im = ax.imshow(weights, cmap=CMAP, vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(key_tokens)), labels=list(key_tokens), rotation=45, ha="right")
    ax.set_yticks(range(len(tokens)), labels=list(tokens))
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    if annotate is None:
        annotate = max(weights.shape) <= 8
    if annotate:
        for i in range(weights.shape[0]):
            for j in range(weights.shape[1]):
                w = weights[i, j]
                ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if w > 0.6 else "white")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


def plot_heads(weights, tokens, title="Attention weights per head", key_tokens=None,
               max_cols=4, figure=None):
    """Draw ``(h, n_q, n_k)`` weights as a grid of labelled heatmaps, one per head.

    Returns the figure. Pass ``figure`` to redraw into an existing figure (widgets do this so
    plots replace each other instead of piling up).
    """
    import matplotlib.pyplot as plt

    weights = np.asarray(weights)
    if weights.ndim != 3:
        raise ValueError(f"weights has shape {weights.shape}, expected (h, n_q, n_k)")
    h = weights.shape[0]
    cols = min(h, max_cols)
    rows = -(-h // cols)
    n_k = weights.shape[2]
    size = (2.6 * cols + 0.6, 2.4 * rows + 0.6) if n_k <= 10 else (3.2 * cols, 3.0 * rows)
    if figure is None:
        figure = plt.figure(figsize=size, layout="constrained")
    else:
        figure.clear()
        figure.set_size_inches(*size)
    axes = figure.subplots(rows, cols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= h:
            ax.set_axis_off()
            continue
        plot_attention(weights[i], tokens, ax=ax, title=f"head {i}", key_tokens=key_tokens,
                       annotate=False, colorbar=False)
        if i % cols:
            ax.set_ylabel("")
        if i < h - cols:
            ax.set_xlabel("")
    # One colour scale for all heads (every heatmap uses 0..1), so one colorbar serves them all.
    figure.colorbar(axes.flat[0].images[0], ax=axes, fraction=0.046, pad=0.04, label="weight")
    figure.suptitle(title)
    return figure
