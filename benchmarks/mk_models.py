"""MK-style closed-form models (issue 35): a blocked pipeline traced at several N, P, K, its
model T(N, P, K) from the traces, predicted vs measured at held-out points, and the optimal
block size it predicts vs the measured best one.

    python benchmarks/mk_models.py [--out benchmarks/results/mk_models.md] [--quick]
                                   [--extrap]

Program: tests/py/programs/blocked_pipeline.c (-O2), ``blocked_pipeline N K SWEEPS WORK`` (4
sweeps, 16 multiply-adds per cell).
Training runs (traced): N in {512, 1024, 2048}, K in {4, 16, 64, 256}, P in {2, 3, 4}.
Held-out runs (traced, never fitted): N = 1536 with K in {8, 32, 128} at every P, and N = 4096
with K in {16, 64} at P = 2. Measured time of a run: the slowest rank's time from MPI_Init to
MPI_Finalize in its trace (what the model is fitted to), and the program's own elapsed time
(rank 0, Barrier to the last Allreduce; printed). Best K: untraced runs of K in {2, ..., 1024}
at N = 2048 (3 repeats, the median), against ``optimal_grain`` of the model.
P = 2 runs on the 2 cores; P = 3 and 4 are oversubscribed (MPICH busy-polls: every message
costs a scheduler time slice), reported beside them. With ``--extrap`` Extra-P is installed
into a scratch venv (``pip install extrap``; never a dependency of scalatrace) and fitted on
the same training points (its multi-parameter modeler on the run time), scored on the same
held-out points.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

import scalatrace
from scalatrace._launch import run_collected
from scalatrace.extrapolate import smape
from scalatrace.models import measure, model, optimal_grain

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "py" / "programs" / "blocked_pipeline.c"
SWEEPS = 4
WORK = 16  # multiply-adds per cell: a block's computation well above a message's cost


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def compile_program(work: Path) -> Path:
    mpicc = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    if mpicc is None:
        sys.exit("mpicc (MPICH) not found")
    exe = work / "blocked_pipeline"
    subprocess.run([mpicc, "-O2", str(PROGRAM), "-o", str(exe)], check=True)
    return exe


def traced_run(exe: Path, work: Path, n: int, k: int, p: int) -> tuple[scalatrace.Trace, float]:
    out = work / f"bp-{n}-{k}-{p}.sct"
    stamp = out.with_suffix(".elapsed")
    if not (out.exists() and stamp.exists()):  # runs are kept in --work: a re-run reuses them
        _, _, proc = run_collected(
            [str(exe), str(n), str(k), str(SWEEPS), str(WORK)], p, out, timeout=600
        )
        stamp.write_text(proc.stdout.split()[1])
    return scalatrace.load(out), float(stamp.read_text())


def plain_run(exe: Path, n: int, k: int, p: int, repeat: int) -> float:
    stamp = exe.parent / f"plain-{n}-{k}-{p}-{repeat}.elapsed"
    if stamp.exists():
        return float(stamp.read_text())
    mpiexec = shutil.which("mpiexec.mpich") or "mpiexec"
    proc = subprocess.run(
        [mpiexec, "-n", str(p), str(exe), str(n), str(k), str(SWEEPS), str(WORK)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    stamp.write_text(proc.stdout.split()[1])
    return float(proc.stdout.split()[1])


EXTRAP_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from extrap.entities.coordinate import Coordinate
    from extrap.entities.measurement import Measurement
    from extrap.entities.parameter import Parameter
    from extrap.entities.callpath import Callpath
    from extrap.entities.metric import Metric
    from extrap.entities.experiment import Experiment
    from extrap.modelers.model_generator import ModelGenerator
    job = json.load(sys.stdin)
    exp = Experiment()
    names = job["names"]
    for n in names:
        exp.add_parameter(Parameter(n))
    cp, me = Callpath("main"), Metric("time")
    exp.add_callpath(cp); exp.add_metric(me)
    for pt, y in zip(job["points"], job["ys"]):
        c = Coordinate(*pt)
        if c not in exp.coordinates:
            exp.add_coordinate(c)
        exp.add_measurement(Measurement(c, cp, me, [y]))
    gen = ModelGenerator(exp)
    gen.model_all()
    m = gen.models[(cp, me)]
    f = m.hypothesis.function
    pred = [float(f.evaluate(list(p))) for p in job["test"]]
    print(json.dumps({"formula": f.to_string(*exp.parameters), "train": [float(f.evaluate(list(p))) for p in job["points"]], "test": pred}))
    """
)


