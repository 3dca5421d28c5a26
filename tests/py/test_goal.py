"""GOAL export (issue 34): the file parses as LogGOPSim's grammar (a reader of our own: labels,
operations, dependencies), every send has its receive, and a small evaluator of the schedule's
dependencies predicts the same time as ``scalatrace.simulate`` where the two LogGP variants
coincide (no overheads, no byte costs, eager messages). LogGOPSim itself is compared in
``benchmarks/loggopsim_compare.py`` (BENCHMARKS.md)."""

from __future__ import annotations

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


def evaluate(ranks: list[list[dict]], latency_ns: float) -> float:
    """End of the schedule under LogGP with L only (o = g = G = 0, eager): an operation starts
    when its ``requires`` have ended and its ``irequires`` have started; a calc holds the rank's
    CPU for its length; a send ends at its start and its message arrives L later; a receive ends
    at the later of its start and its message's arrival (messages of one (source, tag) matched
    to receives in the order they were posted)."""
    in_flight: dict[tuple[int, int, int], deque] = defaultdict(deque)
    cpu = [0.0] * len(ranks)
    pending = sum(len(ops) for ops in ranks)
    progress = True
    while pending and progress:
        progress = False
        for r, ops in enumerate(ranks):
            for op in ops:
                if "start" not in op:
                    if any("end" not in d for d in op["requires"]) or any(
                        "start" not in d for d in op["irequires"]
                    ):
                        continue
                    start = max(
                        [d["end"] for d in op["requires"]]
                        + [d["start"] for d in op["irequires"]]
                        + [0.0]
                    )
                    progress = True
                    if op["kind"] == "calc":
                        if op["size"]:
                            start = max(start, cpu[r])
                            cpu[r] = start + op["size"]
                        op["start"], op["end"] = start, start + op["size"]
                        pending -= 1
                    elif op["kind"] == "send":
                        op["start"] = op["end"] = start
                        in_flight[(r, op["peer"], op["tag"])].append(
                            (start + latency_ns, op["size"])
                        )
                        pending -= 1
                    else:
                        assert op["peer"] >= 0, "the evaluator matches no wildcard receive"
                        op["start"] = start
                if op["kind"] == "recv" and "start" in op and "end" not in op:
                    queue = in_flight[(op["peer"], r, op["tag"])]
                    if queue:
                        arrival, size = queue.popleft()
                        assert size == op["size"], (
                            f"rank {r}: receives {op['size']} B, sent {size} B"
                        )
                        op["end"] = max(op["start"], arrival)
                        pending -= 1
                        progress = True
    assert pending == 0, f"{pending} operations never ran (deadlock in the schedule)"
    assert not any(in_flight.values()), "messages sent but never received"
    return max((op["end"] for ops in ranks for op in ops), default=0.0)


def check_same_time(trace: scalatrace.Trace, path: Path) -> dict:
    export = to_goal(trace, path)
    ranks = parse_goal(path.read_text())
    sends = sum(op["kind"] == "send" for ops in ranks for op in ops)
    assert sends == export.operations.get("send", 0) and sends > 0
    L = 1e-6
    net = scalatrace.LogGP(L=L, o_s=0, o_r=0, g=0, G=0)
    sim = scalatrace.simulate(trace, network=net, recorded_local_calls=False, eager_threshold=1e12)
    assert evaluate(ranks, L * 1e9) == pytest.approx(sim.total_time * 1e9, rel=1e-9)
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
