"""The C+MPI writer of scalable benchmarks (see :mod:`scalatrace.scalable`; the shared parts are in ``_scalable_laws``).

The program computes the grid of its rank count with extrapolation's rule, finds every rank's
role, refuses the size if some rank's role is none the inputs showed, and runs its role's
calls: one function per role whose body is the role's calls compressed into ``for`` loops.
"""

from __future__ import annotations

import re
from typing import Any

from ._base import K_ANY, K_PROC_NULL
from ._scalable_laws import (
    COLLECTIVE_OPS,
    Call,
    Loop,
    ScalableProgram,
    compress,
    expand_repeats,
    render,
)

#: Feature names of the laws as C expressions (globals of the generated program).
C_NAMES = {
    "1": "1",
    "X": "X",
    "Y": "Y",
    "Z": "Z",
    "X*Y": "(X*Y)",
    "Y*Z": "(Y*Z)",
    "X*Y*Z": "(X*Y*Z)",
    "log2(P)": "log2P",
    "sqrt(P)": "sqrtP",
    "x": "x",
    "y": "y",
    "z": "z",
    "y*X": "(y*X)",
    "z*X*Y": "(z*X*Y)",
    "r": "me",
    "(r%2)": "(me%2)",
    "(r%3)": "(me%3)",
    "P^2": "(P*P)",
}
K_UNDEFINED = K_ANY - 2
K_NO_COMM = K_ANY - 3
REDUCTION_OPS = {
    1: "MPI_SUM",
    2: "MPI_PROD",
    3: "MPI_MAX",
    4: "MPI_MIN",
    5: "MPI_LAND",
    6: "MPI_LOR",
    7: "MPI_LXOR",
    8: "MPI_BAND",
    9: "MPI_BOR",
    10: "MPI_BXOR",
}

RUNTIME = r"""#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#define RING 4096 /* request slots: offsets are relative to the newest request */
static long X = 1, Y = 1, Z = 1, P, me, x, y, z, log2P, sqrtP, created;
#define MAX_COMMS 256 /* communicators by the trace's ids: 0 world, 1 self, then created */
static MPI_Comm comms[MAX_COMMS];
static long comm_rank[MAX_COMMS];
static MPI_Request reqs[RING];
static char *sbuf, *rbuf;
static long cap;
#define MAX_TYPES 64 /* contiguous types made for element sizes without a predefined type */
static MPI_Datatype types[MAX_TYPES];
static long type_sizes[MAX_TYPES];
static int ntypes;

/* Buffers of at least n bytes (old ones stay valid for requests in flight until the end). */
static void *kept[64];
static int nkept;
static inline void room(long n) {
  if (n <= cap) return;
  long c = cap ? cap : 4096;
  while (c < n) c *= 2;
  if (nkept + 2 <= 64) { kept[nkept++] = sbuf; kept[nkept++] = rbuf; }
  sbuf = calloc((size_t)c, 1);
  rbuf = calloc((size_t)c, 1);
  if (!sbuf || !rbuf) { fprintf(stderr, "out of memory (%ld bytes)\n", c); MPI_Abort(MPI_COMM_WORLD, 2); }
  cap = c;
}

/* A predefined type of `size` bytes that the reduction ops accept, else a contiguous type of
 * that many bytes (made once, freed at the end). */
static inline MPI_Datatype type_of(long size) {
  switch (size) {
    case 1: return MPI_UINT8_T;
    case 2: return MPI_UINT16_T;
    case 4: return MPI_UINT32_T;
    case 8: return MPI_UINT64_T;
    case 16: return MPI_C_DOUBLE_COMPLEX;
  }
  if (size <= 1) return MPI_BYTE;
  for (int i = 0; i < ntypes; ++i)
    if (type_sizes[i] == size) return types[i];
  if (ntypes == MAX_TYPES) { fprintf(stderr, "more than %d element sizes\n", MAX_TYPES); MPI_Abort(MPI_COMM_WORLD, 2); }
  MPI_Type_contiguous((int)size, MPI_BYTE, &types[ntypes]);
  MPI_Type_commit(&types[ntypes]);
  type_sizes[ntypes] = size;
  return types[ntypes++];
}
/* The communicator the trace calls `id`, and this rank's rank in it. */
static inline MPI_Comm comm(long id) {
  if (id < 0 || id >= MAX_COMMS || comms[id] == MPI_COMM_NULL) {
    fprintf(stderr, "rank %ld: communicator %ld does not exist here\n", me, id);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return comms[id];
}
static inline void made(long id) {
  if (id < 0 || id >= MAX_COMMS) { fprintf(stderr, "communicator id %ld\n", id); MPI_Abort(MPI_COMM_WORLD, 2); }
  int r = 0;
  if (comms[id] != MPI_COMM_NULL) MPI_Comm_rank(comms[id], &r);
  comm_rank[id] = r;
}
static inline int count(long bytes, long size) { return size > 0 ? (int)(bytes / size) : (int)bytes; }
static inline MPI_Request *slot(long offset) { return &reqs[((created - offset) % RING + RING) % RING]; }
static inline MPI_Request *fresh(void) { return &reqs[created++ % RING]; }

/* Computation before a call: a busy loop until MPI_Wtime says `us` microseconds have passed
 * (as the fixed-size C benchmark; under 0.5 us left out). */
static inline void compute(double us) {
  if (!(us >= 0.5)) return;
  const double end = MPI_Wtime() + us * 1e-6;
  while (MPI_Wtime() < end) {
  }
}
static inline double plog(double p, double e, int j) { return pow(p, e) * pow(log2(p), j); }

static inline long floor_log2(long n) { long l = 0; while (n > 1) { n >>= 1; ++l; } return l; }
static inline long floor_sqrt(long n) { long s = 0; while ((s + 1) * (s + 1) <= n) ++s; return s; }

/* Extrapolation's grid is MPI_Dims_create's (its factors largest first); the program lays its
 * ranks on the grid MPI_Dims_create makes of its own size, the largest factor varying fastest
 * or slowest as the traced program did. */
static inline void grid(long n, int nd, int fastest_largest, long *dims) {
  int d[3] = {0, 0, 0};
  MPI_Dims_create((int)n, nd, d);
  for (int i = 0; i < 3; ++i) dims[i] = i < nd ? d[i] : 1;
  if (!fastest_largest)
    for (int a = 0, b = nd - 1; a < b; ++a, --b) { long t = dims[a]; dims[a] = dims[b]; dims[b] = t; }
}

/* Per dimension: (distance to the low boundary, to the high boundary), each capped at DEPTH. */
static inline int cls(long c, long n, long lo, long hi) {
  long a = c < DEPTH ? c : DEPTH, b = n - 1 - c < DEPTH ? n - 1 - c : DEPTH;
  return a == lo && b == hi;
}
"""


