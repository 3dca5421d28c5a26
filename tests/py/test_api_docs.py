"""The API reference (docs/api, built by ``make docs`` with Sphinx) covers every public module:
each has a page that autodoc fills from its docstrings, listed in the index. Building the site
takes Sphinx (installed by ``make docs`` only), so the test checks the sources; ``make docs``
builds with warnings as errors."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
API = REPO / "docs" / "api"


def test_every_public_module_has_a_page_in_the_index():
    modules = sorted(
        p.stem for p in (REPO / "python" / "scalatrace").glob("*.py") if not p.stem.startswith("_")
    )
    index = (API / "index.rst").read_text()
    listed = set(re.findall(r"^   (\w+)$", index, flags=re.M))
    assert set(modules) | {"scalatrace"} == listed, "pages missing from / extra in the index"
    for name in modules:
        page = (API / f"{name}.rst").read_text()
        assert f".. automodule:: scalatrace.{name}" in page, name
    assert ".. automodule:: scalatrace\n" in (API / "scalatrace.rst").read_text()
    assert "sphinx" in (REPO / "requirements-docs.txt").read_text()
    assert "docs/api build/docs/html" in (REPO / "Makefile").read_text()
