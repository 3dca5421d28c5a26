"""scalatrace: scalable MPI communication tracing, compression, replay and analysis.

Typical use::

    import scalatrace
    t = scalatrace.trace(["./stencil2d"], np=4, out="stencil.sct")   # or scalatrace.load(...)
    t.summary()
    m = t.comm_matrix(metric="bytes", kind="p2p")
"""

from __future__ import annotations

from typing import Any

from ._core import (
    ArraySeq,
    ElasticArray,
    ElasticValue,
    Histogram,
    RankList,
    RecordedEvent,
    ValueSeq,
)
from ._launch import trace
from ._raw import RawRecording, read_raw
from ._summary import SummaryTable, TimestepLoop
from ._trace import OP_NAMES, CallSiteInfo, Event, Loop, Trace, load
from .errors import MPIRunError, ReplayError, ScalatraceError, TraceFormatError
from .extrapolate import ExtrapolationError, Model, extrapolate, extrapolation_laws, fit_scaling

__version__ = "0.1.0"

__all__ = [
    "OP_NAMES",
    "ArraySeq",
    "CallSiteInfo",
    "ElasticArray",
    "ElasticValue",
    "ExtrapolationError",
    "Event",
    "Histogram",
    "Loop",
    "MPIRunError",
    "Model",
    "RankList",
    "RawRecording",
    "RecordedEvent",
    "ReplayError",
    "ScalatraceError",
    "SummaryTable",
    "TimestepLoop",
    "Trace",
    "TraceFormatError",
    "ValueSeq",
    "extrapolate",
    "extrapolation_laws",
    "fit_scaling",
    "load",
    "plot",
    "read_raw",
    "trace",
]


def __getattr__(name: str) -> Any:
    # matplotlib is imported only when plots are wanted.
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'scalatrace' has no attribute {name!r}")
