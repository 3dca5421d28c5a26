"""Views of the run in time (scalatrace.views, the plots drawing them) and the HTML report,
against the raw recording of a real 4-rank run with known imbalance (issue 37). The report is
opened in headless Chromium: it loads, its images decode, the console stays clean."""

from __future__ import annotations

import re
import shutil
import subprocess

import matplotlib
import pytest
from test_collector import compile_program

import scalatrace
from scalatrace import plot, views
from scalatrace.cli import main

matplotlib.use("Agg")


STEPS, BASE_US = 4, 2000


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("views")
    exe = compile_program("imbalance", tmp)
    # 4 steps, rank r computes 2 ms * 3^r per step: far above the milliseconds a rank loses
    # when 4 busy-polling ranks share 2 cores.
    t = scalatrace.trace(
        [str(exe), str(STEPS), str(BASE_US)], np=4, out=tmp / "imb.sct", raw=True, timeout=120
    )
    return t, scalatrace.read_raw(t.raw_dir), tmp


def test_views_add_up_to_the_raw_recording(run):
    t, raw, _ = run
    rec = raw.to_dataframe()
    body = rec[~rec["op"].astype(str).isin(["Init", "Init_thread", "Finalize"])]
    rank = body.index.get_level_values("rank")
    times = views.rank_times(raw)
    assert times.attrs["exact"] and not views.rank_times(t).attrs["exact"]
    assert (times["compute_ns"] == body["compute_ns"].groupby(rank).sum()).all()
    assert (times["mpi_ns"] == body["duration_ns"].groupby(rank).sum()).all()
    waiting = body["op"].astype(str).isin(views.WAITING_OPS)
    assert (times["wait_ns"] == body["duration_ns"].where(waiting, 0).groupby(rank).sum()).all()
    assert {"Waitall", "Barrier", "Recv", "Allreduce", "Wait"} <= views.WAITING_OPS
    assert not {"Isend", "Irecv", "Test", "Iprobe", "Init"} & views.WAITING_OPS
    # Rank r busy-waits STEPS * BASE_US * 3^r us of wall-clock time: its measured compute holds at
    # least that (descheduling can only add to it), and rank 3's 27x dominates.
    for r in range(4):
        assert times.loc[r, "compute_ns"] >= STEPS * BASE_US * 3**r * 1000, r
    imbalance = views.load_imbalance(raw)
    assert imbalance.loc["compute", "max_rank"] == 3 and imbalance.loc["compute", "imbalance"] > 1
    # The profile spreads every call and compute stretch over the bins: nothing lost.
    profile = views.time_profile(raw, bins=7)
    ev = views.events(raw)
    assert (
        abs(profile.to_numpy().sum() - (ev["duration_ns"].sum() + ev["compute_ns"].sum())) <= 7 * 8
    )
    sends = body[body["op"].astype(str) == "Isend"]
    hist = views.message_histogram(raw)
    assert hist["messages"].sum() == len(sends) and hist["bytes"].sum() == sends["bytes"].sum()
    assert hist.loc[0, "min_bytes"] <= 8 <= hist.loc[0, "max_bytes"]
    over = views.comm_over_time(raw, bins=5)
    assert over["messages"].sum() == len(sends) and over["bytes"].sum() == sends["bytes"].sum()
    with pytest.raises(scalatrace.UsageError, match="expected a Trace"):
        views.rank_times(42)


def test_plots_of_the_run_have_titles_labels_and_legends_outside(run):
    import matplotlib.pyplot as plt

    t, raw, _ = run
    for draw in (plot.run_timeline, plot.time_profile, plot.rank_times, plot.message_histogram):
        fig, ax = plt.subplots()
        draw(raw, ax=ax)
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel(), draw.__name__
        legend = ax.get_legend()
        if legend is not None:  # anchored right of the axes, not over the data
            assert legend.get_bbox_to_anchor().x0 >= ax.get_window_extent().x1 - 1, draw.__name__
        plt.close(fig)
    assert "measured" in plot.run_timeline(raw, ax=plt.subplots()[1]).get_title()
    plt.close("all")


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_is_one_self_contained_page_that_chromium_opens(run, tmp_path):
    t, raw, tmp = run
    out = tmp_path / "report.html"
    assert main(["report", str(t.path), "--raw", str(t.raw_dir), "-o", str(out)]) == 0
    page = out.read_text()
    for section in ("Summary", "Communication", "Timeline", "Time profile", "Imbalance", "loops"):
        assert section in page, section
    images = re.findall(r'<img [^>]*src="([^"]*)"', page)
    assert len(images) >= 6 and all(src.startswith("data:image/png;base64,") for src in images)
    assert "measured (the run's raw recording)" in page
    assert not re.search(r'(src|href)="(?!data:)', page)  # nothing fetched from elsewhere
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (Debian package chromium, scripts/setup-system.sh)")
    # A copy with a probe: after load, the body records how many images decoded.
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.replace(
            "</body>",
            "<script>window.addEventListener('load', () => { const ok = [...document.images]"
            ".filter(i => i.complete && i.naturalWidth > 0).length; document.body"
            ".setAttribute('data-images-ok', ok + '/' + document.images.length); });</script></body>",
        )
    )
    proc = subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f'data-images-ok="{len(images)}/{len(images)}"' in proc.stdout, proc.stdout[-500:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
