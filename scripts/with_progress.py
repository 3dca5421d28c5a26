#!/usr/bin/env python3
"""Runs a command, passing its output through, and prints a line whenever it has been silent for
a while, so that a long build step (pip building the C++ extension, one large translation unit
under load) never looks hung.

Usage: ``python3 scripts/with_progress.py [--every SECONDS] [--label TEXT] -- COMMAND ...``.
Exits with the command's exit status. Used by the Makefile's ``demo`` and ``build`` targets.
"""

from __future__ import annotations

import argparse
import os
import selectors
import subprocess
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=20.0, help="seconds of silence (20)")
    parser.add_argument("--label", default="", help="what is running, for the silence lines")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    label = args.label or os.path.basename(command[0])
    start = last = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    out = sys.stdout.buffer
    while True:
        if selector.select(timeout=1.0):
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out.write(chunk)
            out.flush()
            last = time.monotonic()
        elif time.monotonic() - last >= args.every:
            now = time.monotonic()
            out.write(f"... {label}: still working ({now - start:.0f} s so far)\n".encode())
            out.flush()
            last = now
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
