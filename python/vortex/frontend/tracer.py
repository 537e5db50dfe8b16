"""The tracer: runs a flow's forward methods on traced values and builds
one `vortex.flow` op in the dialect's textual syntax.

`TraceContext` is the `ctx` a flow's ops see while tracing (vortex_torch's
Context in profile mode). Each op call appends one line of MLIR (plus a
`vortex.write` for a cache op that writes a field) carrying the location of
the Python call, and returns vTensors bound to SSA names. Python computes
the result types (frontend.types); the C++ verifiers check the result when
the text goes through vortex-opt (frontend.verify).
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..abs.context_base import ContextBase, Mode
from ..abs.op import vOp
from ..abs.parameter import Parameter
from ..abs.tensor import FORMAT, vTensor
from .config import FlowConfig
from .errors import (FlowError, FlowTraceError, MissingFieldError, OpReuseError,
                     TorchInFlowError, format_message)
from .oplib import MASK_SLICE
from .source import Site, definition_site, mlir_string, user_site
from .types import f32_attr, vtensor_type

__all__ = ["TraceContext", "Traced", "OpRecord", "trace_flow",
           "current_context"]

_TRACE_IDS = itertools.count(1)
_ACTIVE = threading.local()

# torch methods a Gen-1 flow applied to q and the vortex op that replaces
# each (for the hint of TorchInFlowError).
_OP_HINTS = {
    "mean": "Mean(dim=...)", "max": "Max(dim=...)", "min": "Min(dim=...)",
    "sum": "Sum(dim=...)", "norm": "L2Norm(dim=...)",
    "softmax": "Softmax(dim=0, scale=...)", "matmul": "GeMM()",
    "bmm": "GeMM()", "einsum": "GeMM()", "mul": "Multiply()",
    "add": "Add(alpha, beta)", "sub": "Add(alpha=1.0, beta=-1.0)",
    "exp": "Exp()", "log": "Log()", "abs": "Abs()", "relu": "Relu()",
    "sigmoid": "Sigmoid(beta=-1.0)", "silu": "Silu(beta=-1.0)",
    "transpose": "Transpose()", "reshape": "Reshape(-1, a, b)",
    "view": "Reshape(-1, a, b)", "maximum": "Maximum()",
    "minimum": "Minimum()", "topk": "topK()", "kron": "Kron(dim)",
}
_SSA_BAD = re.compile(r"[^A-Za-z0-9_$.]")


def current_context() -> Optional["TraceContext"]:
    """The trace running on this thread, if any (vortex_torch's get_ctx)."""
    stack = getattr(_ACTIVE, "stack", None)
    return stack[-1] if stack else None


@dataclass
class OpRecord:
    """What produced one traced line: for mapping diagnostics back."""
    op: str              # vortex_torch class name, e.g. "GeMM"
    label: str           # e.g. "self.gemm"
    side: str            # "cache" | "indexer"
    site: Site


def _op_labels(flow: Any) -> Dict[int, str]:
    """id(op) -> how the flow holds it ("self.gemm", "self.ops[2]")."""
    labels: Dict[int, str] = {}
    for attr, value in getattr(flow, "__dict__", {}).items():
        if isinstance(value, vOp):
            labels.setdefault(id(value), f"self.{attr}")
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                if isinstance(v, vOp):
                    labels.setdefault(id(v), f"self.{attr}[{i}]")
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, vOp):
                    labels.setdefault(id(v), f"self.{attr}[{k!r}]")
    return labels


class _CacheDict(dict):
    """The `cache` a flow's forward sees: k, v and the declared fields; a
    missing name is an error at the user's line, not a bare KeyError."""

    def __init__(self, ctx: "TraceContext", items) -> None:
        super().__init__(items)
        self._ctx = ctx

    def __missing__(self, key):
        self._ctx.missing_field(key, list(self))


class _Loc:
    """The `loc` argument of forward_cache (vortex_torch: the token slots
    written this step). Cache ops accept it; it holds no data."""

    def __repr__(self) -> str:
        return "loc"


