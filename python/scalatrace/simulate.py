"""Trace-driven simulation without MPI: :func:`simulate`, :func:`sweep`, :func:`calibrate`.

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
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from . import _core
from ._trace import OP_NAMES, Trace, load
from .errors import MPIRunError, ScalatraceError

if TYPE_CHECKING:
    import pandas

Timing = Literal["mean", "median", "sample", "none"]

_NS = 1e-9


class SimulationError(ScalatraceError):
    """The trace cannot be simulated: it deadlocks, sends messages never received, or an
    argument (negative parameter, impossible sweep grid) is invalid."""


class SimulationParameterError(SimulationError, ValueError):
    """A simulation parameter or sweep grid is invalid (also a :class:`ValueError`)."""


@dataclass(frozen=True)
class LogGP:
    """LogGP parameters of a network link, in seconds.

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
    """

    L: float = 1.0e-6
    o_s: float = 0.5e-6
    o_r: float = 0.5e-6
    g: float = 0.0
    G: float = 1.0e-10

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise SimulationParameterError(f"LogGP.{f.name} must be a non-negative finite number, got {v!r}")

    def scaled(self, latency: float = 1.0, bandwidth: float = 1.0, overhead: float = 1.0) -> LogGP:
        """A network ``latency`` times slower, ``bandwidth`` times faster, overheads times ``overhead``."""
        if bandwidth <= 0:
            raise SimulationParameterError(f"bandwidth factor must be positive, got {bandwidth!r}")
        return LogGP(L=self.L * latency, o_s=self.o_s * overhead, o_r=self.o_r * overhead,
                     g=self.g / bandwidth, G=self.G / bandwidth)

    def _ns(self) -> tuple[float, float, float, float, float]:
        return (self.L / _NS, self.o_s / _NS, self.o_r / _NS, self.g / _NS, self.G / _NS)


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

    @property
    def nranks(self) -> int:
        """Number of ranks simulated."""
        return len(self.end_time)

    def to_pandas(self, what: Literal["ranks", "sites", "timeline", "pairs"] = "ranks") -> pandas.DataFrame:
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
            cols.update(calls=self.calls, sent_messages=self.sent_messages, sent_bytes=self.sent_bytes,
                        recv_messages=self.recv_messages, recv_bytes=self.recv_bytes)
            return pd.DataFrame(cols)
        if what == "sites":
            s = self._raw["sites"]
            cols = {"site": np.asarray(s["site"]), "op": [OP_NAMES[o] for o in s["op"]], "calls": np.asarray(s["calls"])}
            for name in _TIME_COLUMNS:
                cols[name] = np.asarray(s[name]) * _NS
            return pd.DataFrame(cols)
        if what == "timeline":
            t = self._raw["timeline"]
            return pd.DataFrame({"rank": np.asarray(t["rank"]), "index": np.asarray(t["index"]),
                                 "op": [OP_NAMES[o] for o in t["op"]], "site": np.asarray(t["site"]),
                                 "start": np.asarray(t["start"]) * _NS, "end": np.asarray(t["end"]) * _NS})
        if what == "pairs":
            p = self._raw["pairs"]
            return pd.DataFrame({k: np.asarray(p[k]) for k in ("src", "dst", "messages", "bytes")})
        raise ValueError(f"what must be 'ranks', 'sites', 'timeline' or 'pairs', got {what!r}")

    @property
    def timeline(self) -> dict[str, np.ndarray]:
        """Per-event rows (rank, index, op code, site, start, end in seconds); empty unless
        ``simulate(..., timeline=True)``."""
        t = self._raw["timeline"]
        return {"rank": np.asarray(t["rank"]), "index": np.asarray(t["index"]), "op": np.asarray(t["op"]),
                "site": np.asarray(t["site"]), "start": np.asarray(t["start"]) * _NS,
                "end": np.asarray(t["end"]) * _NS}

    def summary(self) -> dict[str, float]:
        """Totals over ranks (seconds) and the predicted time."""
        out = {"total_time": self.total_time}
        for name in _TIME_COLUMNS:
            out[name] = float(getattr(self, name).sum())
        return out

    def __repr__(self) -> str:
        return (f"SimResult(total_time={self.total_time:.6g} s, nranks={self.nranks}, events={self.events}, "
                f"compute={self.compute.mean():.3g} s, comm={self.comm.mean():.3g} s, "
                f"wait={self.wait.mean():.3g} s per rank)")


def _as_trace(trace: Trace | str | os.PathLike[str]) -> Trace:
    if isinstance(trace, Trace):
        return trace
    return load(trace)


def simulate(
    trace: Trace | str | os.PathLike[str],
    network: LogGP | None = None,
    *,
    intra_node: LogGP | None = None,
    ranks_per_node: int = 1,
    compute_scale: float = 1.0,
    site_compute_scale: Mapping[int, float] | None = None,
    size_scale: float = 1.0,
    timing: Timing = "mean",
    seed: int = 0,
    eager_threshold: float = 65536,
    contention: bool = False,
    timeline: bool = False,
    pair_counts: bool = False,
) -> SimResult:
    """Predicts the run time of a traced program on a LogGP network, without MPI.

    Parameters
    ----------
    trace : Trace or path
        The compressed trace (never expanded: each rank walks its own cursor).
    network : LogGP, optional
        Parameters between nodes (default ``LogGP()``).
    intra_node : LogGP, optional
        Parameters between ranks of one node (default: ``network``).
    ranks_per_node : int
        Consecutive ranks per node (node = rank // ranks_per_node).
    compute_scale : float
        Multiplies every compute time between MPI calls (2 = processors twice as slow).
    site_compute_scale : dict, optional
        Call site id -> extra factor for the compute before calls of that site.
    size_scale : float
        Multiplies every message size.
    timing : {"mean", "median", "sample", "none"}
        Compute time from each event's timing histogram (``sample`` draws with ``seed``).
    eager_threshold : float
        Messages larger than this many bytes use the rendezvous protocol.
    contention : bool
        Inter-node messages share their node's link (one at a time per direction).
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
        A negative or non-finite parameter, an unknown timing mode (also a ValueError).
    SimulationError
        The trace deadlocks in simulation (the message names ranks and events) or sends
        messages that are never received.
    """
    t = _as_trace(trace)
    net = network if network is not None else LogGP()
    intra = intra_node if intra_node is not None else net
    if not isinstance(net, LogGP) or not isinstance(intra, LogGP):
        raise SimulationParameterError("network and intra_node must be scalatrace.LogGP instances")
    if isinstance(ranks_per_node, bool) or not isinstance(ranks_per_node, (int, np.integer)):
        raise SimulationParameterError(f"ranks_per_node must be an integer, got {ranks_per_node!r}")
    params = {"network": net, "intra_node": intra, "ranks_per_node": int(ranks_per_node),
              "compute_scale": compute_scale, "size_scale": size_scale, "timing": timing, "seed": seed,
              "eager_threshold": eager_threshold, "contention": contention}
    try:
        raw = _core.simulate(
            t._core, net._ns(), intra._ns(), int(ranks_per_node), float(eager_threshold), bool(contention),
            str(timing), int(seed), float(compute_scale),
            {int(k): float(v) for k, v in (site_compute_scale or {}).items()}, float(size_scale),
            bool(timeline), 10_000_000, bool(pair_counts))
    except ValueError as e:
        raise SimulationParameterError(str(e)) from None
    except ScalatraceError as e:
        if type(e) is ScalatraceError:
            raise SimulationError(str(e)) from None
        raise
    return SimResult(raw, params)


# --------------------------------------------------------------------------------------- sweep

_SCALAR_KEYS = {"compute_scale", "size_scale", "ranks_per_node", "timing", "seed", "eager_threshold", "contention"}
_NETWORK_KEYS = {"L", "o_s", "o_r", "g", "G"}
_FACTOR_KEYS = {"bandwidth_scale", "latency_scale", "overhead_scale"}
_OBJECT_KEYS = {"network", "intra_node"}
GRID_KEYS = frozenset(_SCALAR_KEYS | _NETWORK_KEYS | _FACTOR_KEYS | _OBJECT_KEYS)
"""Parameters :func:`sweep` can vary."""


def _grid_points(grid: Mapping[str, Iterable[Any]]) -> list[dict[str, Any]]:
    if not isinstance(grid, Mapping) or not grid:
        raise SimulationParameterError("grid must be a non-empty dict of parameter -> list of values")
    keys = list(grid)
    unknown = [k for k in keys if k not in GRID_KEYS]
    if unknown:
        raise SimulationParameterError(f"unknown sweep parameter(s) {unknown}; choose from {sorted(GRID_KEYS)}")
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
    net: LogGP = point.get("network", kw.get("network")) or LogGP()
    intra: LogGP | None = point.get("intra_node", kw.get("intra_node"))
    changes = {k: v for k, v in point.items() if k in _NETWORK_KEYS}
    if changes:
        net = dataclasses.replace(net, **changes)
        intra = dataclasses.replace(intra, **changes) if intra is not None else None
    factors = {"latency": point.get("latency_scale", 1.0), "bandwidth": point.get("bandwidth_scale", 1.0),
               "overhead": point.get("overhead_scale", 1.0)}
    if any(f != 1.0 for f in factors.values()):
        net = net.scaled(**factors)
        intra = intra.scaled(**factors) if intra is not None else None
    kw["network"] = net
    kw["intra_node"] = intra
    kw.update({k: v for k, v in point.items() if k in _SCALAR_KEYS})
    return kw


def _row(point: Mapping[str, Any], result: SimResult | None, error: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {k: (repr(v) if isinstance(v, LogGP) else v) for k, v in point.items()}
    if result is not None:
        row.update(total_time=result.total_time, compute=float(result.compute.mean()),
                   comm=float(result.comm.mean()), wait=float(result.wait.mean()),
                   late_sender=float(result.late_sender.mean()),
                   late_receiver=float(result.late_receiver.mean()), events=result.events, error=None)
    else:
        row.update(total_time=math.nan, compute=math.nan, comm=math.nan, wait=math.nan,
                   late_sender=math.nan, late_receiver=math.nan, events=0, error=error)
    return row


_WORKER_TRACE: Trace | None = None


def _worker_init(path: str) -> None:
    global _WORKER_TRACE
    _WORKER_TRACE = load(path)


def _run_point(args: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    base, point = args
    assert _WORKER_TRACE is not None
    return _simulate_point(_WORKER_TRACE, base, point)


def _simulate_point(trace: Trace, base: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return _row(point, simulate(trace, **_point_kwargs(base, point)), None)
    except (ScalatraceError, ValueError, TypeError) as e:
        return _row(point, None, f"{type(e).__name__}: {e}")


def sweep(
    trace: Trace | str | os.PathLike[str],
    grid: Mapping[str, Sequence[Any]],
    processes: int | None = None,
    progress: bool = True,
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
        ``timing``, ``seed``, ``eager_threshold``, ``contention``, ``network``,
        ``intra_node``; one LogGP field ``L``, ``o_s``, ``o_r``, ``g``, ``G`` (set on both
        networks); or ``latency_scale`` / ``bandwidth_scale`` / ``overhead_scale`` (factors
        applied through :meth:`LogGP.scaled`).
    processes : int, optional
        Worker processes (default: ``os.cpu_count()``); 1 runs in this process.
    progress : bool
        Show a tqdm progress bar.
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
    from tqdm.auto import tqdm

    points = _grid_points(grid)
    unknown = set(base) - (_SCALAR_KEYS | _OBJECT_KEYS | {"site_compute_scale"})
    if unknown:
        raise SimulationParameterError(f"unknown simulate() keyword(s) {sorted(unknown)}")
    if processes is not None and (isinstance(processes, bool) or int(processes) < 1):
        raise SimulationParameterError(f"processes must be a positive integer, got {processes!r}")
    workers = min(int(processes or os.cpu_count() or 1), len(points))
    t = _as_trace(trace)
    bar = tqdm(total=len(points), desc="sweep", unit="point", disable=not progress)
    rows: list[dict[str, Any]] = []
    try:
        if workers <= 1:
            for p in points:
                rows.append(_simulate_point(t, base, p))
                bar.update()
        else:
            with tempfile.TemporaryDirectory(prefix="scalatrace-sweep-") as tmp:
                path = os.path.join(tmp, "trace.sct")
                t.save(path)
                with ProcessPoolExecutor(max_workers=workers, initializer=_worker_init, initargs=(path,)) as pool:
                    for row in pool.map(_run_point, [(dict(base), p) for p in points]):
                        rows.append(row)
                        bar.update()
    finally:
        bar.close()
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------- calibrate

def _fit_loggp(doc: Mapping[str, Any], eager_threshold: float) -> LogGP:
    sizes = np.asarray(doc["sizes"], dtype=float)
    half = np.asarray(doc["half_round_trip"], dtype=float)
    small = sizes <= eager_threshold
    if small.sum() < 2:
        raise ScalatraceError("calibration measured fewer than two message sizes below the eager threshold")
    slope, intercept = np.polyfit(sizes[small] - 1.0, half[small], 1)
    o_s, o_r = float(doc["o_s"]), float(doc["o_r"])
    G = max(float(slope), 0.0)
    L = max(float(intercept) - o_s - o_r, 0.0)
    g = max(float(doc["g"]), 0.0)
    return LogGP(L=L, o_s=o_s, o_r=o_r, g=g, G=G)


def calibrate(np: int = 2, reps: int = 200, max_bytes: int = 1 << 20, eager_threshold: float = 65536,
              timeout: float = 300.0) -> LogGP:
    """Measures LogGP parameters of the local MPI with ping-pong runs of several sizes.

    Runs ``mpiexec -n np scalatrace-calibrate`` (ranks 0 and 1 measure; others idle): half
    round trips of 1 B .. ``max_bytes`` (powers of 4), the time per call of back-to-back
    ``MPI_Send`` of 8 bytes (``o_s``), of ``MPI_Recv`` of messages already there (``o_r``), and
    the per-message time of a stream of sends (``g``); each the fastest of ``reps`` batches (so
    that batches during which a rank was descheduled do not count). ``G`` and ``L`` come from a least-squares
    line through the half round trips of eager-sized messages:
    ``t(k) = o_s + o_r + L + (k - 1) G``.

    Parameters
    ----------
    np : int
        Ranks to launch (at least 2; place them as the simulated ranks will be placed).
    reps : int
        Batches per measurement (10 ping-pongs or 20 calls each).
    max_bytes : int
        Largest message size measured.
    eager_threshold : float
        Sizes up to this are used in the fit (the simulator's default threshold).
    timeout : float
        Seconds before the run is killed.

    Returns
    -------
    LogGP

    Raises
    ------
    ValueError
        ``np < 2``, ``reps < 1`` or ``max_bytes < 1``.
    MPIRunError
        The calibration run failed.
    """
    from . import _paths

    if int(np) < 2 or int(reps) < 1 or int(max_bytes) < 1:
        raise ValueError(f"calibrate needs np >= 2, reps >= 1, max_bytes >= 1 (got {np}, {reps}, {max_bytes})")
    cmd = [_paths.mpiexec(), "-n", str(int(np)), str(_paths.tool("scalatrace-calibrate")), str(int(reps)),
           str(int(max_bytes))]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise MPIRunError("calibration run timed out", -1, str(e.stderr or "")[-2000:], cmd) from None
    if proc.returncode != 0:
        raise MPIRunError("calibration run failed", proc.returncode, proc.stderr[-2000:], cmd)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("{")), None)
    if line is None:
        raise MPIRunError("calibration run printed no measurements", proc.returncode, proc.stderr[-2000:], cmd)
    return _fit_loggp(json.loads(line), eager_threshold)



# ------------------------------------------------------------------------- SimGrid export

_SMPI_ANY_SOURCE = -555
_SMPI_ANY_TAG = -444
_K_ANY = -(1 << 40)
_K_PROC_NULL = _K_ANY - 1
_K_NULL_REQUEST = -(1 << 40)

_TI_ROOTED = {"Bcast": "bcast", "Ibcast": "bcast", "Reduce": "reduce", "Ireduce": "reduce",
              "Gather": "gather", "Igather": "gather", "Scatter": "scatter", "Iscatter": "scatter"}
_TI_SEND = {"Send", "Bsend", "Ssend", "Rsend"}
_TI_ISEND = {"Isend", "Ibsend", "Issend", "Irsend"}
_TI_COMPLETION = {"Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall", "Testany", "Testsome"}


class _TIWriter:
    """Writes one rank's events as SMPI time-independent actions (MPI_COMM_WORLD only)."""

    def __init__(self, trace: Trace, rank: int, out: Any, flops_per_ns: float) -> None:
        self.t, self.rank, self.out, self.flops_per_ns = trace, rank, out, flops_per_ns
        self.slots: list[tuple[str, int, int, int, bool] | None] = []  # (kind, peer, tag, bytes, persistent)
        self.outstanding: dict[int, tuple[int, int, int]] = {}  # slot -> wait key (src, dst, tag)
        self.counts: dict[str, int] = {}
        self.skipped = 0
        self.nranks = trace.nranks
        self._comms = trace.communicators

    def world(self, comm: int, relative: int) -> int | None:
        """World rank of a relative peer; None for MPI_PROC_NULL; SMPI's ANY_SOURCE."""
        if relative == _K_ANY:
            return _SMPI_ANY_SOURCE
        if relative == _K_PROC_NULL:
            return None
        members = self.members(comm)
        me = members.index(self.rank) if members is not None else self.rank
        target = me + relative
        return members[target] if members is not None else target

    def members(self, comm: int) -> _core.RankList | None:
        for c in self._comms:
            if c.id == comm and (len(c.holders) == 0 or self.rank in c.holders):
                return c.members
        return None

    def is_world(self, comm: int) -> bool:
        if comm == 0:
            return True
        m = self.members(comm)
        return m is not None and len(m) == self.nranks and list(m) == list(range(self.nranks))

    def emit(self, action: str, *args: Any) -> None:
        self.out.write(" ".join([str(self.rank), action, *map(str, args)]) + "\n")
        self.counts[action] = self.counts.get(action, 0) + 1

    def post(self, kind: str, peer: int, tag: int, nbytes: int) -> tuple[int, int, int]:
        tag = _SMPI_ANY_TAG if tag == _K_ANY else tag
        self.emit(kind, peer, tag, nbytes)
        return (self.rank, peer, tag) if kind == "isend" else (peer, self.rank, tag)

    def new_slot(self, entry: tuple[str, int, int, int, bool] | None, key: tuple[int, int, int] | None) -> None:
        self.slots.append(entry)
        if key is not None:
            self.outstanding[len(self.slots) - 1] = key

    def slot_of(self, offset: int) -> int | None:
        if offset == _K_NULL_REQUEST or offset <= 0 or offset > len(self.slots):
            return None
        return len(self.slots) - offset

    def complete(self, slots: list[int]) -> None:
        keys = [(s, self.outstanding[s]) for s in slots if s in self.outstanding]
        if not keys:
            return
        wildcard = any(k[0] == _SMPI_ANY_SOURCE for _, k in keys)
        if wildcard or len(keys) == len(self.outstanding):
            if len(keys) != len(self.outstanding):
                self.skipped += 1  # SMPI's waitall also completes the others
            self.emit("waitall")
            self.outstanding.clear()
            return
        for s, key in keys:
            self.emit("wait", *key)
            del self.outstanding[s]

    def event(self, e: _core.RecordedEvent) -> None:
        op = e.op
        if op in ("Init", "Init_thread"):  # the run starts here (as in the simulator)
            self.emit("init")
            return
        if e.compute_ns > 0:
            self.emit("compute", f"{e.compute_ns * self.flops_per_ns:.0f}")
        comm = e["Comm"]
        if op == "Finalize":
            if self.outstanding:
                self.emit("waitall")
                self.outstanding.clear()
            self.emit("finalize")
        elif op in _TI_SEND or op in _TI_ISEND or op == "Recv" or op == "Irecv":
            peer = self.world(comm, e["Peer"])
            if peer is None:
                if op in _TI_ISEND or op == "Irecv":
                    self.new_slot(None, None)
                return
            if op in _TI_SEND:
                self.emit("send", peer, e["Tag"], e["Bytes"])
            elif op == "Recv":
                self.emit("recv", peer, _SMPI_ANY_TAG if e["Tag"] == _K_ANY else e["Tag"], e["Bytes"])
            else:
                kind = "isend" if op in _TI_ISEND else "irecv"
                self.new_slot((kind, peer, e["Tag"], e["Bytes"], False), self.post(kind, peer, e["Tag"], e["Bytes"]))
        elif op in ("Sendrecv", "Sendrecv_replace"):
            dst, src = self.world(comm, e["Peer"]), self.world(comm, e["Peer2"])
            key = self.post("isend", dst, e["Tag"], e["Bytes"]) if dst is not None else None
            if src is not None:
                self.emit("recv", src, _SMPI_ANY_TAG if e["Tag2"] == _K_ANY else e["Tag2"], e["Bytes2"])
            if key is not None:
                self.emit("wait", *key)
        elif op.endswith("_init") and op != "Init_thread":
            peer = self.world(comm, e["Peer"])
            kind = "irecv" if op == "Recv_init" else "isend"
            self.new_slot((kind, peer, e["Tag"], e["Bytes"], True) if peer is not None else None, None)
        elif op in ("Start", "Startall"):
            for off in e.arrays.get("Requests", []):
                s = self.slot_of(off)
                if s is not None and self.slots[s] is not None:
                    kind, peer, tag, nbytes, _ = self.slots[s]  # type: ignore[misc]
                    self.outstanding[s] = self.post(kind, peer, tag, nbytes)
        elif op in _TI_COMPLETION:
            offs = list(e.arrays.get("Requests", []))
            if op in ("Wait", "Waitall") or (op in ("Test", "Testall") and e["Flag"]):
                chosen = offs
            elif op in ("Waitany", "Testany"):
                i = e["Index"]
                chosen = [offs[i]] if (op == "Waitany" or e["Flag"]) and 0 <= i < len(offs) else []
            elif op in ("Waitsome", "Testsome"):
                chosen = [offs[i] for i in e.arrays.get("Indices", []) if 0 <= i < len(offs)]
            else:
                chosen = []
            self.complete([s for s in (self.slot_of(o) for o in chosen) if s is not None])
        elif op in _COLLECTIVE_OPS:
            if op.startswith("I"):
                self.new_slot(None, None)  # the request of a nonblocking collective
            if not self.is_world(comm):
                self.skipped += 1
                return
            self.collective(op[1:] if op.startswith("I") else op, e)

    def collective(self, op: str, e: _core.RecordedEvent) -> None:
        n = self.nranks
        b, b2, root = e["Bytes"], e["Bytes2"], e["Root"]
        arrays = e.arrays
        if op == "Barrier":
            self.emit("barrier")
        elif op in ("Bcast",):
            self.emit("bcast", b, root)
        elif op == "Reduce":
            self.emit("reduce", b, 0, root)
        elif op == "Allreduce":
            self.emit("allreduce", b, 0)
        elif op == "Alltoall":
            self.emit("alltoall", b, b2 or b)
        elif op in ("Gather", "Scatter"):
            self.emit(op.lower(), b, b2 or b, root)
        elif op == "Allgather":
            self.emit("allgather", b, b2 or b)
        elif op in ("Gatherv", "Allgatherv"):
            rc = list(arrays.get("RecvCounts", [])) or [b2 or b] * n
            rc = rc if len(rc) == n else [b] * n
            self.emit(op.lower(), b, *rc, *([root] if op == "Gatherv" else []))
        elif op == "Scatterv":
            sc = list(arrays.get("SendCounts", [])) or [b] * n
            sc = sc if len(sc) == n else [b2] * n
            self.emit("scatterv", *sc, b2 or b, root)
        elif op in ("Alltoallv", "Alltoallw"):
            sc = list(arrays.get("SendCounts", [])) or [b] * n
            rc = list(arrays.get("RecvCounts", [])) or [b2 or b] * n
            self.emit("alltoallv", sum(sc), *sc, sum(rc), *rc)
        elif op in ("Reduce_scatter", "Reduce_scatter_block"):
            rc = list(arrays.get("RecvCounts", [])) or [b2 or (b // max(n, 1))] * n
            self.emit("reducescatter", *rc, 0)
        else:  # Scan, Exscan: no SMPI replay action
            self.skipped += 1


_COLLECTIVE_OPS = frozenset(
    name for name, kind in zip(OP_NAMES, _core.op_kind_names()) if kind in ("collective", "nonblocking-collective"))


@dataclass
class SimGridExport:
    """What :func:`to_simgrid_ti` wrote.

    Attributes
    ----------
    index : pathlib.Path
        The index file (one rank file per line) to pass to ``smpirun -replay``.
    files : list of pathlib.Path
        One action file per rank.
    actions : dict
        Action name -> number of lines written (all ranks).
    skipped : int
        Events SMPI's replay cannot express (collectives on sub-communicators, scans, waits on
        a subset that includes a wildcard receive are widened to ``waitall``).
    """

    index: os.PathLike[str]
    files: list[os.PathLike[str]]
    actions: dict[str, int]
    skipped: int


def write_simgrid_platform(directory: str | os.PathLike[str], nranks: int, latency_s: float,
                           bandwidth_bytes_per_s: float, flops_per_ns: float = 1.0) -> tuple[Path, Path]:
    """Writes a SimGrid platform of one cluster and its hostfile, for replaying a
    :func:`to_simgrid_ti` export with ``smpirun -platform ... -hostfile ...``.

    Parameters
    ----------
    directory : path
        Where ``platform.xml`` and ``hostfile`` go (created if missing).
    nranks : int
        Hosts ``node-0`` .. ``node-{nranks-1}``, one rank each.
    latency_s, bandwidth_bytes_per_s : float
        Every link's latency (seconds) and bandwidth (bytes per second).
    flops_per_ns : float
        Host speed; the same value as the export's (1.0: hosts of 1 Gflop/s).

    Returns
    -------
    (platform.xml, hostfile) paths
    """
    if nranks < 1 or latency_s < 0 or bandwidth_bytes_per_s <= 0 or flops_per_ns <= 0:
        raise SimulationParameterError("nranks >= 1, latency >= 0, bandwidth > 0 and flops_per_ns > 0 needed")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    platform = d / "platform.xml"
    platform.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1">\n'
        f'  <cluster id="c" prefix="node-" suffix="" radical="0-{nranks - 1}" speed="{flops_per_ns:g}Gf" '
        f'bw="{bandwidth_bytes_per_s:.6g}Bps" lat="{latency_s:.6g}s"/>\n</platform>\n')
    hostfile = d / "hostfile"
    hostfile.write_text("".join(f"node-{i}\n" for i in range(nranks)))
    return platform, hostfile


def to_simgrid_ti(trace: Trace | str | os.PathLike[str], directory: str | os.PathLike[str],
                  timing: Literal["mean", "sample", "none"] = "mean", flops_per_ns: float = 1.0,
                  seed: int = 0) -> SimGridExport:
    """Exports a trace in SimGrid's SMPI time-independent replay format.

    One file ``rank-R.txt`` per rank (lines ``R init``, ``R send DST TAG BYTES``, ``R isend``,
    ``R irecv SRC TAG BYTES``, ``R wait SRC DST TAG``, ``R waitall``, ``R compute FLOPS``,
    ``R bcast BYTES ROOT``, ``R allreduce BYTES 0``, ...) and ``index.txt`` listing them, for
    ``smpirun -np N -platform P.xml -hostfile H -replay index.txt smpireplaymain``. Sizes are
    in bytes (``init`` without a datatype selects MPI_BYTE); compute before each call becomes
    ``compute`` with ``flops_per_ns`` flops per nanosecond (1.0 for hosts of 1 Gflop/s).

    Parameters
    ----------
    trace : Trace or path
    directory : path
        Created if missing.
    timing : {"mean", "sample", "none"}
        How compute times are taken from the histograms.
    flops_per_ns : float
        Host speed of the SimGrid platform in flops per nanosecond.
    seed : int
        Seed of ``timing="sample"``.
    """
    t = _as_trace(trace)
    if timing not in ("mean", "sample", "none"):
        raise SimulationParameterError(f"timing must be 'mean', 'sample' or 'none', got {timing!r}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    files: list[os.PathLike[str]] = []
    actions: dict[str, int] = {}
    skipped = 0
    for r in range(t.nranks):
        path = d / f"rank-{r}.txt"
        with open(path, "w") as out:
            w = _TIWriter(t, r, out, flops_per_ns)
            for e in _core.rank_events(t._core, r, timing, seed + r):
                w.event(e)
            if w.outstanding:
                w.emit("waitall")
        for k, v in w.counts.items():
            actions[k] = actions.get(k, 0) + v
        skipped += w.skipped
        files.append(path.resolve())
    index = d / "index.txt"
    index.write_text("".join(f"{p}\n" for p in files))
    return SimGridExport(index=index.resolve(), files=files, actions=actions, skipped=skipped)
