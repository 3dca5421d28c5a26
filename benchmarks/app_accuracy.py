#!/usr/bin/env python3
"""Simulator accuracy on real applications (issue 34, part 1): NPB 3.4-MPI class S and LULESH,
traced at a calm size, simulated with calibrated LogGP parameters, compared with the real run.

    python benchmarks/app_accuracy.py [--npb /work/apps/npb-nostats/bin] [--codes lu,cg,mg,ft,is,ep]
        [--ranks 2] [--lulesh /work/apps/lulesh/lulesh2.0] [--lulesh-ranks 1]
        [--lulesh-args "-s 8 -i 20"] [--repeats 5] [--seeds 5] [--untraced-repeats 3] [--out FILE]

For each application and repeat: untraced runs, whose span (slowest rank, MPI_Init's return to
MPI_Finalize's entry) the ``mpi_span.c`` shim measures without the collector, then two traced
runs (merged trace and raw recording): one with ``SCALATRACE_OWN_TIME=compute``, whose trace
keeps the collector's own time in the compute times, so that the prediction is of exactly the
run measured (real = that run's span from its raw recording, compute plus call durations); and
one with the default trace (the collector's time left out), whose prediction is of the program
untraced and is compared with the untraced runs, and, as earlier pages did, with its own run
(whose waits still hold the other ranks' collector time). Predictions: LogGP parameters from
``scalatrace.calibrate(np=2)`` (``timing="mean"``, and ``timing="sample"`` averaged over seeds),
the one-line fit, SimGrid SMPI replay of the same trace's export when ``smpirun`` is present.
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
from simulator_bench import error_range, percent_errors, smpi_time, traced_run  # noqa: E402

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


def predict(
    trace_path: Path, net: scalatrace.LogGP, one_line: scalatrace.LogGP, args: argparse.Namespace
) -> dict:
    """The predictions of one trace: calibrated LogGP (``timing="mean"``, and ``"sample"``
    averaged over the seeds), the one-line fit, SMPI's replay of its export (None without it)."""
    t = scalatrace.load(trace_path)
    r = scalatrace.simulate(t, network=net)
    return {
        "sim": r.total_time,
        "compute_share": float(r.compute.sum()) / max(1e-12, float(r.end_time.sum())),
        "line": scalatrace.simulate(t, network=one_line).total_time,
        "sampled": statistics.mean(
            scalatrace.simulate(t, network=net, timing="sample", seed=s).total_time
            for s in range(args.seeds)
        ),
        "smpi": None if args.no_smpi else smpi_time(t, net, trace_path.parent),
    }


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
    """Per repeat: the untraced runs, a traced run with the collector's own time kept in its
    trace (SCALATRACE_OWN_TIME=compute) and one with the default trace (left out)."""
    untraced: list[float] = []
    real = {"compute": [], "out": []}
    pred: dict[str, list[dict]] = {"compute": [], "out": []}
    for k in range(args.repeats):
        for u in range(args.untraced_repeats):
            untraced.append(
                untraced_span(
                    argv, nranks, span_lib, work / f"{name}-{nranks}-{k}-untraced-{u}", args.timeout
                )
            )
        for own_time in ("compute", "out"):
            trace_path, raw = traced_run(
                argv, nranks, work / f"{name}-{nranks}-{k}-{own_time}", args.timeout, own_time
            )
            real[own_time].append(program_time_from_raw(raw))
            pred[own_time].append(predict(trace_path, net, one_line, args))

    def column(own_time: str, key: str) -> list[float]:
        return [p[key] for p in pred[own_time]]

    out: dict = {"app": name, "ranks": nranks}
    for own_time in ("compute", "out"):
        sim, r = column(own_time, "sim"), real[own_time]
        out[own_time] = {
            "real": statistics.median(r),
            "sim": statistics.median(sim),
            "errs": percent_errors(sim, r),
            "sample_errs": percent_errors(column(own_time, "sampled"), r),
            "line_errs": percent_errors(column(own_time, "line"), r),
            "compute_share": statistics.median(column(own_time, "compute_share")),
        }
        smpi = column(own_time, "smpi")
        if all(s is not None for s in smpi):
            out[own_time]["smpi_errs"] = percent_errors(smpi, r)
            out[own_time]["smpi"] = statistics.median(smpi)
    # Against the untraced runs: the medians' ratio (the traced and the untraced runs vary
    # independently, run by run); the range is that of each prediction against the median.
    u = statistics.median(untraced)
    out["untraced"] = u
    out["untraced_range"] = (min(untraced), max(untraced))
    out["untraced_errs"] = [100 * (s - u) / u for s in column("out", "sim")]
    out["untraced_err"] = 100 * (out["out"]["sim"] - u) / u
    if "smpi" in out["out"]:
        out["smpi_untraced_err"] = 100 * (out["out"]["smpi"] - u) / u
    return out