class TraceContext(ContextBase):
    """The context of one trace (see the module docstring). Exposes the
    vortex_torch Context knobs a flow may read (`vortex_dtype`,
    `block_size`, `head_dim`, `group_size`, `topk_val`, ...)."""

    def __init__(self, flow: Any, config: FlowConfig, name: str) -> None:
        super().__init__(name=name, mode=Mode.profile)
        self.flow = flow
        self.config = config
        self.flow_name = name
        self.trace_id = next(_TRACE_IDS)
        self.side: Optional[str] = None
        self.lines: List[str] = []
        self.records: Dict[Tuple[str, int, int], OpRecord] = {}
        self._labels = _op_labels(flow)
        # SSA names in use, per region (sibling regions may reuse names).
        self._scopes: Dict[str, set] = {"cache": set(), "indexer": set()}
        self._current: Optional[Tuple[Any, Optional[Site]]] = None
        self._next_tid = 0
        self.aliases: Dict[Tuple[int, int, str, int], str] = {}
        self.written: Dict[int, Any] = {}
        # (side, id(Parameter)) -> the region's parameter argument.
        self.params: Dict[Tuple[str, int], vTensor] = {}

    # -- vortex_torch Context knobs -----------------------------------------
    vortex_dtype = property(lambda self: self.config.intermediate_dtype)
    block_size = property(lambda self: self.config.block_size)
    page_size = property(lambda self: self.config.page_size)
    head_dim = property(lambda self: self.config.head_dim)
    group_size = property(lambda self: self.config.group_size)
    topk_val = property(lambda self: self.config.topk_val)
    topk_ratio = property(lambda self: self.config.topk_ratio)
    block_reserved_bos = property(lambda self: self.config.reserved_bos)
    block_reserved_eos = property(lambda self: self.config.reserved_eos)

    # -- errors ----------------------------------------------------------------
    def _raise(self, cls, message: str, site: Optional[Site],
               title: str = "", op: Optional[str] = None,
               notes: Sequence[str] = ()):
        """Raise `cls` at `site`; `title` heads the message (the op and the
        flow attribute holding it), `op` becomes the error's .op."""
        raise cls(format_message(site, self.flow_name, title, message, notes),
                  flow=self.flow_name, op=op,
                  filename=site.filename if site else None,
                  lineno=site.lineno if site else None)

    def op_title(self, op: Any) -> str:
        label = self._labels.get(id(op))
        return type(op).__name__ + (f" ({label})" if label else "")

    def error(self, message: str, cls=FlowTraceError):
        """Raise `cls` for the op being traced, at its call site."""
        op, site = self._current if self._current else (None, user_site())
        if op is None:
            self._raise(cls, message, site)
        self._raise(cls, message, site, self.op_title(op), type(op).__name__)

    def missing_field(self, key: Any, known: List[str]):
        pools = _pool_names(self.flow)
        implicit = " and ".join(repr(p) for p in pools)
        self._raise(MissingFieldError,
                    f"cache[{key!r}] is not a cache field: create_cache "
                    f"declares {[k for k in known if k not in pools]} "
                    f"({implicit} {'are' if len(pools) > 1 else 'is'} "
                    "implicit)", user_site(), f"forward_{self.side}")

    def torch_code_error(self, tensor: vTensor, what: str):
        method = what.rsplit(".", 1)[-1]
        hint = _OP_HINTS.get(method)
        notes = [f"use vortex.indexer.{hint}, built in __init__ and called "
                 "with ctx=ctx"] if hint else []
        self._raise(TorchInFlowError,
                    f"{what} on a traced value ({tensor._label}): torch and "
                    "numpy code cannot run inside a flow; every value flows "
                    "through vortex ops (vortex.indexer / vortex.cache)",
                    user_site(), f"torch code in forward_{self.side}",
                    what, notes)

    # -- op bookkeeping --------------------------------------------------------
    def begin_op(self, op: Any, site: Optional[Site]) -> None:
        self._current = (op, site)
        prev = op._traced_at
        if prev is not None and prev[0] == self.trace_id:
            where = prev[1] if prev[1] is not None else "another call"
            self._raise(OpReuseError,
                        f"this op object was already called at {where}; "
                        "ops are not reusable: build one op object per call "
                        "site in __init__", site, self.op_title(op),
                        type(op).__name__)
        op._traced_at = (self.trace_id, site)

    def end_op(self) -> None:
        self._current = None

    def target(self, x: Any, argname: str) -> vTensor:
        """`x` checked to be a traced value of the current side, as the
        destination of a write (a field is the field itself)."""
        if not isinstance(x, vTensor) or x._trace is not self:
            what = type(x).__name__
            if isinstance(x, vTensor):
                what = "a vTensor that is not a value of this trace"
            elif type(x).__module__.startswith("torch"):
                what += " (torch tensors cannot enter a traced flow)"
            self.error(f"argument '{argname}' must be a flow value (an input, "
                       f"a cache field or an op result), got {what}")
        if x._region != self.side:
            self.error(f"argument '{argname}' ({x._label}) is a value of "
                       f"forward_{x._region}; forward_{self.side} cannot use "
                       "it")
        return x

    def value(self, x: Any, argname: str) -> vTensor:
        """`x` checked (as `target`), as an operand: on the cache side a
        field written earlier in the body reads as the value written (the
        writing op claims the field as its output, as in vortex_torch). A
        flow Parameter reads as the region's parameter argument."""
        if isinstance(x, Parameter):
            bound = self.params.get((self.side, id(x)))
            if bound is None and not x.operand:
                self.error(f"argument '{argname}' is a rank-4 Parameter "
                           f"{list(x.data.shape)}: the weights of an op "
                           "(LearnedQuery, FactorScore, LearnedDescriptor), "
                           "not an operand")
            if bound is None:
                self.error(f"argument '{argname}' is a Parameter that is not "
                           "an attribute of this flow (assign it to self in "
                           "__init__)")
            return bound
        x = self.target(x, argname)
        written = self.written.get(id(x))
        if written is None:
            return x
        if isinstance(written, float):      # Fill(alpha): a constant tile
            tile = self.new_value(x.shape[1], x.shape[2], FORMAT.RAGGED,
                                  hint=f"{x._ssa[1:]}_filled")
            a = f32_attr(written)
            self.emit(f"{tile._ssa} = vortex.{MASK_SLICE} {x._ssa} "
                      f"{{start = 0 : i64, end = 0 : i64, dim = 1 : i64, "
                      f"alpha = {a}, beta = {a}}} : {self.type_of(x)} -> "
                      f"{self.type_of(tile)}")
            self.written[id(x)] = written = tile
        return written

    def claim(self, field: vTensor, value: Any) -> None:
        """Record that the cache body wrote `value` (a vTensor, or a float
        for Fill) into `field`: later reads of the field see it."""
        if self.side == "cache":
            self.written[id(field)] = value

    def _ssa(self, hint: str) -> str:
        base = _SSA_BAD.sub("_", hint) or "v"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "v" + base
        used = self._scopes[self.side]
        name, n = base, 1
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        return "%" + name

    def new_value(self, d0: int, d1: int, fmt: int,
                  dtype: Optional[str] = None, hint: str = "") -> vTensor:
        """A fresh result value of the current op."""
        op = self._current[0] if self._current else None
        if not hint:
            label = self._labels.get(id(op), "")
            hint = label.replace("self.", "") or (op.mnemonic if op else "v")
        t = vTensor(shape=(0, d0, d1),
                    dtype=dtype or self.config.intermediate_dtype,
                    _format=FORMAT(fmt), tensor_id=self._next_tid)
        self._next_tid += 1
        t._ssa = self._ssa(hint)
        t._trace = self
        t._region = self.side
        t._label = f"the result of {self.op_title(op)}" if op else hint
        return t

    def input_value(self, name: str, d0: int, d1: int, fmt: int, dtype: str,
                    label: str) -> vTensor:
        t = self.new_value(d0, d1, fmt, dtype, hint=name)
        t._label = label
        return t

    def emit(self, text: str) -> None:
        """Append one op line at the current op's call site."""
        op, site = self._current
        loc = site.mlir() if site is not None else ""
        self.lines.append(f"  {text} {loc}".rstrip())
        if site is not None:
            self.records.setdefault(
                (site.filename, site.lineno, site.col),
                OpRecord(type(op).__name__,
                         self._labels.get(id(op), ""), self.side, site))

    def type_of(self, t: vTensor) -> str:
        """The type of `t` as a type alias (`!ragged_1x128`); the aliases
        are defined at the top of the traced text."""
        key = (t.shape[1], t.shape[2], t.dtype, int(t._format))
        alias = self.aliases.get(key)
        if alias is None:
            suffix = ("" if t.dtype == self.config.intermediate_dtype
                      else "_" + t.dtype)
            alias = (f"!{t._format.name.lower()}_{t.shape[1]}x{t.shape[2]}"
                     f"{suffix}")
            self.aliases[key] = alias
        return alias

    def alias_definitions(self) -> str:
        return "".join(f"{alias} = {vtensor_type(*key)}\n"
                       for key, alias in self.aliases.items())


