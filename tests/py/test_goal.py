"""GOAL export (issue 34): the file parses as LogGOPSim's grammar (a reader of our own: labels,
operations, dependencies), every send has its receive, and a small evaluator of the schedule's
dependencies predicts the same time as ``scalatrace.simulate`` where the two LogGP variants
coincide (no overheads, no byte costs, eager messages). LogGOPSim itself is compared in
``benchmarks/loggopsim_compare.py`` (BENCHMARKS.md)."""

from __future__ import annotations

import heapq
import re
import subprocess
from collections import defaultdict, deque
from pathlib import Path

import helpers
import pytest

import scalatrace
from scalatrace.errors import SimulationParameterError
from scalatrace.goal import to_goal

_OP = re.compile(
    r"^(?P<label>[a-zA-Z][a-zA-Z0-9_]*): (?:(?P<calc>calc) (?P<ns>\d+)|"
    r"(?P<kind>send|recv) (?P<size>\d+)b (?:to|from) (?P<peer>-1|\d+) tag (?P<tag>-1|\d+))$"
)
_DEP = re.compile(
    r"^(?P<a>[a-zA-Z][a-zA-Z0-9_]*) (?P<how>requires|irequires) (?P<b>[a-zA-Z][a-zA-Z0-9_]*)$"
)


def parse_goal(text: str) -> list[list[dict]]:
    """The operations of every rank, in file order, with their dependencies; asserts the
    grammar (LogGOPSim's txt2bin) and that dependencies name earlier labels of the rank."""
    lines = iter(text.splitlines())
    header = next(lines)
    m = re.fullmatch(r"num_ranks (\d+)", header)
    assert m, header
    nranks = int(m.group(1))
    ranks: list[list[dict]] = []
    current: list[dict] | None = None
    by_label: dict[str, dict] = {}
    for line in lines:
        if not line.strip():
            continue
        if (m := re.fullmatch(r"rank (\d+) \{", line)) is not None:
            assert current is None and int(m.group(1)) == len(ranks), line
            current, by_label = [], {}
            continue
        if line == "}":
            assert current is not None
            ranks.append(current)
            current = None
            continue
        assert current is not None, line
        if (m := _OP.match(line)) is not None:
            assert m["label"] not in by_label, f"label {m['label']} defined twice"
            op = {
                "label": m["label"],
                "kind": "calc" if m["calc"] else m["kind"],
                "size": int(m["ns"] or m["size"]),
                "peer": int(m["peer"]) if m["peer"] else None,
                "tag": int(m["tag"]) if m["tag"] else None,
                "requires": [],
                "irequires": [],
            }
            current.append(op)
            by_label[op["label"]] = op
        elif (m := _DEP.match(line)) is not None:
            assert m["a"] in by_label and m["b"] in by_label, f"unknown label in {line!r}"
            assert by_label[m["b"]] is not by_label[m["a"]]
            by_label[m["a"]][m["how"]].append(by_label[m["b"]])
        else:
            raise AssertionError(f"not GOAL: {line!r}")
    assert current is None and len(ranks) == nranks
    return ranks


