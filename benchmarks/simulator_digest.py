#!/usr/bin/env python3
"""Digests of simulator predictions: proves that a change to the simulator changes no result.

For a fixed set of traces and option sets, simulates each trace with each option set
(``scalatrace.simulate``) and hashes every field of the result bit for bit: total time, the
per-rank arrays (end time, compute, comm, wait, late sender, late receiver, calls, messages
and bytes sent and received), the per-site rows, the timeline and the per-pair counts, the
event and message totals; or, when the simulation fails, the error's type and message.

Traces (written once into ``--traces``, then reused, so that every build is compared on the
same files):

* harness traces (``scalatrace-harness --wrap``): stencil1d/2d/3d, collectives, rowcol, ... at
  8 to 1,024 ranks;
* real example traces (``build/py/examples``, 4 ranks under the collector, ``scalatrace.trace``)
  when the examples are built. They differ from run to run, so they are traced only when
  missing: keep the directory to compare two builds.

Usage::

    # with the reference build installed: record
    python benchmarks/simulator_digest.py --traces /tmp/digest_traces --out /tmp/digest_main.json
    # after a change: compare (exit status 1 and the differing cases listed if any differs)
    python benchmarks/simulator_digest.py --traces /tmp/digest_traces --out /tmp/digest_new.json \\
        --compare /tmp/digest_main.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import scalatrace
from scalatrace import _paths

REPO = Path(__file__).resolve().parents[1]

# (pattern, ranks, timesteps)
HARNESS = [
    ("stencil1d", 8, 20),
    ("stencil1d", 64, 50),
    ("stencil2d", 16, 20),
    ("stencil2d", 64, 100),
    ("stencil2d", 1024, 20),
    ("stencil3d", 27, 10),
    ("stencil3d", 512, 10),
    ("collectives", 8, 10),
    ("collectives", 64, 10),
    ("collectives", 100, 5),
    ("rowcol", 16, 10),
    ("rowcol", 256, 10),
    # Past 16 MB of rank states the engine prefetches more (cursors, receivers): cover that too.
    ("stencil2d", 4096, 5),
    ("collectives", 4096, 2),
    ("stencil3d", 4096, 3),
]
EXAMPLES = [
    "stencil1d",
    "stencil2d",
    "stencil3d",
    "ring",
    "pipeline",
    "collectives",
    "nonblocking_coll",
    "persistent",
    "waitsome",
    "wildcard_lu",
    "comm_split",
    "alltoallv_is",
    "rank_divergent",
    "iteration_specific",
]

INTRA = scalatrace.LogGP(L=2.0e-7, o_s=1.0e-7, o_r=2.0e-7, g=1.0e-8, G=2.0e-11)
OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "contention": {"contention": True, "ranks_per_node": 4, "size_scale": 300, "intra_node": INTRA},
    "eager_small": {"eager_threshold": 64, "compute_scale": 0.5},
    "sample": {"timing": "sample", "seed": 7},
    "median_sites": {"timing": "median", "site_compute_scale": {0: 2.0, 1: 0.25, 3: 1.5}},
    "timeline_pairs": {"timeline": True, "pair_counts": True},
}


def harness_patterns() -> set[str]:
    out = subprocess.run(
        [str(_paths.tool("scalatrace-harness")), "--help"], capture_output=True, text=True
    )
    return {p for p, _, _ in HARNESS if p in out.stdout + out.stderr}


def make_traces(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    harness = _paths.tool("scalatrace-harness")
    known = harness_patterns()
    paths = []
    for pattern, ranks, steps in HARNESS:
        if pattern not in known:
            print(f"harness has no pattern {pattern}: skipped", file=sys.stderr)
            continue
        path = directory / f"harness_{pattern}_{ranks}x{steps}.sct"
        if not path.is_file():
            subprocess.run(
                [
                    str(harness),
                    "--pattern",
                    pattern,
                    "--ranks",
                    str(ranks),
                    "--timesteps",
                    str(steps),
                    "--wrap",
                    "-o",
                    str(path),
                ],
                check=True,
                capture_output=True,
            )
        paths.append(path)
    examples = Path(os.environ.get("SCALATRACE_BUILD_DIR", REPO / "build" / "py")) / "examples"
    for name in EXAMPLES:
        path = directory / f"example_{name}.sct"
        if not path.is_file() and (examples / name).is_file():
            try:
                scalatrace.trace([str(examples / name)], np=4, out=path, timeout=120)
            except scalatrace.ScalatraceError as e:
                print(f"example {name} not traced: {e}", file=sys.stderr)
                continue
        if path.is_file():
            paths.append(path)
    return paths


def feed(h: Any, value: Any) -> None:
    """Hashes `value` exactly: floats by their bits, arrays by dtype, shape and bytes."""
    if isinstance(value, dict):
        h.update(b"{")
        for k in sorted(value, key=str):
            h.update(str(k).encode() + b":")
            feed(h, value[k])
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for v in value:
            feed(h, v)
        h.update(b"]")
    elif isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        h.update(f"nd{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    elif isinstance(value, (bool, np.bool_)):
        h.update(b"T" if value else b"F")
    elif isinstance(value, (float, np.floating)):
        h.update(b"f" + struct.pack("<d", float(value)))
    elif isinstance(value, (int, np.integer)):
        h.update(b"i" + str(int(value)).encode())
    elif isinstance(value, (str, bytes)):
        h.update(b"s" + (value.encode() if isinstance(value, str) else value))
    else:
        feed(h, np.asarray(value))


SITE_SUMS = ("compute", "comm", "wait", "late_sender", "late_receiver")


def digest(
    trace: scalatrace.Trace, options: dict[str, Any], ignore: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The digest of everything, the digest of everything but the per-site sums, and those
    sums' values: per-site sums are added in the engine's processing order, which gathered
    collectives change (docs/simulator.md), so a comparison may accept them to rounding."""
    try:
        r = scalatrace.simulate(trace, **options)
    except Exception as e:  # noqa: BLE001 (the error is part of the prediction)
        h = hashlib.sha256(f"error {type(e).__name__}: {e}".encode())
        return {"digest": "E:" + h.hexdigest()[:32]}
    raw = {k: v for k, v in r._raw.items() if k not in ignore}  # everything the core returned
    sites = raw.get("sites", {})
    sums = {k: [float(x) for x in sites[k]] for k in SITE_SUMS if k in sites}
    without = dict(raw)
    without["sites"] = {k: v for k, v in sites.items() if k not in SITE_SUMS}
    return {
        "digest": _hash(r, raw),
        "without_site_sums": _hash(r, without),
        "site_sums": sums,
    }