# ---------------------------------------------------------------------------
# Flow assembly
# ---------------------------------------------------------------------------

@dataclass
class Traced:
    """A traced flow: its text and the records mapping locations back."""
    text: str
    ctx: TraceContext
    site: Optional[Site]


def _declare_fields(flow: Any, ctx: TraceContext) -> List[Tuple[str, int, int]]:
    """Run `flow.initialize` (which calls create_cache) and return the
    declared fields in declaration order."""
    cfg = ctx.config
    site = None
    fn = getattr(type(flow), "create_cache", None)
    if fn is not None and hasattr(fn, "__code__"):
        site = Site(fn.__code__.co_filename, fn.__code__.co_firstlineno, 1,
                    "create_cache")
    mla = _is_mla(flow)
    if mla != cfg.is_mla:
        ctx._raise(FlowTraceError, (
            f"config: {type(flow).__name__} is an MLA flow (vFlowMLA); trace "
            f"it with a config that sets kv_lora_rank and rope_dim (e.g. "
            f"vortex.FlowConfig.mla(512, 64, group_size=16))") if mla else (
            f"config: kv_lora_rank and rope_dim are for an MLA flow "
            f"(vFlowMLA); {type(flow).__name__} is not one"),
            site, "create_cache", "create_cache")
    dims = ((cfg.kv_lora_rank, cfg.rope_dim) if mla else (cfg.head_dim,))
    try:
        flow.initialize(cfg.block_size, *dims, cfg.kv_dtype,
                        cfg.query_dtype, cfg.intermediate_dtype)
        meta = getattr(flow, "cache_meta_info", None)
        if not isinstance(meta, dict):   # an initialize() that skips it
            meta = dict(flow.create_cache(cfg.block_size, *dims))
    except (AssertionError, TypeError, ValueError) as err:
        ctx._raise(FlowTraceError, f"create_cache / initialize failed: "
                   f"{type(err).__name__}: {err}", site, "create_cache",
                   "create_cache")
    fields = []
    for name, entry in meta.items():
        if name in _pool_names(flow):
            continue
        shape = entry[0] if isinstance(entry, tuple) and len(entry) == 2 \
            and isinstance(entry[0], tuple) else entry
        ok = (isinstance(name, str) and name and isinstance(shape, tuple)
              and len(shape) == 2 and all(isinstance(d, int) and
                                          not isinstance(d, bool) and d > 0
                                          for d in shape))
        if not ok:
            ctx._raise(FlowTraceError, f"create_cache must map field names "
                       f"to (rows, cols) of positive ints, got {name!r}: "
                       f"{shape!r}", site, "create_cache", "create_cache")
        fields.append((name, shape[0], shape[1]))
    return fields


