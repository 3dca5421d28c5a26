"""Exceptions raised by scalatrace. Every error derives from :class:`ScalatraceError`."""

from __future__ import annotations


class ScalatraceError(Exception):
    """Base class of every scalatrace error."""


class TraceFormatError(ScalatraceError):
    """A file is not a valid scalatrace trace (truncated, corrupt, foreign, wrong version)."""


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
        super().__init__(f"{message} (exit status {returncode})\n--- stderr (tail) ---\n{stderr_tail}")
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        self.command = command


class ReplayError(MPIRunError):
    """A replay could not run or could not proceed (for example a receive with no matching send)."""


class DeadlockError(ScalatraceError):
    """Wildcard receives of a trace cannot be matched without a deadlock (benchmark generation).

    The message names every blocked event: rank, position in the rank's event sequence, op,
    peer, tag, communicator and call site.
    """
