"""Trace-driven simulation without MPI: :func:`simulate`, :func:`sweep`, :func:`calibrate`,
:func:`calibrate_in_situ`, :func:`calibrate_in_situ_blocks` (the last three run MPI ping-pongs to
measure the machine).

The simulator (``cpp/core``, see ``docs/simulator.md``) walks every rank's cursor over the
compressed trace and predicts the run time on a LogGP network. Python-side times are in
**seconds**; the LogGP parameters too (``G`` in seconds per byte).

Example::

    import scalatrace
    t = scalatrace.load("stencil.sct")
    r = scalatrace.simulate(t, network=scalatrace.LogGP(L=2e-6, G=1e-10), compute_scale=0.5)
    r.total_time, r.to_pandas().head()
    df = scalatrace.sweep(t, {"compute_scale": [0.5, 1, 2], "bandwidth_scale": [1, 4]})
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import subprocess
import tempfile
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _core
from ._base import (
    MAX_LAUNCH_RANKS,
    MAX_TIMEOUT_S,
    OP_NAMES,
    check_bool,
    check_choice,
    check_float,
    check_int,
    one_line,
)
from ._model import TraceModel, as_trace, load
from .errors import (
    MPIRunError,
    ScalatraceError,
    SimulationError,
    SimulationParameterError,
    UsageError,
)
from .topology import Noise, Topology

if TYPE_CHECKING:
    import pandas
    import sympy

Timing = Literal["mean", "median", "sample", "none"]
Placement = Literal["block", "round_robin", "random"]

_NS = 1e-9
_DEFAULT_EAGER = 65536.0  # bytes: simulate()'s eager threshold when the network has none


@dataclass(frozen=True)
class LogGP:
    """LogGP parameters of a network link, in seconds, with LogGOPS's CPU overhead per byte.

    A k-byte message keeps the sender busy ``o_s + (k - 1) O`` (an eager message is copied out
    of the user buffer; a rendezvous one costs ``o_s``), travels ``L + (k - 1) G`` and keeps the
    receiver busy ``o_r + (k - 1) O``.

    Attributes
    ----------
    L : float
        Latency.
    o_s, o_r : float
        Send and receive overhead (the CPU is busy).
    g : float
        Minimum gap between the starts of two messages of one sender.
    G : float
        Gap per byte (inverse bandwidth), seconds per byte.
    O : float
        CPU overhead per byte (the copies of a shared-memory or eager transfer), seconds per
        byte; 0 (the default) is plain LogGP.
    R : float
        The extra cost of a rendezvous handshake, seconds: a rendezvous message's data leaves
        ``L + R`` after its receive matched the request-to-send (MPI libraries switch
        protocols at a size, and the switch costs microseconds at once: a ping-pong's half
        round trip goes from 1.1 to 3.5 us at 8,255 B on MPICH's shared memory here). 0 (the
        default): the handshake costs its two latencies only.
    eager_threshold : float, optional
        The largest message (bytes) the MPI library sends eagerly, as :func:`calibrate` finds
        it: :func:`simulate` uses it unless given its own ``eager_threshold``. ``None`` (the
        default): :func:`simulate`'s 65,536 bytes.
    """

    L: float = 1.0e-6
    o_s: float = 0.5e-6
    o_r: float = 0.5e-6
    g: float = 0.0
    G: float = 1.0e-10
    O: float = 0.0  # noqa: E741 (LogGOPS's name)
    R: float = 0.0
    eager_threshold: float | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "eager_threshold" and v is None:
                continue
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v < 0
            ):
                raise SimulationParameterError(
                    f"LogGP.{f.name} must be a non-negative finite number, got {v!r}"
                )

    def scaled(self, latency: float = 1.0, bandwidth: float = 1.0, overhead: float = 1.0) -> LogGP:
        """A network ``latency`` times slower, ``bandwidth`` times faster, overheads times ``overhead``."""
        if bandwidth <= 0:
            raise SimulationParameterError(f"bandwidth factor must be positive, got {bandwidth!r}")
        return LogGP(
            L=self.L * latency,
            o_s=self.o_s * overhead,
            o_r=self.o_r * overhead,
            g=self.g / bandwidth,
            G=self.G / bandwidth,
            O=self.O * overhead,
            R=self.R * latency,
            eager_threshold=self.eager_threshold,
        )

    def _ns(self) -> tuple[float, float, float, float, float, float, float]:
        return (
            self.L / _NS,
            self.o_s / _NS,
            self.o_r / _NS,
            self.g / _NS,
            self.G / _NS,
            self.O / _NS,
            self.R / _NS,
        )


_TIME_COLUMNS = ("compute", "comm", "wait", "late_sender", "late_receiver")


class SimResult:
    """What a simulation predicts. Times in seconds, NumPy arrays indexed by rank.

    Attributes
    ----------
    total_time : float
        Predicted run time (the last rank's end).
    end_time : numpy.ndarray
        Per rank: time of its last MPI call's end.
    compute, comm, wait, late_sender, late_receiver : numpy.ndarray
        Per rank: compute between calls, CPU time inside MPI calls, idle time inside MPI calls,
        the part of the idle time waiting for late senders / late receivers (rendezvous).
    calls : numpy.ndarray
        Per rank: MPI calls simulated.
    sent_messages, recv_messages, sent_bytes, recv_bytes : numpy.ndarray
        Per rank: user point-to-point traffic matched (self-messages excluded).
    events : int
        Trace events simulated (all ranks).
    messages : int
        Point-to-point messages simulated, including those of decomposed collectives.
    fair_passes, fair_settled : int, bool
        With ``Topology(..., sharing="fair")`` or ``"latency_weighted"``: the passes the
        fair-sharing iteration ran, and whether its last two passes agreed (``False``: the pass
        limit stopped it, the times are the last pass's and :func:`simulate` warned). 0 and
        ``True`` otherwise.
    params : dict
        The parameters of the run.
    """

    def __init__(self, raw: Mapping[str, Any], params: Mapping[str, Any]) -> None:
        self._raw = raw
        self.params = dict(params)
        self.total_time: float = raw["total_ns"] * _NS
        self.end_time: np.ndarray = np.asarray(raw["end_ns"]) * _NS
        ranks = raw["ranks"]
        for name in _TIME_COLUMNS:
            setattr(self, name, np.asarray(ranks[name]) * _NS)
        self.calls: np.ndarray = np.asarray(ranks["calls"])
        self.sent_messages: np.ndarray = np.asarray(raw["sent_messages"])
        self.recv_messages: np.ndarray = np.asarray(raw["recv_messages"])
        self.sent_bytes: np.ndarray = np.asarray(raw["sent_bytes"])
        self.recv_bytes: np.ndarray = np.asarray(raw["recv_bytes"])
        self.events: int = int(raw["events"])
        self.messages: int = int(raw["messages"])
        self.fair_passes: int = int(raw["fair_passes"])
        self.fair_settled: bool = bool(raw["fair_settled"])

    @property
    def nranks(self) -> int:
        """Number of ranks simulated."""
        return len(self.end_time)

    def to_pandas(
        self, what: Literal["ranks", "sites", "timeline", "pairs"] = "ranks"
    ) -> pandas.DataFrame:
        """A table of the results.

        Parameters
        ----------
        what : {"ranks", "sites", "timeline", "pairs"}
            ``ranks``: one row per rank; ``sites``: one row per (call site, op) summed over
            ranks; ``timeline``: start/end of every event (``simulate(..., timeline=True)``);
            ``pairs``: matched point-to-point messages per (src, dst)
            (``simulate(..., pair_counts=True)``).
        """
        import pandas as pd

        if what == "ranks":
            cols: dict[str, Any] = {"rank": np.arange(self.nranks), "end": self.end_time}
            for name in _TIME_COLUMNS:
                cols[name] = getattr(self, name)
            cols.update(
                calls=self.calls,
                sent_messages=self.sent_messages,
                sent_bytes=self.sent_bytes,
                recv_messages=self.recv_messages,
                recv_bytes=self.recv_bytes,
            )
            return pd.DataFrame(cols)
        if what == "sites":
            s = self._raw["sites"]
            cols = {
                "site": np.asarray(s["site"]),
                "op": [OP_NAMES[o] for o in s["op"]],
                "calls": np.asarray(s["calls"]),
            }
            for name in _TIME_COLUMNS:
                cols[name] = np.asarray(s[name]) * _NS
            return pd.DataFrame(cols)
        if what == "timeline":
            t = self._raw["timeline"]
            return pd.DataFrame(
                {
                    "rank": np.asarray(t["rank"]),
                    "index": np.asarray(t["index"]),
                    "op": [OP_NAMES[o] for o in t["op"]],
                    "site": np.asarray(t["site"]),
                    "start": np.asarray(t["start"]) * _NS,
                    "end": np.asarray(t["end"]) * _NS,
                }
            )
        if what == "pairs":
            p = self._raw["pairs"]
            return pd.DataFrame({k: np.asarray(p[k]) for k in ("src", "dst", "messages", "bytes")})
        raise UsageError(f"what must be 'ranks', 'sites', 'timeline' or 'pairs', got {what!r}")

    @property
    def timeline(self) -> dict[str, np.ndarray]:
        """Per-event rows (rank, index, op code, site, start, end in seconds); empty unless
        ``simulate(..., timeline=True)``."""
        t = self._raw["timeline"]
        return {
            "rank": np.asarray(t["rank"]),
            "index": np.asarray(t["index"]),
            "op": np.asarray(t["op"]),
            "site": np.asarray(t["site"]),
            "start": np.asarray(t["start"]) * _NS,
            "end": np.asarray(t["end"]) * _NS,
        }

    def summary(self) -> dict[str, float]:
        """Totals over ranks (seconds) and the predicted time."""
        out = {"total_time": self.total_time}
        for name in _TIME_COLUMNS:
            out[name] = float(getattr(self, name).sum())
        return out

    def __repr__(self) -> str:
        return (
            f"SimResult(total_time={self.total_time:.6g} s, nranks={self.nranks}, events={self.events}, "
            f"compute={self.compute.mean():.3g} s, comm={self.comm.mean():.3g} s, "
            f"wait={self.wait.mean():.3g} s per rank)"
        )

    def _repr_html_(self) -> str:
        """Jupyter: the predicted time and the per-rank table (seconds)."""
        head = (
            f"<b>SimResult</b>: predicted {self.total_time:.6g} s on {self.nranks} ranks, "
            f"{self.events} events (times in seconds, per rank)"
        )
        return head + self.to_pandas().head(32).to_html(index=False, float_format="{:.4g}".format)


_NO_INTRA_NODE = (
    "ranks_per_node={n} without intra_node= changes nothing: messages within a node would use "
    "the same parameters as between nodes. Pass intra_node=LogGP(...) (for example "
    "scalatrace.calibrate(), measured on one node) or leave ranks_per_node=1"
)


def _layout_changes_nothing(
    ranks_per_node: Any, intra_node: Any, topology: Any, contention: Any
) -> bool:
    """``ranks_per_node`` > 1 on the flat network, without contention and without
    ``intra_node``: every message would cost the same as with one rank per node."""
    return (
        isinstance(ranks_per_node, (int, np.integer))
        and ranks_per_node > 1
        and intra_node is None
        and not isinstance(topology, Topology)
        and not contention
    )


def simulate(
    trace: TraceModel | str | os.PathLike[str],
    network: LogGP | Topology | None = None,
    *,
    intra_node: LogGP | None = None,
    ranks_per_node: int = 1,
    placement: Placement | Sequence[int] = "block",
    noise: Noise | None = None,
    compute_scale: float = 1.0,
    site_compute_scale: Mapping[int, float] | None = None,
    size_scale: float = 1.0,
    timing: Timing = "mean",
    seed: int = 0,
    eager_threshold: float | None = None,
    contention: bool = False,
    recorded_local_calls: bool = True,
    timeline: bool = False,
    pair_counts: bool = False,
) -> SimResult:
    """Predicts the run time of a traced program on a LogGP network, without MPI.

    Parameters
    ----------
    trace : Trace or path
        The compressed trace (never expanded: each rank walks its own cursor).
    network : LogGP or Topology, optional
        Parameters between nodes (default ``LogGP()``: every pair of nodes one link), or a
        :class:`scalatrace.Topology` (torus, fat tree, dragonfly: routes over links with
        per-hop latency, link bandwidth and congestion; its ``endpoint`` is the LogGP of
        the NICs).
    intra_node : LogGP, optional
        Parameters between ranks of one node (default: the topology's endpoint). On the flat
        network without ``contention``, needed when ``ranks_per_node`` > 1: the node layout
        only matters there through them (:func:`calibrate` measures them on one node).
    ranks_per_node : int
        Ranks per node (the slots of every node); messages within a node use ``intra_node``,
        the others ``network``.
    placement : {"block", "round_robin", "random"} or sequence of int
        Ranks onto nodes: ``block`` (node = rank // ranks_per_node), ``round_robin``
        (rank % number of nodes used), ``random`` (nodes drawn among the topology's and ranks
        shuffled over their slots, seeded by ``seed``), or one node per rank.
    noise : Noise, optional
        OS noise: compute between calls stretches over periodic detours of the CPU.
    compute_scale : float
        Multiplies every compute time between MPI calls (2 = processors twice as slow).
    site_compute_scale : dict, optional
        Call site id -> extra factor for the compute before calls of that site.
    size_scale : float
        Multiplies every message size.
    timing : {"mean", "median", "sample", "none"}
        Compute time from each event's timing histogram (``sample`` draws with ``seed``).
    eager_threshold : float, optional
        Messages larger than this many bytes use the rendezvous protocol (``Ssend`` always,
        ``Bsend`` never). Default: the network's ``eager_threshold`` (what :func:`calibrate`
        found), else 65,536.
    contention : bool
        Inter-node messages share their node's link (one at a time per direction).
    recorded_local_calls : bool
        Calls that never wait for another rank (nonblocking and persistent initiations,
        ``Start``, the ``Test`` family, ``Request_free``, functions recorded as ``Other``) take
        at least their recorded duration (the mean of their durations' median bin; blocking
        collectives and eager blocking sends bound the whole call, a collective by its fastest
        bin): the MPI library's own time per call, which LogGP's overheads leave out. It is
        not scaled by any what-if parameter. ``False``: only the model's overheads (as
        SimGrid's replay).
    timeline : bool
        Record start/end of every event (``SimResult.to_pandas("timeline")``, ``plot.timeline``).
    pair_counts : bool
        Record matched messages per (src, dst) pair (``SimResult.to_pandas("pairs")``).

    Returns
    -------
    SimResult

    Raises
    ------
    SimulationParameterError
        A negative or non-finite parameter, an unknown timing mode (also a ValueError), or
        ``ranks_per_node`` > 1 without ``intra_node`` on the flat network without contention
        (it would change nothing).
    SimulationError
        The trace deadlocks in simulation (the message names ranks and events) or sends
        messages that are never received.
    """
    t = as_trace(trace)
    topology = network if isinstance(network, Topology) else None
    if topology is not None:
        net = topology.endpoint if topology.endpoint is not None else LogGP()
    else:
        net = network if network is not None else LogGP()
    intra = intra_node if intra_node is not None else net
    if not isinstance(net, LogGP) or not isinstance(intra, LogGP):
        raise SimulationParameterError(
            "network must be a scalatrace.LogGP or scalatrace.Topology, intra_node a scalatrace.LogGP"
        )
    if noise is not None and not isinstance(noise, Noise):
        raise SimulationParameterError(
            f"noise must be a scalatrace.Noise or None, not {noise!r:.60}"
        )
    placement_args = _placement_args(placement, t.nranks, seed if isinstance(seed, int) else 0)
    if isinstance(ranks_per_node, bool) or not isinstance(ranks_per_node, (int, np.integer)):
        raise SimulationParameterError(f"ranks_per_node must be an integer, got {ranks_per_node!r}")
    # Argument checks raise UsageError; the simulator names them as its parameter errors
    # (SimulationParameterError is a UsageError too).
    try:
        check_int("ranks_per_node", ranks_per_node, lo=1)
        if _layout_changes_nothing(ranks_per_node, intra_node, topology, contention):
            raise UsageError(_NO_INTRA_NODE.format(n=int(ranks_per_node)))
        compute_scale = check_float("compute_scale", compute_scale)
        size_scale = check_float("size_scale", size_scale)
        if eager_threshold is None:
            eager_threshold = net.eager_threshold
        eager_threshold = check_float(
            "eager_threshold", _DEFAULT_EAGER if eager_threshold is None else eager_threshold
        )
        seed = check_int("seed", seed, lo=0, hi=2**64 - 1)
        check_choice("timing", timing, ("mean", "median", "sample", "none"))
        for name, flag in (
            ("contention", contention),
            ("timeline", timeline),
            ("pair_counts", pair_counts),
            ("recorded_local_calls", recorded_local_calls),
        ):
            check_bool(name, flag)
        if site_compute_scale is not None and not isinstance(site_compute_scale, Mapping):
            raise UsageError(
                f"site_compute_scale must be a mapping of call-site id to factor, not {site_compute_scale!r:.60}"
            )
        site_compute_scale = {
            check_int("site_compute_scale key", k, lo=0, hi=2**32 - 1): check_float(
                f"site_compute_scale[{k}]", v
            )
            for k, v in (site_compute_scale or {}).items()
        }
    except UsageError as e:
        raise SimulationParameterError(str(e)) from None
    params = {
        "network": net,
        "intra_node": intra,
        "ranks_per_node": int(ranks_per_node),
        "compute_scale": compute_scale,
        "size_scale": size_scale,
        "timing": timing,
        "seed": seed,
        "eager_threshold": eager_threshold,
        "contention": contention,
        "recorded_local_calls": recorded_local_calls,
        "topology": topology,
        "placement": placement,
        "noise": noise,
    }
    try:
        raw = _core.simulate(
            t._core,
            net._ns(),
            intra._ns(),
            int(ranks_per_node),
            float(eager_threshold),
            bool(contention),
            str(timing),
            int(seed),
            float(compute_scale),
            {int(k): float(v) for k, v in (site_compute_scale or {}).items()},
            float(size_scale),
            bool(timeline),
            10_000_000,
            bool(pair_counts),
            bool(recorded_local_calls),
            **(topology._core_args() if topology is not None else {}),
            **placement_args,
            **(noise._core_args() if noise is not None else {}),
        )
    except (ValueError, TypeError, OverflowError) as e:
        raise SimulationParameterError(one_line(e)) from None
    except ScalatraceError as e:
        if type(e) is ScalatraceError:
            raise SimulationError(str(e)) from None
        raise
    result = SimResult(raw, params)
    if not result.fair_settled:
        warnings.warn(
            f"simulate: fair sharing did not settle in {result.fair_passes} passes; the times are "
            "the last pass's (an approximation: first come, first served is exact to its model)",
            UserWarning,
            stacklevel=2,
        )
    return result


def _placement_args(placement: Any, nranks: int, seed: int) -> dict[str, Any]:
    """The core's placement arguments; seeded by ``simulate``'s ``seed`` for ``random``."""
    if isinstance(placement, str):
        if placement not in ("block", "round_robin", "random"):
            raise SimulationParameterError(
                f"placement must be 'block', 'round_robin', 'random' or a list of nodes, got {placement!r}"
            )
        return {"placement": placement, "placement_seed": seed}
    if isinstance(placement, (bytes, Mapping)) or not isinstance(placement, (Sequence, np.ndarray)):
        raise SimulationParameterError(
            f"placement must be a name or a sequence of nodes, not {placement!r:.60}"
        )
    nodes = np.asarray(placement)
    if nodes.ndim != 1 or len(nodes) != nranks or (len(nodes) and nodes.dtype.kind not in "iu"):
        raise SimulationParameterError(
            f"an explicit placement gives one integer node per rank ({nranks} ranks, got {nodes.shape} {nodes.dtype})"
        )
    return {"placement": "explicit", "node_of_rank": [int(x) for x in nodes]}


# --------------------------------------------------------------------------------------- sweep

_SCALAR_KEYS = {
    "compute_scale",
    "size_scale",
    "ranks_per_node",
    "timing",
    "seed",
    "eager_threshold",
    "contention",
    "recorded_local_calls",
    "placement",
}
_NETWORK_KEYS = {"L", "o_s", "o_r", "g", "G", "O", "R"}
_FACTOR_KEYS = {"bandwidth_scale", "latency_scale", "overhead_scale"}
_OBJECT_KEYS = {"network", "intra_node", "noise"}
GRID_KEYS = frozenset(_SCALAR_KEYS | _NETWORK_KEYS | _FACTOR_KEYS | _OBJECT_KEYS)
"""Parameters :func:`sweep` can vary."""


def _grid_points(grid: Mapping[str, Iterable[Any]]) -> list[dict[str, Any]]:
    if not isinstance(grid, Mapping) or not grid:
        raise SimulationParameterError(
            "grid must be a non-empty dict of parameter -> list of values"
        )
    keys = list(grid)
    unknown = [k for k in keys if k not in GRID_KEYS]
    if unknown:
        raise SimulationParameterError(
            f"unknown sweep parameter(s) {unknown}; choose from {sorted(GRID_KEYS)}"
        )
    values = []
    for k in keys:
        v = grid[k]
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            raise SimulationParameterError(f"grid[{k!r}] must be a list of values, got {v!r}")
        v = list(v)
        if not v:
            raise SimulationParameterError(f"grid[{k!r}] is empty: the grid has no points")
        values.append(v)
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _point_kwargs(base: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    kw = dict(base)
    chosen = point.get("network", kw.get("network")) or LogGP()
    topology = chosen if isinstance(chosen, Topology) else None
    net: LogGP = (topology.endpoint or LogGP()) if topology is not None else chosen
    intra: LogGP | None = point.get("intra_node", kw.get("intra_node"))
    changes = {k: v for k, v in point.items() if k in _NETWORK_KEYS}
    if changes:
        net = dataclasses.replace(net, **changes)
        intra = dataclasses.replace(intra, **changes) if intra is not None else None
    factors = {
        "latency": point.get("latency_scale", 1.0),
        "bandwidth": point.get("bandwidth_scale", 1.0),
        "overhead": point.get("overhead_scale", 1.0),
    }
    if any(f != 1.0 for f in factors.values()):
        net = net.scaled(**factors)
        intra = intra.scaled(**factors) if intra is not None else None
    kw["network"] = dataclasses.replace(topology, endpoint=net) if topology is not None else net
    kw["intra_node"] = intra
    if "noise" in point:
        kw["noise"] = point["noise"]
    kw.update({k: v for k, v in point.items() if k in _SCALAR_KEYS})
    return kw


def _row(point: Mapping[str, Any], result: SimResult | None, error: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        k: (repr(v) if isinstance(v, (LogGP, Topology, Noise, list, tuple)) else v)
        for k, v in point.items()
    }
    if result is not None:
        row.update(
            total_time=result.total_time,
            compute=float(result.compute.mean()),
            comm=float(result.comm.mean()),
            wait=float(result.wait.mean()),
            late_sender=float(result.late_sender.mean()),
            late_receiver=float(result.late_receiver.mean()),
            events=result.events,
            error=None,
        )
    else:
        row.update(
            total_time=math.nan,
            compute=math.nan,
            comm=math.nan,
            wait=math.nan,
            late_sender=math.nan,
            late_receiver=math.nan,
            events=0,
            error=error,
        )
    return row


_WORKER_TRACE: TraceModel | None = None


def _worker_init(path: str) -> None:
    global _WORKER_TRACE
    _WORKER_TRACE = load(path)


def _run_point(args: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    base, point = args
    assert _WORKER_TRACE is not None
    return _simulate_point(_WORKER_TRACE, base, point)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, enabled: bool) -> Any:
    """A tqdm bar, or nothing at all when disabled (no tqdm import: in Jupyter without
    ipywidgets, tqdm.auto warns 'IProgress not found' even for a disabled bar). tqdm's notebook
    widget only with ipywidgets installed (the ``notebook`` extra), its text bar otherwise."""
    if not enabled:
        return _NoBar()
    import importlib.util

    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm(total=total, desc="sweep", unit="point")


_LOADED: dict[str, TraceModel] = {}


def _run_point_from(path: str, base: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    """One point in a worker of any executor: the trace read once per worker process."""
    if path not in _LOADED:
        _LOADED[path] = load(path)
    return _simulate_point(_LOADED[path], base, point)


def _simulate_point(
    trace: TraceModel, base: Mapping[str, Any], point: Mapping[str, Any]
) -> dict[str, Any]:
    try:
        return _row(point, simulate(trace, **_point_kwargs(base, point)), None)
    except (ScalatraceError, ValueError, TypeError) as e:
        return _row(point, None, f"{type(e).__name__}: {e}")


def sweep(
    trace: TraceModel | str | os.PathLike[str],
    grid: Mapping[str, Sequence[Any]],
    processes: int | None = None,
    progress: bool = True,
    executor: Executor | None = None,
    **base: Any,
) -> pandas.DataFrame:
    """Simulates every point of a parameter grid; one DataFrame row per point.

    Parameters
    ----------
    trace : Trace or path
        The trace to simulate.
    grid : dict
        Parameter -> list of values; the grid is their Cartesian product. Parameters: any
        :func:`simulate` keyword among ``compute_scale``, ``size_scale``, ``ranks_per_node``,
        ``timing``, ``seed``, ``eager_threshold``, ``contention``, ``recorded_local_calls``, ``network``
        (LogGP or :class:`Topology` values), ``intra_node``, ``placement``, ``noise`` (:class:`Noise`
        or None); one LogGP field ``L``, ``o_s``, ``o_r``, ``g``, ``G`` (set on both
        networks, a topology's endpoint); or ``latency_scale`` / ``bandwidth_scale`` / ``overhead_scale`` (factors
        applied through :meth:`LogGP.scaled`).
    processes : int, optional
        Worker processes (default: ``os.cpu_count()``); 1 runs in this process.
    progress : bool
        Show a tqdm progress bar.
    executor : concurrent.futures.Executor, optional
        Run the points there instead of a local process pool (``processes`` is then unused):
        any ``concurrent.futures.Executor``, e.g. Dask's ``client.get_executor()`` or a
        ``ThreadPoolExecutor``. Workers read the trace file: ``trace`` given as a path is used
        as it is (put it on storage the workers see); a Trace object is saved to a temporary
        file first, which only workers on this machine see.
    **base
        Fixed :func:`simulate` keywords for every point (e.g. ``network=LogGP(...)``).

    Returns
    -------
    pandas.DataFrame
        The grid columns, then ``total_time``, mean per-rank ``compute``, ``comm``, ``wait``,
        ``late_sender``, ``late_receiver`` (seconds), ``events`` and ``error`` (None, or why
        that point failed: the sweep goes on).

    Raises
    ------
    SimulationParameterError
        The grid is empty, names an unknown parameter or a value is not a list.
    """
    import pandas as pd

    points = _grid_points(grid)
    unknown = set(base) - (_SCALAR_KEYS | _OBJECT_KEYS | {"site_compute_scale"})
    if unknown:
        raise SimulationParameterError(f"unknown simulate() keyword(s) {sorted(unknown)}")
    for p in points:  # refused before any point runs, not once per point
        merged = {**base, **p}
        rpn = merged.get("ranks_per_node", 1)
        if _layout_changes_nothing(
            rpn, merged.get("intra_node"), merged.get("network"), merged.get("contention", False)
        ):
            raise SimulationParameterError(_NO_INTRA_NODE.format(n=int(rpn)))
    if processes is not None and (isinstance(processes, bool) or int(processes) < 1):
        raise SimulationParameterError(f"processes must be a positive integer, got {processes!r}")
    if executor is not None and not isinstance(executor, Executor):
        raise SimulationParameterError(
            f"executor must be a concurrent.futures.Executor, not {type(executor).__name__}"
        )
    workers = min(int(processes or os.cpu_count() or 1), len(points))
    t = as_trace(trace)
    bar = _progress_bar(len(points), check_bool("progress", progress))
    rows: list[dict[str, Any]] = []
    try:
        if executor is not None:
            with tempfile.TemporaryDirectory(prefix="scalatrace-sweep-") as tmp:
                if isinstance(trace, (str, os.PathLike)):
                    path = os.path.abspath(trace)
                else:
                    path = os.path.join(tmp, "trace.sct")
                    t.save(path)
                n = len(points)
                for row in executor.map(_run_point_from, [path] * n, [dict(base)] * n, points):
                    rows.append(row)
                    bar.update()
        elif workers <= 1:
            for p in points:
                rows.append(_simulate_point(t, base, p))
                bar.update()
        else:
            with tempfile.TemporaryDirectory(prefix="scalatrace-sweep-") as tmp:
                path = os.path.join(tmp, "trace.sct")
                t.save(path)
                with ProcessPoolExecutor(
                    max_workers=workers, initializer=_worker_init, initargs=(path,)
                ) as pool:
                    for row in pool.map(_run_point, [(dict(base), p) for p in points]):
                        rows.append(row)
                        bar.update()
    finally:
        bar.close()
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------- calibrate


def _fit_loggp(doc: Mapping[str, Any], eager_threshold: float | None) -> LogGP:
    """LogGP from a calibration run's measurements (:func:`calibrate`'s description).

    With ``eager_threshold`` None, the eager line goes through the sizes up to the measured
    protocol switch (``eager_limit``), and ``R`` is the median excess of the ping-pongs past it
    over what the simulator's rendezvous costs without it, ``o_s + o_r + 3 L + (k - 1)(G + O)``
    (request-to-send, clear-to-send, data; the copy out of the user buffer is not made).
    """
    limit = int(doc.get("eager_limit", -1))
    measured_switch = eager_threshold is None and limit > 0
    if eager_threshold is None:
        eager_threshold = float(limit) if limit > 0 else _DEFAULT_EAGER
    sizes = np.asarray(doc["sizes"], dtype=float)
    half = np.asarray(doc["half_round_trip"], dtype=float)
    small = sizes <= eager_threshold
    if small.sum() < 2:
        raise ScalatraceError(
            "calibration measured fewer than two message sizes below the eager threshold"
        )
    slope, intercept = np.polyfit(sizes[small] - 1.0, half[small], 1)
    o_s, o_r = float(doc["o_s"]), float(doc["o_r"])
    # O: the growth of the send and receive overheads with the size (their mean slope); the
    # half round trip's slope is 2 O + G, the rest is the transfer's.
    per_byte_cpu = 0.0
    copy_sizes = np.asarray(doc.get("copy_sizes", []), dtype=float)
    if len(copy_sizes) >= 2:
        per_call = (
            np.asarray(doc["o_s_by_size"], dtype=float)
            + np.asarray(doc["o_r_by_size"], dtype=float)
        ) / 2.0
        per_byte_cpu = max(float(np.polyfit(copy_sizes - 1.0, per_call, 1)[0]), 0.0)
    G = max(float(slope) - 2.0 * per_byte_cpu, 0.0)
    L = max(float(intercept) - o_s - o_r, 0.0)
    g = max(float(doc["g"]), 0.0)
    if not measured_switch:
        return LogGP(L=L, o_s=o_s, o_r=o_r, g=g, G=G, O=per_byte_cpu)
    R = 0.0
    big = np.asarray(doc.get("rendezvous_sizes", []), dtype=float)
    if len(big) > 0:
        model = o_s + o_r + 3.0 * L + (big - 1.0) * (G + per_byte_cpu)
        excess = np.asarray(doc["rendezvous_half_round_trip"], dtype=float) - model
        R = max(float(np.median(excess)), 0.0)
    return LogGP(L=L, o_s=o_s, o_r=o_r, g=g, G=G, O=per_byte_cpu, R=R, eager_threshold=float(limit))


def _checked_run_args(
    np: int, reps: int, max_bytes: int, eager_threshold: float | None, timeout: float
) -> tuple[int, int, int, float | None, float]:
    """The calibration run's arguments (:func:`calibrate`, :func:`calibrate_in_situ`), checked."""
    return (
        check_int("np", np, lo=2, hi=MAX_LAUNCH_RANKS),
        check_int("reps", reps, lo=1, hi=1 << 30),
        check_int("max_bytes", max_bytes, lo=1, hi=(1 << 31) - 1),
        None if eager_threshold is None else check_float("eager_threshold", eager_threshold),
        check_float("timeout", timeout, lo=0.0, hi=MAX_TIMEOUT_S),
    )


def _run_calibration(
    np: int, reps: int, max_bytes: int, extra: Sequence[str], timeout: float
) -> dict[str, Any]:
    """Runs ``scalatrace-calibrate`` under ``mpiexec`` and returns its JSON measurements."""
    from . import _paths

    cmd = [
        _paths.mpiexec(),
        "-n",
        str(int(np)),
        str(_paths.tool("scalatrace-calibrate")),
        str(int(reps)),
        str(int(max_bytes)),
        *extra,
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise MPIRunError(
            "calibration run timed out", -1, str(e.stderr or "")[-2000:], cmd
        ) from None
    if proc.returncode != 0:
        raise MPIRunError("calibration run failed", proc.returncode, proc.stderr[-2000:], cmd)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("{")), None)
    if line is None:
        raise MPIRunError(
            "calibration run printed no measurements", proc.returncode, proc.stderr[-2000:], cmd
        )
    doc: dict[str, Any] = json.loads(line)
    return doc


def calibrate(
    np: int = 2,
    reps: int = 200,
    max_bytes: int = 1 << 20,
    eager_threshold: float | None = None,
    timeout: float = 300.0,
    *,
    compute_ns: float | None = None,
    footprint_bytes: int | None = None,
    message_bytes: int = 8,
) -> LogGP:
    """Measures LogGP parameters of the local MPI with ping-pong runs of several sizes.

    Runs ``mpiexec -n np scalatrace-calibrate`` (ranks 0 and 1 measure; others idle): half
    round trips of 1 B .. ``max_bytes`` (powers of 4), the time per call of back-to-back
    ``MPI_Send`` of 8 bytes (``o_s``), of ``MPI_Recv`` of messages already there (``o_r``), the
    same at 1, 4 and 8 KiB (their mean growth per byte is ``O``, the copies' CPU time), and
    the per-message time of a stream of sends (``g``); each the fastest of ``reps`` batches (so
    that batches during which a rank was descheduled do not count). ``G`` and ``L`` come from a least-squares
    line through the half round trips of eager-sized messages:
    ``t(k) = o_s + o_r + L + (k - 1) (G + 2 O)``.

    The run also finds where ``MPI_Send`` switches from eager to rendezvous: by bisection, the
    largest size whose send returns before a receiver that posts its receive 200 us late (a
    behaviour, not a time). That size is the result's ``eager_threshold`` (which
    :func:`simulate` then uses), and ``R``, the handshake's extra cost, is the median excess
    of ping-pongs at 1, 2, 4 and 8 times the first rendezvous size over the model's
    ``o_s + o_r + 3 L + (k - 1)(G + O)``. If every size up to ``max_bytes`` goes eagerly, or
    none does, the result is the one line of earlier versions (through the sizes up to
    65,536 B), with no ``R`` and no threshold of its own.

    With ``compute_ns``, ``o_s`` and ``o_r`` are measured *in situ* instead, on the
    application's pattern (MK's machine parameters): :func:`calibrate_in_situ`.

    Parameters
    ----------
    np : int
        Ranks to launch (at least 2; place them as the simulated ranks will be placed).
    reps : int
        Batches per measurement (10 ping-pongs or 20 calls each).
    max_bytes : int
        Largest message size measured.
    eager_threshold : float, optional
        ``None`` (the default): the measured protocol switch, as above. A number: the line is
        fitted through the sizes up to it, and the result has no ``R`` and no threshold of its
        own (:func:`simulate`'s ``eager_threshold`` decides).
    timeout : float
        Seconds before the run is killed.
    compute_ns : float, optional
        The computation between two calls of the application (ns per block): if given,
        ``o_s`` and ``o_r`` come from a one-way pipeline stage with this much computation
        between the calls (:func:`calibrate_in_situ`), the other parameters from the ping-pongs.
    footprint_bytes : int, optional
        With ``compute_ns``: the memory the computation walks through, block after block (the
        application's array per rank); default the block's own cells.
    message_bytes : int
        With ``compute_ns``: the stage's message size.

    Returns
    -------
    LogGP

    Raises
    ------
    UsageError
        ``np < 2``, ``reps < 1``, ``max_bytes < 1``, ``compute_ns <= 0`` or an argument of the
        wrong type.
    MPIRunError
        The calibration run failed.
    """
    if compute_ns is not None:
        return calibrate_in_situ(
            compute_ns,
            footprint_bytes=footprint_bytes,
            message_bytes=message_bytes,
            np=np,
            reps=reps,
            max_bytes=max_bytes,
            eager_threshold=eager_threshold,
            timeout=timeout,
        ).network
    if footprint_bytes is not None:
        raise UsageError("footprint_bytes needs compute_ns (the in-situ calibration)")
    np, reps, max_bytes, eager_threshold, timeout = _checked_run_args(
        np, reps, max_bytes, eager_threshold, timeout
    )
    return _fit_loggp(_run_calibration(np, reps, max_bytes, [], timeout), eager_threshold)


@dataclass(frozen=True)
class InSituCalibration:
    """The message overheads measured on the application's pattern (:func:`calibrate_in_situ`).

    Times in seconds; the pairs are (rank 0, the sender; rank 1, the receiver).

    Attributes
    ----------
    network : LogGP
        The ping-pong calibration's ``L``, ``g``, ``G``, ``O`` with ``o_s`` and ``o_r``
        replaced by ``overhead`` (each at least 0): use it as ``model(..., network=)``.
    ping_pong : LogGP
        The same run's plain calibration (:func:`calibrate`), for comparison.
    compute_ns : float
        The computation per block asked for.
    cells : int
        Dependent multiply-adds per block chosen to take about ``compute_ns`` (timed on both
        ranks at once, before the stage).
    cells_done : tuple of int
        The multiply-adds each rank's measured blocks performed (``cells`` x ``blocks`` x
        ``batches`` x 2: computation alone and in the stage).
    footprint_bytes, message_bytes, blocks, batches : int
        The buffer the blocks walk through, the message size, blocks per batch, batches.
    chains : int
        Independent dependent chains per block (1: one long chain; a pipeline's block of ``K``
        columns is ``K`` chains).
    compute_alone : tuple of float
        A block's computation timed alone (both ranks computing, no messages; median over the
        batches).
    period : tuple of float
        A block's period in the stage (the sender: compute, ``MPI_Send``; the receiver:
        ``MPI_Recv``, compute, timed from its first receive's return; median over the batches).
    overhead : tuple of float
        Per message, ``period - compute_alone`` of the same batch, median over the batches: the
        sender's and the receiver's cost of a message inside the pattern (the receiver's
        includes waiting for a slower sender, as a pipeline's stage does).
    """

    network: LogGP
    ping_pong: LogGP
    # what was asked, and the work done
    compute_ns: float
    footprint_bytes: int
    message_bytes: int
    cells: int
    cells_done: tuple[int, int]
    blocks: int
    batches: int
    # what was measured (sender, receiver)
    compute_alone: tuple[float, float]
    period: tuple[float, float]
    overhead: tuple[float, float]
    chains: int = 1


def calibrate_in_situ(
    compute_ns: float,
    footprint_bytes: int | None = None,
    message_bytes: int = 8,
    *,
    chains: int = 1,
    np: int = 2,
    reps: int = 200,
    max_bytes: int = 1 << 20,
    eager_threshold: float | None = None,
    timeout: float = 300.0,
) -> InSituCalibration:
    """Measures the send and receive overheads in situ: on a one-way pipeline stage with a
    block of computation between the calls, as MK measures its machine parameters on the
    application's pattern.

    A ping-pong's overheads (:func:`calibrate`) are those of a tight loop with MPI's data in
    the caches; inside a program each message also pays for the computation between the calls
    (MPI's data evicted, the receiver's polling against the sender's stores, the receiver
    catching up with the sender). ``scalatrace-calibrate`` runs, after the ping-pongs, batches
    (``reps``) of 64 blocks on ranks 0 and 1: each block ``cells`` dependent multiply-adds over
    the next doubles of a buffer of ``footprint_bytes`` (wrapping; ``cells`` chosen so that a
    block takes about ``compute_ns``); first both ranks compute the blocks alone, then rank 0
    computes and sends each block's ``message_bytes``, rank 1 receives and computes. Each
    rank's per-message overhead is its period in the stage minus its computation alone (per
    batch, the median over the batches); both replace ``o_s`` and ``o_r`` of the ping-pong
    calibration (clipped at 0). Time it at ``SCHED_FIFO`` (``chrt -f``) on a loaded machine.

    Parameters
    ----------
    compute_ns : float
        Computation per block (ns): the application's computation between two calls, e.g.
        the trace's ``compute_ns`` per block near the block size of interest.
    footprint_bytes : int, optional
        Bytes the blocks walk through in turn (the application's working set per rank, e.g.
        an N / P x N array of doubles); default just the block's own cells.
    message_bytes : int
        Size of each message.
    chains : int
        The block as that many dependent chains, each from the block's first value (default 1:
        one chain). A block of a pipeline that updates ``K`` columns, each from a received value,
        is ``K`` chains: the processor overlaps them within the block but not across the MPI
        call between two blocks, so the block's computation may pay a restart per message that
        one long chain does not (docs/simulator.md, "In situ": on the benchmark machine no
        consistent difference was measured).
    np, reps, max_bytes, eager_threshold, timeout
        As for :func:`calibrate`.

    Returns
    -------
    InSituCalibration

    Raises
    ------
    UsageError
        ``compute_ns`` not positive, a negative ``footprint_bytes`` or ``message_bytes``, or
        :func:`calibrate`'s.
    MPIRunError
        The calibration run failed.
    """
    compute_ns = check_float("compute_ns", compute_ns, lo=0.0, hi=1e10)
    if compute_ns <= 0:
        raise UsageError(f"compute_ns must be positive, not {compute_ns!r}")
    footprint = 0 if footprint_bytes is None else footprint_bytes
    footprint = check_int("footprint_bytes", footprint, lo=0, hi=1 << 40)
    message_bytes = check_int("message_bytes", message_bytes, lo=0, hi=1 << 30)
    chains = check_int("chains", chains, lo=1, hi=1_000_000)
    np, reps, max_bytes, eager_threshold, timeout = _checked_run_args(
        np, reps, max_bytes, eager_threshold, timeout
    )
    extra = [repr(compute_ns), str(footprint), str(message_bytes), str(chains)]
    doc = _run_calibration(np, reps, max_bytes, extra, timeout)
    return _in_situ_of(doc["in_situ"][0], _fit_loggp(doc, eager_threshold), compute_ns)


@dataclass(frozen=True)
class OverheadLaw:
    """A per-message overhead as a function of the block: the computation ``W`` between two
    calls (seconds) and the message size ``k`` (bytes), fitted to in-situ calibrations at
    several blocks (:func:`calibrate_in_situ_blocks`, :meth:`fit`).

    A line in ``W`` per message-size regime: ``o = intercepts[i] + slopes[i] * W`` for the
    sizes ``k <= thresholds[i]`` (the first regime whose threshold is not below ``k``; the last
    regime has none). One regime is a plain line; more appear where the measurements jump
    between two message sizes (MPICH's shared-memory transport switches its protocol above a
    few dozen bytes: on the benchmark machine between 88 and 96 bytes, docs/models.md). The
    blocks of one calibration grow in ``W`` and ``k`` together, so a regime may also stand for
    a change with ``W`` at the calibrated configuration (on the benchmark machine the overhead
    rises over the first ~0.7 us of a block and then stays nearly flat): use the law for the
    configuration it was measured at.

    Attributes
    ----------
    thresholds : tuple of float
        Largest message size (bytes) of each regime but the last; empty for a single line.
    intercepts, slopes : tuple of float
        Each regime's overhead at ``W = 0`` (seconds) and its growth per second of ``W``.
    """

    thresholds: tuple[float, ...]
    intercepts: tuple[float, ...]
    slopes: tuple[float, ...]

    def __post_init__(self) -> None:
        if not (len(self.intercepts) == len(self.slopes) == len(self.thresholds) + 1):
            raise UsageError(
                "OverheadLaw needs one intercept and slope per regime and one threshold fewer"
            )
        for v in (*self.thresholds, *self.intercepts, *self.slopes):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise UsageError(f"OverheadLaw's values must be finite numbers, not {v!r}")

    def __call__(self, compute_s: Any, message_bytes: Any) -> Any:
        """The overhead (seconds) of a message of ``message_bytes`` after ``compute_s`` of
        computation (scalars or arrays, broadcast)."""
        w, k = np.broadcast_arrays(
            np.asarray(compute_s, dtype=float), np.asarray(message_bytes, dtype=float)
        )
        regime = np.searchsorted(np.asarray(self.thresholds, dtype=float), k, side="left")
        out = np.asarray(self.intercepts)[regime] + np.asarray(self.slopes)[regime] * w
        return float(out) if out.ndim == 0 else out

    def expression(self, compute: sympy.Expr, message_bytes: sympy.Expr) -> sympy.Expr:
        """The law as a SymPy expression of the given ``W`` and ``k`` expressions (a
        ``Piecewise`` in ``k`` if there are several regimes)."""
        import sympy

        lines = [
            sympy.Float(a) + sympy.Float(b) * compute for a, b in zip(self.intercepts, self.slopes)
        ]
        if not self.thresholds:
            return lines[0]
        pieces = [(line, message_bytes <= t) for line, t in zip(lines, self.thresholds)]
        return sympy.Piecewise(*pieces, (lines[-1], True))

    @classmethod
    def fit(
        cls, compute_s: Any, message_bytes: Any, overhead: Any, max_regimes: int = 3
    ) -> OverheadLaw:
        """The law through measured ``(W, k, overhead)`` points (seconds, bytes, seconds).

        Candidates: one line in ``W`` through all points, and lines per message-size regime
        with up to ``max_regimes`` regimes (default 3), split between neighbouring sizes, each
        regime with at least 2 points; each line is Theil-Sen's (the median of the pairwise
        slopes: one calibration in another state of the machine does not tilt it). Each
        candidate is scored by its leave-one-out mean absolute error; of those within 1.5 times
        the lowest score (the factor of :func:`scalatrace.fit_pmnf`'s "simplest law within the
        noise") the one of fewest regimes is kept, the lower score breaking ties. A threshold
        lies halfway between the two sizes it separates (where between them the step lies is
        not known: measure sizes on both sides of a step close together). A regime whose
        points share one ``W`` is a constant.
        """
        w = np.asarray(compute_s, dtype=float).ravel()
        k = np.asarray(message_bytes, dtype=float).ravel()
        o = np.asarray(overhead, dtype=float).ravel()
        if not (w.size == k.size == o.size) or w.size < 2:
            raise UsageError("OverheadLaw.fit needs at least 2 points of W, bytes and overhead")
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(k)) and np.all(np.isfinite(o))):
            raise UsageError("OverheadLaw.fit's points must be finite")
        max_regimes = check_int("max_regimes", max_regimes, lo=1, hi=8)

        def line(ws: np.ndarray, os_: np.ndarray) -> tuple[float, float]:
            if np.ptp(ws) <= 0:
                return float(np.median(os_)), 0.0
            from scipy.stats import theilslopes

            b, a, *_ = theilslopes(os_, ws)
            return float(a), float(b)

        def regime(cuts: tuple[float, ...]) -> np.ndarray:
            return np.searchsorted(np.asarray(cuts, dtype=float), k, side="left")

        def loo(cuts: tuple[float, ...]) -> float:
            of = regime(cuts)
            errs = []
            for j in range(w.size):
                same = (np.arange(w.size) != j) & (of == of[j])
                a, b = line(w[same], o[same])
                errs.append(abs(a + b * w[j] - o[j]))
            return float(np.mean(errs))

        sizes = np.unique(k)
        halfway = [0.5 * (float(a) + float(b)) for a, b in zip(sizes[:-1], sizes[1:])]
        candidates = [
            cuts
            for n in range(max_regimes)
            for cuts in itertools.combinations(halfway, n)
            if np.all(np.bincount(regime(cuts), minlength=n + 1) >= 2)
        ]
        scores = np.array([loo(c) for c in candidates])
        # (a law within a picosecond of every point needs no split, whatever rounding says)
        best = max(float(scores.min()), 1e-12)
        within = [i for i in range(len(candidates)) if scores[i] <= _NOISE_FACTOR * best]
        cuts = candidates[min(within, key=lambda i: (len(candidates[i]), scores[i]))]
        of = regime(cuts)
        lines = [line(w[of == r], o[of == r]) for r in range(len(cuts) + 1)]
        return cls(tuple(cuts), tuple(a for a, _ in lines), tuple(b for _, b in lines))


