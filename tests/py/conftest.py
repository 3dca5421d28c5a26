"""Shared pytest fixtures for scalatrace's Python and real-MPI tests.

The plain functions live in ``helpers.py`` (import it as ``import helpers``); the fixtures here
wrap them for tests that prefer fixtures:

* ``build_dir``: Path of the CMake build dir (``$SCALATRACE_BUILD_DIR`` or ``<repo>/build/py``).
* ``example``: ``example(name) -> Path`` of a built example; skips the test if the example is
  not built *only* for ``fortran_ring`` without a Fortran compiler, fails otherwise.
* ``collector_lib``: Path of ``libscalatrace.so``; fails with a clear message if absent.
* ``run_mpi``: ``helpers.run_mpi(n, argv, env=None, timeout=60)``.
* ``collector_env``: ``helpers.collector_env(raw=None, out="none", **SCALATRACE_settings)``.
* ``dump_raw``: ``helpers.dump_raw(raw_dir) -> dict``.
* ``read_truth``: ``helpers.read_truth(truth_dir, nranks) -> list[list[dict]]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import helpers  # noqa: E402


@pytest.fixture(scope="session")
def build_dir() -> Path:
    return helpers.build_dir()


@pytest.fixture(scope="session")
def example():
    def find(name: str) -> Path:
        try:
            return helpers.example_path(name)
        except FileNotFoundError as exc:
            if name.startswith("fortran") and (helpers.build_dir() / "examples").is_dir():
                pytest.skip(f"{exc} (built without a Fortran compiler?)")
            pytest.fail(str(exc))

    return find


@pytest.fixture(scope="session")
def collector_lib() -> Path:
    try:
        return helpers.collector_library()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def run_mpi():
    return helpers.run_mpi


@pytest.fixture(scope="session")
def collector_env():
    return helpers.collector_env


@pytest.fixture(scope="session")
def dump_raw():
    return helpers.dump_raw


@pytest.fixture(scope="session")
def read_truth():
    return helpers.read_truth


@pytest.fixture(scope="session")
def stencil_traces(tmp_path_factory):
    """Two real 9-rank stencil2d runs (collector, raw mode on), differing in message size:
    ``{"small": Trace, "large": Trace}`` (``raw_dir`` set). Shared by the pandas, comparison
    and export tests."""
    import scalatrace

    out = {}
    for label, size in (("small", "1024"), ("large", "4096")):
        tmp = tmp_path_factory.mktemp(f"stencil-{label}")
        argv = [str(helpers.example_path("stencil2d")), "-i", "4", "-c", "5", "-s", size]
        out[label] = scalatrace.trace(argv, np=9, out=tmp / "stencil.sct", raw=True, timeout=120)
    return out
