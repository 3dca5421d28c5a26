#!/usr/bin/env python3
"""Generates the PMPI wrappers of libscalatrace from MPICH's own prototypes.

One table drives every wrapper: the MPI prototypes found in the preprocessed <mpi.h> (signatures)
joined with ops.def (which functions are traced as which Op) and the RECORD table below (what to
record of each traced op). Functions not in ops.def become pass-through wrappers that record an
Op::Other event carrying the function name. The wrapper boilerplate (reentrancy guard, timing,
call-site capture, PMPI call, return-code pass-through) lives once, in wrapper_support.hpp.

usage: gen_wrappers.py --cc CC --ops OPS_DEF --out WRAPPERS_CPP --coverage COVERAGE_MD [-I DIR]...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# Functions that are not wrapped at all (documented in docs/collector.md):
#  - timers (called in tight loops for measurement; tracing them perturbs what they measure),
#  - functions that do not return an int error code (handle conversions, MPI_Aint arithmetic),
#  - predefined callback functions (MPI_DUP_FN, MPI_NULL_COPY_FN, ...): MPI calls those itself.
EXCLUDED = {"MPI_Wtime", "MPI_Wtick"}
CALLBACK_RE = re.compile(r"^MPI_[A-Z0-9_]+_FN$|^MPI_DUP_FN$")

# What to record, per OpKind (default) and per op (override). Expressions are C++ statements in
# which `r` is the call's Rec (see record_ops.hpp) and the MPI parameter names of MPICH's
# prototypes are in scope. "pre" runs before the PMPI call, "post" after it (only if the call
# returned MPI_SUCCESS; otherwise see Rec::failed).
P2P_SEND = "rec::send(r, count, datatype, dest, tag, comm);"
P2P_RECV = "rec::recv(r, count, datatype, source, tag, comm);"
KIND_RECORD = {
    "BlockingSend": {"post": P2P_SEND},
    "BlockingRecv": {"post": P2P_RECV},
    "NonblockingSend": {"post": P2P_SEND + " rec::new_request(r, request, false);"},
    "NonblockingRecv": {"post": P2P_RECV + " rec::new_request(r, request, false);"},
    "PersistentSend": {"post": P2P_SEND + " rec::new_request(r, request, true);"},
    "PersistentRecv": {"post": P2P_RECV + " rec::new_request(r, request, true);"},
}
OP_RECORD = {
    "Sendrecv": {"post": "rec::send(r, sendcount, sendtype, dest, sendtag, comm); "
                         "rec::recv2(r, recvcount, recvtype, source, recvtag, comm);"},
    "Sendrecv_replace": {"post": "rec::send(r, count, datatype, dest, sendtag, comm); "
                                 "rec::recv2(r, count, datatype, source, recvtag, comm);"},
    "Probe": {"post": "rec::probe(r, source, tag, comm);"},
    "Iprobe": {"post": "rec::probe(r, source, tag, comm); rec::flag(r, flag);"},
    "Start": {"post": "rec::start(r, 1, request);"},
    "Startall": {"post": "rec::start(r, count, array_of_requests);"},
    "Request_free": {"pre": "rec::save_requests(r, 1, request);",
                     "post": "rec::request_free(r);"},
    "Wait": {"pre": "rec::save_requests(r, 1, request);",
             "post": "rec::completed_all(r);"},
    "Waitall": {"pre": "rec::save_requests(r, count, array_of_requests);",
                "post": "rec::completed_all(r);"},
    "Waitany": {"pre": "rec::save_requests(r, count, array_of_requests);",
                "post": "rec::completed_any(r, 1, indx);"},
    "Waitsome": {"pre": "rec::save_requests(r, incount, array_of_requests);",
                 "post": "rec::completed_some(r, outcount, array_of_indices);"},
    "Test": {"pre": "rec::save_requests(r, 1, request);",
             "post": "rec::completed_if(r, flag);"},
    "Testall": {"pre": "rec::save_requests(r, count, array_of_requests);",
                "post": "rec::completed_if(r, flag);"},
    "Testany": {"pre": "rec::save_requests(r, count, array_of_requests);",
                "post": "rec::completed_any(r, flag, indx);"},
    "Testsome": {"pre": "rec::save_requests(r, incount, array_of_requests);",
                 "post": "rec::completed_some(r, outcount, array_of_indices);"},
    "Barrier": {"post": "rec::comm(r, comm);"},
    "Bcast": {"post": "rec::bcast(r, count, datatype, root, comm);"},
    "Reduce": {"post": "rec::reduce(r, count, datatype, op, root, comm);"},
    "Allreduce": {"post": "rec::allreduce(r, count, datatype, op, comm);"},
    "Scan": {"post": "rec::allreduce(r, count, datatype, op, comm);"},
    "Exscan": {"post": "rec::allreduce(r, count, datatype, op, comm);"},
    "Gather": {"post": "rec::gather(r, sendbuf, sendcount, sendtype, recvcount, recvtype, root, comm);"},
    "Scatter": {"post": "rec::scatter(r, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);"},
    "Allgather": {"post": "rec::allgather(r, sendbuf, sendcount, sendtype, recvcount, recvtype, comm);"},
    "Alltoall": {"post": "rec::allgather(r, sendbuf, sendcount, sendtype, recvcount, recvtype, comm);"},
    "Gatherv": {"post": "rec::gatherv(r, sendbuf, sendcount, sendtype, recvcounts, recvtype, root, comm);"},
    "Scatterv": {"post": "rec::scatterv(r, sendcounts, sendtype, recvbuf, recvcount, recvtype, root, comm);"},
    "Allgatherv": {"post": "rec::allgatherv(r, sendbuf, sendcount, sendtype, recvcounts, recvtype, comm);"},
    "Alltoallv": {"post": "rec::alltoallv(r, sendbuf, sendcounts, sendtype, recvcounts, recvtype, comm);"},
    "Alltoallw": {"post": "rec::alltoallw(r, sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, comm);"},
    "Reduce_scatter": {"post": "rec::reduce_scatter(r, recvcounts, datatype, op, comm);"},
    "Reduce_scatter_block": {"post": "rec::reduce_scatter_block(r, recvcount, datatype, op, comm);"},
    "Comm_dup": {"post": "rec::comm(r, comm); rec::new_comm(r, *newcomm);"},
    "Comm_split": {"post": "rec::comm(r, comm); rec::split(r, color, key); rec::new_comm(r, *newcomm);"},
    "Comm_create": {"post": "rec::comm(r, comm); rec::new_comm(r, *newcomm);"},
    "Cart_create": {"post": "rec::comm(r, comm_old); rec::set(r, Field::Count, ndims); "
                            "rec::new_comm(r, *comm_cart);"},
    "Cart_sub": {"post": "rec::comm(r, comm); rec::new_comm(r, *newcomm);"},
    "Comm_free": {"pre": "rec::comm(r, *comm);", "post": "rec::comm_freed(r);"},
}
# Nonblocking collectives record what their blocking form records, plus the new request.
for blocking in ["Barrier", "Bcast", "Reduce", "Allreduce", "Scan", "Exscan", "Gather", "Scatter",
                 "Allgather", "Alltoall", "Gatherv", "Scatterv", "Allgatherv", "Alltoallv",
                 "Alltoallw", "Reduce_scatter", "Reduce_scatter_block"]:
    OP_RECORD["I" + blocking.lower() if False else "I" + blocking[0].lower() + blocking[1:]] = {
        "post": OP_RECORD[blocking]["post"] + " rec::new_request(r, request, false);"}

# Lifecycle ops have their own bodies (they start and finish the recorder).
LIFECYCLE_BODY = {
    "Init": "  return scalatrace::pmpi::wrap_init(scalatrace::Op::Init, [&] {{ return {pmpi}({args}); }},\n"
            "                                     MPI_THREAD_SINGLE, nullptr);\n",
    "Init_thread": "  return scalatrace::pmpi::wrap_init(scalatrace::Op::Init_thread,\n"
                   "      [&] {{ return {pmpi}({args}); }}, required, provided);\n",
    "Finalize": "  scalatrace::pmpi::before_finalize();\n  return {pmpi}({args});\n",
    "Abort": "  scalatrace::pmpi::before_abort(comm, errorcode);\n  return {pmpi}({args});\n",
}


def read_ops(path):
    ops = {}
    for line in open(path):
        m = re.match(r"\s*SCALATRACE_OP\((\w+),\s*(\w+)\)", line)
        if m:
            ops[m.group(1)] = m.group(2)
    return ops


def preprocess(cc, includes):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "mpi_protos.c")
        with open(src, "w") as f:
            f.write("#include <mpi.h>\n")
        cmd = [cc, "-E", "-P", "-DMPICH_SKIP_MPICXX", "-DOMPI_SKIP_MPICXX"]
        cmd += ["-I" + d for d in includes] + [src]
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


DECL_RE = re.compile(
    r"^(?P<ret>[A-Za-z_][\w \*]*?)\s*\b(?P<name>P?MPI_\w+)\s*\((?P<params>[^()]*)\)\s*"
    r"(?P<attrs>(?:__attribute__\s*\(\(.*\)\)\s*)*)$", re.S)


def parse_prototypes(text):
    protos = {}
    for chunk in re.split(r"[;{}]", text):
        chunk = " ".join(chunk.split())
        m = DECL_RE.match(chunk)
        if not m or "typedef" in m.group("ret") or "extern" in m.group("ret").split()[:-1]:
            continue
        ret = m.group("ret").replace("extern ", "").strip()
        protos[m.group("name")] = (ret, m.group("params").strip())
    return protos


def split_params(params):
    if params in ("", "void"):
        return [], False
    parts = [p.strip() for p in params.split(",")]
    variadic = parts[-1] == "..."
    if variadic:
        parts = parts[:-1]
    names = []
    for i, p in enumerate(parts):
        m = re.search(r"(\w+)\s*(\[\s*\w*\s*\])*\s*$", p)
        if not m or len(p.split()) < 2 and "*" not in p:
            raise SystemExit(f"gen_wrappers: cannot name parameter {p!r}")
        names.append(m.group(1))
    return list(zip(parts, names)), variadic


def exported_symbols(libs):
    """Function symbols defined by the given shared libraries, or None if unknown."""
    if not libs:
        return None
    names = set()
    for lib in libs:
        if not lib.endswith((".so",)) and ".so." not in lib:
            continue
        try:
            out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                                 capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TWiV":
                names.add(parts[2])
    return names or None


def imported_pmpi(libs):
    """PMPI_ functions the given libraries call (undefined dynamic symbols)."""
    names = set()
    for lib in libs:
        try:
            out = subprocess.run(["nm", "-D", "--undefined-only", lib], check=True,
                                 capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            continue
        names.update(p.split()[-1] for p in out.splitlines() if p.split()[-1].startswith("PMPI_"))
    return names


def traced_op(name, ops):
    base = name[4:]
    if base in ops:
        return base
    if base.endswith("_c") and base[:-2] in ops:  # MPI-4 large-count variants
        return base[:-2]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", required=True)
    ap.add_argument("--ops", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--coverage", required=True)
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("--fortran-lib", action="append", default=[],
                    help="MPI Fortran library: the PMPI_ functions it calls are interposed")
    ap.add_argument("--lib", action="append", default=[],
                    help="MPI library: only functions it defines (MPI_ and PMPI_) are wrapped")
    a = ap.parse_args()

    ops = read_ops(a.ops)
    protos = parse_prototypes(preprocess(a.cc, a.includes))
    defined = exported_symbols(a.lib)
    fortran_calls = imported_pmpi(a.fortran_lib)
    traced, other, skipped, interposed = [], [], [], []
    out = ["// GENERATED by cpp/pmpi/wrappers/gen_wrappers.py from MPICH's mpi.h and ops.def: do not edit.",
           '#include "wrappers/fortran_bridge.hpp"',
           '#include "wrappers/wrapper_support.hpp"', "",
           "using scalatrace::Field;",
           "namespace rec = scalatrace::pmpi::rec;", "", 'extern "C" {', ""]
    for name in sorted(protos):
        if not name.startswith("MPI_"):
            continue
        ret, params = protos[name]
        if ("P" + name) not in protos:
            skipped.append((name, "no PMPI_ entry point"))
            continue
        if defined is not None and (name not in defined or "P" + name not in defined):
            skipped.append((name, "declared in mpi.h but not defined by the MPI C library"))
            continue
        if name in EXCLUDED:
            skipped.append((name, "timer"))
            continue
        if CALLBACK_RE.match(name):
            skipped.append((name, "predefined callback"))
            continue
        if ret != "int":
            skipped.append((name, f"returns {ret}, not an error code"))
            continue
        plist, variadic = split_params(params)
        decl = ", ".join(p for p, _ in plist) + (", ..." if variadic else "")
        args = ", ".join(n for _, n in plist)
        sig = f"int {name}({decl or 'void'})"
        op = traced_op(name, ops)
        body = []
        pmpi = "P" + name
        if pmpi in fortran_calls and not variadic:
            # mpi_f08 calls this PMPI_ directly: interpose it (see fortran_bridge.hpp)
            interposed.append(name)
            out.append(f"static decltype(&{pmpi}) next_{pmpi}() {{\n"
                       f"  static const auto fn = reinterpret_cast<decltype(&{pmpi})>(\n"
                       f"      scalatrace::pmpi::next_symbol(\"{pmpi}\"));\n"
                       f"  return fn;\n}}\n")
            out.append(f"int {pmpi}({decl or 'void'}) {{\n"
                       f"  if (scalatrace::pmpi::called_from_fortran(__builtin_return_address(0)))\n"
                       f"    return {name}({args});\n"
                       f"  return next_{pmpi}()({args});\n}}\n")
            pmpi = f"next_{pmpi}()"
        if op and ops[op] == "Lifecycle":
            body.append(LIFECYCLE_BODY[op].format(args=args, pmpi=pmpi))
            traced.append((name, op))
        elif op:
            rec = dict(KIND_RECORD.get(ops[op], {}))
            rec.update(OP_RECORD.get(op, {}))
            if "post" not in rec:
                raise SystemExit(f"gen_wrappers: no RECORD entry for traced op {op}")
            body.append(f"  scalatrace::pmpi::Call call(scalatrace::Op::{op}, \"{name}\");\n")
            body.append(f"  if (!call.active()) return {pmpi}({args});\n")
            if "pre" in rec:
                body.append(f"  call.before([&](scalatrace::pmpi::Rec& r) {{ {rec['pre']} }});\n")
            body.append(f"  const int rc = {pmpi}({args});\n")
            body.append(f"  call.after(rc, [&](scalatrace::pmpi::Rec& r) {{ {rec['post']} }});\n")
            body.append("  return rc;\n")
            traced.append((name, op))
        else:
            body.append(f"  scalatrace::pmpi::Call call(scalatrace::Op::Other, \"{name}\");\n")
            body.append(f"  if (!call.active()) return {pmpi}({args});\n")
            body.append(f"  const int rc = {pmpi}({args});\n")
            body.append("  call.after(rc, [](scalatrace::pmpi::Rec&) {});\n")
            body.append("  return rc;\n")
            other.append(name)
        out.append(sig + " {\n" + "".join(body) + "}\n")
    out.append('}  // extern "C"\n')
    with open(a.out, "w") as f:
        f.write("\n".join(out))

    with open(a.coverage, "w") as f:
        f.write("# Functions wrapped by libscalatrace (generated from MPICH's mpi.h)\n\n")
        f.write(f"## Traced with full parameters ({len(traced)})\n\n")
        f.write(", ".join(f"{n}" + (f" (as {o})" if n[4:] != o else "") for n, o in traced))
        f.write(f"\n\n## Counted as Op::Other by name and call site ({len(other)})\n\n")
        f.write(", ".join(other))
        f.write(f"\n\n## Also interposed as PMPI_ for MPICH's mpi_f08 bindings ({len(interposed)})\n\n")
        f.write(", ".join("P" + n for n in interposed))
        f.write(f"\n\n## Not wrapped ({len(skipped)})\n\n")
        f.write("\n".join(f"- {n}: {why}" for n, why in skipped))
        f.write("\n")
    missing = [op for op, kind in ops.items()
               if kind != "Other" and f"MPI_{op}" not in dict(traced)]
    if missing:
        print("gen_wrappers: ops.def ops without an MPI prototype: " + ", ".join(missing),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
