"""OTF2 export (checked with otf2-print when installed, and by reading the files back here) and
the Extra-P text export (parsed here, and by Extra-P itself when installed)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from collections import Counter

import pytest

import scalatrace
from scalatrace import export_otf2


def _otf2_print(*args) -> str:
    tool = shutil.which("otf2-print")
    if tool is None:
        pytest.skip("otf2-print (Debian otf2-tools) not installed")
    proc = subprocess.run([tool, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _expected_counts(df):
    """Per OTF2 record kind, what the export must write for these events."""
    ops = df["op"].astype(str)
    sends = ops.isin(list(export_otf2._SENDS)) & (df["peer"] >= 0)
    recvs = ops.isin(list(export_otf2._RECVS)) & (df["peer"] >= 0)
    colls = ops.map(lambda o: export_otf2._collective(o) is not None)
    return {
        "ENTER": len(df),
        "LEAVE": len(df),
        "MPI_SEND": int(sends.sum()),
        "MPI_RECV": int(recvs.sum()),
        "MPI_COLLECTIVE_BEGIN": int(colls.sum()),
        "MPI_COLLECTIVE_END": int(colls.sum()),
    }


def test_otf2_archive_reads_back_with_otf2_print(stencil_traces, tmp_path):
    t = stencil_traces["small"]
    anchor = t.to_otf2(tmp_path / "otf2")
    assert anchor.name == "traces.otf2" and (tmp_path / "otf2" / "traces" / "8.evt").is_file()
    text = _otf2_print(anchor)
    records = [
        line.split()[0]
        for line in text.splitlines()
        if line
        and line.split()[0].isupper()
        and len(line.split()) > 2
        and line.split()[1].isdigit()
    ]
    counts = Counter(records)
    df = t.to_dataframe()
    for kind, n in _expected_counts(df).items():
        assert counts[kind] == n, (kind, counts[kind], n)
    # Times: rank 4's first Enter is its first event's start; regions are named MPI_<op>.
    lines = [ln for ln in text.splitlines() if ln.startswith("ENTER") and ln.split()[1] == "4"]
    first = df.loc[4].iloc[0]
    assert int(lines[0].split()[2]) == first["start_ns"]
    assert f"MPI_{first['op']}" in lines[0]
    # Messages: every MpiSend names the receiver rank in MPI_COMM_WORLD and its bytes.
    sends = [ln for ln in text.splitlines() if ln.startswith("MPI_SEND")]
    df_sends = df[df["op"].astype(str).isin(export_otf2._SENDS) & (df["peer"] >= 0)]
    got = Counter(
        (
            int(ln.split()[1]),
            int(re.search(r"Receiver: (\d+)", ln).group(1)),
            int(re.search(r"Length: (\d+)", ln).group(1)),
        )
        for ln in sends
    )
    want = Counter(
        zip(df_sends.index.get_level_values("rank"), df_sends["peer"], df_sends["bytes"])
    )
    assert got == want
    defs = _otf2_print("-G", anchor)
    assert "MPI_COMM_WORLD" in defs and "MPI_Isend" in defs and defs.count("LOCATION ") >= 9


def test_otf2_recorded_times_and_guards(stencil_traces, tmp_path):
    t = stencil_traces["small"]
    anchor = t.to_otf2(tmp_path / "rec", timing="recorded")
    text = _otf2_print(anchor)
    raw = scalatrace.read_raw(t.raw_dir).to_dataframe()
    first = raw.loc[2].iloc[0]
    enter = next(ln for ln in text.splitlines() if ln.startswith("ENTER") and ln.split()[1] == "2")
    assert int(enter.split()[2]) == first["start_ns"]
    with pytest.raises(FileExistsError):
        t.to_otf2(tmp_path / "rec", timing="recorded")
    t.to_otf2(tmp_path / "rec", overwrite=True)
    with pytest.raises(scalatrace.UsageError):
        t.to_otf2(tmp_path / "x", timing="exact")


def test_otf2_chunks_when_events_exceed_one_chunk(stencil_traces, tmp_path, monkeypatch):
    monkeypatch.setattr(export_otf2, "CHUNK_SIZE", 256 * 1024)
    t = stencil_traces["small"]
    df = t.to_dataframe(ranks=[0])
    # Grow rank 0 by writing its events repeatedly through the same file writer.
    out = export_otf2._ChunkedFile(tmp_path / "0.evt")
    comms = export_otf2._Comms(t)
    regions = {op: i for i, op in enumerate(scalatrace.OP_NAMES)}
    offset = 0
    while out.events < 60_000:
        for time, record in export_otf2._event_records(
            df.loc[[0]].droplevel("rank"), comms, regions
        ):
            out.event(time + offset, record)
        offset += int(df["end_ns"].max()) + 1
    out.close()
    data = (tmp_path / "0.evt").read_bytes()
    assert len(data) > 256 * 1024
    # Every full chunk starts with a chunk header whose event numbers continue the previous one.
    previous_last = 0
    for start in range(0, len(data), 256 * 1024):
        assert data[start] == 3 and data[start + 1] == 0x42
        first, last = struct.unpack("<QQ", data[start + 2 : start + 18])
        assert first == previous_last + 1 and last >= first
        previous_last = last
    assert previous_last == out.events


def test_extrap_text_parses(stencil_traces, tmp_path):
    a, b = stencil_traces["small"], stencil_traces["large"]
    path = scalatrace.to_extrap(
        [a, b, a], tmp_path / "runs.txt", values=[1024, 4096, 1024], parameter="s", metric="bytes"
    )
    text = path.read_text()
    lines = text.splitlines()
    assert (
        lines[0] == "PARAMETER s" and lines[1] == "POINTS 1024 4096" and lines[2] == "METRIC bytes"
    )
    regions = {}
    current = None
    for line in lines[3:]:
        key, _, value = line.partition(" ")
        if key == "REGION":
            current = value
            regions[current] = []
        else:
            assert key == "DATA"
            regions[current].append([float(v) for v in value.split()])
    isend = regions["MPI_Isend"]
    assert len(isend) == 2 and len(isend[0]) == 2 and len(isend[1]) == 1  # repetitions per point
    sa = a.summary().set_index("op")
    assert (
        isend[0] == [sa.loc["Isend", "bytes"]] * 2 and isend[1][0] == 4 * sa.loc["Isend", "bytes"]
    )
    with pytest.raises(scalatrace.UsageError, match="two or more"):
        scalatrace.to_extrap([a], tmp_path / "one.txt")
    with pytest.raises(scalatrace.UsageError, match="metric"):
        scalatrace.to_extrap([a, b], tmp_path / "bad.txt", values=[1, 2], metric="joules")


def test_extrap_reads_the_export(stencil_traces, tmp_path):
    """Extra-P itself (``extrap`` on PATH, e.g. ``pip install extrap``; not a dependency) reads
    the file and models the bytes of MPI_Isend as linear in the message size."""
    extrap = shutil.which("extrap")
    if extrap is None:
        pytest.skip("Extra-P (the extrap command) not installed")
    a, b = stencil_traces["small"], stencil_traces["large"]
    path = scalatrace.to_extrap(
        [a, b], tmp_path / "runs.txt", values=[1024, 4096], parameter="s", metric="bytes"
    )
    proc = subprocess.run(
        [extrap, "--text", str(path)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    block = proc.stdout.split("Callpath: MPI_Isend", 1)[1].split("Callpath:", 1)[0]
    model = re.search(r"Model: (.*)", block).group(1)
    assert "s^(1)" in model, model
