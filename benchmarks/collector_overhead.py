#!/usr/bin/env python3
"""Cost per MPI call of the collector (libscalatrace.so), measured with collector_bench.

Runs collector_bench on 2 ranks uninstrumented and under the collector in the mode users get
by default (online compression on, trace written at MPI_Finalize), with the compressed output
off (SCALATRACE_OUT=none: recording only), with the raw stream, and under Pilgrim if a build of
it is given (--pilgrim, or the one benchmarks/pilgrim_compare.py leaves in its scratch
directory), REPEATS times each, alternating, and reports the median ns per call of each kernel
and the added cost per call (median traced - median plain). The added cost covers the whole
wrapper: reentrancy guard, timing, call-site stack walk and lookup, lock, recording, and in the
default mode the online compression of the event (default - OUT=none = compression per event).

usage: collector_overhead.py [--build-dir DIR] [--repeats R] [--calls N] [--pilgrim LIB]
                             [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from report import write_report  # noqa: E402

KERNELS = ("iprobe", "comm_rank", "pingpong")


def run(bench: Path, calls: int, env: dict[str, str], cwd: Path) -> dict:
    mpiexec = os.environ.get("SCALATRACE_MPIEXEC") or shutil.which("mpiexec.mpich") or "mpiexec"
    cmd = [
        mpiexec,
        "-n",
        "2",
        "env",
        *[f"{k}={v}" for k, v in env.items()],
        str(bench),
        "-n",
        str(calls),
    ]
    out = subprocess.run(
        cmd, check=True, capture_output=True, text=True, timeout=600, cwd=cwd
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--build-dir", default=os.environ.get("SCALATRACE_BUILD_DIR", ROOT / "build" / "py")
    )
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument(
        "--pilgrim",
        default=str(
            Path(tempfile.gettempdir()) / "scalatrace-pilgrim" / "install" / "lib" / "libpilgrim.so"
        ),
        help="libpilgrim.so to compare with (skipped if missing)",
    )
    ap.add_argument("--out", default=None, help="write a markdown report here")
    a = ap.parse_args()
    build = Path(a.build_dir)
    bench = build / "benchmarks" / "collector_bench"
    lib = Path(os.environ.get("SCALATRACE_COLLECTOR", build / "cpp" / "pmpi" / "libscalatrace.so"))
    for p in (bench, lib):
        if not p.is_file():
            sys.exit(f"collector_overhead: {p} not found (build with SCALATRACE_BUILD_TESTS=ON)")
    pilgrim = Path(a.pilgrim) if a.pilgrim and Path(a.pilgrim).is_file() else None

    with tempfile.TemporaryDirectory() as tmp:
        quiet = {"SCALATRACE_QUIET": "1"}
        configs = {
            "plain": {},
            "default": {
                "LD_PRELOAD": str(lib),
                "SCALATRACE_OUT": str(Path(tmp) / "bench.sct"),
                **quiet,
            },
            "none": {"LD_PRELOAD": str(lib), "SCALATRACE_OUT": "none", **quiet},
            "raw": {
                "LD_PRELOAD": str(lib),
                "SCALATRACE_OUT": "none",
                "SCALATRACE_RAW": str(Path(tmp) / "raw"),
                **quiet,
            },
        }
        if pilgrim:
            configs["pilgrim"] = {"LD_PRELOAD": str(pilgrim)}
        samples: dict[str, dict[str, list[float]]] = {c: {k: [] for k in KERNELS} for c in configs}
        for _ in range(a.repeats):
            for name, env in configs.items():
                cwd = Path(tmp) / name
                cwd.mkdir(exist_ok=True)
                result = run(bench, a.calls, env, cwd)
                for k in KERNELS:
                    samples[name][k].append(result[k])
    med = {c: {k: statistics.median(v) for k, v in ks.items()} for c, ks in samples.items()}

    columns = [
        ("default", "default mode (compression on, trace written)"),
        ("none", "`SCALATRACE_OUT=none` (recording only)"),
        ("raw", "`OUT=none` + `SCALATRACE_RAW`"),
    ]
    if pilgrim:
        columns.append(("pilgrim", "Pilgrim (default settings)"))
    command = [
        "python",
        "benchmarks/collector_overhead.py",
        f"--repeats {a.repeats}",
        f"--calls {a.calls}",
    ]
    lines = [
        "# Collector overhead per MPI call",
        "",
        f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
        f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()}), MPICH, 2 ranks, "
        f"{a.calls} calls per kernel, median of {a.repeats} runs, load average "
        f"{os.getloadavg()[0]:.0f} at the end.",
        "",
        "Command: `" + " ".join(command) + "`",
        "",
        "Added ns per call (median traced - median plain; plain ns/call in the second column):",
        "",
        "| kernel | plain | "
        + " | ".join(title for _, title in columns)
        + " | compression (default - none) |",
        "|---|---:|" + "---:|" * len(columns) + "---:|",
    ]
    for k in KERNELS:
        p = med["plain"][k]
        cells = [f"{med[c][k] - p:.0f}" for c, _ in columns]
        lines.append(
            f"| {k} | {p:.0f} | "
            + " | ".join(cells)
            + f" | {med['default'][k] - med['none'][k]:.0f} |"
        )
    lines += [
        "",
        "Kernels: `iprobe` = MPI_Iprobe finding nothing (traced op), `comm_rank` = "
        "MPI_Comm_rank (counted as Op::Other): CPU time of the calling thread per call "
        "(robust against the machine being oversubscribed); `pingpong` = 8-byte Send/Recv "
        "ping-pong, wall time per call (dominated by MPICH's latency on 2 shared cores, "
        "so its difference is noisy and shown for scale only). The default mode records "
        "every event (call-site walk with libunwind, lookup, event) and pushes it into the "
        "rank's online compressor; the trace is written at MPI_Finalize, outside the timed "
        "loops. `OUT=none` records without compressing; `+ SCALATRACE_RAW` also streams "
        "each event to the raw file.",
        "",
    ]
    write_report(lines, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
