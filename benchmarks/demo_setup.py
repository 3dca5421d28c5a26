#!/usr/bin/env python3
"""Times `make demo` as a new user runs it: a fresh clone, nothing built, then `make demo`.

Usage: ``python3 benchmarks/demo_setup.py [--no-ccache] [--no-pip-cache] [--keep DIR]`` from the
repository. Clones HEAD of this checkout into a temporary directory, runs ``make demo`` there and
reports the wall time, split into its phases (venv and requirements; the package's CMake build;
the demo itself), the CPU time of everything it ran (user + sys: on a loaded machine the wall
time is an upper bound, the CPU time divided by the 2 cores a lower bound of the idle wall time
of the build), the longest stretch without output (the Makefile promises a line at least every
20 s) and the load average before and after (the machine is shared: say so beside the figure).
``--no-ccache`` sets ``CCACHE_DISABLE=1`` (a machine without a warm compiler cache),
``--no-pip-cache`` sets ``PIP_NO_CACHE_DIR=1`` (nothing downloaded before).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-ccache", action="store_true", help="CCACHE_DISABLE=1")
    parser.add_argument("--no-pip-cache", action="store_true", help="PIP_NO_CACHE_DIR=1")
    parser.add_argument("--keep", default=None, help="clone into DIR and keep it")
    args = parser.parse_args()
    where = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="scalatrace-demo-"))
    subprocess.run(["git", "clone", "-q", str(REPO), str(where)], check=True)
    env = dict(os.environ)
    env.pop("SCALATRACE_BUILD_DIR", None)
    if args.no_ccache:
        env["CCACHE_DISABLE"] = "1"
    if args.no_pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    load_before = os.getloadavg()
    start = last = time.monotonic()
    longest_silence = 0.0
    proc = subprocess.Popen(
        ["make", "demo"], cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdout is not None
    # Where the phases begin: the package's build (pip building scalatrace), the demo.
    marks = {b'--label "building scalatrace"': "build", b"-m scalatrace.demo": "demo"}
    begun: dict[str, float] = {}
    for line in proc.stdout:
        now = time.monotonic()
        longest_silence = max(longest_silence, now - last)
        last = now
        for text, phase in marks.items():
            if text in line and phase not in begun:
                begun[phase] = now - start
    code = proc.wait()
    wall = time.monotonic() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_after = os.getloadavg()
    print(f"make demo in a fresh clone ({where}): exit {code}, {wall:.0f} s wall")
    build, demo = begun.get("build", wall), begun.get("demo", wall)
    print(
        f"phases: venv + requirements {build:.0f} s, package build {demo - build:.0f} s, "
        f"demo {wall - demo:.0f} s"
    )
    print(f"CPU time of everything run: {used.ru_utime + used.ru_stime:.0f} s (user + sys)")
    print(f"longest stretch without output: {longest_silence:.0f} s")
    print(
        f"ccache: {'disabled' if args.no_ccache else 'as configured'}; "
        f"pip cache: {'disabled' if args.no_pip_cache else 'as configured'}"
    )
    print(f"load average before: {load_before[0]:.1f}, after: {load_after[0]:.1f} (2-core machine)")
    return code


if __name__ == "__main__":
    sys.exit(main())
