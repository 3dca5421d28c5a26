#!/usr/bin/env python3
"""The simulator's topologies beside SimGrid's SMPI on the same platform (issue 34).

For harness stencils (``scalatrace-harness --wrap``, no MPI) or traces given, writes the
SimGrid export (``Trace.to_simgrid_ti``) and a one-cluster platform with SimGrid's ``TORUS``,
``FAT_TREE`` or ``DRAGONFLY`` topology (every link ``--latency`` seconds and ``--bandwidth``
bytes per second; ``--limiter`` adds SimGrid's per-host limiter link of the same bandwidth),
replays it with ``smpirun -replay`` (CM02 network model, no cross traffic, SMPI's latency and
bandwidth factors 1, and by default ``smpi/allreduce:rdb``: recursive doubling, the schedule
the simulator uses for small Allreduces, so that both simulate the same messages) and compares
the simulated time with ``scalatrace.simulate`` on the same ``Topology`` (free endpoint: L = o
= g = G = 0; the links give latency and bandwidth), with congestion (``sharing="latency_weighted"``,
SimGrid's own CM02 sharing, ``"fair"`` and ``"first_come"``; ``--sharings`` picks them), without,
and on the flat network. Each case runs with the trace's compute and with communication only (compute
scaled to 0; SimGrid hosts at 1e18 flop/s).

Usage::

    python benchmarks/simgrid_topology.py [--cases torus:8x8:stencil2d,fat_tree:8:stencil2d]
        [--ranks 64] [--bytes 1024,4096,16384,65536] [--steps 10] [--latency 1e-7]
        [--bandwidth 1e9] [--smpi-cfg allreduce:rdb ...] [--limiter] [--simgrid-cache FILE]
        [--sharings latency_weighted,fair,first_come] [--simgrid-routes simgrid|scalatrace]

A case is ``topology:shape:pattern``: torus shape ``AxB[xC]``, fat tree ``k``, dragonfly
``GxRxN`` (groups, routers per group, nodes per router; SimGrid's with one chassis per group);
pattern ``stencil2d`` or ``stencil3d``, or the path of a trace (e.g. an example traced under the
collector, simulated as it is: ``--bytes`` and ``--ranks`` do not apply). Ranks are placed one
per node in rank order (block). ``--simgrid-routes scalatrace`` (tori): SimGrid runs the same
torus as a ``Full`` zone whose explicit routes are the simulator's (SimGrid's ``TORUS`` breaks
one tie of an even ring the other way), to compare the two on the same routes. Needs SimGrid
(Debian ``libsimgrid-dev``: ``smpirun`` and ``smpireplaymain``). Prints one table
(BENCHMARKS.md, sections 18, 18b and 18c).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import scalatrace
from scalatrace import _paths
from scalatrace._files import write_text
from scalatrace.simgrid import to_simgrid_ti

REPLAY_MAIN = Path("/usr/lib/x86_64-linux-gnu/simgrid/smpireplaymain")


@dataclass(frozen=True)
class Case:
    """One platform and harness pattern."""

    kind: str  # "torus", "fat_tree" or "dragonfly"
    shape: tuple[int, ...]
    pattern: str

    @property
    def nodes(self) -> int:
        if self.kind == "fat_tree":
            return self.shape[0] ** 3 // 4
        n = 1
        for d in self.shape:
            n *= d
        return n

    def label(self) -> str:
        if self.kind == "fat_tree":
            return f"fat tree k={self.shape[0]}"
        if self.kind == "dragonfly":
            return "dragonfly " + "×".join(map(str, self.shape))
        return "torus " + "×".join(map(str, self.shape))

    def simgrid_topology(self) -> str:
        """SimGrid's cluster attributes for the same machine."""
        if self.kind == "torus":
            return f'topology="TORUS" topo_parameters="{",".join(map(str, self.shape))}"'
        if self.kind == "dragonfly":
            # Groups with one global link between every two, one chassis per group, its routers
            # linked all-to-all by one link, nodes per router.
            groups, routers, nodes = self.shape
            return f'topology="DRAGONFLY" topo_parameters="{groups},1;1,1;{routers},1;{nodes}"'
        k = self.shape[0]
        half = k // 2
        # Three levels: edge switches with k/2 nodes, aggregation switches with k/2 edge switches
        # (each edge switch has k/2 parents), core switches with k aggregation switches (each
        # aggregation switch has k/2 parents); one link between every connected pair.
        return f'topology="FAT_TREE" topo_parameters="3;{half},{half},{k};1,{half},{half};1,1,1"'

    def topology(
        self, args: argparse.Namespace, congestion: bool, sharing: str = "first_come"
    ) -> scalatrace.Topology:
        free = scalatrace.LogGP(L=0, o_s=0, o_r=0, g=0, G=0)
        kw: dict[str, object] = {"link_bandwidth": args.bandwidth, "hop_latency": args.latency, "endpoint": free,
                                 "congestion": congestion, "sharing": sharing}  # fmt: skip
        if self.kind == "torus":
            return scalatrace.Topology.torus(self.shape, **kw)
        if self.kind == "dragonfly":
            return scalatrace.Topology.dragonfly(*self.shape, **kw)
        return scalatrace.Topology.fat_tree(self.shape[0], **kw)


