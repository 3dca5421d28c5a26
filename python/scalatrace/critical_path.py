"""The critical path of a run: the chain of computation, calls and messages across ranks that
determines when the run ends (:func:`scalatrace.views.critical_path`).

The ranks' clocks are not synchronised (a recording keeps, per call, the time since the rank's
previous call and the time inside it), so the path is found on the run's *happens-before graph*
rather than on wall-clock times: every rank replays its own events in order, each call starting
after the computation recorded before it, and

* a call in which a rank can wait for another (a blocking receive, ``Probe``, the ``Wait`` family,
  a blocking collective; :data:`scalatrace.views.WAITING_OPS`) ends when what it waits for has
  happened: the matching message was sent (plus ``latency_ns + bytes * ns_per_byte``), or every
  member of the communicator entered the collective. Time inside it is waiting, not work;
* every other call (``Isend``, ``Irecv``, ``Test``, ``Comm_rank``, ...) takes its recorded time;
* sends complete locally (eager protocol) and a message is available from the moment its send
  was posted; receives match messages in MPI's order (same communicator, source and tag, first
  posted first matched; wildcards take the first message that fits).

The run's modelled end is the latest end of any rank; walking back from it, each event was
released either by the rank's previous event (the path stays on the rank) or by a message or
collective of another rank (the path jumps there). The result lists the path's events from the
start of the run to its end. From a raw recording the weights are the measured times of every
call; from a trace they are its timing statistics (see ``docs/python.md``, "Which times are
whose"); the matching is the same in both (the event order is lossless).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from ._base import (
    K_ANY,
    OP_NAMES,
    check_float,
    check_int,
    comm_members,
    completed_request_offsets,
    request_slot,
    world_peer,
)
from .errors import ScalatraceError, TooLargeError, UsageError
from .frames import function_label

if TYPE_CHECKING:
    import pandas

__all__ = ["critical_path"]

_KINDS = dict(zip(OP_NAMES, _core.op_kind_names()))
_NOT_WAITING = ("Iprobe", "Test", "Testall", "Testany", "Testsome")

DEFAULT_MAX_EVENTS = 2_000_000
"""Most events (all ranks) :func:`critical_path` replays by default (Python, ~10 us each)."""

PATH_COLUMNS = (
    "rank",
    "event",
    "op",
    "via",
    "from_rank",
    "compute_ns",
    "call_ns",
    "message_ns",
    "start_ns",
    "end_ns",
)


@dataclass
class _Message:
    src: int
    dst: int
    comm: tuple[int, ...]
    tag: int
    arrival: float
    node: tuple[int, int]


@dataclass
class _Receive:
    src: int  # world rank, or K_ANY
    dst: int
    comm: tuple[int, ...]
    tag: int
    message: _Message | None = None


@dataclass
class _Collective:
    size: int
    entered: dict[int, tuple[float, tuple[int, int]]] = field(default_factory=dict)

    def done(self) -> bool:
        return len(self.entered) >= self.size

    def release(self) -> tuple[float, tuple[int, int]]:
        return max(self.entered.values(), key=lambda v: (v[0], -v[1][0]))


@dataclass
class _Slot:
    """A request: a receive to be matched, a collective to complete, or nothing to wait for."""

    receive: _Receive | None = None
    collective: _Collective | None = None
    persistent: tuple[str, int, tuple[int, ...], int, int] | None = (
        None  # kind, peer, comm, tag, bytes
    )


@dataclass
class _Step:
    """One event as the replay placed it: its start, end and what released it."""

    op: str
    compute: float
    call: float
    start: float
    end: float
    via: str  # program, message, collective
    cause: tuple[int, int] | None  # (rank, event) that released it, for message / collective
    message: float = 0.0


class _Rank:
    def __init__(self, rank: int, events: Any, comms: list[Any], names: list[str]) -> None:
        self.rank = rank
        self.events = iter(events)
        self.comms = comms
        self.names = names  # functions recorded as Other, by NameId
        self.index = -1  # event number (as in to_dataframe)
        self.time = 0.0
        self.steps: list[_Step] = []
        self.slots: list[_Slot] = []
        self.current: Any = None
        self.pending: Any = None  # what the current event waits for (set while blocked)
        self.sequence: dict[tuple[int, ...], int] = defaultdict(int)
        self.finished = False

    def world(self, comm: int, relative: int) -> int | None:
        """World rank of a relative peer; None for MPI_PROC_NULL; K_ANY for MPI_ANY_SOURCE."""
        return world_peer(self.comms, self.rank, comm, relative)

    def group(self, comm: int, nranks: int) -> tuple[int, ...]:
        members = comm_members(self.comms, self.rank, comm)
        if members is None:
            return (self.rank,) if comm == 1 else tuple(range(nranks))
        return members

    def label(self, e: Any) -> str:
        """The op's name as frames show it (``Comm_rank`` for a function recorded as Other)."""
        if e.op != "Other":
            return e.op
        i = e["NameId"]
        return function_label(self.names[i]) if 0 <= i < len(self.names) else "Other"

    def slot_of(self, offset: int) -> _Slot | None:
        i = request_slot(offset, len(self.slots))
        return None if i is None else self.slots[i]


