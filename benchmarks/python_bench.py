"""Python-side benchmark: load time and communication-matrix time for harness traces.

Traces of a 2D stencil at 4K, 64K and 1M ranks are made once with ``scalatrace-harness`` (the
in-process generator + compressor + merge, no MPI) and cached in ``benchmarks/data/``. Then:

* ``scalatrace.load`` (median of 5),
* ``Trace.comm_matrix(sparse=True)`` (median of 3): the matrix from the compressed structure,
* ``Trace.comm_matrix()`` dense, only where P x P doubles fit (4K: 128 MiB),

Usage: ``python benchmarks/python_bench.py [--ranks 4096 65536 1048576] [--timesteps 100]``
(above 4096 ranks at most 10 timesteps, above 65536 at most 2: harness time grows with ranks x timesteps, the
analysis does not depend on timesteps).
Results are printed as a Markdown table (paste into ``benchmarks/results/python.md``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import scalatrace

HERE = Path(__file__).resolve().parent


def harness() -> Path:
    build = Path(os.environ.get("SCALATRACE_BUILD_DIR", HERE.parent / "build" / "py"))
    for cand in (build / "cpp" / "tools" / "scalatrace-harness",):
        if cand.is_file():
            return cand
    try:
        return scalatrace._paths.tool("scalatrace-harness")
    except scalatrace.ScalatraceError:
        sys.exit(
            "scalatrace-harness not found: build the project (make build) or set SCALATRACE_BUILD_DIR"
        )


def make_trace(nranks: int, timesteps: int) -> tuple[Path, float]:
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    out = data / f"stencil2d-{nranks}-{timesteps}.sct"
    if out.is_file():
        return out, float("nan")
    cmd = [
        str(harness()),
        "--pattern",
        "stencil2d",
        "--ranks",
        str(nranks),
        "--timesteps",
        str(timesteps),
        "--wrap",
        "-o",
        str(out),
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out, time.perf_counter() - t0


def timed(fn, repeat: int) -> tuple[float, object]:
    """Median wall time (and CPU time, stored in CPU_TIMES) of `repeat` calls."""
    times, cpu, result = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU_TIMES.append(statistics.median(cpu))
    return statistics.median(times), result


CPU_TIMES: list[float] = []


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[4096, 65536, 1048576])
    p.add_argument("--timesteps", type=int, default=100)
    args = p.parse_args()
    import scipy.sparse  # noqa: F401  (imported once up front: not part of the timings)

    rows = []
    for n in args.ranks:
        ts = args.timesteps if n <= 4096 else min(args.timesteps, 10 if n <= 65536 else 2)
        path, made = make_trace(n, ts)
        load_s, t = timed(lambda path=path: scalatrace.load(path), 5)
        sparse_s, sp = timed(lambda t=t: t.comm_matrix("bytes", "p2p", sparse=True), 3)
        dense_s = float("nan")
        if n * n * 8 <= 2 << 30:
            dense_s, _ = timed(lambda t=t: t.comm_matrix("bytes", "p2p"), 3)
        rows.append(
            (
                n,
                ts,
                path.stat().st_size,
                t.node_count,
                made,
                load_s,
                sparse_s,
                CPU_TIMES[1],
                sp.nnz,
                dense_s,
            )
        )
        CPU_TIMES.clear()
        print(f"{n} ranks done", file=sys.stderr)
    print(f"2D stencil (9-point, periodic); medians; `{' '.join(sys.argv)}`\n")
    print(
        "| ranks | timesteps | .sct bytes | nodes | load s | comm matrix sparse s (wall) | (cpu) | nonzeros | dense s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, ts, size, nodes, _made, load_s, sparse_s, sparse_cpu, nnz, dense_s in rows:
        dense = "n/a (P² too large)" if dense_s != dense_s else f"{dense_s:.4f}"
        print(
            f"| {n:,} | {ts} | {size:,} | {nodes} | {load_s:.4f} | {sparse_s:.4f} | {sparse_cpu:.4f} | {nnz:,} | {dense} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
