"""`vOp`: the base of every vortex op object.

As in vortex_torch, an op is an object built in a flow's `__init__` (one per
call site) and called as `op(*values, ctx=ctx, ...)`. `__call__` is the one
dispatch point on the context's mode: `Mode.profile` (tracing) runs
`profile`, which checks the call and hands it to the op's `trace` (compute
the result type, append the MLIR op); `Mode.execute` or no context runs
`execute`, eager execution with torch primitives (`vortex.semantics.eager`).
"""

from __future__ import annotations

import difflib
import inspect
import sys
from abc import ABC, abstractmethod
from enum import IntEnum
from typing import Any, Dict, Optional, Sequence, Tuple

from ..frontend.errors import (FlowArgumentError, FlowTraceError,
                               UnsupportedOpError, format_message)
from ..frontend.source import user_frame_locals, user_site
from .context_base import ContextBase, Mode

__all__ = ["vOp", "Schedule"]


class Schedule(IntEnum):
    """W: fused into a per-workload kernel; S: standalone."""
    W = 0
    S = 1


_SIGNATURES: Dict[type, inspect.Signature] = {}


def _enclosing_flow() -> Optional[str]:
    """The flow whose code is running (the `self` of the innermost user
    frame that is a vFlow: its registered name, else its class name), for
    errors raised while a flow's __init__ builds its ops. A vFlow is known
    by its class marker: the flow layer sits above this one."""
    for local in user_frame_locals(2):
        obj = local.get("self")
        if getattr(type(obj), "_vortex_is_flow", False):
            cls = type(obj)
            return cls.__dict__.get("_vortex_flow_name") or cls.__qualname__
    return None


class vOp(ABC):
    """Base of all ops (see the module docstring). Subclasses implement
    `trace(*values, ctx)`; an eager implementation adds `execute`."""

    #: The vortex dialect op this one traces to (e.g. "gemm").
    mnemonic: Optional[str] = None

    def __init__(self) -> None:
        super().__init__()
        self.schedule = Schedule.S
        #: (trace id, Site) of the call that traced this op, if any.
        self._traced_at = None

    # -- the dispatch point --------------------------------------------------
    def __call__(self, *args: Any, ctx: Any = None, **kwargs: Any) -> Any:
        mode = getattr(ctx, "mode", None)
        if ctx is None:
            for a in args:
                if isinstance(a, ContextBase) and a.mode == Mode.profile:
                    a.begin_op(self, user_site())
                    a.error("the context was passed positionally; call the "
                            f"op as {self.call_form()}")
        if mode is None or mode == Mode.execute:
            return self.execute(*args, ctx=ctx, **kwargs)
        if mode == Mode.profile:
            return self.profile(*args, ctx=ctx, **kwargs)
        raise ValueError(f"{type(self).__name__}: unknown context mode "
                         f"{mode!r}, expected Mode.profile or Mode.execute")

    def profile(self, *args: Any, ctx: Any, **kwargs: Any) -> Any:
        """Trace this call into `ctx` (vortex_torch's profile step)."""
        ctx.begin_op(self, user_site())
        try:
            problem = self._bind(ctx, args, kwargs)
            if problem:
                ctx.error(problem)
            return self.trace(*args, ctx=ctx, **kwargs)
        finally:
            ctx.end_op()

    @abstractmethod
    def trace(self, *args: Any, ctx: Any, **kwargs: Any) -> Any:
        """Compute the result type(s), append the op to `ctx`, return the
        result vTensor(s)."""

    def execute(self, *args: Any, ctx: Any = None, **kwargs: Any) -> Any:
        """Run the call eagerly on torch tensors: the executing context
        (vortex.semantics.eager's) runs it."""
        if not isinstance(ctx, ContextBase):
            ctx = ContextBase()        # which refuses, naming the op
        return ctx.run_op(self, args, kwargs)

    # -- helpers -------------------------------------------------------------
    @classmethod
    def call_form(cls) -> str:
        """How the op is called, e.g. `op(x, y, ctx=ctx)`."""
        params = [p for p in cls._signature().parameters.values()
                  if p.name not in ("self", "ctx")]
        parts = [p.name + ("=" + p.name if p.kind == p.KEYWORD_ONLY else "")
                 for p in params]
        return "op(" + ", ".join(parts + ["ctx=ctx"]) + ")"

    @classmethod
    def _signature(cls) -> inspect.Signature:
        sig = _SIGNATURES.get(cls)
        if sig is None:
            sig = _SIGNATURES[cls] = inspect.signature(cls.trace)
        return sig

    def _bind(self, ctx: Any, args, kwargs) -> Optional[str]:
        """Check the call against `trace`'s signature, so that a wrong call
        form is reported at the user's line with the expected form."""
        try:
            self._signature().bind(self, *args, ctx=ctx, **kwargs)
        except TypeError as err:
            return f"{err}; the call form is {self.call_form()}"
        return None

    def _bad_argument(self, message: str) -> FlowArgumentError:
        """An error for invalid constructor arguments, at the user's line
        (vortex_torch asserts these in __init__)."""
        site = user_site()
        flow = _enclosing_flow()
        return FlowArgumentError(
            format_message(site, flow, type(self).__name__, message),
            flow=flow, op=type(self).__name__,
            filename=site.filename if site else None,
            lineno=site.lineno if site else None)

    def _prefix(self) -> str:
        return f"{type(self).__name__}: "


