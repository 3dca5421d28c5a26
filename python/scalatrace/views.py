"""Views of a run in time: timeline, time profile, per-rank imbalance and wait time, message
sizes, communication over time, the critical path (:func:`critical_path`, from
:mod:`scalatrace.critical_path`).

Every function takes a *source*: a :class:`~scalatrace.RawRecording` (``read_raw``: the measured
time of every call, so the views are exact), a :class:`~scalatrace.Trace` (times from its timing
histograms: each rank's own where the trace keeps them, a group's mean otherwise; see
docs/python.md, "Which times are whose"), or a data frame of either (``to_dataframe()``).

Time axis: each rank's own clock, in nanoseconds since its ``MPI_Init`` returned (ranks' clocks
are not synchronised; ``Init`` and ``Finalize`` themselves are left out, their durations are
start-up and tear-down). Results are pandas DataFrames; :mod:`scalatrace.plot` draws them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from ._base import OP_NAMES, check_int
from .critical_path import critical_path
from .errors import UsageError

if TYPE_CHECKING:
    import pandas

__all__ = [
    "WAITING_OPS",
    "comm_over_time",
    "critical_path",
    "events",
    "is_exact",
    "load_imbalance",
    "message_histogram",
    "rank_times",
    "time_profile",
]

_KINDS = dict(zip(OP_NAMES, _core.op_kind_names()))

WAITING_OPS: frozenset[str] = frozenset(
    op
    for op, kind in _KINDS.items()
    if kind in ("blocking-send", "blocking-recv", "sendrecv", "probe", "completion", "collective")
    and op not in ("Iprobe", "Test", "Testall", "Testany", "Testsome")
)
"""Calls in which a rank can wait for another: blocking point-to-point, ``Probe``, the ``Wait``
family and blocking collectives. Time in them is the run's wait (idle) time."""

_SEND_KINDS = ("blocking-send", "nonblocking-send", "sendrecv")
_LIFECYCLE = frozenset(op for op, kind in _KINDS.items() if kind == "lifecycle")


def events(source: Any, ranks: Any = None) -> pandas.DataFrame:
    """The source's events on each rank's clock since its ``MPI_Init`` returned.

    Returns
    -------
    pandas.DataFrame
        The source's data frame without ``Init`` / ``Finalize`` rows, with ``start_ns`` /
        ``end_ns`` shifted to the end of the rank's ``Init``, and a boolean ``waiting``
        (an op of :data:`WAITING_OPS`). ``attrs["exact"]``: True when every time is measured.
    """
    df = _frame(source, ranks)
    rank = df.index.get_level_values("rank")
    ops = df["op"].astype(str)
    init_end = df["end_ns"].where(ops.isin(["Init", "Init_thread"])).groupby(rank).max()
    offset = init_end.reindex(rank).fillna(0).to_numpy(dtype=np.int64)
    keep = ~ops.isin(_LIFECYCLE).to_numpy()
    out = df.loc[keep].copy()
    out["start_ns"] = out["start_ns"].to_numpy() - offset[keep]
    out["end_ns"] = out["end_ns"].to_numpy() - offset[keep]
    out["waiting"] = out["op"].astype(str).isin(WAITING_OPS).to_numpy()
    out.attrs = dict(df.attrs)
    out.attrs["exact"] = is_exact(df)
    return out


def is_exact(frame: pandas.DataFrame) -> bool:
    """True when every compute and duration of ``frame`` is a measured value."""
    if "compute_from" not in frame:
        return False
    return bool(
        (frame["compute_from"].astype(str) == "measured").all()
        and (frame["duration_from"].astype(str) == "measured").all()
    )


