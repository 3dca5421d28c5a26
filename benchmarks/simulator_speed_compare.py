#!/usr/bin/env python3
"""Simulator speed of two builds, side by side: events per CPU second of the simulating thread.

Runs ``simulate_speed_driver`` (``benchmarks/simulate_speed_driver.cpp``) of each build on each
trace, alternating builds, ``--repeats`` processes per build and trace, and prints a Markdown
table of the median CPU time and events per CPU second, with the load average at the start of
each run. Every run of one trace must predict the same total time (bit-identical predictions
across the builds): the script stops with an error otherwise.

Timed runs take the machine's timing lock and run at SCHED_FIFO when ``--fifo`` is given
(``flock /tmp/scalatrace-timing.lock chrt -f 50 ...``, root only): on a shared machine, only one
timed job at a time.

Usage::

    python benchmarks/simulator_speed_compare.py --before OLD_DRIVER --after NEW_DRIVER \\
        --traces s2d-4096-20.sct s2d-65536-20.sct [--calls 1] [--repeats 3] [--fifo]

Traces: ``scalatrace-harness --pattern stencil2d --ranks N --timesteps T --wrap -o FILE``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

LINE = re.compile(r"events=(\d+) .*cpu_median=([0-9.]+) ms .*predicted=(\S+) ns")
#: The CPU time's user and kernel parts (drivers built from the source of 2026-11-30, fifth session, on).
SPLIT = re.compile(r"user_median=([0-9.]+) ms kernel_median=([0-9.]+) ms")


def run_driver(
    driver: Path, trace: Path, calls: int, fifo: bool
) -> tuple[int, float, str, float, float | None]:
    """One process of the speed driver.

    Parameters
    ----------
    driver : Path
        The ``simulate_speed_driver`` binary.
    trace : Path
        The trace file.
    calls : int
        Timed simulations in the process (the median is taken), after one warm-up call when
        ``calls`` > 1.
    fifo : bool
        Run under the timing lock at SCHED_FIFO.

    Returns
    -------
    tuple of (int, float, str, float, float or None)
        Events simulated, median CPU milliseconds, the predicted total (as printed), the
        1-minute load average when the run started, and the median user CPU milliseconds
        (None from a driver that does not print it).
    """
    load = float(Path("/proc/loadavg").read_text().split()[0])
    warm_up = "1" if calls > 1 else "0"
    command = [str(driver.resolve()), str(trace), str(calls), "mean", warm_up]
    if fifo:
        command = ["flock", "/tmp/scalatrace-timing.lock", "chrt", "-f", "50", *command]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    match = LINE.search(out)
    if match is None:
        raise RuntimeError(f"unexpected driver output: {out!r}")
    split = SPLIT.search(out)
    user = float(split.group(1)) if split else None
    return int(match.group(1)), float(match.group(2)), match.group(3), load, user


def main() -> int:
    """Parse the arguments, run the comparison and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--before", type=Path, required=True, help="speed driver of the reference build"
    )
    parser.add_argument(
        "--after", type=Path, required=True, help="speed driver of the changed build"
    )
    parser.add_argument("--traces", type=Path, nargs="+", required=True)
    parser.add_argument("--calls", type=int, default=1, help="timed calls per process (default 1)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="processes per build and trace (default 3)"
    )
    parser.add_argument("--fifo", action="store_true", help="timing lock and SCHED_FIFO (root)")
    args = parser.parse_args()
    rows = [
        "| trace | events | before: CPU ms (median of runs) | after: CPU ms | before: events per CPU s | "
        "after: events per CPU s | change | before: user ms | after: user ms | change in user time | "
        "load averages |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for trace in args.traces:
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        user: dict[str, list[float]] = {"before": [], "after": []}
        loads: list[float] = []
        predicted: set[str] = set()
        events = 0
        for _ in range(args.repeats):
            for name, driver in (("before", args.before), ("after", args.after)):
                events, ms, total, load, user_ms = run_driver(driver, trace, args.calls, args.fifo)
                cpu[name].append(ms / 1e3)
                if user_ms is not None:
                    user[name].append(user_ms)
                predicted.add(total)
                loads.append(load)
                print(f"{trace.name} {name}: {ms:.1f} ms CPU, load {load}", file=sys.stderr)
        if len(predicted) != 1:
            print(
                f"{trace}: the builds predict different totals: {sorted(predicted)}",
                file=sys.stderr,
            )
            return 1
        before, after = statistics.median(cpu["before"]), statistics.median(cpu["after"])
        user_cells = "- | - | -"
        if user["before"] and user["after"]:
            user_before, user_after = (
                statistics.median(user["before"]),
                statistics.median(user["after"]),
            )
            user_cells = f"{user_before:.0f} | {user_after:.0f} | {100 * (user_after / user_before - 1):+.1f} %"
        rows.append(
            f"| {trace.name} | {events:,} | {before * 1e3:.1f} | {after * 1e3:.1f} | {events / before / 1e6:.2f} M | "
            f"{events / after / 1e6:.2f} M | {100 * (after / before - 1):+.1f} % | {user_cells} | "
            f"{min(loads):.1f}-{max(loads):.1f} |"
        )
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
