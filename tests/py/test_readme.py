"""Every Python example of README.md and docs/python.md runs as written.

The ```python blocks of each document are joined in order and run as one script in a fresh
interpreter, in a scratch directory where ``build/py`` points at the real build (the examples
use ``build/py/examples/...`` paths relative to the repository root). From the repository root
the README's coNCePTuaL example finds the compiler's sources in ``../shared/tools/conceptual``;
from the scratch directory it is told where they are (``SCALATRACE_CONCEPTUAL_TOOLS``), so that
the test runs alone too, not only after ``test_codegen_conceptual.py`` built the compiler."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import helpers
import pytest

REPO = Path(__file__).resolve().parents[2]


def python_blocks(markdown: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown.read_text(), flags=re.S | re.M)


@pytest.mark.parametrize("document", ["README.md", "docs/python.md"])
def test_document_examples_run(document, tmp_path, collector_lib):
    blocks = python_blocks(REPO / document)
    assert blocks, f"no python blocks in {document}"
    helpers.example_path("stencil2d")  # fails clearly if the examples are not built
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "py").symlink_to(helpers.build_dir().resolve())
    script = tmp_path / "examples.py"
    script.write_text("\n\n".join(blocks))
    env = dict(os.environ, MPLBACKEND="Agg")
    tools = REPO.parent / "shared" / "tools" / "conceptual"
    if "SCALATRACE_CONCEPTUAL_TOOLS" not in env and (tools / "build.sh").is_file():
        env["SCALATRACE_CONCEPTUAL_TOOLS"] = str(tools)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{document} examples failed:\n{proc.stderr[-4000:]}"
