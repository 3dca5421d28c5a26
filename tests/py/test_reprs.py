"""Readable reprs (issue 37): rank lists as ranges, elastic values as words ("4096 (9 times)",
"4 to 0 step -1") instead of the thesis notation ("[4096x9]", "<1 0 9 1>"), which stays
available as ``.notation``; HTML reprs for Jupyter."""

from __future__ import annotations

from pathlib import Path

import scalatrace
from scalatrace import Loop, RankList

TRACE = Path(__file__).resolve().parents[1] / "cpp" / "data" / "v8_stencil2d_64.sct"


def test_ranklists_read_as_ranges():
    assert repr(RankList([0, 2, 6, 8])) == "RankList(0, 2, 6, 8; 4 ranks)"
    assert str(RankList.range(0, 9)) == "0-8"
    assert str(RankList([0, 1, 2, 3, 8, 9, 10, 11, 20])) == "0-3, 8-11, 20"
    assert RankList.range(0, 9).notation == "<1 0 9 1>"
    assert "0-8" in RankList.range(0, 9)._repr_html_()
    assert str(RankList()) == "no ranks"
    # Long lists are cut; huge ones are described without being expanded.
    assert str(RankList(list(range(0, 60, 2)))).endswith(", ... (30 ranks)")
    assert str(RankList.range(0, 1 << 20, 2)) == f"0 to {(1 << 21) - 2} step 2"


def test_elastic_values_read_as_words():
    t = scalatrace.load(TRACE)
    irecv = next(n for n in t.walk() if n.op == "Irecv")
    text = repr(irecv.fields["Bytes"])
    assert text.startswith("ElasticValue(ranks 0, 7, 56, 63: 4096 (9 times); ")
    assert "0x" not in text and "<" not in text
    assert "4 to 0 step -1" in repr(irecv.fields["Tag"])
    seq, ranks = irecv.fields["Bytes"].alternatives[0]
    assert str(seq) == "4096 (9 times)" and seq.notation == "[4096x9]"
    assert str(ranks) == "0, 7, 56, 63"
    html = irecv.fields["Bytes"]._repr_html_()
    assert html.startswith("<b>ElasticValue</b><table>") and "4096 (9 times)" in html
    # Nodes: values that differ by rank in brackets, constant trip counts as xN.
    assert "Bytes=[ranks 0, 7, 56, 63: 4096 (9 times); " in repr(irecv)
    outer = next(n for n in t.walk() if isinstance(n, Loop))
    assert repr(outer) == "Loop(x3, ranks=0-63, 4 nodes)"
    assert repr(t.communicators[0]) == "CommEntry(id=0, members=[0-63], holders=[0-63])"
