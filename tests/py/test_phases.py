"""Communication phases (MK toolkit §3, issue 35): the examples' phases and kinds as the
programs are written, the chain depth of a 1D pipeline (P - 1) and of a 2D wavefront
(px + py - 2, tests/py/programs/wavefront2d.c), and the analysis on a harness-made trace at a
rank count no real run here reaches."""

from __future__ import annotations

import subprocess
from pathlib import Path

import helpers
import numpy as np
import pytest

import scalatrace
from scalatrace.phases import phase_analysis, phase_graph

PROGRAMS = Path(__file__).resolve().parent / "programs"


def traced(example, tmp_path, name: str, n: int, args=()) -> scalatrace.Trace:
    return scalatrace.trace(
        [str(example(name)), *args], np=n, out=tmp_path / f"{name}.sct", timeout=120
    )


def test_pipeline_is_one_pipeline_of_depth_p_minus_1(example, collector_lib, tmp_path):
    t = traced(example, tmp_path, "pipeline", 5, ["-c", "1"])
    df = t.phases()
    assert list(df["kind"]) == ["pipeline"], df
    row = df.iloc[0]
    assert row["chain_depth"] == 4
    assert row["ranks"] == 5
    assert row["ops"] == "Recv,Send"
    # 2 sweeps x 4 blocks, each block passed on by ranks 0..3.
    assert row["occurrences"] == 8
    assert row["messages"] == 8 * 4
    g = t.phase_graph()
    assert g.number_of_nodes() == 2 and g.number_of_edges() == 1


def test_ring_is_a_shift_then_a_sendrecv_shift(example, collector_lib, tmp_path):
    t = traced(example, tmp_path, "ring", 4, ["-c", "1"])
    df = t.phases()
    # The Send/Recv ring with even ranks sending first is one phase over its four call sites
    # (each rank passes the token to the right; the odd ranks wait, the even ones do not:
    # chains of 2 messages whatever the rank count); then the Sendrecv shift to the left.
    assert list(df["kind"]) == ["shift", "shift"], df
    assert list(df["ops"]) == ["Recv,Send", "Sendrecv"]
    assert list(df["chain_depth"]) == [2, 1]
    assert list(df["ranks"]) == [4, 4]
    assert len(df["call_sites"][0]) == 4
    # Every rank receives in the first and sends in the second: no overlap.
    assert list(df["overlaps_with"]) == [(), ()]


def test_stencil_is_an_exchange_and_an_allreduce(example, collector_lib, tmp_path):
    t = traced(example, tmp_path, "stencil2d", 6, ["-c", "1", "-i", "4"])
    df = t.phases()
    assert list(df["kind"]) == ["exchange", "collective"], df
    assert df["chain_depth"][0] == 1
    assert df["chain_depth"].isna()[1]
    assert list(df["ranks"]) == [6, 6]
    assert df["ops"][0] == "Irecv,Isend" and df["ops"][1] == "Allreduce"
    # The exchange's message count is the communication matrix's.
    m = t.comm_matrix(metric="messages", kind="p2p")
    assert df["messages"][0] == int(np.asarray(m).sum())


def test_collectives_are_one_phase_each(example, collector_lib, tmp_path):
    t = traced(example, tmp_path, "collectives", 4, ["-c", "1"])
    df = t.phases()
    assert set(df["kind"]) == {"collective"}, df
    ops = list(df["ops"])
    assert ops[:4] == ["Barrier", "Bcast", "Reduce", "Allreduce"]
    assert len(ops) == 15 and len(set(ops)) == 15
    assert (df["ranks"] == 4).all()
    assert df["chain_depth"].isna().all()


@pytest.fixture(scope="module")
def wavefront(tmp_path_factory) -> Path:
    return helpers.compile_program("wavefront2d", tmp_path_factory.mktemp("wavefront2d"), "-O0")


@pytest.mark.parametrize("px,py", [(3, 2), (2, 4), (3, 3)])
def test_wavefront_chain_depth_is_px_plus_py_minus_2(wavefront, collector_lib, tmp_path, px, py):
    t = scalatrace.trace(
        [str(wavefront), str(px), str(py), "2", "3"],
        np=px * py,
        out=tmp_path / "wf.sct",
        timeout=120,
    )
    pa = phase_analysis(t)
    kinds = [p.kind for p in pa.phases]
    assert kinds == ["pipeline", "collective"], t.dump()
    sweep = pa.phases[0]
    assert sweep.chain_depth == px + py - 2
    assert sweep.ranks.tolist() == list(range(px * py))
    # Senders: all but the last corner; receivers: all but the first.
    assert 0 not in sweep.receivers and px * py - 1 not in sweep.senders
    assert sweep.overlaps_with == ()


