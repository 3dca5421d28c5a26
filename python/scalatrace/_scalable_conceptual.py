"""The coNCePTuaL writer of scalable benchmarks (see :mod:`scalatrace.scalable`; the shared parts are in ``_scalable_laws``).

The grid sizes ``gx``, ``gy``, ``gz`` are ``LET`` bindings of expressions in ``num_tasks``;
every role is a task set ``TASKS t SUCH THAT <position of t on the grid>``. Each task runs
its role's statements in order (statements of other task sets do not involve it); collectives
are one statement for all tasks, so every role must reach the same collectives in the same
order (an SPMD code does). The statements of all roles between two collectives follow each
other, and the whole sequence is compressed into ``FOR n REPETITIONS`` loops. Computation is
``COMPUTE FOR REAL(...) MICROSECONDS`` of the role's model of the rank count; persistent
requests are the sends and receives each start makes; nonblocking collectives are blocking
(noted); probes, tests and partial completions are refused (the language has none).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import replace
from typing import Any

from ._base import K_ANY, K_PROC_NULL
from ._scalable_laws import (
    COLLECTIVE_OPS,
    COMM_OPS,
    COMPLETION_OPS,
    NONBLOCKING_COLLECTIVE_OPS,
    PERSISTENT_OPS,
    PROBE_OPS,
    Call,
    Loop,
    Role,
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
K_NO_COMM = K_ANY - 3

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
    if call.field("Group"):
        return _group_collective(call)
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


#: Per coordinate a row or column communicator keeps fixed: the number of such communicators,
#: and the world rank of member j of communicator ``grp`` (members in world-rank order).
GROUPS = {"y": ("gy", "(grp*gx + {j})"), "x": ("gx", "(grp + ({j})*gx)")}


def _coordinate(name: str, var: str) -> str:
    """Coordinate ``name`` ("x", "y") of the task ``var`` as an expression."""
    return re.sub(r"\bt\b", var, NAMES[name])


def _group_collective(call: Call) -> list[str]:
    """A collective on the row or column communicators of a 2D grid: one statement per
    communicator, in a loop over them (``grp``), over the tasks whose coordinate is ``grp``;
    each task takes part in its own communicator's (the run time makes a communicator of
    each task set)."""
    op, fixed = call.op, call.field("Group")
    count, member = GROUPS[fixed]
    ours = f"{_coordinate(fixed, 't')} = grp"
    theirs = f"{_coordinate(fixed, 'u')} = grp"
    if op == "Barrier":
        statement = f"TASKS t SUCH THAT {ours} SYNCHRONIZE"
    elif op == "Allreduce":
        statement = (
            f"TASKS t SUCH THAT {ours} REDUCE {_reduced(call)} TO TASKS u SUCH THAT {theirs}"
        )
    elif op == "Alltoall":
        statement = (
            f"TASKS t SUCH THAT {ours} MULTICAST A {_size(call)} BYTE MESSAGE TO "
            f"TASKS u SUCH THAT {theirs} /\\ u <> t"
        )
    else:
        root_law = call.field("Root")
        if not isinstance(root_law, int):
            raise ScalatraceError(
                f"MPI_{op} on a row or column communicator: a root that changes with the size; "
                "not written by the scalable coNCePTuaL generator (write the C benchmark instead)"
            )
        root = member.format(j=root_law)
        if op == "Bcast":
            statement = (
                f"TASK {root} MULTICASTS A {_size(call)} BYTE MESSAGE TO "
                f"TASKS u SUCH THAT {theirs} /\\ u <> {root}"
            )
        else:
            statement = f"TASKS t SUCH THAT {ours} REDUCE {_reduced(call)} TO TASK {root}"
    return [f"FOR EACH grp IN {{0, ..., {count}-1}} {{ {statement} }}"]


def _feature(law: Any) -> str | None:
    """The feature a law is (``y`` for the law y), or None."""
    if isinstance(law, tuple) and law[0] == "lin" and len(law[1]) == 1:
        name, num, den = law[1][0]
        if num == den == 1:
            return name
    return None


def _groups(program: ScalableProgram) -> dict[Any, str]:
    """The communicators made by MPI_Comm_split whose members are a row or a column of the 2D
    grid in world-rank order, each with the coordinate it keeps fixed (its colour); a
    ScalatraceError for any other Comm_split. A role on the boundary may have the colour or
    key as the constant value of its coordinate there (0 at x:lo+0)."""
    splits = [
        (role, call) for role in program.roles for call in role.calls if call.op == "Comm_split"
    ]
    fixed: dict[Any, str] = {}
    for _, call in splits:
        name = _feature(call.field("Color"))
        if name in ("x", "y"):
            fixed.setdefault(call.field("NewComm"), name)
    world_order = {
        call.field("NewComm")
        for _, call in splits
        if all(
            c.field("Key") == 0 for _, c in splits if c.field("NewComm") == call.field("NewComm")
        )
    }

    def constant_of(role: Role, name: str) -> int | None:
        lo, _ = role.per_dim["xyz".index(name)]
        return lo if lo < program.depth else None

    def matches(law: Any, role: Role, name: str) -> bool:
        return _feature(law) == name or (isinstance(law, int) and law == constant_of(role, name))

    for role, call in splits:
        comm = call.field("NewComm")
        name = fixed.get(comm)
        free = {"y": "x", "x": "y"}.get(name or "")
        key = call.field("Key")
        if (
            program.ndims != 2
            or call.field("Comm") != 0
            or free is None
            or not matches(call.field("Color"), role, name)
            or not (matches(key, role, free) or _feature(key) == "r" or comm in world_order)
        ):
            raise ScalatraceError(
                f"role {role.name}: MPI_Comm_split makes a communicator the scalable coNCePTuaL "
                "generator does not write: it writes the rows and columns of a 2D grid "
                "(MPI_Comm_split of MPI_COMM_WORLD with colour y or x and key x, y, the rank or "
                "0) and uses MPI_COMM_WORLD otherwise (write the C benchmark instead)"
            )
    return fixed


def _copies_of_world(program: ScalableProgram) -> dict[Any, str]:
    """The communicators that are MPI_COMM_WORLD again, as ``"world"``: MPI_Comm_dup of it and
    MPI_Cart_create over all of its tasks (MPI_Dims_create's grid; without reordering, as MPICH
    does, ranks stay the same, and the tests compare the messages). Others are refused."""
    copies: dict[Any, str] = {}
    for role in program.roles:
        for call in role.calls:
            if call.op not in ("Comm_dup", "Cart_create"):
                continue
            new = call.field("NewComm")
            if call.field("Comm") != 0 or not isinstance(new, int) or new == K_NO_COMM:
                raise ScalatraceError(
                    f"role {role.name}: MPI_{call.op} of a communicator other than "
                    "MPI_COMM_WORLD, or over only some of its tasks: not written by the scalable "
                    "coNCePTuaL generator (write the C benchmark instead)"
                )
            copies[new] = "world"
    return copies


def _on_world(call: Call, fixed: str) -> Call:
    """A point-to-point call on a row or column communicator with its peers as world offsets."""
    stride = 1 if fixed == "y" else None  # along a row: +-1; along a column: +-gx
    fields = []
    for name, law in call.fields:
        if name == "Comm":
            continue
        if name in ("Peer", "Peer2") and law != K_PROC_NULL and stride is None:
            if not isinstance(law, int) or law == K_ANY:
                raise ScalatraceError(
                    f"MPI_{call.op} on a column communicator with a peer that changes with the "
                    "size or is a wildcard: not written (write the C benchmark instead)"
                )
            law = ("lin", (("X", law, 1),))
        fields.append((name, law))
    return Call(call.op, tuple(fields), call.requests, call.repeat, call.site, call.compute)


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


#: Persistent inits and the nonblocking call each start of them is.
STARTED_AS = {
    "Send_init": "Isend",
    "Ssend_init": "Issend",
    "Rsend_init": "Irsend",
    "Recv_init": "Irecv",
}
#: Completion calls the language cannot write: AWAIT COMPLETION waits for all of a task's
#: outstanding requests.
UNWRITTEN_COMPLETIONS = COMPLETION_OPS - {"Wait", "Waitall"}


def _refuse_unwritten(role: str, call: Call) -> None:
    """Raises for the calls coNCePTuaL cannot express, naming the call and why."""
    where = f"role {role}: MPI_{call.op}"
    if call.op in PROBE_OPS:
        raise ScalatraceError(
            f"{where}: coNCePTuaL has no probe (no statement waits for a message without "
            "receiving it); write the C benchmark instead"
        )
    if call.op in UNWRITTEN_COMPLETIONS:
        what = "tests requests without waiting" if call.op.startswith("Test") else "completes some"
        raise ScalatraceError(
            f"{where}: coNCePTuaL's AWAIT COMPLETION waits for all of a task's outstanding "
            f"requests and the language has no test; MPI_{call.op}, which {what}, cannot be "
            "expressed (write the C benchmark instead)"
        )


def _started(role: str, call: Call, made: list[Call | None]) -> list[Call]:
    """The nonblocking sends and receives that ``call`` (MPI_Start or MPI_Startall) starts:
    its requests are the persistent inits at their offsets (1 = the newest request made)."""
    out = []
    for k, offset in enumerate(call.requests):
        if not isinstance(offset, int) or not 1 <= offset <= len(made):
            raise ScalatraceError(
                f"role {role}: MPI_{call.op} starts the request at offset {offset}, which is not "
                "a persistent request the role made (its offsets change with the size or point "
                "before the first request); not generated"
            )
        init = made[len(made) - offset]
        if init is None or init.op not in STARTED_AS:
            raise ScalatraceError(
                f"role {role}: MPI_{call.op} starts a request that no persistent init made"
            )
        compute = call.compute if k == 0 else None
        out.append(Call(STARTED_AS[init.op], init.fields, site=init.site, compute=compute))
    return out


def _merged(program: ScalableProgram, notes: list[str]) -> list[Any]:
    """Every role's calls in one sequence: per stretch between collectives, each role's
    calls, then the collective (identical in every role). Persistent requests become the
    nonblocking sends and receives each start makes; nonblocking collectives become their
    blocking forms (noted in ``notes``)."""
    stretches: list[list[list[Call]]] = []
    collectives: list[list[Call]] = []
    groups = _groups(program)  # row and column communicators: the coordinate they fix
    groups.update(_copies_of_world(program))
    for role in program.roles:
        own: list[list[Call]] = [[]]
        coll: list[Call] = []
        made: list[Call | None] = []  # the role's requests in creation order (None: collective)
        for call in role.calls:
            _refuse_unwritten(role.name, call)
            if call.op in ("Comm_split", "Comm_dup", "Cart_create", "Comm_free"):
                continue  # the run time makes a communicator of each task set
            comm = call.field("Comm")
            if call.op in COMM_OPS or (comm != 0 and comm not in groups):
                raise ScalatraceError(
                    f"role {role.name}: MPI_{call.op} makes or uses a derived communicator other "
                    "than the rows and columns of a 2D grid by MPI_Comm_split: the scalable "
                    "coNCePTuaL generator uses MPI_COMM_WORLD otherwise (write the C benchmark "
                    "instead)"
                )
            if groups.get(comm) == "world":
                call = replace(call, fields=tuple((k, v) for k, v in call.fields if k != "Comm"))
            elif comm != 0 and call.op in COLLECTIVE_OPS | NONBLOCKING_COLLECTIVE_OPS:
                fields = tuple((k, v) for k, v in call.fields if k != "Comm")
                call = replace(call, fields=fields + (("Group", groups[comm]),))
            elif comm != 0:
                call = _on_world(call, groups[comm])
            if call.repeat != 1:
                raise ScalatraceError(
                    f"role {role.name}: MPI_{call.op} is repeated a number of times that changes "
                    "with the size; the coNCePTuaL generator needs every role's calls in one "
                    "sequence (write the C benchmark instead)"
                )
            op = call.op
            if op in PERSISTENT_OPS:
                made.append(call)
            elif op in ("Start", "Startall"):
                started = _started(role.name, call, made)
                own[-1].extend(started)
            elif op == "Request_free":
                continue
            elif op in NONBLOCKING_COLLECTIVE_OPS:
                made.append(None)
                blocking = op[1:].capitalize()
                note = (
                    f"MPI_{op} is written as {blocking} (the language has no nonblocking "
                    "collectives): the task waits for it where the traced run went on"
                )
                if note not in notes:
                    notes.append(note)
                coll.append(Call(blocking, call.fields, site=call.site, compute=call.compute))
                own.append([])
            elif op in COLLECTIVE_OPS:
                coll.append(call)
                own.append([])
            elif op in ("Wait", "Waitall") and all(
                isinstance(o, int) and 1 <= o <= len(made) and made[len(made) - o] is None
                for o in call.requests
            ):
                continue  # it completed nonblocking collectives, which are blocking here
            else:
                if op in ("Isend", "Issend", "Irsend", "Irecv"):
                    made.append(call)
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
            if k < len(first) and collectives[index][k].compute is not None:
                out.append(("compute", index, collectives[index][k].compute))
        if k < len(first):
            out.append(("coll", replace(first[k], compute=None)))
    return out


def _rational(value: float) -> str:
    """``value`` to a millionth as a quotient of integers (the language has no real literals;
    in ``REAL(...)`` the division is a floating-point one)."""
    scaled = round(value * 1_000_000)
    return f"{scaled}/1000000" if scaled >= 0 else f"(-{-scaled}/1000000)"


def _compute(model: Any, who: str) -> str | None:
    """The computation model of a call, ``(c0, ((num, den, log2 power, coefficient), ...))``
    in microseconds of the rank count P (``_scalable_laws._attach_compute``), as a ``COMPUTE``
    statement of the task set ``who``: ``c0 + sum(coefficient * P**(num/den) * log2(P)**j)``
    evaluated in floating point by ``REAL``, at least 0; None when it is always under 0.5 us."""
    if model is None:
        return None
    c0, terms = model
    terms = [(n, d, j, c) for n, d, j, c in terms if round(c * 1_000_000) != 0]
    if not terms and c0 < 0.5:
        return None
    text = _rational(c0)
    for num, den, j, coef in terms:
        factor = f"num_tasks**({num}/{den})" if (num, den) != (0, 1) else ""
        if j:
            factor += ("*" if factor else "") + f"(LOG10(num_tasks)/LOG10(2))**{j}"
        text += f" + {_rational(coef)}" + (f"*{factor}" if factor else "")
    return f"{who} COMPUTE FOR REAL(MAX(0, {text})) MICROSECONDS"


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
            model = item[2] if item[0] == "compute" else item[2].compute
            compute = _compute(model, who)
            if compute is not None:
                statements.append(pad + compute)
            if item[0] == "p2p":
                statements.extend(pad + s for s in _p2p(item[2], who))
    return statements


def _divisor_expr(limit: int) -> str:
    """The largest divisor of num_tasks not above its square root (for num_tasks <= limit)."""
    expr = "1"
    for k in range(2, math.isqrt(limit) + 1):
        expr = f"({k} IF num_tasks MOD {k} = 0 /\\ {k}*{k} <= num_tasks OTHERWISE {expr})"
    return expr


def _grid_3d(n: int) -> list[int]:
    """The 3D grid the coNCePTuaL expression gives ``n`` tasks, largest size first: the smallest
    size ``c`` is the largest divisor with ``c**3 <= n``, then the 2D rule on ``n/c``."""
    c = max(k for k in range(1, math.isqrt(n) + 1) if n % k == 0 and k**3 <= n)
    b = max(k for k in range(1, math.isqrt(n // c) + 1) if (n // c) % k == 0)
    return [n // (b * c), max(b, c), min(b, c)]


def _grid_bindings_3d(program: ScalableProgram) -> tuple[str, list[int]]:
    """``LET`` bindings of a 3D grid: ``gc``, the largest divisor of num_tasks whose cube is at
    most num_tasks, ``gb``, the largest divisor of num_tasks/gc not above its square root, and
    the three sizes from them (``_grid_3d``); the sizes up to MAX_TASKS where that differs from
    extrapolation's grid (MPI_Dims_create's) are returned to be refused."""
    cube = "1"
    for k in range(2, round(MAX_TASKS ** (1 / 3)) + 2):
        if k**3 <= MAX_TASKS:
            cube = f"({k} IF num_tasks MOD {k} = 0 /\\ {k}*{k}*{k} <= num_tasks OTHERWISE {cube})"
    square = "1"
    for k in range(2, math.isqrt(MAX_TASKS) + 1):
        square = (
            f"({k} IF (num_tasks/gc) MOD {k} = 0 /\\ {k}*{k} <= num_tasks/gc OTHERWISE {square})"
        )
    other = []
    for n in range(1, MAX_TASKS + 1):
        want = balanced_grid(n, 3, program.order)
        got = _grid_3d(n) if program.order == "fastest_largest" else _grid_3d(n)[::-1]
        if want != got:
            other.append(n)
    largest, middle, smallest = "num_tasks/(gc*gb)", "MAX(gb, gc)", "MIN(gb, gc)"
    if program.order != "fastest_largest":
        largest, smallest = smallest, largest
    return (
        f"LET gc BE {cube} WHILE LET gb BE {square} WHILE LET gx BE {largest} WHILE "
        f"LET gy BE {middle} WHILE LET gz BE {smallest} WHILE",
        other,
    )


def _grid_bindings(program: ScalableProgram) -> tuple[str, list[int]]:
    """``LET ... WHILE`` prefix binding gx, gy, gz, and the sizes up to MAX_TASKS where the
    expression differs from extrapolation's grid (refused by the assertion)."""
    if program.ndims == 1:
        return "LET gx BE num_tasks WHILE LET gy BE 1 WHILE LET gz BE 1 WHILE", []
    if program.ndims == 3:
        return _grid_bindings_3d(program)
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
    notes: list[str] = []
    body = _body(program, compress(_merged(program, notes)), 1)
    for note in notes:
        warnings.warn(f"scalable coNCePTuaL benchmark: {note}", UserWarning, stacklevel=3)
    sizes = ", ".join(map(str, program.input_sizes))
    lines = [
        f"# Scalable coNCePTuaL benchmark generated by scalatrace from traces of {program.program} "
        f"at {sizes} tasks (thesis 4.4.5).",
        f"# Grid: {program.ndims}D, balanced factorization of num_tasks "
        f"({'largest' if program.order == 'fastest_largest' else 'smallest'} size fastest); "
        f"{len(program.roles)} roles (boundary depth {program.depth}).",
    ]
    lines += [f"# note: {w}" for w in program.warnings + notes]
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
