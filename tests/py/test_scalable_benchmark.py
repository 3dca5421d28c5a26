"""Scalable benchmarks (issue 33 item 3, thesis §4.4.5): one program for every rank count.

Traces of programs of our own give one C program and one coNCePTuaL program each, which run
at sizes never traced, where their traces must equal the real program's trace:

* extrap_halo2d.c (a 5-point halo on MPI_Dims_create's grid plus an Allreduce, 3 iterations),
  traced at 4, 6, 9, 12 ranks, run at 16 and 25 (oversubscribed);
* extrap_strong.c (strong scaling: halo sizes 8*floor(1000/P), an Alltoall of floor(4096/P^2)
  doubles, an Allreduce of 12000/P ints, a Bcast of floor(log2 P) + 1 ints), traced at 2, 4, 8
  ranks, run at 9 and 16;
* the ring example (even and odd ranks in turn: roles by rank residue), traced at 4, 6, 8, run
  at 10;
* extrap_rowcol.c (row and column communicators by MPI_Comm_split, an Allreduce on the rows,
  a Bcast on the columns, a Sendrecv along the rows), traced at 4, 6, 9, 12, run at 16 and 20
  (coNCePTuaL at 16: a loop over the rows or columns, one collective per row's or column's task
  set);
* extrap_halo3d.c (a 7-point halo on MPI_Dims_create's 3D grid with 2 ms of computation per
  iteration), traced at 8, 12, 18 ranks, run at 24 (4x3x2); the generated computation is
  checked to be at least half of the traced program's busy wait;
* extrap_cart.c (MPI_Cart_create, periodic along one dimension, Sendrecv with the
  MPI_Cart_shift neighbours, an Allreduce on the Cartesian communicator), traced at 4, 6, 9, 12,
  run at 16 (coNCePTuaL: the Cartesian communicator is MPI_COMM_WORLD again);
* extrap_requests.c (persistent requests, a probe, an Iallreduce on a 1D chain), traced at 4,
  6, 8, run at 10: C; coNCePTuaL refuses the probe and runs the variant without it
  ("noprobe", noting the Iallreduce it writes as an Allreduce); the variant "completions" adds
  Testall, Waitsome, Waitany, Testany and Test (C; coNCePTuaL refuses them).

Compared: C: every rank's events (op, peers, tags, sizes, datatype sizes, reduction ops,
request references; local ``Other`` calls left out on both sides), the point-to-point and
collective communication matrices, the counts per op and the communicators (members, holders). coNCePTuaL (real compiler, c_mpi):
every rank's messages and collectives in order as the language writes them
(``scalatrace.conceptual.communication_differences``, the run time's own calls left out) and
the point-to-point matrix. A size whose grid has a position no input showed (7 ranks of the
halo: a 7x1 grid; 1 rank of the 1D codes; 5 ranks of the ring, an odd count; 7x1x1 of the 3D
halo) is refused with a message by both programs.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import helpers
import numpy as np
import pytest

import scalatrace
from scalatrace import conceptual
from scalatrace._scalable_laws import balanced_grid
from scalatrace.errors import ScalatraceError, UsageError

PROGRAMS = Path(__file__).resolve().parent / "programs"
#: program: (traced sizes, sizes the benchmark runs at, a size it must refuse and its grid)
CASES = {
    "extrap_halo2d": ((4, 6, 9, 12), (16, 25), (7, "7x1")),
    "extrap_strong": ((2, 4, 8), (9, 16), (1, "1")),
    # the ring example: even and odd ranks send first in turn (roles by rank residue mod 2,
    # boundary depth 2), so only even counts from 4 are supported
    "ring": ((4, 6, 8), (10,), (5, "5")),
    # row and column communicators of the 2D grid (Comm_split with colour y or x); in
    # coNCePTuaL a loop over the rows (columns) with one collective of each row's task set
    "extrap_rowcol": ((4, 6, 9, 12), (16, 20), (7, "7x1")),
    # a 3D halo with computation, traced on grids whose smallest size is 2 (2x2x2, 3x2x2,
    # 3x3x2): it runs at the sizes whose grids keep that 2 (24: 4x3x2), not at 27 (3x3x3 has a
    # rank inside every dimension, which no input showed) nor at 7 (7x1x1)
    "extrap_halo3d": ((8, 12, 18), (24,), (7, "7x1x1")),
    # persistent requests (Recv_init, Send_init, Startall, Request_free), a probed message and
    # an Iallreduce on a 1D chain: the coNCePTuaL generator refuses the probe (the language has
    # none) and writes the program without it
    "extrap_requests": ((4, 6, 8), (10,), (1, "1")),
    "extrap_requests_noprobe": ((4, 6, 8), (10,), (1, "1")),
    # the same with Testall, Waitsome, Waitany, Testany and Test (outcomes that do not depend
    # on timing): C only
    "extrap_requests_completions": ((4, 6, 8), (10,), (1, "1")),
    # MPI_Cart_create (periodic along one dimension), Cart_shift neighbours, an Allreduce on it
    "extrap_cart": ((4, 6, 9, 12), (16,), (7, "1x7")),
}
#: Sizes the coNCePTuaL benchmark runs at where fewer than the C one (test time: each run of
#: 20 oversubscribed tasks takes about 20 s under load).
CONCEPTUAL_TARGETS = {"extrap_rowcol": (16,)}
#: Programs whose coNCePTuaL benchmark carries a note (and a UserWarning) on what it changes.
CONCEPTUAL_NOTES = {"extrap_requests_noprobe": "MPI_Iallreduce is written as Allreduce"}
#: program: (source under programs/, its arguments)
PROGRAM_ARGUMENTS = {
    "extrap_requests_noprobe": ("extrap_requests", ["noprobe"]),
    "extrap_requests_completions": ("extrap_requests", ["completions"]),
}
#: program: the computation each rank does before its point-to-point calls (us, at least)
COMPUTES_AT_LEAST = {"extrap_halo3d": 3 * 2000}
#: Programs the coNCePTuaL generator refuses, with the reason it gives.
CONCEPTUAL_REFUSES = {
    "extrap_requests": "MPI_Probe: coNCePTuaL has no probe",
    "extrap_requests_completions": "MPI_Testall: coNCePTuaL's AWAIT COMPLETION waits for all",
}


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """traced(program, n): the real program's trace at n ranks (compiled and run once each)."""
    root = tmp_path_factory.mktemp("scalable")
    cache: dict[tuple[str, int], scalatrace.Trace] = {}

    def get(program: str, n: int) -> scalatrace.Trace:
        name, arguments = PROGRAM_ARGUMENTS.get(program, (program, []))
        source = PROGRAMS / f"{name}.c"
        argv = [root / name] if source.exists() else [helpers.example_path(name), "-i", "3"]
        argv += arguments
        if source.exists() and not argv[0].exists():
            subprocess.run(
                [helpers.mpicc(), "-O1", "-o", str(argv[0]), str(source)],
                check=True,
                capture_output=True,
            )
        if (program, n) not in cache:
            out = root / f"{program}{n}.sct"
            helpers.run_mpi(n, argv, env=helpers.collector_env(out=out), timeout=240)
            cache[(program, n)] = scalatrace.load(out)
        return cache[(program, n)]

    return get


