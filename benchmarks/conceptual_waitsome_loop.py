#!/usr/bin/env python3
"""Generated coNCePTuaL of the waitsome example run in a loop (issue 33): the example's trace
changes from run to run (its Waitsome / Testsome / Testany outcomes and the number of Test
calls), so its benchmark is generated from many traces and each benchmark run several times.

For each of ``--traces`` fresh traces (``waitsome -i 3`` at 5 ranks under the collector) and
each file given with ``--trace``: generate coNCePTuaL, compile it with the real compiler
(c_mpi), run it ``--runs`` times under the collector with a timeout, and compare every run's
communication with the original's (scalatrace.conceptual.communication_differences). A run
that does not finish within ``--timeout`` seconds counts as hung (its process group is
killed). Prints one Markdown row per trace, the totals and the load average.

    .venv/bin/python benchmarks/conceptual_waitsome_loop.py [--traces 10] [--runs 5]
        [--trace FILE ...] [--keep DIR]

Not a test: it takes minutes (about 10 s per trace for the compiler, under a second per run).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import scalatrace
from scalatrace import conceptual
from scalatrace._files import write_text
from scalatrace._paths import collector_library, mpiexec

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("SCALATRACE_BUILD_DIR", ROOT / "build" / "py"))


def run(n: int, argv: list[str], env: dict[str, str], timeout: float) -> int | None:
    """Exit status of ``argv`` on ``n`` ranks, or None if it ran out of time (all killed)."""
    cmd = [mpiexec(), "-n", str(n), "env", *[f"{k}={v}" for k, v in env.items()], *argv]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def check_trace(
    label: str, original: Path, d: Path, prefix: Path, nranks: int, runs: int, timeout: float
) -> dict:
    row = {
        "trace": label,
        "notes": 0,
        "runs": 0,
        "completed": 0,
        "hung": 0,
        "matched": 0,
        "why": "",
    }
    trace = scalatrace.load(original)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = trace.to_conceptual()
    write_text(d / "bench.ncptl", text)
    row["notes"] = sum(1 for line in text.splitlines() if line.startswith("# note:"))
    conceptual.compile_conceptual(d / "bench.ncptl", d / "bench", prefix, 900, cflags="-O0")
    for k in range(runs):
        out = d / f"generated-{k}.sct"
        env = {
            **conceptual.run_environment(prefix),
            "NCPTL_FAST_INIT": "1",
            "LD_PRELOAD": str(collector_library()),
            "SCALATRACE_OUT": str(out),
        }
        status = run(nranks, [str(d / "bench"), f"--logfile={d}/log-{k}-%p.txt"], env, timeout)
        row["runs"] += 1
        if status is None:
            row["hung"] += 1
            row["why"] = row["why"] or f"run {k} hung"
            continue
        if status != 0:
            row["why"] = row["why"] or f"run {k} exited with {status}"
            continue
        row["completed"] += 1
        problems = conceptual.communication_differences(trace, scalatrace.load(out))
        if problems:
            row["why"] = row["why"] or problems[0][:120]
        else:
            row["matched"] += 1
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=10, help="fresh traces of the example")
    ap.add_argument("--runs", type=int, default=5, help="runs of each generated program")
    ap.add_argument("--trace", nargs="*", default=[], help="existing traces to add")
    ap.add_argument("--ranks", type=int, default=5)
    ap.add_argument("--iterations", default="3", help="the example's -i")
    ap.add_argument("--timeout", type=float, default=60, help="seconds before a run is hung")
    ap.add_argument("--keep", help="keep the work files in this directory")
    ap.add_argument(
        "--prefix",
        default=str(BUILD / "conceptual"),
        help="coNCePTuaL installation (built if absent)",
    )
    args = ap.parse_args()
    prefix = conceptual.compiler(args.prefix, search_from=ROOT)
    example = BUILD / "examples" / "waitsome"
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ncptl-waitsome-"))
    work.mkdir(parents=True, exist_ok=True)
    sources: list[tuple[str, Path | None]] = [(f"fresh {k + 1}", None) for k in range(args.traces)]
    sources += [(Path(t).name, Path(t)) for t in args.trace]
    rows = []
    print("| trace | notes | runs | completed | hung | matched | first problem |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for i, (label, given) in enumerate(sources):
        d = work / f"t{i + 1}"
        d.mkdir(exist_ok=True)
        original = given or d / "original.sct"
        if given is None:
            env = {"LD_PRELOAD": str(collector_library()), "SCALATRACE_OUT": str(original)}
            argv = [str(example), "-i", args.iterations]
            if run(args.ranks, argv, env, args.timeout) != 0:
                print(f"| {label} | - | - | - | - | - | the example failed |")
                continue
        row = check_trace(label, original, d, prefix, args.ranks, args.runs, args.timeout)
        rows.append(row)
        print(
            f"| {label} | {row['notes']} | {row['runs']} | {row['completed']} | {row['hung']} | "
            f"{row['matched']} | {row['why']} |",
            flush=True,
        )
    total = {k: sum(r[k] for r in rows) for k in ("runs", "completed", "hung", "matched")}
    print(
        f"| **total ({len(rows)} traces)** | | **{total['runs']}** | **{total['completed']}** | "
        f"**{total['hung']}** | **{total['matched']}** | |"
    )
    print(f"load average: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}; work: {work}")
    return 0 if total["hung"] == 0 and total["matched"] == total["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
