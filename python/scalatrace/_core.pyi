"""Type stubs of the compiled module scalatrace._core (see cpp/bindings/)."""

from collections.abc import Iterator
from typing import Any, Callable, overload

import numpy as np
import numpy.typing as npt

class RankList:
    @overload
    def __init__(self) -> None: ...
    @overload
    def __init__(self, ranks: list[int]) -> None: ...
    @staticmethod
    def range(first: int, count: int, stride: int = 1) -> RankList: ...
    def __len__(self) -> int: ...
    def __contains__(self, rank: object) -> bool: ...
    def __iter__(self) -> Iterator[int]: ...
    def __getitem__(self, i: int) -> int: ...
    def index(self, rank: int) -> int: ...
    def to_numpy(self) -> npt.NDArray[np.int64]: ...
    @property
    def notation(self) -> str: ...  # thesis notation of dumps ("<1 0 9 1>"); str(): "0-8"
    def union(self, other: RankList) -> RankList: ...
    @property
    def descriptors(self) -> list[tuple[int, list[tuple[int, int]]]]: ...
    def _repr_html_(self) -> str: ...

class ValueSeq:
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> int: ...
    def to_numpy(self) -> npt.NDArray[np.int64]: ...
    def is_constant(self) -> bool: ...
    @property
    def blocks(self) -> list[tuple[list[tuple[int, int, int]], int]]: ...
    @property
    def notation(self) -> str: ...  # thesis notation of dumps ("[0x60]"); str(): "0 (60 times)"

class ArraySeq:
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> list[int]: ...
    @property
    def runs(self) -> list[tuple[list[int], int]]: ...

class ElasticValue:
    @property
    def alternatives(self) -> list[tuple[ValueSeq, RankList]]: ...
    def for_rank(self, rank: int) -> ValueSeq | None: ...
    def value_at(self, rank: int, occurrence: int = 0) -> int: ...
    def __len__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def _repr_html_(self) -> str: ...

class ElasticArray:
    @property
    def alternatives(self) -> list[tuple[ArraySeq, RankList]]: ...
    def value_at(self, rank: int, occurrence: int = 0) -> list[int]: ...
    def __len__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def _repr_html_(self) -> str: ...

class Histogram:
    count: int
    sum: float
    min: int
    max: int
    mean: float
    sub_bins: int
    coarsening: int
    typical: float
    bins: list[tuple[int, int, int, int, float]]

class Frame:
    module: int
    offset: int

class CallSite:
    frames: list[Frame]
    hash: int
    symbol: str
    location: str

class CallSiteTable:
    modules: list[str]
    sites: list[CallSite]
    def __len__(self) -> int: ...

class CommEntry:
    id: int
    members: RankList
    holders: RankList

class CommTable:
    entries: list[CommEntry]
    def __len__(self) -> int: ...

class EventNode:
    op: str
    op_code: int
    kind: str
    site: int
    site_ids: ElasticValue
    fields: dict[str, ElasticValue]
    arrays: dict[str, ElasticArray]
    compute: Histogram
    duration: Histogram
    first_compute: Histogram
    timing_groups: list[tuple[RankList, Histogram, Histogram]]
    def field(self, name: str) -> ElasticValue: ...
    def occurrence_sites(self, nsites: int) -> list[int]: ...
    def compute_for(self, rank: int) -> Histogram: ...
    def first_compute_for(self, rank: int) -> Histogram: ...

class LoopNode:
    trips: ElasticValue
    body: list[Node]

class Node:
    ranks: RankList
    presence: ElasticValue
    event: EventNode | None
    loop: LoopNode | None
    def is_loop(self) -> bool: ...

class Trace:
    metadata: dict[str, str]
    nranks: int
    sites: CallSiteTable
    comms: CommTable
    names: list[str]
    nodes: list[Node]
    def node_count(self) -> int: ...
    def structure_bytes(self) -> int: ...
    def encode(self, entropy_coded: bool = True) -> bytes: ...
    def write(self, path: str) -> None: ...

class RecordedEvent:
    op: str
    op_code: int
    site: int
    compute_ns: int
    duration_ns: int
    fields: dict[str, int]
    arrays: dict[str, list[int]]
    def __getitem__(self, name: str) -> int: ...
    def same_call(self, other: RecordedEvent) -> bool: ...

class RankEvents:
    def __iter__(self) -> RankEvents: ...
    def __next__(self) -> RecordedEvent: ...

class RankRecording:
    rank: int
    nranks: int
    metadata: dict[str, str]
    sites: CallSiteTable
    comms: CommTable
    names: list[str]
    events: list[RecordedEvent]
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> RecordedEvent: ...
    def rank_table(self, nranks: int = 0) -> np.ndarray: ...

class SummaryRow:
    op: str
    name_id: int  # Op::Other: index into Trace.names (function name), else -1
    site: int
    calls: int
    ranks: int
    bytes: float
    duration_ns: float
    compute_ns: float
    min_duration_ns: int
    max_duration_ns: int

class Summary:
    by_op: list[SummaryRow]
    by_site: list[SummaryRow]
    total_calls: int
    total_bytes: float

class TimestepLoop:
    path: list[int]
    ranks: RankList
    min_iterations: int
    max_iterations: int
    visits: int
    sites: list[int]
    body_events: int

Triplets = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64], int]

