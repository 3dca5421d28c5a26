"""Extrapolation of the communication patterns of real applications (issue 31), on programs of
our own in tests/py/programs traced with real mpiexec runs at 2-12 ranks:

* extrap_strong.c: NPB-style strong scaling on a 1D decomposition: halo sizes 8*floor(1000/P),
  an Alltoall of floor(4096/P^2) doubles (FT), an Allreduce of 12000/P ints (IS) and a Bcast
  of floor(log2 P) + 1 ints (CG's reduction levels);
* extrap_ep.c: NPB EP's shape, one MPI_Comm_rank (a local call) per batch, floor(24/P)
  batches per rank, then the same reductions at every size;
* extrap_halo2d.c: a 5-point halo on MPI_Dims_create's non-square grid (2x2 and 3x2 have no
  interior ranks);
* extrap_rowcol.c: row and column communicators of that grid;
* extrap_transpose.c: NPB CG's transpose partner on square and twice-as-wide grids, with
  floor(N/X) doubles;
* extrap_lu.c: NPB LU's face exchanges, whose first column and row of ranks hold one grid line
  more: a division plus a constant; with 12 lines at 4, 6, 9 ranks no input splits unevenly
  and 10 ranks do (NPB BT and SP class W at 4, 9, 16 -> 25): refused;
* extrap_buckets.c: NPB IS's shape, Alltoallv counts that follow random keys (a fixed total of
  keys): refused, and extrapolated with ``even_counts=True`` (the counts made even first);
* extrap_residue.c: a single call whose fewest-term law (P) is wrong at the target, where a law of
  one more term ((r%3) + r) also fits and differs at a residue class no input shows: refused.

Every extrapolated trace must equal the real trace at the target on every rank (events,
arrays, communicators) and in its communication matrices, or be refused with the parameter
named. The 6, 12, 16 -> 20 halo case of the issue needs 20 ranks: it is proved in-process in
tests/cpp/extrapolate/extrapolate_programs_test.cpp.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import helpers
import numpy as np
import pytest

import scalatrace
from scalatrace.cli import main
from scalatrace.extrapolate import (
    ExtrapolationError,
    common_events_filter,
    common_events_trace,
    extrapolation_laws,
    snippet_filter,
)

PROGRAMS = Path(__file__).resolve().parent / "programs"


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """traced(program, n): the program's trace at n ranks (compiled and run once each)."""
    mpicc = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    if mpicc is None:
        pytest.fail("mpicc (MPICH) not found")
    root = tmp_path_factory.mktemp("extrap_programs")
    exes: dict[str, Path] = {}
    cache: dict[tuple[str, int], scalatrace.Trace] = {}

    def get(program: str, n: int, *args: str) -> scalatrace.Trace:
        if program not in exes:
            exe = root / program
            subprocess.run(
                [mpicc, "-O1", "-o", str(exe), str(PROGRAMS / f"{program}.c")],
                check=True,
                capture_output=True,
            )
            exes[program] = exe
        key = (program, n, *args)
        if key not in cache:
            out = root / f"{program}{n}{'_'.join(('', *args))}.sct"
            helpers.run_mpi(
                n, [exes[program], *args], env=helpers.collector_env(out=out), timeout=240
            )
            cache[key] = scalatrace.load(out)
        return cache[key]

    return get


def laws_of(trace: scalatrace.Trace) -> dict[tuple[str, str], set[str]]:
    table = extrapolation_laws(trace)
    out: dict[tuple[str, str], set[str]] = {}
    for _, row in table.iterrows():
        out.setdefault((row["where"].split("@")[0], row["parameter"]), set()).update(
            f.strip() for f in row["formula"].split(",")
        )
    return out


def test_strong_scaling_sizes_with_integer_division(traced):
    # 1000/9, 4096/81 and 12000/9 are not integers. At 7 ranks 1000, 4096 and 12000 split
    # unevenly too (1000 = 142*7 + 6, 4096 = 83*49 + 29, 12000 = 1714*7 + 2), and every rank got
    # the floor: C's integer division, found exactly. (3, 7, 8 would not do: the last rank's
    # Bcast bytes 8, 12, 16 at x = 2, 6, 7 are also 2*(r%3) + 2*x, taken with a warning over
    # 4*log2(P) + 4, 20 bytes at 9 ranks instead of 16.)
    small = [traced("extrap_strong", n) for n in (2, 7, 8)]
    big = scalatrace.extrapolate(small, ranks=9, timing=False)
    helpers.assert_same_run(big, traced("extrap_strong", 9))
    laws = laws_of(big)
    assert "8*floor(1000/P)" in laws[("Sendrecv", "Bytes")], laws
    assert "8*floor(4096/P^2)" in laws[("Alltoall", "Bytes")], laws
    assert "4*floor(12000/P)" in laws[("Allreduce", "Bytes")], laws
    assert "4*log2(P) + 4" in laws[("Bcast", "Bytes")], laws
    table = extrapolation_laws(big)
    assert table["status"].str.startswith("exact on").all(), table.to_string()
    # At 2, 4, 8 ranks every division is even: how the program splits a remainder (C's floor,
    # ceil, or NPB's balanced split with one more on the first ranks) is in no input, and they
    # differ at 9. Refused, naming the rival, never the floor guessed.
    small = [traced("extrap_strong", n) for n in (2, 4, 8)]
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=9, timing=False)
    first = str(err.value).splitlines()[0]
    assert "ambiguous: 8*floor(1000/P) and 8*ceil(1000/P)" in first, first
    assert "how the program splits the remainder is not in the inputs" in first, first


