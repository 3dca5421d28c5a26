"""Shared helpers for the real-MPI tests: where things are built, how to run them.

Import from test modules as ``import helpers`` (``tests/py`` is on ``sys.path`` through
``conftest.py``); the fixtures in ``conftest.py`` wrap the same functions.

Locations
---------
* ``build_dir()``: ``$SCALATRACE_BUILD_DIR`` (exported by ``make``), else ``<repo>/build/py``.
* ``example_path(name)``: ``<build>/examples/<name>`` (built with ``SCALATRACE_BUILD_TESTS=ON``).
* ``collector_library()``: ``$SCALATRACE_COLLECTOR`` if set, else the installed package's
  ``scalatrace/lib/libscalatrace.so`` (``scalatrace._paths``), else
  ``<build>/cpp/pmpi/libscalatrace.so``.
* ``tool_path(name)``: the installed package's ``scalatrace/bin/<name>``, else
  ``<build>/cpp/tools/<name>`` (then ``<build>/cpp/replay/<name>``).

Running
-------
* ``run_mpi(n, argv, env=None, timeout=60)``: ``mpiexec.mpich -n N env K=V... argv``; returns the
  ``subprocess.CompletedProcess`` (text mode) and raises ``MPIRunError`` (with the command,
  exit code, stdout and stderr in the message) if the run fails or times out.
* ``collector_env(raw=None, out="none", **more)``: the environment for a run under the collector
  (``LD_PRELOAD``, ``SCALATRACE_RAW``, ``SCALATRACE_OUT``, plus ``SCALATRACE_<KEY>=value`` for
  every keyword).
* ``dump_raw(raw_dir)``: ``scalatrace-dump raw DIR`` parsed from JSON (see docs/examples.md).
* ``read_truth(truth_dir, nranks)``: the examples' ground truth, one list of dicts per rank.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# Sentinels of cpp/core/include/scalatrace/model/event.hpp
K_ANY_SOURCE = -(1 << 40)
K_PROC_NULL = K_ANY_SOURCE - 1
K_ANY_TAG = -(1 << 40)
K_NULL_REQUEST = -(1 << 40)
K_UNDEFINED = -(1 << 40) - 2
K_NO_COMM = -(1 << 40) - 3

#: C flags for the generated C of coNCePTuaL benchmarks that tests compile and do not time
#: (scalatrace.conceptual.compile_conceptual): -O0 instead of the compiler's -g -O2 takes a
#: seventh of the C compiler's time on the largest (18-role) program.
NCPTL_CFLAGS = "-O0"

# Ops that create one request (handle-buffer slot), as op_creates_request() in op.hpp.
# One small real run of every example: (example, ranks, extra arguments), 2..9 ranks. The
# tests that run "every example" (merged-trace losslessness, replay fixed point) share it.
EXAMPLE_RUNS = [
    ("stencil1d", 5, []),
    ("stencil2d", 9, []),
    ("stencil3d", 8, []),
    ("stencil3d_recursive", 4, []),
    ("ring", 3, []),
    ("collectives", 4, []),
    ("alltoallv_is", 5, []),
    ("wildcard_lu", 4, []),
    ("pipeline", 4, []),
    ("persistent", 3, []),
    ("comm_split", 6, []),
    ("nonblocking_coll", 4, []),
    ("waitsome", 5, []),
    ("iteration_specific", 3, []),
    ("rank_divergent", 5, []),
    ("fortran_ring", 2, []),
]

REQUEST_CREATING_OPS = frozenset(
    [
        "Isend",
        "Ibsend",
        "Issend",
        "Irsend",
        "Irecv",
        "Send_init",
        "Bsend_init",
        "Ssend_init",
        "Rsend_init",
        "Recv_init",
        "Ibarrier",
        "Ibcast",
        "Ireduce",
        "Iallreduce",
        "Igather",
        "Igatherv",
        "Iscatter",
        "Iscatterv",
        "Iallgather",
        "Iallgatherv",
        "Ialltoall",
        "Ialltoallv",
        "Ialltoallw",
        "Ireduce_scatter",
        "Ireduce_scatter_block",
        "Iscan",
        "Iexscan",
    ]
)


class MPIRunError(RuntimeError):
    """An mpiexec run (or a tool run) failed; the message carries its output."""


def build_dir() -> Path:
    """The CMake build directory holding examples and tools."""
    configured = os.environ.get("SCALATRACE_BUILD_DIR")
    return Path(configured) if configured else REPO_ROOT / "build" / "py"


def example_path(name: str) -> Path:
    """Path of the built example executable ``name``; FileNotFoundError if not built."""
    path = build_dir() / "examples" / name
    if not path.is_file():
        raise FileNotFoundError(
            f"example {name!r} not built at {path}; build with SCALATRACE_BUILD_TESTS=ON "
            f"(`make build`) or set SCALATRACE_BUILD_DIR"
        )
    return path


def _installed(kind: str, name: str | None = None) -> Path | None:
    try:
        from scalatrace import _paths  # type: ignore
    except ImportError:
        return None
    try:
        return _paths.collector_library() if kind == "lib" else _paths.tool(name)
    except Exception:  # ScalatraceError: package importable but not built/installed
        return None


def collector_library() -> Path:
    """Path of the PMPI collector ``libscalatrace.so``; FileNotFoundError if absent."""
    configured = os.environ.get("SCALATRACE_COLLECTOR")
    if configured:
        return Path(configured)
    installed = _installed("lib")
    if installed is not None:
        return installed
    path = build_dir() / "cpp" / "pmpi" / "libscalatrace.so"
    if not path.is_file():
        raise FileNotFoundError(f"collector library not found (installed package or {path})")
    return path


def tool_path(name: str) -> Path:
    """Path of a command-line tool such as ``scalatrace-dump``; FileNotFoundError if absent."""
    installed = _installed("bin", name)
    if installed is not None:
        return installed
    for sub in ("tools", "replay"):
        path = build_dir() / "cpp" / sub / name
        if path.is_file():
            return path
    raise FileNotFoundError(f"tool {name!r} not found (installed package or {build_dir()}/cpp)")


def mpicc() -> str:
    """The MPICH C compiler wrapper (``mpicc.mpich``, else ``mpicc``); fails the test if absent."""
    import shutil

    import pytest

    cc = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    if cc is None:
        pytest.fail("mpicc (MPICH) not found")
    return cc


def mpiexec() -> str:
    """The MPICH launcher, found as the package finds it (``scalatrace._paths.mpiexec``)."""
    from scalatrace._paths import mpiexec as package_mpiexec

    return package_mpiexec()


def _describe_failure(what: str, cmd: Sequence[str], code, stdout: str, stderr: str) -> str:
    def tail(text: str) -> str:
        lines = (text or "").splitlines()
        return "\n".join(lines[-40:])

    return (
        f"{what}: {' '.join(map(str, cmd))}\nexit code: {code}\n"
        f"--- stdout (tail) ---\n{tail(stdout)}\n--- stderr (tail) ---\n{tail(stderr)}"
    )


def run_mpi(
    n: int,
    argv: Sequence[str | os.PathLike],
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    cwd: str | os.PathLike | None = None,
) -> subprocess.CompletedProcess:
    """Runs ``argv`` on ``n`` ranks with ``mpiexec``; ``env`` is set for the ranks only.

    The variables go through ``env K=V ... argv`` inside mpiexec, so ``LD_PRELOAD`` reaches the
    MPI processes and not the launcher. Raises MPIRunError with the output on a non-zero exit
    or a timeout.
    """
    cmd = [mpiexec(), "-n", str(n)]
    if env:
        cmd += ["env"] + [f"{k}={v}" for k, v in env.items()]
    cmd += [str(a) for a in argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise MPIRunError(
            _describe_failure(f"timed out after {timeout}s", cmd, None, out, err)
        ) from None
    if proc.returncode != 0:
        raise MPIRunError(
            _describe_failure("MPI run failed", cmd, proc.returncode, proc.stdout, proc.stderr)
        )
    return proc


def collector_env(
    raw: str | os.PathLike | None = None, out: str | os.PathLike = "none", **more: object
) -> dict:
    """Environment for a run under the collector: LD_PRELOAD plus SCALATRACE_* settings.

    ``raw``: directory for raw recordings (SCALATRACE_RAW); ``out``: SCALATRACE_OUT (``"none"``
    writes no compressed trace); every other keyword ``key=value`` becomes
    ``SCALATRACE_<KEY>=value``.
    """
    env = {"LD_PRELOAD": str(collector_library()), "SCALATRACE_OUT": str(out)}
    if raw is not None:
        env["SCALATRACE_RAW"] = str(raw)
    for key, value in more.items():
        env[f"SCALATRACE_{key.upper()}"] = str(value)
    return env


def run_tool(
    name: str, args: Sequence[str | os.PathLike], timeout: float = 120
) -> subprocess.CompletedProcess:
    """Runs a scalatrace command-line tool; raises MPIRunError with its output on failure."""
    cmd = [str(tool_path(name))] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise MPIRunError(
            _describe_failure(f"{name} failed", cmd, proc.returncode, proc.stdout, proc.stderr)
        )
    return proc


def dump_raw(raw_dir: str | os.PathLike) -> dict:
    """``scalatrace-dump raw DIR`` as a dict: ``{"ranks": [{"rank", "nranks", "metadata",
    "modules", "sites", "comms", "names", "events"}, ...]}`` sorted by rank."""
    proc = run_tool("scalatrace-dump", ["raw", raw_dir])
    data = json.loads(proc.stdout)
    data["ranks"] = sorted(data["ranks"], key=lambda r: r["rank"])
    return data


def read_truth(truth_dir: str | os.PathLike, nranks: int) -> list[list[dict]]:
    """The examples' ground truth: for each rank, its truth-<rank>.jsonl lines as dicts."""
    result = []
    for rank in range(nranks):
        path = Path(truth_dir) / f"truth-{rank}.jsonl"
        with open(path) as f:
            result.append([json.loads(line) for line in f if line.strip()])
    return result


