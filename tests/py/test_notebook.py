"""The quick-start notebook runs from top to bottom."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "01_quickstart.ipynb"


def test_quickstart_notebook_executes(example, collector_lib, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    example("stencil2d")  # fails clearly if the examples are not built
    nb = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.chdir(tmp_path)
    client = nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any(
        o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in outputs
    )
