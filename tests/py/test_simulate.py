"""Simulator from Python: every example trace (real MPI under the collector) simulates to the
end with the comm matrix's message counts; the what-if knobs move time the way the model says;
sweeps, the CLI, calibration against the local MPI, and the SimGrid export (run through SMPI's
replay when SimGrid is installed)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import helpers
import numpy as np
import pytest

import scalatrace
from scalatrace.simgrid import to_simgrid_ti, write_simgrid_platform
from scalatrace.simulate import SimulationParameterError

ITERATIONS = "3"


@pytest.fixture(scope="module")
def example_traces(tmp_path_factory, collector_lib) -> dict[str, scalatrace.Trace]:
    """One merged trace per example of helpers.EXAMPLE_RUNS (real mpiexec runs)."""
    out: dict[str, scalatrace.Trace] = {}
    base = tmp_path_factory.mktemp("sim-examples")
    for name, nranks, extra in helpers.EXAMPLE_RUNS:
        try:
            exe = helpers.example_path(name)
        except FileNotFoundError:
            if name.startswith("fortran"):
                continue
            raise
        path = base / f"{name}.sct"
        helpers.run_mpi(
            nranks,
            [exe, "-i", ITERATIONS, *extra],
            env=helpers.collector_env(out=path, quiet=1),
            timeout=180,
        )
        out[name] = scalatrace.load(path)
    return out


@pytest.mark.parametrize("name", [c[0] for c in helpers.EXAMPLE_RUNS])
def test_every_example_simulates_to_the_end(name, example_traces):
    if name not in example_traces:
        pytest.skip(f"{name} not built")
    t = example_traces[name]
    r = scalatrace.simulate(t, pair_counts=True)
    assert r.total_time > 0 and np.all(r.end_time <= r.total_time)
    assert r.calls.sum() == r.events
    # sends = receives per pair, and per-rank counts and bytes equal the communication matrix
    pairs = r.to_pandas("pairs")
    msgs = t.comm_matrix(metric="messages", kind="p2p")
    nbytes = t.comm_matrix(metric="bytes", kind="p2p")
    sim_msgs = np.zeros_like(msgs)
    sim_bytes = np.zeros_like(nbytes)
    src, dst = pairs["src"].to_numpy(), pairs["dst"].to_numpy()
    sim_msgs[src, dst] = pairs["messages"].to_numpy()
    sim_bytes[src, dst] = pairs["bytes"].to_numpy()
    np.testing.assert_array_equal(sim_msgs, msgs)
    np.testing.assert_array_equal(sim_bytes, nbytes)
    np.testing.assert_array_equal(r.sent_messages, msgs.sum(axis=1))
    np.testing.assert_array_equal(r.recv_messages, msgs.sum(axis=0))
    np.testing.assert_array_equal(r.sent_bytes, nbytes.sum(axis=1))
    assert r.sent_messages.sum() == r.recv_messages.sum()
    # accounts add up per rank: end = compute + comm + wait
    np.testing.assert_allclose(r.compute + r.comm + r.wait, r.end_time, rtol=1e-9, atol=1e-12)


def test_size_and_compute_scale_move_time_by_the_model(example_traces):
    t = example_traces["ring"]
    net = scalatrace.LogGP(L=2e-6, o_s=1e-6, o_r=1e-6, G=1e-9)
    base = scalatrace.simulate(t, network=net)
    no_compute = scalatrace.simulate(t, network=net, timing="none")
    assert no_compute.compute.sum() == 0 and no_compute.total_time < base.total_time
    double = scalatrace.simulate(t, network=net, compute_scale=2.0)
    np.testing.assert_allclose(double.compute, 2 * base.compute, rtol=1e-12)
    assert double.total_time > base.total_time
    # time moved by the bytes: G per byte on every message of the critical path, at most
    bigger = scalatrace.simulate(t, network=net, size_scale=3.0, timing="none")
    extra = bigger.total_time - no_compute.total_time
    assert 0 < extra <= 2 * net.G * (no_compute.sent_bytes.sum() + 1e-9) + 1e-12
    # a faster network never makes the run slower; without compute it makes it faster (with the
    # recorded compute, a rank slowed down while the trace was recorded can keep the network off
    # the critical path)
    faster = net.scaled(latency=0.25, bandwidth=4.0)
    assert scalatrace.simulate(t, network=faster).total_time <= base.total_time
    assert scalatrace.simulate(t, network=faster, timing="none").total_time < no_compute.total_time


def test_result_tables_and_timeline(example_traces):
    t = example_traces["stencil2d"]
    r = scalatrace.simulate(
        t, timeline=True, ranks_per_node=3, intra_node=scalatrace.LogGP(), timing="median"
    )
    ranks = r.to_pandas()
    assert list(ranks["rank"]) == list(range(t.nranks))
    sites = r.to_pandas("sites")
    assert sites["calls"].sum() == r.events
    assert set(sites["op"]) >= {"Isend", "Irecv", "Waitall"}
    tl = r.to_pandas("timeline")
    assert len(tl) == r.events and (tl["end"] >= tl["start"]).all()
    np.testing.assert_allclose(tl.groupby("rank")["end"].max().to_numpy(), r.end_time)
    import matplotlib

    matplotlib.use("Agg")
    ax = scalatrace.plot.timeline(r)
    assert len(ax.patches) == r.events
    with pytest.raises(ValueError, match="timeline=True"):
        scalatrace.plot.timeline(scalatrace.simulate(t))


def test_sampled_timing_is_seeded(example_traces):
    t = example_traces["stencil1d"]
    a = scalatrace.simulate(t, timing="sample", seed=3)
    b = scalatrace.simulate(t, timing="sample", seed=3)
    assert a.total_time == b.total_time


def _events_with_ranks(nodes, inherited: int):
    """(event, number of ranks that take part) for every event node, depth first."""
    for node in nodes:
        ranks = len(node.ranks) or inherited
        if isinstance(node, scalatrace.Loop):
            yield from _events_with_ranks(node.body, ranks)
        else:
            yield node, ranks, len(node.presence.alternatives) > 0


def test_first_occurrences_hold_one_value_per_rank(example_traces):
    """Each rank's first call of a node is kept apart where it ran longer (a first iteration's
    warm-up): one value per rank that takes part, all of them also in the node's compute times.
    The real runs have such warm-ups (the first call after MPI_Init waits for start-up)."""
    stored = 0
    for name, t in example_traces.items():
        for ev, ranks, has_presence in _events_with_ranks(t.nodes, t.nranks):
            first = ev.first_compute
            if first.count == 0:
                continue
            stored += 1
            assert first.count <= ev.compute.count, (name, ev)
            if not has_presence:
                assert first.count == ranks, (name, ev)
    assert stored > 0


@pytest.mark.parametrize("name", ["persistent", "nonblocking_coll", "stencil1d"])
def test_calls_that_never_wait_take_their_recorded_time(name, example_traces, tmp_path):
    """Start/Startall, initiations and Tests of a real run took microseconds inside MPI (the
    library's own time), which LogGP's overheads leave out: by default every such call takes
    at least its recorded duration, and only the model's overheads with
    ``recorded_local_calls=False`` (also ``scalatrace simulate --model-local-calls`` and a
    sweep axis)."""
    t = example_traces[name]
    net = scalatrace.LogGP(L=0.3e-6, o_s=0.05e-6, o_r=0.05e-6, g=0.1e-6, G=0.25e-9)
    recorded = scalatrace.simulate(t, net)
    model = scalatrace.simulate(t, net, recorded_local_calls=False)
    local = {
        "Isend",
        "Irecv",
        "Start",
        "Startall",
        "Test",
        "Testall",
        "Ibarrier",
        "Ibcast",
        "Iallreduce",
        "Ialltoall",
        "Ireduce",
        "Iallgather",
        "Igather",
        "Iscan",
        "Request_free",
        "Send_init",
        "Recv_init",
    }
    sites = recorded.to_pandas("sites")
    base = model.to_pandas("sites")
    is_local = sites["op"].isin(local)
    assert is_local.any()
    # Local calls take more CPU time inside MPI; the others' accounts do not shrink.
    assert sites.loc[is_local, "comm"].sum() > base.loc[is_local, "comm"].sum()
    assert (sites["comm"] >= base["comm"] - 1e-12).all()
    assert recorded.total_time > model.total_time
    assert recorded.events == model.events and recorded.messages == model.messages
    with pytest.raises(SimulationParameterError, match="recorded_local_calls"):
        scalatrace.simulate(t, recorded_local_calls="yes")
    df = scalatrace.sweep(
        t, {"recorded_local_calls": [True, False]}, processes=1, progress=False, network=net
    )
    assert df["total_time"].tolist() == pytest.approx([recorded.total_time, model.total_time])
    path = tmp_path / f"{name}.sct"
    t.save(path)
    exe = [sys.executable, "-m", "scalatrace.cli"]
    proc = subprocess.run(
        [*exe, "simulate", str(path), "--json", "--model-local-calls"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total_time"] == pytest.approx(
        scalatrace.simulate(t, recorded_local_calls=False).total_time
    )
    proc = subprocess.run(
        [*exe, "sweep", str(path), "--param", "recorded_local_calls=true,false", "-j", "1", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_bad_parameters_raise_clear_errors(example_traces):
    t = example_traces["ring"]
    with pytest.raises(SimulationParameterError, match="LogGP.L"):
        scalatrace.LogGP(L=-1.0)
    with pytest.raises(ValueError, match="compute_scale"):
        scalatrace.simulate(t, compute_scale=-2.0)
    with pytest.raises(scalatrace.ScalatraceError, match="ranks_per_node"):
        scalatrace.simulate(t, ranks_per_node=0)
    # A node layout without intra-node parameters would change nothing: refused, not ignored
    # (issue 37), also by a sweep before any point runs.
    with pytest.raises(SimulationParameterError, match="without intra_node= changes"):
        scalatrace.simulate(t, ranks_per_node=3)
    with pytest.raises(SimulationParameterError, match="ranks_per_node=2 without"):
        scalatrace.sweep(t, {"ranks_per_node": [1, 2]}, processes=1, progress=False)
    fast_local = scalatrace.LogGP().scaled(latency=0.01, bandwidth=100)
    # Without the recorded compute, which under load can hide every message (a descheduled
    # rank's long compute was the whole run: both layouts gave 1.084179 ms).
    one = scalatrace.simulate(t, ranks_per_node=1, intra_node=fast_local, timing="none")
    nine = scalatrace.simulate(t, ranks_per_node=t.nranks, intra_node=fast_local, timing="none")
    assert nine.total_time < one.total_time
    with pytest.raises(ValueError, match="timing"):
        scalatrace.simulate(t, timing="fastest")
    with pytest.raises(SimulationParameterError, match="unknown sweep parameter"):
        scalatrace.sweep(t, {"warp_factor": [1, 2]}, processes=1, progress=False)
    with pytest.raises(SimulationParameterError, match="empty"):
        scalatrace.sweep(t, {"compute_scale": []}, processes=1, progress=False)
    with pytest.raises(FileNotFoundError):
        scalatrace.simulate("/nonexistent/trace.sct")


def _ranks_dropped(tmp_path: Path, name: str, nranks: int, keep: int) -> scalatrace.Trace:
    """A real run's raw recordings, compressed without the last ranks: the kept ranks still
    talk to the dropped ones, which never answer."""
    raw = tmp_path / f"{name}-raw"
    helpers.run_mpi(
        nranks, [helpers.example_path(name), "-i", "2"], env=helpers.collector_env(raw=raw, quiet=1)
    )
    recs = scalatrace._core.read_raw_dir(str(raw))
    return scalatrace.Trace(scalatrace._core.compress_recordings(recs[:keep]))


def test_deadlocking_and_unmatched_traces_are_reported(tmp_path, collector_lib):
    # ring without rank 2: rank 0 waits for its left neighbour forever
    t = _ranks_dropped(tmp_path, "ring", 3, 2)
    assert t.nranks == 3
    with pytest.raises(
        scalatrace.SimulationError, match=r"deadlock(.|\n)*rank 0 at event #\d+: Recv"
    ):
        scalatrace.simulate(t)
    # pipeline without its last rank: rank 2's sends are never received
    t = _ranks_dropped(tmp_path, "pipeline", 4, 3)
    with pytest.raises(
        scalatrace.SimulationError, match="to rank 3 were never received; the first: from rank 2"
    ):
        scalatrace.simulate(t)


def test_sweep_reports_failed_points_and_goes_on(example_traces):
    t = example_traces["ring"]  # blocking exchanges
    df = scalatrace.sweep(
        t,
        {"compute_scale": [0.5, 1.0, -1.0], "bandwidth_scale": [1, 4]},
        processes=2,
        progress=False,
    )
    assert len(df) == 6
    ok = df[df["error"].isna()]
    bad = df[df["error"].notna()]
    assert len(ok) == 4 and len(bad) == 2
    assert bad["error"].str.contains("compute_scale").all()
    assert (bad["compute_scale"] == -1.0).all() and bad["total_time"].isna().all()
    # a faster network never hurts, less compute helps; in-process and pooled runs agree
    row = ok.set_index(["compute_scale", "bandwidth_scale"])["total_time"]
    assert row[(1.0, 4)] <= row[(1.0, 1)] and row[(0.5, 1)] < row[(1.0, 1)]
    # without compute, the network is the whole run: a faster one helps (fixed keywords apply
    # to every point)
    net_only = scalatrace.sweep(
        t, {"bandwidth_scale": [1, 4]}, processes=1, progress=False, timing="none"
    )
    assert net_only["error"].isna().all()
    assert net_only["total_time"].iloc[1] < net_only["total_time"].iloc[0]
    one = scalatrace.sweep(
        t, {"compute_scale": [0.5, 1.0], "bandwidth_scale": [1, 4]}, processes=1, progress=False
    )
    np.testing.assert_allclose(one["total_time"].to_numpy(), ok["total_time"].to_numpy())
    # Any concurrent.futures executor (Dask's client.get_executor(), ...): the same rows.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        pooled = scalatrace.sweep(
            t,
            {"compute_scale": [0.5, 1.0], "bandwidth_scale": [1, 4]},
            progress=False,
            executor=pool,
        )
    np.testing.assert_allclose(pooled["total_time"].to_numpy(), ok["total_time"].to_numpy())
    with pytest.raises(SimulationParameterError, match="concurrent.futures.Executor"):
        scalatrace.sweep(t, {"compute_scale": [1.0]}, progress=False, executor="dask")


def test_cli_simulate_and_sweep(example_traces, tmp_path):
    t = example_traces["ring"]
    path = tmp_path / "ring.sct"
    t.save(path)
    exe = [sys.executable, "-m", "scalatrace.cli"]
    proc = subprocess.run(
        [*exe, "simulate", str(path), "--json", "--compute-scale", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    expected = scalatrace.simulate(t, compute_scale=2.0)
    assert doc["total_time"] == pytest.approx(expected.total_time)
    csv = tmp_path / "sweep.csv"
    proc = subprocess.run(
        [
            *exe,
            "sweep",
            str(path),
            "--param",
            "size_scale=1,2",
            "--param",
            "G=1e-10,1e-9",
            "-j",
            "1",
            "-q",
            "-o",
            str(csv),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    import pandas as pd

    df = pd.read_csv(csv)
    assert len(df) == 4 and df["error"].isna().all()
    proc = subprocess.run(
        [*exe, "simulate", str(path), "--L", "-1"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "LogGP.L" in proc.stderr  # a usage error


def test_calibrate_measures_the_local_mpi():
    net = scalatrace.calibrate(np=2, reps=50, max_bytes=1 << 16)
    assert isinstance(net, scalatrace.LogGP)
    assert 0 < net.o_s < 1e-3 and 0 < net.o_r < 1e-3
    # An eager message's bytes cost G + 2 O (the wire and both copies): more than 1 MB/s, less
    # than 1 TB/s. On shared memory the transfer is the copies, so G alone may come out 0.
    assert 0 < net.G + 2 * net.O < 1e-6 and net.G >= 0
    assert net.L + net.o_s + net.o_r < 0.1  # generous: this machine is often oversubscribed


def test_a_message_to_oneself_is_a_copy_not_a_network_hop(tmp_path, collector_lib):
    """NPB CG at 2 ranks exchanges a quarter of its messages with the rank itself (its
    transpose partner). MPI copies such a message in memory: the simulation charges the
    sender's copy and the receiver's o_r, never the network's latency. Traced from a real run of
    ``cg_like`` (CG's exchanges in small) and simulated on a network of 10 ms latency, every
    exchange with the partner costs about a latency, those with the rank itself none."""
    exe = helpers.compile_program("cg_like", tmp_path)
    path = tmp_path / "cg_like.sct"
    iterations = 40
    helpers.run_mpi(2, [exe, str(iterations)], env=helpers.collector_env(out=path, quiet=1))
    t = scalatrace.load(path)
    net = scalatrace.LogGP(L=10e-3, o_s=100e-9, o_r=200e-9, G=0.1e-9, O=0.05e-9)
    r = scalatrace.simulate(t, network=net, recorded_local_calls=False)

    # The sites of the exchange with oneself: its Send and the Wait after it.
    table = t.rank_table(0)
    self_sends = [i for i, e in enumerate(table) if e["op_name"] == "Send" and e["peer"] == 0]
    assert len(self_sends) == iterations
    send_site = int(table[self_sends[0]]["site"])
    wait_site = int(table[self_sends[0] + 1]["site"])
    assert str(table[self_sends[0] + 1]["op_name"]) == "Wait"
    sites = r.to_pandas("sites")
    send = sites[(sites.site == send_site) & (sites.op == "Send")].iloc[0]
    wait = sites[(sites.site == wait_site) & (sites.op == "Wait")].iloc[0]
    # The sender's copy, o_s + (k-1)O; the receive was posted first: o_r, no waiting.
    assert send.comm / send.calls == pytest.approx(net.o_s + 5599 * net.O, rel=1e-9)
    assert wait.wait == 0
    assert wait.comm / wait.calls == pytest.approx(net.o_r, rel=1e-9)
    # Three exchanges with the partner per iteration, each about a latency; as network
    # messages the exchanges with oneself would add a fourth.
    assert 3 * net.L * iterations <= r.total_time < 3.5 * net.L * iterations


def test_calibrate_finds_the_protocol_switch_a_program_sees(tmp_path, collector_lib):
    """calibrate() finds where MPI_Send goes from eager to rendezvous: in a real program, a send
    of ``eager_threshold`` bytes returns before its receiver, 20 ms late, posts the receive, and
    one byte more waits for it. simulate() takes that threshold from the network, and each
    rendezvous handshake costs ``R`` more."""
    net = scalatrace.calibrate(np=2, reps=20)
    assert net.eager_threshold is not None, "MPICH's shared memory switches protocol below 1 MiB"
    limit = int(net.eager_threshold)
    assert 1 <= limit < 1 << 20 and 0 <= net.R < 1e-3
    exe = helpers.compile_program("late_receiver", tmp_path)
    sizes = [limit, limit + 1]
    proc = helpers.run_mpi(2, [exe, *map(str, sizes)])
    took = {int(b): float(t) for b, t in (line.split() for line in proc.stdout.splitlines())}
    assert took[limit] < 0.010, took  # eager: the copy, not the receiver's 20 ms
    assert took[limit + 1] >= 0.015, took  # rendezvous: waits for the receive

    # The same program traced: with the calibrated network its second send is rendezvous, and
    # the handshake's R lengthens the run by R (the receive is the critical path's end).
    trace_path = tmp_path / "late.sct"
    helpers.run_mpi(2, [exe, *map(str, sizes)], env=helpers.collector_env(out=trace_path))
    t = scalatrace.load(trace_path)
    base = dataclasses.replace(net, R=0.0)

    def total(network: scalatrace.LogGP, **kw) -> float:
        return scalatrace.simulate(t, network=network, recorded_local_calls=False, **kw).total_time

    r = 5e-6
    with_r = dataclasses.replace(base, R=r)
    assert total(with_r) - total(base) == pytest.approx(r, rel=1e-6)
    # Both sends eager (an explicit threshold wins over the network's): R costs nothing.
    assert total(with_r, eager_threshold=limit + 1) == total(base, eager_threshold=limit + 1)
    # The network's threshold is what simulate() uses by default.
    assert total(with_r) == total(with_r, eager_threshold=limit)


def test_calibrate_in_situ_runs_the_stage_with_the_computation_between_the_calls():
    """The in-situ calibration (MK's machine parameters on the application's pattern) at 2 real
    ranks: every block's computation is performed, alone and in the stage, about as long as
    asked, and its overheads replace the ping-pong's in a usable LogGP."""
    runs = {
        ns: scalatrace.calibrate_in_situ(
            ns, footprint_bytes=1 << 18, message_bytes=64, np=2, reps=20, max_bytes=1 << 12
        )
        for ns in (2_000.0, 32_000.0)
    }
    for ns, c in runs.items():
        assert isinstance(c, scalatrace.InSituCalibration) and isinstance(
            c.network, scalatrace.LogGP
        )
        assert (c.compute_ns, c.footprint_bytes, c.message_bytes) == (ns, 1 << 18, 64)
        assert c.blocks >= 2 and c.batches == 20 and c.cells >= 1
        # both ranks computed every block: the blocks alone, then the stage's
        assert c.cells_done == (2 * c.cells * c.blocks * c.batches,) * 2
        # a block's computation takes about what was asked (timed alone; generous: loaded CI)
        assert all(0.05 * ns * 1e-9 < t < 50 * ns * 1e-9 for t in c.compute_alone)
        assert all(0 < p < 1.0 for p in c.period)
        assert all(abs(o) < 1e-3 for o in c.overhead)
        net, pp = c.network, c.ping_pong
        assert (net.o_s, net.o_r) == (max(c.overhead[0], 0.0), max(c.overhead[1], 0.0))
        assert (net.L, net.g, net.G, net.O) == (pp.L, pp.g, pp.G, pp.O)
        assert 0 < pp.o_s < 1e-3 and 0 < pp.o_r < 1e-3
    # 16 times the computation asked for: more cells per block (chosen by timing the kernel)
    assert runs[32_000.0].cells > runs[2_000.0].cells
    # calibrate(compute_ns=...) is the same measurement, its network
    net = scalatrace.calibrate(np=2, reps=5, max_bytes=1 << 12, compute_ns=1000.0)
    assert isinstance(net, scalatrace.LogGP) and net.o_s < 1e-3 and net.o_r < 1e-3


def test_calibrate_in_situ_blocks_measures_every_block_in_one_run():
    """Several blocks in one calibration run (their batches interleaved): each block's
    computation is performed, alone and in the stage, with its own message size, and the laws
    o_s(W, k), o_r(W, k) go through the blocks' overheads."""
    ws, sizes = [1_000.0, 4_000.0, 8_000.0], [16, 64, 256]
    b = scalatrace.calibrate_in_situ_blocks(
        ws, footprint_bytes=1 << 16, message_bytes=sizes, np=2, reps=10, max_bytes=1 << 12
    )
    assert isinstance(b, scalatrace.InSituBlocks) and len(b.calibrations) == 3
    for c, w, k in zip(b.calibrations, ws, sizes):
        assert (c.compute_ns, c.message_bytes, c.footprint_bytes, c.batches) == (w, k, 1 << 16, 10)
        assert c.cells_done == (2 * c.cells * c.blocks * c.batches,) * 2
        assert all(0.05 * w * 1e-9 < t < 50 * w * 1e-9 for t in c.compute_alone)
        assert c.ping_pong == b.ping_pong
    assert b.calibrations[2].cells > b.calibrations[0].cells
    for law, side in ((b.o_s, 0), (b.o_r, 1)):
        assert isinstance(law, scalatrace.OverheadLaw)
        at = [law(c.compute_alone[side], c.message_bytes) for c in b.calibrations]
        assert all(np.isfinite(at)) and all(abs(x) < 1e-3 for x in at)
    assert (b.network.L, b.network.G, b.network.O) == (b.ping_pong.L, b.ping_pong.G, 0.0)


def test_calibrate_in_situ_blocks_of_columns_splits_each_block_into_chains():
    """chains=K: each block is K dependent chains (a pipeline's K columns, each from a received
    value), every cell still done on both ranks, the blocks about as long as asked; one chain is
    the default. K chains of a block overlap in the processor, so the same time holds at least
    as many cells as one chain does (about 1.2x on the benchmark machine)."""
    ws, ks = [1_000.0, 4_000.0], [2, 8]
    b = scalatrace.calibrate_in_situ_blocks(
        ws,
        footprint_bytes=1 << 16,
        message_bytes=[8 * k for k in ks],
        chains=ks,
        np=2,
        reps=10,
        max_bytes=1 << 12,
    )
    assert [c.chains for c in b.calibrations] == ks
    for c, w in zip(b.calibrations, ws):
        assert c.cells >= c.chains
        assert c.cells_done == (2 * c.cells * c.blocks * c.batches,) * 2
        assert all(0.05 * w * 1e-9 < t < 50 * w * 1e-9 for t in c.compute_alone)
        assert all(abs(o) < 1e-3 for o in c.overhead)
    one = scalatrace.calibrate_in_situ(1_000.0, footprint_bytes=1 << 16, np=2, reps=5)
    assert one.chains == 1


def test_overhead_law_fit_finds_a_step_in_the_message_size():
    """OverheadLaw.fit: a line in W through points of one regime; two lines split where the
    overhead jumps between two message sizes (as MPICH's shared memory does above 88 bytes on
    the benchmark machine), three where it also rises steeply over the smallest blocks; the
    law and its SymPy expression agree."""
    import sympy

    w = np.array([1, 2, 4, 8, 1, 2, 4, 8], dtype=float) * 1e-6
    k = np.array([16, 32, 48, 72, 96, 128, 192, 256], dtype=float)
    line = scalatrace.OverheadLaw.fit(w, k, 50e-9 + 0.01 * w)
    assert line.thresholds == () and line.intercepts[0] == pytest.approx(50e-9)
    assert line.slopes[0] == pytest.approx(0.01)
    step = scalatrace.OverheadLaw.fit(w, k, 50e-9 + 0.01 * w + 100e-9 * (k > 88))
    assert step.thresholds == (84.0,)  # halfway between 72 and 96
    assert step.intercepts == pytest.approx((50e-9, 150e-9))
    assert step.slopes == pytest.approx((0.01, 0.01))
    # the benchmark's blocks (K columns: W and 8 K bytes grow together): a steep rise over the
    # smallest blocks, nearly flat after, a step above 88 bytes: three regimes
    kk = np.array([2, 3, 4, 6, 8, 10, 11, 12, 16, 20, 24, 32], dtype=float)
    w3, k3 = 130e-9 * kk, 8 * kk
    o3 = np.where(k3 <= 32, 100e-9 + 0.5 * w3, 280e-9 + 0.005 * w3)
    o3 = o3 + (k3 > 88) * (60e-9 + 0.015 * w3)
    three = scalatrace.OverheadLaw.fit(w3, k3, o3)
    assert three.thresholds == (40.0, 92.0)
    assert three(w3, k3) == pytest.approx(o3)
    assert scalatrace.OverheadLaw.fit(w3, k3, o3, max_regimes=1).thresholds == ()
    ws, ks = sympy.symbols("W k", positive=True)
    expr = step.expression(ws, ks)
    for wv, kv in ((3e-6, 40.0), (3e-6, 200.0)):
        assert float(expr.subs({ws: wv, ks: kv})) == pytest.approx(step(wv, kv))
    assert step(np.array([3e-6, 3e-6]), np.array([40.0, 200.0])) == pytest.approx([80e-9, 180e-9])


def test_simgrid_export_has_one_file_per_rank_and_the_events(example_traces, tmp_path):
    t = example_traces["stencil2d"]
    exp = t.to_simgrid_ti(tmp_path / "ti")
    assert len(exp.files) == t.nranks
    lines = Path(exp.index).read_text().splitlines()
    assert [Path(x) for x in lines] == [Path(f) for f in exp.files]
    text = Path(exp.files[0]).read_text().splitlines()
    assert text[0] == "0 init" and text[-1] == "0 finalize"
    assert all(line.split()[0] == "0" for line in text)
    assert exp.actions["isend"] == exp.actions["irecv"]
    # every Isend of the trace became an isend line
    m = t.comm_matrix(metric="messages", kind="p2p")
    assert exp.actions["isend"] == int(m.sum())
    allreduces = sum(1 for r in range(t.nranks) for e in t.events(r) if e.op == "Allreduce")
    assert (
        exp.actions.get("allreduce", 0) == allreduces and exp.skipped == 0 and exp.decomposed == 0
    )


def _decomposed_messages(exp) -> tuple[dict, dict]:
    """(sender, receiver, tag) -> sizes in order, of the sends and of the receives that carry
    decomposed collectives (tags from 2**28 on) in an export's rank files."""
    sent: dict[tuple[int, int, int], list[int]] = {}
    received: dict[tuple[int, int, int], list[int]] = {}
    for f in exp.files:
        for line in Path(f).read_text().splitlines():
            rank, action, *args = line.split()
            if action in ("send", "isend", "recv") and int(args[1]) >= 1 << 28:
                peer, tag, nbytes = int(args[0]), int(args[1]), int(args[2])
                if action == "recv":
                    received.setdefault((peer, int(rank), tag), []).append(nbytes)
                else:
                    sent.setdefault((int(rank), peer, tag), []).append(nbytes)
    return sent, received


def test_simgrid_export_decomposes_sub_communicator_collectives(example_traces, tmp_path):
    """comm_split runs collectives on row, column, split, dup and Cart communicators: SMPI's
    replay has no communicators, so they are written as the simulator's point-to-point steps on
    world ranks. Every such send meets a receive of the same size on its peer, and nothing is
    left out."""
    t = example_traces["comm_split"]
    exp = to_simgrid_ti(t, tmp_path / "ti")
    world = {
        "Barrier",
        "Bcast",
        "Reduce",
        "Allreduce",
        "Gather",
        "Scatter",
        "Allgather",
        "Alltoall",
    }
    on_sub = sum(
        1
        for r in range(t.nranks)
        for e in t.events(r)
        if e.op in world and not _is_world(t, r, e["Comm"])
    )
    creations = sum(
        1
        for r in range(t.nranks)
        for e in t.events(r)
        if e.op in ("Comm_split", "Comm_dup", "Comm_create", "Cart_create", "Cart_sub")
    )
    assert on_sub > 0 and creations > 0
    assert exp.decomposed == on_sub + creations and exp.skipped == 0
    sent, received = _decomposed_messages(exp)
    assert sent and sent == received


def _is_world(t: scalatrace.Trace, rank: int, comm: int) -> bool:
    if comm == 0:
        return True
    members = next(c.members for c in t.communicators if c.id == comm and rank in c.holders)
    return list(members) == list(range(t.nranks))


SMPIRUN = shutil.which("smpirun")
REPLAY_MAIN = next(
    (
        p
        for p in (
            Path("/usr/lib/x86_64-linux-gnu/simgrid/smpireplaymain"),
            Path("/usr/lib/simgrid/smpireplaymain"),
        )
        if p.is_file()
    ),
    None,
)


@pytest.mark.skipif(
    SMPIRUN is None or REPLAY_MAIN is None, reason="SimGrid (smpirun, smpireplaymain) not installed"
)
@pytest.mark.parametrize(
    "name", ["stencil1d", "ring", "collectives", "persistent", "comm_split", "nonblocking_coll"]
)
def test_smpi_replays_the_export(name, example_traces, tmp_path):
    """SMPI's replay runs the exported trace to the end, executes every action we wrote (counted
    per kind from its verbose log), and predicts a time close to ours. comm_split and
    nonblocking_coll run collectives on other communicators than MPI_COMM_WORLD (decomposed)."""
    t = example_traces[name]
    exp = to_simgrid_ti(t, tmp_path / "ti")
    platform, hostfile = write_smpi_platform(tmp_path, t.nranks, scalatrace.LogGP())
    proc = subprocess.run(
        [
            SMPIRUN,
            "-np",
            str(t.nranks),
            "-platform",
            str(platform),
            "-hostfile",
            str(hostfile),
            "-replay",
            str(exp.index),
            "--log=smpi_replay.thresh:verbose",
            "--log=smpi_config.thres:warning",
            "--log=xbt_cfg.thres:warning",
            "--cfg=smpi/simulate-computation:yes",
            "--cfg=smpi/lat-factor:0:1",
            "--cfg=smpi/bw-factor:0:1",
            str(REPLAY_MAIN),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    executed: dict[str, int] = {}
    for m in re.finditer(r"\[smpi_replay/VERBOSE\] \d+ (\w+)", out):
        executed[m.group(1)] = executed.get(m.group(1), 0) + 1
    written = {k: v for k, v in exp.actions.items() if k not in ("init", "finalize")}
    assert executed == written
    found = re.search(r"Simulation time ([0-9.eE+-]+)", out)
    assert found, out[-2000:]
    smpi_time = float(found.group(1))
    # The model alone, as SMPI's replay has it (no recorded library time: under an
    # oversubscribed test run a collective's fastest recorded calls can take milliseconds).
    ours = scalatrace.simulate(t, recorded_local_calls=False).total_time
    # the same compute dominates both: the two predictions are close
    assert 0.5 < smpi_time / ours < 2, (smpi_time, ours)


def write_smpi_platform(directory: Path, nranks: int, net: scalatrace.LogGP) -> tuple[Path, Path]:
    """A SimGrid cluster of `nranks` 1 Gflop/s hosts with the LogGP latency and bandwidth."""
    return write_simgrid_platform(directory, nranks, net.L, 1.0 / net.G if net.G > 0 else 1e12)
