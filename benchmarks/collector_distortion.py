"""How much a traced run's recorded per-message cost exceeds the untraced program's (issue 35).

    python benchmarks/collector_distortion.py [--repeats 30] [--sweeps 64] [--ns 256 512 1024]
                                              [--collector LABEL=PATH ...] [--out FILE.md]

The blocked pipeline (tests/py/programs/blocked_pipeline.c) at 2 ranks, K = 2 (the smallest
block: the per-message cost is the largest part of a stage), N in ``--ns``. Per repeat and N,
one untraced run and one traced run per collector, back to back (paired: a slow spell of the
machine touches both). Untraced stage time: the program's elapsed time / (sweeps x (N / K + 1))
(the sweep's blocks plus its fill; the Allreduce's share, ~30-50 ns here, is in it too). Traced
stage time: what ``scalatrace.model`` fits, the one-way shift's time per occurrence from the
trace (``scalatrace.models.measure``), the collector's own time already left out. Their
difference is what the trace still carries of the collector per message: it is what moves the
model's optimal block size above the untraced program's (the optimum goes as the square root of
the per-message cost). Time it under the timing lock at SCHED_FIFO on a shared machine.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import scalatrace
from scalatrace._paths import collector_library
from scalatrace.models import measure

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "py" / "programs" / "blocked_pipeline.c"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--sweeps", type=int, default=64)
    ap.add_argument("--ns", type=int, nargs="+", default=[256, 512, 1024])
    ap.add_argument(
        "--collector",
        action="append",
        default=[],
        help="LABEL=PATH of a libscalatrace.so to compare (default: the installed one)",
    )
    ap.add_argument("--out", default=None, help="markdown file for the table")
    args = ap.parse_args()
    libs = dict(c.split("=", 1) for c in args.collector) or {"installed": str(collector_library())}
    mpicc = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    mpiexec = shutil.which("mpiexec.mpich") or "mpiexec"
    if mpicc is None:
        sys.exit("mpicc (MPICH) not found")
    work = Path(tempfile.mkdtemp(prefix="distortion_"))
    exe = work / "blocked_pipeline"
    subprocess.run([mpicc, "-O2", str(PROGRAM), "-o", str(exe)], check=True)
    k, s = 2, args.sweeps
    rows: dict[int, list[list[float]]] = {n: [] for n in args.ns}
    for _ in range(args.repeats):
        for n in args.ns:
            argv = [str(exe), str(n), str(k), str(s), "1"]
            plain = subprocess.run(
                [mpiexec, "-n", "2", *argv], capture_output=True, text=True, check=True
            )
            row = [float(plain.stdout.split()[1]) / (s * (-(-n // k) + 1)) * 1e9]
            for lib in libs.values():
                out = work / "t.sct"
                subprocess.run(
                    [
                        mpiexec,
                        "-n",
                        "2",
                        "env",
                        f"LD_PRELOAD={lib}",
                        f"SCALATRACE_OUT={out}",
                        *argv,
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                row.append(measure(scalatrace.load(out)).phases[1].per_occurrence * 1e9)
            rows[n].append(row)
    head = "| N | untraced stage ns | " + " | ".join(
        f"{label}: traced stage ns | {label}: traced - untraced, median [25 %, 75 %] of pairs"
        for label in libs
    )
    lines = [head + " |", "|---|---:|" + "---:|---:|" * len(libs)]
    for n, rs in rows.items():
        v = np.array(rs)
        cells = [f"{n}", f"{np.median(v[:, 0]):.0f}"]
        for j in range(len(libs)):
            d = v[:, j + 1] - v[:, 0]
            q1, q3 = np.percentile(d, [25, 75])
            cells += [
                f"{np.median(v[:, j + 1]):.0f}",
                f"{np.median(d):+.0f} [{q1:+.0f}, {q3:+.0f}]",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
