"""Lossy traces and their probabilistic simulation and replay (issue 36, docs/lossy.md).

``tests/py/programs/random_exchange.c`` is data dependent: every iteration each rank sends 2
messages of 8..1600 bytes to ranks at random shifts (Isend/Irecv/Waitall), a rotating root gathers one
message of a random size from every other rank with ``MPI_ANY_SOURCE``, and an Allreduce ends
the iteration. Traced at 2..9 ranks with ``SCALATRACE_LOSSY=1`` (every point-to-point peer, tag
and size a histogram) and ``on`` (only the long ones), its lossy traces must: name their lossy
fields; refuse exact events but give reproducible drawn ones whose per-op calls are exact and
whose bytes are within 5 % of the run's; simulate and replay without deadlock, every drawn send
received once, with the run's message count and bytes within 5 %, the same seed giving the same
result. Every example program's trace, made lossy with threshold 1, simulates and replays too.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import helpers
import numpy
import pytest
from test_collector import compile_program

import scalatrace
from scalatrace.cli import main
from scalatrace.errors import LossyTraceError, UsageError
from scalatrace.replay import replay

ITERATIONS = "12"
SEND_OPS = {"Send", "Isend", "Ssend", "Bsend", "Rsend", "Issend", "Ibsend", "Irsend"}


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    return compile_program("random_exchange", tmp_path_factory.mktemp("random_exchange"))


@pytest.fixture(scope="module")
def runs(program, tmp_path_factory):
    """Per rank count: the lossless trace of a run and that of a run with SCALATRACE_LOSSY=1."""
    cache: dict = {}

    def get(n: int, lossy: str = "off") -> scalatrace.Trace:
        if (n, lossy) not in cache:
            work = tmp_path_factory.mktemp(f"rx-{n}-{lossy}")
            out = work / "trace.sct"
            env = helpers.collector_env(out=out, quiet=1, lossy=lossy)
            helpers.run_mpi(n, [program, ITERATIONS], env=env, timeout=120, cwd=work)
            cache[(n, lossy)] = scalatrace.load(out)
        return cache[(n, lossy)]

    return get


def sends_and_bytes(trace: scalatrace.Trace, lossy_seed: int | None = None) -> tuple[int, int]:
    """Point-to-point sends (to a rank, not MPI_PROC_NULL) and their bytes over every rank."""
    sends = total = 0
    for r in range(trace.nranks):
        for e in trace.events(r, lossy_seed=lossy_seed):
            if e.op in SEND_OPS or e.op == "Sendrecv":
                sends += 1
                total += e["Bytes"]
    return sends, total


def op_calls(trace: scalatrace.Trace, lossy_seed: int | None = None) -> Counter:
    return Counter(
        e.op for r in range(trace.nranks) for e in trace.events(r, lossy_seed=lossy_seed)
    )


def test_collector_marks_the_trace_and_names_its_lossy_fields(runs):
    exact, lossy = runs(4), runs(4, "1")
    assert not exact.lossy and exact.lossy_fields == []
    assert lossy.lossy
    assert lossy.metadata["lossy.threshold"] == "1"
    assert lossy.metadata["setting.SCALATRACE_LOSSY"] == "1"
    fields = lossy.lossy_fields
    assert {f[2] for f in fields} >= {"Peer", "Bytes", "Tag"}
    assert {f[2] for f in fields} <= {"Peer", "Tag", "Bytes", "Peer2", "Tag2", "Bytes2"}
    assert {f[0] for f in fields} >= {"Isend", "Irecv", "Send", "Recv"}
    # The same fields as making the lossless run's trace lossy offline (the structure is the
    # same in every run of the program).
    assert exact.to_lossy(1).lossy_fields == fields
    assert len(lossy.metadata["lossy.fields"].splitlines()) == len(fields)


def test_default_threshold_keeps_short_fields_exact(runs):
    lossy = runs(5, "on")
    assert lossy.metadata["lossy.threshold"] == "32"
    fields = {(f[0], f[2]) for f in lossy.lossy_fields}
    assert ("Isend", "Bytes") in fields and ("Irecv", "Bytes") in fields
    # The tags (the iteration: one progression) and the gather's receives stay exact.
    assert ("Isend", "Tag") not in fields and not any(op == "Recv" for op, _ in fields)
    forced = {(f[0], f[2]) for f in runs(5).to_lossy(1).lossy_fields}
    assert fields < forced


def test_lossy_trace_is_smaller(runs):
    exact, lossy = runs(9), runs(9, "1")
    assert len(lossy._core.encode()) < len(exact._core.encode())


def test_bad_setting_warns_and_stays_lossless(program, tmp_path):
    out = tmp_path / "t.sct"
    env = helpers.collector_env(out=out, quiet=1, lossy="lots")
    proc = helpers.run_mpi(2, [program, "2"], env=env, timeout=60, cwd=tmp_path)
    assert "SCALATRACE_LOSSY='lots' is not on, off or a lossy threshold" in proc.stderr
    assert not scalatrace.load(out).lossy


def test_exact_events_refused_drawn_events_reproducible(runs):
    exact, lossy = runs(3), runs(3, "1")
    with pytest.raises(LossyTraceError, match="lossy trace"):
        list(lossy.events(0))
    with pytest.raises(UsageError):  # a LossyTraceError is a UsageError
        lossy.to_dataframe()
    assert [e.fields for e in lossy.events(1, lossy_seed=4)] == [
        e.fields for e in lossy.events(1, lossy_seed=4)
    ]
    assert op_calls(lossy, 0) == op_calls(exact)
    want_sends, want_bytes = sends_and_bytes(exact)
    for seed in (0, 1, 2):
        sends, total = sends_and_bytes(lossy, seed)
        assert sends == want_sends
        assert abs(total - want_bytes) / want_bytes < 0.05, (seed, total, want_bytes)


def test_stats_lists_lossy_fields(runs, capsys):
    lossy = runs(3, "1")
    assert main(["stats", str(lossy.path)]) == 0
    out = capsys.readouterr().out
    assert "lossy (threshold 1)" in out
    assert "Isend@site" in out and "Peer" in out
    assert main(["stats", "--json", str(lossy.path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lossy"] is True and len(doc["lossy_fields"]) == len(lossy.lossy_fields)


@pytest.mark.parametrize("n", [2, 5, 9])
@pytest.mark.parametrize("threshold", ["1", "on"])
def test_simulation_is_deadlock_free_reproducible_and_faithful(runs, n, threshold):
    exact, lossy = runs(n), runs(n, threshold)
    base = scalatrace.simulate(exact)
    first = scalatrace.simulate(lossy, seed=7)
    again = scalatrace.simulate(lossy, seed=7)
    assert first.total_time == again.total_time
    assert numpy.array_equal(first.sent_bytes, again.sent_bytes)
    assert first.sent_messages.sum() == first.recv_messages.sum()
    assert first.sent_bytes.sum() == first.recv_bytes.sum()
    want, got = base.sent_messages.sum(), first.sent_messages.sum()
    assert abs(got - want) <= 0.05 * want, (got, want)
    want, got = base.sent_bytes.sum(), first.sent_bytes.sum()
    assert abs(got - want) <= 0.05 * want, (got, want)


@pytest.mark.parametrize("n", [2, 5])
def test_replay_is_deadlock_free_reproducible_and_faithful(runs, n):
    exact, lossy = runs(n), runs(n, "1")
    want_sends, want_bytes = sends_and_bytes(exact)
    first = replay(lossy, seed=3, timeout=60)
    # Polling for progress during the emulated computation (default every 20 us) or not: the
    # same calls with the same values.
    again = replay(lossy, seed=3, timeout=60, progress_poll_us=0)
    assert first.total_counts() == again.total_counts()
    assert first.bytes["Isend"].tolist() == again.bytes["Isend"].tolist()
    counts = first.total_counts()
    # Every send became an Isend with drawn peer and size, every receive an Irecv posted
    # for a drawn send: as many as the run sent.
    assert counts["Isend"] == counts["Irecv"] == want_sends
    assert counts["Allreduce"] == op_calls(exact)["Allreduce"]
    got_bytes = int(first.bytes["Isend"].sum())
    assert abs(got_bytes - want_bytes) / want_bytes < 0.05, (got_bytes, want_bytes)
    assert int(first.bytes["Irecv"].sum()) == got_bytes


def test_ranks_make_histograms_while_they_run(program, tmp_path):
    """160 iterations at 3 ranks (over 1,024 events a rank): each rank's compressor turns its
    random peers and sizes into histograms at its memory checks and at the end, and the merge
    joins them (docs/lossy.md, "Per-rank memory"). Every histogram holds each occurrence once,
    the fields the lossless run keeps short stay exact, and the trace simulates (reproducibly)
    and replays without deadlock, with the run's message count and bytes within 5 %."""
    traces = {}
    for mode in ("off", "on"):
        out = tmp_path / f"{mode}.sct"
        env = helpers.collector_env(out=out, quiet=1, lossy=mode)
        helpers.run_mpi(3, [program, "160"], env=env, timeout=120, cwd=tmp_path)
        traces[mode] = scalatrace.load(out)
    exact, lossy = traces["off"], traces["on"]
    calls = op_calls(exact)
    held = Counter()
    for op, _site, field, values, _bins in lossy.lossy_fields:
        if field == "Bytes":
            held[op] += values
    assert held["Isend"] == calls["Isend"] and held["Irecv"] == calls["Irecv"]
    # The same fields as the lossless trace made lossy afterwards: the checks in mid-run made
    # no field lossy that the threshold keeps exact.
    offline = {(f[0], f[1], f[2]) for f in exact.to_lossy(32).lossy_fields}
    assert {(f[0], f[1], f[2]) for f in lossy.lossy_fields} == offline
    assert op_calls(lossy, 0) == calls
    want_sends, want_bytes = sends_and_bytes(exact)
    sends, total = sends_and_bytes(lossy, 0)
    assert sends == want_sends and abs(total - want_bytes) / want_bytes < 0.05, (total, want_bytes)
    sim, again = scalatrace.simulate(lossy, seed=5), scalatrace.simulate(lossy, seed=5)
    assert sim.total_time == again.total_time
    assert sim.sent_messages.sum() == sim.recv_messages.sum()
    base = scalatrace.simulate(exact)
    assert abs(sim.sent_bytes.sum() - base.sent_bytes.sum()) <= 0.05 * base.sent_bytes.sum()
    result = replay(lossy.path, seed=2, timeout=60)
    counts = result.total_counts()
    assert counts["Isend"] == counts["Irecv"] == want_sends
    assert counts["Allreduce"] == calls["Allreduce"]
    got_bytes = int(result.bytes["Isend"].sum())
    assert abs(got_bytes - want_bytes) / want_bytes < 0.05, (got_bytes, want_bytes)


