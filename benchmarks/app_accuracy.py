#!/usr/bin/env python3
"""Simulator accuracy on real applications (issue 34, part 1): NPB 3.4-MPI class S and LULESH,
traced at a calm size, simulated with calibrated LogGP parameters, compared with the real run.

    python benchmarks/app_accuracy.py [--npb /work/apps/npb-nostats/bin] [--codes lu,cg,mg,ft,is,ep]
        [--ranks 2] [--lulesh /work/apps/lulesh/lulesh2.0] [--lulesh-ranks 1]
        [--lulesh-args "-s 8 -i 20"] [--repeats 5] [--seeds 5] [--untraced-repeats 3] [--out FILE]

For each application and repeat: one traced run (merged trace and raw recording), the real time
= slowest rank from the end of MPI_Init to MPI_Finalize in the raw recording (compute plus call
durations, as the simulator predicts it); untraced runs with the same span measured by the
``mpi_span.c`` shim (no collector: the program as it runs without the tool, which is what the
simulator predicts, since the trace leaves out the collector's own time); the simulated time of
the merged trace with LogGP parameters from ``scalatrace.calibrate(np=2)`` (``timing="mean"``,
and ``timing="sample"`` averaged over seeds); SimGrid SMPI replay of the same trace's export when ``smpirun`` is present.
Medians over the repeats, with the range. Accuracy figures mean something only with no more ranks
than cores on an idle machine: the script prints the load average before and after.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import scalatrace
from scalatrace._files import write_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mpi_span import build_shim, reported_span  # noqa: E402
from replay_timing import program_time_from_raw  # noqa: E402
from simulator_bench import error_range, smpi_time, traced_run  # noqa: E402

from scalatrace import _paths  # noqa: E402
from scalatrace.simulate import _fit_loggp, _run_calibration  # noqa: E402


def untraced_span(
    argv: list[str], nranks: int, span_lib: Path, case: Path, timeout: float
) -> float:
    """The program's span without the collector: slowest rank, MPI_Init's return to
    MPI_Finalize's entry, as the ``mpi_span`` shim prints it."""
    case.mkdir(parents=True)
    proc = subprocess.run(
        [_paths.mpiexec(), "-genv", "LD_PRELOAD", str(span_lib), "-n", str(nranks), *argv],
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
        cwd=case,
    )
    span = reported_span(proc.stderr)
    if span is None:
        raise RuntimeError(f"{argv[0]}: the mpi_span shim printed no span: {proc.stderr[-500:]}")
    return span


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(
    name: str,
    argv: list[str],
    nranks: int,
    net: scalatrace.LogGP,
    args: argparse.Namespace,
    work: Path,
    one_line: scalatrace.LogGP,
    span_lib: Path,
) -> dict:
    real, sim, sampled, smpi, sim_line, untraced = [], [], [], [], [], []
    compute_share = []
    for k in range(args.repeats):
        for u in range(args.untraced_repeats):
            untraced.append(
                untraced_span(
                    argv, nranks, span_lib, work / f"{name}-{nranks}-{k}-untraced-{u}", args.timeout
                )
            )
        trace_path, raw = traced_run(argv, nranks, work / f"{name}-{nranks}-{k}", args.timeout)
        real.append(program_time_from_raw(raw))
        t = scalatrace.load(trace_path)
        r = scalatrace.simulate(t, network=net)
        sim.append(r.total_time)
        sim_line.append(scalatrace.simulate(t, network=one_line).total_time)
        compute_share.append(float(r.compute.sum()) / max(1e-12, float(r.end_time.sum())))
        sampled.append(
            statistics.mean(
                scalatrace.simulate(t, network=net, timing="sample", seed=s).total_time
                for s in range(args.seeds)
            )
        )
        s = smpi_time(t, net, trace_path.parent) if not args.no_smpi else None
        if s is not None:
            smpi.append(s)
    errs = [100 * (s - r) / r for s, r in zip(sim, real)]
    # Against the untraced runs: the medians' ratio (the traced and the untraced runs vary
    # independently, run by run); the range is that of each prediction against the median.
    untraced_median = statistics.median(untraced)
    untraced_errs = [100 * (s - untraced_median) / untraced_median for s in sim]
    sample_errs = [100 * (s - r) / r for s, r in zip(sampled, real)]
    out = {
        "app": name,
        "ranks": nranks,
        "real": statistics.median(real),
        "sim": statistics.median(sim),
        "err": statistics.median(errs),
        "errs": errs,
        "sample_err": statistics.median(sample_errs),
        "sample_errs": sample_errs,
        "compute_share": statistics.median(compute_share),
        "line_err": statistics.median(100 * (s - r) / r for s, r in zip(sim_line, real)),
        "untraced": untraced_median,
        "untraced_range": (min(untraced), max(untraced)),
        "untraced_err": 100 * (statistics.median(sim) - untraced_median) / untraced_median,
        "untraced_errs": untraced_errs,
    }
    if smpi and len(smpi) == len(real):
        smpi_errs = [100 * (s - r) / r for s, r in zip(smpi, real)]
        out["smpi_err"] = statistics.median(smpi_errs)
        out["smpi_errs"] = smpi_errs
        out["smpi_untraced_err"] = (
            100 * (statistics.median(smpi) - untraced_median) / untraced_median
        )
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--npb", type=Path, default=Path("/work/apps/npb-nostats/bin"))
    p.add_argument("--codes", default="lu,cg,mg,ft,is,ep")
    p.add_argument("--npb-class", default="S")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--lulesh", type=Path, default=Path("/work/apps/lulesh/lulesh2.0"))
    p.add_argument("--lulesh-ranks", default="1")
    p.add_argument("--lulesh-args", default="-s 8 -i 20")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument(
        "--untraced-repeats", type=int, default=3, help="untraced runs before each traced one"
    )
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--no-smpi", action="store_true")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.untraced_repeats < 1 or args.repeats < 1:
        p.error("--repeats and --untraced-repeats must be at least 1")

    cases: list[tuple[str, list[str], int]] = []
    for code in [c for c in args.codes.split(",") if c]:
        exe = args.npb / f"{code}.{args.npb_class}.x"
        if not exe.is_file():
            raise SystemExit(f"{exe}: not found (build NPB, see /work/apps/README.txt)")
        cases.append((code.upper(), [str(exe)], args.ranks))
    if args.lulesh and args.lulesh.is_file():
        for n in [int(x) for x in args.lulesh_ranks.split(",") if x]:
            cases.append(("LULESH", [str(args.lulesh), *shlex.split(args.lulesh_args)], n))

    load_before = load_average()
    # One calibration run, two fits: the protocol switch found (calibrate()'s default) and the
    # one line through every size up to 64 KiB of earlier versions (calibrate(eager_threshold=
    # 65536)), compared on the same traces.
    doc = _run_calibration(2, 200, 1 << 20, [], 300.0)
    net, one_line = _fit_loggp(doc, None), _fit_loggp(doc, 65536.0)
    rows = []
    with tempfile.TemporaryDirectory(prefix="appacc-") as tmp:
        span_lib = build_shim(Path(tmp))
        for name, argv, n in cases:
            r = measure(name, argv, n, net, args, Path(tmp), one_line, span_lib)
            print(r, flush=True)
            rows.append(r)
    load_after = load_average()

    lines = [
        "## Simulator accuracy on real applications",
        "",
        f"Command: `python benchmarks/app_accuracy.py {' '.join(sys.argv[1:])}`. "
        f"Load average (1/5/15 min) before: {load_before}; after: {load_after}. "
        f"Calibration (`scalatrace.calibrate(np=2)`): L = {net.L * 1e6:.3f} us, "
        f"o_s = {net.o_s * 1e6:.3f} us, o_r = {net.o_r * 1e6:.3f} us, g = {net.g * 1e6:.3f} us, "
        f"G = {net.G * 1e9:.4f} ns/B, O = {net.O * 1e9:.4f} ns/B, R = {net.R * 1e6:.3f} us, "
        f"eager threshold {net.eager_threshold} B (the one-line fit of the same run: "
        f"L = {one_line.L * 1e6:.3f} us, G = {one_line.G * 1e9:.4f} ns/B, eager 65,536 B). "
        "Real = slowest rank, end of MPI_Init to MPI_Finalize, in the "
        f"raw recording of each traced run; medians of {args.repeats} runs (range beside). "
        f"Untraced = the same span of {args.untraced_repeats} untraced runs before each traced "
        "one (the mpi_span shim: the program without the collector, whose own time the trace "
        "leaves out but which other ranks' waits in a traced run still hold); error vs untraced "
        "= the median prediction against the untraced runs' median, range = each prediction "
        "against that median.",
        "",
        "| app | ranks | real (s) | simulated (s) | error | range | sample error | sample range "
        "| SMPI error | SMPI range | compute share | one-line fit error | untraced (s) | untraced range "
        "| error vs untraced | range | SMPI vs untraced |",
        "|---|---:|---:|---:|---:|---|---:|---|---:|---|---:|---:|---:|---|---:|---|---:|",
    ]
    for r in rows:
        smpi = (
            f"{r['smpi_err']:+.1f}% | {error_range(r['smpi_errs'])}"
            if "smpi_err" in r
            else "n/a | n/a"
        )
        lines.append(
            f"| {r['app']} | {r['ranks']} | {r['real']:.4f} | {r['sim']:.4f} | {r['err']:+.1f}% | "
            f"{error_range(r['errs'])} | {r['sample_err']:+.1f}% | {error_range(r['sample_errs'])} | "
            f"{smpi} | {100 * r['compute_share']:.1f}% | {r['line_err']:+.1f}% | "
            f"{r['untraced']:.4f} | {r['untraced_range'][0]:.4f} .. {r['untraced_range'][1]:.4f} | "
            f"{r['untraced_err']:+.1f}% | {error_range(r['untraced_errs'])} | "
            + (f"{r['smpi_untraced_err']:+.1f}% |" if "smpi_untraced_err" in r else "n/a |")
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        write_text(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