def read_trace_file(path: str) -> Trace: ...
def decode_trace(data: bytes) -> Trace: ...
def trace_byte_breakdown(data: bytes) -> list[tuple[str, int, float]]: ...
def write_file_safely(path: str, data: bytes) -> None: ...
def require_replaceable(path: str) -> None: ...
def exchange_paths(a: str, b: str) -> bool: ...
def op_names() -> list[str]: ...
def op_kind_names() -> list[str]: ...
def field_names() -> list[str]: ...
def rank_events(
    trace: Trace, rank: int, timing: str = "mean", seed: int = 0, lossy_seed: int | None = None
) -> RankEvents: ...
def make_lossy(trace: Trace, threshold: int) -> Trace: ...
def lossy_fields(trace: Trace) -> list[tuple[str, int, str, int, int]]: ...
def probabilistic_events(
    trace: Trace, rank: int, seed: int = 0, max_events: int = 10000000
) -> list[RecordedEvent]: ...
def rank_table(trace: Trace, rank: int) -> np.ndarray: ...
def comm_matrix(
    trace: Trace, metric: str = "bytes", kind: str = "p2p"
) -> npt.NDArray[np.float64]: ...
def comm_matrix_sparse(trace: Trace, metric: str = "bytes", kind: str = "p2p") -> Triplets: ...
def comm_matrix_by_expansion(
    trace: Trace, metric: str = "bytes", kind: str = "p2p"
) -> Triplets: ...
def comm_matrix_of_recordings(
    recordings: list[RankRecording], metric: str = "bytes", kind: str = "p2p"
) -> Triplets: ...
def summary(trace: Trace) -> Summary: ...
def timestep_loops(trace: Trace) -> list[TimestepLoop]: ...
def compress_recordings(
    recordings: list[RankRecording], window: int = 0, site_match: int = 1
) -> Trace: ...
def read_raw(path: str) -> RankRecording: ...
def read_raw_dir(dir: str) -> list[RankRecording]: ...

# register_frames.cpp: bulk per-rank event columns for scalatrace.frames. "rows" is a rank table
# (structured array), "event" the index within the rank, "start_ns" the start on the rank's clock.
def event_columns(
    trace: Trace,
    ranks: list[int] | npt.NDArray[np.int64],
    max_events: int,
    timing: str = "mean",
    seed: int = 0,
) -> dict[str, np.ndarray]: ...
def recording_columns(
    recordings: list[RankRecording], nranks: int, max_events: int
) -> dict[str, np.ndarray]: ...
def simulate(
    trace: Trace,
    network: tuple[float, float, float, float, float],
    intra_node: tuple[float, float, float, float, float],
    ranks_per_node: int = 1,
    eager_threshold: float = 65536.0,
    contention: bool = False,
    timing: str = "mean",
    seed: int = 0,
    compute_scale: float = 1.0,
    site_compute_scale: dict[int, float] = ...,
    size_scale: float = 1.0,
    timeline: bool = False,
    timeline_limit: int = 10000000,
    pair_counts: bool = False,
    recorded_local_calls: bool = True,
    topology: str = "flat",
    shape: list[int] = ...,
    hop_latency: float = 0.0,
    link_G: float = 0.0,
    congestion: bool = True,
    placement: str = "block",
    placement_seed: int = 0,
    node_of_rank: list[int] = ...,
    noise_period: float = 0.0,
    noise_duration: float = 0.0,
    noise_coscheduled: bool = False,
    noise_seed: int = 0,
) -> dict[str, Any]: ...

# --- benchmark generation (register_codegen.cpp) ---
def generate_c(
    trace: Trace,
    resolve_wildcards: bool = False,
    computation: bool = True,
    min_compute_ns: int = 500,
) -> str: ...
def generate_conceptual(
    trace: Trace, computation: bool = True, min_compute_ns: int = 500
) -> str: ...
def has_wildcards(trace: Trace) -> bool: ...
def resolve_wildcards(trace: Trace) -> tuple[Trace, list[tuple[int, int, str, int]]]: ...
def unaligned_collectives(trace: Trace) -> list[str]: ...

# register_extrapolate.cpp
def extrapolate(
    traces: list[Trace],
    ranks: int,
    dims: list[int],
    input_dims: list[list[int]],
    timing: Callable[[list[float], list[float], float], float] | None,
    max_ranks: int = ...,
    drop_local: bool = ...,
    refuse_undecided: bool = ...,
    snippet: list[tuple[str, int]] = ...,
    periodic: bool = ...,
    even_counts: bool = ...,
    common_events: bool = ...,
    assume_constant: bool = ...,
) -> Trace: ...
def common_keep(trace: Trace, drop_local: bool = ...) -> list[list[bool]]: ...
def common_events_trace(trace: Trace, drop_local: bool = ...) -> tuple[Trace, int]: ...
def even_alltoall_counts(trace: Trace) -> tuple[Trace, dict[str, Any]]: ...
def snippet_keep(
    snippet: list[tuple[str, int]], ops: list[str], sites: list[int]
) -> list[bool]: ...
def extrapolation_program(
    traces: list[Trace], ranks: int, drop_local: bool = ...
) -> dict[str, Any]: ...
def balanced_grid(n: int, ndims: int, order: str) -> list[int]: ...

# --- clustering (register_clustering.cpp) ------------------------------------------------------
class RankSignatures:
    def __len__(self) -> int: ...
    def to_dict(self) -> dict[str, np.ndarray]: ...

def signatures(trace: Trace) -> RankSignatures: ...
def signature_feature_names() -> list[str]: ...
def kfarthest_clusters(
    signatures: RankSignatures, k: int, features: list[str], grow: bool = True
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], list[str]]: ...
def signature_distances(
    signatures: RankSignatures, features: list[str], positions: list[int] | None = None
) -> npt.NDArray[np.float64]: ...
def computation_vector(trace: Trace, rank: int) -> npt.NDArray[np.float64]: ...
def rank_groups(trace: Trace, with_values: bool = False) -> npt.NDArray[np.int64]: ...
def rank_clusters(trace: Trace) -> list[tuple[int, RankList]]: ...
