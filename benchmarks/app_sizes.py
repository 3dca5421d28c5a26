#!/usr/bin/env python3
"""Trace sizes of scalatrace and Pilgrim on real applications (NPB 3.4-MPI class S, LULESH 2.0).

Issue 30's benchmark. Both tools trace the same application binaries under MPICH with their
default settings:

* scalatrace: the collector ``libscalatrace.so`` preloaded with ``SCALATRACE_OUT`` and
  ``SCALATRACE_RAW``; the merged ``.sct`` is checked lossless on every rank against the raw
  streams (``scalatrace-dump check``); the bytes per part of the file (sections, the node
  tree's structure and its timing) from ``scalatrace.byte_breakdown`` (in an entropy-coded
  file, each part's share of the coded bytes): structure = the file without header, metadata
  and timing.
* Pilgrim (pmodels/pilgrim, Wang, Balaji, Snir, SC'21): ``libpilgrim.so`` preloaded, default
  mode (``PILGRIM_TIMING_MODE`` unset = aggregated timing); its size is the sum of the files in
  ``pilgrim-logs/``.

Rows: NPB LU, CG, MG, FT, IS, EP at 4, 8, 16 ranks and BT, SP at 4, 9, 16 ranks (class S,
default input), LULESH at 8 and 27 ranks (``-s 8 -i 20``). Then timestep growth (LU on 4 ranks
with itmax 25 / 50 / 100 through ``inputlu.data``; LULESH on 8 ranks with ``-i 10 / 20 / 40``)
and rank growth (from the first table).

    python benchmarks/app_sizes.py --npb NPB/bin --lulesh LULESH/lulesh2.0 --pilgrim PILGRIM \\
        [--build DIR] [--apps lu,cg,...,lulesh] [--ranks 4,8,9,16,27] [--no-growth]
        [--timeout 1800] [--out FILE.md]

Nothing is fetched or built here: the applications and Pilgrim are built by hand outside the
repository (``/work/apps/README.txt`` on the machine the results were measured on has the
exact commands):

* ``--npb``: the ``bin`` directory of an NPB3.4-MPI build holding ``lu.S.x`` ... ``sp.S.x``
  (``config/make.def`` from ``make.def.template`` with ``mpif90.mpich`` / ``mpicc.mpich``, then
  ``make lu CLASS=S`` and so on; NPB 3.4 takes the rank count at run time).
* ``--lulesh``: the ``lulesh2.0`` executable (LLNL/LULESH, ``make CXX="mpicxx.mpich
  -DUSE_MPI=1" CXXFLAGS="-g -O2 -I. -Wall" LDFLAGS="-g -O2"``: MPI on, OpenMP off).
* ``--pilgrim``: a Pilgrim install prefix (``lib/libpilgrim.so`` under it), its ``lib``
  directory or the library itself; ``pilgrim_compare.build_pilgrim`` builds one against MPICH.
* ``--build``: the scalatrace build directory (default ``$SCALATRACE_BUILD_DIR``, else
  build/py) with ``cpp/pmpi/libscalatrace.so`` and ``cpp/tools/scalatrace-{dump,harness}``.

Runs are oversubscribed when there are more ranks than cores: sizes do not depend on speed
(the wall times in the report do, and include writing the raw streams).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from pilgrim_compare import directory_bytes  # noqa: E402
from report import write_report  # noqa: E402

from scalatrace._files import write_text  # noqa: E402

NPB_APPS = ("lu", "cg", "mg", "ft", "is", "ep", "bt", "sp")
SQUARE_APPS = {"bt", "sp"}  # NPB BT and SP need a square rank count
NPB_RANKS = (4, 8, 16)
SQUARE_RANKS = (4, 9, 16)
LULESH_RANKS = (8, 27)  # LULESH needs a cube
LULESH_ARGS = ["-s", "8", "-i", "20", "-q"]
LU_ITMAX = (25, 50, 100)  # class S default: 50
LULESH_ITERATIONS = (10, 20, 40)

# Parts of a .sct file as scalatrace.byte_breakdown names them, and the names used in the report.
PARTS = {
    "header": "header",
    "metadata": "metadata",
    "call-site table": "call sites",
    "names table": "names",
    "ranklist table": "rank lists",
    "value-sequence table": "value seqs",
    "array-sequence table": "array seqs",
    "elastic-value table": "elastic values",
    "elastic-array table": "elastic arrays",
    "communicator table": "comms",
    "node tree": "node tree",
    "timing": "timing",
    "rank clusters": "rank clusters",
    "rank segments": "rank segments",
}


@dataclass
class Row:
    app: str
    ranks: int
    argv: str = ""
    sct: int | None = None
    structure: int | None = None
    timing: int | None = None
    lossless: str = "?"
    events: int | None = None
    nodes: int | None = None
    sections: dict[str, int] = field(default_factory=dict)
    pilgrim: int | None = None
    pilgrim_files: dict[str, int] = field(default_factory=dict)
    wall_scalatrace: float | None = None
    wall_pilgrim: float | None = None
    notes: list[str] = field(default_factory=list)

    def ratio(self, value: int | None) -> str:
        return f"{value / self.pilgrim:.2f}" if value and self.pilgrim else "-"


def fmt(value: int | float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:.1f}"


def sct_sections(path: Path) -> dict[str, int]:
    """Bytes of the file per part (``scalatrace.byte_breakdown``: each section with its
    id/length prefix, the node tree's structure and timing apart, rank segments); in an
    entropy-coded file, each part's share of the coded bytes."""
    import scalatrace

    frame = scalatrace.byte_breakdown(path)
    return {
        PARTS.get(part, part): int(round(stored))
        for part, stored in zip(frame["part"], frame["stored_bytes"])
    }


class Runner:
    """Runs an application under each tool; `build` is the scalatrace build directory."""

    def __init__(self, build: Path, pilgrim_lib: Path, timeout: float, workdir: Path):
        self.collector = build / "cpp" / "pmpi" / "libscalatrace.so"
        self.dump = build / "cpp" / "tools" / "scalatrace-dump"
        self.harness = build / "cpp" / "tools" / "scalatrace-harness"
        for p in (self.collector, self.dump, self.harness):
            if not p.is_file():
                sys.exit(f"app_sizes: {p} not found; give the scalatrace build with --build")
        self.pilgrim_lib = pilgrim_lib
        self.timeout = timeout
        self.workdir = workdir

    def mpirun(self, ranks: int, argv: list[str], env: dict[str, str], cwd: Path) -> float:
        cmd = (
            ["mpiexec.mpich", "-n", str(ranks), "env"] + [f"{k}={v}" for k, v in env.items()] + argv
        )
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=self.timeout)
        wall = time.perf_counter() - start
        write_text(cwd / "stdout.txt", proc.stdout + proc.stderr)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
            raise RuntimeError(f"`{' '.join(cmd)}` exited with {proc.returncode}:\n{tail}")
        return wall

    def tool(self, exe: Path, args: list[str]) -> tuple[int, str]:
        proc = subprocess.run(
            [str(exe)] + [str(a) for a in args],
            capture_output=True,
            text=True,
            timeout=self.timeout,
        )
        return proc.returncode, proc.stdout + proc.stderr

    def measure(self, row: Row, argv: list[str], inputs: dict[str, str] | None = None) -> Row:
        row.argv = " ".join([Path(argv[0]).name] + argv[1:])
        with tempfile.TemporaryDirectory(dir=self.workdir) as tmp:
            for tool in ("scalatrace", "pilgrim"):
                cwd = Path(tmp) / tool
                cwd.mkdir()
                for name, text in (inputs or {}).items():
                    write_text(cwd / name, text)
                try:
                    if tool == "scalatrace":
                        self.scalatrace(row, argv, cwd)
                    else:
                        self.pilgrim(row, argv, cwd)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    first = str(exc).splitlines()[0][:200]
                    row.notes.append(f"{tool}: {first}")
                    print(
                        f"app_sizes: {row.app} on {row.ranks} ranks, {tool}: {exc}", file=sys.stderr
                    )
        return row

    def scalatrace(self, row: Row, argv: list[str], cwd: Path) -> None:
        raw, out = cwd / "raw", cwd / "t.sct"
        # Relative to the run's directory, as a user writes them: the settings are stored in
        # the trace's metadata, and a temporary directory's random name would add ~25 bytes.
        env = {
            "LD_PRELOAD": str(self.collector),
            "SCALATRACE_OUT": out.name,
            "SCALATRACE_RAW": raw.name,
            "SCALATRACE_QUIET": "1",
        }
        row.wall_scalatrace = self.mpirun(row.ranks, argv, env, cwd)
        row.sct = out.stat().st_size
        row.sections = sct_sections(out)
        code, text = self.tool(self.dump, ["check", raw, out])
        try:
            check = json.loads(text)
        except json.JSONDecodeError:
            check = {"ok": False}
            row.notes.append(f"check: {text.strip()[:200]}")
        row.lossless = "yes" if code == 0 and check.get("ok") else "NO"
        row.events, row.nodes = check.get("events"), check.get("trace_nodes")
        code, text = self.tool(self.harness, ["merge-raw", raw, "-o", cwd / "offline.sct"])
        if code != 0:
            raise RuntimeError(f"scalatrace-harness merge-raw failed: {text.strip()[:200]}")
        stats = json.loads(text)
        # Structure and timing as the file stores them (entropy-coded shares): the file less its
        # header and metadata, and the events' timing.
        row.timing = row.sections.get("timing", 0)
        row.structure = (
            row.sct - row.timing - row.sections.get("metadata", 0) - row.sections.get("header", 0)
        )
        row.notes.append(
            f"plain (before coding): structure {stats['structure_bytes']:,} B, timing {stats['timing_bytes']:,} B"
        )

    def pilgrim(self, row: Row, argv: list[str], cwd: Path) -> None:
        row.wall_pilgrim = self.mpirun(row.ranks, argv, {"LD_PRELOAD": str(self.pilgrim_lib)}, cwd)
        logs = cwd / "pilgrim-logs"
        if not logs.is_dir():
            raise RuntimeError("Pilgrim wrote no pilgrim-logs")
        row.pilgrim = directory_bytes(logs)
        row.pilgrim_files = {
            p.name: p.stat().st_size for p in sorted(logs.rglob("*")) if p.is_file()
        }