# OverheadLaw.fit keeps the fewest regimes within this factor of the best score (pmnf's).
_NOISE_FACTOR = 1.5


@dataclass(frozen=True)
class InSituBlocks:
    """In-situ message overheads at several blocks measured in one run
    (:func:`calibrate_in_situ_blocks`), and the laws fitted through them.

    Use it as ``model(..., network=blocks)``: a point-to-point phase's overheads are then
    ``o_s(W, k)`` and ``o_r(W, k)`` of the phase's own fitted computation per occurrence ``W``
    and message size ``k``, so that the optimal block size sees how the cost per message
    changes with the block.

    Attributes
    ----------
    calibrations : tuple of InSituCalibration
        One per block, in the order asked (each with the run's ping-pong calibration).
    ping_pong : LogGP
        The run's plain calibration (:func:`calibrate`).
    o_s, o_r : OverheadLaw
        The sender's and the receiver's overhead fitted through the calibrations' medians
        (:meth:`OverheadLaw.fit`, ``W`` each block's computation timed alone on that rank).
    network : LogGP
        The ping-pong's ``L``, ``g``, ``G`` (collectives' messages and the transfer) with ``O``
        = 0 (the laws measured the copies at each size) and ``o_s``, ``o_r`` the laws' values
        at the first block.
    """

    calibrations: tuple[InSituCalibration, ...]
    ping_pong: LogGP
    o_s: OverheadLaw
    o_r: OverheadLaw
    network: LogGP

    @classmethod
    def from_calibrations(cls, calibrations: Sequence[InSituCalibration]) -> InSituBlocks:
        """The laws through the given calibrations (e.g. several runs' pooled: every
        calibration is a point), the ping-pong of the first."""
        cals = tuple(calibrations)
        if len(cals) < 2 or not all(isinstance(c, InSituCalibration) for c in cals):
            raise UsageError("InSituBlocks needs at least 2 InSituCalibration")
        k = [c.message_bytes for c in cals]
        laws = [
            OverheadLaw.fit([c.compute_alone[i] for c in cals], k, [c.overhead[i] for c in cals])
            for i in (0, 1)
        ]
        first = cals[0]
        w0, k0 = first.compute_alone, first.message_bytes
        network = dataclasses.replace(
            first.ping_pong,
            o_s=max(float(laws[0](w0[0], k0)), 0.0),
            o_r=max(float(laws[1](w0[1], k0)), 0.0),
            O=0.0,
        )
        return cls(cals, first.ping_pong, laws[0], laws[1], network)


