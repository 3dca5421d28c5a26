#!/usr/bin/env python3
"""Generated coNCePTuaL against the real compiler (issue 33): for every example program, our own
halo / row-column / pipeline programs, NPB class S and LULESH, trace the program, generate
coNCePTuaL, compile it with the real compiler (c_mpi), run it at the traced size under the
collector and compare its communication with the original's (scalatrace.conceptual.
communication_differences). Prints one row per program and the totals as a Markdown table.

    .venv/bin/python benchmarks/conceptual_acceptance.py [--only NAME ...] [--timing]

--timing also times the original and the generated program at 2 ranks (median of 3 runs of
each, without the collector) for the programs that run at 2 ranks; the machine is shared, so the
load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codegen_timing import recorded_program_time  # noqa: E402  (benchmarks/)

import scalatrace
from scalatrace import conceptual
from scalatrace._paths import collector_library, mpiexec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "py"))
import helpers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("SCALATRACE_BUILD_DIR", ROOT / "build" / "py"))
EXAMPLES = BUILD / "examples"
PROGRAMS = ROOT / "tests" / "py" / "programs"
NPB = Path("/work/apps/npb-nostats/bin")
LULESH = Path("/work/apps/lulesh/lulesh2.0")

OWN_PROGRAMS = [
    ("extrap_halo2d", 4, []),
    ("extrap_rowcol", 6, []),
    ("pipelined_sweeps", 4, ["3", "4"]),
    ("ft_like", 4, []),
]


def run(
    n: int, argv: list[str], env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    cmd = [mpiexec(), "-n", str(n)]
    if env:
        cmd += ["env"] + [f"{k}={v}" for k, v in env.items()]
    return subprocess.run(cmd + argv, capture_output=True, text=True, timeout=timeout)


def cases(work: Path) -> list[tuple[str, int, list[str]]]:
    out = []
    for name, n, _ in helpers.EXAMPLE_RUNS:
        if (EXAMPLES / name).is_file():
            out.append((name, n, [str(EXAMPLES / name), "-i", "3"]))
    for name, n, extra in OWN_PROGRAMS:
        src = PROGRAMS / f"{name}.c"
        exe = work / "bin" / name
        exe.parent.mkdir(exist_ok=True)
        subprocess.run(["mpicc.mpich", "-O1", "-w", "-o", str(exe), str(src)], check=True)
        out.append((name, n, [str(exe), *extra]))
    for b in ("bt", "cg", "ep", "ft", "is", "lu", "mg", "sp"):
        if (NPB / f"{b}.S.x").is_file():
            out.append((f"npb-{b}.S", 4, [str(NPB / f"{b}.S.x")]))
    if LULESH.is_file():
        out.append(("lulesh", 8, [str(LULESH), "-s", "6", "-i", "10"]))
    return out


def check(
    name: str,
    n: int,
    argv: list[str],
    prefix: Path,
    work: Path,
    generator: str | None,
    run_timeout: float = 300,
) -> dict:
    row = {"name": name, "ranks": n, "accepted": False, "ran": False, "matched": False, "why": ""}
    d = work / name
    d.mkdir()
    original = d / "original.sct"
    proc = run(
        n,
        argv,
        {"LD_PRELOAD": str(collector_library()), "SCALATRACE_OUT": str(original)},
        timeout=600,
    )
    if proc.returncode != 0:
        row["why"] = "original failed to run"
        return row
    trace = scalatrace.load(original)
    if generator:  # another scalatrace (e.g. before a change) generates the program
        code = (
            "import sys, scalatrace; sys.stdout.write(scalatrace.load(sys.argv[1]).to_conceptual())"
        )
        gen = subprocess.run([generator, "-c", code, str(original)], capture_output=True, text=True)
        if gen.returncode != 0:
            row["why"] = "generation: " + (gen.stderr.strip().splitlines() or ["?"])[-1][:120]
            return row
        text = gen.stdout
    else:
        try:
            text = trace.to_conceptual()
        except scalatrace.ScalatraceError as exc:
            row["why"] = f"generation: {str(exc).splitlines()[0]}"
            return row
    (d / "bench.ncptl").write_text(text)
    row["notes"] = sum(1 for line in text.splitlines() if line.startswith("# note:"))
    try:
        conceptual.compile_conceptual(d / "bench.ncptl", d / "bench", prefix)
    except scalatrace.ScalatraceError as exc:
        row["why"] = str(exc).splitlines()[-1][:120]
        return row
    row["accepted"] = True
    generated = d / "generated.sct"
    env = {
        **conceptual.run_environment(prefix),
        "LD_PRELOAD": str(collector_library()),
        "SCALATRACE_OUT": str(generated),
    }
    try:
        proc = run(n, [str(d / "bench"), f"--logfile={d}/log-%p.txt"], env, timeout=run_timeout)
    except subprocess.TimeoutExpired:
        row["why"] = "generated program timed out (deadlock?)"
        return row
    if proc.returncode != 0:
        row["why"] = (
            "generated program failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:120]
        )
        return row
    row["ran"] = True
    problems = conceptual.communication_differences(trace, scalatrace.load(generated))
    row["matched"] = not problems
    row["why"] = problems[0][:160] if problems else ""
    return row


#: Programs timed at 2 ranks (--timing): examples that run at any size, and NPB kernels.
TIMED = [
    "ring",
    "stencil1d",
    "collectives",
    "pipeline",
    "npb-cg.S",
    "npb-ep.S",
    "npb-is.S",
    "npb-mg.S",
]


def logged_elapsed(log: Path) -> float:
    """Task 0's "Elapsed time (us)" from a coNCePTuaL log file, in seconds."""
    lines = [line for line in log.read_text().splitlines() if line and not line.startswith("#")]
    return float(lines[2].split(",")[0]) * 1e-6