def resolve_requests(events: Sequence[Mapping]) -> list[list[int | None]]:
    """For each recorded event, the positions (in ``events``) of the events that created the
    requests it refers to (handle-buffer offsets resolved; None for kNullRequest)."""
    created: list[int] = []
    resolved: list[list[int | None]] = []
    for pos, ev in enumerate(events):
        out: list[int | None] = []
        for off in ev.get("requests", []) or []:
            if off == K_NULL_REQUEST:
                out.append(None)
            elif 1 <= off <= len(created):
                out.append(created[len(created) - off])
            else:
                out.append(-1)  # an offset pointing outside the handle buffer
        resolved.append(out)
        if ev["op"] in REQUEST_CREATING_OPS:
            created.append(pos)
    return resolved


# Event comparison shared by the replay and benchmark-generation fixed-point tests.
OUTCOME_OPS = {"Test", "Testall", "Testany", "Testsome", "Waitany", "Waitsome", "Iprobe"}
OUTCOME_KEYS = {"flag", "index", "count", "indices"}
TIMING_AND_SITE = {"site", "compute_ns", "duration_ns"}


def normalized_event(event: dict, relaxed: bool) -> dict:
    """A raw-dump event without call site and timing; relaxed: also without completion
    outcomes, and request references reduced to their number."""
    out = {k: v for k, v in event.items() if k not in TIMING_AND_SITE}
    if relaxed:
        if event["op"] in OUTCOME_OPS:
            for k in OUTCOME_KEYS:
                out.pop(k, None)
        out["requests"] = len(out.get("requests") or [])
    return out


