"""The coNCePTuaL writer of scalable benchmarks (see :mod:`scalatrace.scalable`; the shared parts are in ``_scalable_laws``).

The grid sizes ``gx``, ``gy``, ``gz`` are ``LET`` bindings of expressions in ``num_tasks``;
every role is a task set ``TASKS t SUCH THAT <position of t on the grid>``. Each task runs
its role's statements in order (statements of other task sets do not involve it); collectives
are one statement for all tasks, so every role must reach the same collectives in the same
order (an SPMD code does). The statements of all roles between two collectives follow each
other, and the whole sequence is compressed into ``FOR n REPETITIONS`` loops.
"""

from __future__ import annotations

import math
from typing import Any

from ._scalable_laws import (
    COLLECTIVE_OPS,
    COMM_OPS,
    Call,
    Loop,
    ScalableProgram,
    balanced_grid,
    compress,
    render,
    size_categories,
    uses_rank,
)
from .errors import ScalatraceError

#: Largest rank count the program supports: its 2D grid is the largest divisor of
#: num_tasks up to its square root, written as one conditional expression per candidate.
MAX_TASKS = 1024
K_ANY = -(1 << 40)
K_PROC_NULL = K_ANY - 1

NAMES = {
    "1": "1",
    "X": "gx",
    "Y": "gy",
    "Z": "gz",
    "X*Y": "(gx*gy)",
    "Y*Z": "(gy*gz)",
    "X*Y*Z": "num_tasks",
    "log2(P)": "(BITS(num_tasks)-1)",
    "sqrt(P)": "SQRT(num_tasks)",
    "x": "(t MOD gx)",
    "y": "((t/gx) MOD gy)",
    "z": "(t/(gx*gy))",
    "y*X": "(((t/gx) MOD gy)*gx)",
    "z*X*Y": "((t/(gx*gy))*gx*gy)",
    "r": "t",
    "(r%2)": "(t MOD 2)",
    "(r%3)": "(t MOD 3)",
    "P^2": "(num_tasks*num_tasks)",
}
#: Collectives the language writes (Table 4.1) that the generator supports.
WRITTEN_COLLECTIVES = {"Barrier", "Bcast", "Reduce", "Allreduce", "Alltoall"}


def _size(call: Call, name: str = "Bytes") -> str:
    law = call.field(name)
    if uses_rank(law):
        raise ScalatraceError(
            f"MPI_{call.op}: its {name} depend on the task's position; coNCePTuaL message "
            "sizes cannot use the task variable (write the C benchmark instead)"
        )
    return render(law, NAMES)


def _tag(call: Call, name: str = "Tag") -> str:
    law = call.field(name)
    if law == K_ANY:
        raise ScalatraceError(
            f"MPI_{call.op} with MPI_ANY_TAG: not written by the scalable coNCePTuaL generator"
        )
    if uses_rank(law):
        raise ScalatraceError(f"MPI_{call.op}: a tag that depends on the task's position")
    return render(law, NAMES)


def _peer(call: Call, name: str = "Peer") -> str | None:
    law = call.field(name)
    if law == K_PROC_NULL:
        return None
    if law == K_ANY:
        raise ScalatraceError(
            f"MPI_{call.op} from MPI_ANY_SOURCE: not written by the scalable coNCePTuaL generator "
            "(resolve the wildcards first, or write the C benchmark)"
        )
    return f"t+{render(law, NAMES)}"


def _reduced(call: Call) -> str:
    size = call.field("DtSize")
    b = _size(call)
    bytes_law = call.field("Bytes")
    if isinstance(bytes_law, int):
        if bytes_law % 8 == 0:
            return f"{bytes_law // 8} DOUBLEWORDS"
        if bytes_law % 4 == 0:
            return f"{bytes_law // 4} INTEGERS"
    elif size in (4, 8):
        return f"({b})/{size} {'DOUBLEWORDS' if size == 8 else 'INTEGERS'}"
    raise ScalatraceError(
        f"MPI_{call.op} reduces {b} bytes: coNCePTuaL reduces DOUBLEWORDS and INTEGERS only"
    )


