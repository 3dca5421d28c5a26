"""The blocked pipeline's own cost per message against the in-situ calibration's (issue 35).

    python benchmarks/mk_message_cost.py [--repeats 5] [--config N K SWEEPS ...]

Runs, interleaved, for each (N, K, SWEEPS) at 2 ranks: the untraced program
(tests/py/programs/blocked_pipeline.c, -O2), the same program with its MPI_Send / MPI_Recv
compiled out (every rank computes its blocks alone, the Allreduce per sweep kept), and
``scalatrace.calibrate_in_situ`` with the program's computation per block (the message-free
run's time per block), its strip (N / 2 x N doubles) and K-double messages. The program's cost
per message is (T with messages - T without) / blocks, which still holds one block of fill per
sweep (printed beside it). Time it under ``flock /tmp/scalatrace-timing.lock chrt -f 50``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import scalatrace
from scalatrace._files import write_text

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "py" / "programs" / "blocked_pipeline.c"


def build(work: Path) -> tuple[Path, Path]:
    mpicc = shutil.which("mpicc.mpich") or shutil.which("mpicc") or "mpicc"
    src = PROGRAM.read_text()
    quiet = src.replace("if (rank > 0) MPI_Recv", "if (0) MPI_Recv").replace(
        "if (rank < size - 1) MPI_Send", "if (0) MPI_Send"
    )
    if quiet.count("if (0) MPI_") != 2:
        raise SystemExit("blocked_pipeline.c changed: its Send / Recv lines were not found")
    write_text(work / "quiet.c", quiet)
    exes = work / "with", work / "without"
    for exe, c in zip(exes, (PROGRAM, work / "quiet.c")):
        subprocess.run([mpicc, "-O2", str(c), "-o", str(exe)], check=True)
    return exes


def elapsed(exe: Path, n: int, k: int, sweeps: int) -> float:
    mpiexec = shutil.which("mpiexec.mpich") or "mpiexec"
    out = subprocess.run(
        [mpiexec, "-n", "2", str(exe), str(n), str(k), str(sweeps), "1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.split()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--config",
        type=int,
        nargs="+",
        default=[720, 10, 32, 720, 20, 32, 120, 10, 1024, 120, 20, 1024],
        help="N K SWEEPS triples",
    )
    args = ap.parse_args()
    cfg = [tuple(args.config[i : i + 3]) for i in range(0, len(args.config), 3)]
    work = Path(tempfile.mkdtemp(prefix="mk_message_cost_"))
    with_msg, without = build(work)
    res: dict = {c: {"with": [], "without": [], "cal": []} for c in cfg}
    for _ in range(args.repeats):
        for n, k, s in cfg:
            r = res[(n, k, s)]
            r["with"].append(elapsed(with_msg, n, k, s))
            r["without"].append(elapsed(without, n, k, s))
            w = r["without"][-1] / (s * -(-n // k))
            c = scalatrace.calibrate_in_situ(
                w * 1e9, footprint_bytes=(n // 2) * n * 8, message_bytes=8 * k, reps=50
            )
            r["cal"].append((c.ping_pong.o_s, *c.overhead))
    print(
        "| N | K | W ns | program: (T with - T without) / blocks, each repeat (ns) | fill share "
        "(ns per block) | in situ: ping-pong o_s, o_s, o_r (ns), each repeat |"
    )
    print("|---|---|---|---|---|---|")
    for (n, k, s), r in res.items():
        blocks = s * -(-n // k)
        w = float(np.median(r["without"])) / blocks
        per = [(a - b) / blocks for a, b in zip(r["with"], r["without"])]
        cal = "; ".join(" / ".join(f"{1e9 * x:.0f}" for x in t) for t in r["cal"])
        print(
            f"| {n} | {k} | {1e9 * w:.0f} | {', '.join(f'{1e9 * x:.0f}' for x in per)} | "
            f"{1e9 * w / -(-n // k):.0f} | {cal} |"
        )


if __name__ == "__main__":
    main()