def median_and_range(errs: list[float] | None) -> str:
    """``median% | min .. max%`` of a list of errors, ``n/a | n/a`` without one."""
    if not errs:
        return "n/a | n/a"
    return f"{statistics.median(errs):+.1f}% | {error_range(errs)}"


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
        f"Each of {args.repeats} repeats: {args.untraced_repeats} untraced runs, a traced run "
        "whose trace keeps the collector's own time in its compute times "
        "(`SCALATRACE_OWN_TIME=compute`) and one with the default trace (left out). Real = "
        "slowest rank, end of MPI_Init to MPI_Finalize, in the raw recording of the same traced "
        "run; medians of the repeats, the range beside.",
        "",
        "**1. The traced run, every nanosecond of it in its trace** (the collector's time as "
        "compute: the prediction of exactly the run that was measured):",
        "",
        "| app | ranks | real (s) | simulated (s) | error | range | sample error | sample range "
        "| SMPI error | SMPI range | compute share | one-line fit error |",
        "|---|---:|---:|---:|---:|---|---:|---|---:|---|---:|---:|",
    ]
    for r in rows:
        c = r["compute"]
        lines.append(
            f"| {r['app']} | {r['ranks']} | {c['real']:.4f} | {c['sim']:.4f} | "
            f"{median_and_range(c['errs'])} | {median_and_range(c['sample_errs'])} | "
            f"{median_and_range(c.get('smpi_errs'))} | {100 * c['compute_share']:.1f}% | "
            f"{statistics.median(c['line_errs']):+.1f}% |"
        )
    lines += [
        "",
        "**2. The program untraced** (the default trace's prediction, the collector's time left "
        "out, against the untraced runs' median: the mpi_span shim, the same span):",
        "",
        "| app | ranks | untraced (s) | untraced range | simulated (s) | error | range "
        "| SMPI error |",
        "|---|---:|---:|---|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['app']} | {r['ranks']} | {r['untraced']:.4f} | {r['untraced_range'][0]:.4f} .. "
            f"{r['untraced_range'][1]:.4f} | {r['out']['sim']:.4f} | {r['untraced_err']:+.1f}% | "
            f"{error_range(r['untraced_errs'])} | "
            + (f"{r['smpi_untraced_err']:+.1f}% |" if "smpi_untraced_err" in r else "n/a |")
        )
    lines += [
        "",
        "**3. The default trace against its own traced run** (earlier pages' comparison: the "
        "run's waits hold the other ranks' collector time, which this trace leaves out):",
        "",
        "| app | ranks | real (s) | simulated (s) | error | range | SMPI error | SMPI range |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for r in rows:
        o = r["out"]
        lines.append(
            f"| {r['app']} | {r['ranks']} | {o['real']:.4f} | {o['sim']:.4f} | "
            f"{median_and_range(o['errs'])} | {median_and_range(o.get('smpi_errs'))} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        write_text(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