class _Replay:
    """The happens-before replay of every rank's events (see the module docstring)."""

    def __init__(self, nranks: int, latency_ns: float, ns_per_byte: float) -> None:
        self.nranks = nranks
        self.latency = latency_ns
        self.per_byte = ns_per_byte
        self.unexpected: dict[int, list[_Message]] = defaultdict(list)  # by destination
        self.posted: dict[int, list[_Receive]] = defaultdict(list)
        self.collectives: dict[tuple[tuple[int, ...], int], _Collective] = {}
        self.ranks: list[_Rank] = []
        self.blocked: set[int] = set()

    # --- matching -----------------------------------------------------------------------------
    @staticmethod
    def _fits(r: _Receive, m: _Message) -> bool:
        return r.comm == m.comm and r.src in (K_ANY, m.src) and r.tag in (K_ANY, m.tag)

    def send(
        self, rank: _Rank, dst: int, comm: tuple[int, ...], tag: int, nbytes: int, at: float
    ) -> None:
        message = _Message(
            rank.rank,
            dst,
            comm,
            tag,
            at + self.latency + self.per_byte * max(0, nbytes),
            (rank.rank, rank.index),
        )
        for i, r in enumerate(self.posted[dst]):
            if self._fits(r, message):
                r.message = message
                del self.posted[dst][i]
                self._wake(dst)
                return
        self.unexpected[dst].append(message)
        self._wake(dst)  # a Probe may wait for it

    def receive(self, rank: _Rank, src: int, comm: tuple[int, ...], tag: int) -> _Receive:
        r = _Receive(src, rank.rank, comm, tag)
        for i, m in enumerate(self.unexpected[rank.rank]):
            if self._fits(r, m):
                r.message = m
                del self.unexpected[rank.rank][i]
                return r
        self.posted[rank.rank].append(r)
        return r

    def probe(self, rank: _Rank, src: int, comm: tuple[int, ...], tag: int) -> _Message | None:
        probe = _Receive(src, rank.rank, comm, tag)
        return next((m for m in self.unexpected[rank.rank] if self._fits(probe, m)), None)

    def enter(self, rank: _Rank, group: tuple[int, ...], at: float) -> _Collective:
        seq = rank.sequence[group]
        rank.sequence[group] = seq + 1
        key = (group, seq)
        c = self.collectives.get(key)
        if c is None:
            c = self.collectives[key] = _Collective(len(group))
        c.entered[rank.rank] = (at, (rank.rank, rank.index))
        if c.done():
            del self.collectives[key]
            for member in group:
                self._wake(member)
        return c

    def _wake(self, rank: int) -> None:
        if rank in self.blocked:
            self.blocked.discard(rank)
            r = self.ranks[rank]
            heapq.heappush(self.queue, (r.time, rank))

    # --- one event ----------------------------------------------------------------------------
    def start(self, rank: _Rank, e: Any) -> None:
        """Starts ``e`` on ``rank``: posts what it posts; sets what it waits for (pending)."""
        op = e.op
        kind = _KINDS.get(op, "other")
        at = rank.time + e.compute_ns
        rank.current = (e, at)
        rank.pending = None
        comm = e["Comm"]
        if kind in ("blocking-send", "nonblocking-send"):
            dst = rank.world(comm, e["Peer"])
            if dst is not None:
                self.send(rank, dst, rank.group(comm, self.nranks), e["Tag"], e["Bytes"], at)
            if kind == "nonblocking-send":
                rank.slots.append(_Slot())
        elif kind == "blocking-recv":
            src = rank.world(comm, e["Peer"])
            if src is not None:
                rank.pending = [self.receive(rank, src, rank.group(comm, self.nranks), e["Tag"])]
        elif kind == "nonblocking-recv":
            src = rank.world(comm, e["Peer"])
            slot = _Slot()
            if src is not None:
                slot.receive = self.receive(rank, src, rank.group(comm, self.nranks), e["Tag"])
            rank.slots.append(slot)
        elif kind == "sendrecv":
            group = rank.group(comm, self.nranks)
            dst, src = rank.world(comm, e["Peer"]), rank.world(comm, e["Peer2"])
            if dst is not None:
                self.send(rank, dst, group, e["Tag"], e["Bytes"], at)
            if src is not None:
                rank.pending = [self.receive(rank, src, group, e["Tag2"])]
        elif kind == "probe" and op == "Probe":
            src = rank.world(comm, e["Peer"])
            if src is not None:
                rank.pending = ("probe", src, rank.group(comm, self.nranks), e["Tag"])
        elif kind in ("persistent-send", "persistent-recv"):
            peer = rank.world(comm, e["Peer"])
            template = None
            if peer is not None:
                what = "send" if kind == "persistent-send" else "recv"
                template = (what, peer, rank.group(comm, self.nranks), e["Tag"], e["Bytes"])
            rank.slots.append(_Slot(persistent=template))
        elif kind == "start":
            for off in e.arrays.get("Requests", []):
                slot = rank.slot_of(off)
                if slot is None or slot.persistent is None:
                    continue
                what, peer, group, tag, nbytes = slot.persistent
                if what == "send":
                    self.send(rank, peer, group, tag, nbytes, at)
                    slot.receive = None
                else:
                    slot.receive = self.receive(rank, peer, group, tag)
        elif kind == "completion":
            slots = [rank.slot_of(o) for o in completed_request_offsets(op, e)]
            waits: list[Any] = []
            for slot in slots:
                if slot is None:
                    continue
                if slot.receive is not None:
                    waits.append(slot.receive)
                if slot.collective is not None:
                    waits.append(slot.collective)
                slot.receive = slot.collective = None
            rank.pending = waits
        elif kind in ("collective", "comm-create"):
            group = rank.group(comm, self.nranks)
            rank.pending = [self.enter(rank, group, at)]
        elif kind == "nonblocking-collective":
            group = rank.group(comm, self.nranks)
            rank.slots.append(_Slot(collective=self.enter(rank, group, at)))

    def finish(self, rank: _Rank) -> bool:
        """Ends the current event if what it waits for has happened; False if still blocked."""
        e, at = rank.current
        op = e.op
        release, cause, via, message = at, None, "program", 0.0
        pending = rank.pending
        if isinstance(pending, tuple):  # Probe: a matching message must be there
            m = self.probe(rank, *pending[1:])
            if m is None:
                return False
            pending = [_Receive(m.src, rank.rank, m.comm, m.tag, m)]
        for w in pending or ():
            if isinstance(w, _Receive):
                if w.message is None:
                    return False
                if w.message.arrival > release:
                    release, cause, via = w.message.arrival, w.message.node, "message"
                    sent_at = self.ranks[cause[0]].steps[cause[1]].start
                    message = w.message.arrival - sent_at
            elif isinstance(w, _Collective):
                if not w.done():
                    return False
                last, node = w.release()
                if node[0] != rank.rank and last > release:
                    release, cause, via, message = last, node, "collective", 0.0
        waiting = (
            _KINDS.get(op)
            in ("blocking-send", "blocking-recv", "sendrecv", "probe", "completion", "collective")
            and op not in _NOT_WAITING
        )
        lifecycle = _KINDS.get(op) == "lifecycle"
        call = 0.0 if (waiting or lifecycle) else float(e.duration_ns)
        rank.steps.append(
            _Step(rank.label(e), float(e.compute_ns), call, at, release + call, via, cause, message)
        )
        rank.time = release + call
        rank.current = rank.pending = None
        return True

    def advance(self, rank: _Rank) -> None:
        """Runs ``rank`` until it blocks or ends; ends are recorded in ``rank.steps``."""
        while True:
            if rank.current is not None:
                if not self.finish(rank):
                    self.blocked.add(rank.rank)
                    return
                heapq.heappush(self.queue, (rank.time, rank.rank))
                return
            e = next(rank.events, None)
            if e is None:
                rank.finished = True
                return
            rank.index += 1
            if e.op in ("Init", "Init_thread"):
                # The run starts when MPI_Init returns (its computation is start-up).
                rank.steps.append(_Step(e.op, 0.0, 0.0, 0.0, 0.0, "program", None))
                continue
            self.start(rank, e)

    def run(self, sources: list[tuple[int, Any, list[Any], list[str]]]) -> None:
        self.ranks = [_Rank(*source) for source in sources]
        self.queue: list[tuple[float, int]] = [(0.0, r.rank) for r in self.ranks]
        heapq.heapify(self.queue)
        while self.queue:
            _, r = heapq.heappop(self.queue)
            self.advance(self.ranks[r])
        stuck = sorted(self.blocked)
        if stuck:
            what = ", ".join(
                f"rank {r} at event {self.ranks[r].index} ({self.ranks[r].current[0].op})"
                for r in stuck[:8]
            )
            raise ScalatraceError(
                f"critical path: the events do not complete: {what} wait for a message or "
                "collective no rank provides (a run cut short, or ranks missing from the source)"
            )

    def path(self) -> list[tuple[int, int, _Step, str, int]]:
        """(rank, event, step, via, from_rank) from the run's start to its end."""
        ends = [(r.steps[-1].end if r.steps else 0.0, -r.rank) for r in self.ranks]
        if not ends:
            return []
        rank = -max(ends)[1]
        index = len(self.ranks[rank].steps) - 1
        out: list[tuple[int, int, _Step, str, int]] = []
        while index >= 0:
            step = self.ranks[rank].steps[index]
            if step.via != "program" and step.cause is not None:
                source, at = step.cause
                out.append((rank, index, step, step.via, source))
                rank, index = source, at
            else:
                out.append((rank, index, step, "program", rank))
                index -= 1
        out.reverse()
        return out


