#!/usr/bin/env python3
"""Generated C benchmark vs original program: run time at 2 ranks.

For examples that compute between MPI calls (``-c MICROSECONDS`` busy computation): trace the
original once, generate its C benchmark (``Trace.to_c()``), compile it with ``mpicc -O2``, then
repeat, alternating,

* the original, untraced, and
* the generated benchmark, untraced,

and compare medians of two measures:

* **end to end**: ``mpiexec`` wall time of each;
* **program time**: the benchmark's own report (slowest rank, end of ``MPI_Init`` to
  ``MPI_Finalize``) vs the original's recorded program time (slowest rank: sum of the recorded
  mean compute and call times of its events in the trace).

Usage::

    python benchmarks/codegen_timing.py [--repeats 5] [--ranks 2] [--compute-us 2000]
        [--iterations 300] [--examples stencil1d ring ...] [--out benchmarks/results/codegen.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scalatrace
from scalatrace import _paths
from scalatrace._files import write_text
from scalatrace.codegen import compile_c

REPO = Path(__file__).resolve().parents[1]
DEFAULT_EXAMPLES = ["stencil1d", "ring", "collectives", "pipeline"]


def build_dir() -> Path:
    return Path(os.environ.get("SCALATRACE_BUILD_DIR", REPO / "build" / "py"))


def run(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def recorded_program_time(trace) -> float:
    """Slowest rank's sum of mean compute and call times (seconds)."""
    return max(
        sum(e.compute_ns + e.duration_ns for e in trace.events(r, timing="mean")) * 1e-9
        for r in range(trace.nranks)
    )


def measure(example: str, ranks: int, args: argparse.Namespace, work: Path) -> dict:
    exe = build_dir() / "examples" / example
    mpiexec = _paths.mpiexec()
    prog = [str(exe), "-i", str(args.iterations), "-c", str(args.compute_us)]
    trace_path = work / f"{example}.sct"
    env = {
        **os.environ,
        "LD_PRELOAD": str(_paths.collector_library()),
        "SCALATRACE_OUT": str(trace_path),
    }
    subprocess.run(
        [mpiexec, "-n", str(ranks), *prog], env=env, check=True, capture_output=True, timeout=900
    )
    trace = scalatrace.load(trace_path)
    source = work / f"{example}.c"
    write_text(source, trace.to_c())
    bench = compile_c(source, work / f"{example}-bench")
    original_wall, bench_wall, bench_program = [], [], []
    for _ in range(args.repeats):
        original_wall.append(run([mpiexec, "-n", str(ranks), *prog])[0])
        wall, out = run([mpiexec, "-n", str(ranks), str(bench)])
        bench_wall.append(wall)
        bench_program.append(max(float(x) for x in re.findall(r"elapsed ([0-9.]+) s", out)))
    recorded = recorded_program_time(trace)
    ow, bw, bp = (statistics.median(x) for x in (original_wall, bench_wall, bench_program))
    return {
        "example": example,
        "ranks": ranks,
        "original_wall": ow,
        "bench_wall": bw,
        "wall_error": 100 * (bw - ow) / ow,
        "recorded_program": recorded,
        "bench_program": bp,
        "program_error": 100 * (bp - recorded) / recorded,
    }


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--ranks", type=int, nargs="+", default=[2])
    p.add_argument("--compute-us", type=int, default=2000)
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--examples", nargs="+", default=DEFAULT_EXAMPLES)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for example in args.examples:
            for ranks in args.ranks:
                rows.append(measure(example, ranks, args, Path(tmp)))
                r = rows[-1]
                print(
                    f"{example} n={ranks}: wall {r['original_wall']:.3f} s vs {r['bench_wall']:.3f} s "
                    f"({r['wall_error']:+.1f}%), program {r['recorded_program']:.3f} s vs "
                    f"{r['bench_program']:.3f} s ({r['program_error']:+.1f}%)",
                    file=sys.stderr,
                )
    load = os.getloadavg()[0]
    lines = [
        "# Generated C benchmarks: run time vs the original",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.node()} "
        f"({os.cpu_count()} cores, {platform.machine()}), MPICH, median of {args.repeats} alternating runs, "
        f"load average {load:.1f} at the end.",
        "",
        "Command: `python benchmarks/codegen_timing.py " + " ".join(sys.argv[1:]) + "`",
        "",
        f"Examples run with `-i {args.iterations} -c {args.compute_us}` (busy computation between "
        "calls); the benchmark is `Trace.to_c()` of one traced run, compiled with `mpicc -O2`.",
        "",
        "| example | ranks | original wall s | benchmark wall s | error | recorded program s | benchmark program s | error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['example']} | {r['ranks']} | {r['original_wall']:.3f} | {r['bench_wall']:.3f} | "
            f"{r['wall_error']:+.1f}% | {r['recorded_program']:.3f} | {r['bench_program']:.3f} | "
            f"{r['program_error']:+.1f}% |"
        )
    lines += [
        "",
        "End to end = `mpiexec` wall time of the untraced original and of the benchmark. Program = "
        "slowest rank from the end of `MPI_Init` to `MPI_Finalize`: for the original the sum of the "
        "recorded mean compute and call times in the trace (a traced run), for the benchmark its own "
        "report. Goal: within 5% at 2 ranks.",
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        write_text(args.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
