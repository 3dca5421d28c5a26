#!/usr/bin/env python3
"""Executes the notebooks of ``notebooks/`` and writes them back with their outputs, so that
they show their tables and figures when read on the web (GitHub renders stored outputs).

Usage (after ``make build``: the notebooks run the built examples)::

    .venv/bin/python scripts/execute_notebooks.py [notebooks/NAME.ipynb ...]

Each notebook runs top to bottom in a scratch directory (what it writes stays there), figures at
72 dpi; every PNG is then stored as a 256-colour palette image (a third of the size or less), and
no execution timings are kept, so a re-run changes only what the run itself changed. The tests
run the notebooks again (tests/py/test_notebook.py, test_extrapolate.py, test_model.py) and
check that the stored outputs stay small (test_notebook.py).
"""

from __future__ import annotations

import base64
import io
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIGURE_DPI = 72


def smaller_png(data: str) -> str:
    """A base64 PNG as a palette PNG (256 colours, optimised), if that is smaller."""
    from PIL import Image

    raw = base64.b64decode(data)
    image = Image.open(io.BytesIO(raw)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256).save(out, format="PNG", optimize=True)
    packed = out.getvalue()
    return base64.b64encode(packed).decode("ascii") if len(packed) < len(raw) else data


def execute(path: Path) -> None:
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    os.environ.setdefault("SCALATRACE_BUILD_DIR", str(REPO / "build" / "py"))
    with tempfile.TemporaryDirectory(prefix="scalatrace-notebook-") as work:
        client = nbclient.NotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            record_timing=False,
            resources={"metadata": {"path": work}},
            extra_arguments=[f"--InlineBackend.rc={{'figure.dpi': {FIGURE_DPI}}}"],
        )
        client.execute(cwd=work)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                raise SystemExit(
                    f"{path}: a cell failed: {output.get('ename')}: {output.get('evalue')}"
                )
            data = output.get("data", {})
            if "image/png" in data:
                data["image/png"] = smaller_png(data["image/png"])
    nbformat.write(nb, path)
    print(f"{path.relative_to(REPO)}: {path.stat().st_size:,} bytes with outputs")


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or sorted((REPO / "notebooks").glob("*.ipynb"))
    for path in paths:
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
