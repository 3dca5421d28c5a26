"""The real coNCePTuaL compiler (LANL coNCePTuaL 1.5.1b) for generated benchmarks.

:func:`compiler` finds or builds the compiler, :func:`compile_conceptual` turns a generated
``.ncptl`` program into an MPI executable with its ``c_mpi`` back end, :func:`run_environment`
gives what the executable needs to run, and :func:`communication_differences` compares the trace
of a generated benchmark with the trace it was generated from, the way coNCePTuaL can express
it (see ``docs/codegen.md``, "Checking with the real compiler").
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ._base import K_ANY, K_PROC_NULL
from .errors import ScalatraceError

if TYPE_CHECKING:  # pragma: no cover
    from ._model import TraceModel

__all__ = [
    "compiler",
    "compile_conceptual",
    "run_environment",
    "communication_differences",
    "communication_sequence",
]

#: Where the compiler's sources (``build.sh``, tarball, patch) are looked for, besides
#: ``$SCALATRACE_CONCEPTUAL_TOOLS``: ``../shared/tools/conceptual`` from the repository.
_TOOLS_ENV = "SCALATRACE_CONCEPTUAL_TOOLS"
#: A ready installation (its ``bin/ncptl``): ``$SCALATRACE_NCPTL_PREFIX``.
_PREFIX_ENV = "SCALATRACE_NCPTL_PREFIX"


def _tools_candidates(start: Path) -> list[Path]:
    out = []
    configured = os.environ.get(_TOOLS_ENV)
    if configured:
        out.append(Path(configured))
    for parent in [start, *start.parents]:
        out.append(parent.parent / "shared" / "tools" / "conceptual")
    return out


def compiler(
    prefix: str | os.PathLike[str], search_from: str | os.PathLike[str] | None = None
) -> Path:
    """The coNCePTuaL installation at ``prefix``, built there with the tools' ``build.sh`` first
    if it is not there yet (about two minutes).

    Parameters
    ----------
    prefix : path
        Installation directory (a cache; ``$SCALATRACE_NCPTL_PREFIX`` overrides it).
    search_from : path, optional
        Where to start looking for ``../shared/tools/conceptual`` (default: the current directory).

    Returns
    -------
    Path
        The installation prefix: ``prefix/bin/ncptl`` is the compiler, ``prefix/lib`` its library.

    Raises
    ------
    FileNotFoundError
        Neither an installation nor the compiler's sources were found.
    ScalatraceError
        The build failed (with the end of its log).
    """
    configured = os.environ.get(_PREFIX_ENV)
    root = Path(configured) if configured else Path(prefix)
    if (root / "bin" / "ncptl").is_file() and (root / "lib").is_dir():
        return root.resolve()
    start = Path(search_from or Path.cwd()).resolve()
    script = next(
        (c / "build.sh" for c in _tools_candidates(start) if (c / "build.sh").is_file()), None
    )
    if script is None:
        raise FileNotFoundError(
            f"no coNCePTuaL compiler at {root} and no sources to build it (set {_TOOLS_ENV} to the "
            f"directory holding build.sh, or {_PREFIX_ENV} to an installation)"
        )
    root.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["bash", str(script), str(root)], capture_output=True, text=True, timeout=1200
    )
    if proc.returncode != 0 or not (root / "bin" / "ncptl").is_file():
        logs = "".join(
            (root / n).read_text()[-2000:]
            for n in ("make.log", "configure.log")
            if (root / n).is_file()
        )
        raise ScalatraceError(
            f"building coNCePTuaL with {script} failed:\n{proc.stderr[-2000:]}\n{logs}"
        )
    return root.resolve()


def compile_conceptual(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    prefix: str | os.PathLike[str],
    timeout: float = 300,
    cflags: str | None = None,
) -> Path:
    """Compiles a coNCePTuaL program with the real compiler's ``c_mpi`` back end.

    Parameters
    ----------
    source, output : path
        The ``.ncptl`` program and the executable to write.
    prefix : path
        The compiler's installation (:func:`compiler`).
    timeout : float
        Seconds the compiler may take.
    cflags : str, optional
        C compiler flags for the generated C (``$CFLAGS`` of the compiler; default: the flags it
        was configured with, ``-g -O2``). ``"-O0"`` compiles a large program several times
        faster (8.6 vs 1.1 s of CPU for the 7900 lines of C of an 18-role program), for runs
        that are not timed.

    Raises
    ------
    ScalatraceError
        The compiler rejected the program (its message, e.g. a semantic error with its line) or
        the C compilation failed.
    """
    ncptl = Path(prefix) / "bin" / "ncptl"
    env = {**os.environ, "MPICC": shutil.which("mpicc.mpich") or "mpicc"}
    if cflags is not None:
        env["CFLAGS"] = cflags
    proc = subprocess.run(
        ["python3", str(ncptl), "--backend=c_mpi", f"--output={output}", str(source)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if proc.returncode != 0 or not Path(output).is_file():
        errors = [
            line
            for line in proc.stderr.splitlines()
            if "warning:" not in line and not line.startswith("#")
        ]
        raise ScalatraceError(f"coNCePTuaL rejected {source}:\n" + "\n".join(errors[-30:]))
    return Path(output)


def run_environment(prefix: str | os.PathLike[str]) -> dict[str, str]:
    """Environment variables a compiled coNCePTuaL program needs (its run-time library)."""
    lib = str(Path(prefix) / "lib")
    old = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": lib + (":" + old if old else "")}


# ---- comparison -------------------------------------------------------------------------------

_SENDS = {"Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend"}
_RECEIVES = {"Recv", "Irecv"}
_SENDRECV = {"Sendrecv", "Sendrecv_replace"}
_PERSISTENT = {"Send_init", "Bsend_init", "Ssend_init", "Rsend_init", "Recv_init"}
#: Other calls that append a request to the handle buffer (docs/format.md, request offsets).
_CREATES_REQUEST = {"Isend", "Ibsend", "Issend", "Irsend", "Irecv"} | {
    "I" + c.lower()
    for c in (
        "Barrier",
        "Bcast",
        "Reduce",
        "Allreduce",
        "Gather",
        "Gatherv",
        "Scatter",
        "Scatterv",
        "Allgather",
        "Allgatherv",
        "Alltoall",
        "Alltoallv",
        "Alltoallw",
        "Reduce_scatter",
        "Reduce_scatter_block",
        "Scan",
        "Exscan",
    )
}
#: Collectives as coNCePTuaL writes them (thesis Table 4.1): the MPI calls its run time makes.
_COLLECTIVE_AS = {
    "Barrier": ("Barrier",),
    "Bcast": ("Bcast",),
    "Scatter": ("Bcast",),
    "Scatterv": ("Bcast",),
    "Reduce": ("Reduce",),
    "Gather": ("Reduce",),
    "Gatherv": ("Reduce",),
    "Allreduce": ("Allreduce",),
    "Scan": ("Allreduce",),
    "Exscan": ("Allreduce",),
    "Reduce_scatter": ("Allreduce",),
    "Reduce_scatter_block": ("Allreduce",),
    "Allgather": ("Reduce", "Bcast"),
    "Allgatherv": ("Reduce", "Bcast"),
    "Alltoall": ("Alltoall",),
    "Alltoallv": ("Alltoall",),
    "Alltoallw": ("Alltoall",),
}
#: Collectives whose byte counts the generated program keeps exactly.
_EXACT_BYTES = {"Bcast", "Reduce", "Allreduce", "Alltoall"}
K_ANY_TAG = K_ANY
K_ANY_SOURCE = K_ANY


def _members(trace: TraceModel) -> dict[tuple[int, int], list[int]]:
    out = {}
    for c in trace.communicators:
        for h in c.holders:
            out[(c.id, h)] = list(c.members)
    return out


def communication_sequence(trace: TraceModel, rank: int, generated: bool = False) -> list[tuple]:
    """``rank``'s communication as coNCePTuaL can express it, in order: ``("send"|"recv", world
    peer, bytes, tag)`` per message (a Sendrecv gives both; a receive's MPI_ANY_TAG is None), and
    per collective ``(op, communicator size, bytes or None, world root or None)`` with ops as Table 4.1 writes them
    (Scatter -> Bcast, Gather -> Reduce, Allgather -> Reduce + Bcast, ...; nonblocking ones as
    blocking). A persistent request's message counts at each MPI_Start of it. Completions, probes,
    communicator management and local calls are left out. ``generated``: the trace is of a coNCePTuaL program; the calls of its run time
    (the log-file Bcast, the Barrier of the first and of the last ``SYNCHRONIZE``) are dropped.
    """
    members = _members(trace)
    nranks = trace.nranks

    def world(comm: int, rel: int) -> int | None:
        if rel == K_ANY_SOURCE:
            return None
        if comm == 0:
            return rank + rel
        m = members.get((comm, rank))
        if comm == 1 or m is None:
            return rank
        return m[m.index(rank) + rel]

    def size(comm: int) -> int:
        if comm == 0:
            return nranks
        if comm == 1:
            return 1
        return len(members.get((comm, rank), [rank]))

    out: list[tuple] = []
    slots: list[tuple | None] = []  # the handle buffer: what each request's Start would do
    for e in trace.events(rank, timing="none"):
        f = dict(e.fields)
        op = e.op
        if op in _PERSISTENT:
            kind = "recv" if op == "Recv_init" else "send"
            tag = None if kind == "recv" and f["Tag"] == K_ANY_TAG else f["Tag"]
            slots.append(
                None
                if f["Peer"] == K_PROC_NULL
                else (kind, world(f["Comm"], f["Peer"]), f["Bytes"], tag)
            )
            continue
        if op in _CREATES_REQUEST:
            slots.append(None)
        if op in ("Start", "Startall"):
            for offset in dict(e.arrays).get("Requests", []):
                if 1 <= offset <= len(slots) and slots[-offset] is not None:
                    out.append(slots[-offset])
            continue
        if op in _SENDS or op in _SENDRECV:
            if f["Peer"] != K_PROC_NULL:
                out.append(("send", world(f["Comm"], f["Peer"]), f["Bytes"], f["Tag"]))
        if op in _RECEIVES:
            if f["Peer"] != K_PROC_NULL:
                tag = None if f["Tag"] == K_ANY_TAG else f["Tag"]
                out.append(("recv", world(f["Comm"], f["Peer"]), f["Bytes"], tag))
        if op in _SENDRECV and f["Peer2"] != K_PROC_NULL:
            tag = None if f["Tag2"] == K_ANY_TAG else f["Tag2"]
            out.append(("recv", world(f["Comm"], f["Peer2"]), f["Bytes2"], tag))
        base = (
            op[1:].capitalize()
            if op.startswith("I") and op[1:].capitalize() in _COLLECTIVE_AS
            else op
        )
        if base in _COLLECTIVE_AS:
            n = size(f["Comm"])
            if n < 2:
                continue  # a one-task communicator moves nothing; not generated
            as_ops = _COLLECTIVE_AS[base]
            exact = base in _EXACT_BYTES
            nbytes = f.get("Bytes") if exact else None
            root = None
            if exact and "Root" in f:  # the root as a world rank
                m = members.get((f["Comm"], rank)) if f["Comm"] > 1 else list(range(nranks))
                root = m[f["Root"]] if m and 0 <= f["Root"] < len(m) else f["Root"]
            out.extend((a, n, nbytes if exact else None, root) for a in as_ops)
    if generated:
        out = _without_runtime_calls(out, nranks)
    return out


def _without_runtime_calls(seq: list[tuple], nranks: int) -> list[tuple]:
    """Drops what the coNCePTuaL run time itself calls around the generated statements."""
    seq = list(seq)
    if seq and seq[0][0] == "Bcast" and seq[0][1] == nranks:  # the log file's id
        seq.pop(0)
    if seq and seq[0][0] == "Barrier" and seq[0][1] == nranks:  # "All tasks synchronize" (first)
        seq.pop(0)
    if seq and seq[-1][0] == "Barrier" and seq[-1][1] == nranks:  # "all tasks synchronize" (last)
        seq.pop()
    return seq


def communication_differences(
    original: TraceModel, generated: TraceModel, limit: int = 10
) -> list[str]:
    """Where a generated coNCePTuaL benchmark's trace communicates differently from the trace it
    was generated from, rank by rank (see :func:`communication_sequence`); empty if it matches.
    Sizes of collectives that Table 4.1 approximates (Gather, Alltoallv, ...) and the tags of
    MPI_ANY_TAG receives are not compared."""
    if original.nranks != generated.nranks:
        return [f"{generated.nranks} ranks generated, {original.nranks} traced"]
    problems: list[str] = []
    for rank in range(original.nranks):
        want = communication_sequence(original, rank)
        got = communication_sequence(generated, rank, generated=True)
        if len(want) != len(got):
            missing = Counter(w[0:2] for w in want) - Counter(g[0:2] for g in got)
            extra = Counter(g[0:2] for g in got) - Counter(w[0:2] for w in want)
            problems.append(
                f"rank {rank}: {len(got)} operations generated, {len(want)} traced; "
                f"missing {dict(missing)}, extra {dict(extra)}"
            )
        else:
            for k, (a, b) in enumerate(zip(want, got)):
                if a[0] in ("send", "recv") and a[3] is None:
                    b = (*b[:3], None)
                if a[0] == "recv" and a[1] is None:  # MPI_ANY_SOURCE: any sender
                    b = (b[0], None, *b[2:])
                if a[0] not in ("send", "recv") and a[2] is None:
                    b = (*b[:2], None, None)
                if a != b:
                    problems.append(f"rank {rank} operation {k}: traced {a}, generated {b}")
                    break
        if len(problems) >= limit:
            break
    return problems
