"""What both writers of scalable benchmarks share (see :mod:`scalatrace.scalable`).

:func:`program_from_traces` extrapolates traces of one program at several sizes
(:func:`scalatrace.extrapolate`'s laws, see ``docs/extrapolation.md``) to a probe size and keeps
every role's calls (the ranks of one boundary class of the process grid) with their parameters
as laws of the rank count, the grid sizes and the rank's position.

This module holds the laws as expressions, the roles' event sequences compressed into loops,
and which grid sizes are supported; the writers are ``_scalable_c`` and
``_scalable_conceptual``, the public function :func:`scalatrace.scalable.scalable_benchmark`.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from . import _core
from .errors import ScalatraceError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ._model import TraceModel

__all__ = ["ScalableProgram", "program_from_traces", "supported_grid"]

#: The size the laws are determined at (extrapolation's probe target): every 1D, 2D and 3D
#: balanced grid of it has all sizes >= 7, so every boundary class of depth <= 3 occurs, and a
#: law the inputs do not decide (X or the constant 4) is refused rather than guessed.
PROBE_RANKS = 1728

#: The probe of 3D codes whose inputs all have a dimension of 2: its grid is 11x7x2.
FLAT_PROBE_RANKS = 2 * 7 * 11

#: Ops generated (the others are refused with their name).
P2P_OPS = {"Send", "Ssend", "Rsend", "Recv", "Isend", "Issend", "Irsend", "Irecv", "Sendrecv"}
#: Persistent requests: their inits create an inactive request, Start/Startall activate them.
PERSISTENT_OPS = {"Send_init", "Ssend_init", "Rsend_init", "Recv_init"}
PROBE_OPS = {"Probe", "Iprobe"}
#: Wait, Waitall, Waitany, Waitsome and the four Test calls.
COMPLETION_OPS = {call + form for call in ("Wait", "Test") for form in ("", "all", "any", "some")}
#: Calls naming requests by their handle-buffer offsets (the Requests array).
REQUEST_OPS = COMPLETION_OPS | {"Start", "Startall", "Request_free"}
COLLECTIVE_OPS = {
    "Barrier",
    "Bcast",
    "Reduce",
    "Allreduce",
    "Alltoall",
    "Allgather",
    "Gather",
    "Scatter",
}
#: Nonblocking collectives: the blocking one's parameters, and a request.
NONBLOCKING_COLLECTIVE_OPS = {"I" + op.lower() for op in COLLECTIVE_OPS}
LIFECYCLE_OPS = {"Init", "Init_thread", "Finalize"}
#: Communicator calls (coNCePTuaL writes only row and column splits of a 2D grid, as task sets).
COMM_OPS = {"Comm_split", "Comm_dup", "Cart_create", "Comm_free"}

GENERATED_OPS = (
    P2P_OPS
    | PERSISTENT_OPS
    | PROBE_OPS
    | REQUEST_OPS
    | COLLECTIVE_OPS
    | NONBLOCKING_COLLECTIVE_OPS
    | COMM_OPS
)

Law = Union[int, Mapping[str, Any]]


@dataclass(frozen=True)
class Call:
    """One call of a role with its parameters as laws (hashable: equal calls compress)."""

    op: str
    fields: tuple[tuple[str, Any], ...]  # (field, law as a frozen value)
    requests: tuple[Any, ...] = ()  # completion calls: request offsets (laws)
    repeat: Any = 1
    site: int = 0
    #: computation before the call in microseconds as a model of the rank count:
    #: (c0, ((exponent numerator, denominator, log2 power, coefficient), ...)), or None
    compute: Any = None

    def field(self, name: str) -> Any:
        """The law of field ``name`` (0 when the field is unused or zero)."""
        return dict(self.fields).get(name, 0)


@dataclass(frozen=True)
class Loop:
    """``count`` repetitions of ``body`` (count: an int or a frozen law)."""

    count: Any
    body: tuple[Any, ...]


@dataclass
class Role:
    """The ranks of one boundary class (and residue): its name, key and calls."""

    name: str
    per_dim: list[tuple[int, int]]
    residue: int
    calls: list[Call]


@dataclass
class ScalableProgram:
    """What a scalable benchmark is made of (before it is written in a language).

    Attributes
    ----------
    ndims : int
        Grid dimensions (1, 2 or 3).
    order : str
        ``"fastest_largest"`` or ``"fastest_smallest"``: which factor of the balanced
        factorization varies fastest (rank = x + X*y + X*Y*z).
    depth, modulus : int
        Boundary depth and rank modulus of the roles.
    roles : list of Role
        Every role's calls.
    input_sizes : list of int
        The rank counts of the traces.
    program : str
        The traced program's name (metadata ``program``), for the header.
    warnings : list of str
        Laws the inputs did not decide (the simplest was taken).
    """

    ndims: int
    order: str
    depth: int
    modulus: int
    roles: list[Role]
    input_sizes: list[int]
    program: str
    warnings: list[str]

    def role_keys(self) -> set[tuple[tuple[tuple[int, int], ...], int]]:
        """The roles as ``role_of`` keys."""
        return {(tuple(r.per_dim), r.residue) for r in self.roles}


def _freeze(law: Law) -> Any:
    """A law as a hashable value: an int, ("lin", ((feature, num, den), ...)) or
    ("div", scale, numerator, divisor[, offset]) (an offset only where it is not 0)."""
    if isinstance(law, int):
        return law
    if "div" in law:
        scale, numerator, divisor, offset = law["div"]
        if int(offset) == 0:
            return ("div", int(scale), int(numerator), str(divisor))
        return ("div", int(scale), int(numerator), str(divisor), int(offset))
    return ("lin", tuple((str(f), int(n), int(d)) for f, n, d in law["terms"]))


def render(law: Any, names: Mapping[str, str]) -> str:
    """A frozen law as an integer expression, features named by ``names`` (C and coNCePTuaL
    share the operators ``+ - * /`` with truncating division; every law is exact at every
    size it is used, so the division has no remainder)."""
    if isinstance(law, int):
        return str(law) if law >= 0 else f"({law})"
    if law[0] == "div":
        scale, numerator, divisor = law[1:4]
        offset = law[4] if len(law) > 4 else 0
        quotient = f"({numerator}/{names[divisor]})"
        scaled = quotient if scale == 1 else f"({scale}*{quotient})"
        return scaled if offset == 0 else f"({scaled} {'-' if offset < 0 else '+'} {abs(offset)})"
    terms = law[1]
    common = math.lcm(*(d for _, _, d in terms))
    parts = []
    for feature, num, den in terms:
        k = num * (common // den)
        name = names[feature]
        parts.append(name if k == 1 and name != "1" else f"{k}" if name == "1" else f"{k}*{name}")
    text = " + ".join(parts).replace("+ -", "- ")
    return f"({text})" if common == 1 else f"(({text})/{common})"


def uses_rank(law: Any) -> bool:
    """True if the law depends on the rank's position (coordinates, rank, residues)."""
    if isinstance(law, int) or law[0] == "div":
        return False
    rank_features = {"x", "y", "z", "y*X", "z*X*Y", "r", "(r%2)", "(r%3)"}
    return any(f in rank_features for f, _, _ in law[1])


