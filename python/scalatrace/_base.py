"""Shared constants and helpers of the package (a bottom level of docs/python.md, "Package levels").

Everything here depends only on the compiled core and NumPy, so any module may use it.
"""

from __future__ import annotations

import math

import numpy as np

from . import _core
from .errors import ScalatraceError, UsageError
from .errors import check_choice as _check_choice

OP_NAMES: tuple[str, ...] = tuple(_core.op_names())
"""MPI operation names indexed by the ``op`` code used in rank tables."""

DEFAULT_MAX_EVENTS = 20_000_000
"""Default row limit of :meth:`Trace.to_dataframe` (about 80 bytes per row: ~1.6 GB)."""

MAX_TIMEOUT_S = 1e9
"""Largest timeout in seconds an argument may give (about 31 years; beyond some 10^11 seconds
Python's own clocks overflow). The same bound as ``scalatrace-replay --timeout``."""

MAX_LAUNCH_RANKS = 1 << 20
"""Most MPI processes ``scalatrace.trace`` or ``calibrate`` will ask ``mpiexec`` to start."""


def with_rank_and_names(table: np.ndarray) -> np.ndarray:
    """A rank table with an ``op_name`` column (MPI name) inserted after ``op``."""
    names = np.array(OP_NAMES)[table["op"]] if len(table) else np.array([], dtype="U1")
    width = max(1, max((len(n) for n in OP_NAMES), default=1))
    fields = []
    for name in table.dtype.names:
        fields.append((name, table.dtype[name]))
        if name == "op":
            fields.append(("op_name", f"U{width}"))
    out = np.empty(len(table), dtype=fields)
    for name in table.dtype.names:
        out[name] = table[name]
    out["op_name"] = names
    return out


K_ANY = -(1 << 40)
"""``MPI_ANY_SOURCE`` / ``MPI_ANY_TAG`` as the core stores them (``kAnySource``, ``kAnyTag``)."""
K_PROC_NULL = K_ANY - 1
"""``MPI_PROC_NULL`` as the core stores it (``kProcNull``)."""


def comm_members(comms: object, rank: int, comm: int) -> tuple[int, ...] | None:
    """World ranks of communicator ``comm`` as ``rank`` holds it (communicator order), from a
    communicator table (``Trace.communicators`` or a raw recording's ``comms.entries``); None if
    the table does not describe it for ``rank``."""
    for c in comms:  # type: ignore[attr-defined]
        if c.id == comm and (len(c.holders) == 0 or rank in c.holders):
            return tuple(int(m) for m in c.members)
    return None


def world_peer(comms: object, rank: int, comm: int, relative: int) -> int | None:
    """World rank of a peer recorded relative to ``rank`` in ``comm``: None for
    ``MPI_PROC_NULL``, :data:`K_ANY` for ``MPI_ANY_SOURCE``; ``rank + relative`` when the table
    does not describe ``comm`` (``MPI_COMM_WORLD``)."""
    if relative == K_ANY:
        return K_ANY
    if relative == K_PROC_NULL:
        return None
    members = comm_members(comms, rank, comm)
    if members is None:
        return rank + relative
    return members[members.index(rank) + relative]


def request_slot(offset: int, count: int) -> int | None:
    """Index into a rank's requests (in creation order, ``count`` of them) of a handle-buffer
    offset as events record it (counted back from the newest request: 1 = the newest); None for
    ``MPI_REQUEST_NULL`` (``kNullRequest``, negative) or an offset beyond them."""
    if offset <= 0 or offset > count:
        return None
    return count - offset


# ---- argument checks: a bad argument is a one-line UsageError naming it and what is accepted,
# raised before the value reaches the compiled core (whose own TypeError lists every overload).


def completed_request_offsets(op: str, event: object) -> list[int]:
    """The handle-buffer offsets of the requests a completion call (``Wait*``/``Test*``)
    completed, as the event recorded them: all of them for Wait/Waitall and a successful
    Test/Testall, the one at ``Index`` for Waitany and a successful Testany, those at
    ``Indices`` for Waitsome/Testsome; none otherwise (exports walk requests with this)."""
    offs = list(event.arrays.get("Requests", []))  # type: ignore[attr-defined]
    if op in ("Wait", "Waitall") or (op in ("Test", "Testall") and event["Flag"]):  # type: ignore[index]
        return offs
    if op in ("Waitany", "Testany"):
        i = event["Index"]  # type: ignore[index]
        return [offs[i]] if (op == "Waitany" or event["Flag"]) and 0 <= i < len(offs) else []  # type: ignore[index]
    if op in ("Waitsome", "Testsome"):
        return [offs[i] for i in event.arrays.get("Indices", []) if 0 <= i < len(offs)]  # type: ignore[attr-defined]
    return []


def check_int(name: str, value: object, *, lo: int | None = 0, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]`` (``None``: unbounded); booleans and floats refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise UsageError(f"{name} must be an integer, not {_shown(value)}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise UsageError(f"{name} must be an integer {_range_text(lo, hi)}, not {v}")
    return v


def check_float(
    name: str, value: object, *, lo: float | None = 0.0, hi: float | None = None
) -> float:
    """``value`` as a finite float in ``[lo, hi]``; booleans, strings and NaN refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise UsageError(f"{name} must be a number, not {_shown(value)}")
    v = float(value)
    if not math.isfinite(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
        raise UsageError(f"{name} must be a finite number {_range_text(lo, hi)}, not {v!r}")
    return v


def check_bool(name: str, value: object) -> bool:
    """``value`` if it is a bool (``"no"`` is not False: a string is refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise UsageError(f"{name} must be True or False, not {_shown(value)}")
    return bool(value)


def check_choice(name: str, value: object, choices: tuple[str, ...] | list[str]) -> str:
    """``value`` if it is one of ``choices`` (UsageError listing them otherwise)."""
    _check_choice(name, value, choices)
    return value  # type: ignore[return-value]


def one_line(message: object) -> str:
    """The first line of an error message (pybind11's TypeError lists every overload after it)."""
    text = str(message).strip()
    return text.splitlines()[0] if text else ""


def core_call(what: str, function, *args, **kwargs):
    """Calls a compiled-core function; a TypeError, ValueError, IndexError or OverflowError from
    the binding (an argument the Python layer let through) becomes a one-line UsageError."""
    try:
        return function(*args, **kwargs)
    except ScalatraceError:
        raise
    except (TypeError, ValueError, IndexError, OverflowError) as e:
        raise UsageError(f"{what}: {one_line(e) or type(e).__name__}") from e


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def _range_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"from {lo} to {hi}"
    if lo is not None:
        return f">= {lo}"
    return f"<= {hi}" if hi is not None else ""
