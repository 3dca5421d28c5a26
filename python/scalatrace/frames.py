"""pandas views of traces: per-event frames, summaries, labelled matrices.

Every frame here is a plain :class:`pandas.DataFrame`; times are nanoseconds (columns end in
``_ns``), sizes are bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from . import _core
from ._base import DEFAULT_MAX_EVENTS, OP_NAMES, with_rank_and_names  # noqa: F401  (re-exported)
from .errors import TooLargeError, UsageError

EVENT_COLUMNS = (
    "op",
    "peer",
    "bytes",
    "tag",
    "comm",
    "site",
    "compute_ns",
    "duration_ns",
    "start_ns",
    "end_ns",
    "compute_from",
    "duration_from",
    "timing_group",
)

TIMING_SOURCES = ("measured", "per-rank", "per-group", "sampled", "none", "estimated")
"""Where a frame's ``compute_ns`` / ``duration_ns`` value comes from (columns ``compute_from`` /
``duration_from``):

``measured``
    the event's own recorded time (a raw recording, or a histogram holding just this value);
``per-rank``
    the mean of this rank's own occurrences of the event (the rank has a timing group of its
    own): sums over the rank's occurrences are the rank's measured totals;
``per-group``
    the mean of a timing group of several ranks whose times agreed (or of all the node's ranks):
    sums over the group are measured, one rank's share is not;
``sampled``
    a seeded draw from such a histogram (``timing="sample"``);
``none``
    no time (``timing="none"``, or a histogram without values);
``estimated``
    not recorded for this rank at all: an extrapolated trace, or a clustered trace
    (``SCALATRACE_CLUSTERS``) whose members read their representative's times.

Final ``.sct`` files store times within 2^-7 (0.8 %), docs/format.md.
"""


def op_categorical(
    codes: np.ndarray, functions: np.ndarray | None = None, names: Sequence[str] = ()
) -> pd.Categorical:
    """Operation codes (``rank_table``'s ``op``) as a categorical of MPI names (no ``MPI_``).

    ``functions`` (one per code, -1 for none) index ``names``, the functions recorded as
    ``Other`` (``MPI_Comm_rank``, ...): those rows get the function's name (``Comm_rank``)."""
    codes = np.asarray(codes, dtype=np.int64)
    categories = list(OP_NAMES)
    if functions is not None and len(names):
        position = {name: i for i, name in enumerate(categories)}
        index = []
        for name in names:
            short = function_label(name)
            if short not in position:
                position[short] = len(categories)
                categories.append(short)
            index.append(position[short])
        functions = np.asarray(functions, dtype=np.int64)
        named = functions >= 0
        codes = codes.copy()
        codes[named] = np.asarray(index, dtype=np.int64)[functions[named]]
    return pd.Categorical.from_codes(codes, categories=categories)


def function_label(name: str) -> str:
    """A function recorded as ``Other`` named as the ops are: without ``MPI_`` / ``PMPI_``."""
    for prefix in ("PMPI_", "MPI_"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def normalize_ranks(ranks: int | Iterable[int] | None, nranks: int) -> np.ndarray:
    """``None`` -> all ranks; an int or an iterable of ints -> sorted unique int64 array.

    Raises
    ------
    UsageError
        If a rank is outside ``0 .. nranks-1``.
    """
    if ranks is None:
        return np.arange(nranks, dtype=np.int64)
    if isinstance(ranks, (int, np.integer)):
        ranks = [int(ranks)]
    if isinstance(ranks, (str, bytes)) or not isinstance(ranks, Iterable):
        raise UsageError(f"ranks must be a rank or an iterable of ranks, not {ranks!r:.60}")
    listed = []
    for r in ranks:
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)):
            raise UsageError(f"ranks must be integers, not {r!r:.60}")
        if not 0 <= int(r) < nranks:  # checked before NumPy sees it (no OverflowError)
            raise UsageError(
                f"rank {int(r)} out of range: the trace has {nranks} ranks (0..{nranks - 1})"
            )
        listed.append(int(r))
    return np.unique(np.array(listed, dtype=np.int64))


def _sources(codes: np.ndarray) -> pd.Categorical:
    return pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64), categories=TIMING_SOURCES)


