"""Every example, run for real under the collector in raw mode, against its own ground truth.

Each example logs what it asks MPI to do (``--truth DIR``, see examples/common/truth.h); the
collector records what it intercepted (``SCALATRACE_RAW``). On every rank, in order, we check:
op sequence; absolute peers (recorded relative peer + my rank in the communicator, sentinels for
wildcards and MPI_PROC_NULL); tags, bytes, datatype sizes, roots, reduction ops, v-counts;
communicator members (through the recorded communicator table); created communicators; request
pairing (handle-buffer offsets resolved back to the creating events); Waitany/Waitsome/Test
results; call sites (one site per source label on a rank, distinct labels distinct sites, the
same frames for a label on every rank, which needs position-independent call sites); counts per
op and per call site.

Recorded events of op ``Other`` (MPI functions scalatrace does not model, e.g. Comm_rank or
Dims_create) are not part of the truth and are left out of the comparison.
"""

from __future__ import annotations

import zlib
from collections import Counter

import helpers
import pytest
from helpers import K_ANY_SOURCE, K_ANY_TAG, K_NO_COMM, K_NULL_REQUEST, K_PROC_NULL, K_UNDEFINED

# (example, ranks, extra arguments): 2..9 ranks, small iteration counts.
CASES = helpers.EXAMPLE_RUNS + [
    ("stencil2d", 6, []),
    ("stencil2d", 9, ["-k", "1"]),
    ("ring", 2, ["-m", "2"]),
    ("collectives", 7, []),
    ("persistent", 2, []),
    ("comm_split", 9, []),
    ("rank_divergent", 2, ["-s", "8192"]),
    ("fortran_ring", 4, []),
]

ITERATIONS = "3"

P2P_OPS = {
    "Send",
    "Bsend",
    "Ssend",
    "Rsend",
    "Recv",
    "Isend",
    "Ibsend",
    "Issend",
    "Irsend",
    "Irecv",
    "Send_init",
    "Bsend_init",
    "Ssend_init",
    "Rsend_init",
    "Recv_init",
}
PROBE_OPS = {"Probe", "Iprobe"}
SENDRECV_OPS = {"Sendrecv", "Sendrecv_replace"}
# Collectives whose send side is one scalar count (Field::Bytes).
COLL_SCALAR_SEND = {
    "Barrier",
    "Bcast",
    "Reduce",
    "Allreduce",
    "Scan",
    "Exscan",
    "Gather",
    "Gatherv",
    "Scatter",
    "Allgather",
    "Allgatherv",
    "Alltoall",
    "Reduce_scatter_block",
    "Ibarrier",
    "Ibcast",
    "Ireduce",
    "Iallreduce",
    "Iscan",
    "Iexscan",
    "Igather",
    "Igatherv",
    "Iscatter",
    "Iallgather",
    "Iallgatherv",
    "Ialltoall",
    "Ireduce_scatter_block",
}
SEND_ONLY_AT_ROOT = {"Scatter", "Iscatter"}
# Collectives whose receive side is one scalar count (Field::Bytes2).
COLL_SCALAR_RECV = {
    "Gather",
    "Igather",
    "Scatter",
    "Iscatter",
    "Scatterv",
    "Iscatterv",
    "Allgather",
    "Iallgather",
    "Alltoall",
    "Ialltoall",
}
RECV_ONLY_AT_ROOT = {"Gather", "Igather"}
INDEX_OPS = {"Waitany", "Testany"}
SOME_OPS = {"Waitsome", "Testsome"}
FLAG_OPS = {"Test", "Testall", "Testany", "Iprobe"}

MAX_REPORTED = 30


def _case_id(case):
    name, n, extra = case
    return f"{name}-n{n}" + ("-" + "".join(extra).replace("-", "") if extra else "")


@pytest.fixture(scope="module")
def collector_lib_or_fail():
    try:
        return helpers.collector_library()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


def _peer_value(truth_value):
    if truth_value == "any":
        return K_ANY_SOURCE
    if truth_value == "proc_null":
        return K_PROC_NULL
    return truth_value