def _p2p(call: Call, who: str) -> list[str]:
    """A role's point-to-point or completion call as statements of the task set ``who``."""
    op = call.op
    if op in ("Wait", "Waitall"):
        return [f"{who} AWAIT COMPLETION"]
    asynchronously = "ASYNCHRONOUSLY " if op.startswith("I") or op == "Sendrecv" else ""
    out = []
    if op in ("Send", "Ssend", "Rsend", "Isend", "Issend", "Irsend", "Sendrecv"):
        peer = _peer(call)
        if peer is not None:
            out.append(
                f"{who} {asynchronously}SEND A {_size(call)} BYTE MESSAGE USING TAG {_tag(call)} "
                f"TO UNSUSPECTING TASK {peer}"
            )
    if op in ("Recv", "Irecv"):
        peer = _peer(call)
        if peer is not None:
            out.append(
                f"{who} {asynchronously}RECEIVE A {_size(call)} BYTE MESSAGE USING TAG {_tag(call)} "
                f"FROM TASK {peer}"
            )
    if op == "Sendrecv":
        peer = _peer(call, "Peer2")
        if peer is not None:
            out.append(
                f"{who} ASYNCHRONOUSLY RECEIVE A {_size(call, 'Bytes2')} BYTE MESSAGE USING TAG "
                f"{_tag(call, 'Tag2')} FROM TASK {peer}"
            )
        out.append(f"{who} AWAIT COMPLETION")
    return out


def _collective(call: Call) -> list[str]:
    op = call.op
    if op not in WRITTEN_COLLECTIVES:
        raise ScalatraceError(
            f"MPI_{op}: the scalable coNCePTuaL generator writes "
            f"{', '.join(sorted(WRITTEN_COLLECTIVES))} (write the C benchmark instead)"
        )
    if op == "Barrier":
        return ["ALL TASKS SYNCHRONIZE"]
    root = render(call.field("Root"), NAMES)
    if uses_rank(call.field("Root")):
        raise ScalatraceError(f"MPI_{op}: a root that depends on the task's position")
    if op == "Bcast":
        return [f"TASK {root} MULTICASTS A {_size(call)} BYTE MESSAGE TO ALL OTHER TASKS"]
    if op == "Reduce":
        return [f"ALL TASKS t REDUCE {_reduced(call)} TO TASK {root}"]
    if op == "Allreduce":
        return [f"ALL TASKS t REDUCE {_reduced(call)} TO TASKS u SUCH THAT u >= 0"]
    return [f"ALL TASKS t MULTICAST A {_size(call)} BYTE MESSAGE TO ALL OTHER TASKS"]


def _task_set(program: ScalableProgram, per_dim: list, residue: int) -> str:
    d = program.depth
    coords = [NAMES["x"], NAMES["y"], NAMES["z"]][: program.ndims]
    sizes = ["gx", "gy", "gz"][: program.ndims]
    parts = []
    for c, n, (lo, hi) in zip(coords, sizes, per_dim):
        parts.append(f"{c} = {lo}" if lo < d else f"{c} >= {d}")
        parts.append(f"{c} = {n}-{1 + hi}" if hi < d else f"{c} <= {n}-{1 + d}")
    if program.modulus > 1:
        parts.append(f"t MOD {program.modulus} = {residue}")
    return "TASKS t SUCH THAT " + " /\\ ".join(parts) if parts else "ALL TASKS t"


def _merged(program: ScalableProgram) -> list[Any]:
    """Every role's calls in one sequence: per stretch between collectives, each role's
    calls, then the collective (identical in every role)."""
    stretches: list[list[list[Call]]] = []
    collectives: list[list[Call]] = []
    for role in program.roles:
        own: list[list[Call]] = [[]]
        coll: list[Call] = []
        for call in role.calls:
            if call.field("Comm") != 0 or call.op in COMM_OPS:
                raise ScalatraceError(
                    f"role {role.name}: MPI_{call.op} makes or uses a derived communicator: the "
                    "scalable coNCePTuaL generator uses MPI_COMM_WORLD only (write the C "
                    "benchmark instead)"
                )
            if call.repeat != 1:
                raise ScalatraceError(
                    f"role {role.name}: MPI_{call.op} is repeated a number of times that changes "
                    "with the size; the coNCePTuaL generator needs every role's calls in one "
                    "sequence (write the C benchmark instead)"
                )
            if call.op in COLLECTIVE_OPS:
                coll.append(call)
                own.append([])
            else:
                own[-1].append(call)
        stretches.append(own)
        collectives.append(coll)
    first = collectives[0]

    def what(calls: list[Call]) -> list[tuple]:  # the collective calls, computation aside
        return [(c.op, c.fields) for c in calls]

    for role, coll in zip(program.roles, collectives):
        if what(coll) != what(first):
            raise ScalatraceError(
                f"role {role.name} calls other collectives than role {program.roles[0].name} "
                f"({[c.op for c in coll]} vs {[c.op for c in first]}); coNCePTuaL collectives are "
                "statements of all tasks (write the C benchmark instead)"
            )
    out: list[Any] = []
    for k in range(len(first) + 1):
        for index, own in enumerate(stretches):
            out.extend(("p2p", index, c) for c in own[k])
        if k < len(first):
            out.append(("coll", first[k]))
    return out


