#!/usr/bin/env python3
"""Extrapolation of NPB (3.4-MPI) traces: small runs extrapolated to a larger size, compared
event by event with the real trace at that size.

    python benchmarks/npb_extrapolation.py [--bin-dir /work/apps/npb/bin] [--class S]
        [--codes bt,cg,ep,ft,is,lu,mg,sp] [--sizes 4,8,16] [--square-sizes 4,9,16]
        [--target 32] [--square-target 25] [--timeout 900] [--steps N] [--simulate] [--out FILE]
        [--snippet Irecv,Irecv,Send,Send,Wait,Wait] [--periodic] [--input-dims 1x2x2,2x2x2,2x2x4]
        [--dims 2x4x4] [--weak L] [--common-events] [--assume-constant] [--work DIR]

For each code: traces at the input sizes and at the target (real mpiexec runs under the
collector; BT and SP need square rank counts, so they use --square-sizes and --square-target),
then `scalatrace.extrapolate` (lossless; where refused, lossy, then with Alltoallv counts made
even, `even_counts=True`, compared with the real trace made even the same way) and, where it
succeeds, the share of the target's events reproduced exactly (per rank, in order: op,
parameters, arrays; call sites and timing aside) and whether the communication matrices are
equal. Where it is refused, the first line of the refusal. The laws found are listed per code.
`--steps N` writes NPB's input file (inputlu.data, inputbt.data, inputsp.data: the class's grid
size, N time steps) into each run's directory, so that a larger class (W: LU 33^3, BT 24^3,
SP 36^3, which run at 25 and 32 ranks where class S does not) runs in minutes; the other codes
ignore it. `--snippet` extrapolates with the thesis' snippet filter instead (only the
snippet's call sequences and the collectives kept; the real trace compared on the events the
same filter keeps), `--periodic` with periodic neighbour laws, `--input-dims`/`--dims` with
the grids given. `--simulate` also simulates the extrapolated trace and the real trace at the target
with the same parameters (`scalatrace.simulate`, default network model) and reports both
times and their difference.
`--common-events` extrapolates with only the events every rank of an input has (the thesis' LCS
step, `common_events=True`; NPB MG's coarse-level exchanges of the ranks that hold a point there)
and compares with, and simulates beside, the real trace through the same step
(`scalatrace.extrapolate.common_events_trace`). `--assume-constant` takes a value equal at every
input as a constant also where a grid size equal at every input changes at the target (MG's
Z = 4 at 16, 32, 64 ranks, 8 at 128), with a warning per choice.
`--weak L` runs MG in weak scaling: L^3 points per rank on MG's own process grid (mg.f:
`pi(1) = 2^floor(log2(P)/3)`, `pi(2) = 2^floor((log2(P) - dx)/2)`, `pi(3) = P/(pi(1)*pi(2))`,
i.e. 1x2x2, 2x2x2, 2x2x4, 2x4x4 at 4, 8, 16, 32 ranks), the global grid L*pi per axis with
lt = log2 of its largest axis, `--steps` iterations (4 if not given), through an mg.input
written into each run's directory (MG reads it instead of its compiled class). The binary must
be sized for the largest grid and the same file at every size (call sites are matched across
the inputs by module and offset). Recipe (NPB 3.4-MPI: `fetch github:thaisacs/NPB3.4-MPI`,
`git --git-dir=<mirror> archive HEAD | tar -x -C /work/apps/npb-src`):

    cd /work/apps/npb-src/sys && make all && cd ../MG && ../sys/setparams mg S
    sed -i 's/lt_default=5/lt_default=6/; s/_default=32/_default=64/g' npbparams.h
    sed -i -e '/call init_timestep()/d' -e '/call begin_timestep()/d' \
        -e '/call end_timestep()/d' mg.f          # the thaisacs fork's kernel_stats calls
    cp ../common/print_results.f ../common/randi8.f ../common/timers.f .
    mkdir -p /work/apps/npb-weak/bin && mpif90 -O2 -o /work/apps/npb-weak/bin/mg.weak.x \
        mpinpb.f mg_data.f mg.f print_results.f randi8.f timers.f

(lt_default = 6: arrays for 64 points per axis, 16^3 per rank up to 64 ranks; -O2 because
gfortran 12's -O3 duplicates zran3's fourth MPI_Allreduce into both branches of an `if`, so
ranks of one run record different call sites for it.) Run with `--bin-dir
/work/apps/npb-weak/bin --class weak --codes mg --weak 16` (BENCHMARKS.md section 12, "MG in
weak scaling").
BT and SP on a grid of your own (`--class G60`: binaries bt.G60.x, sp.G60.x; `--steps N` writes
inputbt.data / inputsp.data with a 60^3 grid, class A's time step and N steps): NPB 3.4-MPI as
above, in a copy of BT/ and SP/ (with common/ and kernel_stats/), `../sys/setparams bt A` (sp A)
and `problem_size=60` in npbparams.h (BT's solve buffers are (problem_size/n + 1)^2 points, so
the compiled size must be the grid's), every source of the code's OBJS compiled with
`mpif90 -O2`, linked with print_results.f, timers.f and kernel_stats.c, arg_parse.c into
/work/apps/npb-g60/bin. 60 splits evenly over n = 2, 3, 4, 5, 6 cells per axis, so the inputs
4, 9, 16, 25 ranks show an even split that holds at the target 36
(`--square-sizes 4,9,16,25 --square-target 36`; BENCHMARKS.md section 12, "Session 8").
Runs with more ranks than cores are slow here (MPICH busy-polls): a 32-rank run of a class S
code can take minutes on 2 cores. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import scalatrace
from scalatrace.extrapolate import (
    ExtrapolationError,
    common_events_trace,
    extrapolation_laws,
    snippet_filter,
)

SQUARE = {"bt", "sp"}


# Grid sizes of the classes whose problem size NPB's input files may set (npbparams.h).
GRID = {
    ("lu", "S"): 12,
    ("lu", "W"): 33,
    ("bt", "S"): 12,
    ("bt", "W"): 24,
    ("sp", "S"): 12,
    ("sp", "W"): 36,
}
DT = {("lu", "S"): "0.5d0", ("lu", "W"): "1.5d-3", ("bt", "S"): "0.01d0", ("bt", "W"): "0.0008d0"}
DT.update({("sp", "S"): "0.015d0", ("sp", "W"): "0.0015d0"})
DT.update({("bt", "A"): "0.0008d0", ("sp", "A"): "0.0015d0", ("lu", "A"): "2.0d0"})


def mg_weak_input(n: int, local: int, steps: int) -> tuple[str, str]:
    """(file name, contents) of MG's input file for `n` ranks (a power of two) with local^3
    points per rank on MG's process grid (mg.f's setup) and `steps` iterations (4 if 0)."""
    log_p = n.bit_length() - 1
    dx = log_p // 3
    dy = (log_p - dx) // 2
    grid = [local << dx, local << dy, local << (log_p - dx - dy)]
    lt = max(grid).bit_length() - 1
    text = f" {lt}\n {grid[0]} {grid[1]} {grid[2]}\n {steps or 4}\n 0 0 0 0 0 0 0 0\n"
    return "mg.input", text


def input_file(code: str, klass: str, steps: int) -> tuple[str, str] | None:
    """(file name, contents) of the NPB input file running `steps` time steps, or None. A class
    `G<n>` (binaries bt.G60.x, sp.G60.x: NPB built with problem_size = n) runs an n^3 grid with
    class A's time step."""
    if klass.startswith("G") and klass[1:].isdigit():
        n, dt = int(klass[1:]), DT.get((code, "A"))
    else:
        n, dt = GRID.get((code, klass)), DT.get((code, klass))
    if n is None or dt is None:
        return None
    if code == "lu":
        text = (
            f"c\nc ipr inorm\n 1 {steps}\nc\nc itmax\n {steps}\nc\nc dt\n {dt}\nc\nc omega\n 1.2\n"
            f"c\nc tolrsd\n 1.0e-08 1.0e-08 1.0e-08 1.0e-08 1.0e-08\nc\nc nx ny nz\n {n} {n} {n}\n"
        )
        return "inputlu.data", text
    return f"input{code}.data", f"{steps}\n{dt}\n{n} {n} {n}\n"


