"""Real MPI runs: the compressed trace (.sct, timing included) of the stencil examples keeps its
size as the run gets longer and as the rank count grows (issue 9).

Each case runs the built example under the collector (default settings: timing histograms on)
and compares the sizes of the written ``.sct`` files. The 1000-timestep runs are the slow part
of this file (8-9 ranks oversubscribed on small machines); ``benchmarks/trace_sizes.py`` records
the same measurement with more timestep counts and ranks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers

# Cheapest flags: tiny messages and no artificial compute, so that a timestep is a few message
# hops; timing is still recorded for every call.
FAST = ["-s", "64", "-c", "0"]
TIMESTEPS = [10, 100, 1000]


def traced_size(example: Path, ranks: int, timesteps: int, workdir: Path) -> int:
    """Runs `example` on `ranks` ranks for `timesteps` timesteps; returns the .sct size."""
    out = workdir / f"{example.name}-{ranks}-{timesteps}.sct"
    helpers.run_mpi(ranks, [example, "-i", str(timesteps), *FAST],
                    env=helpers.collector_env(out=out, quiet=1), timeout=600)
    assert out.is_file(), f"no trace written at {out}"
    return out.stat().st_size


def spread(sizes: dict[int, int]) -> float:
    """(largest - smallest) / smallest."""
    return (max(sizes.values()) - min(sizes.values())) / min(sizes.values())


@pytest.mark.parametrize("name,ranks", [("stencil1d", 8), ("stencil2d", 9), ("stencil3d", 8)])
def test_size_does_not_grow_with_timesteps(name, ranks, tmp_path, example, collector_lib):
    sizes = {t: traced_size(example(name), ranks, t, tmp_path) for t in TIMESTEPS}
    assert spread(sizes) <= 0.05, f"{name} at {ranks} ranks: bytes by timesteps {sizes}"


@pytest.mark.parametrize("name,rank_counts", [("stencil2d", [4, 9, 16]), ("stencil3d", [8, 27])])
def test_size_does_not_grow_with_ranks(name, rank_counts, tmp_path, example, collector_lib):
    sizes = {n: traced_size(example(name), n, 20, tmp_path) for n in rank_counts}
    assert spread(sizes) <= 0.10, f"{name}: bytes by rank count {sizes}"
