"""Extra-P export: per-op (or per-call-site) measurements of several runs in Extra-P's text input
format, so the scaling of each MPI operation can be modelled in Extra-P.

The text format (Extra-P's ``--text`` reader)::

    PARAMETER p
    POINTS 4 8 16
    METRIC time_ns
    REGION MPI_Isend
    DATA 1200.0 1180.0        # one line per point, in POINTS order; values = repetitions
    DATA 2500.0
    DATA 5100.0
    REGION MPI_Wait
    ...

One file holds one metric (Extra-P's reader keys data lines to the last METRIC and REGION).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ._base import check_float
from ._files import write_text
from ._model import site_key
from .errors import UsageError, check_choice

if TYPE_CHECKING:
    from ._model import TraceModel

#: metric name -> summary column it is taken from.
METRICS = {
    "time_ns": "duration_ns",
    "compute_ns": "compute_ns",
    "calls": "calls",
    "bytes": "bytes",
}


def extrap_text(
    traces: Sequence[TraceModel],
    values: Sequence[float] | None = None,
    parameter: str = "p",
    metric: Literal["time_ns", "compute_ns", "calls", "bytes"] = "time_ns",
    by: Literal["op", "site"] = "op",
    per_rank: bool = False,
) -> str:
    """The Extra-P text input for ``traces``; see :func:`to_extrap`."""
    check_choice("metric", metric, tuple(METRICS))
    check_choice("by", by, ("op", "site"))
    traces = list(traces)
    if not traces:
        raise UsageError("to_extrap needs at least one trace")
    if values is None:
        values = [t.nranks for t in traces]
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise UsageError(f"values must be a sequence of numbers, one per trace, not {values!r:.60}")
    values = [check_float("values[]", v, lo=None) for v in values]
    if len(values) != len(traces):
        raise UsageError(f"{len(traces)} traces but {len(values)} parameter values")
    if not parameter or any(c.isspace() for c in parameter):
        raise UsageError(f"parameter must be one word, not {parameter!r}")
    points = sorted(set(values))
    if len(points) < 2:
        raise UsageError("Extra-P needs measurements at two or more parameter values at least")

    column = METRICS[metric]
    # region -> point -> list of repetitions
    data: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for trace, value in zip(traces, values):
        table = trace.summary(by=by)
        sites = {c.id: c for c in trace.call_sites}
        for row in table.itertuples(index=False):
            region = (
                f"MPI_{row.op}"
                if by == "op"
                else f"MPI_{row.op}@{_site_label(sites.get(row.site))}"
            )
            v = float(getattr(row, column))
            data[region][value].append(v / trace.nranks if per_rank else v)
    lines = [
        f"PARAMETER {parameter}",
        "POINTS " + " ".join(_number(p) for p in points),
        f"METRIC {metric}",
    ]
    for region in sorted(data):
        measured = data[region]
        lines.append(f"REGION {region}")
        for p in points:
            # An op missing at one point was not called there: it took 0.
            reps = measured.get(p) or [0.0] * max(1, values.count(p))
            lines.append("DATA " + " ".join(repr(float(r)) for r in reps))
    return "\n".join(lines) + "\n"


def to_extrap(
    traces: Sequence[TraceModel],
    path: str | os.PathLike[str],
    values: Sequence[float] | None = None,
    parameter: str = "p",
    metric: Literal["time_ns", "compute_ns", "calls", "bytes"] = "time_ns",
    by: Literal["op", "site"] = "op",
    per_rank: bool = False,
) -> Path:
    """Writes an Extra-P text input file from runs of one program at several scales.

    Parameters
    ----------
    traces : sequence of Trace
        The runs. Several runs at the same parameter value are repetitions.
    path : path
        Output file (open it in Extra-P with ``extrap --text FILE``).
    values : sequence of float, optional
        The parameter value of each trace (default: its rank count).
    parameter : str
        Parameter name (default ``p``).
    metric : {"time_ns", "compute_ns", "calls", "bytes"}
        Total time in the calls, compute time before them, call count or bytes sent.
    by : {"op", "site"}
        One region per MPI operation, or per call site and operation.
    per_rank : bool
        Divide each value by the trace's rank count (per-process metrics).

    Returns
    -------
    Path
        The file written.
    """
    return write_text(path, extrap_text(traces, values, parameter, metric, by, per_rank))


def _site_label(site: object) -> str:
    """A call site's name that is the same in every run: ``file:line``, else the symbol plus
    the stack key (module+offset frames)."""
    if site is None:
        return "?"
    label = site.location or (f"{site.symbol}:{site_key(site)}" if site.symbol else site_key(site))
    return "".join(label.split())


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))
