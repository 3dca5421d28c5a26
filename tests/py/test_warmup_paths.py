"""A first, untimed iteration on its own call line, and one communicator per rank (issue 30).

tests/py/programs/warmup_paths.c calls its iteration routine (two Sendrecv, two Allreduce, in
a routine with a long Fortran-like name) once before a timed loop and then inside it, as NPB CG
does, so each call line gives four call sites with the same inner frames and symbol; and, as NPB
FT's setup, it splits MPI_COMM_WORLD with the rank as color and key (one communicator per rank,
the key and color of each rank its own number). Runs under the collector (real mpiexec, 4 and 8
ranks, with and without the first iteration) are checked lossless on every rank against their
raw recordings, and the format (version 11) must store:

* the second call line's sites in a few bytes each: the symbol by reference, the frames'
  offsets as short differences (version 10 wrote the symbol again for every site);
* the per-rank communicators and the Comm_split's key and color in as many bytes at 8 ranks as
  at 4 (one rank-affine value and one per-rank communicator item).
"""

from __future__ import annotations

import json
from pathlib import Path

import helpers
import pytest
from test_collector import compile_program

import scalatrace

SITES_PER_LINE = 4
SYMBOL = "conjugate_gradient_iteration_"


def traced(tmp_path: Path, exe: Path, nranks: int, warmup: int) -> dict[str, int]:
    """Plain bytes per part of the run's merged trace, checked lossless on every rank."""
    raw, out = tmp_path / f"raw-{nranks}-{warmup}", tmp_path / f"t-{nranks}-{warmup}.sct"
    env = helpers.collector_env(raw=raw, out=out, quiet=1)
    helpers.run_mpi(nranks, [exe, "3", str(warmup)], env=env, timeout=120, cwd=tmp_path)
    verdict = json.loads(helpers.run_tool("scalatrace-dump", ["check", raw, out]).stdout)
    assert verdict["ok"] and verdict["ranks"] == nranks, verdict
    trace = scalatrace.load(out)
    symbols = [s.symbol for s in trace.call_sites]
    assert symbols.count(SYMBOL) == SITES_PER_LINE * (1 + warmup), symbols
    frame = scalatrace.byte_breakdown(out)
    return dict(zip(frame["part"], (int(b) for b in frame["bytes"])))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[tuple[int, int], dict[str, int]]:
    tmp_path = tmp_path_factory.mktemp("warmup_paths")
    exe = compile_program("warmup_paths", tmp_path)
    return {(n, w): traced(tmp_path, exe, n, w) for n, w in ((4, 0), (4, 1), (8, 1))}


def test_a_second_call_line_costs_a_few_bytes_per_site(runs):
    # Four more sites, one more frame for the call line, four inner frames under it. Version 10
    # took 37 bytes per site here (the 29-byte symbol each time).
    added = runs[(4, 1)]["call-site table"] - runs[(4, 0)]["call-site table"]
    assert 0 < added <= SITES_PER_LINE * 8 + 8, added


def test_per_rank_communicators_do_not_grow_with_the_ranks(runs):
    four, eight = runs[(4, 1)], runs[(8, 1)]
    assert eight["communicator table"] == four["communicator table"]
    assert eight["elastic-value table"] <= four["elastic-value table"] + 2
    # Value sequences, elastic values and communicators together: version 10 grew by 49 bytes
    # from 4 to 8 ranks here (a value sequence and a communicator entry per rank); the ring's
    # peers still grow a little. (The ranklist table is left out: timing groups, which follow
    # the machine's load, put their ranklists there.)
    tables = ("value-sequence table", "elastic-value table", "communicator table")
    growth = sum(eight[t] for t in tables) - sum(four[t] for t in tables)
    assert growth <= 24, (growth, four, eight)