def _calls(trace, rank: int) -> list:
    return [
        (e.op, e.fields, e.arrays) for e in trace.events(rank, timing="none") if e.op != "Other"
    ]


def _counts(trace) -> Counter:
    return Counter(
        e.op for r in range(trace.nranks) for e in trace.events(r, timing="none") if e.op != "Other"
    )


def _held(trace) -> list:
    return sorted((c.id, tuple(c.members), tuple(c.holders)) for c in trace.communicators)


def assert_same_communication(got, real) -> None:
    assert got.nranks == real.nranks
    for r in range(real.nranks):
        a, b = _calls(got, r), _calls(real, r)
        assert len(a) == len(b), f"rank {r}: {len(a)} calls generated, {len(b)} real"
        for i, (x, y) in enumerate(zip(a, b)):
            assert x == y, f"rank {r} call {i}: generated {x}, real {y}"
    for kind in ("p2p", "collective"):
        np.testing.assert_array_equal(got.comm_matrix(kind=kind), real.comm_matrix(kind=kind))
    assert _counts(got) == _counts(real)


@pytest.mark.parametrize("program", CASES)
def test_c_benchmark_runs_at_sizes_never_traced_and_traces_like_the_real_program(
    program, traced, tmp_path
):
    sizes, targets, (refused, grid) = CASES[program]
    text = scalatrace.scalable_benchmark([traced(program, n) for n in sizes], language="c")
    # no size is a literal of the program: the grid comes from the rank count
    assert "grid(P, " in text and "role_of" in text
    src = tmp_path / "bench.c"
    src.write_text(text)
    exe = tmp_path / "bench"
    subprocess.run([helpers.mpicc(), "-O1", "-o", str(exe), str(src), "-lm"], check=True)
    for n in targets:
        out = tmp_path / f"gen{n}.sct"
        helpers.run_mpi(n, [exe], env=helpers.collector_env(out=out), timeout=240)
        generated, real = scalatrace.load(out), traced(program, n)
        assert_same_communication(generated, real)
        assert _held(generated) == _held(real), "the same communicators, members and holders"
        if program in COMPUTES_AT_LEAST:
            _assert_computes(generated, COMPUTES_AT_LEAST[program])
    with pytest.raises(
        helpers.MPIRunError, match=f"{refused} ranks .grid {grid}. are not supported"
    ):
        helpers.run_mpi(refused, [exe], timeout=120)