def rank_times(source: Any, ranks: Any = None) -> pandas.DataFrame:
    """Per rank: where its time went.

    Returns
    -------
    pandas.DataFrame
        Index ``rank``; int64 ns ``compute_ns`` (between MPI calls), ``mpi_ns`` (inside MPI
        calls), ``wait_ns`` (inside :data:`WAITING_OPS`), ``total_ns`` (end of the rank's last
        call); ``wait_share`` = wait / total. ``Init`` / ``Finalize`` left out.
    """
    import pandas as pd

    ev = events(source, ranks)
    rank = ev.index.get_level_values("rank")
    out = pd.DataFrame(
        {
            "compute_ns": ev["compute_ns"].groupby(rank).sum(),
            "mpi_ns": ev["duration_ns"].groupby(rank).sum(),
            "wait_ns": ev["duration_ns"].where(ev["waiting"], 0).groupby(rank).sum(),
            "total_ns": ev["end_ns"].groupby(rank).max(),
        }
    ).astype(np.int64)
    out.index.name = "rank"
    out["wait_share"] = out["wait_ns"] / out["total_ns"].where(out["total_ns"] > 0)
    out.attrs["exact"] = ev.attrs["exact"]
    return out


def load_imbalance(source: Any, ranks: Any = None) -> pandas.DataFrame:
    """Per op: how unevenly its time falls on the ranks (pipit's ``load_imbalance``).

    Returns
    -------
    pandas.DataFrame
        Index ``op`` (plus ``compute`` for the time between calls); ``total_ns``, per-rank
        ``mean_ns`` / ``min_ns`` / ``max_ns``, ``imbalance`` = max / mean (1 = even), the
        ``max_rank`` carrying the most, sorted by ``total_ns``.
    """
    import pandas as pd

    ev = events(source, ranks)
    rank = ev.index.get_level_values("rank")
    ranks_seen = np.unique(rank)
    per_rank = ev.groupby([ev["op"].astype(str), rank])["duration_ns"].sum().unstack(fill_value=0)
    per_rank = per_rank.reindex(columns=ranks_seen, fill_value=0)
    per_rank.loc["compute"] = ev["compute_ns"].groupby(rank).sum().reindex(ranks_seen, fill_value=0)
    mean = per_rank.mean(axis=1)
    out = pd.DataFrame(
        {
            "total_ns": per_rank.sum(axis=1).astype(np.int64),
            "mean_ns": mean,
            "min_ns": per_rank.min(axis=1).astype(np.int64),
            "max_ns": per_rank.max(axis=1).astype(np.int64),
            "imbalance": per_rank.max(axis=1) / mean.where(mean > 0),
            "max_rank": per_rank.idxmax(axis=1).astype(np.int64),
        }
    )
    out.index.name = "op"
    out = out.sort_values("total_ns", ascending=False)
    out.attrs["exact"] = ev.attrs["exact"]
    return out


def time_profile(source: Any, bins: int = 50, ranks: Any = None) -> pandas.DataFrame:
    """Time spent per op in each of ``bins`` equal time bins, summed over ranks.

    Each call's (and each compute stretch's) time is split over the bins it overlaps, so a row
    sums to the bin width times the number of ranks still running.

    Returns
    -------
    pandas.DataFrame
        Index ``bin_start_ns``; one column per op with time in it, and ``compute``; int64 ns.
    """
    import pandas as pd

    bins = check_int("bins", bins, lo=1, hi=100_000)
    ev = events(source, ranks)
    end = int(ev["end_ns"].max()) if len(ev) else 0
    edges = np.linspace(0, max(end, 1), bins + 1)
    columns: dict[str, np.ndarray] = {}
    ops = ev["op"].astype(str).to_numpy()
    starts, ends = ev["start_ns"].to_numpy(float), ev["end_ns"].to_numpy(float)
    compute_starts = starts - ev["compute_ns"].to_numpy(float)
    columns["compute"] = _spread(np.maximum(compute_starts, 0), np.maximum(starts, 0), edges)
    for op in sorted(set(ops)):
        pick = ops == op
        columns[op] = _spread(starts[pick], ends[pick], edges)
    out = pd.DataFrame(columns, index=pd.Index(edges[:-1].astype(np.int64), name="bin_start_ns"))
    out = out.round().astype(np.int64)
    out = out.loc[:, out.sum() > 0]
    out.attrs["bin_ns"] = float(edges[1] - edges[0])
    out.attrs["exact"] = ev.attrs["exact"]
    return out


