#!/usr/bin/env python3
"""Trace sizes of scalatrace and Pilgrim side by side on the same stencil runs.

Pilgrim (Wang, Balaji, Snir, SC'21; repository pmodels/pilgrim) is built from a source
checkout into a scratch directory outside the repository: it is a peer for comparison, not a
dependency. Both tools trace the same example binaries under real MPICH:

* 1D (8 ranks), 2D (9 ranks), 3D (8 ranks) stencils at 10, 100 and 1,000 timesteps;
* 2D at 4, 9, 16 ranks and 3D at 8, 27 ranks, 100 timesteps.

scalatrace: the size of the merged ``.sct`` file (default settings: timing histograms on).
Pilgrim: the size of its ``pilgrim-logs`` directory, with its default timing
(``PILGRIM_TIMING_MODE=AGGREGATED``: mean duration and interval per function) and with its
histogram timing (``HIST``), the closest to scalatrace's per-node histograms.

    python benchmarks/pilgrim_compare.py --source DIR [--scratch DIR] [--out FILE.md]

``--source``: a Pilgrim source checkout (or ``$PILGRIM_SOURCE``); it is copied into the
scratch directory (default ``$TMPDIR/scalatrace-pilgrim``) and built there with autotools and
``mpicc.mpich`` (needs autoconf, automake, libtool and libzstd-dev). A build that already
exists there is reused. Needs the scalatrace build (``SCALATRACE_BUILD_DIR``, default build/py).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from report import write_report  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "py"))
import helpers  # noqa: E402

from scalatrace._files import write_text  # noqa: E402

# (section title, [(what varies, example, [(ranks, timesteps), ...]), ...])
SECTIONS = [
    (
        "Timesteps (10 / 100 / 1,000)",
        [
            ("timesteps", "stencil1d", [(8, 10), (8, 100), (8, 1000)]),
            ("timesteps", "stencil2d", [(9, 10), (9, 100), (9, 1000)]),
            ("timesteps", "stencil3d", [(8, 10), (8, 100), (8, 1000)]),
        ],
    ),
    (
        "Ranks (100 timesteps)",
        [
            ("ranks", "stencil2d", [(4, 100), (9, 100), (16, 100)]),
            ("ranks", "stencil3d", [(8, 100), (27, 100)]),
        ],
    ),
]
PILGRIM_MODES = ("AGGREGATED", "HIST")


def build_pilgrim(source: Path, scratch: Path) -> Path:
    """Copies `source` to `scratch`/src and builds it; returns the path of libpilgrim.so."""
    lib = scratch / "install" / "lib" / "libpilgrim.so"
    if lib.is_file():
        return lib
    src = scratch / "src"
    if source.resolve() != src.resolve():
        if src.exists():
            shutil.rmtree(src)
        shutil.copytree(source, src, ignore=shutil.ignore_patterns(".git"))
    configure_ac = src / "configure.ac"
    text = configure_ac.read_text()
    if not Path("/usr/share/aclocal/ax_check_compile_flag.m4").exists():
        # AX_CHECK_COMPILE_FLAG([-fcommon], ...) needs autoconf-archive; -fcommon is passed below.
        start = text.find("AX_CHECK_COMPILE_FLAG([-fcommon]")
        if start >= 0:
            end = text.index("\n])", start) + 3
            text = text[:start] + text[end:]
            write_text(configure_ac, text)
    log = scratch / "build.log"
    # -DNDEBUG: Pilgrim asserts that request handles are unique (pilgrim_mpi_objects.c), which
    # MPICH breaks for sends that complete at once (one shared handle); without the assertion
    # it records them (the stencil examples abort otherwise).
    env = dict(os.environ, CC="mpicc.mpich", CFLAGS="-O2 -fcommon -DNDEBUG")
    with open(log, "w") as out:
        for cmd in (
            ["./autogen.sh"],
            ["./configure", f"--prefix={scratch / 'install'}"],
            ["make", "-j2"],
            ["make", "install"],
        ):
            rc = subprocess.run(
                cmd, cwd=src, env=env, stdout=out, stderr=subprocess.STDOUT
            ).returncode
            if rc != 0 and cmd[0] != "./autogen.sh":  # autogen.sh exits 0 on failure anyway
                sys.exit(f"pilgrim_compare: `{' '.join(cmd)}` failed; see {log}")
    if not lib.is_file():
        sys.exit(f"pilgrim_compare: {lib} was not built; see {log}")
    return lib


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def scalatrace_bytes(example: str, ranks: int, timesteps: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "t.sct"
        env = helpers.collector_env(out=out, quiet=1)
        helpers.run_mpi(
            ranks,
            [helpers.example_path(example), "-i", str(timesteps)],
            env=env,
            timeout=1800,
            cwd=tmp,
        )
        return out.stat().st_size


def pilgrim_bytes(lib: Path, mode: str, example: str, ranks: int, timesteps: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        env = {"LD_PRELOAD": str(lib), "PILGRIM_TIMING_MODE": mode}
        helpers.run_mpi(
            ranks,
            [helpers.example_path(example), "-i", str(timesteps)],
            env=env,
            timeout=1800,
            cwd=tmp,
        )
        logs = Path(tmp) / "pilgrim-logs"
        if not logs.is_dir():
            raise helpers.MPIRunError(
                f"Pilgrim wrote no pilgrim-logs for {example} on {ranks} ranks"
            )
        return directory_bytes(logs)


def measure(lib: Path, example: str, ranks: int, timesteps: int) -> dict[str, int]:
    row = {"scalatrace": scalatrace_bytes(example, ranks, timesteps)}
    for mode in PILGRIM_MODES:
        row[mode] = pilgrim_bytes(lib, mode, example, ranks, timesteps)
    return row


def table_row(label: list[str], m: dict[str, int]) -> str:
    best_pilgrim = min(m[mode] for mode in PILGRIM_MODES)
    ratio = m["scalatrace"] / best_pilgrim
    return (
        "| "
        + " | ".join(
            label
            + [f"{m['scalatrace']:,}"]
            + [f"{m[mode]:,}" for mode in PILGRIM_MODES]
            + [f"{ratio:.2f}"]
        )
        + " |"
    )


def spread(values: list[int]) -> str:
    return f"{(max(values) - min(values)) / min(values) * 100:.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--source",
        default=os.environ.get("PILGRIM_SOURCE"),
        help="Pilgrim source checkout (default $PILGRIM_SOURCE)",
    )
    ap.add_argument("--scratch", default=str(Path(tempfile.gettempdir()) / "scalatrace-pilgrim"))
    ap.add_argument("--out", help="write the Markdown report here (default: print)")
    a = ap.parse_args()
    scratch = Path(a.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    if not (scratch / "install" / "lib" / "libpilgrim.so").is_file():
        if not a.source or not Path(a.source, "configure.ac").is_file():
            sys.exit(
                "pilgrim_compare: give a Pilgrim source checkout (repository pmodels/pilgrim) "
                "with --source DIR or PILGRIM_SOURCE"
            )
    lib = build_pilgrim(Path(a.source) if a.source else scratch / "src", scratch)
    started = time.perf_counter()
    header = [
        "| example | ranks | timesteps | scalatrace .sct bytes | Pilgrim bytes (AGGREGATED timing) "
        "| Pilgrim bytes (HIST timing) | scalatrace / smaller Pilgrim |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines = [
        "# Trace size: scalatrace vs Pilgrim on the stencil examples",
        "",
        f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
        f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()}), MPICH, real "
        "`mpiexec` runs (oversubscribed beyond 2 ranks; sizes do not depend on timing).",
        "",
        "Command: `python benchmarks/pilgrim_compare.py --source PILGRIM_CHECKOUT "
        "--out benchmarks/results/pilgrim.md`",
        "",
        "scalatrace: merged `.sct` with default settings (timing histograms per node kept). "
        "Pilgrim: total size of `pilgrim-logs/` with its default timing (`AGGREGATED`: mean "
        "duration and interval per function only) and with `HIST` timing (histograms). "
        "Ratio < 1: scalatrace is smaller than the smaller of the two Pilgrim figures. "
        "Pilgrim (pmodels/pilgrim, newest snapshot) is built with `-DNDEBUG`: its assertion "
        "that request handles are unique aborts on MPICH's shared handle for sends that "
        "complete at once.",
        "",
    ]
    growth: list[str] = []
    for title, series in SECTIONS:
        lines += [f"## {title}", ""] + header
        for varies, example, runs in series:
            sizes = []
            for ranks, steps in runs:
                m = measure(lib, example, ranks, steps)
                sizes.append(m["scalatrace"])
                lines.append(table_row([example, str(ranks), str(steps)], m))
                print(lines[-1], flush=True)
            values = "/".join(str(r if varies == "ranks" else t) for r, t in runs)
            growth.append(
                f"- {example}, {varies} {values}: scalatrace size spread {spread(sizes)} "
                f"(largest / smallest - 1)"
            )
        lines.append("")
    lines += ["", "## Constancy of the scalatrace trace", ""] + growth
    lines += ["", f"Total benchmark time {time.perf_counter() - started:.0f} s.", ""]
    write_report(lines, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
