"""Scaling-model fits: scalatrace.fit_scaling side by side with Extra-P, and trace extrapolation
cost at large rank counts.

    python benchmarks/extrapolation_bench.py [--extrap-python /tmp/extrap_venv/bin/python]
                                             [--out benchmarks/results/extrapolation.md]

Fits: synthetic measurements from known PMNF functions (and strong-scaling functions outside
Extra-P's space) at p = 4, 8, 16, 32, 64 with multiplicative Gaussian noise (seeded, 5 repeats
per noise level), held-out point p = 512. Reported per case: SMAPE of the fit on the training
points, and the relative error of the prediction at the held-out size (median over repeats).
Extra-P (``pip install extrap`` into a scratch venv; not a dependency of scalatrace) is run in
that venv's interpreter through its Python API on the same numbers; if it is not installed the
column says so.

Extrapolation cost: wall time of the gtest cases that extrapolate harness traces to 4,096 ranks
and compare them with the harness's own trace (`tests/cpp/extrapolate/extrapolate_test.cpp`).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import scalatrace
from scalatrace._files import write_text
from scalatrace.extrapolate import smape

TRAIN = np.array([4, 8, 16, 32, 64], dtype=float)
HELD_OUT = 512.0
NOISE = (0.01, 0.05)
REPEATS = 5

CASES = {
    "2 + 0.5 p log2 p": lambda p: 2 + 0.5 * p * np.log2(p),
    "10 + 3 sqrt(p)": lambda p: 10 + 3 * np.sqrt(p),
    "1 + 0.01 p^2": lambda p: 1 + 0.01 * p**2,
    "5 + 0.2 log2(p)^2": lambda p: 5 + 0.2 * np.log2(p) ** 2,
    "3 + 0.1 p^(3/2)": lambda p: 3 + 0.1 * p**1.5,
    "4 + 2 log2 p + 0.05 p": lambda p: 4 + 2 * np.log2(p) + 0.05 * p,
    "7 (constant)": lambda p: 7 + 0 * p,
    "0.5 + 400/p (strong scaling)": lambda p: 0.5 + 400 / p,
    "20 + 100/sqrt(p) (strong scaling)": lambda p: 20 + 100 / np.sqrt(p),
}

EXTRAP_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.filterwarnings("ignore")
    from extrap.entities.coordinate import Coordinate
    from extrap.entities.measurement import Measurement
    from extrap.entities.parameter import Parameter
    from extrap.entities.callpath import Callpath
    from extrap.entities.metric import Metric
    from extrap.entities.experiment import Experiment
    from extrap.modelers.model_generator import ModelGenerator
    jobs = json.load(sys.stdin)
    out = []
    for job in jobs:
        exp = Experiment()
        exp.add_parameter(Parameter("p"))
        cp, me = Callpath("main"), Metric("time")
        exp.add_callpath(cp); exp.add_metric(me)
        for x in job["xs"]:
            exp.add_coordinate(Coordinate(x))
        for x, y in zip(job["xs"], job["ys"]):
            exp.add_measurement(Measurement(Coordinate(x), cp, me, [y]))
        gen = ModelGenerator(exp)
        gen.model_all()
        model = gen.models[(cp, me)]
        f = model.hypothesis.function
        out.append({"train": [float(f.evaluate(x)) for x in job["xs"]],
                    "held_out": float(f.evaluate(job["held_out"])),
                    "formula": f.to_string()})
    json.dump(out, sys.stdout)
""")


