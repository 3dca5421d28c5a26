#!/usr/bin/env python3
"""Extrapolation of NPB (3.4-MPI) traces: small runs extrapolated to a larger size, compared
event by event with the real trace at that size.

    python benchmarks/npb_extrapolation.py [--bin-dir /work/apps/npb/bin] [--class S]
        [--codes bt,cg,ep,ft,is,lu,mg,sp] [--sizes 4,8,16] [--square-sizes 4,9,16]
        [--target 32] [--square-target 25] [--timeout 900] [--out FILE]

For each code: traces at the input sizes and at the target (real mpiexec runs under the
collector; BT and SP need square rank counts, so they use --square-sizes and --square-target),
then `scalatrace.extrapolate` (lossless, and lossy where lossless is refused) and, where it
succeeds, the share of the target's events reproduced exactly (per rank, in order: op,
parameters, arrays; call sites and timing aside) and whether the communication matrices are
equal. Where it is refused, the first line of the refusal. The laws found are listed per code.
Runs with more ranks than cores are slow here (MPICH busy-polls): a 32-rank run of a class S
code can take minutes on 2 cores. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import scalatrace
from scalatrace.extrapolate import ExtrapolationError, extrapolation_laws

SQUARE = {"bt", "sp"}


def traced(binary: Path, n: int, work: Path, timeout: float) -> tuple[scalatrace.Trace, float]:
    out = work / f"{binary.stem}.{n}.sct"
    start = time.perf_counter()
    if not out.exists():
        scalatrace.trace([str(binary)], np=n, out=out, timeout=timeout)
    return scalatrace.load(out), time.perf_counter() - start


def event_match(
    got: scalatrace.Trace, real: scalatrace.Trace, drop_other: bool
) -> tuple[int, int, str]:
    """(events reproduced, events of the real trace, first difference)."""
    same = total = 0
    first = ""
    for r in range(real.nranks):
        a = list(got.events(r, timing="none")) if r < got.nranks else []
        b = [e for e in real.events(r, timing="none") if not (drop_other and e.op == "Other")]
        total += len(b)
        for i, y in enumerate(b):
            x = a[i] if i < len(a) else None
            if x is not None and x.op == y.op and x.fields == y.fields and x.arrays == y.arrays:
                same += 1
            elif not first:
                first = f"rank {r} event {i}: {x.op if x else 'none'} vs {y.op}"
                if x is not None and x.op == y.op:
                    diff = {k: (v, y.fields[k]) for k, v in x.fields.items() if v != y.fields[k]}
                    first += f" {diff}"
        if len(a) != len(b) and not first:
            first = f"rank {r}: {len(a)} events extrapolated, {len(b)} real"
    return same, total, first


def matrices_equal(got: scalatrace.Trace, real: scalatrace.Trace) -> bool:
    return all(
        got.nranks == real.nranks
        and np.array_equal(got.comm_matrix(kind=k), real.comm_matrix(kind=k))
        for k in ("p2p", "collective")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default="/work/apps/npb/bin")
    ap.add_argument("--class", dest="klass", default="S")
    ap.add_argument("--codes", default="bt,cg,ep,ft,is,lu,mg,sp")
    ap.add_argument("--sizes", default="4,8,16")
    ap.add_argument("--square-sizes", default="4,9,16")
    ap.add_argument("--target", type=int, default=32)
    ap.add_argument("--square-target", type=int, default=25)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--work", default="/tmp/npb_extrapolation")
    ap.add_argument("--out")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    command = (
        f"python benchmarks/npb_extrapolation.py --class {a.klass} --codes {a.codes} "
        f"--sizes {a.sizes} --target {a.target} --square-sizes {a.square_sizes} "
        f"--square-target {a.square_target}"
    )
    rows, laws_text = [], []
    for code in a.codes.split(","):
        binary = Path(a.bin_dir) / f"{code}.{a.klass}.x"
        square = code in SQUARE
        sizes = [int(s) for s in (a.square_sizes if square else a.sizes).split(",")]
        target = a.square_target if square else a.target
        if not binary.is_file():
            rows.append(f"| {code.upper()} | – | – | binary {binary} not found | | |")
            continue
        try:
            small = [traced(binary, n, work, a.timeout)[0] for n in sizes]
            real, seconds = traced(binary, target, work, a.timeout)
        except Exception as e:  # a run that fails is reported, the others go on
            rows.append(
                f"| {code.upper()} | {sizes} → {target} | – | run failed: {str(e).splitlines()[0]} | | |"
            )
            continue
        for lossy in (False, True):
            mode = "lossy" if lossy else "lossless"
            start = time.perf_counter()
            try:
                big = scalatrace.extrapolate(small, ranks=target, timing=False, lossy=lossy)
            except ExtrapolationError as e:
                rows.append(
                    f"| {code.upper()} | {sizes} → {target} | {mode} | refused: "
                    f"{str(e).splitlines()[0][:300]} | | |"
                )
                continue
            secs = time.perf_counter() - start
            same, total, first = event_match(big, real, drop_other=lossy)
            share = big.metadata.get("extrapolation_dropped", "")
            rows.append(
                f"| {code.upper()} | {sizes} → {target} ({big.metadata['extrapolation_grid']}) | {mode} | "
                f"{same}/{total} events ({100.0 * same / max(total, 1):.2f}%)"
                f"{'; first difference ' + first if first else ''}{'; ' + share if share else ''} | "
                f"{'equal' if matrices_equal(big, real) else 'differ'} | {secs:.1f} s |"
            )
            table = extrapolation_laws(big)
            varying = table[~table["formula"].str.fullmatch(r"P \(MPI_COMM_WORLD\)")]
            laws_text.append(f"### {code.upper()} ({mode})\n")
            laws_text.append(
                f"{len(table)} law lines; distinct formulas: "
                + ", ".join(
                    sorted(
                        {f.strip() for f in ",".join(varying["formula"]).split(",") if f.strip()}
                    )[:40]
                )
                + "\n"
            )
            break  # lossless worked: no lossy run
        print(rows[-1], flush=True)
    text = "\n".join(
        [
            f"# Extrapolation of NPB class {a.klass}",
            "",
            f"Command: `{command}`",
            "",
            "| code | inputs → target | mode | events reproduced exactly | comm matrices | extrapolation time |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            "## Laws found",
            "",
            *laws_text,
        ]
    )
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
