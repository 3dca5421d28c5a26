"""The tree keeps its style: ruff (lint and format) over the Python code, clang-format over the
C++ code (.clang-format). Needs no build. clang-format comes with `make test` (Debian package,
scripts/setup-system.sh) and ruff with requirements-dev.txt; without them the checks are skipped
with the reason."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO_ROOT

PYTHON_DIRS = ["python", "tests/py", "benchmarks", "scripts"]
CPP_DIRS = ["cpp", "tests/cpp", "benchmarks", "examples"]
CPP_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp", ".inc"}


def _ruff() -> list[str]:
    try:
        subprocess.run([sys.executable, "-m", "ruff", "--version"], check=True, capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("ruff is not installed (pip install -r requirements-dev.txt)")
    return [sys.executable, "-m", "ruff"]


def _tracked(dirs: list[str], suffixes: set[str]) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--", *dirs], cwd=REPO_ROOT, capture_output=True, text=True
    )
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [
        f for f in out.stdout.split() if Path(f).suffix in suffixes and (REPO_ROOT / f).exists()
    ]


def test_python_passes_ruff_lint():
    result = subprocess.run(
        [*_ruff(), "check", *PYTHON_DIRS], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_python_is_ruff_formatted():
    result = subprocess.run(
        [*_ruff(), "format", "--check", *PYTHON_DIRS], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_cpp_is_clang_formatted():
    clang_format = shutil.which("clang-format")
    if clang_format is None:
        pytest.skip("clang-format is not installed (Debian package clang-format)")
    files = _tracked(CPP_DIRS, CPP_SUFFIXES)
    assert files, "no C++ files found"
    result = subprocess.run(
        [clang_format, "--dry-run", "--Werror", *files],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    unformatted = sorted(
        {line.split(":")[0] for line in result.stderr.splitlines() if "error:" in line}
    )
    assert result.returncode == 0, "not clang-formatted (run clang-format -i): " + ", ".join(
        unformatted
    )
