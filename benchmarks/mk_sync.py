"""MK's synchronous case (issue 35): the optimal grain of a loosely synchronous blocked code.

    python benchmarks/mk_sync.py [--out benchmarks/results/mk_sync.md] [--work DIR]

Program: tests/py/programs/ghost_exchange.c (-O2), ``ghost_exchange N K STEPS``: a 1D Jacobi
stencil over P ranks with ghost zones K cells deep; every K steps one synchronous exchange of K
cells with both neighbours, then K steps that recompute a shrinking part of the ghost zones
(K^2 - K redundant cell updates per exchange), so T ~ STEPS / K x exchange + STEPS x a x K + ...
has its minimum near sqrt(exchange / a). Training (traced, P = 2 on the 2 cores): N in
{256, 512} x K in {2, 4, ..., 128} (K <= N / P), 65536 steps, each point traced ``--traced-repeats``
times in a shuffled order, repeat after repeat (``scalatrace.model`` takes the median of each
measured part). Models: the traced one (``scalatrace.model(traces, params)``) and MK's split with
the machine's ping-pong overheads (``network=scalatrace.calibrate(np=2)``, the median of 3; an
exchange phase costs ``B (W + m + tau)``; with ``--calibrate-during-runs`` the median of one
calibration after each repeat of the untraced runs, which samples the machine's drifting state
as the runs do). ``--serial-cells`` runs the program with SERIAL = 1 (a regular cost per cell:
the cells are updated one after the other, see the program) and ``--cell-work`` sets its WORK.
Held-out: N = 768 at K in {8, 32} (traced and untraced). Best K at ``--best-n``: untraced runs at every K of ``--best-ks``, ``--repeats`` (15) runs
each, repeat after repeat; the measured best K is the lowest median's K and the minimum of
``a + b K + c / K`` fitted to the medians (bootstrap interval), as benchmarks/mk_models.py does
(for this program that curve is the model's own shape). MK's criterion for synchronous codes:
the predicted optimal K within 10 % of the measured one. Runs are kept in ``--work``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mk_models import calibration, load, measured_best, median_loggp  # noqa: E402

import scalatrace  # noqa: E402
from scalatrace._files import write_text  # noqa: E402
from scalatrace._launch import run_collected  # noqa: E402
from scalatrace.models import measure, model, optimal_grain  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "py" / "programs" / "ghost_exchange.c"


class Runs:
    """The program built in ``work`` and its runs, each kept there (a re-run reuses them)."""

    def __init__(
        self, work: Path, steps: int, ranks: int, cell_work: int = 1, serial: bool = False
    ):
        self.work, self.steps, self.ranks = work, steps, ranks
        self.cell_work, self.serial = cell_work, serial
        # Runs of the program's defaults keep the names of earlier sessions' runs.
        self.tag = "" if (cell_work, serial) == (1, False) else f"-w{cell_work}s{int(serial)}"
        self.exe = work / "ghost_exchange"
        if not self.exe.exists() or self.exe.stat().st_mtime < SOURCE.stat().st_mtime:
            cc = shutil.which("mpicc.mpich") or shutil.which("mpicc") or "mpicc"
            subprocess.run([cc, "-O2", str(SOURCE), "-o", str(self.exe)], check=True)

    def argv(self, n: int, k: int) -> list[str]:
        return [
            str(self.exe),
            str(n),
            str(k),
            str(self.steps),
            str(self.cell_work),
            str(int(self.serial)),
        ]

    def traced(self, n: int, k: int, rep: int) -> tuple[scalatrace.Trace, float]:
        out = self.work / f"ge-{n}-{k}-{self.ranks}-t{self.steps}{self.tag}-r{rep}.sct"
        note = out.with_suffix(".elapsed")
        if not (out.exists() and note.exists()):
            _, _, proc = run_collected(self.argv(n, k), self.ranks, out, timeout=600)
            write_text(note, proc.stdout.split()[1])
        return scalatrace.load(out), float(note.read_text())

    def untraced(self, n: int, k: int, rep: int) -> float:
        note = self.work / f"plain-ge-{n}-{k}-{self.ranks}-t{self.steps}{self.tag}-{rep}.elapsed"
        if not note.exists():
            launcher = shutil.which("mpiexec.mpich") or "mpiexec"
            cmd = [launcher, "-n", str(self.ranks), *self.argv(n, k)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
            write_text(note, proc.stdout.split()[1])
        return float(note.read_text())


def calibration_during(work: Path, ranks: int, rep: int) -> scalatrace.LogGP:
    """One ``scalatrace.calibrate`` taken after the untraced runs' repeat ``rep``, kept in ``work``:
    the machine's state drifts over a session, and calibrations spread over the runs sample it
    as the runs do (benchmarks/mk_models.py interleaves its in-situ calibrations the same way)."""
    import dataclasses

    path = work / f"calibration-p{ranks}-after-repeat-{rep}.json"
    if not path.exists():
        write_text(path, json.dumps(dataclasses.asdict(scalatrace.calibrate(np=ranks))))
    return scalatrace.LogGP(**json.loads(path.read_text()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mk_sync.md"))
    ap.add_argument("--work", default=None, help="directory for the runs (default: temporary)")
    ap.add_argument("--steps", type=int, default=65536, help="time steps per run")
    # Not N = 128 by default: the traced computation per exchange grows by 1.7 ns per cell from
    # N = 128 to 256 and by 2.5 ns from 256 to 512 (K = 2, SERIAL 1), which a cost linear in the
    # cells cannot follow; the fit then puts ~70 ns into the exchange's fixed computation, whose
    # square root sets the optimal K (BENCHMARKS.md section 16, "Overhead compensation").
    ap.add_argument("--train-ns", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--train-ks", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64, 128])
    ap.add_argument("--best-n", type=int, default=512)
    ap.add_argument(
        "--best-ks",
        type=int,
        nargs="+",
        default=[2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128],
    )
    ap.add_argument("--repeats", type=int, default=15, help="untraced runs per K at --best-n")
    ap.add_argument("--traced-repeats", type=int, default=5, help="traced runs per point")
    ap.add_argument("--cell-work", type=int, default=1, help="the program's WORK argument")
    ap.add_argument(
        "--calibrate-during-runs",
        action="store_true",
        help="one ping-pong calibration after each repeat of the untraced runs, the machine model "
        "with the median of each parameter (default: 3 calibrations before the runs)",
    )
    ap.add_argument(
        "--serial-cells",
        action="store_true",
        help="the program's SERIAL argument: cells updated one after the other (a regular cost "
        "per cell)",
    )
    args = ap.parse_args()
    ranks = 2
    out_md = Path(args.out)
    work = Path(args.work or tempfile.mkdtemp(prefix="mk_sync_"))
    work.mkdir(parents=True, exist_ok=True)
    runs = Runs(work, args.steps, ranks, args.cell_work, args.serial_cells)
    loads, t0 = [load()], time.time()

    train = [(n, k) for n in args.train_ns for k in args.train_ks if k <= n // ranks]
    order = np.random.default_rng(35).permutation(len(train))
    for rep in range(args.traced_repeats):
        for i in order:
            runs.traced(*train[int(i)], rep)
    traces, params = [], {"N": [], "K": []}
    for n, k in train:
        for rep in range(args.traced_repeats):
            traces.append(runs.traced(n, k, rep)[0])
            params["N"].append(n)
            params["K"].append(k)
    loads.append(load())
    traced_model = model(traces, params)
    loads.append(load())

    held = [(768, 8), (768, 32)]
    held_rows = []
    for n, k in held:
        tr = [runs.traced(n, k, rep) for rep in range(args.traced_repeats)]
        plain = float(np.median([runs.untraced(n, k, rep) for rep in range(args.traced_repeats)]))
        trace_time = float(np.median([measure(t).total for t, _ in tr]))
        held_rows.append((n, k, plain, trace_time))

    ks = [k for k in args.best_ks if k <= args.best_n // ranks]
    by_rep, during = [], []
    for rep in range(args.repeats):
        by_rep.append([runs.untraced(args.best_n, k, rep) for k in ks])
        if args.calibrate_during_runs:
            during.append(calibration_during(work, ranks, rep))
    best = measured_best(ks, np.array(by_rep).T)
    net = median_loggp(during) if during else calibration(work, ranks)
    cal_source = (
        f"median of {len(during)}, one after each repeat of the untraced runs; L from "
        f"{1e9 * min(c.L for c in during):.0f} to {1e9 * max(c.L for c in during):.0f} ns"
        if during
        else "median of 3, before the untraced runs"
    )
    machine_model = model(traces, params, network=net)
    loads.append(load())
    lo, hi = min(ks), max(ks)
    opt = {
        "traced model": optimal_grain(traced_model, "K", lo=lo, hi=hi, N=args.best_n, P=ranks),
        "machine model (ping-pong)": optimal_grain(
            machine_model, "K", lo=lo, hi=hi, N=args.best_n, P=ranks
        ),
    }
    wall = time.time() - t0

    def err(k: float, ref: float) -> str:
        return f"{100 * (k - ref) / ref:+.0f} %" if np.isfinite(ref) else "-"

    lines = [
        "# MK's synchronous case: ghost-zone depth of a loosely synchronous stencil (issue 35)",
        "",
        f"Command: `python benchmarks/mk_sync.py {' '.join(sys.argv[1:])}`; load average (1 min) "
        f"during the run: {', '.join(loads)}; {wall:.0f} s; P = {ranks}, {args.steps} steps.",
        "",
        f"Training: {len(train)} points (N in {args.train_ns}, K in {args.train_ks}, K <= N / P), "
        f"each traced {args.traced_repeats} times.",
        "",
        "Traced model (s):",
        "",
        "```",
        str(traced_model.expression),
        "```",
        "",
        f"Machine (`calibrate(np={ranks})`, {cal_source}): L = {1e9 * net.L:.0f} ns, o_s = "
        f"{1e9 * net.o_s:.0f} ns, o_r = {1e9 * net.o_r:.0f} ns. Model with the machine (s):",
        "",
        "```",
        str(machine_model.expression),
        "```",
        "",
        "Phases (machine model):",
        "",
        machine_model.phases.to_markdown(index=False)
        if hasattr(machine_model.phases, "to_markdown") and _has_tabulate()
        else machine_model.phases.to_string(index=False),
        "",
        "Held-out points (never fitted): the machine model against the untraced program, the "
        "traced model against the trace time:",
        "",
        "| N | K | untraced s | machine model s | error | trace time s | traced model s | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    held_err = []
    for n, k, plain, trace_time in held_rows:
        pm = float(machine_model.predict(N=n, K=k, P=ranks))
        pt = float(traced_model.predict(N=n, K=k, P=ranks))
        held_err.append(((pm - plain) / plain, (pt - trace_time) / trace_time))
        lines.append(
            f"| {n} | {k} | {plain:.5f} | {pm:.5f} | {100 * (pm - plain) / plain:+.1f} % | "
            f"{trace_time:.5f} | {pt:.5f} | {100 * (pt - trace_time) / trace_time:+.1f} % |"
        )
    medians = ", ".join(f"{k}: {v:.5f}" for k, v in zip(ks, best["medians"]))
    lines += [
        "",
        f"Optimal K at N = {args.best_n} (untraced, {args.repeats} runs per K, medians: "
        f"{medians}): lowest median at K = {best['argmin']}, fitted minimum "
        f"{best['fitted']:.3g} [{best['lo']:.3g}, {best['hi']:.3g}].",
        "",
        "| model | optimal K | vs lowest median | vs fitted minimum (MK: within 10 %) |",
        "|---|---|---|---|",
    ]
    for name, k in opt.items():
        lines.append(f"| {name} | {k:.3g} | {err(k, best['argmin'])} | {err(k, best['fitted'])} |")
    lines.append("")
    write_text(out_md, "\n".join(lines))
    summary = {
        "loads": loads,
        "wall_s": wall,
        "optima": opt,
        "best": best,
        "held": held_rows,
        "held_error": held_err,
        "network": {f: float(getattr(net, f)) for f in ("L", "o_s", "o_r", "g", "G", "O")},
        "traced_expression": str(traced_model.expression),
        "machine_expression": str(machine_model.expression),
    }
    write_text(out_md.with_suffix(".json"), json.dumps(summary, indent=1))
    print("\n".join(lines))


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
