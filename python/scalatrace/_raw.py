"""Raw recordings (uncompressed ground truth written with ``SCALATRACE_RAW``)."""

from __future__ import annotations

import html
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _core
from ._base import DEFAULT_MAX_EVENTS, check_int, with_rank_and_names
from ._model import TraceModel, wrap
from ._summary import comm_triplets_to_output
from .errors import TraceFormatError, UnknownNameError

if TYPE_CHECKING:
    import pandas
    import scipy.sparse


class RawRecording:
    """The raw per-rank event streams of one run, indexable by rank.

    Analyses here are computed by brute force over every event, with the same attribution
    model as :meth:`Trace.comm_matrix` (tests compare the two).
    """

    def __init__(self, ranks: list[_core.RankRecording], path: Path | None = None) -> None:
        self._ranks = sorted(ranks, key=lambda r: r.rank)
        self._by_rank = {r.rank: r for r in self._ranks}
        self.path = path

    @property
    def nranks(self) -> int:
        return max([r.nranks for r in self._ranks] + [r.rank + 1 for r in self._ranks] + [0])

    def __len__(self) -> int:
        return len(self._ranks)

    def __iter__(self) -> Iterator[_core.RankRecording]:
        return iter(self._ranks)

    def __getitem__(self, rank: int) -> _core.RankRecording:
        try:
            return self._by_rank[rank]
        except KeyError:
            raise UnknownNameError(
                f"no recording of rank {rank} (recorded ranks: {len(self)} of {self.nranks})"
            ) from None

    @property
    def metadata(self) -> dict[str, str]:
        return dict(self._ranks[0].metadata) if self._ranks else {}

    def event_count(self) -> int:
        """Total events over all ranks."""
        return sum(len(r) for r in self._ranks)

    def rank_table(self, rank: int) -> np.ndarray:
        """Same columns as :meth:`Trace.rank_table` (timings are the recorded ones)."""
        return with_rank_and_names(self[rank].rank_table(self.nranks))

    def to_dataframe(self, max_events: int = DEFAULT_MAX_EVENTS) -> pandas.DataFrame:
        """Every recorded event, same columns as :meth:`Trace.to_dataframe`, measured times."""
        from .frames import recording_frame

        return recording_frame(self._ranks, self.nranks, max_events)

    def comm_matrix(
        self,
        metric: Literal["bytes", "messages"] = "bytes",
        kind: Literal["p2p", "collective", "all"] = "p2p",
        sparse: bool = False,
    ) -> np.ndarray | scipy.sparse.coo_matrix:
        """Communication matrix by brute force over every recorded event."""
        return comm_triplets_to_output(
            _core.comm_matrix_of_recordings(self._ranks, metric, kind), sparse
        )

    def compress(self, window: int = 0, site_match: int = 1) -> TraceModel:
        """Compresses and merges the recordings offline into a :class:`Trace`.

        Runs the same IntraCompressor and radix-tree merge as the collector does at
        ``MPI_Finalize`` (``window``: ``SCALATRACE_WINDOW``, 0 = default; ``site_match``:
        ``SCALATRACE_SITE_MATCH``, events match when their call sites share this many innermost
        frames, 0 = the whole stack).
        """
        window = check_int("window", window, lo=0, hi=1 << 20)
        site_match = check_int("site_match", site_match, lo=0, hi=64)
        return wrap(_core.compress_recordings(self._ranks, window, site_match))

    def __repr__(self) -> str:
        return f"RawRecording(ranks={len(self)}, events={self.event_count()})"

    def _repr_html_(self) -> str:
        program = html.escape(self.metadata.get("program", "?"))
        return (
            f"<b>RawRecording</b> of <code>{program}</code>: {len(self)} of {self.nranks} ranks, "
            f"{self.event_count()} events (measured times of every call)"
            + (f", from <code>{html.escape(str(self.path))}</code>" if self.path else "")
        )


def read_raw(path: str | os.PathLike[str]) -> RawRecording:
    """Reads one raw stream (``rank-<r>.straw``) or a directory of them.

    Raises
    ------
    TraceFormatError
        If a stream is truncated or corrupt, or the directory is incomplete.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no raw recording at {p}")
    # The core's messages name the file (or directory) concerned.
    if p.is_dir():
        recs: Any = _core.read_raw_dir(str(p))
        _check_one_program(list(recs), p)
    else:
        recs = [_core.read_raw(str(p))]
    return RawRecording(list(recs), p)


def _check_one_program(recs: list, where: Path) -> None:
    """The streams of a directory come from one run: the same program and command line."""
    for key in ("program", "command_line"):
        seen = {}
        for rec in recs:
            seen.setdefault(rec.metadata.get(key, ""), rec.rank)
        if len(seen) > 1:
            (a, ra), (b, rb) = list(seen.items())[:2]
            raise TraceFormatError(
                f"{where}: the raw streams come from different runs ({key} of rank {ra}: {a!r}, "
                f"of rank {rb}: {b!r})"
            )
