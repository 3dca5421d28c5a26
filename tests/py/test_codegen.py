"""Benchmark generation (scalatrace.codegen): C closed under tracing, coNCePTuaL validity.

C back end, for EVERY example of ``helpers.EXAMPLE_RUNS``: trace the example (compressed trace
plus raw recording), generate C, compile it with mpicc, run it under the collector at the same
size, and check that every rank's recorded event sequence equals the original's (ops, peers,
tags, sizes, datatype sizes, communicators, roots, reduction ops, v-counts, created
communicators, request references, order; call sites and timing differ by construction,
``Other`` events are not generated), in the raw recordings and through the compressed traces'
cursors, and that the communication matrices and communicator tables are identical.
Completion outcomes (Test flags, Waitany/Waitsome indices) depend on timing: the generated
program counts those that differ and reports them on stderr; only on such ranks are outcome
fields and request null-ness left out (exactly as for the replay's fixed point).

Wildcards: with ``resolve_wildcards=True`` the wildcard example runs (no deadlock) and records
concrete senders where the original recorded MPI_ANY_SOURCE, everything else equal. A program
whose wildcard matching depended on timing gets a DeadlockError naming the events.

coNCePTuaL: golden files for small examples; the 1D stencil and an FT-like all-to-all program
give at most 30 lines. The real coNCePTuaL compiler checks every generated program in
``test_codegen_conceptual.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import helpers
import numpy
import pytest

scalatrace = pytest.importorskip("scalatrace")
from scalatrace import codegen  # noqa: E402
from scalatrace.errors import DeadlockError  # noqa: E402

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "data" / "codegen"
PROGRAMS = HERE / "programs"
CASES = helpers.EXAMPLE_RUNS
ITERATIONS = "3"


def _case_id(case):
    name, n, extra = case
    return f"{name}-n{n}"


def _mpicc() -> str:
    cc = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    if cc is None:
        pytest.fail("mpicc (MPICH) not found")
    return cc


def _mismatch_ranks(stderr: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(r"rank (\d+): outcome_mismatches (\d+)", stderr)}


def compare_recordings(
    original: dict, generated: dict, relaxed_ranks: set[int], wildcard_peers: bool = False
) -> list[str]:
    """Differences between two raw recordings, event by event per rank. wildcard_peers: a
    recorded MPI_ANY_SOURCE may have become a concrete sender (resolved wildcards)."""
    problems = []
    for rec, gen in zip(original["ranks"], generated["ranks"], strict=True):
        rank = rec["rank"]
        relaxed = rank in relaxed_ranks
        want = [helpers.normalized_event(e, relaxed) for e in rec["events"] if e["op"] != "Other"]
        got = [helpers.normalized_event(e, relaxed) for e in gen["events"] if e["op"] != "Other"]
        if len(want) != len(got):
            problems.append(
                f"rank {rank}: {len(got)} events generated, {len(want)} recorded: "
                f"missing {dict(Counter(e['op'] for e in want) - Counter(e['op'] for e in got))}, "
                f"extra {dict(Counter(e['op'] for e in got) - Counter(e['op'] for e in want))}"
            )
            continue
        for k, (a, b) in enumerate(zip(want, got)):
            if wildcard_peers:
                for key in ("peer", "peer2"):
                    if a.get(key) == helpers.K_ANY_SOURCE and b.get(key) not in (
                        None,
                        helpers.K_ANY_SOURCE,
                    ):
                        a = {**a, key: b[key]}
            if a != b:
                diff = {
                    key: (a.get(key), b.get(key))
                    for key in set(a) | set(b)
                    if a.get(key) != b.get(key)
                }
                problems.append(f"rank {rank} event {k} ({a['op']}): (recorded, generated) {diff}")
                break
        comms_rec = {(c["id"], tuple(c["members"])) for c in rec["comms"]}
        comms_gen = {(c["id"], tuple(c["members"])) for c in gen["comms"]}
        if comms_rec != comms_gen:
            problems.append(
                f"rank {rank}: communicator tables differ: {sorted(comms_rec ^ comms_gen)}"
            )
    return problems


class Generated:
    """An example traced, its C benchmark generated, compiled and run under the collector."""

    def __init__(self, work: Path, nranks: int):
        self.work = work
        self.nranks = nranks
        self.original = work / "original.sct"
        self.raw = work / "raw"
        self.source = work / "bench.c"
        self.exe = work / "bench"
        self.generated = work / "generated.sct"
        self.generated_raw = work / "generated-raw"
        self.stderr = ""


def _trace_example(exe: Path, nranks: int, extra, work: Path) -> tuple[Path, Path]:
    original, raw = work / "original.sct", work / "raw"
    helpers.run_mpi(
        nranks,
        [exe, "-i", ITERATIONS, *extra],
        env=helpers.collector_env(raw=raw, out=original),
        timeout=180,
    )
    return original, raw


def _build_and_trace(source_text: str, work: Path, nranks: int, tag: str) -> tuple[Path, Path, str]:
    source, exe = work / f"{tag}.c", work / tag
    source.write_text(source_text)
    codegen.compile_c(source, exe, mpicc=_mpicc())
    out, raw = work / f"{tag}.sct", work / f"{tag}-raw"
    proc = helpers.run_mpi(nranks, [exe], env=helpers.collector_env(raw=raw, out=out), timeout=180)
    return out, raw, proc.stderr


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    cache: dict = {}

    def get(case, example) -> Generated:
        key = _case_id(case)
        if key not in cache:
            name, nranks, extra = case
            exe = example(name)
            g = Generated(tmp_path_factory.mktemp(key), nranks)
            _trace_example(exe, nranks, extra, g.work)
            trace = scalatrace.load(g.original)
            g.generated, g.generated_raw, g.stderr = _build_and_trace(
                trace.to_c(), g.work, nranks, "bench"
            )
            cache[key] = g
        return cache[key]

    return get


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_generated_c_is_closed_under_tracing(case, generated, example):
    g = generated(case, example)
    relaxed = _mismatch_ranks(g.stderr)
    problems = compare_recordings(
        helpers.dump_raw(g.raw), helpers.dump_raw(g.generated_raw), relaxed
    )
    assert not problems, "\n".join(problems[:10])
    # the compressed traces say the same through their cursors
    original, new = scalatrace.load(g.original), scalatrace.load(g.generated)
    assert new.nranks == original.nranks
    for rank in range(original.nranks):
        r = rank in relaxed
        assert helpers.cursor_events(new, rank, r) == helpers.cursor_events(original, rank, r), (
            f"rank {rank}"
        )
    for kind in ("p2p", "collective"):
        for metric in ("bytes", "messages"):
            numpy.testing.assert_array_equal(
                new.comm_matrix(metric=metric, kind=kind),
                original.comm_matrix(metric=metric, kind=kind),
            )
    assert sorted((c.id, tuple(c.members), tuple(c.holders)) for c in new.communicators) == sorted(
        (c.id, tuple(c.members), tuple(c.holders)) for c in original.communicators
    )


def test_resolved_wildcards_run_without_deadlock(generated, example):
    case = next(c for c in CASES if c[0] == "wildcard_lu")
    g = generated(case, example)
    trace = scalatrace.load(g.original)
    assert codegen.resolve_wildcards(trace)[1], "the wildcard example has wildcards to resolve"
    out, raw, stderr = _build_and_trace(
        trace.to_c(resolve_wildcards=True), g.work, g.nranks, "resolved"
    )
    original, resolved = helpers.dump_raw(g.raw), helpers.dump_raw(raw)
    problems = compare_recordings(original, resolved, _mismatch_ranks(stderr), wildcard_peers=True)
    assert not problems, "\n".join(problems[:10])
    wild = [
        e
        for r in resolved["ranks"]
        for e in r["events"]
        if e.get("peer") == helpers.K_ANY_SOURCE and e["op"] in ("Recv", "Irecv", "Probe")
    ]
    assert wild == [], "the resolved benchmark still receives from MPI_ANY_SOURCE"
    assert not scalatrace._core.has_wildcards(scalatrace.load(out)._core)


def test_reductions_of_16_byte_and_pair_types_keep_their_type_and_op(tmp_path):
    """NPB FT's MPI_DOUBLE_COMPLEX sum and other predefined types that are not 1/2/4/8 bytes
    are regenerated with a predefined type of their size and their real op (no user op)."""
    exe = tmp_path / "reduce_types"
    subprocess.run([_mpicc(), "-O1", "-o", str(exe), str(PROGRAMS / "reduce_types.c")], check=True)
    original, raw = tmp_path / "o.sct", tmp_path / "raw"
    helpers.run_mpi(3, [exe], env=helpers.collector_env(raw=raw, out=original), timeout=120)
    _, gen_raw, stderr = _build_and_trace(scalatrace.load(original).to_c(), tmp_path, 3, "bench")
    recorded = helpers.dump_raw(raw)
    ops = {e.get("redop") for e in recorded["ranks"][0]["events"] if e["op"].endswith("educe")}
    assert len(ops) >= 4, ops  # sum, prod, max, minloc, maxloc recorded as themselves
    problems = compare_recordings(recorded, helpers.dump_raw(gen_raw), _mismatch_ranks(stderr))
    assert not problems, "\n".join(problems)


def test_timing_dependent_wildcards_are_reported_not_generated(tmp_path):
    exe = tmp_path / "wildcard_order"
    subprocess.run(
        [_mpicc(), "-O1", "-o", str(exe), str(PROGRAMS / "wildcard_order.c")], check=True
    )
    out = tmp_path / "t.sct"
    helpers.run_mpi(3, [exe], env=helpers.collector_env(out=out), timeout=120)
    trace = scalatrace.load(out)
    with pytest.raises(DeadlockError) as err:
        trace.to_conceptual()
    text = str(err.value)
    assert "rank 1 blocked in event #" in text and "MPI_Recv from relative -1" in text
    with pytest.raises(DeadlockError):
        trace.to_c(resolve_wildcards=True)
    trace.to_c()  # kept wildcards: the program is what was recorded


# ---- golden files and sizes ----

GOLDEN_CASES = [("stencil1d", 5), ("ring", 3), ("collectives", 4)]


@pytest.mark.parametrize("name,nranks", GOLDEN_CASES)
def test_conceptual_golden(name, nranks, example, tmp_path):
    original, _ = _trace_example(example(name), nranks, [], tmp_path)
    text = codegen.to_conceptual(scalatrace.load(original), computation=False)
    golden = GOLDEN / f"{name}-n{nranks}.ncptl"
    if os.environ.get("SCALATRACE_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()


def test_stencil_and_ft_like_programs_are_short(example, tmp_path):
    stencil, _ = _trace_example(example("stencil1d"), 5, [], tmp_path)
    text = scalatrace.load(stencil).to_conceptual()
    assert len(text.splitlines()) <= 60, text
    assert "FOR EACH i1 IN {0, ..., 2}" in text
    exe = tmp_path / "ft_like"
    subprocess.run([_mpicc(), "-O1", "-o", str(exe), str(PROGRAMS / "ft_like.c")], check=True)
    ft = tmp_path / "ft.sct"
    helpers.run_mpi(4, [exe], env=helpers.collector_env(out=ft), timeout=120)
    text = scalatrace.load(ft).to_conceptual()
    assert len(text.splitlines()) <= 60, text
    assert "MULTICAST" in text and "REDUCE" in text


def test_cli_generate(example, tmp_path):
    from scalatrace.cli import main

    original, _ = _trace_example(example("ring"), 3, [], tmp_path)
    assert (
        main(["generate", "--lang", "conceptual", str(original), "-o", str(tmp_path / "b.ncptl")])
        == 0
    )
    assert "Require language version" in (tmp_path / "b.ncptl").read_text()
    assert main(["generate", "--lang", "c", str(original), "-o", str(tmp_path / "b.c")]) == 0
    assert "MPI_Init" in (tmp_path / "b.c").read_text()
    assert (
        main(
            ["generate", "--lang", "c", str(tmp_path / "missing.sct"), "-o", str(tmp_path / "x.c")]
        )
        == 1
    )