def test_uneven_split_no_input_shows_is_refused(traced):
    # extrap_lu.c with 12 grid lines of one double each: at 4, 6, 9 ranks (2x2, 3x2, 3x3) 12
    # splits evenly over X, Y = 2, 3; at 10 ranks (5x2) it does not (3, 3, 2, 2, 2, the first
    # columns holding one more, as NPB BT and SP split their 24 and 36 grid points over 5 cells
    # at 25 ranks). Every input value is also 8*floor(12/X), which gives 16 bytes to all: a wrong
    # trace before, refused now. At 8 ranks (4x2, even again) the trace is exact.
    small = [traced("extrap_lu", n, "12", "1") for n in (4, 6, 9)]
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=10, timing=False)
    first = str(err.value).splitlines()[0]
    assert "how the program splits the remainder is not in the inputs" in first, first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        big = scalatrace.extrapolate(small, ranks=8, timing=False)
    helpers.assert_same_run(big, traced("extrap_lu", 8, "12", "1"))


def test_strict_refuses_what_the_simplest_law_would_get_wrong(traced, tmp_path, capsys):
    # extrap_lu.c with 12 grid lines of 5 doubles: every input value (4, 6, 9 ranks) is also
    # 8*floor(60/X), and 60 splits evenly over the target's X = 5 where 12 does not. By default
    # the simplest law is taken with a warning naming the choice, and the trace is wrong at 10
    # ranks (the real run splits 12 lines); strict=True refuses it and names the laws.
    small = [traced("extrap_lu", n, "12", "5") for n in (4, 6, 9)]
    real = traced("extrap_lu", 10, "12", "5")
    with pytest.warns(UserWarning, match="simplest was taken"):
        chosen = scalatrace.extrapolate(small, ranks=10, timing=False)
    assert chosen.metadata["extrapolation_warnings"].strip()
    assert not np.array_equal(chosen.comm_matrix(), real.comm_matrix())
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=10, timing=False, strict=True)
    text = str(err.value)
    assert text.startswith("undecided:"), text
    assert "chosen over" in text and "Bytes" in text, text
    # The CLI's --strict: the refusal on stderr, exit status 1, no output file.
    paths = []
    for t in small:
        paths.append(tmp_path / f"lu{t.nranks}.sct")
        t.save(paths[-1])
    out = tmp_path / "big.sct"
    rc = main(["extrapolate", *map(str, paths), "--ranks", "10", "-o", str(out), "--strict"])
    stderr = capsys.readouterr().err
    assert rc == 1 and "undecided:" in stderr, stderr
    assert not out.exists()


def test_one_local_call_per_iteration_is_a_run_with_a_count_law(traced):
    # floor(24/P) batches; 24 = 4*5 + 4 at 5 ranks shows that every rank gets the floor, so at 9
    # (24 = 2*9 + 6) it is 2 everywhere. At 2, 3, 4 ranks (all even) it would be refused; at 2,
    # 3, 5 a count has no datatype size to fix its scale, and 4*floor(6/P) gives 0 at 9; at 3,
    # 4, 5 the counts 8, 6, 4 are linear in P (-4 at 9, refused).
    small = [traced("extrap_ep", n) for n in (2, 3, 4, 5)]
    big = scalatrace.extrapolate(small, ranks=9, timing=False)
    helpers.assert_same_run(big, traced("extrap_ep", 9))
    assert any("floor(" in f for f in laws_of(big)[("Other", "repeat count")])


def test_lossy_extrapolation_drops_local_calls_and_reports_the_share(traced):
    small = [traced("extrap_ep", n) for n in (2, 3, 4)]
    big = scalatrace.extrapolate(small, ranks=8, timing=False, lossy=True)
    helpers.assert_same_run(big, traced("extrap_ep", 8), drop_other=True)
    assert all(e.op != "Other" for r in range(big.nranks) for e in big.events(r, timing="none"))
    dropped = big.metadata["extrapolation_dropped"]
    # Per rank 2 local calls (Comm_size, and Init's own queries aside) plus one per batch:
    # the share is computed from the inputs' event counts.
    total_other = sum(
        1
        for t in small
        for r in range(t.nranks)
        for e in t.events(r, timing="none")
        if e.op == "Other"
    )
    total = sum(len(list(t.events(r, timing="none"))) for t in small for r in range(t.nranks))
    assert dropped.startswith(f"lossy: {total_other} of {total} input events"), dropped


