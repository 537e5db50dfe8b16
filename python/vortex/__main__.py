"""`python -m vortex`: trace and compile vortex_torch-style flows.

    python -m vortex compile flows.py --flow NAME --target cpu -o out/
    python -m vortex compile --flow block_sparse_attention   # a shipped flow
    python -m vortex trace flows.py --flow NAME --group-size 5
    python -m vortex verify flows.py --flow NAME    # a sweep of configs
    python -m vortex verify flows.py --flow NAME --quick   # a smaller one
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
`verify` prints a table of the configs (vortex.compiler.sweep) and its
time, exit 0 when every config compiles on both back ends, else 1. Bad
arguments (a FILE that does not exist, a `--flow` nobody registered, a
malformed `--init`; for `verify`, also an `--init` the constructor does not
take) exit 2, as argparse's own usage errors do, with a line that names
the argument.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from typing import Any, Dict, List, Optional

from .frontend.config import FlowConfig

_INT_KNOBS = ("block_size", "page_size", "head_dim", "group_size",
              "topk_val", "reserved_bos", "reserved_eos", "query_tokens")


class UsageError(Exception):
    """A bad command-line argument (exit 2); the message names it."""


def _flow_arguments(c: argparse.ArgumentParser, file_help: str) -> None:
    """FILE, --flow, --name, --init and the config flags."""
    c.add_argument("file", nargs="?", help=file_help)
    c.add_argument("--flow", help="registered flow name (or, without "
                   "FILE, a shipped example)")
    c.add_argument("--name", help="symbol of the traced vortex.flow "
                   "(default: the registered name)")
    c.add_argument("--init", action="append", default=[],
                   metavar="KEY=VALUE", help="flow constructor argument")
    for knob in _INT_KNOBS:
        c.add_argument("--" + knob.replace("_", "-"), type=int)
    c.add_argument("--topk-ratio", type=float)
    for knob in ("intermediate-dtype", "kv-dtype", "q-dtype"):
        c.add_argument("--" + knob)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m vortex",
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("compile", "trace"):
        c = sub.add_parser(name, help=f"{name} a flow")
        _flow_arguments(c, "flow module (.py) or .mlir")
        c.add_argument("-o", "--output", help="compile: output directory "
                       "(default: the compile cache); trace: output file")
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
                       "nothing (vortex.compiler.sweep); the config flags "
                       "set the base the sweep varies")
    _flow_arguments(v, "flow module (.py)")
    for knob, default in (("groups", "GROUPS"), ("head-dims", "HEAD_DIMS"),
                          ("block-sizes", "BLOCK_SIZES"),
                          ("page-ratios", "PAGE_RATIOS")):
        v.add_argument("--" + knob, type=int, nargs="+", default=None,
                       help=f"default: vortex.compiler.sweep.{default} "
                       "(QUICK's with --quick)")
    v.add_argument("--quick", action="store_true", help="a smaller grid "
                   "(vortex.compiler.sweep.QUICK) that keeps each axis's "
                   "edges")
    v.add_argument("-j", "--jobs", type=int, default=2)
    ls = sub.add_parser("list", help="list the registered flows")
    ls.add_argument("file", nargs="?")
    return p


def _init_kwargs(items: List[str]) -> Dict[str, Any]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--init expects KEY=VALUE, got {item!r}")
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
    from .flow import get, has, list_keys, load_module
    if args.file:
        before = set(list_keys())
        module = load_module(args.file)
        # The flows it registered, or whose class it defines (a shipped
        # flow's module was imported before: nothing new in the registry).
        new = [k for k in list_keys() if k not in before or
               get(k).__module__ == module.__name__]
        flow = args.flow or (new[0] if len(new) == 1 else None)
        if flow is None:
            raise UsageError(f"FILE {args.file!r} registers {new}: pick one "
                             "with --flow")
        if not has(flow):
            raise UsageError(f"--flow {flow!r}: {args.file} registers no "
                             f"such flow (it registers {new})")
        return flow, None, args.name
    if not args.flow:
        raise UsageError("give a flow FILE or --flow NAME")
    shipped = flows.SHIPPED.get(args.flow)
    if shipped is not None:
        return shipped.flow, shipped.config, args.name or shipped.symbol
    if not has(args.flow):
        known = ", ".join(sorted(list_keys()))
        raise UsageError(f"--flow {args.flow!r}: no such registered or "
                         f"shipped flow (known: {known})")
    return args.flow, None, args.name


def _verify(args) -> int:
    from . import api
    from .compiler import sweep
    from .flow import FlowInitError
    if args.file and not args.file.endswith(".py"):
        raise UsageError(f"FILE {args.file!r}: verify takes a flow module "
                         "(.py); the sweep traces it at each config")
    flow, base, name = _resolve(args)
    pick = {k: getattr(args, k) or (sweep.QUICK[k] if args.quick else
                                    getattr(sweep, k.upper()))
            for k in ("groups", "head_dims", "block_sizes", "page_ratios")}
    if any(x < 1 for xs in pick.values() for x in xs) or args.jobs < 1:
        raise UsageError("--groups, --head-dims, --block-sizes, "
                         "--page-ratios and --jobs take positive integers")
    init = _init_kwargs(args.init)
    try:   # the constructor takes no config: a failure there fails all
        instance = api.resolve_flow(flow, init)
    except FlowInitError as err:
        if str(err).startswith("Constructor arguments mismatch"):
            raise UsageError(f"--init: {err}") from None
        raise
    base = FlowConfig.coerce(base if base is not None else
                             api.default_config(instance), **_overrides(args))
    table, status = sweep.verify(flow, sweep.grid(base, **pick), name=name,
                                 init_kwargs=init, jobs=args.jobs)
    print(table)
    return status


def _run(args) -> int:
    from .compiler import driver as compiler
    from . import api
    if args.file and not os.path.isfile(args.file):
        raise UsageError(f"FILE {args.file!r}: no such file")
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
    init = _init_kwargs(args.init)
    if config is None:
        config = api.default_config(api.resolve_flow(flow, init))
    config = FlowConfig.coerce(config, **_overrides(args))
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
    except UsageError as err:
        print(f"python -m vortex {args.command}: error: {err}",
              file=sys.stderr)
        return 2
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
