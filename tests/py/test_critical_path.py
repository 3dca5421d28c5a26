"""The critical path (scalatrace.views.critical_path, issue 37) of a real 4-rank pipeline whose
path is known: rank 2 computes 20x longer than the others, so the path is rank 0's first step,
rank 1's first step, every step of rank 2, rank 3's tail and the closing Barrier."""

from __future__ import annotations

import matplotlib
import pytest
from test_collector import compile_program

import scalatrace
from scalatrace import plot, views

matplotlib.use("Agg")

ITERATIONS = 5
SLOW = 2
# 10 ms per stage (the slow rank 200 ms, the tail 50 ms): above the milliseconds by which a
# rank of 4 on 2 cores can start its first receive late, which would move the path's start.
UNIT_US = 10000


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("critical")
    exe = compile_program("critical_pipeline", tmp)
    t = scalatrace.trace(
        [str(exe), str(ITERATIONS), str(SLOW), str(UNIT_US)],
        np=4,
        out=tmp / "cp.sct",
        raw=True,
        timeout=120,
    )
    return t, scalatrace.read_raw(t.raw_dir)


def _rank_order(path) -> list[int]:
    ranks = path["rank"].tolist()
    return [r for i, r in enumerate(ranks) if i == 0 or r != ranks[i - 1]]


@pytest.mark.parametrize("which", ["raw", "trace"])
def test_the_path_runs_through_the_slow_rank(run, which):
    t, raw = run
    source = raw if which == "raw" else t
    path = views.critical_path(source)
    assert path.attrs["exact"] == (which == "raw")
    frame = source.to_dataframe()
    # Every row names a real event of its rank: the same op at that (rank, event) of the frame.
    for rank, event, op in path[["rank", "event", "op"]].itertuples(index=False):
        assert str(frame.loc[(rank, event), "op"]) == op
    # Ranks 0 > 1 > 2 > 3, then the Barrier's release on whichever rank ends last.
    order = _rank_order(path)
    assert order[:4] == [0, 1, SLOW, 3], order
    assert path.iloc[0]["rank"] == 0 and path.iloc[0]["via"] == "start"
    # Rank 0 and rank 1: only their first step (compute, then the send the next rank waited for).
    for r in (0, 1):
        ops = path[path["rank"] == r]["op"].tolist()
        assert ops.count("Send") == 1, (r, ops)
    # The slow rank: every one of its steps (its computation before each Send) is on the path.
    slow = path[path["rank"] == SLOW]
    sends = slow[slow["op"] == "Send"]
    assert len(sends) == ITERATIONS and (sends["compute_ns"] > 0).all()
    # Rank 3 waits for the slow rank's last message, computes its tail, and enters the Barrier
    # last: the Barrier releases the run's end from rank 3.
    hops = path[path["via"] != "program"].iloc[1:]
    assert hops.iloc[0][["rank", "via", "from_rank"]].tolist() == [1, "message", 0]
    assert hops.iloc[1][["rank", "via", "from_rank"]].tolist() == [SLOW, "message", 1]
    assert hops.iloc[2][["rank", "via", "from_rank"]].tolist() == [3, "message", SLOW]
    if len(hops) > 3:
        assert len(hops) == 4 and hops.iloc[3][["op", "via", "from_rank"]].tolist() == [
            "Barrier",
            "collective",
            3,
        ]
    tail = path[(path["rank"] == 3) & (path["op"] == "Barrier")]
    assert len(tail) == 1 and tail.iloc[0]["compute_ns"] > 0
    # The path's pieces add up to the replayed run's end, the latest rank end.
    total = int(path[["compute_ns", "call_ns", "message_ns"]].to_numpy().sum())
    assert abs(total - path.attrs["length_ns"]) <= len(path)
    assert path.attrs["length_ns"] == max(path.attrs["rank_end_ns"].values())
    assert path["end_ns"].is_monotonic_increasing


def test_message_costs_lengthen_the_path(run):
    _, raw = run
    free = views.critical_path(raw)
    costly = views.critical_path(raw, latency_ns=1e6)
    hops = int((costly["via"] == "message").sum())
    assert hops >= 3 and costly["message_ns"].sum() == hops * 1_000_000
    assert costly.attrs["length_ns"] >= free.attrs["length_ns"] + 3_000_000 - len(costly)


def test_plot_and_bad_sources(run):
    import matplotlib.pyplot as plt

    t, raw = run
    fig, ax = plt.subplots()
    plot.critical_path(raw, ax=ax)
    assert "critical path (measured)" in ax.get_title() and "ranks 0 > 1 > 2 > 3" in ax.get_title()
    assert ax.get_xlabel() and ax.get_ylabel()
    assert ax.get_legend().get_bbox_to_anchor().x0 >= ax.get_window_extent().x1 - 1
    plt.close(fig)
    assert raw._repr_html_().startswith("<b>RawRecording</b> of <code>")
    with pytest.raises(scalatrace.UsageError, match="not a frame"):
        views.critical_path(raw.to_dataframe())
    with pytest.raises(scalatrace.UsageError, match="latency_ns"):
        views.critical_path(raw, latency_ns=-1)
    with pytest.raises(scalatrace.ScalatraceError, match="max_events"):
        views.critical_path(raw, max_events=10)