def _body(program: ScalableProgram, items: Any, indent: int) -> list[str]:
    pad = "  " * indent
    statements: list[str] = []
    for item in items:
        if isinstance(item, Loop):
            inner = _body(program, item.body, indent + 1)
            statements.append(
                f"{pad}FOR {item.count} REPETITIONS {{\n" + " then\n".join(inner) + f"\n{pad}}}"
            )
        elif item[0] == "coll":
            statements.extend(pad + s for s in _collective(item[1]))
        else:
            role = program.roles[item[1]]
            who = _task_set(program, role.per_dim, role.residue)
            statements.extend(pad + s for s in _p2p(item[2], who))
    return statements


def _divisor_expr(limit: int) -> str:
    """The largest divisor of num_tasks not above its square root (for num_tasks <= limit)."""
    expr = "1"
    for k in range(2, math.isqrt(limit) + 1):
        expr = f"({k} IF num_tasks MOD {k} = 0 /\\ {k}*{k} <= num_tasks OTHERWISE {expr})"
    return expr


def _grid_bindings(program: ScalableProgram) -> tuple[str, list[int]]:
    """``LET ... WHILE`` prefix binding gx, gy, gz, and the sizes up to MAX_TASKS where the
    expression differs from extrapolation's grid (refused by the assertion)."""
    if program.ndims == 1:
        return "LET gx BE num_tasks WHILE LET gy BE 1 WHILE LET gz BE 1 WHILE", []
    if program.ndims != 2:
        raise ScalatraceError(
            "3D grids: the scalable coNCePTuaL generator writes 1D and 2D grids (write the C "
            "benchmark instead)"
        )
    small = _divisor_expr(MAX_TASKS)
    other = []
    for n in range(1, MAX_TASKS + 1):
        d = max(k for k in range(1, math.isqrt(n) + 1) if n % k == 0)
        want = balanced_grid(n, 2, program.order)
        got = [n // d, d] if program.order == "fastest_largest" else [d, n // d]
        if want != got:
            other.append(n)
    if program.order == "fastest_largest":
        return f"LET gy BE {small} WHILE LET gx BE num_tasks/gy WHILE LET gz BE 1 WHILE", other
    return f"LET gx BE {small} WHILE LET gy BE num_tasks/gx WHILE LET gz BE 1 WHILE", other


def _support_condition(program: ScalableProgram, excluded: list[int]) -> str:
    sizes = ["gx", "gy", "gz"][: program.ndims]
    m = program.modulus
    big, supported = size_categories(program)
    combos = []
    for combo in supported:
        terms = []
        for g, (kind, value) in zip(sizes, combo):
            if kind == "eq":
                terms.append(f"{g} = {value}")
            else:
                terms.append(f"{g} >= {big}" + (f" /\\ {g} MOD {m} = {value}" if m > 1 else ""))
        combos.append("(" + " /\\ ".join(terms) + ")")
    if not combos:
        raise ScalatraceError("no grid size has every role the inputs showed")
    cond = [f"num_tasks <= {MAX_TASKS}"] + [f"num_tasks <> {n}" for n in excluded]
    cond.append("(" + " \\/ ".join(combos) + ")")
    return " /\\ ".join(cond)


def write_conceptual(program: ScalableProgram) -> str:
    """The scalable benchmark as a coNCePTuaL program."""
    let, excluded = _grid_bindings(program)
    body = _body(program, compress(_merged(program)), 1)
    sizes = ", ".join(map(str, program.input_sizes))
    lines = [
        f"# Scalable coNCePTuaL benchmark generated by scalatrace from traces of {program.program} "
        f"at {sizes} tasks (thesis 4.4.5).",
        f"# Grid: {program.ndims}D, balanced factorization of num_tasks "
        f"({'largest' if program.order == 'fastest_largest' else 'smallest'} size fastest); "
        f"{len(program.roles)} roles (boundary depth {program.depth}).",
    ]
    lines += [f"# note: {w}" for w in program.warnings]
    lines += [
        'Require language version "1.5".',
        "",
        "All tasks synchronize then",
        "all tasks reset their counters then",
        let,
        "{",
        f'  ASSERT THAT "the task count has a grid whose every position the traced sizes ({sizes}) '
        f'showed, and is at most {MAX_TASKS}" WITH {_support_condition(program, excluded)} then',
        " then\n".join(body),
        "} then",
        "all tasks await completion then",
        "all tasks synchronize then",
        'task 0 logs elapsed_usecs as "Elapsed time (us)" and bytes_sent as "Bytes sent by task 0".',
        "",
    ]
    return "\n".join(lines)
