"""GeMM and GeMV (vortex_torch `indexer/matmul.py`)."""

from __future__ import annotations

from ..abs.op import Schedule
from ..frontend.oplib import TracedOp
from ..frontend.types import workload_format

__all__ = ["GeMM", "GeMV"]


class GeMM(TracedOp):
    """`o = op(x, y, ctx=ctx)`: `O[s, a, b] = sum_k Y[s, a, k] X[s, b, k]`
    (GeMM(x, y) = y x^T); x `[1 or S, Nx, K]`, y `[S, Ny, K]` -> `[S, Ny,
    Nx]`, batched iff both are."""

    mnemonic = "gemm"

    def __init__(self) -> None:
        super().__init__()
        self.schedule = Schedule.W
        self.groups = 1

    @classmethod
    def grouped(cls, groups: int) -> "GeMM":
        """The dialect's grouped GeMM (`{groups = G}`, a parameter `y`
        only), for the learned ops' per-head weights; not vortex_torch's
        API: `O[s, g Ny/G + a, b] = sum_k Y[g Ny/G + a, k] X[s, g Nx/G + b,
        k]` -> `[B, Ny, Nx/G]`."""
        op = cls()
        op.groups = op._int_arg("groups", groups, minimum=1)
        return op

    def compute(self, ctx, x, y):
        attrs = [f"groups = {self.groups} : i64"] if self.groups > 1 else []
        return self._emit_binary(ctx, x, y, y.shape[1],
                                 x.shape[1] // self.groups,
                                 workload_format([x._format, y._format]),
                                 attrs)

    def trace(self, x, y, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"), ctx.value(y, "y"))


class GeMV(TracedOp):
    """`o = op(x, y, ctx=ctx)`: `O[s, 0, 0] = <Y[s, 0, :], X[s, 0, :]>`;
    x `[B, 1, D]`, y `[S, 1, D]` -> `[S, 1, 1]`."""

    mnemonic = "gemv"

    def __init__(self) -> None:
        super().__init__()
        self.schedule = Schedule.W

    def compute(self, ctx, x, y):
        return self._emit_binary(ctx, x, y, 1, 1,
                                 workload_format([x._format, y._format]))

    def trace(self, x, y, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"), ctx.value(y, "y"))
