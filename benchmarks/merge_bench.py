#!/usr/bin/env python3
"""Cross-rank merge benchmark: drives ``scalatrace-harness`` (synthetic per-rank streams ->
IntraCompressor -> radix-tree merge, in one process without MPI).

Measures (1) merge time and peak memory of the 2D stencil at 1K, 64K and 1M ranks and (2) the
merged trace size of 1D/2D/3D stencils from 64 ranks up, and writes a markdown table with the
exact commands to ``benchmarks/results/merge.md`` (or ``--out``).

    python benchmarks/merge_bench.py [--harness PATH] [--quick] [--out FILE]

``--quick`` stops at 64K ranks (the 1M runs take minutes: every rank's stream is generated and
compressed, and the merge runs sequentially in this one process).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scalatrace._files import write_text

ROOT = Path(__file__).resolve().parent.parent


def find_harness(explicit: str | None) -> str:
    if explicit:
        return explicit
    build = Path(os.environ.get("SCALATRACE_BUILD_DIR", ROOT / "build" / "py"))
    for p in (
        build / "cpp" / "tools" / "scalatrace-harness",
        ROOT / "build" / "dev" / "cpp" / "tools" / "scalatrace-harness",
    ):
        if p.is_file():
            return str(p)
    sys.exit("scalatrace-harness not found: build it or pass --harness")


def run(harness: str, args: list[str]) -> tuple[dict, str]:
    cmd = [harness, *args]
    t0 = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    stats = json.loads(out)
    stats["wall_seconds"] = time.time() - t0
    return stats, "scalatrace-harness " + " ".join(args)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--harness")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "merge.md"))
    ap.add_argument("--timesteps", type=int, default=2)
    a = ap.parse_args()
    harness = find_harness(a.harness)
    ts = str(a.timesteps)

    timing_ranks = [1024, 65536] + ([] if a.quick else [1048576])
    size_ranks = {
        "stencil1d": [64, 1024, 16384, 65536] + ([] if a.quick else [1048576]),
        "stencil2d": [64, 1024, 16384, 65536] + ([] if a.quick else [1048576]),
        "stencil3d": [64, 1000, 4096, 32768] + ([] if a.quick else [262144]),
    }

    lines = [
        "# Cross-rank merge: time, memory, trace sizes",
        "",
        "Produced by `python benchmarks/merge_bench.py` (scalatrace-harness: synthetic",
        "per-rank streams -> IntraCompressor -> radix-tree merge, one process, no MPI).",
        f"Timesteps per run: {ts}, no wrap-around (corner/edge/interior ranks differ).",
        "`merge total` is the sequential work of all N-1 merges in this one process;",
        "`merge critical path` is what a parallel merge over the same radix tree would take",
        "(each subtree merges concurrently, a parent waits for its slower child), i.e. the",
        "collector's merge time at MPI_Finalize. Machine: 2 shared cores.",
        "",
        "## Merge time and peak memory, 2D stencil",
        "",
        "| ranks | merge critical path (s) | merge total (s) | generate+compress (s) | peak RSS (MB) | trace bytes | command |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n in timing_ranks:
        s, cmd = run(harness, ["--pattern", "stencil2d", "--ranks", str(n), "--timesteps", ts])
        lines.append(
            f"| {n} | {s['merge_critical_path_seconds']:.4f} | {s['merge_seconds']:.2f} | "
            f"{s['generate_compress_seconds']:.2f} | {s['peak_rss_bytes'] / 2**20:.1f} | "
            f"{s['trace_bytes']} | `{cmd}` |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "## Merged trace size (with timing histograms)",
        "",
        "| pattern | ranks | trace bytes | without metadata/timing/comm table | nodes | command |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for pattern, ranks in size_ranks.items():
        for n in ranks:
            s, cmd = run(harness, ["--pattern", pattern, "--ranks", str(n), "--timesteps", ts])
            lines.append(
                f"| {pattern} | {n} | {s['trace_bytes']} | {s['structure_bytes']} | "
                f"{s['nodes']} | `{cmd}` |"
            )
            print(lines[-1], flush=True)
    write_text(Path(a.out), "\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
