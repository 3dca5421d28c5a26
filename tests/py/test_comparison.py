"""scalatrace.compare and the plots that take matrices (dense, sparse, DataFrame) and diffs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import scalatrace


def test_compare_reports_per_op_site_and_pair_differences(stencil_traces):
    a, b = stencil_traces["small"], stencil_traces["large"]
    c = scalatrace.compare(a, b)
    assert isinstance(c, scalatrace.Comparison)
    for df in (c.by_op, c.by_site, c.by_pair):
        assert isinstance(df, pd.DataFrame)
    # Same program and iteration count: identical calls, 4x the bytes of every send.
    isend = c.by_op.loc["Isend"]
    assert isend["calls_diff"] == 0 and isend["calls_a"] > 0
    assert isend["bytes_b"] == 4 * isend["bytes_a"] and isend["bytes_diff"] == 3 * isend["bytes_a"]
    assert (c.by_op["calls_diff"] == 0).all()
    # Sites match across the two runs by their stack, not their table index.
    assert (c.by_site["calls_diff"] == 0).all() and c.by_site["calls_a"].sum() == c.by_op[
        "calls_a"
    ].sum()
    assert c.by_site.index.names == ["site_key", "op"]
    # Pairs: the matrices' difference, pair by pair.
    ma, mb = a.comm_matrix("bytes"), b.comm_matrix("bytes")
    for (s, d), row in c.by_pair.iterrows():
        assert (
            row["bytes_a"] == ma[s, d]
            and row["bytes_b"] == mb[s, d]
            and row["bytes_diff"] == mb[s, d] - ma[s, d]
        )
    assert c.by_pair["bytes_a"].sum() == ma.sum() and len(c.by_pair) == np.count_nonzero(
        (ma != 0) | (mb != 0)
    )
    assert "Isend" in set(c.changed("op").index)
    assert "Comparison" in repr(c)


def test_compare_with_itself_is_all_zero(stencil_traces):
    a = stencil_traces["small"]
    c = scalatrace.compare(a, a)
    assert len(c.changed("op")) == 0 and len(c.changed("pair")) == 0 and len(c.changed("site")) == 0


def test_plots_accept_sparse_and_dataframes_and_diff(stencil_traces):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scalatrace import plot

    a, b = stencil_traces["small"], stencil_traces["large"]
    fig, axes = plt.subplots(1, 5)
    dense = a.comm_matrix()
    ax = plot.comm_heatmap(a.comm_matrix(sparse=True), ax=axes[0], colorbar=False)
    assert np.array_equal(ax.images[-1].get_array(), dense)
    ax = plot.comm_heatmap(a.comm_matrix(labels=True), ax=axes[1], colorbar=False)
    assert np.array_equal(ax.images[-1].get_array(), dense)
    ax = plot.comm_heatmap(a.comm_matrix(sparse=True, labels=True), ax=axes[2], colorbar=False)
    assert np.array_equal(ax.images[-1].get_array(), dense)
    ax = plot.comm_diff(a, b, ax=axes[3])
    image = ax.images[-1]
    diff = b.comm_matrix() - a.comm_matrix()
    assert np.array_equal(image.get_array(), diff)
    norm = image.norm
    assert norm.vcenter == 0 and norm.vmin == -norm.vmax == -np.abs(diff).max()  # centred scale
    assert plot.op_bars(a.summary(), value="bytes", ax=axes[4]) is axes[4]
    with pytest.raises(scalatrace.UsageError, match="shape"):
        plot.comm_diff(np.zeros((2, 2)), np.zeros((3, 3)), ax=axes[3])
    plt.close(fig)


def test_large_sparse_matrix_is_drawn_in_blocks():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scipy.sparse

    from scalatrace import plot

    n = 10_000  # dense would be 800 MB
    m = scipy.sparse.coo_matrix((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    fig, ax = plt.subplots()
    plot.comm_heatmap(m, ax=ax, colorbar=False)
    shown = ax.images[-1].get_array()
    assert max(shown.shape) <= plot.MAX_DRAWN_ROWS and shown.sum() == n
    plt.close(fig)