def lu_input(itmax: int) -> str:
    """inputlu.data for LU class S (12^3 grid, dt 0.5, omega 1.2) with `itmax` steps, the norm
    computed once at the end (inorm = itmax, as in the class default)."""
    return (
        "c\nc ipr, inorm\n"
        f"  1 {itmax}\n"
        "c\nc itmax\n"
        f"  {itmax}\n"
        "c\nc dt\n  0.5\n"
        "c\nc omega\n  1.2\nc\nc tolrsd(1..5)\n  1.0e-08 1.0e-08 1.0e-08 1.0e-08 1.0e-08\n"
        "c\nc nx ny nz\n  12 12 12\n"
    )


def pilgrim_library(path: Path) -> Path:
    for candidate in (
        path,
        path / "libpilgrim.so",
        path / "lib" / "libpilgrim.so",
        path / "install" / "lib" / "libpilgrim.so",
    ):
        if candidate.is_file():
            return candidate
    sys.exit(f"app_sizes: no libpilgrim.so at or under {path}")


def main_rows(apps: list[str], ranks_filter: set[int] | None) -> list[tuple[str, int]]:
    rows = []
    for app in apps:
        counts = (
            LULESH_RANKS if app == "lulesh" else SQUARE_RANKS if app in SQUARE_APPS else NPB_RANKS
        )
        rows += [(app, n) for n in counts if ranks_filter is None or n in ranks_filter]
    return rows


