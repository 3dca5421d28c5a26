#!/usr/bin/env python3
"""Why NPB BT and SP class W at 4, 9, 16 ranks do not determine their traces at 25 (issue 31).

    python benchmarks/npb_uneven_split.py [--work /tmp/npb_i31] [--steps 5] [--sizes 4,9,16,25]

Reads the cached real traces that `benchmarks/npb_extrapolation.py --class W --codes bt,sp
--steps 5 --work DIR` wrote (DIR/{bt,sp}.W.steps5.{P}.sct) and prints, per code and size, the
byte counts of rank 0's face exchange (copy_faces.f: its first six MPI_Isend calls, one per
face) next to what the even split of the class's grid (BT 24, SP 36 points per direction) over
n = sqrt(P) cells gives, 80*floor(N/n)^2*(n-1) bytes (compute_buffer_size: 5 components of 2
layers, on the n - 1 cells of a rank that are not at the grid's end in that direction).
At 4, 9, 16 ranks n divides N, every face of a rank is that size, and no input shows how a
remainder is split; at 25 ranks (n = 5) N is split unevenly (BT 5, 5, 5, 5, 4; SP 8, 7, 7, 7,
7) and the faces differ from one another and from the even law. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import scalatrace

GRID = {"bt": 24, "sp": 36}  # class W grid points per direction (npbparams.h)


def face_bytes(path: Path) -> list[int]:
    """Bytes of rank 0's first six MPI_Isend calls (copy_faces.f's faces)."""
    trace = scalatrace.load(path)
    frame = trace.to_dataframe(ranks=[0], timing="none")
    return [int(b) for b in frame[frame.op == "Isend"]["bytes"].head(6)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/tmp/npb_i31")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--sizes", default="4,9,16,25")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| code | P | n | rank 0's six face Isends (bytes) | 80*floor(N/n)^2*(n-1) | N mod n |")
    print("|---|---:|---:|---|---:|---:|")
    for code, grid in GRID.items():
        for p in sizes:
            path = Path(args.work) / f"{code}.W.steps{args.steps}.{p}.sct"
            if not path.exists():
                print(f"| {code.upper()} | {p} | | missing: {path} | | |")
                continue
            n = math.isqrt(p)
            even = 80 * (grid // n) ** 2 * (n - 1)
            faces = ", ".join(str(b) for b in face_bytes(path))
            print(f"| {code.upper()} | {p} | {n} | {faces} | {even} | {grid % n} |")


if __name__ == "__main__":
    main()
