#!/usr/bin/env python3
"""Simulator benchmarks: accuracy against real runs (and SimGrid SMPI), and speed.

Accuracy: for each example at 2 ranks (no oversubscription on this 2-core machine) with
``-c MICROSECONDS`` of compute between calls, repeat: trace the program (merged trace + raw
recording), take the real program time from the raw recording (slowest rank, end of MPI_Init to
MPI_Finalize: recorded compute + call durations), simulate the trace with LogGP parameters
from ``scalatrace.calibrate(np=2)``, and (if SimGrid is installed) replay the SimGrid export of
the same trace with ``smpirun -replay`` on a platform with the calibrated latency and bandwidth.
Medians over repeats.

Speed: events simulated per second on harness stencil traces (``scalatrace-harness``), and the
wall time and peak memory of a 65,536-rank, 100-timestep 2D stencil.

Usage::

    python benchmarks/simulator_bench.py [--repeats 3] [--compute-us 2000] [--iterations 30]
        [--examples stencil1d ring ...] [--speed-ranks 1024] [--big-ranks 65536] [--speed-repeats 5]
        [--skip-accuracy] [--skip-speed] [--out FILE]

The tables are printed; ``--out FILE`` also writes them to FILE. The curated
``benchmarks/results/simulator.md`` (hand-written notes and the history of earlier runs beside
the tables) is never written by default: copy a run's tables into it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import scalatrace
from scalatrace import _paths
from scalatrace._files import write_text
from scalatrace.simgrid import to_simgrid_ti, write_simgrid_platform

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_timing import program_time_from_raw  # noqa: E402  (same measure of the real run)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_EXAMPLES = [
    "stencil1d",
    "ring",
    "pipeline",
    "collectives",
    "nonblocking_coll",
    "persistent",
]
REPLAY_MAIN = Path("/usr/lib/x86_64-linux-gnu/simgrid/smpireplaymain")


def build_dir() -> Path:
    return Path(os.environ.get("SCALATRACE_BUILD_DIR", REPO / "build" / "py"))


def smpi_time(trace: scalatrace.Trace, net: scalatrace.LogGP, work: Path) -> float | None:
    smpirun = shutil.which("smpirun")
    if smpirun is None or not REPLAY_MAIN.is_file():
        return None
    exp = to_simgrid_ti(trace, work / "ti")
    # SMPI has no per-byte CPU overhead: its links get the whole per-byte time of a transfer
    # (the half round trip's slope, G + 2 O).
    per_byte = net.G + 2.0 * net.O
    bw = 1.0 / per_byte if per_byte > 0 else 1e12
    # Hosts of 1 Gflop/s (compute lines are nanoseconds), links with the calibrated one-way
    # small-message time (LogGP L plus both overheads) and bandwidth; SMPI's latency and
    # bandwidth correction factors set to 1 so that both simulators get the same numbers.
    platform, hostfile = write_simgrid_platform(work, trace.nranks, net.L + net.o_s + net.o_r, bw)
    proc = subprocess.run(
        [
            smpirun,
            "-np",
            str(trace.nranks),
            "-platform",
            str(platform),
            "-hostfile",
            str(hostfile),
            "-replay",
            str(exp.index),
            "--log=replay.thresh:critical",
            "--log=smpi_config.thres:warning",
            "--log=xbt_cfg.thres:warning",
            "--cfg=smpi/simulate-computation:yes",
            "--cfg=smpi/lat-factor:0:1",
            "--cfg=smpi/bw-factor:0:1",
            str(REPLAY_MAIN),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = re.search(r"Simulation time ([0-9.eE+-]+)", proc.stdout + proc.stderr)
    if proc.returncode != 0 or not found:
        print(f"smpirun failed ({proc.returncode}): {proc.stderr[-1000:]}", file=sys.stderr)
        return None
    return float(found.group(1))


def traced_run(
    argv: list[str], nranks: int, case: Path, timeout: float, own_time: str = "out"
) -> tuple[Path, Path]:
    """One run under the collector, compressed trace and raw recording; `own_time` is
    SCALATRACE_OWN_TIME ("compute": the collector's own time stays in the compute times)."""
    case.mkdir(parents=True)
    trace_path, raw = case / "trace.sct", case / "raw"
    env = dict(
        os.environ,
        SCALATRACE_OUT=str(trace_path),
        SCALATRACE_RAW=str(raw),
        SCALATRACE_QUIET="1",
        SCALATRACE_OWN_TIME=own_time,
    )
    subprocess.run(
        [
            _paths.mpiexec(),
            "-genv",
            "LD_PRELOAD",
            str(_paths.collector_library()),
            "-n",
            str(nranks),
            *argv,
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=timeout,
        cwd=case,
    )
    return trace_path, raw


def accuracy_case(name: str, args: argparse.Namespace, net: scalatrace.LogGP, work: Path) -> dict:
    exe = build_dir() / "examples" / name
    argv = [str(exe), "-i", str(args.iterations), "-c", str(args.compute_us)]
    real, sim, sampled, smpi = [], [], [], []
    for k in range(args.repeats):
        trace_path, raw = traced_run(argv, 2, work / f"{name}-{k}", 600)
        real.append(program_time_from_raw(raw))
        t = scalatrace.load(trace_path)
        sim.append(scalatrace.simulate(t, network=net).total_time)
        # timing="sample": each rank draws its compute times, so waits from imbalance appear;
        # the prediction is the mean over --seeds seeds.
        sampled.append(
            statistics.mean(
                scalatrace.simulate(t, network=net, timing="sample", seed=s).total_time
                for s in range(args.seeds)
            )
        )
        s = smpi_time(t, net, trace_path.parent)
        if s is not None:
            smpi.append(s)
    sim_errs = percent_errors(sim, real)
    sample_errs = percent_errors(sampled, real)
    out = {
        "example": name,
        "real": statistics.median(real),
        "sim": statistics.median(sim),
        "sim_err": statistics.median(sim_errs),
        "sim_errs": sim_errs,
        "sample": statistics.median(sampled),
        "sample_err": statistics.median(sample_errs),
        "sample_errs": sample_errs,
    }
    if smpi and len(smpi) == len(real):
        smpi_errs = percent_errors(smpi, real)
        out["smpi"] = statistics.median(smpi)
        out["smpi_err"] = statistics.median(smpi_errs)
        out["smpi_errs"] = smpi_errs
        # Paired: both predict the same run from the same trace.
        out["as_close"] = sum(abs(a) <= abs(b) for a, b in zip(sim_errs, smpi_errs))
        out["sample_as_close"] = sum(abs(a) <= abs(b) for a, b in zip(sample_errs, smpi_errs))
    return out


def percent_errors(predicted: list[float], real: list[float]) -> list[float]:
    """Each prediction against the real time of its own run, in percent."""
    return [100 * (p - r) / r for p, r in zip(predicted, real)]


def error_range(errors: list[float]) -> str:
    return f"{min(errors):+.1f} .. {max(errors):+.1f}%"


def harness_trace(pattern: str, ranks: int, steps: int, path: Path) -> dict:
    proc = subprocess.run(
        [
            str(_paths.tool("scalatrace-harness")),
            "--pattern",
            pattern,
            "--ranks",
            str(ranks),
            "--timesteps",
            str(steps),
            "--wrap",
            "-o",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    return json.loads(proc.stdout)


def time_simulation(path: Path) -> dict:
    """Simulates in a fresh process: the first call (what a user's first ``simulate`` costs, page
    faults included; CPU time of the calling thread, so NumPy's threads starting do not count) and, when that took under 2 s, up to 5 more calls in the same process (the
    steady rate, median); events, messages and the peak memory of that process."""
    code = (
        "import json, resource, statistics, sys, time, scalatrace\n"
        "t0 = time.perf_counter(); t = scalatrace.load(sys.argv[1]); t1 = time.perf_counter()\n"
        "c1 = time.thread_time(); r = scalatrace.simulate(t); t2 = time.perf_counter(); c2 = time.thread_time()\n"
        "warm = []\n"
        "while c2 - c1 < 2.0 and len(warm) < 5 and sum(warm) < 5.0:\n"
        "    w0 = time.thread_time(); scalatrace.simulate(t); warm.append(time.thread_time() - w0)\n"
        "print(json.dumps({'load_s': t1 - t0, 'sim_s': t2 - t1, 'cpu_s': c2 - c1, 'events': r.events,\n"
        "  'messages': r.messages, 'warm_cpu_s': statistics.median(warm) if warm else None,\n"
        "  'warm_runs': len(warm),\n"
        "  'total_time': r.total_time, 'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    return json.loads(proc.stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compute-us", type=int, default=2000)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--examples", nargs="+", default=DEFAULT_EXAMPLES)
    p.add_argument(
        "--seeds",
        type=int,
        default=5,
        help="timing='sample' predictions: mean over this many seeds per run",
    )
    p.add_argument("--speed-ranks", type=int, nargs="+", default=[64, 1024])
    p.add_argument("--speed-steps", type=int, default=200)
    p.add_argument("--big-ranks", type=int, default=65536)
    p.add_argument("--big-steps", type=int, default=100)
    p.add_argument(
        "--speed-repeats",
        type=int,
        default=1,
        help="simulate each speed case this many times (fresh process each) and report the run "
        "with the median CPU time (the machine is shared: single runs vary by 30%%)",
    )
    p.add_argument("--skip-accuracy", action="store_true")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write the tables to this file (default: print only)",
    )
    args = p.parse_args()

    lines = [
        "## Simulator",
        "",
        "Machine: 2 cores shared with other jobs (note the load average: `uptime`), MPICH 4 (ch4), "
        "SimGrid 3.32 (Debian). Command: `python benchmarks/simulator_bench.py "
        + " ".join(sys.argv[1:])
        + "`.",
        "",
    ]
    with tempfile.TemporaryDirectory(prefix="simbench-") as tmp:
        work = Path(tmp)
        if not args.skip_accuracy:
            net = scalatrace.calibrate(np=2)
            lines += [
                "### Accuracy at 2 ranks (simulated vs real program time)",
                "",
                f"Calibrated with `scalatrace.calibrate(np=2)`: L = {net.L * 1e6:.3f} us, "
                f"o_s = {net.o_s * 1e6:.3f} us, o_r = {net.o_r * 1e6:.3f} us, g = {net.g * 1e6:.3f} us, "
                f"G = {net.G * 1e9:.4f} ns/B ({1e-9 / net.G if net.G else float('inf'):.2f} GB/s). "
                f"Examples run with `-i {args.iterations} -c {args.compute_us}` (compute between calls, "
                f"microseconds); real time = slowest rank from the end of MPI_Init to MPI_Finalize in the "
                f"raw recording of the traced run; medians of {args.repeats} runs. SMPI: the SimGrid export "
                "of the same trace replayed by `smpirun -replay` (1 Gflop/s hosts, calibrated latency "
                "and bandwidth).",
                "",
                "Errors are medians over the runs, with their range. scalatrace: the default "
                "`timing=\"mean\"` (every call's compute time is its histogram's mean); sample: "
                f'`timing="sample"` (each rank draws its compute times), mean over {args.seeds} '
                'seeds. The "as close" columns count the runs in which that prediction is at least as '
                "close to the run's real time as SMPI's (both predict the same run from the same "
                "trace).",
                "",
                "| example | real (s) | scalatrace (s) | error | range | sample error | sample range "
                "| SMPI (s) | SMPI error | SMPI range | mean as close (runs) | sample as close (runs) |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for name in args.examples:
                r = accuracy_case(name, args, net, work)
                print(r, flush=True)
                runs = len(r["sim_errs"])
                smpi = (
                    (
                        f"{r['smpi']:.4f} | {r['smpi_err']:+.1f}% | {error_range(r['smpi_errs'])} | "
                        f"{r['as_close']} of {runs} | {r['sample_as_close']} of {runs}"
                    )
                    if "smpi" in r
                    else "n/a | n/a | n/a | n/a | n/a"
                )
                lines.append(
                    f"| {name} | {r['real']:.4f} | {r['sim']:.4f} | {r['sim_err']:+.1f}% | "
                    f"{error_range(r['sim_errs'])} | {r['sample_err']:+.1f}% | "
                    f"{error_range(r['sample_errs'])} | {smpi} |"
                )
            lines.append("")
        if not args.skip_speed:
            lines += [
                "### Speed (one core, harness 2D stencil traces, wrap-around)",
                "",
                "Events = trace events simulated over all ranks (8 Irecv + 8 Isend + Waitall + "
                "Allreduce per step and rank); messages include the collectives' own. Simulation in a "
                "fresh process: its first call (page faults of a fresh process included), and "
                "when that took under 2 s the median of up to 5 more calls in the same process "
                "(steady rate); peak RSS of that process (trace loaded + simulation); with "
                f"--speed-repeats {args.speed_repeats}, the process of median first-call CPU time.",
                "",
                "| ranks | steps | events | messages | first call wall (s) | first call CPU (s) | "
                "events/s (first call) | events/s (steady) | predicted (s) | peak RSS (MB) |",
                "|---|---|---|---|---|---|---|---|---|---|",
            ]
            cases = [(n, args.speed_steps) for n in args.speed_ranks] + [
                (args.big_ranks, args.big_steps)
            ]
            for n, steps in cases:
                path = work / f"stencil-{n}.sct"
                harness_trace("stencil2d", n, steps, path)
                runs = sorted(
                    (time_simulation(path) for _ in range(max(1, args.speed_repeats))),
                    key=lambda run: run["cpu_s"],
                )
                s = runs[len(runs) // 2]
                print(n, steps, s, [round(run["cpu_s"], 3) for run in runs], flush=True)
                steady = (
                    f"{s['events'] / s['warm_cpu_s'] / 1e6:.2f} M ({s['warm_runs']} runs)"
                    if s.get("warm_cpu_s")
                    else "n/a"
                )
                lines.append(
                    f"| {n} | {steps} | {s['events']:,} | {s['messages']:,} | {s['sim_s']:.3f} | "
                    f"{s['cpu_s']:.3f} | {s['events'] / s['cpu_s'] / 1e6:.2f} M | {steady} | "
                    f"{s['total_time']:.4f} | {s['rss_mb']:.0f} |"
                )
            lines.append("")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