def _is_mla(flow: Any) -> bool:
    return bool(getattr(flow, "_vortex_is_mla", False))


def _pool_names(flow: Any) -> Tuple[str, ...]:
    """The implicit pools as the flow's `cache` names them: an MLA flow's
    one latent (the IR's k; v is the same pool and not a flow value), or k
    and v."""
    return ("latent",) if _is_mla(flow) else ("k", "v")


def _region(ctx: TraceContext, side: str, args: List[vTensor],
            body) -> str:
    """Trace one forward method into `side(...) { ... }`."""
    ctx.side = side
    ctx.lines = []
    try:
        body()
    except FlowError:
        raise
    except Exception as err:
        err.add_note(f"(while tracing forward_{side} of flow "
                     f"'{ctx.flow_name}')")
        raise
    header = ", ".join(f"{a._ssa}: {ctx.type_of(a)}" for a in args)
    return f"{side}({header}) {{\n" + "".join(
        line + "\n" for line in ctx.lines) + "}"


def trace_flow(flow: Any, config: FlowConfig, name: str) -> Traced:
    """Trace `flow` (a vFlow instance) under `config` as `@name`."""
    ctx = TraceContext(flow, config, name)
    stack = getattr(_ACTIVE, "stack", None)
    if stack is None:
        stack = _ACTIVE.stack = []
    stack.append(ctx)
    try:
        return _trace(flow, ctx)
    finally:
        stack.pop()


