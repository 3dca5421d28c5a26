"""How much a traced run's recorded per-message cost exceeds the untraced program's (issue 35).

    python benchmarks/collector_distortion.py [--repeats 30] [--sweeps 64] [--ns 256 512 1024]
                                              [--collector LABEL=PATH ...]
                                              [--variant 'LABEL=VAR=VALUE VAR=VALUE' ...]
                                              [--out FILE.md]

The blocked pipeline (tests/py/programs/blocked_pipeline.c) at 2 ranks, K = 2 (the smallest
block: the per-message cost is the largest part of a stage), N in ``--ns``. Per repeat and N,
one untraced run and one traced run per collector, back to back (paired: a slow spell of the
machine touches both). Untraced stage time: the program's elapsed time / (sweeps x (N / K + 1))
(the sweep's blocks plus its fill; the Allreduce's share, ~30-50 ns here, is in it too). Traced
stage time: what ``scalatrace.model`` fits, the one-way shift's time per occurrence from the
trace (``scalatrace.models.measure``), the collector's own time already left out. Their
difference is what the trace still carries of the collector per message: it is what moves the
model's optimal block size above the untraced program's (the optimum goes as the square root of
the per-message cost). Time it under the timing lock at SCHED_FIFO on a shared machine.

``--variant`` runs the installed collector (or the first ``--collector``) with extra environment
settings, e.g. ``--variant 'raw=SCALATRACE_OUT=none'`` (compressor off: the raw stream is
written and compressed afterwards for the measurement) or ``--variant
'walk=SCALATRACE_STACK_MEMO=0'``. Each collector or variant also reports the collector's own
time per event after its calls (metadata ``collector_ns`` / ``events``, rank 0), the time left
out of the trace: how the excess grows with it tells the tool's footprint from a floor.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import scalatrace
from scalatrace._files import write_text
from scalatrace._paths import collector_library
from scalatrace.models import measure

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "py" / "programs" / "blocked_pipeline.c"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--sweeps", type=int, default=64)
    ap.add_argument("--ns", type=int, nargs="+", default=[256, 512, 1024])
    ap.add_argument(
        "--collector",
        action="append",
        default=[],
        help="LABEL=PATH of a libscalatrace.so to compare (default: the installed one); PATH"
        " 'none': a second untraced run in that place (the pairing's own bias)",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="'LABEL=VAR=VALUE VAR=VALUE': the collector with these environment settings",
    )
    ap.add_argument("--out", default=None, help="markdown file for the table")
    args = ap.parse_args()
    libs = dict(c.split("=", 1) for c in args.collector) or {"installed": str(collector_library())}
    runs: dict[str, tuple[str, dict[str, str]]] = {label: (lib, {}) for label, lib in libs.items()}
    if args.variant and not args.collector:
        runs = {}
    base = next(iter(libs.values()))
    for v in args.variant:
        label, _, settings = v.partition("=")
        runs[label] = (base, dict(kv.split("=", 1) for kv in settings.split()))
    mpicc = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    mpiexec = shutil.which("mpiexec.mpich") or "mpiexec"
    if mpicc is None:
        sys.exit("mpicc (MPICH) not found")
    work = Path(tempfile.mkdtemp(prefix="distortion_"))
    exe = work / "blocked_pipeline"
    subprocess.run([mpicc, "-O2", str(PROGRAM), "-o", str(exe)], check=True)
    k, s = 2, args.sweeps
    rows: dict[int, list[list[float]]] = {n: [] for n in args.ns}
    for rep in range(args.repeats):
        for n in args.ns:
            argv = [str(exe), str(n), str(k), str(s), "1"]
            plain = subprocess.run(
                [mpiexec, "-n", "2", *argv], capture_output=True, text=True, check=True
            )
            row = [float(plain.stdout.split()[1]) / (s * (-(-n // k) + 1)) * 1e9]
            # The collectors run in turn, in reverse order every other repeat (no position bias).
            order = list(runs.items()) if rep % 2 == 0 else list(runs.items())[::-1]
            got = {
                label: traced_stage(mpiexec, argv, lib, env, work, s * (-(-n // k) + 1))
                for label, (lib, env) in order
            }
            for label in runs:
                row += got[label]
            rows[n].append(row)
    head = "| N | untraced stage ns | " + " | ".join(
        f"{label}: traced stage ns | {label}: traced - untraced, median [25 %, 75 %] of pairs"
        f" | {label}: collector ns per event | {label}: elapsed per stage - untraced"
        for label in runs
    )
    lines = [head + " |", "|---|---:|" + "---:|---:|---:|---:|" * len(runs)]
    for n, rs in rows.items():
        v = np.array(rs)
        cells = [f"{n}", f"{np.median(v[:, 0]):.0f}"]
        for j in range(len(runs)):
            d = v[:, 1 + 3 * j] - v[:, 0]
            q1, q3 = np.percentile(d, [25, 75])
            slow = v[:, 3 + 3 * j] - v[:, 0]
            cells += [
                f"{np.median(v[:, 1 + 3 * j]):.0f}",
                f"{np.median(d):+.0f} [{q1:+.0f}, {q3:+.0f}]",
                f"{np.median(v[:, 2 + 3 * j]):.0f}",
                f"{np.median(slow):+.0f}",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    labels = list(runs)
    if len(labels) > 1:  # each collector against the first, pair by pair (the least noisy view)
        lines += [
            "",
            "| N | "
            + " | ".join(
                f"{x} - {labels[0]}: traced stage, median [25 %, 75 %]" for x in labels[1:]
            )
            + " |",
        ]
        lines.append("|---|" + "---:|" * (len(labels) - 1))
        for n, rs in rows.items():
            v = np.array(rs)
            cells = [f"{n}"]
            for j in range(1, len(labels)):
                d = v[:, 1 + 3 * j] - v[:, 1]
                q1, q3 = np.nanpercentile(d, [25, 75])
                cells.append(f"{np.nanmedian(d):+.0f} [{q1:+.0f}, {q3:+.0f}]")
            lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_text(Path(args.out), text + "\n")


def traced_stage(
    mpiexec: str, argv: list[str], lib: str, env: dict[str, str], work: Path, stages: int
) -> list[float]:
    """One traced run: its stage time (ns, as the model measures it; NaN if the trace has no
    pipeline phase), the collector's own time per event on rank 0 (ns, left out of the trace)
    and the traced program's elapsed time per stage (ns, as the untraced one's)."""
    if lib == "none":  # an untraced run in a collector's place: the pairing's own bias
        run = subprocess.run(
            [mpiexec, "-n", "2", *argv], capture_output=True, text=True, check=True
        )
        return [float("nan"), float("nan"), float(run.stdout.split()[1]) / stages * 1e9]
    out, raw = work / "t.sct", work / "raw"
    settings = {"SCALATRACE_OUT": str(out), **env}
    raw_only = settings["SCALATRACE_OUT"] in ("none", "off")
    if raw_only:
        shutil.rmtree(raw, ignore_errors=True)
        settings["SCALATRACE_RAW"] = str(raw)
    run = subprocess.run(
        [
            mpiexec,
            "-n",
            "2",
            "env",
            f"LD_PRELOAD={lib}",
            *(f"{k}={v}" for k, v in settings.items()),
            *argv,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = float(run.stdout.split()[1]) / stages * 1e9
    if raw_only:
        recording = scalatrace.read_raw(raw)
        meta, trace = recording.metadata, recording.compress()
    else:
        trace = scalatrace.load(out)
        meta = trace.metadata
    own = float(meta.get("collector_ns", "nan")) / max(1.0, float(meta.get("events", "1")))
    phases = measure(trace).phases
    stage = phases[1].per_occurrence * 1e9 if len(phases) > 1 else float("nan")
    return [stage, own, elapsed]


if __name__ == "__main__":
    main()
