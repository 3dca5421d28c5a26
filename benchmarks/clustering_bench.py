"""Clustered (SCALATRACE_CLUSTERS=K) vs full traces: accuracy and cost.

Real runs (mpiexec, small rank counts) and harness runs (scalatrace-harness, in process, 4K-64K
ranks) are traced twice, once in full and once with K-farthest clustering (K = 9 by default).
For each pair it reports the point-to-point communication-matrix error of the clustered trace
(sum |M_clustered - M_full| / sum M_full, bytes), the trace sizes, the merge times, the
clustering time, and how long ``Trace.clusters()`` takes on the full trace in Python.

    python benchmarks/clustering_bench.py --out benchmarks/results/clustering.md \
        [--work DIR] [--k 9] [--harness-timesteps 3]

Harness outputs already present in --work (full_<pattern>_<ranks>.sct/.json, k9_...) are reused.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "py"))

import helpers  # noqa: E402
import scalatrace  # noqa: E402

REAL = [("stencil2d", 16), ("rank_divergent", 12), ("comm_split", 12), ("stencil3d", 8)]
HARNESS = [("stencil2d", 4096), ("stencil3d", 4096), ("rowcol", 4096), ("stencil2d", 16384), ("stencil2d", 65536)]


def matrix_error(full: scalatrace.Trace, clustered: scalatrace.Trace) -> float:
    a = full.comm_matrix(metric="bytes", kind="p2p", sparse=True).tocsr()
    b = clustered.comm_matrix(metric="bytes", kind="p2p", sparse=True).tocsr()
    total = float(a.sum())
    return float(abs(a - b).sum()) / total if total else 0.0


def timed_clusters(t: scalatrace.Trace, k: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    c = t.clusters(k=k)
    return time.perf_counter() - t0, c.k


def real_row(name: str, n: int, k: int, work: Path) -> dict:
    d = work / f"real_{name}_{n}"
    d.mkdir(parents=True, exist_ok=True)
    traces = {}
    for label, extra in (("full", {}), ("k", {"clusters": k})):
        out = d / f"{label}.sct"
        env = helpers.collector_env(out=out, quiet=1, **extra)
        helpers.run_mpi(n, [helpers.example_path(name), "-i", "4"], env=env, timeout=300, cwd=d)
        traces[label] = scalatrace.load(out)
    full, clustered = traces["full"], traces["k"]
    seconds, _ = timed_clusters(full, k)
    return {
        "case": f"{name} (real, {n} ranks)",
        "clusters": len(clustered.cluster_map),
        "matrix_error": matrix_error(full, clustered),
        "bytes_full": full.path.stat().st_size,
        "bytes_k": clustered.path.stat().st_size,
        "merge_full": float(full.metadata.get("merge_seconds", "nan")),
        "merge_k": float(clustered.metadata.get("merge_seconds", "nan")),
        "cluster_seconds": float(clustered.metadata.get("clusters.seconds", "nan")),
        "python_seconds": seconds,
    }


def harness_row(pattern: str, n: int, k: int, steps: int, work: Path) -> dict:
    harness = helpers.tool_path("scalatrace-harness")
    stats = {}
    for label, extra in (("full", []), ("k", ["--clusters", str(k)])):
        stem = work / f"{'full' if label == 'full' else f'k{k}'}_{pattern}_{n}"
        if not (stem.with_suffix(".sct").exists() and stem.with_suffix(".json").exists()):
            cmd = [str(harness), "--pattern", pattern, "--ranks", str(n), "--timesteps", str(steps),
                   *extra, "-o", str(stem.with_suffix(".sct"))]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            stem.with_suffix(".json").write_text(out)
        stats[label] = (json.loads(stem.with_suffix(".json").read_text()), scalatrace.load(stem.with_suffix(".sct")))
    (sf, full), (sk, clustered) = stats["full"], stats["k"]
    seconds, _ = timed_clusters(full, k)
    return {
        "case": f"{pattern} (harness, {n} ranks, {sf['timesteps']} steps)",
        "clusters": sk["clusters"],
        "matrix_error": matrix_error(full, clustered),
        "bytes_full": sf["trace_bytes"],
        "bytes_k": sk["trace_bytes"],
        "merge_full": sf["merge_critical_path_seconds"],
        "merge_k": sk["merge_critical_path_seconds"],
        "merge_total_full": sf["merge_seconds"],
        "merge_total_k": sk["merge_seconds"],
        "cluster_seconds": sk["cluster_kfarthest_seconds"],
        "python_seconds": seconds,
    }


def emit(rows: list[dict], k: int, command: str) -> str:
    lines = [
        "# Clustering: clustered (K-farthest) vs full traces",
        "",
        f"Command: `{command}`. Machine: 2 cores shared with other jobs (load average around 30 "
        "while these ran), single runs, so times are indicative only; real runs are oversubscribed.",
        "",
        f"K = {k}. Matrix error: sum |M_K - M_full| / sum M_full of the point-to-point byte matrix. "
        "Merge: rank 0's `merge_seconds` (real runs) or the harness's parallel critical path of the "
        "radix-tree merge (the figure comparable to the collector). Clustering: the collector's "
        "signature building + K-farthest on rank 0 (real runs, `clusters.seconds`) or the in-process "
        "K-farthest over all signatures (harness). Python: `Trace.clusters(k)` on the full trace "
        "(signatures + K-farthest).",
        "",
        "| case | clusters | matrix error | trace bytes full / K | merge s full / K | clustering s | Python clusters() s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['clusters']} | {r['matrix_error']:.2%} | {r['bytes_full']} / {r['bytes_k']} | "
            f"{r['merge_full']:.4f} / {r['merge_k']:.4f} | {r['cluster_seconds']:.4f} | {r['python_seconds']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "clustering.md")
    ap.add_argument("--work", type=Path, default=Path("/tmp/scalatrace-clustering-bench"))
    ap.add_argument("--k", type=int, default=9)
    ap.add_argument("--harness-timesteps", type=int, default=3)
    ap.add_argument("--skip-real", action="store_true")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    if not args.skip_real:
        for name, n in REAL:
            rows.append(real_row(name, n, args.k, args.work))
            print(rows[-1], flush=True)
    for pattern, n in HARNESS:
        rows.append(harness_row(pattern, n, args.k, args.harness_timesteps, args.work))
        print(rows[-1], flush=True)
    command = "python benchmarks/clustering_bench.py " + " ".join(sys.argv[1:])
    args.out.write_text(emit(rows, args.k, command.strip()))


if __name__ == "__main__":
    main()
