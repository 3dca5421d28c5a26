"""Generated coNCePTuaL checked by the real coNCePTuaL compiler (LANL 1.5.1b, issue 33).

For every example of ``helpers.EXAMPLE_RUNS`` and our own halo, row/column and FT-like programs:
trace the program, generate coNCePTuaL, compile it with the real compiler's c_mpi back end, run
it at the traced size under the collector, and compare every rank's communication with the
original's (``scalatrace.conceptual.communication_differences``: point-to-point messages in
order with world peers, sizes and tags; collectives in order as Table 4.1 writes them, with
communicator sizes, sizes and roots where the language keeps them; the run time's own calls
left out). Cases the language cannot express carry a ``# note:`` in the program and a Python
warning, and are checked for exactly that.

The compiler is built once into ``<build dir>/conceptual`` with the tools' ``build.sh`` (about
two minutes) when it is not there; the test skips only if its sources are absent
(``../shared/tools/conceptual`` or ``$SCALATRACE_CONCEPTUAL_TOOLS``).
"""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import helpers
import pytest

scalatrace = pytest.importorskip("scalatrace")
from scalatrace import conceptual  # noqa: E402

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
ITERATIONS = "3"

#: Programs whose benchmark carries a note on what the language cannot say: waitsome's
#: MPI_Waitsome / Testsome / Testany / Waitany complete some of a task's requests, and AWAIT
#: COMPLETION waits for all of them: it is written only on the calls after which the traced
#: run had completed all of the task's requests.
EXPECTED_NOTES = {
    "waitsome": "MPI_Waitsome leaves some of the task's requests outstanding on some calls",
    "unaligned_collectives": "the program is written per rank (TASK r statements) between",
}
#: Programs whose benchmark runs several times: the waitsome trace changes from run to run
#: (Waitsome / Testsome outcomes, the number of Test calls) and its benchmark once hung for 1
#: trace in 10 (a rank's calls dropped where a merged node had presence for other ranks only);
#: its runs take under a second each. benchmarks/conceptual_waitsome_loop.py runs it 50 times.
RUNS = {"waitsome": 3}
#: Our programs: name, ranks, arguments. ``pipelined_sweeps`` (BT's pipelined solves in small)
#: has inner loops whose trip counts change per visit (runs such as 4, 1, 4, 1) and loops and
#: calls present only on some visits: the indices of their values are prefix sums of trip
#: counts and presence sequences. ``triangular_loops``: trip counts 1, 2, 3, ... per visit (an
#: arithmetic progression: the index is the triangular sum) and a reduction every third visit.
#: ``unaligned_collectives``: the same Allreduce sequence from different loops on different
#: ranks (LULESH's shape), written per rank between the collectives.
OWN_PROGRAMS = [
    ("extrap_halo2d", 4, []),
    ("extrap_rowcol", 6, []),
    ("ft_like", 4, []),
    ("pipelined_sweeps", 4, ["3", "4"]),
    ("triangular_loops", 3, ["6"]),
    ("unaligned_collectives", 3, ["3"]),
]


@pytest.fixture(scope="module")
def ncptl() -> Path:
    try:
        return conceptual.compiler(helpers.build_dir() / "conceptual", search_from=HERE)
    except FileNotFoundError as exc:
        pytest.skip(f"the coNCePTuaL compiler cannot be built here: {exc}")


def _trace(argv: list, nranks: int, out: Path) -> None:
    helpers.run_mpi(nranks, argv, env=helpers.collector_env(out=out), timeout=180)


def _generate_compile_run(trace, work: Path, nranks: int, ncptl: Path, runs: int = 1):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = trace.to_conceptual()
    source = work / "bench.ncptl"
    source.write_text(text)
    exe = conceptual.compile_conceptual(source, work / "bench", ncptl, cflags=helpers.NCPTL_CFLAGS)
    generated = []
    for k in range(runs):
        out = work / f"generated-{k}.sct"
        # NCPTL_FAST_INIT=1: the run time skips its timer-quality checks (about 10 s per run,
        # longer oversubscribed), which are outside the communication compared
        env = {
            **conceptual.run_environment(ncptl),
            "NCPTL_FAST_INIT": "1",
            **helpers.collector_env(out=out),
        }
        helpers.run_mpi(nranks, [exe, f"--logfile={work}/log-{k}-%p.txt"], env=env, timeout=180)
        generated.append(scalatrace.load(out))
    return text, generated, [str(w.message) for w in caught]