def test_alltoallv_counts_that_follow_the_data_are_made_even(traced, tmp_path, capsys):
    small = [traced("extrap_buckets", n) for n in (2, 3, 4)]
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=6, timing=False)
    assert "Alltoallv" in str(err.value), str(err.value)[:2000]
    big = scalatrace.extrapolate(small, ranks=6, timing=False, even_counts=True)
    real = traced("extrap_buckets", 6)
    even_real, report = scalatrace.even_alltoall_counts(real)
    # The real run's counts follow its keys: the transform changed them, and only them.
    assert report["calls"] == 3 * 6 and report["changed_arrays"] > 0, report
    assert report["max_element_deviation"] > 0 and report["max_total_deviation"] > 0, report
    for r in range(6):
        before = list(real.events(r, timing="none"))
        after = list(even_real.events(r, timing="none"))
        assert [e.op for e in before] == [e.op for e in after]
        for x, y in zip(before, after):
            if x.op != "Alltoallv":
                assert (x.fields, x.arrays) == (y.fields, y.arrays)
            else:  # 14400 keys / 6 ranks / 6 peers, 4 bytes each
                assert y.arrays["SendCounts"] == [1600] * 6, y.arrays
                assert y.arrays["RecvCounts"] == [1600] * 6, y.arrays
                assert sum(x.arrays["SendCounts"]) == 9600  # each rank sends all its keys
    helpers.assert_same_run(big, even_real)
    note = big.metadata["extrapolation_even_counts"]
    assert note.startswith("lossy: the count arrays of 27 Alltoallv"), note  # 3 x (2+3+4)
    laws = laws_of(big)
    assert laws[("Alltoallv", "SendCounts element j")] == {"4*floor(14400/P^2)"}, laws
    # The CLI says the same.
    paths = []
    for n, t in zip((2, 3, 4), small):
        paths.append(str(tmp_path / f"b{n}.sct"))
        t.save(paths[-1])
    out = tmp_path / "b6.sct"
    assert main(["extrapolate", *paths, "--ranks", "6", "--even-counts", "-o", str(out)]) == 0
    assert "lossy: the count arrays of 27" in capsys.readouterr().out
    helpers.assert_same_run(scalatrace.load(out), even_real)


def test_halo2d_whose_small_grids_lack_interior_ranks(traced):
    # 2x2 and 3x2 have no interior rank; 3x3 has one: the interior role's laws are the ones its
    # neighbours' roles share at the same call sites (+-1, +-X), checked on its own values.
    small = [traced("extrap_halo2d", n) for n in (4, 6, 9)]
    big = scalatrace.extrapolate(small, ranks=12, timing=False)
    helpers.assert_same_run(big, traced("extrap_halo2d", 12))
    table = extrapolation_laws(big)
    assert table["status"].str.contains("shared from role").any(), table.to_string()


def test_halo2d_without_any_interior_input_is_refused_naming_the_role(traced):
    # 2x2, 3x2, 4x2: no input has an interior rank, the 3x3 target does.
    small = [traced("extrap_halo2d", n) for n in (4, 6, 8)]
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=9, timing=False)
    text = str(err.value)
    # First the first parameter of the identified 2D grid that has no law (Y is 2 at every input
    # and 3 at the target), then the role no input shows.
    assert text.startswith("cannot extrapolate: role x:"), text
    assert "(closest attempt: 2D grid (2x2, 3x2, 4x2)" in text, text
    assert "target rank 4 is in role x:mid y:mid which no input shows" in text, text


def test_row_and_column_communicators(traced):
    small = [traced("extrap_rowcol", n) for n in (4, 6, 9)]
    big = scalatrace.extrapolate(small, ranks=12, timing=False)
    helpers.assert_same_run(big, traced("extrap_rowcol", 12))
    laws = laws_of(big)
    assert "P (MPI_COMM_WORLD)" in laws[("communicator 0", "size")], laws
    assert "X" in laws[("communicator 2", "size")] and "Y" in laws[("communicator 3", "size")], laws


def test_refusal_names_the_parameter_site_role_and_values_first(traced):
    # At 2, 3, 4 ranks floor(log2 P) is 1, 1, 2: the Bcast's 4*(log2(P) + 1) bytes (8, 8, 12) fit
    # a two-term law on two distinct points only, which nothing checks; and 12000 splits evenly
    # over 2, 3, 4 ranks, not over 9: the Allreduce's bytes are ambiguous (floor or ceil), which
    # is more certain than under-determined. The refusal starts with that parameter: role, call
    # site, field, reason and one value per input size; the Bcast follows.
    small = [traced("extrap_strong", n) for n in (2, 3, 4)]
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=9, timing=False)
    first = str(err.value).splitlines()[0]
    assert first.startswith("cannot extrapolate: role x:"), first
    assert "Allreduce@site" in first and "Bytes: ambiguous: 4*floor(12000/P) and" in first, first
    assert "values 24000 (P=2 rank 0), 16000 (P=3 rank 0), 12000 (P=4 rank 0)" in first, first
    assert "Bcast@site" in str(err.value) and "Bytes: under-determined" in str(err.value)
    assert "(closest attempt: 1D grid (2, 3, 4)" in str(err.value)


