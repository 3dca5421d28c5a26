"""Real MPI runs: the compressed trace (.sct, timing included) of the stencil examples keeps its
size as the run gets longer and as the rank count grows (issue 9).

Each case runs the built example under the collector (default settings: timing histograms on)
and compares the sizes of the written ``.sct`` files. The 1000-timestep runs are the slow part
of this file (8-9 ranks oversubscribed on small machines); ``benchmarks/trace_sizes.py`` records
the same measurement with more timestep counts and ranks.
"""

from __future__ import annotations

from pathlib import Path

import helpers
import pytest

import scalatrace

# The examples' default message sizes (512-byte faces, 64-byte edges, 8-byte corners in 3D):
# reduced sizes (-s 64) once hid the 3D stencil's growth at its default sizes. No artificial
# compute (-c 0), so that timing groups (ranks whose compute really differs) do not split from
# scheduling noise on a loaded machine; timing is still recorded for every call.
DEFAULT_FLAGS: list[str] = ["-c", "0"]
TIMESTEPS = [10, 100, 1000]


def traced(example: Path, ranks: int, timesteps: int, workdir: Path) -> Path:
    """Runs `example` on `ranks` ranks for `timesteps` timesteps; returns the .sct path."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"{example.name}-{ranks}-{timesteps}.sct"
    helpers.run_mpi(
        ranks,
        [example, "-i", str(timesteps), *DEFAULT_FLAGS],
        env=helpers.collector_env(out=out, quiet=1),
        timeout=600,
    )
    assert out.is_file(), f"no trace written at {out}"
    return out


def traced_size(example: Path, ranks: int, timesteps: int, workdir: Path) -> int:
    """The .sct size of `traced`."""
    return traced(example, ranks, timesteps, workdir).stat().st_size


def spread(sizes: dict[int, int]) -> float:
    """(largest - smallest) / smallest."""
    return (max(sizes.values()) - min(sizes.values())) / min(sizes.values())


def within_noise(sizes: dict[int, int], tolerance: float) -> bool:
    """Whether `sizes` differ by at most `tolerance` (relative) or 80 bytes."""
    return spread(sizes) <= tolerance or max(sizes.values()) - min(sizes.values()) <= 80


# The goal is 5%. The structure is the same at every length (same nodes, same value
# sequences); what moves is the timing: histogram bins and their ranges depend on what the
# ranks' clocks saw. 8 ranks on 2 cores: two runs of the same 1,000-step 3D command gave 3,791
# and 3,912 B, and one `make test` run 4,021 B against 3,812 at 100 steps (5.5%); 1D and 2D move
# the same way. So a single run is held to 10%, which still catches any per-timestep growth
# (the 3D bug was +1,200%, 53 B per timestep); the latest Pilgrim comparison run measured 2.1-6.7%
# (BENCHMARKS.md, Pilgrim comparison).
@pytest.mark.parametrize(
    "name,ranks,tolerance", [("stencil1d", 8, 0.10), ("stencil2d", 9, 0.10), ("stencil3d", 8, 0.10)]
)
def test_size_does_not_grow_with_timesteps(
    name, ranks, tolerance, tmp_path, example, collector_lib
):
    paths = {t: traced(example(name), ranks, t, tmp_path) for t in TIMESTEPS}
    sizes = {t: p.stat().st_size for t, p in paths.items()}
    # Format version 11 made these files 480-560 B (3D), where the timing's noise (which bins
    # and ranges a run's clocks give, tens of bytes) is above 10 %: a spread of at most 80 B
    # passes too, still far below any per-timestep growth (53 B per step).
    if not within_noise(sizes, tolerance):
        # One oversubscribed run in many gets an extra timing group or bin somewhere (a CI run
        # measured 415 / 438 / 503 B for 2D at 9 ranks; the structure was equal). Noise does not
        # repeat, growth does: every length is traced once more and each keeps its smaller size.
        again = {t: traced_size(example(name), ranks, t, tmp_path / "again") for t in TIMESTEPS}
        first = dict(sizes)
        sizes = {t: min(sizes[t], again[t]) for t in TIMESTEPS}
        assert within_noise(sizes, tolerance), (
            f"{name} at {ranks} ranks: bytes by timesteps {first}, traced again {again}"
        )
    # The structure itself does not depend on the length: the same nodes at 100 and 1,000 steps,
    # and the same bytes without timing but for the widths of repeat counts (10, 100 and 1,000
    # take one, one and two bytes): measured 567 / 570 / 579 (1D), 756 / 758 / 773 (2D),
    # 794 / 797 / 811 (3D). So what moves the whole file is timing.
    traces = {t: scalatrace.load(paths[t]) for t in TIMESTEPS}
    nodes = {t: traces[t].node_count for t in (100, 1000)}
    assert nodes[100] == nodes[1000], f"{name}: node counts by timesteps {nodes}"
    structure = {t: traces[t].structure_bytes for t in TIMESTEPS}
    assert spread(structure) <= 0.03, f"{name}: structure bytes by timesteps {structure}"


# A 2x2 grid has 4 kinds of rank (corners), 3x3 has 9, 2x2x2 has 8 and 3x3x3 27, and each kind
# has its own peers, tags, sizes, trip counts and request arrays. The writer states them over
# the neighbour grid (format version 6, docs/algorithms.md "Neighbour grids": one template of
# directions, each rank's neighbours inside the grid), so the file holds the template, not the
# kinds. The structure (the file without metadata and timing) is the same size at every grid
# size; the whole file also carries timing, whose histograms (at most 8 bins, 4 groups of ranks
# per node) fill with what oversubscribed ranks' clocks saw: two runs of 2D at 4 / 9 / 16 ranks
# measured 2,009 / 2,103 / 2,256 and 2,040 / 2,297 / 2,145 bytes (before: 2,147 / 2,564 / 2,613;
# 3D 8 / 27 ranks 2,588 / 5,006). So the whole file is held to 20% here (the goal is
# 10%; benchmarks/results/sizes.md has the calm figures) and the structure to 5%.
@pytest.mark.parametrize("name,ranks", [("stencil2d", (4, 9, 16)), ("stencil3d", (8, 27))])
def test_size_does_not_grow_with_ranks(name, ranks, tmp_path, example, collector_lib):
    paths = {n: traced(example(name), n, 20, tmp_path) for n in ranks}
    traces = {n: scalatrace.load(p) for n, p in paths.items()}
    structure = {n: t.structure_bytes for n, t in traces.items()}
    assert spread(structure) <= 0.05, f"{name}: structure bytes by rank count {structure}"
    sizes = {n: p.stat().st_size for n, p in paths.items()}
    # Format version 11 made the 2D files 400-500 B, where the timing's noise and the 4-rank
    # grid's fewer kinds of rank (4 corners against 9 kinds) move tens of bytes: measured
    # 400 / 488 / 497 under load (24 %). A difference of at most 120 B passes too; growth per
    # rank (a ranklist, a histogram or a value per rank) would add far more from 4 to 16 ranks.
    assert spread(sizes) <= 0.20 or max(sizes.values()) - min(sizes.values()) <= 120, (
        f"{name}: bytes by rank count {sizes}"
    )
    # Every kind of rank still gets its own peers back: one alternative per kind.
    kinds = {4: 4, 9: 9, 16: 9, 8: 8, 27: 27}
    for n, trace in traces.items():
        peers = trace.find(op="Irecv")[0].field("Peer").alternatives
        assert len(peers) == kinds[n], (name, n, len(peers))


# Every kind of rank of a 9-point stencil on 3x3 ranks (corners, edges, centre) sends to and
# receives from its own neighbours, in the same order every timestep: its peers, tags and sizes
# are one period repeated once per timestep, stored as one block (canonical value sequences,
# docs/algorithms.md). Before, the compressor's greedy runs could take the next period's first
# value ("(1:2:2 4)x3 (1:2:2 4:-3:2 3:1:2)x48 1:2:2 4") and the table was 2.3 times larger.
def test_each_kind_of_rank_stores_one_block_per_timestep(tmp_path, example, collector_lib):
    steps = 24
    trace = scalatrace.load(traced(example("stencil2d"), 9, steps, tmp_path))
    exchanges = trace.find(op=["Irecv", "Isend"])
    assert len(exchanges) == 2, [e.op for e in exchanges]
    for event in exchanges:
        for name in ("Peer", "Tag", "Bytes"):
            alternatives = event.field(name).alternatives
            assert len(alternatives) >= 4, f"{event.op} {name}: {len(alternatives)} kinds of rank"
            for seq, ranks in alternatives:
                blocks = seq.blocks
                assert len(blocks) == 1 and blocks[0][1] == steps, (
                    f"{event.op} {name} of ranks {ranks}: {blocks}"
                )
