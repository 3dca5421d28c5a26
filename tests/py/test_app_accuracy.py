"""Simulator accuracy on application-like programs at 2 ranks (issue 34): a program of our own
with NPB MG's pattern (face exchanges of four sizes, Allreduce per level) and one with FT's
(Alltoall, Reduce) are traced at 2 ranks, simulated with ``calibrate()``d parameters and
compared with the real time the raw recording measured. The runs keep the collector's own time
in their traces (``SCALATRACE_OWN_TIME=compute``, docs/collector.md): the prediction is then of
the very run measured, whose waits hold the other rank's collector time. The bound is generous:
it catches gross errors (a missing cost, a doubled one), not the few percent that
``benchmarks/app_accuracy.py`` measures on NPB itself.

Timing needs the two ranks to run when they want to: the runs use SCHED_FIFO (``chrt``) when the
machine allows it, so that other jobs on a shared machine do not deschedule them; without it
the test is skipped (an oversubscribed or loaded run measures the scheduler, not MPI). A run
outside the bound is also skipped, naming the cause, when the ranks' compute for the same work
differs by more than 10 % (the cores ran at different speeds, which the merged trace keeps only
where the difference splits its timing groups); within the bound, or with the cores at one
speed, it is asserted."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import helpers
import pytest

scalatrace = pytest.importorskip("scalatrace")

PROGRAMS = Path(__file__).resolve().parent / "programs"


def _realtime_prefix() -> list[str]:
    chrt = shutil.which("chrt")
    if chrt is None:
        pytest.skip("chrt not found: cannot shield the timed run from other jobs")
    if subprocess.run([chrt, "-f", "10", "true"], capture_output=True).returncode != 0:
        pytest.skip("SCHED_FIFO not permitted here: cannot shield the timed run from other jobs")
    return [chrt, "-f", "10"]


def _compute_totals(source: scalatrace.RawRecording | scalatrace.Trace, nranks: int) -> list[float]:
    """Each rank's compute time after MPI_Init in ns, from a raw recording or a trace (both
    give ``rank_table``)."""
    totals = []
    for rank in range(nranks):
        table = source.rank_table(rank)
        totals.append(float(table["compute_ns"][table["op_name"] != "Init"].sum()))
    return totals


def _compute_spread(raw: Path) -> float:
    """How far apart the ranks' recorded compute totals are, relative to the largest: both
    programs give every rank the same work, so a spread means the cores ran at different
    speeds."""
    recording = scalatrace.read_raw(raw)
    totals = _compute_totals(recording, recording.nranks)
    return (max(totals) - min(totals)) / max(totals)


def _real_time(raw: Path) -> float:
    """Slowest rank, end of MPI_Init to MPI_Finalize, as recorded (compute + call durations)."""
    recording = scalatrace.read_raw(raw)
    spans = []
    for rank in range(recording.nranks):
        table = recording.rank_table(rank)
        names = table["op_name"]
        timed = (names != "Init") & (names != "Init_thread")
        in_call = timed & (names != "Finalize")
        spans.append(
            (table["compute_ns"][timed].sum() + table["duration_ns"][in_call].sum()) * 1e-9
        )
    return max(spans)


@pytest.mark.parametrize("program, args", [("mg_like", ["20"]), ("ft_like", [])])
def test_simulated_time_of_a_calm_two_rank_run_is_close(program, args, tmp_path):
    prefix = _realtime_prefix()
    exe = tmp_path / program
    subprocess.run(
        [helpers.mpicc(), "-O1", "-o", str(exe), str(PROGRAMS / f"{program}.c")], check=True
    )
    net = scalatrace.calibrate(np=2, reps=20)
    ratios, spreads = [], []
    for k in range(3):  # the median of three runs
        out, raw = tmp_path / f"t{k}.sct", tmp_path / f"raw{k}"
        subprocess.run(
            [*prefix, helpers.mpiexec(), "-n", "2", str(exe), *args],
            env=helpers.collector_env(raw=raw, out=out, own_time="compute"),
            check=True,
            capture_output=True,
            timeout=120,
        )
        real = _real_time(raw)
        sim = scalatrace.simulate(scalatrace.load(out), network=net).total_time
        ratios.append(sim / real)
        spreads.append(_compute_spread(raw))
    ratio = sorted(ratios)[1]
    if not 0.75 < ratio < 1.33 and sorted(spreads)[1] > 0.10:
        # The same work took one rank over 10 % longer: the two cores ran at different speeds
        # (seen on this VM: 3.04 against 3.51 ms of mg_like's compute, 2026-11-28). Ranks whose
        # compute differs by less than 20 % or 2 us per call, or whose distributions overlap,
        # share a timing group and get its mean unless the difference adds up to 1 % of the run
        # beyond chance (docs/algorithms.md, "Timing groups"), so the prediction may then miss
        # the slower core's excess: a property of the machine, not a missing or doubled cost,
        # which is what this test is for.
        pytest.skip(
            f"the ranks' compute for the same work differs by {sorted(spreads)[1]:.0%}: "
            f"cores at different speeds (ratios {ratios})"
        )
    assert 0.75 < ratio < 1.33, (ratios, spreads)


def test_a_rank_slower_at_every_call_keeps_its_time(tmp_path):
    """NPB EP at 2 ranks once predicted 7.5 % short: one rank computed 17 % less at every call,
    within the 20 % band in which the merge united the ranks' timing, and both got the mean.
    tests/py/programs/slow_rank.c has that pattern (rank 1 computes 15 % less per step, an
    Allreduce meets the ranks). The merged trace must give each rank its own compute total
    back, and the simulation the slower rank's time. Only the recording's own figures are
    compared (no timing across runs), so a loaded machine does not matter."""
    exe = tmp_path / "slow_rank"
    subprocess.run(
        [helpers.mpicc(), "-O1", "-o", str(exe), str(PROGRAMS / "slow_rank.c")], check=True
    )
    out, raw = tmp_path / "t.sct", tmp_path / "raw"
    helpers.run_mpi(2, [exe], env=helpers.collector_env(raw=raw, out=out, quiet=1), cwd=tmp_path)
    trace = scalatrace.load(out)
    recorded = _compute_totals(scalatrace.read_raw(raw), 2)
    expanded = _compute_totals(trace, 2)
    assert recorded[1] < 0.95 * recorded[0], f"the ranks computed alike: {recorded}"
    for rank in range(2):
        assert expanded[rank] == pytest.approx(recorded[rank], rel=0.03), (rank, expanded, recorded)
    result = scalatrace.simulate(trace)
    assert result.total_time * 1e9 >= 0.98 * recorded[0], (result.total_time, recorded)
