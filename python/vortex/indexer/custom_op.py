"""Custom ops: vortex_torch's custom-op registry, as an escape hatch.

    import vortex
    from vortex.abs import FORMAT

    def score_norm(s, *, layout):          # torch, on the op's inputs
        ...                                # -> [S, 1, 1] (RAGGED)

    vortex.register_op("ScoreNorm", score_norm,
                       shape_rule=lambda s: (s.d0, s.d1))

    from vortex.indexer import ScoreNorm  # or custom("ScoreNorm")
    ...
        self.norm = ScoreNorm()            # in the flow's __init__
        score = self.norm(score, ctx=ctx)  # in forward_indexer

A registered op is a standalone (Schedule.S) indexer op. Traced, it is one
`vortex.custom_call "<name>"(...)` whose result type is the shape rule's
answer; in eager mode (`vortex.semantics.eager`) the function runs on the
inputs' torch tensors; `vortex.compile` splits the step around it into
stages (vortex.staged; docs/python.md, "Custom ops").
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from ..abs.op import Schedule, unknown_op
from ..abs.tensor import FORMAT
from ..frontend.config import float_literal
from ..frontend.oplib import TracedOp, attr_dict

__all__ = ["CustomLayout", "CustomOp", "CustomSpec", "custom",
           "custom_or_unknown",
           "register_op", "registered_ops", "unregister_op"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


class CustomSpec(NamedTuple):
    """What a shape rule sees of one input: its per-entry shape `[d0, d1]`,
    its format (FORMAT.RAGGED: one entry per CSR position; FORMAT.BATCHED:
    one per row) and its dtype name."""
    d0: int
    d1: int
    format: FORMAT
    dtype: str

    @property
    def shape(self) -> Tuple[int, int]:
        return (self.d0, self.d1)


class _Def(NamedTuple):
    name: str
    fn: Callable[..., Any]
    shape_rule: Callable[..., Any]


_REGISTRY: Dict[str, type] = {}


def register_op(name: str, fn: Optional[Callable[..., Any]] = None, *,
                shape_rule: Callable[..., Any], replace: bool = False):
    """Register the torch function `fn` as the indexer op `name`.

    `fn(*inputs, layout, **attrs)` gets each input as a float32 tensor,
    `[S, d0, d1]` (RAGGED: one entry per CSR position) or `[rows, d0, d1]`
    (BATCHED), and `layout` (`indptr` int64 `[rows + 1]`, `row_of` int64
    `[S]`, `valid` bool `[S]`: the positions inside the CSR, `rows`,
    `config`); it returns the result, a float tensor of the shape the rule
    declared. `shape_rule(*specs, **attrs)` gets a `CustomSpec` per input and
    returns `(d0, d1)` or `(d0, d1, FORMAT.RAGGED | FORMAT.BATCHED)`; the
    format defaults to vortex_torch's rule (BATCHED iff every input is).
    `attrs` are the op's constructor keywords. Returns the op class (also
    `vortex.indexer.<name>` and `vortex.indexer.custom(name)`); with `fn`
    omitted, a decorator. A name registered twice is an error unless
    `replace=True`."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"register_op: name must be an identifier (letters, "
                         f"digits, '_', '.'; not starting with a digit), got "
                         f"{name!r}")
    if not callable(shape_rule):
        raise TypeError(f"register_op({name!r}): shape_rule must be callable, "
                        f"got {type(shape_rule).__name__}")
    if fn is None:
        return lambda f: register_op(name, f, shape_rule=shape_rule,
                                     replace=replace)
    if not callable(fn):
        raise TypeError(f"register_op({name!r}): fn must be callable, got "
                        f"{type(fn).__name__}")
    builtin = sys.modules.get("vortex.indexer")
    if name not in _REGISTRY and name in getattr(builtin, "__dict__", {}):
        raise ValueError(f"register_op: {name!r} is a built-in name of "
                         "vortex.indexer; pick another name")
    if name in _REGISTRY and not replace:
        raise ValueError(f"register_op: {name!r} is already registered (pass "
                         "replace=True to replace it)")
    cls = type(name, (CustomOp,), {"__module__": "vortex.indexer",
                                   "_def": _Def(name, fn, shape_rule)})
    _REGISTRY[name] = cls
    return cls


def unregister_op(name: str) -> None:
    """Remove `name` from the registry (KeyError naming it if absent)."""
    if name not in _REGISTRY:
        raise KeyError(f"unregister_op: no custom op {name!r}")
    del _REGISTRY[name]


def registered_ops() -> Tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def custom(name: str) -> type:
    """The op class registered as `name`; an unregistered name gives the
    op class whose construction raises UnsupportedOpError at the flow's
    line (as an unknown import does)."""
    return _REGISTRY.get(name) or unknown_op("vortex.indexer", name)


def custom_or_unknown(module: str):
    """The module `__getattr__` of vortex.indexer: a registered custom op by
    name, else a capitalized name is an unknown op (abs.op.unknown_op),
    else an AttributeError naming the module."""
    def __getattr__(name: str):
        if name in _REGISTRY:
            return _REGISTRY[name]
        if name[:1].isupper():
            return unknown_op(module, name)
        raise AttributeError(f"module '{module}' has no attribute {name!r}")
    return __getattr__


def _format_of(value: Any) -> Optional[FORMAT]:
    try:
        return FORMAT(value)
    except ValueError:
        return None


