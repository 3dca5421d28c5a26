"""Benchmark generation: a coNCePTuaL or a C+MPI program that communicates like the trace.

The generators live in the compiled core (thesis ch. 4; see ``docs/codegen.md``); this module
is the Python face: :func:`to_c`, :func:`to_conceptual`, :func:`resolve_wildcards`,
:func:`write_benchmark` (used by ``scalatrace generate``) and :func:`compile_c`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from . import _core
from ._base import check_bool, check_int
from ._conceptual_per_rank import per_rank_program
from ._files import write_text
from .errors import DeadlockError, ScalatraceError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ._model import TraceModel

__all__ = [
    "DeadlockError",
    "to_c",
    "to_conceptual",
    "resolve_wildcards",
    "unaligned_collectives",
    "write_benchmark",
    "compile_c",
]


def _core_of(trace: TraceModel) -> _core.Trace:
    core = getattr(trace, "_core", trace)
    if not isinstance(core, _core.Trace):
        raise UsageError(f"expected a scalatrace.Trace, got {type(trace).__name__}")
    return core


def to_c(
    trace: TraceModel,
    resolve_wildcards: bool = False,
    computation: bool = True,
    min_compute_ns: int = 500,
) -> str:
    """A standalone C+MPI program issuing every rank's recorded MPI calls in order.

    Parameters
    ----------
    trace : Trace
        The trace to turn into a benchmark.
    resolve_wildcards : bool
        Replace ``MPI_ANY_SOURCE`` receives by the senders Algorithm 3 matches them with
        (deterministic benchmark); default keeps the recorded wildcards (exact reproduction).
    computation : bool
        Emit the recorded computation between calls as calibrated busy loops.
    min_compute_ns : int
        Leave out computation shorter than this (mean, nanoseconds).

    Returns
    -------
    str
        C source; build with ``mpicc -O2 -o bench bench.c`` and run with the trace's rank count.

    Raises
    ------
    DeadlockError
        ``resolve_wildcards=True`` and the wildcards cannot be matched without a deadlock.
    """
    core = _core_of(trace)
    min_compute_ns = check_int("min_compute_ns", min_compute_ns, lo=0)
    return _core.generate_c(
        core,
        check_bool("resolve_wildcards", resolve_wildcards),
        check_bool("computation", computation),
        min_compute_ns,
    )


def to_conceptual(trace: TraceModel, computation: bool = True, min_compute_ns: int = 500) -> str:
    """A coNCePTuaL program (thesis ch. 4) for the trace; wildcard sources and tags are always
    resolved (Algorithm 3).

    Where the language cannot express the trace exactly (persistent requests, Table 4.1's
    approximations of collectives, values that follow no pattern of the loop variables, ...) the
    program says so in a ``# note:`` comment, and each note is also issued as a
    :class:`UserWarning`. Check a program with the real compiler:
    :func:`scalatrace.conceptual.compile_conceptual`.

    Raises
    ------
    DeadlockError
        The trace's wildcard receives cannot be matched without a deadlock.
    """
    core = _core_of(trace)
    min_compute_ns = check_int("min_compute_ns", min_compute_ns, lo=0)
    computation = check_bool("computation", computation)
    text = _core.generate_conceptual(core, computation, min_compute_ns)
    if "# note: unaligned collective" in text:
        # the ranks' k-th collectives are in different nodes: written per rank where it can be
        per_rank = per_rank_program(trace, computation, min_compute_ns)
        if per_rank is not None:
            text = per_rank
    for line in text.splitlines():
        if line.startswith("# note: "):
            warnings.warn(f"coNCePTuaL benchmark: {line[len('# note: ') :]}", stacklevel=2)
    return text


def resolve_wildcards(trace: TraceModel) -> tuple[TraceModel, list[tuple[int, int, str, int]]]:
    """Algorithm 3: the trace with every wildcard source replaced by its matched sender.

    Returns
    -------
    (Trace, list of (rank, position, op, source))
        The resolved trace and, per resolved event, the receiving rank, the event's index in
        that rank's event sequence, its op and the world rank of the matched sender.

    Raises
    ------
    DeadlockError
        Naming the blocked events when the wildcards cannot be matched without a deadlock.
    """
    from ._model import wrap

    core, rows = _core.resolve_wildcards(_core_of(trace))
    return wrap(core), [tuple(r) for r in rows]


def unaligned_collectives(trace: TraceModel) -> list[str]:
    """Collective nodes not executed by all members of their communicator (Algorithm 2's check)."""
    return list(_core.unaligned_collectives(_core_of(trace)))


def write_benchmark(
    trace: TraceModel,
    lang: Literal["c", "conceptual"],
    output: str | os.PathLike[str],
    resolve_wildcards: bool = False,
) -> Path:
    """Writes the benchmark for ``trace`` in ``lang`` to ``output`` and returns its path."""
    if lang == "c":
        text = to_c(trace, resolve_wildcards=resolve_wildcards)
    elif lang == "conceptual":
        text = to_conceptual(trace)
    else:
        raise UsageError(f"lang must be 'c' or 'conceptual', not {lang!r}")
    return write_text(output, text)


def compile_c(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    mpicc: str | None = None,
    timeout: float = 300,
) -> Path:
    """Compiles a generated C benchmark with ``mpicc -O2``; ScalatraceError with the compiler
    output if it fails, FileNotFoundError if no MPICH ``mpicc`` is found."""
    cc = mpicc or shutil.which("mpicc.mpich") or shutil.which("mpicc")
    if cc is None:
        raise FileNotFoundError("no mpicc found (install MPICH: mpicc.mpich)")
    src = Path(source)
    if not src.is_file():
        raise FileNotFoundError(f"no C source at {src}")
    proc = subprocess.run(
        [cc, "-O2", "-o", str(output), str(src)], capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise ScalatraceError(f"{cc} failed on {src}:\n{proc.stderr[-4000:]}")
    return Path(output)
