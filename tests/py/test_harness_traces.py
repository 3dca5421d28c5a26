"""Analyses on traces made by ``scalatrace-harness`` (in-process generation, compression and
merge at rank counts no real run here could reach): the communication matrix from the
compressed structure equals the one from expanding every rank with a Cursor."""

from __future__ import annotations

import subprocess

import helpers
import numpy as np
import pytest

import scalatrace
from scalatrace import _core


@pytest.fixture(scope="module")
def harness():
    try:
        return helpers.tool_path("scalatrace-harness")
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


@pytest.mark.parametrize(
    "pattern,ranks,extra",
    [
        ("stencil2d", 64, ["--wrap"]),
        ("stencil2d", 48, []),
        ("stencil3d", 27, []),
        ("collectives", 12, []),
        ("rowcolumn", 24, []),
        ("irregular", 16, ["--seed", "5"]),
    ],
)
def test_structural_matrix_equals_expansion(harness, tmp_path, pattern, ranks, extra):
    out = tmp_path / f"{pattern}.sct"
    subprocess.run(
        [
            str(harness),
            "--pattern",
            pattern,
            "--ranks",
            str(ranks),
            "--timesteps",
            "7",
            *extra,
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    t = scalatrace.load(out)
    assert t.nranks == ranks
    for metric in ("bytes", "messages"):
        for kind in ("p2p", "collective", "all"):
            src, dst, val, n = _core.comm_matrix_by_expansion(t._core, metric, kind)
            expected = np.zeros((n, n))
            np.add.at(expected, (src, dst), val)
            assert np.array_equal(t.comm_matrix(metric, kind), expected), (pattern, metric, kind)
            assert np.array_equal(t.comm_matrix(metric, kind, sparse=True).toarray(), expected)
    # Summary calls equal the events every rank's cursor yields.
    total = sum(1 for r in range(t.nranks) for _ in t.events(r, timing="none"))
    assert t.summary()["calls"].sum() == total


def test_stencil_timestep_loop_at_scale(harness, tmp_path):
    out = tmp_path / "s.sct"
    subprocess.run(
        [
            str(harness),
            "--pattern",
            "stencil2d",
            "--ranks",
            "1024",
            "--timesteps",
            "25",
            "--wrap",
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    t = scalatrace.load(out)
    loops = t.timestep_loops()
    assert [loop.max_iterations for loop in loops] == [25]
    m = t.comm_matrix("messages", "p2p", sparse=True)
    # Periodic 9-point stencil: every rank sends to 8 distinct neighbours, 25 times each.
    assert m.nnz == 8 * 1024
    assert set(np.unique(m.data)) == {25.0}