def test_replay_walks_only_the_negotiated_contexts(program, tmp_path):
    """9 ranks exchanging with random neighbours at most 2 ranks away: the ranks negotiate who can
    send to whom, and each walks the secondary contexts of its 4 potential senders, not 8; no
    deadlock, the same seed the same replay."""
    out = tmp_path / "t.sct"
    env = helpers.collector_env(out=out, quiet=1, lossy="1")
    helpers.run_mpi(9, [program, ITERATIONS, "0", "2"], env=env, timeout=120, cwd=tmp_path)
    trace = scalatrace.load(out)
    assert trace.lossy
    first = replay(out, seed=3, timeout=60)
    again = replay(out, seed=3, timeout=60)
    assert first.contexts.tolist() == [4] * 9
    assert first.total_counts() == again.total_counts()
    assert first.bytes["Isend"].tolist() == again.bytes["Isend"].tolist()
    counts = first.total_counts()
    assert counts["Isend"] == counts["Irecv"] == op_calls(trace, lossy_seed=3)["Isend"]


@pytest.fixture(scope="module")
def example_traces(tmp_path_factory):
    cache: dict = {}

    def get(case, example) -> scalatrace.Trace:
        name, n, extra = case
        if name not in cache:
            work = tmp_path_factory.mktemp(f"lossy-{name}")
            out = work / "t.sct"
            helpers.run_mpi(
                n,
                [example(name), "-i", "3", *extra],
                env=helpers.collector_env(out=out, quiet=1),
                timeout=120,
                cwd=work,
            )
            cache[name] = scalatrace.load(out)
        return cache[name]

    return get


@pytest.mark.parametrize("case", helpers.EXAMPLE_RUNS, ids=lambda c: f"{c[0]}-n{c[1]}")
def test_examples_simulate_and_replay_lossy(case, example_traces, example, tmp_path):
    exact = example_traces(case, example)
    lossy = exact.to_lossy(1)
    base = scalatrace.simulate(exact)
    sim = scalatrace.simulate(lossy, seed=1)
    assert sim.total_time == scalatrace.simulate(lossy, seed=1).total_time
    assert sim.sent_messages.sum() == sim.recv_messages.sum()
    # A drawn peer may wrap onto the sender itself (a self-message, not counted).
    assert sim.sent_messages.sum() <= base.sent_messages.sum()
    path = tmp_path / "lossy.sct"
    lossy.save(path)
    result = replay(path, seed=1, timeout=60)
    counts = result.total_counts()
    assert counts.get("Isend", 0) == counts.get("Irecv", 0)
    collectives = {op for op in op_calls(exact) if op not in SEND_OPS}
    for op in collectives & {"Allreduce", "Barrier", "Bcast", "Alltoallv", "Reduce", "Allgather"}:
        assert counts[op] == op_calls(exact)[op], op
