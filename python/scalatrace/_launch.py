"""Running an MPI program under the collector: :func:`trace`."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Union

from . import _paths
from ._base import MAX_LAUNCH_RANKS, MAX_TIMEOUT_S, check_bool, check_float, check_int
from ._files import RunOutputs
from .errors import MPIRunError, ScalatraceError, UsageError

if TYPE_CHECKING:
    from ._model import TraceModel

Command = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]
Launcher = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], None]


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _argv(value: Command, what: str) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Sequence):
        raise UsageError(f"{what} must be a string or a sequence of strings, not {value!r:.60}")
    return [os.fspath(c) for c in value]


def launch_command(
    cmd: Command, np: int, launcher: Launcher = None, launcher_args: Sequence[str] = ()
) -> list[str]:
    """The command line that runs ``cmd`` on ``np`` ranks with the collector preloaded.

    Default launcher: MPICH's ``mpiexec`` (``-genv LD_PRELOAD``). Any other (``"srun"``,
    ``["mpirun", "--oversubscribe"]``, ...) is called as ``LAUNCHER -n NP LAUNCHER_ARGS env
    LD_PRELOAD=<collector> CMD``, which every launcher taking ``-n`` runs.
    """
    argv = _argv(cmd, "the command")
    if not argv:
        raise UsageError("empty command")
    if shutil.which(argv[0]) is None:
        raise FileNotFoundError(f"program not found (or not executable): {argv[0]}")
    extra = _argv(launcher_args, "launcher_args") if launcher_args else []
    library = str(_paths.collector_library())
    if launcher is None:
        return [_paths.mpiexec(), "-n", str(np), "-genv", "LD_PRELOAD", library, *extra, *argv]
    front = _argv(launcher, "launcher")
    if not front or shutil.which(front[0]) is None:
        raise FileNotFoundError(f"launcher not found: {front[0] if front else '(empty)'}")
    return [*front, "-n", str(np), *extra, "env", f"LD_PRELOAD={library}", *argv]


def run_collected(
    cmd: Command,
    np: int,
    out: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    raw: bool | str | os.PathLike[str] = False,
    timeout: float | None = None,
    capture: bool = True,
    launcher: Launcher = None,
    launcher_args: Sequence[str] = (),
) -> tuple[Path, Path | None, subprocess.CompletedProcess]:
    """Runs ``cmd`` under the collector; returns (trace path, raw dir or None, process).

    Nothing at ``out`` or in the raw directory is touched before the run: the collector writes
    into temporary locations next to them, and the trace and raw streams are moved into place
    only when the run succeeded and wrote a trace (``_files.RunOutputs``). A device node, FIFO,
    directory or symlink at ``out`` is refused before the run and left alone.
    """
    np = check_int("np", np, lo=1, hi=MAX_LAUNCH_RANKS)
    if timeout is not None:
        timeout = check_float("timeout", timeout, lo=0.0, hi=MAX_TIMEOUT_S)
    out_path = Path(os.path.abspath(out))
    raw_dir: Path | None = None
    if raw:
        raw_dir = (
            Path(out_path.with_suffix("").as_posix() + "-raw")
            if raw is True
            else Path(raw).resolve()
        )
    argv = launch_command(cmd, np, launcher, launcher_args)
    with RunOutputs(out_path, raw_dir, np) as outputs:
        run_env = dict(os.environ)
        run_env.update(env or {})
        run_env.pop("SCALATRACE_RAW", None)
        run_env.update(outputs.env())
        try:
            proc = subprocess.run(
                argv, env=run_env, capture_output=capture, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as e:
            err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            raise MPIRunError(
                f"{' '.join(argv)} timed out after {timeout} s", -1, _tail(err), argv
            ) from None
        except FileNotFoundError as e:
            raise MPIRunError(f"cannot start {argv[0]}: {e}", 127, "", argv) from None
        if proc.returncode != 0:
            raise MPIRunError(
                f"traced program failed: {' '.join(argv)} (earlier outputs left as they were)",
                proc.returncode,
                _tail(proc.stderr or ""),
                argv,
            )
        if not outputs.trace_written():
            raise ScalatraceError(
                f"the run finished but wrote no trace for {out_path}; did the program call MPI_Init/MPI_Finalize?\n"
                + _tail(proc.stderr or "")
            )
        outputs.publish()
    return out_path, raw_dir, proc


def trace(
    cmd: Command,
    np: int = 4,
    out: str | os.PathLike[str] = "trace.sct",
    env: Mapping[str, str] | None = None,
    raw: bool | str | os.PathLike[str] = False,
    timeout: float | None = None,
    launcher: Launcher = None,
    launcher_args: Sequence[str] = (),
    capture_output: bool = True,
) -> TraceModel:
    """Runs an MPI program under the scalatrace collector and loads the trace.

    Parameters
    ----------
    cmd : str or sequence of str
        Program and arguments (an MPI program; no rebuild needed, the collector is preloaded).
    np : int
        Number of ranks (``-n np`` of the launcher).
    out : path
        Where the compressed trace is written (``SCALATRACE_OUT``).
    env : mapping, optional
        Extra environment variables (e.g. ``{"SCALATRACE_WINDOW": "256"}``).
    raw : bool or path
        Also record raw per-rank streams (``SCALATRACE_RAW``): True puts them in
        ``<out without suffix>-raw/``; a path names the directory. Read with :func:`read_raw`
        or ``trace.raw_dir``.
    timeout : float, optional
        Seconds before the run is killed (default: no limit).
    launcher : str or sequence of str, optional
        What starts the ranks. Default: MPICH's ``mpiexec`` (``$SCALATRACE_MPIEXEC``,
        ``mpiexec.mpich``). Another, e.g. ``"srun"`` or ``["mpirun"]``, is called as
        ``LAUNCHER -n NP LAUNCHER_ARGS env LD_PRELOAD=<collector> CMD``.
    launcher_args : sequence of str
        Extra launcher arguments before the program: a host file and ranks per node
        (``["-f", "hosts", "-ppn", "2"]`` for MPICH, ``["--ntasks-per-node=2"]`` for srun).
    capture_output : bool
        True (default): the program's stdout and stderr are kept on the trace
        (``run_stdout``, ``run_stderr``); False: they go to this process's terminal.

    Returns
    -------
    Trace
        With ``raw_dir`` set to the raw directory (or None), ``run_stdout`` / ``run_stderr``
        the run's output (None when not captured).

    Raises
    ------
    MPIRunError
        If the program (or mpiexec) fails; carries the exit status and the stderr tail.
    """
    from ._model import load

    capture_output = check_bool("capture_output", capture_output)
    out_path, raw_dir, proc = run_collected(
        cmd, np, out, env, raw, timeout, capture_output, launcher, launcher_args
    )
    t = load(out_path)
    t.raw_dir = raw_dir
    t.run_stdout = proc.stdout
    t.run_stderr = proc.stderr
    return t
