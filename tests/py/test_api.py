"""The public Python API on real traces of the examples (run under the collector)."""

from __future__ import annotations

from pathlib import Path

import helpers
import numpy as np
import pytest

import scalatrace
from scalatrace import Event, Loop, RankList, Trace
from scalatrace.frames import function_label

# (example, ranks, arguments): small runs, tens of messages per rank.
EXAMPLES = {
    "stencil2d": (9, ["-i", "6", "-c", "5"]),
    "ring": (4, ["-i", "3", "-c", "5"]),
    "collectives": (4, ["-i", "3", "-c", "5"]),
    "persistent": (4, ["-i", "4", "-c", "5"]),
    "comm_split": (6, ["-i", "2", "-c", "5"]),
    "alltoallv_is": (4, ["-i", "3", "-c", "5"]),
    "nonblocking_coll": (4, ["-i", "2", "-c", "5"]),
}


@pytest.fixture(scope="module", params=["collector", "offline"])
def traced(request, example, collector_lib, tmp_path_factory):
    """example name -> (Trace, RawRecording) of one run with raw mode on.

    ``collector``: the trace the collector wrote at MPI_Finalize (``scalatrace.trace``);
    ``offline``: the same run's raw recording compressed and merged in-process
    (``RawRecording.compress``), saved and loaded again.
    """
    cache: dict[str, tuple[Trace, scalatrace.RawRecording]] = {}

    def get(name: str) -> tuple[Trace, scalatrace.RawRecording]:
        if name not in cache:
            n, args = EXAMPLES[name]
            argv = [str(example(name)), *args]
            tmp = tmp_path_factory.mktemp(f"{name}-{request.param}")
            if request.param == "collector":
                t = scalatrace.trace(argv, np=n, out=tmp / f"{name}.sct", raw=True, timeout=120)
                assert t.raw_dir is not None
                cache[name] = (t, scalatrace.read_raw(t.raw_dir))
            else:
                raw_dir = tmp / "raw"
                helpers.run_mpi(
                    n, argv, env=helpers.collector_env(raw=str(raw_dir), out="none"), timeout=120
                )
                raw = scalatrace.read_raw(raw_dir)
                raw.compress().save(tmp / f"{name}.sct")
                cache[name] = (scalatrace.load(tmp / f"{name}.sct"), raw)
        return cache[name]

    return get


# --- loading -------------------------------------------------------------------------------


def test_load_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        scalatrace.load(tmp_path / "nope.sct")


def test_load_garbage_raises_format_error(tmp_path):
    bad = tmp_path / "bad.sct"
    bad.write_bytes(b"this is not a trace at all" * 10)
    with pytest.raises(scalatrace.TraceFormatError) as err:
        scalatrace.load(bad)
    assert str(bad) in str(err.value)


def test_load_truncated_trace_raises_format_error(traced, tmp_path):
    t, _ = traced("ring")
    data = t.path.read_bytes()
    cut = tmp_path / "cut.sct"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(scalatrace.TraceFormatError):
        scalatrace.load(cut)


def test_save_and_reload_round_trip(traced, tmp_path):
    t, _ = traced("stencil2d")
    copy = tmp_path / "copy.sct"
    t.save(copy)
    u = scalatrace.load(copy)
    assert u.nranks == t.nranks and u.node_count == t.node_count
    assert np.array_equal(u.comm_matrix(), t.comm_matrix())


# --- metadata and structure -----------------------------------------------------------------


def test_metadata(traced):
    t, _ = traced("stencil2d")
    assert t.nranks == 9 == t.ranks
    assert t.metadata, "collector wrote no metadata"
    text = " ".join(t.metadata.values())
    assert "stencil2d" in text
    assert isinstance(t.settings, dict)
    assert "Trace(" in repr(t)


def test_nodes_are_loops_and_events(traced):
    t, _ = traced("stencil2d")
    nodes = list(t.walk())
    assert any(isinstance(n, Loop) for n in nodes)
    events = [n for n in nodes if isinstance(n, Event)]
    assert {"Isend", "Irecv", "Waitall", "Allreduce"} <= {e.op for e in events}
    for e in events:
        assert e.op in scalatrace.OP_NAMES
        assert 0 <= e.site < len(t.call_sites)
        assert all(0 <= r < t.nranks for r in e.ranks)
    for loop in (n for n in nodes if isinstance(n, Loop)):
        assert loop.body
        assert all(child.depth == loop.depth + 1 for child in loop.body)
        assert "Loop(" in repr(loop)


def test_call_sites_and_communicators(traced):
    t, _ = traced("comm_split")
    sites = t.call_sites
    assert sites and all(s.frames for s in sites)
    assert all(isinstance(m, str) and off >= 0 for s in sites for m, off in s.frames)
    ids = {c.id for c in t.communicators}
    assert len(ids) > 1, "comm_split creates communicators"
    for c in t.communicators:
        assert all(0 <= r < t.nranks for r in c.members)


