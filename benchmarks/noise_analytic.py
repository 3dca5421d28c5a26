#!/usr/bin/env python3
"""The simulator's OS noise (``noise=Noise(...)``) against its analytic expectation (issue 34).

A bulk-synchronous loop (``benchmarks/noise_loop.c``: ``--steps`` times, spin ``--work`` µs, then
``MPI_Barrier``) is traced under the collector at each of ``--ranks`` and simulated on a free
network (L = o = g = G = 0, ``timing="mean"``: every rank computes the same W per step), without
noise and with periodic detours of ``d`` seconds every ``P = 1 / f`` (one set per ``--noise
f:d``), over ``--seeds`` seeds of the ranks' phases; the trace's compute is scaled so that a step
computes exactly ``--work-sim`` µs (W). A step then lasts W plus the largest delay any rank's
detours cause; the table gives the simulated mean delay per step (over seeds and steps, with the
standard error of the seeds' means) beside its expectation:

* Coscheduled detours (the same phase on every rank): the ranks compute in lockstep and the
  barrier costs nothing, so each computes without pause and loses the fraction d/P of its time:
  ``W d / (P - d)`` per step (exact in the long run: renewal).
* Independent phases, W + d <= P (at most one detour per step and rank): a rank's W of work
  meets a detour with probability ``p = W / (P - d)`` (work time between two detours is P - d)
  and is then delayed by d; the step waits for the slowest rank: delay d with probability
  ``q = 1 - (1 - p)^N``. Meanwhile each of the other N - 1 ranks waits about d in the barrier;
  a detour of its own that starts in that wait (probability d/P) is still in progress when the
  next step starts, which it delays by the rest, d/2 on average, unless a rank is hit in full
  then (probability q). To second order: ``E = q d (1 + (1 - q) (N - 1) d / (2 P))``.

Usage::

    python benchmarks/noise_analytic.py [--ranks 2,4,8] [--steps 1000] [--work 20] [--work-sim 10]
        [--noise 1000:25e-6 --noise 10000:10e-6] [--seeds 20]

Needs MPICH (``mpicc.mpich``, ``mpiexec.mpich``). Simulated times do not depend on the load (the
traced W does, but it is scaled to ``--work-sim``). BENCHMARKS.md, section 18c.
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import scalatrace

HERE = Path(__file__).resolve().parent


def expected_delay(n: int, work: float, period: float, duration: float) -> float:
    """E[delay of a step of `work` s] for n ranks with independent phases, to second order."""
    q = 1 - (1 - work / (period - duration)) ** n
    return q * duration * (1 + (1 - q) * (n - 1) * duration / (2 * period))


def step_ends(result: scalatrace.SimResult) -> np.ndarray:
    """End times of rank 0's barriers (every rank leaves a barrier on a free network at once)."""
    tl = result.to_pandas("timeline")
    return tl[(tl["rank"] == 0) & (tl["op"] == "Barrier")]["end"].to_numpy()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ranks", default="2,4,8", help="rank counts traced, comma-separated (<= 9)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--work", type=float, default=20.0, help="µs spun per step")
    ap.add_argument(
        "--noise", action="append", metavar="FREQ:DURATION",
        help="detours per second and seconds each (repeatable; default 1000:25e-6 and 10000:10e-6)",
    )  # fmt: skip
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument(
        "--work-sim", type=float, default=10.0, help="µs of compute per step simulated (scaled)"
    )
    args = ap.parse_args()
    noises = [
        tuple(float(x) for x in n.split(":")) for n in (args.noise or ["1000:25e-6", "10000:10e-6"])
    ]
    if shutil.which("mpicc.mpich") is None:
        sys.exit("needs MPICH (mpicc.mpich)")
    free = scalatrace.LogGP(L=0, o_s=0, o_r=0, g=0, G=0)
    print(
        "| ranks | f (Hz) | d (µs) | W (µs) | detours | simulated delay/step (µs) | expected (µs) | error |"
    )
    print("|---:|---:|---:|---:|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="noise-") as tmp:
        exe = Path(tmp) / "noise_loop"
        subprocess.run(
            ["mpicc.mpich", "-O2", "-o", str(exe), str(HERE / "noise_loop.c")], check=True
        )
        for n in (int(x) for x in args.ranks.split(",")):
            cmd = [str(exe), "-s", str(args.steps), "-w", str(args.work)]
            trace = scalatrace.trace(cmd, np=n, out=Path(tmp) / f"loop{n}.sct", timeout=300)
            kw = {
                "network": free,
                "recorded_local_calls": False,
                "timing": "mean",
                "timeline": True,
            }
            traced = float(np.median(np.diff(step_ends(scalatrace.simulate(trace, **kw)))))
            kw["compute_scale"] = args.work_sim * 1e-6 / traced  # W set exactly, whatever the load
            clean = np.diff(step_ends(scalatrace.simulate(trace, **kw)))
            work = float(np.median(clean))
            for freq, duration in noises:
                period = 1 / freq
                for cosched in (False, True):
                    means = []
                    for seed in range(args.seeds):
                        noise = scalatrace.Noise(freq, duration, coscheduled=cosched, seed=seed)
                        steps = np.diff(step_ends(scalatrace.simulate(trace, noise=noise, **kw)))
                        means.append(float(np.mean(steps - clean)))
                    sim = float(np.mean(means))
                    err = float(np.std(means, ddof=1) / math.sqrt(len(means)))
                    exp = (
                        work * duration / (period - duration)
                        if cosched
                        else expected_delay(n, work, period, duration)
                    )
                    print(
                        f"| {n} | {freq:g} | {duration * 1e6:g} | {work * 1e6:.2f} | "
                        f"{'coscheduled' if cosched else 'independent'} | {sim * 1e6:.3f} ± {err * 1e6:.3f} | "
                        f"{exp * 1e6:.3f} | {100 * (sim - exp) / exp:+.1f} % |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