def parse_case(text: str) -> Case:
    kind, shape, pattern = text.split(":", 2)
    if kind not in ("torus", "fat_tree", "dragonfly") or (
        pattern not in ("stencil2d", "stencil3d") and not Path(pattern).is_file()
    ):
        sys.exit(
            f"bad case {text!r}: give torus:AxB:stencil2d, fat_tree:K:stencil3d or torus:AxB:TRACE.sct"
        )
    return Case(kind, tuple(int(x) for x in shape.split("x")), pattern)


def torus_route(shape: tuple[int, ...], a: int, b: int) -> list[tuple[int, int, int]]:
    """The simulator's torus route from node a to b as (node, dimension, 0 up / 1 down) links:
    dimension order, each dimension the shorter way, ties upwards (docs/simulator.md)."""
    links, here, stride = [], a, 1
    for d, n in enumerate(shape):
        c, to = (a // stride) % n, (b // stride) % n
        ahead = (to - c) % n
        up = ahead <= n - ahead
        for _ in range(ahead if up else n - ahead):
            links.append((here, d, 0 if up else 1))
            nxt = (c + 1) % n if up else (c - 1) % n
            here += (nxt - c) * stride
            c = nxt
        stride *= n
    return links


def torus_with_our_routes(case: Case, speed: str, args: argparse.Namespace) -> str:
    """A SimGrid zone with the torus's hosts and links (one per node, dimension and direction)
    and, as explicit routes, the simulator's own (``--simgrid-routes scalatrace``): SimGrid's
    TORUS breaks a tie between the two ways round an even ring differently."""
    if case.kind != "torus":
        sys.exit("--simgrid-routes scalatrace: tori only")
    out = ['  <zone id="z" routing="Full">\n']
    out += [f'    <host id="node-{i}" speed="{speed}"/>\n' for i in range(case.nodes)]
    for i in range(case.nodes):
        for d in range(len(case.shape)):
            for way in (0, 1):
                out.append(
                    f'    <link id="l{i}_{d}_{way}" bandwidth="{args.bandwidth:.6g}Bps" '
                    f'latency="{args.latency:.6g}s"/>\n'
                )
    for a in range(case.nodes):
        for b in range(case.nodes):
            if a != b:
                ctn = "".join(
                    f'<link_ctn id="l{n}_{d}_{w}"/>' for n, d, w in torus_route(case.shape, a, b)
                )
                out.append(
                    f'    <route src="node-{a}" dst="node-{b}" symmetrical="NO">{ctn}</route>\n'
                )
    out.append("  </zone>\n")
    return "".join(out)


def smpi_time(
    trace: scalatrace.Trace, case: Case, compute: bool, args: argparse.Namespace, work: Path
) -> float:
    exp = to_simgrid_ti(trace, work / "ti")
    speed = "1Gf" if compute else "1e18f"
    limiter = f' limiter_link="{args.bandwidth:.6g}Bps"' if args.limiter else ""
    if args.simgrid_routes == "scalatrace":
        body = torus_with_our_routes(case, speed, args)
    else:
        body = (
            f'  <cluster id="c" prefix="node-" suffix="" radical="0-{case.nodes - 1}" speed="{speed}" '
            f'bw="{args.bandwidth:.6g}Bps" lat="{args.latency:.6g}s" {case.simgrid_topology()}{limiter}/>\n'
        )
    write_text(
        work / "platform.xml",
        '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1">\n' + body + "</platform>\n",
    )
    write_text(work / "hostfile", "".join(f"node-{i}\n" for i in range(trace.nranks)))
    cmd = [
        "smpirun", "-np", str(trace.nranks), "-platform", str(work / "platform.xml"), "-hostfile",
        str(work / "hostfile"), "-replay", str(exp.index), "--log=replay.thresh:critical",
        "--log=smpi_config.thres:warning", "--log=xbt_cfg.thres:warning",
        "--cfg=smpi/simulate-computation:yes", "--cfg=smpi/lat-factor:0:1", "--cfg=smpi/bw-factor:0:1",
        "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0", "--cfg=smpi/display-timing:yes",
        *(f"--cfg=smpi/{c}" for c in args.smpi_cfg), str(REPLAY_MAIN),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    # "Simulated time: 4.956e-05 seconds" (4 significant digits; "Simulation time" has 1 us steps).
    found = re.search(r"Simulated time: ([0-9.eE+-]+) seconds", proc.stdout + proc.stderr)
    if proc.returncode != 0 or not found:
        sys.exit(f"smpirun failed ({proc.returncode}): {proc.stderr[-1000:]}")
    return float(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--cases", default="torus:8x8:stencil2d,torus:4x4x4:stencil3d,fat_tree:8:stencil2d"
    )
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument(
        "--bytes",
        default="1024,4096,16384,65536",
        help="bytes per stencil message, comma-separated",
    )
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--latency", type=float, default=1e-7, help="seconds per link")
    ap.add_argument("--bandwidth", type=float, default=1e9, help="bytes per second per link")
    ap.add_argument(
        "--smpi-cfg", action="append", metavar="KEY:VALUE",
        help="SMPI settings (repeatable; default allreduce:rdb)",
    )  # fmt: skip
    ap.add_argument("--limiter", action="store_true", help="SimGrid: a limiter link per host")
    ap.add_argument(
        "--simgrid-cache",
        type=Path,
        help="JSON file of SimGrid times by case (read, and written with the new ones): "
        "re-runs of our side skip SMPI",
    )
    ap.add_argument(
        "--simgrid-routes",
        choices=("simgrid", "scalatrace"),
        default="simgrid",
        help="tori: SimGrid's TORUS cluster (its routes), or a zone with the simulator's routes",
    )
    ap.add_argument(
        "--sharings",
        default="latency_weighted,fair,first_come",
        help="congestion columns, comma-separated: latency_weighted (SimGrid's CM02), fair, first_come",
    )
    args = ap.parse_args()
    sharings = args.sharings.split(",")
    if any(s not in ("latency_weighted", "fair", "first_come") for s in sharings):
        sys.exit(f"bad --sharings {args.sharings!r}: give latency_weighted, fair and/or first_come")
    if args.smpi_cfg is None:
        args.smpi_cfg = ["allreduce:rdb"]
    cases = [parse_case(c) for c in args.cases.split(",")]
    if shutil.which("smpirun") is None or not REPLAY_MAIN.is_file():
        sys.exit("SimGrid is not installed (apt-get install libsimgrid-dev)")
    cache: dict[str, float] = {}
    if args.simgrid_cache is not None and args.simgrid_cache.is_file():
        cache = json.loads(args.simgrid_cache.read_text())
    names = {"latency_weighted": "latency-weighted", "fair": "fair", "first_come": "first come"}
    heads = [f"{names[s]} (ms) | error" for s in sharings] + [
        "no congestion (ms) | error",
        "flat (ms) | error",
    ]
    print("| platform | pattern | bytes | compute | SimGrid (ms) | " + " | ".join(heads) + " |")
    print("|---|---|---:|---|---:|" + "---:|---:|" * len(heads))
    for case in cases:
        given = Path(case.pattern).is_file()
        for size in [0] if given else [int(b) for b in args.bytes.split(",")]:
            with tempfile.TemporaryDirectory(prefix="sgtopo-") as tmp:
                work = Path(tmp)
                if given:
                    trace = scalatrace.load(case.pattern)
                else:
                    path = work / "stencil.sct"
                    subprocess.run(
                        [str(_paths.tool("scalatrace-harness")), "--pattern", case.pattern, "--ranks",
                         str(args.ranks), "--timesteps", str(args.steps), "--bytes", str(size), "--wrap", "-o",
                         str(path)],
                        check=True, capture_output=True, timeout=3600,
                    )  # fmt: skip
                    trace = scalatrace.load(path)
                if case.nodes < trace.nranks:
                    sys.exit(
                        f"{case.label()} has {case.nodes} nodes, fewer than {trace.nranks} ranks"
                    )
                name = Path(case.pattern).stem if given else case.pattern
                for compute in (True, False):
                    key = (
                        f"{case.kind}:{'x'.join(map(str, case.shape))}:{name}:{size}:{int(compute)}:"
                        + (
                            f"{args.ranks}:{args.steps}:{args.latency:g}:{args.bandwidth:g}:{args.limiter}:"
                            + ",".join(args.smpi_cfg)
                            + (":our-routes" if args.simgrid_routes == "scalatrace" else "")
                        )
                    )
                    if key not in cache:
                        cache[key] = smpi_time(trace, case, compute, args, work)
                        if args.simgrid_cache is not None:
                            write_text(args.simgrid_cache, json.dumps(cache, indent=1))
                    sg = cache[key]
                    cells = [f"{sg * 1e3:.4f}"]
                    flat = scalatrace.LogGP(L=args.latency, o_s=0, o_r=0, g=0, G=1 / args.bandwidth)
                    networks = (*(case.topology(args, True, s) for s in sharings),
                                case.topology(args, False), flat)  # fmt: skip
                    for network in networks:
                        ours = scalatrace.simulate(
                            trace,
                            network=network,
                            recorded_local_calls=False,
                            compute_scale=1.0 if compute else 0.0,
                        ).total_time
                        cells += [f"{ours * 1e3:.4f}", f"{100 * (ours - sg) / sg:+.1f} %"]
                    print(f"| {case.label()} | {name} | {size or 'as traced'} | {'yes' if compute else 'no'} | "
                          + " | ".join(cells) + " |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
