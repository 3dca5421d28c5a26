"""The ``mpi_span.c`` shim, for benchmarks that time a program without the collector: built into
a shared library to preload, and its report read back from a run's standard error."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "mpi_span.c"


def build_shim(directory: Path) -> Path:
    """Compiles the shim into ``directory/libmpi_span.so`` with MPICH's compiler (the launcher,
    ``scalatrace._paths.mpiexec``, is MPICH's) and returns that path."""
    library = directory / "libmpi_span.so"
    mpicc = shutil.which("mpicc.mpich") or "mpicc"
    subprocess.run([mpicc, "-shared", "-fPIC", "-O2", "-o", str(library), str(SOURCE)], check=True)
    return library


def reported_span(stderr: str) -> float | None:
    """The span the shim printed ("mpi_span <seconds>", rank 0, the slowest rank's), in seconds;
    None if it printed none."""
    spans = [line.split()[1] for line in stderr.splitlines() if line.startswith("mpi_span ")]
    return float(spans[-1]) if spans else None
