"""Result tables of the analyses: summaries, timestep loops, sparse matrices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas

    from . import _core


def comm_triplets_to_output(triplets: tuple[Any, Any, Any, int], sparse: bool) -> Any:
    """(src, dst, value, nranks) -> ``scipy.sparse.coo_matrix`` or dense ``ndarray``."""
    src, dst, value, n = triplets
    if sparse:
        import scipy.sparse

        return scipy.sparse.coo_matrix((value, (src, dst)), shape=(n, n))
    m = np.zeros((n, n))
    np.add.at(m, (src, dst), value)
    return m


_COLUMNS = ("op", "calls", "ranks", "bytes", "duration_ns", "compute_ns", "min_duration_ns", "max_duration_ns")


class SummaryTable:
    """Per-op (or per call-site) aggregates. Columns are NumPy arrays: ``table["calls"]``.

    Columns: ``op``, [``site``, ``where``,] ``calls`` (over all ranks), ``ranks`` (that make
    the call), ``bytes`` (send side), ``duration_ns`` / ``compute_ns`` (totals from the timing
    histograms), ``min_duration_ns``, ``max_duration_ns``.
    """

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns = columns

    @classmethod
    def from_rows(
        cls, rows: Sequence[_core.SummaryRow], by_site: bool, site_names: dict[int, str] | None = None
    ) -> SummaryTable:
        cols: dict[str, np.ndarray] = {"op": np.array([r.op for r in rows], dtype=object)}
        if by_site:
            cols["site"] = np.array([r.site for r in rows], dtype=np.int64)
            names = site_names or {}
            cols["where"] = np.array([names.get(r.site, str(r.site)) for r in rows], dtype=object)
        for name in _COLUMNS[1:]:
            dtype = np.float64 if name in ("bytes", "duration_ns", "compute_ns") else np.int64
            cols[name] = np.array([getattr(r, name) for r in rows], dtype=dtype)
        return cls(cols)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def __len__(self) -> int:
        return len(self.columns["op"])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield {k: v[i] for k, v in self.columns.items()}

    def row(self, op: str) -> dict[str, Any]:
        """The first row of ``op`` (e.g. ``"Isend"``)."""
        for r in self:
            if r["op"] == op:
                return r
        raise KeyError(op)

    def to_dict(self) -> list[dict[str, Any]]:
        """Rows as plain Python dicts (JSON-friendly)."""
        return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in self]

    def to_pandas(self) -> pandas.DataFrame:
        """The table as a ``pandas.DataFrame`` (requires pandas)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("SummaryTable.to_pandas() needs pandas (pip install pandas)") from e
        return pd.DataFrame(self.columns)

    def _text_rows(self) -> tuple[list[str], list[list[str]]]:
        head = [c for c in self.columns if c not in ("site",)]
        body = []
        for r in self:
            line = []
            for c in head:
                v = r[c]
                if c in ("duration_ns", "compute_ns"):
                    line.append(f"{v / 1e6:.3f} ms")
                elif c in ("min_duration_ns", "max_duration_ns"):
                    line.append(f"{v / 1e3:.1f} us")
                elif c == "bytes":
                    line.append(_human_bytes(v))
                else:
                    line.append(str(v))
            body.append(line)
        return head, body

    def __repr__(self) -> str:
        head, body = self._text_rows()
        widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
        fmt = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
        return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])

    def _repr_html_(self) -> str:
        import html

        head, body = self._text_rows()
        th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in b) + "</tr>" for b in body)
        return f"<table><tr>{th}</tr>{trs}</table>"


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


@dataclass(frozen=True)
class TimestepLoop:
    """An outermost loop containing repeated communication (ScalaTrace §5.3).

    Attributes
    ----------
    path : tuple of int
        Indices from ``Trace.nodes`` down through loop bodies to this loop.
    ranks : RankList
        Participating ranks (empty: all).
    min_iterations, max_iterations : int
        Iterations per rank (summed over the rank's visits of the loop).
    visits : int
        How many times a rank enters the loop (at most).
    sites : tuple of int
        Call sites of the communication events in the body.
    body_events : int
        Event nodes in the body, all depths.
    loop : Loop
        The loop node itself.
    """

    path: tuple[int, ...]
    ranks: Any
    min_iterations: int
    max_iterations: int
    visits: int
    sites: tuple[int, ...]
    body_events: int
    loop: Any

    def __repr__(self) -> str:
        it = (
            str(self.max_iterations)
            if self.min_iterations == self.max_iterations
            else f"{self.min_iterations}..{self.max_iterations}"
        )
        return f"TimestepLoop(path={list(self.path)}, iterations={it}, visits={self.visits}, sites={list(self.sites)})"