def _inputs(ctx: TraceContext, fields, side: str,
            params=()) -> List[vTensor]:
    """The region arguments of `side`: (q, o,) k, v, the fields and the
    parameters."""
    cfg = ctx.config
    ctx.side = side
    args = []
    if side == "indexer":
        args.append(ctx.input_value("q", cfg.query_tokens * cfg.group_size,
                                    cfg.head_dim,
                                    FORMAT.BATCHED, cfg.query_dtype, "q"))
        args.append(ctx.input_value("o", 1, 1, FORMAT.RAGGED, "i32", "o"))
    # An MLA flow's latent is the IR's k.
    pools = ["latent", "v"] if cfg.is_mla else ["k", "v"]
    for (n, r, c, dtype), label in zip(
            [("k", cfg.block_size, cfg.head_dim, cfg.kv_value_dtype),
             ("v", cfg.block_size, cfg.head_dim, cfg.kv_value_dtype)] +
            [f + (cfg.intermediate_dtype,) for f in fields],
            pools + [f[0] for f in fields]):
        args.append(ctx.input_value(n, r, c, FORMAT.PAGED, dtype,
                                    f"cache[{label!r}]"))
    for n, p in params:
        r, c = p.rows_cols
        t = ctx.input_value(n, r, c, FORMAT.PARAMETER,
                            cfg.intermediate_dtype, f"parameter {n!r}")
        ctx.params[(side, id(p))] = t
        args.append(t)
    return args


def _trace(flow: Any, ctx: TraceContext) -> Traced:
    cfg = ctx.config
    fields = _declare_fields(flow, ctx)
    params = list(flow.parameters().items()) if hasattr(
        flow, "parameters") else []
    # The cache dict names the pools as the flow does; an MLA flow's v is
    # not a flow value, so its cache has the latent (k) and the fields.
    names = list(_pool_names(flow)) + [n for n, _, _ in fields]

    def view(args):
        return args[:1] + args[2:] if cfg.is_mla else args

    cache_args = _inputs(ctx, fields, "cache", params)
    cache = _CacheDict(ctx, zip(names, view(cache_args)))
    cache_text = _region(ctx, "cache", cache_args,
                         lambda: flow.forward_cache(cache, _Loc(), ctx))
    indexer_args = _inputs(ctx, fields, "indexer", params)
    q, o = indexer_args[:2]
    icache = _CacheDict(ctx, zip(names, view(indexer_args[2:])))
    indexer_text = _region(ctx, "indexer", indexer_args,
                           lambda: flow.forward_indexer(q, o, icache, ctx))
    decl = ", ".join(f"{_field_key(n)} = [{r}, {c}]" for n, r, c in fields)
    pdecl = ", ".join(f"{_field_key(n)} = [{p.rows_cols[0]}, "
                      f"{p.rows_cols[1]}]" for n, p in params)
    site = definition_site(type(flow))
    loc = (" " + site.mlir()) if site is not None else ""
    text = (ctx.alias_definitions() + "\n" +
            f"vortex.flow {_symbol(ctx.flow_name)}\n"
            f"    config = {cfg.to_mlir()}\n"
            f"    fields({decl})"
            + (f" params({pdecl})" if params else "") + "\n"
            f"{cache_text}\n{indexer_text}{loc}\n")
    return Traced(text, ctx, site)


def _symbol(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", name):
        return "@" + name
    return "@" + mlir_string(name)


def _field_key(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", name):
        return name
    return mlir_string(name)