def critical_path(
    source: Any,
    latency_ns: float = 0.0,
    ns_per_byte: float = 0.0,
    max_events: int = DEFAULT_MAX_EVENTS,
) -> pandas.DataFrame:
    """The chain of events across ranks that determines when the run ends.

    Parameters
    ----------
    source : RawRecording or Trace
        A raw recording (``read_raw``: the measured time of every call) or a trace (its timing
        statistics, ``timing="mean"``). Frames are refused: matching needs the request handles
        and both halves of ``Sendrecv``, which they do not carry.
    latency_ns, ns_per_byte : float
        Cost of a message on the path (default 0: a message is available when its send was
        posted, so waiting time is the partner's lateness and nothing else).
    max_events : int
        Refuse sources with more events (all ranks) than this.

    Returns
    -------
    pandas.DataFrame
        One row per event on the path, in time order: ``rank``, ``event`` (its number in the
        rank's ``to_dataframe()`` rows), ``op``, ``via`` (``start``; ``program``: released by
        the rank's previous event; ``message`` / ``collective``: released by ``from_rank``'s
        send or collective entry), ``compute_ns`` (computation before the call that lies on
        the path), ``call_ns`` (time in the call on the path: 0 for waiting calls and where the
        path leaves through a message posted at the call's start), ``message_ns``, and the
        replay's ``start_ns`` / ``end_ns`` (since ``MPI_Init`` returned). ``attrs``:
        ``length_ns`` (the replayed run's end = the sum of ``compute_ns + call_ns +
        message_ns``), ``rank_end_ns`` (each rank's replayed end), ``measured_end_ns`` (each
        rank's own recorded end: the sum of its times after ``Init``), ``exact`` (True for a
        raw recording: every weight measured).

    Raises
    ------
    UsageError
        A frame or another object as ``source``, or a bad parameter.
    TooLargeError
        If the source has more than ``max_events`` events.
    ScalatraceError
        If the events cannot complete (a run cut short).
    """
    import pandas as pd

    latency_ns = check_float("latency_ns", latency_ns, lo=0.0)
    ns_per_byte = check_float("ns_per_byte", ns_per_byte, lo=0.0)
    max_events = check_int("max_events", max_events, lo=1)
    sources, nranks, exact, measured = _sources(source, max_events)
    replay = _Replay(nranks, latency_ns, ns_per_byte)
    replay.run(sources)
    rows = []
    chain = replay.path()
    for i, (rank, index, step, via, from_rank) in enumerate(chain):
        nxt = chain[i + 1] if i + 1 < len(chain) else None
        leaves_by_message = nxt is not None and nxt[0] != rank
        released_remotely = via in ("message", "collective")
        compute = 0.0 if released_remotely else step.compute
        # The path leaves through a message posted when the call started: the call's own time
        # (after posting) is not on it.
        call = 0.0 if leaves_by_message else step.call
        rows.append(
            {
                "rank": rank,
                "event": index,
                "op": step.op,
                "via": "start" if i == 0 else via,
                "from_rank": from_rank,
                "compute_ns": compute,
                "call_ns": call,
                "message_ns": step.message if released_remotely else 0.0,
                "start_ns": step.start,
                "end_ns": step.end,
            }
        )
    frame = pd.DataFrame(rows, columns=list(PATH_COLUMNS))
    for column in ("compute_ns", "call_ns", "message_ns", "start_ns", "end_ns"):
        frame[column] = frame[column].round().astype(np.int64)
    for column in ("rank", "event", "from_rank"):
        frame[column] = frame[column].astype(np.int64)
    ends = {r.rank: (r.steps[-1].end if r.steps else 0.0) for r in replay.ranks}
    frame.attrs["length_ns"] = int(round(max(ends.values(), default=0.0)))
    frame.attrs["rank_end_ns"] = {r: int(round(v)) for r, v in ends.items()}
    frame.attrs["measured_end_ns"] = measured
    frame.attrs["exact"] = exact
    return frame


