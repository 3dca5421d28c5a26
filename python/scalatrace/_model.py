"""The trace as data: :class:`TraceModel` (metadata, nodes, walk, find, events, rank tables, save,
dump, load), its nodes :class:`Loop` and :class:`Event`, and the registry that builds the user's
trace class (below every feature: docs/python.md, "Package levels").

This module knows no feature module: features (simulation, exports, code generation, ...) are
functions over a :class:`TraceModel` in modules above it, and :class:`scalatrace.Trace`
(``_trace.py``) is this class plus one method per feature. Features that return a trace build it
with :func:`wrap`, which makes an instance of the class registered by :func:`register_trace_class`
(``scalatrace.Trace``) without importing it.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union

import numpy as np

from . import _core
from ._base import DEFAULT_MAX_EVENTS, OP_NAMES, with_rank_and_names
from ._summary import TimestepLoop, comm_triplets_to_output
from .debuginfo import first_source_line
from .errors import ScalatraceError, TraceFormatError, UnknownNameError, UsageError, check_choice

if TYPE_CHECKING:
    import pandas
    import scipy.sparse

Metric = Literal["bytes", "messages"]
Kind = Literal["p2p", "collective", "all"]
Node = Union["Loop", "Event"]

_PROGRAM_KEYS = ("program", "executable", "exe")
_COMMAND_KEYS = ("command_line", "cmdline", "command", "argv")
_DATE_KEYS = ("date", "start_time", "time", "created")


def _first(metadata: dict[str, str], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        if k in metadata:
            return metadata[k]
    return None


@dataclass(frozen=True)
class CallSiteInfo:
    """One call site of the trace's call-site table.

    Attributes
    ----------
    id : int
        Index used by events (``Event.site``, rank tables).
    frames : list of (str, int)
        ``(module path, offset inside the module)`` per stack frame, innermost first.
    symbol : str
        Innermost resolvable function name ("" if unknown).
    location : str
        ``file:line`` of the innermost frame whose module has DWARF line information (a
        program built with ``-g``), read when the trace is analysed
        (:mod:`scalatrace.debuginfo`); "" otherwise.
    """

    id: int
    frames: list[tuple[str, int]]
    symbol: str
    location: str

    def __str__(self) -> str:
        where = self.location or (
            f"{Path(self.frames[0][0]).name}+{self.frames[0][1]:#x}" if self.frames else "?"
        )
        return f"#{self.id} {self.symbol or '?'} ({where})"


def site_key(site: CallSiteInfo) -> str:
    """A call site's identity across runs: ``module+offset`` of every frame, innermost first."""
    return (
        ";".join(f"{Path(module).name}+{offset:#x}" for module, offset in site.frames)
        or f"#{site.id}"
    )


def _wrap(node: _core.Node, trace: TraceModel, depth: int) -> Node:
    return Loop(node, trace, depth) if node.is_loop() else Event(node, trace, depth)


class _NodeView:
    """What loops and events share: the core node, its trace, its depth, ranks and presence."""

    def __init__(self, node: _core.Node, trace: TraceModel, depth: int = 0) -> None:
        self._node = node
        self._trace = trace
        self.depth = depth

    @property
    def ranks(self) -> _core.RankList:
        """Ranks taking part in this node (empty for a single-rank trace)."""
        return self._node.ranks

    @property
    def presence(self) -> _core.ElasticValue:
        """0/1 per visit for nodes that are skipped on some loop iterations (else empty)."""
        return self._node.presence


def _field(name: str, doc: str) -> Any:
    """A read-only property giving the event's elastic value of field ``name``."""

    def get(self: Event) -> _core.ElasticValue:
        return self._ev.field(name)

    get.__doc__ = doc
    return property(get)


