"""GOAL export: a trace as LogGOPSim's schedule text format.

:func:`to_goal` writes one GOAL text file (``num_ranks N`` and one ``rank R { ... }`` block per
rank) that LogGOPSim's ``txt2bin`` converts for ``LogGOPSim`` (github.com/spcl/LogGOPSim), and
that the ATLAHS toolchain reads. Every rank's events become operations with dependencies:

* ``calc NS`` for the compute before each call (nanoseconds, from the timing histograms);
* ``send Nb to D tag T`` / ``recv Nb from S tag T`` for point-to-point messages (world ranks;
  ``from -1`` for ``MPI_ANY_SOURCE``, ``tag -1`` for ``MPI_ANY_TAG``);
* collectives, communicator creation and scans as the point-to-point steps the scalatrace
  simulator runs for them (:func:`scalatrace._core.collective_schedule`, MPICH's algorithms),
  with tags of their own above 2**28;
* ``requires`` chains the program order; a nonblocking operation lets the next one start as
  soon as it has started (``irequires``), and its completion (``Wait``, ``Waitall``, ...) is a
  ``calc 0`` that ``requires`` it.

Format and the comparison with the simulator: ``docs/simulator.md`` ("GOAL export").

Example::

    import scalatrace
    t = scalatrace.load("stencil.sct")
    export = t.to_goal("stencil.goal")      # then: txt2bin -i stencil.goal -o stencil.bin
    export.operations["send"], export.decomposed
"""

from __future__ import annotations

import array
import io
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import _core
from ._base import (
    K_ANY,
    K_PROC_NULL,
    OP_NAMES,
    check_int,
    completed_request_offsets,
    request_slot,
)
from ._files import write_text
from ._model import TraceModel, as_trace
from .errors import SimulationParameterError, UsageError

_GOAL_ANY = -1
# Tags of decomposed collectives (as the SimGrid export's): above 2**28, apart per group of ranks
# (a checksum of its world ranks) and per collective of that group.
_COLLECTIVE_TAG_BASE = 1 << 28
_COLLECTIVE_TAG_GROUPS = 2048
_COLLECTIVE_TAG_SEQUENCE = 1 << 16
_MAX_GOAL_TAG = (1 << 32) - 2  # uint32, all ones is LogGOPSim's ANY_TAG

_SENDS = {"Send", "Bsend", "Ssend", "Rsend"}
_ISENDS = {"Isend", "Ibsend", "Issend", "Irsend"}
_COMPLETIONS = {"Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall", "Testany", "Testsome"}
_COLLECTIVES = frozenset(
    name
    for name, kind in zip(OP_NAMES, _core.op_kind_names())
    if kind in ("collective", "nonblocking-collective")
)
_COMM_CREATE = frozenset(
    name for name, kind in zip(OP_NAMES, _core.op_kind_names()) if kind == "comm-create"
)


@dataclass
class GoalExport:
    """What :func:`to_goal` wrote.

    Attributes
    ----------
    path : pathlib.Path
        The GOAL text file.
    nranks : int
        Ranks (``num_ranks``).
    operations : dict
        ``send`` / ``recv`` / ``calc`` -> operations written (all ranks).
    dependencies : int
        ``requires`` and ``irequires`` lines written.
    decomposed : int
        Collectives (all ranks) written as point-to-point steps.
    skipped : int
        Collectives on a communicator the trace does not describe for the rank (not written).
    """

    path: Path
    nranks: int
    operations: dict[str, int] = field(default_factory=dict)
    dependencies: int = 0
    decomposed: int = 0
    skipped: int = 0


class _Group:
    """The world ranks of a communicator, with what every rank's export looks up in them."""

    def __init__(self, ranks: tuple[int, ...]) -> None:
        self.ranks = ranks
        self.position = {r: i for i, r in reversed(list(enumerate(ranks)))}  # first occurrence
        # Decomposed collectives' tags are apart per group: a checksum of its world ranks.
        self.tag_group = zlib.crc32(array.array("q", ranks).tobytes()) % _COLLECTIVE_TAG_GROUPS

    def index(self, rank: int) -> int:
        """Position of ``rank`` in the group (ValueError if not a member, as ``list.index``)."""
        i = self.position.get(rank)
        if i is None:
            raise ValueError(f"{rank} is not in list")
        return i


