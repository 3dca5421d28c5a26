#!/usr/bin/env python3
"""Real MPI runs of the examples under the collector: raw vs intra-rank-only vs merged trace
bytes, and the cross-rank merge time at MPI_Finalize (metadata ``merge_seconds`` written by
rank 0), at 4..9 ranks.

    python benchmarks/merge_examples_bench.py [--out FILE]

Needs the build (``SCALATRACE_BUILD_DIR``, default build/py): examples, libscalatrace.so,
scalatrace-harness, scalatrace-dump. Appends a markdown table to ``--out`` (default: print).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "py"))
import helpers  # noqa: E402

CASES = [("stencil1d", 4), ("stencil1d", 8), ("stencil2d", 4), ("stencil2d", 9),
         ("stencil3d", 8), ("ring", 6), ("collectives", 6), ("comm_split", 6),
         ("wildcard_lu", 6), ("rank_divergent", 5), ("waitsome", 5)]
ITERATIONS = "20"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    a = ap.parse_args()
    lines = ["", "## Real MPI runs: raw vs intra-rank vs merged bytes, merge time at MPI_Finalize", "",
             f"Each example with `-i {ITERATIONS}` under the collector (`SCALATRACE_RAW` and "
             "`SCALATRACE_OUT` together); intra-only = the per-rank compressed traces "
             "(`scalatrace-harness merge-raw`, sum of the per-rank .sct encodings); merge time "
             "= `merge_seconds` in the trace metadata (rank 0, whole tree).", "",
             "| example | ranks | raw bytes | intra-only bytes | merged bytes | merge time (ms) |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, n in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            raw, out = Path(tmp) / "raw", Path(tmp) / "t.sct"
            env = helpers.collector_env(raw=raw, out=out, quiet=1)
            helpers.run_mpi(n, [helpers.example_path(name), "-i", ITERATIONS], env=env, timeout=300)
            raw_bytes = sum(p.stat().st_size for p in raw.glob("rank-*.straw"))
            stats = json.loads(helpers.run_tool("scalatrace-harness",
                                                ["merge-raw", raw, "-o", Path(tmp) / "off.sct"]).stdout)
            meta = json.loads(helpers.run_tool("scalatrace-dump", ["trace", out, "--rank", "0"]).stdout)["metadata"]
            ms = float(meta.get("merge_seconds", "nan")) * 1000
            lines.append(f"| {name} | {n} | {raw_bytes} | {stats['intra_bytes_total']} | "
                         f"{out.stat().st_size} | {ms:.2f} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "a") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