def evaluate(
    ranks: list[list[dict]], latency_ns: float, gap_ns: float = 0.0, byte_ns: float = 0.0
) -> float:
    """End of the schedule under this simulator's LogGP with L, g and G (o = O = 0, eager),
    every rank's operations taken in global time order (the reference for the simulator, whose
    engine handles ranks in no such order): an operation is ready when its ``requires`` have
    ended and its ``irequires`` have started, and the ready operations are taken earliest first
    (ties in rank and file order). A calc holds the rank's CPU for its length. A send of k bytes
    is started (for ``irequires``) when ready; its message leaves when the rank's NIC is free
    (start = max(ready, NIC free), where the send ends), the NIC is then busy for max(g,
    (k-1)G), and the message arrives (k-1)G + L after it left. A receive ends at the later of
    its start and its message's arrival (messages of one (source, tag) matched to receives in
    the order each was taken)."""
    ops = [op for r_ops in ranks for op in r_ops]
    for r, r_ops in enumerate(ranks):
        for i, op in enumerate(r_ops):
            op["rank"], op["index"] = r, i
            op["ready"], op["waiting"] = 0.0, len(op["requires"]) + len(op["irequires"])
            op["after_end"], op["after_start"] = [], []
    for op in ops:
        for d in op["requires"]:
            d["after_end"].append(op)
        for d in op["irequires"]:
            d["after_start"].append(op)
    heap = [(0.0, op["rank"], op["index"]) for op in ops if op["waiting"] == 0]
    heapq.heapify(heap)

    def settle(op: dict, key: str, value: float) -> None:
        op[key] = value  # never earlier than the operation being taken: the order holds
        for later in op["after_end" if key == "end" else "after_start"]:
            later["ready"] = max(later["ready"], value)
            later["waiting"] -= 1
            if later["waiting"] == 0:
                heapq.heappush(heap, (later["ready"], later["rank"], later["index"]))

    cpu = [0.0] * len(ranks)
    nic = [0.0] * len(ranks)
    in_flight: dict[tuple[int, int, int], deque] = defaultdict(deque)
    posted: dict[tuple[int, int, int], deque] = defaultdict(deque)
    done = 0
    while heap:
        t, r, i = heapq.heappop(heap)
        op = ranks[r][i]
        done += 1
        if op["kind"] == "calc":
            start = max(t, cpu[r]) if op["size"] else t
            cpu[r] = max(cpu[r], start + op["size"])
            settle(op, "start", start)
            settle(op, "end", start + op["size"])
        elif op["kind"] == "send":
            body = max(op["size"] - 1, 0) * byte_ns  # the simulator's byte_time: none below 2 B
            leaves = max(t, nic[r])
            nic[r] = max(nic[r], leaves + max(gap_ns, body))
            settle(op, "start", t)
            settle(op, "end", leaves)
            channel = (r, op["peer"], op["tag"])
            message = (leaves + body + latency_ns, op["size"])
            if posted[channel]:
                recv = posted[channel].popleft()
                assert recv["size"] == op["size"], (
                    f"rank {op['peer']}: receives {recv['size']} B, sent {op['size']} B"
                )
                settle(recv, "end", max(recv["start"], message[0]))
            else:
                in_flight[channel].append(message)
        else:
            assert op["peer"] >= 0, "the evaluator matches no wildcard receive"
            settle(op, "start", t)
            channel = (op["peer"], r, op["tag"])
            if in_flight[channel]:
                arrival, size = in_flight[channel].popleft()
                assert size == op["size"], f"rank {r}: receives {op['size']} B, sent {size} B"
                settle(op, "end", max(t, arrival))
            else:
                posted[channel].append(op)
    assert done == len(ops) and all("end" in op for op in ops), (
        "operations never ran (deadlock in the schedule)"
    )
    assert not any(in_flight.values()), "messages sent but never received"
    return max((op["end"] for op in ops), default=0.0)


def check_same_time(trace: scalatrace.Trace, path: Path, g: float = 0.0, G: float = 0.0) -> dict:
    """The simulator and the export evaluated in time order agree (L = 1 us, gap `g` and
    per-byte `G` in seconds, no overheads, eager)."""
    export = to_goal(trace, path)
    ranks = parse_goal(path.read_text())
    sends = sum(op["kind"] == "send" for ops in ranks for op in ops)
    assert sends == export.operations.get("send", 0) and sends > 0
    L = 1e-6
    net = scalatrace.LogGP(L=L, o_s=0, o_r=0, g=g, G=G)
    sim = scalatrace.simulate(trace, network=net, recorded_local_calls=False, eager_threshold=1e12)
    expected = evaluate(ranks, L * 1e9, g * 1e9, G * 1e9)
    assert sim.total_time * 1e9 == pytest.approx(expected, rel=1e-9)
    return {"ranks": ranks, "export": export, "sim": sim}