def traced(
    binary: Path, n: int, work: Path, timeout: float, steps: int = 0, weak: int = 0
) -> tuple[scalatrace.Trace, float]:
    """The trace of `binary` at `n` ranks (cached in `work`) and the seconds to make or load
    it; `weak` > 0: MG with weak^3 points per rank (mg.input)."""
    code, klass = binary.name.split(".")[:2]
    made = None
    if weak and code == "mg":
        made = mg_weak_input(n, weak, steps)
    elif steps:
        made = input_file(code, klass, steps)
    suffix = f".steps{steps}" if steps and made else ""
    if weak and code == "mg":
        suffix = f".weak{weak}{suffix}"
    out = work / f"{binary.stem}{suffix}.{n}.sct"
    start = time.perf_counter()
    if not out.exists():
        run_dir = work / f"{binary.stem}{suffix}.{n}.run"
        run_dir.mkdir(parents=True, exist_ok=True)
        if made:
            (run_dir / made[0]).write_text(made[1])
        here = os.getcwd()
        os.chdir(run_dir)  # NPB reads its input file from the working directory
        try:
            scalatrace.trace([str(binary)], np=n, out=out, timeout=timeout)
        finally:
            os.chdir(here)
    return scalatrace.load(out), time.perf_counter() - start


def event_match(
    got: scalatrace.Trace,
    real: scalatrace.Trace,
    drop_other: bool,
    snippet: list[str] | None = None,
    reference: scalatrace.Trace | None = None,
) -> tuple[int, int, str]:
    """(events reproduced, events of the real trace, first difference). With a snippet, the
    real trace's events are those the snippet filter keeps (its sites matched to the
    reference's, the largest input)."""
    same = total = 0
    first = ""
    for r in range(real.nranks):
        a = list(got.events(r, timing="none")) if r < got.nranks else []
        if snippet:
            b = snippet_filter(real, r, snippet, reference=reference)
        else:
            b = list(real.events(r, timing="none"))
        b = [e for e in b if not (drop_other and e.op == "Other")]
        total += len(b)
        for i, y in enumerate(b):
            x = a[i] if i < len(a) else None
            if x is not None and x.op == y.op and x.fields == y.fields and x.arrays == y.arrays:
                same += 1
            elif not first:
                first = f"rank {r} event {i}: {x.op if x else 'none'} vs {y.op}"
                if x is not None and x.op == y.op:
                    diff = {k: (v, y.fields[k]) for k, v in x.fields.items() if v != y.fields[k]}
                    first += f" {diff}"
        if len(a) != len(b) and not first:
            first = f"rank {r}: {len(a)} events extrapolated, {len(b)} real"
    return same, total, first


