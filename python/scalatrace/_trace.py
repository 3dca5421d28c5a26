"""The user's trace class :class:`Trace`: the trace as data (:class:`~scalatrace._model.TraceModel`)
plus one method per feature (exports, benchmark generation, clustering), each importing its
feature module on first use (above the features: docs/python.md, "Package levels").

Feature modules never import this module: those returning a trace build it through
``_model.wrap``, which makes the class registered here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from . import _core, _model
from ._base import OP_NAMES
from ._model import CallSiteInfo, Event, Loop, TraceModel

__all__ = ["OP_NAMES", "CallSiteInfo", "Event", "Loop", "Trace", "load"]


class Trace(TraceModel):
    """A merged, compressed trace of an MPI run.

    Obtain one with :func:`load` or :func:`scalatrace.trace`. The data (metadata, nodes,
    events, tables, analyses) come from :class:`~scalatrace._model.TraceModel`; the methods
    below run the package's features on it.
    """

    # --- exports ---------------------------------------------------------------------------
    def to_otf2(
        self,
        directory: str | os.PathLike[str],
        name: str = "traces",
        ranks: int | Iterable[int] | None = None,
        timing: Literal["mean", "sample", "none", "recorded"] = "mean",
        seed: int = 0,
        overwrite: bool = False,
    ) -> Path:
        """Writes the trace as an OTF2 archive (for Vampir, Scalasca, ``otf2-print``) and returns
        the anchor file to open in a viewer; see :func:`scalatrace.export_otf2.write_otf2`."""
        from .export_otf2 import write_otf2

        return write_otf2(self, directory, name, ranks, timing, seed, overwrite)

    def to_simgrid_ti(
        self, directory: str | os.PathLike[str], timing: Literal["mean", "sample", "none"] = "mean"
    ) -> Any:
        """Writes the trace in SimGrid's SMPI time-independent replay format (one file per rank
        plus ``index.txt``); see :func:`scalatrace.simgrid.to_simgrid_ti`."""
        from .simgrid import to_simgrid_ti

        return to_simgrid_ti(self, directory, timing=timing)

    def to_goal(
        self,
        path: str | os.PathLike[str],
        timing: Literal["mean", "sample", "none"] = "mean",
        seed: int = 0,
    ) -> Any:
        """Writes the trace as a LogGOPSim GOAL schedule (text), collectives as the simulator's
        point-to-point steps; see :func:`scalatrace.goal.to_goal`."""
        from .goal import to_goal

        return to_goal(self, path, timing=timing, seed=seed)

    # --- benchmark generation (scalatrace.codegen) ----------------------------------------
    def to_c(self, resolve_wildcards: bool = False) -> str:
        """A standalone C+MPI benchmark issuing the recorded calls (see :func:`scalatrace.codegen.to_c`)."""
        from .codegen import to_c

        return to_c(self, resolve_wildcards=resolve_wildcards)

    def to_conceptual(self) -> str:
        """A coNCePTuaL benchmark for this trace (see :func:`scalatrace.codegen.to_conceptual`)."""
        from .codegen import to_conceptual

        return to_conceptual(self)

    # --- clustering (scalatrace.clustering) ------------------------------------------------
    def clusters(
        self,
        k: int | None = None,
        method: Literal["kfarthest", "hierarchical"] = "kfarthest",
        features: Any = None,
        threshold: float | None = None,
        grow: bool = False,
    ) -> Any:
        """Ranks grouped by behaviour (ACURDION K-farthest or PHANTOM hierarchical): ``k``
        clusters (fewer only when fewer behaviours exist, with a warning; ``grow=True``:
        the collector's dynamic K); see :func:`scalatrace.clustering.clusters`. Returns a
        :class:`~scalatrace.clustering.Clusters`."""
        from .clustering import clusters

        return clusters(self, k=k, method=method, features=features, threshold=threshold, grow=grow)

    def rank_groups(self, with_values: bool = False) -> list[np.ndarray]:
        """The exact groups of ranks the merged trace holds (same event nodes; with
        ``with_values`` also the same parameter values); see :func:`scalatrace.clustering.rank_groups`."""
        from .clustering import rank_groups

        return rank_groups(self, with_values=with_values)

    @property
    def cluster_map(self) -> list[tuple[int, _core.RankList]]:
        """``(representative, members)`` of a trace recorded with ``SCALATRACE_CLUSTERS``
        (other ranks read their representative's events: lossy); ``[]`` for a full trace."""
        from .clustering import cluster_map

        return cluster_map(self)

    # --- communication phases (scalatrace.phases) -----------------------------------------
    def phases(self) -> Any:
        """The communication phases (MK toolkit) as a pandas DataFrame: ``phase, kind, ops,
        ranks, chain_depth, messages, bytes, occurrences, call_sites, overlaps_with``; see
        :func:`scalatrace.phases.phase_analysis`."""
        from .phases import phases

        return phases(self)

    def phase_graph(self) -> Any:
        """MK's communication phase graph as a networkx ``DiGraph`` (call sites joined by the
        messages between them); see :func:`scalatrace.phases.phase_graph`."""
        from .phases import phase_graph

        return phase_graph(self)

    def plot_phases(self, ax: Any = None) -> Any:
        """Phases as bars over the ranks, coloured by kind; returns the matplotlib axes."""
        from .phases import plot_phases

        return plot_phases(self, ax=ax)


_model.register_trace_class(Trace)


def load(path: str | os.PathLike[str]) -> Trace:
    """Reads a ``.sct`` trace file.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    TraceFormatError
        If the file is not a valid trace (the message says what is wrong).
    """
    return cast(Trace, _model.load(path))
