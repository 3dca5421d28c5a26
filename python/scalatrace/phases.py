"""Communication phases of a trace (MK toolkit, Block, Sarukkai and Mehra, §3).

A *phase* is a set of call sites linked by the messages between them: every send site is joined
to the receive sites its messages reach, and the connected components of that graph are the
point-to-point phases (MK's communication phase graph, steps 1-2). Every call site of a
collective is a phase of its own. Each point-to-point phase is then examined over one
*occurrence*: one iteration of the innermost loop that holds all its call sites (the same on
every rank, as the compressed trace has it). Within an occurrence a message *waits on* an earlier
one when its sender completed the receive of that earlier message before sending (a blocking
receive, a ``Sendrecv``, or an ``Irecv`` completed by a wait before the send). The **chain
depth** is the number of messages in the longest chain of messages that wait on one another:
``P - 1`` for a 1D pipeline over ``P`` ranks, ``px + py - 2`` for a 2D wavefront, 1 for an
exchange in which every rank sends before it waits.

Kinds (MK's synchronous vs. asynchronous phases, decided by receive-before-send ordering):

``exchange`` / ``shift``
    Synchronous: no message waits on another (depth 1), or the ranks' send graph has a cycle
    (a ring passed on with even ranks sending first: depth 2 whatever the rank count).
    ``exchange`` when every rank pair that communicates does so both ways, else ``shift``.
``pipeline``
    Asynchronous: the send graph of the ranks is acyclic and the longest chain of waiting
    messages runs along its longest path (depth >= 2): every rank on it receives before it
    sends on. A 2D wavefront is a pipeline too.
``tree``
    Asynchronous as a pipeline, but fanning out (every rank receives from at most one rank, some
    send to several) or in (every rank sends to at most one, some receive from several).
``collective``
    One collective call site; the library's algorithm is not in the trace (no chain depth).

Everything is computed from the compressed structure: per event node the ranks that execute it
and the distinct peers of each elastic alternative, as NumPy arrays; no rank's event stream is
expanded. See ``docs/models.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from ._model import TraceModel, as_trace
from .errors import UsageError

if TYPE_CHECKING:
    import matplotlib.axes
    import networkx
    import pandas

__all__ = ["Phase", "PhaseAnalysis", "phase_analysis", "phase_graph", "phases", "plot_phases"]

_ANY_SOURCE = -(1 << 40)
_PROC_NULL = _ANY_SOURCE - 1
_ANY_TAG = -(1 << 40)

_SEND_OPS = frozenset({"Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend"})
_SENDRECV_OPS = frozenset({"Sendrecv", "Sendrecv_replace"})
_BLOCKING_RECV_OPS = frozenset({"Recv"})
_NONBLOCKING_RECV_OPS = frozenset({"Irecv"})
_WAIT_OPS = frozenset({"Wait", "Waitall", "Waitany", "Waitsome"})
_COLLECTIVE_KINDS = frozenset({"collective", "nonblocking-collective"})

COLUMNS = [
    "phase",
    "kind",
    "ops",
    "ranks",
    "chain_depth",
    "messages",
    "bytes",
    "occurrences",
    "call_sites",
    "overlaps_with",
]


@dataclass
class Phase:
    """One communication phase.

    Attributes
    ----------
    id : int
        Position in program order (of the phase's first call site), from 0.
    kind : str
        ``exchange``, ``shift``, ``pipeline``, ``tree`` or ``collective``.
    ops : tuple of str
        MPI functions of its call sites.
    sites : tuple of int
        Call-site ids.
    ranks : numpy.ndarray
        Ranks taking part (sending or receiving).
    senders, receivers : numpy.ndarray
        MK's send list SL(g) and receive list RL(g).
    chain_depth : int or None
        Messages in the longest chain of messages that wait on one another within one
        occurrence (None for collectives).
    messages : int
        Messages sent in the whole run (collectives: calls summed over the ranks).
    bytes : float
        Bytes sent in the whole run (collectives: send-side bytes summed over the ranks).
    occurrences : int
        Iterations of the phase's loop (the innermost loop holding its call sites, per rank),
        largest over the ranks.
    visits : int
        Entries into that loop (a pipeline fills once per visit).
    overlaps_with : tuple of int
        Phases it can overlap with (MK §4.1: consecutive phases where no rank that receives in
        the first sends in the second).
    path : tuple of int
        Tree path (indices from the top-level node list) of that innermost loop; () for the top.
    pairs : numpy.ndarray
        ``(k, 2)`` distinct (sender, receiver) rank pairs of one occurrence.
    """

    id: int
    kind: str
    ops: tuple[str, ...]
    sites: tuple[int, ...]
    ranks: np.ndarray
    senders: np.ndarray
    receivers: np.ndarray
    chain_depth: int | None
    messages: int
    bytes: float
    occurrences: int
    visits: int = 1
    overlaps_with: tuple[int, ...] = ()
    path: tuple[int, ...] = ()
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64), repr=False)
    first_index: int = field(default=0, repr=False)

    @property
    def synchronous(self) -> bool:
        """True for exchanges, shifts and collectives (MK's loosely synchronous phases)."""
        return self.kind in ("exchange", "shift", "collective")


@dataclass
class _Item:
    """An event node in depth-first program order with the ranks that execute it."""

    index: int
    path: tuple[int, ...]
    ev: Any
    ranks: np.ndarray
    calls: int


@dataclass
class PhaseAnalysis:
    """The phases of one trace plus the call-site graph they come from."""

    nranks: int
    phases: list[Phase]
    site_edges: dict[tuple[int, int], int]  # (send site, receive site) -> message pairs
    site_ops: dict[int, str]

    def to_dataframe(self) -> pandas.DataFrame:
        """One row per phase (columns ``phase, kind, ops, ranks, chain_depth, messages, bytes,
        occurrences, call_sites, overlaps_with``)."""
        import pandas as pd

        rows = [
            (
                p.id,
                p.kind,
                ",".join(p.ops),
                int(p.ranks.size),
                pd.NA if p.chain_depth is None else int(p.chain_depth),
                int(p.messages),
                float(p.bytes),
                int(p.occurrences),
                p.sites,
                p.overlaps_with,
            )
            for p in self.phases
        ]
        df = pd.DataFrame(rows, columns=COLUMNS)
        df["chain_depth"] = df["chain_depth"].astype("Int64")
        return df


# --- structure ----------------------------------------------------------------------------


def _items(trace: _core.Trace) -> list[_Item]:
    """Every event node, depth first, with its ranks (as the cursor inherits them)."""
    out: list[_Item] = []
    all_ranks = np.arange(trace.nranks, dtype=np.int64)

    def ranks_of(node: _core.Node, parent: np.ndarray) -> np.ndarray:
        rl = node.ranks
        return parent if len(rl) == 0 else _sorted_ranks(rl)

    def walk(nodes: Sequence[_core.Node], parent: np.ndarray, path: tuple[int, ...]) -> None:
        for k, n in enumerate(nodes):
            ranks = ranks_of(n, parent)
            if n.is_loop():
                walk(n.loop.body, ranks, (*path, k))
            elif n.event is not None:
                out.append(_Item(len(out), (*path, k), n.event, ranks, 0))

    walk(trace.nodes, all_ranks, ())
    return out


def _sorted_ranks(rl: _core.RankList) -> np.ndarray:
    """The ranks of a ranklist, sorted and distinct (sorting only when they are not)."""
    r = np.asarray(rl.to_numpy(), dtype=np.int64)
    if r.size > 1 and not bool(np.all(r[1:] > r[:-1])):
        r = np.unique(r)
    return r


def _restrict(rl: _core.RankList, ranks: np.ndarray) -> np.ndarray:
    """The ranks of ``ranks`` (sorted) that are in ``rl``, in linear time."""
    if len(rl) == ranks.size and ranks.size and rl[0] == ranks[0] and rl[len(rl) - 1] == ranks[-1]:
        other = _sorted_ranks(rl)
        if other.size == ranks.size and np.array_equal(other, ranks):
            return ranks
    other = _sorted_ranks(rl)
    if other.size == 0 or ranks.size == 0:
        return other[:0]
    hi = int(max(other[-1], ranks[-1])) + 1
    mask = np.zeros(hi, dtype=bool)
    mask[other[other >= 0]] = True
    return ranks[mask[ranks]]


def _per_rank_values(value: _core.ElasticValue, ranks: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """(ranks, value) pairs: for every alternative, its distinct values with the node's ranks it
    applies to (an alternative with an empty ranklist applies to all of them)."""
    out: list[tuple[np.ndarray, int]] = []
    for seq, rl in value.alternatives:
        if len(seq) == 0:
            continue
        members = ranks if len(rl) == 0 else _restrict(rl, ranks)
        if members.size == 0:
            continue
        for v in _distinct(seq):
            out.append((members, v))
    return out


def _distinct(seq: _core.ValueSeq) -> list[int]:
    """Distinct values of a value sequence."""
    if seq.is_constant():
        return [int(seq[0])]
    return [int(v) for v in np.unique(seq.to_numpy())]


def _values(value: _core.ElasticValue) -> frozenset[int]:
    """Every value of an elastic value, whoever's."""
    return frozenset(v for seq, _rl in value.alternatives if len(seq) for v in _distinct(seq))


class _CommMap:
    """World rank of (rank, relative peer) in a communicator, vectorized."""

    def __init__(self, trace: _core.Trace) -> None:
        self._nranks = trace.nranks
        self._entries: dict[int, list[np.ndarray]] = {}
        for entry in trace.comms.entries:
            self._entries.setdefault(int(entry.id), []).append(
                np.asarray(entry.members.to_numpy(), dtype=np.int64)
            )

    def world(self, comm: int, ranks: np.ndarray, offset: int) -> np.ndarray:
        """World ranks of ``ranks``' peers at ``offset`` in ``comm`` (-1 where undefined)."""
        if comm == 0:
            out = ranks + offset
            out[(out < 0) | (out >= self._nranks)] = -1
            return out
        out = np.full(ranks.shape, -1, dtype=np.int64)
        for members in self._entries.get(comm, []):
            if members.size == 0:
                continue
            pos = np.full(self._nranks, -1, dtype=np.int64)
            pos[members] = np.arange(members.size)
            mine = pos[ranks]
            target = mine + offset
            ok = (mine >= 0) & (target >= 0) & (target < members.size)
            out[ok] = members[target[ok]]
        return out


@dataclass
class _Sends:
    """Messages of one occurrence as parallel arrays (one entry per (node, rank, peer))."""

    item: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    tags: list[frozenset[int]]  # per item index


def _endpoints(
    items: list[_Item], comms: _CommMap, peer_field: str, which: frozenset[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item index, rank, peer world rank; -2 for a wildcard source) of the send or receive
    half (``peer_field``) of the items whose op is in ``which``."""
    it_l, rank_l, peer_l = [], [], []
    for item in items:
        if item.ev.op not in which:
            continue
        comm_of = _per_rank_values(item.ev.field("Comm"), item.ranks) or [(item.ranks, 0)]
        for comm_ranks, comm in comm_of:
            for ranks, offset in _per_rank_values(item.ev.field(peer_field), comm_ranks):
                if offset == _PROC_NULL:
                    continue
                if offset == _ANY_SOURCE:
                    peer = np.full(ranks.shape, -2, dtype=np.int64)
                else:
                    peer = comms.world(comm, ranks, offset)
                    keep = peer >= 0
                    ranks, peer = ranks[keep], peer[keep]
                it_l.append(np.full(ranks.shape, item.index, dtype=np.int64))
                rank_l.append(ranks)
                peer_l.append(peer)
    if not it_l:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e
    return np.concatenate(it_l), np.concatenate(rank_l), np.concatenate(peer_l)


def _messages(
    items: list[_Item], comms: _CommMap
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Send entries (item, source, destination) and receive entries (item, rank, source) of
    the items, the receive half of a Sendrecv included."""
    s_item, s_src, s_dst = _endpoints(items, comms, "Peer", _SEND_OPS | _SENDRECV_OPS)
    r1 = _endpoints(items, comms, "Peer", _BLOCKING_RECV_OPS | _NONBLOCKING_RECV_OPS)
    r2 = _endpoints(items, comms, "Peer2", _SENDRECV_OPS)
    r_item, r_rank, r_src = (np.concatenate([a, b]) for a, b in zip(r1, r2))
    return s_item, s_src, s_dst, r_item, r_rank, r_src


def _tags(item: _Item, tag_field: str) -> frozenset[int]:
    return _values(item.ev.field(tag_field))


def _call_tags(item: _Item) -> frozenset[int]:
    """Tags of a point-to-point call (the receive tag for receives, both for Sendrecv)."""
    out = _tags(item, "Tag")
    return out | _tags(item, "Tag2") if item.ev.op in _SENDRECV_OPS else out


def _comms(item: _Item) -> frozenset[int]:
    return _values(item.ev.field("Comm"))


def _tags_compatible(send_tags: frozenset[int], recv_tags: frozenset[int]) -> bool:
    return _ANY_TAG in recv_tags or not send_tags or not recv_tags or bool(send_tags & recv_tags)


def _match(
    s_item: np.ndarray,
    s_src: np.ndarray,
    s_dst: np.ndarray,
    r_item: np.ndarray,
    r_rank: np.ndarray,
    r_src: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (send entry, receive entry) of messages a receive entry can take: same
    (source, destination), or any source at that destination (wildcard receives)."""
    pairs_s, pairs_r = [], []
    if s_src.size == 0 or r_rank.size == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    for wildcard in (False, True):
        sel = np.flatnonzero((r_src == -2) if wildcard else (r_src >= 0))
        if sel.size == 0:
            continue
        skey = s_dst if wildcard else s_src * n + s_dst
        order = np.argsort(skey, kind="stable")
        sorted_key = skey[order]
        rkey = r_rank[sel] if wildcard else r_src[sel] * n + r_rank[sel]
        lo = np.searchsorted(sorted_key, rkey, side="left")
        hi = np.searchsorted(sorted_key, rkey, side="right")
        counts = hi - lo
        rep = np.repeat(sel, counts)
        starts = np.repeat(lo, counts)
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        pairs_s.append(order[starts + within])
        pairs_r.append(rep)
    if not pairs_s:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    return np.concatenate(pairs_s), np.concatenate(pairs_r)


def _unique_pairs(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Distinct (a, b) rows, sorted, for values in [0, n)."""
    keys = np.unique(a * n + b)
    return np.stack([keys // n, keys % n], axis=1)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, a: int) -> int:
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _longest_levels(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, bool]:
    """Longest-path level of every vertex of a directed graph (0 for vertices nothing points
    to), by level-synchronous topological sorting: a vertex becomes ready when all its
    predecessors are done, at one level past the deepest of them. Returns (levels, acyclic);
    vertices on or behind a cycle keep the last level reached."""
    level = np.zeros(n, dtype=np.int64)
    if n == 0:
        return level, True
    indeg = np.bincount(dst, minlength=n).astype(np.int64)
    if indeg.max(initial=0) <= 1:
        chains = _chain_levels(n, src, dst)
        if chains is not None:
            return chains, True
    order = np.argsort(src, kind="stable")
    ssrc, sdst = src[order], dst[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(ssrc, minlength=n), out=indptr[1:])
    frontier = np.flatnonzero(indeg == 0)
    done = frontier.size
    depth = 0
    while frontier.size:
        level[frontier] = depth
        lo, hi = indptr[frontier], indptr[frontier + 1]
        counts = hi - lo
        total = int(counts.sum())
        if total == 0:
            break
        idx = np.repeat(lo, counts) + (
            np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        )
        targets = sdst[idx]
        np.subtract.at(indeg, targets, 1)
        cand = np.unique(targets)
        frontier = cand[indeg[cand] == 0]
        done += frontier.size
        depth += 1
    return level, done == n


def _chain_levels(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
    """Levels of a graph in which every vertex has at most one predecessor (chains and
    out-trees: a 1D pipeline's messages), by pointer jumping: log2(depth) rounds of
    ``level += level[ancestor]; ancestor = ancestor[ancestor]``. None if it has a cycle."""
    parent = np.full(n, -1, dtype=np.int64)
    parent[dst] = src
    level = (parent >= 0).astype(np.int64)
    anc = parent.copy()
    for _ in range(max(1, int(n).bit_length() + 1)):
        live = np.flatnonzero(anc >= 0)
        if live.size == 0:
            return level
        up = anc[live]
        level[live] += level[up]
        anc[live] = anc[up]
    return None  # still linked after more rounds than any acyclic depth needs: a cycle


# --- the analysis -------------------------------------------------------------------------


def _common_prefix(paths: list[tuple[int, ...]]) -> tuple[int, ...]:
    first = paths[0]
    k = 0
    while all(len(p) > k + 1 and p[k] == first[k] for p in paths):
        k += 1
    return first[:k]


def _loop_at(trace: _core.Trace, path: tuple[int, ...]) -> Any:
    nodes = trace.nodes
    node = None
    for k in path:
        node = nodes[k]
        nodes = node.loop.body
    return node


def _occurrences(trace: _core.Trace, path: tuple[int, ...]) -> tuple[int, int]:
    """(iterations, visits) of the loop at ``path``, largest over the ranks: its trip vector
    holds one entry per visit, so their sum already counts the enclosing loops' iterations."""
    if not path:
        return 1, 1
    best, visits = 0, 1
    for seq, _rl in _loop_at(trace, path).loop.trips.alternatives:
        arr = seq.to_numpy()
        if arr.size:
            best = max(best, int(arr.sum()))
            visits = max(visits, int(arr.size))
    return max(best, 1), visits


def _phase_loops(trace: _core.Trace, its: list[_Item], n: int) -> tuple[tuple[int, ...], int, int]:
    """The phase's loop per rank: the innermost loop holding all the phase's nodes that the
    rank executes (ranks with different nodes may run the phase in loops of their own, as a
    pipeline's first and last ranks do). Returns (the loop holding all the nodes, iterations,
    visits), the last two largest over the ranks."""
    whole = _common_prefix([it.path for it in its]) if len(its) > 1 else its[0].path[:-1]
    if len(its) > 62:
        return (whole, *_occurrences(trace, whole))
    sig = np.zeros(n, dtype=np.int64)
    for k, it in enumerate(its):
        sig[it.ranks] |= np.int64(1) << k
    occ, visits = 1, 1
    for s in np.unique(sig[sig != 0]).tolist():
        mine = [it for k, it in enumerate(its) if s >> k & 1]
        path = _common_prefix([it.path for it in mine]) if len(mine) > 1 else mine[0].path[:-1]
        o, v = _occurrences(trace, path)
        occ, visits = max(occ, o), max(visits, v)
    return whole, occ, visits


def _chain(
    items: list[_Item], member: set[int], comms: _CommMap, n: int, path: tuple[int, ...]
) -> tuple[int, np.ndarray, bool]:
    """Chain depth, distinct (sender, receiver) pairs and whether the rank send graph is a
    DAG whose longest path the chain follows, for the items of one phase (indices ``member``)
    within one occurrence of its loop (at ``path``)."""
    phase_items = [items[i] for i in sorted(member)]
    lo_idx = phase_items[0].index
    # The occurrence runs to the end of the loop's body: waits after the phase's last call
    # still complete its receives.
    hi_idx = phase_items[-1].index
    while hi_idx + 1 < len(items) and items[hi_idx + 1].path[: len(path)] == path:
        hi_idx += 1
    window = items[lo_idx : hi_idx + 1]
    s_item, s_src, s_dst, r_item, r_rank, r_src = _messages(phase_items, comms)
    if s_src.size == 0:
        return 0, np.zeros((0, 2), dtype=np.int64), False
    # Where each receive entry completes: a blocking receive or Sendrecv at its own position;
    # an Irecv at the first wait after it that the rank executes (else never in the occurrence).
    done_at = r_item.astype(np.float64).copy()
    nb = np.flatnonzero(
        np.isin(r_item, [it.index for it in phase_items if it.ev.op in _NONBLOCKING_RECV_OPS])
    )
    if nb.size:
        done_at[nb] = np.inf
        waits = [it for it in window if it.ev.op in _WAIT_OPS]
        for w in waits:
            pending = nb[(done_at[nb] == np.inf) & (r_item[nb] < w.index)]
            if pending.size == 0:
                continue
            hit = pending[np.isin(r_rank[pending], w.ranks, assume_unique=False)]
            done_at[hit] = w.index
    ms, mr = _match(s_item, s_src, s_dst, r_item, r_rank, r_src, n)
    # Message vertices are the send entries; an edge joins message a to message b when b's
    # sender completed the receive of a before sending b.
    recv_rank = r_rank[mr]
    recv_done = done_at[mr]
    incoming = ms  # vertex id of the message taken
    order = np.argsort(recv_rank, kind="stable")
    inc_rank, inc_done, inc_vertex = recv_rank[order], recv_done[order], incoming[order]
    lo = np.searchsorted(inc_rank, s_src, side="left")
    hi = np.searchsorted(inc_rank, s_src, side="right")
    counts = hi - lo
    total = int(counts.sum())
    out_vertex = np.repeat(np.arange(s_src.size), counts)
    idx = np.repeat(lo, counts) + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
    keep = inc_done[idx] < s_item[out_vertex]
    e_src, e_dst = inc_vertex[idx][keep], out_vertex[keep]
    levels, _ = _longest_levels(s_src.size, e_src, e_dst)
    depth = int(levels.max()) + 1
    pairs = _unique_pairs(s_src, s_dst, n)
    # The ranks' send graph: acyclic, and the chain along its longest path?
    rank_levels, acyclic = _longest_levels(n, pairs[:, 0], pairs[:, 1])
    follows = acyclic and depth >= 2 and depth == int(rank_levels.max())
    return depth, pairs, follows


def _kind_of(depth: int, pairs: np.ndarray, follows: bool) -> str:
    if follows:
        indeg = np.bincount(pairs[:, 1]) if pairs.size else np.zeros(1)
        outdeg = np.bincount(pairs[:, 0]) if pairs.size else np.zeros(1)
        if (indeg.max() <= 1 and outdeg.max() >= 2) or (outdeg.max() <= 1 and indeg.max() >= 2):
            return "tree"
        return "pipeline"
    key = pairs[:, 0] * (1 << 32) + pairs[:, 1]
    back = pairs[:, 1] * (1 << 32) + pairs[:, 0]
    return "exchange" if pairs.size and np.isin(back, key).all() else "shift"


def phase_analysis(trace: TraceModel | str) -> PhaseAnalysis:
    """Communication phases of a trace (see the module documentation).

    Parameters
    ----------
    trace : Trace or path
        A merged trace.

    Returns
    -------
    PhaseAnalysis
        ``.phases`` (list of :class:`Phase`), ``.to_dataframe()``, the call-site edges.
    """
    t = as_trace(trace)
    core = t._core
    n = int(core.nranks)
    if n < 1:
        raise UsageError("phase analysis needs a trace with at least one rank")
    items = _items(core)
    comms = _CommMap(core)
    site_ops = {int(it.ev.site): it.ev.op for it in items}
    # Steps 1-2: join send and receive call sites by the messages between them.
    s_item, s_src, s_dst, r_item, r_rank, r_src = _messages(items, comms)
    ms, mr = _match(s_item, s_src, s_dst, r_item, r_rank, r_src, n)
    uf = _UnionFind()
    for it in items:
        if it.ev.op in _SEND_OPS | _SENDRECV_OPS | _BLOCKING_RECV_OPS | _NONBLOCKING_RECV_OPS:
            uf.find(it.index)
    site_edges: dict[tuple[int, int], int] = {}
    tag_cache: dict[tuple[int, str], frozenset[int]] = {}

    def tags(i: int, name: str) -> frozenset[int]:
        if (i, name) not in tag_cache:
            tag_cache[(i, name)] = _tags(items[i], name)
        return tag_cache[(i, name)]

    if ms.size:
        width = len(items) + 1
        keys, counts = np.unique(s_item[ms] * width + r_item[mr], return_counts=True)
        for key, c in zip(keys.tolist(), counts.tolist()):
            a, b = divmod(key, width)
            recv_tag = "Tag2" if items[b].ev.op in _SENDRECV_OPS else "Tag"
            if not _tags_compatible(tags(a, "Tag"), tags(b, recv_tag)):
                continue
            uf.union(a, b)
            key = (int(items[a].ev.site), int(items[b].ev.site))
            site_edges[key] = site_edges.get(key, 0) + int(c)
    # A rank that receives and passes on joins the two components (a ring passed on with even
    # ranks sending first splits into even->odd and odd->even call sites): consecutive
    # point-to-point calls in one loop body with the same tags on the same communicator.
    p2p = [it for it in items if it.index in uf.parent]
    for a, b in zip(p2p, p2p[1:]):
        if a.path[:-1] != b.path[:-1] or uf.find(a.index) == uf.find(b.index):
            continue
        if _call_tags(a) == _call_tags(b) and _comms(a) == _comms(b):
            uf.union(a.index, b.index)
    # Nodes of the same call site belong to one phase (MK's phases are sets of call points).
    by_site: dict[int, int] = {}
    for i in list(uf.parent):
        s = int(items[i].ev.site)
        if s in by_site:
            uf.union(by_site[s], i)
        else:
            by_site[s] = i
    groups: dict[int, set[int]] = {}
    for i in list(uf.parent):
        groups.setdefault(uf.find(i), set()).add(i)
    summary = core_summary_by_site(core)
    phases: list[Phase] = []
    for member in groups.values():
        ordered = sorted(member)
        its = [items[i] for i in ordered]
        path, occ, visits = _phase_loops(core, its, n)
        depth, pairs, follows = _chain(items, member, comms, n, path)
        if pairs.size == 0:
            continue  # receives nothing sends to (or the reverse): no phase to speak of
        kind = _kind_of(depth, pairs, follows)
        sites = tuple(sorted({int(it.ev.site) for it in its}))
        ops = tuple(sorted({it.ev.op for it in its}))
        sends_ops = _SEND_OPS | _SENDRECV_OPS
        msgs = sum(
            summary.get((s, op), (0, 0.0))[0] for s in sites for op in ops if op in sends_ops
        )
        nbytes = sum(
            summary.get((s, op), (0, 0.0))[1] for s in sites for op in ops if op in sends_ops
        )
        phases.append(
            Phase(
                id=0,
                kind=kind,
                ops=ops,
                sites=sites,
                ranks=np.union1d(pairs[:, 0], pairs[:, 1]),
                senders=np.unique(pairs[:, 0]),
                receivers=np.unique(pairs[:, 1]),
                chain_depth=depth,
                messages=int(msgs),
                bytes=float(nbytes),
                occurrences=occ,
                visits=visits,
                path=path,
                pairs=pairs,
                first_index=ordered[0],
            )
        )
    # Collectives: one phase per call site.
    coll: dict[int, list[_Item]] = {}
    for it in items:
        if it.ev.kind in _COLLECTIVE_KINDS:
            coll.setdefault(int(it.ev.site), []).append(it)
    for site, its in coll.items():
        ranks = np.unique(np.concatenate([it.ranks for it in its]))
        ops = tuple(sorted({it.ev.op for it in its}))
        path, occ, visits = _phase_loops(core, its, n)
        phases.append(
            Phase(
                id=0,
                kind="collective",
                ops=ops,
                sites=(site,),
                ranks=ranks,
                senders=ranks,
                receivers=ranks,
                chain_depth=None,
                messages=int(sum(summary.get((site, op), (0, 0.0))[0] for op in ops)),
                bytes=float(sum(summary.get((site, op), (0, 0.0))[1] for op in ops)),
                occurrences=occ,
                visits=visits,
                path=path,
                first_index=its[0].index,
            )
        )
    phases.sort(key=lambda p: p.first_index)
    for k, p in enumerate(phases):
        p.id = k
    _mark_overlaps(phases)
    return PhaseAnalysis(n, phases, site_edges, site_ops)


def core_summary_by_site(core: _core.Trace) -> dict[tuple[int, str], tuple[int, float]]:
    """(site, op) -> (calls over all ranks, bytes) from the core's structural summary."""
    s = _core.summary(core)
    return {(int(r.site), str(r.op)): (int(r.calls), float(r.bytes)) for r in s.by_site}


def _mark_overlaps(phases: list[Phase]) -> None:
    """MK §4.1: consecutive phases overlap when no rank receiving in the first sends in the
    second (phases are in program order of their first call site)."""
    over: dict[int, set[int]] = {p.id: set() for p in phases}
    for a, b in zip(phases, phases[1:]):
        if np.intersect1d(a.receivers, b.senders).size == 0:
            over[a.id].add(b.id)
            over[b.id].add(a.id)
    for p in phases:
        p.overlaps_with = tuple(sorted(over[p.id]))


def phases(trace: TraceModel | str) -> pandas.DataFrame:
    """The communication phases of a trace as a pandas DataFrame (see :func:`phase_analysis`)."""
    return phase_analysis(trace).to_dataframe()


def phase_graph(trace: TraceModel | str | PhaseAnalysis) -> networkx.DiGraph:
    """MK's communication phase graph as a networkx ``DiGraph``.

    Nodes are call sites (attributes ``op``, ``phase``, ``kind``); an edge joins a send site
    to every receive site its messages reach (attribute ``pairs``: (rank, peer) pairs that
    message along it); graph attribute ``phases`` holds the :class:`Phase` list. The weakly
    connected components of the point-to-point part are the point-to-point phases.
    """
    import networkx as nx

    pa = trace if isinstance(trace, PhaseAnalysis) else phase_analysis(trace)
    g = nx.DiGraph(phases=pa.phases, nranks=pa.nranks)
    for p in pa.phases:
        for s in p.sites:
            g.add_node(s, op=pa.site_ops.get(s, ""), phase=p.id, kind=p.kind)
    for (a, b), c in pa.site_edges.items():
        g.add_edge(a, b, pairs=c)
    return g


def plot_phases(
    trace: TraceModel | str | PhaseAnalysis, ax: matplotlib.axes.Axes | None = None
) -> matplotlib.axes.Axes:
    """One horizontal bar per phase over the ranks taking part, coloured by kind and labelled
    with its chain depth; overlapping phases are joined by a bracket. Returns the axes."""
    import matplotlib.pyplot as plt

    pa = trace if isinstance(trace, PhaseAnalysis) else phase_analysis(trace)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.5 + 0.4 * max(len(pa.phases), 1)))
    colors = {
        "exchange": "tab:blue",
        "shift": "tab:cyan",
        "pipeline": "tab:red",
        "tree": "tab:orange",
        "collective": "tab:gray",
    }
    for p in pa.phases:
        y = p.id
        # Contiguous runs of ranks as bars.
        r = p.ranks
        if r.size:
            breaks = np.flatnonzero(np.diff(r) != 1) + 1
            starts = np.concatenate([[r[0]], r[breaks]])
            ends = np.concatenate([r[breaks - 1], [r[-1]]]) if breaks.size else np.array([r[-1]])
            ax.broken_barh(
                [(int(s) - 0.4, int(e) - int(s) + 0.8) for s, e in zip(starts, ends)],
                (y - 0.35, 0.7),
                color=colors.get(p.kind, "k"),
            )
        depth = "" if p.chain_depth is None else f", depth {p.chain_depth}"
        ax.text(
            pa.nranks - 0.4, y, f" {p.kind}{depth} ({','.join(p.ops)})", va="center", fontsize=8
        )
        for q in p.overlaps_with:
            if q > p.id:
                ax.plot([-0.8, -0.8], [p.id, q], color="k", lw=2)
    ax.set_yticks([p.id for p in pa.phases])
    ax.set_yticklabels([f"phase {p.id}" for p in pa.phases])
    ax.invert_yaxis()
    ax.set_xlim(-1.2, pa.nranks * 1.6 + 1)
    ax.set_xlabel("rank")
    ax.set_title("communication phases")
    return ax
