"""coNCePTuaL written per rank and cut at the collectives (issue 33), for traces whose ranks make
the same collectives from different loop structures.

The tree program (``_core.generate_conceptual``) writes one statement per node of the merged
trace, and the coNCePTuaL run time matches a collective only within one statement (it makes a
communicator of the statement's task set). When the ranks' compressed loops differ (LULESH: the
ranks on the faces, edges and corners of the cube), each rank's k-th ``MPI_Allreduce`` lands in
a different node, which Algorithm 2's sibling alignment cannot merge, and the benchmark's
collectives run on partial task sets (it hangs).

Here every rank's events are walked with a cursor and cut at its collectives on
``MPI_COMM_WORLD``; where every rank makes the same sequence of them, the k-th collective of all
ranks is one statement and the calls between two collectives are ``TASK r`` statements per
rank. Consecutive segments that are the same for every rank are one ``FOR n REPETITIONS`` loop.
Waiting follows the tree program's rule (docs/codegen.md, "waiting"): ``AWAIT COMPLETION`` only
after the calls after which the traced run had completed every request the rank had
outstanding. Traces this form does not handle (collectives on other communicators or in a
different order on different ranks, persistent requests, nonblocking collectives, probes,
wildcards) get ``None``: the caller keeps the tree program.
"""

from __future__ import annotations

from . import _core
from ._base import K_ANY, K_PROC_NULL
from ._model import TraceModel

_ISENDS = {"Isend", "Ibsend", "Issend", "Irsend"}
_SENDS = {"Send", "Bsend", "Ssend", "Rsend"}
_COMPLETIONS = {"Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall", "Testany", "Testsome"}
_COLLECTIVES = {"Barrier", "Bcast", "Reduce", "Allreduce"}
#: Calls that write nothing and do not stop the per-rank form: local calls, communicator
#: management (the run time makes its own communicators), the frame.
_IGNORED = {"Other", "Init", "Init_thread", "Finalize", "Comm_free", "Comm_dup", "Comm_split"}


class _Unsupported(Exception):
    """The trace needs the tree program."""


def _items(nbytes: int, notes: list[str], op: str) -> str:
    if nbytes % 8 == 0:
        return f"{nbytes // 8} DOUBLEWORDS"
    if nbytes % 4 == 0:
        return f"{nbytes // 4} INTEGERS"
    notes.append(f"MPI_{op} reduces a size that is no multiple of 4 bytes; rounded up to INTEGERS")
    return f"{(nbytes + 3) // 4} INTEGERS"