def _call(event: Mapping[str, Any], role: str) -> Call | None:
    op = event["op"]
    if op in LIFECYCLE_OPS or op == "Other":
        return None
    where = f"role {role}: MPI_{op}"
    if op not in GENERATED_OPS:
        raise ScalatraceError(
            f"{where}: scalable benchmarks generate point-to-point calls, persistent requests, "
            f"probes, Wait*/Test*, the collectives {', '.join(sorted(COLLECTIVE_OPS))} and their "
            f"nonblocking forms, and {', '.join(sorted(COMM_OPS))}; MPI_{op} is not generated"
        )
    fields = event["fields"]
    keep = (
        "Comm",
        "Peer",
        "Tag",
        "Bytes",
        "DtSize",
        "Peer2",
        "Tag2",
        "Bytes2",
        "DtSize2",
        "Root",
        "RedOp",
        "NewComm",
        "Color",
        "Key",
        "Count",
    )
    frozen = tuple((k, _freeze(fields[k])) for k in keep if fields[k] != 0)
    requests: tuple[Any, ...] = ()
    if op in REQUEST_OPS:
        arr = event["arrays"]["Requests"]
        if arr["kind"] == "constant":
            requests = tuple(int(v) for v in arr["values"])
        elif arr["kind"] == "elementwise":
            requests = tuple(_freeze(v) for v in arr["values"])
        else:
            raise ScalatraceError(
                f"{where}: the number of requests it completes changes with the size; not generated"
            )
    return Call(op, frozen, requests, _freeze(event["repeat"]), int(event["site"]))


