"""Real MPI runs: loops whose first or last iteration lacks a call (issue 30, item 3).

LULESH's first timestep skips the ``MPI_Allreduce`` of its time increment; its trace kept a
20th copy of the whole timestep after a loop of 19 (157 of 414 nodes at 8 ranks).
``tests/py/programs/timestep_skip.c`` reproduces the pattern: a timestep opening and closing
with an ``MPI_Allreduce`` around 16 fields' halo exchanges (80 distinct calls, longer than the
compressor's per-event alignment bound, as LULESH's timestep is), one of the four ends
skipped. Each run is traced with the raw recording; the merged trace must give back every
rank's events exactly (``scalatrace-dump check``) and hold no more event nodes than the same
program without the skip, plus one, in one loop of all the timesteps.
"""

from __future__ import annotations

import json
from pathlib import Path

import helpers
import pytest
from test_collector import compile_program

import scalatrace

STEPS = 12


def traced(exe: Path, ranks: int, args: list[str], tmp_path: Path, name: str) -> scalatrace.Trace:
    """Runs `exe` under the collector (raw recording and merged trace), checks the trace against
    the recording on every rank and returns it."""
    raw, out = tmp_path / f"raw-{name}", tmp_path / f"{name}.sct"
    env = helpers.collector_env(raw=raw, out=out, quiet=1)
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


@pytest.mark.parametrize(
    "skip,ranks,fields",
    [
        ("first-open", 4, 16),  # LULESH
        ("first-close", 3, 16),
        ("last-open", 2, 16),
        ("last-close", 5, 16),
        ("first-open", 3, 2),  # a short timestep (the per-event alignment's case)
    ],
)
def test_a_skipped_collective_costs_no_copy_of_the_timestep(
    skip, ranks, fields, timestep_skip, tmp_path, collector_lib
):
    args = [str(STEPS), str(fields)]
    plain = traced(timestep_skip, ranks, [*args, "none"], tmp_path, "none")
    skipped = traced(timestep_skip, ranks, [*args, skip], tmp_path, skip)
    # The timestep's calls once (5 per field and the two Allreduces), plus the context (Init,
    # Comm_rank, Comm_size, Bcast, Reduce, Finalize): the skip costs a presence vector, not nodes.
    assert event_nodes(plain) == 5 * fields + 2 + 6
    assert event_nodes(skipped) <= event_nodes(plain) + 1, skipped.dump()
    loops = skipped.timestep_loops()
    assert len(loops) == 1, skipped.dump()
    assert loops[0].min_iterations == loops[0].max_iterations == STEPS
