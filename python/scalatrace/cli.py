"""The ``scalatrace`` command: run, show, stats, heatmap, simulate, sweep, goal, replay, generate,
phases, model.

Errors (docs/python.md, "Errors"): one line ``scalatrace: error: ...`` on stderr, exit status 2
for a usage error (bad arguments), 1 for any other error, the run's own status for a failed MPI
run; a Python traceback only with ``SCALATRACE_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import MPIRunError, ScalatraceError, UsageError

if TYPE_CHECKING:
    from .simulate import LogGP

USAGE_EXIT = 2
ERROR_EXIT = 1


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``scalatrace: error: <sub>: <what> (see ... --help)``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sub = self.prog.partition(" ")[2]
        where = f"{sub}: " if sub else ""
        print(f"scalatrace: error: {where}{message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(USAGE_EXIT)


def _extrapolate_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    e = sub.add_parser(
        "extrapolate", help="trace of a larger run from traces of small runs (ScalaExtrap)"
    )
    e.add_argument("traces", nargs="+", help="merged traces of one program at 3 or more sizes")
    e.add_argument("--ranks", type=int, help="target rank count")
    e.add_argument("--dims", help="target grid, fastest dimension first, e.g. 32x32")
    e.add_argument("-o", "--output", required=True, help="output trace (.sct)")
    e.add_argument(
        "--no-timing",
        action="store_true",
        help="copy the largest input's timing instead of fitting models",
    )
    e.add_argument(
        "--laws", action="store_true", help="print the formula of every extrapolated parameter"
    )
    e.add_argument(
        "--lossy",
        action="store_true",
        help="drop local calls (Other: MPI_Comm_rank, ...) before extrapolating",
    )
    e.add_argument(
        "--even-counts",
        action="store_true",
        help="make Alltoallv counts that follow the data (NPB IS) even before extrapolating (lossy)",
    )
    e.add_argument(
        "--strict",
        action="store_true",
        help="refuse where the inputs do not decide between laws that differ at the target "
        "(default: the simplest law, with a warning)",
    )
    e.add_argument(
        "--snippet",
        help="lossy: keep only these calls' complete sequences (and collectives), e.g. "
        "Irecv@18,Send@20,Wait (sites of the largest input)",
    )
    e.add_argument(
        "--common-events",
        action="store_true",
        help="lossy: keep only the events every rank of an input has (LCS across its ranks), "
        "e.g. NPB MG's coarse-level exchanges of some ranks dropped",
    )
    e.add_argument(
        "--assume-constant",
        action="store_true",
        help="take a value equal at every input as a constant even where a grid size equal at "
        "every input changes at the target (weak scaling; each choice a warning)",
    )
    e.add_argument(
        "--periodic",
        action="store_true",
        help="periodic neighbour laws (a torus: ((x+1)%%X-x), ...), one role for every rank first",
    )
    e.add_argument(
        "--input-dims",
        help="the inputs' grids in input order, e.g. 1x2x2,2x2x2,2x2x4 (skips identification)",
    )
    return e


def _cmd_run(args: argparse.Namespace) -> int:
    from ._launch import run_collected

    if not args.command:
        raise UsageError("run: give the program after '--' (scalatrace run -n 2 -- ./app)")
    env = {}
    for kv in args.env:
        name, eq, value = kv.partition("=")
        if not eq or not name:
            raise UsageError(f"run: --env wants NAME=VALUE, got {kv!r}")
        env[name] = value
    import shlex

    out, raw_dir, proc = run_collected(
        args.command,
        args.np,
        args.output,
        env,
        args.raw or False,
        args.timeout,
        capture=False,
        launcher=shlex.split(args.launcher) if args.launcher else None,
        launcher_args=shlex.split(args.launcher_args or ""),
    )
    size = out.stat().st_size
    print(
        f"scalatrace: wrote {out} ({size} bytes)"
        + (f", raw streams in {raw_dir}" if raw_dir else "")
    )
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from ._trace import load

    t = load(args.trace)
    print(repr(t))
    for k, v in sorted(t.metadata.items()):
        print(f"  {k}: {v}")
    print()
    print(t.dump(max_nodes=args.max_nodes))
    if args.sites:
        print("\ncall sites:")
        for c in t.call_sites:
            print(f"  {c}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from ._raw import read_raw
    from ._trace import load
    from .report import write_report

    t = load(args.trace)
    raw = read_raw(args.raw) if args.raw else None
    path = write_report(t, args.output, raw=raw, title=args.title)
    print(f"scalatrace: wrote {path}")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from ._trace import load

    if args.bytes:
        return _print_byte_breakdown(args)
    t = load(args.trace)
    table = t.summary(by=args.by)
    loops = t.timestep_loops()
    if args.json:
        doc = {
            "trace": str(args.trace),
            "nranks": t.nranks,
            "nodes": t.node_count,
            "lossy": t.lossy,
            "lossy_fields": [
                {"op": op, "site": site, "field": field, "values": values, "bins": bins}
                for op, site, field, values, bins in t.lossy_fields
            ],
            "summary": [
                {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
                for row in table.to_dict(orient="records")
            ],
            "timestep_loops": [
                {
                    "path": list(loop.path),
                    "min_iterations": loop.min_iterations,
                    "max_iterations": loop.max_iterations,
                    "visits": loop.visits,
                    "sites": list(loop.sites),
                }
                for loop in loops
            ],
        }
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    print(f"{t!r}\n")
    print(table.to_string(index=False))
    if t.lossy:
        fields = t.lossy_fields
        threshold = t.metadata.get("lossy.threshold", "?")
        print(f"\nlossy (threshold {threshold}): {len(fields)} fields kept as histograms")
        for op, site, field, values, bins in fields:
            print(f"  {op}@site {site} {field}: {values} values in {bins} bins")
    if loops:
        print("\ntimestep loops:")
        for loop in loops:
            print(f"  {loop!r}")
    return 0


def _print_byte_breakdown(args: argparse.Namespace) -> int:
    from .sizes import byte_breakdown

    frame = byte_breakdown(args.trace)
    if args.json:
        json.dump(
            {
                "trace": str(args.trace),
                "file_bytes": int(round(frame["stored_bytes"].sum())),
                "parts": [
                    {
                        "part": r.part,
                        "bytes": int(r.bytes),
                        "stored_bytes": round(float(r.stored_bytes), 1),
                    }
                    for r in frame.itertuples()
                ],
            },
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    total = frame["stored_bytes"].sum()
    print(f"{args.trace}: {total:,.0f} bytes in the file")
    print(f"{'part':<22} {'bytes':>10} {'in file':>10} {'share':>7}")
    for r in frame.itertuples():
        print(f"{r.part:<22} {r.bytes:>10,} {r.stored_bytes:>10,.0f} {100 * r.share:>6.1f}%")
    print("(bytes: before entropy coding; in file: each part's share of the coded file)")
    return 0


def _cmd_heatmap(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import plot
    from ._files import save_figure
    from ._trace import load

    t = load(args.trace)
    fig, ax = plt.subplots(figsize=(6, 5))
    plot.comm_heatmap(t, metric=args.metric, kind=args.kind, log=args.log, ax=ax)
    fig.tight_layout()
    save_figure(fig, args.output, dpi=120)
    print(f"scalatrace: wrote {args.output}")
    return 0


def _cmd_simulate(args: argparse.Namespace) -> int:
    from .simulate import LogGP, simulate
    from .topology import Noise, Topology

    net: LogGP | Topology = _network_from_args(args)
    if args.topology:
        kind, _, shape = args.topology.partition(":")
        try:
            dims = tuple(int(x) for x in shape.split("x")) if shape else ()
        except ValueError:
            raise UsageError(
                f"--topology {args.topology!r}: sizes must be integers, e.g. torus:8x8"
            ) from None
        net = Topology(
            kind,  # type: ignore[arg-type]
            dims,
            link_bandwidth=args.link_bandwidth,
            hop_latency=args.hop_latency,
            endpoint=net,
            congestion=not args.no_congestion,
            sharing=args.sharing,
        )
    intra = None
    if args.intra is not None:
        try:
            values = [float(v) for v in args.intra.split(",")]
        except ValueError:
            values = []
        if len(values) not in (5, 6, 7):
            raise UsageError(
                f"--intra takes five to seven numbers L,o_s,o_r,g,G[,O[,R]], not {args.intra!r}"
            )
        intra = LogGP(*values)
    noise = None
    if args.noise:
        freq, _, duration = args.noise.partition(":")
        try:
            noise = Noise(
                float(freq),
                float(duration or "nan"),
                coscheduled=args.noise_cosched,
                seed=args.seed,
            )
        except ValueError:
            raise UsageError(
                f"--noise {args.noise!r}: give FREQUENCY_HZ:DURATION_S, e.g. 1000:25e-6"
            ) from None
    placement: str | list[int] = args.placement
    if "," in args.placement or args.placement.isdigit():
        try:
            placement = [int(x) for x in args.placement.split(",")]
        except ValueError:
            raise UsageError(
                f"--placement {args.placement!r}: a name or comma-separated nodes"
            ) from None
    r = simulate(
        args.trace,
        network=net,
        intra_node=intra,
        placement=placement,  # type: ignore[arg-type]
        noise=noise,
        ranks_per_node=args.ranks_per_node,
        compute_scale=args.compute_scale,
        size_scale=args.size_scale,
        timing=args.timing,
        seed=args.seed,
        eager_threshold=args.eager_threshold,
        contention=args.contention,
        recorded_local_calls=not args.model_local_calls,
    )
    if args.json:
        json.dump(
            {
                "trace": str(args.trace),
                **r.summary(),
                "events": r.events,
                "messages": r.messages,
                "nranks": r.nranks,
            },
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    print(
        f"predicted time: {r.total_time:.6f} s  ({r.nranks} ranks, {r.events} events, {r.messages} messages)"
    )
    print(
        r.to_pandas()
        .describe()
        .loc[["mean", "min", "max"], ["compute", "comm", "wait", "late_sender", "late_receiver"]]
        .to_string()
    )
    return 0


def _cmd_goal(args: argparse.Namespace) -> int:
    from .goal import to_goal

    export = to_goal(args.trace, args.output, timing=args.timing, seed=args.seed)
    ops = ", ".join(f"{v} {k}" for k, v in sorted(export.operations.items()))
    print(f"scalatrace: wrote {args.output} ({export.nranks} ranks: {ops or 'no operations'})")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ._files import write_text
    from .simulate import sweep

    grid: dict[str, list[object]] = {}
    for item in args.param:
        name, _, values = item.partition("=")
        if not values:
            raise UsageError(f"--param wants NAME=V1,V2,..., got {item!r}")
        grid[name] = [_grid_value(name, v) for v in values.split(",")]
    net = _network_from_args(args)
    df = sweep(args.trace, grid, processes=args.processes, progress=not args.quiet, network=net)
    if args.output:
        write_text(args.output, df.to_csv(index=False))
        print(f"scalatrace: wrote {args.output} ({len(df)} points)")
    else:
        print(df.to_string(index=False))
    return 0 if df["error"].isna().all() else 1


_BOOLEAN_GRID_KEYS = {"contention", "recorded_local_calls"}


def _grid_value(name: str, text: str) -> object:
    """One value of a ``--param`` axis: a word for ``timing`` and ``placement``, true/false for
    switches, else a number."""
    if name in ("timing", "placement"):
        return text
    if name in _BOOLEAN_GRID_KEYS:
        word = text.strip().lower()
        if word in ("1", "true", "yes", "on"):
            return True
        if word in ("0", "false", "no", "off"):
            return False
        raise UsageError(f"--param {name} wants true or false, got {text!r}")
    if name in ("ranks_per_node", "seed"):
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"--param {name} wants integers, got {text!r}") from None
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"--param {name} wants numbers, got {text!r}") from None


def _network_from_args(args: argparse.Namespace) -> LogGP:
    """The LogGP of the options :func:`_add_network_arguments` adds."""
    from .simulate import LogGP

    return LogGP(L=args.L, o_s=args.o_s, o_r=args.o_r, g=args.g, G=args.G, O=args.O, R=args.R)


def _add_network_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--L", type=float, default=1e-6, help="latency, seconds (default 1e-6)")
    p.add_argument("--o-s", dest="o_s", type=float, default=0.5e-6, help="send overhead, seconds")
    p.add_argument(
        "--o-r", dest="o_r", type=float, default=0.5e-6, help="receive overhead, seconds"
    )
    p.add_argument("--g", type=float, default=0.0, help="gap between messages, seconds")
    p.add_argument("--G", type=float, default=1e-10, help="gap per byte, seconds (1/bandwidth)")
    p.add_argument(
        "--O",
        type=float,
        default=0.0,
        help="CPU overhead per byte (copies), seconds (LogGOPS O; default 0)",
    )
    p.add_argument(
        "--R",
        type=float,
        default=0.0,
        help="extra cost of a rendezvous handshake, seconds (default 0)",
    )


def _cmd_clusters(args: argparse.Namespace) -> int:
    from ._trace import load

    t = load(args.trace)
    features = args.features.split(",") if args.features else None
    c = t.clusters(k=args.k, method=args.method, features=features, grow=args.grow)
    print(f"{c.k} clusters ({c.method}; features: {', '.join(c.features)})")
    for label, rep in enumerate(c.representatives):
        members = [r for r, lab in enumerate(c.labels) if lab == label]
        print(
            f"  cluster {label}: representative {rep}, {len(members)} ranks: {_rank_ranges(members)}"
        )
    return 0


def _rank_ranges(ranks: Sequence[int]) -> str:
    """1,2,3,7 -> '1-3,7'."""
    out: list[str] = []
    start = prev = None
    for r in ranks:
        if prev is not None and r == prev + 1:
            prev = r
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = r
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ",".join(out)


def _cmd_generate(args: argparse.Namespace) -> int:
    from ._files import write_text
    from ._trace import load
    from .codegen import write_benchmark

    if args.scalable:
        from .scalable import scalable_benchmark

        text = scalable_benchmark([load(t) for t in args.trace], language=args.lang)
        out = write_text(args.output, text)
        print(f"scalatrace: wrote {out} ({args.lang}, scalable, from {len(args.trace)} traces)")
        return 0
    if len(args.trace) != 1:
        raise UsageError(
            f"generate: one trace, or several of one program with --scalable (got {len(args.trace)})"
        )
    out = write_benchmark(
        load(args.trace[0]), args.lang, args.output, resolve_wildcards=args.resolve_wildcards
    )
    print(f"scalatrace: wrote {out} ({args.lang})")
    return 0


def _replay_main(argv: Sequence[str]) -> int:
    """``scalatrace replay ...``: delegates to :mod:`scalatrace.replay` (imported only here)."""
    try:
        from . import replay
    except ImportError as e:  # pragma: no cover - replay is part of the package
        print(f"scalatrace: error: replay: not available ({e})", file=sys.stderr)
        return ERROR_EXIT
    parser = _Parser(prog="scalatrace replay", description="Replay a trace under mpiexec.")
    replay.add_arguments(parser)
    return int(replay.run_from_args(parser.parse_args(list(argv))) or 0)


def _cmd_extrapolate(args: argparse.Namespace) -> int:
    from ._trace import load
    from .extrapolate import extrapolate, extrapolation_laws

    try:
        dims = [int(d) for d in args.dims.lower().split("x")] if args.dims else None
    except ValueError:
        raise UsageError(
            f"extrapolate: --dims wants a grid such as 32x32, got {args.dims!r}"
        ) from None
    try:
        input_dims = (
            [[int(d) for d in g.lower().split("x")] for g in args.input_dims.split(",")]
            if args.input_dims
            else None
        )
    except ValueError:
        raise UsageError(
            f"extrapolate: --input-dims wants grids such as 2x2,4x2,4x4, got {args.input_dims!r}"
        ) from None
    snippet = [c for c in args.snippet.split(",") if c.strip()] if args.snippet else None
    big = extrapolate(
        [load(p) for p in args.traces],
        ranks=args.ranks,
        dims=dims,
        timing=not args.no_timing,
        lossy=args.lossy,
        strict=args.strict,
        snippet=snippet,
        periodic=args.periodic,
        input_dims=input_dims,
        even_counts=args.even_counts,
        common_events=args.common_events,
        assume_constant=args.assume_constant,
    )
    big.save(args.output)
    print(
        f"scalatrace: wrote {args.output} ({big.nranks} ranks, grid {big.metadata['extrapolation_grid']}, "
        f"from {big.metadata['extrapolated_from']} ranks)"
    )
    if args.lossy or snippet or args.common_events:
        print(f"scalatrace: {big.metadata['extrapolation_dropped']}")
    if args.even_counts:
        print(f"scalatrace: {big.metadata['extrapolation_even_counts']}")
    if args.laws:
        print(extrapolation_laws(big).to_string(index=False))
    return 0


def _assignments(items: Sequence[str], what: str) -> dict[str, list[float]]:
    """``NAME=V1,V2,...`` arguments as {name: [values]}."""
    out: dict[str, list[float]] = {}
    for item in items:
        name, eq, values = item.partition("=")
        try:
            if not eq or not name.strip():
                raise ValueError
            out[name.strip()] = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            raise UsageError(
                f"{what} wants NAME=V1,V2,... such as N=512,1024, got {item!r}"
            ) from None
    return out


def _single_values(items: Sequence[str], what: str) -> dict[str, float]:
    values = _assignments([x for item in items for x in item.split(";")], what)
    if any(len(v) != 1 for v in values.values()):
        raise UsageError(f"{what} wants one value per name, e.g. N=4096 P=16")
    return {k: v[0] for k, v in values.items()}


def _cmd_phases(args: argparse.Namespace) -> int:
    from ._trace import load
    from .phases import phase_analysis, plot_phases

    pa = phase_analysis(load(args.trace))
    df = pa.to_dataframe()
    if args.json:
        rows = df.astype(object).where(df.notna(), None).to_dict(orient="records")
        print(json.dumps(rows, default=lambda v: list(v) if isinstance(v, tuple) else int(v)))
    else:
        print(df.to_string(index=False) if len(df) else "no communication phases")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        ax = plot_phases(pa)
        from ._files import save_figure

        save_figure(ax.figure, args.plot, bbox_inches="tight")
        print(f"scalatrace: wrote {args.plot}")
    return 0


def _number_list(text: str | None, what: str, kind: type = float) -> list:
    """``V1,V2,...`` as a list of numbers (``kind``); None stays empty."""
    if text is None:
        return []
    try:
        return [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{what} wants V1,V2,... numbers, got {text!r}") from None


def _block_of(m: Any, name: str, value: float, at: dict[str, float]) -> tuple[float, int]:
    """The computation per block (ns) and message size (bytes) of ``m``'s point-to-point phase
    (the chained one if any, else the one with most occurrences) at ``name = value`` and ``at``."""
    phases = [pm for pm in m.phase_models if pm.compute is not None]
    if not phases:
        raise UsageError("--calibrate-blocks: the model has no point-to-point phase")
    where = {**at, name: value}
    if set(m.parameters) - set(where):
        missing = ", ".join(sorted(set(m.parameters) - set(where)))
        raise UsageError(f"--calibrate-blocks needs --at values of {missing}")
    where = {k: v for k, v in where.items() if k in m.parameters}
    pm = max(phases, key=lambda q: (q.chained, float(q.occurrences.predict(**where))))
    w_ns = 1e9 * float(pm.compute.predict(**where))
    size = float(pm.message_bytes.predict(**where)) if pm.message_bytes is not None else 8.0
    if not w_ns > 0:
        raise UsageError(
            f"--calibrate-blocks: the model's computation per block at {name}={value:g} is "
            f"{w_ns:.3g} ns (not positive); choose blocks within the traced range"
        )
    return w_ns, max(int(round(float(size))), 0)


def _law_doc(law: Any) -> dict:
    return {
        "thresholds_bytes": list(law.thresholds),
        "intercepts_s": list(law.intercepts),
        "slopes": list(law.slopes),
    }


def _cmd_model(args: argparse.Namespace) -> int:
    from ._trace import load
    from .models import model, optimal_grain

    params = _assignments(args.param, "--param")
    at = _single_values(args.at, "--at")
    compute_ns = _number_list(args.calibrate_compute_ns, "--calibrate-compute-ns")
    sizes = _number_list(args.calibrate_message_bytes, "--calibrate-message-bytes", int)
    blocks_at = (
        _assignments([args.calibrate_blocks], "--calibrate-blocks") if args.calibrate_blocks else {}
    )
    if len(blocks_at) > 1 or any(len(v) < 2 for v in blocks_at.values()):
        raise UsageError("--calibrate-blocks wants one NAME=V1,V2,... with 2 or more values")
    if args.calibrate is None and (
        compute_ns or sizes or blocks_at or args.calibrate_footprint is not None
    ):
        raise UsageError(
            "--calibrate-compute-ns, --calibrate-blocks, --calibrate-message-bytes and "
            "--calibrate-footprint need --calibrate NP"
        )
    if compute_ns and blocks_at:
        raise UsageError("give --calibrate-compute-ns or --calibrate-blocks, not both")
    if args.compute_regimes is not None and args.calibrate is None:
        raise UsageError("--compute-regimes needs --calibrate NP (the model with the machine)")
    traces = [load(p) for p in args.traces]
    network: Any = None
    if args.calibrate is not None:
        from .simulate import calibrate, calibrate_in_situ_blocks

        if blocks_at:
            # MK's machine parameters on the program's own pattern: a first model with the
            # ping-pong's costs gives the program's blocks (computation and message size) at
            # each value; one run calibrates them all, and the model takes the laws.
            first = model(
                traces,
                params or None,
                max_terms=args.max_terms,
                network=calibrate(np=args.calibrate),
                compute_regimes=args.compute_regimes,
            )
            ((name, values),) = blocks_at.items()
            found = [_block_of(first, name, v, at) for v in values]
            compute_ns, sizes = [w for w, _ in found], [k for _, k in found]
        if len(compute_ns) > 1:
            network = calibrate_in_situ_blocks(
                compute_ns,
                footprint_bytes=args.calibrate_footprint,
                message_bytes=sizes if len(sizes) > 1 else (sizes[0] if sizes else 8),
                np=args.calibrate,
            )
        else:
            if len(sizes) > 1:
                raise UsageError("--calibrate-message-bytes: one size per block given")
            network = calibrate(
                np=args.calibrate,
                compute_ns=compute_ns[0] if compute_ns else None,
                footprint_bytes=args.calibrate_footprint,
                message_bytes=sizes[0] if sizes else 8,
            )
    m = model(
        traces,
        params or None,
        max_terms=args.max_terms,
        network=network,
        compute_regimes=args.compute_regimes,
    )
    result: dict = {
        "expression": str(m.expression),
        "smape_percent": m.smape,
        "direct": m.direct.formula,
        "phases": m.phases.to_dict(orient="records"),
    }
    if network is not None:
        from .simulate import InSituBlocks

        if isinstance(network, InSituBlocks):
            result["network"] = {
                "o_s": _law_doc(network.o_s),
                "o_r": _law_doc(network.o_r),
                "blocks": [
                    {
                        "compute_ns": c.compute_ns,
                        "compute_alone_s": list(c.compute_alone),
                        "message_bytes": c.message_bytes,
                        "o_s": c.overhead[0],
                        "o_r": c.overhead[1],
                    }
                    for c in network.calibrations
                ],
            }
        else:
            result["network"] = {
                f: float(getattr(network, f)) for f in ("L", "o_s", "o_r", "g", "G", "O", "R")
            }
    predictions = [_single_values([p], "--predict") for p in args.predict]
    result["predictions"] = [{**p, "T": m.predict(**p)} for p in predictions]
    if args.optimal_grain:
        result["optimal_grain"] = {
            args.optimal_grain: optimal_grain(m, args.optimal_grain, **at),
            **at,
        }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"T({', '.join(m.parameters)}) = {result['expression']}")
        print(f"fit on the traces: SMAPE {m.smape:.3g} %; direct PMNF fit: {m.direct.formula}")
        print(m.phases.to_string(index=False))
        net = result.get("network")
        if net is not None and "blocks" in net:
            for side in ("o_s", "o_r"):
                law = net[side]
                parts = [
                    f"{1e9 * a:.0f} ns + {b:.4g} W"
                    + (f" (k <= {t:g} B)" if i < len(law["thresholds_bytes"]) else "")
                    for i, (a, b, t) in enumerate(
                        zip(
                            law["intercepts_s"],
                            law["slopes"],
                            [*law["thresholds_bytes"], None],
                        )
                    )
                ]
                print(f"{side}(W, k) = " + "; ".join(parts))
        elif net is not None:
            print(
                "machine: "
                + ", ".join(f"{k} = {v:.3g}" for k, v in net.items() if k in ("L", "o_s", "o_r"))
                + " s"
            )
        for p in result["predictions"]:
            where = ", ".join(f"{k}={v:g}" for k, v in p.items() if k != "T")
            print(f"T({where}) = {p['T']:.6g} s")
        if args.optimal_grain:
            where = ", ".join(f"{k}={v:g}" for k, v in at.items())
            k = result["optimal_grain"][args.optimal_grain]
            print(f"optimal {args.optimal_grain} at {where}: {k:.6g}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        ax = m.plot(x=args.plot_x, fixed=at or None)
        from ._files import save_figure

        save_figure(ax.figure, args.plot, bbox_inches="tight")
        print(f"scalatrace: wrote {args.plot}")
    return 0


def _model_parsers(sub: argparse._SubParsersAction) -> None:
    ph = sub.add_parser("phases", help="communication phases of a trace (MK toolkit)")
    ph.add_argument("trace")
    ph.add_argument("--json", action="store_true", help="machine-readable output")
    ph.add_argument("--plot", metavar="FILE", help="also draw the phases into an image")
    ph.set_defaults(func=_cmd_phases)
    mo = sub.add_parser(
        "model", help="closed-form run-time model T(N, P, ...) from traces at several points"
    )
    mo.add_argument("traces", nargs="+", help="traces of one program at 3 or more points")
    mo.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a parameter's value for each trace, in order (repeatable; P defaults to the ranks)",
    )
    mo.add_argument("--max-terms", type=int, default=2, help="terms per fitted part (1-3)")
    mo.add_argument(
        "--calibrate",
        type=int,
        metavar="NP",
        default=None,
        help="the messages' costs from this machine (scalatrace.calibrate(np=NP), untraced "
        "ping-pongs) instead of the traced times inside the calls: MK's split (docs/models.md)",
    )
    mo.add_argument(
        "--calibrate-compute-ns",
        metavar="NS[,NS...]",
        default=None,
        help="with --calibrate: measure the send and receive overheads in situ, a one-way "
        "pipeline stage with NS of computation between the calls (scalatrace.calibrate_in_situ); "
        "several values: one run at every block, the overheads as laws of the block "
        "(scalatrace.calibrate_in_situ_blocks)",
    )
    mo.add_argument(
        "--calibrate-message-bytes",
        metavar="B[,B...]",
        default=None,
        help="with --calibrate-compute-ns: the in-situ stage's message size (one, or one per "
        "block; default 8)",
    )
    mo.add_argument(
        "--calibrate-blocks",
        metavar="NAME=V1,V2,...",
        default=None,
        help="with --calibrate: the overheads as laws of the program's own blocks at these "
        "values of NAME (e.g. K=2,4,8,16,32) and the --at values: a first model with the "
        "ping-pong's costs gives its point-to-point phase's computation per block and message "
        "size there, one scalatrace.calibrate_in_situ_blocks run measures them",
    )
    mo.add_argument(
        "--calibrate-footprint",
        type=int,
        metavar="BYTES",
        default=None,
        help="with --calibrate-compute-ns or --calibrate-blocks: the memory the computation "
        "walks through (the program's array per rank)",
    )
    mo.add_argument(
        "--compute-regimes",
        metavar="EXPR",
        default=None,
        help="with --calibrate: each phase's computation with coefficients per regime of EXPR, "
        "an expression of the parameters such as N/P (the regimes found by the fit)",
    )
    mo.add_argument(
        "--predict",
        action="append",
        default=[],
        metavar="NAME=V;NAME=V",
        help="print T at these values, e.g. 'N=4096;K=32;P=16' (repeatable)",
    )
    mo.add_argument("--optimal-grain", metavar="NAME", help="solve dT/dNAME = 0 at --at values")
    mo.add_argument(
        "--at", action="append", default=[], metavar="NAME=V", help="values of the other parameters"
    )
    mo.add_argument("--plot", metavar="FILE", help="measured and modelled T against --plot-x")
    mo.add_argument("--plot-x", default=None, help="parameter of the plot's x axis")
    mo.add_argument("--json", action="store_true", help="machine-readable output")
    mo.set_defaults(func=_cmd_model)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="scalatrace",
        description="Scalable MPI communication tracing and analysis.",
        epilog="Errors: one line on stderr; exit status 2 for bad arguments, 1 for other errors. "
        "SCALATRACE_DEBUG=1 adds the Python traceback.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run an MPI program under the collector")
    r.add_argument("-n", "--np", type=int, required=True, help="number of ranks")
    r.add_argument("-o", "--output", default="trace.sct", help="trace file (default: trace.sct)")
    r.add_argument("--raw", metavar="DIR", help="also write raw per-rank streams into DIR")
    r.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra environment for the run",
    )
    r.add_argument("--timeout", type=float, default=None, help="seconds before the run is killed")
    r.add_argument(
        "--launcher",
        default=None,
        help="what starts the ranks instead of MPICH's mpiexec, e.g. srun (called as LAUNCHER -n N "
        "LAUNCHER_ARGS env LD_PRELOAD=<collector> PROGRAM)",
    )
    r.add_argument(
        "--launcher-args",
        default=None,
        help="extra launcher arguments, e.g. '-f hosts -ppn 2' (MPICH) or '--ntasks-per-node=2'",
    )
    r.add_argument("command", nargs=argparse.REMAINDER, help="-- program [args...]")
    r.set_defaults(func=_cmd_run)

    s = sub.add_parser("show", help="print the compressed tree of a trace")
    s.add_argument("trace")
    s.add_argument("--max-nodes", type=int, default=None)
    s.add_argument("--sites", action="store_true", help="also list the call sites")
    s.set_defaults(func=_cmd_show)

    rp = sub.add_parser(
        "report", help="one self-contained HTML page: summary, heatmap, timeline, imbalance, loops"
    )
    rp.add_argument("trace")
    rp.add_argument("-o", "--output", default="report.html", help="HTML file (report.html)")
    rp.add_argument(
        "--raw", default=None, help="the run's raw recording directory: measured times in the views"
    )
    rp.add_argument("--title", default=None)
    rp.set_defaults(func=_cmd_report)

    st = sub.add_parser("stats", help="per-op statistics and timestep loops")
    st.add_argument("trace")
    st.add_argument("--by", choices=["op", "site"], default="op")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    st.add_argument(
        "--bytes",
        action="store_true",
        help="where the file's bytes go (sections, structure, timing) instead of the statistics",
    )
    st.set_defaults(func=_cmd_stats)

    h = sub.add_parser("heatmap", help="communication-matrix heatmap as an image")
    h.add_argument("trace")
    h.add_argument("-o", "--output", required=True, help="image file (.png, .svg, .pdf)")
    h.add_argument("--metric", choices=["bytes", "messages"], default="bytes")
    h.add_argument("--kind", choices=["p2p", "collective", "all"], default="p2p")
    h.add_argument("--log", action="store_true", help="logarithmic colour scale")
    h.set_defaults(func=_cmd_heatmap)

    sim = sub.add_parser(
        "simulate", help="predict the run time of a trace on a LogGP network (no MPI)"
    )
    sim.add_argument("trace")
    _add_network_arguments(sim)
    sim.add_argument("--ranks-per-node", type=int, default=1)
    sim.add_argument(
        "--intra",
        default=None,
        metavar="L,o_s,o_r,g,G[,O[,R]]",
        help="LogGP parameters between ranks of one node (seconds; needed with --ranks-per-node "
        "on the flat network without contention)",
    )
    sim.add_argument(
        "--topology",
        help="torus:8x8, fat_tree:4 (k) or dragonfly:GROUPS x ROUTERS x NODES, e.g. dragonfly:9x4x2",
    )
    sim.add_argument("--link-bandwidth", type=float, default=float("inf"), help="bytes/s per link")
    sim.add_argument("--hop-latency", type=float, default=0.0, help="seconds per link crossed")
    sim.add_argument(
        "--no-congestion",
        action="store_true",
        help="links carry any number of messages (a torus node's ports still one each)",
    )
    sim.add_argument(
        "--sharing",
        choices=("first_come", "fair", "latency_weighted"),
        default="first_come",
        help="how a congested link is shared: first come, first served, max-min fair, or max-min "
        "weighted by the inverse of the route's latency (SimGrid's CM02)",
    )
    sim.add_argument(
        "--placement",
        default="block",
        help="block, round_robin, random (--seed) or node,node,... per rank",
    )
    sim.add_argument("--noise", help="OS noise FREQUENCY_HZ:DURATION_S, e.g. 1000:25e-6")
    sim.add_argument(
        "--noise-cosched", action="store_true", help="the same noise phase on every rank"
    )
    sim.add_argument("--compute-scale", type=float, default=1.0)
    sim.add_argument("--size-scale", type=float, default=1.0)
    sim.add_argument("--timing", choices=["mean", "median", "sample", "none"], default="mean")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument(
        "--eager-threshold",
        type=float,
        default=65536,
        help="messages larger than this many bytes go rendezvous (default 65536)",
    )
    sim.add_argument(
        "--contention", action="store_true", help="inter-node messages share their node's link"
    )
    sim.add_argument(
        "--model-local-calls",
        action="store_true",
        help="calls that never wait take the model's overheads only, not their recorded duration",
    )
    sim.add_argument("--json", action="store_true", help="machine-readable output")
    sim.set_defaults(func=_cmd_simulate)

    go = sub.add_parser(
        "goal", help="export a trace as a LogGOPSim GOAL schedule (collectives as point-to-point)"
    )
    go.add_argument("trace")
    go.add_argument("-o", "--output", required=True, help="GOAL text file (.goal)")
    go.add_argument("--timing", choices=["mean", "sample", "none"], default="mean")
    go.add_argument("--seed", type=int, default=0)
    go.set_defaults(func=_cmd_goal)

    sw = sub.add_parser("sweep", help="simulate a grid of what-if parameters (CSV out)")
    sw.add_argument("trace")
    sw.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="NAME=V1,V2,...",
        help="a grid axis, e.g. compute_scale=0.5,1,2 or bandwidth_scale=1,4 (repeatable)",
    )
    _add_network_arguments(sw)
    sw.add_argument("-j", "--processes", type=int, default=None, help="worker processes")
    sw.add_argument("-o", "--output", help="CSV file (default: print the table)")
    sw.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=_cmd_sweep)
    _extrapolate_parser(sub).set_defaults(func=_cmd_extrapolate)
    _model_parsers(sub)
    g = sub.add_parser("generate", help="generate a coNCePTuaL or C+MPI benchmark from a trace")
    g.add_argument("trace", nargs="+", help="the trace (--scalable: traces at 3 or more sizes)")
    g.add_argument(
        "--scalable",
        action="store_true",
        help="one benchmark for every rank count, from traces of one program at several sizes "
        "(extrapolation laws; thesis 4.4.5)",
    )
    g.add_argument("--lang", choices=["conceptual", "c"], default="conceptual")
    g.add_argument("-o", "--output", required=True, help="output file (bench.ncptl / bench.c)")
    g.add_argument(
        "--resolve-wildcards",
        action="store_true",
        help="C only: replace MPI_ANY_SOURCE by the matched senders (coNCePTuaL always does)",
    )
    g.set_defaults(func=_cmd_generate)

    cl = sub.add_parser(
        "clusters", help="group ranks by behaviour (ACURDION K-farthest or PHANTOM hierarchical)"
    )
    cl.add_argument("trace")
    cl.add_argument(
        "-k", type=int, default=None, help="number of clusters (default 9, or fewer behaviours)"
    )
    cl.add_argument(
        "--grow",
        action="store_true",
        help="K-farthest: dynamic K as the collector runs it (more clusters while calls or peers differ)",
    )
    cl.add_argument("--method", choices=["kfarthest", "hierarchical"], default="kfarthest")
    cl.add_argument(
        "--features",
        default=None,
        help="comma-separated signature features, or 'signature' / 'computation'",
    )
    cl.set_defaults(func=_cmd_clusters)

    # Handled before parsing (its arguments belong to scalatrace.replay); listed for --help.
    sub.add_parser("replay", help="replay a trace with scalatrace-replay (scalatrace replay -h)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["replay"]:
            return _replay_main(argv[1:])
        args = build_parser().parse_args(argv)
        if getattr(args, "command", None) and args.command[:1] == ["--"]:
            args.command = args.command[1:]
        return int(args.func(args))
    except Exception as e:  # noqa: BLE001 - the one place errors become exit statuses
        return _report(e)


def _report(e: Exception) -> int:
    """Prints ``e`` as the command's error (one line) and returns the exit status."""
    if os.environ.get("SCALATRACE_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exception(e, file=sys.stderr)
    if isinstance(e, MPIRunError):  # the run's own stderr tail follows its first line
        print(f"scalatrace: error: {e}", file=sys.stderr)
        return e.returncode if e.returncode > 0 else ERROR_EXIT
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, UsageError):
        print(f"scalatrace: error: {text}", file=sys.stderr)
        return USAGE_EXIT
    if isinstance(e, (ScalatraceError, OSError)):
        print(f"scalatrace: error: {text}", file=sys.stderr)
        return ERROR_EXIT
    print(
        f"scalatrace: error: {type(e).__name__}: {text} (an unexpected error: rerun with "
        "SCALATRACE_DEBUG=1 for the traceback and report it)",
        file=sys.stderr,
    )
    return ERROR_EXIT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