class _Communicators:
    """The trace's communicator table, read once for all ranks: each communicator's group (one
    object per distinct member list) and which ranks hold it. The export looks one up per
    point-to-point call and collective; reading the table's member lists each time made the
    export quadratic in the ranks."""

    def __init__(self, trace: TraceModel) -> None:
        self.nranks = trace.nranks
        self._groups: dict[tuple[int, ...], _Group] = {}
        # id -> (holders, group) in table order; holders None: every rank holds it.
        self._by_id: dict[int, list[tuple[frozenset[int] | None, _Group]]] = {}
        for c in trace.communicators:
            holders = frozenset(c.holders) if len(c.holders) else None
            self._by_id.setdefault(c.id, []).append((holders, self.group(tuple(c.members))))

    def group(self, ranks: tuple[int, ...]) -> _Group:
        """The group of these world ranks (the same object for the same ranks)."""
        g = self._groups.get(ranks)
        if g is None:
            g = self._groups[ranks] = _Group(ranks)
        return g

    def world(self) -> _Group:
        """All ranks in order (``MPI_COMM_WORLD`` when the table does not describe it)."""
        return self.group(tuple(range(self.nranks)))

    def of(self, comm: int, rank: int) -> _Group | None:
        """The first communicator ``comm`` of the table that ``rank`` holds; None if none."""
        for holders, g in self._by_id.get(comm, ()):
            if holders is None or rank in holders:
                return g
        return None


