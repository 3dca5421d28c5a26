"""Reader fuzzing at scale: runs ``fuzz_reader`` (benchmarks/fuzz_reader.cpp, built with
``make build``) and writes its table to ``benchmarks/results/fuzz.md``.

    python benchmarks/fuzz_reader.py --mutants 100000 --seed 1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "fuzz.md")
    args = parser.parse_args()
    build = Path(os.environ.get("SCALATRACE_BUILD_DIR", ROOT / "build" / "py"))
    exe = build / "benchmarks" / "fuzz_reader"
    if not exe.is_file():
        print(f"{exe} not built (make build)", file=sys.stderr)
        return 2
    proc = subprocess.run(
        [str(exe), str(args.mutants), str(args.seed)], capture_output=True, text=True
    )
    command = f"python benchmarks/fuzz_reader.py --mutants {args.mutants} --seed {args.seed}"
    text = (
        "# Reader fuzzing\n\n"
        f"Command: `{command}` (RelWithDebInfo build; 2-core machine shared with other jobs).\n\n"
        "Mutants of valid `.sct` traces (four synthetic patterns, merged) and `.straw` raw streams "
        "(byte overwrites, insertions, deletions, truncation, high bytes in text, varint sign flips; "
        "checksum and length repaired for 7 in 8 mutants), each loaded as `scalatrace.load` / "
        "`read_raw` do and, if it loads, used: every rank's events, `summary()`, the communication "
        "matrix, every text field. Clean outcomes are a `FormatError` at load or a file that then "
        "works in every use; anything else (a later failure, another exception) is counted as not "
        "clean. See `tests/cpp/common/reader_fuzz.hpp`; `make test` runs 4,000 mutants "
        "(`reader_fuzz_test`).\n\n" + proc.stdout
    )
    args.out.write_text(text)
    sys.stdout.write(proc.stdout)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
