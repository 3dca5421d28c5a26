#!/usr/bin/env python3
"""What the simulator's default ``timing="mean"`` misses on a 2-rank application (issue 34).

For each NPB code: one traced 2-rank run (merged trace and raw recording, as
``app_accuracy.py``), then

* real: the slowest rank from the end of MPI_Init to MPI_Finalize in the raw recording;
* simulated: ``scalatrace.simulate`` with ``scalatrace.calibrate(np=2)`` parameters, ``timing="mean"``
  and ``timing="sample"`` (mean over ``--seeds`` seeds);
* jitter: the compute between two consecutive synchronisations of the two ranks (each
  ``Wait``/``Waitall``/``Recv``/``Sendrecv``/collective ends one) in the raw recording; the sum
  over synchronisations of the slower rank's compute minus the sum of the two ranks' mean: what
  waiting for the slower rank at every synchronisation costs, which ``mean`` timing (the same
  compute on both ranks) cannot predict. Only when both ranks synchronise equally often;
* the ranks' recorded time in each MPI function against the simulated communication time.

Usage::

    flock /tmp/scalatrace-timing.lock chrt -f 50 python benchmarks/app_jitter.py [--codes cg,lu,mg]
        [--repeats 3] [--seeds 3] [--npb /work/apps/npb-nostats/bin]

Run the traced ranks at SCHED_FIFO on an otherwise idle pair of cores: the figures then mean
something (BENCHMARKS.md, section 9b).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import scalatrace
from scalatrace import _paths

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_timing import program_time_from_raw  # noqa: E402
from simulator_bench import traced_run  # noqa: E402

SYNCS = {
    "Wait",
    "Waitall",
    "Recv",
    "Sendrecv",
    "Allreduce",
    "Reduce",
    "Bcast",
    "Barrier",
    "Alltoall",
    "Alltoallv",
}


def raw_ranks(raw: Path) -> list[list[dict]]:
    dump = subprocess.run(
        [str(_paths.tool("scalatrace-dump")), "raw", str(raw)],
        capture_output=True,
        text=True,
        check=True,
    )
    return [rank["events"] for rank in json.loads(dump.stdout)["ranks"]]


def jitter_ns(ranks: list[list[dict]]) -> float | None:
    """Sum over synchronisations of max minus mean of the two ranks' compute since the last one."""
    segments = []
    for events in ranks:
        seg, cur = [], 0
        for ev in events:
            if ev["op"] in ("Init", "Init_thread"):
                continue
            cur += ev["compute_ns"]
            if ev["op"] in SYNCS:
                seg.append(cur)
                cur = 0
        seg.append(cur)
        segments.append(seg)
    if len(segments) != 2 or len(segments[0]) != len(segments[1]):
        return None
    return sum(max(a, b) - (a + b) / 2 for a, b in zip(*segments))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--npb", type=Path, default=Path("/work/apps/npb-nostats/bin"))
    ap.add_argument("--codes", default="cg,lu,mg")
    ap.add_argument("--npb-class", default="S")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    print("load average:", " ".join(Path("/proc/loadavg").read_text().split()[:3]), file=sys.stderr)
    net = scalatrace.calibrate(np=2)
    print(f"calibration: {net}", file=sys.stderr)
    print(
        "| app | run | real (ms) | mean error | sample error | jitter (ms, % of real) | recorded calls, slowest rank (ms) | simulated comm + wait (ms) |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    with tempfile.TemporaryDirectory(prefix="appjitter-") as tmp:
        for code in args.codes.split(","):
            exe = args.npb / f"{code}.{args.npb_class}.x"
            for k in range(args.repeats):
                trace_path, raw = traced_run([str(exe)], 2, Path(tmp) / f"{code}-{k}", 900)
                real = program_time_from_raw(raw)
                ranks = raw_ranks(raw)
                t = scalatrace.load(trace_path)
                r = scalatrace.simulate(t, network=net)
                sample = statistics.mean(
                    scalatrace.simulate(t, network=net, timing="sample", seed=s).total_time
                    for s in range(args.seeds)
                )
                jit = jitter_ns(ranks)
                slowest = max(
                    range(2),
                    key=lambda i: sum(e["compute_ns"] + e["duration_ns"] for e in ranks[i]),
                )
                calls: Counter[str] = Counter()
                for ev in ranks[slowest]:
                    if ev["op"] not in ("Init", "Init_thread", "Finalize"):
                        calls[ev["op"]] += ev["duration_ns"]
                shown = ", ".join(f"{op} {ns / 1e6:.2f}" for op, ns in calls.most_common(4))
                sim_calls = float(r.comm[slowest] + r.wait[slowest]) * 1e3
                jit_cell = (
                    "n/a" if jit is None else f"{jit / 1e6:.2f} ({100 * jit * 1e-9 / real:.1f} %)"
                )
                print(
                    f"| {code.upper()} | {k + 1} | {real * 1e3:.2f} | {100 * (r.total_time - real) / real:+.1f} % | "
                    f"{100 * (sample - real) / real:+.1f} % | {jit_cell} | {shown} | {sim_calls:.2f} |",
                    flush=True,
                )
    print("load average:", " ".join(Path("/proc/loadavg").read_text().split()[:3]), file=sys.stderr)


if __name__ == "__main__":
    main()
