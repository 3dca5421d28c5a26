#!/usr/bin/env python3
"""The scalatrace simulator beside LogGOPSim on the same traces (GOAL export, issue 34).

Builds LogGOPSim and txt2bin from a LogGOPSim source tree (github.com/spcl/LogGOPSim; Debian
packages gengetopt, re2c and libgraphviz-dev; its CMake build also wants MPI, Fortran and
Clang for tools not needed here, so the two programs are compiled directly), exports each trace
with ``Trace.to_goal``, converts it with ``txt2bin``, runs ``LogGOPSim`` with the same LogGP
parameters (integer nanoseconds: LogGOPSim's unit) and compares its maximum finishing time with
``scalatrace.simulate`` (``recorded_local_calls=False``: GOAL holds only compute and messages).

Traces: the harness's 2D / 3D stencils (``scalatrace-harness``, no MPI) at the given rank counts
and, with ``--examples``, the example programs traced at 4 ranks under ``mpiexec``.

Usage::

    python benchmarks/loggopsim_compare.py [--source DIR | --git URL] [--ranks 64 256 1024]
        [--steps 10] [--examples stencil1d ring collectives ...] [--L 1000 --o 500 --g 0 --G 1 --S 65536]
        [--out FILE]

Without ``--source`` the repository is cloned from ``--git`` (default the spcl GitHub URL).
The table is printed, and written to ``--out`` if given.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scalatrace
from scalatrace import _paths
from scalatrace._files import write_text

REPO = Path(__file__).resolve().parents[1]
# LogGP in integer nanoseconds (LogGOPSim's parameters are integers): L, o (LogGOPSim has one
# overhead for sends and receives), g, G per byte, S eager threshold.
PARAMS = {"L": 1000, "o": 500, "g": 0, "G": 1, "S": 65536}


def build_loggopsim(source: Path, work: Path) -> tuple[Path, Path]:
    """Compiles LogGOPSim and txt2bin from ``source``/src/LogGOPSim into ``work``."""
    src = work / "LogGOPSim-src"
    shutil.copytree(source / "src" / "LogGOPSim", src)
    for tool in ("gengetopt", "re2c", "g++"):
        if shutil.which(tool) is None:
            sys.exit(
                f"loggopsim_compare: {tool} is missing (apt-get install gengetopt re2c libgraphviz-dev g++)"
            )
    run = lambda *cmd: subprocess.run(cmd, cwd=src, check=True, capture_output=True, text=True)  # noqa: E731
    run("gengetopt", "-F", "loggopsim_cmdline", "-i", "loggopsim_cmdline.ggo")
    run("gengetopt", "-F", "txt2bin_cmdline", "-i", "txt2bin_cmdline.ggo")
    run("re2c", "-o", "txt2bin.cpp", "txt2bin.re")
    flags = ["-O2", "-w", "-std=c++11", "-I/usr/include/graphviz"]
    run("g++", *flags, "txt2bin.cpp", "txt2bin_cmdline.c", "-o", "txt2bin")
    run("g++", *flags, "LogGOPSim.cpp", "loggopsim_cmdline.c", "-o", "LogGOPSim", "-lcgraph")
    return src / "LogGOPSim", src / "txt2bin"


def loggopsim_time(loggopsim: Path, txt2bin: Path, goal: Path) -> tuple[float, float, float]:
    """(predicted seconds, LogGOPSim wall seconds, its peak memory MB) for a GOAL text file."""
    binary = goal.with_suffix(".bin")
    subprocess.run(
        [str(txt2bin), "-i", str(goal), "-o", str(binary)], check=True, capture_output=True
    )
    args = [f"-{k}{v}" for k, v in PARAMS.items()]
    start = time.perf_counter()
    # GNU time's maximum resident set size (KB) of LogGOPSim alone, on stderr.
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "maxrss_kb=%M", str(loggopsim), "-f", str(binary), "-b", *args],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    rss = re.search(r"maxrss_kb=(\d+)", proc.stderr)
    peak = int(rss.group(1)) if rss else float("nan")
    found = re.search(r"Maximum finishing time at host \d+: (\d+)", proc.stdout)
    if proc.returncode != 0 or not found:
        sys.exit(f"LogGOPSim failed ({proc.returncode}): {proc.stdout[-500:]} {proc.stderr[-500:]}")
    binary.unlink()
    return int(found.group(1)) * 1e-9, wall, peak / 1024


def scalatrace_time(trace: scalatrace.Trace) -> tuple[float, float]:
    """(predicted seconds, simulation wall seconds) with PARAMS."""
    net = scalatrace.LogGP(
        L=PARAMS["L"] * 1e-9,
        o_s=PARAMS["o"] * 1e-9,
        o_r=PARAMS["o"] * 1e-9,
        g=PARAMS["g"] * 1e-9,
        G=PARAMS["G"] * 1e-9,
    )
    start = time.perf_counter()
    r = scalatrace.simulate(
        trace, network=net, eager_threshold=PARAMS["S"], recorded_local_calls=False
    )
    return r.total_time, time.perf_counter() - start


def harness_trace(pattern: str, ranks: int, steps: int, path: Path) -> Path:
    subprocess.run(
        [str(_paths.tool("scalatrace-harness")), "--pattern", pattern, "--ranks", str(ranks),
         "--timesteps", str(steps), "--wrap", "-o", str(path)],
        check=True, capture_output=True, timeout=3600,
    )  # fmt: skip
    return path


def example_trace(name: str, work: Path) -> Path:
    build = Path(os.environ.get("SCALATRACE_BUILD_DIR", REPO / "build" / "py"))
    path = work / f"{name}.sct"
    env = dict(os.environ, SCALATRACE_OUT=str(path), SCALATRACE_QUIET="1")
    subprocess.run(
        [_paths.mpiexec(), "-genv", "LD_PRELOAD", str(_paths.collector_library()), "-n", "4",
         str(build / "examples" / name), "-i", "10", "-c", "200"],
        env=env, check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return path


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--source", type=Path, help="a LogGOPSim source tree (else cloned from --git)")
    ap.add_argument("--git", default="https://github.com/spcl/LogGOPSim")
    ap.add_argument("--ranks", type=int, nargs="*", default=[64, 256, 1024])
    ap.add_argument("--patterns", nargs="*", default=["stencil2d", "stencil3d"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--examples", nargs="*", default=[])
    ap.add_argument("--out", type=Path)
    for name in PARAMS:
        ap.add_argument(
            f"--{name}",
            type=int,
            default=PARAMS[name],
            help=f"LogGP {name} (integer ns; default {PARAMS[name]})",
        )
    args = ap.parse_args()
    PARAMS.update({name: getattr(args, name) for name in PARAMS})
    with tempfile.TemporaryDirectory(prefix="loggopsim-") as tmp:
        work = Path(tmp)
        source = args.source
        if source is None:
            source = work / "LogGOPSim"
            subprocess.run(
                ["git", "clone", "-q", "--depth", "1", args.git, str(source)], check=True
            )
        loggopsim, txt2bin = build_loggopsim(source, work)
        cases = [(f"{p} {n}", lambda p=p, n=n: harness_trace(p, n, args.steps, work / f"{p}-{n}.sct"))
                 for p in args.patterns for n in args.ranks]  # fmt: skip
        cases += [(f"{e} 4 (real)", lambda e=e: example_trace(e, work)) for e in args.examples]
        rows = []
        for name, make in cases:
            trace = scalatrace.load(make())
            ours, our_wall = scalatrace_time(trace)
            goal = work / "trace.goal"
            start = time.perf_counter()
            export = trace.to_goal(goal)
            export_wall = time.perf_counter() - start
            theirs, their_wall, their_mb = loggopsim_time(loggopsim, txt2bin, goal)
            # The same schedule with G = 0: where the two LogGP variants coincide (the receiver's
            # CPU busy for the bytes in LogGOPSim, not in ours).
            saved = PARAMS["G"]
            PARAMS["G"] = 0
            ours0, _ = scalatrace_time(trace)
            theirs0, _, _ = loggopsim_time(loggopsim, txt2bin, goal)
            PARAMS["G"] = saved
            ops = sum(export.operations.values())
            goal.unlink()
            rows.append(
                f"| {name} | {ops:,} | {ours * 1e6:,.2f} | {theirs * 1e6:,.2f} | "
                f"{100 * (theirs - ours) / ours:+.2f} % | {ours0 * 1e6:,.2f} | {theirs0 * 1e6:,.2f} | "
                f"{100 * (theirs0 - ours0) / ours0:+.4f} % | {our_wall:.3f} | {their_wall:.3f} | {their_mb:.0f} | {export_wall:.1f} |"
            )
            print(rows[-1], flush=True)
    load = os.getloadavg()
    header = [
        f"LogGP: L={PARAMS['L']} ns, o_s=o_r={PARAMS['o']} ns, g={PARAMS['g']}, G={PARAMS['G']} ns/B, "
        f"eager <= {PARAMS['S']} B; {args.steps} timesteps; load average {load[0]:.2f} / {load[1]:.2f} at the end",
        "",
        "| trace (ranks) | GOAL ops | scalatrace µs | LogGOPSim µs | LogGOPSim - ours | G=0: scalatrace µs "
        "| G=0: LogGOPSim µs | G=0: difference | ours s | LogGOPSim s | LogGOPSim peak MB | export s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    table = "\n".join(header + rows) + "\n"
    print(table)
    if args.out:
        write_text(args.out, table)


if __name__ == "__main__":
    main()
