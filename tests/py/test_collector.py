"""Collector-specific behaviour of libscalatrace.so under real MPICH runs.

The per-example ground-truth comparison lives in test_examples_raw.py; this file covers what
the examples do not: settings and their fallbacks, unchanged return codes and results,
MPI_THREAD_MULTIPLE, finishing without MPI_Finalize (C and mpi_f08), MPI_Abort, shared request
handles, functions counted as Op::Other, an unwritable raw directory. Small dedicated programs
live in tests/py/programs/ and are compiled here with mpicc.mpich / mpif90.mpich.
"""

from __future__ import annotations

import collections
import shutil
import subprocess
from pathlib import Path

import helpers
import pytest

PROGRAMS = Path(__file__).resolve().parent / "programs"


def compile_program(name: str, tmp_path: Path) -> Path:
    src = next(PROGRAMS.glob(name + ".*"))
    compiler = "mpif90.mpich" if src.suffix == ".f90" else "mpicc.mpich"
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed")
    exe = tmp_path / name
    cmd = [compiler, "-O0", "-g", str(src), "-o", str(exe)]
    if src.suffix == ".c":
        cmd += ["-Wno-stringop-overflow", "-lpthread"]
    # cwd: Fortran module files (.mod) go to the temporary directory, not the checkout
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return exe


def run(exe: Path, n: int, tmp_path: Path, raw: bool = True, **settings):
    raw_dir = tmp_path / "raw"
    env = helpers.collector_env(raw=raw_dir if raw else None, **settings)
    proc = helpers.run_mpi(n, [exe], env=env, timeout=60, cwd=tmp_path)
    return proc, raw_dir


def op_counts(rank: dict) -> collections.Counter:
    return collections.Counter(e["name"] if e["op"] == "Other" else e["op"] for e in rank["events"])


def test_bad_settings_fall_back_to_defaults_with_one_message(tmp_path):
    exe = compile_program("no_finalize", tmp_path)
    proc, raw = run(
        exe,
        2,
        tmp_path,
        stack_depth="abc",
        window="-3",
        memory="12Q",
        quiet="maybe",
        hist_bins="3",
        site_match="65",
    )
    err = proc.stderr
    assert "scalatrace: SCALATRACE_STACK_DEPTH='abc' is not" in err
    assert "using default 16" in err
    assert "SCALATRACE_WINDOW='-3'" in err and "using default 512" in err
    assert "SCALATRACE_MEMORY='12Q'" in err
    assert "SCALATRACE_QUIET='maybe'" in err
    assert "SCALATRACE_HIST_BINS='3' is not 1, 2, 4, 8 or 16; using default 4" in err
    assert "SCALATRACE_SITE_MATCH='65' is not a frame count (0..64); using default 1" in err
    dump = helpers.dump_raw(raw)
    for rank in dump["ranks"]:
        assert rank["metadata"]["setting.SCALATRACE_STACK_DEPTH"] == "16"
        assert rank["metadata"]["setting.SCALATRACE_WINDOW"] == "512"
        assert rank["metadata"]["setting.SCALATRACE_HIST_BINS"] == "4"
        assert rank["metadata"]["setting.SCALATRACE_SITE_MATCH"] == "1"
        assert max(len(s["frames"]) for s in rank["sites"]) > 2


def test_stack_depth_setting_limits_frames(tmp_path):
    exe = compile_program("no_finalize", tmp_path)
    _, raw = run(exe, 2, tmp_path, stack_depth=1)
    dump = helpers.dump_raw(raw)
    for rank in dump["ranks"]:
        assert rank["metadata"]["setting.SCALATRACE_STACK_DEPTH"] == "1"
        assert all(len(s["frames"]) == 1 for s in rank["sites"])
        # depth 1 still tells the call sites in main apart
        assert len(rank["sites"]) == len({e["site"] for e in rank["events"]})