class Event(_NodeView):
    """An MPI event node of the compressed trace (one call site, all its ranks and occurrences).

    Parameters are elastic: ``event.fields["Bytes"].value_at(rank, occurrence)``.
    """

    def __init__(self, node: _core.Node, trace: TraceModel, depth: int = 0) -> None:
        super().__init__(node, trace, depth)
        self._ev: _core.EventNode = node.event

    @property
    def op(self) -> str:
        """MPI function name without the ``MPI_`` prefix, e.g. ``"Isend"``."""
        return self._ev.op

    @property
    def kind(self) -> str:
        """Operation kind (``BlockingSend``, ``Collective``, ...)."""
        return self._ev.kind

    @property
    def site(self) -> int:
        """Call-site id (index into :attr:`Trace.call_sites`) of the node's first occurrence.

        Occurrences may come from other call sites of the same call statement (sites that
        match by their innermost frames, ``SCALATRACE_SITE_MATCH``): see :attr:`sites`; the
        events of :meth:`Trace.events` carry each occurrence's own site.
        """
        return self._ev.site

    @property
    def sites(self) -> tuple[int, ...]:
        """Call-site ids of all the node's occurrences, sorted (``(site,)`` for most nodes)."""
        return tuple(self._ev.occurrence_sites(len(self._trace._core.sites)))

    @property
    def call_site(self) -> CallSiteInfo:
        """The call site this event was issued from."""
        return self._trace.call_sites[self.site]

    @property
    def fields(self) -> dict[str, _core.ElasticValue]:
        """Recorded scalar parameters by field name (``Comm``, ``Peer``, ``Tag``, ``Bytes``, ...)."""
        return self._ev.fields

    @property
    def arrays(self) -> dict[str, _core.ElasticArray]:
        """Recorded array parameters (``Requests``, ``SendCounts``, ...)."""
        return self._ev.arrays

    def field(self, name: str) -> _core.ElasticValue:
        """The elastic value of field ``name`` (empty if the op does not use it)."""
        return self._ev.field(name)

    communicator = _field("Comm", "Communicator id(s) (see :attr:`Trace.communicators`).")
    peer = _field("Peer", "Peer relative to the caller's rank in the communicator.")
    bytes = _field("Bytes", "Bytes sent (collectives: send side).")
    tag = _field("Tag", "Message tag.")

    @property
    def compute(self) -> _core.Histogram:
        """Histogram of the compute time before the call (ns)."""
        return self._ev.compute

    @property
    def duration(self) -> _core.Histogram:
        """Histogram of the time inside the call (ns)."""
        return self._ev.duration

    @property
    def first_compute(self) -> _core.Histogram:
        """Histogram of the compute time before each rank's first occurrence of the call (ns).

        One value per rank, also counted in :attr:`compute`. Kept where it differs from the
        other occurrences (a first iteration's warm-up); empty otherwise. Replay, simulation and
        :meth:`Trace.events` give it to each rank's first occurrence only.
        """
        return self._ev.first_compute

    def describe(self) -> str:
        """One line: op, call site (and how many sites its occurrences have, if more than one),
        ranks and the parameters that were recorded."""
        sites = self.sites
        parts = [
            self.op if self.op != "Other" else f"Other({self.function_name or '?'})",
            f"site={self.site}" + (f" ({len(sites)} sites)" if len(sites) > 1 else ""),
        ]
        if len(self.ranks):
            parts.append(f"ranks={self.ranks}")
        for name, value in self.fields.items():
            if not _all_zero(value):  # fields the op does not use are stored as zeros
                parts.append(f"{name}={_short(value)}")
        if self.duration.count:
            parts.append(f"t={self.duration.mean / 1e3:.1f}us")
        return " ".join(parts)

    @property
    def function_name(self) -> str:
        """The MPI function of an ``Other`` event (``MPI_Comm_rank``, its first occurrence's:
        a call site calls one function); "" for the other ops."""
        if self.op != "Other":
            return ""
        name_id = self.fields.get("NameId")
        names = self._trace.function_names
        if name_id is None or not name_id:
            return names[0] if len(names) == 1 else ""
        ranks = self.ranks
        first = int(ranks[0]) if len(ranks) else 0
        try:
            index = int(name_id.value_at(first, 0))
        except (IndexError, ValueError, ScalatraceError):
            return ""
        return names[index] if 0 <= index < len(names) else ""

    def __repr__(self) -> str:
        return f"Event({self.describe()})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td><code>{html.escape(repr(v))}</code></td></tr>"
            for k, v in self.fields.items()
        )
        return (
            f"<b>Event</b> <code>MPI_{html.escape(self.op)}</code> at "
            f"{html.escape(str(self.call_site))}, ranks <code>{html.escape(str(self.ranks))}</code>"
            f"<table>{rows}</table>calls timed: {self.duration.count}, "
            f"mean {self.duration.mean / 1e3:.2f} &micro;s"
        )