def calibrate_in_situ_blocks(
    compute_ns: Sequence[float],
    footprint_bytes: int | None = None,
    message_bytes: int | Sequence[int] = 8,
    *,
    chains: int | Sequence[int] = 1,
    reps: int = 100,
    timeout: float = 600.0,
    np: int = 2,
    eager_threshold: float | None = None,
    max_bytes: int = 1 << 20,
) -> InSituBlocks:
    """The in-situ overheads (:func:`calibrate_in_situ`) at several blocks in one run, their
    batches interleaved, and the laws ``o_s(W, k)``, ``o_r(W, k)`` through them.

    One run of ``scalatrace-calibrate``: after the ping-pongs, batch after batch, every block
    size's batch once (both ranks computing 64 blocks alone, then the one-way stage), the
    sizes in a rotating order. The blocks then share whatever state the machine is in, which
    calibrations run one after another do not (the benchmark machine switches between a fast
    and a slow state for seconds at a time).

    Parameters
    ----------
    compute_ns : sequence of float
        Computation per block (ns) of each block size, at least 2, e.g. the program's
        computation per block at the block sizes around the optimum you look for.
    footprint_bytes : int, optional
        Bytes the blocks walk through in turn (the application's working set per rank).
    message_bytes : int or sequence of int
        The message size of every block, or one per block (a block of ``K`` columns sends
        ``K`` values).
    chains : int or sequence of int
        Dependent chains per block (:func:`calibrate_in_situ`), one for all or one per block
        (a block of ``K`` columns is ``K`` chains).
    reps, timeout, np, eager_threshold, max_bytes
        As for :func:`calibrate`; ``reps`` batches per block size.

    Returns
    -------
    InSituBlocks

    Raises
    ------
    UsageError
        Fewer than 2 or more than 64 blocks, a ``compute_ns`` not positive, a negative size,
        ``message_bytes`` or ``chains`` of another length, or :func:`calibrate`'s.
    MPIRunError
        The calibration run failed.
    """
    if isinstance(compute_ns, (str, bytes)) or not isinstance(compute_ns, Sequence):
        raise UsageError("compute_ns must be a sequence of block computations (ns)")
    ws = [check_float("compute_ns", w, lo=0.0, hi=1e10) for w in compute_ns]
    if not 2 <= len(ws) <= 64 or any(w <= 0 for w in ws):
        raise UsageError(f"compute_ns needs 2 to 64 positive values, not {list(compute_ns)!r}")
    ks = _one_or_per_block("message_bytes", message_bytes, len(ws), lo=0, hi=1 << 30)
    cs = _one_or_per_block("chains", chains, len(ws), lo=1, hi=1_000_000)
    footprint = check_int("footprint_bytes", footprint_bytes or 0, lo=0, hi=1 << 40)
    np, reps, max_bytes, eager_threshold, timeout = _checked_run_args(
        np, reps, max_bytes, eager_threshold, timeout
    )
    extra = [
        ",".join(repr(w) for w in ws),
        str(footprint),
        ",".join(str(k) for k in ks),
        ",".join(str(c) for c in cs),
    ]
    doc = _run_calibration(np, reps, max_bytes, extra, timeout)
    ping_pong = _fit_loggp(doc, eager_threshold)
    return InSituBlocks.from_calibrations(
        [_in_situ_of(s, ping_pong, w) for s, w in zip(doc["in_situ"], ws)]
    )


