"""MK-style closed-form models (issue 35): a blocked pipeline traced at several N, P, K, its
model T(N, P, K) from the traces, predicted vs measured at held-out points, and the optimal
block size it predicts vs the measured best one.

    python benchmarks/mk_models.py [--out benchmarks/results/mk_models.md] [--quick]
                                   [--extrap] [--ranks 2] [--work DIR] [--sweeps S] [--work-per-cell W]
                                   [--calibrate-in-situ [--in-situ-intercept | --in-situ-line]]
                                   [--in-situ-block-line [--in-situ-columns]]

Program: tests/py/programs/blocked_pipeline.c (-O2), ``blocked_pipeline N K SWEEPS WORK``
(default 32 sweeps, 1 multiply-add per cell: the per-message cost is then a visible part of a
stage, so T(K) has a clear minimum; with 16 multiply-adds per cell the curve was flat within a
few per cent from K = 4 to 64 at N = 2048, and no measurement could place its minimum).
Training runs (traced): N in {256, 512, 1024} (--train-ns), K in {2, 4, 8, ..., 128} with K < N
(--train-ks; 2 8 32 128 before 2026-11-29), P in {2, 3, 4}.
Held-out runs (traced, never fitted): N = 768 with K in {4, 16, 64} at every P, and N = 2048
with K in {8, 32} at P = 2. Measured time of a run: the slowest rank's time from MPI_Init to
MPI_Finalize in its trace (what the model is fitted to), and the program's own elapsed time
(rank 0, Barrier to the last Allreduce; printed). Best K: untraced runs at N = 720 (many
divisors: 28 values of K from 2 to 360) with 7 repeats each; the measured best K is the K of the
lowest median and, less sensitive to the noise near a flat minimum, the minimum of
a + b K + c / K fitted to the medians at all K (with a bootstrap interval over the repeats);
against ``optimal_grain`` of the model.
P = 2 runs on the 2 cores; P = 3 and 4 are oversubscribed (MPICH busy-polls: every message
costs a scheduler time slice), reported beside them. With ``--extrap`` Extra-P is installed
into a scratch venv (``pip install extrap``; never a dependency of scalatrace) and fitted on
the same training points (its multi-parameter modeler on the run time), scored on the same
held-out points. Runs are kept in ``--work``: a second invocation with the same directory
reuses them (time the runs under the timing lock, then add ``--extrap`` without it).
``--calibrate-in-situ`` adds a model whose message overheads are ``scalatrace.calibrate_in_situ``'s
at the program's block (calibrations interleaved with the untraced best-K runs, two fixed-point
rounds; BENCHMARKS.md section 16, "The message overheads calibrated in situ").
``--in-situ-block-line`` adds a model whose per-message overheads are laws of the block
(``scalatrace.calibrate_in_situ_blocks`` at blocks of K = 2..32 (11 and 12 among them) in one run after each untraced
repeat; a line in the block's computation per message-size regime), so that T(K) takes the
overheads at each K's own block (BENCHMARKS.md section 16, "Per-message overheads as laws of the
block").
``--in-situ-columns`` (with ``--in-situ-block-line``): each calibration block is K dependent chains
(``chains=K``: the program's K columns, each from a received value) instead of one long chain;
its runs are kept apart in ``--work`` (BENCHMARKS.md section 16, "A calibration block of
columns").
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
from scalatrace._files import write_text
from scalatrace._launch import run_collected
from scalatrace.extrapolate import smape
from scalatrace.models import measure, model, optimal_grain
from scalatrace.pmnf import fit_pmnf

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "py" / "programs" / "blocked_pipeline.c"
SWEEPS = 32
WORK = 1  # multiply-adds per cell
# With --compute-regimes: the expression whose regimes split the computation's law (None: one law).
COMPUTE_REGIMES: str | None = None
# With --in-situ-columns: each block of the in-situ calibration as K chains (the program's columns).
IN_SITU_COLUMNS = False


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def compile_program(work: Path) -> Path:
    mpicc = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    if mpicc is None:
        sys.exit("mpicc (MPICH) not found")
    exe = work / "blocked_pipeline"
    subprocess.run([mpicc, "-O2", str(PROGRAM), "-o", str(exe)], check=True)
    return exe


def traced_run(
    exe: Path, work: Path, n: int, k: int, p: int, repeat: int = 0
) -> tuple[scalatrace.Trace, float]:
    out = work / f"bp-{n}-{k}-{p}-s{SWEEPS}-w{WORK}-r{repeat}.sct"
    stamp = out.with_suffix(".elapsed")
    if not (out.exists() and stamp.exists()):  # runs are kept in --work: a re-run reuses them
        _, _, proc = run_collected(
            [str(exe), str(n), str(k), str(SWEEPS), str(WORK)], p, out, timeout=600
        )
        write_text(stamp, proc.stdout.split()[1])
    return scalatrace.load(out), float(stamp.read_text())


def traced_repeats(
    exe: Path, work: Path, points: list[tuple[int, int, int]], repeats: int
) -> list[list[tuple[scalatrace.Trace, float]]]:
    """Per point its ``repeats`` traced runs; the runs go repeat after repeat over the points in
    a shuffled order (fixed seed), so a slow spell of the machine touches one run of several
    points instead of every run of a few neighbouring ones. ``model`` takes every repeat and
    uses the median of each measured part over a point's repeats."""
    order = np.random.default_rng(35).permutation(len(points))
    runs: dict[int, list[tuple[scalatrace.Trace, float]]] = {i: [] for i in range(len(points))}
    for r in range(repeats):
        for i in order:
            runs[int(i)].append(traced_run(exe, work, *points[int(i)], repeat=r))
    return [runs[i] for i in range(len(points))]


