#!/usr/bin/env python3
"""Replay timing accuracy: replay wall time vs the original program's wall time.

For examples that compute between MPI calls (``-c MICROSECONDS`` busy computation), at 4 and 9
ranks: trace the original once (compressed trace + raw recording), then repeat

* the original, untraced (end-to-end ``mpiexec`` wall time), and
* ``scalatrace-replay`` of the trace (end-to-end wall time, and its own report),

and compare medians. Two measures:

* **program time**: the original's time from the end of ``MPI_Init`` to ``MPI_Finalize`` (the
  slowest rank; sum of recorded compute and call durations in the raw recording of the traced
  run) vs the replay's ``total_time_s`` (same span, slowest rank, from its report);
* **end to end**: ``mpiexec`` wall time of the untraced original vs of the replay (which also
  reads the trace and gathers its report).

Usage::

    python benchmarks/replay_timing.py [--repeats 5] [--compute-us 1000] [--iterations 20]
        [--ranks 4 9] [--examples stencil2d ring ...] [--timing spread|mean|sample] [--lossy T]
        [--out benchmarks/results/replay.md]

Needs the package built with examples (``make build``); ``SCALATRACE_BUILD_DIR`` points at the
build dir (default ``build/py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import scalatrace
from scalatrace import _paths
from scalatrace._files import write_text
from scalatrace.replay import replay

REPO = Path(__file__).resolve().parents[1]
DEFAULT_EXAMPLES = ["stencil1d", "stencil2d", "ring", "collectives", "pipeline", "nonblocking_coll"]


def build_dir() -> Path:
    return Path(os.environ.get("SCALATRACE_BUILD_DIR", REPO / "build" / "py"))


def run_wall(cmd: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed


def program_time_from_raw(raw_dir: Path) -> float:
    """Slowest rank's span from the end of MPI_Init to the start of MPI_Finalize."""
    dump = subprocess.run(
        [str(_paths.tool("scalatrace-dump")), "raw", str(raw_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    spans = []
    for rank in json.loads(dump.stdout)["ranks"]:
        total = 0
        for ev in rank["events"]:
            if ev["op"] in ("Init", "Init_thread"):
                continue
            total += ev["compute_ns"]
            if ev["op"] != "Finalize":
                total += ev["duration_ns"]
        spans.append(total * 1e-9)
    return max(spans)


def bench_case(name: str, nranks: int, args: argparse.Namespace, work: Path) -> dict:
    if args.apps_dir:  # a real application (e.g. NPB class S), run without arguments
        exe = Path(args.apps_dir) / name
        argv = [str(exe)]
    else:
        exe = build_dir() / "examples" / name
        argv = [str(exe), "-i", str(args.iterations), "-c", str(args.compute_us)]
    if not exe.is_file():
        raise FileNotFoundError(f"program {exe} not built")
    mpiexec = _paths.mpiexec()
    trace_path, raw = work / f"{name}-{nranks}.sct", work / f"{name}-{nranks}-raw"
    raw.mkdir()
    env = dict(os.environ, SCALATRACE_OUT=str(trace_path), SCALATRACE_RAW=str(raw))
    run_wall(
        [mpiexec, "-genv", "LD_PRELOAD", str(_paths.collector_library()), "-n", str(nranks), *argv],
        env=env,
    )
    original_program = program_time_from_raw(raw)
    replayed = trace_path if args.input == "sct" else raw
    if args.lossy is not None:  # every point-to-point field past the threshold a histogram
        replayed = work / f"{name}-{nranks}-lossy.sct"
        scalatrace.load(trace_path).to_lossy(args.lossy).save(replayed)

    orig_wall, rep_wall, rep_program = [], [], []
    tool = str(_paths.tool("scalatrace-replay"))
    for k in range(args.repeats):
        orig_wall.append(run_wall([mpiexec, "-n", str(nranks), *argv]))
        report = work / "report.json"
        timing = ["--timing", args.timing, "--seed", str(k)]
        rep_wall.append(
            run_wall(
                [mpiexec, "-n", str(nranks), tool, str(replayed), "--report", str(report), *timing]
            )
        )
        rep_program.append(json.loads(report.read_text())["total_time_s"])
    # One more replay through the Python API (sanity: same order of magnitude).
    api = replay(replayed, timing=args.timing)
    return {
        "example": name,
        "ranks": nranks,
        "orig_program": original_program,
        "replay_program": statistics.median(rep_program),
        "orig_wall": statistics.median(orig_wall),
        "replay_wall": statistics.median(rep_wall),
        "api_program": api.total_time,
    }


def err(a: float, b: float) -> float:
    return 100.0 * (a - b) / b


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--compute-us", type=int, default=1000)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--ranks", type=int, nargs="+", default=[4, 9])
    p.add_argument("--examples", nargs="+", default=DEFAULT_EXAMPLES)
    p.add_argument(
        "--input",
        choices=("sct", "raw"),
        default="sct",
        help="replay the compressed trace (default) or the raw recording directory",
    )
    p.add_argument(
        "--timing",
        choices=("mean", "sample", "spread", "none"),
        default="mean",
        help="scalatrace-replay --timing (seed k for repeat k); default: the replay's default",
    )
    p.add_argument(
        "--apps-dir",
        default=None,
        help="--examples name programs in this directory, run without arguments "
        "(e.g. /work/apps/npb-nostats/bin with cg.S.x mg.S.x)",
    )
    p.add_argument(
        "--lossy",
        type=int,
        default=None,
        metavar="T",
        help="replay the trace made lossy with threshold T (1: every point-to-point field; "
        "docs/lossy.md), probabilistically with seed k for repeat k",
    )
    p.add_argument("--out", default=None, help="write the Markdown table here (else stdout only)")
    args = p.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="scalatrace-bench-replay-") as tmp:
        for name in args.examples:
            for n in args.ranks:
                case_dir = Path(tmp) / f"{name}-{n}"
                case_dir.mkdir()
                row = bench_case(name, n, args, case_dir)
                rows.append(row)
                print(
                    f"{name:>18} n={n}: program {row['orig_program']:.4f}s -> replay "
                    f"{row['replay_program']:.4f}s ({err(row['replay_program'], row['orig_program']):+.1f}%), "
                    f"end-to-end {row['orig_wall']:.3f}s -> {row['replay_wall']:.3f}s "
                    f"({err(row['replay_wall'], row['orig_wall']):+.1f}%)",
                    flush=True,
                )

    cmd = "python benchmarks/replay_timing.py " + " ".join(sys.argv[1:])
    lines = [
        "# Replay timing accuracy",
        "",
        f"Command: `{cmd.strip()}` (repeats {args.repeats}, `-i {args.iterations} -c {args.compute_us}`, "
        f"medians; replaying the {'compressed trace' if args.input == 'sct' else 'raw recording'} "
        f"with `--timing {args.timing}`"
        f"{'' if args.lossy is None else f', made lossy with threshold {args.lossy}'}; "
        f"2-core machine shared with other jobs, MPICH, ranks oversubscribed at 9).",
        "",
        "Program time: the original's span from the end of `MPI_Init` to `MPI_Finalize` (slowest rank, "
        "from the raw recording of a traced run) vs the replay's own report (`total_time_s`, same span). "
        "End to end: `mpiexec` wall time of the untraced original vs of the replay (which also reads "
        "the trace and gathers its report).",
        "",
        "| example | ranks | original program s | replay program s | error | original end-to-end s | replay end-to-end s | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['example']} | {r['ranks']} | {r['orig_program']:.4f} | {r['replay_program']:.4f} | "
            f"{err(r['replay_program'], r['orig_program']):+.1f}% | {r['orig_wall']:.3f} | {r['replay_wall']:.3f} | "
            f"{err(r['replay_wall'], r['orig_wall']):+.1f}% |"
        )
    prog_errors = [abs(err(r["replay_program"], r["orig_program"])) for r in rows]
    wall_errors = [abs(err(r["replay_wall"], r["orig_wall"])) for r in rows]
    lines += [
        "",
        f"Mean absolute error: program time {np.mean(prog_errors):.1f}% (max {np.max(prog_errors):.1f}%), "
        f"end to end {np.mean(wall_errors):.1f}% (max {np.max(wall_errors):.1f}%). Goal: within 5%.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_text(Path(args.out), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