class RankCheck:
    """Compares one rank's recorded events with its truth lines; collects mismatches."""

    def __init__(self, name: str, rec: dict, truth: list[dict]):
        self.name = name
        self.rank = rec["rank"]
        self.rec = rec
        self.truth = truth
        self.comms = {c["id"]: c["members"] for c in rec["comms"]}
        self.events = [e for e in rec["events"] if e["op"] != "Other"]
        self.problems: list[str] = []

    def problem(self, k: int, what: str):
        t = self.truth[k]
        self.problems.append(
            f"{self.name} rank {self.rank} event {k} {t['op']} ({t['label']}): {what}"
        )

    def expect(self, k: int, field: str, recorded, expected):
        if recorded != expected:
            self.problem(k, f"{field}: recorded {recorded!r}, truth {expected!r}")

    def members(self, k: int, comm_id):
        if comm_id not in self.comms:
            self.problem(
                k, f"communicator id {comm_id} not in the recorded comm table {sorted(self.comms)}"
            )
            return None
        return self.comms[comm_id]

    # ------------------------------------------------------------------ checks
    def check_sequence(self) -> bool:
        """Op sequence (and per-op counts); False (with a problem) if they differ."""
        ops_rec = [e["op"] for e in self.events]
        ops_truth = [t["op"] for t in self.truth]
        assert [t["i"] for t in self.truth] == list(range(len(self.truth))), (
            "truth lines out of order"
        )
        if Counter(ops_rec) != Counter(ops_truth):
            self.problems.append(
                f"{self.name} rank {self.rank}: per-op counts differ: recorded "
                f"{dict(Counter(ops_rec))}, truth {dict(Counter(ops_truth))}"
            )
            return False
        if ops_rec != ops_truth:
            first = next(i for i, (a, b) in enumerate(zip(ops_rec, ops_truth)) if a != b)
            lo = max(0, first - 3)
            self.problems.append(
                f"{self.name} rank {self.rank}: op sequence differs at event {first}: "
                f"recorded {ops_rec[lo : first + 4]}, truth {ops_truth[lo : first + 4]}"
            )
            return False
        return True

    def check_peer(self, k, ev, members, key, rec_key):
        t = self.truth[k]
        expected = _peer_value(t[key])
        recorded = ev[rec_key]
        if isinstance(expected, int) and expected >= 0:
            if members is None:
                return
            world = self.rank
            if world not in members:
                self.problem(k, f"rank {world} is not a member of its own communicator {members}")
                return
            if recorded in (K_ANY_SOURCE, K_PROC_NULL):
                self.problem(k, f"{key}: recorded sentinel {recorded}, truth {expected}")
                return
            absolute = recorded + members.index(world)
            self.expect(
                k,
                f"{key} (relative {recorded} + my rank {members.index(world)})",
                absolute,
                expected,
            )
            if 0 <= absolute < len(members):
                self.expect(k, f"{key} as world rank", members[absolute], t[f"{key}_world"])
        else:
            self.expect(k, f"{key} sentinel", recorded, expected)

    def check_tag(self, k, ev, key, rec_key):
        expected = self.truth[k][key]
        self.expect(k, key, ev[rec_key], K_ANY_TAG if expected == "any" else expected)

    def check_event(self, k: int, ev: dict, created_pos: list):
        t = self.truth[k]
        op = t["op"]
        members = None
        if t["comm"] is not None:
            members = self.members(k, ev["comm"])
            if members is not None:
                self.expect(k, "communicator members", members, t["comm"])
        if op in P2P_OPS or op in PROBE_OPS or op in SENDRECV_OPS:
            self.check_peer(k, ev, members, "peer", "peer")
            self.check_tag(k, ev, "tag", "tag")
        if op in P2P_OPS or op in SENDRECV_OPS:
            self.expect(k, "bytes", ev["bytes"], t["bytes"])
            self.expect(k, "dtsize", ev["dtsize"], t["dtsize"])
        if op in SENDRECV_OPS:
            self.check_peer(k, ev, members, "peer2", "peer2")
            self.check_tag(k, ev, "tag2", "tag2")
            self.expect(k, "bytes2", ev["bytes2"], t["bytes2"])
            self.expect(k, "dtsize2", ev["dtsize2"], t["dtsize2"])
        if t["root"] is not None:
            self.expect(k, "root", ev["root"], t["root"])
        is_root = t["root"] is None or (
            members is not None and members.index(self.rank) == t["root"]
        )
        if op in COLL_SCALAR_SEND and (op not in SEND_ONLY_AT_ROOT or is_root):
            self.expect(k, "bytes", ev["bytes"], t["bytes"])
            if t["bytes"]:
                self.expect(k, "dtsize", ev["dtsize"], t["dtsize"])
        if op in COLL_SCALAR_RECV and (op not in RECV_ONLY_AT_ROOT or is_root):
            self.expect(k, "bytes2", ev["bytes2"], t["bytes2"])
        if "redop" in t:
            self.expect(k, "redop", ev["redop"], t["redop"])
        for key in ("sendcounts", "recvcounts"):
            if key in t:
                self.expect(k, key, ev.get(key, []), t[key])
        if "newcomm" in t:
            if t["newcomm"] is None:
                self.expect(k, "newcomm", ev["newcomm"], K_NO_COMM)
            else:
                created = self.members(k, ev["newcomm"])
                if created is not None:
                    self.expect(k, "new communicator members", created, t["newcomm"])
        if "color" in t:
            self.expect(
                k, "color", ev["color"], K_UNDEFINED if t["color"] == "undefined" else t["color"]
            )
            self.expect(k, "key", ev["key"], t["key"])
        if "ndims" in t:
            self.expect(k, "ndims (count)", ev["count"], t["ndims"])
        if op in INDEX_OPS:
            self.expect(
                k, "index", ev["index"], K_UNDEFINED if t["index"] == "undefined" else t["index"]
            )
        if op in SOME_OPS:
            outcount = K_UNDEFINED if t["outcount"] == "undefined" else t["outcount"]
            self.expect(k, "outcount (count)", ev["count"], outcount)
            self.expect(k, "indices", ev.get("indices", []), t["indices"])
        if op in FLAG_OPS:
            self.expect(k, "flag", ev["flag"], t["flag"])
        if "requests" in t:
            self.expect(k, "number of requests", len(ev.get("requests", [])), t["nreq"])
            self.expect(
                k, "request pairing (creating event of each request)", created_pos, t["requests"]
            )
            raw = ev.get("requests", [])
            nulls = [i for i, off in enumerate(raw) if off == K_NULL_REQUEST]
            self.expect(
                k,
                "MPI_REQUEST_NULL entries",
                nulls,
                [i for i, r in enumerate(t["requests"]) if r is None],
            )

    def check_events(self):
        resolved = helpers.resolve_requests(self.events)
        for k, ev in enumerate(self.events):
            self.check_event(k, ev, resolved[k])

    def site_of_label(self) -> dict:
        """label -> recorded site id; records problems for labels with several ids and ids
        shared by several labels; checks counts per call site."""
        by_label: dict[str, set] = {}
        for ev, t in zip(self.events, self.truth):
            by_label.setdefault(t["label"], set()).add(ev["site"])
        mapping = {}
        for label, ids in by_label.items():
            if len(ids) != 1:
                self.problems.append(
                    f"{self.name} rank {self.rank}: call site {label} recorded "
                    f"as {len(ids)} different sites {sorted(ids)}"
                )
            mapping[label] = min(ids)
        owners: dict[int, list] = {}
        for label, site in mapping.items():
            owners.setdefault(site, []).append(label)
        for site, labels in owners.items():
            if len(labels) > 1:
                self.problems.append(
                    f"{self.name} rank {self.rank}: different call sites "
                    f"{sorted(labels)} recorded as one site {site}"
                )
        per_site = Counter(ev["site"] for ev in self.events)
        per_label = Counter(mapping[t["label"]] for t in self.truth)
        if per_site != per_label:
            self.problems.append(f"{self.name} rank {self.rank}: counts per call site differ")
        return mapping

    def signature(self, site_id: int):
        sites = self.rec["sites"]
        if not 0 <= site_id < len(sites):
            return None
        modules = self.rec["modules"]
        return tuple(
            (modules[m] if 0 <= m < len(modules) else m, off) for m, off in sites[site_id]["frames"]
        )


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_example_raw_matches_truth(case, tmp_path, example, collector_lib_or_fail):
    name, nranks, extra = case
    exe = example(name)
    raw, truth_dir = tmp_path / "raw", tmp_path / "truth"
    env = {
        "LD_PRELOAD": str(collector_lib_or_fail),
        "SCALATRACE_RAW": str(raw),
        "SCALATRACE_OUT": "none",
    }
    helpers.run_mpi(
        nranks, [exe, "-i", ITERATIONS, *extra, "--truth", truth_dir], env=env, timeout=120
    )
    dump = helpers.dump_raw(raw)
    truth = helpers.read_truth(truth_dir, nranks)

    problems = compare_with_truth(name, dump, truth)
    if problems:
        more = len(problems) - MAX_REPORTED
        pytest.fail(
            f"{len(problems)} mismatches between the raw recording and the truth:\n"
            + "\n".join(problems[:MAX_REPORTED])
            + (f"\n... and {more} more" if more > 0 else "")
        )


