"""OTF2 export: a trace's per-rank events as an OTF2 archive (Score-P's trace format).

Written by this module alone (no libotf2 needed), following the OTF2 file layout: an anchor
file ``<name>.otf2``, global definitions ``<name>.def`` and per location an event file
``<name>/<rank>.evt`` and an (empty) local definition file ``<name>/<rank>.def``. The files use OTF2's buffer encoding (chunk headers, compressed
integers, record lengths) at trace-format version 2 (OTF2 2.0), which every later OTF2 reader
(``otf2-print``, Vampir, Scalasca) reads.

What is written per rank (one OTF2 location per MPI rank, one process location group each):

* every MPI call as ``Enter``/``Leave`` of a region named ``MPI_<op>`` at its start and end
  (times from :meth:`Trace.to_dataframe`: histogram means, a sample, or the recorded times of
  the run's raw recording);
* sends (blocking and nonblocking) as ``MpiSend`` right after ``Enter``, receives
  (``Recv``, ``Irecv``) as ``MpiRecv`` right before ``Leave``, with the peer's rank in the
  call's communicator, the tag and the byte count (a nonblocking receive is written at the
  ``Irecv`` call: scalatrace does not keep which completion call finished it);
* collectives as ``MpiCollectiveBegin``/``MpiCollectiveEnd`` with the collective type, the
  root and the bytes sent.

Communicators are OTF2 ``Comm`` definitions with their members.
"""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from ._base import OP_NAMES
from ._files import move_file_into_place, publish_directory, require_replaceable, staging_directory
from .errors import OutputExistsError, ScalatraceError, UsageError
from .frames import normalize_ranks

if TYPE_CHECKING:
    from ._model import TraceModel

CHUNK_SIZE = 1024 * 1024  # bytes per chunk, events and definitions (OTF2 allows 256 KiB .. 16 MiB)
RANKS_PER_BATCH = 512  # ranks decompressed together (bounds memory on big traces)

# Buffer-level record types and constants of the OTF2 format.
_END_OF_CHUNK, _END_OF_BUFFER, _END_OF_FILE, _CHUNK_HEADER, _TIMESTAMP = 0, 1, 2, 3, 5
_LITTLE_ENDIAN = 0x42
_UNDEFINED_U32 = 0xFFFFFFFF
_TRACE_FORMAT, _VERSION = 2, (2, 0, 0)
# Global definition records.
_DEF_CLOCK_PROPERTIES, _DEF_STRING, _DEF_SYSTEM_TREE_NODE = 5, 10, 12
_DEF_LOCATION_GROUP, _DEF_LOCATION, _DEF_REGION, _DEF_GROUP, _DEF_COMM = 13, 14, 15, 18, 22
# Event records.
_EV_ENTER, _EV_LEAVE, _EV_MPI_SEND, _EV_MPI_RECV = 12, 13, 14, 18
_EV_COLL_BEGIN, _EV_COLL_END = 22, 23
# Definition enums.
_LOCATION_GROUP_PROCESS, _LOCATION_CPU_THREAD, _PARADIGM_MPI = 1, 1, 4
_GROUP_COMM_LOCATIONS, _GROUP_COMM_GROUP = 4, 5
_ROLE_FUNCTION, _ROLE_BARRIER, _ROLE_POINT2POINT = 1, 15, 28
_ROLE_ONE2ALL, _ROLE_ALL2ONE, _ROLE_ALL2ALL, _ROLE_COLL_OTHER = 23, 24, 25, 26