def _field(call: Call, name: str) -> str:
    return render(call.field(name), C_NAMES)


def _comm(call: Call) -> str:
    law = call.field("Comm")
    return "MPI_COMM_WORLD" if law == 0 else f"comm({render(law, C_NAMES)})"


def _peer(call: Call, name: str) -> str:
    law = call.field(name)
    if law == K_PROC_NULL:
        return "MPI_PROC_NULL"
    if law == K_ANY:
        return "MPI_ANY_SOURCE"
    base = "me" if call.field("Comm") == 0 else f"comm_rank[{render(call.field('Comm'), C_NAMES)}]"
    return f"({base} + {render(law, C_NAMES)})"


def _tag(call: Call, name: str) -> str:
    law = call.field(name)
    return "MPI_ANY_TAG" if law == K_ANY else render(law, C_NAMES)


def _op(call: Call) -> str:
    code = call.field("RedOp")
    if code not in REDUCTION_OPS:
        raise_unsupported(call, f"reduction op code {code}")
    return REDUCTION_OPS[code]


def raise_unsupported(call: Call, what: str) -> None:
    from .errors import ScalatraceError

    raise ScalatraceError(f"MPI_{call.op}: {what} is not generated by scalable benchmarks")


def _statement(call: Call) -> list[str]:
    """One call as C statements."""
    op = call.op
    b, d = _field(call, "Bytes"), _field(call, "DtSize")
    n, t = f"count({b}, {d})", f"type_of({d})"
    mpi = f"MPI_{op}"
    if op in ("Comm_split", "Comm_dup"):
        new = render(call.field("NewComm"), C_NAMES)
        target = "&scratch" if call.field("NewComm") == K_NO_COMM else f"&comms[{new}]"
        if op == "Comm_dup":
            make = f"MPI_Comm_dup({_comm(call)}, {target});"
        else:
            color = call.field("Color")
            color_text = "MPI_UNDEFINED" if color == K_UNDEFINED else render(color, C_NAMES)
            make = (
                f"MPI_Comm_split({_comm(call)}, {color_text}, {render(call.field('Key'), C_NAMES)}, "
                f"{target});"
            )
        if call.field("NewComm") == K_NO_COMM:
            return [f"{{ MPI_Comm scratch; {make} }}"]
        return [f"{make} made({new});"]
    if op == "Cart_create":
        # the grid is MPI_Dims_create's of the communicator's size, not periodic (the trace
        # records neither; the peers are recorded, so the messages are the same)
        new = render(call.field("NewComm"), C_NAMES)
        if call.field("NewComm") == K_NO_COMM:
            raise_unsupported(call, "a Cartesian grid smaller than its communicator")
        return [
            f"{{ int n, dims[16] = {{0}}, periods[16] = {{0}}; MPI_Comm_size({_comm(call)}, &n); "
            f"MPI_Dims_create(n, {_field(call, 'Count')}, dims); "
            f"MPI_Cart_create({_comm(call)}, {_field(call, 'Count')}, dims, periods, 0, &comms[{new}]); "
            f"made({new}); }}"
        ]
    if op == "Comm_free":
        return [f"MPI_Comm_free(&comms[{render(call.field('Comm'), C_NAMES)}]);"]
    if op in ("Send", "Ssend", "Rsend"):
        return [
            f"room({b}); {mpi}(sbuf, {n}, {t}, {_peer(call, 'Peer')}, {_tag(call, 'Tag')}, {_comm(call)});"
        ]
    if op in ("Isend", "Issend", "Irsend"):
        return [
            f"room({b}); {mpi}(sbuf, {n}, {t}, {_peer(call, 'Peer')}, {_tag(call, 'Tag')}, {_comm(call)}, fresh());"
        ]
    if op == "Recv":
        return [
            f"room({b}); MPI_Recv(rbuf, {n}, {t}, {_peer(call, 'Peer')}, {_tag(call, 'Tag')}, "
            f"{_comm(call)}, MPI_STATUS_IGNORE);"
        ]
    if op == "Irecv":
        return [
            f"room({b}); MPI_Irecv(rbuf, {n}, {t}, {_peer(call, 'Peer')}, {_tag(call, 'Tag')}, {_comm(call)}, fresh());"
        ]
    if op == "Sendrecv":
        b2, d2 = _field(call, "Bytes2"), _field(call, "DtSize2")
        return [
            f"room({_larger(b, b2)}); MPI_Sendrecv(sbuf, {n}, {t}, {_peer(call, 'Peer')}, "
            f"{_tag(call, 'Tag')}, rbuf, count({b2}, {d2}), type_of({d2}), {_peer(call, 'Peer2')}, "
            f"{_tag(call, 'Tag2')}, {_comm(call)}, MPI_STATUS_IGNORE);"
        ]
    if op in REQUEST_CALLS:
        return _requests_statement(call)
    if op in ("Send_init", "Ssend_init", "Rsend_init", "Recv_init"):
        buf = "rbuf" if op == "Recv_init" else "sbuf"
        return [
            f"room({b}); {mpi}({buf}, {n}, {t}, {_peer(call, 'Peer')}, {_tag(call, 'Tag')}, {_comm(call)}, fresh());"
        ]
    if op == "Probe":
        return [
            f"MPI_Probe({_peer(call, 'Peer')}, {_tag(call, 'Tag')}, {_comm(call)}, MPI_STATUS_IGNORE);"
        ]
    if op == "Iprobe":
        return [
            f"{{ int flag; MPI_Iprobe({_peer(call, 'Peer')}, {_tag(call, 'Tag')}, {_comm(call)}, &flag, "
            "MPI_STATUS_IGNORE); }"
        ]
    if op.startswith("I") and op[1:].capitalize() in COLLECTIVE_OPS:
        # a nonblocking collective: the blocking call's statement with a request
        blocking = op[1:].capitalize()
        text = _statement(Call(blocking, call.fields))[0].replace(f"MPI_{blocking}(", f"{mpi}(")
        assert text.endswith(");")
        return [text[: -len(");")] + ", fresh());"]
    root = _field(call, "Root")
    if op == "Barrier":
        return [f"MPI_Barrier({_comm(call)});"]
    if op == "Bcast":
        return [f"room({b}); MPI_Bcast(sbuf, {n}, {t}, {root}, {_comm(call)});"]
    if op == "Reduce":
        return [f"room({b}); MPI_Reduce(sbuf, rbuf, {n}, {t}, {_op(call)}, {root}, {_comm(call)});"]
    if op == "Allreduce":
        return [f"room({b}); MPI_Allreduce(sbuf, rbuf, {n}, {t}, {_op(call)}, {_comm(call)});"]
    b2, d2 = _field(call, "Bytes2"), _field(call, "DtSize2")
    n2, t2 = f"count({b2}, {d2})", f"type_of({d2})"
    whole = f"room(P * ({_larger(b, b2)}));"
    if op in ("Alltoall", "Allgather"):
        return [f"{whole} {mpi}(sbuf, {n}, {t}, rbuf, {n2}, {t2}, {_comm(call)});"]
    if op in ("Gather", "Scatter"):
        return [f"{whole} {mpi}(sbuf, {n}, {t}, rbuf, {n2}, {t2}, {root}, {_comm(call)});"]
    raise_unsupported(call, "this call")
    return []


