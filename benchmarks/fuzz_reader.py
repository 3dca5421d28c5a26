"""Reader fuzzing at scale: runs ``fuzz_reader`` (benchmarks/fuzz_reader.cpp, built with
``make build``) and appends its table, dated, to ``benchmarks/results/fuzz.md``.

    python benchmarks/fuzz_reader.py --mutants 100000 --seed 1
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path

from scalatrace._files import write_text

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
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    section = (
        f"## {datetime.date.today().isoformat()} (commit {commit or 'unknown'})\n\n"
        f"Command: `{command}` (RelWithDebInfo build; 2-core machine shared with other jobs). "
        "The driver limits its address space to 1 GiB (`RLIMIT_AS`: an input needing more ends "
        "as `std::bad_alloc`, counted) and arms a 10 s alarm per input (an input taking longer "
        "ends the run, naming it).\n\n"
        "Mutants of valid `.sct` traces (four synthetic patterns, merged) and `.straw` raw streams "
        "(byte overwrites, insertions, deletions, truncation, high bytes in text, varint sign flips; "
        "checksum and length repaired for 7 in 8 mutants; one raw mutant in three a well-formed "
        "stream with an extreme rank count, up to 2^63-1, or extreme durations and computes, up to "
        "2^64-1), each loaded as `scalatrace.load` / `read_raw` do and, if it loads, used: every "
        "rank's events, `summary()`, the communication matrix, every text field, and for raw "
        "streams the compressed trace saved and loaded back. Clean outcomes are a `FormatError` "
        "at load or a file that then works in every use; anything else (a later failure, another "
        "exception, running out of memory) is counted as not clean. See "
        "`tests/cpp/common/reader_fuzz.hpp`; `make test` runs 4,000 mutants "
        "(`reader_fuzz_test`).\n\n" + proc.stdout + proc.stderr + "\n"
    )
    old = args.out.read_text() if args.out.exists() else "# Reader fuzzing\n\n"
    write_text(args.out, old.rstrip("\n") + "\n\n" + section)
    sys.stdout.write(proc.stdout)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