def _hash(r: scalatrace.SimResult, raw: dict[str, Any]) -> str:
    h = hashlib.sha256()
    feed(h, raw)
    feed(
        h,
        [
            r.total_time,
            r.end_time,
            r.compute,
            r.comm,
            r.wait,
            r.late_sender,
            r.late_receiver,
            r.calls,
            r.sent_messages,
            r.recv_messages,
            r.sent_bytes,
            r.recv_bytes,
            r.events,
            r.messages,
        ],
    )
    return h.hexdigest()[:32]


def sums_close(a: dict[str, list[float]], b: dict[str, list[float]], rel: float = 1e-12) -> bool:
    """Per-site sums equal to rounding (the same values added in another order)."""
    if a.keys() != b.keys():
        return False
    for k in a:
        if len(a[k]) != len(b[k]):
            return False
        for x, y in zip(a[k], b[k], strict=True):
            if abs(x - y) > rel * max(abs(x), abs(y)):
                return False
    return True


def compare(reference: dict[str, Any], results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(cases that differ, cases whose per-site sums alone differ, to rounding). A reference
    written before the digests kept the site sums apart (plain strings) compares whole."""
    differ, rounding = [], []
    for k in sorted(set(reference) | set(results)):
        ref, new = reference.get(k), results.get(k)
        if ref is None or new is None:
            differ.append(k)
            continue
        if isinstance(ref, str):
            if ref != new["digest"]:
                differ.append(k)
            continue
        if ref["digest"] == new["digest"]:
            continue
        if (
            "without_site_sums" in ref
            and ref["without_site_sums"] == new.get("without_site_sums")
            and sums_close(ref["site_sums"], new["site_sums"])
        ):
            rounding.append(k)
        else:
            differ.append(k)
    return differ, rounding


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=Path, default=Path("/tmp/simulator_digest_traces"))
    ap.add_argument("--out", type=Path, required=True, help="JSON of {trace/options: digest}")
    ap.add_argument("--compare", type=Path, help="a JSON written by an earlier run")
    ap.add_argument(
        "--ignore-field",
        action="append",
        default=[],
        metavar="NAME",
        help="a field of the core's result left out of the hash (repeatable), to compare with "
        "digests written before the core returned it (e.g. fair_passes, fair_settled)",
    )
    args = ap.parse_args()

    results: dict[str, dict[str, Any]] = {}
    start = time.perf_counter()
    for path in make_traces(args.traces):
        trace = scalatrace.load(path)
        for name, options in OPTION_SETS.items():
            results[f"{path.name}/{name}"] = digest(trace, options, frozenset(args.ignore_field))
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    errors = sum(v["digest"].startswith("E:") for v in results.values())
    print(
        f"{len(results)} digests ({errors} errors) in {time.perf_counter() - start:.1f} s -> {args.out}"
    )
    if args.compare is None:
        return 0
    reference = json.loads(args.compare.read_text())
    differ, rounding = compare(reference, results)
    for k in differ:
        print(f"DIFFERS {k}")
    for k in rounding:
        print(f"site sums to rounding {k}")
    total = len(set(reference) | set(results))
    print(
        f"{total - len(differ) - len(rounding)}/{total} equal to {args.compare}; "
        f"{len(rounding)} equal but for the per-site sums' rounding (relative 1e-12)"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