def test_harness_stencil_at_large_scale_from_the_structure(tmp_path):
    """A 16,384-rank 2D stencil made in-process: one exchange phase (depth 1) and the
    Allreduce, found from the compressed structure (no rank's events expanded)."""
    harness = helpers.tool_path("scalatrace-harness")
    out = tmp_path / "big.sct"
    subprocess.run(
        [
            str(harness),
            "--pattern",
            "stencil2d",
            "--ranks",
            "16384",
            "--timesteps",
            "3",
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    t = scalatrace.load(out)
    pa = phase_analysis(t)
    assert [p.kind for p in pa.phases] == ["exchange", "collective"]
    assert pa.phases[0].chain_depth == 1
    assert pa.phases[0].ranks.size == 16384
    # A 128 x 128 grid without wrap-around: horizontal and vertical neighbours both ways, and
    # the four diagonals.
    px, py = 128, 128
    pairs = 2 * ((px - 1) * py + (py - 1) * px) + 4 * (px - 1) * (py - 1)
    assert pa.phases[0].messages == 3 * pairs


def test_longest_chain_kernel_at_a_million_vertices():
    """The longest-path kernel on a 1000 x 1000 wavefront (depth 1998, level-synchronous
    topological sorting), a 1,000,000-vertex chain and a binary out-tree (pointer jumping),
    and cycles (found by both)."""
    from scalatrace.phases import _longest_levels

    side = 1000
    v = np.arange(side * side).reshape(side, side)
    src = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    dst = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    levels, acyclic = _longest_levels(side * side, src, dst)
    assert acyclic and levels.max() == 2 * side - 2
    n = 1_000_000
    perm = np.random.default_rng(3).permutation(n)  # vertex ids in no particular order
    levels, acyclic = _longest_levels(n, perm[:-1], perm[1:])
    assert acyclic and levels.max() == n - 1 and levels[perm[-1]] == n - 1
    tree = np.arange(1, 2**16 - 1)
    levels, acyclic = _longest_levels(2**16 - 1, (tree - 1) // 2, tree)
    assert acyclic and levels.max() == 15
    for a, b in [([0, 1, 2], [1, 2, 0]), ([0, 1, 2, 0], [1, 2, 0, 2])]:
        levels, acyclic = _longest_levels(3, np.array(a), np.array(b))
        assert not acyclic


def test_phase_graph_and_plot(example, collector_lib, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    t = traced(example, tmp_path, "ring", 4, ["-c", "1"])
    g = phase_graph(t)
    assert {d["phase"] for _, d in g.nodes(data=True)} == {0, 1}
    ax = t.plot_phases()
    assert len(ax.get_yticks()) == 2


def test_a_two_rank_pipeline_is_a_shift(example, collector_lib, tmp_path):
    """With two ranks nothing is passed on: one message per block, depth 1 (MK: no rank
    receives before it sends, so the phase is loosely synchronous)."""
    t = traced(example, tmp_path, "pipeline", 2, ["-c", "1"])
    df = t.phases()
    assert list(df["kind"]) == ["shift"] and list(df["chain_depth"]) == [1], df


def test_ghost_zone_exchange_is_synchronous(collector_lib, tmp_path):
    """tests/py/programs/ghost_exchange.c (the synchronous blocked code of BENCHMARKS.md section
    16): the Barrier, one exchange with both neighbours every K steps, the Allreduce of the
    checksum."""
    exe = helpers.compile_program("ghost_exchange", tmp_path, "-O0")
    t = scalatrace.trace([str(exe), "96", "8", "64"], np=3, out=tmp_path / "ge.sct", timeout=120)
    df = t.phases()
    assert list(df["kind"]) == ["collective", "exchange", "collective"], df
    row = df.iloc[1]
    assert row["chain_depth"] == 1 and row["ranks"] == 3
    # 64 steps in blocks of 8: 8 exchanges of 4 messages (0 <-> 1, 1 <-> 2), K doubles each
    assert row["occurrences"] == 8
    assert row["messages"] == 8 * 4 and row["bytes"] == 8 * 4 * 8 * 8


def test_ghost_zone_exchange_serial_cells_change_no_value(tmp_path):
    """ghost_exchange's SERIAL argument (the regular cost per cell that benchmarks/mk_sync.py
    --serial-cells measures) chains the cell updates without changing a value: the checksum is
    that of the plain program, at -O2 as the benchmark builds it, for every ghost-zone depth."""
    exe = helpers.compile_program("ghost_exchange", tmp_path, "-O2")
    for k in (1, 8):
        plain, serial = (
            helpers.run_mpi(3, [exe, "96", str(k), "40", "2", s]).stdout.split() for s in ("0", "1")
        )
        assert plain[0] == "elapsed" and plain[2] == "total", plain
        assert serial[3] == plain[3], (k, plain, serial)
    bad = subprocess.run(
        [helpers.mpiexec(), "-n", "2", str(exe), "96", "8", "40", "1", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "SERIAL 0 or 1" in bad.stderr
