"""Clustering ranks by behaviour, on real mpiexec runs of examples whose behaviour classes are
known from their code, and the collector's SCALATRACE_CLUSTERS mode against raw ground truth.

Known classes (from the examples' sources):
- stencil2d on a 3x3 grid: corners (3 neighbours), edges (5), interior (8);
- rank_divergent on 5 ranks: even ranks with N = ITER exchanges ({0, 4}: rank 4 talks to
  MPI_PROC_NULL but makes the same calls), odd rank 1 (N = ITER), even rank 2 and odd rank 3
  (N = ITER + 1);
- comm_split on 6 ranks: even ranks hold the even-ranks communicator (Reduce + Comm_free), odd
  ranks do not; within those, the row/column split colors tell every rank apart.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import helpers
import numpy as np
import pytest

import scalatrace
from scalatrace import plot

ITERS = ["-i", "3"]

KNOWN_CLASSES = {
    "stencil2d": (9, [{0, 2, 6, 8}, {1, 3, 5, 7}, {4}]),
    "rank_divergent": (5, [{0, 4}, {1}, {2}, {3}]),
    "comm_split": (6, [{0, 2, 4}, {1, 3, 5}]),
}


def partition(labels: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels)}


def trace_example(
    name: str, n: int, out_dir: Path, raw: bool = False, **settings
) -> tuple[scalatrace.Trace, str]:
    out = out_dir / f"{name}.sct"
    env = helpers.collector_env(raw=out_dir / "raw" if raw else None, out=out, quiet=1, **settings)
    proc = helpers.run_mpi(
        n, [helpers.example_path(name), *ITERS], env=env, timeout=120, cwd=out_dir
    )
    return scalatrace.load(out), proc.stderr


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, scalatrace.Trace]:
    out = {}
    for name, (n, _) in KNOWN_CLASSES.items():
        d = tmp_path_factory.mktemp(name)
        out[name] = trace_example(name, n, d)[0]
    return out


@pytest.mark.parametrize("name", sorted(KNOWN_CLASSES))
@pytest.mark.parametrize("method", ["kfarthest", "hierarchical"])
def test_call_path_clusters_are_the_known_behaviour_classes(traces, name, method):
    n, classes = KNOWN_CLASSES[name]
    t = traces[name]
    k = None if method == "kfarthest" else len(classes)  # K-farthest never splits equal signatures
    c = t.clusters(k=k, method=method, features=["call_path"])
    assert partition(c.labels) == {frozenset(x) for x in classes}
    assert c.k == len(classes) and len(c.labels) == n
    for cluster, rep in enumerate(c.representatives):
        assert c.labels[rep] == cluster


def test_stencil_k3_without_peer_sets_gives_corners_edges_interior(traces):
    no_peers = [f for f in scalatrace.clustering.SIGNATURE_FEATURES if f != "peers"]
    c = traces["stencil2d"].clusters(k=3, features=no_peers)
    assert partition(c.labels) == {frozenset({0, 2, 6, 8}), frozenset({1, 3, 5, 7}), frozenset({4})}
    assert c.features == tuple(no_peers)
    # k=3 asked, 3 given (issue 37), also with every feature, by either method.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("kfarthest", "hierarchical"):
            c = traces["stencil2d"].clusters(k=3, method=method)
            assert c.k == 3 and len(set(c.labels.tolist())) == 3, method
    assert c.features == ("computation",)
    # Dynamic K (the collector's rule) is asked for: it keeps the 9 neighbour sets of the 3 x 3
    # grid apart, since a corner's events read with another corner's rank would name ranks off
    # the grid.
    c = traces["stencil2d"].clusters(k=3, grow=True)
    assert c.features == scalatrace.clustering.SIGNATURE_FEATURES and c.k == 9


def test_fewer_behaviours_than_k_give_fewer_clusters_with_a_warning(traces):
    # comm_split by call path alone: 2 behaviours (even ranks hold one more communicator).
    with pytest.warns(UserWarning, match=r"k=4: only 2 distinct behaviours over call_path"):
        c = traces["comm_split"].clusters(k=4, features=["call_path"])
    assert c.k == 2
    with pytest.raises(scalatrace.UsageError, match="grow=True"):
        traces["comm_split"].clusters(k=2, method="hierarchical", grow=True)


def test_hierarchical_cut_gives_k_across_event_counts(traces):
    # rank_divergent: ranks make different numbers of calls (computation vectors of different
    # lengths). Every k from 1 to the number of distinct behaviours is met exactly.
    t = traces["rank_divergent"]
    distinct = len(t.rank_groups(with_values=True))
    for k in range(1, distinct + 1):
        assert t.clusters(k=k, method="hierarchical").k == k


def test_comm_split_colors_tell_every_rank_apart(traces):
    c = traces["comm_split"].clusters(features=["call_path", "color", "key"])
    assert c.k == 6
    sig = scalatrace.clustering.signatures(traces["comm_split"])
    assert len(set(sig["color"].tolist())) == 6


def test_rank_groups_hold_ranks_with_identical_events(traces):
    for name, t in traces.items():
        coarse = t.rank_groups()
        fine = t.rank_groups(with_values=True)
        assert sorted(int(r) for g in fine for r in g) == list(range(t.nranks))
        # Groups with values refine the node-only groups.
        for g in fine:
            assert any(set(g.tolist()) <= set(h.tolist()) for h in coarse), name
        for g in fine:
            first = [(e.op, e.site, dict(e.fields)) for e in t.events(int(g[0]), timing="none")]
            for r in g[1:]:
                assert [
                    (e.op, e.site, dict(e.fields)) for e in t.events(int(r), timing="none")
                ] == first
    # Known classes never share a group.
    labels = np.zeros(9, dtype=int)
    for i, g in enumerate(traces["stencil2d"].rank_groups(with_values=True)):
        labels[g] = i
    assert len({labels[0], labels[1], labels[4]}) == 3


def test_hierarchical_on_computation_vectors_picks_the_member_closest_to_the_centre(traces):
    t = traces["stencil2d"]
    c = t.clusters(k=3, method="hierarchical")
    assert c.features == ("computation",) and c.linkage is not None
    vectors = scalatrace.clustering.computation_vectors(t)
    assert [len(v) for v in vectors] == [len(list(t.events(r))) for r in range(t.nranks)]
    for cluster, rep in enumerate(c.representatives):
        members = np.flatnonzero(c.labels == cluster)
        same = [m for m in members if len(vectors[m]) == len(vectors[rep])]
        centre = np.mean([vectors[m] for m in same], axis=0)
        dist = {m: np.abs(vectors[m] - centre).sum() for m in same}
        assert dist[rep] == min(dist.values())
    cut = t.clusters(method="hierarchical", threshold=0.0)
    assert cut.k >= c.k


def test_bad_arguments_are_value_errors(traces):
    t = traces["stencil2d"]
    for bad in (0, -2, "3", 2.5, True):
        with pytest.raises(ValueError, match="k must"):
            t.clusters(k=bad)
    with pytest.raises(ValueError, match="method"):
        t.clusters(method="kmeans")
    with pytest.raises(ValueError, match="unknown feature 'colour'"):
        t.clusters(features=["colour"])
    with pytest.raises(ValueError, match="hierarchical"):
        t.clusters(features="computation")
    with pytest.raises(ValueError, match="threshold"):
        t.clusters(threshold=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert t.clusters(k=20, features=["call_path"]).k == 3
    assert any("more than the 9 ranks" in str(w.message) for w in caught)


def test_one_rank_trace_is_one_cluster(tmp_path):
    t, _ = trace_example("stencil2d", 1, tmp_path)
    for method in ("kfarthest", "hierarchical"):
        c = t.clusters(method=method)
        assert c.labels.tolist() == [0] and c.representatives.tolist() == [0]
    assert [g.tolist() for g in t.rank_groups()] == [[0]]


def test_plots_group_rows_by_cluster_and_draw_the_dendrogram(traces):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = traces["stencil2d"]
    c = t.clusters(k=3, method="hierarchical", features=["call_path", "dest"])
    fig, (a, b) = plt.subplots(1, 2)
    ax = plot.comm_heatmap(t, order=c.labels, ax=a, colorbar=False)
    order = np.argsort(c.labels, kind="stable")
    m = t.comm_matrix()
    assert np.array_equal(ax.images[0].get_array(), m[np.ix_(order, order)])
    assert [tl.get_text() for tl in ax.get_yticklabels()] == [str(r) for r in order]
    assert plot.dendrogram(c, ax=b) is b
    assert sorted(int(x.get_text()) for x in b.get_xticklabels()) == list(range(9))
    with pytest.raises(ValueError, match="one cluster label per rank"):
        plot.comm_heatmap(t, order=[0, 1])
    with pytest.raises(ValueError, match="hierarchical"):
        plot.dendrogram(t.clusters(k=3))
    plt.close(fig)


# --------------------------------------------------------------- collector: SCALATRACE_CLUSTERS


def frames_of(sites, modules, site_id: int) -> tuple:
    return tuple((Path(modules[f.module]).name, f.offset) for f in sites[site_id].frames)


def concrete(events, frames) -> list[tuple]:
    return [(e.op, frames(e.site), tuple(sorted(dict(e.fields).items()))) for e in events]


def test_collector_clusters_merge_representatives_and_map_the_others(tmp_path):
    # 4 x 4 grid, K = 3: dynamic K keeps the 9 neighbour sets (4 corners, 4 edge orientations
    # of 2 ranks, 4 interior ranks) as 9 clusters; members read their representative's events.
    nranks = 16
    t, _ = trace_example("stencil2d", nranks, tmp_path, raw=True, clusters=3)
    raw = scalatrace.read_raw(tmp_path / "raw")
    full = scalatrace.load(t.path)  # the same file, to be sure it reads back
    cmap = full.cluster_map
    assert len(cmap) == 9
    groups = {frozenset(list(members)) for _, members in cmap}
    assert groups == {
        frozenset({0}),
        frozenset({3}),
        frozenset({12}),
        frozenset({15}),
        frozenset({1, 2}),
        frozenset({13, 14}),
        frozenset({4, 8}),
        frozenset({7, 11}),
        frozenset({5, 6, 9, 10}),
    }
    assert t.metadata["clusters.count"] == "9" and "clusters.lossy" in t.metadata
    assert t.metadata["setting.SCALATRACE_CLUSTERS"] == "3"
    # The frame says whose times were never recorded: the members', not the representatives'.
    df = t.to_dataframe()
    estimated = (df["duration_from"] == "estimated").groupby(level="rank").all()
    representatives = {rep for rep, _ in cmap}
    assert estimated.to_dict() == {r: r not in representatives for r in range(nranks)}

    tsites = t._core.sites
    tframes = lambda s: frames_of(tsites.sites, tsites.modules, s)  # noqa: E731
    rep_of = {r: rep for rep, members in cmap for r in members}
    for r in range(nranks):
        rec = raw[r]
        rframes = lambda s, rec=rec: frames_of(rec.sites.sites, rec.sites.modules, s)  # noqa: E731
        got = concrete(t.events(r, timing="none"), tframes)
        rep = rep_of[r]
        want_rep = concrete(
            raw[rep].events,
            lambda s, rec=raw[rep]: frames_of(rec.sites.sites, rec.sites.modules, s),
        )
        assert got == want_rep, f"rank {r} should read representative {rep}'s events"
        if rep == r:
            assert got == concrete(rec.events, rframes)
        # Peers are relative: the absolute peers are the representative's shifted by r - rep.
        mine, theirs = t.rank_table(r), t.rank_table(rep)
        valid = (mine["peer"] >= 0) & (theirs["peer"] >= 0)
        assert np.array_equal(mine["peer"][valid] - r, theirs["peer"][valid] - rep)
    # No call site of any rank is lost.
    all_sites = {
        frames_of(raw[r].sites.sites, raw[r].sites.modules, s)
        for r in range(nranks)
        for s in range(len(raw[r].sites.sites))
    }
    assert all_sites <= {tframes(s) for s in range(len(tsites.sites))}


@pytest.mark.parametrize(
    "value, message",
    [
        ("0", "SCALATRACE_CLUSTERS='0' is not a cluster count"),
        ("-2", "SCALATRACE_CLUSTERS='-2' is not a cluster count"),
        ("many", "SCALATRACE_CLUSTERS='many' is not a cluster count"),
        ("5", "SCALATRACE_CLUSTERS='5' is more than the 4 ranks; clustering off"),
    ],
)
def test_collector_bad_k_falls_back_to_the_full_trace_with_one_message(tmp_path, value, message):
    t, err = trace_example("stencil2d", 4, tmp_path, clusters=value)
    lines = [line for line in err.splitlines() if "SCALATRACE_CLUSTERS" in line]
    assert lines and all(message in line for line in lines), err
    assert value != "5" or len(lines) == 1
    assert t.cluster_map == [] and "clusters.count" not in t.metadata


def test_collector_k_equal_to_ranks_is_lossless_and_not_marked_lossy(tmp_path):
    t, _ = trace_example("rank_divergent", 4, tmp_path, clusters=4)
    assert len(t.cluster_map) == 4
    assert "clusters.lossy" not in t.metadata


def test_cli_clusters_lists_every_rank_once(traces, tmp_path):
    path = tmp_path / "stencil2d.sct"
    traces["stencil2d"].save(path)
    cmd = [
        sys.executable,
        "-m",
        "scalatrace.cli",
        "clusters",
        str(path),
        "-k",
        "3",
        "--features",
        "call_path,src,dest",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == "3 clusters (kfarthest; features: call_path, src, dest)"
    assert "ranks: 0,2,6,8" in out and "ranks: 1,3,5,7" in out and "ranks: 4" in out
    bad = subprocess.run([*cmd[:5], "-k", "0"], capture_output=True, text=True)
    assert bad.returncode != 0 and "k" in bad.stderr


def test_hierarchical_scales_with_distinct_behaviours_not_ranks(tmp_path):
    """16,384 ranks (4x the old n x n limit): ranks with identical events are one leaf, so a
    2D stencil is 9 points however many ranks it has."""
    out = tmp_path / "big.sct"
    harness = helpers.tool_path("scalatrace-harness")
    subprocess.run(
        [
            str(harness),
            "--pattern",
            "stencil2d",
            "--ranks",
            "16384",
            "--timesteps",
            "2",
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    t = scalatrace.load(out)
    for features in ("computation", ["call_path", "src", "dest"]):
        c = t.clusters(k=3, method="hierarchical", features=features)
        assert len(c.labels) == t.nranks and c.k == 3
        assert c.leaf_sizes.sum() == t.nranks and len(c.leaves) <= 9
        groups = t.rank_groups(with_values=True)
        for g in groups:  # a behaviour group is never split
            assert len(set(c.labels[g].tolist())) == 1
        for cluster, rep in enumerate(c.representatives):
            assert c.labels[rep] == cluster
    big = scalatrace.clustering.MAX_HIERARCHICAL_RANKS
    assert t.nranks > big
