#!/usr/bin/env python3
"""Generated coNCePTuaL against the real compiler (issue 33): for every example program, our own
halo / row-column / pipeline programs, NPB class S and LULESH, trace the program, generate
coNCePTuaL, compile it with the real compiler (c_mpi), run it at the traced size under the
collector and compare its communication with the original's (scalatrace.conceptual.
communication_differences). Prints one row per program and the totals as a Markdown table.

    .venv/bin/python benchmarks/conceptual_acceptance.py [--only NAME ...] [--timing]

--timing also times the original and the generated program at 2 ranks for the programs of
TIMED: medians of 5 alternating runs of each, under the shared timing lock at SCHED_FIFO
(``flock /tmp/scalatrace-timing.lock chrt -f 50 mpiexec -n 2 ...``), both measured the same way:
the span from MPI_Init's return to MPI_Finalize's entry (slowest rank, the mpi_span.c shim, no
collector). The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codegen_timing import recorded_program_time  # noqa: E402  (benchmarks/)
from mpi_span import build_shim, reported_span  # noqa: E402  (benchmarks/)

import scalatrace
from scalatrace import conceptual
from scalatrace._files import write_text
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
    ("triangular_loops", 3, ["6"]),
    ("unaligned_collectives", 3, ["3"]),
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
    compile_timeout: float = 900,
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
    write_text(d / "bench.ncptl", text)
    row["notes"] = sum(1 for line in text.splitlines() if line.startswith("# note:"))
    try:
        conceptual.compile_conceptual(d / "bench.ncptl", d / "bench", prefix, compile_timeout)
    except scalatrace.ScalatraceError as exc:
        row["why"] = str(exc).splitlines()[-1][:120]
        return row
    except subprocess.TimeoutExpired:
        row["why"] = f"the compiler took more than {compile_timeout:.0f} s"
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


#: Programs timed at 2 ranks (--timing): examples that run at any size, with enough iterations
#: and computation for a program time of about a second, and NPB kernels as they are.
TIMED = {
    "ring": ["-i", "2000", "-c", "500"],
    "stencil1d": ["-i", "2000", "-c", "500"],
    "collectives": ["-i", "500", "-c", "500"],
    "pipeline": ["-i", "500", "-c", "500"],
    "npb-cg.S": None,
    "npb-ep.S": None,
    "npb-is.S": None,
}  # not npb-mg.S: not timed yet (its benchmark blocked until it was fixed), and a blocked run at
# SCHED_FIFO spins both cores until its timeout


def logged_elapsed(log: Path) -> float:
    """Task 0's "Elapsed time (us)" from a coNCePTuaL log file, in seconds."""
    lines = [line for line in log.read_text().splitlines() if line and not line.startswith("#")]
    return float(lines[2].split(",")[0]) * 1e-6


def timed_run(
    argv: list[str], env: dict, lock: str, fifo: int, span: bool = True, timeout: float = 120
) -> tuple[float, float]:
    """One run at 2 ranks under the timing lock (and SCHED_FIFO at priority ``fifo`` unless 0):
    the program's span (slowest rank, MPI_Init return to MPI_Finalize entry, from the
    mpi_span shim; 0 if ``span`` is False) and the wall time of mpiexec."""
    prefix = ["flock", lock] + (["chrt", "-f", str(fifo)] if fifo else [])
    cmd = prefix + [mpiexec(), "-n", "2", "env"] + [f"{k}={v}" for k, v in env.items()] + argv
    t = time.perf_counter()
    # In a session of its own, so that a run that blocks is killed with its MPI ranks (they
    # spin at SCHED_FIFO) and not only flock.
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as child:
        try:
            _, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise RuntimeError(f"{' '.join(cmd)} took more than {timeout} s") from None
    proc = subprocess.CompletedProcess(cmd, child.returncode, "", stderr)
    wall = time.perf_counter() - t
    reported = reported_span(proc.stderr)
    if not span and proc.returncode == 0:
        return 0.0, wall
    if proc.returncode != 0 or reported is None:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return reported, wall


