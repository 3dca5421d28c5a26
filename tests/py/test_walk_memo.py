"""Remembered stack walks (cpp/pmpi/capture/walk_memo.hpp) give exactly the call sites of a full walk.

tests/py/programs/stack_paths.c reaches one MPI_Iprobe statement through five stack shapes
(the same return address and stack position under different outer frames, recursion of
varying depth (folded: depth 0 and deeper are two call sites), alloca-sized frames, a stack-realigning function) on two threads. Built with
and without optimisation (with -O2 the program has no frame pointers), it runs under the
collector with remembered walks on (the default) and off (SCALATRACE_STACK_MEMO=0, libunwind
at every call); the raw streams must name the same call site for every event.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import helpers
import pytest

PROGRAM = Path(__file__).resolve().parent / "programs" / "stack_paths.c"
CALLS_PER_THREAD = 200  # the program's loop count
PATHS = 5


def compile_stack_paths(tmp_path: Path, opt: str) -> Path:
    if shutil.which("mpicc.mpich") is None:
        pytest.skip("mpicc.mpich not installed")
    exe = tmp_path / f"stack_paths{opt}"
    proc = subprocess.run(
        ["mpicc.mpich", opt, "-g", str(PROGRAM), "-o", str(exe), "-lpthread"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return exe


def site_sequences(tmp_path: Path, exe: Path, memo: int) -> list[list[tuple]]:
    """Per rank: (op, frames of the call site) of every event, in order; checks how many
    calls walked the stack (metadata ``stack_walks``)."""
    raw = tmp_path / f"raw-memo{memo}"
    env = helpers.collector_env(raw=raw, quiet=1, stack_memo=memo)
    helpers.run_mpi(2, [exe], env=env, timeout=120, cwd=tmp_path)
    out = []
    for rank in helpers.dump_raw(raw)["ranks"]:
        assert rank["metadata"]["setting.SCALATRACE_STACK_MEMO"] == str(memo)
        walks, events = int(rank["metadata"]["stack_walks"]), len(rank["events"])
        learned = int(rank["metadata"]["stack_walks_learned"])
        assert int(rank["metadata"]["stack_walk_ns"]) > 0
        if memo:  # walked: the first two calls of each (place, outer stack), a few dozen
            assert walks < events // 4, (walks, events)
            # described for remembering: the second call of each place and each new outer
            # stack there (five paths and a recursion depth, on each of two threads)
            assert PATHS <= learned < walks, (learned, walks)
        else:  # every call but MPI_Init (walked by its own wrapper)
            assert walks == events - 1, (walks, events)
            assert learned == 0
        frames = [tuple(map(tuple, s["frames"])) for s in rank["sites"]]
        out.append([(e["op"], frames[e["site"]]) for e in rank["events"]])
    return out


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_remembered_walks_name_the_same_call_sites_as_full_walks(tmp_path, opt):
    exe = compile_stack_paths(tmp_path, opt)
    remembered = site_sequences(tmp_path, exe, 1)
    walked = site_sequences(tmp_path, exe, 0)
    assert len(remembered) == len(walked) == 2
    for rank, (mine, truth) in enumerate(zip(remembered, walked)):
        assert len(mine) == len(truth)
        for k, (a, b) in enumerate(zip(mine, truth)):
            assert a == b, f"rank {rank} event {k}: remembered {a} != walked {b}"
        # the paths stay apart (and each path is one call site) on both threads
        probes = [site for op, site in mine if op == "Iprobe"]
        assert len(probes) == 2 * CALLS_PER_THREAD
        for thread in range(2):
            calls = probes[thread * CALLS_PER_THREAD : (thread + 1) * CALLS_PER_THREAD]
            # path 2 is recurse(i % 7): depth 0 and the (folded) deeper recursions differ
            groups = [[i for i in range(CALLS_PER_THREAD) if i % PATHS == p] for p in range(PATHS)]
            groups[2:3] = [[i for i in groups[2] if i % 7 == 0], [i for i in groups[2] if i % 7]]
            per_group = [{calls[i] for i in g} for g in groups]
            assert all(len(s) == 1 for s in per_group), [len(s) for s in per_group]
            assert len(set().union(*per_group)) == len(groups)
