"""SimGrid export: a trace in SMPI's time-independent replay format.

:func:`to_simgrid_ti` writes one action file per rank and the index file, so the same trace can be
simulated by SimGrid's SMPI (``smpirun -replay index.txt smpireplaymain``), and
:func:`write_simgrid_platform` writes a matching one-cluster platform. Collectives on
``MPI_COMM_WORLD`` become SMPI's own collective actions (SMPI picks their algorithm);
collectives on other communicators, scans and communicator creation, which SMPI's replay cannot
express, become the point-to-point steps the scalatrace simulator runs for them
(:func:`scalatrace._core.collective_schedule`, MPICH's algorithms), on world ranks and with tags
of their own. Format and limits: ``docs/simulator.md`` ("SimGrid export").

Example::

    import scalatrace
    t = scalatrace.load("stencil.sct")
    export = t.to_simgrid_ti("ti/")          # ti/rank-0.txt ... and ti/index.txt
    export.actions["isend"], export.decomposed
"""

from __future__ import annotations

import array
import io
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import _core
from ._base import (
    K_ANY,
    K_PROC_NULL,
    OP_NAMES,
    check_float,
    check_int,
    completed_request_offsets,
)
from ._files import DirectoryExport, write_text
from ._model import TraceModel, as_trace
from .errors import SimulationParameterError, UsageError

# What an export directory may hold to be replaced as a whole (_files.DirectoryExport): the
# files of to_simgrid_ti and write_simgrid_platform.
_SIMGRID_FILES = re.compile(r"rank-\d+\.txt|index\.txt|platform\.xml|hostfile")

_SMPI_ANY_SOURCE = -555
_SMPI_ANY_TAG = -444
_K_NULL_REQUEST = K_ANY  # the core stores a null request handle with the same sentinel

_TI_ROOTED = {
    "Bcast": "bcast",
    "Ibcast": "bcast",
    "Reduce": "reduce",
    "Ireduce": "reduce",
    "Gather": "gather",
    "Igather": "gather",
    "Scatter": "scatter",
    "Iscatter": "scatter",
}
_TI_SEND = {"Send", "Bsend", "Ssend", "Rsend"}
_TI_ISEND = {"Isend", "Ibsend", "Issend", "Irsend"}
_TI_COMPLETION = {
    "Wait",
    "Waitall",
    "Waitany",
    "Waitsome",
    "Test",
    "Testall",
    "Testany",
    "Testsome",
}
# Tags of the messages of decomposed collectives: above 2**28, so they do not meet user tags. The
# group (a checksum of its world ranks: communicator ids differ between ranks) and a per-group
# sequence number keep two collectives apart.
_COLLECTIVE_TAG_BASE = 1 << 28
_COLLECTIVE_TAG_GROUPS = 2048
_COLLECTIVE_TAG_SEQUENCE = 1 << 16