def test_return_codes_and_results_are_unchanged(tmp_path):
    exe = compile_program("return_codes", tmp_path)
    plain = helpers.run_mpi(3, [exe], timeout=60, cwd=tmp_path)
    traced, raw = run(exe, 3, tmp_path)
    assert sorted(traced.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    assert "bad send rc!=0:1" in plain.stdout  # the failing calls really failed
    dump = helpers.dump_raw(raw)
    for rank in dump["ranks"]:
        ops = [e["op"] for e in rank["events"]]
        # failed calls are recorded too (op and call site), and a failed Isend still takes
        # its slot in the handle buffer
        assert "Send" in ops and "Isend" in ops
        split = next(e for e in rank["events"] if e["op"] == "Comm_split")
        assert split["color"] == rank["rank"] % 2 and split["key"] == -rank["rank"]


def test_thread_multiple_records_every_call_consistently(tmp_path):
    exe = compile_program("threads", tmp_path)
    proc, raw = run(exe, 2, tmp_path)
    assert "no MPI_THREAD_MULTIPLE" not in proc.stdout
    dump = helpers.dump_raw(raw)
    threads, rounds = 4, 20
    for rank in dump["ranks"]:
        counts = op_counts(rank)
        assert counts["Isend"] == counts["Irecv"] == threads * rounds
        assert counts["Wait"] == 2 * threads * rounds
        assert counts["Send" if rank["rank"] == 0 else "Recv"] == threads * rounds
        # every Wait completes one request created before it, each request exactly once
        events = rank["events"]
        resolved = helpers.resolve_requests(events)
        completed = []
        for ev, targets in zip(events, resolved):
            if ev["op"] == "Wait":
                assert len(targets) == 1 and targets[0] is not None and targets[0] >= 0
                assert events[targets[0]]["op"] in ("Isend", "Irecv")
                completed.append(targets[0])
        assert len(completed) == len(set(completed)) == 2 * threads * rounds
        # tags recorded per thread: 0..3 for the nonblocking pairs
        assert {e["tag"] for e in events if e["op"] == "Isend"} == set(range(threads))


def test_no_finalize_c_program_is_flushed_at_exit(tmp_path):
    # Without MPI_Finalize, hydra kills the other ranks when the first one exits: the
    # collector's exit handler flushes, then waits for every rank (SCALATRACE_EXIT_WAIT).
    exe = compile_program("no_finalize", tmp_path)
    proc, raw = run(exe, 3, tmp_path)
    assert proc.stdout.count("sum 3") == 3
    dump = helpers.dump_raw(raw)
    assert len(dump["ranks"]) == 3
    for rank in dump["ranks"]:
        assert rank["metadata"]["finished_by"] == "exit"
        counts = op_counts(rank)
        assert counts["Init"] == 1 and counts["Allreduce"] == 5 and counts["Barrier"] == 1
        assert "Finalize" not in counts


def test_mpi_f08_program_is_traced_completely(tmp_path):
    # MPICH's mpi_f08 calls PMPI_Init, PMPI_Waitall, PMPI_Barrier, PMPI_Finalize... directly;
    # the collector interposes those PMPI_ functions for calls coming from the Fortran library.
    exe = compile_program("f08_ring", tmp_path)
    proc, raw = run(exe, 3, tmp_path)
    assert "total" in proc.stdout
    dump = helpers.dump_raw(raw)
    assert len(dump["ranks"]) == 3
    for rank in dump["ranks"]:
        counts = op_counts(rank)
        assert counts["Isend"] == counts["Irecv"] == counts["Send"] == counts["Recv"] == 3
        assert counts["Waitall"] == 3
        assert counts["Init"] == counts["Allreduce"] == counts["Barrier"] == 1
        assert counts["Finalize"] == 1 and counts["MPI_Comm_rank"] == 1
        assert rank["metadata"]["finished_by"] == "MPI_Finalize"
        me, n = rank["rank"], rank["nranks"]
        events = rank["events"]
        for ev, targets in zip(events, helpers.resolve_requests(events)):
            if ev["op"] in ("Isend", "Send"):
                assert (me + ev["peer"]) % n == (me + 1) % n
                assert ev["bytes"] == 64 and ev["dtsize"] == 8
            if ev["op"] in ("Irecv", "Recv"):
                assert (me + ev["peer"]) % n == (me + n - 1) % n
            if ev["op"] == "Waitall":
                assert [events[t]["op"] for t in targets] == ["Irecv", "Isend"]


def test_abort_flushes_the_aborting_rank(tmp_path):
    exe = compile_program("abort", tmp_path)
    raw = tmp_path / "raw"
    env = helpers.collector_env(raw=raw)
    with pytest.raises(helpers.MPIRunError):
        helpers.run_mpi(2, [exe], env=env, timeout=60, cwd=tmp_path)
    proc = helpers.run_tool("scalatrace-dump", ["raw", raw / "rank-0.straw"])
    import json

    rank0 = json.loads(proc.stdout)["ranks"][0]
    assert rank0["metadata"]["finished_by"] == "MPI_Abort"
    assert [e["op"] for e in rank0["events"] if e["op"] != "Other"] == [
        "Init",
        "Bcast",
        "Barrier",
        "Abort",
    ]


def test_shared_request_handles_pair_deterministically(tmp_path):
    exe = compile_program("shared_handles", tmp_path)
    _, raw = run(exe, 2, tmp_path)
    events = helpers.dump_raw(raw)["ranks"][0]["events"]
    resolved = helpers.resolve_requests(events)
    waitall = next(i for i, e in enumerate(events) if e["op"] == "Waitall")
    isends = [i for i, e in enumerate(events) if e["op"] == "Isend"]
    # three distinct Isends of the first batch, whatever the handle values were
    assert sorted(resolved[waitall]) == isends[:3]
    waits = [resolved[i][0] for i, e in enumerate(events) if e["op"] == "Wait"]
    assert waits == isends[3:]  # waited in creation order: resolved in creation order


def test_other_functions_are_counted_by_name(tmp_path):
    exe = compile_program("others", tmp_path)
    _, raw = run(exe, 2, tmp_path)
    for rank in helpers.dump_raw(raw)["ranks"]:
        counts = op_counts(rank)
        for name in (
            "MPI_Comm_rank",
            "MPI_Get_processor_name",
            "MPI_Type_contiguous",
            "MPI_Type_commit",
            "MPI_Type_free",
        ):
            assert counts[name] == 1, name
        assert "MPI_Wtime" not in counts  # timers are not wrapped
        for ev in rank["events"]:
            if ev["op"] == "Other":
                assert rank["names"][ev["nameid"]] == ev["name"]
        bcast = next(e for e in rank["events"] if e["op"] == "Bcast")
        assert bcast["bytes"] == 16 and bcast["dtsize"] == 8  # 2 x derived type of 2 ints


def test_unwritable_raw_dir_degrades_without_failing(tmp_path):
    exe = compile_program("no_finalize", tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    env = helpers.collector_env(raw=blocker / "raw")
    proc = helpers.run_mpi(2, [exe], env=env, timeout=60, cwd=tmp_path)
    assert proc.stdout.count("sum 2") == 2
    assert "SCALATRACE_RAW" in proc.stderr and "continuing without raw stream" in proc.stderr


@pytest.mark.parametrize("program", ["no_finalize", "f08_ring", "shared_handles"])
def test_compressed_trace_is_written_at_finalize_and_at_exit(program, tmp_path):
    exe = compile_program(program, tmp_path)
    out = tmp_path / "trace.sct"
    proc, _ = run(exe, 3 if program != "shared_handles" else 2, tmp_path, raw=False, out=out)
    assert out.is_file(), proc.stderr
    assert out.read_bytes()[:8] == b"SCALATRC"
    assert "compressed trace written to" in proc.stderr


def test_compressed_output_none_and_default_name(tmp_path):
    exe = compile_program("shared_handles", tmp_path)
    run(exe, 2, tmp_path, raw=False, out="none")
    assert not list(tmp_path.glob("*.sct"))
    env = helpers.collector_env()
    del env["SCALATRACE_OUT"]  # default: <program>.sct in the working directory
    helpers.run_mpi(2, [exe], env=env, timeout=60, cwd=tmp_path)
    assert (tmp_path / "shared_handles.sct").is_file()


def test_the_collectors_own_time_is_left_out_of_the_programs_compute(tmp_path):
    """After each call the collector finds the call site, records and compresses: its time, not
    the program's. A loop of back-to-back MPI_Comm_rank calls with every stack walked
    (SCALATRACE_STACK_MEMO=0, a few hundred ns of collector work per call) records gaps far below
    the collector's time per call, which the metadata reports (docs/collector.md, "The
    collector's own time"). Medians and a ratio: no absolute time, robust to a preempted call."""
    import numpy as np

    import scalatrace

    exe = compile_program("tight_loop", tmp_path)
    raw = tmp_path / "raw"
    env = helpers.collector_env(raw=raw, out=tmp_path / "t.sct", stack_memo=0)
    helpers.run_mpi(1, [exe, "2000"], env=env, timeout=60)
    (rank,) = list(scalatrace.read_raw(raw))
    calls = [e for e in rank.events if e.op == "Other"]  # MPI_Comm_rank is an Other call
    assert len(calls) == 2000
    collector_per_call = int(rank.metadata["collector_ns"]) / len(rank.events)
    gap = float(np.median([e.compute_ns for e in calls[1:]]))
    assert gap < collector_per_call / 3, (gap, collector_per_call)
    # the compressed trace says the same
    assert int(scalatrace.load(tmp_path / "t.sct").metadata["collector_ns"]) > 0


def test_the_collectors_own_time_can_stay_in_compute(tmp_path):
    """SCALATRACE_OWN_TIME=compute (docs/collector.md, "The collector's own time"): every gap
    between two calls is recorded whole, the collector's time after the first call included,
    and nothing is compensated, so a rank's compute and call durations add up to its span under
    the collector. The same loop as above: the gaps now hold at least 90 % of the collector's
    time (all of it but the time after MPI_Finalize's own recording), and the default run's
    gaps hold less than a third of it. A bad value: the default, with a message."""
    import scalatrace

    exe = compile_program("tight_loop", tmp_path)
    compute, collector, metadata = {}, {}, {}
    for own_time in ("compute", "out"):
        raw = tmp_path / f"raw-{own_time}"
        env = helpers.collector_env(raw=raw, stack_memo=0, own_time=own_time)
        helpers.run_mpi(1, [exe, "2000"], env=env, timeout=60)
        (rank,) = list(scalatrace.read_raw(raw))
        assert sum(e.op == "Other" for e in rank.events) == 2000
        compute[own_time] = sum(e.compute_ns for e in rank.events[1:])  # after MPI_Init
        collector[own_time] = int(rank.metadata["collector_ns"])
        metadata[own_time] = rank.metadata
    assert metadata["compute"]["setting.SCALATRACE_OWN_TIME"] == "compute"
    assert metadata["compute"]["setting.SCALATRACE_COMPENSATE"] == "0"
    assert "call_gap_ns" not in metadata["compute"]
    assert metadata["out"]["setting.SCALATRACE_OWN_TIME"] == "out"
    assert compute["compute"] >= 0.9 * collector["compute"], (compute, collector)
    assert compute["out"] < collector["out"] / 3, (compute, collector)

    raw = tmp_path / "raw-bad"
    proc = helpers.run_mpi(
        1, [exe, "10"], env=helpers.collector_env(raw=raw, own_time="inside"), timeout=60
    )
    assert "SCALATRACE_OWN_TIME='inside' is not out or compute; using default out" in proc.stderr
    (rank,) = list(scalatrace.read_raw(raw))
    assert rank.metadata["setting.SCALATRACE_OWN_TIME"] == "out"


def test_the_wrappers_entry_and_exit_are_taken_out_of_compute(tmp_path):
    """Overhead compensation (SCALATRACE_COMPENSATE, docs/collector.md): the program time a
    recorded call costs outside the collector's clock reads is measured at MPI_Init (metadata
    ``call_gap_ns``) and taken out of every compute interval, so back-to-back calls, between
    which the program does almost nothing, record almost no compute. With ``0`` it stays in.
    Medians of 2,000 gaps in each run: robust to a preempted call."""
    import numpy as np

    import scalatrace

    exe = compile_program("tight_loop", tmp_path)
    gaps, metadata = {}, {}
    for compensate in (1, 0):
        raw = tmp_path / f"raw{compensate}"
        env = helpers.collector_env(raw=raw, compensate=compensate)
        helpers.run_mpi(1, [exe, "2000"], env=env, timeout=60)
        (rank,) = list(scalatrace.read_raw(raw))
        calls = [e for e in rank.events if e.op == "Other"]
        assert len(calls) == 2000
        gaps[compensate] = float(np.median([e.compute_ns for e in calls[1:]]))
        metadata[compensate] = rank.metadata
    assert metadata[1]["setting.SCALATRACE_COMPENSATE"] == "1"
    call_gap = int(metadata[1]["call_gap_ns"])
    assert 0 < call_gap < 100_000, call_gap
    assert metadata[0]["setting.SCALATRACE_COMPENSATE"] == "0"
    assert "call_gap_ns" not in metadata[0]
    # Uncompensated, a gap is the entry and exit (~30 ns here); compensated, what is left of it.
    assert gaps[1] < gaps[0], gaps
    assert gaps[1] < call_gap, (gaps, call_gap)