def _frame_from_columns(cols: dict[str, Any], unrecorded: Any = None) -> pd.DataFrame:
    """``unrecorded(ranks) -> bool array``: the rows whose ranks' times were never recorded
    (their times become ``estimated``)."""
    rows = cols["rows"]
    start = cols["start_ns"].astype(np.int64)
    duration = rows["duration_ns"].astype(np.int64)
    index = pd.MultiIndex.from_arrays([rows["rank"], cols["event"]], names=["rank", "event"])
    data = {
        "op": op_categorical(rows["op"], cols.get("function"), cols.get("functions", ())),
        "peer": rows["peer"],
        "bytes": rows["bytes"],
        "tag": rows["tag"],
        "comm": rows["comm"],
        "site": rows["site"].astype(np.int64),
        "compute_ns": rows["compute_ns"].astype(np.int64),
        "duration_ns": duration,
        "start_ns": start,
        "end_ns": start + duration,
    }
    guessed = unrecorded(rows["rank"]) if unrecorded is not None else None
    for column in ("compute", "duration"):
        codes = np.asarray(cols[f"{column}_source"], dtype=np.int64)
        if guessed is not None:
            keep = ~guessed | (codes == TIMING_SOURCES.index("none"))
            codes = np.where(keep, codes, TIMING_SOURCES.index("estimated"))
        data[f"{column}_from"] = _sources(codes)
    data["timing_group"] = np.asarray(cols["timing_group"], dtype=np.int64)
    frame = pd.DataFrame(data, index=index, copy=False)
    frame.attrs["timing"] = _timing_attrs(frame)
    return frame


def _timing_attrs(frame: pd.DataFrame) -> dict[str, str]:
    """Per time column, the least exact source of its values (``df.attrs["timing"]``)."""
    out: dict[str, str] = {}
    order = ("measured", "per-rank", "per-group", "sampled", "estimated", "none")
    for column in ("compute", "duration"):
        present = set(frame[f"{column}_from"].unique()) if len(frame) else {"measured"}
        out[f"{column}_ns"] = max(present, key=order.index)
    both = max(out.values(), key=order.index)
    out["start_ns"] = out["end_ns"] = both  # sums of the compute and duration before them
    return out


def unrecorded_ranks(core: _core.Trace) -> Any:
    """For traces whose times were not recorded for every rank, a function telling which of
    given ranks were not: every rank of an extrapolated trace, every rank but the
    representatives of a clustered one (``SCALATRACE_CLUSTERS``). None for other traces."""
    if "extrapolated_from" in core.metadata:
        return lambda ranks: np.ones(len(ranks), dtype=bool)
    clusters = _core.rank_clusters(core)
    if not clusters:
        return None
    representatives = np.array([int(rep) for rep, _members in clusters], dtype=np.int64)
    return lambda ranks: ~np.isin(np.asarray(ranks, dtype=np.int64), representatives)


def events_frame(
    core: _core.Trace,
    ranks: int | Iterable[int] | None = None,
    max_events: int = DEFAULT_MAX_EVENTS,
    timing: Literal["mean", "sample", "none"] = "mean",
    seed: int = 0,
) -> pd.DataFrame:
    """One row per event of ``ranks`` of the core trace ``core``; see :meth:`Trace.to_dataframe`."""
    if max_events < 0:
        raise UsageError("max_events must be >= 0")
    chosen = normalize_ranks(ranks, core.nranks)
    if ranks is None:
        # The whole trace: its event count is known from the structure, so a request beyond
        # max_events is refused before any row is built (not after max_events rows).
        _refuse_beyond(int(_core.summary(core).total_calls), core.nranks, max_events)
    cols = _core.event_columns(core, chosen, int(max_events), timing, int(seed))
    return _frame_from_columns(cols, unrecorded=unrecorded_ranks(core))


def _refuse_beyond(events: int, nranks: int, max_events: int) -> None:
    if events > max_events:
        raise TooLargeError(
            f"{events} events in {nranks} ranks, more than max_events={max_events}; pass fewer "
            "ranks (ranks=...) or a larger max_events (each row takes about 80 bytes)"
        )


