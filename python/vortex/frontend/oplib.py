"""Shared machinery of the op classes of `vortex.indexer` and
`vortex.cache`: emitting the dialect's assembly forms, and the cache call
forms (`op(x, output, loc=loc, ctx=ctx)`) on top of the indexer ones.

An op class implements `compute(ctx, *values)`: the result type by
vortex_torch's profile() rule and the emitted line. Its `trace` (the call
form) validates the arguments and calls `compute`; an eager `execute` can
sit next to it later, reusing the attributes the constructor stored.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from ..abs.op import vOp
from ..abs.tensor import FORMAT, vTensor

#: vortex.mask_slice, emitted by the MaskSlice op and by the tracer (the
#: constant tile a cache field reads as after Fill).
MASK_SLICE = "mask_slice"

__all__ = ["TracedOp", "CacheUnary", "CacheBinary", "attr_dict"]


def attr_dict(attrs: Iterable[str]) -> str:
    attrs = list(attrs)
    return " {" + ", ".join(attrs) + "}" if attrs else ""


class TracedOp(vOp):
    """An op with the emission helpers (see the module docstring)."""

    def _check(self, name: str, value: Any, ok: bool, expected: str) -> None:
        if not ok:
            raise self._bad_argument(f"{name} must be {expected}, got "
                                     f"{value!r}")

    def _int_arg(self, name: str, value: Any,
                 choices: Optional[Sequence[int]] = None,
                 minimum: Optional[int] = None) -> int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and choices is not None:
            ok = value in choices
        if ok and minimum is not None:
            ok = value >= minimum
        expected = ("one of " + ", ".join(map(str, choices)) if choices
                    else f"an int >= {minimum}" if minimum is not None
                    else "an int")
        self._check(name, value, ok, expected)
        return value

    def _float_arg(self, name: str, value: Any) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        self._check(name, value, ok, "a number")
        return float(value)

    def _emit_unary(self, ctx, x: vTensor, d0: int, d1: int, fmt: int,
                    attrs: Iterable[str] = ()) -> vTensor:
        r = ctx.new_value(d0, d1, fmt)
        ctx.emit(f"{r._ssa} = vortex.{self.mnemonic} {x._ssa}"
                 f"{attr_dict(attrs)} : {ctx.type_of(x)} -> {ctx.type_of(r)}")
        return r

    def _emit_binary(self, ctx, x: vTensor, y: vTensor, d0: int, d1: int,
                     fmt: int, attrs: Iterable[str] = ()) -> vTensor:
        r = ctx.new_value(d0, d1, fmt)
        ctx.emit(f"{r._ssa} = vortex.{self.mnemonic} {x._ssa}, {y._ssa}"
                 f"{attr_dict(attrs)} : ({ctx.type_of(x)}, {ctx.type_of(y)})"
                 f" -> {ctx.type_of(r)}")
        return r

    def _emit_into(self, ctx, x: vTensor, dest: vTensor,
                   attrs: Iterable[str] = (),
                   mnemonic: Optional[str] = None) -> None:
        ctx.emit(f"vortex.{mnemonic or self.mnemonic} {x._ssa} into "
                 f"{dest._ssa}{attr_dict(attrs)} : {ctx.type_of(x)} into "
                 f"{ctx.type_of(dest)}")

    def _write_back(self, ctx, value: vTensor, output: Any) -> vTensor:
        """The cache forms' `output`: None keeps the ragged result, a paged
        field gets `vortex.write`, a ragged value is rebound to the result
        (vortex_torch: the op claims the tensor as its output)."""
        if output is None:
            return value
        out = ctx.target(output, "output")
        if out._format == FORMAT.PAGED:
            self._emit_into(ctx, value, out, mnemonic="write")
            ctx.claim(out, value)
            return out
        if out._format == FORMAT.RAGGED:
            if out.shape[1:] != value.shape[1:]:
                ctx.error(f"output {out._label} is [S, {out.shape[1]}, "
                          f"{out.shape[2]}] but the result is [S, "
                          f"{value.shape[1]}, {value.shape[2]}]")
            out._ssa = value._ssa
            return out
        ctx.error(f"output ({out._label}) must be a PAGED cache field, a "
                  f"RAGGED value or None, got {out._format.name}")


class CacheUnary(TracedOp):
    """Cache form of a one-input op: `op(x, output, loc=loc, ctx=ctx)`."""

    def trace(self, x, output=None, loc=None, *, ctx):
        return self._write_back(ctx, self.compute(ctx, ctx.value(x, "x")),
                                output)


class CacheBinary(TracedOp):
    """Cache form of a two-input op: `op(x, y, output, loc=loc, ctx=ctx)`."""

    def trace(self, x, y, output=None, loc=None, *, ctx):
        return self._write_back(
            ctx, self.compute(ctx, ctx.value(x, "x"), ctx.value(y, "y")),
            output)