_SENDS = {
    "Send",
    "Bsend",
    "Ssend",
    "Rsend",
    "Isend",
    "Ibsend",
    "Issend",
    "Irsend",
    "Sendrecv",
    "Sendrecv_replace",
}
_RECVS = {"Recv", "Irecv"}
# OTF2_CollectiveOp and region role per collective (nonblocking forms map to the blocking ones).
_COLLECTIVES = {
    "Barrier": (0, _ROLE_BARRIER),
    "Bcast": (1, _ROLE_ONE2ALL),
    "Gather": (2, _ROLE_ALL2ONE),
    "Gatherv": (3, _ROLE_ALL2ONE),
    "Scatter": (4, _ROLE_ONE2ALL),
    "Scatterv": (5, _ROLE_ONE2ALL),
    "Allgather": (6, _ROLE_ALL2ALL),
    "Allgatherv": (7, _ROLE_ALL2ALL),
    "Alltoall": (8, _ROLE_ALL2ALL),
    "Alltoallv": (9, _ROLE_ALL2ALL),
    "Alltoallw": (10, _ROLE_ALL2ALL),
    "Allreduce": (11, _ROLE_ALL2ALL),
    "Reduce": (12, _ROLE_ALL2ONE),
    "Reduce_scatter": (13, _ROLE_ALL2ALL),
    "Scan": (14, _ROLE_COLL_OTHER),
    "Exscan": (15, _ROLE_COLL_OTHER),
    "Reduce_scatter_block": (13, _ROLE_ALL2ALL),
}
_ROOTED = {"Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Reduce"}
# Every op name that is a collective (Ibcast, Iallreduce, ...) -> its blocking name.
_BLOCKING_NAME = {
    **{name: name for name in _COLLECTIVES},
    **{"I" + name[0].lower() + name[1:]: name for name in _COLLECTIVES},
}


def _collective(op: str) -> tuple[int, int] | None:
    """(OTF2 collective op, region role) of a collective MPI op, else None."""
    name = _BLOCKING_NAME.get(op)
    return None if name is None else _COLLECTIVES[name]


# --- OTF2 buffer encoding ----------------------------------------------------------------------


def _uint(value: int) -> bytes:
    """OTF2 compressed unsigned integer: a length byte, then that many little-endian bytes
    (0 and all-ones are the single bytes 0x00 and 0xff)."""
    if value == 0:
        return b"\x00"
    if value in (_UNDEFINED_U32, 0xFFFFFFFFFFFFFFFF):
        return b"\xff"
    n = (int(value).bit_length() + 7) // 8
    return bytes([n]) + int(value).to_bytes(n, "little")


def _u32(value: int) -> bytes:
    """A uint32 attribute (negative values: undefined)."""
    return _uint(_UNDEFINED_U32 if value < 0 or value > _UNDEFINED_U32 else value)


def _string(text: str) -> bytes:
    return text.encode("utf-8", "replace").replace(b"\x00", b"?") + b"\x00"


def _record(record_type: int, payload: bytes) -> bytes:
    """A record with an explicit length (one byte, or 0xff + 8 bytes beyond 254)."""
    if len(payload) < 0xFF:
        return bytes([record_type, len(payload)]) + payload
    return bytes([record_type, 0xFF]) + struct.pack("<Q", len(payload)) + payload


