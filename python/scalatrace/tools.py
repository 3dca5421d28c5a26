"""Console entry points for the C++ tools shipped inside the package (``scalatrace-dump``,
``scalatrace-replay``, ``scalatrace-harness``, ``scalatrace-calibrate``), so that they are on the
virtual environment's ``PATH`` like the ``scalatrace`` command (pyproject ``[project.scripts]``).
Each replaces the Python process with the tool (``os.execv``): arguments, exit status, signals
and standard streams are the tool's own.
"""

from __future__ import annotations

import os
import sys

from . import _paths
from .errors import ScalatraceError


def _run(name: str) -> int:
    try:
        path = _paths.tool(name)
    except ScalatraceError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 127
    os.execv(path, [name, *sys.argv[1:]])
    return 127  # not reached: execv does not return


def dump() -> int:
    """``scalatrace-dump``: the trace and raw-stream inspector (docs/format.md)."""
    return _run("scalatrace-dump")


def replay() -> int:
    """``scalatrace-replay``: the MPI replay engine (run under mpiexec; docs/replay.md)."""
    return _run("scalatrace-replay")


def harness() -> int:
    """``scalatrace-harness``: synthetic per-rank streams through the compressor and merge."""
    return _run("scalatrace-harness")


def calibrate() -> int:
    """``scalatrace-calibrate``: the LogGP ping-pong measurement (run under mpiexec)."""
    return _run("scalatrace-calibrate")
