#!/usr/bin/env python3
"""Merged trace size of the stencil examples under real MPI, from 4 to 64 ranks.

    python benchmarks/real_scaling.py [--iterations 5] [--out FILE]

Runs each stencil example under the collector (compressed output and raw ground truth), checks
the merged trace against the raw streams (`scalatrace-dump check`), and reports the .sct bytes,
the structure bytes (no metadata, no timing: `scalatrace-harness merge-raw`), node count and the
merge time at MPI_Finalize. More ranks than cores makes MPICH slow here (busy polling), so the
64-rank runs take tens of seconds. Needs the build (SCALATRACE_BUILD_DIR, default build/py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from merge_examples_bench import emit, measure  # noqa: E402

CASES = {"stencil1d": [4, 8, 16, 32, 64], "stencil2d": [4, 16, 36, 64], "stencil3d": [8, 27, 64]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", default="5")
    ap.add_argument("--out")
    a = ap.parse_args()
    lines = [
        "",
        "## Real MPI: merged stencil trace size from 4 to 64 ranks",
        "",
        f"Command: `python benchmarks/real_scaling.py --iterations {a.iterations}` "
        f"(each example with `-i {a.iterations} -c 0`, every merged trace checked lossless "
        "against the raw streams with `scalatrace-dump check`).",
        "",
        "| example | ranks | .sct bytes | structure bytes | nodes | merge at Finalize (ms) | run wall (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, sizes in CASES.items():
        for n in sizes:
            m = measure(name, n, [a.iterations, "-c", "0"])
            lines.append(
                f"| {name} | {n} | {m['sct_bytes']} | {m['structure_bytes']} | "
                f"{m['nodes']} | {m['merge_ms']:.1f} | {m['wall_s']:.1f} |"
            )
            print(lines[-1], flush=True)
    emit(lines, a.out)


if __name__ == "__main__":
    main()
