"""Reliability and security of the collector's output, the readers and the replay (issue 10).

Real runs under mpiexec: output paths that are FIFOs, symlinks or device nodes are refused and
left alone; a full disk (a 64 KiB tmpfs, where this process may mount one) is reported per rank
with its reason and leaves nothing behind; two threads per rank under MPI_THREAD_MULTIPLE get
their own requests paired with their own Waitalls, and the trace replays; messages beyond an
int count to MPI_PROC_NULL are recorded, summarised (as no traffic) and replayed. Readers: text
that is not UTF-8 is a TraceFormatError at load, error messages name the file once, an empty
raw stream is called empty.
"""

from __future__ import annotations

import os
import stat
import struct
import subprocess
import zlib
from pathlib import Path

import helpers
import pytest
from test_collector import compile_program

import scalatrace
from scalatrace import TraceFormatError
from scalatrace.replay import replay

THREAD_ITERS = 400


def _run(argv, n, tmp_path, **env_kw):
    env = helpers.collector_env(**env_kw)
    return helpers.run_mpi(n, [str(a) for a in argv], env=env, timeout=120, cwd=tmp_path)


# ---------------------------------------------------------------- item 1: output paths


@pytest.fixture(scope="module")
def ring():
    exe = helpers.example_path("ring")
    if not exe.is_file():
        pytest.skip("examples not built")
    return exe


def test_trace_output_refuses_a_fifo(ring, tmp_path):
    fifo = tmp_path / "out.sct"
    os.mkfifo(fifo)
    proc = _run([ring, "-i", "2", "-c", "0"], 2, tmp_path, out=fifo)
    assert "compressed trace not written" in proc.stderr, proc.stderr
    assert "is a FIFO; refusing to replace it" in proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.sct"]  # no temporary file left