def compare_with_truth(name: str, dump: dict, truth: list[list[dict]]) -> list[str]:
    """All mismatches between a ``scalatrace-dump raw`` result and the examples' truth."""
    nranks = len(truth)
    if [r["rank"] for r in dump["ranks"]] != list(range(nranks)):
        return [
            f"{name}: recorded ranks {[r['rank'] for r in dump['ranks']]}, expected 0..{nranks - 1}"
        ]
    problems: list[str] = []
    signatures: dict[str, dict] = {}
    for rec in dump["ranks"]:
        if rec["nranks"] != nranks:
            problems.append(f"{name} rank {rec['rank']}: nranks {rec['nranks']}, ran {nranks}")
        check = RankCheck(name, rec, truth[rec["rank"]])
        if check.check_sequence():
            check.check_events()
            mapping = check.site_of_label()
            for label, site in mapping.items():
                signatures.setdefault(label, {})[rec["rank"]] = check.signature(site)
        problems += check.problems
    for label, per_rank in sorted(signatures.items()):
        distinct = set(per_rank.values())
        if len(distinct) > 1:
            ranks_of = {sig: sorted(r for r, s in per_rank.items() if s == sig) for sig in distinct}
            problems.append(
                f"{name}: call site {label} has {len(distinct)} different signatures "
                f"across ranks (position-dependent?): "
                + "; ".join(f"ranks {rs}: {list(sig or [])[:3]}..." for sig, rs in ranks_of.items())
            )
    return problems