def run_extrap(python: str | None, jobs: list[dict]) -> list[dict] | None:
    """Extra-P's models for the jobs, or None if Extra-P is not available."""
    if not python or not Path(python).exists():
        return None
    proc = subprocess.run(
        [python, "-c", EXTRAP_SCRIPT],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(proc.stdout)


def fits_table(extrap_python: str | None) -> tuple[list[str], dict]:
    jobs, ours = [], []
    for name, f in CASES.items():
        for noise in NOISE:
            for rep in range(REPEATS):
                rng = np.random.default_rng(1000 * rep + int(noise * 1000))
                ys = f(TRAIN) * (1 + rng.normal(0, noise, TRAIN.size))
                model = scalatrace.fit_scaling(TRAIN, ys)
                ours.append(
                    {
                        "case": name,
                        "noise": noise,
                        "train_smape": smape(ys, model.predict(TRAIN)),
                        "held_err": abs(model.predict(HELD_OUT) - f(HELD_OUT))
                        / abs(f(HELD_OUT))
                        * 100,
                        "formula": model.formula,
                    }
                )
                jobs.append({"xs": TRAIN.tolist(), "ys": ys.tolist(), "held_out": HELD_OUT})
    theirs = run_extrap(extrap_python, jobs)
    rows = [
        "| function | noise | scalatrace SMAPE % | Extra-P SMAPE % | scalatrace held-out err % | Extra-P held-out err % | scalatrace model (last repeat) | Extra-P model (last repeat) |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    summary = {
        "ours_held": [],
        "theirs_held": [],
        "ours_smape": [],
        "theirs_smape": [],
        "worse": [],
        "pmnf_ours": [],
        "pmnf_theirs": [],
    }
    for i in range(0, len(ours), REPEATS):
        group = ours[i : i + REPEATS]
        o_s = float(np.median([g["train_smape"] for g in group]))
        o_h = float(np.median([g["held_err"] for g in group]))
        name, noise = group[0]["case"], group[0]["noise"]
        f = CASES[name]
        if theirs is not None:
            tg = theirs[i : i + REPEATS]
            t_s = float(
                np.median([smape(jobs[i + k]["ys"], tg[k]["train"]) for k in range(REPEATS)])
            )
            t_h = float(
                np.median(
                    [
                        abs(tg[k]["held_out"] - f(HELD_OUT)) / abs(f(HELD_OUT)) * 100
                        for k in range(REPEATS)
                    ]
                )
            )
            t_formula = tg[-1]["formula"]
            summary["theirs_held"].append(t_h)
            if "strong scaling" not in name:
                summary["pmnf_ours"].append(o_h)
                summary["pmnf_theirs"].append(t_h)
            summary["theirs_smape"].append(t_s)
            if o_h > t_h * 1.05 + 0.05:
                summary["worse"].append(f"{name} @ {noise:.0%}")
            t_cols = f"{t_s:.2f} | ", f"{t_h:.2f} | ", f"`{t_formula}`"
        else:
            t_cols = "n/a | ", "n/a | ", "Extra-P not installed"
        summary["ours_held"].append(o_h)
        summary["ours_smape"].append(o_s)
        rows.append(
            f"| {name} | {noise:.0%} | {o_s:.2f} | {t_cols[0]}{o_h:.2f} | {t_cols[1]}`{group[-1]['formula']}` | {t_cols[2]} |"
        )
    return rows, summary


def harness_extrapolation_times() -> list[str]:
    """Wall time of the gtest cases that extrapolate to 65,536 / 1,048,576 ranks."""
    import os

    from scalatrace import _paths  # noqa: F401  (the build dir is found like the tests do)

    build = Path(
        os.environ.get("SCALATRACE_BUILD_DIR", Path(__file__).resolve().parents[1] / "build" / "py")
    )
    exe = build / "tests" / "cpp" / "test_extrapolate"
    if not exe.exists():
        return [f"(test_extrapolate not built at {exe})"]
    import time

    rows = ["| gtest case | wall time (s) |", "|---|---:|"]
    for case in ("To4096/ExtrapolateHarness.*",):
        t0 = time.perf_counter()
        proc = subprocess.run([str(exe), f"--gtest_filter={case}"], capture_output=True, text=True)
        rows.append(
            f"| `{case}` ({'passed' if proc.returncode == 0 else 'FAILED'}) | {time.perf_counter() - t0:.1f} |"
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--extrap-python",
        default="/tmp/extrap_venv/bin/python",
        help="interpreter of a venv with `pip install extrap`",
    )
    ap.add_argument("--out", default=None, help="write the Markdown results here")
    ap.add_argument("--skip-harness", action="store_true")
    args = ap.parse_args()
    rows, s = fits_table(args.extrap_python)
    lines = (
        [
            "# Extrapolation: scaling-model fits and trace extrapolation",
            "",
            f"Produced by `python benchmarks/extrapolation_bench.py` on {platform.node()} (2 shared cores).",
            f"Training points p = {', '.join(str(int(x)) for x in TRAIN)}; held-out p = {int(HELD_OUT)}; "
            f"multiplicative Gaussian noise; medians over {REPEATS} seeded repeats. SMAPE: on the training "
            "points; held-out error: |prediction - true| / true at the held-out size.",
            "",
            "## fit_scaling vs Extra-P",
            "",
        ]
        + rows
        + [""]
    )
    lines.append(
        f"Mean held-out error: scalatrace {np.mean(s['ours_held']):.2f} %"
        + (
            f", Extra-P {np.mean(s['theirs_held']):.2f} %"
            if s["theirs_held"]
            else " (Extra-P not installed)"
        )
    )
    lines.append(
        f"Mean training SMAPE: scalatrace {np.mean(s['ours_smape']):.2f} %"
        + (f", Extra-P {np.mean(s['theirs_smape']):.2f} %" if s["theirs_smape"] else "")
    )
    if s["pmnf_theirs"]:
        lines.append(
            f"Mean held-out error on the functions inside Extra-P's search space (no strong scaling): "
            f"scalatrace {np.mean(s['pmnf_ours']):.2f} %, Extra-P {np.mean(s['pmnf_theirs']):.2f} %"
        )
    if s["theirs_held"]:
        lines.append(
            "Cases where scalatrace's held-out error is worse than Extra-P's (by more than 5 % relative): "
            + (", ".join(s["worse"]) if s["worse"] else "none")
        )
    if not args.skip_harness:
        lines += [
            "",
            "## Trace extrapolation at scale (harness traces, equality checked by the test)",
            "",
        ]
        lines += harness_extrapolation_times()
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        write_text(Path(args.out), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