class Loop(_NodeView):
    """A loop node: a body executed ``trips`` times per visit (trip counts are elastic).

    ``op`` and ``site`` are None, so filters written for events (``n.op == "Isend"``) work on
    every node of :meth:`Trace.walk`.
    """

    op: None = None
    site: None = None
    kind = "Loop"

    def __init__(self, node: _core.Node, trace: TraceModel, depth: int = 0) -> None:
        super().__init__(node, trace, depth)
        self._loop: _core.LoopNode = node.loop

    @property
    def trips(self) -> _core.ElasticValue:
        """Iterations per visit: ``trips.value_at(rank, visit)``."""
        return self._loop.trips

    @property
    def body(self) -> list[Node]:
        """Child nodes (loops and events) in program order."""
        return [_wrap(n, self._trace, self.depth + 1) for n in self._loop.body]

    def iterations(self, rank: int) -> int:
        """Total iterations ``rank`` runs, summed over all its visits of this loop.

        0 for a rank of the trace that never enters the loop.

        Raises
        ------
        UsageError
            If ``rank`` is not a rank of the trace.
        """
        if not 0 <= int(rank) < self._trace.nranks:
            raise UsageError(f"rank {rank} out of range: the trace has {self._trace.nranks} ranks")
        seq = self.trips.for_rank(rank)
        return 0 if seq is None else int(seq.to_numpy().sum())

    def _trips_text(self) -> str:
        alts = self.trips.alternatives
        if len(alts) == 1 and alts[0][0].is_constant():
            return f"x{alts[0][0][0]}" + (
                f" ({len(alts[0][0])} visits)" if len(alts[0][0]) > 1 else ""
            )
        return "trips=" + _short(self.trips)

    def __repr__(self) -> str:
        ranks = f", ranks={self.ranks}" if len(self.ranks) else ""
        return f"Loop({self._trips_text()}{ranks}, {len(self._loop.body)} nodes)"

    def _repr_html_(self) -> str:
        items = "".join(f"<li><code>{html.escape(repr(n))}</code></li>" for n in self.body)
        return f"<b>Loop</b> {html.escape(self._trips_text())}<ul>{items}</ul>"


def _all_zero(value: _core.ElasticValue) -> bool:
    return all(
        seq.is_constant() and (len(seq) == 0 or seq[0] == 0) for seq, _ in value.alternatives
    )


def _short(value: Any, limit: int = 60) -> str:
    """An elastic value's repr without its class name; values differing by rank in brackets
    (``[ranks 0-3: 8; ranks 4-8: 16]``)."""
    text = repr(value)
    for prefix in ("ElasticValue(", "ElasticArray("):
        if text.startswith(prefix):
            text = text[len(prefix) : -1]
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"[{text}]" if text.startswith("ranks ") else text