#: Request calls as C: the call, given ``k`` requests in ``w`` and statuses in ``st``.
REQUEST_CALLS = {
    "Wait": "MPI_Wait(&w[0], &st[0]);",
    "Waitall": "MPI_Waitall(k, w, st);",
    "Waitany": "int index; MPI_Waitany(k, w, &index, &st[0]);",
    "Waitsome": "int done, index[k]; MPI_Waitsome(k, w, &done, index, st);",
    "Test": "int flag; MPI_Test(&w[0], &flag, &st[0]);",
    "Testall": "int flag; MPI_Testall(k, w, &flag, st);",
    "Testany": "int index, flag; MPI_Testany(k, w, &index, &flag, &st[0]);",
    "Testsome": "int done, index[k]; MPI_Testsome(k, w, &done, index, st);",
    "Start": "MPI_Start(&w[0]);",
    "Startall": "MPI_Startall(k, w);",
    "Request_free": "MPI_Request_free(&w[0]);",
}


def _requests_statement(call: Call) -> list[str]:
    """A call on requests named by their offsets: the requests are copied from their slots,
    the call made, and the handles written back (MPI sets completed or freed ones to
    MPI_REQUEST_NULL and keeps persistent ones), so the slots follow what MPI did."""
    offsets = ", ".join(render(o, C_NAMES) for o in call.requests)
    k = len(call.requests)
    return [
        "{",
        f"  enum {{ k = {k} }};",
        f"  const long offs[k] = {{{offsets}}};",
        "  MPI_Request w[k];",
        *(["  MPI_Status st[k];"] if "st" in re.findall(r"\w+", REQUEST_CALLS[call.op]) else []),
        f"  for (int i = 0; i < k; ++i) w[i] = offs[i] == {K_ANY} ? MPI_REQUEST_NULL : *slot(offs[i]);",
        "  " + REQUEST_CALLS[call.op],
        f"  for (int i = 0; i < k; ++i) if (offs[i] != {K_ANY}) *slot(offs[i]) = w[i];",
        "}",
    ]