def extrap_fit(
    work: Path,
    names: list[str],
    points: list[list[float]],
    ys: list[float],
    test: list[list[float]],
) -> dict | None:
    venv = work / "extrap-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        r = subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "extrap"], capture_output=True, text=True
        )
        if r.returncode != 0:
            print("extrap install failed:", r.stderr[-500:], file=sys.stderr)
            return None
    r = subprocess.run(
        [str(py), "-c", EXTRAP_SCRIPT],
        input=json.dumps({"names": names, "points": points, "ys": ys, "test": test}),
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        print("extrap failed:", r.stderr[-1500:], file=sys.stderr)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def markdown_table(df) -> str:
    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mk_models.md"))
    ap.add_argument("--quick", action="store_true", help="fewer points (a smoke run)")
    ap.add_argument("--extrap", action="store_true", help="also fit Extra-P (scratch venv)")
    ap.add_argument("--work", default=None, help="directory for traces (default: temporary)")
    ap.add_argument(
        "--ranks",
        type=int,
        nargs="+",
        default=None,
        help="rank counts P to train, hold out and search K at (default 2 3 4; e.g. 2 for calm "
        "runs on a 2-core machine, where more ranks than cores oversubscribe)",
    )
    args = ap.parse_args()
    out_md = Path(args.out)
    fig_dir = out_md.parent
    work = Path(args.work or tempfile.mkdtemp(prefix="mk_models_"))
    work.mkdir(parents=True, exist_ok=True)
    exe = (
        work / "blocked_pipeline" if (work / "blocked_pipeline").exists() else compile_program(work)
    )
    if args.quick:
        ns, ks, ps = [256, 512, 1024], [4, 16, 64], [2, 3]
        held = [(768, 8, 2), (768, 32, 3), (2048, 16, 2)]
        best_ks, best_n, best_ps, repeats = [2, 4, 8, 16, 32, 64, 128, 256], 1024, [2], 1
    else:
        ns, ks, ps = [512, 1024, 2048], [4, 16, 64, 256], [2, 3, 4]
        held = [(1536, k, p) for k in (8, 32, 128) for p in ps] + [(4096, 16, 2), (4096, 64, 2)]
        best_ks, best_n, best_ps, repeats = (
            [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
            2048,
            [2, 4],
            3,
        )
    if args.ranks:
        ps = sorted(set(args.ranks))
        held = [(n, k, p) for n, k, p in held if p in ps] or [
            (1536, k, p) for k in (8, 32) for p in ps
        ]
        best_ps = [p for p in best_ps if p in ps] or ps[:1]
    loads = [load()]
    t0 = time.time()
    train = list(itertools.product(ns, ks, ps))
    traces, elapsed = [], []
    for n, k, p in train:
        t, e = traced_run(exe, work, n, k, p)
        traces.append(t)
        elapsed.append(e)
    loads.append(load())
    params = {"N": [x[0] for x in train], "K": [x[1] for x in train], "P": [x[2] for x in train]}
    m = model(traces, params)
    loads.append(load())
    held_rows = []
    for n, k, p in held:
        t, e = traced_run(exe, work, n, k, p)
        held_rows.append((n, k, p, measure(t).total, e, float(m.predict(N=n, K=k, P=p))))
    loads.append(load())
    best_rows = []
    for p in best_ps:
        times = [
            float(np.median([plain_run(exe, best_n, k, p, r) for r in range(repeats)]))
            for k in best_ks
        ]
        kopt = optimal_grain(m, "K", lo=min(best_ks), hi=max(best_ks), N=best_n, P=p)
        best_rows.append((p, times, kopt))
    loads.append(load())
    ex = None
    if args.extrap:
        names = ["N", "K", "P"]
        ex = extrap_fit(
            work,
            names,
            [[float(v) for v in x] for x in train],
            [float(v) for v in m.measured],
            [[float(n), float(k), float(p)] for n, k, p, *_ in held_rows],
        )
    wall = time.time() - t0

    # Figures.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    meas = np.array([r[3] for r in held_rows])
    pred = np.array([r[5] for r in held_rows])
    pp = np.array([r[2] for r in held_rows])
    for p in sorted(set(pp.tolist())):
        sel = pp == p
        ax.loglog(meas[sel], pred[sel], "o", label=f"held out, P={p}")
    ax.loglog(m.measured, m.predict(**m.points), ".", color="gray", alpha=0.5, label="training")
    lim = [min(meas.min(), m.measured.min()) * 0.8, max(meas.max(), m.measured.max()) * 1.2]
    ax.plot(lim, lim, "k:")
    ax.set_xlabel("measured (trace) s")
    ax.set_ylabel("model s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(fig_dir / "mk_models_predicted.png", dpi=100)
    fig, axes = plt.subplots(1, len(best_rows), figsize=(5 * len(best_rows), 4), squeeze=False)
    for ax, (p, times, kopt) in zip(axes[0], best_rows):
        grid = np.geomspace(min(best_ks), max(best_ks), 200)
        ax.plot(grid, m.predict(N=best_n, K=grid, P=p), "-", label="model")
        ax.plot(best_ks, times, "o", label="measured (untraced, elapsed)")
        ax.axvline(kopt, ls="--", color="k", label=f"model optimum K={kopt:.3g}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("K")
        ax.set_ylabel("s")
        ax.set_title(f"N={best_n}, P={p}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(fig_dir / "mk_models_grain.png", dpi=100)

    lines = [
        "# MK-style models of a blocked pipeline (issue 35)",
        "",
        f"Command: `python benchmarks/mk_models.py{' --quick' if args.quick else ''}{' --extrap' if args.extrap else ''}`, "
        f"{platform.node()}, {os.cpu_count()} cores, load average (1 min) during the run: {', '.join(loads)}; "
        f"{wall:.0f} s. P = 2 on 2 cores; P >= 3 oversubscribed.",
        "",
        f"Training: {len(train)} traced runs (N in {ns}, K in {ks}, P in {ps}, {SWEEPS} sweeps, "
        f"{WORK} multiply-adds per cell).",
        "",
        "Model (seconds):",
        "",
        "```",
        str(m.expression),
        "```",
        "",
        "Phases:",
        "",
        markdown_table(m.phases),
        "",
        f"Fit on the training points: SMAPE {m.smape:.2f} %; the run time fitted directly (one PMNF "
        f"model, Extra-P's way, in scalatrace): {m.direct.formula}, SMAPE {m.direct.smape:.2f} %.",
        "",
        "Held-out points (never fitted): measured = the slowest rank's trace time (what the model "
        "predicts); elapsed = the program's own timer.",
        "",
        "| N | K | P | measured s | elapsed s | model s | error vs measured | direct PMNF s | error |"
        + (" Extra-P s | error |" if ex else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if ex else ""),
    ]
    errs, derrs, xerrs = {}, {}, {}
    for i, (n, k, p, mt, e, pr) in enumerate(held_rows):
        d = float(m.direct.predict(N=n, K=k, P=p))
        row = f"| {n} | {k} | {p} | {mt:.4f} | {e:.4f} | {pr:.4f} | {100 * (pr - mt) / mt:+.1f} % | {d:.4f} | {100 * (d - mt) / mt:+.1f} % |"
        errs.setdefault(p, []).append(abs(pr - mt) / mt)
        derrs.setdefault(p, []).append(abs(d - mt) / mt)
        if ex:
            x = ex["test"][i]
            row += f" {x:.4f} | {100 * (x - mt) / mt:+.1f} % |"
            xerrs.setdefault(p, []).append(abs(x - mt) / mt)
        lines.append(row)
    lines += ["", "Mean absolute held-out error by P:", ""]
    for p in sorted(errs):
        extra = f", Extra-P {100 * np.mean(xerrs[p]):.1f} %" if ex else ""
        lines.append(
            f"- P = {p}{' (calm: 2 cores)' if p <= 2 else ' (oversubscribed)'}: phase model {100 * np.mean(errs[p]):.1f} %, "
            f"direct PMNF {100 * np.mean(derrs[p]):.1f} %{extra}"
        )
    if ex:
        lines += [
            "",
            f"Extra-P {ex['formula']}: SMAPE on the training points "
            f"{smape(m.measured, ex['train']):.2f} % (phase model {m.smape:.2f} %, direct PMNF {m.direct.smape:.2f} %).",
        ]
    lines += ["", f"Optimal block size at N = {best_n} (untraced runs, median of {repeats}):", ""]
    lines += [
        "| P | measured best K | measured times (s) by K | model optimum K | model T at measured best / at model K |",
        "|---|---|---|---|---|",
    ]
    for p, times, kopt in best_rows:
        kb = best_ks[int(np.argmin(times))]
        ts = ", ".join(f"{k}: {v:.3f}" for k, v in zip(best_ks, times))
        lines.append(
            f"| {p} | {kb} | {ts} | {kopt:.3g} | {m.predict(N=best_n, K=kb, P=p):.4f} / {m.predict(N=best_n, K=kopt, P=p):.4f} |"
        )
    lines += [
        "",
        "Figures: `mk_models_predicted.png` (model vs measured), `mk_models_grain.png` (T against K).",
        "",
    ]
    out_md.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