def test_deep_recursion_is_one_call_site(tmp_path, example, collector_lib_or_fail):
    """Recursion folding must make every level of a deep recursion one call site: 24 nested
    timesteps of stencil3d_recursive (stacks deeper than the recorded signature depth)."""
    name, nranks = "stencil3d_recursive", 2
    raw, truth_dir = tmp_path / "raw", tmp_path / "truth"
    helpers.run_mpi(
        nranks,
        [example(name), "-i", "24", "-c", "0", "--truth", truth_dir],
        env=helpers.collector_env(raw=raw),
        timeout=120,
    )
    problems = compare_with_truth(
        name, helpers.dump_raw(raw), helpers.read_truth(truth_dir, nranks)
    )
    assert problems == [], "\n".join(problems[:MAX_REPORTED])


# ---------------------------------------------------------------------------- truth itself
# The examples' own ground truth must be self-consistent, independent of the collector:
# requests refer to request-creating calls of the same rank, Init/Finalize bracket the calls,
# every message sent has a posted receive, and collectives agree across a communicator.

TRUTH_CASES = [
    (name, n, extra)
    for name, n, extra in CASES
    if (name, n)
    in {
        ("stencil1d", 5),
        ("stencil2d", 9),
        ("stencil3d", 8),
        ("stencil3d_recursive", 4),
        ("ring", 3),
        ("collectives", 4),
        ("alltoallv_is", 5),
        ("wildcard_lu", 4),
        ("pipeline", 4),
        ("comm_split", 6),
        ("nonblocking_coll", 4),
        ("waitsome", 5),
        ("iteration_specific", 3),
        ("rank_divergent", 5),
        ("fortran_ring", 4),
    }
]
SEND_SIDE = {"Send", "Ssend", "Isend"}
RECV_SIDE = {"Recv", "Irecv"}
COLLECTIVES = COLL_SCALAR_SEND | {
    "Scatterv",
    "Alltoallv",
    "Reduce_scatter",
    "Comm_split",
    "Comm_dup",
    "Cart_create",
    "Cart_sub",
    "Comm_free",
}


