"""Matplotlib plots of traces. Every function takes ``ax=`` and returns the Axes it drew on.

Matrix plots accept a :class:`~scalatrace.Trace`, a NumPy array, a ``scipy.sparse`` matrix or a
``pandas.DataFrame`` (e.g. ``trace.comm_matrix(labels=True)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from ._base import OP_NAMES
from ._model import Event, Loop
from .errors import UsageError, check_choice

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ._model import TraceModel


def _axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.gca()


#: Matrices larger than this many rows are summed into blocks before drawing.
MAX_DRAWN_ROWS = 2048


def _matrix(source: Any, metric: str = "bytes", kind: str = "p2p") -> np.ndarray:
    """A square matrix to draw from a Trace, ndarray, scipy.sparse matrix or DataFrame.

    Sparse matrices with more than :data:`MAX_DRAWN_ROWS` rows are summed into blocks so the
    dense image stays small.
    """
    if hasattr(source, "comm_matrix"):
        n = source.nranks
        source = source.comm_matrix(metric=metric, kind=kind, sparse=n > MAX_DRAWN_ROWS)
    if isinstance(source, pd.DataFrame):
        sparse_columns = len(source.columns) and all(
            isinstance(d, pd.SparseDtype) for d in source.dtypes
        )
        source = source.sparse.to_coo() if sparse_columns else source.to_numpy(dtype=float)
    if hasattr(source, "tocoo"):
        coo = source.tocoo()
        rows, cols = coo.shape
        factor = max(1, -(-max(rows, cols) // MAX_DRAWN_ROWS))
        out = np.zeros((-(-rows // factor), -(-cols // factor)))
        np.add.at(out, (coo.row // factor, coo.col // factor), coo.data)
        return out
    m = np.asarray(source, dtype=float)
    if m.ndim != 2:
        raise UsageError(f"expected a 2-D matrix, got shape {m.shape}")
    return m


def comm_heatmap(
    trace_or_matrix: TraceModel | np.ndarray,
    metric: Literal["bytes", "messages"] = "bytes",
    kind: Literal["p2p", "collective", "all"] = "p2p",
    log: bool = False,
    ax: Axes | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    order: Any = None,
) -> Axes:
    """Heatmap of the communication matrix (sender rows, receiver columns).

    Parameters
    ----------
    trace_or_matrix : Trace, array, scipy.sparse matrix or DataFrame
        A trace (its ``comm_matrix(metric, kind)`` is drawn) or a square matrix.
    log : bool
        Logarithmic colour scale (zero cells stay blank).
    order : array of int or Clusters, optional
        Cluster label per rank (``Trace.clusters().labels``, or the Clusters itself): rows and
        columns are grouped by cluster (stable within a cluster), rank numbers on the ticks and
        lines between clusters.
    """
    from matplotlib.colors import LogNorm

    check_choice("metric", metric, ("bytes", "messages"))
    check_choice("kind", kind, ("p2p", "collective", "all"))
    ax = _axes(ax)
    m = _matrix(trace_or_matrix, metric, kind)
    permutation = _cluster_order(order, m.shape[0]) if order is not None else None
    if permutation is not None:
        m = m[np.ix_(permutation, permutation)]
    shown = np.ma.masked_equal(m, 0) if log else m
    norm = (
        LogNorm(vmin=max(float(m[m > 0].min()), 1e-12), vmax=float(m.max()))
        if log and (m > 0).any()
        else None
    )
    im = ax.imshow(shown, cmap=cmap, norm=norm, interpolation="nearest", origin="upper")
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("receiver rank")
    ax.set_ylabel("sender rank")
    kinds = {"p2p": "point-to-point", "collective": "collective", "all": "all"}
    ax.set_title(f"{kinds[kind]} {'bytes sent' if metric == 'bytes' else 'messages'}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # ranks, not 0.5 steps
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if permutation is not None:
        _mark_clusters(ax, order, permutation)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=metric)
    return ax


OP_BAR_VALUES = {
    "calls": "calls (all ranks)",
    "bytes": "bytes sent",
    "duration_ns": "time in calls (ns)",
    "compute_ns": "compute before calls (ns)",
    "mean_duration_ns": "mean time per call (ns)",
}


def op_bars(
    trace: TraceModel | Any,
    value: Literal["calls", "bytes", "duration_ns", "compute_ns", "mean_duration_ns"] = "calls",
    ax: Axes | None = None,
    log: bool = False,
) -> Axes:
    """Bar chart of calls (or bytes, or total time) per MPI operation.

    Parameters
    ----------
    trace : Trace or pandas.DataFrame
        A trace, or a summary frame with an ``op`` column (``trace.summary()``).
    value : {"calls", "bytes", "duration_ns", "compute_ns", "mean_duration_ns"}
        The summary column drawn.
    """
    check_choice("value", value, tuple(OP_BAR_VALUES))
    ax = _axes(ax)
    table = trace.summary() if hasattr(trace, "summary") else trace
    ops = list(table["op"])
    vals = np.asarray(table[value])
    ax.bar(range(len(ops)), vals, color="tab:blue")
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels(ops, rotation=45, ha="right")
    ax.set_ylabel(OP_BAR_VALUES[value])
    ax.set_xlabel("MPI operation")
    ax.set_title(f"{OP_BAR_VALUES[value]} per operation")
    if log:
        ax.set_yscale("log")
    return ax


def loop_structure(
    trace: TraceModel, rank: int = 0, ax: Axes | None = None, max_nodes: int = 200
) -> Axes:
    """Picture of ``rank``'s loop nesting: one row per node, loops as brackets with trip counts."""
    from matplotlib.patches import Rectangle

    if not 0 <= rank < trace.nranks:
        raise UsageError(f"rank {rank} out of range: the trace has {trace.nranks} ranks")
    ax = _axes(ax)
    rows: list[tuple[int, Any]] = []
    for node in trace.walk():
        if len(node.ranks) and rank not in node.ranks:
            continue
        rows.append((node.depth, node))
        if len(rows) >= max_nodes:
            break
    n = len(rows)
    for i, (depth, node) in enumerate(rows):
        y = n - i
        if isinstance(node, Loop):
            span = _loop_span(rows, i)
            ax.add_patch(
                Rectangle((depth, y - span + 0.1), 0.25, span - 0.2, color="tab:orange", alpha=0.6)
            )
            seq = node.trips.for_rank(rank)
            label = "loop x" + (str(seq[0]) if seq is not None and seq.is_constant() else "?")
            if seq is not None and len(seq) > 1:
                label += f" ({len(seq)} visits, {node.iterations(rank)} total)"
            ax.text(depth + 0.35, y, label, va="center", fontsize=8, color="tab:orange")
        elif isinstance(node, Event):
            ax.plot([depth], [y], "o", color="tab:blue", ms=4)
            ax.text(depth + 0.35, y, f"{node.op} (site {node.site})", va="center", fontsize=8)
    ax.set_xlim(-0.5, max([d for d, _ in rows] + [0]) + 6)
    ax.set_ylim(0, n + 1)
    ax.set_yticks([])
    ax.set_xlabel("nesting depth")
    ax.set_title(f"loop structure of rank {rank}")
    return ax


