"""The ``scalatrace`` command: run, show, stats, heatmap, replay, generate."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from .errors import MPIRunError, ScalatraceError


def _cmd_run(args: argparse.Namespace) -> int:
    from ._launch import run_collected

    if not args.command:
        print("scalatrace run: give the program after '--'", file=sys.stderr)
        return 2
    env = dict(kv.split("=", 1) for kv in args.env)
    out, raw_dir, proc = run_collected(args.command, args.np, args.output, env, args.raw or False, args.timeout, capture=False)
    size = out.stat().st_size
    print(f"scalatrace: wrote {out} ({size} bytes)" + (f", raw streams in {raw_dir}" if raw_dir else ""))
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


def _cmd_stats(args: argparse.Namespace) -> int:
    from ._trace import load

    t = load(args.trace)
    table = t.summary(by=args.by)
    loops = t.timestep_loops()
    if args.json:
        doc = {
            "trace": str(args.trace),
            "nranks": t.nranks,
            "nodes": t.node_count,
            "summary": table.to_dict(),
            "timestep_loops": [
                {"path": list(l.path), "min_iterations": l.min_iterations, "max_iterations": l.max_iterations,
                 "visits": l.visits, "sites": list(l.sites)}
                for l in loops
            ],
        }
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    print(f"{t!r}\n")
    print(table)
    if loops:
        print("\ntimestep loops:")
        for l in loops:
            print(f"  {l!r}")
    return 0


def _cmd_heatmap(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import plot
    from ._trace import load

    t = load(args.trace)
    fig, ax = plt.subplots(figsize=(6, 5))
    plot.comm_heatmap(t, metric=args.metric, kind=args.kind, log=args.log, ax=ax)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"scalatrace: wrote {args.output}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from ._trace import load
    from .codegen import write_benchmark

    out = write_benchmark(load(args.trace), args.lang, args.output, resolve_wildcards=args.resolve_wildcards)
    print(f"scalatrace: wrote {out} ({args.lang})")
    return 0


def _replay_main(argv: Sequence[str]) -> int:
    """``scalatrace replay ...``: delegates to :mod:`scalatrace.replay` (imported only here)."""
    try:
        from . import replay
    except ImportError as e:  # pragma: no cover - replay is part of the package
        print(f"scalatrace replay: not available ({e})", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="scalatrace replay", description="Replay a trace under mpiexec.")
    replay.add_arguments(parser)
    return int(replay.run_from_args(parser.parse_args(list(argv))) or 0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scalatrace", description="Scalable MPI communication tracing and analysis.")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run an MPI program under the collector")
    r.add_argument("-n", "--np", type=int, required=True, help="number of ranks")
    r.add_argument("-o", "--output", default="trace.sct", help="trace file (default: trace.sct)")
    r.add_argument("--raw", metavar="DIR", help="also write raw per-rank streams into DIR")
    r.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra environment for the run")
    r.add_argument("--timeout", type=float, default=None, help="seconds before the run is killed")
    r.add_argument("command", nargs=argparse.REMAINDER, help="-- program [args...]")
    r.set_defaults(func=_cmd_run)

    s = sub.add_parser("show", help="print the compressed tree of a trace")
    s.add_argument("trace")
    s.add_argument("--max-nodes", type=int, default=None)
    s.add_argument("--sites", action="store_true", help="also list the call sites")
    s.set_defaults(func=_cmd_show)

    st = sub.add_parser("stats", help="per-op statistics and timestep loops")
    st.add_argument("trace")
    st.add_argument("--by", choices=["op", "site"], default="op")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    st.set_defaults(func=_cmd_stats)

    h = sub.add_parser("heatmap", help="communication-matrix heatmap as an image")
    h.add_argument("trace")
    h.add_argument("-o", "--output", required=True, help="image file (.png, .svg, .pdf)")
    h.add_argument("--metric", choices=["bytes", "messages"], default="bytes")
    h.add_argument("--kind", choices=["p2p", "collective", "all"], default="p2p")
    h.add_argument("--log", action="store_true", help="logarithmic colour scale")
    h.set_defaults(func=_cmd_heatmap)

    g = sub.add_parser("generate", help="generate a coNCePTuaL or C+MPI benchmark from a trace")
    g.add_argument("trace")
    g.add_argument("--lang", choices=["conceptual", "c"], default="conceptual")
    g.add_argument("-o", "--output", required=True, help="output file (bench.ncptl / bench.c)")
    g.add_argument("--resolve-wildcards", action="store_true",
                   help="C only: replace MPI_ANY_SOURCE by the matched senders (coNCePTuaL always does)")
    g.set_defaults(func=_cmd_generate)

    # Handled before parsing (its arguments belong to scalatrace.replay); listed for --help.
    sub.add_parser("replay", help="replay a trace with scalatrace-replay (scalatrace replay -h)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["replay"]:
            return _replay_main(argv[1:])
    except (ScalatraceError, FileNotFoundError, ValueError) as e:
        print(f"scalatrace: {e}", file=sys.stderr)
        return e.returncode if isinstance(e, MPIRunError) and e.returncode > 0 else 1
    args = build_parser().parse_args(argv)
    if getattr(args, "command", None) and args.command[:1] == ["--"]:
        args.command = args.command[1:]
    try:
        return int(args.func(args))
    except MPIRunError as e:
        print(f"scalatrace: {e}", file=sys.stderr)
        return e.returncode if e.returncode > 0 else 1
    except (ScalatraceError, FileNotFoundError, ValueError) as e:
        print(f"scalatrace: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