def _compute(call: Call) -> str:
    """The computation before ``call`` (its model of the rank count) as a C statement."""
    if call.compute is None:
        return ""
    c0, terms = call.compute
    text = f"{c0:.6g}"
    for num, den, j, coef in terms:
        text += f" + ({coef:.6g})*plog((double)P, {num}.0/{den}.0, {j})"
    return f"compute({text}); "


def _larger(a: str, b: str) -> str:
    """The larger of two size expressions (one of them if they are the same)."""
    return a if a == b else f"({a} > {b} ? {a} : {b})"


def _body(items: Any, indent: int, depth: list[int]) -> list[str]:
    pad = "  " * indent
    out: list[str] = []
    for item in items:
        if isinstance(item, Loop):
            depth[0] += 1
            v = f"i{depth[0]}"
            count = (
                render(item.count, C_NAMES) if not isinstance(item.count, int) else str(item.count)
            )
            out.append(f"{pad}for (long {v} = 0, n{v} = {count}; {v} < n{v}; ++{v}) {{")
            out.extend(_body(item.body, indent + 1, depth))
            out.append(f"{pad}}}")
        else:
            lines = _statement(item)
            lines[0] = _compute(item) + lines[0]
            out.extend(pad + line for line in lines)
    return out


def _role_condition(program: ScalableProgram, per_dim: list, residue: int) -> str:
    coords = ["x", "y", "z"][: program.ndims]
    sizes = ["X", "Y", "Z"][: program.ndims]
    parts = [f"cls({c}, {n}, {lo}, {hi})" for c, n, (lo, hi) in zip(coords, sizes, per_dim)]
    if program.modulus > 1:
        parts.append(f"r % {program.modulus} == {residue}")
    return " && ".join(parts) or "1"