@pytest.mark.parametrize("case", TRUTH_CASES, ids=_case_id)
def test_example_truth_is_consistent(case, tmp_path, example):
    name, nranks, extra = case
    exe = example(name)
    helpers.run_mpi(nranks, [exe, "-i", ITERATIONS, *extra, "--truth", tmp_path], timeout=120)
    truth = helpers.read_truth(tmp_path, nranks)
    sent, received = Counter(), Counter()
    wildcard_received = Counter()
    per_comm: dict[tuple, dict] = {}
    for rank, lines in enumerate(truth):
        assert lines[0]["op"] == "Init" and lines[-1]["op"] == "Finalize"
        for t in lines:
            for ref in t.get("requests", []):
                assert ref is None or lines[ref]["op"] in helpers.REQUEST_CREATING_OPS, (
                    f"{name} rank {rank} line {t['i']}: request from line {ref} "
                    f"({lines[ref]['op'] if ref is not None else None})"
                )
            peers = []
            if t["op"] in SEND_SIDE or t["op"] == "Sendrecv":
                peers.append(("send", t["peer_world"], t["tag"]))
            if t["op"] in RECV_SIDE:
                peers.append(("recv", t["peer_world"], t["tag"]))
            if t["op"] == "Sendrecv":
                peers.append(("recv", t["peer2_world"], t["tag2"]))
            for side, peer, _tag in peers:
                if peer == "proc_null":
                    continue
                if side == "send":
                    sent[(rank, peer)] += 1
                elif peer == "any":
                    wildcard_received[rank] += 1
                else:
                    received[(peer, rank)] += 1
            if t["op"] in COLLECTIVES and t["comm"] is not None:
                seq = per_comm.setdefault(tuple(t["comm"]), {}).setdefault(rank, [])
                seq.append((t["op"], t["root"]))
    if name != "persistent":  # persistent sends are counted at Start time, not here
        for (src, dst), count in sent.items():
            got = received[(src, dst)]
            assert got <= count, f"{name}: {dst} receives {got} from {src}, only {count} sent"
        for dst in range(nranks):
            missing = sum(c for (s, d), c in sent.items() if d == dst) - sum(
                c for (s, d), c in received.items() if d == dst
            )
            assert missing == wildcard_received[dst], (
                f"{name}: rank {dst} gets {missing} messages not matched by a specific receive "
                f"but posts {wildcard_received[dst]} wildcard receives"
            )
    for members, by_rank in per_comm.items():
        sequences = {tuple(seq) for seq in by_rank.values()}
        assert len(sequences) == 1, f"{name}: collectives on {list(members)} differ by rank"


# ---------------------------------------------------------------------------- the checker
# compare_with_truth must accept a recording that follows the contract exactly and must reject
# one that is wrong in any checked respect. The exact recording is synthesised from the truth
# of real runs (no collector involved), following cpp/core/include/scalatrace/model/event.hpp.


