"""Clustering ranks by behaviour: ACURDION signatures with K-farthest clustering, PHANTOM
computation vectors with complete-linkage hierarchical clustering, and the exact rank groups a
merged trace already holds. See ``docs/clustering.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Union

import numpy as np

from . import _core
from ._base import check_bool, check_float
from .errors import UsageError

if TYPE_CHECKING:
    from ._model import TraceModel

SIGNATURE_FEATURES: tuple[str, ...] = tuple(_core.signature_feature_names())
"""ACURDION signature features, in the order of their bits."""

DEFAULT_K = 9
"""ACURDION's K: nine clusters captured the behaviour of every benchmark in the paper."""

MAX_HIERARCHICAL_RANKS = 4096
"""Hierarchical clustering holds an n x n distance matrix over the distinct behaviours (ranks
with identical events are one point); beyond this many distinct behaviours use K-farthest."""

Method = Literal["kfarthest", "hierarchical"]
Features = Union[Literal["signature", "computation"], Sequence[str], None]


@dataclass(frozen=True)
class Clusters:
    """Ranks grouped by behaviour.

    Attributes
    ----------
    labels : numpy.ndarray
        Cluster index of every rank (int64, length ``nranks``); clusters are numbered by their
        lowest rank.
    representatives : numpy.ndarray
        The representative rank of each cluster (K-farthest: the cluster head; hierarchical: the
        member closest to the cluster centre).
    method : str
        ``"kfarthest"`` or ``"hierarchical"``.
    features : tuple of str
        The features the distances used (``("computation",)`` for PHANTOM's vectors).
    linkage : numpy.ndarray or None
        SciPy linkage matrix (hierarchical only), for :func:`scalatrace.plot.dendrogram`. Its
        leaves are the distinct behaviours: ranks with identical events are one leaf.
    leaves : numpy.ndarray or None
        Hierarchical only: the lowest rank of each leaf's behaviour group (linkage order).
    leaf_sizes : numpy.ndarray or None
        Hierarchical only: how many ranks each leaf stands for.
    """

    labels: np.ndarray
    representatives: np.ndarray
    method: str
    features: tuple[str, ...]
    linkage: np.ndarray | None = None
    leaves: np.ndarray | None = None
    leaf_sizes: np.ndarray | None = None

    @property
    def k(self) -> int:
        """Number of clusters."""
        return int(len(self.representatives))

    def groups(self) -> list[np.ndarray]:
        """The ranks of each cluster (ascending), in cluster order."""
        return [np.flatnonzero(self.labels == c) for c in range(self.k)]

    def _repr_html_(self) -> str:
        """Jupyter: one row per cluster (representative, size, ranks)."""
        import html

        rows = "".join(
            f"<tr><td>{c}</td><td>{int(self.representatives[c])}</td><td>{len(g)}</td>"
            f"<td>{html.escape(_rank_ranges(g.tolist()))}</td></tr>"
            for c, g in enumerate(self.groups())
        )
        return (
            f"<b>Clusters</b> ({html.escape(self.method)}; features: "
            f"{html.escape(', '.join(self.features))})<table><tr><th>cluster</th>"
            f"<th>representative</th><th>ranks</th><th>members</th></tr>{rows}</table>"
        )

    def __repr__(self) -> str:
        sizes = np.bincount(self.labels, minlength=self.k).tolist()
        return (
            f"Clusters(method={self.method!r}, k={self.k}, sizes={sizes}, "
            f"representatives={self.representatives.tolist()})"
        )


def _rank_ranges(ranks: list[int]) -> str:
    """``0-3, 7, 9-10`` for ``[0, 1, 2, 3, 7, 9, 10]``."""
    runs: list[list[int]] = []
    for r in sorted(ranks):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def signatures(trace: TraceModel) -> dict[str, np.ndarray]:
    """ACURDION signature of every rank, as column arrays.

    Returns
    -------
    dict of str to numpy.ndarray
        ``rank``, ``events``, ``call_path``, ``types``, ``loop``, ``peers`` (uint64 bit patterns) and the
        averaged ``count``, ``src``, ``dest``, ``tag``, ``key``, ``color``, ``comp``, ``comm``.
    """
    return _signatures(trace).to_dict()


