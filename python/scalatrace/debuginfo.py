"""Source lines of call sites from DWARF debug information, resolved at analysis time.

The collector records each stack frame as (module path, offset of the return address inside
the module: the address minus the module's load bias, i.e. the ELF virtual address). A program
built with ``-g`` carries a DWARF line table (``.debug_line``) mapping addresses to ``file:line``;
this module reads it with pyelftools, once per module file, and looks up the call instruction
(one byte before the return address). Modules without line tables (stripped system libraries)
and files that are gone or changed since the run resolve to nothing.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class _LineTable:
    """Sorted row addresses and, per row, ``"file:line"`` or None (an end of sequence)."""

    addresses: list[int]
    places: list[str | None]

    def lookup(self, address: int) -> str | None:
        i = bisect.bisect_right(self.addresses, address) - 1
        return self.places[i] if i >= 0 else None


def source_line(module: str, offset: int) -> str:
    """``file:line`` of the call whose return address is ``offset`` inside ``module`` ("" if the
    module has no line table for it)."""
    if offset <= 0 or not module.startswith("/"):
        return ""
    try:
        stat = os.stat(module)
    except OSError:
        return ""
    table = _line_table(module, stat.st_mtime_ns, stat.st_size)
    if table is None:
        return ""
    return table.lookup(offset - 1) or ""


def first_source_line(frames: Iterable[tuple[str, int]]) -> str:
    """The ``file:line`` of the innermost frame that has one ("" if none has)."""
    for module, offset in frames:
        where = source_line(module, offset)
        if where:
            return where
    return ""


@lru_cache(maxsize=64)
def _line_table(path: str, mtime_ns: int, size: int) -> _LineTable | None:
    """The line table of one module file (cached by path, modification time and size)."""
    del mtime_ns, size  # part of the cache key only: a rebuilt program is read again
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
    except ImportError:  # an optional convenience: without pyelftools, no lines
        return None
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            if not elf.has_dwarf_info() or elf.get_section_by_name(".debug_line") is None:
                return None
            return _read_lines(elf.get_dwarf_info())
    except (OSError, ELFError, ValueError, KeyError, IndexError, AssertionError):
        # A module that is not ELF or whose DWARF pyelftools cannot read: no lines, not an error
        # of the analysis asking for them.
        return None


def _read_lines(dwarf) -> _LineTable:
    rows: list[tuple[int, str | None]] = []
    for cu in dwarf.iter_CUs():
        program = dwarf.line_program_for_CU(cu)
        if program is None:
            continue
        files = program["file_entry"]
        first_file = 0 if program.header["version"] >= 5 else 1
        for entry in program.get_entries():
            state = entry.state
            if state is None:
                continue
            if state.end_sequence:
                rows.append((state.address, None))
                continue
            index = state.file - first_file
            if not 0 <= index < len(files):
                continue
            name = files[index].name
            name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
            rows.append((state.address, f"{Path(name).name}:{state.line}"))
    # Sequences do not overlap; within one address the last row wins (an end of sequence at the
    # start of the next sequence sorts first, so the next sequence's row is found).
    rows.sort(key=lambda r: (r[0], r[1] is not None))
    return _LineTable([a for a, _ in rows], [p for _, p in rows])