def _spread(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Total overlap of the intervals [starts, ends) with each bin of ``edges``."""
    # Overlap with [e_i, e_{i+1}) = F(e_{i+1}) - F(e_i), F(x) = sum of clip(x - s, 0, len).
    if len(starts) == 0:
        return np.zeros(len(edges) - 1)
    order_s, order_e = np.sort(starts), np.sort(ends)
    cs, ce = (
        np.concatenate([[0.0], np.cumsum(order_s)]),
        np.concatenate([[0.0], np.cumsum(order_e)]),
    )

    def covered(x: np.ndarray) -> np.ndarray:
        ks = np.searchsorted(order_s, x, side="right")  # intervals started by x
        ke = np.searchsorted(order_e, x, side="right")  # intervals ended by x
        return (ks * x - cs[ks]) - (ke * x - ce[ke])

    return np.diff(covered(edges))


def _sends(ev: pandas.DataFrame) -> pandas.DataFrame:
    kinds = ev["op"].astype(str).map(_KINDS)
    return ev[kinds.isin(_SEND_KINDS).to_numpy() & (ev["peer"] >= 0).to_numpy()]


def message_histogram(source: Any, ranks: Any = None) -> pandas.DataFrame:
    """Point-to-point messages sent, by size (powers of two).

    Returns
    -------
    pandas.DataFrame
        One row per size class with messages: ``min_bytes`` / ``max_bytes`` (the class is
        ``[min, max]``; 0 bytes its own class), ``messages``, ``bytes``.
    """
    import pandas as pd

    sends = _sends(events(source, ranks))
    sizes = sends["bytes"].to_numpy(np.int64)
    cls = np.where(sizes > 0, np.floor(np.log2(np.maximum(sizes, 1))).astype(np.int64) + 1, 0)
    rows = []
    for c in np.unique(cls):
        pick = cls == c
        lo, hi = (0, 0) if c == 0 else (1 << (c - 1), (1 << c) - 1)
        rows.append(
            {
                "min_bytes": lo,
                "max_bytes": hi,
                "messages": int(pick.sum()),
                "bytes": int(sizes[pick].sum()),
            }
        )
    return pd.DataFrame(rows, columns=["min_bytes", "max_bytes", "messages", "bytes"])


def comm_over_time(source: Any, bins: int = 50, ranks: Any = None) -> pandas.DataFrame:
    """Point-to-point messages and bytes sent in each of ``bins`` equal time bins (by the send
    call's start).

    Returns
    -------
    pandas.DataFrame
        Index ``bin_start_ns``; ``messages``, ``bytes``.
    """
    import pandas as pd

    bins = check_int("bins", bins, lo=1, hi=100_000)
    ev = events(source, ranks)
    end = int(ev["end_ns"].max()) if len(ev) else 0
    edges = np.linspace(0, max(end, 1), bins + 1)
    sends = _sends(ev)
    where = np.clip(
        np.searchsorted(edges, sends["start_ns"].to_numpy(), side="right") - 1, 0, bins - 1
    )
    out = pd.DataFrame(
        {
            "messages": np.bincount(where, minlength=bins).astype(np.int64),
            "bytes": np.bincount(where, weights=sends["bytes"].to_numpy(float), minlength=bins)
            .round()
            .astype(np.int64),
        },
        index=pd.Index(edges[:-1].astype(np.int64), name="bin_start_ns"),
    )
    out.attrs["bin_ns"] = float(edges[1] - edges[0])
    return out


def _frame(source: Any, ranks: Any) -> pandas.DataFrame:
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        if ranks is not None:
            raise UsageError(
                "ranks= selects ranks of a trace or recording; select the frame's rows"
            )
        needed = {"op", "peer", "bytes", "compute_ns", "duration_ns", "start_ns", "end_ns"}
        missing = needed - set(source.columns)
        if missing or source.index.names[:1] != ["rank"]:
            raise UsageError(
                "the frame is not a to_dataframe() frame (index (rank, event); columns "
                f"{sorted(needed)}); missing {sorted(missing)}"
            )
        return source
    if not hasattr(source, "to_dataframe"):
        raise UsageError(
            f"expected a Trace, a RawRecording or a to_dataframe() frame, not {type(source).__name__}"
        )
    if ranks is None:
        return source.to_dataframe()
    frame = source.to_dataframe() if not hasattr(source, "_core") else None
    if frame is None:
        return source.to_dataframe(ranks=ranks)
    keep = frame.index.get_level_values("rank").isin(np.atleast_1d(ranks))
    return frame[keep]