class _Rank:
    """One rank's statements, segment by segment, and its collectives."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        #: per segment: (computation before, ns; statement or "") in order
        self.segments: list[list[tuple[float, str]]] = [[]]
        self.collectives: list[tuple] = []
        self.slots: list[str] = []  # per request: "out" (outstanding), "done", "none"
        self.outstanding = 0
        self.compute_ns = 0.0

    def _say(self, text: str) -> None:
        self.segments[-1].append((self.compute_ns, text))
        self.compute_ns = 0.0

    def _peer(self, rel: int) -> int:
        if rel == K_ANY:
            raise _Unsupported("wildcard")
        return self.rank + rel

    def _message(self, kind: str, peer: int, nbytes: int, tag: int, asynchronous: bool) -> str:
        if tag == K_ANY:
            raise _Unsupported("wildcard tag")
        how = " ASYNCHRONOUSLY" if asynchronous else ""
        tagged = f" USING TAG {tag}" if tag else ""
        if kind == "send":
            return (
                f"TASK {self.rank}{how} SEND A {nbytes} BYTE MESSAGE{tagged} "
                f"TO UNSUSPECTING TASK {peer}"
            )
        return f"TASK {self.rank}{how} RECEIVE A {nbytes} BYTE MESSAGE{tagged} FROM TASK {peer}"

    def _complete(self, offsets: list[int], which: list[int] | None) -> None:
        for i, off in enumerate(offsets):
            if which is not None and i not in which:
                continue
            if 1 <= off <= len(self.slots) and self.slots[-off] == "out":
                self.slots[-off] = "done"
                self.outstanding -= 1

    def event(self, e: _core.RecordedEvent) -> None:
        """Adds the statements of one event (raises _Unsupported for what this form lacks)."""
        op, f = e.op, dict(e.fields)
        if f.get("Comm", 0) != 0 and op not in _IGNORED and op not in _COMPLETIONS:
            raise _Unsupported(f"MPI_{op} on a communicator other than MPI_COMM_WORLD")
        self.compute_ns += e.compute_ns
        if op in _ISENDS or op == "Irecv":
            if f["Peer"] == K_PROC_NULL:
                self.slots.append("none")
                return
            kind = "recv" if op == "Irecv" else "send"
            self.slots.append("out")
            self.outstanding += 1
            self._say(self._message(kind, self._peer(f["Peer"]), f["Bytes"], f["Tag"], True))
        elif op in _SENDS or op == "Recv":
            if f["Peer"] != K_PROC_NULL:
                kind = "recv" if op == "Recv" else "send"
                self._say(self._message(kind, self._peer(f["Peer"]), f["Bytes"], f["Tag"], False))
        elif op in ("Sendrecv", "Sendrecv_replace"):
            parts = []
            if f["Peer"] != K_PROC_NULL:
                parts.append(
                    self._message("send", self._peer(f["Peer"]), f["Bytes"], f["Tag"], True)
                )
            if f["Peer2"] != K_PROC_NULL:
                parts.append(
                    self._message("recv", self._peer(f["Peer2"]), f["Bytes2"], f["Tag2"], True)
                )
            if parts and self.outstanding == 0:  # else awaited with the others, later
                parts.append(f"TASK {self.rank} AWAIT COMPLETION")
            for p in parts:
                self._say(p)
        elif op in _COMPLETIONS:
            arrays = dict(e.arrays)
            offsets = list(arrays.get("Requests", []))
            before = self.outstanding
            if op in ("Wait", "Waitall") or (op in ("Test", "Testall") and f["Flag"]):
                self._complete(offsets, None)
            elif op == "Waitany" or (op == "Testany" and f["Flag"]):
                self._complete(offsets, [f["Index"]])
            elif op in ("Waitsome", "Testsome"):
                self._complete(offsets, list(arrays.get("Indices", [])))
            self._say(
                f"TASK {self.rank} AWAIT COMPLETION" if before > 0 and self.outstanding == 0 else ""
            )
        elif op in _COLLECTIVES:
            self._say("")
            self.collectives.append((op, f.get("Bytes", 0), f.get("Root", 0)))
            self.segments.append([])
        elif op not in _IGNORED:
            raise _Unsupported(f"MPI_{op}")


def _collective(op: str, nbytes: int, root: int, notes: list[str]) -> str:
    if op == "Barrier":
        return "ALL TASKS SYNCHRONIZE"
    if op == "Bcast":
        return f"TASK {root} MULTICASTS A {nbytes} BYTE MESSAGE TO ALL OTHER TASKS"
    if op == "Reduce":
        return f"ALL TASKS t REDUCE {_items(nbytes, notes, op)} TO TASK {root}"
    return f"ALL TASKS t REDUCE {_items(nbytes, notes, op)} TO TASKS u SUCH THAT u >= 0"


def per_rank_program(
    trace: TraceModel, computation: bool = True, min_compute_ns: int = 500
) -> str | None:
    """The per-rank form of the benchmark (module docstring), or None where it does not apply.

    Parameters
    ----------
    trace : Trace
        The traced run.
    computation, min_compute_ns
        As for :func:`scalatrace.codegen.to_conceptual`: write ``COMPUTE FOR`` statements for
        the computation before calls of at least ``min_compute_ns``.

    Returns
    -------
    str or None
        The program, or None for traces this form does not handle.
    """
    nranks = trace.nranks
    ranks = [_Rank(r) for r in range(nranks)]
    try:
        for rk in ranks:
            for e in trace.events(rk.rank, timing="mean"):
                rk.event(e)
    except _Unsupported:
        return None
    first = ranks[0].collectives
    if not first or any(rk.collectives != first for rk in ranks):
        return None  # different collectives per rank: no statement can hold the k-th of all
    notes: list[str] = [
        "the ranks make their collectives from different loop structures, which one statement per "
        "node of the merged trace cannot align; the program is written per rank (TASK r "
        "statements) between collectives on MPI_COMM_WORLD, the k-th collective of every rank "
        "being one statement"
    ]
    # block k: every rank's statements before collective k (the last block: after the last);
    # its shape is the statements without the computation
    blocks: list[tuple[tuple, list[float]]] = []
    for k in range(len(first) + 1):
        entries = [(rk.rank, text, ns) for rk in ranks for ns, text in rk.segments[k]]
        coll = _collective(*first[k], notes) if k < len(first) else None
        shape = (tuple((r, text) for r, text, _ in entries), coll)
        blocks.append((shape, [ns for _, _, ns in entries]))
    lines: list[str] = []

    def write(shape: tuple, computes: list[float], indent: str) -> None:
        body, coll = shape
        for (rank, text), ns in zip(body, computes, strict=True):
            us = round(ns / 1000)
            if computation and ns >= min_compute_ns and us > 0:
                lines.append(f"{indent}TASK {rank} COMPUTE FOR {us} MICROSECONDS then")
            if text:
                lines.append(f"{indent}{text} then")
        if coll:
            lines.append(f"{indent}{coll} then")

    k = 0
    while k < len(blocks):
        n = 1  # consecutive blocks of the same shape: one loop, each computation its mean
        while k + n < len(blocks) and blocks[k + n][0] == blocks[k][0]:
            n += 1
        if n == 1:
            write(*blocks[k], "")
        else:
            means = [sum(c) / n for c in zip(*(b[1] for b in blocks[k : k + n]), strict=True)]
            if any(b[1] != blocks[k][1] for b in blocks[k : k + n]):
                notes.append(
                    "the computation before a call in repeated segments (written once, as a loop) "
                    "is its mean over the repetitions"
                )
            lines.append(f"FOR {n} REPETITIONS {{")
            write(blocks[k][0], means, "  ")
            if lines[-1].endswith(" then"):
                lines[-1] = lines[-1][: -len(" then")]
            lines.append("} then")
        k += n
    program = trace.metadata.get("program", "")
    name = program.rsplit("/", 1)[-1]
    head = [
        f"# coNCePTuaL benchmark generated by scalatrace from a trace of {nranks} tasks"
        + (f" ({name})." if name else "."),
        'Require language version "1.5".',
        f'Assert that "this benchmark reproduces a {nranks}-task run" with num_tasks = {nranks}.',
    ]
    head += [f"# note: {n}" for n in dict.fromkeys(notes)]
    head += ["All tasks synchronize then", "all tasks reset their counters then"]
    tail = [
        "all tasks await completion then",
        "all tasks synchronize then",
        'task 0 logs elapsed_usecs as "Elapsed time (us)" and bytes_sent as "Bytes sent by task 0".',
    ]
    return "\n".join(head + lines + tail) + "\n"