def _sources(
    source: Any, max_events: int
) -> tuple[list[tuple[int, Any, list[Any], list[str]]], int, bool, dict[int, int]]:
    """Per rank (rank, its events, its communicator table, its Other function names); nranks;
    exact; measured ends."""
    import pandas as pd

    from ._model import TraceModel
    from ._raw import RawRecording

    if isinstance(source, pd.DataFrame):
        raise UsageError(
            "critical_path needs a Trace or a RawRecording, not a frame (matching messages needs "
            "the request handles and both halves of Sendrecv, which frames do not carry)"
        )
    if isinstance(source, RawRecording):
        _refuse_beyond(source.event_count(), max_events)
        ranks = list(source)
        sources = [(r.rank, list(r.events), list(r.comms.entries), list(r.names)) for r in ranks]
        measured = {r.rank: _measured_end(r.events) for r in ranks}
        return sources, source.nranks, True, measured
    if isinstance(source, TraceModel):
        if source.lossy:
            raise UsageError(
                "critical_path needs exact peers and tags; this trace is lossy (its drawn events "
                "do not match across ranks)"
            )
        _refuse_beyond(int(_core.summary(source._core).total_calls), max_events)
        comms, names = source.communicators, source.function_names
        sources = []
        measured = {}
        for r in range(source.nranks):
            events = list(source.events(r))
            sources.append((r, events, comms, names))
            measured[r] = _measured_end(events)
        return sources, source.nranks, False, measured
    raise UsageError(f"expected a Trace or a RawRecording, not {type(source).__name__}")


def _refuse_beyond(events: int, max_events: int) -> None:
    if events > max_events:
        raise TooLargeError(
            f"critical path: the source has {events} events, more than max_events={max_events} "
            "(pass a larger max_events; the replay takes some microseconds per event)"
        )


def _measured_end(events: Any) -> int:
    """A rank's recorded time from the end of ``Init`` to the start of ``Finalize``'s call."""
    total, started = 0, False
    for e in events:
        if e.op in ("Init", "Init_thread"):
            started = True
            continue
        if not started:
            continue
        total += int(e.compute_ns)
        if e.op in ("Finalize", "Abort"):
            break
        total += int(e.duration_ns)
    return total