def recording_frame(
    recordings: Sequence[_core.RankRecording], nranks: int, max_events: int = DEFAULT_MAX_EVENTS
) -> pd.DataFrame:
    """Like :func:`events_frame` for the raw recordings of a run of ``nranks`` ranks, with the
    recorded (measured) times; see :meth:`RawRecording.to_dataframe`."""
    if max_events < 0:
        raise UsageError("max_events must be >= 0")
    _refuse_beyond(sum(len(r) for r in recordings), nranks, max_events)
    cols = _core.recording_columns(list(recordings), nranks, int(max_events))
    return _frame_from_columns(cols)


class SummaryFrame(pd.DataFrame):
    """A :class:`pandas.DataFrame` returned by :meth:`Trace.summary`.

    Anything derived from it (selections, groupby, ...) is a plain DataFrame; the class only adds
    the ``to_pandas()`` of the former ``SummaryTable`` for older code.
    """

    @property
    def _constructor(self) -> type:
        return pd.DataFrame

    def to_pandas(self) -> pd.DataFrame:
        """The same data as a plain DataFrame (kept for code written against ``SummaryTable``)."""
        return pd.DataFrame(self)


SUMMARY_COLUMNS = (
    "calls",
    "ranks",
    "bytes",
    "duration_ns",
    "compute_ns",
    "min_duration_ns",
    "max_duration_ns",
)


def summary_frame(
    rows: Sequence[Any],
    by_site: bool,
    site_names: dict[int, str] | None = None,
    function_names: Sequence[str] = (),
) -> SummaryFrame:
    """Summary rows of the core -> DataFrame; functions recorded as ``Other`` are named by
    ``function_names`` (``Comm_rank``, one row each).

    Columns: ``op`` [, ``site``, ``where``], ``calls``, ``ranks``, ``bytes``, ``duration_ns``,
    ``compute_ns``, ``min_duration_ns``, ``max_duration_ns``, ``mean_duration_ns``.
    """
    data: dict[str, Any] = {"op": [_row_op(r, function_names) for r in rows]}
    if by_site:
        names = site_names or {}
        data["site"] = np.array([r.site for r in rows], dtype=np.int64)
        data["where"] = [names.get(r.site, str(r.site)) for r in rows]
    for name in SUMMARY_COLUMNS:
        data[name] = _rounded(np.array([getattr(r, name) for r in rows], dtype=np.float64))
    calls = data["calls"]
    data["mean_duration_ns"] = np.divide(
        data["duration_ns"], calls, out=np.zeros(len(rows)), where=calls > 0
    )
    return SummaryFrame(data)


def _row_op(row: Any, function_names: Sequence[str]) -> str:
    name_id = getattr(row, "name_id", -1)
    if row.op == "Other" and 0 <= name_id < len(function_names):
        return function_label(function_names[name_id])
    return row.op


def _rounded(values: np.ndarray) -> np.ndarray:
    """Rounded to int64, or kept as float64 if a value does not fit (a total beyond 2^63, e.g.
    the times of a raw stream holding durations near 2^64 ns: never wrapped to garbage)."""
    r = np.rint(values)
    return r.astype(np.int64) if np.all(np.abs(r) < 2.0**63) else r


def labelled_matrix(matrix: Any, name: str) -> pd.DataFrame:
    """A matrix as a DataFrame with ``sender`` rows and ``receiver`` columns.

    A ``scipy.sparse`` matrix gives a DataFrame of sparse columns (``df.sparse``), so nothing is
    densified.
    """
    rows, cols = matrix.shape
    index = pd.RangeIndex(rows, name="sender")
    columns = pd.RangeIndex(cols, name="receiver")
    if hasattr(matrix, "tocsc"):
        df = pd.DataFrame.sparse.from_spmatrix(matrix.tocsc(), index=index, columns=columns)
    else:
        df = pd.DataFrame(np.asarray(matrix), index=index, columns=columns)
    df.attrs["metric"] = name
    return df


def pairs_frame(matrix: Any, value: str) -> pd.DataFrame:
    """Non-zero cells of a (dense or sparse) matrix as rows ``sender, receiver, <value>``."""
    import scipy.sparse

    coo = scipy.sparse.coo_matrix(matrix)
    coo.sum_duplicates()
    keep = coo.data != 0
    return pd.DataFrame(
        {
            "sender": coo.row[keep].astype(np.int64),
            "receiver": coo.col[keep].astype(np.int64),
            value: coo.data[keep],
        }
    )
