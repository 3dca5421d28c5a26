"""pandas benchmark: ``Trace.to_dataframe()`` (every event of every rank) on harness traces.

Traces of a periodic 2D stencil (``scalatrace-harness --pattern stencil2d --wrap``) are made
once and cached in ``benchmarks/data/`` (the same files ``python_bench.py`` uses). Timed:
``to_dataframe()`` (median of 3, wall and process CPU time), rows and the frame's memory.

Usage: ``python benchmarks/frames_bench.py [--ranks 4096] [--timesteps 10 100]``
Prints a Markdown table (paste into ``benchmarks/results/python.md``).
"""

from __future__ import annotations

import argparse
import statistics
import time

from python_bench import make_trace

import scalatrace


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[4096])
    p.add_argument("--timesteps", type=int, nargs="+", default=[10, 100])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    import pandas  # noqa: F401  (imported up front: not part of the timings)

    print(
        "| ranks | timesteps | events (rows) | `to_dataframe()` s wall | cpu s | frame MiB | ns per row |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.ranks:
        for ts in args.timesteps:
            path, _ = make_trace(n, ts)
            t = scalatrace.load(path)
            walls, cpus, df = [], [], None
            for _ in range(args.repeat):
                df = None
                w0, c0 = time.perf_counter(), time.process_time()
                df = t.to_dataframe()
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            mib = df.memory_usage(index=True, deep=False).sum() / 2**20
            print(
                f"| {n:,} | {ts} | {len(df):,} | {wall:.3f} ({min(walls):.3f}-{max(walls):.3f}) | {cpu:.3f} "
                f"| {mib:.0f} | {wall / len(df) * 1e9:.0f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