class CustomLayout:
    """What a custom op's function sees of the step: the CSR's `indptr`
    (int64 `[rows + 1]`), each position's row `row_of` (int64 `[S]`),
    `valid` (bool `[S]`: the position lies in the CSR; `S` may exceed
    `indptr[-1]`), `rows` and the flow's `config`."""

    __slots__ = ("indptr", "row_of", "valid", "rows", "config")

    def __init__(self, indptr, row_of, valid, config) -> None:
        self.indptr, self.row_of, self.valid = indptr, row_of, valid
        self.rows, self.config = int(indptr.numel()) - 1, config

    @classmethod
    def from_csr(cls, indptr, total: int, config) -> "CustomLayout":
        """From a CSR's int64 `indptr` (a torch tensor) over `total`
        positions."""
        import torch
        rows = int(indptr.numel()) - 1
        pos = torch.arange(total, dtype=torch.int64, device=indptr.device)
        row_of = (torch.searchsorted(indptr[1:], pos, right=True)
                  .clamp(max=max(rows - 1, 0)))
        return cls(indptr, row_of, pos < indptr[-1], config)


class CustomOp(TracedOp):
    """A registered custom op (see `register_op`): `y = op(*x, ctx=ctx)`.
    Constructor keywords are the op's attributes, passed to the function
    and to the shape rule (numbers, strings, bools)."""

    mnemonic = "custom_call"
    _def: _Def

    def __init__(self, **attrs: Any) -> None:
        super().__init__()
        self.schedule = Schedule.S
        for key, value in attrs.items():
            ok = isinstance(value, (int, float, str, bool)) and (
                not isinstance(value, float) or math.isfinite(value))
            self._check(key, value, ok, "a finite number, a string or a bool")
        self.attrs = attrs

    def _attr_text(self) -> str:
        """The constructor keywords as the op's `attrs` dictionary (so the
        IR, and the compile cache's hash, tell two configurations apart)."""
        def lit(v):
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, int):
                return f"{v} : i64"
            if isinstance(v, float):
                return f"{float_literal(v)} : f64"
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        items = ", ".join(f"{k} = {lit(v)}"
                          for k, v in sorted(self.attrs.items()))
        return attr_dict([f"attrs = {{{items}}}"] if self.attrs else [])

    @property
    def op_name(self) -> str:
        return self._def.name

    @property
    def fn(self) -> Callable[..., Any]:
        return self._def.fn

    @staticmethod
    def spec_of(shape, fmt, dtype: str = "f32") -> CustomSpec:
        return CustomSpec(int(shape[1]), int(shape[2]), FORMAT(fmt), dtype)

    def result_spec(self, specs, fail: Callable[[str], Any]):
        """(d0, d1, format) by the shape rule, checked; `fail(message)`
        raises at the user's line."""
        name = self.op_name
        try:
            out = self._def.shape_rule(*specs, **self.attrs)
        except Exception as err:  # the user's code: report it at the line
            fail(f"shape_rule of {name!r} raised {type(err).__name__}: {err}")
        ok = isinstance(out, tuple) and len(out) in (2, 3) and all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 1
            for d in out[:2])
        if not ok:
            fail(f"shape_rule of {name!r} must return (d0, d1) or (d0, d1, "
                 f"FORMAT) with d0, d1 ints >= 1, got {out!r}")
        batched = all(s.format == FORMAT.BATCHED for s in specs)
        fmt = (_format_of(out[2]) if len(out) == 3 else
               FORMAT.BATCHED if batched else FORMAT.RAGGED)
        if fmt not in (FORMAT.RAGGED, FORMAT.BATCHED):
            fail(f"shape_rule of {name!r} returned the format {out[2]!r}; a "
                 "custom op's result is FORMAT.RAGGED or FORMAT.BATCHED")
        if fmt == FORMAT.BATCHED and not batched:
            fail(f"shape_rule of {name!r} declares a BATCHED result, but an "
                 "input is RAGGED (a per-position input gives a RAGGED "
                 "result)")
        return out[0], out[1], fmt

    def trace(self, *x, ctx):
        if not x:
            ctx.error(f"{self.op_name} needs at least one input; the call "
                      "form is op(x, ..., ctx=ctx)")
        vals = [ctx.value(v, f"x{i}" if len(x) > 1 else "x")
                for i, v in enumerate(x)]
        for i, v in enumerate(vals):
            if v._format not in (FORMAT.RAGGED, FORMAT.BATCHED):
                ctx.error(f"input {i} ({v._label}) is {v._format.name}; a "
                          "custom op takes RAGGED or BATCHED values (read a "
                          "field with Load first)")
        specs = [CustomSpec(v.shape[1], v.shape[2], v._format, v.dtype)
                 for v in vals]
        d0, d1, fmt = self.result_spec(specs, ctx.error)
        r = ctx.new_value(d0, d1, fmt, hint=self.op_name.lower())
        # The calls in trace order: the staged compile's runtime plan.
        ctx.custom_calls = getattr(ctx, "custom_calls", []) + [self]
        types = ", ".join(ctx.type_of(v) for v in vals)
        ctx.emit(f'{r._ssa} = vortex.custom_call "{self.op_name}"('
                 f'{", ".join(v._ssa for v in vals)}){self._attr_text()} : '
                 f"({types}) -> {ctx.type_of(r)}")
        return r