def test_ranklist_is_a_collection():
    r = RankList([0, 2, 4, 6, 9])
    assert len(r) == 5
    assert 4 in r and 5 not in r and "x" not in r
    assert list(r) == [0, 2, 4, 6, 9] == r.to_numpy().tolist()
    assert r[-1] == 9 and r.index(6) == 3
    assert "RankList" in repr(r) and "<" in r._repr_html_()
    assert r == RankList([0, 2, 4, 6, 9])
    assert list(RankList.range(3, 4, 2)) == [3, 5, 7, 9]


def test_elastic_values_answer_value_at(traced):
    t, raw = traced("stencil2d")
    # For every event node: the value of Bytes at the first occurrence on rank r equals the
    # first concrete event from the same op on r whose site matches.
    for node in t.walk():
        if not isinstance(node, Event) or node.op not in ("Isend", "Irecv"):
            continue
        for rank in list(node.ranks)[:3]:
            first = next(e for e in t.events(rank) if e.op == node.op and e.site == node.site)
            assert node.bytes.value_at(rank, 0) == first["Bytes"]
            assert node.tag.value_at(rank, 0) == first["Tag"]
        with pytest.raises(IndexError):
            node.bytes.value_at(next(iter(node.ranks)), 10**9)


def test_events_of_a_rank_match_the_raw_recording(traced):
    for name in ("stencil2d", "persistent", "collectives"):
        t, raw = traced(name)
        for rank in range(t.nranks):
            got = [(e.op, e["Peer"], e["Bytes"], e["Tag"]) for e in t.events(rank)]
            want = [(e.op, e["Peer"], e["Bytes"], e["Tag"]) for e in raw[rank].events]
            assert got == want, f"{name} rank {rank}"


def test_rank_table(traced):
    t, raw = traced("stencil2d")
    for rank in (0, 4, 8):
        table = t.rank_table(rank)
        assert table.dtype.names == (
            "rank",
            "op",
            "op_name",
            "peer",
            "bytes",
            "tag",
            "comm",
            "site",
            "compute_ns",
            "duration_ns",
        )
        ref = raw.rank_table(rank)
        for col in ("op", "peer", "bytes", "tag", "comm"):
            assert np.array_equal(table[col], ref[col]), col
        sends = table[table["op"] == scalatrace.OP_NAMES.index("Isend")]
        assert len(sends) and np.all(
            (sends["peer"] >= 0) & (sends["peer"] < 9) & (sends["peer"] != rank)
        )


# --- analyses ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_comm_matrix_equals_raw_recording(traced, name):
    t, raw = traced(name)
    for metric in ("bytes", "messages"):
        for kind in ("p2p", "collective", "all"):
            m = t.comm_matrix(metric=metric, kind=kind)
            assert m.shape == (t.nranks, t.nranks)
            assert np.array_equal(m, raw.comm_matrix(metric=metric, kind=kind)), (metric, kind)
            assert np.all(np.diag(m) == 0)
    assert t.comm_matrix("bytes", "all").sum() > 0


