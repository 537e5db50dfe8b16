"""Keep-dim reductions Max, Min, Mean, Sum, L2Norm (vortex_torch
`indexer/reduce.py`)."""

from __future__ import annotations

from ..abs.op import Schedule
from ..frontend.oplib import TracedOp
from ..frontend.types import BATCHED, i64_attr, workload_format

__all__ = ["Reduce", "Max", "Min", "Mean", "Sum", "L2Norm"]


class Reduce(TracedOp):
    """`y = op(x, ctx=ctx)`: reduce `[N, D0, D1]` over `dim`, keeping it
    with extent 1. dim 1 / 2: batched iff the input is; dim 0 (standalone):
    each row's ragged blocks to one batched row."""

    _dims = (0, 1, 2)

    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        if self.mnemonic is None:
            raise self._bad_argument("Reduce is abstract: use Max, Min, Mean, "
                                     "Sum or L2Norm")
        self.dim = self._int_arg("dim", dim, self._dims)
        self.schedule = Schedule.S if self.dim == 0 else Schedule.W

    def compute(self, ctx, x):
        d0, d1 = x.shape[1], x.shape[2]
        if self.dim == 0:
            fmt = BATCHED
        else:
            fmt = workload_format([x._format])
            d0, d1 = (1, d1) if self.dim == 1 else (d0, 1)
        return self._emit_unary(ctx, x, d0, d1, fmt,
                                [f"dim = {i64_attr(self.dim)}"])

    def trace(self, x, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"))


class Max(Reduce):
    """Maximum over `dim`."""
    mnemonic = "max"


class Min(Reduce):
    """Minimum over `dim`."""
    mnemonic = "min"


class Mean(Reduce):
    """Mean over `dim` (divides by the real extent)."""
    mnemonic = "mean"


class Sum(Reduce):
    """Sum over `dim`."""
    mnemonic = "sum"


class L2Norm(Reduce):
    """`sqrt(sum x^2)` over `dim` (a norm, not an RMS)."""
    mnemonic = "l2norm"
