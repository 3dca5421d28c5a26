#!/usr/bin/env python3
"""Compressed trace sizes of the real stencil examples by timesteps and by rank count.

Runs each example under the collector (default settings, timing histograms on) and reports the
size of the written ``.sct`` and its node count (``Trace.node_count``) for every combination.
A constant-size trace has the same figures in every row of one example.

Usage::

    python benchmarks/trace_sizes.py [--timesteps 10 100 1000] [--repeats 1]
        [--out benchmarks/results/sizes.md]

Needs the package built with examples (``make build``); ``SCALATRACE_BUILD_DIR`` points at the
build dir (default ``build/py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "py"))
import helpers  # noqa: E402

from scalatrace._files import write_text  # noqa: E402

FAST = ["-s", "64", "-c", "0"]
BY_TIMESTEPS = [("stencil1d", 8), ("stencil2d", 9), ("stencil3d", 8)]
BY_RANKS = [("stencil2d", [4, 9, 16]), ("stencil3d", [8, 27])]


def measure(name: str, ranks: int, timesteps: int, workdir: Path) -> tuple[int, int, float]:
    """(bytes, nodes, seconds) of one traced run."""
    import scalatrace

    out = workdir / f"{name}-{ranks}-{timesteps}.sct"
    start = time.perf_counter()
    helpers.run_mpi(
        ranks,
        [helpers.example_path(name), "-i", str(timesteps), *FAST],
        env=helpers.collector_env(out=out, quiet=1),
        timeout=1800,
    )
    seconds = time.perf_counter() - start
    return out.stat().st_size, scalatrace.load(out).node_count, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timesteps", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument(
        "--rank-timesteps", type=int, default=20, help="timesteps of the by-rank-count rows"
    )
    ap.add_argument("--repeats", type=int, default=1, help="runs per row (median bytes)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    lines = [
        "# Compressed trace sizes of the real stencil examples",
        "",
        "Command: `python benchmarks/trace_sizes.py " + " ".join(sys.argv[1:]) + "` "
        f"(examples run with `{' '.join(FAST)}`, default collector settings: timing "
        "histograms on; MPICH, 2-core machine, ranks oversubscribed; median of "
        f"{args.repeats} run(s)).",
        "",
        "| example | ranks | timesteps | .sct bytes | nodes | run s |",
        "|---|---|---|---|---|---|",
    ]
    rows = [(n, r, t) for n, r in BY_TIMESTEPS for t in args.timesteps]
    rows += [(n, r, args.rank_timesteps) for n, rs in BY_RANKS for r in rs]
    with tempfile.TemporaryDirectory() as tmp:
        for name, ranks, steps in rows:
            runs = [measure(name, ranks, steps, Path(tmp)) for _ in range(args.repeats)]
            size = int(statistics.median(r[0] for r in runs))
            nodes = runs[0][1]
            secs = statistics.median(r[2] for r in runs)
            line = f"| {name} | {ranks} | {steps} | {size} | {nodes} | {secs:.1f} |"
            print(line, flush=True)
            lines.append(line)
    text = "\n".join(lines) + "\n"
    if args.out:
        write_text(args.out, text)
    else:
        print(text)


if __name__ == "__main__":
    main()
