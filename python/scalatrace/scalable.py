"""Scalable benchmarks (thesis §4.4.5): one program for every valid rank count.

:func:`scalable_benchmark` extrapolates traces of one program at several sizes
(:func:`scalatrace.extrapolate`'s laws, see ``docs/extrapolation.md``) and writes a coNCePTuaL
or C+MPI program whose task sets (the roles: boundary classes of the process grid), peers,
tags, sizes and repeat counts are expressions of the rank count and of the grid sizes derived
from it, so the same program runs at any size where every rank's role is one the inputs showed.
The program checks that at start and stops with a message otherwise. See ``docs/codegen.md``,
"Scalable benchmarks".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from ._scalable_c import write_c
from ._scalable_conceptual import write_conceptual
from ._scalable_laws import ScalableProgram, program_from_traces, supported_grid
from .errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ._model import TraceModel

__all__ = ["ScalableProgram", "program_from_traces", "scalable_benchmark", "supported_grid"]


def scalable_benchmark(
    traces: Sequence[TraceModel], language: Literal["c", "conceptual"] = "c"
) -> str:
    """A benchmark that runs at any supported rank count, from traces at several sizes.

    Parameters
    ----------
    traces : sequence of Trace
        Traces of one program at 3 or more rank counts (the inputs of
        :func:`scalatrace.extrapolate`).
    language : {"c", "conceptual"}
        C+MPI (compile with ``mpicc``) or coNCePTuaL (compile with its ``c_mpi`` back end).

    Returns
    -------
    str
        The program. Task sets, peers, tags, sizes and repeat counts are expressions of the
        rank count and the grid sizes derived from it; at start it checks that every rank's role
        is one the inputs showed and stops with a message naming the unsupported size otherwise.
        The computation before each call is a model of the rank count fitted over the inputs
        (a busy loop in C, ``COMPUTE FOR`` in coNCePTuaL). Local calls (``MPI_Comm_rank`` and
        other ``Other`` events) are not generated.

    Raises
    ------
    ExtrapolationError
        The traces cannot be extrapolated.
    ScalatraceError
        A call or pattern the generator does not write (named, with why: coNCePTuaL has no
        probe, no test and no partial completion, for example).
    UsageError
        Bad arguments.
    """
    if language not in ("c", "conceptual"):
        raise UsageError(f"language must be 'c' or 'conceptual', not {language!r}")
    program = program_from_traces(traces)
    return write_c(program) if language == "c" else write_conceptual(program)