class _ChunkedFile:
    """Writes an OTF2 chunked buffer file: chunks of CHUNK_SIZE bytes, each starting with a
    chunk header (first event number, last event number) and padded with END_OF_CHUNK."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "wb")
        self.definitions = 0  # definition records written
        self._chunk = bytearray()
        self._events = 0  # events written so far (the header's event numbering)
        self._time = 0
        self._first_record = True
        self._start_chunk()

    def _start_chunk(self) -> None:
        self._chunk = bytearray([_CHUNK_HEADER, _LITTLE_ENDIAN])
        self._chunk += struct.pack("<QQ", self._events + 1, 0)
        self._chunk_started = True

    def _finish_chunk(self, last: bool) -> None:
        self._chunk[10:18] = struct.pack("<Q", self._events)
        if not last:
            self._chunk += bytes(CHUNK_SIZE - len(self._chunk))  # END_OF_CHUNK padding
        self._file.write(self._chunk)

    def event(self, time: int, record: bytes) -> None:
        """One event record at ``time`` (ns, non-decreasing)."""
        stamp = bytes([_TIMESTAMP]) + struct.pack("<Q", time)
        needs_stamp = self._chunk_started or time != self._time
        if len(self._chunk) + len(stamp) + len(record) + 2 > CHUNK_SIZE:
            self._finish_chunk(last=False)
            self._start_chunk()
            needs_stamp = True
        if needs_stamp:
            self._chunk += stamp
            self._time = time
            self._chunk_started = False
        self._chunk += record
        self._events += 1

    def definition(self, record: bytes) -> None:
        if len(self._chunk) + len(record) + 2 > CHUNK_SIZE:
            self._finish_chunk(last=False)
            self._start_chunk()
        self._chunk += record
        self.definitions += 1

    def close(self) -> None:
        self._chunk += bytes([_END_OF_FILE, _END_OF_BUFFER])
        self._finish_chunk(last=True)
        self._file.close()

    @property
    def events(self) -> int:
        return self._events


# --- the archive -------------------------------------------------------------------------------


class _Comms:
    """scalatrace communicators -> OTF2 Comm ids and rank translation (world -> comm rank)."""

    def __init__(self, trace: TraceModel) -> None:
        self.members: list[np.ndarray] = []
        self.index: dict[int, int] = {}
        self._rank_of: list[dict[int, int]] = []
        for entry in trace.communicators:
            members = np.asarray(entry.members.to_numpy(), dtype=np.int64)
            if entry.id == 0 and len(members) == 0:
                members = np.arange(trace.nranks, dtype=np.int64)
            if len(members) == 0:
                continue
            self.index[int(entry.id)] = len(self.members)
            self.members.append(members)
            self._rank_of.append({})
        if 0 not in self.index:  # MPI_COMM_WORLD is always there
            self.index[0] = len(self.members)
            self.members.append(np.arange(trace.nranks, dtype=np.int64))
            self._rank_of.append({})

    def otf2_comm(self, comm: int) -> int:
        return self.index.get(int(comm), self.index[0])

    def comm_rank(self, otf2_comm: int, world_rank: int) -> int:
        table = self._rank_of[otf2_comm]
        if not table:
            table.update({int(w): i for i, w in enumerate(self.members[otf2_comm])})
        return table.get(int(world_rank), -1)


def _event_records(frame, comms: _Comms, region_of: dict[str, int]) -> Iterable[tuple[int, bytes]]:
    """(time, record) pairs of one rank's events, in time order."""
    ops = frame["op"].astype(str).to_numpy()
    cols = {c: frame[c].to_numpy() for c in ("peer", "bytes", "tag", "comm", "start_ns", "end_ns")}
    for i, op in enumerate(ops):
        start, end = int(cols["start_ns"][i]), int(cols["end_ns"][i])
        # Functions recorded as Other (Comm_rank, ...) get regions of their own, numbered as
        # they first occur: the definitions are written after the events.
        region = region_of.setdefault(op, len(region_of))
        comm = comms.otf2_comm(cols["comm"][i])
        peer, nbytes, tag = int(cols["peer"][i]), max(0, int(cols["bytes"][i])), int(cols["tag"][i])
        yield start, bytes([_EV_ENTER]) + _u32(region)
        if op in _SENDS and peer >= 0:
            payload = (
                _u32(comms.comm_rank(comm, peer)) + _u32(comm) + _u32(max(tag, 0)) + _uint(nbytes)
            )
            yield start, _record(_EV_MPI_SEND, payload)
        coll = _collective(op)
        if coll is not None:
            yield start, _record(_EV_COLL_BEGIN, b"")
            root = (
                comms.comm_rank(comm, peer) if _BLOCKING_NAME[op] in _ROOTED and peer >= 0 else -1
            )
            payload = bytes([coll[0]]) + _u32(comm) + _u32(root) + _uint(nbytes) + _uint(0)
            yield end, _record(_EV_COLL_END, payload)
        if op in _RECVS and peer >= 0:
            payload = (
                _u32(comms.comm_rank(comm, peer)) + _u32(comm) + _u32(max(tag, 0)) + _uint(nbytes)
            )
            yield end, _record(_EV_MPI_RECV, payload)
        yield end, bytes([_EV_LEAVE]) + _u32(region)