def timing(
    name: str, argv: list[str], prefix: Path, work: Path, span_lib: Path, args: argparse.Namespace
) -> dict | None:
    """At 2 ranks, medians of ``args.repeats`` alternating runs of the original and of its
    generated benchmark, both measured the same way: the span from the return of MPI_Init to
    the entry of MPI_Finalize (slowest rank; the mpi_span shim, no collector). The benchmark
    runs with NCPTL_FAST_INIT=1 unless --slow-init: its run time then skips the timer-quality
    checks that ncptl_init makes right after MPI_Init (about 10 s, inside the span).
    Also reported: mpiexec wall times and the benchmark's own logged elapsed time (task 0,
    between its first and last SYNCHRONIZE)."""
    d = work / f"timing-{name}"
    d.mkdir()
    original = d / "original.sct"
    # Traced under the same conditions as the timed runs: the benchmark's COMPUTE times are
    # the traced ones, and a trace taken on a loaded machine has its computation stretched.
    env = {"LD_PRELOAD": str(collector_library()), "SCALATRACE_OUT": str(original)}
    timed_run(argv, env, args.lock, args.fifo, span=False)
    write_text(d / "bench.ncptl", scalatrace.load(original).to_conceptual())
    try:
        conceptual.compile_conceptual(d / "bench.ncptl", d / "bench", prefix)
    except scalatrace.ScalatraceError:
        return None
    bench = [str(d / "bench"), f"--logfile={d}/t-%p.txt"]
    bench_env = {**conceptual.run_environment(prefix), "LD_PRELOAD": str(span_lib)}
    if not args.slow_init:
        bench_env["NCPTL_FAST_INIT"] = "1"
    rows: dict[str, list[float]] = {k: [] for k in ("span0", "wall0", "span1", "wall1", "logged")}
    for _ in range(args.repeats):
        span, wall = timed_run(argv, {"LD_PRELOAD": str(span_lib)}, args.lock, args.fifo)
        rows["span0"].append(span)
        rows["wall0"].append(wall)
        span, wall = timed_run(bench, bench_env, args.lock, args.fifo)
        rows["span1"].append(span)
        rows["wall1"].append(wall)
        rows["logged"].append(logged_elapsed(d / "t-0.txt"))
    out = {k: statistics.median(v) for k, v in rows.items()}
    out["recorded"] = recorded_program_time(scalatrace.load(original))
    return out


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
        "--compile-timeout",
        type=float,
        default=900,
        help="seconds the coNCePTuaL compiler may take per program (LULESH's: minutes under load)",
    )
    ap.add_argument(
        "--timing", action="store_true", help="also time original vs generated at 2 ranks"
    )
    ap.add_argument("--skip-check", action="store_true", help="only the timing")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of each program")
    ap.add_argument(
        "--lock", default="/tmp/scalatrace-timing.lock", help="flock file shared by timed jobs"
    )
    ap.add_argument(
        "--fifo", type=int, default=50, help="SCHED_FIFO priority of timed runs (0: none)"
    )
    ap.add_argument(
        "--slow-init",
        action="store_true",
        help="let the coNCePTuaL run time check its timers at start (NCPTL_FAST_INIT unset)",
    )
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
        row = check(
            name, n, argv, prefix, work, args.generator, args.run_timeout, args.compile_timeout
        )
        rows.append(row)
        print(
            f"| {name} | {n} | {'yes' if row['accepted'] else 'no'} | {'yes' if row['ran'] else 'no'} | "
            f"{'yes' if row['matched'] else 'no'} | {row.get('notes', '')} | {row['why']} |",
            flush=True,
        )
    if args.timing:
        span_lib = build_shim(work)
        print(
            f"\nTiming at 2 ranks, medians of {args.repeats} alternating runs under "
            f"flock {args.lock}"
            + (f" chrt -f {args.fifo}" if args.fifo else "")
            + f" (load before: {os.getloadavg()[0]:.1f}; NCPTL_FAST_INIT="
            + ("unset" if args.slow_init else "1")
            + ")"
        )
        print(
            "| program | original span s | benchmark span s | span error | benchmark logged s | "
            "logged error | original wall s | benchmark wall s | recorded program s |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, _, argv in cases(work):
            if name not in TIMED or (args.only and name not in args.only):
                continue
            if TIMED[name] is not None:
                argv = [argv[0], *TIMED[name]]
            try:
                t = timing(name, argv, prefix, work, span_lib, args)
            except RuntimeError as exc:
                print(f"| {name} | failed: {str(exc)[:200]} |", flush=True)
                continue
            if t:
                err = 100 * (t["span1"] - t["span0"]) / t["span0"]
                logged_err = 100 * (t["logged"] - t["span0"]) / t["span0"]
                print(
                    f"| {name} | {t['span0']:.4f} | {t['span1']:.4f} | {err:+.1f}% | "
                    f"{t['logged']:.4f} | {logged_err:+.1f}% | {t['wall0']:.3f} | "
                    f"{t['wall1']:.3f} | {t['recorded']:.4f} |",
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
