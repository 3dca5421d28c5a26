"""``pip install .`` into a fresh virtual environment, then use it from outside the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(2400)
def test_pip_install_and_run_from_outside(example, tmp_path):
    ring = example("ring")
    env_dir = tmp_path / "venv"
    # System site packages: numpy & co. come from the running interpreter's environment.
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # No build tree either: the installed package must find (or build) everything itself.
    hidden = ("PYTHONPATH", "SCALATRACE_COLLECTOR", "SCALATRACE_BUILD_DIR")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    # The host interpreter's site-packages (build backend, pybind11) stay visible.
    host_site = [p for p in sys.path if p.endswith("site-packages")]
    (next((env_dir / "lib").glob("python3*")) / "site-packages" / "_host.pth").write_text(
        "\n".join(host_site) + "\n"
    )
    build = subprocess.run(
        [
            str(py),
            "-m",
            "pip",
            "install",
            "--no-build-isolation",
            "--no-deps",
            "-q",
            "-C",
            f"build-dir={tmp_path / 'build'}",
            str(REPO),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,  # a from-scratch build: more than 900 s at load 15-20
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    imp = subprocess.run(
        [str(py), "-c", "import scalatrace, sys; print(scalatrace.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert imp.returncode == 0, imp.stderr
    assert str(env_dir) in imp.stdout, "imported the source tree instead of the installed package"
    cli = env_dir / "bin" / "scalatrace"
    run = subprocess.run(
        [str(cli), "run", "-n", "4", "-o", "ring.sct", "--", str(ring), "-i", "2", "-c", "5"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert (work / "ring.sct").is_file()
    stats = subprocess.run(
        [str(cli), "stats", "ring.sct", "--json"], cwd=work, env=env, capture_output=True, text=True
    )
    assert stats.returncode == 0 and '"nranks": 4' in stats.stdout
    # The C++ tools are console entry points on the environment's PATH (issue 37).
    for tool in ("scalatrace-dump", "scalatrace-replay", "scalatrace-harness"):
        helped = subprocess.run(
            [str(env_dir / "bin" / tool), "--help"], env=env, capture_output=True, text=True
        )
        assert helped.returncode == 0 and "usage" in (helped.stdout + helped.stderr).lower(), tool
    # The demo after a plain pip install (issue 37): it builds its example from the sources
    # installed with the package, with mpicc, and runs to the end.
    demo = subprocess.run(
        [str(py), "-m", "scalatrace.demo"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "== building stencil2d with mpicc" in demo.stdout
    assert (work / "demo-output" / "bin" / "stencil2d").is_file()
    assert (work / "demo-output" / "heatmap.png").is_file() and "Done." in demo.stdout
    # Lean install: Release build with stripped binaries (pyproject install.strip), no debug info.
    package = Path(imp.stdout.strip()).parent
    binaries = [
        *package.glob("_core*.so"),
        package / "lib" / "libscalatrace.so",
        *(package / "bin").iterdir(),
    ]
    assert binaries and all(b".debug_info" not in b.read_bytes() for b in binaries), binaries
    size = sum(f.stat().st_size for f in package.rglob("*") if f.is_file())
    assert size < 20 * 2**20, f"installed package is {size / 2**20:.1f} MiB"
