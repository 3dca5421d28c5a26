#!/usr/bin/env python3
"""Extrapolation of LULESH 2.0: traces at cube rank counts (8, 27, 64) extrapolated to a larger
cube (125), compared event by event with the real trace there.

    python benchmarks/lulesh_extrapolation.py [--lulesh /work/apps/lulesh-src/lulesh2.0]
        [--sizes 8,27,64] [--target 125] [--args "-s 2 -i 2 -q"] [--work DIR] [--strict]

Traces every input size and the target with the collector (real mpiexec runs; 125 ranks on 2
cores are oversubscribed: about 25-120 s here), extrapolates with `scalatrace.extrapolate`, and
reports the events reproduced exactly on every rank (op, parameters, arrays), whether the
communication matrices are equal, the laws taken with a warning, and the simulated time of the
extrapolated and of the real trace with the same parameters (`scalatrace.simulate`:
communication only, `timing="none"`, and with the compute times, `timing="mean"`, whose
extrapolated values are the timing models' predictions from oversubscribed inputs).
`--strict` extrapolates with `strict=True` (`refuse_undecided`) (expected: refused, naming the choices).
Build (LULESH: `fetch github:LLNL/LULESH`, `git --git-dir=<mirror> archive HEAD | tar -x -C
/work/apps/lulesh-src`):

    cd /work/apps/lulesh-src && make MPICXX="mpicxx -DUSE_MPI=1" CXXFLAGS="-g -O2 -I. -w" \\
        LDFLAGS="-g -O2"

(no OpenMP: one thread per rank). A benchmark, not a test (BENCHMARKS.md section 12).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import scalatrace
from scalatrace.extrapolate import ExtrapolationError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from npb_extrapolation import event_match, matrices_equal, simulated  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lulesh", type=Path, default=Path("/work/apps/lulesh-src/lulesh2.0"))
    ap.add_argument("--sizes", default="8,27,64")
    ap.add_argument("--target", type=int, default=125)
    ap.add_argument("--args", default="-s 2 -i 2 -q", help="LULESH's arguments")
    ap.add_argument("--work", type=Path, default=Path("/tmp/lulesh_extrapolation"))
    ap.add_argument("--timeout", type=float, default=1200)
    ap.add_argument("--strict", action="store_true", help="strict=True: refuse undecided laws")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in a.sizes.split(",")]
    traces: dict[int, scalatrace.Trace] = {}
    for n in [*sizes, a.target]:
        out = a.work / f"lulesh{n}.sct"
        if out.exists():
            traces[n] = scalatrace.load(out)
            print(f"{n} ranks: cached {out}")
            continue
        t0 = time.time()
        argv = [str(a.lulesh), *a.args.split()]
        traces[n] = scalatrace.trace(argv, np=n, out=out, timeout=a.timeout)
        print(f"{n} ranks: traced in {time.time() - t0:.1f} s")
    t0 = time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = scalatrace.extrapolate(
                [traces[n] for n in sizes], ranks=a.target, strict=a.strict
            )
        except ExtrapolationError as e:
            print(f"refused in {time.time() - t0:.1f} s: {str(e).splitlines()[0][:400]}")
            return
    print(f"extrapolated {sizes} -> {a.target} in {time.time() - t0:.1f} s")
    real = traces[a.target]
    same, total, first = event_match(got, real, drop_other=False)
    print(f"events reproduced: {same}/{total}" + (f"; first difference: {first}" if first else ""))
    print(f"communication matrices equal: {matrices_equal(got, real)}")
    chosen = [str(w.message) for w in caught if "chosen" in str(w.message)]
    print(f"laws taken with a warning: {sum(m.count(' chosen ') for m in chosen)}")
    print(f"simulated, extrapolated vs real (none | mean): {simulated(got, real)}")


if __name__ == "__main__":
    main()
