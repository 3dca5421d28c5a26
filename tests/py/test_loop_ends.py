"""Real MPI runs: loops whose first or last iteration lacks a call, and pipelined sweeps whose
loops must follow the application's stages (issue 30, item 3).

LULESH's first timestep skips the ``MPI_Allreduce`` of its time increment; its trace kept a
20th copy of the whole timestep after a loop of 19 (157 of 414 nodes at 8 ranks).
``tests/py/programs/timestep_skip.c`` reproduces the pattern: a timestep opening and closing
with an ``MPI_Allreduce`` around 16 fields' halo exchanges (80 distinct calls, longer than the
compressor's per-event alignment bound, as LULESH's timestep is), one of the four ends
skipped. Each run is traced with the raw recording; the merged trace must give back every
rank's events exactly (``scalatrace-dump check``) and hold no more event nodes than the same
program without the skip, plus one, in one loop of all the timesteps.

NPB BT's sweeps (``tests/py/programs/pipelined_sweeps.c``, CELLS stages each way as BT's
x/y/z_solve): the backward sweep's last stage receives without sending on, so its stages came
out as ``Isend (Irecv Wait Wait Isend) x 2`` plus a copy of ``Irecv Wait Wait`` after the loop,
and at 16 ranks the loop's trips as ``[2x59 3]`` against the forward sweep's ``[3x60]``. Now
every sweep loop runs CELLS - 1 iterations in every timestep, the last stage's missing send a
presence value.
"""

from __future__ import annotations

import json
from pathlib import Path

import helpers
import pytest
from test_collector import compile_program

import scalatrace

STEPS = 12


def traced(
    exe: Path, ranks: int, args: list[str], tmp_path: Path, name: str, site_match: int
) -> scalatrace.Trace:
    """Runs `exe` under the collector (raw recording and merged trace; ``SCALATRACE_SITE_MATCH``
    = `site_match`), checks the trace against the recording on every rank and returns it."""
    raw, out = tmp_path / f"raw-{name}", tmp_path / f"{name}.sct"
    env = helpers.collector_env(raw=raw, out=out, quiet=1, site_match=site_match)
    helpers.run_mpi(ranks, [exe, *args], env=env, timeout=120, cwd=tmp_path)
    proc = helpers.run_tool("scalatrace-dump", ["check", raw, out])
    result = json.loads(proc.stdout)
    assert result["ok"] is True and result["ranks"] == ranks, result
    return scalatrace.load(out)


def event_nodes(trace: scalatrace.Trace) -> int:
    return sum(1 for node in trace.walk() if not isinstance(node, scalatrace.Loop))


@pytest.fixture(scope="module")
def timestep_skip(tmp_path_factory) -> Path:
    return compile_program("timestep_skip", tmp_path_factory.mktemp("timestep_skip"))


# The program's fields share one exchange routine, called from one statement per field: with
# whole-stack matching (SCALATRACE_SITE_MATCH=0) its calls are 5 distinct calls per field (80,
# LULESH's long timestep); with the default (1) one routine's 5 calls, the fields a loop.
@pytest.mark.parametrize(
    "skip,ranks,fields,site_match",
    [
        ("first-open", 4, 16, 0),  # LULESH
        ("first-close", 3, 16, 0),
        ("last-open", 2, 16, 0),
        ("last-close", 5, 16, 0),
        ("first-open", 3, 2, 0),  # a short timestep (the per-event alignment's case)
        ("first-open", 4, 16, 1),
        ("last-close", 3, 16, 1),
    ],
)
def test_a_skipped_collective_costs_no_copy_of_the_timestep(
    skip, ranks, fields, site_match, timestep_skip, tmp_path, collector_lib
):
    args = [str(STEPS), str(fields)]
    plain = traced(timestep_skip, ranks, [*args, "none"], tmp_path, "none", site_match)
    skipped = traced(timestep_skip, ranks, [*args, skip], tmp_path, skip, site_match)
    # The timestep's calls once (5 per field, or 5 with the fields matched as one call, and the
    # two Allreduces), plus the context (Init, Comm_rank, Comm_size, Bcast, Reduce, Finalize):
    # the skip costs a presence vector, not nodes.
    assert event_nodes(plain) == 5 * (fields if site_match == 0 else 1) + 2 + 6
    assert event_nodes(skipped) <= event_nodes(plain) + 1, skipped.dump()
    loops = skipped.timestep_loops()
    assert len(loops) == 1, skipped.dump()
    if site_match == 0:
        assert loops[0].min_iterations == loops[0].max_iterations == STEPS
    else:
        # Loop(STEPS){Loop(fields){exchange} Allreduce Allreduce}: timestep_loops reads an inner
        # loop followed by fewer calls as steps with a call every k-th one (STEPS * fields
        # iterations); the timestep loop itself runs STEPS trips on every rank.
        assert trip_counts(loops[0].loop, ranks) == {STEPS}, skipped.dump()


@pytest.fixture(scope="module")
def pipelined_sweeps(tmp_path_factory) -> Path:
    return compile_program("pipelined_sweeps", tmp_path_factory.mktemp("pipelined_sweeps"))


def trip_counts(loop: scalatrace.Loop, nranks: int) -> set[int]:
    """Every trip count any rank's visits of `loop` run."""
    counts: set[int] = set()
    for rank in range(nranks):
        seq = loop.trips.for_rank(rank)
        if seq is not None:
            counts.update(int(v) for v in seq.to_numpy())
    return counts


# 4 cells: NPB BT's stages at 16 ranks; fewer ranks than cells as BT's multi-partition allows.
@pytest.mark.parametrize("ranks,cells", [(4, 4), (2, 4), (3, 5)])
def test_sweep_loops_follow_the_application_stages(
    ranks, cells, pipelined_sweeps, tmp_path, collector_lib
):
    steps = 6
    # The program's three directions share one solve routine, told apart by the call path only
    # (BT has a routine per direction): whole-stack matching keeps them apart.
    trace = traced(pipelined_sweeps, ranks, [str(steps), str(cells)], tmp_path, "sweeps", 0)
    loops = trace.timestep_loops()
    assert len(loops) == 1, trace.dump()
    assert loops[0].min_iterations == loops[0].max_iterations == steps
    sweeps = [node for node in loops[0].loop.body if isinstance(node, scalatrace.Loop)]
    # Forward: (Isend Irecv Wait Wait) x (cells - 1); backward: the first stage's Isend, then
    # (Irecv Wait Wait Isend?) x (cells - 1). Six sibling loops, the same trips in every visit.
    assert len(sweeps) == 6, trace.dump()
    for sweep in sweeps:
        assert trip_counts(sweep, ranks) == {cells - 1}, trace.dump()
    # Context (Init, Comm_rank, Comm_size, Bcast, Allreduce, Finalize), the face copy (5 calls)
    # and per direction 4 + 1 + 4 calls: no copy of the last stage.
    assert event_nodes(trace) == 6 + 5 + 3 * 9, trace.dump()
