"""Network topologies and OS noise for :func:`scalatrace.simulate` (what-ifs of issue 34).

A :class:`Topology` replaces the flat inter-node network: an inter-node message crosses the
links of its route (``hops``), taking the endpoint's LogGP ``L`` plus ``hops * hop_latency``
and ``(k - 1) * max(endpoint.G, 1 / link_bandwidth)`` for its ``k`` bytes; with
``congestion`` a link carries one message at a time (``sharing="first_come"``) or shares its
bandwidth max-min fairly among the messages crossing it (``sharing="fair"``), or in proportion to
the inverse of their routes' latencies (``sharing="latency_weighted"``, SimGrid's CM02 fluid
model). A torus node injects on each of its
links at once (a port per link); a fat-tree or dragonfly node has one port. :class:`Noise`
takes each rank's CPU away for ``duration`` seconds ``frequency`` times a second (LogGOPSim's
OS noise as a periodic detour). Model: ``docs/simulator.md`` ("Topology and placement", "OS noise").

Example::

    import scalatrace
    t = scalatrace.load("stencil.sct")
    torus = scalatrace.Topology.torus((8, 8), link_bandwidth=12.5e9, hop_latency=100e-9)
    r = scalatrace.simulate(t, network=torus, placement="random", ranks_per_node=4,
                            noise=scalatrace.Noise(frequency=1000, duration=25e-6))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._base import check_bool, check_float, check_int
from .errors import SimulationParameterError, UsageError

TopologyKind = Literal["torus", "fat_tree", "dragonfly"]
_MAX_NODES = 1 << 30


@dataclass(frozen=True)
class Topology:
    """Links between nodes, with a LogGP endpoint.

    Attributes
    ----------
    kind : {"torus", "fat_tree", "dragonfly"}
        ``torus``: wrap-around links in every dimension, dimension-order routing the shorter
        way; a node sends on each of its links at once (one injection port per link).
        ``fat_tree``: three-level k-ary fat tree (k^3/4 nodes, k even), up-down routing
        with the up ports chosen by the destination; a node has one link (one port). ``dragonfly``: groups of routers linked
        all-to-all, one global link between every two groups, minimal routing.
    shape : tuple of int
        Torus: nodes per dimension. Fat tree: ``(k,)``. Dragonfly: ``(groups, routers per
        group, nodes per router)``.
    link_bandwidth : float
        Bytes per second of every link (``math.inf``: only the endpoint's ``G`` limits).
    hop_latency : float
        Seconds per link crossed.
    endpoint : LogGP, optional
        The NIC and software: overheads, gap, ``L`` added to every inter-node message, ``G``
        (default ``LogGP()``; checked by :func:`scalatrace.simulate`).
    congestion : bool
        Messages whose routes share a link cross it one at a time (each message takes each
        link's free time from its start on, as a flow crossing its links at once). Without it,
        only the NICs' gaps and a torus node's ports limit messages.
    sharing : {"first_come", "fair", "latency_weighted"}
        How congested links are shared. ``first_come`` (the default): the reservations above,
        first come, first served. ``fair``: every link's bandwidth is shared max-min fairly
        among the messages crossing it at each instant, the rates recomputed whenever a message
        starts or ends; a node's link to its switch is shared that way too, and its NIC only
        keeps its gap. The simulation then runs a few times (each pass timing the messages by
        the previous pass's flows) until the flows' start times repeat. ``latency_weighted``:
        as ``fair``, each message's share in proportion to the inverse of its route's latency
        (SimGrid's CM02 model, TCP's bias against long round trips).
    """

    kind: TopologyKind
    shape: tuple[int, ...]
    link_bandwidth: float = math.inf
    hop_latency: float = 0.0
    endpoint: Any = None
    congestion: bool = True
    sharing: Literal["first_come", "fair", "latency_weighted"] = "first_come"

    def __post_init__(self) -> None:
        try:
            if self.kind not in ("torus", "fat_tree", "dragonfly"):
                raise UsageError(
                    f"topology kind must be 'torus', 'fat_tree' or 'dragonfly', got {self.kind!r}"
                )
            if (
                isinstance(self.shape, (str, bytes))
                or not isinstance(self.shape, Sequence)
                or not self.shape
            ):
                raise UsageError(
                    f"topology shape must be a non-empty sequence of sizes, got {self.shape!r:.60}"
                )
            shape = tuple(check_int("topology shape", d, lo=1, hi=_MAX_NODES) for d in self.shape)
            object.__setattr__(self, "shape", shape)
            if self.kind == "fat_tree" and (
                len(shape) != 1 or shape[0] % 2 or not 2 <= shape[0] <= 1024
            ):
                raise UsageError(f"fat_tree shape is (k,), k even between 2 and 1024, got {shape}")
            if self.kind == "dragonfly" and len(shape) != 3:
                raise UsageError(
                    f"dragonfly shape is (groups, routers per group, nodes per router), got {shape}"
                )
            if math.prod(shape) > _MAX_NODES:
                raise UsageError(f"topology {shape} has more than 2**30 nodes")
            bw = self.link_bandwidth
            if not (
                isinstance(bw, (int, float))
                and not isinstance(bw, bool)
                and math.isinf(bw)
                and bw > 0
            ):
                bw = check_float("link_bandwidth", bw)
            if bw <= 0:
                raise UsageError(f"link_bandwidth must be positive, got {bw}")
            check_float("hop_latency", self.hop_latency)
            check_bool("congestion", self.congestion)
            if self.sharing not in ("first_come", "fair", "latency_weighted"):
                raise UsageError(
                    "sharing must be 'first_come', 'fair' or 'latency_weighted', "
                    f"got {self.sharing!r:.40}"
                )
        except UsageError as e:
            raise SimulationParameterError(str(e)) from None

    @classmethod
    def torus(cls, dims: Sequence[int], **kw: object) -> Topology:
        """A torus of ``dims`` nodes (e.g. ``(8, 8)``); keywords as the class attributes."""
        return cls("torus", tuple(dims), **kw)  # type: ignore[arg-type]

    @classmethod
    def fat_tree(cls, k: int, **kw: object) -> Topology:
        """A three-level k-ary fat tree (k^3/4 nodes)."""
        return cls("fat_tree", (k,), **kw)  # type: ignore[arg-type]

    @classmethod
    def dragonfly(cls, groups: int, routers: int, nodes_per_router: int, **kw: object) -> Topology:
        """A dragonfly of ``groups`` groups of ``routers`` routers with ``nodes_per_router`` nodes each."""
        return cls("dragonfly", (groups, routers, nodes_per_router), **kw)  # type: ignore[arg-type]

    @property
    def nodes(self) -> int:
        """Nodes of the topology."""
        if self.kind == "fat_tree":
            return self.shape[0] ** 3 // 4
        return math.prod(self.shape)

    def _core_args(self) -> dict[str, object]:
        return {
            "topology": self.kind,
            "shape": list(self.shape),
            "hop_latency": self.hop_latency * 1e9,
            "link_G": 0.0 if math.isinf(self.link_bandwidth) else 1e9 / self.link_bandwidth,
            "congestion": bool(self.congestion),
            "sharing": self.sharing,
        }


@dataclass(frozen=True)
class Noise:
    """OS noise: every ``1 / frequency`` seconds each rank's CPU is taken for ``duration``.

    Attributes
    ----------
    frequency : float
        Detours per second (0: no noise).
    duration : float
        Seconds per detour (shorter than the period).
    coscheduled : bool
        Every rank's detours at the same times (LogGOPSim's ``--noise-cosched``); else each
        rank's first detour at its own phase.
    seed : int
        Seed of the phases.
    """

    frequency: float
    duration: float
    coscheduled: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        try:
            f = check_float("noise frequency", self.frequency)
            d = check_float("noise duration", self.duration)
            check_bool("coscheduled", self.coscheduled)
            check_int("noise seed", self.seed, lo=0, hi=2**64 - 1)
            if f > 0 and d * f >= 1:
                raise UsageError(f"noise duration {d} s must be shorter than its period {1 / f} s")
        except UsageError as e:
            raise SimulationParameterError(str(e)) from None

    def _core_args(self) -> dict[str, object]:
        return {
            "noise_period": 1e9 / self.frequency if self.frequency > 0 else 0.0,
            "noise_duration": self.duration * 1e9 if self.frequency > 0 else 0.0,
            "noise_coscheduled": bool(self.coscheduled),
            "noise_seed": int(self.seed),
        }