def compress(items: Sequence[Any], max_period: int = 256) -> tuple[Any, ...]:
    """``items`` with repeated blocks as loops: at each position the block whose repetition
    covers the most items (the shortest on ties) becomes a :class:`Loop`, recursively."""
    out: list[Any] = []
    i, n = 0, len(items)
    while i < n:
        best_cover, best = 0, None
        for period in range(1, min(max_period, (n - i) // 2) + 1):
            block = items[i : i + period]
            count = 1
            while items[i + count * period : i + (count + 1) * period] == block:
                count += 1
            if count > 1 and period * count > best_cover:
                best_cover, best = period * count, (period, count)
        if best is None:
            out.append(items[i])
            i += 1
        else:
            period, count = best
            out.append(Loop(count, compress(items[i : i + period], max_period)))
            i += period * count
    return tuple(out)


def expand_repeats(calls: Sequence[Call]) -> list[Any]:
    """Calls with a repeat count other than 1 as loops of that count (a law: a trip count
    that changes with the size)."""
    return [
        c if c.repeat == 1 else Loop(c.repeat, (Call(c.op, c.fields, c.requests),)) for c in calls
    ]


def balanced_grid(n: int, ndims: int, order: str) -> list[int]:
    """The grid extrapolation lays ``n`` ranks on, fastest dimension first: the core's
    ``balanced_grid``, ``MPI_Dims_create``'s balanced factorization into ``ndims`` (1 to 3)
    factors; ``order`` says whether the largest factor varies fastest (``"fastest_largest"``)
    or slowest (``"fastest_smallest"``)."""
    return list(_core.balanced_grid(n, ndims, order))


def role_of(grid: Sequence[int], rank: int, depth: int, modulus: int) -> tuple:
    """The role key of ``rank`` on ``grid`` (``role_key`` of the core)."""
    key, r = [], rank
    for n in grid:
        c = r % n
        r //= n
        key.append((min(c, depth), min(n - 1 - c, depth)))
    return (tuple(key), rank % modulus if modulus > 1 else 0)


def supported_grid(program: ScalableProgram, nranks: int) -> bool:
    """True if every rank of ``nranks`` ranks has a role the program knows."""
    grid = balanced_grid(nranks, program.ndims, program.order)
    keys = program.role_keys()
    return all(role_of(grid, r, program.depth, program.modulus) in keys for r in range(nranks))


def size_categories(program: ScalableProgram) -> tuple[int, list[tuple[tuple[str, int], ...]]]:
    """The supported grid sizes, as combinations of per-dimension conditions.

    From the size ``big = 2*depth + modulus`` on, a dimension's boundary classes are all there
    and its middle has every residue, so which roles a grid needs depends on each size only
    through ``("eq", n)`` for smaller sizes and ``("big", n % modulus)`` for the others. Each
    combination is decided exactly on a representative grid (every rank's role must be one of
    the program's).

    Returns
    -------
    tuple
        ``big`` and the supported combinations.
    """
    d, m = program.depth, max(1, program.modulus)
    big = 2 * d + m
    options = [(("eq", n), n) for n in range(1, big)]
    options += [(("big", (big + j) % m), big + j) for j in range(m)]
    keys = program.role_keys()
    supported = []
    for combo in itertools.product(options, repeat=program.ndims):
        grid = [n for _, n in combo]
        if all(role_of(grid, r, d, program.modulus) in keys for r in range(math.prod(grid))):
            supported.append(tuple(c for c, _ in combo))
    return big, supported


def _attach_compute(
    role: Role, traces: Sequence[TraceModel], grids: list[list[int]], depth: int, modulus: int
) -> str:
    """Gives every call of ``role`` the computation before it: per call site, the mean over
    the role's ranks and the site's calls at each input size, as a :func:`fit_scaling` model
    of the rank count (3 or more sizes; else the largest size's mean), as extrapolation's
    timing does. Returns why not, or ""."""
    from .extrapolate import fit_scaling

    key = (tuple(role.per_dim), role.residue)
    if any(c.repeat != 1 for c in role.calls):
        return "calls repeated a size-dependent number of times"
    sums: dict[tuple[str, int], dict[int, list[float]]] = {}
    for trace, grid in zip(traces, grids):
        for rank in range(trace.nranks):
            if role_of(grid, rank, depth, modulus) != key:
                continue
            events = [
                e
                for e in trace.events(rank, timing="mean")
                if e.op != "Other" and e.op not in LIFECYCLE_OPS
            ]
            if len(events) != len(role.calls):
                return f"rank {rank} of {trace.nranks} has {len(events)} calls, the role {len(role.calls)}"
            for call, e in zip(role.calls, events):
                per_size = sums.setdefault((call.op, call.site), {})
                per_size.setdefault(trace.nranks, []).append(e.compute_ns / 1000.0)
    models = {}
    for group, per_size in sums.items():
        sizes = sorted(per_size)
        means = [sum(per_size[n]) / len(per_size[n]) for n in sizes]
        if len(sizes) >= 3:
            with warnings.catch_warnings():  # compute gaps of microseconds are noise-bound
                warnings.simplefilter("ignore", UserWarning)
                model = fit_scaling(sizes, means)
            terms = tuple(
                (t.i.numerator, t.i.denominator, t.j, float(c))
                for t, c in zip(model.terms, model.coefficients[1:])
            )
            models[group] = (float(model.coefficients[0]), terms)
        else:
            models[group] = (means[-1], ())
    role.calls = [
        Call(c.op, c.fields, c.requests, c.repeat, c.site, models.get((c.op, c.site)))
        for c in role.calls
    ]
    return ""


def program_from_traces(traces: Sequence[TraceModel]) -> ScalableProgram:
    """Extrapolates ``traces`` to a probe size and returns every role's calls as laws.

    Raises
    ------
    ExtrapolationError
        The traces cannot be extrapolated (the message names the parameter without a law).
    ScalatraceError
        A call the scalable generator does not write (named with its role).
    """
    from ._model import TraceModel
    from .extrapolate import ExtrapolationError

    if isinstance(traces, TraceModel) or not all(isinstance(t, TraceModel) for t in traces):
        raise UsageError("scalable_benchmark needs a list of scalatrace.Trace at several sizes")
    traces = list(traces)
    largest = max(t.nranks for t in traces)
    probe = max(PROBE_RANKS, 2 * largest)
    try:
        data = _core.extrapolation_program([t._core for t in traces], probe, True)
    except ExtrapolationError as exc:
        # A 3D code traced only on grids with a dimension of 2 (8, 12, 18 ranks: 2x2x2, 3x2x2,
        # 3x3x2) has no rank inside that dimension: its probe is 11x7x2, and the program runs
        # at the sizes whose grids keep a 2 there (see docs/codegen.md).
        if "which no input shows" not in str(exc) or FLAT_PROBE_RANKS <= 2 * largest:
            raise
        try:
            data = _core.extrapolation_program([t._core for t in traces], FLAT_PROBE_RANKS, True)
        except ExtrapolationError:
            raise exc from None
    if data["root_apart"]:
        raise ScalatraceError(
            "the extrapolation reads rank 0 as a role of its own (it makes calls the other ranks "
            "do not); scalable benchmarks do not write such a role yet"
        )
    roles = []
    for role in data["roles"]:
        calls = [c for c in (_call(e, role["name"]) for e in role["events"]) if c is not None]
        roles.append(
            Role(role["name"], [tuple(p) for p in role["per_dim"]], int(role["residue"]), calls)
        )
    ordered = sorted(traces, key=lambda t: t.nranks)
    grids = [list(g) for g in data["input_grids"]]
    depth, modulus = int(data["depth"]), int(data["modulus"])
    notes = []
    for role in roles:
        why = _attach_compute(role, ordered, grids, depth, modulus)
        if why:
            notes.append(f"role {role.name}: no computation time ({why})")
    program = str(traces[0].metadata.get("program", "program")).rsplit("/", 1)[-1]
    warnings = list(data["warnings"]) + notes
    if data["order_ambiguous"]:
        warnings.append(
            "the inputs' grids read the same in both orders; the program lays ranks out with "
            f"the {data['order'].replace('_', ' ')} dimension fastest"
        )
    return ScalableProgram(
        ndims=int(data["ndims"]),
        order=str(data["order"]),
        depth=int(data["depth"]),
        modulus=int(data["modulus"]),
        roles=roles,
        input_sizes=sorted(t.nranks for t in traces),
        program=program,
        warnings=warnings,
    )
