"""pandas views: Trace.to_dataframe, summary frames, labelled matrices, rank tables, find."""

from __future__ import annotations

import subprocess

import helpers
import numpy as np
import pandas as pd
import pytest

import scalatrace


def test_to_dataframe_matches_raw_recording(stencil_traces):
    t = stencil_traces["small"]
    raw = scalatrace.read_raw(t.raw_dir)
    df = t.to_dataframe()
    assert isinstance(df, pd.DataFrame)
    assert df.index.names == ["rank", "event"]
    assert list(df.columns) == [
        "op",
        "peer",
        "bytes",
        "tag",
        "comm",
        "site",
        "compute_ns",
        "duration_ns",
        "start_ns",
        "end_ns",
        "compute_from",
        "duration_from",
        "timing_group",
    ]
    assert isinstance(df["op"].dtype, pd.CategoricalDtype)
    for col in (
        "peer",
        "bytes",
        "tag",
        "comm",
        "site",
        "compute_ns",
        "duration_ns",
        "start_ns",
        "end_ns",
    ):
        assert df[col].dtype == np.int64, col
    assert len(df) == raw.event_count()
    rec = raw.to_dataframe()
    # Same events in the same order, from the compressed trace and from the raw ground truth.
    assert df.index.equals(rec.index)
    for col in ("op", "peer", "bytes", "tag", "comm"):
        assert df[col].astype(str).tolist() == rec[col].astype(str).tolist(), col
    # Events are numbered 0..n-1 per rank; peers of sends are absolute neighbour ranks.
    for rank in range(9):
        ev = df.loc[rank].index.to_numpy()
        assert np.array_equal(ev, np.arange(len(ev)))
    sends = df[df["op"] == "Isend"]
    assert len(sends) and ((sends["peer"] >= 0) & (sends["peer"] < 9)).all()
    assert (sends.index.get_level_values("rank") != sends["peer"]).all()
    # Times: start/end on each rank's clock, in order, from the histograms.
    assert (df["end_ns"] >= df["start_ns"]).all() and (
        df["end_ns"] - df["start_ns"] == df["duration_ns"]
    ).all()
    assert (df.groupby(level="rank")["start_ns"].diff().dropna() >= 0).all()
    assert df["duration_ns"].sum() > 0


def test_to_dataframe_rank_subset_and_pandas_use(stencil_traces):
    t = stencil_traces["small"]
    df = t.to_dataframe(ranks=[4, 0])
    assert sorted(set(df.index.get_level_values("rank"))) == [0, 4]
    assert df.loc[4].equals(t.to_dataframe(ranks=4).loc[4])
    per_op = df.groupby("op", observed=True)["bytes"].sum()
    assert per_op["Isend"] > 0
    # Every op, and the functions recorded as Other under their own names (issue 37).
    assert set(scalatrace.OP_NAMES) < set(df["op"].cat.categories)
    assert "Dims_create" in set(df["op"].astype(str))


def test_to_dataframe_guard_refuses_clearly(stencil_traces):
    t = stencil_traces["small"]
    with pytest.raises(scalatrace.TooLargeError, match="max_events=10"):
        t.to_dataframe(max_events=10)
    with pytest.raises(ValueError, match="out of range"):
        t.to_dataframe(ranks=[9])
    with pytest.raises(ValueError, match="timing"):
        t.to_dataframe(timing="exact")


def test_to_dataframe_on_large_harness_trace(tmp_path):
    harness = helpers.tool_path("scalatrace-harness")
    out = tmp_path / "big.sct"
    subprocess.run(
        [
            str(harness),
            "--pattern",
            "stencil2d",
            "--ranks",
            "4096",
            "--timesteps",
            "5",
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    t = scalatrace.load(out)
    df = t.to_dataframe()
    assert df.index.get_level_values("rank").nunique() == 4096
    assert len(df) == int(t.summary()["calls"].sum())
    # The per-pair bytes of the frame's sends equal the matrix computed from the structure.
    sends = df[df["op"].isin(["Send", "Isend"]) & (df["peer"] >= 0)]
    pairs = sends.groupby([sends.index.get_level_values("rank"), sends["peer"]])["bytes"].sum()
    m = t.comm_matrix("bytes", "p2p", sparse=True).tocsr()
    assert pairs.sum() == m.sum()
    for (src, dst), value in pairs.head(50).items():
        assert m[src, dst] == value
    with pytest.raises(scalatrace.TooLargeError):
        t.to_dataframe(max_events=len(df) - 1)


def test_summary_is_a_dataframe_with_units_in_names(stencil_traces):
    t = stencil_traces["small"]
    s = t.summary()
    assert isinstance(s, pd.DataFrame)
    assert {
        "op",
        "calls",
        "ranks",
        "bytes",
        "duration_ns",
        "compute_ns",
        "mean_duration_ns",
    } <= set(s.columns)
    assert s["calls"].dtype == np.int64 and s["duration_ns"].dtype == np.int64
    df = t.to_dataframe()
    counts = df.groupby("op", observed=True).size()
    assert dict(zip(s["op"], s["calls"])) == counts.to_dict()
    by_site = t.summary(by="site")
    assert {"site", "where"} <= set(by_site.columns) and by_site["calls"].sum() == s["calls"].sum()
    assert s.groupby("op")["calls"].sum().sum() == s["calls"].sum()  # real pandas groupby
    assert isinstance(s.to_pandas(), pd.DataFrame)  # kept from SummaryTable
    text = s.to_string().replace("Allreduce", "").replace("Dims_create", "")  # op names
    assert "ms" not in text and "us" not in text


def test_comm_matrix_labels(stencil_traces):
    t = stencil_traces["small"]
    dense = t.comm_matrix("bytes", "p2p")
    df = t.comm_matrix("bytes", "p2p", labels=True)
    assert df.index.name == "sender" and df.columns.name == "receiver"
    assert np.array_equal(df.to_numpy(), dense)
    sp = t.comm_matrix("bytes", "p2p", sparse=True, labels=True)
    assert all(isinstance(d, pd.SparseDtype) for d in sp.dtypes)
    assert np.array_equal(sp.sparse.to_dense().to_numpy(), dense)


def test_rank_table_has_rank_and_op_names(stencil_traces):
    t = stencil_traces["small"]
    table = t.rank_table(4)
    assert table.dtype.names[:3] == ("rank", "op", "op_name")
    assert (table["rank"] == 4).all()
    assert list(table["op_name"]) == [scalatrace.OP_NAMES[c] for c in table["op"]]
    assert table["op_name"][0] == "Init"


def test_find_by_op_and_site(stencil_traces):
    t = stencil_traces["small"]
    isends = t.find(op="Isend")
    assert isends and all(isinstance(e, scalatrace.Event) and e.op == "Isend" for e in isends)
    assert [e.site for e in t.find(op="MPI_Isend")] == [e.site for e in isends]
    site = isends[0].site
    assert all(e.site == site for e in t.find(site=site))
    assert {e.op for e in t.find(op=["Isend", "Irecv"])} == {"Isend", "Irecv"}
    with pytest.raises(scalatrace.UnknownNameError, match="Isnd"):
        t.find(op="Isnd")


def test_walk_filters_work_on_loops(stencil_traces):
    t = stencil_traces["small"]
    ev = next(n for n in t.walk() if n.op == "Isend")  # README's idiom: loops have op None
    assert isinstance(ev, scalatrace.Event)
    loop = next(n for n in t.walk() if isinstance(n, scalatrace.Loop))
    assert loop.op is None and loop.site is None