class _TIWriter:
    """Writes one rank's events as SMPI time-independent actions."""

    def __init__(self, trace: TraceModel, rank: int, out: Any, flops_per_ns: float) -> None:
        self.t, self.rank, self.out, self.flops_per_ns = trace, rank, out, flops_per_ns
        self.slots: list[
            tuple[str, int, int, int, bool] | None
        ] = []  # (kind, peer, tag, bytes, persistent)
        self.outstanding: dict[int, tuple[int, int, int]] = {}  # slot -> wait key (src, dst, tag)
        self.counts: dict[str, int] = {}
        self.skipped = 0
        self.decomposed = 0
        self.sequence: dict[tuple[int, ...], int] = {}  # group -> decomposed collectives so far
        self.nranks = trace.nranks
        self._comms = trace.communicators

    def world(self, comm: int, relative: int) -> int | None:
        """World rank of a relative peer; None for MPI_PROC_NULL; SMPI's ANY_SOURCE."""
        if relative == K_ANY:
            return _SMPI_ANY_SOURCE
        if relative == K_PROC_NULL:
            return None
        members = self.members(comm)
        me = members.index(self.rank) if members is not None else self.rank
        target = me + relative
        return members[target] if members is not None else target

    def members(self, comm: int) -> _core.RankList | None:
        for c in self._comms:
            if c.id == comm and (len(c.holders) == 0 or self.rank in c.holders):
                return c.members
        return None

    def is_world(self, comm: int) -> bool:
        if comm == 0:
            return True
        m = self.members(comm)
        return m is not None and len(m) == self.nranks and list(m) == list(range(self.nranks))

    def emit(self, action: str, *args: Any) -> None:
        self.out.write(" ".join([str(self.rank), action, *map(str, args)]) + "\n")
        self.counts[action] = self.counts.get(action, 0) + 1

    def post(self, kind: str, peer: int, tag: int, nbytes: int) -> tuple[int, int, int]:
        tag = _SMPI_ANY_TAG if tag == K_ANY else tag
        self.emit(kind, peer, tag, nbytes)
        return (self.rank, peer, tag) if kind == "isend" else (peer, self.rank, tag)

    def new_slot(
        self, entry: tuple[str, int, int, int, bool] | None, key: tuple[int, int, int] | None
    ) -> None:
        self.slots.append(entry)
        if key is not None:
            self.outstanding[len(self.slots) - 1] = key

    def slot_of(self, offset: int) -> int | None:
        if offset == _K_NULL_REQUEST or offset <= 0 or offset > len(self.slots):
            return None
        return len(self.slots) - offset

    def complete(self, slots: list[int]) -> None:
        keys = [(s, self.outstanding[s]) for s in slots if s in self.outstanding]
        if not keys:
            return
        wildcard = any(k[0] == _SMPI_ANY_SOURCE for _, k in keys)
        if wildcard or len(keys) == len(self.outstanding):
            if len(keys) != len(self.outstanding):
                self.skipped += 1  # SMPI's waitall also completes the others
            self.emit("waitall")
            self.outstanding.clear()
            return
        for s, key in keys:
            self.emit("wait", *key)
            del self.outstanding[s]

    def event(self, e: _core.RecordedEvent) -> None:
        op = e.op
        if op in ("Init", "Init_thread"):  # the run starts here (as in the simulator)
            self.emit("init")
            return
        if e.compute_ns > 0:
            self.emit("compute", f"{e.compute_ns * self.flops_per_ns:.0f}")
        comm = e["Comm"]
        if op == "Finalize":
            if self.outstanding:
                self.emit("waitall")
                self.outstanding.clear()
            self.emit("finalize")
        elif op in _TI_SEND or op in _TI_ISEND or op == "Recv" or op == "Irecv":
            peer = self.world(comm, e["Peer"])
            if peer is None:
                if op in _TI_ISEND or op == "Irecv":
                    self.new_slot(None, None)
                return
            if op in _TI_SEND:
                self.emit("send", peer, e["Tag"], e["Bytes"])
            elif op == "Recv":
                self.emit(
                    "recv", peer, _SMPI_ANY_TAG if e["Tag"] == K_ANY else e["Tag"], e["Bytes"]
                )
            else:
                kind = "isend" if op in _TI_ISEND else "irecv"
                self.new_slot(
                    (kind, peer, e["Tag"], e["Bytes"], False),
                    self.post(kind, peer, e["Tag"], e["Bytes"]),
                )
        elif op in ("Sendrecv", "Sendrecv_replace"):
            dst, src = self.world(comm, e["Peer"]), self.world(comm, e["Peer2"])
            key = self.post("isend", dst, e["Tag"], e["Bytes"]) if dst is not None else None
            if src is not None:
                self.emit(
                    "recv", src, _SMPI_ANY_TAG if e["Tag2"] == K_ANY else e["Tag2"], e["Bytes2"]
                )
            if key is not None:
                self.emit("wait", *key)
        elif op.endswith("_init") and op != "Init_thread":
            peer = self.world(comm, e["Peer"])
            kind = "irecv" if op == "Recv_init" else "isend"
            self.new_slot(
                (kind, peer, e["Tag"], e["Bytes"], True) if peer is not None else None, None
            )
        elif op in ("Start", "Startall"):
            for off in e.arrays.get("Requests", []):
                s = self.slot_of(off)
                if s is not None and self.slots[s] is not None:
                    kind, peer, tag, nbytes, _ = self.slots[s]  # type: ignore[misc]
                    self.outstanding[s] = self.post(kind, peer, tag, nbytes)
        elif op in _TI_COMPLETION:
            chosen = completed_request_offsets(op, e)
            self.complete([s for s in (self.slot_of(o) for o in chosen) if s is not None])
        elif op in _COLLECTIVE_OPS:
            if op.startswith("I"):
                self.new_slot(None, None)  # the request of a nonblocking collective
            blocking = op[1:] if op.startswith("I") else op
            if self.is_world(comm) and blocking in _TI_COLLECTIVE_ACTIONS:
                self.collective(blocking, e)
            else:
                self.decompose(comm, e)
        elif op in _COMM_CREATE_OPS:  # MPICH exchanges (color, key) / context ids on the parent
            self.decompose(comm, e)

    def collective(self, op: str, e: _core.RecordedEvent) -> None:
        n = self.nranks
        b, b2, root = e["Bytes"], e["Bytes2"], e["Root"]
        arrays = e.arrays
        if op == "Barrier":
            self.emit("barrier")
        elif op in ("Bcast",):
            self.emit("bcast", b, root)
        elif op == "Reduce":
            self.emit("reduce", b, 0, root)
        elif op == "Allreduce":
            self.emit("allreduce", b, 0)
        elif op == "Alltoall":
            self.emit("alltoall", b, b2 or b)
        elif op in ("Gather", "Scatter"):
            self.emit(op.lower(), b, b2 or b, root)
        elif op == "Allgather":
            self.emit("allgather", b, b2 or b)
        elif op in ("Gatherv", "Allgatherv"):
            rc = list(arrays.get("RecvCounts", [])) or [b2 or b] * n
            rc = rc if len(rc) == n else [b] * n
            self.emit(op.lower(), b, *rc, *([root] if op == "Gatherv" else []))
        elif op == "Scatterv":
            sc = list(arrays.get("SendCounts", [])) or [b] * n
            sc = sc if len(sc) == n else [b2] * n
            self.emit("scatterv", *sc, b2 or b, root)
        elif op in ("Alltoallv", "Alltoallw"):
            sc = list(arrays.get("SendCounts", [])) or [b] * n
            rc = list(arrays.get("RecvCounts", [])) or [b2 or b] * n
            self.emit("alltoallv", sum(sc), *sc, sum(rc), *rc)
        elif op in ("Reduce_scatter", "Reduce_scatter_block"):
            rc = list(arrays.get("RecvCounts", [])) or [b2 or (b // max(n, 1))] * n
            self.emit("reducescatter", *rc, 0)

    def decompose(self, comm: int, e: _core.RecordedEvent) -> None:
        """Writes a collective as the simulator's point-to-point steps on world ranks: per step
        ``isend`` + ``recv`` + ``wait`` (or one of them), with tags of its own."""
        members = self.members(comm)
        if members is None:
            if comm != 0:
                self.skipped += 1  # a communicator the trace does not describe for this rank
                return
            ranks = list(range(self.nranks))
        else:
            ranks = list(members)
        me = ranks.index(self.rank)
        group = tuple(ranks)
        seq = self.sequence.get(group, 0)
        self.sequence[group] = seq + 1
        group_sum = zlib.crc32(array.array("q", ranks).tobytes()) % _COLLECTIVE_TAG_GROUPS
        tag = (
            _COLLECTIVE_TAG_BASE
            + group_sum * _COLLECTIVE_TAG_SEQUENCE
            + seq % _COLLECTIVE_TAG_SEQUENCE
        )
        for recv_from, send_to, send_bytes, recv_bytes in _core.collective_schedule(
            e, me, len(ranks)
        ):
            if send_to >= 0 and recv_from >= 0:
                key = self.post("isend", ranks[send_to], tag, send_bytes)
                self.emit("recv", ranks[recv_from], tag, recv_bytes)
                self.emit("wait", *key)
            elif send_to >= 0:
                self.emit("send", ranks[send_to], tag, send_bytes)
            elif recv_from >= 0:
                self.emit("recv", ranks[recv_from], tag, recv_bytes)
        self.decomposed += 1


_COLLECTIVE_OPS = frozenset(
    name
    for name, kind in zip(OP_NAMES, _core.op_kind_names())
    if kind in ("collective", "nonblocking-collective")
)
_COMM_CREATE_OPS = frozenset(
    name for name, kind in zip(OP_NAMES, _core.op_kind_names()) if kind == "comm-create"
)
# Collectives SMPI's replay has an action for (on MPI_COMM_WORLD); the others are decomposed.
_TI_COLLECTIVE_ACTIONS = frozenset(
    {
        "Barrier",
        "Bcast",
        "Reduce",
        "Allreduce",
        "Alltoall",
        "Gather",
        "Scatter",
        "Allgather",
        "Gatherv",
        "Allgatherv",
        "Scatterv",
        "Alltoallv",
        "Alltoallw",
        "Reduce_scatter",
        "Reduce_scatter_block",
    }
)


@dataclass
class SimGridExport:
    """What :func:`to_simgrid_ti` wrote.

    Attributes
    ----------
    index : pathlib.Path
        The index file (one rank file per line) to pass to ``smpirun -replay``.
    files : list of pathlib.Path
        One action file per rank.
    actions : dict
        Action name -> number of lines written (all ranks).
    skipped : int
        Events not written as they were: completions of a subset of requests that includes a
        wildcard receive, or of requests SMPI's ``waitall`` would also complete (widened to
        ``waitall``), and collectives on a communicator the trace does not describe.
    decomposed : int
        Collectives (all ranks) written as point-to-point steps: those on communicators other
        than ``MPI_COMM_WORLD``, scans and communicator creation.
    """

    index: os.PathLike[str]
    files: list[os.PathLike[str]]
    actions: dict[str, int]
    skipped: int
    decomposed: int = 0


def write_simgrid_platform(
    directory: str | os.PathLike[str],
    nranks: int,
    latency_s: float,
    bandwidth_bytes_per_s: float,
    flops_per_ns: float = 1.0,
    max_ranks: int = 4_194_304,
) -> tuple[Path, Path]:
    """Writes a SimGrid platform of one cluster and its hostfile, for replaying a
    :func:`to_simgrid_ti` export with ``smpirun -platform ... -hostfile ...``.

    Parameters
    ----------
    directory : path
        Where ``platform.xml`` and ``hostfile`` go (created if missing).
    nranks : int
        Hosts ``node-0`` .. ``node-{nranks-1}``, one rank each.
    latency_s, bandwidth_bytes_per_s : float
        Every link's latency (seconds) and bandwidth (bytes per second).
    flops_per_ns : float
        Host speed; the same value as the export's (1.0: hosts of 1 Gflop/s).
    max_ranks : int
        Largest ``nranks`` accepted (the hostfile, about 15 bytes per rank, is built in
        memory); a larger one is refused at once. The trace format's own limit, 2^32 - 1
        ranks, cannot be lifted.

    Returns
    -------
    (platform.xml, hostfile) paths
    """
    try:
        max_ranks = check_int("max_ranks", max_ranks, lo=1, hi=2**32 - 1)
        nranks = check_int("nranks", nranks, lo=1, hi=max_ranks)
        latency_s = check_float("latency_s", latency_s)
        bandwidth_bytes_per_s = check_float("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
        flops_per_ns = check_float("flops_per_ns", flops_per_ns)
    except UsageError as e:
        raise SimulationParameterError(str(e)) from None
    if bandwidth_bytes_per_s <= 0 or flops_per_ns <= 0:
        raise SimulationParameterError("bandwidth_bytes_per_s and flops_per_ns must be > 0")
    export = DirectoryExport(directory, _SIMGRID_FILES, anchor="platform.xml")
    with export as staged:
        write_text(
            staged / "platform.xml",
            '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f'  <cluster id="c" prefix="node-" suffix="" radical="0-{nranks - 1}" speed="{flops_per_ns:g}Gf" '
            f'bw="{bandwidth_bytes_per_s:.6g}Bps" lat="{latency_s:.6g}s"/>\n</platform>\n',
        )
        write_text(staged / "hostfile", "".join(f"node-{i}\n" for i in range(nranks)))
    return export.directory / "platform.xml", export.directory / "hostfile"


def to_simgrid_ti(
    trace: TraceModel | str | os.PathLike[str],
    directory: str | os.PathLike[str],
    timing: Literal["mean", "sample", "none"] = "mean",
    flops_per_ns: float = 1.0,
    seed: int = 0,
) -> SimGridExport:
    """Exports a trace in SimGrid's SMPI time-independent replay format.

    One file ``rank-R.txt`` per rank (lines ``R init``, ``R send DST TAG BYTES``, ``R isend``,
    ``R irecv SRC TAG BYTES``, ``R wait SRC DST TAG``, ``R waitall``, ``R compute FLOPS``,
    ``R bcast BYTES ROOT``, ``R allreduce BYTES 0``, ...) and ``index.txt`` listing them, for
    ``smpirun -np N -platform P.xml -hostfile H -replay index.txt smpireplaymain``. Sizes are
    in bytes (``init`` without a datatype selects MPI_BYTE); compute before each call becomes
    ``compute`` with ``flops_per_ns`` flops per nanosecond (1.0 for hosts of 1 Gflop/s).

    Parameters
    ----------
    trace : Trace or path
    directory : path
        Created if missing.
    timing : {"mean", "sample", "none"}
        How compute times are taken from the histograms.
    flops_per_ns : float
        Host speed of the SimGrid platform in flops per nanosecond.
    seed : int
        Seed of ``timing="sample"``.
    """
    t = as_trace(trace)
    if timing not in ("mean", "sample", "none"):
        raise SimulationParameterError(f"timing must be 'mean', 'sample' or 'none', got {timing!r}")
    # Written into a fresh directory, published as a whole (the index names the final paths).
    export = DirectoryExport(directory, _SIMGRID_FILES, anchor="index.txt")
    files: list[os.PathLike[str]] = []
    actions: dict[str, int] = {}
    skipped = decomposed = 0
    with export as staged:
        for r in range(t.nranks):
            out = io.StringIO()  # one rank in memory, then written whole (_files.write_text)
            w = _TIWriter(t, r, out, flops_per_ns)
            for e in _core.rank_events(t._core, r, timing, seed + r):
                w.event(e)
            if w.outstanding:
                w.emit("waitall")
            write_text(staged / f"rank-{r}.txt", out.getvalue())
            for k, v in w.counts.items():
                actions[k] = actions.get(k, 0) + v
            skipped += w.skipped
            decomposed += w.decomposed
            files.append(export.directory / f"rank-{r}.txt")
        write_text(staged / "index.txt", "".join(f"{p}\n" for p in files))
    return SimGridExport(
        index=export.directory / "index.txt",
        files=files,
        actions=actions,
        skipped=skipped,
        decomposed=decomposed,
    )
