#!/usr/bin/env python3
"""Times `make demo` as a new user runs it: a fresh clone, nothing built, then `make demo`.

Usage: ``python3 benchmarks/demo_setup.py [--no-ccache] [--no-pip-cache] [--keep DIR]`` from the
repository. Clones HEAD of this checkout into a temporary directory, runs ``make demo`` there in
its three phases (``make system .venv/.runtime-stamp``: venv and requirements; ``make package``:
the package's CMake build; ``.venv/bin/python -m scalatrace.demo``: the demo, as ``make demo``
runs it after ``make package``) and reports each phase's wall and CPU time (user + sys: on a
loaded machine the wall time is an upper bound; the idle 2-core estimate counts pip's CPU once
and the compiler's and the demo's halved), the longest stretch without output (the Makefile
promises a line at least every 20 s) and the load average before and after (the machine is
shared: say so beside the figure).
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


# `make demo` in its three phases, one command each (make is idempotent: each starts where the
# previous stopped), so that each phase's CPU time can be read from the children's resource usage.
# The last is what `make demo` runs after `make package` (with the Makefile's SCALATRACE_BUILD_DIR).
PHASES = [
    ("venv + requirements", ["make", "system", ".venv/.runtime-stamp"]),
    ("package build", ["make", "package"]),
    ("demo", [".venv/bin/python", "-m", "scalatrace.demo"]),
]


def cpu_of_children() -> float:
    """User + system CPU seconds of all finished children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_phase(
    command: list[str], where: Path, env: dict[str, str]
) -> tuple[int, float, float, float]:
    """Runs one make command, passing its output through; exit code, wall, CPU, longest silence."""
    cpu_before = cpu_of_children()
    start = last = time.monotonic()
    longest_silence = 0.0
    proc = subprocess.Popen(
        command, cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
        now = time.monotonic()
        longest_silence = max(longest_silence, now - last)
        last = now
    code = proc.wait()
    return code, time.monotonic() - start, cpu_of_children() - cpu_before, longest_silence


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-ccache", action="store_true", help="CCACHE_DISABLE=1")
    parser.add_argument("--no-pip-cache", action="store_true", help="PIP_NO_CACHE_DIR=1")
    parser.add_argument("--keep", default=None, help="clone into DIR and keep it")
    args = parser.parse_args()
    where = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="scalatrace-demo-"))
    subprocess.run(["git", "clone", "-q", str(REPO), str(where)], check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True
    ).stdout.strip()
    env = dict(os.environ)
    env["SCALATRACE_BUILD_DIR"] = str(where / "build" / "py")
    if args.no_ccache:
        env["CCACHE_DISABLE"] = "1"
    if args.no_pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    load_before = os.getloadavg()
    results = []
    code = 0
    for name, command in PHASES:
        code, wall, cpu, silence = run_phase(command, where, env)
        results.append((name, wall, cpu, silence))
        if code != 0:
            break
    load_after = os.getloadavg()
    wall = sum(r[1] for r in results)
    cpu = sum(r[2] for r in results)
    print(
        f"\nmake demo in a fresh clone of {commit} ({where}): exit {code}, {wall:.0f} s wall, {cpu:.0f} s CPU"
    )
    for name, phase_wall, phase_cpu, _ in results:
        print(f"  {name:20s} {phase_wall:7.0f} s wall {phase_cpu:7.0f} s CPU (user + sys)")
    # On an idle 2-core machine: pip installs one package after another (one core), the
    # compiler runs and the demo's ranks use both cores.
    cpu_by = {r[0]: r[2] for r in results}
    idle = (
        cpu_by.get(PHASES[0][0], 0.0)
        + (cpu_by.get(PHASES[1][0], 0.0) + cpu_by.get(PHASES[2][0], 0.0)) / 2
    )
    print(
        f"idle 2-core estimate (requirements CPU + (package + demo CPU) / 2, no waiting for "
        f"downloads): {idle:.0f} s; all CPU / 2: {cpu / 2:.0f} s"
    )
    print(f"longest stretch without output: {max(r[3] for r in results):.0f} s")
    print(
        f"ccache: {'disabled' if args.no_ccache else 'as configured'}; "
        f"pip cache: {'disabled' if args.no_pip_cache else 'as configured'}"
    )
    print(f"load average before: {load_before[0]:.1f}, after: {load_after[0]:.1f} (2-core machine)")
    return code


if __name__ == "__main__":
    sys.exit(main())
