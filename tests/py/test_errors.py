"""Errors are consistent across entry points: FileNotFoundError for missing files, our
UsageError (a ValueError and a ScalatraceError) for bad arguments, never a bare KeyError."""

from __future__ import annotations

import subprocess
import sys

import pytest

import scalatrace
from scalatrace.errors import ScalatraceError, UnknownNameError, UsageError


def test_usage_error_is_a_value_error_and_ours():
    assert issubclass(UsageError, ValueError) and issubclass(UsageError, ScalatraceError)
    assert issubclass(UnknownNameError, UsageError) and issubclass(UnknownNameError, KeyError)
    assert str(UnknownNameError("unknown field 'X'")) == "unknown field 'X'"


@pytest.mark.parametrize(
    "call",
    [
        lambda p: scalatrace.load(p),
        lambda p: scalatrace.read_raw(p),
        lambda p: scalatrace.replay(p),
        lambda p: scalatrace.replay.trace_info(p),
        lambda p: scalatrace.trace([str(p)], np=2),
    ],
)
def test_missing_files_raise_file_not_found(tmp_path, call):
    with pytest.raises(FileNotFoundError, match="missing"):
        call(tmp_path / "missing.sct")


@pytest.mark.parametrize("command", [["show"], ["stats"], ["replay"], ["heatmap", "-o", "x.png"]])
def test_cli_reports_missing_files(tmp_path, command):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scalatrace.cli",
            command[0],
            str(tmp_path / "missing.sct"),
            *command[1:],
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "missing.sct" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_arguments_raise_usage_error(stencil_traces, tmp_path):
    t = stencil_traces["small"]
    bad_calls = [
        lambda: t.comm_matrix(metric="furlongs"),
        lambda: t.comm_matrix(kind="telepathy"),
        lambda: t.summary(by="colour"),
        lambda: list(t.events(4, timing="exact")),
        lambda: list(t.events(99)),
        lambda: t.rank_table(99),
        lambda: t.to_dataframe(ranks=[-1]),
        lambda: scalatrace.replay(t.path, timing="exact"),
        lambda: scalatrace.replay(t.path, compute_scale=-1),
        lambda: scalatrace.replay(t.path, np=2),
        lambda: scalatrace.trace(["true"], np=0),
    ]
    for call in bad_calls:
        with pytest.raises(UsageError):
            call()


def test_no_bare_key_errors(stencil_traces):
    t = stencil_traces["small"]
    loop = next(n for n in t.walk() if isinstance(n, scalatrace.Loop))
    with pytest.raises(UsageError, match="rank 99 out of range"):
        loop.iterations(99)
    assert loop.iterations(4) > 0
    ev = next(n for n in t.walk() if n.op == "Isend")
    with pytest.raises(UsageError, match="no value recorded for rank"):
        ev.bytes.value_at(10**6, 0)
    with pytest.raises(UnknownNameError, match="unknown field 'Colour'"):
        ev.field("Colour")
    first = next(iter(t.events(0)))
    with pytest.raises(UnknownNameError, match="unknown field"):
        first["Colour"]
    raw = scalatrace.read_raw(t.raw_dir)
    with pytest.raises(UnknownNameError, match="no recording of rank 42"):
        raw[42]


def test_plot_arguments(stencil_traces):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scalatrace import plot

    t = stencil_traces["small"]
    fig, ax = plt.subplots()
    with pytest.raises(UsageError, match="value must be one of 'calls'"):
        plot.op_bars(t, value="time", ax=ax)
    with pytest.raises(UsageError, match="metric"):
        plot.comm_heatmap(t, metric="volts", ax=ax)
    with pytest.raises(UsageError, match="rank 77"):
        plot.loop_structure(t, rank=77, ax=ax)
    plt.close(fig)


def test_replay_is_callable_and_a_module():
    import scalatrace.replay as module
    from scalatrace.replay import ReplayResult, replay

    assert callable(scalatrace.replay) and scalatrace.replay is module
    assert module.replay is replay and module.ReplayResult is ReplayResult
