"""``python -m scalatrace.demo``: trace the bundled 2D stencil and show what scalatrace sees.

Runs ``$SCALATRACE_BUILD_DIR/examples/stencil2d`` (or, when no build tree has it, the example
built from the installed sources with ``mpicc`` into ``./demo-output/bin/``) on 9 ranks under the collector with raw mode
and compressed output into ``./demo-output/``, then prints what was recorded, the trace size
beside the raw size, the summary and the timestep loop, writes a heatmap, and replays the trace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ._files import save_figure
from ._launch import trace
from ._raw import read_raw
from ._trace import load
from .errors import ScalatraceError

REPO_ROOT = Path(__file__).resolve().parents[2]


SOURCES = Path(__file__).resolve().parent / "example_sources"
"""Where the wheel installs the demo example's C sources (CMakeLists.txt)."""

EXAMPLE_FLAGS = [
    "-O0",
    "-g",
    "-fno-omit-frame-pointer",
    "-fno-inline",
    "-fno-optimize-sibling-calls",
]
"""The flags examples/CMakeLists.txt builds the examples with (one call site per MPI call)."""


def _example(name: str, outdir: Path) -> Path:
    """The example program ``name``: from a build tree, else built from the installed sources."""
    candidates = []
    if os.environ.get("SCALATRACE_BUILD_DIR"):
        candidates.append(Path(os.environ["SCALATRACE_BUILD_DIR"]) / "examples" / name)
    candidates.append(Path.cwd() / "build" / "py" / "examples" / name)
    candidates.append(REPO_ROOT / "build" / "py" / "examples" / name)
    for c in candidates:
        if c.is_file():
            return c
    return build_example(name, outdir / "bin", looked_in=[c.parent for c in candidates])


def build_example(name: str, bindir: Path, looked_in: list[Path] | None = None) -> Path:
    """Compiles ``<name>.c`` of the installed example sources with MPICH's ``mpicc`` into
    ``bindir`` (kept: built again only when a source is newer).

    Raises
    ------
    ScalatraceError
        If the sources or an MPI C compiler are missing, or the compiler fails.
    """
    source = SOURCES / f"{name}.c"
    where = ", ".join(str(p) for p in looked_in or [])
    if not source.is_file():
        raise ScalatraceError(
            f"example {name!r} not found (looked in {where or 'no build tree'}) and its source is "
            f"not installed in {SOURCES}; run `make build` or set SCALATRACE_BUILD_DIR"
        )
    compiler = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    if compiler is None:
        raise ScalatraceError(
            f"example {name!r} is not built and no MPI C compiler was found to build it "
            "(mpicc.mpich or mpicc; Debian: apt-get install libmpich-dev)"
        )
    exe = bindir / name
    sources = [source, SOURCES / "truth.c"]
    newest = max(p.stat().st_mtime for p in [*sources, SOURCES / "truth.h"])
    if exe.is_file() and exe.stat().st_mtime >= newest:
        return exe
    bindir.mkdir(parents=True, exist_ok=True)
    cmd = [
        compiler,
        "-std=gnu11",
        *EXAMPLE_FLAGS,
        "-I",
        str(SOURCES),
        *map(str, sources),
        "-o",
        str(exe),
    ]
    print(f"== building {name} with {Path(compiler).name} (no build tree has it)", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ScalatraceError(
            f"building example {name!r} failed ({' '.join(cmd)}):\n{proc.stderr.strip()[-2000:]}"
        )
    return exe


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    nranks, iterations = 9, 8
    outdir = Path("demo-output").resolve()
    outdir.mkdir(exist_ok=True)
    program = _example("stencil2d", outdir)
    print(f"== tracing {program.name} on {nranks} ranks, {iterations} timesteps")
    t0 = time.perf_counter()
    sct = outdir / "stencil2d.sct"
    try:
        t = trace([str(program), "-i", str(iterations)], np=nranks, out=sct, raw=outdir / "raw")
    except ScalatraceError as e:
        if "wrote no trace" not in str(e) or not any((outdir / "raw").glob("rank-*.straw")):
            raise
        # A collector without compressed output: compress the raw recording the same way.
        print("   (the collector wrote no compressed trace; compressing the raw recording offline)")
        read_raw(outdir / "raw").compress().save(sct)
        t = load(sct)
    run_time = time.perf_counter() - t0
    print(f"   run took {run_time:.2f} s (mpiexec start-up included)")

    raw = read_raw(outdir / "raw")
    sct_size, raw_size = _size(outdir / "stencil2d.sct"), _size(outdir / "raw")
    print("\n== what was recorded")
    frame = raw.to_dataframe()  # functions recorded as Other under their own names
    ops = (
        frame.groupby([frame["op"].astype(str), frame.index.get_level_values("rank")])
        .size()
        .unstack(fill_value=0)
        .reindex(columns=range(nranks), fill_value=0)
    )
    print("   calls per rank:")
    for op, counts in ops.iterrows():
        print(f"     {op:<12} " + " ".join(f"{c:4d}" for c in counts))
    sent = raw.comm_matrix("bytes", "p2p").sum(axis=1)
    print("   p2p bytes sent per rank: " + " ".join(f"{int(b)}" for b in sent))
    print(f"   {raw.event_count()} events in total")
    print("\n== files")
    print(f"   compressed trace  {outdir / 'stencil2d.sct'}  {sct_size:>9,} bytes")
    print(
        f"   raw recording     {outdir / 'raw'}/  {raw_size:>9,} bytes  ({raw_size / max(sct_size, 1):.1f}x larger)"
    )

    print("\n== the compressed trace")
    print(f"   {t!r}")
    print("   " + t.dump(max_nodes=30).replace("\n", "\n   "))
    print("\n== summary (from the compressed trace)")
    print("   " + t.summary().to_string(index=False).replace("\n", "\n   "))
    for loop in t.timestep_loops():
        print(f"\n   timestep loop: {loop!r}")

    same = np.array_equal(t.comm_matrix("bytes", "all"), raw.comm_matrix("bytes", "all"))
    print(f"\n   comm matrix from the trace == from the raw recording: {same}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import plot

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    plot.comm_heatmap(t, metric="bytes", kind="p2p", ax=axes[0])
    plot.op_bars(t, value="calls", ax=axes[1])
    fig.tight_layout()
    png = outdir / "heatmap.png"
    save_figure(fig, png, dpi=110)
    plt.close(fig)
    print(f"\n== heatmap written to {png}")

    from .report import write_report

    page = write_report(t, outdir / "report.html", raw=raw)
    print(
        f"== report (summary, heatmap, timeline, imbalance, critical path, loops) written to {page}"
    )

    try:
        from .replay import replay
    except ImportError:
        replay = None  # type: ignore[assignment]
    if replay is not None:
        print("\n== replaying the trace")
        try:
            result = replay(outdir / "stencil2d.sct", timeout=30)
            table = t.summary()
            keep = ~np.isin(table["op"], ["Init", "Init_thread", "Finalize"])
            original = (
                (table["duration_ns"][keep].sum() + table["compute_ns"][keep].sum()) / nranks / 1e9
            )
            print(
                f"   original: ~{original:.4f} s per rank (MPI calls + compute between them, Init/Finalize excluded)"
            )
            print(f"   replay:    {result.total_time:.4f} s (slowest rank)")
        except ScalatraceError as e:
            print(f"   replay failed: {e}")
    print(f"\nDone. Files are in {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