def _region_role(op: str) -> int:
    coll = _collective(op)
    if coll is not None:
        return coll[1]
    if op in _SENDS or op in _RECVS or op.startswith(("Isend", "Irecv", "Probe", "Iprobe")):
        return _ROLE_POINT2POINT
    return _ROLE_FUNCTION


def write_otf2(
    trace: TraceModel,
    directory: str | os.PathLike[str],
    name: str = "traces",
    ranks: int | Iterable[int] | None = None,
    timing: Literal["mean", "sample", "none", "recorded"] = "mean",
    seed: int = 0,
    overwrite: bool = False,
) -> Path:
    """Writes ``trace`` as an OTF2 archive (for Vampir, Scalasca, ``otf2-print``).

    One OTF2 location per rank with ``Enter``/``Leave`` per MPI call, ``MpiSend`` /
    ``MpiRecv`` for point-to-point messages and ``MpiCollectiveBegin``/``End`` for
    collectives; details in the module's description.

    Parameters
    ----------
    trace : Trace
        The trace to export.
    directory : path
        Where ``<name>.otf2``, ``<name>.def`` and ``<name>/<rank>.evt`` are written.
    name : str
        Archive name.
    ranks : int or iterable of int, optional
        Ranks to export (default: all).
    timing : {"mean", "sample", "none", "recorded"}
        Event times from the timing histograms (mean or a random draw), none (every call
        at the same instant), or the measured times of the run's raw recording
        (``"recorded"``, needs ``raw_dir``).
    seed : int
        Random seed for ``timing="sample"``.
    overwrite : bool
        Replace an existing archive of that name.

    Returns
    -------
    Path
        The anchor file (``<directory>/<name>.otf2``), the one to open in a viewer.
    """
    if timing == "recorded" and trace.raw_dir is None:
        raise UsageError(
            "timing='recorded' needs the run's raw recording (trace.raw_dir); "
            "trace with scalatrace.trace(..., raw=True) or use timing='mean'"
        )
    if timing not in ("mean", "sample", "none", "recorded"):
        raise UsageError(
            f"timing must be one of 'mean', 'sample', 'none', 'recorded', not {timing!r}"
        )
    if not name or "/" in name or name.startswith("."):
        raise UsageError(f"archive name must be a plain file name, not {name!r}")
    root = Path(directory)
    anchor = root / f"{name}.otf2"
    replacing = _check_archive_target(root, name, overwrite)
    chosen = normalize_ranks(ranks, trace.nranks)
    # Everything is written into a fresh directory and moved into place: nothing the export did
    # not create is ever removed, a failed export leaves the old archive. Into a directory that
    # does not exist yet, the whole archive appears in one rename; into an existing one, the
    # events directory is exchanged in one step, then the definitions and the anchor follow.
    fresh = not os.path.lexists(root)
    near = root.parent if fresh else root
    try:
        near.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ScalatraceError(f"{near}: cannot create the directory: {e.strerror}") from None
    with staging_directory(near, name) as stage:
        staged = stage / root.name if fresh else stage
        staged.mkdir(exist_ok=True)
        try:
            _write_archive(trace, staged, name, chosen, timing, seed)
        except OSError as e:
            raise ScalatraceError(
                f"{anchor}: writing the archive failed: {e.strerror} (nothing replaced)"
            ) from None
        if fresh and _rename_new_directory(staged, root):
            return anchor
        _check_archive_target(root, name, overwrite)  # again: the directory may have changed
        publish_directory(
            staged / name, root / name, overwrite=replacing, is_ours=_is_event_directory
        )
        move_file_into_place(staged / f"{name}.def", root / f"{name}.def")
        move_file_into_place(staged / f"{name}.otf2", anchor)  # last: the file a viewer opens
    return anchor


