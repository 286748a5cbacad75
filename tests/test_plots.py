"""The heatmap helpers label what a learner needs to read them."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mha_helpers import plot_attention, plot_heads  # noqa: E402


def _weights(h, n):
    return np.random.default_rng(0).dirichlet(np.ones(n), size=(h, n))


def test_plot_attention_labels_rows_as_queries_and_columns_as_keys():
    ax = plot_attention(_weights(1, 3)[0], ["a", "b", "c"], title="one head")
    assert ax.get_title() == "one head"
    assert ax.get_ylabel().startswith("query") and ax.get_xlabel().startswith("key")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert ax.images[0].get_cmap().name == "cividis" and ax.images[0].get_clim() == (0.0, 1.0)
    plt.close("all")


def test_plot_attention_refuses_labels_that_do_not_match_the_matrix():
    with pytest.raises(ValueError, match="one label per row and one per column"):
        plot_attention(_weights(1, 3)[0], ["a", "b"])
    with pytest.raises(ValueError, match=r"expected \(n_q, n_k\)"):
        plot_attention(_weights(2, 3), ["a", "b", "c"])


def test_plot_heads_draws_one_titled_heatmap_per_head_and_one_colorbar():
    fig = plot_heads(_weights(5, 4), list("wxyz"), title="five heads")
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in heatmaps] == [f"head {i}" for i in range(5)]
    assert fig._suptitle.get_text() == "five heads"
    colorbars = [ax for ax in fig.axes if ax.get_ylabel() == "weight"]
    assert len(colorbars) == 1
    # Redrawing into the same figure replaces the heatmaps instead of adding more.
    plot_heads(_weights(2, 4), list("wxyz"), figure=fig)
    assert len([ax for ax in fig.axes if ax.images]) == 2
    plt.close("all")