def _assert_computes(trace, at_least_us: float) -> None:
    """Every rank computes at least half of ``at_least_us`` before its point-to-point calls
    (the traced program busy waits ``at_least_us``; on a loaded machine it takes longer, never
    shorter. The generated computation is a model fitted over the traced sizes and evaluated at
    a size never traced, which can fall short of the traced times by the fit's error: half is a
    margin for that; without the computation the benchmark would spend microseconds)."""
    for r in range(trace.nranks):
        us = sum(
            e.compute_ns
            for e in trace.events(r, timing="mean")
            if e.op in ("Irecv", "Isend", "Waitall")
        )
        us /= 1000.0
        assert us >= 0.5 * at_least_us, f"rank {r} computes {us:.0f} us, traced {at_least_us}"


@pytest.fixture(scope="module")
def ncptl():
    try:
        return conceptual.compiler(helpers.build_dir() / "conceptual", search_from=PROGRAMS)
    except FileNotFoundError as exc:
        pytest.skip(f"the coNCePTuaL compiler cannot be built here: {exc}")


@pytest.mark.parametrize("program", CASES)
def test_conceptual_benchmark_runs_at_sizes_never_traced_and_communicates_like_the_real_program(
    program, traced, ncptl, tmp_path
):
    sizes, targets, (refused, _) = CASES[program]
    targets = CONCEPTUAL_TARGETS.get(program, targets)
    inputs = [traced(program, n) for n in sizes]
    if program in CONCEPTUAL_REFUSES:
        with pytest.raises(ScalatraceError, match=CONCEPTUAL_REFUSES[program]):
            scalatrace.scalable_benchmark(inputs, language="conceptual")
        return
    if program in CONCEPTUAL_NOTES:
        with pytest.warns(UserWarning, match=CONCEPTUAL_NOTES[program]):
            text = scalatrace.scalable_benchmark(inputs, language="conceptual")
        assert "# note: " + CONCEPTUAL_NOTES[program] in text
    else:
        text = scalatrace.scalable_benchmark(inputs, language="conceptual")
    assert "num_tasks = " not in text, "no fixed task count"
    src = tmp_path / "bench.ncptl"
    src.write_text(text)
    exe = conceptual.compile_conceptual(src, tmp_path / "bench", ncptl, cflags=helpers.NCPTL_CFLAGS)
    # NCPTL_FAST_INIT=1: the run time skips its timer-quality checks (about 10 s per run,
    # longer oversubscribed); its delays still end at their target time.
    env = {**conceptual.run_environment(ncptl), "NCPTL_FAST_INIT": "1"}
    for n in targets:
        out = tmp_path / f"gen{n}.sct"
        helpers.run_mpi(
            n,
            [exe, f"--logfile={tmp_path}/log{n}-%p.txt"],
            env={**env, **helpers.collector_env(out=out)},
            timeout=240,
        )
        generated, real = scalatrace.load(out), traced(program, n)
        problems = conceptual.communication_differences(real, generated)
        assert not problems, "\n".join(problems)
        np.testing.assert_array_equal(
            generated.comm_matrix(kind="p2p"), real.comm_matrix(kind="p2p")
        )
        if program in COMPUTES_AT_LEAST:
            _assert_computes(generated, COMPUTES_AT_LEAST[program])
    # Every task fails the ASSERT: the first to exit makes mpiexec kill the others, whose
    # stderr lines can be cut short (seen once: "bench: bench: '"). The run time writes the
    # message to each task's log file before it writes to stderr, so the first task's log has it.
    with pytest.raises(helpers.MPIRunError) as refusal:
        helpers.run_mpi(
            refused, [exe, f"--logfile={tmp_path}/refused-%p.txt"], env=env, timeout=120
        )
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("refused-*.txt"))
    assert "the task count has a grid" in str(refusal.value) + logs, str(refusal.value)


