"""Every file the package writes goes through here (docs/reliability.md, "What the package writes").

The promises: nothing the package did not create in this call is deleted; a device node, FIFO,
directory or symbolic link where a file is to be written is refused and left alone; a file
appears whole or not at all (unique temporary file next to it, checked writes, fsync, rename:
the core's ``write_file_safely``); a replaced file keeps its permission bits; a full disk is an
error naming the path, never a short file. Multi-file outputs (an OTF2 archive, a run's trace
and raw streams) are written into a fresh temporary directory next to the target and moved
into place only when complete.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Union

from . import _core
from .errors import OutputExistsError, ScalatraceError

PathLike = Union[str, "os.PathLike[str]"]


def write_bytes(path: PathLike, data: bytes) -> Path:
    """Writes ``data`` to ``path`` safely (see the module's description); returns the path."""
    out = Path(path)
    _core.write_file_safely(os.fspath(out), bytes(data))
    return out


def write_text(path: PathLike, text: str, encoding: str = "utf-8") -> Path:
    """:func:`write_bytes` of ``text`` encoded."""
    return write_bytes(path, text.encode(encoding))


def require_replaceable(path: PathLike) -> None:
    """Raises ScalatraceError unless ``path`` is absent or a regular file (symlinks not followed)."""
    _core.require_replaceable(os.fspath(path))


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device node"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "not a regular file"


def move_file_into_place(src: PathLike, target: PathLike) -> Path:
    """Renames the finished file ``src`` (same file system) over ``target``.

    ``target`` must be absent or a regular file (checked without following a symlink); a
    replaced file's permission bits are kept.
    """
    target = Path(target)
    require_replaceable(target)
    with contextlib.suppress(FileNotFoundError):
        old = os.lstat(target)
        os.chmod(src, stat.S_IMODE(old.st_mode))
    require_replaceable(target)  # again, just before the rename
    try:
        os.rename(src, target)
    except OSError as e:
        raise ScalatraceError(
            f"{target}: cannot move the finished file into place: {e.strerror}"
        ) from None
    return target


@contextlib.contextmanager
def staging_directory(near: PathLike, label: str) -> Iterator[Path]:
    """A fresh, private temporary directory in ``near`` (so renames out of it stay on one file
    system); it and whatever is still in it are removed at exit. Only this directory, created
    here, is ever removed."""
    try:
        staged = Path(tempfile.mkdtemp(prefix=f".{label}.", suffix=".tmp", dir=os.fspath(near)))
    except OSError as e:
        raise ScalatraceError(
            f"{near}: cannot create a temporary directory: {e.strerror}"
        ) from None
    try:
        yield staged
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def publish_directory(
    staged: PathLike,
    target: PathLike,
    overwrite: bool = False,
    is_ours: Callable[[Path], bool] | None = None,
) -> Path:
    """Renames the complete directory ``staged`` to ``target``.

    An absent ``target`` is simply created by the rename. An existing one is refused
    (:class:`OutputExistsError`) unless ``overwrite`` is true, and even then it is replaced only
    when it is a real directory (not a symlink) that ``is_ours`` recognises as what the package
    writes there; it is moved aside into ``staged``'s parent staging directory first, so it is
    removed only together with that directory.
    """
    staged, target = Path(staged), Path(target)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            raise ScalatraceError(f"{target} is {_kind(st.st_mode)}; refusing to replace it")
        if not overwrite:
            raise OutputExistsError(f"{target} exists; pass overwrite=True to replace it")
        if is_ours is None or not is_ours(target):
            raise ScalatraceError(
                f"{target} exists and holds files scalatrace did not write; refusing to replace it"
            )
        aside = staged.parent / f".replaced-{staged.name}"
        os.rename(target, aside)
        try:
            os.rename(staged, target)
        except OSError as e:
            os.rename(aside, target)
            raise ScalatraceError(
                f"{target}: cannot move the new directory into place: {e.strerror}"
            ) from None
        return target
    try:
        os.rename(staged, target)
    except OSError as e:
        raise ScalatraceError(
            f"{target}: cannot move the new directory into place: {e.strerror}"
        ) from None
    return target


_RANK_FILE = re.compile(r"rank-(\d+)\.straw")


class RunOutputs:
    """Where a run under the collector writes, and putting the results in place once it succeeded.

    The collector writes into temporary locations (a staging directory next to ``out``, another
    inside ``raw_dir``); :meth:`publish` moves the trace and the raw streams into place only after
    a successful run, so a failed run never replaces or deletes earlier results. Before the run:
    ``out`` must be absent or a regular file, ``raw_dir`` absent or a directory, and ``raw_dir``
    must not hold streams of ranks the new run does not have (``rank-<r>.straw`` with
    ``r >= nranks``: they would be read as part of the new recording; they are never deleted).
    Streams of the new run's ranks replace the old ones of the same rank (mode kept); other
    files in ``raw_dir`` are left alone.
    """

    def __init__(self, out: PathLike | None, raw_dir: PathLike | None, nranks: int) -> None:
        # abspath, not resolve(): a symlink at ``out`` is refused, never followed.
        self.out = Path(os.path.abspath(out)) if out is not None else None
        self.raw_dir = Path(raw_dir).resolve() if raw_dir is not None else None
        self._stack = contextlib.ExitStack()
        self._created_raw_dir = False
        self.staged_out: Path | None = None
        self.staged_raw: Path | None = None
        if self.out is not None:
            require_replaceable(self.out)
        if self.raw_dir is not None:
            if self.raw_dir.exists() and not self.raw_dir.is_dir():
                raise ScalatraceError(f"{self.raw_dir} exists and is not a directory (raw streams)")
            stale = sorted(
                p.name
                for p in (self.raw_dir.glob("rank-*.straw") if self.raw_dir.is_dir() else [])
                if (m := _RANK_FILE.fullmatch(p.name)) and int(m.group(1)) >= nranks
            )
            if stale:
                raise OutputExistsError(
                    f"{self.raw_dir} holds raw streams of ranks a {nranks}-rank run does not have "
                    f"({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''}); "
                    "move them away or choose another raw directory"
                )

    def __enter__(self) -> RunOutputs:
        try:
            if self.out is not None:
                self.out.parent.mkdir(parents=True, exist_ok=True)
                staged = self._stack.enter_context(
                    staging_directory(self.out.parent, self.out.name)
                )
                self.staged_out = staged / self.out.name
            if self.raw_dir is not None:
                if not self.raw_dir.exists():
                    self.raw_dir.mkdir(parents=True)
                    self._created_raw_dir = True
                self.staged_raw = self._stack.enter_context(staging_directory(self.raw_dir, "raw"))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        if self._created_raw_dir:
            with contextlib.suppress(OSError):
                self.raw_dir.rmdir()  # only if still empty: the run failed before publishing

    def env(self) -> dict[str, str]:
        """``SCALATRACE_OUT`` / ``SCALATRACE_RAW`` for the run (``none`` when not wanted)."""
        return {
            "SCALATRACE_OUT": str(self.staged_out) if self.staged_out is not None else "none",
            **({"SCALATRACE_RAW": str(self.staged_raw)} if self.staged_raw is not None else {}),
        }

    def trace_written(self) -> bool:
        return self.staged_out is not None and self.staged_out.is_file()

    def publish(self) -> None:
        """Moves the run's trace and raw streams into place (call only after a successful run)."""
        if self.staged_raw is not None:
            new = sorted(self.staged_raw.glob("rank-*.straw"))
            for f in new:  # check every target before moving any
                require_replaceable(self.raw_dir / f.name)
            for f in new:
                move_file_into_place(f, self.raw_dir / f.name)
            self._created_raw_dir = False
        if self.staged_out is not None and self.staged_out.is_file():
            move_file_into_place(self.staged_out, self.out)


def save_figure(fig: object, path: PathLike, **savefig_kwargs: object) -> Path:
    """Renders a matplotlib figure in memory (format from the file's suffix) and writes it with
    :func:`write_bytes`, so a device node or symlink at ``path`` is refused, never written to."""
    import io

    buffer = io.BytesIO()
    suffix = Path(path).suffix.lstrip(".").lower()
    fig.savefig(buffer, format=suffix or None, **savefig_kwargs)  # type: ignore[attr-defined]
    return write_bytes(path, buffer.getvalue())
