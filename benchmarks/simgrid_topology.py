#!/usr/bin/env python3
"""The simulator's torus topology beside SimGrid's SMPI on the same platform (issue 34).

For a harness 2D stencil (``scalatrace-harness``, no MPI), writes the SimGrid export
(``Trace.to_simgrid_ti``) and a one-cluster platform with SimGrid's ``TORUS`` topology (every
link ``--latency`` seconds and ``--bandwidth`` bytes per second; ``--limiter`` adds SimGrid's
per-host limiter link of the same bandwidth), replays it with ``smpirun -replay`` (CM02 network
model, no cross traffic, SMPI's latency and bandwidth factors 1) and compares the simulated
time with ``scalatrace.simulate`` on ``Topology.torus`` (free endpoint: L = o = g = G = 0; the
links give latency and bandwidth), with and without congestion, and on the flat network.

Usage::

    python benchmarks/simgrid_topology.py [--ranks 64] [--dims 8x8] [--steps 10]
        [--latency 1e-7] [--bandwidth 1e9] [--limiter]

Needs SimGrid (Debian ``libsimgrid-dev``: ``smpirun`` and ``smpireplaymain``). Prints one
table (BENCHMARKS.md, section 18).
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import scalatrace
from scalatrace import _paths
from scalatrace.simgrid import to_simgrid_ti

REPLAY_MAIN = Path("/usr/lib/x86_64-linux-gnu/simgrid/smpireplaymain")


def smpi_time(
    trace: scalatrace.Trace, dims: tuple[int, ...], args: argparse.Namespace, work: Path
) -> float:
    exp = to_simgrid_ti(trace, work / "ti")
    n = trace.nranks
    limiter = f' limiter_link="{args.bandwidth:.6g}Bps"' if args.limiter else ""
    (work / "platform.xml").write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1">\n'
        f'  <cluster id="c" prefix="node-" suffix="" radical="0-{n - 1}" speed="1Gf" '
        f'bw="{args.bandwidth:.6g}Bps" lat="{args.latency:.6g}s" topology="TORUS" '
        f'topo_parameters="{",".join(map(str, dims))}"{limiter}/>\n</platform>\n'
    )
    (work / "hostfile").write_text("".join(f"node-{i}\n" for i in range(n)))
    cmd = [
        "smpirun", "-np", str(n), "-platform", str(work / "platform.xml"), "-hostfile",
        str(work / "hostfile"), "-replay", str(exp.index), "--log=replay.thresh:critical",
        "--log=smpi_config.thres:warning", "--log=xbt_cfg.thres:warning",
        "--cfg=smpi/simulate-computation:yes", "--cfg=smpi/lat-factor:0:1", "--cfg=smpi/bw-factor:0:1",
        "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0", str(REPLAY_MAIN),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    found = re.search(r"Simulation time ([0-9.eE+-]+)", proc.stdout + proc.stderr)
    if proc.returncode != 0 or not found:
        sys.exit(f"smpirun failed ({proc.returncode}): {proc.stderr[-1000:]}")
    return float(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--dims", default="8x8", help="torus shape, product = ranks")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--latency", type=float, default=1e-7, help="seconds per link")
    ap.add_argument("--bandwidth", type=float, default=1e9, help="bytes per second per link")
    ap.add_argument("--limiter", action="store_true", help="SimGrid: a limiter link per host")
    args = ap.parse_args()
    dims = tuple(int(x) for x in args.dims.split("x"))
    if math.prod(dims) != args.ranks:
        sys.exit(f"--dims {args.dims} does not hold {args.ranks} ranks")
    if shutil.which("smpirun") is None or not REPLAY_MAIN.is_file():
        sys.exit("SimGrid is not installed (apt-get install libsimgrid-dev)")
    with tempfile.TemporaryDirectory(prefix="sgtopo-") as tmp:
        work = Path(tmp)
        path = work / "stencil.sct"
        subprocess.run(
            [str(_paths.tool("scalatrace-harness")), "--pattern", "stencil2d", "--ranks", str(args.ranks),
             "--timesteps", str(args.steps), "--wrap", "-o", str(path)],
            check=True, capture_output=True, timeout=3600,
        )  # fmt: skip
        trace = scalatrace.load(path)
        sg = smpi_time(trace, dims, args, work)
    free = scalatrace.LogGP(L=0, o_s=0, o_r=0, g=0, G=0)
    rows = []
    for label, network in (
        ("torus, congestion", scalatrace.Topology.torus(dims, link_bandwidth=args.bandwidth,
                                                        hop_latency=args.latency, endpoint=free)),
        ("torus, no congestion", scalatrace.Topology.torus(dims, link_bandwidth=args.bandwidth,
                                                           hop_latency=args.latency, endpoint=free,
                                                           congestion=False)),
        ("flat (L = link latency, G = 1/bandwidth)", scalatrace.LogGP(L=args.latency, o_s=0, o_r=0, g=0,
                                                                      G=1 / args.bandwidth)),
    ):  # fmt: skip
        ours = scalatrace.simulate(trace, network=network, recorded_local_calls=False).total_time
        rows.append(f"| scalatrace, {label} | {ours * 1e3:.4f} | {100 * (ours - sg) / sg:+.1f} % |")
    limiter = ", per-host limiter link" if args.limiter else ""
    print(f"| model | predicted ms | against SimGrid ({sg * 1e3:.4f} ms{limiter}) |")
    print("|---|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