def test_stencil_matrix_is_the_grid_neighbourhood(traced):
    t, _ = traced("stencil2d")
    m = t.comm_matrix(metric="messages", kind="p2p")
    # 3 x 3 grid, 9-point stencil: a rank talks to exactly its grid neighbours.
    for s in range(9):
        for d in range(9):
            neighbours = s != d and abs(s // 3 - d // 3) <= 1 and abs(s % 3 - d % 3) <= 1
            assert (m[s, d] > 0) == neighbours, (s, d)
    assert np.array_equal(m, m.T)


def test_sparse_comm_matrix_equals_dense(traced):
    t, _ = traced("collectives")
    for kind in ("p2p", "collective", "all"):
        sp = t.comm_matrix("bytes", kind, sparse=True)
        assert sp.shape == (t.nranks, t.nranks)
        assert np.array_equal(sp.toarray(), t.comm_matrix("bytes", kind))


def test_comm_matrix_rejects_bad_arguments(traced):
    t, _ = traced("ring")
    with pytest.raises(ValueError):
        t.comm_matrix(metric="furlongs")
    with pytest.raises(ValueError):
        t.comm_matrix(kind="telepathy")


def test_summary_counts_equal_raw_counts(traced):
    for name in ("stencil2d", "collectives", "nonblocking_coll"):
        t, raw = traced(name)
        table = t.summary()
        counts: dict[str, int] = {}
        bytes_: dict[str, int] = {}
        for rec in raw:
            for e in rec.events:
                # Functions recorded as Other are counted under their own names (issue 37).
                op = function_label(rec.names[e["NameId"]]) if e.op == "Other" else e.op
                counts[op] = counts.get(op, 0) + 1
                bytes_[op] = bytes_.get(op, 0) + e["Bytes"]
        assert dict(zip(table["op"], table["calls"].tolist())) == counts, name
        assert dict(zip(table["op"], table["bytes"].tolist())) == bytes_, name
        assert (table["duration_ns"] >= 0).all()
        text = repr(table)
        assert all(op in text for op in counts)
        by_site = t.summary(by="site")
        assert by_site["calls"].sum() == table["calls"].sum()


def test_summary_to_pandas(traced):
    pd = pytest.importorskip("pandas")
    t, _ = traced("ring")
    df = t.summary().to_pandas()
    assert isinstance(df, pd.DataFrame) and "calls" in df.columns


def test_timestep_loop_of_the_stencil(traced):
    t, _ = traced("stencil2d")
    loops = t.timestep_loops()
    assert loops, t.dump()
    top = loops[0]
    # The run has 6 timesteps, reported as written (never 3 x 2 steps).
    assert top.max_iterations == 6
    assert isinstance(top.loop, Loop)
    ops = {n.op for n in top.loop.body if isinstance(n, Event)} | {
        n.op for n in _walk(top.loop) if isinstance(n, Event)
    }
    assert "Isend" in ops
    assert set(top.sites) <= set(range(len(t.call_sites)))


def _walk(loop):
    for n in loop.body:
        yield n
        if isinstance(n, Loop):
            yield from _walk(n)


def test_html_reprs(traced):
    t, _ = traced("ring")
    assert "<" in t._repr_html_()
    loop = next(n for n in t.walk() if isinstance(n, Loop))
    event = next(n for n in t.walk() if isinstance(n, Event))
    assert "Loop" in loop._repr_html_() and "MPI_" in event._repr_html_()


def test_plots_return_axes(traced):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scalatrace import plot

    t, _ = traced("stencil2d")
    fig, axes = plt.subplots(1, 4)
    assert plot.comm_heatmap(t, ax=axes[0]) is axes[0]
    assert plot.comm_heatmap(t, log=True, kind="all", ax=axes[1]) is axes[1]
    assert plot.op_bars(t, ax=axes[2]) is axes[2]
    assert plot.loop_structure(t, rank=4, ax=axes[3]) is axes[3]
    plt.close(fig)


# --- raw recordings --------------------------------------------------------------------------


def test_read_raw_single_stream(traced):
    t, raw = traced("ring")
    one = scalatrace.read_raw(Path(raw.path) / "rank-1.straw")
    assert len(one) == 1 and one[1].rank == 1
    assert len(one[1]) == len(raw[1])


def test_read_raw_rejects_garbage(tmp_path):
    bad = tmp_path / "rank-0.straw"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(scalatrace.ScalatraceError):
        scalatrace.read_raw(bad)


# --- running ---------------------------------------------------------------------------------


def test_failed_program_raises_mpi_run_error(collector_lib, tmp_path):
    with pytest.raises(scalatrace.MPIRunError) as err:
        scalatrace.trace(
            ["sh", "-c", "echo boom-on-stderr >&2; exit 3"], np=1, out=tmp_path / "x.sct"
        )
    assert err.value.returncode != 0
    assert "boom-on-stderr" in err.value.stderr_tail


def test_trace_with_another_launcher_keeps_the_program_output(example, tmp_path):
    # Any launcher taking -n runs the program through `env LD_PRELOAD=...` (srun, mpirun, ...);
    # here MPICH's own mpiexec given by path, with a launcher argument, and the output kept.
    launcher = helpers.mpiexec()
    t = scalatrace.trace(
        [str(example("ring")), "-i", "2", "-c", "5"],
        np=3,
        out=tmp_path / "ring.sct",
        launcher=[launcher],
        launcher_args=["-env", "SCALATRACE_TEST_MARK", "1"],
        timeout=120,
    )
    assert t.nranks == 3 and isinstance(t.run_stdout, str)
    argv = scalatrace._launch.launch_command(["true"], 3, [launcher, "-v"], ["-x"])
    library = str(scalatrace._paths.collector_library())
    assert argv == [launcher, "-v", "-n", "3", "-x", "env", f"LD_PRELOAD={library}", "true"]
    with pytest.raises(FileNotFoundError, match="launcher not found"):
        scalatrace.trace(["true"], np=1, out=tmp_path / "x.sct", launcher="no-such-launcher")
    with pytest.raises(scalatrace.UsageError, match="launcher_args"):
        scalatrace.trace(["true"], np=1, out=tmp_path / "x.sct", launcher_args=42)