def butterfly_messages(rank: int, size: int) -> list[tuple[str, int, int, int]]:
    """(op, relative peer, tag, bytes) of extrap_butterfly.c's point-to-point calls at one rank,
    straight from its loops: stage k exchanges with rank ^ 2^k."""
    stages = size.bit_length() - 1
    out = []
    for _ in range(3):
        for k in range(stages):
            peer = (rank ^ (1 << k)) - rank
            out += [
                ("Irecv", peer, k + 1, 8 * (4096 // size)),
                ("Send", peer, k + 1, 8 * (4096 // size)),
            ]
        for k in reversed(range(stages)):
            out.append(("Sendrecv", (rank ^ (1 << k)) - rank, 100 + k, 8))
    return out


def test_stage_loops_whose_partner_flips_bit_k(traced):
    # log2 P stages, each with the rank whose bit k differs (NPB CG's reductions): the event
    # counts change with the size, so each loop becomes a trip-count law and laws in the stage
    # index k. Extrapolated from real runs at 2, 4, 8 ranks to 16 and 32, every rank's calls
    # are the program's own (a real 16-rank run is in benchmarks/npb_extrapolation.md).
    small = [traced("extrap_butterfly", n) for n in (2, 4, 8)]
    helpers.assert_same_run(scalatrace.extrapolate(small, ranks=8, timing=False), small[-1])
    for target in (16, 32):
        big = scalatrace.extrapolate(small, ranks=target, timing=False)
        assert big.nranks == target
        for r in range(target):
            got = [
                (e.op, e.fields["Peer"], e.fields["Tag"], e.fields["Bytes"])
                for e in big.events(r, timing="none")
                if e.op in ("Irecv", "Send", "Sendrecv")
            ]
            assert got == butterfly_messages(r, target), f"rank {r} of {target}"
    laws = laws_of(big)
    # log2(X) on the 1D reading (X is P there), log2(P) on a 2D one: the same count.
    assert laws[("loop of 3 calls from Irecv", "trip count")] <= {"log2(P)", "log2(X)"}, laws
    assert "((r^2^k)-r)" in laws[("Irecv", "Peer")] or "((x^2^k)-x)" in laws[("Irecv", "Peer")], (
        laws
    )
    assert laws[("Irecv", "Tag")] == {"k + 1"}, laws
    assert laws[("Sendrecv", "Tag")] == {"n - k + 99"}, laws


def p2p_messages(trace: scalatrace.Trace, rank: int) -> list[tuple[str, int, int]]:
    """(op, relative peer, bytes) of a rank's MPI_Irecv and MPI_Send calls, in order."""
    return [
        (e.op, e.fields["Peer"], e.fields["Bytes"])
        for e in trace.events(rank, timing="none")
        if e.op in ("Irecv", "Send")
    ]


def dims_2d(size: int) -> tuple[int, int]:
    """MPI_Dims_create's 2D grid of ``size`` ranks, (X, Y) with X >= Y as close as they can be:
    the programs' own grid, written here independently of the library under test."""
    y_size = max(d for d in range(1, int(size**0.5) + 1) if size % d == 0)
    return size // y_size, y_size


def transpose_messages(rank: int, size: int, n_global: int) -> list[tuple[str, int, int]]:
    """(op, relative peer, bytes) of extrap_transpose.c's point-to-point calls at one rank:
    NPB CG's exch_proc on MPI_Dims_create's grid X x Y (X = c*Y, X fastest)."""
    x_size, y_size = dims_2d(size)
    c, x, y = x_size // y_size, rank % x_size, rank // x_size
    peer = (x // c) * x_size + c * y + x % c - rank
    return [(op, peer, 8 * (n_global // x_size)) for _ in range(3) for op in ("Irecv", "Send")]


def test_transpose_partner_of_square_and_non_square_grids(traced):
    # NPB CG's transpose exchange: 2x1, 2x2, 4x2 (square and twice as wide) -> 3x3: the partner
    # is one law, (transpose(r)-r), over both shapes; the bytes 8*floor(1200/X) are seen at two
    # values of X only (2, 2, 4), which checks the one unknown N since the datatype size is known.
    # A 2-term linear law with no point left to check it (-1200*X + 7200) also reproduces them:
    # the warning names it.
    small = [traced("extrap_transpose", n) for n in (2, 4, 8)]
    with pytest.warns(UserWarning, match=r"8\*floor\(1200/X\).* chosen over -1200\*X \+ 7200"):
        big = scalatrace.extrapolate(small, ranks=9, timing=False)
    helpers.assert_same_run(big, traced("extrap_transpose", 9))
    laws = laws_of(big)
    assert laws[("Irecv", "Peer")] == {"(transpose(r)-r)"}, laws
    assert laws[("Send", "Bytes")] == {"8*floor(1200/X)"}, laws
    # Beyond this machine's test sizes: 4x4 and 8x4 against the program's own formula.
    for target in (16, 32):
        with warnings.catch_warnings():  # at 32 (X = 8) the same choice is reported
            warnings.simplefilter("ignore", UserWarning)
            big = scalatrace.extrapolate(small, ranks=target, timing=False)
        for r in range(target):
            got = p2p_messages(big, r)
            assert got == transpose_messages(r, target, 1200), f"rank {r} of {target}"


def test_division_law_from_two_divisor_values_that_do_not_decide_is_refused(traced):
    # N = 1400: 700, 700, 350 doubles at X = 2, 2, 4 allow N = 1400 or 1401, which give 466 and
    # 467 at X = 3. Refused with both laws named, never one of them guessed.
    small = [traced("extrap_transpose", n, "1400") for n in (2, 4, 8)]
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=9, timing=False)
    first = str(err.value).splitlines()[0]
    assert "Bytes: ambiguous: 8*floor(1400/X) and 8*floor(1401/X)" in first, first
    assert "give 3728 and 3736 at the target" in first, first


def lu_messages(rank: int, size: int, n_global: int = 25) -> list[tuple[str, int, int]]:
    """(op, relative peer, bytes) of extrap_lu.c's point-to-point calls at one rank: NPB LU's
    subdomain split of an n x n plane on MPI_Dims_create's grid X x Y (X fastest)."""
    x_size, y_size = dims_2d(size)
    x, y = rank % x_size, rank // x_size
    nx = n_global // x_size + (1 if x < n_global % x_size else 0)
    ny = n_global // y_size + (1 if y < n_global % y_size else 0)
    faces = []
    if x > 0:
        faces.append((-1, 5 * ny))
    if x < x_size - 1:
        faces.append((1, 5 * ny))
    if y > 0:
        faces.append((-x_size, 5 * nx))
    if y < y_size - 1:
        faces.append((x_size, 5 * nx))
    return [
        (op, peer, 8 * count) for _ in range(3) for peer, count in faces for op in ("Irecv", "Send")
    ]


def test_lu_faces_are_a_division_plus_a_constant(traced):
    # NPB LU's split: with N = 25 the first column of ranks holds floor(25/X) + 1 columns, the
    # others floor(25/X), so a face is 40*floor(25/X) + 40 bytes in the first column and
    # 40*floor(25/X) elsewhere. Inputs 2x2, 3x2, 3x3 see X = 2, 3 only: the last column's
    # 8*floor(120/X) is a division checked on 2 divisor values (the datatype size known), and
    # the first column's values are that law plus 40 (one unknown, checked on the second value).
    # Y = 2, 2, 3: at a target whose Y is 2 or 3 the y-faces are read where an input was.
    small = [traced("extrap_lu", n) for n in (4, 6, 9)]
    with pytest.warns(UserWarning, match=r"read only at values of its features that an input had"):
        big = scalatrace.extrapolate(small, ranks=8, timing=False)
    helpers.assert_same_run(big, traced("extrap_lu", 8))
    laws = laws_of(big)
    assert {"8*floor(120/X)", "8*floor(120/X) + 40"} <= laws[("Send", "Bytes")], laws
    # Beyond this machine's test sizes: 4x3, 4x4 and 8x4 against the program's own formula.
    for target in (12, 16, 32):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            big = scalatrace.extrapolate(small, ranks=target, timing=False)
        for r in range(target):
            assert p2p_messages(big, r) == lu_messages(r, target), f"rank {r} of {target}"


def test_lu_faces_of_a_size_no_input_shows_are_refused(traced):
    # 2x2, 3x2, 4x2 never vary Y: the y-extent of a face at 3x3 is no input's. Refused, with the
    # parameter named first.
    small = [traced("extrap_lu", n) for n in (4, 6, 8)]
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=9, timing=False)
    first = str(err.value).splitlines()[0]
    assert first.startswith("cannot extrapolate: role "), first
    assert "Y is 2 at every input having this role" in first, first


def test_single_call_law_with_one_term_more_is_exact_or_refused_never_wrong(traced):
    # The last rank sends r % 3 + r bytes: at 2, 5, 8 ranks (r = 1, 4, 7, each with r % 3 = 1)
    # that is X as well as (r%3) + x; at 9 ranks (r = 8, r % 3 = 2, a residue class no input
    # shows) 9 or 10. The inputs do not decide: refused, never a wrong 9-rank trace (it was X, a
    # wrong trace with only a warning, before). The refusal leads with the ambiguity that decides
    # it, under the reading that fits every input value: the last rank's Send, whose peer (-x or
    # (r%3) - X) and size (X or (r%3) + x) both differ at the target; not with a finer reading's
    # under-determined peer of rank 0 (X - 1 on two points), which has fewer problems.
    small = [traced("extrap_residue", n) for n in (2, 5, 8)]
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=9, timing=False)
    text = str(err.value)
    first = text.splitlines()[0]
    assert first.startswith("cannot extrapolate: role x:hi-0, Send@site"), first
    assert ": ambiguous: " in first and "(r%3)" in first, first
    assert "both reproduce every input value but give" in first, first
    assert "under-determined" not in text, text
    assert (
        "Bytes: ambiguous: X and (r%3) + x both reproduce every input value but give 9 and 10"
        in text
    ), text
    # At 11 ranks the last rank (r = 10) is of class 1, as at every input: both laws give 11.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # rank 0's peer X - 1 is also 3*log2(P) - 2
        big = scalatrace.extrapolate(small, ranks=11, timing=False)
    assert p2p_messages(big, 10) == [("Send", -10, 11)]
    # 3, 4, 5 ranks (r = 2, 3, 4) decide it: (r%3) + x, equal to the real 9-rank trace.
    small = [traced("extrap_residue", n) for n in (3, 4, 5)]
    big = scalatrace.extrapolate(small, ranks=9, timing=False)
    helpers.assert_same_run(big, traced("extrap_residue", 9))
    assert laws_of(big)[("Send", "Bytes")] == {"(r%3) + x"}


def test_periodic_torus_with_snippet_filter(traced, tmp_path, capsys):
    # extrap_torus.c: NPB MG's pattern in small. A periodic 3D halo (MPI_Dims_create's grids
    # 3x2x1, 2x2x2, 3x3x1 at 6, 8, 9 ranks; 3x2x2 at 12) whose dimensions of size 2 make a
    # rank's - and + neighbours one rank, and a "coarse level" where only ranks with an even x
    # that has a right neighbour send and the odd ones receive (MG's idle ranks). Lossless, with
    # periodic laws alone or with the snippet alone: refused (never a wrong trace). Periodic laws
    # and the snippet of the halo's six calls: every kept event of every rank equals the real
    # 12-rank run's kept events, and the dropped share is reported exactly.
    small = [traced("extrap_torus", n) for n in (6, 8, 9)]
    real = traced("extrap_torus", 12)
    rank0 = list(small[-1].events(0, timing="none"))
    first = next(i for i, e in enumerate(rank0) if e.op == "Irecv")
    snippet = [f"{e.op}@{e.site}" for e in rank0[first : first + 6]]
    assert [s.split("@")[0] for s in snippet] == ["Irecv", "Irecv", "Send", "Send", "Wait", "Wait"]
    for kwargs in ({}, {"periodic": True}, {"snippet": snippet}):
        with pytest.raises(ExtrapolationError):
            scalatrace.extrapolate(small, ranks=12, timing=False, **kwargs)
    big = scalatrace.extrapolate(small, ranks=12, timing=False, snippet=snippet, periodic=True)
    assert big.metadata["extrapolation_grid"] == "3x2x2"
    sent = {}
    for name, trace, ref in (("extrapolated", big, big), ("real", real, small[-1])):
        matrix = np.zeros((12, 12), dtype=np.int64)
        for r in range(12):
            kept = snippet_filter(trace, r, snippet, reference=ref)
            if name == "extrapolated":
                assert len(kept) == len(list(big.events(r, timing="none")))
                sent.setdefault("got", {})[r] = kept
            else:
                got = sent["got"][r]
                assert len(got) == len(kept), (r, len(got), len(kept))
                for x, y in zip(got, kept):
                    assert (x.op, x.fields, x.arrays) == (y.op, y.fields, y.arrays), (r, x, y)
            for e in kept:
                if e.op == "Send":
                    matrix[r, r + e.fields["Peer"]] += e.fields["Bytes"]
        sent[name] = matrix
    assert np.array_equal(sent["extrapolated"], sent["real"])
    assert sent["real"].sum() > 0
    assert np.array_equal(big.comm_matrix(kind="collective"), real.comm_matrix(kind="collective"))
    # The share: every input event the filter leaves out, counted here with the same filter.
    total = dropped = 0
    for t in small:
        for r in range(t.nranks):
            n = len(list(t.events(r, timing="none")))
            total += n
            dropped += n - len(snippet_filter(t, r, snippet, reference=small[-1]))
    share = big.metadata["extrapolation_dropped"]
    assert f": {dropped} of {total} input events" in share, share
    assert "Recv" in share and "Other" in share, share  # the coarse level's receives, local calls
    laws = laws_of(big)
    assert {"((x+1)%X-x)", "((x+X-1)%X-x)", "X*((y+1)%Y-y)", "X*((y+Y-1)%Y-y)"} <= (
        laws[("Irecv", "Peer")] | laws[("Send", "Peer")]
    ), laws
    # Y is 2 at 4, 6 and 8 ranks (2x2x1, 3x2x1, 2x2x2) and 3 at 9 (3x3x1): the - and + neighbour
    # laws along y coincide at every input and differ at the target. Refused, never guessed.
    refused_ambiguous([traced("extrap_torus", n) for n in (4, 6, 8)], 9, snippet=snippet)
    # CLI
    paths = saved(small, tmp_path, "t")
    out = tmp_path / "t12.sct"
    argv = ["extrapolate", *paths, "--ranks", "12", "-o", str(out), "--no-timing"]
    assert main([*argv, "--periodic", "--snippet", ",".join(snippet)]) == 0
    assert "lossy (snippet" in capsys.readouterr().out
    assert scalatrace.load(out).nranks == 12
    with pytest.raises(scalatrace.ScalatraceError):
        scalatrace.extrapolate(small, ranks=12, snippet=["Irecv@99999"], periodic=True)
    with pytest.raises(scalatrace.ScalatraceError):
        scalatrace.extrapolate(small, ranks=12, snippet=["Bogus"], periodic=True)


def refused_ambiguous(traces: list[scalatrace.Trace], ranks: int, **kwargs: object) -> None:
    """Asserts that the periodic extrapolation of `traces` to `ranks` is refused as ambiguous."""
    with pytest.raises(ExtrapolationError, match="ambiguous"):
        scalatrace.extrapolate(traces, ranks=ranks, timing=False, periodic=True, **kwargs)


def saved(traces: list[scalatrace.Trace], directory: Path, prefix: str) -> list[str]:
    """The traces saved as <directory>/<prefix><ranks>.sct, for the command line."""
    paths = []
    for t in traces:
        paths.append(str(directory / f"{prefix}{t.nranks}.sct"))
        t.save(paths[-1])
    return paths


def kept_matrix(per_rank: list[list], n: int) -> np.ndarray:
    """Bytes sent from rank to rank by the Send events of per-rank event lists."""
    matrix = np.zeros((n, n), dtype=np.int64)
    for r, events in enumerate(per_rank):
        for e in events:
            if e.op == "Send":
                matrix[r, r + e.fields["Peer"]] += e.fields["Bytes"]
    return matrix


def test_coarse_level_ranks_dropped_as_uncommon_events(traced, tmp_path, capsys):
    # extrap_coarse.c: NPB MG's V-cycle in small on a periodic 2D grid (2x2, 3x2, 3x3 at 4, 6,
    # 9 ranks; 4x2 at 8): a fine halo exchange, a coarse-level exchange that only the ranks with
    # odd coordinates make (rank 3; rank 4; rank 4; ranks 5 and 7 at 8), through the same calls
    # with 32-byte faces and coarse neighbours (peer 0 where one coarse point spans a
    # dimension, +-2 along x at 4x2), then the fine exchange again. The coarse ranks have more
    # events: refused lossless. common_events=True drops, in every input, what not every rank
    # has: the coarse exchanges (the alignment keeps the second fine exchange, whose parameters
    # are the reference rank's, not the coarse one that comes first with the same calls); the
    # result equals, rank by rank and event by event, the real 8-rank run after the same drop.
    small = [traced("extrap_coarse", n) for n in (4, 6, 9)]
    real = traced("extrap_coarse", 8)
    for kwargs in ({}, {"periodic": True}):
        with pytest.raises(ExtrapolationError):
            scalatrace.extrapolate(small, ranks=8, timing=False, **kwargs)
    # Without periodic laws, rank 0's wrapped x neighbour (X - 1: 1, 2 at X = 2, 3) is read as
    # the grid neighbour one step back along x and up along y, with a warning: the same value.
    with pytest.warns(UserWarning, match=r"X - 1 \(the grid neighbour at \(-1, \+1\)"):
        plain = scalatrace.extrapolate(small, ranks=8, timing=False, common_events=True)
    big = scalatrace.extrapolate(small, ranks=8, timing=False, common_events=True, periodic=True)
    assert big.metadata["extrapolation_grid"] == plain.metadata["extrapolation_grid"] == "4x2"
    for r in range(8):
        calls = [
            [(e.op, e.fields, e.arrays) for e in t.events(r, timing="none")] for t in (plain, big)
        ]
        assert calls[0] == calls[1], r
    kept = common_events_filter(real)
    # The drop at the target: the coarse exchanges of ranks 5 and 7 (2 dimensions x 6 calls,
    # 3 iterations), nothing of the others.
    full = [list(real.events(r, timing="none")) for r in range(8)]
    assert [len(f) - len(k) for f, k in zip(full, kept)] == [0, 0, 0, 0, 0, 36, 0, 36]
    got = [list(big.events(r, timing="none")) for r in range(8)]
    for r in range(8):
        assert len(got[r]) == len(kept[r]), (r, len(got[r]), len(kept[r]))
        for x, y in zip(got[r], kept[r]):
            assert (x.op, x.fields, x.arrays) == (y.op, y.fields, y.arrays), (r, x, y)
    # The kept sends are the fine exchanges' (16 doubles), none of the coarse level's (4).
    assert {e.fields["Bytes"] for k in kept for e in k if e.op == "Send"} == {128}
    assert np.array_equal(kept_matrix(got, 8), kept_matrix(kept, 8))
    assert kept_matrix(kept, 8).sum() > 0
    assert np.array_equal(big.comm_matrix(kind="collective"), real.comm_matrix(kind="collective"))
    # The same as whole traces: the real run's common events compressed and merged.
    real_common, dropped = common_events_trace(real)
    assert dropped == 72
    helpers.assert_same_run(big, real_common)
    # The share, per input: rank 3 of 4, rank 4 of 6 and of 9 drop their coarse exchanges.
    share = big.metadata["extrapolation_dropped"]
    for t in small:
        before = sum(len(list(t.events(r, timing="none"))) for r in range(t.nranks))
        after = sum(len(k) for k in common_events_filter(t))
        assert f"{before - after} of {before} at {t.nranks} ranks" in share, share
        assert before - after == 36
    # Y is 2 at 4, 6 and 8 ranks: the periodic + and - laws along y coincide at every input and
    # differ at 9 ranks (3x3). Refused, never guessed.
    refused_ambiguous([traced("extrap_coarse", n) for n in (4, 6, 8)], 9, common_events=True)
    # CLI
    paths = saved(small, tmp_path, "c")
    out = tmp_path / "c8.sct"
    argv = ["extrapolate", *paths, "--ranks", "8", "-o", str(out), "--no-timing", "--periodic"]
    assert main([*argv, "--common-events"]) == 0
    assert "lossy (common events)" in capsys.readouterr().out
    # assume_constant keeps a size equal at every input out of every law: the 3D reading
    # 2x2x1, 3x2x1, 3x3x1 -> 2x2x2 (Z = 1 throughout) then explains the inputs as well and
    # differs at the target. Refused, naming both; with the grids given, exact again.
    assert main([*argv, "--common-events", "--assume-constant"]) == 1
    assert "two grids explain every input value" in capsys.readouterr().err
    grids = ["--input-dims", "2x2,3x2,3x3", "--dims", "4x2"]
    assert main([*argv, "--common-events", "--assume-constant", *grids]) == 0
    capsys.readouterr()
    assert scalatrace.load(out).nranks == 8


def test_multi_partition_cells_inverse_sizes_and_cell_coordinates(traced):
    # extrap_cells.c on a ring (NPB BT's multi-partition sweeps in small, 60 points split over
    # n = P cells): faces of 8*(60/n)^2*(n-1) bytes (28800/X - 28800/P^2 in inverse sizes),
    # forward sweep buffers of 40*(60/n+1)^2 bytes (3 terms: 144000/P^2 + 4800/X + 40), backward
    # ones of the stage's cell less the global boundary planes (NPB SP's, 8*(60/X - ends(c1))*
    # (60/X - ends(c2))), loops of n - 1 stages whose tags are the coordinates of the stage's
    # cell modulo n. At 2, 3, 4, 5 ranks the
    # target 6 divides 60, the least common multiple of the inputs' sizes, so the inputs show
    # that the program's size splits evenly there: exact against the real 6-rank run.
    small = [traced("extrap_cells", n, "60", "1") for n in (2, 3, 4, 5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        big = scalatrace.extrapolate(small, ranks=6, timing=False, periodic=True)
    helpers.assert_same_run(big, traced("extrap_cells", 6, "60", "1"))
    laws = laws_of(big)
    tags = laws[("Isend", "Tag")] | laws[("Irecv", "Tag")]
    assert any(" mod X)" in f for f in tags), tags
    assert any("/X" in f for f in laws[("Isend", "Bytes")]), laws[("Isend", "Bytes")]
    assert any("ends(" in f for f in laws[("Isend", "Bytes")]), laws[("Isend", "Bytes")]
    # Three sizes leave the 3-term buffer law unchecked; 7 does not divide 60, so the inputs
    # cannot show that 60 splits evenly over 7 cells: both refused, never a wrong trace.
    with pytest.raises(ExtrapolationError):
        scalatrace.extrapolate(small[:3], ranks=6, timing=False, periodic=True)
    with pytest.raises(ExtrapolationError) as err:
        scalatrace.extrapolate(small, ranks=7, timing=False, periodic=True)
    assert "does not divide 60" in str(err.value) or "unevenly" in str(err.value), str(err.value)


def test_multi_partition_rank_zero_call_and_loop_of_no_trips(traced):
    # Two patterns of NPB BT's binaries in extrap_cells.c ("rs"): rank 0 makes one local call
    # (MPI_Comm_rank) more than the others before a final barrier (BT's print_timestep), and
    # the backward sweep's first send has a call site of its own (BT at gfortran -O2), so its
    # loop (Irecv, Wait, Wait, Isend) runs n - 2 times: never at 2 ranks. Lossless, every event
    # of every rank of the real 6-rank run: rank 0 is read as a role of its own and the loop as
    # one of trip count X - 2, 0 at the 2-rank input.
    small = [traced("extrap_cells", n, "60", "1", "rs") for n in (2, 3, 4, 5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        big = scalatrace.extrapolate(small, ranks=6, timing=False, periodic=True)
    real = traced("extrap_cells", 6, "60", "1", "rs")
    helpers.assert_same_run(big, real)
    assert "rank 0 a role of its own" in big.metadata["extrapolation_roles"]
    assert [e.op for e in big.events(0, timing="none")].count("Other") == 3  # 2 + the extra one
    assert [e.op for e in big.events(1, timing="none")].count("Other") == 2
    trips = {f for (_, name), fs in laws_of(big).items() if name == "trip count" for f in fs}
    assert "X - 2" in trips, trips
