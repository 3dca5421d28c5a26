"""Where a trace file's bytes go: ``scalatrace.byte_breakdown`` and ``scalatrace stats --bytes``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from . import _core
from .errors import TraceFormatError

if TYPE_CHECKING:
    import pandas as pd

    from ._model import TraceModel

_MAGIC = b"SCALATRC"


def _file_bytes(path: Path) -> bytes:
    """The bytes of a trace file, its magic checked before the rest is read."""
    if not path.is_file():
        if not path.exists():
            raise FileNotFoundError(f"no trace file at {path}")
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise TraceFormatError(f"{path} is {kind}, not a trace file (.sct)")
    with open(path, "rb") as f:
        head = f.read(len(_MAGIC))
        if head != _MAGIC:
            raise TraceFormatError(f"{path}: bad magic: not a scalatrace trace (.sct)")
        return head + f.read()


def byte_breakdown(trace: TraceModel | str | os.PathLike[str]) -> pd.DataFrame:
    """Where a trace's bytes go, part by part.

    Parameters
    ----------
    trace
        A ``.sct`` file, or a loaded :class:`~scalatrace.Trace` (then the bytes it would be
        saved as).

    Returns
    -------
    pandas.DataFrame
        One row per part: ``part`` (``header``, ``metadata``, ``call-site table``, ``names
        table``, ``ranklist table``, ``value-sequence table``, ``array-sequence table``,
        ``elastic-value table``, ``elastic-array table``, ``communicator table``, ``node tree``
        (the structure: loops, events, their field references), ``timing`` (the events'
        histograms), ``rank clusters``, ``rank segments``), ``bytes`` (its bytes before entropy
        coding), ``stored_bytes`` (its share of the file: what coding its bytes cost, so the
        column adds up to the file size) and ``share`` (of the file, 0..1).

    Raises
    ------
    FileNotFoundError
        If ``trace`` names no file.
    TraceFormatError
        If the file is not a valid trace.
    """
    import pandas as pd

    from ._model import TraceModel

    if isinstance(trace, TraceModel):
        data = bytes(trace._core.encode())
    else:
        data = _file_bytes(Path(trace))
    rows = _core.trace_byte_breakdown(data)
    frame = pd.DataFrame(rows, columns=["part", "bytes", "stored_bytes"])
    total = float(frame["stored_bytes"].sum()) or 1.0
    frame["share"] = frame["stored_bytes"] / total
    return frame
