"""Where a trace's bytes go (issue 30): ``scalatrace.byte_breakdown`` and ``scalatrace stats
--bytes`` on real runs, the timing setting ``SCALATRACE_TIMING_BINS``, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import helpers
import pytest

import scalatrace
from scalatrace import TraceFormatError

PARTS = {"header", "metadata", "call-site table", "node tree", "timing"}


@pytest.fixture(scope="module")
def stencil_run(tmp_path_factory):
    """One 4-rank stencil2d run under the collector: (trace file, raw directory)."""
    tmp = tmp_path_factory.mktemp("sizes")
    out, raw = tmp / "s.sct", tmp / "raw"
    argv = [str(helpers.example_path("stencil2d")), "-i", "12", "-c", "20"]
    helpers.run_mpi(4, argv, env=helpers.collector_env(raw=raw, out=out, quiet=1), timeout=120)
    return out, raw


def test_breakdown_adds_up_to_the_file(stencil_run):
    path, _ = stencil_run
    frame = scalatrace.byte_breakdown(path)
    assert PARTS <= set(frame["part"])
    assert frame["stored_bytes"].sum() == pytest.approx(path.stat().st_size, abs=1.0)
    assert frame["share"].sum() == pytest.approx(1.0)
    # Entropy coding stores fewer bytes than the parts hold before it.
    assert frame["stored_bytes"].sum() < frame["bytes"].sum()
    # A loaded trace gives the breakdown of the bytes it would be saved as.
    again = scalatrace.byte_breakdown(scalatrace.load(path))
    assert list(again["part"]) == list(frame["part"])
    assert again["stored_bytes"].sum() == pytest.approx(path.stat().st_size, rel=0.05)


def test_stats_bytes_cli(stencil_run):
    path, _ = stencil_run
    cli = [sys.executable, "-m", "scalatrace.cli"]
    text = subprocess.run(
        cli + ["stats", "--bytes", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert f"{path.stat().st_size:,} bytes in the file" in text
    for part in PARTS:
        assert part in text
    doc = json.loads(
        subprocess.run(
            cli + ["stats", "--bytes", "--json", str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert doc["file_bytes"] == path.stat().st_size
    assert {p["part"] for p in doc["parts"]} >= PARTS


def test_timing_bins_setting_bounds_the_timing(stencil_run, tmp_path):
    """SCALATRACE_TIMING_BINS=1 keeps one bin per histogram, 8 keeps them all: the timing part
    grows with the setting, means stay within the time codes' rounding, events stay lossless."""
    _, raw = stencil_run
    harness = helpers.tool_path("scalatrace-harness")
    timing, means = {}, {}
    for bins in (1, 2, 8):
        out = tmp_path / f"b{bins}.sct"
        subprocess.run(
            [str(harness), "merge-raw", str(raw), "-o", str(out), "--timing-bins", str(bins)],
            check=True,
            capture_output=True,
        )
        frame = scalatrace.byte_breakdown(out)
        timing[bins] = float(frame.loc[frame["part"] == "timing", "bytes"].iloc[0])
        t = scalatrace.load(out)
        assert t.settings["setting.SCALATRACE_TIMING_BINS"] == str(bins)
        table = t.summary()
        means[bins] = float(table["duration_ns"].sum() + table["compute_ns"].sum())
        helpers.run_tool("scalatrace-dump", ["check", raw, out])  # lossless on every rank
    assert timing[1] < timing[2] <= timing[8]
    # Totals come from counts and means, which every setting keeps.
    assert means[1] == pytest.approx(means[8], rel=0.01)


def test_breakdown_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        scalatrace.byte_breakdown(tmp_path / "missing.sct")
    (tmp_path / "x.sct").write_text("not a trace at all")
    with pytest.raises(TraceFormatError, match="bad magic"):
        scalatrace.byte_breakdown(tmp_path / "x.sct")
    with pytest.raises(TraceFormatError, match="directory"):
        scalatrace.byte_breakdown(tmp_path)
