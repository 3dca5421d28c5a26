"""The layer order of the tree (scripts/check_layers.py): the core's stages include only earlier
stages, the Python package's modules import only lower levels (docs/python.md, "Package
levels"). Runs the checker on the real tree and on copies with planted violations; needs no build.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "scripts" / "check_layers.py"


def run_checker(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(CHECKER), "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """A copy of what the checker reads: cpp/core, python/scalatrace, scripts."""
    for part in ("cpp/core", "python/scalatrace", "scripts"):
        shutil.copytree(
            REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "*.so")
        )
    return tmp_path


def test_real_tree_is_in_order():
    r = run_checker(REPO)
    assert r.returncode == 0, r.stderr
    assert "in order" in r.stdout


def test_copy_is_in_order(tree: Path):
    r = run_checker(tree)
    assert r.returncode == 0, r.stderr


def test_upward_include_in_the_core_is_caught(tree: Path):
    # model is the ground: it may not include a later stage such as simulate.
    victim = sorted((tree / "cpp/core/src/model").glob("*.cpp"))[0]
    victim.write_text('#include "scalatrace/simulate/simulator.hpp"\n' + victim.read_text())
    r = run_checker(tree)
    assert r.returncode == 1
    assert f"cpp/core/src/model/{victim.name}:1" in r.stderr
    assert "stage 'model' includes \"scalatrace/simulate/simulator.hpp\"" in r.stderr


@pytest.mark.parametrize(
    "module, statement, expected",
    [
        # The cycle the package had: a feature importing the user's Trace class, inside a function
        # as the old lazy imports were (it still counts), in each spelling.
        (
            "simulate",
            "from ._trace import Trace",
            "'simulate' (level 5) imports '_trace' (level 7)",
        ),
        ("simulate", "from . import _trace", "'simulate' (level 5) imports '_trace' (level 7)"),
        ("simulate", "import scalatrace._trace", "'simulate' (level 5) imports '_trace' (level 7)"),
        # ``from . import load`` reaches __init__, which imports every feature: also a cycle.
        ("_model", "from . import load", "'_model' (level 3) imports '__init__' (level 8)"),
        # Modules on one level may not import each other.
        (
            "simgrid",
            "from .simulate import simulate",
            "'simgrid' (level 5) imports 'simulate' (level 5)",
        ),
    ],
)
def test_python_upward_import_is_caught(tree: Path, module: str, statement: str, expected: str):
    victim = tree / f"python/scalatrace/{module}.py"
    victim.write_text(victim.read_text() + f"\n\ndef _planted():\n    {statement}\n")
    r = run_checker(tree)
    assert r.returncode == 1
    assert f"python/scalatrace/{module}.py:" in r.stderr
    assert expected in r.stderr


def test_python_module_without_level_is_caught(tree: Path):
    (tree / "python/scalatrace/newthing.py").write_text('"""A module nobody gave a level."""\n')
    r = run_checker(tree)
    assert r.returncode == 1
    assert "newthing: no level in PYTHON_LEVELS" in r.stderr