def _loop_span(rows: list[tuple[int, Any]], i: int) -> int:
    depth = rows[i][0]
    j = i + 1
    while j < len(rows) and rows[j][0] > depth:
        j += 1
    return j - i


def comm_diff(
    a: Any,
    b: Any,
    metric: Literal["bytes", "messages"] = "bytes",
    kind: Literal["p2p", "collective", "all"] = "p2p",
    ax: Axes | None = None,
    cmap: str = "RdBu_r",
    colorbar: bool = True,
) -> Axes:
    """Heatmap of ``b - a`` communication matrices on a diverging colour scale centred on 0.

    Red cells: ``b`` sends more than ``a``; blue: less; white: unchanged.

    Parameters
    ----------
    a, b : Trace, array, scipy.sparse matrix or DataFrame
        Two runs (or their matrices) with the same rank count.
    """
    from matplotlib.colors import CenteredNorm

    check_choice("metric", metric, ("bytes", "messages"))
    check_choice("kind", kind, ("p2p", "collective", "all"))
    ma, mb = _matrix(a, metric, kind), _matrix(b, metric, kind)
    if ma.shape != mb.shape:
        raise UsageError(
            f"matrices differ in shape: {ma.shape} vs {mb.shape} (different rank counts?)"
        )
    diff = mb - ma
    ax = _axes(ax)
    halfrange = float(np.abs(diff).max()) or 1.0
    im = ax.imshow(
        diff,
        cmap=cmap,
        norm=CenteredNorm(vcenter=0.0, halfrange=halfrange),
        interpolation="nearest",
        origin="upper",
    )
    ax.set_xlabel("receiver rank")
    ax.set_ylabel("sender rank")
    ax.set_title(f"{kind} {metric}: b - a")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=f"{metric} (b - a)")
    return ax


