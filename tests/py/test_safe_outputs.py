"""Every file the package writes goes through one safe writer (docs/reliability.md, "What the
package writes"): nothing it did not create is deleted, non-regular targets are refused and left
alone, a failed run leaves earlier outputs, a full disk is a one-line error and a non-zero exit,
a replaced file keeps its mode. Real runs, real device nodes, symlinks and a full tmpfs."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import helpers
import pytest
from test_collector import compile_program

import scalatrace
from scalatrace.cli import main

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod and mount need root")


def _device(path: Path) -> Path:
    """A character device node equal to /dev/full (major 1, minor 7)."""
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    return path


@contextlib.contextmanager
def _tmpfs(path: Path, size: str):
    """A tmpfs of ``size`` mounted at ``path`` for the block."""
    path.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]
    ).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def _fill(path: Path) -> None:
    """Fills the file system of ``path``: every later write there fails with ENOSPC."""
    with open(path / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 4096)


@contextlib.contextmanager
def _full_filesystem(path: Path):
    """A 64 KiB tmpfs at ``path``, filled up: every write there fails with ENOSPC."""
    with _tmpfs(path, "64k"):
        _fill(path)
        yield path


_RENAMES: list[tuple[str, str]] | None = None


def _audit(event: str, args: tuple) -> None:
    if event == "os.rename" and _RENAMES is not None:
        _RENAMES.append((os.fspath(args[0]), os.fspath(args[1])))


sys.addaudithook(_audit)  # inert unless _renames() is recording


@contextlib.contextmanager
def _renames():
    """The ``os.rename(source, target)`` calls made in the block (Python's audit events); the
    atomic exchange of two directories (renameat2 in the core) is not one of them."""
    global _RENAMES
    _RENAMES = []
    try:
        yield _RENAMES
    finally:
        _RENAMES = None


def _no_temporaries(directory: Path) -> None:
    leftovers = [p.name for p in directory.iterdir() if p.name.startswith(".")]
    assert not leftovers, f"temporary files left behind: {leftovers}"


def _one_line_error(capsys) -> str:
    out, err = capsys.readouterr()
    assert "wrote" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def ring_sct(example, collector_lib, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ring")
    out = tmp / "ring.sct"
    scalatrace.trace([str(example("ring")), "-i", "2", "-c", "5"], np=2, out=out)
    return out


def _ring_run(example, out: Path, *extra: str) -> list[str]:
    return ["run", "-n", "2", "-o", str(out), *extra, "--", str(example("ring")), "-i", "2"]


@needs_root
def test_run_refuses_a_device_node_at_the_output(example, collector_lib, tmp_path, capsys):
    node = _device(tmp_path / "n")
    assert main(_ring_run(example, node)) != 0
    assert "character device" in _one_line_error(capsys)
    assert stat.S_ISCHR(os.lstat(node).st_mode)  # still the device, not a trace
    _no_temporaries(tmp_path)


def test_trace_refuses_a_symlink_and_leaves_its_target(example, collector_lib, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "link.sct"
    link.symlink_to(victim.name)
    with pytest.raises(scalatrace.ScalatraceError, match="symbolic link"):
        scalatrace.trace([str(example("ring")), "-i", "2"], np=2, out=link)
    assert link.is_symlink() and victim.read_text() == "precious\n"
    _no_temporaries(tmp_path)


def test_failed_run_keeps_the_earlier_trace_and_raw_streams(
    example, collector_lib, tmp_path, capsys
):
    good, raw = tmp_path / "good.sct", tmp_path / "goodraw"
    assert main(_ring_run(example, good, "--raw", str(raw))) == 0
    before = {p.name: p.read_bytes() for p in [good, *raw.iterdir()]}
    assert len(before) == 3  # good.sct, rank-0.straw, rank-1.straw
    capsys.readouterr()
    prog = compile_program("abort", tmp_path)
    args = ["run", "-n", "2", "-o", str(good), "--raw", str(raw), "--", str(prog)]
    assert main(args) != 0
    out, _ = capsys.readouterr()
    assert "wrote" not in out
    assert {p.name: p.read_bytes() for p in [good, *raw.iterdir()]} == before
    _no_temporaries(tmp_path)
    _no_temporaries(raw)


def test_run_refuses_a_raw_directory_with_other_ranks_streams(example, collector_lib, tmp_path):
    raw = tmp_path / "raw"
    scalatrace.trace([str(example("ring")), "-i", "2"], np=4, out=tmp_path / "a.sct", raw=raw)
    kept = (raw / "rank-3.straw").read_bytes()
    with pytest.raises(scalatrace.ScalatraceError, match="rank-2.straw, rank-3.straw"):
        scalatrace.trace([str(example("ring")), "-i", "2"], np=2, out=tmp_path / "b.sct", raw=raw)
    assert (raw / "rank-3.straw").read_bytes() == kept and not (tmp_path / "b.sct").exists()


def test_failed_replay_keeps_the_earlier_raw_streams(ring_sct, tmp_path):
    raw = tmp_path / "raw"
    scalatrace.replay(ring_sct, raw=raw, compute_scale=0.0)
    before = {p.name: p.read_bytes() for p in raw.iterdir()}
    assert sorted(before) == ["rank-0.straw", "rank-1.straw"]
    broken = tmp_path / "broken.sct"  # 2 ranks, a receive without a send: the replay fails
    tool = scalatrace._paths.tool("scalatrace-replay")
    subprocess.run([str(tool), "--selftest-write-broken", str(broken)], check=True)
    with pytest.raises(scalatrace.ReplayError):
        scalatrace.replay(broken, raw=raw, timeout=2)
    assert {p.name: p.read_bytes() for p in raw.iterdir()} == before


def test_to_otf2_never_removes_a_directory_it_did_not_write(ring_sct, tmp_path):
    t = scalatrace.load(ring_sct)
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "notes.txt").write_text("x\n")
    for overwrite in (False, True):
        with pytest.raises(scalatrace.ScalatraceError, match="traces"):
            t.to_otf2(tmp_path, overwrite=overwrite)
        assert (tmp_path / "traces" / "notes.txt").read_text() == "x\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]  # nothing else written


def test_to_otf2_replaces_only_its_own_archive(ring_sct, tmp_path):
    t = scalatrace.load(ring_sct)
    anchor = t.to_otf2(tmp_path, name="run")
    with pytest.raises(scalatrace.OutputExistsError):
        t.to_otf2(tmp_path, name="run")
    assert t.to_otf2(tmp_path, name="run", overwrite=True) == anchor
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "0.def",
        "0.evt",
        "1.def",
        "1.evt",
    ]
    (tmp_path / "run" / "mine.txt").write_text("x\n")  # no longer only what to_otf2 writes
    with pytest.raises(scalatrace.ScalatraceError, match="did not write"):
        t.to_otf2(tmp_path, name="run", overwrite=True)
    assert (tmp_path / "run" / "mine.txt").read_text() == "x\n"
    _no_temporaries(tmp_path)


@pytest.mark.parametrize(
    "command",
    [
        ["heatmap", "{trace}", "-o", "{out}"],
        ["sweep", "{trace}", "--param", "compute_scale=1,2", "-q", "-o", "{out}"],
        ["generate", "{trace}", "-o", "{out}"],
        ["generate", "{trace}", "--lang", "c", "-o", "{out}"],
    ],
    ids=["heatmap", "sweep", "generate", "generate-c"],
)
@needs_root
def test_cli_writers_on_a_device_a_directory_and_a_full_disk(ring_sct, tmp_path, capsys, command):
    targets = {
        "device": _device(tmp_path / "dev"),
        "directory": tmp_path / "dir",
    }
    (tmp_path / "dir").mkdir()
    with _full_filesystem(tmp_path / "full") as full:
        targets["full disk"] = full / "out"
        for what, target in targets.items():
            argv = [a.format(trace=ring_sct, out=target) for a in command]
            rc = main(argv)
            line = _one_line_error(capsys)
            assert rc != 0, (what, line)
            if what == "full disk":
                assert "No space left on device" in line and not target.exists()
                _no_temporaries(full)
            else:
                assert "refusing" in line
    assert stat.S_ISCHR(os.lstat(tmp_path / "dev").st_mode) and not any(
        (tmp_path / "dir").iterdir()
    )


@needs_root
def test_python_writers_on_a_full_disk(ring_sct, tmp_path):
    t = scalatrace.load(ring_sct)
    with _full_filesystem(tmp_path / "full") as full:
        for write in (
            lambda p: t.save(p),
            lambda p: scalatrace.codegen.write_benchmark(t, "c", p),
            lambda p: scalatrace.to_extrap([t, t, t], p, values=[1, 2, 3]),
            lambda p: t.to_otf2(p.parent, name=p.name),
        ):
            with pytest.raises(scalatrace.ScalatraceError, match="No space left on device"):
                write(full / "out")
            assert sorted(p.name for p in full.iterdir()) == ["filler"]


@needs_root
def test_replay_report_on_a_full_disk_fails(ring_sct, tmp_path):
    tool = scalatrace._paths.tool("scalatrace-replay")
    with _full_filesystem(tmp_path / "full") as full:
        proc = subprocess.run(
            [
                helpers.mpiexec(),
                "-n",
                "2",
                str(tool),
                str(ring_sct),
                "--report",
                str(full / "r.json"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode != 0
        assert "No space left on device" in proc.stderr
        assert sorted(p.name for p in full.iterdir()) == ["filler"]


def test_replacing_a_private_trace_keeps_its_mode(ring_sct, example, collector_lib, tmp_path):
    t = scalatrace.load(ring_sct)
    saved, run, collected = tmp_path / "saved.sct", tmp_path / "run.sct", tmp_path / "direct.sct"
    for p in (saved, run, collected):
        p.write_bytes(b"old")
        p.chmod(0o600)
    t.save(saved)
    assert main(_ring_run(example, run)) == 0
    helpers.run_mpi(2, [str(example("ring")), "-i", "2"], env=helpers.collector_env(out=collected))
    for p in (saved, run, collected):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        assert scalatrace.load(p).nranks == 2


# ---- multi-file exports: published as a whole -------------------------------------------------


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_simgrid_export_appears_in_one_rename_and_is_replaced_in_one_exchange(ring_sct, tmp_path):
    from scalatrace.simgrid import to_simgrid_ti, write_simgrid_platform

    t = scalatrace.load(ring_sct)
    ti = tmp_path / "ti"
    with _renames() as renames:
        exp = to_simgrid_ti(t, ti)
    assert [target for _, target in renames] == [str(ti)]  # the whole directory, once
    assert _names(ti) == ["index.txt", "rank-0.txt", "rank-1.txt"]
    listed = Path(exp.index).read_text().split()
    assert listed == [str(ti / "rank-0.txt"), str(ti / "rank-1.txt")] == [str(f) for f in exp.files]
    # A platform next to the export, and a rank file of an earlier, larger export.
    platform, hostfile = write_simgrid_platform(ti, 2, 1e-6, 1e9)
    assert _names(ti) == ["hostfile", "index.txt", "platform.xml", "rank-0.txt", "rank-1.txt"]
    (ti / "rank-7.txt").write_text("7 init\n")
    (ti / "rank-0.txt").chmod(0o600)
    kept = {p: p.read_bytes() for p in (platform, hostfile, ti / "rank-7.txt")}
    old_directory = ti.stat().st_ino
    with _renames() as renames:
        to_simgrid_ti(t, ti, timing="none")
    # Exchanged with the new directory in one step: never renamed away, never missing.
    assert renames == [] and ti.stat().st_ino != old_directory
    assert _names(ti) == [
        "hostfile",
        "index.txt",
        "platform.xml",
        "rank-0.txt",
        "rank-1.txt",
        "rank-7.txt",
    ]
    assert {p: p.read_bytes() for p in kept} == kept  # what it does not write came along
    assert stat.S_IMODE((ti / "rank-0.txt").stat().st_mode) == 0o600  # mode kept
    assert (ti / "rank-0.txt").read_text().startswith("0 init")
    _no_temporaries(tmp_path)
    _no_temporaries(ti)


def test_simgrid_export_into_a_shared_directory_touches_only_its_files(ring_sct, tmp_path):
    from scalatrace.simgrid import to_simgrid_ti

    t = scalatrace.load(ring_sct)
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "sub").mkdir()
    with _renames() as renames:
        exp = to_simgrid_ti(t, tmp_path)
    # No rename can publish part of a shared directory: one file at a time, the index last.
    assert [Path(target).name for _, target in renames] == ["rank-0.txt", "rank-1.txt", "index.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine\n" and (tmp_path / "sub").is_dir()
    assert Path(exp.index) == tmp_path / "index.txt"
    _no_temporaries(tmp_path)


def test_simgrid_export_into_the_working_directory_keeps_it(ring_sct, tmp_path, monkeypatch):
    from scalatrace.simgrid import to_simgrid_ti

    t = scalatrace.load(ring_sct)
    ti = tmp_path / "ti"
    to_simgrid_ti(t, ti)
    monkeypatch.chdir(ti)
    here = os.stat(".").st_ino
    with _renames() as renames:
        exp = to_simgrid_ti(t, ".", timing="none")
    # Not exchanged (that would leave this process in a deleted directory): file by file.
    assert os.stat(os.getcwd()).st_ino == here == ti.stat().st_ino
    assert [Path(target).name for _, target in renames] == ["rank-0.txt", "rank-1.txt", "index.txt"]
    assert Path(exp.index) == ti / "index.txt" and _names(ti) == [
        "index.txt",
        "rank-0.txt",
        "rank-1.txt",
    ]


def test_simgrid_export_refuses_a_file_and_follows_a_symlinked_directory(ring_sct, tmp_path):
    from scalatrace.simgrid import to_simgrid_ti

    t = scalatrace.load(ring_sct)
    (tmp_path / "file").write_text("x\n")
    with pytest.raises(scalatrace.ScalatraceError, match="refusing"):
        to_simgrid_ti(t, tmp_path / "file")
    assert (tmp_path / "file").read_text() == "x\n"
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    to_simgrid_ti(t, tmp_path / "link")
    assert (tmp_path / "link").is_symlink() and "index.txt" in _names(tmp_path / "real")


@needs_root
def test_failed_simgrid_export_leaves_the_earlier_one(ring_sct, tmp_path):
    from scalatrace.simgrid import to_simgrid_ti

    t = scalatrace.load(ring_sct)
    with _tmpfs(tmp_path / "fs", "1m") as fs:
        to_simgrid_ti(t, fs / "ti")
        before = {p.name: p.read_bytes() for p in (fs / "ti").iterdir()}
        _fill(fs)
        with pytest.raises(scalatrace.ScalatraceError, match="No space left on device"):
            to_simgrid_ti(t, fs / "ti", timing="none")
        assert {p.name: p.read_bytes() for p in (fs / "ti").iterdir()} == before
        assert _names(fs) == ["filler", "ti"]


def test_to_otf2_replaces_the_events_directory_in_one_step(ring_sct, tmp_path):
    t = scalatrace.load(ring_sct)
    anchor = t.to_otf2(tmp_path, name="run")
    events = tmp_path / "run"
    old_directory = events.stat().st_ino
    with _renames() as renames:
        t.to_otf2(tmp_path, name="run", overwrite=True)
    # The old events directory is never renamed away (the path is never missing): exchanged.
    assert str(events) not in [source for source, _ in renames]
    assert [Path(target).name for _, target in renames] == ["run.def", "run.otf2"]
    assert events.stat().st_ino != old_directory and _names(events) == [
        "0.def",
        "0.evt",
        "1.def",
        "1.evt",
    ]
    assert anchor.is_file()
    _no_temporaries(tmp_path)


def test_to_otf2_into_a_new_directory_is_one_rename(ring_sct, tmp_path):
    t = scalatrace.load(ring_sct)
    root = tmp_path / "new" / "archive"
    with _renames() as renames:
        anchor = t.to_otf2(root, name="run")
    assert [target for _, target in renames] == [str(root)]
    assert anchor == root / "run.otf2" and _names(root) == ["run", "run.def", "run.otf2"]
    _no_temporaries(tmp_path / "new")


# ---- the collector's messages under the wrappers ----------------------------------------------


def test_collector_messages_name_the_final_paths(example, collector_lib, tmp_path, capfd):
    out, raw = tmp_path / "t.sct", tmp_path / "raw"
    assert main(_ring_run(example, out, "--raw", str(raw))) == 0
    err = capfd.readouterr().err
    assert f"scalatrace: compressed trace ready for {out} (merge" in err, err
    assert f"scalatrace: raw streams of all 2 ranks ready for {raw} (rank 0:" in err, err
    assert ".tmp" not in err, err  # no staging path
    settings = scalatrace.load(out).settings
    assert settings["setting.SCALATRACE_OUT"] == str(out)
    assert settings["setting.SCALATRACE_RAW"] == str(raw)
    t = scalatrace.trace([str(example("ring")), "-i", "2"], np=2, out=tmp_path / "u.sct")
    assert f"compressed trace ready for {tmp_path / 'u.sct'}" in t.run_stderr
    assert ".tmp" not in t.run_stderr and t.settings["setting.SCALATRACE_RAW"] == ""


def test_an_exchange_the_old_directory_does_not_allow_is_undone(tmp_path):
    """_files._swap_in checks the directory it exchanged away (files written there after the
    check would be removed with it): refused, the exchange is undone and nothing is replaced."""
    from scalatrace import _files

    old, new = tmp_path / "ti", tmp_path / "staged"
    for d, text in ((old, "old\n"), (new, "new\n")):
        d.mkdir()
        (d / "index.txt").write_text(text)
    inodes = {d: d.stat().st_ino for d in (old, new)}
    seen = []

    def refuse(away: Path) -> bool:
        seen.append((away / "index.txt").read_text())
        return False

    with pytest.raises(scalatrace.ScalatraceError, match="changed while"):
        _files._swap_in(new, old, refuse)
    assert seen == ["old\n"]  # it looked at the old directory, exchanged away
    assert {d: d.stat().st_ino for d in (old, new)} == inodes  # and put it back
    assert (old / "index.txt").read_text() == "old\n" and (new / "index.txt").read_text() == "new\n"
