"""`python -m vortex`: trace and compile vortex_torch-style flows.

    python -m vortex compile flows.py --flow NAME --target cpu -o out/
    python -m vortex compile --flow block_sparse_attention   # a shipped flow
    python -m vortex trace flows.py --flow NAME --group-size 5
    python -m vortex verify flows.py --flow NAME    # a sweep of configs
    python -m vortex list [flows.py]
    python -m vortex demo [examples/<flow>.mlir]   # the README's main job
    python -m vortex demo-engine                   # ... then a real model

`FILE` is a Python flow module (run so that its @register decorators run)
or a .mlir file (compiled as it is). Without FILE, `--flow` names a shipped
flow (vortex.flows) or an example of examples/ (its config applies).
Config flags override FlowConfig's defaults (those of
examples/block_sparse_attention.mlir); `--init KEY=VALUE` passes keyword
arguments to the flow's constructor. `compile` prints the manifest path;
errors (FlowError) are printed with the Python line at fault, exit 1.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from typing import Any, Dict, List, Optional

from .frontend.config import FlowConfig

_INT_KNOBS = ("block_size", "page_size", "head_dim", "group_size",
              "topk_val", "reserved_bos", "reserved_eos", "query_tokens")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m vortex",
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("compile", "trace"):
        c = sub.add_parser(name, help=f"{name} a flow")
        c.add_argument("file", nargs="?", help="flow module (.py) or .mlir")
        c.add_argument("--flow", help="registered flow name (or, without "
                       "FILE, a shipped example)")
        c.add_argument("--name", help="symbol of the traced vortex.flow "
                       "(default: the registered name)")
        c.add_argument("-o", "--output", help="compile: output directory "
                       "(default: the compile cache); trace: output file")
        c.add_argument("--init", action="append", default=[],
                       metavar="KEY=VALUE", help="flow constructor argument")
        for knob in _INT_KNOBS:
            c.add_argument("--" + knob.replace("_", "-"), type=int)
        c.add_argument("--topk-ratio", type=float)
        for knob in ("intermediate-dtype", "kv-dtype", "q-dtype"):
            c.add_argument("--" + knob)
        if name == "compile":
            c.add_argument("--target", default="cpu",
                           help="cpu or a GPU chip (sm_80, sm_90, ...)")
            c.add_argument("--no-cache", action="store_true",
                           help="recompile even if the cache has the flow")
            c.add_argument("--option", action="append", default=[],
                           help="extra vortex-compile option")
        else:
            c.add_argument("--no-verify", action="store_true",
                           help="skip vortex-opt")
    v = sub.add_parser("verify", help="trace, verify and lower a flow on "
                       "both back ends over a sweep of configs, launching "
                       "nothing (vortex.compiler.sweep)")
    v.add_argument("file", nargs="?", help="flow module (.py)")
    v.add_argument("--flow", help="registered flow name (or, without FILE, "
                   "a shipped example)")
    v.add_argument("--name", help="symbol of the traced vortex.flow")
    v.add_argument("--init", action="append", default=[],
                   metavar="KEY=VALUE", help="flow constructor argument")
    for knob, default in (("groups", "GROUPS"), ("head-dims", "HEAD_DIMS"),
                          ("block-sizes", "BLOCK_SIZES"),
                          ("page-ratios", "PAGE_RATIOS")):
        v.add_argument("--" + knob, type=int, nargs="+", default=None,
                       help=f"default: vortex.compiler.sweep.{default}")
    v.add_argument("-j", "--jobs", type=int, default=2)
    ls = sub.add_parser("list", help="list the registered flows")
    ls.add_argument("file", nargs="?")
    return p


def _init_kwargs(items: List[str]) -> Dict[str, Any]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise SystemExit(f"--init expects KEY=VALUE, got {item!r}")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def _overrides(args) -> Dict[str, Any]:
    names = _INT_KNOBS + ("topk_ratio", "intermediate_dtype", "kv_dtype",
                          "q_dtype")
    return {n: getattr(args, n) for n in names
            if getattr(args, n) is not None}


def _resolve(args):
    """(flow name, base config, symbol) for the arguments."""
    from . import flows
    from .flow import list_keys, load_module
    if args.file:
        before = set(list_keys())
        load_module(args.file)
        new = [k for k in list_keys() if k not in before]
        flow = args.flow or (new[0] if len(new) == 1 else None)
        if flow is None:
            raise SystemExit(f"{args.file} registers {new}: pick one with "
                             "--flow")
        return flow, None, args.name
    if not args.flow:
        raise SystemExit("give a flow FILE or --flow NAME")
    shipped = flows.SHIPPED.get(args.flow)
    if shipped is not None:
        return shipped.flow, shipped.config, args.name or shipped.symbol
    return args.flow, None, args.name


def _verify(args) -> int:
    from .compiler import sweep
    flow, base, name = _resolve(args)
    base = FlowConfig.coerce(base)
    pick = {k: getattr(args, k) or getattr(sweep, d) for k, d in (
        ("groups", "GROUPS"), ("head_dims", "HEAD_DIMS"),
        ("block_sizes", "BLOCK_SIZES"), ("page_ratios", "PAGE_RATIOS"))}
    if any(x < 1 for xs in pick.values() for x in xs):
        raise SystemExit("verify: --groups, --head-dims, --block-sizes and "
                         "--page-ratios take positive integers")
    outcomes = sweep.sweep(flow, sweep.grid(base, **pick), name=name,
                           init_kwargs=_init_kwargs(args.init),
                           jobs=args.jobs)
    table, status = sweep.report(outcomes)
    print(table)
    return status


def _run(args) -> int:
    from .compiler import driver as compiler
    from . import api
    if args.command == "verify":
        return _verify(args)
    if args.command == "list":
        from .flow import list_keys, load_module
        from . import flows  # noqa: F401 (registers the shipped flows)
        if args.file:
            load_module(args.file)
        print("\n".join(sorted(list_keys())))
        return 0
    if args.file and args.file.endswith(".mlir"):
        if args.command == "trace":
            with open(args.file) as f:
                sys.stdout.write(f.read())
            return 0
        print(compiler.compile(args.file, target=args.target,
                               out_dir=args.output, flow=args.flow,
                               options=args.option,
                               use_cache=not args.no_cache))
        return 0
    flow, config, name = _resolve(args)
    config = FlowConfig.coerce(config, **_overrides(args))
    init = _init_kwargs(args.init)
    if args.command == "trace":
        text = api.trace(flow, config, name=name, init_kwargs=init,
                         verify=not args.no_verify)
        if args.output:
            with open(args.output, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        return 0
    t0 = time.perf_counter()
    manifest = api.compile_vflow(flow, config, args.target, name=name,
                                 out_dir=args.output, options=args.option,
                                 use_cache=not args.no_cache,
                                 init_kwargs=init)
    print(f"# compiled {name or flow} for {args.target} in "
          f"{time.perf_counter() - t0:.2f} s", file=sys.stderr)
    print(manifest)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    from .flow import FlowInitError, FlowLoadError, RegistryError
    from .frontend.errors import FlowError
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["demo"]:
        from .testing import demo
        return _guarded(lambda: demo.main(argv[1:]))
    if argv[:1] == ["demo-engine"]:
        from .testing import engine_demo
        return _guarded(lambda: engine_demo.main(argv[1:]))
    args = _parser().parse_args(argv)
    try:
        return _guarded(lambda: _run(args))
    except (FlowError, FlowLoadError, FlowInitError, RegistryError,
            FileNotFoundError, ValueError) as err:
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1


def _guarded(run) -> int:
    """Setup failures as their one line; a failed compile as the tool's
    own diagnostics (the command line is in the exception's message)."""
    from .compiler.driver import VortexCompileError
    from .environment import SetupError
    try:
        return run()
    except SetupError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except VortexCompileError as err:
        print(err.diagnostics or f"VortexCompileError: {err}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