class _GoalRank:
    """Writes one rank's events as a GOAL ``rank R { ... }`` block."""

    def __init__(
        self, trace: TraceModel, rank: int, out: io.StringIO, comms: _Communicators
    ) -> None:
        self.t, self.rank, self.out = trace, rank, out
        self.labels = 0
        self.cpu: str | None = None  # the operation the program order waits for
        self.started: list[str] = []  # nonblocking operations the next one waits to start
        # Per request slot: (kind, peer, tag, bytes) of a persistent request, and the label of
        # its current activation's completion (None: nothing to wait for).
        self.slots: list[tuple[tuple[str, int, int, int] | None, str | None]] = []
        self.operations: dict[str, int] = {}
        self.dependencies = 0
        self.decomposed = 0
        self.skipped = 0
        self.sequence: dict[_Group, int] = {}  # collectives so far per group
        self._comms = comms

    def world(self, comm: int, relative: int) -> int | None:
        """World rank of a relative peer; None for MPI_PROC_NULL; -1 for MPI_ANY_SOURCE."""
        if relative == K_ANY:
            return _GOAL_ANY
        if relative == K_PROC_NULL:
            return None
        g = self._comms.of(comm, self.rank)
        if g is None:
            return self.rank + relative
        return g.ranks[g.index(self.rank) + relative]

    # --- writing -----------------------------------------------------------------------------
    def operation(self, text: str, after: list[str], started: list[str] | None = None) -> str:
        """Writes ``lN: text`` that requires every label in ``after`` (completed) and every
        label in ``started`` (started); returns its label."""
        self.labels += 1
        label = f"l{self.labels}"
        self.out.write(f"{label}: {text}\n")
        kind = text.split(" ", 1)[0]
        self.operations[kind] = self.operations.get(kind, 0) + 1
        for dep in after:
            self.out.write(f"{label} requires {dep}\n")
        for dep in started or ():
            self.out.write(f"{label} irequires {dep}\n")
        self.dependencies += len(after) + len(started or ())
        return label

    def program_op(self, text: str) -> str:
        """An operation in program order: after the previous one has completed and after the
        nonblocking ones posted since have started."""
        label = self.operation(text, [self.cpu] if self.cpu else [], self.started)
        self.started = []
        return label

    def join(self, labels: list[str]) -> None:
        """The program waits until every operation in ``labels`` has completed (a ``calc 0``
        that requires them)."""
        if not labels:
            return
        after = ([self.cpu] if self.cpu else []) + [x for x in labels if x != self.cpu]
        self.cpu = self.operation("calc 0", after, self.started)
        self.started = []

    @staticmethod
    def message(kind: str, peer: int, tag: int, nbytes: int) -> str:
        # LogGOPSim charges (size - 1) * G: 0-byte messages are written as 1 byte, the same time.
        size = max(1, int(nbytes))
        tag = _GOAL_ANY if tag == K_ANY else tag
        if not (_GOAL_ANY <= tag <= _MAX_GOAL_TAG):
            raise UsageError(f"GOAL export: tag {tag} does not fit GOAL's 32-bit tags")
        return f"{kind} {size}b {'to' if kind == 'send' else 'from'} {peer} tag {tag}"

    def blocking(self, text: str) -> None:
        self.cpu = self.program_op(text)

    def post(self, text: str) -> str:
        label = self.program_op(text)
        self.started.append(label)
        return label

    # --- requests ----------------------------------------------------------------------------
    def slot_of(self, offset: int) -> int | None:
        return request_slot(offset, len(self.slots))

    def complete(self, slots: list[int]) -> None:
        labels = []
        for s in slots:
            persistent, label = self.slots[s]
            if label is not None:
                labels.append(label)
                self.slots[s] = (persistent, None)
        self.join(labels)

    # --- events ------------------------------------------------------------------------------
    def event(self, e: _core.RecordedEvent) -> None:
        op = e.op
        if op in ("Init", "Init_thread"):
            return  # the run starts here, as in the simulator
        if e.compute_ns > 0:
            self.blocking(f"calc {int(round(e.compute_ns))}")
        comm = e["Comm"]
        if op == "Finalize":
            self.join([label for _, label in self.slots if label is not None])
            self.slots = [(p, None) for p, _ in self.slots]
        elif op in _SENDS or op == "Recv":
            peer = self.world(comm, e["Peer"])
            if peer is not None:
                kind = "send" if op in _SENDS else "recv"
                self.blocking(self.message(kind, peer, e["Tag"], e["Bytes"]))
        elif op in _ISENDS or op == "Irecv":
            peer = self.world(comm, e["Peer"])
            label = None
            if peer is not None:
                label = self.post(
                    self.message("send" if op in _ISENDS else "recv", peer, e["Tag"], e["Bytes"])
                )
            self.slots.append((None, label))
        elif op in ("Sendrecv", "Sendrecv_replace"):
            dst, src = self.world(comm, e["Peer"]), self.world(comm, e["Peer2"])
            labels = []
            if dst is not None:
                labels.append(self.post(self.message("send", dst, e["Tag"], e["Bytes"])))
            if src is not None:
                labels.append(self.post(self.message("recv", src, e["Tag2"], e["Bytes2"])))
            self.join(labels)
        elif op.endswith("_init") and op != "Init_thread":
            peer = self.world(comm, e["Peer"])
            kind = "recv" if op == "Recv_init" else "send"
            self.slots.append(
                ((kind, peer, e["Tag"], e["Bytes"]) if peer is not None else None, None)
            )
        elif op in ("Start", "Startall"):
            for off in e.arrays.get("Requests", []):
                s = self.slot_of(off)
                if s is not None and self.slots[s][0] is not None:
                    kind, peer, tag, nbytes = self.slots[s][0]  # type: ignore[misc]
                    self.slots[s] = (
                        self.slots[s][0],
                        self.post(self.message(kind, peer, tag, nbytes)),
                    )
        elif op in _COMPLETIONS:
            chosen = completed_request_offsets(op, e)
            self.complete([s for s in (self.slot_of(o) for o in chosen) if s is not None])
        elif op in _COLLECTIVES or op in _COMM_CREATE:
            nonblocking = op in _COLLECTIVES and op.startswith("I")
            self.collective(comm, e, nonblocking)

    def collective(self, comm: int, e: _core.RecordedEvent, nonblocking: bool) -> None:
        """The simulator's point-to-point steps of a collective: each step's send and receive
        start when the previous step has completed; a blocking collective ends the program's
        wait at its last step, a nonblocking one leaves its last step to the request."""
        group = self._comms.of(comm, self.rank)
        if group is None and comm != 0:
            self.skipped += 1
            if nonblocking:
                self.slots.append((None, None))
            return
        if group is None:
            group = self._comms.world()
        ranks = group.ranks
        me = group.index(self.rank)
        seq = self.sequence.get(group, 0)
        self.sequence[group] = seq + 1
        tag = (
            _COLLECTIVE_TAG_BASE
            + group.tag_group * _COLLECTIVE_TAG_SEQUENCE
            + seq % _COLLECTIVE_TAG_SEQUENCE
        )
        steps = _core.collective_schedule(e, me, len(ranks))
        self.decomposed += 1
        started, self.started = self.started, []
        previous: list[str] = [self.cpu] if self.cpu else []
        first: list[str] = []
        for i, (recv_from, send_to, send_bytes, recv_bytes) in enumerate(steps):
            step = []
            if send_to >= 0:
                text = self.message("send", ranks[send_to], tag, send_bytes)
                step.append(self.operation(text, previous, started if i == 0 else None))
            if recv_from >= 0:
                text = self.message("recv", ranks[recv_from], tag, recv_bytes)
                step.append(self.operation(text, previous, started if i == 0 else None))
            first = first or step
            previous = step
        if not steps:  # a communicator of one rank: nothing to send
            self.started = started
            if nonblocking:
                self.slots.append((None, None))
            return
        last = previous[0] if len(previous) == 1 else self.operation("calc 0", previous)
        if nonblocking:  # the program goes on once the first step has started
            self.started = first
            self.slots.append((None, last))
        else:
            self.cpu = last