def test_grids_are_the_ones_mpi_dims_create_makes(traced, tmp_path):
    """Extrapolation's grid at a size never traced is MPI_Dims_create's, in Python and in the
    generated C program: a code calling MPI_Dims_create at 72 ranks gets 9x8, not 12x6."""
    exe = tmp_path / "dims_create"
    subprocess.run(
        [helpers.mpicc(), "-O1", "-o", str(exe), str(PROGRAMS / "dims_create.c")],
        check=True,
        capture_output=True,
    )
    limit = 1200
    proc = helpers.run_mpi(1, [exe, str(limit)], timeout=120)
    mpi = {}
    for line in proc.stdout.splitlines():
        nd, n, *dims = map(int, line.split())
        mpi[(nd, n)] = dims
    assert len(mpi) == 2 * limit and mpi[(2, 72)] == [9, 8]
    for (nd, n), dims in mpi.items():
        assert balanced_grid(n, nd, "fastest_largest") == dims, (nd, n)
        assert balanced_grid(n, nd, "fastest_smallest") == dims[::-1], (nd, n)
    # The generated C benchmark's grid() function, compiled on its own.
    inputs = [traced("extrap_strong", n) for n in CASES["extrap_strong"][0]]
    text = scalatrace.scalable_benchmark(inputs, language="c")
    start = text.index("static inline void grid(")
    function = text[start : text.index("\n}\n", start) + 3]
    probe = tmp_path / "grid_probe.c"
    probe.write_text(
        "#include <mpi.h>\n#include <stdio.h>\n" + function + "int main(int argc, char **argv) {\n"
        "  MPI_Init(&argc, &argv);\n"
        f"  for (int nd = 2; nd <= 3; ++nd) for (long n = 1; n <= {limit}; ++n) {{\n"
        '    long d[3]; grid(n, nd, 0, d); printf("%d %ld", nd, n);\n'
        '    for (int i = nd - 1; i >= 0; --i) printf(" %ld", d[i]); printf("\\n"); }\n'
        "  MPI_Finalize();\n  return 0;\n}\n"
    )
    subprocess.run(
        [helpers.mpicc(), "-O1", "-o", str(tmp_path / "grid_probe"), str(probe)], check=True
    )
    probed = helpers.run_mpi(1, [tmp_path / "grid_probe"], timeout=120).stdout
    assert probed == proc.stdout


def test_bad_arguments_are_refused(traced):
    inputs = [traced("extrap_strong", n) for n in CASES["extrap_strong"][0]]
    with pytest.raises(UsageError, match="language must be"):
        scalatrace.scalable_benchmark(inputs, language="fortran")
    with pytest.raises(UsageError, match="list of scalatrace.Trace"):
        scalatrace.scalable_benchmark(inputs[0])
    with pytest.raises(ScalatraceError, match="too few sizes"):
        scalatrace.scalable_benchmark(inputs[:2])


def test_command_line_writes_the_scalable_benchmark(traced, tmp_path, capsys):
    from scalatrace.cli import main

    paths = []
    for n in CASES["extrap_strong"][0]:
        path = tmp_path / f"strong{n}.sct"
        traced("extrap_strong", n).save(path)
        paths.append(str(path))
    out = tmp_path / "bench.ncptl"
    assert main(["generate", "--scalable", "--lang", "conceptual", *paths, "-o", str(out)]) == 0
    assert "LET gx BE num_tasks" in out.read_text()
    assert "scalable, from 3 traces" in capsys.readouterr().out
    # several traces without --scalable, and too few sizes: one-line errors
    assert main(["generate", *paths, "-o", str(tmp_path / "x.c")]) != 0
    assert "several of one program with --scalable" in capsys.readouterr().err
    assert main(["generate", "--scalable", *paths[:2], "-o", str(tmp_path / "y.c")]) != 0
    assert "too few sizes" in capsys.readouterr().err


def test_loops_and_laws_as_expressions():
    from scalatrace._scalable_c import C_NAMES
    from scalatrace._scalable_laws import Loop, compress, render

    assert compress(list("abcabcabcd")) == (Loop(3, ("a", "b", "c")), "d")
    assert compress(list("aabaab")) == (Loop(2, (Loop(2, ("a",)), "b")),)
    assert render(("lin", (("X", 1, 1), ("1", -1, 1))), C_NAMES) == "(X - 1)"
    assert render(("lin", (("x", 1, 2), ("y*X", 3, 4))), C_NAMES) == "((2*x + 3*(y*X))/4)"
    assert render(("div", 8, 1000, "P^2"), C_NAMES) == "(8*(1000/(P*P)))"
    assert render(("div", 8, 10560, "X", 2640), C_NAMES) == "((8*(10560/X)) + 2640)"
    assert render(("div", 8, 160, "X", -40), C_NAMES) == "((8*(160/X)) - 40)"
    assert render(-3, C_NAMES) == "(-3)"
