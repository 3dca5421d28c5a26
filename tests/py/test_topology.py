"""Topologies, placements and OS noise through the Python API (issue 34): closed forms on a
harness stencil (no MPI), sweep axes, parameter errors and the CLI. The core's analytic cases
(hops x latency + bytes / bandwidth, two flows on one link, noise share) are in
tests/cpp/simulate/simulator_test.cpp."""

from __future__ import annotations

import math
import subprocess

import helpers
import pytest

import scalatrace
from scalatrace import Noise, Topology
from scalatrace.errors import SimulationParameterError


@pytest.fixture(scope="module")
def stencil(tmp_path_factory) -> scalatrace.Trace:
    path = tmp_path_factory.mktemp("topo") / "s.sct"
    subprocess.run(
        [str(helpers.tool_path("scalatrace-harness")), "--pattern", "stencil2d", "--ranks", "16",
         "--timesteps", "4", "--wrap", "-o", str(path)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return scalatrace.load(path)


FREE = scalatrace.LogGP(L=0, o_s=0, o_r=0, g=0, G=0)


def test_flat_defaults_are_unchanged(stencil):
    net = scalatrace.LogGP()
    base = scalatrace.simulate(stencil, network=net)
    same = scalatrace.simulate(stencil, network=net, placement="block", noise=Noise(0, 0))
    assert same.total_time == base.total_time
    assert (same.end_time == base.end_time).all()


def test_topology_latency_and_bandwidth_add_to_the_endpoint(stencil):
    # Without congestion every message takes its hops; more hop latency never speeds anything up,
    # and a torus with free links and no hop latency is the flat network of its endpoint.
    net = scalatrace.LogGP()
    flat = scalatrace.simulate(stencil, network=net).total_time
    free = Topology.torus((4, 4), endpoint=net, congestion=False)
    assert scalatrace.simulate(stencil, network=free).total_time == pytest.approx(flat, rel=1e-12)
    slow = Topology.torus((4, 4), endpoint=net, hop_latency=1e-6, link_bandwidth=1e8)
    assert scalatrace.simulate(stencil, network=slow).total_time > flat
    assert (
        slow.nodes == 16
        and Topology.fat_tree(4).nodes == 16
        and Topology.dragonfly(2, 2, 4).nodes == 16
    )


@pytest.mark.parametrize(
    "topology",
    [
        Topology.torus((4, 4)),
        Topology.torus((16,)),
        Topology.fat_tree(4),
        Topology.dragonfly(2, 2, 4),
    ],
    ids=["torus2d", "ring", "fat_tree", "dragonfly"],
)
@pytest.mark.parametrize("placement", ["block", "round_robin", "random"])
def test_every_topology_and_placement_simulates(stencil, topology, placement):
    import dataclasses

    topo = dataclasses.replace(topology, hop_latency=1e-7, link_bandwidth=1e9, endpoint=FREE)
    r = scalatrace.simulate(stencil, network=topo, placement=placement, seed=3)
    assert r.total_time > 0 and math.isfinite(r.total_time)
    again = scalatrace.simulate(stencil, network=topo, placement=placement, seed=3)
    assert again.total_time == r.total_time  # deterministic, seeded


def test_explicit_placement_and_its_errors(stencil):
    nodes = list(range(15, -1, -1))
    r = scalatrace.simulate(
        stencil, network=Topology.torus((4, 4), hop_latency=1e-7), placement=nodes
    )
    assert r.total_time > 0
    with pytest.raises(SimulationParameterError, match="one integer node per rank"):
        scalatrace.simulate(stencil, placement=[0, 1])
    with pytest.raises(SimulationParameterError, match="outside the topology"):
        scalatrace.simulate(stencil, network=Topology.torus((4, 4)), placement=[16] * 16)
    with pytest.raises(SimulationParameterError, match="nodes"):
        scalatrace.simulate(stencil, network=Topology.torus((2, 2)))  # 16 ranks, 4 nodes
    with pytest.raises(SimulationParameterError, match="placement"):
        scalatrace.simulate(stencil, placement="scatter")  # type: ignore[arg-type]


def test_bad_topologies_and_noise_are_parameter_errors():
    with pytest.raises(SimulationParameterError, match="k even"):
        Topology.fat_tree(3)
    with pytest.raises(SimulationParameterError, match="dragonfly"):
        Topology("dragonfly", (2, 2))
    with pytest.raises(SimulationParameterError):
        Topology.torus((4, 0))
    with pytest.raises(SimulationParameterError, match="link_bandwidth"):
        Topology.torus((4,), link_bandwidth=0)
    with pytest.raises(SimulationParameterError, match="shorter"):
        Noise(frequency=1000, duration=1e-3)
    with pytest.raises(SimulationParameterError):
        Noise(frequency=-1, duration=0)


def test_noise_stretches_compute_by_its_share(stencil):
    # 2.5 % of the CPU taken: compute grows by about 1/(1 - 0.025) (within one detour per call).
    base = scalatrace.simulate(stencil, timing="mean")
    noisy = scalatrace.simulate(stencil, noise=Noise(frequency=1e5, duration=2.5e-7, seed=1))
    ratio = noisy.compute.sum() / base.compute.sum()
    assert 1.0 < ratio < 1.0 / (1 - 0.025) * 1.05


def test_topology_placement_and_noise_are_sweep_axes(stencil):
    torus = Topology.torus((4, 4), hop_latency=1e-6, link_bandwidth=1e8)
    df = scalatrace.sweep(
        stencil,
        {
            "network": [scalatrace.LogGP(), torus],
            "placement": ["block", "random"],
            "noise": [None, Noise(1000, 1e-5)],
            "bandwidth_scale": [1, 2],
        },
        processes=1,
        progress=False,
    )
    assert len(df) == 16 and df["error"].isna().all()
    assert (df["total_time"] > 0).all()


def test_cli_topology_and_noise(stencil, capsys):
    from scalatrace.cli import main

    argv = ["simulate", str(stencil.path), "--topology", "dragonfly:2x2x4", "--hop-latency", "1e-7",
            "--placement", "random", "--noise", "1000:1e-5", "--json"]  # fmt: skip
    assert main(argv) == 0
    assert '"total_time"' in capsys.readouterr().out
    assert main(["simulate", str(stencil.path), "--topology", "torus:4xq"]) == 2
    assert "sizes must be integers" in capsys.readouterr().err
    weighted = ["simulate", str(stencil.path), "--topology", "torus:4x4", "--hop-latency", "1e-7",
                "--sharing", "latency_weighted", "--json"]  # fmt: skip
    assert main(weighted) == 0
    assert '"total_time"' in capsys.readouterr().out
    # Placement on the flat network matters through contention (or intra_node).
    sweep = ["sweep", str(stencil.path), "--param", "placement=block,random", "--param",
             "ranks_per_node=1,4", "--param", "contention=true", "-j", "1", "-q"]  # fmt: skip
    assert main(sweep) == 0
    table = capsys.readouterr().out
    assert "random" in table and "Error" not in table


def test_fair_sharing_on_a_real_trace(tmp_path):
    # The pipeline example (4 ranks, 8 messages of 2 KiB down the chain) traced under the
    # collector, on a fat tree of k = 4, communication only. Each rank's eager sends leave at
    # once over its one link: first come, first served sends them one after the other; fair
    # sharing splits the link among them, so the first arrives later and the pipeline fills
    # more slowly. Exact relations only: sharing is moot without congestion, deterministic.
    argv = [str(helpers.example_path("pipeline"))]
    t = scalatrace.trace(argv, np=4, out=tmp_path / "pipeline.sct", timeout=120)
    kw = {"link_bandwidth": 1e9, "hop_latency": 1e-7, "endpoint": FREE}

    def run(**topo: object) -> scalatrace.SimResult:
        network = Topology.fat_tree(4, **kw, **topo)  # type: ignore[arg-type]
        return scalatrace.simulate(t, network=network, recorded_local_calls=False, compute_scale=0)

    fair, first = run(sharing="fair"), run()
    assert fair.total_time > 0 and math.isfinite(fair.total_time)
    assert run(sharing="fair").total_time == fair.total_time
    # The passes reached their fixed point (at least a second pass to confirm the first).
    assert fair.fair_settled and 2 <= fair.fair_passes <= 10
    assert first.fair_passes == 0 and first.fair_settled
    # Rank 1 receives 8 messages of 2,047 ns alone each: under either sharing the last one
    # arrives no earlier than 8 transfers after the first left.
    assert fair.end_time[1] >= 8 * 2047e-9 and first.end_time[1] >= 8 * 2047e-9
    loose = run(sharing="fair", congestion=False).total_time
    assert loose == run(congestion=False).total_time
    # Latency-weighted sharing (SimGrid's CM02) weighs each flow by 1 / its route's latency:
    # here every link carries flows of one route length only (each rank sends to the next), so
    # the weights cancel and it gives fair sharing's times (up to rounding).
    weighted = run(sharing="latency_weighted")
    assert weighted.fair_settled and weighted.total_time == pytest.approx(fair.total_time, rel=1e-9)
    with pytest.raises(SimulationParameterError, match="sharing"):
        Topology.fat_tree(4, sharing="fifo")  # type: ignore[arg-type]