def write_c(program: ScalableProgram) -> str:
    """The scalable benchmark as a C+MPI program."""
    nd = program.ndims
    lines = [
        f"/* Scalable benchmark generated by scalatrace from traces of {program.program} at "
        f"{', '.join(map(str, program.input_sizes))} ranks (thesis 4.4.5).",
        f" * Grid: {nd}D, balanced factorization of the rank count, "
        f"{'largest' if program.order == 'fastest_largest' else 'smallest'} size fastest; "
        f"{len(program.roles)} roles (boundary depth {program.depth}, rank modulus {program.modulus}).",
        " * Runs at every rank count whose ranks all have one of these roles; refuses others. */",
    ]
    for w in program.warnings:
        lines.append(f"/* note: {w} */")
    lines.append(f"#define DEPTH {program.depth}")
    lines.append(RUNTIME)
    names = []
    for k, role in enumerate(program.roles):
        name = f"role{k}"
        names.append(name)
        items = compress(expand_repeats(role.calls))
        lines.append(f"/* role {role.name} */")
        lines.append(f"static void {name}(void) {{")
        lines.extend(_body(items, 1, [0]))
        lines.append("}")
        lines.append("")
    lines.append("/* The role of rank r (its coordinates in x, y, z), -1 if no input showed it. */")
    lines.append("static int role_of(long r) {")
    lines.append("  x = r % X; y = (r / X) % Y; z = r / (X * Y);")
    for k, role in enumerate(program.roles):
        lines.append(f"  if ({_role_condition(program, role.per_dim, role.residue)}) return {k};")
    lines.append("  return -1;")
    lines.append("}")
    table = ", ".join(names)
    grid_text = " ".join(f'"%ld{"x" if i < nd - 1 else ""}"' for i in range(nd))
    grid_args = ", ".join(["X", "Y", "Z"][:nd])
    lines.append(
        f"""
static void (*const roles[])(void) = {{{table}}};

int main(int argc, char **argv) {{
  int rank, size;
  long dims[3] = {{1, 1, 1}};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  P = size;
  for (int i = 0; i < RING; ++i) reqs[i] = MPI_REQUEST_NULL;
  for (int i = 0; i < MAX_COMMS; ++i) comms[i] = MPI_COMM_NULL;
  comms[0] = MPI_COMM_WORLD;
  comms[1] = MPI_COMM_SELF;
  grid(P, {nd}, {1 if program.order == "fastest_largest" else 0}, dims);
  X = dims[0];
  Y = dims[1];
  Z = dims[2];
  log2P = floor_log2(P);
  sqrtP = floor_sqrt(P);
  for (long r = 0; r < P; ++r)
    if (role_of(r) < 0) {{
      if (rank == 0)
        fprintf(stderr, "scalable benchmark: %ld ranks (grid " {grid_text} ") are not supported: rank %ld has a "
                "role (position on the grid) that no traced size showed (traced sizes: {", ".join(map(str, program.input_sizes))})\\n",
                P, {grid_args}, r);
      MPI_Finalize();
      return 2;
    }}
  me = rank;
  const int role = role_of(me);
  double t0 = MPI_Wtime();
  roles[role]();
  double t1 = MPI_Wtime();
  /* Requests that Waitany/Waitsome/Test* of this run left incomplete where the traced run had
   * completed them: completed with PMPI_Waitall, which a tracer does not see. */
  for (int i = 0; i < RING; ++i)
    if (reqs[i] != MPI_REQUEST_NULL) PMPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
  for (int i = 0; i < ntypes; ++i) MPI_Type_free(&types[i]);
  if (rank == 0) printf("elapsed %.6f s on %ld ranks\\n", t1 - t0, P);
  MPI_Finalize();
  for (int i = 0; i < nkept; ++i) free(kept[i]);
  free(sbuf);
  free(rbuf);
  return 0;
}}
"""
    )
    return "\n".join(lines)