class TraceModel:
    """A merged, compressed trace of an MPI run, as data: metadata, node tree, call sites,
    communicators, per-rank events and tables, analyses computed by the core.

    Users get the subclass :class:`scalatrace.Trace` (this plus the feature methods) from
    :func:`load`, :func:`wrap` and every function that returns a trace.
    """

    def __init__(self, core: _core.Trace, path: str | os.PathLike[str] | None = None) -> None:
        self._core = core
        self.path = Path(path) if path is not None else None
        #: Raw recording directory when the trace came from ``scalatrace.trace(..., raw=...)``.
        self.raw_dir: Path | None = None
        #: Standard error of the traced run (``scalatrace.trace`` only).
        self.run_stdout: str | None = ""
        self.run_stderr: str | None = ""

    # --- metadata -------------------------------------------------------------------------
    @property
    def nranks(self) -> int:
        """Number of MPI ranks of the traced run."""
        return self._core.nranks

    ranks = nranks

    @property
    def metadata(self) -> dict[str, str]:
        """Everything the collector wrote about the run (program, command line, date, settings)."""
        return dict(self._core.metadata)

    @property
    def program(self) -> str | None:
        return _first(self._core.metadata, _PROGRAM_KEYS)

    @property
    def command_line(self) -> str | None:
        return _first(self._core.metadata, _COMMAND_KEYS)

    @property
    def date(self) -> str | None:
        return _first(self._core.metadata, _DATE_KEYS)

    @property
    def settings(self) -> dict[str, str]:
        """Collector settings in effect (``SCALATRACE_*`` and ``setting.*`` metadata)."""
        return {
            k: v
            for k, v in self._core.metadata.items()
            if k.upper().startswith("SCALATRACE_") or k.startswith("setting")
        }

    # --- structure ------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """Top-level nodes (:class:`Loop` and :class:`Event`) in program order."""
        return [_wrap(n, self, 0) for n in self._core.nodes]

    def walk(self) -> Iterator[Node]:
        """All nodes, depth first, in program order (``node.depth`` gives the nesting)."""
        stack = list(reversed(self.nodes))
        while stack:
            node = stack.pop()
            yield node
            if isinstance(node, Loop):
                stack.extend(reversed(node.body))

    @property
    def node_count(self) -> int:
        return self._core.node_count()

    @property
    def structure_bytes(self) -> int:
        """Bytes the trace takes as a ``.sct`` file without its metadata and timing histograms:
        the part that depends only on what was communicated (node tree, ranklists, parameter
        sequences), comparable across runs and rank counts (``scalatrace-harness`` reports the
        same figure)."""
        return int(self._core.structure_bytes())

    @property
    def call_sites(self) -> list[CallSiteInfo]:
        """The call-site table; ``Event.site`` indexes it."""
        table = self._core.sites
        modules = list(table.modules)
        out = []
        for i, s in enumerate(table.sites):
            frames = [
                (modules[f.module] if f.module < len(modules) else "?", f.offset) for f in s.frames
            ]
            out.append(CallSiteInfo(i, frames, s.symbol, s.location or first_source_line(frames)))
        return out

    @property
    def communicators(self) -> list[_core.CommEntry]:
        """Communicator table: ``id``, ``members`` (world ranks in comm order), ``holders``."""
        return list(self._core.comms.entries)

    @property
    def function_names(self) -> list[str]:
        """Names of MPI functions recorded as ``Other`` (indexed by field ``NameId``)."""
        return list(self._core.names)

    # --- per-rank views -------------------------------------------------------------------
    def events(
        self,
        rank: int,
        timing: Literal["mean", "sample", "none"] = "mean",
        seed: int = 0,
        lossy_seed: int | None = None,
    ) -> Iterator[_core.RecordedEvent]:
        """Iterates ``rank``'s concrete events, decompressing on the fly.

        Parameters
        ----------
        rank : int
            World rank.
        timing : {"mean", "sample", "none"}
            How ``compute_ns``/``duration_ns`` are filled from the histograms.
        seed : int
            Random seed for ``timing="sample"``.
        lossy_seed : int or None
            A lossy trace (:attr:`lossy`) only: fields kept as histograms yield values drawn
            with this seed (the same seed gives the same values). None: such a field raises
            :class:`~scalatrace.errors.LossyTraceError` (its exact values were not kept).
        """
        return _core.rank_events(self._core, rank, timing, seed, lossy_seed)

    # --- lossy traces (docs/lossy.md) ------------------------------------------------------
    @property
    def lossy(self) -> bool:
        """True if some point-to-point peers, tags or sizes are kept as histograms
        (``SCALATRACE_LOSSY``): exact events are then not available, only drawn ones."""
        return bool(_core.lossy_fields(self._core))

    @property
    def lossy_fields(self) -> list[tuple[str, int, str, int, int]]:
        """Every field kept as a histogram: ``(op, call site, field, values, bins)``, depth first."""
        return [tuple(f) for f in _core.lossy_fields(self._core)]

    def to_lossy(self, threshold: int = 1) -> TraceModel:
        """A lossy copy (what ``SCALATRACE_LOSSY=threshold`` writes): point-to-point peers, tags
        and sizes whose lossless form has at least ``threshold`` value runs become histograms
        (1: all of them). Loop trip counts, collectives and timing stay exact."""
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise UsageError(f"threshold must be an integer >= 1, not {threshold!r}")
        return wrap(_core.make_lossy(self._core, threshold))

    def probabilistic_events(self, rank: int, seed: int = 0) -> list[_core.RecordedEvent]:
        """The calls a probabilistic replay or simulation of a lossy trace issues on ``rank``:
        its sends as ``Isend`` with drawn peer, tag and size, an ``Irecv`` for each message the
        other ranks draw to it, and a ``Waitall`` before every synchronisation point
        (docs/lossy.md). The same ``seed`` on every rank gives matching sends and receives."""
        return list(_core.probabilistic_events(self._core, rank, seed))

    def rank_table(self, rank: int) -> np.ndarray:
        """``rank``'s events as a NumPy structured array.

        Columns: ``rank``, ``op`` (code, see :data:`OP_NAMES`), ``op_name`` (e.g. ``"Isend"``),
        ``peer`` (absolute world rank; -1 none or wildcard, -2 ``MPI_PROC_NULL``; rooted
        collectives: the root), ``bytes``, ``tag``, ``comm``, ``site``, ``compute_ns``,
        ``duration_ns`` (mean of the histograms). :meth:`to_dataframe` gives the same for many
        ranks as a DataFrame.
        """
        return with_rank_and_names(_core.rank_table(self._core, rank))

    def to_dataframe(
        self,
        ranks: int | Iterable[int] | None = None,
        max_events: int = DEFAULT_MAX_EVENTS,
        timing: Literal["mean", "sample", "none"] = "mean",
        seed: int = 0,
    ) -> pandas.DataFrame:
        """The concrete events of ``ranks`` as a DataFrame, one row per event.

        Streamed rank by rank from the cursor in C++ (the compressed trace is never expanded as
        a whole); refuses with :class:`~scalatrace.errors.TooLargeError` beyond ``max_events``
        rows instead of exhausting memory.

        Parameters
        ----------
        ranks : int or iterable of int, optional
            World ranks (default: all).
        max_events : int
            Row limit (default 20 million, about 1.6 GB).
        timing : {"mean", "sample", "none"}
            How times are filled from the timing histograms (see :meth:`events`).
        seed : int
            Random seed for ``timing="sample"``.

        Returns
        -------
        pandas.DataFrame
            Index ``(rank, event)`` (event = position in the rank's sequence). Columns: ``op``
            (categorical of MPI names without ``MPI_``), ``peer`` (absolute world rank, -1 none
            or wildcard, -2 ``MPI_PROC_NULL``, rooted collectives: the root), ``bytes``, ``tag``,
            ``comm``, ``site``, and int64 nanoseconds ``compute_ns`` (before the call),
            ``duration_ns`` (inside it), ``start_ns`` / ``end_ns`` (on the rank's own clock,
            starting at 0); ``compute_from`` / ``duration_from``: where each time comes from
            (categorical of :data:`scalatrace.frames.TIMING_SOURCES`: ``measured``,
            ``per-rank``, ``per-group``, ``sampled``, ``estimated``, ``none``);
            ``timing_group``: the (event node, timing group) the times came from; rows with one
            number share one histogram pair (their sums are measured sums). ``df.attrs["timing"]`` names the least exact source per time
            column.

        Notes
        -----
        Ops, peers, bytes, tags, sites and the event order are exact. Times are each rank's own
        where the trace keeps them (a timing group of its own, first occurrences) and a group's
        mean otherwise: per-rank totals are exact only over ``per-rank`` / ``measured`` rows.
        For the measured time of every call, record with ``raw=True`` and use
        :meth:`RawRecording.to_dataframe` (docs/python.md, "Which times are whose").
        """
        from .frames import events_frame

        return events_frame(self._core, ranks, max_events, timing, seed)

    def find(
        self, op: str | Iterable[str] | None = None, site: int | str | None = None
    ) -> list[Event]:
        """Event nodes of the compressed tree by op and/or call site, in program order.

        Parameters
        ----------
        op : str or iterable of str, optional
            MPI operation name(s) without ``MPI_`` (``"Isend"``); ``MPI_Isend`` works too.
        site : int or str, optional
            Call-site id, or text found in the site's symbol or ``file:line``.

        Raises
        ------
        UnknownNameError
            For an op name that is not an MPI operation scalatrace knows.
        """
        wanted: set[str] | None = None
        if op is not None:
            names = [op] if isinstance(op, str) else list(op)
            wanted = {n[4:] if n.startswith("MPI_") else n for n in names}
            unknown = sorted(wanted - set(OP_NAMES))
            if unknown:
                raise UnknownNameError(
                    f"unknown MPI operation(s) {unknown}; see scalatrace.OP_NAMES"
                )
        site_ids: set[int] | None = None
        if isinstance(site, (int, np.integer)):
            site_ids = {int(site)}
        elif site is not None:
            site_ids = {c.id for c in self.call_sites if site in c.symbol or site in c.location}
        return [
            n
            for n in self.walk()
            if isinstance(n, Event)
            and (wanted is None or n.op in wanted)
            and (site_ids is None or not site_ids.isdisjoint(n.sites))
        ]

    # --- analyses -------------------------------------------------------------------------
    def comm_matrix(
        self,
        metric: Metric = "bytes",
        kind: Kind = "p2p",
        sparse: bool = False,
        labels: bool = False,
    ) -> np.ndarray | scipy.sparse.coo_matrix | pandas.DataFrame:
        """Communication matrix ``m[src, dst]`` computed from the compressed structure.

        Parameters
        ----------
        metric : {"bytes", "messages"}
        kind : {"p2p", "collective", "all"}
            Point-to-point sends (sender side), collectives (attributed by the model in
            ``docs/python.md``) or both.
        sparse : bool
            Return a ``scipy.sparse.coo_matrix`` (needed beyond a few ten thousand ranks:
            a dense 65,536-rank matrix takes 32 GiB).
        labels : bool
            Return a ``pandas.DataFrame`` with a ``sender`` index and ``receiver`` columns
            (sparse columns with ``sparse=True``).

        Returns
        -------
        numpy.ndarray or scipy.sparse.coo_matrix or pandas.DataFrame
            ``nranks x nranks`` float64.
        """
        if sparse:
            m: Any = comm_triplets_to_output(
                _core.comm_matrix_sparse(self._core, metric, kind), True
            )
        else:
            m = _core.comm_matrix(self._core, metric, kind)
        if not labels:
            return m
        from .frames import labelled_matrix

        return labelled_matrix(m, f"{kind} {metric}")

    def summary(self, by: Literal["op", "site"] = "op") -> pandas.DataFrame:
        """Per-op (or per call site and op) calls, bytes and times, from the compressed trace.

        Returns
        -------
        pandas.DataFrame
            One row per op (``by="site"``: per call site and op, with ``site`` and ``where``).
            Columns: ``op``, ``calls`` (over all ranks), ``ranks`` (that make the call),
            ``bytes`` (send side), ``duration_ns`` / ``compute_ns`` (totals from the timing
            histograms), ``min_duration_ns``, ``max_duration_ns``, ``mean_duration_ns``.
        """
        from .frames import summary_frame

        check_choice("by", by, ("op", "site"))
        s = _core.summary(self._core)
        names = self.function_names
        if by == "op":
            return summary_frame(s.by_op, by_site=False, function_names=names)
        sites = {c.id: str(c) for c in self.call_sites}
        return summary_frame(s.by_site, by_site=True, site_names=sites, function_names=names)

    def timestep_loops(self) -> list[TimestepLoop]:
        """Outermost loops that repeat communication (ScalaTrace §5.3), with trip counts."""
        out = []
        for t in _core.timestep_loops(self._core):
            node: Any = self.nodes[t.path[0]]
            for i in t.path[1:]:
                node = node.body[i]
            out.append(
                TimestepLoop(
                    path=tuple(t.path),
                    ranks=t.ranks,
                    min_iterations=t.min_iterations,
                    max_iterations=t.max_iterations,
                    visits=t.visits,
                    sites=tuple(t.sites),
                    body_events=t.body_events,
                    loop=node,
                )
            )
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the trace to a ``.sct`` file."""
        self._core.write(str(path))

    # --- display --------------------------------------------------------------------------
    def dump(self, max_nodes: int | None = None) -> str:
        """Human-readable indented listing of the compressed tree."""
        lines = []
        for i, node in enumerate(self.walk()):
            if max_nodes is not None and i >= max_nodes:
                lines.append("  ...")
                break
            text = node.describe() if isinstance(node, Event) else repr(node)
            lines.append("  " * node.depth + text)
        return "\n".join(lines)

    def __repr__(self) -> str:
        name = self.program or (self.path.name if self.path else "trace")
        return f"Trace({name!r}, nranks={self.nranks}, nodes={self.node_count}, call_sites={len(self._core.sites)})"

    def _repr_html_(self) -> str:
        meta = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>"
            for k, v in sorted(self.metadata.items())
        )
        tree = html.escape(self.dump(max_nodes=40))
        return (
            f"<b>scalatrace Trace</b>: {self.nranks} ranks, {self.node_count} nodes, "
            f"{len(self._core.sites)} call sites<table>{meta}</table><pre>{tree}</pre>"
        )


_trace_class: type[TraceModel] = TraceModel


def register_trace_class(cls: type[TraceModel]) -> None:
    """Makes :func:`wrap` (and so :func:`load` and every feature returning a trace) build ``cls``,
    a subclass of :class:`TraceModel`; ``scalatrace.Trace`` registers itself on import."""
    global _trace_class
    if not issubclass(cls, TraceModel):
        raise TypeError(f"{cls.__name__} is not a subclass of TraceModel")
    _trace_class = cls


def wrap(core: _core.Trace, path: str | os.PathLike[str] | None = None) -> TraceModel:
    """The user's trace object (``scalatrace.Trace``) for a core trace."""
    return _trace_class(core, path)


def load(path: str | os.PathLike[str]) -> TraceModel:
    """Reads a ``.sct`` trace file (see :func:`scalatrace.load`)."""
    p = Path(path)
    if not p.is_file():
        if not p.exists():
            raise FileNotFoundError(f"no trace file at {p}")
        kind = "a directory" if p.is_dir() else "not a regular file"
        raise TraceFormatError(f"{p} is {kind}, not a trace file (.sct)")
    core = _core.read_trace_file(str(p))  # the core's messages name the file
    return wrap(core, p)


def as_trace(trace: TraceModel | str | os.PathLike[str]) -> TraceModel:
    """``trace`` itself, or the trace loaded from the ``.sct`` file it names."""
    return trace if isinstance(trace, TraceModel) else load(trace)