def timing(
    name: str, argv: list[str], prefix: Path, work: Path, repeats: int = 3
) -> tuple[float, float, float, float] | None:
    """At 2 ranks, medians: wall time of the original and of its generated benchmark (no
    collector; the benchmark's includes the coNCePTuaL run time's start-up: timer checks), the
    original's recorded program time (slowest rank's compute + call times in the trace) and the
    benchmark's own logged "Elapsed time (us)" (task 0, from its first to its last SYNCHRONIZE)."""
    d = work / f"timing-{name}"
    d.mkdir()
    original = d / "original.sct"
    env = {"LD_PRELOAD": str(collector_library()), "SCALATRACE_OUT": str(original)}
    if run(2, argv, env, timeout=600).returncode != 0:
        return None
    (d / "bench.ncptl").write_text(scalatrace.load(original).to_conceptual())
    try:
        conceptual.compile_conceptual(d / "bench.ncptl", d / "bench", prefix)
    except scalatrace.ScalatraceError:
        return None

    logged: list[float] = []

    def median(cmd: list[str], env: dict | None = None) -> float:
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            run(2, cmd, env, timeout=600)
            times.append(time.perf_counter() - t)
            if env is not None:
                logged.append(logged_elapsed(d / "t-0.txt"))
        return statistics.median(times)

    bench = [str(d / "bench"), f"--logfile={d}/t-%p.txt"]
    wall_original = median(argv)
    wall_bench = median(bench, conceptual.run_environment(prefix))
    recorded = recorded_program_time(scalatrace.load(original))
    return wall_original, wall_bench, recorded, statistics.median(logged)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="program names to check")
    ap.add_argument(
        "--prefix",
        default=str(ROOT / "build" / "conceptual"),
        help="coNCePTuaL installation (cache)",
    )
    ap.add_argument(
        "--generator",
        help="python of another scalatrace installation to generate with (before/after)",
    )
    ap.add_argument(
        "--run-timeout", type=float, default=300, help="seconds before a run counts as hung"
    )
    ap.add_argument(
        "--timing", action="store_true", help="also time original vs generated at 2 ranks"
    )
    ap.add_argument("--skip-check", action="store_true", help="only the timing")
    ap.add_argument("--keep", help="keep the work files in this directory")
    args = ap.parse_args()
    prefix = conceptual.compiler(args.prefix, search_from=ROOT)
    work = Path(args.keep or tempfile.mkdtemp(prefix="ncptl-acceptance-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    print("| program | ranks | accepted | ran | matched | notes | first difference / reason |")
    print("|---|---|---|---|---|---|---|")
    for name, n, argv in cases(work):
        if (args.only and name not in args.only) or args.skip_check:
            continue
        row = check(name, n, argv, prefix, work, args.generator, args.run_timeout)
        rows.append(row)
        print(
            f"| {name} | {n} | {'yes' if row['accepted'] else 'no'} | {'yes' if row['ran'] else 'no'} | "
            f"{'yes' if row['matched'] else 'no'} | {row.get('notes', '')} | {row['why']} |",
            flush=True,
        )
    if args.timing:
        print(f"\nTiming at 2 ranks, median of 3 runs each (load before: {os.getloadavg()[0]:.1f})")
        print(
            "| program | original wall s | benchmark wall s | recorded program s | benchmark elapsed s | error |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for name, _, argv in cases(work):
            if name in TIMED and (not args.only or name in args.only):
                t = timing(name, argv, prefix, work)
                if t:
                    print(
                        f"| {name} | {t[0]:.3f} | {t[1]:.3f} | {t[2]:.4f} | {t[3]:.4f} | "
                        f"{100 * (t[3] - t[2]) / t[2]:+.1f}% |",
                        flush=True,
                    )
        print(f"(load after: {os.getloadavg()[0]:.1f})")
    acc = sum(r["accepted"] for r in rows)
    ran = sum(r["ran"] for r in rows)
    match = sum(r["matched"] for r in rows)
    print(
        f"\n{len(rows)} programs: {acc} accepted by the real compiler, {ran} ran, {match} matched"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
