"""``scalatrace report TRACE -o report.html``: one self-contained HTML page about a trace.

The page holds the run's metadata, the summary per operation, the communication heatmap, the
timeline, the time profile, time per rank (imbalance, waiting), message sizes and the timestep
loops; every figure is a PNG embedded as base64 (no file, script or network access besides the
page itself). With the run's raw recording the time views show measured times; otherwise they
come from the trace's timing statistics, and the page says so.
"""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._files import write_text

if TYPE_CHECKING:
    from ._model import TraceModel
    from ._raw import RawRecording

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; } .note { color: #555; font-size: 0.9em; }
"""


def _figure(draw: Any, width: float = 10.0, height: float = 4.0) -> str:
    """An ``<img>`` of what ``draw(ax)`` plots, as an embedded PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height))
    try:
        draw(ax)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=96)
    finally:
        plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="figure" src="data:image/png;base64,{data}">'


def _table(frame: Any, max_rows: int = 60) -> str:
    return frame.head(max_rows).to_html(border=0, float_format=lambda v: f"{v:.4g}")


def report_html(
    trace: TraceModel, raw: RawRecording | None = None, title: str | None = None
) -> str:
    """The report page of ``trace`` as HTML text (``raw``: its raw recording, for measured
    time views)."""
    from . import plot, views

    source: Any = raw if raw is not None else trace
    timed = views.events(source)
    exact = timed.attrs.get("exact", False)
    heading = title or f"scalatrace report: {Path(trace.metadata.get('program', 'trace')).name}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(heading)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(heading)}</h1>",
    ]
    meta = {
        "ranks": str(trace.nranks),
        **{k: v for k, v in trace.metadata.items() if "\n" not in v},
    }
    parts.append("<h2>Run</h2><table>")
    for key in (
        "ranks",
        "program",
        "command_line",
        "date",
        "host",
        "mpi_library",
        "scalatrace_version",
    ):
        if key in meta:
            parts.append(f"<tr><th>{html.escape(key)}</th><td>{html.escape(meta[key])}</td></tr>")
    parts.append("</table>")
    parts.append(
        '<p class="note">Times in the views below are '
        + (
            "measured (the run's raw recording)."
            if exact
            else "from the trace's timing statistics: each rank's own where the trace keeps "
            "them, a group's mean otherwise (record with raw mode for measured times)."
        )
        + " Time axes start when each rank's MPI_Init returned.</p>"
    )
    parts.append("<h2>Summary</h2>")
    parts.append(_table(trace.summary()))
    parts.append(_figure(lambda ax: plot.op_bars(trace, value="duration_ns", ax=ax), 10, 3.5))
    parts.append("<h2>Communication</h2>")
    parts.append(_figure(lambda ax: plot.comm_heatmap(trace, ax=ax), 6, 5))
    parts.append(_figure(lambda ax: plot.message_histogram(timed, ax=ax), 8, 3.5))
    parts.append("<h2>Timeline</h2>")
    parts.append(
        _figure(lambda ax: plot.run_timeline(timed, ax=ax), 11, 0.35 * min(trace.nranks, 64) + 1.5)
    )
    parts.append("<h2>Time profile</h2>")
    parts.append(_figure(lambda ax: plot.time_profile(timed, ax=ax), 11, 4))
    parts.append("<h2>Imbalance and waiting</h2>")
    parts.append(_figure(lambda ax: plot.rank_times(timed, ax=ax), 10, 4))
    parts.append(_table(views.load_imbalance(timed), max_rows=20))
    parts.append("<h2>Critical path</h2>")
    parts.extend(_critical_path_section(source, trace.nranks))
    parts.append("<h2>Timestep loops</h2>")
    loops = trace.timestep_loops()
    if loops:
        parts.append("<ul>")
        parts.extend(f"<li>{html.escape(repr(loop))}</li>" for loop in loops)
        parts.append("</ul>")
    else:
        parts.append("<p>No loop repeats communication.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _critical_path_section(source: Any, nranks: int) -> list[str]:
    """The critical path's figure and its time per rank, or why there is none."""
    from . import plot, views
    from .errors import ScalatraceError

    try:
        path = views.critical_path(source)
    except ScalatraceError as e:
        return [f'<p class="note">No critical path: {html.escape(str(e))}</p>']
    rank = path["rank"]
    per_rank = path.groupby(rank)[["compute_ns", "call_ns", "message_ns"]].sum()
    per_rank["share"] = per_rank.sum(axis=1) / max(path.attrs["length_ns"], 1)
    note = (
        '<p class="note">The chain of computation, calls and messages that ends the run, found by '
        "replaying every rank's events in order with waits ending when their message or "
        "collective partner arrives (clocks need not agree; see scalatrace.critical_path). "
        f"Replayed end {path.attrs['length_ns'] / 1e6:.4g} ms; {len(path)} events on the path.</p>"
    )
    return [
        note,
        _figure(lambda ax: plot.critical_path(path, ax=ax), 11, 0.35 * min(nranks, 64) + 1.5),
        _table(per_rank),
    ]


def write_report(
    trace: TraceModel,
    path: str | os.PathLike[str],
    raw: RawRecording | None = None,
    title: str | None = None,
) -> Path:
    """Writes :func:`report_html` to ``path`` (atomically) and returns the path."""
    return write_text(path, report_html(trace, raw, title))