def computation_vectors(trace: TraceModel) -> list[np.ndarray]:
    """PHANTOM's sequential computation vector of every rank: compute time (ns) before each event."""
    return [_core.computation_vector(trace._core, r) for r in range(trace.nranks)]


def rank_groups(trace: TraceModel, with_values: bool = False) -> list[np.ndarray]:
    """The exact behaviour groups the merged trace holds.

    Ranks that take part in exactly the same event and loop nodes (node ranklists) form one
    group; with ``with_values=True`` they must also share every parameter's elastic-value
    alternative (then a group's ranks have identical events, peers relative).

    Returns
    -------
    list of numpy.ndarray
        The ranks of each group, groups ordered by their lowest rank.
    """
    labels = _core.rank_groups(trace._core, bool(with_values))
    return [np.flatnonzero(labels == g) for g in range(int(labels.max()) + 1 if len(labels) else 0)]


def cluster_map(trace: TraceModel) -> list[tuple[int, _core.RankList]]:
    """The clusters a clustered trace (``SCALATRACE_CLUSTERS``) records: ``(representative,
    members)`` pairs; ``[]`` for a full (lossless) trace."""
    return [(int(rep), members) for rep, members in _core.rank_clusters(trace._core)]


def clusters(
    trace: TraceModel,
    k: int | None = None,
    method: Method = "kfarthest",
    features: Features = None,
    threshold: float | None = None,
    grow: bool = False,
) -> Clusters:
    """Groups the ranks of a trace by behaviour.

    Parameters
    ----------
    trace : Trace
        A merged trace.
    k : int, optional
        Number of clusters. Default: ``min(9, nranks)`` (ACURDION's K), or for hierarchical
        clustering with ``threshold`` given, whatever the cut produces. A ``k`` above the rank
        count is lowered to it (with a warning).
    method : {"kfarthest", "hierarchical"}
        ``"kfarthest"``: ACURDION's K-farthest clustering of signatures over a radix tree (the
        same algorithm the collector runs for ``SCALATRACE_CLUSTERS``), scales to millions of
        ranks. ``"hierarchical"``: PHANTOM's complete-linkage clustering (SciPy ``linkage`` /
        ``fcluster``), up to ``MAX_HIERARCHICAL_RANKS`` ranks.
    features : "signature", "computation" or sequence of str, optional
        ``"signature"`` (all of :data:`SIGNATURE_FEATURES`) or a subset of their names, compared
        by ACURDION's normalized Manhattan distance; ``"computation"``: PHANTOM's computation
        vectors compared by Manhattan distance (vectors of different length are as far apart as
        possible), hierarchical only. Default: signature for K-farthest, computation for
        hierarchical.
    threshold : float, optional
        Hierarchical only, instead of ``k``: cut the dendrogram at this distance.
    grow : bool
        K-farthest only: ACURDION's dynamic K, as the collector runs it for
        ``SCALATRACE_CLUSTERS``: go on past ``k`` (up to 64 clusters) while some rank makes other
        calls or talks to other relative peers than every selected representative, so each
        member can be read through its representative. Default False: ``k`` clusters.

    Returns
    -------
    Clusters

    Raises
    ------
    UsageError
        For a bad ``k``, ``method``, ``threshold``, feature name or combination.
    """
    n = trace.nranks
    if method not in ("kfarthest", "hierarchical"):
        raise UsageError(f"method must be 'kfarthest' or 'hierarchical', not {method!r}")
    if n < 1:
        raise UsageError("the trace has no ranks to cluster")
    if threshold is not None and method != "hierarchical":
        raise UsageError("threshold= applies to method='hierarchical' only")
    if threshold is not None:
        threshold = check_float("threshold", threshold)
    grow = check_bool("grow", grow)
    if grow and method != "kfarthest":
        raise UsageError("grow=True (dynamic K) applies to method='kfarthest' only")
    asked = k
    k = _checked_k(k, n, threshold is None)
    names = _feature_names(features, method)
    if method == "kfarthest":
        labels, reps, _used = _core.kfarthest_clusters(
            _signatures(trace), k or DEFAULT_K, list(names), grow
        )
        result = Clusters(np.asarray(labels), np.asarray(reps), "kfarthest", names)
    else:
        result = _hierarchical(trace, k, threshold, names)
    if asked is not None and k is not None and result.k < k:
        warnings.warn(
            f"k={k}: only {result.k} distinct behaviours over {names_text(names)}, so "
            f"{result.k} clusters",
            stacklevel=3,
        )
    return result


