"""Call sites start at the user's code: the MPI library's frames (MPICH's Fortran bindings
libmpichfort, its C++ bindings) and the collector's are skipped, for naming and for matching.

Real mpiexec runs of a Fortran program (tests/py/programs/fortran_sites.f90, ``use mpi``) with
five call sites in four routines, and of the mpi_f08 ring.
"""

from __future__ import annotations

import collections
from pathlib import Path

import helpers
import pytest
from test_collector import compile_program

import scalatrace

MPI_LIBRARY_PREFIXES = ("libmpi", "libpmpi", "libscalatrace")


def traced(tmp_path: Path, name: str, ranks: int, **settings) -> scalatrace.Trace:
    exe = compile_program(name, tmp_path)
    out = tmp_path / f"{name}.sct"
    env = helpers.collector_env(out=out, quiet=1, **settings)
    helpers.run_mpi(ranks, [exe], env=env, timeout=120, cwd=tmp_path)
    return scalatrace.load(out)


def sites_by_op(trace: scalatrace.Trace, rank: int) -> dict[str, set[int]]:
    out: dict[str, set[int]] = collections.defaultdict(set)
    for e in trace.events(rank, timing="none"):
        out[e.op].add(e.site)
    return out


def assert_no_library_frames(trace: scalatrace.Trace) -> None:
    for site in trace.call_sites:
        module = Path(site.frames[0][0]).name
        assert not module.startswith(MPI_LIBRARY_PREFIXES), f"{site}: innermost frame in {module}"
        assert not site.symbol.lower().startswith(("pmpi_", "mpi_")), str(site)


@pytest.mark.parametrize("depth", [16, 1])
def test_fortran_call_sites_are_the_users_routines(tmp_path, depth):
    trace = traced(tmp_path, "fortran_sites", 3, stack_depth=depth)
    assert_no_library_frames(trace)
    symbols = {s.id: s.symbol for s in trace.call_sites}
    for rank in range(3):
        by_op = sites_by_op(trace, rank)
        # three Bcast call sites (two module procedures and the main program) stay distinct
        # even with one frame per site: the frame is the user's, not the binding's
        bcasts = sorted(symbols[s] for s in by_op["Bcast"])
        assert len(bcasts) == 3, bcasts
        assert "halo::exchange_left" in bcasts, bcasts
        assert "halo::exchange_right" in bcasts, bcasts
        assert any(s.startswith("MAIN") for s in bcasts), bcasts
        # two Allreduce call sites in one external subroutine
        allreduces = [symbols[s] for s in by_op["Allreduce"]]
        assert len(allreduces) == 2 and all(s.startswith("reduce_twice") for s in allreduces), (
            allreduces
        )
    # the per-site summary names the user's routines
    table = trace.summary(by="site")
    text = " ".join(str(w) for w in table["where"])
    assert "exchange_left" in text and "reduce_twice" in text and "pmpi_" not in text


def test_fortran_example_sites_are_named_after_the_program(tmp_path):
    # examples/fortran_ring.F90: every MPI call is in the main program
    out = tmp_path / "ring.sct"
    env = helpers.collector_env(out=out, quiet=1)
    helpers.run_mpi(2, [helpers.example_path("fortran_ring")], env=env, timeout=120, cwd=tmp_path)
    trace = scalatrace.load(out)
    assert_no_library_frames(trace)
    used = {e.site for e in trace.events(0, timing="none")}
    names = {trace.call_sites[s].symbol for s in used}
    assert names == {"MAIN__"}, names
    # distinct call statements stay distinct sites: Send, Recv, 2 Irecv, 2 Isend, Waitall,
    # Allreduce, Bcast, Reduce, Barrier, Init, Comm_rank, Comm_size, Finalize
    assert len(used) >= 15


def test_mpi_f08_call_sites_skip_the_binding(tmp_path):
    trace = traced(tmp_path, "f08_ring", 2)
    assert_no_library_frames(trace)
    by_op = sites_by_op(trace, 0)
    symbols = {s.id: s.symbol for s in trace.call_sites}
    for op in ("Isend", "Irecv", "Waitall", "Send", "Recv", "Allreduce", "Barrier"):
        assert len(by_op[op]) == 1, op
        assert symbols[next(iter(by_op[op]))] == "MAIN__", (op, symbols)
