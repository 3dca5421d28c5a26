"""Shared output step of the benchmark scripts: a Markdown report printed and written."""

from __future__ import annotations

from pathlib import Path

from scalatrace._files import write_text


def write_report(lines: list[str], out: str | None) -> None:
    """Prints the report and, if `out` is given, writes it there (replacing the file)."""
    report = "\n".join(lines) + "\n"
    print(report)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        write_text(Path(out), report)
