"""Replay (scalatrace-replay, scalatrace.replay): fixed point, counts, watchdog, rank checks.

For every example: trace the original under the collector (compressed trace + raw recording),
replay the compressed trace under the collector (again compressed trace + raw recording), and
check the FIXED POINT (thesis §3.4.1, ScalaTrace §5.4): on every rank the replay's recorded
event sequence equals the original's (ops, communicators, peers, tags, bytes, datatype sizes,
roots, reduction ops, v-counts, created communicators, request pairing, order; call sites and
timing differ by construction, and ``Other`` events are not replayed), in the raw recordings
and in the compressed traces; the communicator tables and communication matrices are equal;
and the replay's per-rank per-op counts and bytes equal the original's raw recording.

Completion outcomes (Test flags, Waitany index, Waitsome indices) are timing-dependent: the
replay reproduces them unless a request finished earlier in the replay than in the original,
which its report counts per rank (``outcome_mismatches``). Only on such ranks are outcome
fields and the null-ness of request references left out of the comparison (the number of
requests each call names is still compared).
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import helpers
import numpy
import pytest

scalatrace = pytest.importorskip("scalatrace")
from scalatrace.errors import ReplayError, ScalatraceError  # noqa: E402
from scalatrace.replay import ReplayResult, replay  # noqa: E402

# (example, ranks, extra arguments): 2..9 ranks, 3 iterations.
CASES = helpers.EXAMPLE_RUNS
ITERATIONS = "3"
RING = CASES[4]


def _case_id(case):
    name, n, extra = case
    return f"{name}-n{n}" + ("-" + "".join(extra).replace("-", "") if extra else "")


def compare_recordings(original: dict, replayed: dict, mismatches) -> list[str]:
    """Differences between two ``scalatrace-dump raw`` results, event by event per rank."""
    problems = []
    if [r["rank"] for r in replayed["ranks"]] != [r["rank"] for r in original["ranks"]]:
        return [
            f"ranks {[r['rank'] for r in replayed['ranks']]} replayed, "
            f"{[r['rank'] for r in original['ranks']]} recorded"
        ]
    for rec, rep in zip(original["ranks"], replayed["ranks"]):
        rank = rec["rank"]
        relaxed = bool(mismatches[rank])
        want = [helpers.normalized_event(e, relaxed) for e in rec["events"] if e["op"] != "Other"]
        got = [helpers.normalized_event(e, relaxed) for e in rep["events"] if e["op"] != "Other"]
        if len(want) != len(got):
            problems.append(
                f"rank {rank}: {len(got)} events replayed, {len(want)} recorded: "
                f"missing {dict(Counter(e['op'] for e in want) - Counter(e['op'] for e in got))}, "
                f"extra {dict(Counter(e['op'] for e in got) - Counter(e['op'] for e in want))}"
            )
            continue
        for k, (a, b) in enumerate(zip(want, got)):
            if a != b:
                diff = {
                    key: (a.get(key), b.get(key))
                    for key in set(a) | set(b)
                    if a.get(key) != b.get(key)
                }
                problems.append(f"rank {rank} event {k} ({a['op']}): (recorded, replayed) {diff}")
                break
        comms_rec = {(c["id"], tuple(c["members"])) for c in rec["comms"]}
        comms_rep = {(c["id"], tuple(c["members"])) for c in rep["comms"]}
        if comms_rec != comms_rep:
            problems.append(
                f"rank {rank}: communicator tables differ: {sorted(comms_rec ^ comms_rep)}"
            )
    return problems


class Run:
    """One example traced, then its compressed trace replayed under the collector."""

    def __init__(
        self, original: Path, raw: Path, replayed: Path, replayed_raw: Path, result: ReplayResult
    ):
        self.original, self.raw = original, raw
        self.replayed, self.replayed_raw = replayed, replayed_raw
        self.result = result


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cache: dict = {}

    def get(case, example) -> Run:
        key = _case_id(case)
        if key not in cache:
            name, nranks, extra = case
            exe = example(name)
            work = tmp_path_factory.mktemp(_case_id(case))
            original, raw = work / "original.sct", work / "raw"
            helpers.run_mpi(
                nranks,
                [exe, "-i", ITERATIONS, *extra],
                env=helpers.collector_env(raw=raw, out=original),
                timeout=120,
            )
            replayed, replayed_raw = work / "replayed.sct", work / "replayed-raw"
            result = replay(original, trace=True, out=replayed, raw=replayed_raw, timeout=60)
            cache[key] = Run(original, raw, replayed, replayed_raw, result)
        return cache[key]

    return get


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_replay_reaches_fixed_point(case, runs, example):
    run = runs(case, example)
    mismatches = run.result.outcome_mismatches
    # Raw recordings: what the collector saw the original and the replay do, call by call.
    problems = compare_recordings(
        helpers.dump_raw(run.raw), helpers.dump_raw(run.replayed_raw), mismatches
    )
    assert not problems, "raw recordings differ:\n" + "\n".join(problems)
    # Compressed traces: the same per-rank sequences, communicators and matrices.
    original, replayed = scalatrace.load(run.original), scalatrace.load(run.replayed)
    assert replayed.nranks == original.nranks == case[1]
    for rank in range(original.nranks):
        relaxed = bool(mismatches[rank])
        assert helpers.cursor_events(replayed, rank, relaxed) == helpers.cursor_events(
            original, rank, relaxed
        ), f"compressed traces differ on rank {rank}"
    for kind in ("p2p", "collective", "all"):
        for metric in ("bytes", "messages"):
            numpy.testing.assert_array_equal(
                replayed.comm_matrix(metric=metric, kind=kind),
                original.comm_matrix(metric=metric, kind=kind),
                err_msg=f"{kind} {metric} matrix",
            )


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_replay_report_matches_raw_recording(case, runs, example):
    run = runs(case, example)
    dump = helpers.dump_raw(run.raw)
    nranks = case[1]
    assert [r["rank"] for r in dump["ranks"]] == list(range(nranks))
    counts = defaultdict(lambda: numpy.zeros(nranks, dtype=numpy.int64))
    sent = defaultdict(lambda: numpy.zeros(nranks, dtype=numpy.int64))
    received = defaultdict(lambda: numpy.zeros(nranks, dtype=numpy.int64))
    for rec in dump["ranks"]:
        for ev in rec["events"]:
            counts[ev["op"]][rec["rank"]] += 1
            sent[ev["op"]][rec["rank"]] += ev["bytes"]
            received[ev["op"]][rec["rank"]] += ev["bytes2"]
    result = run.result
    assert sorted(result.counts) == sorted(counts)
    for op in counts:
        numpy.testing.assert_array_equal(result.counts[op], counts[op], err_msg=f"{op} counts")
        numpy.testing.assert_array_equal(result.bytes[op], sent[op], err_msg=f"{op} bytes")
        numpy.testing.assert_array_equal(
            result.recv_bytes[op], received[op], err_msg=f"{op} bytes2"
        )
    numpy.testing.assert_array_equal(result.events, [len(r["events"]) for r in dump["ranks"]])
    skipped = sum(counts[op] for op in ("Init", "Finalize", "Other") if op in counts)
    numpy.testing.assert_array_equal(result.issued, result.events - skipped)
    assert result.nranks == nranks and result.rank_times.shape == (nranks,)
    assert result.total_time == pytest.approx(result.rank_times.max())


@pytest.mark.parametrize(
    "case", [c for c in CASES if c[0] in ("comm_split", "persistent", "waitsome")], ids=_case_id
)
def test_replay_of_raw_recording_reaches_fixed_point(case, runs, example, tmp_path):
    """A raw recording directory replays directly (each rank compresses its own stream)."""
    run = runs(case, example)
    result = replay(run.raw, raw=tmp_path / "again", compute_scale=0.0)
    problems = compare_recordings(
        helpers.dump_raw(run.raw), helpers.dump_raw(tmp_path / "again"), result.outcome_mismatches
    )
    assert not problems, "\n".join(problems)


def test_watchdog_names_the_stuck_receive(tmp_path):
    broken = tmp_path / "broken.sct"
    tool = scalatrace._paths.tool("scalatrace-replay")
    subprocess.run([str(tool), "--selftest-write-broken", str(broken)], check=True)
    start = time.monotonic()
    with pytest.raises(ReplayError) as info:
        replay(broken, timeout=2)
    assert time.monotonic() - start < 60  # it did not hang (the watchdog fires after 2 s)
    err = info.value
    assert err.returncode != 0
    text = str(err)
    assert "replay could not proceed: scalatrace-replay: rank 0:" in text  # from the stuck rank
    assert "event #2 MPI_Recv" in text  # Init is event #0, Barrier #1
    assert "peer 1" in text and "tag 77" in text
    assert "selftest_receive_without_send" in text  # the call site


def test_multithreaded_interleaving_replays_with_deferred_waits(tmp_path):
    """Two threads per rank, each Irecv+Isend+Waitall with its partner thread; rank 0 recorded
    thread 0 first, rank 1 thread 1 first. A strictly serial replay deadlocks on that order;
    the deferred-waits replay (chosen by the trace's mpi_threads metadata) completes it."""
    crafted = tmp_path / "interleaved.sct"
    tool = scalatrace._paths.tool("scalatrace-replay")
    subprocess.run([str(tool), "--selftest-write-interleaved", str(crafted)], check=True)
    assert scalatrace.load(crafted).metadata["mpi_threads"] == "2"
    result = replay(crafted, compute_scale=0.0, timeout=20)
    counts = result.total_counts()
    assert counts["Waitall"] == counts["Irecv"] == counts["Isend"] == 2 * 6
    assert counts["Barrier"] == 2
    with pytest.raises(ReplayError) as info:
        replay(crafted, compute_scale=0.0, timeout=2, defer_waits="off")
    assert "no progress for" in str(info.value) and "MPI_Waitall" in str(info.value)


def test_watchdog_on_a_recording_with_a_missing_send(runs, example, tmp_path):
    """Rank 1's stream comes from a run with one iteration less: rank 2 waits for a message
    rank 1 never sends in the replay."""
    run = runs(RING, example)
    shorter = tmp_path / "shorter"
    helpers.run_mpi(3, [example("ring"), "-i", "2"], env=helpers.collector_env(raw=shorter))
    broken = tmp_path / "broken"
    broken.mkdir()
    for rank in range(3):
        source = shorter if rank == 1 else run.raw
        (broken / f"rank-{rank}.straw").write_bytes((source / f"rank-{rank}.straw").read_bytes())
    with pytest.raises(ReplayError) as info:
        replay(broken, timeout=2, compute_scale=0.0)
    text = str(info.value)
    assert "no progress for" in text and "stuck in event #" in text
    assert "MPI_Recv" in text or "MPI_Sendrecv" in text  # whichever rank's watchdog fires first


def test_replay_without_computation(runs, example):
    run = runs(RING, example)
    result = replay(run.original, compute_scale=0.0, timing="none")
    assert (result.compute_times == 0).all()
    assert result.total_counts() == run.result.total_counts()
    assert result.options["compute_scale"] == 0


def test_rank_count_mismatch_raises_before_launching(runs, example, monkeypatch):
    run = runs(RING, example)  # 3 ranks
    launched = []
    real_run = subprocess.run

    def spy(cmd, *args, **kwargs):
        if "mpiexec" in Path(str(cmd[0])).name:
            launched.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    with pytest.raises(ScalatraceError, match="needs 3 ranks"):
        replay(run.original, np=2)
    assert launched == []


def test_tool_rejects_wrong_world_size(runs, example):
    run = runs(RING, example)  # 3 ranks
    tool = scalatrace._paths.tool("scalatrace-replay")
    proc = subprocess.run(
        [helpers.mpiexec(), "-n", "2", str(tool), str(run.original)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "recorded with 3 ranks" in proc.stderr and "runs on 2" in proc.stderr


def test_size_scale_scales_reported_bytes(runs, example):
    run = runs(CASES[0], example)  # stencil1d
    half = replay(run.original, size_scale=0.5, compute_scale=0.0)
    for op, full in run.result.bytes.items():
        assert (half.bytes[op] <= full).all()
        assert (numpy.abs(half.bytes[op] - full * 0.5) <= run.result.counts[op]).all()
    assert half.options["size_scale"] == 0.5
    assert sum(int(v.sum()) for v in half.bytes.values()) > 0


# Address-space limit of each rank in the out-of-memory test (bytes: prlimit takes no suffix):
# MPICH starts and a replay at the recorded sizes runs (checked first), but a 1 GiB message
# buffer cannot be had. A rank needs about 120 MB of address space here.
OOM_ADDRESS_SPACE = 512 << 20


def test_replay_out_of_memory_is_one_line(tmp_path, example, collector_lib):
    """A 2-rank ring of 1 MiB messages replayed at --size-scale 1024 (within bounds: 1 GiB
    buffers) under an address-space limit: memory runs out; the replay says so in one line
    naming the rank, the event and the message size, and exits non-zero (no std::bad_alloc, no
    terminate)."""
    traced = scalatrace.trace(
        [str(example("ring")), "-i", "1", "-m", "1", "-s", "1048576"],
        np=2,
        out=tmp_path / "ring.sct",
    )
    tool = scalatrace._paths.tool("scalatrace-replay")

    def limited_replay(size_scale: str) -> subprocess.CompletedProcess:
        # The limit on the ranks only (the launcher itself needs more).
        limited = ["prlimit", f"--as={OOM_ADDRESS_SPACE}", str(tool), str(traced.path)]
        return subprocess.run(
            [
                helpers.mpiexec(),
                "-n",
                "2",
                *limited,
                "--compute-scale",
                "0",
                "--size-scale",
                size_scale,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )

    plain = limited_replay("1")
    assert plain.returncode == 0, plain.stderr  # the limit leaves room for MPI and the replay
    proc = limited_replay("1024")
    assert proc.returncode != 0
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("scalatrace-replay:")]
    assert ours, proc.stderr
    line = ours[0]
    assert line.startswith("scalatrace-replay: out of memory: rank "), proc.stderr
    assert "(MPI_Send, call site" in line or "(MPI_Recv, call site" in line, line
    assert "a message of 1073741824 bytes (1048576 recorded x --size-scale 1024)" in line, line
    assert "lower --size-scale" in line
    assert "bad_alloc" not in proc.stderr and "terminate called" not in proc.stderr