def recording_from_truth(truth: list[list[dict]], module: str = "/bin/example") -> dict:
    nranks = len(truth)
    ranks = []
    for rank, lines in enumerate(truth):
        comms = [{"id": 0, "members": list(range(nranks))}, {"id": 1, "members": [rank]}]
        comm_id = {tuple(range(nranks)): 0}
        sites, site_of = [], {}
        events, created = [], 0
        slot_of_line = {}
        for t in lines:
            ev = {
                k: 0
                for k in (
                    "site",
                    "comm",
                    "peer",
                    "tag",
                    "bytes",
                    "dtsize",
                    "peer2",
                    "tag2",
                    "bytes2",
                    "dtsize2",
                    "root",
                    "redop",
                    "newcomm",
                    "color",
                    "key",
                    "index",
                    "flag",
                    "count",
                    "nameid",
                )
            }
            ev.update(op=t["op"], requests=[], sendcounts=[], recvcounts=[], indices=[])
            if t["label"] not in site_of:
                site_of[t["label"]] = len(sites)
                sites.append(
                    {
                        "frames": [[0, zlib.crc32(t["label"].encode())]],
                        "hash": 0,
                        "symbol": "",
                        "location": t["label"],
                    }
                )
            ev["site"] = site_of[t["label"]]
            members = t["comm"]
            if members is not None:
                ev["comm"] = comm_id[tuple(members)]
            for key in ("peer", "peer2"):
                if key in t and t[key] is not None:
                    v = _peer_value(t[key])
                    ev[key] = v if v < 0 else v - members.index(rank)
            for key in ("tag", "tag2"):
                if key in t and t[key] is not None:
                    ev[key] = K_ANY_TAG if t[key] == "any" else t[key]
            for key in ("bytes", "dtsize", "bytes2", "dtsize2", "root", "redop", "key", "flag"):
                if t.get(key) is not None:
                    ev[key] = t[key]
            for key in ("sendcounts", "recvcounts"):
                if key in t:
                    ev[key] = t[key]
            if "color" in t:
                ev["color"] = K_UNDEFINED if t["color"] == "undefined" else t["color"]
            if "index" in t:
                ev["index"] = K_UNDEFINED if t["index"] == "undefined" else t["index"]
            if "outcount" in t:
                ev["count"] = K_UNDEFINED if t["outcount"] == "undefined" else t["outcount"]
                ev["indices"] = t["indices"]
            if "ndims" in t:
                ev["count"] = t["ndims"]
            if "newcomm" in t:
                if t["newcomm"] is None:
                    ev["newcomm"] = K_NO_COMM
                else:
                    ev["newcomm"] = len(comms)
                    comms.append({"id": len(comms), "members": t["newcomm"]})
                    comm_id.setdefault(tuple(t["newcomm"]), ev["newcomm"])
            ev["requests"] = [
                K_NULL_REQUEST if ref is None else created - slot_of_line[ref]
                for ref in t.get("requests", [])
            ]
            if t["op"] in helpers.REQUEST_CREATING_OPS:
                slot_of_line[t["i"]] = created
                created += 1
            events.append(ev)
        # an unmodelled call the comparison must skip
        events.insert(1, dict(events[0], op="Other", nameid=0))
        ranks.append(
            {
                "rank": rank,
                "nranks": nranks,
                "metadata": {},
                "modules": [module],
                "sites": sites,
                "comms": comms,
                "names": ["MPI_Comm_rank"],
                "events": events,
            }
        )
    return {"ranks": ranks}


def _first(events, op):
    return next(i for i, e in enumerate(events) if e["op"] == op)


def test_checker_accepts_exact_and_rejects_wrong_recordings(tmp_path, example):
    truths = {}
    for name, n in (("waitsome", 4), ("comm_split", 4), ("wildcard_lu", 3), ("persistent", 2)):
        helpers.run_mpi(n, [example(name), "-i", "2", "--truth", tmp_path / name], timeout=120)
        truths[name] = helpers.read_truth(tmp_path / name, n)
    for name, truth in truths.items():
        assert compare_with_truth(name, recording_from_truth(truth), truth) == [], name

    def rejected(name, mutate):
        dump = recording_from_truth(truths[name])
        mutate(dump["ranks"][1])
        return compare_with_truth(name, dump, truths[name])

    def shift_peer(r):
        r["events"][_first(r["events"], "Irecv")]["peer"] += 1

    def swap_requests(r):
        e = r["events"][_first(r["events"], "Waitsome")]
        e["requests"][0], e["requests"][1] = e["requests"][1], e["requests"][0]

    def absolute_frames(r):  # as if the collector recorded raw addresses under ASLR
        for s in r["sites"]:
            s["frames"] = [[m, off + 0x5555_0000] for m, off in s["frames"]]

    def merge_sites(r):
        r["events"][_first(r["events"], "Isend")]["site"] = r["events"][
            _first(r["events"], "Irecv")
        ]["site"]

    def wrong_members(r):
        r["comms"][2]["members"] = list(reversed(r["comms"][2]["members"]))

    def drop_event(r):
        del r["events"][_first(r["events"], "Waitall")]

    def concrete_wildcard(r):
        r["events"][_first(r["events"], "Recv")]["peer"] = -1

    def undefined_color_as_zero(r):
        splits = [e for e in r["events"] if e["op"] == "Comm_split"]
        splits[2]["color"] = 0  # rank 1 is odd: its third split passed MPI_UNDEFINED

    assert rejected("waitsome", shift_peer)
    assert rejected("waitsome", swap_requests)
    assert rejected("waitsome", absolute_frames)
    assert rejected("waitsome", merge_sites)
    assert rejected("comm_split", wrong_members)
    assert rejected("persistent", drop_event)
    assert rejected("wildcard_lu", concrete_wildcard)
    assert rejected("comm_split", undefined_color_as_zero)
