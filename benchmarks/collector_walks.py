"""The collector's call-site cost on real applications: stack walks, walks learned for the
walk memo, and the time both take (metadata of the trace, rank 0).

    python benchmarks/collector_walks.py --npb /work/apps/npb-s/bin [--codes mg,lu,cg]
        [--ranks 2] [--repeats 9] [--collector LABEL=PATH ...] [--out FILE.md]

Per repeat and code, one traced run per collector, the collectors in turn (a slow spell of the
machine touches all of them). Each run's trace gives rank 0's ``stack_walks`` (calls walked with
libunwind), ``stack_walks_learned`` (of them, the walks also described for remembering, the
expensive ones), ``stack_walk_ns`` (time walking, describing and interning call sites) and
``collector_ns`` (the collector's whole time after its calls: call sites, recording,
compression). Medians over the repeats. A library built before ``stack_walk_ns`` existed reports
``n/a`` there. Time it under the timing lock at SCHED_FIFO on a shared machine
(docs/collector.md, "Call sites without a walk").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

import scalatrace
from scalatrace import _paths
from scalatrace._files import write_text

KEYS = ("stack_walks", "stack_walks_learned", "stack_walk_ns", "collector_ns", "events")


def traced_metadata(library: str, argv: list[str], ranks: int, work: Path) -> dict[str, float]:
    """Rank 0's call-site figures of one traced run (NaN where the library does not write them)."""
    trace = work / "trace.sct"
    subprocess.run(
        [_paths.mpiexec(), "-genv", "LD_PRELOAD", library, "-n", str(ranks), *argv],
        env=dict(os.environ, SCALATRACE_OUT=str(trace), SCALATRACE_QUIET="1"),
        check=True,
        capture_output=True,
        cwd=work,
        timeout=600,
    )
    meta = scalatrace.load(trace).metadata
    return {k: float(meta[k]) if k in meta else float("nan") for k in KEYS}


def median(values: list[float]) -> float:
    known = [v for v in values if v == v]
    return statistics.median(known) if known else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--npb", required=True, help="directory of the NPB binaries (<code>.S.x)")
    ap.add_argument("--codes", default="mg,lu,cg")
    ap.add_argument("--class", dest="klass", default="S")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument(
        "--collector",
        action="append",
        default=[],
        help="LABEL=PATH of a libscalatrace.so to compare (default: the installed one)",
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.repeats < 1 or args.ranks < 1:
        ap.error("--repeats and --ranks must be at least 1")
    collectors = [tuple(c.split("=", 1)) for c in args.collector] or [
        ("installed", str(_paths.collector_library()))
    ]
    for label, path in collectors:
        if not Path(path).is_file():
            ap.error(f"collector {label}: {path} is not a file")
    codes = [c.strip() for c in args.codes.split(",") if c.strip()]
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for _ in range(args.repeats):
            for code in codes:
                exe = Path(args.npb) / f"{code}.{args.klass}.x"
                for label, path in collectors:
                    runs.setdefault((code, label), []).append(
                        traced_metadata(path, [str(exe)], args.ranks, work)
                    )

    lines = [
        "| code | collector | events | walks | learned | walking (ms) | us per walk | collector (ms) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (code, label), rows in runs.items():
        m = {k: median([r[k] for r in rows]) for k in KEYS}
        walk_ms = m["stack_walk_ns"] / 1e6
        per_walk = m["stack_walk_ns"] / 1e3 / m["stack_walks"] if m["stack_walks"] else float("nan")
        lines.append(
            f"| {code.upper()} | {label} | {m['events']:.0f} | {m['stack_walks']:.0f} | "
            f"{m['stack_walks_learned']:.0f} | {walk_ms:.3f} | {per_walk:.2f} | {m['collector_ns'] / 1e6:.3f} |"
        )
    text = (
        f"Command: `python benchmarks/collector_walks.py --npb {args.npb} --codes {args.codes} "
        f"--ranks {args.ranks} --repeats {args.repeats}"
        + "".join(f" --collector {label}={path}" for label, path in collectors if args.collector)
        + "`. Rank 0, medians of the repeats.\n\n"
        + "\n".join(lines)
        + "\n"
    )
    print(text)
    if args.out:
        write_text(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