def breakdown_columns(rows: list[Row]) -> list[str]:
    seen: list[str] = []
    for name in PARTS.values():
        if any(r.sections.get(name) for r in rows):
            seen.append(name)
    return seen


def growth(values: list[int | None]) -> str:
    if not values or None in values or not values[0]:
        return "-"
    return f"{values[-1] / values[0]:.2f}x"


def report(
    rows: list[Row],
    series: list[tuple[str, str, list[Row]]],
    build: Path,
    pilgrim_lib: Path,
    total: float,
) -> list[str]:
    """The Markdown report: sizes, rank growth, timestep growth, bytes per section, Pilgrim's files,
    wall times and failures."""
    now = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()
    cmd = " ".join(["python benchmarks/app_sizes.py"] + sys.argv[1:])
    lines = [
        "# Trace size on real applications: scalatrace vs Pilgrim (issue 30)",
        "",
        f"Measured {now:%Y-%m-%d %H:%M} UTC on {platform.node()} ({os.cpu_count()} cores, "
        f"{platform.machine()}, load average at the end {load[0]:.1f}), MPICH, real `mpiexec.mpich` "
        "runs, oversubscribed beyond 2 ranks (sizes do not depend on speed; wall times do).",
        "",
        f"Command: `{cmd}`",
        "",
        f"scalatrace build: `{build}`. Pilgrim library: `{pilgrim_lib}`.",
        "",
        "scalatrace: merged `.sct`, default settings (timing histograms on), raw streams written too "
        "for the check; *lossless* = `scalatrace-dump check RAW t.sct` passes on every rank; "
        "*structure* = the file without its header, metadata and timing, *timing* = the events' "
        "timing histograms, both as the file stores them (`scalatrace.byte_breakdown`: in an "
        "entropy-coded file, each part's share of the coded bytes). Pilgrim: sum of the files in "
        "`pilgrim-logs/`, default mode (aggregated timing: mean duration and interval per call "
        "signature). Ratio > 1: scalatrace is larger.",
        "",
        "## Sizes (NPB class S default input; LULESH `-s 8 -i 20`)",
        "",
        "| app | ranks | scalatrace .sct bytes | structure bytes | timing bytes | Pilgrim bytes "
        "| .sct / Pilgrim | structure / Pilgrim | lossless | events | nodes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.app} | {r.ranks} | {fmt(r.sct)} | {fmt(r.structure)} | {fmt(r.timing)} | "
            f"{fmt(r.pilgrim)} | {r.ratio(r.sct)} | {r.ratio(r.structure)} | {r.lossless} | "
            f"{fmt(r.events)} | {fmt(r.nodes)} |"
        )
    done = [r for r in rows if r.sct and r.pilgrim]
    larger = sum(1 for r in done if r.sct > r.pilgrim)
    lines += [
        "",
        f"scalatrace larger than Pilgrim in {larger} of {len(done)} rows; "
        f"lossless on every rank in {sum(r.lossless == 'yes' for r in rows)} of {len(rows)} rows.",
        "",
    ]

    lines += [
        "## Rank growth (largest / smallest rank count of each app)",
        "",
        "| app | ranks | scalatrace .sct | structure | Pilgrim |",
        "|---|---|---:|---:|---:|",
    ]
    for app in dict.fromkeys(r.app for r in rows):
        mine = [r for r in rows if r.app == app]
        if len(mine) > 1:
            lines.append(
                f"| {app} | {mine[0].ranks} -> {mine[-1].ranks} | {growth([r.sct for r in mine])} | "
                f"{growth([r.structure for r in mine])} | {growth([r.pilgrim for r in mine])} |"
            )
    lines.append("")

    if series:
        lines += [
            "## Timestep growth",
            "",
            "| run | steps | scalatrace .sct bytes | structure bytes | timing bytes | Pilgrim bytes "
            "| .sct / Pilgrim | lossless | events |",
            "|---|---:|---:|---:|---:|---:|---:|---|---:|",
        ]
        for title, steps, srows in series:
            for step, r in zip(steps.split("/"), srows):
                lines.append(
                    f"| {title} | {step} | {fmt(r.sct)} | {fmt(r.structure)} | {fmt(r.timing)} | "
                    f"{fmt(r.pilgrim)} | {r.ratio(r.sct)} | {r.lossless} | {fmt(r.events)} |"
                )
        lines += ["", "Growth from the fewest to the most steps:", ""]
        for title, steps, srows in series:
            lines.append(
                f"- {title} {steps}: scalatrace {growth([r.sct for r in srows])} "
                f"(structure {growth([r.structure for r in srows])}), "
                f"Pilgrim {growth([r.pilgrim for r in srows])}"
            )
        lines.append("")

    every = rows + [r for _, _, s in series for r in s]
    columns = breakdown_columns(every)
    lines += [
        "## Where scalatrace's bytes go (`scalatrace stats --bytes`)",
        "",
        "Each part's share of the file (sections with their id/length prefix; the node tree's "
        "structure and its events' timing apart); in an entropy-coded file (format version 8), "
        "what coding the part's bytes cost.",
        "",
        "| app | ranks | " + " | ".join(columns) + " |",
        "|---|---:|" + "---:|" * len(columns),
    ]
    for r in rows:
        lines.append(
            f"| {r.app} | {r.ranks} | " + " | ".join(fmt(r.sections.get(c)) for c in columns) + " |"
        )
    pilgrim_names = sorted({name for r in every for name in r.pilgrim_files})
    lines += [
        "",
        "## Pilgrim's files (`pilgrim-logs/`)",
        "",
        "| app | ranks | " + " | ".join(pilgrim_names) + " |",
        "|---|---:|" + "---:|" * len(pilgrim_names),
    ]
    for r in rows:
        lines.append(
            f"| {r.app} | {r.ranks} | "
            + " | ".join(fmt(r.pilgrim_files.get(n)) for n in pilgrim_names)
            + " |"
        )
    lines += [
        "",
        "## Wall time per run (s; oversubscribed, the scalatrace run also writes raw streams)",
        "",
        "| app | ranks | scalatrace | Pilgrim |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r.app} | {r.ranks} | {fmt(r.wall_scalatrace)} | {fmt(r.wall_pilgrim)} |")
    notes = [f"- {r.app} {r.ranks} ({r.argv}): {n}" for r in every for n in r.notes]
    if notes:
        lines += ["", "## Notes per run (plain sizes before coding; failures)", ""] + notes
    lines += ["", f"Total benchmark time {total:.0f} s.", ""]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--npb", help="NPB3.4-MPI bin directory (lu.S.x ...)")
    ap.add_argument("--lulesh", help="LULESH 2.0 executable (lulesh2.0, built with MPI)")
    ap.add_argument(
        "--pilgrim", required=True, help="Pilgrim install prefix, lib dir or libpilgrim.so"
    )
    ap.add_argument(
        "--build",
        default=os.environ.get("SCALATRACE_BUILD_DIR", str(ROOT / "build" / "py")),
        help="scalatrace build directory (default $SCALATRACE_BUILD_DIR, else build/py)",
    )
    ap.add_argument(
        "--apps", default=",".join(NPB_APPS + ("lulesh",)), help="comma-separated subset"
    )
    ap.add_argument(
        "--ranks", help="comma-separated rank counts to keep (default: all of each app's)"
    )
    ap.add_argument("--no-growth", action="store_true", help="skip the timestep-growth runs")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    ap.add_argument(
        "--workdir", default=tempfile.gettempdir(), help="where the runs write (temporary dirs)"
    )
    ap.add_argument("--out", help="write the Markdown report here (default: print)")
    a = ap.parse_args()

    apps = [x.strip().lower() for x in a.apps.split(",") if x.strip()]
    for app in apps:
        if app not in NPB_APPS and app != "lulesh":
            sys.exit(f"app_sizes: unknown app {app!r} (known: {', '.join(NPB_APPS)}, lulesh)")
    if any(app in NPB_APPS for app in apps) and not a.npb:
        sys.exit("app_sizes: give the NPB bin directory with --npb")
    if "lulesh" in apps and not a.lulesh:
        sys.exit("app_sizes: give the LULESH executable with --lulesh")
    ranks_filter = {int(x) for x in a.ranks.split(",")} if a.ranks else None
    build = Path(a.build).resolve()
    runner = Runner(build, pilgrim_library(Path(a.pilgrim).resolve()), a.timeout, Path(a.workdir))

    def argv_of(app: str, extra: list[str] | None = None) -> list[str]:
        if app == "lulesh":
            return [str(Path(a.lulesh).resolve())] + (extra or LULESH_ARGS)
        binary = Path(a.npb).resolve() / f"{app}.S.x"
        if not binary.is_file():
            sys.exit(f"app_sizes: {binary} not found")
        return [str(binary)]

    def label(app: str) -> str:
        return "LULESH" if app == "lulesh" else app.upper()

    started = time.perf_counter()
    rows: list[Row] = []
    for app, n in main_rows(apps, ranks_filter):
        row = runner.measure(Row(label(app), n), argv_of(app))
        rows.append(row)
        print(
            f"{row.app} {n}: sct {row.sct} structure {row.structure} pilgrim {row.pilgrim} "
            f"lossless {row.lossless} ({row.wall_scalatrace or 0:.0f} s / {row.wall_pilgrim or 0:.0f} s)",
            flush=True,
        )

    series: list[tuple[str, str, list[Row]]] = []
    if not a.no_growth:
        if "lu" in apps:
            lu_rows = [
                runner.measure(Row("LU", 4), argv_of("lu"), {"inputlu.data": lu_input(k)})
                for k in LU_ITMAX
            ]
            series.append(
                ("LU, 4 ranks, itmax (inputlu.data)", "/".join(map(str, LU_ITMAX)), lu_rows)
            )
        if "lulesh" in apps:
            lulesh_rows = [
                runner.measure(Row("LULESH", 8), argv_of("lulesh", ["-s", "8", "-i", str(k), "-q"]))
                for k in LULESH_ITERATIONS
            ]
            series.append(
                ("LULESH, 8 ranks, -i", "/".join(map(str, LULESH_ITERATIONS)), lulesh_rows)
            )
    total = time.perf_counter() - started

    write_report(report(rows, series, build, runner.pilgrim_lib, total), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
