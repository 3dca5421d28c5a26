"""Where the installed collector library, tools and MPI launcher live."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import ScalatraceError

_PACKAGE_DIR = Path(__file__).resolve().parent


def collector_library() -> Path:
    """Path of the PMPI collector ``libscalatrace.so`` shipped inside the package."""
    path = _PACKAGE_DIR / "lib" / "libscalatrace.so"
    if not path.is_file():
        raise ScalatraceError(f"collector library not found at {path}; is scalatrace installed?")
    return path


def tool(name: str) -> Path:
    """Path of an executable shipped in the package's ``bin`` directory (e.g. ``scalatrace-replay``)."""
    path = _PACKAGE_DIR / "bin" / name
    if not path.is_file():
        raise ScalatraceError(
            f"tool {name!r} not found at {path}; is scalatrace installed? (`make demo` installs the "
            "package without scalatrace-dump, -harness and -calibrate: `make build` adds them)"
        )
    return path


def mpiexec() -> str:
    """The MPICH launcher: ``$SCALATRACE_MPIEXEC``, else ``mpiexec.mpich``, else ``mpiexec``."""
    configured = os.environ.get("SCALATRACE_MPIEXEC")
    if configured:
        return configured
    for name in ("mpiexec.mpich", "mpiexec"):
        found = shutil.which(name)
        if found:
            return found
    raise ScalatraceError("no MPI launcher found (install MPICH or set SCALATRACE_MPIEXEC)")
