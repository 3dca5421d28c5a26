"""Sizes read from a file or given as an argument are checked before anything is allocated.

Raw streams are crafted byte by byte here (layout: docs/format.md, "Raw stream (.straw)").
"""

from __future__ import annotations

import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import scalatrace
from scalatrace._base import OP_NAMES
from scalatrace.errors import ScalatraceError, TraceFormatError, UsageError


def _uv(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _sv(v: int) -> bytes:
    return _uv((v << 1) ^ (v >> 63))


def _str(s: str) -> bytes:
    b = s.encode()
    return _uv(len(b)) + b


def raw_stream(rank: int, nranks: int, world: int, durations: list[int]) -> bytes:
    """A rank's stream: one MPI_Barrier per duration, MPI_COMM_WORLD with `world` members."""
    barrier = OP_NAMES.index("Barrier")
    data = b"STRAW\0\r\n" + struct.pack("<I", 1) + _sv(rank) + _sv(nranks)
    for d in durations:
        data += b"E" + _uv(barrier) + _uv(0) + _uv(0) + _uv(0) + _uv(1000) + _uv(d)
    data += b"T" + _uv(len(durations))
    data += _uv(1) + _str("program") + _str("/bin/crafted")
    data += _uv(1) + _str("/bin/crafted")  # modules
    data += _uv(1) + _uv(1) + _uv(0) + _uv(0x1234) + _str("main") + _str("")  # one call site
    data += _uv(2)  # communicators: world and self
    data += _sv(0) + _uv(world) + b"".join(_sv(r) for r in range(world))
    data += _sv(1) + _uv(1) + _sv(rank)
    data += _uv(0)  # names
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return data + struct.pack("<Q", h)


def test_raw_stream_declaring_10_12_ranks_is_refused_at_read(tmp_path):
    path = tmp_path / "rank-0.straw"
    path.write_bytes(raw_stream(0, 10**12, 2, [5000] * 3))
    with pytest.raises(TraceFormatError) as err:
        scalatrace.read_raw(path)
    msg = str(err.value)
    assert "declares 1000000000000 ranks" in msg and "name only 2" in msg, msg
    assert "\n" not in msg and str(path) in msg
    # The same stream with the rank count its world communicator justifies loads and works.
    path.write_bytes(raw_stream(0, 2, 2, [5000] * 3))
    rec = scalatrace.read_raw(path)
    assert rec.nranks == 2
    assert rec.comm_matrix().shape == (2, 2)
    assert int(rec.compress().summary()["calls"].sum()) == 3


def test_largest_duration_round_trips_through_save_and_load(tmp_path):
    raw = tmp_path / "rank-0.straw"
    raw.write_bytes(raw_stream(0, 1, 1, [2**64 - 1, 2**63, 0, 7]))
    rec = scalatrace.read_raw(raw)
    assert [e.duration_ns for e in rec[0].events] == [2**64 - 1, 2**63, 0, 7]
    out = tmp_path / "t.sct"
    rec.compress().save(out)
    back = scalatrace.load(out)  # what read_raw accepted, save wrote and load reads
    summary = back.summary()
    assert summary["calls"].sum() == 4
    # Totals beyond 2^63 ns stay floats (never wrapped through int64), within the 2^-7 of the
    # time codes a file stores (docs/format.md, "Histogram").
    assert summary["duration_ns"].sum() == pytest.approx(2**64 - 1 + 2**63 + 7, rel=2**-7)
    assert summary["max_duration_ns"].max() == pytest.approx(2**64 - 1, rel=2**-7)
    back.save(tmp_path / "again.sct")
    assert (tmp_path / "again.sct").read_bytes() == out.read_bytes()  # the same trace again


SPARSE_LOAD = textwrap.dedent(
    """
    import resource, sys
    import scalatrace
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        getattr(scalatrace, sys.argv[1])(sys.argv[2])
    except scalatrace.ScalatraceError as e:
        print(type(e).__name__, e, file=sys.stderr)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(grown)
    """
)


@pytest.mark.parametrize("reader", ["load", "read_raw"])
def test_large_non_trace_file_is_refused_from_its_first_bytes(tmp_path, reader):
    big = tmp_path / "big.sct"
    big.write_bytes(b"this is not a trace")
    subprocess.run(["truncate", "-s", "200M", str(big)], check=True)  # sparse: no disk used
    proc = subprocess.run(
        [sys.executable, "-c", SPARSE_LOAD, reader, str(big)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stderr.startswith("TraceFormatError") and "bad magic" in proc.stderr, proc.stderr
    grown_kib = int(proc.stdout)
    assert grown_kib < 50 * 1024, f"peak memory grew by {grown_kib} KiB reading a 200 MB file"


@pytest.mark.parametrize(
    "target, needle",
    [
        ({"ranks": 10**12}, "1000000000000 ranks exceeds the trace format's limit"),
        ({"ranks": 2**32}, "4294967296 ranks exceeds the trace format's limit"),
        (
            {"dims": (10**6, 10**6)},
            "dims 1000000x1000000 (more than 4294967295 ranks) exceeds the trace format",
        ),
        ({"ranks": 5_000_000}, "exceeds max_ranks=4194304"),
        ({"ranks": 10**20}, "100000000000000000000 ranks exceeds the trace format's limit"),
        ({"dims": (10**20, 2)}, "(more than 4294967295 ranks) exceeds the trace format's limit"),
    ],
)
def test_extrapolate_to_huge_targets_is_refused_at_once(tmp_path, target, needle):
    raw = tmp_path / "rank-0.straw"
    raw.write_bytes(raw_stream(0, 1, 1, [10]))
    t = scalatrace.read_raw(raw).compress()
    with pytest.raises(UsageError) as err:
        scalatrace.extrapolate([t, t, t], **target)
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert isinstance(err.value, ScalatraceError)


def test_to_dataframe_beyond_max_events_is_refused_before_building_rows(tmp_path):
    raw = tmp_path / "rank-0.straw"
    raw.write_bytes(raw_stream(0, 1, 1, [10] * 50))
    rec = scalatrace.read_raw(raw)
    t = rec.compress()
    for frame in (t.to_dataframe, rec.to_dataframe):
        with pytest.raises(scalatrace.TooLargeError) as err:
            frame(max_events=49)
        assert "50 events in 1 ranks, more than max_events=49" in str(err.value), str(err.value)
        assert len(frame(max_events=50)) == 50


def test_dense_comm_matrix_of_a_large_run_is_refused_before_allocating(tmp_path):
    # 40,000 ranks, justified by MPI_COMM_WORLD's members: a dense matrix would take 11.9 GiB.
    raw = tmp_path / "rank-0.straw"
    raw.write_bytes(raw_stream(0, 40_000, 40_000, [10]))
    rec = scalatrace.read_raw(raw)
    with pytest.raises(scalatrace.TooLargeError) as err:
        rec.comm_matrix()
    assert "use sparse=True" in str(err.value), str(err.value)
    assert rec.comm_matrix(sparse=True).shape == (40_000, 40_000)


# A 2,000,000-rank 2D stencil (1,000 x 2,000 grid) as the harness merges it, in 2 KB:
#   scalatrace-harness --pattern stencil2d --ranks 2000000 --dims 1000x2000 --timesteps 3 \
#       -o tests/py/data/stencil2d-2M.sct
STENCIL_2M = Path(__file__).resolve().parent / "data" / "stencil2d-2M.sct"

SAVE_AND_LOAD = textwrap.dedent(
    """
    import resource, sys
    import scalatrace
    # A guard, not a timing assertion: the writer's per-rank work once took minutes here.
    resource.setrlimit(resource.RLIMIT_CPU, (120, 120))
    t = scalatrace.load(sys.argv[1])
    t.save(sys.argv[2])
    back = scalatrace.load(sys.argv[2])
    back.save(sys.argv[3])
    ranks = [0, 1, 999, 1000, 1001, 1999, 2000, 1_000_000, 1_998_000, 1_999_999]
    for r in ranks:
        assert [e.op for e in t.events(r)] == [e.op for e in back.events(r)], r
        # Every field but the times (a version 8 file stores those within 2^-7, two bins).
        a, b = t.rank_table(r), back.rank_table(r)
        names = [n for n in a.dtype.names if not n.endswith("_ns")]
        assert a[names].tolist() == b[names].tolist(), r
    print(t.nranks, back.nranks)
    """
)


def test_a_2M_rank_trace_saves_and_loads_in_seconds(tmp_path):
    """save() and load() of a trace of 2,000,000 ranks: the writer's neighbour-grid search no
    longer walks every rank per candidate grid (it took minutes). Corner, edge and interior ranks
    have the same events after the round trip, and saving again gives the same bytes."""
    first, again = tmp_path / "first.sct", tmp_path / "again.sct"
    proc = subprocess.run(
        [sys.executable, "-c", SAVE_AND_LOAD, str(STENCIL_2M), str(first), str(again)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["2000000", "2000000"]
    assert first.read_bytes() == again.read_bytes()
    assert first.stat().st_size < 4096  # still a few KB: the grids were found


FRAME_2M = textwrap.dedent(
    """
    import resource, sys
    import scalatrace
    import scalatrace.frames  # pandas, imported before measuring
    t = scalatrace.load(sys.argv[1])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        t.to_dataframe()
    except scalatrace.TooLargeError as e:
        print(e, file=sys.stderr)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
    """
)


def test_to_dataframe_of_a_2M_rank_trace_is_refused_before_allocating():
    """The whole 2,000,000-rank trace as a frame would be over 100 million rows: refused from
    the trace's event count before a row (or a per-rank array) is built."""
    proc = subprocess.run(
        [sys.executable, "-c", FRAME_2M, str(STENCIL_2M)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "events in 2000000 ranks, more than max_events=20000000" in proc.stderr, proc.stderr
    grown_kib = int(proc.stdout)
    assert grown_kib < 200 * 1024, f"peak memory grew by {grown_kib} KiB before the refusal"
