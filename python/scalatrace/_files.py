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
import errno
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


def _keep_modes(new_dir: Path, old_dir: Path) -> None:
    """Gives ``new_dir`` and each of its files the permission bits of the same name in
    ``old_dir`` (a replaced directory or file keeps its mode)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(new_dir, stat.S_IMODE(os.lstat(old_dir).st_mode))
    for entry in os.scandir(new_dir):
        try:
            old = os.lstat(old_dir / entry.name)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(old.st_mode) and entry.is_file(follow_symlinks=False):
            os.chmod(entry.path, stat.S_IMODE(old.st_mode))


def _swap_in(staged: Path, target: Path, is_ours: Callable[[Path], bool]) -> bool:
    """Exchanges the complete directory ``staged`` with the existing ``target`` in one atomic step
    (renameat2 RENAME_EXCHANGE); the old directory is then at ``staged``, inside the caller's
    staging directory, and goes with it. If ``is_ours`` refuses the old directory after all
    (files written there since it was checked), the exchange is undone and nothing is
    replaced. False if the file system cannot exchange (nothing changed)."""
    if not _core.exchange_paths(os.fspath(staged), os.fspath(target)):
        return False
    if not is_ours(staged):
        _core.exchange_paths(os.fspath(staged), os.fspath(target))
        raise ScalatraceError(
            f"{target} changed while the new files were being put in place; nothing replaced"
        )
    return True


def publish_directory(
    staged: PathLike,
    target: PathLike,
    overwrite: bool = False,
    is_ours: Callable[[Path], bool] | None = None,
) -> Path:
    """Puts the complete directory ``staged`` at ``target`` in one step.

    An absent ``target`` is created by one rename. An existing one is refused
    (:class:`OutputExistsError`) unless ``overwrite`` is true, and even then it is replaced only
    when it is a real directory (not a symlink) that ``is_ours`` recognises as what the package
    writes there: the two are exchanged in one atomic step (:func:`_swap_in`), so ``target``
    never goes missing, and the old directory is removed with ``staged``'s parent staging
    directory. Where the file system cannot exchange, the old directory is renamed aside into
    that staging directory and the new one renamed in (two steps). The replaced directory's
    permission bits, and those of the files of the same names in it, are kept.
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
        _keep_modes(staged, target)
        if _swap_in(staged, target, is_ours):
            return target
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


