"""Cache-side GeMM, MaskSlice, Reshape and Fill (vortex_torch
`cache/matmul.py`, `mask.py`, `reshape.py`, `fill.py`)."""

from __future__ import annotations

from ..abs.op import Schedule
from ..frontend.oplib import CacheBinary, CacheUnary, TracedOp
from ..frontend.types import f32_attr
from ..indexer import layout as _layout
from ..indexer import matmul as _matmul

__all__ = ["GeMM", "MaskSlice", "Reshape", "Fill"]


class GeMM(CacheBinary, _matmul.GeMM):
    """`op(x, y, output, loc=loc, ctx=ctx)`: `O = Y X^T` per block."""


class MaskSlice(CacheUnary, _layout.MaskSlice):
    """`op(x, output, loc=loc, ctx=ctx)`: the positional mask tile."""


class Reshape(CacheUnary, _layout.Reshape):
    """`op(x, output, loc=loc, ctx=ctx)`: same-numel inner reshape."""


class Fill(TracedOp):
    """`Fill(alpha=0.0)`, `op(dest, loc=loc, ctx=ctx)`: set the field
    `dest` of each completed block to alpha (pages are recycled without
    clearing: stateful flows zero their state here); returns `dest`."""

    mnemonic = "fill"

    def __init__(self, alpha: float = 0.0) -> None:
        super().__init__()
        self.alpha = self._float_arg("alpha", alpha)
        self.schedule = Schedule.W

    def trace(self, dest, loc=None, *, ctx):
        d = ctx.target(dest, "dest")
        ctx.emit(f"vortex.fill {d._ssa} {{value = {f32_attr(self.alpha)}}} "
                 f": {ctx.type_of(d)}")
        ctx.claim(d, self.alpha)
        return d