def _rename_new_directory(staged: Path, root: Path) -> bool:
    """Renames the complete ``staged`` directory to the new directory ``root``; False if ``root``
    was created meanwhile and is not empty (then the archive is published into it)."""
    try:
        os.rename(staged, root)
    except OSError as e:
        if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return False
        raise ScalatraceError(
            f"{root}: cannot move the new archive into place: {e.strerror}"
        ) from None
    return True


def _is_event_directory(path: Path) -> bool:
    """True if ``path`` holds only what :func:`to_otf2` writes there (``<rank>.evt``/``.def``)."""
    return all(
        p.is_file() and not p.is_symlink() and p.suffix in (".evt", ".def") and p.stem.isdigit()
        for p in path.iterdir()
    )


def _check_archive_target(root: Path, name: str, overwrite: bool) -> bool:
    """Checks that the archive ``name`` may be written in ``root``; True if it replaces one."""
    anchor = root / f"{name}.otf2"
    require_replaceable(anchor)
    require_replaceable(root / f"{name}.def")
    exists = anchor.exists()
    if exists and not overwrite:
        raise OutputExistsError(f"{anchor} exists; pass overwrite=True to replace the archive")
    events = root / name
    if os.path.lexists(events):
        if not exists:
            raise ScalatraceError(
                f"{events} exists but {anchor} does not: it is not an archive scalatrace wrote; "
                "refusing to replace it (choose another name or directory)"
            )
        if events.is_symlink() or not events.is_dir() or not _is_event_directory(events):
            raise ScalatraceError(
                f"{events} holds files scalatrace did not write; refusing to replace it"
            )
    return exists


def _write_archive(
    trace: TraceModel, root: Path, name: str, chosen: np.ndarray, timing: str, seed: int
) -> None:
    """Writes ``<name>.otf2``, ``<name>.def`` and ``<name>/`` into the (fresh) directory ``root``."""
    anchor = root / f"{name}.otf2"
    (root / name).mkdir()

    comms = _Comms(trace)
    region_of = {op: i for i, op in enumerate(OP_NAMES)}
    raw = None
    if timing == "recorded":
        from ._raw import read_raw

        raw = read_raw(trace.raw_dir)
    counts: dict[int, int] = {}
    last_time = 0
    recorded = raw.to_dataframe() if raw is not None else None
    for first in range(0, len(chosen), RANKS_PER_BATCH):
        batch = chosen[first : first + RANKS_PER_BATCH]
        if recorded is not None:
            frame = recorded[recorded.index.get_level_values("rank").isin(batch)]
        else:
            frame = trace.to_dataframe(ranks=batch, timing=timing, seed=seed)
        frame_ranks = frame.index.get_level_values("rank").to_numpy()  # sorted by rank
        bounds = np.searchsorted(frame_ranks, np.concatenate([batch, [np.iinfo(np.int64).max]]))
        for k, rank in enumerate(batch):
            rows = frame.iloc[bounds[k] : bounds[k + 1]]
            out = _ChunkedFile(root / name / f"{int(rank)}.evt")
            for time, record in _event_records(rows, comms, region_of):
                out.event(time, record)
                last_time = max(last_time, time)
            out.close()
            counts[int(rank)] = out.events
            _ChunkedFile(root / name / f"{int(rank)}.def").close()  # no local definitions

    ndefs = _write_definitions(
        root / f"{name}.def", trace, chosen, counts, comms, region_of, last_time
    )
    _write_anchor(anchor, len(chosen), ndefs)