def plain_run(exe: Path, n: int, k: int, p: int, repeat: int, sweeps: int | None = None) -> float:
    sweeps = sweeps or SWEEPS
    stamp = exe.parent / f"plain-{n}-{k}-{p}-s{sweeps}-w{WORK}-{repeat}.elapsed"
    if stamp.exists():
        return float(stamp.read_text())
    mpiexec = shutil.which("mpiexec.mpich") or "mpiexec"
    proc = subprocess.run(
        [mpiexec, "-n", str(p), str(exe), str(n), str(k), str(sweeps), str(WORK)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    write_text(stamp, proc.stdout.split()[1])
    return float(proc.stdout.split()[1])


def calibration(work: Path, ranks: int) -> scalatrace.LogGP:
    """The machine's LogGP (``scalatrace.calibrate``, untraced ping-pongs), the median of each
    parameter over 3 calibrations, kept in ``work`` (a re-run with the same directory reuses
    it, as it reuses the runs)."""
    import dataclasses

    path = work / f"calibration-p{ranks}.json"
    if not path.exists():
        median = median_loggp([scalatrace.calibrate(np=ranks) for _ in range(3)])
        write_text(path, json.dumps(dataclasses.asdict(median)))
    return scalatrace.LogGP(**json.loads(path.read_text()))


def median_loggp(calibrations: list[scalatrace.LogGP]) -> scalatrace.LogGP:
    """The median of each parameter over ``calibrations``."""
    import dataclasses

    fields = [f.name for f in dataclasses.fields(scalatrace.LogGP)]
    return scalatrace.LogGP(
        **{f: float(np.median([getattr(c, f) for c in calibrations])) for f in fields}
    )


class InSituRounds:
    """The model with the machine's overheads measured in situ (``scalatrace.calibrate_in_situ``:
    a one-way stage with the program's block of computation between the calls). The block's
    computation is the machine model's fitted W at (``best_n``, K, ``p``), K first ``k0`` (the
    traced model's optimum: the trace's per-message cost is the nearer first guess, the
    ping-pong's the farther), then the in-situ model's optimum after each round (fixed-point
    steps), the footprint the program's strip (N / P x N doubles), the
    message K doubles. The calibrations are interleaved with the untraced best-K runs (one after
    each repeat over all K: the machine's state drifts over a session, and the calibration
    samples it as the runs do); a round ends with the median of its calibrations (each
    parameter) and a refit. Every calibration is kept in ``work``."""

    def __init__(
        self,
        work: Path,
        mn,
        traces: list,
        params: dict,
        best_n: int,
        p: int,
        lo,
        hi,
        k0: float,
        intercept: bool = False,
        line: bool = False,
    ):
        chained = [pm for pm in mn.phase_models if pm.compute is not None and pm.chained]
        if not chained:
            raise SystemExit("--calibrate-in-situ: the machine model has no pipeline phase")
        self.stage = max(chained, key=lambda pm: float(pm.occurrences.predict(N=best_n, K=2, P=p)))
        self.work, self.traces, self.params = work, traces, params
        self.best_n, self.p, self.lo, self.hi = best_n, p, lo, hi
        self.k, self.intercept, self.line, self.points = k0, intercept, line, []
        self.model, self.history, self.cals = mn, [], []

    def _block(self) -> tuple[int, float, int]:
        kb = max(1, int(round(self.k)))
        w_ns = 1e9 * float(self.stage.compute.predict(N=self.best_n, K=kb, P=self.p))
        return kb, w_ns, -(-self.best_n // self.p) * self.best_n * 8

    def _calibrate_at(self, kb: int, path: Path) -> dict:
        import dataclasses

        w_ns = 1e9 * float(self.stage.compute.predict(N=self.best_n, K=kb, P=self.p))
        if not path.exists():
            c = scalatrace.calibrate_in_situ(
                w_ns, footprint_bytes=self._block()[2], message_bytes=8 * kb, np=self.p
            )
            write_text(path, json.dumps({**dataclasses.asdict(c), "load": load()}))
        return json.loads(path.read_text())

    def calibrate(self, tag: int) -> None:
        kb = self._block()[0]
        rec = self._calibrate_at(
            kb, self.work / f"insitu-p{self.p}-n{self.best_n}-k{kb}-{tag}.json"
        )
        if self.intercept:
            # The same at half the block, right after: the overheads' line in the block's
            # computation W, taken at W = 0 (a per-message cost growing with the block, m0 + mu W,
            # adds mu W to every block: it does not move the optimum, m0 does).
            kh = max(1, kb // 2)
            half = self._calibrate_at(
                kh, self.work / f"insitu-p{self.p}-n{self.best_n}-k{kh}-{tag}-half.json"
            )
            w1, w0 = rec["compute_ns"], half["compute_ns"]
            o1, o0 = rec["overhead"], half["overhead"]
            at_zero = [
                max((w1 * b - w0 * a) / (w1 - w0), 0.0) if w1 > w0 else a for a, b in zip(o1, o0)
            ]
            rec = {
                **rec,
                "at_block": o1,
                "half": {"K": kh, "compute_ns": w0, "overhead": o0},
                "overhead": at_zero,
                "network": {**rec["network"], "o_s": at_zero[0], "o_r": at_zero[1]},
            }
        if self.line:
            # Also at K / 2 and 2 K right after; the round's overheads are then the Theil-Sen
            # line through all its calibrations' (W, overhead) points, taken at W = 0.
            for kx in sorted({max(1, kb // 2), 2 * kb}):
                x = self._calibrate_at(
                    kx, self.work / f"insitu-p{self.p}-n{self.best_n}-k{kx}-{tag}-line.json"
                )
                self.points.append((x["compute_ns"], x["overhead"]))
            self.points.append((rec["compute_ns"], rec["overhead"]))
        self.cals.append(rec)

    def refit(self) -> None:
        kb, w_ns, foot = self._block()
        cals, self.cals = self.cals, []
        med = lambda get: float(np.median([get(c) for c in cals]))  # noqa: E731
        net = scalatrace.LogGP(
            **{f: med(lambda c, f=f: c["network"][f]) for f in ("L", "o_s", "o_r", "g", "G", "O")}
        )
        line = None
        if self.line:
            from scipy.stats import theilslopes

            w = np.array([pt[0] for pt in self.points])
            at0, slopes = [], []
            for side in (0, 1):
                o = np.array([pt[1][side] for pt in self.points])
                slope, icpt, *_ = theilslopes(o, w)
                at0.append(max(float(icpt), 0.0))
                slopes.append(float(slope))
            line = {"points": len(self.points), "at_zero": at0, "per_ns": slopes}
            self.points = []
            net = scalatrace.LogGP(**{**dataclasses_dict(net), "o_s": at0[0], "o_r": at0[1]})
        self.model = fit_model(self.traces, self.params, net)
        k_new = optimal_grain(self.model, "K", lo=self.lo, hi=self.hi, N=self.best_n, P=self.p)
        self.history.append(
            {
                "K_in": kb,
                "compute_ns": w_ns,
                "footprint": foot,
                "calibrations": len(cals),
                "network": dataclasses_dict(net),
                "ping_pong_o_s": med(lambda c: c["ping_pong"]["o_s"]),
                "ping_pong_o_r": med(lambda c: c["ping_pong"]["o_r"]),
                "cells": int(med(lambda c: c["cells"])),
                "compute_alone": [med(lambda c, i=i: c["compute_alone"][i]) for i in (0, 1)],
                "period": [med(lambda c, i=i: c["period"][i]) for i in (0, 1)],
                "overheads": [c["overhead"] for c in cals],
                "loads": [c["load"] for c in cals],
                "K_out": float(k_new),
                "line": line,
            }
        )
        self.k = k_new


class InSituBlockLaws:
    """The model with per-message overheads as laws of the block (``--in-situ-block-line``):
    after each repeat of the untraced best-K runs, one ``scalatrace.calibrate_in_situ_blocks``
    run at the blocks of ``ks`` (each block's computation the machine model's fitted W at
    (``best_n``, K, ``p``), messages of K doubles, the strip's footprint; the blocks' batches
    interleaved in the run, so they share the machine's state). The model's laws are fitted
    through each block's median over the runs (``OverheadLaw.fit``: a line in W per
    message-size regime); each run's own laws give an optimum too (the spread over the
    session). Every run is kept in ``work``."""

    def __init__(self, work: Path, mn, traces: list, params: dict, best_n: int, p: int, lo, hi):
        chained = [pm for pm in mn.phase_models if pm.compute is not None and pm.chained]
        if not chained:
            raise SystemExit("--in-situ-block-line: the machine model has no pipeline phase")
        stage = max(chained, key=lambda pm: float(pm.occurrences.predict(N=best_n, K=2, P=p)))
        self.ks = [k for k in (2, 3, 4, 6, 8, 10, 11, 12, 16, 20, 24, 32) if k <= best_n // 2]
        self.ws = [1e9 * float(stage.compute.predict(N=best_n, K=k, P=p)) for k in self.ks]
        self.foot = -(-best_n // p) * best_n * 8
        self.work, self.traces, self.params = work, traces, params
        self.best_n, self.p, self.lo, self.hi = best_n, p, lo, hi
        self.columns = IN_SITU_COLUMNS
        self.runs: list[scalatrace.InSituBlocks] = []

    def calibrate(self, tag: int) -> None:
        import dataclasses

        cols = "-columns" if self.columns else ""
        path = self.work / f"insitu-blocks{cols}-p{self.p}-n{self.best_n}-{tag}.json"
        if not path.exists():
            b = scalatrace.calibrate_in_situ_blocks(
                self.ws,
                self.foot,
                [8 * k for k in self.ks],
                chains=list(self.ks) if self.columns else 1,
                np=self.p,
                reps=100,
            )
            cals = [dataclasses.asdict(c) for c in b.calibrations]
            write_text(path, json.dumps({"calibrations": cals, "load": load()}))
        doc = json.loads(path.read_text())
        self.runs.append(
            scalatrace.InSituBlocks.from_calibrations([_cal(c) for c in doc["calibrations"]])
        )

    def finish(self) -> dict:
        import dataclasses

        per_block = []
        for i in range(len(self.ks)):
            cs = [r.calibrations[i] for r in self.runs]
            per_block.append(
                dataclasses.replace(
                    cs[0],
                    compute_alone=tuple(
                        float(np.median([c.compute_alone[j] for c in cs])) for j in (0, 1)
                    ),
                    overhead=tuple(float(np.median([c.overhead[j] for c in cs])) for j in (0, 1)),
                )
            )
        laws = scalatrace.InSituBlocks.from_calibrations(per_block)
        opt = lambda blocks: optimal_grain(  # noqa: E731
            fit_model(self.traces, self.params, blocks),
            "K",
            lo=self.lo,
            hi=self.hi,
            N=self.best_n,
            P=self.p,
        )
        mi = fit_model(self.traces, self.params, laws)
        return {
            "model": mi,
            "optimum": float(
                optimal_grain(mi, "K", lo=self.lo, hi=self.hi, N=self.best_n, P=self.p)
            ),
            "per_run": [float(opt(r)) for r in self.runs],
            "laws": laws,
            "runs": self.runs,
            "ks": self.ks,
        }


def fit_model(traces: list, params: dict, network):
    """``scalatrace.model`` with a machine (``network``), the computation's regimes as asked
    (``--compute-regimes``)."""
    return model(traces, params, network=network, compute_regimes=COMPUTE_REGIMES)


def stage_laws(m) -> list[str]:
    """The fitted computation per block of the model's chained (pipeline) phases."""
    return [pm.compute.formula for pm in m.phase_models if pm.compute is not None and pm.chained]


def _cal(d: dict) -> scalatrace.InSituCalibration:
    """An InSituCalibration from its dataclasses.asdict form (kept in --work)."""
    return scalatrace.InSituCalibration(
        **{
            **d,
            "network": scalatrace.LogGP(**d["network"]),
            "ping_pong": scalatrace.LogGP(**d["ping_pong"]),
            **{k: tuple(d[k]) for k in ("cells_done", "compute_alone", "period", "overhead")},
        }
    )


def held_errors(m, held_rows: list, held_plain: list[float]) -> list[float]:
    """A model's relative errors against the untraced program at the held-out points."""
    return [
        abs(float(m.predict(N=n, K=k, P=q)) - un) / un
        for (n, k, q, *_), un in zip(held_rows, held_plain)
    ]


def law_text(law: scalatrace.OverheadLaw) -> str:
    """An overhead law in ns and ns per us of computation, its regimes by message size."""
    parts = [f"{1e9 * a:.0f} + {1e3 * b:.1f} W" for a, b in zip(law.intercepts, law.slopes)]
    bounds = [f" (k <= {t:.0f} B)" for t in law.thresholds] + [
        " (beyond)" if law.thresholds else ""
    ]
    return "; ".join(p + b for p, b in zip(parts, bounds))


def dataclasses_dict_law(law: scalatrace.OverheadLaw) -> dict:
    return {
        "thresholds": list(law.thresholds),
        "intercepts": list(law.intercepts),
        "slopes": list(law.slopes),
    }


def dataclasses_dict(net: scalatrace.LogGP) -> dict:
    return {f: float(getattr(net, f)) for f in ("L", "o_s", "o_r", "g", "G", "O")}


def curve_minimum(ks: list[int], times: np.ndarray) -> float:
    """The minimum of ``a + b K + c / K`` least-squares fitted (relative residuals) to the
    measured ``times`` at every K: ``sqrt(c / b)`` (NaN unless b, c > 0). A smoother of the
    measured curve only (no trace, no model): near its minimum the curve is flat within the
    run-to-run noise, and the K of the lowest time is mostly set by that noise."""
    k = np.asarray(ks, dtype=float)
    y = np.asarray(times, dtype=float)
    a = np.column_stack([np.ones_like(k), k, 1 / k]) / y[:, None]
    (_, b, c), *_ = np.linalg.lstsq(a, np.ones_like(y), rcond=None)
    return float(np.sqrt(c / b)) if b > 0 and c > 0 else float("nan")


def measured_best(ks: list[int], runs: np.ndarray, resamples: int = 400) -> dict:
    """The measured best K from ``runs`` (K x repeats): the K of the lowest median, the minimum
    of the curve fitted to the medians (:func:`curve_minimum`), and that minimum's 10 % / 90 %
    quantiles over bootstrap resamples of the repeats."""
    medians = np.median(runs, axis=1)
    rng = np.random.default_rng(35)
    boot = []
    for _ in range(resamples):
        pick = rng.integers(0, runs.shape[1], size=runs.shape)
        boot.append(curve_minimum(ks, np.median(np.take_along_axis(runs, pick, axis=1), axis=1)))
    boot = np.array([b for b in boot if np.isfinite(b)])
    lo, hi = np.quantile(boot, [0.1, 0.9]) if boot.size else (np.nan, np.nan)
    return {
        "medians": [float(v) for v in medians],
        "argmin": ks[int(np.argmin(medians))],
        "fitted": curve_minimum(ks, medians),
        "lo": float(lo),
        "hi": float(hi),
    }


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
    global SWEEPS, WORK, COMPUTE_REGIMES, IN_SITU_COLUMNS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mk_models.md"))
    ap.add_argument("--quick", action="store_true", help="fewer points (a smoke run)")
    ap.add_argument("--extrap", action="store_true", help="also fit Extra-P (scratch venv)")
    ap.add_argument("--work", default=None, help="directory for traces (default: temporary)")
    ap.add_argument("--sweeps", type=int, default=SWEEPS, help="sweeps per run")
    ap.add_argument(
        "--work-per-cell", type=int, default=WORK, help="dependent multiply-adds per cell"
    )
    ap.add_argument("--repeats", type=int, default=7, help="untraced runs per K for the best K")
    ap.add_argument(
        "--traced-repeats",
        type=int,
        default=5,
        help="traced runs per point (the model takes the median of each measured part)",
    )
    ap.add_argument(
        "--train-ns",
        type=int,
        nargs="+",
        default=None,
        help="N of the training runs (default 256 512 1024; e.g. add 128 to train below a "
        "--best-n of 120 instead of extrapolating to it)",
    )
    ap.add_argument(
        "--train-ks",
        type=int,
        nargs="+",
        default=[2, 4, 8, 16, 32, 64, 128],
        help="K of the training runs, each with K < N (default the powers of two 2 to 128: "
        "at N = 128 six K, so that a regime of the computation holding only that N has the "
        "points its cross-validation needs; before 2026-11-29 the default was 2 8 32 128)",
    )
    ap.add_argument(
        "--best-n",
        type=int,
        default=720,
        help="N of the best-K search (every divisor of it from 2 to N / 2 is a K; default 720)",
    )
    ap.add_argument(
        "--best-sweeps",
        type=int,
        default=None,
        help="sweeps of the untraced best-K runs (default: --sweeps; the optimal K does not "
        "depend on the sweeps, every sweep costing the same: more sweeps time a small N better)",
    )
    ap.add_argument(
        "--no-network",
        action="store_true",
        help="skip the model with the calibrated machine (scalatrace.model(..., network=...))",
    )
    ap.add_argument(
        "--calibrate-in-situ",
        action="store_true",
        help="also the model with the message overheads measured in situ "
        "(scalatrace.calibrate_in_situ: a one-way stage with the program's block of "
        "computation between the calls, at the best-K size N and the model's optimum K)",
    )
    ap.add_argument(
        "--in-situ-intercept",
        action="store_true",
        help="with --calibrate-in-situ: calibrate at the round's K and at K / 2 each time and "
        "take the overheads' line in the block's computation at zero computation (the part of "
        "the per-message cost that grows with the block does not move the optimum)",
    )
    ap.add_argument(
        "--in-situ-line",
        action="store_true",
        help="with --calibrate-in-situ: calibrate at K / 2, K and 2 K after each repeat; a "
        "round's o_s, o_r are the Theil-Sen line through its points in the block's computation, "
        "taken at zero computation",
    )
    ap.add_argument(
        "--in-situ-block-line",
        action="store_true",
        help="also the model with per-message overheads as laws of the block "
        "(scalatrace.calibrate_in_situ_blocks after each untraced repeat: blocks of K in 2..32 "
        "in one run, their batches interleaved; a line in W per message-size regime, the "
        "model's T(K) taking the overheads at each K's block)",
    )
    ap.add_argument(
        "--in-situ-columns",
        action="store_true",
        help="with --in-situ-block-line: each calibration block as K dependent chains (the "
        "program's K columns, chains=K) instead of one long chain",
    )
    ap.add_argument(
        "--compute-regimes",
        default=None,
        metavar="EXPR",
        help="the models with a machine fit each phase's computation with coefficients per "
        "regime of EXPR, an expression of N, K, P (e.g. N/P: the rows of a rank's strip), the "
        "regimes found by the fit (scalatrace.model(..., compute_regimes=EXPR))",
    )
    ap.add_argument(
        "--in-situ-rounds",
        type=int,
        default=2,
        help="fixed-point rounds of the in-situ calibration (calibrate at the optimum K, "
        "refit, calibrate at the new optimum; default 2); the untraced best-K repeats are split "
        "among the rounds, one calibration after each repeat",
    )
    ap.add_argument(
        "--ranks",
        type=int,
        nargs="+",
        default=None,
        help="rank counts P to train, hold out and search K at (default 2 3 4; e.g. 2 for calm "
        "runs on a 2-core machine, where more ranks than cores oversubscribe)",
    )
    args = ap.parse_args()
    SWEEPS, WORK, COMPUTE_REGIMES = args.sweeps, args.work_per_cell, args.compute_regimes
    IN_SITU_COLUMNS = args.in_situ_columns
    out_md = Path(args.out)
    fig_dir = out_md.parent
    work = Path(args.work or tempfile.mkdtemp(prefix="mk_models_"))
    work.mkdir(parents=True, exist_ok=True)
    exe = (
        work / "blocked_pipeline" if (work / "blocked_pipeline").exists() else compile_program(work)
    )
    divisors = [k for k in range(2, args.best_n // 2 + 1) if args.best_n % k == 0]
    best_sweeps = args.best_sweeps or SWEEPS
    if args.quick:
        ns, ks, ps = [256, 512, 1024], [2, 8, 32], [2, 3]
        held = [(768, 4, 2), (768, 16, 3), (2048, 8, 2)]
        best_ks, best_n, best_ps, repeats = divisors[::3], args.best_n, [2], 1
    else:
        ns, ks, ps = args.train_ns or [256, 512, 1024], args.train_ks, [2, 3, 4]
        held = [(768, k, p) for k in (4, 16, 64) for p in ps] + [(2048, 8, 2), (2048, 32, 2)]
        best_ks, best_n, best_ps, repeats = divisors, args.best_n, [2, 4], args.repeats
    if args.ranks:
        ps = sorted(set(args.ranks))
        held = [(n, k, p) for n, k, p in held if p in ps] or [
            (768, k, p) for k in (4, 16) for p in ps
        ]
        best_ps = [p for p in best_ps if p in ps] or ps[:1]
    loads = [load()]
    t0 = time.time()
    # K < N: a block as wide as the array leaves one block per sweep, no block loop in the trace
    # (the phase's loop is then the sweep loop: other occurrences and visits, another program).
    train = [(n, k, p) for n, k, p in itertools.product(ns, ks, ps) if k < n]
    runs = traced_repeats(exe, work, train + held, args.traced_repeats)
    traces = [t for reps in runs[: len(train)] for t, _ in reps]
    loads.append(load())
    reps_of = [x for x in train for _ in range(args.traced_repeats)]
    params = {
        "N": [x[0] for x in reps_of],
        "K": [x[1] for x in reps_of],
        "P": [x[2] for x in reps_of],
    }
    m = model(traces, params)
    network = None if args.no_network else calibration(work, max(2, min(ps)))
    mn = fit_model(traces, params, network) if network is not None else None
    loads.append(load())
    held_rows = []
    for (n, k, p), reps in zip(held, runs[len(train) :]):
        total = float(np.median([measure(t).total for t, _ in reps]))
        elapsed = float(np.median([e for _, e in reps]))
        held_rows.append((n, k, p, total, elapsed, float(m.predict(N=n, K=k, P=p))))
    # The untraced program at the held-out points (what the model with the machine describes).
    held_plain = [
        float(np.median([plain_run(exe, n, k, p, r) for r in range(args.traced_repeats)]))
        for n, k, p in held
    ]
    loads.append(load())
    best_rows = []
    insitu: dict[int, tuple[float, list[dict], object]] = {}
    blockres: dict[int, dict] = {}
    for p in best_ps:
        # Repeat after repeat over all K (not K after K): a slow spell of the machine then
        # touches one run of many K values, not every run of one K.
        kopt = optimal_grain(m, "K", lo=min(best_ks), hi=max(best_ks), N=best_n, P=p)
        rounds = (
            InSituRounds(
                work,
                mn,
                traces,
                params,
                best_n,
                p,
                min(best_ks),
                max(best_ks),
                kopt,
                args.in_situ_intercept,
                args.in_situ_line,
            )
            if args.calibrate_in_situ and mn is not None
            else None
        )
        # the repeats after which an in-situ round ends (its calibrations' median, a refit)
        ends = {
            int(g[-1]) for g in np.array_split(np.arange(repeats), args.in_situ_rounds) if len(g)
        }
        block_laws = (
            InSituBlockLaws(work, mn, traces, params, best_n, p, min(best_ks), max(best_ks))
            if args.in_situ_block_line and mn is not None
            else None
        )
        by_repeat = []
        for r in range(repeats):
            by_repeat.append([plain_run(exe, best_n, k, p, r, best_sweeps) for k in best_ks])
            if block_laws is not None:
                block_laws.calibrate(r)
            if rounds is not None:
                rounds.calibrate(r)
                if r in ends:
                    rounds.refit()
        runs = np.array(by_repeat).T  # K x repeats
        times = [float(v) for v in np.median(runs, axis=1)]
        kopt_n = (
            optimal_grain(mn, "K", lo=min(best_ks), hi=max(best_ks), N=best_n, P=p)
            if mn is not None
            else float("nan")
        )
        # The same curve traced (the program's own elapsed time under the collector): the
        # program the model was fitted to, whose per-message cost includes the collector's.
        traced = np.array(
            [
                [traced_run(exe, work, best_n, k, p, repeat=r)[1] for k in best_ks]
                for r in range(args.traced_repeats)
            ]
        ).T
        best_rows.append(
            (p, times, kopt, measured_best(best_ks, runs), measured_best(best_ks, traced), kopt_n)
        )
        if rounds is not None:
            insitu[p] = (float(rounds.k), rounds.history, rounds.model)
        if block_laws is not None:
            blockres[p] = block_laws.finish()
    loads.append(load())
    # The fit's form, checked on the untraced program: the same PMNF search on untraced stage
    # times (elapsed / (sweeps x (N / K + P - 1)), the blocks plus the fill) at the training
    # points, and the optimum of sweeps x (N / K + P - 1) x that stage at the best-K size.
    p_u = best_ps[0]
    u_pts = [(n, k) for n, k, p in train if p == p_u]
    u_stage = [
        float(np.median([plain_run(exe, n, k, p_u, r) for r in range(args.traced_repeats)]))
        / (SWEEPS * (-(-n // k) + p_u - 1))
        for n, k in u_pts
    ]
    u_fit = fit_pmnf(
        {"N": np.array([n for n, _ in u_pts], float), "K": np.array([k for _, k in u_pts], float)},
        u_stage,
    )
    u_grid = np.geomspace(min(best_ks), max(best_ks), 4000)
    u_time = (best_n / u_grid + p_u - 1) * u_fit.predict(N=np.full_like(u_grid, best_n), K=u_grid)
    u_kopt = float(u_grid[int(np.argmin(u_time))])
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
    fig.savefig(fig_dir / f"{out_md.stem}_predicted.png", dpi=100)
    fig, axes = plt.subplots(1, len(best_rows), figsize=(5 * len(best_rows), 4), squeeze=False)
    for ax, (p, times, kopt, _, mt, kopt_n) in zip(axes[0], best_rows):
        grid = np.geomspace(min(best_ks), max(best_ks), 200)
        scale = best_sweeps / SWEEPS  # the untraced runs' sweeps against the model's
        ax.plot(grid, scale * m.predict(N=best_n, K=grid, P=p), "-", label="model (traced)")
        if mn is not None:
            ax.plot(grid, scale * mn.predict(N=best_n, K=grid, P=p), "--", label="model (machine)")
            ax.axvline(kopt_n, ls=":", color="C1", label=f"machine optimum K={kopt_n:.3g}")
        if p in blockres:
            bl = blockres[p]
            ax.plot(
                grid,
                scale * bl["model"].predict(N=best_n, K=grid, P=p),
                ":",
                label="model (in-situ laws)",
            )
            ax.axvline(
                bl["optimum"],
                ls="-.",
                color="C4",
                label=f"in-situ laws optimum K={bl['optimum']:.3g}",
            )
        if p in insitu:
            ki, _, mi = insitu[p]
            ax.plot(grid, scale * mi.predict(N=best_n, K=grid, P=p), "-.", label="model (in situ)")
            ax.axvline(ki, ls=":", color="C2", label=f"in-situ optimum K={ki:.3g}")
        ax.plot(best_ks, times, "o", label="measured (untraced, elapsed)")
        if best_sweeps == SWEEPS:
            ax.plot(best_ks, mt["medians"], "x", label="measured (traced, elapsed)")
        ax.axvline(kopt, ls="--", color="k", label=f"model optimum K={kopt:.3g}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("K")
        ax.set_ylabel("s")
        ax.set_title(f"N={best_n}, P={p}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(fig_dir / f"{out_md.stem}_grain.png", dpi=100)

    lines = [
        "# MK-style models of a blocked pipeline (issue 35)",
        "",
        f"Command: `python benchmarks/mk_models.py {' '.join(sys.argv[1:])}`, "
        f"{platform.node()}, {os.cpu_count()} cores, load average (1 min) during the run: {', '.join(loads)}; "
        f"{wall:.0f} s. P = 2 on 2 cores; P >= 3 oversubscribed.",
        "",
        f"Training: {len(train)} points (N in {ns}, K in {ks}, P in {ps}, {SWEEPS} sweeps, "
        f"{WORK} multiply-adds per cell), each traced {args.traced_repeats} times (the model takes "
        "every repeat: each measured part is the median over a point's repeats; runs in a shuffled "
        "order, repeat after repeat).",
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
    lines += [
        "",
        f"Optimal block size at N = {best_n} (untraced runs, {repeats} repeats per K, taken "
        "repeat after repeat over all K). Measured best K: the K of the lowest median, and the "
        "minimum sqrt(c / b) of a + b K + c / K fitted to the medians at all K (a smoother of "
        "the measured curve, no trace or model in it; 10-90 % interval over bootstrap resamples "
        "of the repeats):",
        "",
        "| P | model optimum K | measured: lowest median at K | measured: fitted curve's minimum K "
        "[10 %, 90 %] | model vs lowest median / vs fitted minimum | model T at measured best / "
        "at model K | measured medians (s) by K |",
        "|---|---|---|---|---|---|---|",
    ]
    rows_t: list[str] = []
    for p, times, kopt, mb, mt, _ in best_rows:
        kb = mb["argmin"]
        rows_t.append(
            f"| {p} | {kopt:.3g} | {mt['argmin']} | {mt['fitted']:.3g} [{mt['lo']:.3g}, "
            f"{mt['hi']:.3g}] | {100 * (kopt - mt['argmin']) / mt['argmin']:+.0f} % / "
            f"{100 * (kopt - mt['fitted']) / mt['fitted']:+.0f} % |"
        )
        ts = ", ".join(f"{k}: {v:.4f}" for k, v in zip(best_ks, times))
        lines.append(
            f"| {p} | {kopt:.3g} | {kb} | {mb['fitted']:.3g} [{mb['lo']:.3g}, {mb['hi']:.3g}] "
            f"| {100 * (kopt - kb) / kb:+.0f} % / {100 * (kopt - mb['fitted']) / mb['fitted']:+.0f} % "
            f"| {m.predict(N=best_n, K=kb, P=p):.4f} / {m.predict(N=best_n, K=kopt, P=p):.4f} | {ts} |"
        )
    lines += [
        "",
        f"The fit's form on the untraced program (P = {p_u}): the same PMNF search on untraced "
        f"stage times at the {len(u_pts)} training points ({args.traced_repeats} runs each, "
        f"medians): `{u_fit.formula}`; the optimum of (N / K + P - 1) x that stage at N = "
        f"{best_n}: K = {u_kopt:.3g} (against the untraced curve's fitted minimum "
        f"{best_rows[0][3]['fitted']:.3g}).",
    ]
    lines += [
        "",
        f"The same at N = {best_n} traced ({args.traced_repeats} runs per K, the program's elapsed "
        "time under the collector: the program the model describes):",
        "",
        "| P | model optimum K | traced: lowest median at K | traced: fitted curve's minimum K "
        "[10 %, 90 %] | model vs lowest median / vs fitted minimum |",
        "|---|---|---|---|---|",
        *rows_t,
    ]
    summary: dict = {"loads": loads, "wall_s": wall, "best_n": best_n, "best_sweeps": best_sweeps}
    if mn is not None:
        assert network is not None
        lines += [
            "",
            "## With the calibrated machine (MK's split: scalatrace.model(..., network=...))",
            "",
            f"Machine (`scalatrace.calibrate(np={max(2, min(ps))})`, untraced ping-pongs, the median "
            f"of 3): L = {1e9 * network.L:.0f} ns, o_s = {1e9 * network.o_s:.0f} ns, o_r = "
            f"{1e9 * network.o_r:.0f} ns, G = {1e12 * network.G:.1f} ps/B, O = "
            f"{1e12 * network.O:.1f} ps/B, g = {1e9 * network.g:.0f} ns. Each point-to-point "
            "phase: its computation W per occurrence from the trace (the busiest rank's; the "
            "chain end's last block counted in the pipeline), the machine's overheads of a "
            "rank's own messages per block and s + tau + r per hop of the fill; collectives "
            "ceil(log2 P) rounds of the machine's messages; the rest the time outside the phases.",
            "",
            "```",
            str(mn.expression),
            "```",
            "",
            markdown_table(mn.phases),
            "",
            "Held-out points: the model with the machine against the untraced program (median of "
            f"{args.traced_repeats} runs, its own timer) and the traced one (trace time); the "
            "traced model for comparison:",
            "",
            "| N | K | P | untraced elapsed s | machine model s | error | traced model s | error "
            "| trace time s | machine model vs trace |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        nerrs, terrs = [], []
        for (n, k, p, mt, _e, pr), un in zip(held_rows, held_plain):
            pn = float(mn.predict(N=n, K=k, P=p))
            nerrs.append((pn - un) / un)
            terrs.append((pr - un) / un)
            lines.append(
                f"| {n} | {k} | {p} | {un:.4f} | {pn:.4f} | {100 * (pn - un) / un:+.1f} % "
                f"| {pr:.4f} | {100 * (pr - un) / un:+.1f} % | {mt:.4f} | "
                f"{100 * (pn - mt) / mt:+.1f} % |"
            )
        lines += [
            "",
            f"Mean absolute error against the untraced program: machine model "
            f"{100 * np.mean(np.abs(nerrs)):.1f} %, traced model {100 * np.mean(np.abs(terrs)):.1f} %.",
            "",
            f"Optimal K at N = {best_n}: model with the machine against the untraced program "
            f"({repeats} runs per K, {best_sweeps} sweeps):",
            "",
            "| P | machine model optimum K | traced model optimum K | untraced: lowest median at K "
            "| untraced: fitted minimum [10 %, 90 %] | machine model vs lowest median / fitted "
            "| traced model vs lowest median / fitted |",
            "|---|---|---|---|---|---|---|",
        ]
        for p, _times, kopt, mb, _mt, kopt_n in best_rows:
            kb, kf = mb["argmin"], mb["fitted"]
            lines.append(
                f"| {p} | {kopt_n:.3g} | {kopt:.3g} | {kb} | {kf:.3g} [{mb['lo']:.3g}, "
                f"{mb['hi']:.3g}] | {100 * (kopt_n - kb) / kb:+.0f} % / "
                f"{100 * (kopt_n - kf) / kf:+.0f} % | {100 * (kopt - kb) / kb:+.0f} % / "
                f"{100 * (kopt - kf) / kf:+.0f} % |"
            )
        summary.update(
            network={k: getattr(network, k) for k in ("L", "o_s", "o_r", "g", "G", "O")},
            machine_expression=str(mn.expression),
            held_error_machine_vs_untraced=float(np.mean(np.abs(nerrs))),
            held_error_traced_vs_untraced=float(np.mean(np.abs(terrs))),
        )
    if insitu:
        lines += [
            "",
            "## With the message overheads calibrated in situ (scalatrace.calibrate_in_situ)",
            "",
            "Each round: the block's computation W(N, K, P) of the machine model (its fitted "
            "computation per block) at the best-K size N and K = the traced model's optimum "
            "(first round) or the last round's, the strip's footprint (N / P x N doubles), messages of K doubles; "
            "`calibrate_in_situ` gives o_s and o_r (a one-way stage's period minus the block's "
            "computation alone), one calibration after each repeat of the untraced best-K runs "
            "over all K (so that they sample the machine's drifting state as the runs do); the "
            "round's median of each parameter refits the model (the other LogGP parameters from "
            "the same runs' ping-pongs) and its optimum is the next round's K."
            + (
                " With --in-situ-intercept each calibration is a pair, at K and at K / 2 (right "
                "after), and its o_s, o_r are the pair's line in W taken at W = 0."
                if args.in_situ_intercept
                else ""
            )
            + (
                " With --in-situ-line each repeat calibrates at K / 2, K and 2 K, and a round's "
                "o_s, o_r (the median column) are the Theil-Sen line through its points in W at "
                "W = 0 (each calibration's column: at K)."
                if args.in_situ_line
                else ""
            ),
            "",
            "| P | round | K in | W ns | footprint B | cells | computation alone ns (sender / "
            "receiver) | stage period ns | in-situ o_s / o_r ns (median) | each calibration's "
            "o_s / o_r ns | ping-pong o_s / o_r ns | optimum K out |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for p, (_, hist, _) in insitu.items():
            for i, h in enumerate(hist):
                lines.append(
                    f"| {p} | {i + 1} | {h['K_in']} | {h['compute_ns']:.0f} | {h['footprint']} | "
                    f"{h['cells']} | {1e9 * h['compute_alone'][0]:.0f} / "
                    f"{1e9 * h['compute_alone'][1]:.0f} | {1e9 * h['period'][0]:.0f} / "
                    f"{1e9 * h['period'][1]:.0f} | {1e9 * h['network']['o_s']:.0f} / "
                    f"{1e9 * h['network']['o_r']:.0f} | "
                    + ", ".join(f"{1e9 * a:.0f} / {1e9 * b:.0f}" for a, b in h["overheads"])
                    + f" | {1e9 * h['ping_pong_o_s']:.0f} / "
                    f"{1e9 * h['ping_pong_o_r']:.0f} | {h['K_out']:.3g} |"
                )
        lines += [
            "",
            "| P | in-situ model optimum K | ping-pong machine model K | untraced lowest median "
            "| untraced fitted minimum [10 %, 90 %] | in situ vs lowest / fitted | held-out error "
            "vs untraced (in situ / ping-pong) |",
            "|---|---|---|---|---|---|---|",
        ]
        for p, _times, _kopt, mb, _mt, kopt_n in best_rows:
            if p not in insitu:
                continue
            ki, hist, mi = insitu[p]
            kb, kf = mb["argmin"], mb["fitted"]
            ie, ne = held_errors(mi, held_rows, held_plain), held_errors(mn, held_rows, held_plain)
            lines.append(
                f"| {p} | {ki:.3g} | {kopt_n:.3g} | {kb} | {kf:.3g} [{mb['lo']:.3g}, "
                f"{mb['hi']:.3g}] | {100 * (ki - kb) / kb:+.0f} % / {100 * (ki - kf) / kf:+.0f} % "
                f"| {100 * np.mean(ie):.1f} % / {100 * np.mean(ne):.1f} % |"
            )
            summary.setdefault("in_situ", []).append(
                {
                    "P": p,
                    "optimum": ki,
                    "rounds": hist,
                    "expression": str(mi.expression),
                    "held_error_vs_untraced": float(np.mean(ie)),
                }
            )
    for p, bl in blockres.items():
        row = next(r for r in best_rows if r[0] == p)
        _, _times, kopt, mb, _mt, kopt_n = row
        kb, kf = mb["argmin"], mb["fitted"]
        ki = bl["optimum"]
        lines += [
            "",
            "## With the per-message overheads as laws of the block (scalatrace.calibrate_in_situ_blocks)",
            "",
            f"After each untraced repeat one calibration run at the blocks K in {bl['ks']} (W the "
            f"machine model's computation per block at N = {best_n}, messages of K doubles, the "
            "strip as footprint; "
            + (
                "each block K dependent chains, the program's columns; "
                if args.in_situ_columns
                else "each block one dependent chain; "
            )
            + "the blocks' batches interleaved in the run). Each block's "
            "median over the runs (ns; sender o_s / receiver o_r; W the receiver's computation "
            "alone):",
            "",
            "| K | bytes | W ns | o_s / o_r median | each run's o_s / o_r |",
            "|---|---|---|---|---|",
        ]
        for i, k in enumerate(bl["ks"]):
            c = bl["laws"].calibrations[i]
            each = ", ".join(
                f"{1e9 * r.calibrations[i].overhead[0]:.0f}/{1e9 * r.calibrations[i].overhead[1]:.0f}"
                for r in bl["runs"]
            )
            lines.append(
                f"| {k} | {c.message_bytes} | {1e9 * c.compute_alone[1]:.0f} | "
                f"{1e9 * c.overhead[0]:.0f} / {1e9 * c.overhead[1]:.0f} | {each} |"
            )
        lines += [
            "",
            f"Laws (ns, W in us): o_s = {law_text(bl['laws'].o_s)}; o_r = {law_text(bl['laws'].o_r)}. "
            "Each run's laws: " + "; ".join(f"o_r = {law_text(r.o_r)}" for r in bl["runs"]),
            "",
            f"The pipeline's computation per block W (s; `--compute-regimes {COMPUTE_REGIMES}`): "
            + "; ".join(f"`{w}`" for w in stage_laws(bl["model"])),
            "",
            "| P | in-situ laws optimum K | each run's laws: optimum K | ping-pong machine model K "
            "| traced model K | untraced lowest median | untraced fitted minimum [10 %, 90 %] | "
            "laws vs lowest / fitted | held-out error vs untraced (laws / ping-pong) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        le = held_errors(bl["model"], held_rows, held_plain)
        ne = held_errors(mn, held_rows, held_plain)
        lines.append(
            f"| {p} | {ki:.3g} | {', '.join(f'{x:.3g}' for x in bl['per_run'])} | {kopt_n:.3g} | "
            f"{kopt:.3g} | {kb} | {kf:.3g} [{mb['lo']:.3g}, {mb['hi']:.3g}] | "
            f"{100 * (ki - kb) / kb:+.0f} % / {100 * (ki - kf) / kf:+.0f} % | "
            f"{100 * np.mean(le):.1f} % / {100 * np.mean(ne):.1f} % |"
        )
        summary.setdefault("in_situ_block_line", []).append(
            {
                "P": p,
                "optimum": ki,
                "per_run": bl["per_run"],
                "ks": bl["ks"],
                "o_s": dataclasses_dict_law(bl["laws"].o_s),
                "o_r": dataclasses_dict_law(bl["laws"].o_r),
                "per_block": [
                    {
                        "K": k,
                        "W": c.compute_alone[1],
                        "bytes": c.message_bytes,
                        "overhead": list(c.overhead),
                        "each": [list(r.calibrations[i].overhead) for r in bl["runs"]],
                    }
                    for i, (k, c) in enumerate(zip(bl["ks"], bl["laws"].calibrations))
                ],
                "expression": str(bl["model"].expression),
                "compute_regimes": COMPUTE_REGIMES,
                "compute": stage_laws(bl["model"]),
                "held_error_vs_untraced": float(np.mean(le)),
            }
        )
    summary["best"] = [
        {
            "P": p,
            "traced_model_optimum": kopt,
            "machine_model_optimum": kopt_n,
            "untraced": mb,
            "traced": {k: v for k, v in mt.items() if k != "medians"},
        }
        for p, _t, kopt, mb, mt, kopt_n in best_rows
    ]
    summary["held_error_traced_model"] = {str(p): float(np.mean(v)) for p, v in errs.items()}
    summary["traced_expression"] = str(m.expression)
    write_text(out_md.with_suffix(".json"), json.dumps(summary, indent=1))
    p0 = best_rows[0]
    per_call = ", ".join(
        f"K = {k}: {1e9 * (tr - un * SWEEPS / best_sweeps) / (SWEEPS * -(-best_n // k)):.0f} ns"
        for k, un, tr in zip(best_ks[:6], p0[1][:6], p0[4]["medians"][:6])
    )
    lines += [
        "",
        "Traced minus untraced median run time per block and sweep (the collector's time per "
        f"Send or Recv on the critical path, P = {p0[0]}): {per_call}.",
    ]
    lines += [
        "",
        f"Figures: `{out_md.stem}_predicted.png` (model vs measured), `{out_md.stem}_grain.png` "
        "(T against K: model, untraced and traced medians).",
        "",
    ]
    write_text(out_md, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
