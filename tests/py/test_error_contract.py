"""One error contract for every entry point (issue 32; docs/python.md, "Errors").

Python: a bad argument raises :class:`scalatrace.UsageError` (a ``ValueError`` and a
``ScalatraceError``) with a one-line message naming the argument, before the value reaches the
compiled core. Commands (``scalatrace ...``, ``scalatrace-dump``, ``scalatrace-replay``): one
line on stderr, exit status 2 for bad arguments, 1 for other errors, no traceback unless
``SCALATRACE_DEBUG=1``. Collector: settings spelled ``none``/``off`` mean off, a window below 2
is raised to 2, a bad setting is reported once (by rank 0), and a rank's exit status survives.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import helpers
import pytest
from test_collector import compile_program

import scalatrace
from scalatrace.errors import CoreArgumentError, ScalatraceError, TraceFormatError, UsageError

NAN = math.nan


@pytest.fixture(scope="module")
def ring(tmp_path_factory):
    """A real 2-rank run of the ring example, raw mode on (``raw_dir`` set)."""
    tmp = tmp_path_factory.mktemp("contract")
    return scalatrace.trace(
        [str(helpers.example_path("ring"))], np=2, out=tmp / "ring.sct", raw=True, timeout=120
    )


def _calls(t):
    """(label, callable, expected error class): every public function of scalatrace.__all__
    and the Trace methods that take arguments, each with a bad one."""
    raw = scalatrace.read_raw(t.raw_dir)
    path = str(t.path)
    return [
        ("simulate(seed=-1)", lambda: scalatrace.simulate(t, seed=-1), UsageError),
        ("simulate(seed=2.5)", lambda: scalatrace.simulate(t, seed=2.5), UsageError),
        ("simulate(contention='no')", lambda: scalatrace.simulate(t, contention="no"), UsageError),
        (
            "simulate(compute_scale=nan)",
            lambda: scalatrace.simulate(t, compute_scale=NAN),
            UsageError,
        ),
        ("simulate(size_scale=-1)", lambda: scalatrace.simulate(t, size_scale=-1), UsageError),
        ("simulate(timing='exact')", lambda: scalatrace.simulate(t, timing="exact"), UsageError),
        (
            "simulate(ranks_per_node=0)",
            lambda: scalatrace.simulate(t, ranks_per_node=0),
            UsageError,
        ),
        ("simulate(timeline='yes')", lambda: scalatrace.simulate(t, timeline="yes"), UsageError),
        ("LogGP(L=True)", lambda: scalatrace.LogGP(L=True), UsageError),
        ("LogGP(G=nan)", lambda: scalatrace.LogGP(G=NAN), UsageError),
        ("sweep(bad axis)", lambda: scalatrace.sweep(t, {"colour": [1]}), UsageError),
        ("calibrate(np=1)", lambda: scalatrace.calibrate(np=1), UsageError),
        ("calibrate(np=trace)", lambda: scalatrace.calibrate(t), UsageError),
        ("calibrate(timeout=nan)", lambda: scalatrace.calibrate(timeout=NAN), UsageError),
        (
            "calibrate(footprint_bytes without compute_ns)",
            lambda: scalatrace.calibrate(footprint_bytes=1024),
            UsageError,
        ),
        ("calibrate_in_situ(0)", lambda: scalatrace.calibrate_in_situ(0), UsageError),
        (
            "calibrate_in_situ(footprint_bytes=-1)",
            lambda: scalatrace.calibrate_in_situ(1000, footprint_bytes=-1),
            UsageError,
        ),
        (
            "calibrate_in_situ_blocks(one block)",
            lambda: scalatrace.calibrate_in_situ_blocks([1000.0]),
            UsageError,
        ),
        (
            "calibrate_in_situ_blocks(message_bytes of another length)",
            lambda: scalatrace.calibrate_in_situ_blocks([1000.0, 2000.0], message_bytes=[8]),
            UsageError,
        ),
        (
            "calibrate_in_situ_blocks(chains of another length)",
            lambda: scalatrace.calibrate_in_situ_blocks([1000.0, 2000.0], chains=[2]),
            UsageError,
        ),
        (
            "calibrate_in_situ(chains=0)",
            lambda: scalatrace.calibrate_in_situ(1000.0, chains=0),
            UsageError,
        ),
        (
            "OverheadLaw(regimes without a threshold)",
            lambda: scalatrace.OverheadLaw((), (1e-7, 2e-7), (0.0, 0.0)),
            UsageError,
        ),
        (
            "extrapolate(dims='16')",
            lambda: scalatrace.extrapolate([t, t, t], dims="16"),
            UsageError,
        ),
        ("extrapolate(ranks=-3)", lambda: scalatrace.extrapolate([t, t, t], ranks=-3), UsageError),
        (
            "extrapolate(ranks=True)",
            lambda: scalatrace.extrapolate([t, t, t], ranks=True),
            UsageError,
        ),
        ("extrapolate(one trace)", lambda: scalatrace.extrapolate(t, ranks=8), UsageError),
        ("extrapolate(no target)", lambda: scalatrace.extrapolate([t, t, t]), UsageError),
        ("fit_scaling(lengths)", lambda: scalatrace.fit_scaling([1, 2], [1]), UsageError),
        ("fit_scaling(strings)", lambda: scalatrace.fit_scaling(["a"] * 3, [1] * 3), UsageError),
        ("fit_scaling(nan)", lambda: scalatrace.fit_scaling([1, 2, 4], [1, NAN, 3]), UsageError),
        ("extrapolation_laws(str)", lambda: scalatrace.extrapolation_laws("x"), UsageError),
        ("compare(trace, 5)", lambda: scalatrace.compare(t, 5), UsageError),
        ("load(/dev/null)", lambda: scalatrace.load("/dev/null"), TraceFormatError),
        ("load(directory)", lambda: scalatrace.load(t.raw_dir), TraceFormatError),
        ("replay(size_scale=1e12)", lambda: scalatrace.replay(path, size_scale=1e12), UsageError),
        (
            "replay(compute_scale=nan)",
            lambda: scalatrace.replay(path, compute_scale=NAN),
            UsageError,
        ),
        ("replay(seed=-1)", lambda: scalatrace.replay(path, seed=-1), UsageError),
        (
            "replay(progress_poll_us=-1)",
            lambda: scalatrace.replay(path, progress_poll_us=-1),
            UsageError,
        ),
        ("replay(timing='exact')", lambda: scalatrace.replay(path, timing="exact"), UsageError),
        ("trace(np=0)", lambda: scalatrace.trace(["true"], np=0), UsageError),
        (
            "to_extrap(bad metric)",
            lambda: scalatrace.to_extrap([t], "x.jsonl", metric="?"),
            UsageError,
        ),
        ("RawRecording.compress(window=-1)", lambda: raw.compress(window=-1), UsageError),
        ("RawRecording.compress(window='x')", lambda: raw.compress(window="x"), UsageError),
        ("Trace.to_c(resolve_wildcards='no')", lambda: t.to_c(resolve_wildcards="no"), UsageError),
        (
            "Trace.clusters(threshold=nan)",
            lambda: t.clusters(method="hierarchical", threshold=NAN),
            UsageError,
        ),
        ("Trace.clusters(k=0)", lambda: t.clusters(k=0), UsageError),
        ("Trace.clusters(method='?')", lambda: t.clusters(method="?"), UsageError),
        ("Trace.comm_matrix(metric='?')", lambda: t.comm_matrix(metric="furlongs"), UsageError),
        ("Trace.summary(by='?')", lambda: t.summary(by="colour"), UsageError),
        ("Trace.rank_table(99)", lambda: t.rank_table(99), UsageError),
        ("Trace.events(99)", lambda: list(t.events(99)), UsageError),
        ("Trace.to_dataframe(ranks=[-1])", lambda: t.to_dataframe(ranks=[-1]), UsageError),
        ("Trace.find(op='Telepathy')", lambda: t.find(op="Telepathy"), UsageError),
        (
            "ElasticValue.value_at(0, 10**9)",
            lambda: (
                next(n for n in t.walk() if hasattr(n, "fields") and n.fields)
                .fields[
                    next(
                        iter(next(n for n in t.walk() if hasattr(n, "fields") and n.fields).fields)
                    )
                ]
                .value_at(0, 10**9)
            ),
            UsageError,
        ),
        (
            "codegen.to_c(min_compute_ns=nan)",
            lambda: _codegen().to_c(t, min_compute_ns=NAN),
            UsageError,
        ),
        (
            "codegen.to_conceptual(min_compute_ns=-1)",
            lambda: _codegen().to_conceptual(t, min_compute_ns=-1),
            UsageError,
        ),
        (
            "codegen.write_benchmark(lang='?')",
            lambda: _codegen().write_benchmark(t, "cobol", "x"),
            UsageError,
        ),
    ]


def _codegen():
    from scalatrace import codegen

    return codegen


def test_every_bad_argument_is_a_one_line_usage_error(ring):
    failures = []
    for label, call, expected in _calls(ring):
        try:
            call()
        except Exception as err:  # noqa: BLE001 - the class is what is checked
            text = str(err)
            if not isinstance(err, expected):
                failures.append(f"{label}: {type(err).__name__}: {text[:200]}")
            elif "\n" in text.strip() or not text.strip():
                failures.append(f"{label}: message is not one line: {text!r}")
        else:
            failures.append(f"{label}: accepted")
    assert not failures, "\n".join(failures)


def test_usage_errors_are_value_errors_and_ours():
    from scalatrace.errors import SimulationParameterError

    assert issubclass(SimulationParameterError, UsageError)
    assert issubclass(UsageError, ValueError) and issubclass(UsageError, ScalatraceError)


def test_read_raw_refuses_a_directory_mixing_two_runs(ring, tmp_path):
    other = tmp_path / "other"
    helpers.run_mpi(2, [helpers.example_path("stencil1d")], env=helpers.collector_env(raw=other))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "rank-0.straw").write_bytes((Path(ring.raw_dir) / "rank-0.straw").read_bytes())
    (mixed / "rank-1.straw").write_bytes((other / "rank-1.straw").read_bytes())
    with pytest.raises(TraceFormatError, match="different runs"):
        scalatrace.read_raw(mixed)


# ---- commands ------------------------------------------------------------------------------


def _subcommands() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "scalatrace.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    listed = re.search(r"\{([a-z,]+)\}", out)
    assert listed, out
    return listed.group(1).split(",")


def _bad_invocations(trace: str) -> list[list[str]]:
    """Per subcommand, invocations with bad arguments (each must exit 2)."""
    table = {
        "run": [
            ["run", "-n", "x", "--", "true"],
            ["run", "-n", "2", "--env", "NOEQUALS", "--", "true"],
            ["run", "-n", "2"],
            ["run", "-n", "0", "--", "true"],
            ["run", "-n", "100000000000000000000", "--", "true"],
        ],
        "show": [["show"], ["show", trace, "--max-nodes", "many"]],
        "report": [["report"], ["report", trace, "--pages", "3"]],
        "stats": [["stats", trace, "--by", "colour"]],
        "heatmap": [["heatmap", trace], ["heatmap", trace, "-o", "x.png", "--metric", "furlongs"]],
        "simulate": [
            ["simulate", trace, "--seed", "-1"],
            ["simulate", trace, "--L", "-1"],
            ["simulate", trace, "--timing", "exact"],
            ["simulate", trace, "--compute-scale", "nan"],
            ["simulate", trace, "--seed", "100000000000000000000"],
            ["simulate", trace, "--topology", "torus:4xq"],
            ["simulate", trace, "--topology", "hypercube:4"],
            ["simulate", trace, "--topology", "torus:1", "--placement", "0,x"],
            ["simulate", trace, "--noise", "1000"],
            ["simulate", trace, "--noise", "10:1"],
        ],
        "goal": [
            ["goal", trace],
            ["goal", trace, "-o", "x.goal", "--timing", "exact"],
            ["goal", trace, "-o", "x.goal", "--seed", "-1"],
        ],
        "sweep": [
            ["sweep", trace, "--param", "colour"],
            ["sweep", trace, "--param", "compute_scale=a,b"],
            ["sweep", trace, "--param", "contention=maybe"],
        ],
        "extrapolate": [
            ["extrapolate", trace, "-o", "x.sct"],
            ["extrapolate", trace, trace, trace, "--dims", "axb", "-o", "x.sct"],
            ["extrapolate", trace, trace, trace, "--ranks", "-4", "-o", "x.sct"],
            ["extrapolate", trace, trace, trace, "--ranks", "100000000000000000000", "-o", "x.sct"],
        ],
        "generate": [["generate", trace, "--lang", "cobol", "-o", "x"], ["generate", trace]],
        "phases": [["phases"], ["phases", trace, "--plot"]],
        "model": [
            ["model", trace],
            ["model", trace, trace, trace, "--param", "N=oops"],
            ["model", trace, trace, trace, "--max-terms", "9"],
            ["model", trace, trace, trace, "--predict", "N"],
            ["model", trace, trace, trace, "--optimal-grain", "K", "--at", "P=2"],
            ["model", trace, trace, trace, "--compute-regimes", "N/P"],
            ["model", trace, trace, trace, "--calibrate", "2", "--calibrate-blocks", "K=4"],
            ["model", trace, trace, trace, "--calibrate", "2", "--calibrate-compute-ns", "1,x"],
        ],
        "clusters": [
            ["clusters", trace, "-k", "0"],
            ["clusters", trace, "--method", "?"],
            ["clusters", trace, "--features", "colour"],
        ],
        "replay": [
            ["replay", trace, "--size-scale", "1e12"],
            ["replay", trace, "--timing", "exact"],
            ["replay", trace, "--seed", "100000000000000000000"],
            ["replay"],
        ],
    }
    subs = _subcommands()
    assert sorted(table) == sorted(subs), (
        f"subcommands without a bad-argument case: {set(subs) ^ set(table)}"
    )
    return [argv for sub in subs for argv in table[sub]]


def _assert_one_line_usage_error(proc: subprocess.CompletedProcess, what: str) -> None:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, f"{what}: exit {proc.returncode}, stderr {proc.stderr!r}"
    assert len(lines) == 1, f"{what}: stderr is not one line: {proc.stderr!r}"
    assert "Traceback" not in proc.stderr and "error" in lines[0], f"{what}: {proc.stderr!r}"


def test_every_cli_subcommand_rejects_bad_arguments_in_one_line(ring, tmp_path):
    for argv in _bad_invocations(str(ring.path)):
        proc = subprocess.run(
            [sys.executable, "-m", "scalatrace.cli", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        _assert_one_line_usage_error(proc, "scalatrace " + " ".join(argv))
        assert not (tmp_path / "x.sct").exists() and not (tmp_path / "x").exists()


def test_cli_other_errors_exit_1_and_debug_shows_the_traceback(tmp_path):
    bad = tmp_path / "not-a-trace.sct"
    bad.write_bytes(b"hello, not a trace\n")
    cmd = [sys.executable, "-m", "scalatrace.cli", "show", str(bad)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("scalatrace: error: ") and "Traceback" not in proc.stderr
    env = dict(os.environ, SCALATRACE_DEBUG="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 1 and "Traceback" in proc.stderr


def _run_tool(name: str, argv: list[str]) -> subprocess.CompletedProcess:
    """One of the C++ tools run directly (no launcher), output captured."""
    return subprocess.run(
        [str(helpers.tool_path(name)), *argv], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["trace", "T", "--rank", "abc"],
        ["trace", "T", "--rank", "-1"],
        ["trace", "T", "--rank", "1x"],
        ["trace", "T"],
        ["raw"],
        ["no-such-command"],
        [],
    ],
)
def test_scalatrace_dump_rejects_bad_arguments_in_one_line(ring, argv):
    argv = [str(ring.path) if a == "T" else a for a in argv]
    proc = _run_tool("scalatrace-dump", argv)
    _assert_one_line_usage_error(proc, "scalatrace-dump " + " ".join(argv))


def test_scalatrace_dump_unreadable_input_exits_1(tmp_path):
    bad = tmp_path / "bad.sct"
    bad.write_bytes(b"not a trace")
    proc = _run_tool("scalatrace-dump", ["tree", str(bad)])
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["T", "--size-scale", "1e12"],
        ["T", "--size-scale", "-1"],
        ["T", "--compute-scale", "nan"],
        ["T", "--timing", "exact"],
        ["T", "--seed", "x"],
        ["T", "--progress-poll", "-1"],
        ["T", "--bogus"],
        [],
    ],
)
def test_scalatrace_replay_rejects_bad_arguments_in_one_line(ring, argv):
    argv = [str(ring.path) if a == "T" else a for a in argv]
    proc = _run_tool("scalatrace-replay", argv)
    _assert_one_line_usage_error(proc, "scalatrace-replay " + " ".join(argv))


# ---- collector: settings and exit status (real runs, 2 ranks) -------------------------------


@pytest.mark.parametrize("word", ["none", "off"])
def test_raw_and_out_spelled_none_or_off_are_off(tmp_path, word):
    env = helpers.collector_env(raw=word, out=word)
    helpers.run_mpi(2, [helpers.example_path("ring")], env=env, cwd=tmp_path)
    assert list(tmp_path.iterdir()) == [], "a setting meaning off created a file or directory"


def test_window_below_2_is_raised_to_2_and_bad_settings_are_reported_once(tmp_path):
    env = helpers.collector_env(out=tmp_path / "w.sct")
    env.update(SCALATRACE_WINDOW="0", SCALATRACE_STACK_DEPTH="lots")
    proc = helpers.run_mpi(2, [helpers.example_path("ring")], env=env, cwd=tmp_path)
    assert scalatrace.load(tmp_path / "w.sct").settings["setting.SCALATRACE_WINDOW"] == "2"
    assert proc.stderr.count("SCALATRACE_STACK_DEPTH='lots'") == 1, proc.stderr
    assert "SCALATRACE_WINDOW" not in proc.stderr


def _exit_codes(cmd: list[str], env: dict) -> tuple[int, list[int]]:
    """mpiexec's status and each rank's wait status (hydra's -print-all-exitcodes)."""
    ranks_env = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
    proc = subprocess.run(
        [helpers.mpiexec(), "-print-all-exitcodes", "-n", "2", *ranks_env, *cmd],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"Exit codes: \[[^\]]*\] ([0-9,]+)", proc.stdout + proc.stderr)
    assert found, proc.stdout + proc.stderr
    assert "not every rank reached exit" not in proc.stderr, proc.stderr
    return proc.returncode, [int(c) for c in found.group(1).split(",")]


def test_a_rank_exit_status_survives_the_collector(tmp_path):
    """Rank 1 calls exit(5) without MPI_Finalize while rank 0 goes on: the collector must not
    hold rank 1 back (it would change how hydra ends the run): rank 1's status is 5 with and
    without the collector, and mpiexec fails in both."""
    exe = compile_program("exit_code", tmp_path)
    plain_rc, plain = _exit_codes([str(exe)], {})
    env = helpers.collector_env(out=tmp_path / "e.sct", raw=tmp_path / "raw")
    env["SCALATRACE_EXIT_WAIT"] = "60"
    traced_rc, traced = _exit_codes([str(exe)], env)
    assert plain[1] == traced[1] == 5 << 8  # wait status of exit(5)
    assert plain_rc != 0 and traced_rc != 0
    # Rank 1's own stream is complete: it finished at exit.
    assert (tmp_path / "raw" / "rank-1.straw").stat().st_size > 0


# ---- integers the core cannot take: a walk over the public functions -----------------------

OVERFLOW = 10**20  # beyond 64 bits: pybind11 refuses it for any integer parameter


def _numeric_parameters(func) -> list[str]:
    """The parameters of ``func`` that take an int or a float (by default value or annotation)."""
    out = []
    for name, p in inspect.signature(func).parameters.items():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or name == "self":
            continue
        annotation = p.annotation if isinstance(p.annotation, str) else str(p.annotation)
        numeric_default = type(p.default) in (int, float)
        if numeric_default or re.search(r"\b(int|float)\b", annotation):
            out.append(name)
    return out


def _public_functions(t, raw) -> list[tuple[str, object, dict]]:
    """(label, function, required arguments): every public function and method taking numbers."""
    from scalatrace import clustering, codegen, simgrid

    traces = [t, t, t]
    required = {
        "trace": t,
        "traces": traces,
        "trace_or_path": str(t.path),
        "a": t,
        "b": t,
        "cmd": [str(helpers.example_path("ring")), "-i", "2"],
        "sizes": [2, 4, 8],
        "values": [1.0, 2.0, 3.0],
        "path": "unused.jsonl",
        "directory": "unused-dir",
        "output": "unused.c",
        "lang": "c",
        "grid": {"compute_scale": [1.0]},
        "xs": [2, 4, 8],
        "ys": [1.0, 2.0, 3.0],
        "nranks": 2,
        "latency_s": 1e-6,
        "bandwidth_bytes_per_s": 1e9,
        "rank": 0,
        # three parameter points (the same trace three times would be one point's repeats)
        "m": scalatrace.model(traces, params={"N": [1.0, 2.0, 3.0]}),
        "time": 1.0,
        "ps": [2, 4],
        "points": {"P": [2.0, 4.0, 8.0]},
        "compute_ns": 1000.0,
    }
    functions = [
        (name, getattr(scalatrace, name))
        for name in scalatrace.__all__
        if inspect.isfunction(getattr(scalatrace, name, None))
    ]
    functions += [("LogGP", scalatrace.LogGP), ("replay", scalatrace.replay.replay)]
    functions += [(f"codegen.{n}", getattr(codegen, n)) for n in ("to_c", "to_conceptual")]
    functions += [
        (f"simgrid.{n}", getattr(simgrid, n)) for n in ("to_simgrid_ti", "write_simgrid_platform")
    ]
    functions += [("clustering.clusters", clustering.clusters)]
    bound = [(f"Trace.{n}", getattr(t, n)) for n in dir(t) if not n.startswith("_")]
    bound += [(f"RawRecording.{n}", getattr(raw, n)) for n in dir(raw) if not n.startswith("_")]
    bound += [("LogGP().scaled", scalatrace.LogGP().scaled)]
    out = []
    for label, func in functions + [(lb, f) for lb, f in bound if inspect.ismethod(f)]:
        params = inspect.signature(func).parameters
        given = {
            n: required[n]
            for n, p in params.items()
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }
        for name in _numeric_parameters(func):
            out.append((f"{label}({name}=10**20)", func, {**given, name: OVERFLOW}))
    return out


def _core_calls(t, raw) -> list[tuple[str, object]]:
    """The compiled core's own classes that scalatrace exports, each with 10**20 somewhere."""
    event = next(n for n in t.walk() if hasattr(n, "fields") and n.fields)
    value = next(iter(event.fields.values()))
    array = next(iter(event.arrays.values()))
    ranks = scalatrace.RankList([0, 1])
    seq = value.alternatives[0][0]
    return [
        ("ElasticValue.value_at(0, 10**20)", lambda: value.value_at(0, OVERFLOW)),
        ("ElasticValue.value_at(10**20)", lambda: value.value_at(OVERFLOW)),
        ("ElasticValue.for_rank(10**20)", lambda: value.for_rank(OVERFLOW)),
        ("ElasticArray.value_at(0, 10**20)", lambda: array.value_at(0, OVERFLOW)),
        ("RankList([10**20])", lambda: scalatrace.RankList([OVERFLOW])),
        ("RankList.range(0, 10**20)", lambda: scalatrace.RankList.range(0, OVERFLOW)),
        ("RankList[10**20]", lambda: ranks[OVERFLOW]),
        ("RankList.index(10**20)", lambda: ranks.index(OVERFLOW)),
        ("ValueSeq[10**20]", lambda: seq[OVERFLOW]),
        ("RawRecording[0][10**20]", lambda: raw[0][OVERFLOW]),
        ("RankRecording.rank_table(10**20)", lambda: raw[0].rank_table(OVERFLOW)),
    ]


def _outcome(call) -> str | None:
    """None if ``call`` returned or raised a one-line UsageError within 60 s, else what it did."""

    def alarm(signum, frame):
        raise TimeoutError("still running after 60 s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    try:
        call()
    except UsageError as err:
        text = str(err)
        if "\n" in text.strip() or not text.strip():
            return f"message is not one line: {text!r}"
    except Exception as err:  # noqa: BLE001 - the class is what is checked
        return f"{type(err).__name__}: {str(err)[:300]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return None


def test_integers_beyond_64_bits_are_one_line_usage_errors_everywhere(ring, tmp_path, monkeypatch):
    """Every public function and method that takes a number, called with 10**20 for it (one
    parameter at a time), either works (a limit may be that large) or raises a one-line
    UsageError; never pybind11's TypeError listing signatures, an OverflowError or a hang."""
    monkeypatch.chdir(tmp_path)
    raw = scalatrace.read_raw(ring.raw_dir)
    walked = _public_functions(ring, raw)
    assert len(walked) >= 60, len(walked)  # the walk reaches the public surface
    failures = []
    for label, func, kwargs in walked:
        problem = _outcome(functools.partial(func, **kwargs))
        if problem:
            failures.append(f"{label}: {problem}")
    for label, call in _core_calls(ring, raw):
        try:
            call()
        except CoreArgumentError as err:
            text = str(err)
            if "\n" in text or "10000000000000000000" not in text or "out of range" not in text:
                failures.append(f"{label}: {text!r}")
            assert isinstance(err, UsageError) and isinstance(err, TypeError)
        except Exception as err:  # noqa: BLE001
            failures.append(f"{label}: {type(err).__name__}: {str(err)[:300]}")
        else:
            failures.append(f"{label}: accepted")
    assert not failures, "\n".join(failures)


def test_core_argument_error_names_the_function_and_what_it_takes(ring):
    event = next(n for n in ring.walk() if hasattr(n, "fields") and n.fields)
    value = next(iter(event.fields.values()))
    with pytest.raises(CoreArgumentError) as err:
        value.value_at(0, OVERFLOW)
    assert str(err.value) == (
        "ElasticValue.value_at(): occurrence=100000000000000000000 is out of range (beyond 64 bits); "
        "it takes (rank: int, occurrence: int = 0)"
    )
    with pytest.raises(CoreArgumentError, match=r"cannot take rank='x'"):
        value.value_at("x")