class DirectoryExport:
    """The files of one export into a directory (a SimGrid export, its platform), published as a
    whole.

    ``with DirectoryExport(d, ...) as staged:`` gives a fresh directory to write the files into
    (next to ``d``, so that renames stay on one file system); when the block ends without an
    exception the files are published, otherwise nothing is:

    - ``d`` absent: the staged directory becomes ``d`` in one rename;
    - ``d`` a directory holding only regular files whose names ``family`` matches (files of the
      same kind of export, from earlier calls): the new directory receives hard links to every
      file of ``d`` the export does not write anew (a platform stays next to a new export, and
      the other way round) and is exchanged with ``d`` in one atomic step (:func:`_swap_in`);
      ``d``'s permission bits and those of the files replaced are kept. If ``d`` received a file
      between the linking and the exchange, the exchange is undone and nothing is replaced;
    - ``d`` also holding other files (a working directory): no single rename can publish part of
      a shared directory, so the new files are moved in one at a time (each atomic, modes kept,
      ``anchor`` last: the file that names the others); nothing else in ``d`` is touched. So
      is a directory the process works in (``to_simgrid_ti(".")``): exchanged away, it would
      leave the process in a deleted directory.

    Nothing that was in ``d`` is deleted: files of the names the export writes are replaced,
    every other file stays. A symbolic link to a directory is followed (the link stays); a
    file, device node or other non-directory at ``d`` is refused. A ``d`` that is a mount point
    is staged inside itself and published as in the third case.
    """

    def __init__(self, directory: PathLike, family: re.Pattern[str], anchor: str) -> None:
        # A symlink to a directory is followed: the files go where it points, the link stays.
        self.directory = Path(os.path.realpath(directory))
        self._family, self._anchor = family, anchor
        self._stack = contextlib.ExitStack()
        self.staged: Path | None = None
        self._inside = False
        self._check_target()

    def _check_target(self) -> os.stat_result | None:
        try:
            st = os.lstat(self.directory)
        except FileNotFoundError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            raise ScalatraceError(
                f"{self.directory} is {_kind(st.st_mode)}; refusing to write into it"
            )
        return st

    def _only_family(self, directory: Path) -> bool:
        return all(
            entry.is_file(follow_symlinks=False) and self._family.fullmatch(entry.name)
            for entry in os.scandir(directory)
        )

    def __enter__(self) -> Path:
        parent = self.directory.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ScalatraceError(f"{parent}: cannot create the directory: {e.strerror}") from None
        st = self._check_target()
        # A directory that is a mount point cannot be renamed: stage inside it (files moved in).
        self._inside = st is not None and st.st_dev != os.lstat(parent).st_dev
        near = self.directory if self._inside else parent
        stage = self._stack.enter_context(staging_directory(near, self.directory.name))
        self.staged = stage / self.directory.name
        self.staged.mkdir()
        return self.staged

    def __exit__(self, exc_type: object, *rest: object) -> None:
        with self._stack:
            if exc_type is None:
                self._publish()

    def _publish(self) -> None:
        assert self.staged is not None
        written = sorted(os.listdir(self.staged), key=lambda n: (n == self._anchor, n))
        if not self._inside and self._check_target() is None:
            try:
                os.rename(self.staged, self.directory)
                return
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise ScalatraceError(
                        f"{self.directory}: cannot move the new directory into place: {e.strerror}"
                    ) from None
            # Created meanwhile, and not empty: publish into what is there now.
        if (
            not self._inside
            and not self._holds_working_directory()
            and self._only_family(self.directory)
            and self._swap_whole(set(written))
        ):
            return
        for name in written:
            require_replaceable(self.directory / name)
        for name in written:
            move_file_into_place(self.staged / name, self.directory / name)

    def _holds_working_directory(self) -> bool:
        """Whether this process works in the directory or below it: exchanged away and removed,
        it would leave the process in a deleted directory, so it is published file by file."""
        try:
            cwd = Path(os.path.realpath(os.getcwd()))
        except OSError:
            return False
        return cwd == self.directory or self.directory in cwd.parents

    def _swap_whole(self, written: set[str]) -> bool:
        """The second case of the class description; False (staged as before) if the file
        system cannot link or exchange here."""
        assert self.staged is not None
        carried = []

        def settled(old: Path) -> bool:
            # Every file of the old directory was replaced or came along (the same file).
            return all(
                entry.name in written
                or (
                    os.path.lexists(self.directory / entry.name)
                    and os.path.samefile(entry.path, self.directory / entry.name)
                )
                for entry in os.scandir(old)
            )

        try:
            for entry in os.scandir(self.directory):
                if entry.name not in written:
                    os.link(entry.path, self.staged / entry.name, follow_symlinks=False)
                    carried.append(self.staged / entry.name)
            _keep_modes(self.staged, self.directory)
            if _swap_in(self.staged, self.directory, settled):
                return True
        except OSError:
            pass
        for link in carried:
            link.unlink()
        return False


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
        """``SCALATRACE_OUT`` / ``SCALATRACE_RAW`` for the run (``none`` when not wanted), the
        staging paths, and ``SCALATRACE_PUBLISH_OUT`` / ``SCALATRACE_PUBLISH_RAW``, the final
        paths, which the collector names in its messages and records as its settings."""
        env = {"SCALATRACE_OUT": "none", "SCALATRACE_RAW": "none"}
        if self.staged_out is not None:
            env.update(SCALATRACE_OUT=str(self.staged_out), SCALATRACE_PUBLISH_OUT=str(self.out))
        if self.staged_raw is not None:
            env.update(
                SCALATRACE_RAW=str(self.staged_raw), SCALATRACE_PUBLISH_RAW=str(self.raw_dir)
            )
        return env

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