def _one_or_per_block(
    name: str, value: int | Sequence[int], blocks: int, lo: int, hi: int
) -> list[int]:
    """``value`` for every one of ``blocks`` blocks (one int for all, or a sequence of one per
    block), each checked to lie in [lo, hi]."""
    per_block = [value] * blocks if isinstance(value, int) else value
    if (
        isinstance(per_block, (str, bytes))
        or not isinstance(per_block, Sequence)
        or len(per_block) != blocks
    ):
        raise UsageError(f"{name} must be one value or one per block")
    return [check_int(name, v, lo=lo, hi=hi) for v in per_block]


def _in_situ_of(s: Mapping[str, Any], ping_pong: LogGP, compute_ns: float) -> InSituCalibration:
    """One block's figures of the calibration run's JSON as an InSituCalibration."""

    def pair(key: str) -> tuple[float, float]:
        return float(s[key][0]), float(s[key][1])

    overhead = pair("overhead")
    network = dataclasses.replace(ping_pong, o_s=max(overhead[0], 0.0), o_r=max(overhead[1], 0.0))
    return InSituCalibration(
        network=network,
        ping_pong=ping_pong,
        compute_ns=compute_ns,
        cells=int(s["cells"]),
        cells_done=(int(s["cells_done"][0]), int(s["cells_done"][1])),
        footprint_bytes=int(s["footprint_bytes"]),
        message_bytes=int(s["message_bytes"]),
        blocks=int(s["blocks"]),
        batches=int(s["batches"]),
        compute_alone=pair("compute_alone"),
        period=pair("period"),
        overhead=overhead,
        chains=int(s.get("chains", 1)),
    )