def cursor_events(trace, rank: int, relaxed: bool) -> list[dict]:
    """`rank`'s events from a compressed trace's cursor, normalized like the raw dump's
    (``Other`` calls left out)."""
    out = []
    for e in trace.events(rank, timing="none"):
        if e.op == "Other":
            continue
        fields = {k.lower(): v for k, v in dict(e.fields).items() if k != "NameId"}
        arrays = {k.lower(): list(v) for k, v in dict(e.arrays).items()}
        out.append(normalized_event({"op": e.op, **fields, **arrays}, relaxed))
    return out


def assert_same_run(got, real, drop_other: bool = False) -> None:
    """Asserts that two traces record the same run: per rank the same events (op, fields,
    arrays; call sites and timing aside), the same communication matrices and communicators.
    ``drop_other``: ``Other`` events (local calls) of ``real`` are left out first, for traces
    made by lossy extrapolation."""
    import numpy as np

    assert got.nranks == real.nranks
    for r in range(real.nranks):
        a = list(got.events(r, timing="none"))
        b = [e for e in real.events(r, timing="none") if not (drop_other and e.op == "Other")]
        assert len(a) == len(b), f"rank {r}: {len(a)} events extrapolated, {len(b)} real"
        for i, (x, y) in enumerate(zip(a, b)):
            assert x.op == y.op, f"rank {r} event {i}: {x.op} vs {y.op}"
            assert x.fields == y.fields, f"rank {r} event {i} ({x.op}): {x.fields} vs {y.fields}"
            assert x.arrays == y.arrays, f"rank {r} event {i} ({x.op}): {x.arrays} vs {y.arrays}"
    for kind in ("p2p", "collective"):
        np.testing.assert_array_equal(got.comm_matrix(kind=kind), real.comm_matrix(kind=kind))

    def held(t):
        return sorted((c.id, tuple(c.members), tuple(c.holders)) for c in t.communicators)

    assert held(got) == held(real)


def compile_program(name: str, out_dir: Path, opt: str = "-O0") -> Path:
    """Compiles ``tests/py/programs/<name>.c`` with MPICH's mpicc into ``out_dir``."""
    import shutil

    mpicc = shutil.which("mpicc.mpich") or shutil.which("mpicc")
    if mpicc is None:
        raise FileNotFoundError("mpicc (MPICH) not found")
    exe = Path(out_dir) / name
    src = Path(__file__).resolve().parent / "programs" / f"{name}.c"
    subprocess.run([mpicc, opt, "-g", str(src), "-o", str(exe)], check=True, capture_output=True)
    return exe


def execute_notebook(name: str, cwd: Path, timeout: int = 300) -> list[dict]:
    """Runs ``notebooks/<name>`` top to bottom in ``cwd`` (the examples found through
    SCALATRACE_BUILD_DIR) and returns its code cells' outputs; fails on any error output."""
    import nbclient
    import nbformat

    nb = nbformat.read(REPO_ROOT / "notebooks" / name, as_version=4)
    os.environ.setdefault("SCALATRACE_BUILD_DIR", str(build_dir()))
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    client.execute(cwd=str(cwd))
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    return outputs
