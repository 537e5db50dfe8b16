"""Entry points: trace a vFlow to IR, compile it, and the `vortex.compile`
that accepts both IR and flows. The top of the authoring stack: it imports
the tracer, the flow classes and the shipped flows, and nothing below
imports it."""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence, Union

from .compiler import driver as compiler
from . import flows as shipped     # registers the shipped flows by name
from .flow import registry
from .flow.flow import flow_name, vFlow
from .flow.loader import build_vflow
from .frontend.config import FlowConfig
from .frontend.tracer import Traced, trace_flow
from .frontend.verify import verify_text
from .staged import compile_staged

__all__ = ["trace", "trace_flow_ir", "compile", "compile_vflow",
           "default_config", "resolve_flow", "trace_shipped",
           "compile_shipped"]

ConfigLike = Union[FlowConfig, Mapping[str, Any], None]


def resolve_flow(flow: Any, init_kwargs: Optional[Mapping] = None) -> vFlow:
    """A vFlow instance from an instance, a vFlow subclass or a registered
    name (the shipped flows of `vortex.flows` are found by name too)."""
    if isinstance(flow, vFlow):
        if init_kwargs:
            raise TypeError("init_kwargs apply to a flow class or a "
                            "registered name, not to an instance")
        return flow
    if isinstance(flow, type) and issubclass(flow, vFlow):
        return flow(**dict(init_kwargs or {}))
    if isinstance(flow, str):
        return build_vflow(flow, dict(init_kwargs or {}))
    raise TypeError(f"expected a vFlow, a vFlow subclass or a registered "
                    f"flow name, got {type(flow).__name__}")


def default_config(flow: Any) -> FlowConfig:
    """The config a flow traces under when none is given: FlowConfig's
    defaults, or `FlowConfig.mla()` (DeepSeek-V2/V3's latent of 512 + 64)
    for an MLA flow."""
    return FlowConfig.mla() if getattr(flow, "_vortex_is_mla", False) \
        else FlowConfig()


def trace_flow_ir(flow: Any, config: ConfigLike = None, *,
                  name: Optional[str] = None, verify: bool = True,
                  init_kwargs: Optional[Mapping] = None,
                  **overrides: Any) -> Traced:
    """Like `trace`, returning the Traced record (text and the map from
    locations to ops)."""
    instance = resolve_flow(flow, init_kwargs)
    cfg = FlowConfig.coerce(config if config is not None else
                            default_config(instance), **overrides)
    traced = trace_flow(instance, cfg, name or flow_name(type(instance)))
    if verify:
        verify_text(traced)
    return traced


def trace(flow: Any, config: ConfigLike = None, *, name: Optional[str] = None,
          verify: bool = True, init_kwargs: Optional[Mapping] = None,
          **overrides: Any) -> str:
    """The `vortex.flow` IR of `flow` (a vFlow instance, class or registered
    name) under `config` (a FlowConfig, a dict of its fields or None for
    the defaults, `FlowConfig.mla()` for an MLA flow; keyword overrides
    such as group_size=5 apply on top).

    The flow's symbol is `name`, else its registered name. Every op carries
    the location of its Python call. With `verify` the text goes through
    vortex-opt and a diagnostic raises FlowVerifyError naming the Python
    line; tracing errors raise other FlowErrors."""
    return trace_flow_ir(flow, config, name=name, verify=verify,
                         init_kwargs=init_kwargs, **overrides).text


def compile_vflow(flow: Any, config: ConfigLike = None,
                   target: str = "cpu", *, name: Optional[str] = None,
                   out_dir: Optional[str] = None,
                   options: Sequence[str] = (), use_cache: bool = True,
                   init_kwargs: Optional[Mapping] = None,
                   **overrides: Any) -> str:
    """`compile` of a vFlow: trace `flow` (as `trace` does), compile it for
    `target` ("cpu" or a GPU chip such as "sm_90") with vortex-compile and
    return the manifest path (for `vortex.load`). An unknown name raises
    FlowLoadError. (`vortex.compile_flow` is another thing: IR compiled and
    loaded on the CPU runtime.)"""
    traced = trace_flow_ir(flow, config, name=name, init_kwargs=init_kwargs,
                           **overrides)
    calls = getattr(traced.ctx, "custom_calls", [])
    if calls:
        # Compiled around its custom ops, stage by stage (vortex.staged).
        return compile_staged(traced.text, traced.ctx.flow_name, calls,
                              target, out_dir, options, use_cache)
    return compiler.compile(traced.text, target=target, out_dir=out_dir,
                            options=options, use_cache=use_cache)


def _is_flow(source: Any) -> bool:
    if isinstance(source, vFlow) or (isinstance(source, type) and
                                     issubclass(source, vFlow)):
        return True
    if isinstance(source, str) and "\n" not in source and \
            not os.path.exists(source) and "vortex.flow" not in source:
        return registry.has(source)
    return False


def compile(source: Any, *args: Any, config: ConfigLike = None,
            name: Optional[str] = None, init_kwargs: Optional[Mapping] = None,
            **kwargs: Any) -> str:
    """`vortex.compile`: IR (a .mlir path or text) exactly as
    `vortex.compiler.driver.compile(source, target="cpu", out_dir=None,
    flow=None, options=(), use_cache=True)`, or a vFlow (instance, class or
    registered name) traced under `config` first, with the same remaining
    parameters: `vortex.compile(flow, FlowConfig(...), target="sm_90")`. Config
    fields given as keywords (group_size=5) override. Returns the manifest
    path."""
    if not _is_flow(source):
        if config is not None or name is not None or init_kwargs:
            raise TypeError("config, name and init_kwargs apply to a vFlow, "
                            "not to IR")
        return compiler.compile(source, *args, **kwargs)
    if args and (isinstance(args[0], (FlowConfig, Mapping)) or
                 args[0] is None):
        if config is not None:
            raise TypeError("config given twice")
        config, args = args[0], args[1:]
    params = ("target", "out_dir", "flow", "options", "use_cache")
    if len(args) > len(params):
        raise TypeError(f"compile() takes at most {len(params) + 2} "
                        "positional arguments")
    for p, value in zip(params, args):
        if p in kwargs:
            raise TypeError(f"compile() got multiple values for {p!r}")
        kwargs[p] = value
    if kwargs.pop("flow", None) is not None:
        raise TypeError("flow= picks a flow of an IR module; a vFlow is "
                        "one flow")
    compile_args = {p: kwargs.pop(p) for p in params[:2] + params[3:]
                    if p in kwargs}
    return compile_vflow(source, config, name=name, init_kwargs=init_kwargs,
                        **compile_args, **kwargs)


def trace_shipped(example: str, verify: bool = True) -> str:
    """The traced IR of the shipped example `example` (a key of
    `vortex.flows.SHIPPED` or `LEARNED`)."""
    s = shipped.shipped(example)
    return trace(s.flow, s.config, name=s.symbol, verify=verify)


def compile_shipped(example: str, target: str = "cpu", **kwargs) -> str:
    """Trace and compile the shipped example `example`; returns the
    manifest."""
    s = shipped.shipped(example)
    return compile_vflow(s.flow, s.config, target, name=s.symbol, **kwargs)