def to_goal(
    trace: TraceModel | str | os.PathLike[str],
    path: str | os.PathLike[str],
    timing: Literal["mean", "sample", "none"] = "mean",
    seed: int = 0,
) -> GoalExport:
    """Exports a trace as one LogGOPSim GOAL text file.

    Parameters
    ----------
    trace : Trace or path
    path : path
        The GOAL file to write (replaced as a whole; its directory must exist).
    timing : {"mean", "sample", "none"}
        How compute times (``calc``, nanoseconds) are taken from the histograms.
    seed : int
        Seed of ``timing="sample"`` (rank r uses ``seed + r``, as the simulator).

    Returns
    -------
    GoalExport

    Raises
    ------
    SimulationParameterError
        An unknown timing mode or a negative seed (also a ValueError).
    """
    t = as_trace(trace)
    if timing not in ("mean", "sample", "none"):
        raise SimulationParameterError(f"timing must be 'mean', 'sample' or 'none', got {timing!r}")
    try:
        seed = check_int("seed", seed, lo=0, hi=2**63 - 1)
    except UsageError as e:
        raise SimulationParameterError(str(e)) from None
    target = Path(path)
    out = io.StringIO()
    out.write(f"num_ranks {t.nranks}\n")
    result = GoalExport(path=target, nranks=t.nranks)
    comms = _Communicators(t)
    for r in range(t.nranks):
        block = io.StringIO()
        w = _GoalRank(t, r, block, comms)
        for e in _core.rank_events(t._core, r, timing, seed + r):
            w.event(e)
        w.join([label for _, label in w.slots if label is not None])
        out.write(f"\nrank {r} {{\n")
        out.write(block.getvalue())
        out.write("}\n")
        for k, v in w.operations.items():
            result.operations[k] = result.operations.get(k, 0) + v
        result.dependencies += w.dependencies
        result.decomposed += w.decomposed
        result.skipped += w.skipped
    write_text(target, out.getvalue())
    return result
