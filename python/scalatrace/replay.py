"""Replay a trace: re-issue its MPI calls with ``scalatrace-replay`` under ``mpiexec``.

Each rank of the replay walks its own events of the compressed trace and issues the same MPI
calls (same peers, tags, byte counts, communicators, request pairing) with arbitrary message
content, emulating the recorded computation between calls by busy waiting. See
``docs/replay.md``.

The module is callable: ``scalatrace.replay(...)`` and ``from scalatrace.replay import replay``
are the same function.

Examples
--------
>>> import scalatrace
>>> result = scalatrace.replay("app.sct", compute_scale=0.5)  # doctest: +SKIP
>>> result.total_time, result.counts["Send"]               # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import subprocess
import sys
import tempfile
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy

from . import _paths
from ._base import check_bool, check_float, check_int
from ._files import RunOutputs, write_text
from .errors import ReplayError, ScalatraceError, TraceFormatError, UsageError, check_choice

__all__ = ["replay", "ReplayResult", "trace_info", "TIMING_MODES"]

TIMING_MODES = ("mean", "spread", "sample", "none")
DEFER_WAITS_MODES = ("auto", "on", "off")
STUCK_EXIT_CODE = 3  # scalatrace-replay's watchdog exit status

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class ReplayResult:
    """What a replay did, from the tool's JSON report.

    Attributes
    ----------
    trace_path : Path
        The replayed trace.
    nranks : int
        Number of ranks replayed.
    total_time : float
        Wall time of the replay in seconds (the slowest rank, from a common start).
    rank_times : numpy.ndarray
        Wall time of each rank's replay, seconds, shape ``(nranks,)``.
    compute_times : numpy.ndarray
        Emulated computation per rank, seconds.
    events : numpy.ndarray
        Events walked per rank (including skipped Init/Finalize/Other events).
    issued : numpy.ndarray
        MPI calls re-issued per rank.
    outcome_mismatches : numpy.ndarray
        Per rank, completion/probe calls whose outcome (flag, index) differed from the
        recording (a request finished earlier in the replay than in the original).
    contexts : numpy.ndarray
        Per rank, secondary traversal contexts a probabilistic replay of a lossy trace walked
        (the negotiated ranks that can send to it; 0 for a lossless trace).
    counts, bytes, recv_bytes : dict of str to numpy.ndarray
        Per MPI operation name (``"Send"``, ``"Allreduce"``, ...; without ``MPI_``): events per
        rank, and the sum of their recorded send-side (``Field::Bytes``) / receive-side
        (``Field::Bytes2``) byte counts as issued (size-scaled).
    options : dict
        The replay options (compute_scale, size_scale, timing, seed, timeout).
    trace_out : Path or None
        Trace written by the collector when the replay ran under it (``trace=True``).
    raw_out : Path or None
        Raw recording directory written by the collector, if requested.
    stdout, stderr : str
        What the run printed.
    """

    trace_path: Path
    nranks: int
    total_time: float
    rank_times: numpy.ndarray
    compute_times: numpy.ndarray
    events: numpy.ndarray
    issued: numpy.ndarray
    outcome_mismatches: numpy.ndarray
    contexts: numpy.ndarray = field(default_factory=lambda: numpy.zeros(0, dtype=numpy.int64))
    counts: dict = field(default_factory=dict)
    bytes: dict = field(default_factory=dict)
    recv_bytes: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    trace_out: Path | None = None
    raw_out: Path | None = None
    stdout: str = field(default="", repr=False)
    stderr: str = field(default="", repr=False)

    @classmethod
    def from_report(cls, report: Mapping[str, Any], **extra: Any) -> ReplayResult:
        """Builds a result from the JSON report of ``scalatrace-replay --report``."""
        ops = report.get("ops", {})
        return cls(
            trace_path=Path(report["trace"]),
            nranks=int(report["nranks"]),
            total_time=float(report["total_time_s"]),
            rank_times=numpy.asarray(report["rank_time_s"], dtype=float),
            compute_times=numpy.asarray(report["compute_time_s"], dtype=float),
            events=numpy.asarray(report["events"], dtype=numpy.int64),
            issued=numpy.asarray(report["issued"], dtype=numpy.int64),
            outcome_mismatches=numpy.asarray(report["outcome_mismatches"], dtype=numpy.int64),
            contexts=numpy.asarray(report.get("contexts", []), dtype=numpy.int64),
            counts={op: numpy.asarray(v["count"], dtype=numpy.int64) for op, v in ops.items()},
            bytes={op: numpy.asarray(v["bytes"], dtype=numpy.int64) for op, v in ops.items()},
            recv_bytes={
                op: numpy.asarray(v["recv_bytes"], dtype=numpy.int64) for op, v in ops.items()
            },
            options=dict(report.get("options", {})),
            **extra,
        )

    def total_counts(self) -> dict:
        """Events per operation summed over ranks."""
        return {op: int(v.sum()) for op, v in self.counts.items()}

    def __repr__(self) -> str:
        return (
            f"ReplayResult(trace={str(self.trace_path)!r}, nranks={self.nranks}, "
            f"total_time={self.total_time:.6f}s, events={int(self.events.sum())}, "
            f"ops={len(self.counts)})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(op)}</td><td>{n}</td></tr>"
            for op, n in sorted(self.total_counts().items(), key=lambda kv: -kv[1])
        )
        return (
            f"<b>ReplayResult</b> of <code>{html.escape(str(self.trace_path))}</code>: "
            f"{self.nranks} ranks, {self.total_time:.6f} s, {int(self.events.sum())} events"
            f"<table><tr><th>op</th><th>calls</th></tr>{rows}</table>"
        )


def _tool() -> Path:
    return _paths.tool("scalatrace-replay")


def _resolve_trace(trace_or_path: Any, workdir: Path) -> Path:
    if isinstance(trace_or_path, (str, os.PathLike)):
        path = Path(trace_or_path)
        if not (path.is_file() or path.is_dir()):
            raise FileNotFoundError(f"no trace file at {path}")
        return path.resolve()
    # A trace object of the Python API: its file if it came from one, else a temporary copy.
    loaded_from = getattr(trace_or_path, "path", None)
    if loaded_from is not None and Path(loaded_from).is_file():
        return Path(loaded_from).resolve()
    for method in ("save", "write"):
        writer = getattr(trace_or_path, method, None)
        if callable(writer):
            path = workdir / "replayed.sct"
            writer(str(path))
            return path
    raise TypeError(
        f"replay() expects a trace file path or a Trace object with save(path), got {type(trace_or_path).__name__}"
    )


def trace_info(path: PathLike) -> dict:
    """Rank count, node count and metadata of a trace file (``scalatrace-replay --info``)."""
    if not Path(path).exists():
        raise FileNotFoundError(f"no trace file at {path}")
    proc = subprocess.run([str(_tool()), str(path), "--info"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise TraceFormatError(f"cannot read trace {path}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def replay(
    trace_or_path: Any,
    compute_scale: float = 1.0,
    size_scale: float = 1.0,
    timing: str = "mean",
    np: int | None = None,
    seed: int = 0,
    timeout: float = 60.0,
    trace: bool = False,
    out: PathLike | None = None,
    raw: PathLike | None = None,
    env: Mapping[str, str] | None = None,
    mpiexec_args: Sequence[str] = (),
    defer_waits: str = "auto",
    progress_poll_us: float = 20.0,
) -> ReplayResult:
    """Replays a trace with ``scalatrace-replay`` under ``mpiexec``.

    Parameters
    ----------
    trace_or_path : str, path or Trace
        The ``.sct`` trace file, a raw recording directory (``SCALATRACE_RAW``; each rank
        compresses its own stream in memory), or a trace object with ``save(path)``.
    compute_scale : float
        Factor on the recorded computation time between MPI calls; 0 replays communication only.
    size_scale : float
        Factor on message sizes.
    timing : {"mean", "spread", "sample", "none"}
        Compute time per event: the histogram mean; stratified draws from the histogram
        (``seed``; each run of 16 occurrences of an event covers its distribution, so a rank's
        total keeps the mean while its occurrences vary as recorded: for data-dependent
        computation whose imbalance changes every iteration, docs/replay.md); independent
        draws (``seed``); or none.
    np : int, optional
        Number of MPI processes; default (and the only valid value): the trace's rank count.
    seed : int
        Random seed for ``timing="spread"`` and ``"sample"`` (and a lossy trace's draws).
    timeout : float
        Seconds one MPI call may block before the replay fails naming the stuck event (0: off).
    trace : bool
        Run the replay under the scalatrace collector (``LD_PRELOAD``), writing a trace of the
        replay to ``out`` (default: a file next to the replayed trace, ``<name>.replay.sct``).
    out : path, optional
        Where the collector writes the replay's trace (implies ``trace=True``).
    raw : path, optional
        Directory for the collector's raw (uncompressed) recording of the replay; runs under
        the collector (a compressed trace is written too only with ``trace=True`` or ``out``).
    env : mapping, optional
        Extra environment variables for the run.
    mpiexec_args : sequence of str
        Extra arguments for ``mpiexec`` (before ``-n``).
    defer_waits : {"auto", "on", "off"}
        Whether an ``MPI_Wait``/``MPI_Waitall`` that cannot complete yet may wait while the
        rank issues its next nonblocking sends and receives. A multi-threaded recording holds
        one interleaving of each rank's threads, and a strictly serial replay of it can deadlock
        where the threaded original did not. ``"auto"`` (default) defers when the trace says
        several threads per rank called MPI (``metadata["mpi_threads"]``).
    progress_poll_us : float
        Lossy traces only: during emulated computation, let MPI progress (an ``MPI_Iprobe``)
        every this many microseconds; 0 never. A probabilistic replay has no blocking receive
        between synchronisation points, so without it messages queued behind a computing
        receiver wait for its next call (docs/lossy.md, "Progress").

    Returns
    -------
    ReplayResult

    Raises
    ------
    ReplayError
        The replay failed or could not proceed (exit status and stderr tail attached).
    FileNotFoundError
        If the trace file does not exist.
    UsageError
        Bad arguments (a ``ValueError``), or a rank count other than the trace's.
    """
    check_choice("timing", timing, TIMING_MODES)
    check_choice("defer_waits", defer_waits, DEFER_WAITS_MODES)
    # The bounds of scalatrace-replay's options (docs/replay.md).
    compute_scale = check_float("compute_scale", compute_scale, lo=0.0, hi=1e6)
    size_scale = check_float("size_scale", size_scale, lo=0.0, hi=1024.0)
    timeout = check_float("timeout", timeout, lo=0.0, hi=1e9)
    seed = check_int("seed", seed, lo=0, hi=2**64 - 1)
    progress_poll_us = check_float("progress_poll_us", progress_poll_us, lo=0.0, hi=1e15)
    if np is not None:
        np = check_int("np", np, lo=1)
    check_bool("trace", trace)
    with contextlib.ExitStack() as stack:
        workdir = Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="scalatrace-replay-"))
        )
        path = _resolve_trace(trace_or_path, workdir)
        nranks = int(trace_info(path)["nranks"])
        if np is None:
            np = nranks
        if np < nranks:
            raise UsageError(
                f"trace {path} needs {nranks} ranks but np={np} was asked for; a replay runs on "
                f"exactly the trace's rank count"
            )
        if np != nranks:
            raise UsageError(
                f"trace {path} was recorded with {nranks} ranks; a replay runs on exactly that many (np={np})"
            )
        report_path = workdir / "report.json"
        run_env = dict(os.environ)
        if env:
            run_env.update(env)
        launcher = [_paths.mpiexec(), *mpiexec_args]
        trace_out = raw_out = None
        outputs = None
        if trace or out is not None or raw is not None:
            # -genv: the collector reaches the MPI processes, not the launcher itself.
            launcher += ["-genv", "LD_PRELOAD", str(_paths.collector_library())]
            trace_out = Path(out) if out is not None else path.with_name(path.stem + ".replay.sct")
            if raw is not None and out is None and not trace:
                trace_out = None
            if trace_out is not None:
                trace_out = Path(os.path.abspath(trace_out))
            raw_out = Path(raw).resolve() if raw is not None else None
            # The collector writes into temporary places; a failed replay leaves earlier outputs.
            outputs = stack.enter_context(RunOutputs(trace_out, raw_out, np))
            run_env.pop("SCALATRACE_RAW", None)
            run_env.update(outputs.env())
        command = [
            *launcher,
            "-n",
            str(np),
            str(_tool()),
            str(path),
            "--compute-scale",
            repr(float(compute_scale)),
            "--size-scale",
            repr(float(size_scale)),
            "--timing",
            timing,
            "--defer-waits",
            defer_waits,
            "--seed",
            str(int(seed)),
            "--timeout",
            repr(float(timeout)),
            "--progress-poll",
            repr(float(progress_poll_us)),
            "--report",
            str(report_path),
        ]
        proc = subprocess.run(command, capture_output=True, text=True, env=run_env)
        if proc.returncode != 0 or not report_path.is_file():
            stuck = [ln for ln in proc.stderr.splitlines() if "no progress for" in ln]
            stuck_specific = [ln for ln in stuck if "stuck in event" in ln]
            if stuck:
                message = "replay could not proceed: " + (stuck_specific or stuck)[0]
            else:
                message = f"replay of {path} failed"
            raise ReplayError(message, proc.returncode, _tail(proc.stderr), command)
        report = json.loads(report_path.read_text())
        if outputs is not None:
            outputs.publish()
    return ReplayResult.from_report(
        report, trace_out=trace_out, raw_out=raw_out, stdout=proc.stdout, stderr=proc.stderr
    )


# --- command line (``scalatrace replay``), used by scalatrace.cli -------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the ``scalatrace replay`` arguments to a parser."""
    parser.add_argument("trace", help="trace file (.sct) to replay")
    parser.add_argument(
        "-n", "--np", type=int, default=None, help="MPI processes (default: the trace's rank count)"
    )
    parser.add_argument(
        "--compute-scale",
        type=float,
        default=1.0,
        help="factor on recorded compute time (0 = communication only; default 1)",
    )
    parser.add_argument(
        "--size-scale", type=float, default=1.0, help="factor on message sizes (default 1)"
    )
    parser.add_argument(
        "--timing",
        choices=TIMING_MODES,
        default="mean",
        help="compute time per event: histogram mean (default), stratified draws from its "
        "histogram (spread: data-dependent computation), independent draws (sample), or none",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="random seed for --timing spread/sample"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds one MPI call may block before the replay fails (0 = off; default 60)",
    )
    parser.add_argument(
        "--trace-out",
        default=None,
        help="run under the collector and write the replay's own trace here",
    )
    parser.add_argument("--report", default=None, help="also write the JSON report to this file")
    parser.add_argument(
        "--defer-waits",
        choices=DEFER_WAITS_MODES,
        default="auto",
        help="let Wait/Waitall wait while later nonblocking calls are issued "
        "(auto: when the recording had several threads per rank calling MPI)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``scalatrace replay TRACE [options]``: parses ``argv`` and runs :func:`run_from_args`."""
    parser = argparse.ArgumentParser(
        prog="scalatrace replay", description="Replay a scalatrace trace under mpiexec."
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except (ScalatraceError, FileNotFoundError) as exc:
        print(f"scalatrace replay: {exc}", file=sys.stderr)
        return 1


def run_from_args(args: argparse.Namespace) -> int:
    """Runs ``scalatrace replay`` from parsed arguments; prints a summary; returns 0."""
    result = replay(
        args.trace,
        compute_scale=args.compute_scale,
        size_scale=args.size_scale,
        timing=args.timing,
        np=args.np,
        seed=args.seed,
        timeout=args.timeout,
        out=args.trace_out,
        defer_waits=args.defer_waits,
    )
    print(
        f"replayed {int(result.events.sum())} events on {result.nranks} ranks in "
        f"{result.total_time:.6f} s"
    )
    for op, counts in sorted(result.counts.items()):
        print(f"  {op:<22} calls {int(counts.sum()):>10}  bytes {int(result.bytes[op].sum()):>14}")
    if result.trace_out is not None:
        print(f"trace of the replay: {result.trace_out}")
    if args.report:
        write_text(args.report, json.dumps(_result_json(result), indent=2))
    return 0


def _result_json(result: ReplayResult) -> dict:
    return {
        "trace": str(result.trace_path),
        "nranks": result.nranks,
        "options": result.options,
        "total_time_s": result.total_time,
        "rank_time_s": result.rank_times.tolist(),
        "compute_time_s": result.compute_times.tolist(),
        "events": result.events.tolist(),
        "issued": result.issued.tolist(),
        "outcome_mismatches": result.outcome_mismatches.tolist(),
        "ops": {
            op: {
                "count": result.counts[op].tolist(),
                "bytes": result.bytes[op].tolist(),
                "recv_bytes": result.recv_bytes[op].tolist(),
            }
            for op in result.counts
        },
    }


class _CallableModule(types.ModuleType):
    """This module's type: calling the module calls :func:`replay`, so ``scalatrace.replay(...)``
    works while ``scalatrace.replay`` stays the module (``from scalatrace.replay import
    replay``, ``scalatrace.replay.ReplayResult``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> ReplayResult:
        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
