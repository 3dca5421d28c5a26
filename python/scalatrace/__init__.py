"""scalatrace: scalable MPI communication tracing, compression, replay and analysis.

Typical use::

    import scalatrace
    t = scalatrace.trace(["./stencil2d"], np=4, out="stencil.sct")   # or scalatrace.load(...)
    t.summary()                       # pandas DataFrame
    df = t.to_dataframe()             # one row per event, index (rank, event)
    m = t.comm_matrix(metric="bytes", kind="p2p")
    r = scalatrace.replay("stencil.sct")
"""

from __future__ import annotations

from typing import Any

# _core_guard first (it sorts first): importing it wraps every entry point of the compiled core,
# so an argument the core cannot take is a one-line UsageError wherever the core is called from.
from . import _core_guard, replay  # noqa: F401
from ._base import OP_NAMES
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
from ._summary import TimestepLoop

# Importing _trace registers Trace: every trace the package returns is one (_model.wrap).
from ._trace import CallSiteInfo, Event, Loop, Trace, load
from .comparison import Comparison, compare
from .errors import (
    CoreArgumentError,
    LossyTraceError,
    MPIRunError,
    OutOfRangeError,
    OutputExistsError,
    ReplayError,
    ScalatraceError,
    TooLargeError,
    TraceFormatError,
    UnknownNameError,
    UsageError,
)
from .export_extrap import to_extrap
from .extrapolate import (
    ExtrapolationError,
    Model,
    even_alltoall_counts,
    extrapolate,
    extrapolation_laws,
    fit_scaling,
)
from .models import (
    ModelError,
    PerformanceModel,
    constant_time,
    model,
    optimal_grain,
    speedup,
)
from .pmnf import fit_pmnf
from .scalable import scalable_benchmark
from .simulate import (
    InSituBlocks,
    InSituCalibration,
    LogGP,
    OverheadLaw,
    SimResult,
    SimulationError,
    calibrate,
    calibrate_in_situ,
    calibrate_in_situ_blocks,
    simulate,
    sweep,
)
from .sizes import byte_breakdown
from .topology import Noise, Topology

__version__ = "0.1.0"

__all__ = [
    "OP_NAMES",
    "ArraySeq",
    "CallSiteInfo",
    "Comparison",
    "CoreArgumentError",
    "ElasticArray",
    "ElasticValue",
    "ExtrapolationError",
    "Event",
    "Histogram",
    "Loop",
    "MPIRunError",
    "Model",
    "ModelError",
    "PerformanceModel",
    "OutputExistsError",
    "RankList",
    "RawRecording",
    "RecordedEvent",
    "ReplayError",
    "ScalatraceError",
    "LossyTraceError",
    "SummaryFrame",
    "SummaryTable",
    "TimestepLoop",
    "TooLargeError",
    "Trace",
    "TraceFormatError",
    "OutOfRangeError",
    "UnknownNameError",
    "UsageError",
    "ValueSeq",
    "byte_breakdown",
    "compare",
    "constant_time",
    "fit_pmnf",
    "model",
    "optimal_grain",
    "speedup",
    "extrapolate",
    "even_alltoall_counts",
    "extrapolation_laws",
    "fit_scaling",
    "load",
    "InSituBlocks",
    "InSituCalibration",
    "LogGP",
    "OverheadLaw",
    "Noise",
    "Topology",
    "SimResult",
    "SimulationError",
    "calibrate",
    "calibrate_in_situ",
    "calibrate_in_situ_blocks",
    "simulate",
    "sweep",
    "plot",
    "read_raw",
    "replay",
    "scalable_benchmark",
    "to_extrap",
    "trace",
]


def __getattr__(name: str) -> Any:
    # matplotlib and pandas are imported only when plots / frames are wanted.
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    if name in ("SummaryFrame", "SummaryTable"):
        # SummaryTable: former name of the summary type; Trace.summary() returns a DataFrame.
        from .frames import SummaryFrame

        return SummaryFrame
    raise AttributeError(f"module 'scalatrace' has no attribute {name!r}")