def test_goal_of_a_harness_stencil_parses_and_predicts_the_simulated_time(tmp_path):
    sct = tmp_path / "s.sct"
    subprocess.run(
        [str(helpers.tool_path("scalatrace-harness")), "--pattern", "stencil2d", "--ranks", "16",
         "--timesteps", "3", "--wrap", "-o", str(sct)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    out = check_same_time(scalatrace.load(sct), tmp_path / "s.goal")
    assert out["export"].nranks == 16 and out["export"].decomposed > 0  # its allreduce
    # With the NIC's gap and byte time (the harness's messages are 8 KB):
    check_same_time(scalatrace.load(sct), tmp_path / "s.goal", g=3e-7, G=1e-10)


def test_goal_of_real_stencil_runs(stencil_traces, tmp_path):
    check_same_time(stencil_traces["small"], tmp_path / "small.goal")


@pytest.mark.parametrize("name", ["collectives", "nonblocking_coll", "persistent", "comm_split"])
def test_goal_of_collectives_nonblocking_and_persistent_requests(name, tmp_path):
    argv = [str(helpers.example_path(name)), "-i", "3", "-c", "5"]
    t = scalatrace.trace(argv, np=4, out=tmp_path / f"{name}.sct", timeout=120)
    check_same_time(t, tmp_path / f"{name}.goal")


def test_goal_cli_and_method(stencil_traces, tmp_path, capsys):
    from scalatrace.cli import main

    path = tmp_path / "cli.goal"
    assert main(["goal", str(stencil_traces["small"].path), "-o", str(path)]) == 0
    assert "wrote" in capsys.readouterr().out
    method = stencil_traces["small"].to_goal(tmp_path / "method.goal")
    assert path.read_text() == method.path.read_text()
    with pytest.raises(SimulationParameterError):
        to_goal(stencil_traces["small"], tmp_path / "x.goal", timing="median")  # type: ignore[arg-type]


def test_goal_of_sends_the_simulator_handles_out_of_time_order(tmp_path):
    """tests/py/data/nonblocking_coll_rank0_late.sct: examples/nonblocking_coll at 4 ranks
    (``-i 3 -c 5``), traced on a loaded machine. Rank 3 posts an Igather's receive and an Iscan
    at the same time; the Igather's next send, 1 L later, was handled first and held the Iscan's
    first send back by its start although neither takes NIC time (g = G = 0): the simulator
    predicted 1 L more than the GOAL schedule (32 against 31 us without computation, 98,889,833
    against 98,889,670 ns with it). Both must agree, with and without the recorded computation."""
    trace = scalatrace.load(
        Path(__file__).resolve().parent / "data" / "nonblocking_coll_rank0_late.sct"
    )
    check_same_time(trace, tmp_path / "mean.goal")
    to_goal(trace, tmp_path / "none.goal", timing="none")
    ranks = parse_goal((tmp_path / "none.goal").read_text())
    net = scalatrace.LogGP(L=1e-6, o_s=0, o_r=0, g=0, G=0)
    sim = scalatrace.simulate(
        trace, network=net, recorded_local_calls=False, eager_threshold=1e12, timing="none"
    )
    assert evaluate(ranks, 1e3) == pytest.approx(sim.total_time * 1e9, rel=1e-9) == 31000.0


@pytest.mark.parametrize(("g", "G"), [(3e-7, 0.0), (1e-6, 0.0), (0.0, 1e-9), (1e-6, 1e-9)])
def test_goal_of_sends_the_simulator_handles_out_of_time_order_with_nic_time(g, G, tmp_path):
    """The same trace with the NIC's gap g and byte time G (its messages take the NIC for
    max(g, (k-1)G)): rank 3's Igather step, handled first, held the NIC until its end, so its
    Iscan's send, ready earlier while the NIC was free, started after it; the simulator
    predicted 463, 2,163, 416 and 2,353 ns more than the GOAL schedule taken in time order."""
    trace = scalatrace.load(
        Path(__file__).resolve().parent / "data" / "nonblocking_coll_rank0_late.sct"
    )
    out = check_same_time(trace, tmp_path / "mean.goal", g=g, G=G)
    assert out["sim"].total_time > 98889670e-9  # the NIC's time shows