def names_text(names: tuple[str, ...]) -> str:
    """Features as text for messages (``"the signature"`` for all of them)."""
    return "the signature" if names == SIGNATURE_FEATURES else ", ".join(names)


def _checked_k(k: int | None, n: int, need_default: bool) -> int | None:
    if k is None:
        return min(DEFAULT_K, n) if need_default else None
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise UsageError(f"k must be a positive integer, not {k!r}")
    if k < 1:
        raise UsageError(f"k must be at least 1, not {k}")
    if k > n:
        warnings.warn(f"k={k} is more than the {n} ranks; using k={n}", stacklevel=3)
        return n
    return int(k)


def _feature_names(features: Features, method: str) -> tuple[str, ...]:
    if features is None:
        features = "signature" if method == "kfarthest" else "computation"
    if isinstance(features, str):
        if features == "signature":
            return SIGNATURE_FEATURES
        if features == "computation":
            if method != "hierarchical":
                raise UsageError("features='computation' (PHANTOM) needs method='hierarchical'")
            return ("computation",)
        features = (features,)
    names = tuple(features)
    if not names:
        raise UsageError("features: give at least one feature")
    for f in names:
        if f not in SIGNATURE_FEATURES:
            raise UsageError(
                f"unknown feature {f!r}; valid: 'signature', 'computation' or any of {SIGNATURE_FEATURES}"
            )
    return names


def _signatures(trace: TraceModel) -> _core.RankSignatures:
    cached = getattr(trace, "_signature_cache", None)
    if cached is None:
        cached = _core.signatures(trace._core)
        trace._signature_cache = cached  # type: ignore[attr-defined]
    return cached