def _write_definitions(
    path: Path,
    trace: TraceModel,
    ranks: np.ndarray,
    counts: dict[int, int],
    comms: _Comms,
    region_of: dict[str, int],
    trace_length: int,
) -> int:
    """Writes the global definitions; returns how many records were written."""
    out = _ChunkedFile(path)
    strings: dict[str, int] = {}

    def string(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings)
            out.definition(_record(_DEF_STRING, _u32(strings[text]) + _string(text)))
        return strings[text]

    # ClockProperties: ns resolution, offset 0, length of the trace.
    out.definition(
        _record(_DEF_CLOCK_PROPERTIES, _uint(1_000_000_000) + _uint(0) + _uint(trace_length))
    )
    machine = string(trace.metadata.get("hostname", "machine"))
    node_class = string("machine")
    out.definition(
        _record(_DEF_SYSTEM_TREE_NODE, _u32(0) + _u32(machine) + _u32(node_class) + _u32(-1))
    )
    for rank in ranks:
        group_name = string(f"MPI Rank {int(rank)}")
        payload = _u32(int(rank)) + _u32(group_name) + bytes([_LOCATION_GROUP_PROCESS]) + _u32(0)
        out.definition(_record(_DEF_LOCATION_GROUP, payload))
    thread = string("Master thread")
    for rank in ranks:
        payload = (
            _uint(int(rank))
            + _u32(thread)
            + bytes([_LOCATION_CPU_THREAD])
            + _uint(counts.get(int(rank), 0))
            + _u32(int(rank))
        )
        out.definition(_record(_DEF_LOCATION, payload))
    empty = string("")
    for op in region_of:
        region_name = string(f"MPI_{op}")
        # self, name, description, regionType (pre-1.1, unused), sourceFile, begin/end line,
        # canonicalName, role, paradigm, flags.
        payload = (
            _u32(region_of[op])
            + _u32(region_name)
            + _u32(empty)
            + bytes([0])
            + _u32(empty)
            + _u32(0)
            + _u32(0)
            + _u32(region_name)
            + bytes([_region_role(op), _PARADIGM_MPI])
            + _u32(0)
        )
        out.definition(_record(_DEF_REGION, payload))
    # Group 0: the MPI locations (location of rank r = r); then one member group per communicator.
    world = np.arange(trace.nranks, dtype=np.int64)
    locations_name = string("MPI locations")
    out.definition(
        _record(_DEF_GROUP, _group_payload(0, locations_name, _GROUP_COMM_LOCATIONS, world))
    )
    for otf2_id, members in enumerate(comms.members):
        group_name = string(f"communicator {otf2_id} group")
        out.definition(
            _record(_DEF_GROUP, _group_payload(otf2_id + 1, group_name, _GROUP_COMM_GROUP, members))
        )
    for comm_id, otf2_id in sorted(comms.index.items(), key=lambda kv: kv[1]):
        comm_name = string(
            "MPI_COMM_WORLD"
            if comm_id == 0
            else "MPI_COMM_SELF"
            if comm_id == 1
            else f"comm {comm_id}"
        )
        out.definition(
            _record(_DEF_COMM, _u32(otf2_id) + _u32(comm_name) + _u32(otf2_id + 1) + _u32(-1))
        )
    out.close()
    return out.definitions


def _group_payload(group_id: int, name: int, group_type: int, members: np.ndarray) -> bytes:
    # self, name, groupType (pre-1.2; 0 = unknown), member count, members, type, paradigm, flags.
    body = b"".join(_uint(int(m)) for m in members)
    return (
        _u32(group_id)
        + _u32(name)
        + bytes([0])
        + _u32(len(members))
        + body
        + bytes([group_type, _PARADIGM_MPI])
        + _u32(0)
    )


def _write_anchor(path: Path, nlocations: int, ndefs: int) -> None:
    body = bytearray([_CHUNK_HEADER, _LITTLE_ENDIAN])
    body += _string("OTF2") + bytes([3, _TRACE_FORMAT, *_VERSION])
    body += struct.pack("<QQ", CHUNK_SIZE, CHUNK_SIZE)
    body += bytes([1, 1])  # substrate POSIX, compression none
    body += struct.pack("<QQ", nlocations, ndefs)
    body += _string("") + _string("scalatrace") + _string("exported from a scalatrace trace")
    body += struct.pack("<I", 0)  # properties
    body += struct.pack("<Q", 0x5CA1A7ACE)  # trace id
    body += struct.pack("<II", 0, 0)  # snapshots, thumbnails
    body += bytes([_END_OF_FILE, _END_OF_BUFFER, _END_OF_CHUNK])
    path.write_bytes(bytes(body))
