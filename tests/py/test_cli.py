"""The ``scalatrace`` command line (run in-process through ``scalatrace.cli.main``)."""

from __future__ import annotations

import json

import helpers
import numpy as np
import pytest

import scalatrace
from scalatrace.cli import main


@pytest.fixture(scope="module")
def ring_trace(example, collector_lib, tmp_path_factory):
    """A trace of the ring example (raw recording compressed offline: independent of `run`)."""
    tmp = tmp_path_factory.mktemp("cli")
    helpers.run_mpi(
        4,
        [str(example("ring")), "-i", "2", "-c", "5"],
        env=helpers.collector_env(raw=str(tmp / "raw")),
    )
    out = tmp / "ring.sct"
    scalatrace.read_raw(tmp / "raw").compress().save(out)
    return out


def test_run_writes_trace_and_raw(example, collector_lib, tmp_path):
    out = tmp_path / "ring.sct"
    rc = main(
        [
            "run",
            "-n",
            "4",
            "-o",
            str(out),
            "--raw",
            str(tmp_path / "raw"),
            "--",
            str(example("ring")),
            "-i",
            "2",
            "-c",
            "5",
        ]
    )
    assert rc == 0
    t = scalatrace.load(out)
    raw = scalatrace.read_raw(tmp_path / "raw")
    assert t.nranks == 4 == len(raw)
    assert np.array_equal(t.comm_matrix(kind="all"), raw.comm_matrix(kind="all"))


def test_run_failure_exit_status(collector_lib, tmp_path, capsys):
    rc = main(
        [
            "run",
            "-n",
            "1",
            "-o",
            str(tmp_path / "f.sct"),
            "--",
            "sh",
            "-c",
            "echo cli-boom >&2; exit 5",
        ]
    )
    assert rc != 0
    assert "cli-boom" in capsys.readouterr().err


def test_show(ring_trace, capsys):
    assert main(["show", str(ring_trace), "--sites"]) == 0
    out = capsys.readouterr().out
    assert "Trace(" in out and "Send" in out and "call sites:" in out


def test_stats_text_and_json(ring_trace, capsys):
    assert main(["stats", str(ring_trace)]) == 0
    text = capsys.readouterr().out
    assert "calls" in text and "Sendrecv" in text
    assert main(["stats", str(ring_trace), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    t = scalatrace.load(ring_trace)
    assert doc["nranks"] == 4
    assert {r["op"]: r["calls"] for r in doc["summary"]} == dict(
        zip(t.summary()["op"], t.summary()["calls"].tolist())
    )


def test_heatmap(ring_trace, tmp_path):
    png = tmp_path / "h.png"
    assert (
        main(
            [
                "heatmap",
                str(ring_trace),
                "-o",
                str(png),
                "--metric",
                "messages",
                "--kind",
                "all",
                "--log",
            ]
        )
        == 0
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_trace_is_reported(tmp_path, capsys):
    bad = tmp_path / "bad.sct"
    bad.write_bytes(b"garbage")
    assert main(["show", str(bad)]) == 1
    assert "bad.sct" in capsys.readouterr().err


def test_replay_delegates(ring_trace, capsys):
    try:
        scalatrace._paths.tool("scalatrace-replay")
    except scalatrace.ScalatraceError:
        pytest.skip("scalatrace-replay not installed in this build")
    assert main(["replay", str(ring_trace), "--timeout", "30"]) == 0
    assert "replayed" in capsys.readouterr().out
