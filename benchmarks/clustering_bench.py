"""Clustered (SCALATRACE_CLUSTERS=K) vs full traces: accuracy and cost.

Real runs (mpiexec, small rank counts) and harness runs (scalatrace-harness, in process, 4K-64K
ranks) are traced twice, once in full and once with K-farthest clustering (K = 9 by default).
For each pair it reports the point-to-point communication-matrix error of the clustered trace
(sum |M_clustered - M_full| / sum M_full, bytes), the trace sizes, the merge times, the
clustering time, how long ``Trace.clusters()`` takes on the full trace in Python, and the
simulated run time of the clustered trace against the full one (``scalatrace.simulate``,
default LogGP network, mean compute from the histograms: deterministic, so unaffected by the
machine's load).

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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "py"))

import helpers  # noqa: E402

import scalatrace  # noqa: E402
from scalatrace._files import write_text  # noqa: E402

REAL = [
    ("stencil2d", 16),
    ("stencil2d", 9),
    ("rank_divergent", 12),
    ("comm_split", 12),
    ("stencil3d", 27),
]
HARNESS = [
    ("stencil2d", 4096),
    ("stencil3d", 4096),
    ("rowcol", 4096),
    ("stencil2d", 16384),
    ("stencil2d", 65536),
]


def matrix_error(full: scalatrace.Trace, clustered: scalatrace.Trace) -> float:
    a = full.comm_matrix(metric="bytes", kind="p2p", sparse=True).tocsr()
    b = clustered.comm_matrix(metric="bytes", kind="p2p", sparse=True).tocsr()
    total = float(a.sum())
    return float(abs(a - b).sum()) / total if total else 0.0


def simulated_time_error(
    full: scalatrace.Trace, clustered: scalatrace.Trace, timing: str = "mean"
) -> tuple[float, float, float]:
    """Simulated run time of both traces (s) and the clustered one's relative error."""
    t_full = scalatrace.simulate(full, timing=timing).total_time
    t_k = scalatrace.simulate(clustered, timing=timing).total_time
    return t_full, t_k, (t_k - t_full) / t_full if t_full else 0.0