def matrices_equal(got: scalatrace.Trace, real: scalatrace.Trace) -> bool:
    return all(
        got.nranks == real.nranks
        and np.array_equal(got.comm_matrix(kind=k), real.comm_matrix(kind=k))
        for k in ("p2p", "collective")
    )


def simulated(got: scalatrace.Trace, real: scalatrace.Trace) -> str:
    """Simulated run time of the extrapolated and the real trace with the same parameters:
    communication only (timing='none') and with the compute times (timing='mean'; the
    extrapolated trace's are the timing models' predictions)."""
    cells = []
    for timing in ("none", "mean"):
        t_got = scalatrace.simulate(got, timing=timing).total_time
        t_real = scalatrace.simulate(real, timing=timing).total_time
        diff = 100.0 * (t_got - t_real) / t_real if t_real else float("nan")
        cells.append(f"{t_got:.4g} s, {t_real:.4g} s, {diff:+.1f}%")
    return " | ".join(cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default="/work/apps/npb/bin")
    ap.add_argument("--class", dest="klass", default="S")
    ap.add_argument("--codes", default="bt,cg,ep,ft,is,lu,mg,sp")
    ap.add_argument("--sizes", default="4,8,16")
    ap.add_argument("--square-sizes", default="4,9,16")
    ap.add_argument("--target", type=int, default=32)
    ap.add_argument("--square-target", type=int, default=25)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--work", default="/tmp/npb_extrapolation")
    ap.add_argument("--steps", type=int, default=0, help="time steps of LU, BT, SP (input file)")
    ap.add_argument("--simulate", action="store_true", help="simulated time, extrapolated vs real")
    ap.add_argument(
        "--snippet",
        help="lossy with the snippet filter: calls such as Irecv,Irecv,Send,Send,Wait,Wait "
        "(Op or Op@site of the largest input); replaces the lossless/lossy pair",
    )
    ap.add_argument("--periodic", action="store_true", help="periodic neighbour laws")
    ap.add_argument(
        "--assume-constant",
        action="store_true",
        help="constants over multiples of a grid size that never varies at the inputs (warned)",
    )
    ap.add_argument(
        "--common-events",
        action="store_true",
        help="lossy: only the events every rank of an input has (LCS across ranks); the real "
        "trace compared through the same step",
    )
    ap.add_argument("--input-dims", help="the inputs' grids, e.g. 1x2x2,2x2x2,2x2x4")
    ap.add_argument("--dims", help="the target grid, e.g. 2x4x4")
    ap.add_argument(
        "--weak", type=int, default=0, help="MG in weak scaling, L^3 points per rank (mg.input)"
    )
    ap.add_argument("--out")
    a = ap.parse_args()
    snippet = [c for c in a.snippet.split(",") if c] if a.snippet else None
    grids = {}
    if a.input_dims:
        grids["input_dims"] = [[int(d) for d in g.split("x")] for g in a.input_dims.split(",")]
    if a.dims:
        grids["dims"] = [int(d) for d in a.dims.split("x")]
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    command = (
        f"python benchmarks/npb_extrapolation.py --class {a.klass} --codes {a.codes} "
        f"--sizes {a.sizes} --target {a.target} --square-sizes {a.square_sizes} "
        f"--square-target {a.square_target} --bin-dir {a.bin_dir}"
        + (f" --steps {a.steps}" if a.steps else "")
        + (" --simulate" if a.simulate else "")
        + (f" --snippet {a.snippet}" if a.snippet else "")
        + (" --periodic" if a.periodic else "")
        + (" --common-events" if a.common_events else "")
        + (" --assume-constant" if a.assume_constant else "")
        + (f" --input-dims {a.input_dims}" if a.input_dims else "")
        + (f" --dims {a.dims}" if a.dims else "")
        + (f" --weak {a.weak}" if a.weak else "")
        + f" --work {a.work}"
    )
    rows, laws_text, sims = [], [], []
    for code in a.codes.split(","):
        binary = Path(a.bin_dir) / f"{code}.{a.klass}.x"
        square = code in SQUARE
        sizes = [int(s) for s in (a.square_sizes if square else a.sizes).split(",")]
        target = a.square_target if square else a.target
        if not binary.is_file():
            rows.append(f"| {code.upper()} | – | – | binary {binary} not found | | | |")
            continue
        try:
            small = [traced(binary, n, work, a.timeout, a.steps, a.weak)[0] for n in sizes]
            real, seconds = traced(binary, target, work, a.timeout, a.steps, a.weak)
        except Exception as e:  # a run that fails is reported, the others go on
            rows.append(
                f"| {code.upper()} | {sizes} → {target} | – | run failed: {str(e).splitlines()[0]} | | | |"
            )
            continue
        # Lossless first; then dropping local calls (lossy); then with data-dependent Alltoallv
        # counts made even (NPB IS), alone and with the local calls dropped. With a snippet,
        # the snippet filter alone. The first mode that extrapolates is compared with the real
        # trace (through the same transforms).
        if snippet:
            modes = [("snippet", True, False)]
        elif a.common_events:
            modes = [("common events", False, False)]
        else:
            modes = [
                ("lossless", False, False),
                ("lossy", True, False),
                ("even counts", False, True),
                ("lossy, even counts", True, True),
            ]
        for mode, lossy, even in modes:
            if a.periodic:
                mode += ", periodic"
            start = time.perf_counter()
            try:
                big = scalatrace.extrapolate(
                    small,
                    ranks=target,
                    timing=a.simulate,
                    lossy=lossy and not snippet,
                    snippet=snippet,
                    periodic=a.periodic,
                    even_counts=even,
                    common_events=a.common_events,
                    assume_constant=a.assume_constant,
                    **grids,
                )
            except ExtrapolationError as e:
                rows.append(
                    f"| {code.upper()} | {sizes} → {target} | {mode} | refused: "
                    f"{str(e).splitlines()[0][:300]} | | | |"
                )
                continue
            secs = time.perf_counter() - start
            reference = scalatrace.even_alltoall_counts(real)[0] if even else real
            if a.common_events:
                reference, real_dropped = common_events_trace(real, lossy=lossy)
                print(
                    f"{code.upper()}: the real {target}-rank trace drops {real_dropped} of "
                    f"{sum(1 for r in range(real.nranks) for _ in real.events(r, timing='none'))} "
                    "events as not common",
                    flush=True,
                )
            same, total, first = event_match(
                big, reference, drop_other=lossy, snippet=snippet, reference=small[-1]
            )
            share = "; ".join(
                big.metadata[k]
                for k in ("extrapolation_dropped", "extrapolation_even_counts")
                if k in big.metadata
            )
            if a.simulate:
                sims.append(f"| {code.upper()} | {mode} | " + simulated(big, reference) + " |")
                if a.common_events:  # against the real run with its uncommon events too
                    sims.append(
                        f"| {code.upper()} | {mode}, vs the full real trace | "
                        + simulated(big, real)
                        + " |"
                    )
                if even:  # the evened trace against the real run's own counts
                    sims.append(
                        f"| {code.upper()} | {mode}, vs real counts | "
                        + simulated(big, real)
                        + " |"
                    )
            rows.append(
                f"| {code.upper()} | {sizes} → {target} ({big.metadata['extrapolation_grid']}) | {mode} | "
                f"{same}/{total} events ({100.0 * same / max(total, 1):.2f}%)"
                f"{'; first difference ' + first if first else ''}{'; ' + share if share else ''} | "
                f"{'equal' if matrices_equal(big, reference) else 'differ'} | {secs:.1f} s | "
                f"{seconds:.1f} s |"
            )
            table = extrapolation_laws(big)
            varying = table[~table["formula"].str.fullmatch(r"P \(MPI_COMM_WORLD\)")]
            laws_text.append(f"### {code.upper()} ({mode})\n")
            laws_text.append(
                f"{len(table)} law lines; distinct formulas: "
                + ", ".join(
                    sorted(
                        {f.strip() for f in ",".join(varying["formula"]).split(",") if f.strip()}
                    )[:40]
                )
                + "\n"
            )
            break  # the first mode that works is the one reported
        print(rows[-1], flush=True)
    text = "\n".join(
        [
            f"# Extrapolation of NPB class {a.klass}",
            "",
            f"Command: `{command}`",
            "",
            "| code | inputs → target | mode | events reproduced exactly | comm matrices "
            "| extrapolation time | target run traced and loaded (load only if cached) |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            *(
                [
                    "## Simulated time at the target (`scalatrace.simulate`, default LogGP)",
                    "",
                    "| code | mode | timing='none' (communication only): extrapolated, real, difference "
                    "| timing='mean' (modelled compute): extrapolated, real, difference |",
                    "|---|---|---|---|",
                    *sims,
                    "",
                ]
                if a.simulate
                else []
            ),
            "## Laws found",
            "",
            *laws_text,
        ]
    )
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
