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
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "py"))
import helpers  # noqa: E402

CASES = {"stencil1d": [4, 8, 16, 32, 64], "stencil2d": [4, 16, 36, 64], "stencil3d": [8, 27, 64]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", default="5")
    ap.add_argument("--out")
    a = ap.parse_args()
    lines = ["", "## Real MPI: merged stencil trace size from 4 to 64 ranks", "",
             f"Command: `python benchmarks/real_scaling.py --iterations {a.iterations}` "
             f"(each example with `-i {a.iterations} -c 0`, every merged trace checked lossless "
             "against the raw streams with `scalatrace-dump check`).", "",
             "| example | ranks | .sct bytes | structure bytes | nodes | merge at Finalize (ms) | run wall (s) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, sizes in CASES.items():
        for n in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                raw, out = Path(tmp) / "raw", Path(tmp) / "t.sct"
                env = helpers.collector_env(raw=raw, out=out, quiet=1)
                start = time.perf_counter()
                helpers.run_mpi(n, [helpers.example_path(name), "-i", a.iterations, "-c", "0"],
                                env=env, timeout=600)
                wall = time.perf_counter() - start
                check = json.loads(helpers.run_tool("scalatrace-dump", ["check", raw, out]).stdout)
                assert check["ok"], check
                stats = json.loads(helpers.run_tool(
                    "scalatrace-harness", ["merge-raw", raw, "-o", Path(tmp) / "off.sct"]).stdout)
                meta = json.loads(helpers.run_tool(
                    "scalatrace-dump", ["trace", out, "--rank", "0"]).stdout)["metadata"]
                ms = float(meta.get("merge_seconds", "nan")) * 1000
                lines.append(f"| {name} | {n} | {out.stat().st_size} | {stats['structure_bytes']} | "
                             f"{check['trace_nodes']} | {ms:.1f} | {wall:.1f} |")
                print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "a") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
