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
    "support", "model", "compress", "merge", "read", "format", "analysis", "simulate",
    "synthetic", "extrapolate", "codegen", "cluster",
]

# python/scalatrace module -> level (docs/python.md, "Package levels").
PYTHON_LEVELS = {
    # L0: the compiled core, errors, paths, shared constants
    "_core": 0, "errors": 0, "_paths": 0, "_base": 0, "_summary": 0, "conceptual_grammar": 0,
    # L1: the trace as data
    "_model": 1,
    # L2: tables
    "frames": 2,
    # L3: raw recordings
    "_raw": 3,
    # L4: features as functions over the model
    "simulate": 4, "simgrid": 4, "codegen": 4, "clustering": 4, "extrapolate": 4,
    "export_otf2": 4, "export_extrap": 4, "comparison": 4, "plot": 4, "replay": 4,
    # L5: the user's Trace class
    "_trace": 5,
    # L6: entry points
    "_launch": 6, "cli": 6, "demo": 6, "__init__": 6,
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
                    errors.append(f"{path.relative_to(root)}:{lineno}: include \"{name}\" names no stage")
                    continue
                if target not in order:
                    errors.append(f"{path.relative_to(root)}:{lineno}: include \"{name}\": unknown stage")
                elif order[target] > order[stage]:
                    errors.append(
                        f"{path.relative_to(root)}:{lineno}: stage '{stage}' includes \"{name}\" of the "
                        f"later stage '{target}' (order: {' < '.join(CORE_STAGES)})")
    return errors


def _included(text: str):
    for m in _INCLUDE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1)


def _imported_modules(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:
                found += [(node.lineno, a.name) for a in node.names]
            elif node.level == 1:
                found.append((node.lineno, node.module.split(".")[0]))
            elif node.level == 0 and node.module and node.module.split(".")[0] == package:
                parts = node.module.split(".")
                if len(parts) > 1:
                    found.append((node.lineno, parts[1]))
                else:
                    found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == package and len(parts) > 1:
                    found.append((node.lineno, parts[1]))
    return found


def check_python(root: Path, package: str = "scalatrace") -> list[str]:
    errors: list[str] = []
    pkg = root / "python" / package
    modules = {p.stem: p for p in pkg.glob("*.py")}
    modules.update({p.name: p for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").exists()})
    for name in sorted(modules):
        if name not in PYTHON_LEVELS:
            errors.append(f"python/{package}/{name}: no level in PYTHON_LEVELS (scripts/check_layers.py)")
    for name, path in sorted(modules.items()):
        if name not in PYTHON_LEVELS:
            continue
        file = path / "__init__.py" if path.is_dir() else path
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        for lineno, target in _imported_modules(tree, package):
            if target not in modules:
                continue  # a name from __init__ or a non-module attribute
            if target not in PYTHON_LEVELS:
                continue
            if PYTHON_LEVELS[target] >= PYTHON_LEVELS[name] and target != name:
                errors.append(
                    f"{file.relative_to(root)}:{lineno}: '{name}' (level {PYTHON_LEVELS[name]}) imports "
                    f"'{target}' (level {PYTHON_LEVELS[target]}); a module imports only lower levels")
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
