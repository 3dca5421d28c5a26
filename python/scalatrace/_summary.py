"""Result types of the analyses: timestep loops, sparse matrices (summaries: ``frames``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import TooLargeError


def comm_triplets_to_output(triplets: tuple[Any, Any, Any, int], sparse: bool) -> Any:
    """(src, dst, value, nranks) -> ``scipy.sparse.coo_matrix`` or dense ``ndarray``."""
    src, dst, value, n = triplets
    if sparse:
        import scipy.sparse

        return scipy.sparse.coo_matrix((value, (src, dst)), shape=(n, n))
    limit = _dense_memory_limit()
    if n * n * 8 > limit:
        raise TooLargeError(
            f"a dense {n} x {n} matrix ({n * n * 8 / 2**30:.1f} GiB) does not fit the memory limit "
            f"of {limit / 2**30:.1f} GiB (half the available memory, at most 8 GiB); use "
            "sparse=True"
        )
    m = np.zeros((n, n))
    np.add.at(m, (src, dst), value)
    return m


def _dense_memory_limit() -> int:
    """The core's limit for dense matrices: half the available memory, at most 8 GiB."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        available = 0
    return min(8 << 30, available // 2) if available > 0 else 8 << 30


@dataclass(frozen=True)
class TimestepLoop:
    """An outermost loop containing repeated communication (ScalaTrace §5.3).

    Attributes
    ----------
    path : tuple of int
        Indices from ``Trace.nodes`` down through loop bodies to this loop.
    ranks : RankList
        Participating ranks (empty: all).
    min_iterations, max_iterations : int
        Iterations per rank (summed over the rank's visits of the loop).
    visits : int
        How many times a rank enters the loop (at most).
    sites : tuple of int
        Call sites of the communication events in the body.
    body_events : int
        Event nodes in the body, all depths.
    loop : Loop
        The loop node itself.
    """

    path: tuple[int, ...]
    ranks: Any
    min_iterations: int
    max_iterations: int
    visits: int
    sites: tuple[int, ...]
    body_events: int
    loop: Any

    def __repr__(self) -> str:
        it = (
            str(self.max_iterations)
            if self.min_iterations == self.max_iterations
            else f"{self.min_iterations}..{self.max_iterations}"
        )
        return f"TimestepLoop(path={list(self.path)}, iterations={it}, visits={self.visits}, sites={list(self.sites)})"