def test_trace_output_never_writes_through_symlinks(ring, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    # the old writer's fixed temporary name, and the output path itself
    (tmp_path / "planted.sct.tmp").symlink_to(victim)
    _run([ring, "-i", "2", "-c", "0"], 2, tmp_path, out=tmp_path / "planted.sct")
    assert victim.read_text() == "precious"
    assert (tmp_path / "planted.sct").is_file() and not (tmp_path / "planted.sct").is_symlink()
    scalatrace.load(tmp_path / "planted.sct")  # a complete, valid trace

    (tmp_path / "linked.sct").symlink_to(victim)
    proc = _run([ring, "-i", "2", "-c", "0"], 2, tmp_path, out=tmp_path / "linked.sct")
    assert "is a symbolic link; refusing to replace it" in proc.stderr, proc.stderr
    assert (tmp_path / "linked.sct").is_symlink() and victim.read_text() == "precious"


def test_trace_output_refuses_a_device_node(ring, tmp_path):
    """SCALATRACE_OUT=/dev/full as root: a private node of the same device (1, 7) here."""
    dev = tmp_path / "full"
    try:
        os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    proc = _run([ring, "-i", "2", "-c", "0"], 2, tmp_path, out=dev)
    assert "is a character device; refusing to replace it" in proc.stderr, proc.stderr
    assert stat.S_ISCHR(dev.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


# ---------------------------------------------------------------- item 2: full disk


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (a real full disk); skipped where mounting is not permitted."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + proc.stderr.strip())
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_raw_streams_on_a_full_disk_are_reported_per_rank(ring, tiny_disk, tmp_path):
    raw = tiny_disk / "raw"
    proc = _run([ring, "-i", "3000", "-c", "0"], 2, tmp_path, raw=raw)
    err = proc.stderr
    for rank in (0, 1):
        line = next(
            (
                text
                for text in err.splitlines()
                if text.startswith(f"scalatrace: rank {rank}: raw stream not written")
            ),
            None,
        )
        assert line is not None, err
        assert "No space left on device" in line
    assert "raw streams of all" not in err and "written to" not in err
    assert "2 of 2 ranks could not write theirs" in err
    assert list(raw.iterdir()) == []  # nothing that could pass for a stream, no temporary file


def test_trace_on_a_full_disk_says_why_and_leaves_nothing(ring, tiny_disk, tmp_path):
    filler = tiny_disk / "filler"
    with open(filler, "wb", buffering=0) as f:  # unbuffered: nothing left to flush at close
        try:
            while True:
                f.write(b"x" * 4096)
                f.flush()
        except OSError:
            pass
    proc = _run([ring, "-i", "2", "-c", "0"], 2, tmp_path, out=tiny_disk / "t.sct")
    assert "compressed trace not written" in proc.stderr, proc.stderr
    assert "No space left on device" in proc.stderr
    assert "compressed trace written" not in proc.stderr
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler"]


def test_raw_directory_errors_name_the_reason(ring, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = _run([ring, "-i", "1", "-c", "0"], 2, tmp_path, raw=blocker / "raw")
    assert "cannot create the directory" in proc.stderr and "Not a directory" in proc.stderr
    assert "No such file or directory" not in proc.stderr
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        proc = _run([ring, "-i", "1", "-c", "0"], 2, tmp_path, raw=locked / "raw")
        assert "Permission denied" in proc.stderr, proc.stderr


# ---------------------------------------------------------------- item 4: MPI_THREAD_MULTIPLE


def _check_thread_pairing(events):
    """Every Waitall completes one Irecv and one Isend of the same thread (tag), and every
    request is completed exactly once."""
    resolved = helpers.resolve_requests(events)
    completed = []
    mispaired = 0
    for ev, targets in zip(events, resolved):
        if ev["op"] != "Waitall":
            continue
        assert len(targets) == 2 and all(t is not None and t >= 0 for t in targets)
        ops = sorted(events[t]["op"] for t in targets)
        tags = {events[t].get("tag", 0) for t in targets}
        if ops != ["Irecv", "Isend"] or len(tags) != 1:
            mispaired += 1
        completed += targets
    return mispaired, len(completed), len(set(completed))


@pytest.fixture(scope="module")
def threaded_run(tmp_path_factory):
    exe = helpers.example_path("threads_waitall")
    if not exe.is_file():
        pytest.skip("examples not built")
    tmp = tmp_path_factory.mktemp("threads")
    _run([exe, "-i", str(THREAD_ITERS)], 2, tmp, raw=tmp / "raw", out=tmp / "t.sct")
    return tmp


def test_thread_multiple_waitalls_pair_with_their_own_threads_requests(threaded_run):
    dump = helpers.dump_raw(threaded_run / "raw")
    for rank in dump["ranks"]:
        events = rank["events"]
        assert sum(e["op"] == "Waitall" for e in events) == 2 * THREAD_ITERS
        mispaired, completed, distinct = _check_thread_pairing(events)
        assert mispaired == 0
        assert completed == distinct == 4 * THREAD_ITERS


def test_thread_multiple_trace_equals_raw_and_replays(threaded_run):
    dump = helpers.dump_raw(threaded_run / "raw")
    trace = scalatrace.load(threaded_run / "t.sct")
    for rank in dump["ranks"]:
        from_trace = [
            (e.op, e.fields["Tag"], list(e.arrays["Requests"]))
            for e in trace.events(rank["rank"], timing="none")
        ]
        from_raw = [
            (e["op"], e.get("tag", 0), list(e.get("requests", []) or [])) for e in rank["events"]
        ]
        assert from_trace == from_raw
    # Three threads per rank called MPI (main: Init, Barrier, Finalize; two exchange threads):
    # the trace says so, and the replay defers waits for it (a serial replay of some recorded
    # interleavings deadlocks; see test_replay.py).
    assert trace.metadata["mpi_threads"] == "3"
    result = replay(threaded_run / "t.sct", compute_scale=0.0, timeout=30)  # no deadlock
    assert result.total_counts()["Waitall"] == 2 * 2 * THREAD_ITERS


# ---------------------------------------------------------------- items 5 and 7: large counts


@pytest.fixture(scope="module")
def proc_null_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("proc_null")
    exe = compile_program("proc_null_large", tmp)
    proc = _run([exe], 2, tmp, raw=tmp / "raw", out=tmp / "t.sct")
    assert "proc_null_large done" in proc.stdout
    return tmp


def test_large_counts_to_proc_null_are_recorded(proc_null_run):
    rank0 = helpers.dump_raw(proc_null_run / "raw")["ranks"][0]["events"]
    sends = [e for e in rank0 if e["op"] == "Send"]
    assert [e["bytes"] for e in sends] == [3 << 30, 4 << 30]
    assert all(e["peer"] == helpers.K_PROC_NULL for e in sends)


def test_summary_does_not_count_bytes_to_proc_null(proc_null_run):
    trace = scalatrace.load(proc_null_run / "t.sct")
    table = trace.summary()
    by_op = dict(zip(table["op"], table["bytes"]))
    assert by_op["Send"] == 0 and by_op["Recv"] == 0
    assert by_op["Sendrecv"] == 2 * 10  # the one real exchange, 10 bytes from each rank


@pytest.mark.parametrize("source", ["t.sct", "raw"])
def test_replay_of_messages_beyond_int_to_proc_null(proc_null_run, source):
    result = replay(proc_null_run / source, compute_scale=0.0, timeout=60)
    counts = result.total_counts()
    assert counts["Send"] == 2 * 2 and counts["Recv"] == 2


# ---------------------------------------------------------------- item 6: SCALATRACE_MEMORY

IRREGULAR_CALLS = 6000


@pytest.fixture(scope="module")
def irregular(tmp_path_factory):
    """benchmarks/irregular_growth.c: MPI_Iprobe calls from 16 sites with random tags, so
    nothing repeats and every event adds to the rank's queue; it prints each rank's VmHWM."""
    tmp = tmp_path_factory.mktemp("irregular")
    exe = tmp / "irregular_growth"
    src = Path(__file__).resolve().parents[2] / "benchmarks" / "irregular_growth.c"
    subprocess.run(["mpicc.mpich", "-O0", str(src), "-o", str(exe)], check=True)
    return exe


def _peaks_kib(stdout: str) -> dict[int, int]:
    """rank -> VmHWM after MPI_Finalize (KiB), as irregular_growth prints it."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["rank"] and "peak_final_kib" in parts:
            out[int(parts[1])] = int(parts[parts.index("peak_final_kib") + 1])
    return out


def _assert_trace_equals_raw(trace_path: Path, raw_dir: Path) -> None:
    trace = scalatrace.load(trace_path)
    dump = helpers.dump_raw(raw_dir)
    for rank in dump["ranks"]:
        want = [
            helpers.normalized_event(e, relaxed=False) for e in rank["events"] if e["op"] != "Other"
        ]
        for e in want:
            e.pop("nameid", None)
        assert helpers.cursor_events(trace, rank["rank"], relaxed=False) == want, (
            f"rank {rank['rank']}"
        )


def test_memory_budget_bounds_the_compressor_and_loses_nothing(irregular, tmp_path):
    runs = {}
    for name, settings in {"default": {}, "budget": {"memory": "1M"}}.items():
        d = tmp_path / name
        d.mkdir()
        proc = _run(
            [irregular, "-n", str(IRREGULAR_CALLS)],
            2,
            d,
            raw=d / "raw",
            out=d / "t.sct",
            **settings,
        )
        _assert_trace_equals_raw(d / "t.sct", d / "raw")
        runs[name] = (scalatrace.load(d / "t.sct").metadata, _peaks_kib(proc.stdout), proc.stderr)
    default_md, default_peaks, _ = runs["default"]
    budget_md, budget_peaks, _ = runs["budget"]
    # Without a budget the queue of 6,000 unique events is far over 1 MiB; with it, every rank's
    # compressor stays near the budget, the rest went to spill files and came back as segments.
    assert int(default_md["compressor_peak_bytes"]) > 4 << 20
    assert "rank_segments" not in default_md
    assert int(budget_md["compressor_peak_bytes"]) <= (1 << 20) * 3 // 2
    segments, _, _, _, _, ranks, _ = budget_md["rank_segments"].split()
    assert int(segments) >= 4 and int(ranks) == 2
    # What the process really used follows (peaks of whole processes: MPI and Python-free C).
    for rank in (0, 1):
        assert budget_peaks[rank] < default_peaks[rank] / 2, (budget_peaks, default_peaks)


def test_memory_budget_without_a_usable_spill_directory_keeps_everything(irregular, tmp_path):
    proc = _run(
        [irregular, "-n", "3000"],
        2,
        tmp_path,
        raw=tmp_path / "raw",
        out=tmp_path / "t.sct",
        memory="1M",
        spill_dir=tmp_path / "missing",
    )
    assert (
        f"cannot create a spill file in {tmp_path / 'missing'}: No such file or directory"
        in proc.stderr
    )
    assert "keeping this rank's events in memory from now on" in proc.stderr
    _assert_trace_equals_raw(tmp_path / "t.sct", tmp_path / "raw")
    assert "rank_segments" not in scalatrace.load(tmp_path / "t.sct").metadata


# ---------------------------------------------------------------- items 3 and 7: readers


def _rewrite_sct_payload(data: bytes, old: bytes, new: bytes) -> bytes:
    header, payload = data[:28], data[28:]
    assert payload.count(old) >= 1 and len(old) == len(new)
    payload = payload.replace(old, new, 1)
    return header[:24] + struct.pack("<I", zlib.crc32(payload)) + payload


def _fnv1a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def test_invalid_utf8_in_a_trace_is_a_format_error_at_load(proc_null_run, tmp_path):
    # The collector's trace written again with a plain payload, so its text is in its bytes.
    good = scalatrace.load(proc_null_run / "t.sct")._core.encode(entropy_coded=False)
    bad = tmp_path / "bad.sct"
    bad.write_bytes(_rewrite_sct_payload(good, b"proc_null_large", b"proc_null_larg\xff"))
    with pytest.raises(TraceFormatError) as info:
        scalatrace.load(bad)
    msg = str(info.value)
    assert "not valid UTF-8" in msg
    assert msg.count(str(bad)) == 1  # the path once, not "x.sct: x.sct: ..."


def test_invalid_utf8_in_a_raw_stream_is_a_format_error(proc_null_run, tmp_path):
    data = (proc_null_run / "raw" / "rank-0.straw").read_bytes()[:-8]
    assert b"proc_null_large" in data
    data = data.replace(b"proc_null_large", b"proc_null_larg\xc3", 1)
    bad = tmp_path / "rank-0.straw"
    bad.write_bytes(data + struct.pack("<Q", _fnv1a(data)))
    with pytest.raises(TraceFormatError) as info:
        scalatrace.read_raw(bad)
    assert "not valid UTF-8" in str(info.value)
    assert str(info.value).count(str(bad)) == 1


def test_truncated_trace_names_the_file_once(proc_null_run, tmp_path):
    cut = tmp_path / "cut.sct"
    cut.write_bytes((proc_null_run / "t.sct").read_bytes()[:100])
    with pytest.raises(TraceFormatError) as info:
        scalatrace.load(cut)
    assert str(info.value).count("cut.sct") == 1 and "truncated" in str(info.value)


def test_empty_raw_stream_is_called_empty(tmp_path):
    (tmp_path / "rank-0.straw").write_bytes(b"")
    with pytest.raises(TraceFormatError) as info:
        scalatrace.read_raw(tmp_path / "rank-0.straw")
    assert "empty raw stream" in str(info.value) and "bad magic" not in str(info.value)
