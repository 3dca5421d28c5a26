"""One routine reached through several call paths (issue 30, item 2): event nodes match by op and
the innermost frame of their call site (``SCALATRACE_SITE_MATCH``, default 1), in the
compressor and in the cross-rank merge, and every event keeps its exact call site.

tests/py/programs/call_paths.c calls one exchange routine (Irecv, Irecv, Isend, Isend,
Waitall) from six call paths of a V-cycle inside a timestep loop, like NPB MG's comm3. It runs
under the collector (real mpiexec, 3 ranks) with the default settings, with
``SCALATRACE_STACK_DEPTH=1`` (one frame per site: the paths are lost, the tree is the smallest)
and with ``SCALATRACE_SITE_MATCH=0`` (whole stacks must match, the old rule). Each run is
compared with its raw recording on every rank (``scalatrace-dump check``: sites by frames), and
the default trace must have the one-frame trace's tree, as many bytes (without the call-site
table, a small margin for the per-occurrence sites) and far fewer than with whole-stack
matching.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import helpers
import pytest
from test_collector import compile_program

import scalatrace

RANKS = 3
STEPS = 4
# restrict_down -> residual, restrict_down, and the V-cycle's smooth(0), interpolate, residual, smooth
PATHS = 6
EXCHANGE_OPS = ("Irecv", "Isend", "Waitall")


def traced(tmp_path: Path, exe: Path, name: str, **settings) -> tuple[scalatrace.Trace, Path]:
    """The run's merged trace (checked lossless against its raw streams) and raw directory."""
    raw, out = tmp_path / f"raw-{name}", tmp_path / f"{name}.sct"
    env = helpers.collector_env(raw=raw, out=out, quiet=1, **settings)
    helpers.run_mpi(RANKS, [exe, str(STEPS)], env=env, timeout=120, cwd=tmp_path)
    verdict = json.loads(helpers.run_tool("scalatrace-dump", ["check", raw, out]).stdout)
    assert verdict["ok"] and verdict["ranks"] == RANKS, verdict
    return scalatrace.load(out), raw


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[scalatrace.Trace, Path]]:
    tmp_path = tmp_path_factory.mktemp("call_paths")
    exe = compile_program("call_paths", tmp_path)
    return {
        "default": traced(tmp_path, exe, "default"),
        "one_frame": traced(tmp_path, exe, "one_frame", stack_depth=1),
        "whole_stack": traced(tmp_path, exe, "whole_stack", site_match=0),
    }


def raw_sites(raw_dir: Path) -> list[list[tuple[str, tuple]]]:
    """Per rank: (op, frames as (module path, offset)) of every recorded event."""
    out = []
    for rank in helpers.dump_raw(raw_dir)["ranks"]:
        modules = rank["modules"]
        frames = [tuple((modules[m], off) for m, off in s["frames"]) for s in rank["sites"]]
        out.append([(e["op"], frames[e["site"]]) for e in rank["events"]])
    return out


def test_every_event_keeps_its_exact_call_site(runs):
    trace, raw = runs["default"]
    assert trace.metadata["setting.SCALATRACE_SITE_MATCH"] == "1"
    table = [tuple(tuple(f) for f in s.frames) for s in trace.call_sites]
    for rank, recorded in enumerate(raw_sites(raw)):
        events = [(e.op, table[e.site]) for e in trace.events(rank, timing="none")]
        assert events == recorded, f"rank {rank}"
        # the exchange's Isend statements: one per direction, each reached through every path
        isend_sites = {frames for op, frames in recorded if op == "Isend"}
        assert len(isend_sites) == 2 * PATHS
        assert len({frames[0] for frames in isend_sites}) == 2


def test_paths_of_one_statement_share_a_node(runs):
    trace, _ = runs["default"]
    exchange_nodes = [
        n for n in trace.walk() if isinstance(n, scalatrace.Event) and n.op in EXCHANGE_OPS
    ]
    assert len(exchange_nodes) == 5  # Irecv, Irecv, Isend, Isend, Waitall
    for node in exchange_nodes:
        assert len(node.sites) == PATHS, node
        assert len({trace.call_sites[s].frames[0] for s in node.sites}) == 1
        # found by any of its sites
        assert [n.sites for n in trace.find(op=node.op, site=node.sites[-1])].count(node.sites) == 1


def _uv(n: int) -> int:
    """Bytes of an unsigned LEB128 varint."""
    return max(1, (n.bit_length() + 6) // 7)


def call_site_list_bytes(trace: scalatrace.Trace) -> int:
    """The call-site table as the plain list of docs/format.md (format 7: per site its frames
    and two strings), an upper bound of what a deduplicating encoding takes."""
    total = 0
    for site in trace.call_sites:
        symbol, location = site.symbol.encode(), site.location.encode()
        total += _uv(len(site.frames)) + sum(1 + _uv(offset) for _, offset in site.frames)
        total += _uv(len(symbol)) + len(symbol) + _uv(len(location)) + len(location)
    return total


def test_as_small_as_one_frame_and_much_smaller_than_whole_stacks(runs):
    default, one_frame, whole = (runs[k][0] for k in ("default", "one_frame", "whole_stack"))
    # the tree of one frame per site (the paths are lost there), far fewer nodes than whole stacks
    assert default.node_count == one_frame.node_count
    assert whole.node_count >= 3 * default.node_count, (whole.node_count, default.node_count)
    # Bytes without the call-site table, which differs between the runs (16 frames and six
    # sites per statement, or one): the per-occurrence sites of the five exchange nodes are all
    # the default trace adds to the one-frame tree, and whole stacks take twice as much.
    tree = {k: t.structure_bytes - call_site_list_bytes(t) for k, (t, _) in runs.items()}
    assert tree["default"] <= tree["one_frame"] + 5 * 32, tree
    assert tree["default"] <= 0.6 * tree["whole_stack"], tree


def test_summary_counts_each_call_under_its_own_site(runs):
    trace, raw = runs["default"]
    table = [tuple(tuple(f) for f in s.frames) for s in trace.call_sites]
    expected: collections.Counter = collections.Counter()
    for recorded in raw_sites(raw):
        expected.update(recorded)
    rows = trace.summary(by="site")
    got = collections.Counter(
        {
            (op, table[site]): calls
            for op, site, calls in zip(rows["op"], rows["site"], rows["calls"])
        }
    )
    for key, calls in expected.items():
        if key[0] in EXCHANGE_OPS:
            assert got[key] == calls, key
    assert sum(got[k] for k in got if k[0] in EXCHANGE_OPS) == sum(
        c for k, c in expected.items() if k[0] in EXCHANGE_OPS
    )


def test_offline_compression_matches_the_collector(runs):
    trace, raw = runs["default"]
    recording = scalatrace.read_raw(raw)
    assert recording.compress().node_count == trace.node_count
    assert recording.compress(site_match=0).node_count == runs["whole_stack"][0].node_count
