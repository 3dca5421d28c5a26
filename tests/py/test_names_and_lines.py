"""Every counted MPI function under its own name (MPI_Comm_rank, MPI_Comm_size, ... recorded as
``Other``) in summaries, data frames and exports, and call sites' ``file:line`` from the DWARF
line table of a ``-g`` program (issue 37)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_collector import PROGRAMS, compile_program

import scalatrace
from scalatrace import debuginfo


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("names")
    exe = compile_program("imbalance", tmp)  # built with -g
    t = scalatrace.trace([str(exe), "3"], np=2, out=tmp / "names.sct", raw=True, timeout=120)
    return t, tmp


def test_functions_recorded_as_other_are_named_everywhere(traced, tmp_path):
    t, _ = traced
    assert {"MPI_Comm_rank", "MPI_Comm_size"} <= set(t.function_names)
    by_op = t.summary().set_index("op")
    assert by_op.loc["Comm_rank", "calls"] == 2 and by_op.loc["Comm_size", "calls"] == 2
    assert "Other" not in by_op.index
    assert "Other(MPI_Comm_rank)" in t.dump() and "Other(MPI_Comm_size)" in t.dump()
    others = {e.function_name for e in t.find(op="Other")}
    assert others == {"MPI_Comm_rank", "MPI_Comm_size"}
    assert {e.function_name for e in t.find(op="Irecv")} == {""}
    by_site = t.summary(by="site")
    assert {"Comm_rank", "Comm_size"} <= set(by_site["op"])
    df = t.to_dataframe()
    ops = set(df["op"].astype(str))
    assert {"Comm_rank", "Comm_size", "Irecv", "Waitall"} <= ops and "Other" not in ops
    raw = scalatrace.read_raw(t.raw_dir).to_dataframe()
    assert df["op"].astype(str).tolist() == raw["op"].astype(str).tolist()
    # OTF2: a region per function, named as MPI names it.
    anchor = t.to_otf2(tmp_path / "otf2")
    definitions = (anchor.parent / "traces.def").read_bytes()
    assert b"MPI_Comm_rank" in definitions and b"MPI_Comm_size" in definitions
    # Extra-P: regions from the summary.
    out = scalatrace.export_extrap.to_extrap([t, t], tmp_path / "extrap.txt", values=[2, 3])
    text = Path(out).read_text()
    assert "REGION MPI_Comm_rank" in text and "REGION MPI_Other" not in text


def _lines_of(call: str) -> set[str]:
    source = (PROGRAMS / "imbalance.c").read_text().splitlines()
    lines = {
        f"imbalance.c:{i + 1}" for i, text in enumerate(source) if re.search(rf"\b{call}\(", text)
    }
    assert lines, call
    return lines


def test_call_sites_of_a_debug_build_have_file_and_line(traced):
    t, _ = traced
    where: dict = {}
    sites = t.call_sites
    for e in t.find():
        site = sites[e.site]
        where.setdefault(e.op if e.op != "Other" else None, set()).add(site.location)
    for call, op in (
        ("MPI_Irecv", "Irecv"),
        ("MPI_Waitall", "Waitall"),
        ("MPI_Barrier", "Barrier"),
    ):
        assert where[op] == _lines_of(call), (op, where[op])
    (waitall,) = _lines_of("MPI_Waitall")
    assert waitall in str(t.summary(by="site")["where"].tolist())


def test_modules_without_line_tables_resolve_to_nothing(tmp_path):
    assert debuginfo.source_line("/nonexistent/module.so", 0x1234) == ""
    not_elf = tmp_path / "not-elf.so"
    not_elf.write_bytes(b"\x7fELF garbage" * 10)
    assert debuginfo.source_line(str(not_elf), 0x10) == ""
    assert debuginfo.first_source_line([("<unknown>", 5), (str(not_elf), 9)]) == ""
