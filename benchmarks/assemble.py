"""Assembles BENCHMARKS.md from the per-topic result files in benchmarks/results/.

Each benchmark script writes (or its author pastes) its figures, with the command that made
them, into ``benchmarks/results/<topic>.md``; this script puts them together in a fixed order:

    python benchmarks/assemble.py
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ["collector", "compression", "merge", "python", "replay"]

HEADER = """# Benchmarks

Figures measured on the project's machine (2-core x86_64 VM, Debian bookworm, MPICH 4.0.2,
GCC 12, RelWithDebInfo). Timings on this machine are noisy, and several of these runs shared the
two cores with parallel builds: each section says under which load it ran and gives CPU time
where wall time was distorted. Every section names the command that produced it; rerun it
after `make build` to refresh the figures, then `python benchmarks/assemble.py`.

Sections: collector overhead per call (issue: foundation), intra-rank compression cost and node
counts, cross-rank merge time/memory/trace sizes, Python load and comm-matrix times, replay
timing accuracy.
"""


def main() -> None:
    parts = [HEADER]
    results = ROOT / "benchmarks" / "results"
    names = ORDER + sorted(p.stem for p in results.glob("*.md") if p.stem not in ORDER)
    for name in names:
        path = results / f"{name}.md"
        if path.is_file():
            text = path.read_text().strip()
            # demote the file's headings by one level under the top-level title
            text = "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines())
            parts.append(text)
    (ROOT / "BENCHMARKS.md").write_text("\n\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