def unsupported(op: str, message: str) -> UnsupportedOpError:
    """The error for a vortex_torch construct vortex lacks, built in a
    flow's code: at the user's line, naming the flow (while its __init__
    runs) and `op`."""
    site = user_site()
    flow = _enclosing_flow()
    return UnsupportedOpError(
        format_message(site, flow, op, message), flow=flow, op=op,
        filename=site.filename if site else None,
        lineno=site.lineno if site else None)


class UnsupportedOp(vOp):
    """A vortex_torch op without a counterpart in the vortex dialect: the
    name exists so that flows importing it fail with a clear error when they
    build it."""

    reason = "the vortex dialect has no such op"
    #: The whole message, when `reason` does not fit it (unknown_op).
    message: Optional[str] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        name = type(self).__name__
        raise unsupported(name, self.message or (
            f"{name} is a vortex_torch op that vortex does not support "
            f"({self.reason})"))

    def trace(self, *args: Any, ctx: Any, **kwargs: Any) -> Any:
        # Not reached: the constructor raises.
        raise FlowTraceError(f"{type(self).__name__} is not supported")


_UNKNOWN: Dict[Tuple[str, str], type] = {}


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    """" (did you mean X?)" for the op `name` most likely misspells."""
    same = [k for k in known if k.lower() == name.lower()]
    close = same or difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    return f" (did you mean {close[0]}?)" if close else ""


def unknown_op(module: str, name: str) -> type:
    """The op class for a name `module` (vortex.indexer, vortex.cache) does
    not have: one that vortex_torch's custom-op registry may add, or a
    misspelling. Importing it works; building it raises UnsupportedOpError
    naming the flow, the op and the line, as for a known unsupported op,
    and the op `name` most likely misspells, if any."""
    key = (module, name)
    if key not in _UNKNOWN:
        known = getattr(sys.modules.get(module), "__all__", ())
        _UNKNOWN[key] = type(name, (UnsupportedOp,), {
            "__module__": module,
            "message": f"{module} has no op {name}"
                       f"{_did_you_mean(name, known)}; if it is one of "
                       "vortex_torch's custom ops (its open registry of "
                       "Schedule.S kernels), " + (
                           "register its torch function with "
                           "vortex.register_op before building the flow"
                           if module.endswith("indexer") else
                           "vortex runs custom ops on the indexer side "
                           "only")})
    return _UNKNOWN[key]


def unknown_op_getattr(module: str):
    """The module `__getattr__` of `module` (vortex.indexer, vortex.cache):
    a capitalized name it does not have (a vortex_torch custom op, a
    misspelling) imports as `unknown_op(module, name)`, so building it
    raises UnsupportedOpError with the flow, the op and the line, never a
    bare ImportError. vortex_torch's custom-op registry is open (a flow's
    package registers its own), so there is no list of its names to check
    against: an op name is any capitalized one, as vortex_torch's op
    classes are but for topK and approxTopK, which this module has. Any
    other name is an AttributeError naming the module
    (ImportError in a from-import)."""
    def __getattr__(name: str):
        if name[:1].isupper():
            return unknown_op(module, name)
        raise AttributeError(f"module '{module}' has no attribute {name!r}")
    return __getattr__
