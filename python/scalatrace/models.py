"""Closed-form performance models from traces (MK toolkit, Block, Sarukkai and Mehra, §4-5).

:func:`model` takes traces of one program at several parameter points (problem size ``N``,
ranks ``P``, block size ``K``, ...) and builds ``T(N, P, ...)`` through the program's
communication phases (:mod:`scalatrace.phases`):

* per phase and per trace the measurements the phase's cost is made of: its occurrences ``B``
  (iterations of the innermost loop holding it), for pipelines and trees its visits ``V``
  (entries into that loop: each refills the pipeline) and chain depth ``D``, and its time per
  occurrence: for a synchronous phase (exchange, shift, collective) the busiest rank's
  computation before the phase's calls plus the least time a rank spends in them (the time a
  rank waits there is imbalance, paid for elsewhere: a pipeline's first rank waits out the
  pipeline's drain in the Allreduce after it); for a pipeline the stage time ``w``: the
  slowest rank's time in the phase (the last rank of the chain) over ``B + V * (D - 1)``, the
  stages it waits through;
* each of those fitted as a multi-parameter PMNF model (:func:`scalatrace.pmnf.fit_pmnf`,
  Extra-P's search with cross-validation);
* combined as MK does: a synchronous phase costs ``B * c`` (the slowest rank), a pipeline
  ``(B + V * (D - 1)) * w`` (MK's Remain plus one Fill per visit); the rest of the run (the
  slowest rank's time minus the phases' costs) is fitted as one more PMNF term.

The result :class:`PerformanceModel` has ``.expression`` (SymPy), ``.predict``, ``.phases``,
``.plot``, and the analyses of §5: :func:`optimal_grain` (dT/dK = 0), :func:`speedup`
(T(1) / T(P)) and :func:`constant_time` (N(P) at a fixed T), each with a plot.
See ``docs/models.md``.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ._base import check_float, check_int
from ._model import TraceModel, as_trace
from .errors import ScalatraceError, UsageError
from .extrapolate import smape
from .phases import PhaseAnalysis, phase_analysis
from .pmnf import (
    MultiModel,
    RegimeModel,
    fit_pmnf,
    fit_pmnf_regimes,
    with_nonnegative_constant,
)
from .simulate import InSituBlocks

if TYPE_CHECKING:
    import matplotlib.axes
    import pandas
    import sympy

__all__ = [
    "ModelError",
    "PerformanceModel",
    "PhaseModel",
    "constant_time",
    "measure",
    "model",
    "optimal_grain",
    "plot_constant_time",
    "plot_optimal_grain",
    "plot_speedup",
    "speedup",
]

_COMPLETIONS = frozenset({"Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall"})
# Ranks whose events are expanded per trace to measure it; beyond, one rank per rank group.
_EXPAND_ALL_UP_TO = 256


class ModelError(ScalatraceError, ValueError):
    """The traces cannot be modelled together (different phase structures, too few points);
    the message says why."""


@dataclass
class PhaseMeasurement:
    """One phase in one trace."""

    kind: str
    ops: str
    occurrences: float
    visits: float
    depth: float
    per_occurrence: float  # seconds: c (synchronous) or w (pipeline stage)
    overlaps_next: bool = False  # MK §4.1: it and the next phase can overlap
    # With a network (model(..., network=...)), MK's split: the computation per occurrence from
    # the trace, the messages' cost from the machine (seconds).
    network: bool = False
    chained: bool = False  # a pipeline or one-way shift: B + V D stages and D hops per visit
    compute: float = 0.0  # W: the busiest rank's computation per occurrence
    message: float = 0.0  # the machine's overheads of a rank's own sends and receives, largest
    hop: float = 0.0  # tau (chained phases: s + tau + r, one message's trip in the fill)
    # With overhead laws (network=InSituBlocks): the phase's mean message size (bytes) and each
    # rank's (sends, receives) per occurrence, the distinct pairs.
    message_bytes: float = 0.0
    counts: tuple[tuple[float, float], ...] = ()

    @property
    def stages(self) -> float:
        """Occurrences on the critical path: ``B + V (D - 1)`` for a pipeline (its fill and
        drain at each visit), ``B`` for any other phase; with a network, ``B + V D`` for a
        pipeline or one-way shift (the chain end's last stage of each visit included)."""
        if self.network and self.chained:
            return self.occurrences + self.visits * self.depth
        if self.kind == "pipeline":
            return self.occurrences + self.visits * max(self.depth - 1, 0.0)
        return self.occurrences

    @property
    def cost(self) -> float:
        """Seconds, as the model combines it: ``stages * per_occurrence``; with a network,
        ``B (W + m) + V D (W + s + tau + r)`` for a pipeline or one-way shift (MK's Remain and
        Fill) and ``B (W + m + tau)`` for any other phase, ``m`` the overheads of a rank's own
        messages per occurrence."""
        if not self.network:
            return self.stages * self.per_occurrence
        if self.chained:
            fill = self.visits * self.depth
            return self.occurrences * (self.compute + self.message) + fill * (
                self.compute + self.hop
            )
        return self.occurrences * (self.compute + self.message + self.hop)


@dataclass
class Measurement:
    """What :func:`model` reads from one trace."""

    total: float  # seconds: the slowest rank from the end of MPI_Init to MPI_Finalize
    phases: list[PhaseMeasurement]
    # With a network: the slowest rank's time outside every phase (MK's T_s outside them).
    outside: float | None = None

    @property
    def rest(self) -> float:
        """The run time the phases do not account for; with a network, the time outside the
        phases (so that the collector's share of the traced messages, which the machine's
        costs replace, is not fitted back in through the rest)."""
        if self.outside is not None:
            return self.outside
        return self.total - combine(
            [p.cost for p in self.phases], [p.overlaps_next for p in self.phases], max
        )


def combine(costs: Sequence[Any], overlaps_next: Sequence[bool], maximum: Any) -> Any:
    """MK §4.1's aggregate of phases in program order: a phase that can overlap with the next
    adds ``maximum(its cost, the next's)`` and the pair counts once; any other adds its cost."""
    total: Any = 0
    i = 0
    while i < len(costs):
        if i + 1 < len(costs) and overlaps_next[i]:
            total = total + maximum(costs[i], costs[i + 1])
            i += 2
        else:
            total = total + costs[i]
            i += 1
    return total


def _ranks_to_expand(t: TraceModel) -> list[int]:
    if t.nranks <= _EXPAND_ALL_UP_TO:
        return list(range(t.nranks))
    return [int(g[0]) for g in t.rank_groups()]


def measure(
    trace: TraceModel | str,
    pipelines: Sequence[int] = (),
    analysis: PhaseAnalysis | None = None,
    network: Any = None,
) -> Measurement:
    """The run time and the phases' measurements of one trace (see the module documentation).

    Parameters
    ----------
    trace : Trace or path
    pipelines : sequence of int
        Phase ids to measure as pipelines even if this trace classifies them otherwise (a
        pipeline over 2 ranks passes nothing on and is a shift).
    analysis : PhaseAnalysis, optional
        The trace's phases, if already computed.
    network : LogGP, optional
        The machine's message costs (:func:`scalatrace.calibrate`): point-to-point phases then
        take their computation from the trace and their messages' cost from ``network``
        (see :func:`model`).
    """
    t = as_trace(trace)
    pa = analysis or phase_analysis(t)
    site_phase = {s: p.id for p in pa.phases for s in p.sites}
    nphases = len(pa.phases)
    chained = np.zeros(nphases, dtype=bool)
    for p in pa.phases:
        one_way = p.kind == "shift" and not np.intersect1d(p.senders, p.receivers).size
        chained[p.id] = p.kind in ("pipeline", "tree") or p.id in pipelines or one_way
    work = np.zeros(nphases)  # the busiest rank's computation before the phase's calls
    calls = np.full(nphases, np.inf)  # the least time a rank spends inside them
    whole = np.zeros(nphases)  # the slowest rank's time in the phase
    message = np.zeros(nphases)  # the machine's cost of a rank's own messages, the largest
    counts: list[set[tuple[int, int]]] = [set() for _ in range(nphases)]  # (sends, receives)
    total = 0.0
    outside = 0.0
    ranks = _ranks_to_expand(t)
    tables = []
    for r in ranks:
        tab = t.rank_table(r)
        ops = tab["op_name"].astype(str)
        compute = tab["compute_ns"].astype(float) * 1e-9
        duration = tab["duration_ns"].astype(float) * 1e-9
        mine = compute + duration
        # The run: everything after Init up to Finalize (Finalize's own time excluded).
        mine[ops == "Init"] = 0.0
        fin = ops == "Finalize"
        mine[fin] = compute[fin]
        total = max(total, float(mine.sum()))
        phase = np.array([site_phase.get(int(s), -1) for s in tab["site"]], dtype=np.int64)
        # Completions belong to the phase of the last call before them that had one.
        last = -1
        for i, op in enumerate(ops):
            if phase[i] >= 0:
                last = phase[i]
            elif op in _COMPLETIONS and last >= 0:
                phase[i] = last
        tables.append((tab, ops, compute, duration, mine, phase))
    if network is not None and chained.any():
        drained = _with_drains(t, ranks, [(x[1], x[2], x[5]) for x in tables], chained)
        tables = [(x[0], x[1], c, *x[3:]) for x, c in zip(tables, drained)]
    for tab, ops, compute, duration, mine, phase in tables:
        if network is not None:
            outside = max(outside, float(mine[phase < 0].sum()))
        for g in range(nphases):
            sel = phase == g
            if sel.any():
                work[g] = max(work[g], float(compute[sel].sum()))
                calls[g] = min(calls[g], float(duration[sel].sum()))
                whole[g] = max(whole[g], float(mine[sel].sum()))
                if network is not None:
                    own = _overheads(_loggp(network), ops[sel], tab["bytes"][sel])
                    message[g] = max(message[g], own)
                    counts[g].add(_sends_receives(ops[sel]))
    out = []
    for p in pa.phases:
        occ = float(p.occurrences)
        if p.kind in ("pipeline", "tree") or p.id in pipelines:
            stage = PhaseMeasurement(
                "pipeline", ",".join(p.ops), occ, float(p.visits), float(p.chain_depth or 0), 0.0
            )
            stage.per_occurrence = whole[p.id] / stage.stages
            out.append(stage)
        elif chained[p.id]:
            # One-way: no rank both sends and receives (a pipeline over 2 ranks). A receiver
            # cannot run ahead of its sender, so the slowest rank's time in the phase (its
            # receives' own cost included) is the cost, as for a pipeline of depth 1.
            c = whole[p.id] / occ
            out.append(PhaseMeasurement(p.kind, ",".join(p.ops), occ, 1.0, 0.0, c))
        else:
            c = (work[p.id] + (calls[p.id] if np.isfinite(calls[p.id]) else 0.0)) / occ
            out.append(PhaseMeasurement(p.kind, ",".join(p.ops), occ, 1.0, 0.0, c))
        ph = out[-1]
        ph.overlaps_next = p.id + 1 in p.overlaps_with
        if network is not None:
            chain = bool(chained[p.id])
            _split(ph, p, network, work[p.id], message[p.id], chain, t.nranks, counts[p.id])
    return Measurement(total, out, outside if network is not None else None)


_SENDS = frozenset({"Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend"})
_RECEIVES = frozenset({"Recv", "Irecv", "Mrecv", "Imrecv"})
_SENDRECVS = frozenset({"Sendrecv", "Sendrecv_replace"})


def _loggp(network: Any) -> Any:
    """The LogGP of ``network`` (a LogGP, or an InSituBlocks' ping-pong based one)."""
    return network.network if isinstance(network, InSituBlocks) else network


def _sends_receives(ops: np.ndarray) -> tuple[int, int]:
    """How many of ``ops`` send and how many receive (a Sendrecv does both)."""
    sends = np.isin(ops, list(_SENDS | _SENDRECVS))
    receives = np.isin(ops, list(_RECEIVES | _SENDRECVS))
    return int(sends.sum()), int(receives.sum())


def _law_message(
    blocks: Any, compute: Any, size: Any, counts: Sequence[tuple[float, float]], symbolic: bool
) -> Any:
    """A rank's overheads per occurrence under overhead laws, the largest over ``counts`` (each
    rank's sends and receives per occurrence): ``S o_s(W, k) + R o_r(W, k)``; a SymPy expression
    of the ``compute`` and ``size`` expressions if ``symbolic``, else a number."""
    if symbolic:
        import sympy

        o_s, o_r = blocks.o_s.expression(compute, size), blocks.o_r.expression(compute, size)
        terms = [s_ * o_s + r_ * o_r for s_, r_ in counts]
        return sympy.Max(*terms) if len(terms) > 1 else (terms[0] if terms else sympy.Integer(0))
    o_s, o_r = float(blocks.o_s(compute, size)), float(blocks.o_r(compute, size))
    return max((s_ * o_s + r_ * o_r for s_, r_ in counts), default=0.0)


def _overheads(network: Any, ops: np.ndarray, nbytes: np.ndarray) -> float:
    """The CPU time a rank's point-to-point calls cost on the machine (seconds): ``o_s + (k - 1)
    O`` per k-byte send and ``o_r + (k - 1) O`` per receive (LogGOPS)."""
    extra = np.maximum(nbytes.astype(float) - 1.0, 0.0) * network.O
    sends = np.isin(ops, list(_SENDS | _SENDRECVS))
    receives = np.isin(ops, list(_RECEIVES | _SENDRECVS))
    return float((network.o_s + extra)[sends].sum() + (network.o_r + extra)[receives].sum())


def _drains(ops: np.ndarray, phase: np.ndarray, chained: np.ndarray) -> list[tuple[int, bool]]:
    """The events right after each run of a chained phase's calls (the first call after the
    run), each with whether the run's last call other than a completion receives: then the
    computation recorded before that event is the rank's block after its last receive (a chain
    end's last stage); a rank whose run ends with a send computed its stage before the send."""
    out = []
    run_ends = np.flatnonzero((phase[:-1] >= 0) & (phase[1:] != phase[:-1])) + 1
    for i in run_ends:
        g = phase[i - 1]
        if not chained[g]:
            continue
        j = i - 1
        while j > 0 and phase[j - 1] == g and ops[j] in _COMPLETIONS:
            j -= 1
        out.append((int(i), bool(ops[j] in _RECEIVES or ops[j] in _SENDRECVS)))
    return out


def _with_drains(
    t: TraceModel,
    ranks: Sequence[int],
    tables: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
    chained: np.ndarray,
) -> list[np.ndarray]:
    """Each rank's ``compute`` (``tables``: per rank of ``ranks`` its ops, compute and phase per
    event) with a chain end's last stage moved into its chained phase: MK's Remain counts the
    block a rank computes after its last receive of a visit in the pipeline, not in the phase
    after it, whose call records it. Only a chain end's: a rank whose run of the phase's calls
    ends with a send (a 2-rank shift's sender, a 1D pipeline's head and middle ranks) computed
    its stages before its sends, and what it computes after them is the next phase's.

    A compressed trace keeps times per timing group of an event node, and ranks whose compute
    times there are close (docs/algorithms.md, "Timing groups") share one mean: at the call
    after the pipeline the chain end's block and the other ranks' near-zero computation are
    averaged (the 2-rank shift's sender then appeared to compute half a block there, the chain
    end half of its last one). The group's sum is exact; where a group holds chain ends and
    other ranks, that sum is the chain ends' (in equal shares) and the others' share is 0. With
    one rank read per rank group (large traces) the group's sum is not known: each chain end's
    own value moves, and the others' stays."""
    out = [c.copy() for _, c, _ in tables]
    found = [_drains(ops, phase, chained) for ops, _, phase in tables]
    if not any(d for d in found):
        return out
    # A group's sum is known only when all its ranks are read: with one rank per rank group
    # (more than _EXPAND_ALL_UP_TO ranks) each chain end keeps its own value, as above.
    every_rank = len(ranks) == t.nranks
    shared: dict[int, list[tuple[int, int, bool]]] = {}
    for x, (r, drains) in enumerate(zip(ranks, found)):
        if not drains:
            continue
        # The rank's events with their timing sources (the same order as its rank_table).
        rows = t.to_dataframe(ranks=[r], max_events=max(len(out[x]), 1))
        groups = rows["timing_group"].to_numpy()
        per_group = (rows["compute_from"] == "per-group").to_numpy()
        for i, end in drains:
            if per_group[i] and every_rank:
                shared.setdefault(int(groups[i]), []).append((x, i, end))
            elif end:
                out[x][i - 1] += out[x][i]
                out[x][i] = 0.0
    for members in shared.values():
        ends = [(x, i) for x, i, end in members if end]
        if not ends:
            continue
        whole = sum(float(out[x][i]) for x, i, _ in members)
        for x, i, _ in members:
            out[x][i] = 0.0
        for x, i in ends:
            out[x][i - 1] += whole / len(ends)
    return out


def _split(
    ph: PhaseMeasurement,
    p: Any,
    network: Any,
    work: float,
    message: float,
    chained: bool,
    nranks: int,
    counts: set[tuple[int, int]] | None = None,
) -> None:
    """MK's split of a phase's cost: the computation from the trace, the messages from the
    machine (collectives: ``ceil(log2 P)`` rounds of one message each way); with overhead laws
    (an InSituBlocks) the point-to-point overheads are the laws' at the phase's own computation
    per occurrence and message size."""
    blocks = network if isinstance(network, InSituBlocks) else None
    network = _loggp(network)
    ph.network = True
    ph.chained = chained
    occ = ph.occurrences
    ph.compute = work / occ
    messages = float(p.messages)
    size = float(p.bytes) / messages if messages > 0 else 0.0
    extra = max(size - 1.0, 0.0)
    if p.kind == "collective":
        # MK's GLOBAL (machine specific): ceil(log2 P) rounds of a message each way, as a
        # recursive-doubling or tree collective of ``size`` bytes per rank takes.
        rounds = float(np.ceil(np.log2(max(nranks, 2))))
        ph.message = rounds * (network.o_s + network.o_r + 2.0 * extra * network.O)
        ph.hop = rounds * (network.L + extra * network.G)
        ph.per_occurrence = ph.cost / ph.stages
        return
    ph.message = message / occ
    ph.hop = network.L + extra * network.G
    o_pair = network.o_s + network.o_r + 2.0 * extra * network.O
    ph.message_bytes = size
    if blocks is not None:
        ph.counts = tuple(sorted({(s_ / occ, r_ / occ) for s_, r_ in counts or ()}))
        ph.message = _law_message(blocks, ph.compute, size, ph.counts, symbolic=False)
        o_pair = blocks.o_s(ph.compute, size) + blocks.o_r(ph.compute, size)
    if chained:  # a hop of the fill: one message's send overhead, transfer, receive overhead
        ph.hop += o_pair
        ph.visits = float(p.visits)
        ph.depth = float(p.chain_depth or 0) if ph.kind == "pipeline" else 1.0
    ph.per_occurrence = ph.cost / ph.stages


@dataclass
class PhaseModel:
    """The fitted parts of one phase."""

    id: int
    kind: str
    ops: str
    occurrences: MultiModel
    per_occurrence: MultiModel
    visits: MultiModel | None = None
    depth: MultiModel | None = None
    overlaps_next: bool = False
    # With a network (MK's split): W fitted from the trace, s + r and tau from the machine.
    compute: MultiModel | RegimeModel | None = None
    message: MultiModel | None = None
    hop: MultiModel | None = None
    chained: bool = False
    # With overhead laws (network=InSituBlocks): the laws, the fitted message size (bytes; also
    # with a LogGP network, for point-to-point phases) and each rank's (sends, receives) per
    # occurrence; m and the fill's s + r are then the laws'
    # at the fitted W and message size, tau the fitted transfer (L + (k - 1) G).
    laws: Any = None
    message_bytes: MultiModel | None = None
    counts: tuple[tuple[float, float], ...] = ()
    transfer: MultiModel | None = None

    def expression(self, symbols: Mapping[str, Any]) -> sympy.Expr:
        b = self.occurrences.expression(symbols)
        if self.compute is not None:
            assert self.message is not None and self.hop is not None
            w = self.compute.expression(symbols)
            sr = self.message.expression(symbols)
            tau = self.hop.expression(symbols)
            if self.laws is not None:
                assert self.message_bytes is not None and self.transfer is not None
                size = self.message_bytes.expression(symbols)
                sr = _law_message(self.laws, w, size, self.counts, symbolic=True)
                tau = self.transfer.expression(symbols)
                if self.chained:
                    tau = tau + self.laws.o_s.expression(w, size)
                    tau = tau + self.laws.o_r.expression(w, size)
            if self.chained:
                assert self.visits is not None and self.depth is not None
                fill = self.visits.expression(symbols) * self.depth.expression(symbols)
                return b * (w + sr) + fill * (w + tau)
            return b * (w + sr + tau)
        x = self.per_occurrence.expression(symbols)
        if self.kind == "pipeline":
            assert self.visits is not None and self.depth is not None
            return (b + self.visits.expression(symbols) * (self.depth.expression(symbols) - 1)) * x
        return b * x


@dataclass
class PerformanceModel:
    """A closed-form model of run time through the program's phases.

    Attributes
    ----------
    parameters : tuple of str
        Parameter names (symbols of :attr:`expression`).
    points : dict of str to numpy.ndarray
        The traces' parameter values; ``measured`` their run times (seconds).
    phase_models : list of PhaseModel
    rest : MultiModel
        Time outside the phases.
    direct : MultiModel
        The run time fitted directly as one multi-parameter PMNF model (Extra-P's way), for
        comparison.
    """

    parameters: tuple[str, ...]
    points: dict[str, np.ndarray]
    measured: np.ndarray
    phase_models: list[PhaseModel]
    rest: MultiModel
    direct: MultiModel
    measurements: list[Measurement] = field(repr=False, default_factory=list)
    network: Any = None
    _fn: Any = field(default=None, repr=False)

    @property
    def symbols(self) -> dict[str, sympy.Symbol]:
        import sympy

        return {p: sympy.Symbol(p, positive=True) for p in self.parameters}

    @property
    def expression(self) -> sympy.Expr:
        """T(parameters) in seconds as a SymPy expression."""
        syms = self.symbols
        import sympy

        costs = [pm.expression(syms) for pm in self.phase_models]
        overlaps = [pm.overlaps_next for pm in self.phase_models]
        return self.rest.expression(syms) + combine(costs, overlaps, sympy.Max)

    def predict(self, **values: Any) -> Any:
        """Predicted run time (seconds) at the given parameter values (scalars or arrays)."""
        import sympy

        missing = [p for p in self.parameters if p not in values]
        if missing:
            raise UsageError(f"predict needs values for {', '.join(missing)}")
        if self._fn is None:
            syms = self.symbols
            self._fn = sympy.lambdify([syms[p] for p in self.parameters], self.expression, "numpy")
        args = np.broadcast_arrays(*[np.asarray(values[p], dtype=float) for p in self.parameters])
        out = np.asarray(self._fn(*args), dtype=float) * np.ones_like(args[0])
        return float(out) if out.ndim == 0 else out

    @property
    def smape(self) -> float:
        """SMAPE (percent) of :meth:`predict` against the traces' run times."""
        return smape(self.measured, self.predict(**self.points))

    @property
    def phases(self) -> pandas.DataFrame:
        """One row per phase: kind, ops, the fitted occurrences / visits / chain depth / time per
        occurrence, and the phase's cost expression."""
        import pandas as pd

        syms = self.symbols
        rows = []
        for pm in self.phase_models:
            rows.append(
                {
                    "phase": pm.id,
                    "kind": pm.kind,
                    "ops": pm.ops,
                    "occurrences": pm.occurrences.formula,
                    "visits": pm.visits.formula if pm.visits else "",
                    "chain_depth": pm.depth.formula if pm.depth else "",
                    "time_per_occurrence": pm.per_occurrence.formula,
                    "computation": pm.compute.formula if pm.compute else "",
                    "message_cost": pm.message.formula if pm.message else "",
                    "cost": str(pm.expression(syms)),
                }
            )
        rows.append(
            {
                "phase": -1,
                "kind": "rest",
                "ops": "",
                "occurrences": "",
                "visits": "",
                "chain_depth": "",
                "time_per_occurrence": "",
                "computation": "",
                "message_cost": "",
                "cost": self.rest.formula,
            }
        )
        return pd.DataFrame(rows)

    def plot(
        self,
        x: str | None = None,
        fixed: Mapping[str, float] | None = None,
        ax: matplotlib.axes.Axes | None = None,
    ) -> matplotlib.axes.Axes:
        """Measured run times against one parameter ``x`` (default: the first) with the model's
        curve at the ``fixed`` values of the others (default: the most frequent ones); returns
        the axes."""

        x = x or self.parameters[0]
        if x not in self.parameters:
            raise UsageError(f"x must be one of {', '.join(self.parameters)}, not {x!r}")
        fixed = {k: v for k, v in (fixed or {}).items() if k != x}
        for p in self.parameters:
            if p != x and p not in fixed:
                vals, counts = np.unique(self.points[p], return_counts=True)
                fixed[p] = float(vals[np.argmax(counts)])
        ax = _axes(ax)
        on_line = _on_line(self, fixed)
        ax.plot(self.points[x][on_line], self.measured[on_line], "o", label="traces")
        xs = self.points[x]
        grid = np.geomspace(float(xs.min()), float(xs.max()) * 2, 200)
        ax.plot(grid, self.predict(**{x: grid}, **fixed), "-", label="model")
        return _finish(ax, x, "run time (s)", fixed, log=True)

    def optimal_grain(self, k: str = "K", **fixed: float) -> float:
        """See :func:`optimal_grain`."""
        return optimal_grain(self, k, **fixed)

    def speedup(self, ps: Sequence[float], p: str = "P", **fixed: float) -> np.ndarray:
        """See :func:`speedup`."""
        return speedup(self, ps, p, **fixed)

    def constant_time(
        self, time: float, ps: Sequence[float], n: str = "N", p: str = "P", **fixed: float
    ) -> np.ndarray:
        """See :func:`constant_time`."""
        return constant_time(self, time, ps, n, p, **fixed)

    def __repr__(self) -> str:
        return f"PerformanceModel({self.expression}, smape={self.smape:.3g}%)"

    def _repr_html_(self) -> str:
        return (
            f"<b>PerformanceModel</b> <code>{html.escape(str(self.expression))}</code> "
            f"(SMAPE {self.smape:.3g} %)"
        )


def _fit(points: dict[str, np.ndarray], ys: Sequence[float], max_terms: int) -> MultiModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fit_pmnf(points, ys, max_terms=max_terms)


def model(
    traces: Sequence[TraceModel | str],
    params: Mapping[str, Sequence[float]] | None = None,
    *,
    max_terms: int = 2,
    network: Any = None,
    compute_regimes: str | None = None,
) -> PerformanceModel:
    """A closed-form model of run time from traces at several parameter points.

    Parameters
    ----------
    traces : sequence of Trace or path
        Traces of one program (at least 3 parameter points; more than 2 per coefficient make
        the cross-validation meaningful). Traces at the same parameter point are repeats: each
        measured part (run time, a phase's occurrences and time per occurrence) is the median
        over them, so that one slow run moves no part of the model.
    params : mapping of str to sequence of float, optional
        Parameter values of each trace, e.g. ``{"N": [...], "K": [...]}``; ``P`` defaults to
        the traces' rank counts.
    max_terms : int
        Terms per fitted part (1 to 3).
    network : LogGP, optional
        The machine's message costs, e.g. ``scalatrace.calibrate(np=2)`` (untraced
        ping-pongs). MK's split (§4): a point-to-point phase costs its computation ``W`` per
        occurrence (the busiest rank's, from the trace: the collector's own time is not in it)
        plus the machine's overheads ``m`` of a rank's own messages per occurrence (the
        largest over the ranks; LogGOPS ``o_s + (k - 1) O`` per k-byte send, ``o_r + (k - 1)
        O`` per receive: ``s + r`` for a rank that both receives and sends, as in MK's laws)
        instead of the traced time inside the calls, which carries the tracer's per-call cost.
        A pipeline or one-way shift costs ``B (W + m) + V D (W + s + tau + r)`` (MK's Remain,
        and a Fill of ``D`` hops per visit, each one message's trip with ``tau = L + (k - 1)
        G``; the chain end's last block, recorded before the next phase's call, is counted
        here); other point-to-point phases ``B (W + m + tau)``; collectives their computation
        and ``ceil(log2 P)`` rounds of ``o_s + o_r + L`` (and the bytes terms). The rest is
        the slowest rank's time outside the phases. None (the default): every part is the
        traced time.
    compute_regimes : str, optional
        With a ``network``: each phase's computation ``W`` as a law whose
        coefficients change between regimes of this expression of the parameters (e.g.
        ``"N/P"``, the rows of a rank's strip: the cost per cell changes where the strip leaves
        a cache level), the regimes found by the fit together with the terms
        (:func:`scalatrace.pmnf.fit_pmnf_regimes`: terms times regimes at most ``max_terms``,
        the simplest terms and then the fewest regimes that cross-validate; one regime is the
        plain PMNF law). None (the default): one PMNF law.

    Returns
    -------
    PerformanceModel

    Raises
    ------
    ModelError
        Traces whose phases differ (other than in kind, a pipeline over 2 ranks being a shift).
    UsageError
        Bad arguments.
    """
    if isinstance(traces, (TraceModel, str)):
        raise UsageError("model needs a list of traces at several parameter points")
    max_terms = check_int("max_terms", max_terms, lo=1, hi=3)
    ts = [as_trace(t) for t in traces]
    if len(ts) < 3:
        raise UsageError(f"model needs at least 3 traces, got {len(ts)}")
    if params is not None and not isinstance(params, Mapping):
        raise UsageError(f"params must map parameter names to values, not {type(params).__name__}")
    points: dict[str, np.ndarray] = {}
    for name, values in (params or {}).items():
        arr = np.asarray(values, dtype=float)
        if arr.shape != (len(ts),):
            raise UsageError(
                f"params[{name!r}] needs one value per trace ({len(ts)}), got {arr.shape}"
            )
        points[str(name)] = arr
    if "P" not in points:
        points["P"] = np.array([t.nranks for t in ts], dtype=float)
    analyses = [phase_analysis(t) for t in ts]
    shapes = [[",".join(p.ops) for p in a.phases] for a in analyses]
    if any(s != shapes[0] for s in shapes):
        detail = "; ".join(f"trace {i}: {' | '.join(s) or 'none'}" for i, s in enumerate(shapes))
        raise ModelError(f"the traces' communication phases differ ({detail})")
    pipelines = sorted({p.id for a in analyses for p in a.phases if p.kind in ("pipeline", "tree")})
    if compute_regimes is not None and (network is None or not isinstance(compute_regimes, str)):
        raise UsageError(
            "compute_regimes needs a network (the computation is split from the messages only "
            f"then) and a string expression of the parameters, got {compute_regimes!r}"
        )
    if network is not None:
        for name in ("L", "o_s", "o_r", "G", "O"):
            value = getattr(_loggp(network), name, None)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise UsageError(
                    f"network must be a LogGP (scalatrace.calibrate()); its {name} is {value!r}"
                )
    measured_traces = [measure(t, pipelines, a, network) for t, a in zip(ts, analyses)]
    points, ms = _merge_repeats(points, measured_traces)
    if len(ms) < 3:
        raise UsageError(f"model needs traces at 3 or more parameter points, got {len(ms)}")
    phase_models = []
    for g in range(len(shapes[0])):
        pm_list = [m.phases[g] for m in ms]
        kind = pm_list[0].kind
        pm = PhaseModel(
            id=g,
            kind=kind,
            ops=pm_list[0].ops,
            occurrences=_fit(points, [x.occurrences for x in pm_list], max_terms),
            per_occurrence=with_nonnegative_constant(
                _fit(points, [x.per_occurrence for x in pm_list], max_terms)
            ),
            overlaps_next=all(x.overlaps_next for x in pm_list),
        )
        if kind == "pipeline" or (network is not None and pm_list[0].chained):
            pm.visits = _fit(points, [x.visits for x in pm_list], max_terms)
            pm.depth = _fit(points, [x.depth for x in pm_list], max_terms)
        if network is not None:
            pm.chained = pm_list[0].chained
            pm.compute = _fit_part(
                points,
                [x.compute for x in pm_list],
                max_terms,
                compute_regimes,
            )
            pm.message = _fit_part(points, [x.message for x in pm_list], max_terms)
            pm.hop = _fit_part(points, [x.hop for x in pm_list], max_terms)
            if isinstance(network, InSituBlocks) and kind != "collective":
                _with_laws(pm, pm_list, network, points, max_terms)
            elif kind != "collective":  # the mean message size (bytes), as with the laws
                pm.message_bytes = _fit_part(points, [x.message_bytes for x in pm_list], max_terms)
        phase_models.append(pm)
    for m_ in ms:  # one overlap decision for all traces (the model's)
        for pm, ph in zip(phase_models, m_.phases):
            ph.overlaps_next = pm.overlaps_next
    rest_values = np.array([m.rest for m in ms])
    # The rest may be negative at some points (the phases' slowest ranks are not the same rank):
    # then the mean. A time is not negative: a law's constant, or that mean, held at 0 or above
    # (a negative mean: the phases over-count, and the model is their sum).
    rest = with_nonnegative_constant(
        _fit(points, rest_values, max_terms)
        if np.all(rest_values > 0)
        else _constant(points, rest_values)
    )
    measured = np.array([m.total for m in ms])
    direct = _fit(points, measured, max_terms)
    return PerformanceModel(
        tuple(points), points, measured, phase_models, rest, direct, ms, network
    )


def _with_laws(
    pm: PhaseModel,
    pm_list: Sequence[PhaseMeasurement],
    blocks: Any,
    points: dict[str, np.ndarray],
    max_terms: int,
) -> None:
    """The phase's overheads as the laws of ``blocks`` at its fitted computation and message
    size (the ranks' sends and receives per occurrence must be the same in every trace)."""
    counts = {x.counts for x in pm_list}
    if len(counts) != 1:
        raise ModelError(
            f"phase {pm.id} ({pm.ops}): its ranks' sends and receives per occurrence differ "
            f"between the traces ({sorted(counts)}); overhead laws (network=InSituBlocks) need "
            "them equal (e.g. traces at one rank count)"
        )
    pm.laws = blocks
    pm.counts = counts.pop()
    pm.message_bytes = _fit_part(points, [x.message_bytes for x in pm_list], max_terms)
    net = blocks.network
    pm.transfer = _fit_part(
        points, [net.L + max(x.message_bytes - 1.0, 0.0) * net.G for x in pm_list], max_terms
    )


def _fit_part(
    points: dict[str, np.ndarray],
    values: Sequence[float],
    max_terms: int,
    regimes: str | None = None,
) -> MultiModel | RegimeModel:
    """A fitted part that may be zero at every point (a collective's messages); with
    ``regimes`` (an expression of the parameters) its coefficients per regime of it. Every
    part is a time or a size per occurrence, so its constant (the fixed part) is held at or
    above 0 (:func:`scalatrace.pmnf.with_nonnegative_constant`)."""
    arr = np.asarray(values, dtype=float)
    if not np.all(arr > 0):
        return _constant(points, arr)
    if regimes is None:
        return with_nonnegative_constant(_fit(points, arr, max_terms))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return with_nonnegative_constant(
            fit_pmnf_regimes(points, arr, regimes, max_terms=max_terms)
        )


def _merge_repeats(
    points: dict[str, np.ndarray], ms: list[Measurement]
) -> tuple[dict[str, np.ndarray], list[Measurement]]:
    """Traces at the same parameter point are repeats of one run: one measurement per point,
    each part the median of its repeats' (one slow run moves none of them; the run of median
    total time may still hold an outlying phase). Points keep the order of their first trace."""
    keys = list(zip(*(points[p] for p in points))) if points else [()] * len(ms)
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(tuple(float(v) for v in key), []).append(i)
    if all(len(g) == 1 for g in groups.values()):
        return points, ms
    merged = []
    for idx in groups.values():
        reps = [ms[i] for i in idx]
        phases = []
        for g, first in enumerate(reps[0].phases):

            def med(attr: str, g: int = g, reps: list[Measurement] = reps) -> float:
                return float(np.median([getattr(r.phases[g], attr) for r in reps]))

            phases.append(
                PhaseMeasurement(
                    first.kind,
                    first.ops,
                    med("occurrences"),
                    med("visits"),
                    med("depth"),
                    med("per_occurrence"),
                    all(r.phases[g].overlaps_next for r in reps),
                    first.network,
                    first.chained,
                    med("compute"),
                    med("message"),
                    med("hop"),
                    med("message_bytes"),
                    first.counts,
                )
            )
        outside = (
            float(np.median([r.outside for r in reps])) if reps[0].outside is not None else None
        )
        merged.append(Measurement(float(np.median([r.total for r in reps])), phases, outside))
    first_of = [idx[0] for idx in groups.values()]
    return {p: v[first_of] for p, v in points.items()}, merged


def _constant(points: dict[str, np.ndarray], values: np.ndarray) -> MultiModel:
    """The mean as a constant model (for parts PMNF cannot take, e.g. of mixed sign)."""
    mean = float(values.mean())
    return MultiModel(
        tuple(points),
        (),
        np.array([mean]),
        points,
        values,
        float("nan"),
        smape(values, np.full_like(values, mean)),
    )


# --- analyses (MK §5.4, §5.5) -------------------------------------------------------------


def _check_params(m: PerformanceModel, names: Sequence[str], fixed: Mapping[str, float]) -> None:
    for n in names:
        if n not in m.parameters:
            raise UsageError(f"{n!r} is not a parameter of the model ({', '.join(m.parameters)})")
    missing = [p for p in m.parameters if p not in names and p not in fixed]
    if missing:
        raise UsageError(f"give values for {', '.join(missing)}")


def optimal_grain(
    m: PerformanceModel,
    k: str = "K",
    lo: float | None = None,
    hi: float | None = None,
    **fixed: float,
) -> float:
    """The grain size ``k`` minimising T at the ``fixed`` values of the other parameters inside
    ``[lo, hi]`` (default: a quarter of the smallest to four times the largest ``k`` of the
    traces): where dT/dk = 0, found as the minimum of T (a grid of 400 geometric steps, then
    Brent's bounded search in log k between the neighbours of the grid's best point); the
    better end of the range if T keeps falling or rising there. Numerical, not SymPy's
    derivative: its sign assumptions can take minutes on the fitted expressions."""
    import sympy
    from scipy.optimize import minimize_scalar

    _check_params(m, [k], fixed)
    syms = m.symbols
    expr = m.expression.subs({syms[p]: v for p, v in fixed.items()})
    t = sympy.lambdify(syms[k], expr, "numpy")
    lo = check_float("lo", lo if lo is not None else m.points[k].min() / 4, lo=1e-300)
    hi = check_float("hi", hi if hi is not None else m.points[k].max() * 4, lo=lo)
    grid = np.geomspace(lo, hi, 400)
    tv = np.asarray(t(grid), dtype=float) * np.ones_like(grid)
    i = int(np.nanargmin(tv))
    if i in (0, grid.size - 1):
        return float(grid[i])
    res = minimize_scalar(
        lambda u: float(t(np.exp(u))),
        bounds=(float(np.log(grid[i - 1])), float(np.log(grid[i + 1]))),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return float(np.exp(res.x))


def speedup(m: PerformanceModel, ps: Sequence[float], p: str = "P", **fixed: float) -> np.ndarray:
    """T(1) / T(P) at each ``P`` in ``ps`` (other parameters ``fixed``)."""
    _check_params(m, [p], fixed)
    ps = np.asarray(ps, dtype=float)
    return m.predict(**{p: 1.0}, **fixed) / m.predict(**{p: ps}, **fixed)


def constant_time(
    m: PerformanceModel,
    time: float,
    ps: Sequence[float],
    n: str = "N",
    p: str = "P",
    lo: float = 1.0,
    hi: float = 1e12,
    **fixed: float,
) -> np.ndarray:
    """The problem size ``n`` that keeps T at ``time`` seconds for each ``P`` in ``ps`` (NaN
    where no size in ``[lo, hi]`` does)."""
    from scipy.optimize import brentq

    _check_params(m, [n, p], fixed)
    time = check_float("time", time)
    lo = check_float("lo", lo, lo=1e-300)
    hi = check_float("hi", hi, lo=lo)
    out = []
    for pv in np.atleast_1d(np.asarray(ps, dtype=float)):

        def gap(x: float, pv: float = pv) -> float:
            return float(m.predict(**{n: x, p: pv}, **fixed)) - time

        grid = np.geomspace(lo, hi, 200)
        g = np.array([gap(x) for x in grid])
        cross = np.flatnonzero((g[:-1] < 0) & (g[1:] >= 0))
        out.append(brentq(gap, grid[cross[0]], grid[cross[0] + 1]) if cross.size else np.nan)
    return np.array(out)


def _on_line(m: PerformanceModel, fixed: Mapping[str, float]) -> np.ndarray:
    """Which traces lie at the ``fixed`` values."""
    on_line = np.ones(m.measured.size, dtype=bool)
    for p, v in fixed.items():
        on_line &= np.isclose(m.points[p], v)
    return on_line


def _finish(ax: Any, x: str, y: str, fixed: Mapping[str, float], log: bool = False) -> Any:
    """Labels, title (the fixed values) and legend; returns the axes."""
    if log:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(", ".join(f"{a}={b:g}" for a, b in fixed.items()))
    ax.legend()
    return ax


def _axes(ax: Any) -> Any:
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    return ax


def plot_optimal_grain(m: PerformanceModel, k: str = "K", ax: Any = None, **fixed: float) -> Any:
    """T against ``k`` with the optimum marked (and the traces on that line); returns the axes."""
    ax = _axes(ax)
    best = optimal_grain(m, k, **fixed)
    grid = np.geomspace(m.points[k].min() / 4, m.points[k].max() * 4, 200)
    ax.plot(grid, m.predict(**{k: grid}, **fixed), "-", label="model")
    ax.axvline(best, ls="--", color="k", label=f"optimal {k} = {best:.3g}")
    on_line = _on_line(m, fixed)
    if on_line.any():
        ax.plot(m.points[k][on_line], m.measured[on_line], "o", label="traces")
    return _finish(ax, k, "run time (s)", fixed, log=True)


def plot_speedup(
    m: PerformanceModel, ps: Sequence[float], p: str = "P", ax: Any = None, **fixed: float
) -> Any:
    """Speedup T(1) / T(P) against ``P`` (and the ideal line); returns the axes."""
    ax = _axes(ax)
    ps = np.asarray(ps, dtype=float)
    ax.plot(ps, speedup(m, ps, p, **fixed), "o-", label="model")
    ax.plot(ps, ps, ":", color="gray", label="ideal")
    return _finish(ax, p, "speedup", fixed)


def plot_constant_time(
    m: PerformanceModel,
    time: float,
    ps: Sequence[float],
    n: str = "N",
    p: str = "P",
    ax: Any = None,
    **fixed: float,
) -> Any:
    """The problem size keeping T constant against ``P``; returns the axes."""
    ax = _axes(ax)
    ps = np.asarray(ps, dtype=float)
    ax.plot(ps, constant_time(m, time, ps, n, p, **fixed), "o-", label=f"T = {time:g} s")
    return _finish(ax, p, n, fixed)
