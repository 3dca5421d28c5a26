"""Replay (scalatrace-replay, scalatrace.replay): fixed point, counts, watchdog, rank checks.

For every example: trace the original under the collector (compressed trace + raw recording),
replay the compressed trace under the collector, and check the FIXED POINT (thesis §3.4.1,
ScalaTrace §5.4): on every rank the replay's recorded event sequence equals the original's
(ops, communicators, peers, tags, bytes, datatype sizes, roots, reduction ops, v-counts, created
communicators, request pairing, order; call sites differ by construction, and ``Other`` events
are not replayed), the communicator tables and communication matrices are equal, and the
replay's per-rank per-op counts and bytes equal the original's raw recording.

Completion outcomes (Test flags, Waitany index, Waitsome indices) are timing-dependent: the
replay reproduces them unless a request finished earlier in the replay than in the original,
which its report counts per rank (``outcome_mismatches``). Only on such ranks are outcome
fields and the null-ness of later request references left out of the comparison.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy
import pytest

import helpers

scalatrace = pytest.importorskip("scalatrace")
from scalatrace.errors import ReplayError, ScalatraceError  # noqa: E402
from scalatrace.replay import ReplayResult, replay  # noqa: E402

# (example, ranks, extra arguments): 2..9 ranks, 3 iterations.
CASES = [
    ("stencil1d", 5, []),
    ("stencil2d", 9, []),
    ("stencil3d", 8, []),
    ("stencil3d_recursive", 4, []),
    ("ring", 3, []),
    ("collectives", 4, []),
    ("alltoallv_is", 5, []),
    ("wildcard_lu", 4, []),
    ("pipeline", 4, []),
    ("persistent", 3, []),
    ("comm_split", 6, []),
    ("nonblocking_coll", 4, []),
    ("waitsome", 5, []),
    ("iteration_specific", 3, []),
    ("rank_divergent", 5, []),
    ("fortran_ring", 2, []),
]
ITERATIONS = "3"

OUTCOME_FIELDS = {"Flag", "Index", "Count"}
OUTCOME_ARRAYS = {"Indices"}
OUTCOME_OPS = {"Test", "Testall", "Testany", "Testsome", "Waitany", "Waitsome", "Iprobe"}
IGNORED_FIELDS = {"NameId"}  # Op::Other only


def _case_id(case):
    name, n, extra = case
    return f"{name}-n{n}" + ("-" + "".join(extra).replace("-", "") if extra else "")


def _normalized(event, relaxed: bool) -> dict:
    """An event's call without call site and timing (relaxed: without completion outcomes and
    with request references reduced to 'some request')."""
    fields = {k: v for k, v in dict(event.fields).items() if k not in IGNORED_FIELDS}
    arrays = {k: list(v) for k, v in dict(event.arrays).items()}
    if relaxed:
        if event.op in OUTCOME_OPS:
            for k in OUTCOME_FIELDS:
                fields.pop(k, None)
            for k in OUTCOME_ARRAYS:
                arrays.pop(k, None)
        if "Requests" in arrays:
            arrays["Requests"] = [len(arrays["Requests"])]
    return {"op": event.op, "fields": fields, "arrays": arrays}


def _rank_events(trace, rank: int, relaxed: bool) -> list[dict]:
    return [_normalized(e, relaxed) for e in trace.events(rank, timing="none") if e.op != "Other"]


def _comm_table(trace) -> set:
    out = set()
    for entry in trace.communicators:
        members = tuple(entry.members.to_vector()) if hasattr(entry.members, "to_vector") else tuple(entry.members)
        holders = tuple(entry.holders.to_vector()) if hasattr(entry.holders, "to_vector") else tuple(entry.holders)
        out.add((entry.id, members, holders))
    return out


class Run:
    """One example traced, then replayed under the collector."""

    def __init__(self, original: Path, raw: Path, replayed: Path, result: ReplayResult):
        self.original = original
        self.raw = raw
        self.replayed = replayed
        self.result = result


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cache: dict = {}

    def get(case, example) -> Run:
        if case in cache:
            return cache[case]
        name, nranks, extra = case
        exe = example(name)
        work = tmp_path_factory.mktemp(_case_id(case))
        original, raw = work / "original.sct", work / "raw"
        helpers.run_mpi(nranks, [exe, "-i", ITERATIONS, *extra],
                        env=helpers.collector_env(raw=raw, out=original), timeout=120)
        replayed = work / "replayed.sct"
        result = replay(original, trace=True, out=replayed, timeout=60)
        cache[case] = Run(original, raw, replayed, result)
        return cache[case]

    return get


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_replay_reaches_fixed_point(case, runs, example):
    run = runs(case, example)
    original, replayed = scalatrace.load(run.original), scalatrace.load(run.replayed)
    assert replayed.nranks == original.nranks == case[1]
    assert _comm_table(replayed) == _comm_table(original)
    problems = []
    for rank in range(original.nranks):
        relaxed = bool(run.result.outcome_mismatches[rank])
        want = _rank_events(original, rank, relaxed)
        got = _rank_events(replayed, rank, relaxed)
        if len(want) != len(got):
            problems.append(f"rank {rank}: {len(got)} events replayed, {len(want)} recorded "
                            f"(ops {Counter(e['op'] for e in got)} vs {Counter(e['op'] for e in want)})")
            continue
        for k, (a, b) in enumerate(zip(want, got)):
            if a != b:
                problems.append(f"rank {rank} event {k}: recorded {a}, replay recorded {b}")
                break
    assert not problems, "\n".join(problems)
    for kind in ("p2p", "collective", "all"):
        for metric in ("bytes", "messages"):
            numpy.testing.assert_array_equal(replayed.comm_matrix(metric=metric, kind=kind),
                                             original.comm_matrix(metric=metric, kind=kind),
                                             err_msg=f"{kind} {metric} matrix")


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
            sent[ev["op"]][rec["rank"]] += ev.get("bytes", 0)
            received[ev["op"]][rec["rank"]] += ev.get("bytes2", 0)
    result = run.result
    assert sorted(result.counts) == sorted(counts)
    for op in counts:
        numpy.testing.assert_array_equal(result.counts[op], counts[op], err_msg=f"{op} counts")
        numpy.testing.assert_array_equal(result.bytes[op], sent[op], err_msg=f"{op} bytes")
        numpy.testing.assert_array_equal(result.recv_bytes[op], received[op], err_msg=f"{op} bytes2")
    numpy.testing.assert_array_equal(result.events, [len(r["events"]) for r in dump["ranks"]])
    assert result.nranks == nranks and result.rank_times.shape == (nranks,)
    assert result.total_time == pytest.approx(result.rank_times.max())


def test_watchdog_names_the_stuck_receive(tmp_path):
    broken = tmp_path / "broken.sct"
    tool = scalatrace._paths.tool("scalatrace-replay")
    subprocess.run([str(tool), "--selftest-write-broken", str(broken)], check=True)
    start = time.monotonic()
    with pytest.raises(ReplayError) as info:
        replay(broken, timeout=2)
    elapsed = time.monotonic() - start
    err = info.value
    assert err.returncode != 0
    text = str(err)
    assert "rank 0" in text
    assert "MPI_Recv" in text and "tag 77" in text and "peer 1" in text
    assert "selftest_receive_without_send" in text  # the call site
    assert "event #2" in text  # Init is event #0, Barrier #1, the receive #2
    assert elapsed < 60  # it did not hang (generous: the watchdog fires after 2 s)


def test_replay_without_computation(runs, example):
    run = runs(CASES[4], example)  # ring: a quick one
    result = replay(run.original, compute_scale=0.0, timing="none")
    assert (result.compute_times == 0).all()
    assert result.total_counts() == run.result.total_counts()


def test_rank_count_mismatch_raises_before_launching(runs, example, monkeypatch):
    run = runs(CASES[4], example)  # ring, 3 ranks
    launched = []
    real_run = subprocess.run

    def spy(cmd, *args, **kwargs):
        if "mpiexec" in str(cmd[0]):
            launched.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    with pytest.raises(ScalatraceError, match="needs 3 ranks"):
        replay(run.original, np=2)
    assert launched == []


def test_tool_rejects_wrong_world_size(runs, example):
    run = runs(CASES[4], example)  # ring, 3 ranks
    tool = scalatrace._paths.tool("scalatrace-replay")
    proc = subprocess.run([helpers.mpiexec(), "-n", "2", str(tool), str(run.original)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "recorded with 3 ranks" in proc.stderr and "runs on 2" in proc.stderr


def test_size_scale_scales_reported_bytes(runs, example):
    run = runs(CASES[0], example)  # stencil1d
    half = replay(run.original, size_scale=0.5, compute_scale=0.0)
    for op, full in run.result.bytes.items():
        assert (half.bytes[op] <= full).all()
        assert (numpy.abs(half.bytes[op] - full * 0.5) <= run.result.counts[op]).all()
    assert half.options["size_scale"] == 0.5