def _hierarchical(
    trace: TraceModel, k: int | None, threshold: float | None, names: tuple[str, ...]
) -> Clusters:
    """PHANTOM's complete linkage over the distinct behaviours: ranks of one exact group (same
    events, relative peers and timing: ``rank_groups(with_values=True)``) have identical
    signatures and computation vectors, so each group is one point (complete linkage of
    identical points is that of one point), weighted by its size where a centre is taken."""
    from scipy.cluster.hierarchy import cut_tree, fcluster, linkage

    n = trace.nranks
    group_of = np.asarray(_core.rank_groups(trace._core, True), dtype=np.int64)
    leaves, sizes = np.unique(group_of, return_index=True)[1], np.bincount(group_of)
    # rank_groups numbers groups by their lowest rank, so leaves[g] is group g's lowest rank.
    m = len(leaves)
    if m > MAX_HIERARCHICAL_RANKS:
        raise UsageError(
            f"hierarchical clustering of {m} distinct behaviours ({n} ranks) needs an m x m distance "
            f"matrix; use method='kfarthest' above {MAX_HIERARCHICAL_RANKS}"
        )
    if names == ("computation",):
        vectors: list[np.ndarray] | None = [
            _core.computation_vector(trace._core, int(r)) for r in leaves
        ]
        condensed = _condensed(_manhattan_matrix(vectors))
    else:
        vectors = None
        condensed = np.asarray(
            _core.signature_distances(_signatures(trace), list(names), leaves.tolist())
        )
    if m == 1:
        return Clusters(
            np.zeros(n, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            "hierarchical",
            names,
            None,
            leaves,
            sizes,
        )
    z = linkage(condensed, method="complete")
    if threshold is not None:
        raw = fcluster(z, t=float(threshold), criterion="distance")
    else:
        # cut_tree follows the merge order, so ties in the distances (equal linkage heights)
        # still give exactly k clusters, where fcluster's maxclust may give fewer.
        raw = cut_tree(z, n_clusters=min(int(k or 1), m))[:, 0]
    labels = _renumber(raw[group_of])
    leaf_labels = labels[leaves]
    square = _square(condensed, m)
    reps = np.array(
        [
            leaves[_closest_to_centre(np.flatnonzero(leaf_labels == c), square, vectors, sizes)]
            for c in range(int(labels.max()) + 1)
        ],
        dtype=np.int64,
    )
    return Clusters(labels, reps, "hierarchical", names, z, leaves, sizes)


def _condensed(square: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import squareform

    return squareform(square, checks=False)


def _square(condensed: np.ndarray, m: int) -> np.ndarray:
    from scipy.spatial.distance import squareform

    return squareform(condensed) if m > 1 else np.zeros((1, 1))


def _manhattan_matrix(vectors: list[np.ndarray]) -> np.ndarray:
    """Manhattan distances. Vectors of different lengths (other event counts) are farther apart
    than any two of one length (PHANTOM: infinitely far), so they join only when nothing else is
    left: above the largest same-length distance D by 1 plus the Manhattan distance of the two
    vectors with the shorter padded by zeros. So they are still ordered among themselves (a
    vector one event longer is nearer than one with twice the events) and a cut at k clusters
    finds k, where one constant for every such pair made complete linkage merge them all at one
    height."""
    from scipy.spatial.distance import cdist

    n = len(vectors)
    lengths = np.array([len(v) for v in vectors])
    width = max(1, int(lengths.max()) if n else 1)
    padded = np.zeros((n, width))
    for i, v in enumerate(vectors):
        padded[i, : len(v)] = v
    square = cdist(padded, padded, metric="cityblock")
    same = lengths[:, None] == lengths[None, :]
    within = float(square[same].max()) if n else 0.0
    square = np.where(same, square, within + 1.0 + square)
    np.fill_diagonal(square, 0.0)
    return square


def _renumber(raw: np.ndarray) -> np.ndarray:
    """Cluster ids 0, 1, ... in order of each cluster's lowest rank."""
    order: dict[int, int] = {}
    for x in raw.tolist():
        order.setdefault(x, len(order))
    return np.array([order[x] for x in raw.tolist()], dtype=np.int64)


def _closest_to_centre(
    members: np.ndarray, square: np.ndarray, vectors: list[np.ndarray] | None, weights: np.ndarray
) -> int:
    """PHANTOM's representative among the leaves `members`: the one closest (Manhattan) to the
    cluster's centre, each leaf weighted by the ranks it stands for. For computation vectors the
    centre is the weighted mean vector of the leaves of the most common length; for signatures
    (no meaningful mean of call-path hashes) the leaf with the least weighted total distance to
    the others. Returns the leaf's position."""
    w = weights[members].astype(float)
    if vectors is not None:
        lengths = np.array([len(vectors[i]) for i in members])
        common = np.bincount(lengths, weights=w).argmax()
        keep = lengths == common
        same, w_same = members[keep], w[keep]
        block = np.vstack([vectors[i] for i in same]) if common else np.zeros((len(same), 1))
        centre = (block * w_same[:, None]).sum(axis=0) / w_same.sum()
        return int(same[np.argmin(np.abs(block - centre).sum(axis=1))])
    within = (square[np.ix_(members, members)] * w[None, :]).sum(axis=1)
    return int(members[np.argmin(within)])
