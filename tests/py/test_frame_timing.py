"""Whose times the default data frame gives (issue 37): each rank's own where the trace keeps
them, the source of every value in ``compute_from`` / ``duration_from``, and sums that match the
raw recording of the same run (the ground truth) wherever the frame says they are exact."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_collector import compile_program

import scalatrace
from scalatrace.frames import TIMING_SOURCES

# Final files keep times within 2^-7 (docs/format.md) and each row's mean is rounded to a
# nanosecond: sums agree within 1 % plus a nanosecond per row.
REL = 0.01


def _close(got: pd.Series, want: pd.Series, rows: pd.Series) -> None:
    assert np.all(np.abs(got - want) <= REL * np.abs(want) + rows + 1), pd.DataFrame(
        {"frame": got, "raw": want}
    )


def _aligned(trace) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = trace.to_dataframe()
    rec = scalatrace.read_raw(trace.raw_dir).to_dataframe()
    assert df.index.equals(rec.index)  # lossless: the same events in the same order
    return df, rec


def _check_sums_against_raw(df: pd.DataFrame, rec: pd.DataFrame) -> None:
    for column in ("compute", "duration"):
        both = pd.DataFrame(
            {
                "frame": df[f"{column}_ns"],
                "raw": rec[f"{column}_ns"],
                "group": df["timing_group"],
                "source": df[f"{column}_from"].astype(str),
                "rows": 1,
            }
        )
        # Every (node, timing group): the rows that share one histogram sum to what was measured.
        per_group = both.groupby("group")[["frame", "raw", "rows"]].sum()
        _close(per_group["frame"], per_group["raw"], per_group["rows"])
        # A rank with a group of its own: its rows sum to the rank's measured total.
        own = both[both["source"].isin(["measured", "per-rank"])].reset_index()
        per_rank = own.groupby(["rank", "group"])[["frame", "raw", "rows"]].sum()
        _close(per_rank["frame"], per_rank["raw"], per_rank["rows"])
        # A measured value is the call's own.
        one = both[both["source"] == "measured"]
        _close(one["frame"], one["raw"], pd.Series(1, index=one.index))


@pytest.fixture(scope="module")
def imbalanced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("imbalance")
    exe = compile_program("imbalance", tmp)
    # 2 ranks (no more than the cores), 6 steps of 2 ms * 3^r for rank r: timing groups are
    # formed by similarity, and with more ranks than cores a descheduled rank's compute can
    # stretch into its neighbour's range and share its group.
    return scalatrace.trace(
        [str(exe), "6", "2000"], np=2, out=tmp / "imb.sct", raw=True, timeout=120
    )


def test_frame_gives_each_rank_its_own_compute_times(imbalanced):
    df, rec = _aligned(imbalanced)
    assert list(df["compute_from"].cat.categories) == list(TIMING_SOURCES)
    # Rank r computes 2 ms * 3^r before its first Irecv (tag 0) of each step: two timing
    # groups of one rank each, so each rank's own times, summing to its measured total.
    after_work = (df["op"] == "Irecv") & (df["tag"] == 0)
    assert set(df.loc[after_work, "compute_from"].astype(str)) <= {"per-rank", "measured"}
    work = df.loc[after_work, "compute_ns"].groupby(level="rank").sum()
    measured = rec.loc[after_work, "compute_ns"].groupby(level="rank").sum()
    # At least the busy wait (descheduling only adds), and rank 1's 3x dominates.
    assert all(work[r] >= 0.99 * 6 * 2000 * 3**r * 1000 for r in range(2))
    assert work.idxmax() == 1
    _close(work, measured, df[after_work].groupby(level="rank").size())
    _check_sums_against_raw(df, rec)
    assert set(df.attrs["timing"]) == {"compute_ns", "duration_ns", "start_ns", "end_ns"}
    assert df.attrs["timing"]["compute_ns"] in TIMING_SOURCES


def test_frame_sums_match_the_raw_recording_of_a_9_rank_stencil(stencil_traces):
    df, rec = _aligned(stencil_traces["small"])
    _check_sums_against_raw(df, rec)
    # Where the frame says "per-group", the group's mean stands for its ranks: it says so.
    groups = df[df["duration_from"] == "per-group"]
    assert groups.reset_index().groupby("timing_group")["rank"].nunique().min() >= 2


def test_recorded_frame_is_measured_and_sampled_or_none_say_so(stencil_traces):
    t = stencil_traces["small"]
    rec = scalatrace.read_raw(t.raw_dir).to_dataframe()
    assert (rec["compute_from"] == "measured").all() and (rec["duration_from"] == "measured").all()
    assert rec.attrs["timing"]["duration_ns"] == "measured"
    none = t.to_dataframe(ranks=0, timing="none")
    assert (none["duration_from"] == "none").all() and (none["duration_ns"] == 0).all()
    sampled = t.to_dataframe(ranks=0, timing="sample")
    assert set(sampled["duration_from"].astype(str)) <= {"sampled", "measured"}