def timed_clusters(t: scalatrace.Trace, k: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    c = t.clusters(k=k)
    return time.perf_counter() - t0, c.k


def real_row(
    name: str,
    n: int,
    k: int,
    work: Path,
    iterations: int,
    compute_us: int | None = None,
    repeat: int = 0,
) -> dict:
    """Two real runs: one fully traced (size, merge time), one with SCALATRACE_CLUSTERS=k that
    also writes the raw recording. Accuracy compares that run's clustered trace with the full
    trace compressed from the same run's raw streams, so the recorded compute times are the
    same on both sides and only the clustering differs (two separate runs differ by much more
    when the ranks are oversubscribed)."""
    d = work / f"real_{name}_{n}" / f"c{compute_us}_r{repeat}"
    d.mkdir(parents=True, exist_ok=True)
    args = [helpers.example_path(name), "-i", str(iterations)]
    if compute_us is not None:
        args += ["-c", str(compute_us)]
    full_out, k_out, raw = d / "full.sct", d / "k.sct", d / "raw"
    helpers.run_mpi(n, args, env=helpers.collector_env(out=full_out, quiet=1), timeout=300, cwd=d)
    helpers.run_mpi(
        n,
        args,
        env=helpers.collector_env(out=k_out, raw=raw, quiet=1, clusters=k),
        timeout=300,
        cwd=d,
    )
    full_run, clustered = scalatrace.load(full_out), scalatrace.load(k_out)
    same_run_full = scalatrace.read_raw(raw).compress()
    seconds, _ = timed_clusters(full_run, k)
    sim_full, sim_k, sim_error = simulated_time_error(same_run_full, clustered)
    sim_median_error = simulated_time_error(same_run_full, clustered, "median")[2]
    return {
        "sim_median_error": sim_median_error,
        "case": f"{name} (real, {n} ranks{'' if compute_us is None else f', -c {compute_us}'}"
        f"{f', run {repeat + 1}' if repeat else ''})",
        "sim_full": sim_full,
        "sim_k": sim_k,
        "sim_error": sim_error,
        "clusters": len(clustered.cluster_map),
        "matrix_error": matrix_error(same_run_full, clustered),
        "bytes_full": full_out.stat().st_size,
        "bytes_k": k_out.stat().st_size,
        "merge_full": float(full_run.metadata.get("merge_seconds", "nan")),
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
            cmd = [
                str(harness),
                "--pattern",
                pattern,
                "--ranks",
                str(n),
                "--timesteps",
                str(steps),
                *extra,
                "-o",
                str(stem.with_suffix(".sct")),
            ]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            write_text(stem.with_suffix(".json"), out)
        stats[label] = (
            json.loads(stem.with_suffix(".json").read_text()),
            scalatrace.load(stem.with_suffix(".sct")),
        )
    (sf, full), (sk, clustered) = stats["full"], stats["k"]
    seconds, _ = timed_clusters(full, k)
    sim_full, sim_k, sim_error = simulated_time_error(full, clustered)
    sim_median_error = simulated_time_error(full, clustered, "median")[2]
    return {
        "sim_median_error": sim_median_error,
        "sim_full": sim_full,
        "sim_k": sim_k,
        "sim_error": sim_error,
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
        f"Command: `{command}`. Machine: 2 cores, single runs, so times are indicative only; real "
        "runs with more than 2 ranks are oversubscribed (which does not change trace contents or "
        "the simulated times).",
        "",
        f"K = {k}. Matrix error: sum |M_K - M_full| / sum M_full of the point-to-point byte matrix. "
        "Merge: rank 0's `merge_seconds` (real runs) or the harness's parallel critical path of the "
        "radix-tree merge (the figure comparable to the collector). Clustering: the collector's "
        "signature building + K-farthest on rank 0 (real runs, `clusters.seconds`) or the in-process "
        "K-farthest over all signatures (harness). Python: `Trace.clusters(k)` on the full trace "
        "(signatures + K-farthest). Simulated time: `scalatrace.simulate()` of the full and the "
        "clustered trace (default LogGP, mean compute), error = T_K / T_full - 1; the median column "
        "takes each node's median compute instead (robust to a descheduled call). Real rows: "
        "matrix and time error compare the clustered trace with the full trace compressed from "
        "the raw streams of the same run (same recorded compute); sizes and merge times come "
        "from a separate fully traced run.",
        "",
        "| case | clusters | matrix error | simulated s full / K | time error | time error (median) "
        "| trace bytes full / K | merge s full / K | clustering s | Python clusters() s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['clusters']} | {r['matrix_error']:.2%} | {r['sim_full']:.6g} / {r['sim_k']:.6g} "
            f"| {r['sim_error']:+.2%} | {r['sim_median_error']:+.2%} | {r['bytes_full']} / {r['bytes_k']} | "
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
    ap.add_argument(
        "--real-iterations",
        type=int,
        default=20,
        help="timesteps of the real runs (-i); more average out oversubscription noise",
    )
    ap.add_argument(
        "--real-cases",
        nargs="+",
        metavar="NAME:RANKS",
        default=None,
        help="real runs to make (default: the standard set)",
    )
    ap.add_argument(
        "--real-compute-us",
        type=int,
        nargs="+",
        default=[None],
        help="-c of the real runs (default: the examples' own)",
    )
    ap.add_argument("--repeats", type=int, default=1, help="real runs per case and compute")
    ap.add_argument("--skip-harness", action="store_true")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    cases = (
        REAL
        if args.real_cases is None
        else [(c.split(":")[0], int(c.split(":")[1])) for c in args.real_cases]
    )
    if not args.skip_real:
        for name, n in cases:
            for compute in args.real_compute_us:
                for repeat in range(args.repeats):
                    rows.append(
                        real_row(name, n, args.k, args.work, args.real_iterations, compute, repeat)
                    )
                    print(rows[-1], flush=True)
    for pattern, n in [] if args.skip_harness else HARNESS:
        rows.append(harness_row(pattern, n, args.k, args.harness_timesteps, args.work))
        print(rows[-1], flush=True)
    command = "python benchmarks/clustering_bench.py " + " ".join(sys.argv[1:])
    write_text(args.out, emit(rows, args.k, command.strip()))


if __name__ == "__main__":
    main()
