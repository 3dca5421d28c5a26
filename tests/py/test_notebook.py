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


def test_committed_notebooks_show_their_outputs_and_stay_small():
    """The notebooks are committed executed (scripts/execute_notebooks.py), so they show their
    tables and figures when read on the web; their figures stay small PNGs."""
    import base64
    import json

    for path in sorted(NOTEBOOK.parent.glob("*.ipynb")):
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert all(c.get("execution_count") for c in code), f"{path.name}: cells not executed"
        outputs = [o for c in code for o in c.get("outputs", [])]
        assert not [o for o in outputs if o.get("output_type") == "error"], path.name
        pngs = [
            base64.b64decode(o["data"]["image/png"])
            for o in outputs
            if "image/png" in o.get("data", {})
        ]
        assert pngs, f"{path.name}: no figure stored"
        assert max(len(p) for p in pngs) < 60_000, f"{path.name}: a figure over 60 kB"
        assert path.stat().st_size < 300_000, f"{path.name}: {path.stat().st_size} bytes"
