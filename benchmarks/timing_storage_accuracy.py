#!/usr/bin/env python3
"""What storing timing compactly costs in accuracy (issue 30): the same recorded runs, written
with exact timing (format version 7: every bin, nanoseconds) and as format version 8 keeps it
(time codes within 2^-7, ``SCALATRACE_TIMING_BINS`` bins per histogram), then simulated and
replayed; each prediction against the measured program time.

For each example and repeat, at 2 ranks (no more ranks than cores): the example runs once under
the collector with a raw recording; the measured time is the slowest rank's span from the end
of ``MPI_Init`` to ``MPI_Finalize`` (raw recording). From the raw recording:

* ``v7``: ``scalatrace-harness merge-raw`` of a build from before format version 8 (commit
  d18e4bc or earlier, ``--v7-harness``): exact timing, 8 bins;
* ``v8-N``: this build's ``scalatrace-harness merge-raw --timing-bins N`` for each N of
  ``--bins`` (default 1 2 8; 2 is the collector's default).

Each file is simulated (``scalatrace.simulate``, LogGP from ``scalatrace.calibrate(np=2)``,
``timing="mean"`` and ``timing="sample"`` averaged over 5 seeds) and replayed
(``scalatrace-replay`` at 2 ranks, its ``total_time_s``, median of ``--replays``). Errors are
``100 * (predicted - measured) / measured``; the table gives medians over the repeats.

    python benchmarks/timing_storage_accuracy.py --v7-harness OLD/build/py/cpp/tools/scalatrace-harness \\
        [--examples stencil1d ring ...] [--repeats 3] [--replays 3] [--out FILE.md]
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
    return {
        "mean": scalatrace.simulate(t, network=net).total_time,
        "sample": statistics.mean(
            scalatrace.simulate(t, network=net, timing="sample", seed=s).total_time
            for s in range(5)
        ),
        "replay": replay_time(path, replays, work),
        "bytes": path.stat().st_size,
    }


def case(name: str, args: argparse.Namespace, net: scalatrace.LogGP, work: Path) -> dict:
    exe = Path(os.environ.get("SCALATRACE_BUILD_DIR", ROOT / "build" / "py")) / "examples" / name
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
        files = {"v7": d / "v7.sct"}
        run([args.v7_harness, "merge-raw", str(raw), "-o", str(files["v7"])])
        for b in args.bins:
            files[f"v8-{b}"] = d / f"v8-{b}.sct"
            run(
                [
                    harness,
                    "merge-raw",
                    str(raw),
                    "-o",
                    str(files[f"v8-{b}"]),
                    "--timing-bins",
                    str(b),
                ]
            )
        for label, path in files.items():
            p = predictions(path, net, args.replays, d)
            sizes.setdefault(label, []).append(int(p.pop("bytes")))
            for mode, value in p.items():
                errors.setdefault(label, {}).setdefault(mode, []).append(
                    100 * (value - real) / real
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
        "--v7-harness", required=True, help="scalatrace-harness of a build before format version 8"
    )
    p.add_argument("--examples", nargs="+", default=EXAMPLES)
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
    labels = ["v7"] + [f"v8-{b}" for b in args.bins]
    lines = [
        "# Timing storage and accuracy (issue 30)",
        "",
        f"Command: `python benchmarks/timing_storage_accuracy.py {' '.join(sys.argv[1:])}`",
        "",
        f"2 ranks (no more than the cores), {args.repeats} traced runs per example, each file replayed "
        f"{args.replays} times (median); LogGP from `calibrate(np=2)`: L = {net.L * 1e6:.3f} us, "
        f"o_s = {net.o_s * 1e6:.3f} us. Error = 100 x (predicted - measured) / measured, median over "
        "the runs. v7 = exact timing (every bin, nanoseconds); v8-N = format version 8 with N bins "
        "per histogram (the collector's default is 2).",
        "",
        "| example | measured s | "
        + " | ".join(
            f"{lab} bytes | {lab} sim mean | {lab} sim sample | {lab} replay" for lab in labels
        )
        + " |",
        "|---|---:|" + "---:|" * (4 * len(labels)),
    ]
    for r in rows:
        cells = []
        for lab in labels:
            e = r["errors"][lab]
            cells += [
                f"{r['bytes'][lab]:,.0f}",
                f"{e['mean']:+.2f}",
                f"{e['sample']:+.2f}",
                f"{e['replay']:+.2f}",
            ]
        lines.append(f"| {r['example']} | {r['measured']:.4f} | " + " | ".join(cells) + " |")
    lines += ["", "Mean absolute error over the examples:", ""]
    for lab in labels:
        parts = []
        for mode in ("mean", "sample", "replay"):
            parts.append(f"{mode} {statistics.mean(abs(r['errors'][lab][mode]) for r in rows):.2f}")
        lines.append(f"- {lab}: " + ", ".join(parts) + " (percentage points)")
    write_report(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
