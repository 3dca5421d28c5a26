"""Sphinx configuration of the API reference (``make docs`` -> build/docs/html/index.html).

The reference is built from the docstrings of the installed package (numpydoc style, read by
``sphinx.ext.napoleon``); the hand-written guides stay Markdown in docs/ and are linked from the
index.
"""

from __future__ import annotations

import scalatrace

project = "scalatrace"
author = "the scalatrace authors"
release = version = scalatrace.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"scalatrace {release} API reference"
html_theme_options = {"description": "MPI communication tracing, compression, replay and analysis"}
# The numpydoc parameter types are plain words ("path", "Trace or path"); napoleon turns each
# into a cross-reference, and a word that names several attributes ("path") is ambiguous.
suppress_warnings = ["ref.python"]
