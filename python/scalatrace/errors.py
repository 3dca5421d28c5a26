"""Exceptions raised by scalatrace. Every error derives from :class:`ScalatraceError`."""

from __future__ import annotations


class ScalatraceError(Exception):
    """Base class of every scalatrace error."""


class TraceFormatError(ScalatraceError):
    """A file is not a valid scalatrace trace (truncated, corrupt, foreign, wrong version)."""


class UsageError(ScalatraceError, ValueError):
    """A bad argument: an unknown name, a value out of range, a rank the trace does not have.

    Also a :class:`ValueError`, so ``except ValueError`` works as for any Python library.
    """


class TooLargeError(UsageError):
    """A result would exceed a size guard (``max_events``, dense matrix size); the message says
    how to narrow the request or raise the limit."""


class OutputExistsError(ScalatraceError, FileExistsError):
    """An output already exists and the call did not ask to replace it (``overwrite=True``); the
    existing files are left untouched."""


def check_choice(name: str, value: object, choices: tuple[str, ...] | list[str]) -> None:
    """Raises :class:`UsageError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise UsageError(f"{name} must be one of {listed}, not {value!r}")


class MPIRunError(ScalatraceError):
    """An ``mpiexec`` run failed.

    Attributes
    ----------
    returncode : int
        Exit status of ``mpiexec``.
    stderr_tail : str
        The last lines the run wrote on standard error.
    command : list of str
        The command that was run.
    """

    def __init__(self, message: str, returncode: int, stderr_tail: str, command: list[str]):
        super().__init__(
            f"{message} (exit status {returncode})\n--- stderr (tail) ---\n{stderr_tail}"
        )
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        self.command = command


class ReplayError(MPIRunError):
    """A replay could not run or could not proceed (for example a receive with no matching send)."""


class LossyTraceError(UsageError):
    """Exact events were asked of a lossy trace (``SCALATRACE_LOSSY``): some point-to-point
    peers, tags or sizes are histograms. Ask for drawn values with a seed instead
    (``Trace.events(rank, lossy_seed=0)``), or simulate / replay it (docs/lossy.md)."""


class UnknownNameError(UsageError, KeyError):
    """An unknown name or key (event field, operation, column, a rank without a recording).

    A :class:`UsageError` (so a ``ValueError``) and, for mapping-style lookups such as
    ``event["Peer"]``, also a ``KeyError``.
    """

    __str__ = BaseException.__str__


class CoreArgumentError(UsageError, TypeError):
    """An argument the compiled core cannot take: an integer beyond 64 bits (``10**20``), a
    negative number where a count is meant, a value of the wrong type.

    A :class:`UsageError` (so a ``ValueError``) and, as the ``TypeError`` pybind11 raised before
    (``scalatrace._core_guard``), also a ``TypeError``; the message is one line naming the
    function, the argument and what the function takes.
    """


class OutOfRangeError(UsageError, IndexError):
    """An index out of range (an occurrence a rank never reached, a rank beyond the trace).

    A :class:`UsageError` (so a ``ValueError``) and, for sequence-style access, an ``IndexError``.
    """


class SimulationError(ScalatraceError):
    """The trace cannot be simulated: it deadlocks, sends messages never received, or an
    argument (negative parameter, impossible sweep grid) is invalid (``scalatrace.simulate``)."""


class SimulationParameterError(SimulationError, UsageError):
    """A simulation parameter or sweep grid is invalid (a :class:`UsageError`, so also a
    :class:`ValueError`)."""


class DeadlockError(ScalatraceError):
    """Wildcard receives of a trace cannot be matched without a deadlock (benchmark generation).

    The message names every blocked event: rank, position in the rank's event sequence, op,
    peer, tag, communicator and call site.
    """
