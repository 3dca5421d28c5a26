"""Shared constants and helpers of the package (a bottom level of docs/python.md, "Package levels").

Everything here depends only on the compiled core and NumPy, so any module may use it.
"""

from __future__ import annotations

import numpy as np

from . import _core

OP_NAMES: tuple[str, ...] = tuple(_core.op_names())
"""MPI operation names indexed by the ``op`` code used in rank tables."""

DEFAULT_MAX_EVENTS = 20_000_000
"""Default row limit of :meth:`Trace.to_dataframe` (about 80 bytes per row: ~1.6 GB)."""


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