def _check(name: str, trace, text: str, generated: list, warned: list[str]) -> None:
    notes = [line for line in text.splitlines() if line.startswith("# note:")]
    assert len(warned) == len(notes), "every note of the program is also a Python warning"
    if name in EXPECTED_NOTES:
        assert any(EXPECTED_NOTES[name] in n for n in notes), notes
    for run in generated:
        problems = conceptual.communication_differences(trace, run)
        assert not problems, "\n".join(problems) + "\n" + text


@pytest.mark.parametrize("case", helpers.EXAMPLE_RUNS, ids=lambda c: f"{c[0]}-n{c[1]}")
def test_examples_compile_run_and_communicate_as_traced(case, example, ncptl, tmp_path):
    name, nranks, extra = case
    original = tmp_path / "original.sct"
    _trace([example(name), "-i", ITERATIONS, *extra], nranks, original)
    trace = scalatrace.load(original)
    text, generated, warned = _generate_compile_run(
        trace, tmp_path, nranks, ncptl, runs=RUNS.get(name, 1)
    )
    _check(name, trace, text, generated, warned)


@pytest.mark.parametrize("name,nranks,args", OWN_PROGRAMS)
def test_own_programs_compile_run_and_communicate_as_traced(name, nranks, args, ncptl, tmp_path):
    exe = tmp_path / name
    subprocess.run(
        ["mpicc.mpich", "-O1", "-w", "-o", str(exe), str(PROGRAMS / f"{name}.c")], check=True
    )
    original = tmp_path / "original.sct"
    _trace([exe, *args], nranks, original)
    trace = scalatrace.load(original)
    text, generated, warned = _generate_compile_run(trace, tmp_path, nranks, ncptl)
    _check(name, trace, text, generated, warned)


def test_sub_communicator_collectives_keep_their_task_sets(ncptl, tmp_path):
    exe = tmp_path / "rowcol"
    subprocess.run(
        ["mpicc.mpich", "-O1", "-w", "-o", str(exe), str(PROGRAMS / "extrap_rowcol.c")], check=True
    )
    _trace([exe], 6, tmp_path / "o.sct")
    trace = scalatrace.load(tmp_path / "o.sct")
    sizes = {len(c.members) for c in trace.communicators}
    assert sizes - {1, 6}, "the program makes row/column communicators"
    text = trace.to_conceptual()
    assert "REDUCE" in text and "SUCH THAT" in text
    for rank in range(6):
        coll = [
            op
            for op in conceptual.communication_sequence(trace, rank)
            if op[0] not in ("send", "recv")
        ]
        assert any(op[1] < 6 for op in coll), "collectives over row/column communicators"


def test_rejected_program_reports_the_compiler_message(ncptl, tmp_path):
    source = tmp_path / "bad.ncptl"
    source.write_text(
        'Require language version "1.5".\nall tasks t reduce 8 bytes to all tasks u\n'
    )
    with pytest.raises(
        scalatrace.ScalatraceError, match="only INTEGERS and DOUBLEWORDS can be reduced"
    ):
        conceptual.compile_conceptual(source, tmp_path / "bad", ncptl)


def test_comparison_finds_a_different_benchmark(example, ncptl, tmp_path):
    """The comparison is not vacuous: a ring traced at 3 ranks against a stencil's program."""
    _trace([example("ring"), "-i", ITERATIONS], 3, tmp_path / "ring.sct")
    _trace([example("ring"), "-i", "2"], 3, tmp_path / "ring2.sct")
    ring, shorter = scalatrace.load(tmp_path / "ring.sct"), scalatrace.load(tmp_path / "ring2.sct")
    assert conceptual.communication_differences(ring, ring) == []
    assert conceptual.communication_differences(ring, shorter)
