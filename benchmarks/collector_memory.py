#!/usr/bin/env python3
"""Peak memory of a traced rank on a growing irregular event stream, and what SCALATRACE_MEMORY
changes about it.

Compiles benchmarks/irregular_growth.c (N MPI_Iprobe calls from 16 call sites in a
pseudo-random order with pseudo-random tags: nothing repeats) with mpicc.mpich and runs it on
2 ranks uninstrumented, under the collector without compressed output (SCALATRACE_OUT=none),
in the default mode, and with SCALATRACE_MEMORY=1M. The program reports each rank's VmHWM
(/proc/self/status) at the end of its calls (the recording phase) and after MPI_Finalize
(which includes the compressed queue's conversion and the cross-rank merge; rank 0 also
merges rank 1's trace and writes the file).

usage: collector_memory.py [--build-dir DIR] [--calls N[,N...]] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from report import write_report  # noqa: E402

LINE = re.compile(r"rank (\d+) calls (\d+) peak_recording_kib (-?\d+) peak_final_kib (-?\d+)")


def run(
    exe: Path, calls: int, env: dict[str, str], cwd: Path
) -> tuple[dict[int, tuple[int, int]], float]:
    mpiexec = os.environ.get("SCALATRACE_MPIEXEC") or shutil.which("mpiexec.mpich") or "mpiexec"
    cmd = [
        mpiexec,
        "-n",
        "2",
        "env",
        *[f"{k}={v}" for k, v in env.items()],
        str(exe),
        "-n",
        str(calls),
    ]
    start = time.perf_counter()
    out = subprocess.run(
        cmd, check=True, capture_output=True, text=True, timeout=3600, cwd=cwd
    ).stdout
    wall = time.perf_counter() - start
    peaks = {int(m[1]): (int(m[3]), int(m[4])) for m in LINE.finditer(out)}
    return peaks, wall


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--build-dir", default=os.environ.get("SCALATRACE_BUILD_DIR", ROOT / "build" / "py")
    )
    ap.add_argument("--calls", default="25000,50000,100000")
    ap.add_argument("--out", default=None, help="write a markdown report here")
    a = ap.parse_args()
    lib = Path(
        os.environ.get(
            "SCALATRACE_COLLECTOR", Path(a.build_dir) / "cpp" / "pmpi" / "libscalatrace.so"
        )
    )
    if not lib.is_file():
        sys.exit(f"collector_memory: {lib} not found")
    counts = [int(c) for c in a.calls.split(",")]
    lines = [
        "# Collector memory on a growing irregular stream",
        "",
        f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
        f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()}), MPICH, 2 ranks.",
        "",
        f"Command: `python benchmarks/collector_memory.py --calls {a.calls}`",
        "",
        "`benchmarks/irregular_growth.c`: N `MPI_Iprobe` calls from 16 call sites in a "
        "pseudo-random order with pseudo-random tags (nothing repeats). Peak resident memory "
        "(VmHWM, MB) per rank at the end of the calls (recording) and after `MPI_Finalize` "
        "(conversion of the compressed queue, cross-rank merge, rank 0 writes the trace).",
        "",
        "`compressor peak` is the trace's `compressor_peak_bytes` (the largest queue estimate "
        "any rank measured: what `SCALATRACE_MEMORY` bounds), `segments` its `rank_segments`.",
        "",
        "| calls per rank | setting | rank 0 recording | rank 0 final | rank 1 recording | rank 1 final "
        "| compressor peak MB | segments | wall s | .sct bytes |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "irregular_growth"
        subprocess.run(
            ["mpicc.mpich", "-O0", str(ROOT / "benchmarks" / "irregular_growth.c"), "-o", str(exe)],
            check=True,
        )
        out = Path(tmp) / "t.sct"
        configs = [
            ("uninstrumented", {}),
            ("`SCALATRACE_OUT=none`", {"LD_PRELOAD": str(lib), "SCALATRACE_OUT": "none"}),
            ("default", {"LD_PRELOAD": str(lib), "SCALATRACE_OUT": str(out)}),
            (
                "`SCALATRACE_MEMORY=1M`",
                {"LD_PRELOAD": str(lib), "SCALATRACE_OUT": str(out), "SCALATRACE_MEMORY": "1M"},
            ),
            (
                "`SCALATRACE_MEMORY=16M`",
                {"LD_PRELOAD": str(lib), "SCALATRACE_OUT": str(out), "SCALATRACE_MEMORY": "16M"},
            ),
        ]
        for calls in counts:
            for name, env in configs:
                if out.exists():
                    out.unlink()
                peaks, wall = run(exe, calls, {**env, "SCALATRACE_QUIET": "1"}, Path(tmp))
                size = out.stat().st_size if out.exists() else 0
                peak, segments = "-", "-"
                if size:
                    import scalatrace

                    md = scalatrace.load(out).metadata
                    peak = f"{int(md['compressor_peak_bytes']) / 2**20:.1f}"
                    segments = md.get("rank_segments", "0").split()[0]
                mb = {r: (p[0] / 1024, p[1] / 1024) for r, p in peaks.items()}
                lines.append(
                    f"| {calls} | {name} | {mb[0][0]:.0f} | {mb[0][1]:.0f} | {mb[1][0]:.0f} | "
                    f"{mb[1][1]:.0f} | {peak} | {segments} | {wall:.1f} | {size or '-'} |"
                )
                print(lines[-1], flush=True)
    write_report(lines, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
