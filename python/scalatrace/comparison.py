"""Comparing two traces (two runs, two versions, two settings): :func:`compare`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from ._model import TraceModel, as_trace, site_key
from .errors import UsageError, check_choice

if TYPE_CHECKING:
    import pandas

_MEASURES = ("calls", "bytes", "duration_ns", "compute_ns")


@dataclass
class Comparison:
    """Differences between trace ``a`` and trace ``b`` (each ``_diff`` column is ``b - a``).

    Attributes
    ----------
    by_op : pandas.DataFrame
        Index ``op``; per measure (``calls``, ``bytes``, ``duration_ns``, ``compute_ns``) the
        columns ``<m>_a``, ``<m>_b``, ``<m>_diff``, and ``duration_ratio`` (b / a).
    by_site : pandas.DataFrame
        Index ``(site_key, op)``, where ``site_key`` identifies the call site by its stack
        (module file name + offset per frame), so the same code matches across runs whose
        call-site tables are numbered differently; ``where`` names it. Same columns as
        ``by_op``; a site only one trace has gets zeros for the other.
    by_pair : pandas.DataFrame
        Index ``(sender, receiver)``: point-to-point ``bytes_a``, ``bytes_b``, ``bytes_diff``,
        ``messages_a``, ``messages_b``, ``messages_diff`` for every pair either trace uses.
    nranks : tuple of int
        Rank counts of ``a`` and ``b``.
    """

    by_op: pandas.DataFrame
    by_site: pandas.DataFrame
    by_pair: pandas.DataFrame
    nranks: tuple[int, int]

    def changed(self, table: Literal["op", "site", "pair"] = "op") -> pandas.DataFrame:
        """Rows of ``by_<table>`` where any ``_diff`` column is non-zero."""
        check_choice("table", table, ("op", "site", "pair"))
        df = {"op": self.by_op, "site": self.by_site, "pair": self.by_pair}[table]
        diffs = df[[c for c in df.columns if c.endswith("_diff")]]
        return df[(diffs != 0).any(axis=1)]

    def __repr__(self) -> str:
        return (
            f"Comparison(nranks={self.nranks}, ops={len(self.by_op)} ({len(self.changed('op'))} changed), "
            f"sites={len(self.by_site)}, pairs={len(self.by_pair)} ({len(self.changed('pair'))} changed))"
        )

    def _repr_html_(self) -> str:
        return f"<b>{self!r}</b>" + self.by_op.to_html()


def _side_by_side(
    a: pandas.DataFrame, b: pandas.DataFrame, keys: list[str], measures: tuple[str, ...]
) -> pandas.DataFrame:
    merged = a.merge(b, on=keys, how="outer", suffixes=("_a", "_b"))
    out = merged[keys].copy()
    for m in measures:
        va = merged[f"{m}_a"].fillna(0)
        vb = merged[f"{m}_b"].fillna(0)
        out[f"{m}_a"], out[f"{m}_b"], out[f"{m}_diff"] = va, vb, vb - va
    return out.set_index(keys).sort_index()


def _trace_argument(name: str, value: object) -> TraceModel:
    if isinstance(value, TraceModel):
        return value
    if isinstance(value, (str, os.PathLike)):
        return as_trace(value)
    raise UsageError(
        f"{name} must be a scalatrace.Trace or a trace path, not {type(value).__name__}"
    )


def compare(
    a: TraceModel | str | os.PathLike[str], b: TraceModel | str | os.PathLike[str]
) -> Comparison:
    """Per-op, per-call-site and per-pair differences between two traces.

    Parameters
    ----------
    a, b : Trace or path
        The reference and the other run (differences are ``b - a``); a path is loaded.

    Returns
    -------
    Comparison
    """
    import pandas as pd

    from .frames import pairs_frame

    a, b = _trace_argument("a", a), _trace_argument("b", b)

    by_op = _side_by_side(
        a.summary()[["op", *_MEASURES]], b.summary()[["op", *_MEASURES]], ["op"], _MEASURES
    )
    by_op["duration_ratio"] = np.divide(
        by_op["duration_ns_b"].to_numpy(dtype=float),
        by_op["duration_ns_a"].to_numpy(dtype=float),
        out=np.full(len(by_op), np.nan),
        where=by_op["duration_ns_a"].to_numpy() > 0,
    )

    def sites(t: TraceModel) -> pd.DataFrame:
        table = t.summary(by="site")
        info = {c.id: c for c in t.call_sites}
        table["site_key"] = [site_key(info[s]) if s in info else f"#{s}" for s in table["site"]]
        return table[["site_key", "op", "where", *_MEASURES]]

    sa, sb = sites(a), sites(b)
    where = (
        pd.concat([sa, sb])
        .drop_duplicates(["site_key", "op"])
        .set_index(["site_key", "op"])["where"]
    )
    by_site = _side_by_side(
        sa.drop(columns="where"), sb.drop(columns="where"), ["site_key", "op"], _MEASURES
    )
    by_site.insert(0, "where", where.reindex(by_site.index).str.replace(r"^#\d+ ", "", regex=True))

    def pairs(t: TraceModel) -> pd.DataFrame:
        bytes_ = pairs_frame(t.comm_matrix("bytes", "p2p", sparse=True), "bytes")
        messages = pairs_frame(t.comm_matrix("messages", "p2p", sparse=True), "messages")
        return bytes_.merge(messages, on=["sender", "receiver"], how="outer")

    by_pair = _side_by_side(pairs(a), pairs(b), ["sender", "receiver"], ("bytes", "messages"))
    return Comparison(by_op=by_op, by_site=by_site, by_pair=by_pair, nranks=(a.nranks, b.nranks))
