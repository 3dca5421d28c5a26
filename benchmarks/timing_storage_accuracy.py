#!/usr/bin/env python3
"""What storing timing compactly costs in accuracy (issue 30): the same recorded runs, written
with exact timing and as a final file keeps it (time codes within 2^-7,
``SCALATRACE_TIMING_BINS`` bins per histogram, with 2 the second bin only where the two differ
by more than a factor of 2), then simulated (and optionally replayed); each prediction against
the measured program time and against the prediction from exact timing.

For each example and repeat, at 2 ranks (no more ranks than cores): the example runs once under
the collector with a raw recording; the measured time is the slowest rank's span from the end
of ``MPI_Init`` to ``MPI_Finalize`` (raw recording). From the raw recording:

* ``exact``: ``scalatrace-harness merge-raw --exact-timing``: every bin, counts and nanoseconds
  exact (the form traces passed between the collector's processes take);
* ``bins-N``: ``scalatrace-harness merge-raw --timing-bins N`` for each N of ``--bins`` (default
  1 2 8; 2 is the collector's default).

Each file is simulated (``scalatrace.simulate``, LogGP from ``scalatrace.calibrate(np=2)``,
``timing="mean"`` and ``timing="sample"`` averaged over 5 seeds) and, with ``--replays K > 0``,
replayed (``scalatrace-replay`` at 2 ranks, its ``total_time_s``, median of K). Errors are
``100 * (predicted - measured) / measured``, medians over the repeats; "vs exact" is
``100 * (predicted - exact's prediction) / exact's prediction``, which does not depend on the
machine's load (the same recorded times, stored two ways).

    python benchmarks/timing_storage_accuracy.py [--examples stencil1d ring ... npb:lu ...]
        [--npb NPB/bin] [--repeats 3] [--replays 3] [--bins 1 2 8] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from replay_timing import program_time_from_raw  # noqa: E402
from report import write_report  # noqa: E402

import scalatrace  # noqa: E402
from scalatrace import _paths  # noqa: E402

EXAMPLES = ["stencil1d", "ring", "pipeline", "stencil2d", "collectives", "nonblocking_coll"]


def run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc.stdout


def replay_time(path: Path, replays: int, work: Path) -> float:
    times = []
    for _ in range(replays):
        report = work / "report.json"
        run(
            [
                _paths.mpiexec(),
                "-n",
                "2",
                str(_paths.tool("scalatrace-replay")),
                str(path),
                "--report",
                str(report),
            ]
        )
        times.append(json.loads(report.read_text())["total_time_s"])
    return statistics.median(times)


def predictions(path: Path, net: scalatrace.LogGP, replays: int, work: Path) -> dict[str, float]:
    t = scalatrace.load(path)
    out = {
        "mean": scalatrace.simulate(t, network=net).total_time,
        "sample": statistics.mean(
            scalatrace.simulate(t, network=net, timing="sample", seed=s).total_time
            for s in range(5)
        ),
        "bytes": path.stat().st_size,
    }
    if replays > 0:
        out["replay"] = replay_time(path, replays, work)
    return out


def case(name: str, args: argparse.Namespace, net: scalatrace.LogGP, work: Path) -> dict:
    if name.startswith("npb:"):  # an NPB 3.4-MPI binary of --npb, class S, default input
        argv = [str(Path(args.npb) / f"{name[4:]}.S.x")]
    else:
        exe = (
            Path(os.environ.get("SCALATRACE_BUILD_DIR", ROOT / "build" / "py")) / "examples" / name
        )
        argv = [str(exe), "-i", str(args.iterations), "-c", str(args.compute_us)]
    harness = str(_paths.tool("scalatrace-harness"))
    errors: dict[str, dict[str, list[float]]] = {}
    sizes: dict[str, list[int]] = {}
    measured = []
    for k in range(args.repeats):
        d = work / f"{name}-{k}"
        d.mkdir()
        raw = d / "raw"
        env = dict(
            os.environ,
            SCALATRACE_OUT=str(d / "t.sct"),
            SCALATRACE_RAW=str(raw),
            SCALATRACE_QUIET="1",
        )
        run(
            [
                _paths.mpiexec(),
                "-genv",
                "LD_PRELOAD",
                str(_paths.collector_library()),
                "-n",
                "2",
                *argv,
            ],
            env=env,
        )
        real = program_time_from_raw(raw)
        measured.append(real)
        files = {"exact": d / "exact.sct"}
        run([harness, "merge-raw", str(raw), "-o", str(files["exact"]), "--exact-timing"])
        for b in args.bins:
            files[f"bins-{b}"] = d / f"bins-{b}.sct"
            run(
                [
                    harness,
                    "merge-raw",
                    str(raw),
                    "-o",
                    str(files[f"bins-{b}"]),
                    "--timing-bins",
                    str(b),
                ]
            )
        exact: dict[str, float] = {}
        for label, path in files.items():
            p = predictions(path, net, args.replays, d)
            sizes.setdefault(label, []).append(int(p.pop("bytes")))
            if label == "exact":
                exact = dict(p)
            for mode, value in p.items():
                errors.setdefault(label, {}).setdefault(mode, []).append(
                    100 * (value - real) / real
                )
                errors[label].setdefault(f"{mode} vs exact", []).append(
                    100 * (value - exact[mode]) / exact[mode]
                )
    return {
        "example": name,
        "measured": statistics.median(measured),
        "errors": {
            lab: {m: statistics.median(v) for m, v in modes.items()}
            for lab, modes in errors.items()
        },
        "bytes": {lab: statistics.median(v) for lab, v in sizes.items()},
    }


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--examples",
        nargs="+",
        default=EXAMPLES,
        help="example programs of the build, or npb:APP for APP.S.x in --npb (e.g. npb:lu)",
    )
    p.add_argument("--npb", default="", help="bin directory of an NPB 3.4-MPI class S build")
    p.add_argument("--bins", type=int, nargs="+", default=[1, 2, 8])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--replays", type=int, default=3)
    p.add_argument("--compute-us", type=int, default=2000)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "timing_storage.md"))
    args = p.parse_args()
    net = scalatrace.calibrate(np=2)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.examples:
            print(f"timing_storage_accuracy: {name}", file=sys.stderr)
            rows.append(case(name, args, net, Path(tmp)))
    labels = ["exact"] + [f"bins-{b}" for b in args.bins]
    modes = ["mean", "sample"] + (["replay"] if args.replays > 0 else [])
    replayed = (
        f"each file replayed {args.replays} times (median)" if args.replays > 0 else "not replayed"
    )
    lines = [
        "# Timing storage and accuracy (issue 30)",
        "",
        f"Command: `python benchmarks/timing_storage_accuracy.py {' '.join(sys.argv[1:])}`",
        "",
        f"2 ranks (no more than the cores), {args.repeats} traced runs per example, {replayed}; "
        f"LogGP from `calibrate(np=2)`: L = {net.L * 1e6:.3f} us, o_s = {net.o_s * 1e6:.3f} us. "
        "Error = 100 x (predicted - measured) / measured; vs exact = 100 x (predicted - the "
        "prediction from exact timing) / that prediction; medians over the runs. exact = every "
        "bin, nanoseconds (`merge-raw --exact-timing`); bins-N = the final file with N bins per "
        "histogram (the collector's default is 2: the second bin only where the two differ by "
        "more than a factor of 2).",
        "",
        "| example | stored as | bytes | "
        + " | ".join(f"{m} error % | {m} vs exact %" for m in modes)
        + " |",
        "|---|---|---:|" + "---:|" * (2 * len(modes)),
    ]
    for r in rows:
        for lab in labels:
            e = r["errors"][lab]
            cells = [f"{e[m]:+.2f} | {e[m + ' vs exact']:+.2f}" for m in modes]
            lines.append(
                f"| {r['example']} ({r['measured']:.4f} s) | {lab} | {r['bytes'][lab]:,.0f} | "
                + " | ".join(cells)
                + " |"
            )
    lines += ["", "Mean absolute values over the examples (percentage points):", ""]
    for lab in labels:
        parts = []
        for m in modes:
            err = statistics.mean(abs(r["errors"][lab][m]) for r in rows)
            dev = statistics.mean(abs(r["errors"][lab][m + " vs exact"]) for r in rows)
            parts.append(f"{m}: error {err:.2f}, vs exact {dev:.2f}")
        lines.append(f"- {lab}: " + "; ".join(parts))
    write_report(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
