"""Indexer-side state: Save and Load (vortex_torch `indexer/save_load.py`).
A Load of a field sees the field's value at the start of the step, also
after a Save of it in the same step."""

from __future__ import annotations

from ..abs.op import Schedule
from ..frontend.oplib import TracedOp
from ..frontend.types import RAGGED

__all__ = ["Save", "Load"]


class Save(TracedOp):
    """`op(x, F, ctx=ctx)`: store the ragged `x` into the paged field `F`
    (in place, rows that need selection); returns None."""

    mnemonic = "save"

    def __init__(self) -> None:
        super().__init__()
        self.schedule = Schedule.W

    def trace(self, x, F, *, ctx):
        self._emit_into(ctx, ctx.value(x, "x"), ctx.target(F, "F"))


class Load(TracedOp):
    """`y = op(F, ctx=ctx)`: the paged field `F` read per block (ragged)."""

    mnemonic = "load"

    def __init__(self) -> None:
        super().__init__()
        self.schedule = Schedule.W

    def compute(self, ctx, F):
        return self._emit_unary(ctx, F, F.shape[1], F.shape[2], RAGGED)

    def trace(self, F, *, ctx):
        return self.compute(ctx, ctx.value(F, "F"))
