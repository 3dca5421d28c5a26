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
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "py"))
import helpers  # noqa: E402

CASES = [
    ("stencil1d", 4),
    ("stencil1d", 8),
    ("stencil2d", 4),
    ("stencil2d", 9),
    ("stencil3d", 8),
    ("ring", 6),
    ("collectives", 6),
    ("comm_split", 6),
    ("wildcard_lu", 6),
    ("rank_divergent", 5),
    ("waitsome", 5),
]
ITERATIONS = "20"


def measure(name: str, n: int, iterations_args: list[str]) -> dict:
    """Runs example `name` on n ranks under the collector (raw + compressed output), checks the
    merged trace against the raw streams, and returns raw / intra-only / merged / structure
    bytes, node count, merge time at MPI_Finalize (ms) and the run's wall time (s)."""
    with tempfile.TemporaryDirectory() as tmp:
        raw, out = Path(tmp) / "raw", Path(tmp) / "t.sct"
        env = helpers.collector_env(raw=raw, out=out, quiet=1)
        start = time.perf_counter()
        helpers.run_mpi(
            n, [helpers.example_path(name), "-i", *iterations_args], env=env, timeout=600
        )
        wall = time.perf_counter() - start
        check = json.loads(helpers.run_tool("scalatrace-dump", ["check", raw, out]).stdout)
        if not check["ok"]:
            raise AssertionError(f"{name} on {n} ranks: merged trace differs from raw: {check}")
        stats = json.loads(
            helpers.run_tool(
                "scalatrace-harness", ["merge-raw", raw, "-o", Path(tmp) / "off.sct"]
            ).stdout
        )
        meta = json.loads(
            helpers.run_tool("scalatrace-dump", ["trace", out, "--rank", "0"]).stdout
        )["metadata"]
        return {
            "raw_bytes": sum(p.stat().st_size for p in raw.glob("rank-*.straw")),
            "intra_bytes": stats["intra_bytes_total"],
            "sct_bytes": out.stat().st_size,
            "structure_bytes": stats["structure_bytes"],
            "nodes": check["trace_nodes"],
            "merge_ms": float(meta.get("merge_seconds", "nan")) * 1000,
            "wall_s": wall,
        }


def emit(lines: list[str], out: str | None) -> None:
    """Appends the Markdown lines to file `out`, or prints them when no file is given."""
    text = "\n".join(lines) + "\n"
    if out:
        with open(out, "a") as f:
            f.write(text)
    else:
        print(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    a = ap.parse_args()
    lines = [
        "",
        "## Real MPI runs: raw vs intra-rank vs merged bytes, merge time at MPI_Finalize",
        "",
        f"Each example with `-i {ITERATIONS}` under the collector (`SCALATRACE_RAW` and "
        "`SCALATRACE_OUT` together); intra-only = the per-rank compressed traces "
        "(`scalatrace-harness merge-raw`, sum of the per-rank .sct encodings); merge time "
        "= `merge_seconds` in the trace metadata (rank 0, whole tree).",
        "",
        "| example | ranks | raw bytes | intra-only bytes | merged bytes | merge time (ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, n in CASES:
        m = measure(name, n, [ITERATIONS])
        lines.append(
            f"| {name} | {n} | {m['raw_bytes']} | {m['intra_bytes']} | "
            f"{m['sct_bytes']} | {m['merge_ms']:.2f} |"
        )
        print(lines[-1], flush=True)
    emit(lines, a.out)


if __name__ == "__main__":
    main()
