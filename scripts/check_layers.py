#!/usr/bin/env python3
"""Checks the layer order of the C++ core and of the Python package; exit 1 on any violation.

C++ (cpp/core): every file of stage S (cpp/core/src/S/, cpp/core/include/scalatrace/S/) may
include only headers of S and of the stages before it in ``CORE_STAGES``.

Python (python/scalatrace): a module may import only modules of a lower level in
``PYTHON_LEVELS`` (imports inside functions count: a lazy import is still an import). Modules on
the same level may not import each other, so the import graph has no cycle. A module missing
from the table is an error: a new module must be given its level.

Usage: ``python scripts/check_layers.py [--root DIR]``. Run by ctest (``layers``) and pytest
(tests/py/test_layers.py, which also plants violations and checks they are caught).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

# The pipeline, lowest first (cpp/core/README.md).
CORE_STAGES = [
    "support",
    "model",
    "compress",
    "merge",
    "read",
    "format",
    "analysis",
    "simulate",
    "synthetic",
    "extrapolate",
    "codegen",
    "cluster",
]

# python/scalatrace module -> level (docs/python.md, "Package levels"). A module imports only
# modules of lower levels; the user's Trace (_trace) sits above the features it offers as
# methods, and features that return a trace build it through _model.wrap (a registry).
PYTHON_LEVELS = {
    # L0: the compiled core and the exceptions
    "_core": 0,
    "errors": 0,
    # L1: shared constants and helpers (OP_NAMES once), paths, result types
    "_base": 1,
    "_paths": 1,
    "_files": 1,
    "_core_guard": 1,
    "_summary": 1,
    "debuginfo": 1,
    # L2: pandas tables over core objects
    "frames": 2,
    # L3: the trace as data (knows no feature module) and the trace-class registry
    "_model": 3,
    # L4: raw recordings; simulator what-if descriptions (topologies, noise)
    "_raw": 4,
    "topology": 4,
    # L4.5: the per-rank coNCePTuaL form (over the model; codegen's to_conceptual uses it)
    "_conceptual_per_rank": 4.5,
    # L5: features as functions over the model; running a program under the collector
    "simulate": 5,
    "simgrid": 5,
    "goal": 5,
    "conceptual": 5,
    "codegen": 5,
    "clustering": 5,
    "extrapolate": 5,
    "export_otf2": 5,
    "export_extrap": 5,
    "comparison": 5,
    "replay": 5,
    "_launch": 5,
    "sizes": 5,
    "phases": 5,
    # L5.3-5.6: features on features (multi-parameter PMNF on fit_scaling's search; models
    # through the phases)
    "pmnf": 5.3,
    # scalable benchmarks: the laws per role and timing models (5.1, on extrapolate), the two
    # writers (5.2), the function (5.25)
    "_scalable_laws": 5.1,
    "_scalable_c": 5.2,
    "_scalable_conceptual": 5.2,
    "scalable": 5.25,
    "models": 5.6,
    # L5.1: views of the run in time (over the critical path's replay)
    "critical_path": 5,
    "views": 5.1,
    # L6: plots of traces and of the features' results
    "plot": 6,
    # L7: the user's Trace class (model + feature methods)
    "_trace": 7,
    "report": 7,
    # L8: entry points
    "cli": 8,
    "demo": 8,
    "tools": 8,
    "__init__": 8,
}

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def check_core(root: Path) -> list[str]:
    errors: list[str] = []
    order = {s: i for i, s in enumerate(CORE_STAGES)}
    bases = [root / "cpp/core/src", root / "cpp/core/include/scalatrace"]
    for base in bases:
        if not base.is_dir():
            errors.append(f"{base}: missing")
            continue
        for path in sorted(base.rglob("*")):
            if not path.is_file():
                continue
            rel = path.relative_to(base)
            if len(rel.parts) < 2 or rel.parts[0] not in order:
                errors.append(f"{path.relative_to(root)}: not inside a stage folder {CORE_STAGES}")
                continue
            stage = rel.parts[0]
            text = path.read_text(encoding="utf-8", errors="replace")
            for lineno, name in _included(text):
                parts = name.split("/")
                if parts[0] == "scalatrace" and len(parts) >= 3:
                    target = parts[1]
                elif len(parts) >= 2 and parts[0] in order:
                    target = parts[0]
                else:
                    errors.append(
                        f'{path.relative_to(root)}:{lineno}: include "{name}" names no stage'
                    )
                    continue
                if target not in order:
                    errors.append(
                        f'{path.relative_to(root)}:{lineno}: include "{name}": unknown stage'
                    )
                elif order[target] > order[stage]:
                    errors.append(
                        f"{path.relative_to(root)}:{lineno}: stage '{stage}' includes \"{name}\" of the "
                        f"later stage '{target}' (order: {' < '.join(CORE_STAGES)})"
                    )
    return errors


def _included(text: str):
    for m in _INCLUDE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1)


def _imported_modules(tree: ast.AST, package: str, modules: set[str]) -> list[tuple[int, str]]:
    """(line, module of ``package``) for every import in ``tree``, also inside functions and
    ``if TYPE_CHECKING:``. A name that is not a module (``from . import Trace``,
    ``from scalatrace import load``, ``import scalatrace``) is an import of ``__init__``."""
    found: list[tuple[int, str]] = []

    def names_of(node: ast.ImportFrom) -> list[tuple[int, str]]:
        return [(node.lineno, a.name if a.name in modules else "__init__") for a in node.names]

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level >= 1 and node.module is None:
                found += names_of(node)
            elif node.level >= 1:
                found.append((node.lineno, node.module.split(".")[0]))
            elif node.module and node.module.split(".")[0] == package:
                parts = node.module.split(".")
                found += [(node.lineno, parts[1])] if len(parts) > 1 else names_of(node)
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == package:
                    found.append((node.lineno, parts[1] if len(parts) > 1 else "__init__"))
    return found


def check_python(root: Path, package: str = "scalatrace") -> list[str]:
    errors: list[str] = []
    pkg = root / "python" / package
    if not pkg.is_dir():
        return [f"python/{package}: missing"]
    # Source modules; the compiled core counts as a module through its stub (_core.pyi) or binary.
    modules = {p.stem: p for p in pkg.glob("*.py")}
    modules.update(
        {p.name: p for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    )
    compiled = {p.name.split(".")[0] for p in pkg.iterdir() if p.suffix in (".pyi", ".so", ".pyd")}
    for name in sorted(modules):
        if name not in PYTHON_LEVELS:
            errors.append(
                f"python/{package}/{name}: no level in PYTHON_LEVELS (scripts/check_layers.py)"
            )
    known = set(modules) | compiled
    for name, path in sorted(modules.items()):
        if name not in PYTHON_LEVELS:
            continue
        file = path / "__init__.py" if path.is_dir() else path
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        for lineno, target in _imported_modules(tree, package, known):
            if target == name or target not in PYTHON_LEVELS:
                continue
            if PYTHON_LEVELS[target] >= PYTHON_LEVELS[name]:
                errors.append(
                    f"{file.relative_to(root)}:{lineno}: '{name}' (level {PYTHON_LEVELS[name]}) imports "
                    f"'{target}' (level {PYTHON_LEVELS[target]}); a module imports only lower levels"
                )
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    errors = check_core(args.root) + check_python(args.root)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check_layers: {len(errors)} violation(s)", file=sys.stderr)
        return 1
    print("check_layers: core stages and Python levels in order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
