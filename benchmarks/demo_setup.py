#!/usr/bin/env python3
"""Times `make demo` as a new user runs it: a fresh clone, nothing built, then `make demo`.

Usage: ``python3 benchmarks/demo_setup.py [--no-ccache] [--keep DIR]`` from the repository.
Clones HEAD of this checkout into a temporary directory, runs ``make demo`` there and reports
the wall time, the longest stretch without output (the Makefile promises a line at least every
20 s) and the load average before and after (the machine is shared: say so beside the figure).
``--no-ccache`` sets ``CCACHE_DISABLE=1`` (a machine without a warm compiler cache).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-ccache", action="store_true", help="CCACHE_DISABLE=1")
    parser.add_argument("--keep", default=None, help="clone into DIR and keep it")
    args = parser.parse_args()
    where = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="scalatrace-demo-"))
    subprocess.run(["git", "clone", "-q", str(REPO), str(where)], check=True)
    env = dict(os.environ)
    env.pop("SCALATRACE_BUILD_DIR", None)
    if args.no_ccache:
        env["CCACHE_DISABLE"] = "1"
    load_before = os.getloadavg()
    start = last = time.monotonic()
    longest_silence = 0.0
    proc = subprocess.Popen(
        ["make", "demo"], cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdout is not None
    for _line in proc.stdout:
        now = time.monotonic()
        longest_silence = max(longest_silence, now - last)
        last = now
    code = proc.wait()
    wall = time.monotonic() - start
    load_after = os.getloadavg()
    print(f"make demo in a fresh clone ({where}): exit {code}, {wall:.0f} s wall")
    print(f"longest stretch without output: {longest_silence:.0f} s")
    print(f"ccache: {'disabled' if args.no_ccache else 'as configured'}")
    print(f"load average before: {load_before[0]:.1f}, after: {load_after[0]:.1f} (2-core machine)")
    return code


if __name__ == "__main__":
    sys.exit(main())
