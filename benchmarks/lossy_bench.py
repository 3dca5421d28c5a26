#!/usr/bin/env python3
"""Lossy traces (issue 36, docs/lossy.md): size and replay time.

The data-dependent program ``tests/py/programs/random_exchange.c`` (random peers and sizes per
iteration, a wildcard gather, an Allreduce) is compiled, then:

* **size**: for each rank count and iteration count, one traced run (lossless, as the collector
  writes it by default), and the same trace made lossy with threshold 1 and 32
  (``SCALATRACE_LOSSY=1`` / ``on``; the collector calls the same ``make_lossy`` on the merged
  trace, checked once against a real ``SCALATRACE_LOSSY=1`` run of the first configuration);
  file bytes of each.
* **memory** (``--memory``): for each rank count and iteration count, real collector runs
  lossless, ``SCALATRACE_LOSSY=on`` and ``=1`` (the histograms made inside each rank's
  compressor, docs/lossy.md "Per-rank memory"): the compressor's peak (metadata
  ``compressor_peak_bytes``, the largest over the ranks), rank 0's peak RSS after the merge
  (``peak_memory_bytes``), the file's bytes; and per lossy trace a simulation (seed 0) against
  the lossless one: messages and bytes, the error of each.
* **time** (``--time``): at 2 ranks with computation (``work_us`` per iteration, data
  dependent), the untraced program's own span (``MPI_Init`` to ``MPI_Finalize``, printed by
  rank 0) against the replays' program time (their reports): the lossless trace replayed with
  ``--timing spread`` (the default) and ``--timing mean``, the lossy trace with ``spread``;
  medians of ``--repeats`` (repeat k replays with seed k). Run it at SCHED_FIFO under the
  timing lock (``flock /tmp/scalatrace-timing.lock chrt -f 50 python ...``), the trace included:
  a trace taken under load records the load's descheduling as computation.

Usage::

    python benchmarks/lossy_bench.py [--ranks 2 4 8] [--iterations 10 40 160]
        [--memory] [--memory-iterations 300 3000] [--memory-ranks 4] [--time] [--repeats 5] [--work-us 2000] [--time-iterations 40]

Needs ``make build`` (``SCALATRACE_BUILD_DIR``, default ``build/py``). Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

import scalatrace
from scalatrace import _paths
from scalatrace.replay import replay

REPO = Path(__file__).resolve().parents[1]


def compile_program(work: Path) -> Path:
    exe = work / "random_exchange"
    src = REPO / "tests" / "py" / "programs" / "random_exchange.c"
    subprocess.run(
        ["mpicc.mpich", "-O2", "-Wno-stringop-overflow", str(src), "-o", str(exe)], check=True
    )
    return exe


def run(exe: Path, n: int, args: list[str], env: dict | None = None) -> str:
    cmd = [_paths.mpiexec(), "-n", str(n)]
    if env:
        cmd += ["env"] + [f"{k}={v}" for k, v in env.items()]
    proc = subprocess.run(cmd + [str(exe), *args], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return proc.stdout


def traced(
    exe: Path, n: int, iterations: int, out: Path, lossy: str = "off", work_us: float = 0
) -> scalatrace.Trace:
    env = {
        "LD_PRELOAD": str(_paths.collector_library()),
        "SCALATRACE_OUT": str(out),
        "SCALATRACE_QUIET": "1",
        "SCALATRACE_LOSSY": lossy,
    }
    run(exe, n, [str(iterations), str(work_us)], env)
    return scalatrace.load(out)


def sizes(exe: Path, work: Path, ranks: list[int], iterations: list[int]) -> None:
    print(
        "| ranks | iterations | lossless bytes | lossy (on = 32) bytes | lossy (1) bytes | lossless / lossy(1) |"
    )
    print("|---|---|---|---|---|---|")
    checked = False
    for n in ranks:
        for it in iterations:
            t = traced(exe, n, it, work / f"t-{n}-{it}.sct")
            lossless = (work / f"t-{n}-{it}.sct").stat().st_size
            t.to_lossy(32).save(work / f"on-{n}-{it}.sct")
            t.to_lossy(1).save(work / f"one-{n}-{it}.sct")
            on = (work / f"on-{n}-{it}.sct").stat().st_size
            one = (work / f"one-{n}-{it}.sct").stat().st_size
            if not checked:  # the collector's own lossy trace: the same fields, about the same size
                real = traced(exe, n, it, work / "real.sct", lossy="1")
                assert real.lossy_fields == t.to_lossy(1).lossy_fields
                print(
                    f"<!-- collector SCALATRACE_LOSSY=1 at {n} ranks x {it}: "
                    f"{(work / 'real.sct').stat().st_size} bytes -->"
                )
                checked = True
            print(f"| {n} | {it} | {lossless:,} | {on:,} | {one:,} | {lossless / one:.1f}x |")


def memory(exe: Path, work: Path, ranks: list[int], iterations: list[int]) -> None:
    print(
        "\n| ranks | iterations | mode | compressor peak bytes | rank 0 peak RSS MB | trace bytes "
        "| messages (sim) | bytes (sim) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in ranks:
        for it in iterations:
            base = None
            for mode in ("off", "on", "1"):
                out = work / f"m-{n}-{it}-{mode}.sct"
                t = traced(exe, n, it, out, lossy=mode)
                md = t.metadata
                sim = scalatrace.simulate(t, seed=0)
                msgs, nbytes = int(sim.sent_messages.sum()), int(sim.sent_bytes.sum())
                if mode == "off":
                    base = (msgs, nbytes)
                    m_err = b_err = ""
                else:
                    m_err = f" ({100 * (msgs - base[0]) / base[0]:+.2f} %)"
                    b_err = f" ({100 * (nbytes - base[1]) / base[1]:+.2f} %)"
                print(
                    f"| {n} | {it} | {'lossless' if mode == 'off' else 'lossy ' + mode} "
                    f"| {int(md['compressor_peak_bytes']):,} | {int(md['peak_memory_bytes']) / 2**20:.1f} "
                    f"| {out.stat().st_size:,} | {msgs:,}{m_err} | {nbytes:,}{b_err} |",
                    flush=True,
                )


def times(exe: Path, work: Path, repeats: int, work_us: float, iterations: int) -> None:
    t = traced(exe, 2, iterations, work / "time.sct", work_us=work_us)
    lossy_path = work / "time-lossy.sct"
    t.to_lossy(1).save(lossy_path)
    original, lossless, lossless_mean, lossy = [], [], [], []
    for k in range(repeats):
        out = run(exe, 2, [str(iterations), str(work_us)])
        original.append(float(re.search(r"([0-9.]+) s$", out.strip()).group(1)))
        lossless.append(replay(work / "time.sct", timing="spread", seed=k, timeout=120).total_time)
        lossless_mean.append(replay(work / "time.sct", timing="mean", timeout=120).total_time)
        lossy.append(replay(lossy_path, timing="spread", seed=k, timeout=120).total_time)
    o, a, m, b = (statistics.median(x) for x in (original, lossless, lossless_mean, lossy))
    print(
        f"\n2 ranks, {iterations} iterations, work {work_us} us/iteration (+ per KB received), "
        f"medians of {repeats}; load average before: {os.getloadavg()[0]:.1f}"
    )
    print("\n| run | program s | error vs original |")
    print("|---|---|---|")
    print(f"| original (untraced) | {o:.4f} | |")
    print(
        f"| replay, lossless trace (--timing spread, seeds 0..{repeats - 1}) | {a:.4f} | {100 * (a - o) / o:+.1f}% |"
    )
    print(f"| replay, lossless trace (--timing mean) | {m:.4f} | {100 * (m - o) / o:+.1f}% |")
    print(
        f"| replay, lossy trace (threshold 1, --timing spread, seeds 0..{repeats - 1}) | {b:.4f} | "
        f"{100 * (b - o) / o:+.1f}% |"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--iterations", type=int, nargs="+", default=[10, 40, 160])
    p.add_argument(
        "--sizes", action=argparse.BooleanOptionalAction, default=True, help="the size table"
    )
    p.add_argument(
        "--memory", action="store_true", help="the collector's memory, lossless vs lossy"
    )
    p.add_argument("--memory-ranks", type=int, nargs="+", default=[4])
    p.add_argument("--memory-iterations", type=int, nargs="+", default=[300, 3000])
    p.add_argument("--time", action="store_true", help="also measure replay time at 2 ranks")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--work-us", type=float, default=2000)
    p.add_argument("--time-iterations", type=int, default=40)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = compile_program(work)
        print(f"load average before: {os.getloadavg()[0]:.1f}\n")
        if args.sizes:
            sizes(exe, work, args.ranks, args.iterations)
        if args.memory:
            memory(exe, work, args.memory_ranks, args.memory_iterations)
        if args.time:
            times(exe, work, args.repeats, args.work_us, args.time_iterations)


if __name__ == "__main__":
    main()