def timeline(result: Any, ranks: Any = None, ax: Any = None, max_events: int = 20000) -> Any:
    """Gantt chart of a simulation: one row per rank, one bar per MPI call (start to end),
    coloured by operation; the gaps between bars are compute.

    Parameters
    ----------
    result : scalatrace.simulate.SimResult
        From ``scalatrace.simulate(..., timeline=True)``.
    ranks : sequence of int, optional
        Ranks to show (default: all, up to 64).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into (default: a new figure).
    max_events : int
        At most this many bars are drawn (the earliest).

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt
    import numpy as np

    tl = result.timeline
    if len(tl["rank"]) == 0:
        raise UsageError("the result has no timeline: simulate with timeline=True")
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 4))
    shown = list(range(min(result.nranks, 64))) if ranks is None else [int(r) for r in ranks]
    keep = np.isin(tl["rank"], shown)
    order = np.argsort(tl["start"][keep], kind="stable")[:max_events]
    rank, op = tl["rank"][keep][order], tl["op"][keep][order]
    start, end = tl["start"][keep][order], tl["end"][keep][order]
    names = np.array(OP_NAMES)[op] if len(op) else np.array([], dtype=str)
    _gantt(ax, shown, rank, start, end, names)
    ax.set_xlabel("simulated time (s)")
    ax.set_title(f"simulated timeline ({result.total_time:.3g} s)")
    return ax


def op_colours(ops: Any) -> dict[str, Any]:
    """A colour per op name, far apart: ``tab10`` up to 10 ops, else ``tab20``'s dark shades
    first and its light shades after (neighbouring ops never get a pair of similar shades)."""
    import matplotlib.pyplot as plt

    names = sorted(set(ops))
    if len(names) <= 10:
        cmap = plt.get_cmap("tab10")
        return {o: cmap(i) for i, o in enumerate(names)}
    cmap = plt.get_cmap("tab20")
    order = list(range(0, 20, 2)) + list(range(1, 20, 2))
    return {o: cmap(order[i % 20]) for i, o in enumerate(names)}


def _gantt(
    ax: Axes, shown: list[int], rank: np.ndarray, start: Any, end: Any, ops: np.ndarray
) -> None:
    """Bars per (rank row, op), one colour per op, the legend outside the data on the right."""
    row = {r: i for i, r in enumerate(shown)}
    colour = op_colours(ops.tolist())
    start, end = np.asarray(start), np.asarray(end)
    for o, c in colour.items():
        sel = ops == o
        ax.barh(
            [row[r] for r in rank[sel]],
            end[sel] - start[sel],
            left=start[sel],
            height=0.8,
            color=c,
            label=o,
        )
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([str(r) for r in shown])
    ax.set_ylabel("rank")
    ax.invert_yaxis()
    if colour:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)


def _exactness(frame: Any) -> str:
    return "measured" if frame.attrs.get("exact") else "from the trace's timing statistics"


def run_timeline(
    source: Any, ranks: Any = None, ax: Axes | None = None, max_events: int = 20000
) -> Axes:
    """Gantt chart of the recorded run: one row per rank, one bar per MPI call, coloured by
    operation; gaps are computation. Times since each rank's ``MPI_Init`` returned.

    Parameters
    ----------
    source : RawRecording, Trace or to_dataframe() frame
        A raw recording gives the measured times (exact); a trace its timing statistics
        (see :mod:`scalatrace.views`).
    ranks : sequence of int, optional
        Ranks to show (default: all, up to 64).
    max_events : int
        At most this many bars (the earliest).
    """
    from .views import events

    ax = _axes(ax)
    ev = events(source)
    all_ranks = np.unique(ev.index.get_level_values("rank"))
    shown = [int(r) for r in (all_ranks[:64] if ranks is None else ranks)]
    ev = ev[ev.index.get_level_values("rank").isin(shown)]
    ev = ev.sort_values("start_ns", kind="stable").iloc[:max_events]
    rank = ev.index.get_level_values("rank").to_numpy()
    _gantt(
        ax, shown, rank, ev["start_ns"] / 1e6, ev["end_ns"] / 1e6, ev["op"].astype(str).to_numpy()
    )
    ax.set_xlabel("time since MPI_Init (ms)")
    ax.set_title(f"timeline of the run ({_exactness(ev)})")
    return ax


def time_profile(source: Any, bins: int = 50, ax: Axes | None = None) -> Axes:
    """Stacked time per op (and computation) in equal time bins, summed over ranks
    (:func:`scalatrace.views.time_profile`)."""
    from .views import time_profile as profile

    ax = _axes(ax)
    table = profile(source, bins=bins)
    x = table.index.to_numpy() / 1e6
    width = table.attrs["bin_ns"] / 1e6
    colour = op_colours([c for c in table.columns if c != "compute"])
    colour["compute"] = (0.85, 0.85, 0.85, 1.0)
    bottom = np.zeros(len(table))
    ordered = ["compute"] + [c for c in table.columns if c != "compute"]
    for column in ordered:
        if column not in table:
            continue
        values = table[column].to_numpy() / 1e6
        ax.bar(
            x, values, width=width, bottom=bottom, align="edge", color=colour[column], label=column
        )
        bottom += values
    ax.set_xlabel("time since MPI_Init (ms)")
    ax.set_ylabel("time in bin, all ranks (ms)")
    ax.set_title(f"time profile ({_exactness(table)})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return ax


def rank_times(source: Any, ax: Axes | None = None) -> Axes:
    """Per rank: computation, waiting (blocking calls) and other MPI time, stacked
    (:func:`scalatrace.views.rank_times`): the load imbalance and idle time of the run."""
    from .views import rank_times as times

    ax = _axes(ax)
    table = times(source)
    ranks = table.index.to_numpy()
    compute = table["compute_ns"].to_numpy() / 1e6
    wait = table["wait_ns"].to_numpy() / 1e6
    other = (table["mpi_ns"] - table["wait_ns"]).to_numpy() / 1e6
    ax.bar(ranks, compute, color="tab:green", label="computation")
    ax.bar(ranks, wait, bottom=compute, color="tab:red", label="waiting in MPI")
    ax.bar(ranks, other, bottom=compute + wait, color="tab:blue", label="other MPI")
    ax.set_xlabel("rank")
    ax.set_ylabel("time (ms)")
    ax.set_title(f"time per rank ({_exactness(table)})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return ax


def critical_path(source: Any, ax: Axes | None = None, **options: Any) -> Axes:
    """The critical path (:func:`scalatrace.views.critical_path`) on the replayed run's time
    axis: one row per rank, grey up to the rank's replayed end, the path's computation (green)
    and calls (blue) in strong colours, and an arrow for every message or collective that passes
    the path from one rank to another.

    Parameters
    ----------
    source : RawRecording, Trace, or the DataFrame ``views.critical_path`` returned
    **options
        Passed to :func:`scalatrace.views.critical_path` (``latency_ns``, ``ns_per_byte``).
    """
    from .views import critical_path as find_path

    ax = _axes(ax)
    path = source if isinstance(source, pd.DataFrame) else find_path(source, **options)
    ends = path.attrs.get("rank_end_ns", {})
    shown = sorted(ends) if 0 < len(ends) <= 64 else sorted(set(path["rank"]))
    row = {r: i for i, r in enumerate(shown)}
    ax.barh(
        [row[r] for r in shown],
        [ends.get(r, 0) / 1e6 for r in shown],
        left=0,
        height=0.8,
        color=(0.9, 0.9, 0.9, 1.0),
        label="replayed run",
    )
    rank = path["rank"].to_numpy()
    start, end = path["start_ns"].to_numpy() / 1e6, path["end_ns"].to_numpy() / 1e6
    compute, call = path["compute_ns"].to_numpy() / 1e6, path["call_ns"].to_numpy() / 1e6
    lanes = np.array([row[r] for r in rank])
    pieces = (
        (compute, start - compute, "tab:green", "computation on the path"),
        (call, end - call, "tab:blue", "MPI call on the path"),
    )
    for width, left, colour, label in pieces:
        on = width > 0
        ax.barh(lanes[on], width[on], left=left[on], height=0.5, color=colour, label=label)
    hops = 0
    for i in range(1, len(path)):
        if rank[i] == rank[i - 1]:
            continue
        ax.annotate(
            "",
            xy=(end[i] - call[i], lanes[i]),
            xytext=(start[i - 1], lanes[i - 1]),
            arrowprops={"arrowstyle": "->", "color": "tab:red", "lw": 1.2},
        )
        hops += 1
    if hops:
        ax.plot([], [], color="tab:red", label="message / collective")
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([str(r) for r in shown])
    ax.set_ylabel("rank")
    ax.invert_yaxis()
    ax.set_xlabel("replayed time since MPI_Init (ms)")
    order = [int(r) for i, r in enumerate(rank) if i == 0 or r != rank[i - 1]]
    chain = " > ".join(str(r) for r in order[:12]) + (" > ..." if len(order) > 12 else "")
    length = path.attrs.get("length_ns", 0) / 1e6
    ax.set_title(f"critical path ({_exactness(path)}): {length:.3g} ms, ranks {chain}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return ax


def message_histogram(source: Any, ax: Axes | None = None) -> Axes:
    """Point-to-point messages by size class (:func:`scalatrace.views.message_histogram`)."""
    from .views import message_histogram as histogram

    ax = _axes(ax)
    table = histogram(source)
    labels = [
        "0" if hi == 0 else _bytes_text(lo) if lo == hi else f"{_bytes_text(lo)}-{_bytes_text(hi)}"
        for lo, hi in zip(table["min_bytes"], table["max_bytes"])
    ]
    ax.bar(range(len(table)), table["messages"], color="tab:purple")
    ax.set_xticks(range(len(table)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("messages")
    ax.set_title("point-to-point message sizes")
    return ax


def _bytes_text(n: int) -> str:
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(int(n))


def _labels_of(order: Any) -> np.ndarray:
    return np.asarray(getattr(order, "labels", order))


def _cluster_order(order: Any, n: int) -> np.ndarray:
    labels = _labels_of(order)
    if labels.shape != (n,):
        raise UsageError(
            f"order must hold one cluster label per rank ({n}), not shape {labels.shape}"
        )
    return np.argsort(labels, kind="stable")


def _mark_clusters(ax: Axes, order: Any, permutation: np.ndarray) -> None:
    labels = _labels_of(order)[permutation]
    for edge in np.flatnonzero(np.diff(labels)) + 0.5:
        ax.axhline(edge, color="white", lw=0.8)
        ax.axvline(edge, color="white", lw=0.8)
    if len(permutation) <= 64:
        ax.set_xticks(range(len(permutation)))
        ax.set_xticklabels([str(r) for r in permutation], fontsize=7)
        ax.set_yticks(range(len(permutation)))
        ax.set_yticklabels([str(r) for r in permutation], fontsize=7)
    ax.set_xlabel("receiver rank (grouped by cluster)")
    ax.set_ylabel("sender rank (grouped by cluster)")


def dendrogram(
    trace_or_clusters: TraceModel | Any,
    ax: Axes | None = None,
    features: Any = None,
    k: int | None = None,
) -> Axes:
    """PHANTOM-style dendrogram of complete-linkage hierarchical clustering of the ranks.

    Parameters
    ----------
    trace_or_clusters : Trace or Clusters
        A trace (clustered with ``method="hierarchical"`` and the given ``features``/``k``) or
        the result of ``Trace.clusters(method="hierarchical")``.
    features, k
        Passed to ``Trace.clusters`` when a trace is given.

    Returns
    -------
    matplotlib.axes.Axes
        Leaves are behaviours, named by their lowest rank ("4 (x9)": 9 ranks with identical
        events); branches below the cut that gives the clusters share a colour.
    """
    from scipy.cluster.hierarchy import dendrogram as scipy_dendrogram

    from .clustering import clusters

    result = trace_or_clusters
    if not hasattr(result, "linkage"):
        result = clusters(trace_or_clusters, k=k, method="hierarchical", features=features)
    if result.linkage is None:
        raise UsageError("a dendrogram needs hierarchical clustering of at least two ranks")
    ax = _axes(ax)
    z = result.linkage
    kk = result.k
    # The cut lies between the merge that leaves kk clusters and the one that leaves kk - 1.
    cut = float(z[-kk, 2] + z[-kk + 1, 2]) / 2 if 1 < kk <= len(z) else None
    leaves = result.leaves if result.leaves is not None else np.arange(len(result.labels))
    sizes = (
        result.leaf_sizes if result.leaf_sizes is not None else np.ones(len(leaves), dtype=np.int64)
    )
    names = [f"{r}" if c == 1 else f"{r} (x{c})" for r, c in zip(leaves.tolist(), sizes.tolist())]
    scipy_dendrogram(z, ax=ax, labels=names, color_threshold=cut)
    if cut is not None:
        ax.axhline(cut, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("rank (x n: n ranks with identical events)")
    ax.set_ylabel("complete-linkage distance (" + ", ".join(result.features) + ")")
    ax.set_title(f"{kk} clusters")
    return ax
