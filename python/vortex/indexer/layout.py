"""Layout and positional ops: Transpose, Reshape, Kron, MaskSlice
(vortex_torch `indexer/transpose.py`, `reshape.py`, `kron.py`,
`mask.py`)."""

from __future__ import annotations

from typing import Iterable, Tuple, Union

from ..abs.op import Schedule
from ..frontend.oplib import MASK_SLICE, TracedOp
from ..frontend.types import broadcast, f32_attr, i64_attr, workload_format

__all__ = ["Transpose", "Reshape", "Kron", "MaskSlice"]


class Transpose(TracedOp):
    """`y = op(x, ctx=ctx)`: `[S, D0, D1] -> [S, D1, D0]`."""

    mnemonic = "transpose"

    def __init__(self) -> None:
        super().__init__()
        self.schedule = Schedule.W

    def compute(self, ctx, x):
        return self._emit_unary(ctx, x, x.shape[2], x.shape[1],
                                workload_format([x._format]))

    def trace(self, x, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"))


class Reshape(TracedOp):
    """`Reshape(-1, x2, y2)`, `y = op(x, ctx=ctx)`: row-major reshape of
    the inner axes, `[S, x1, y1] -> [S, x2, y2]`, `x1 y1 == x2 y2`."""

    mnemonic = "reshape"

    def __init__(self, batch_dim: int, x2: int, y2: int) -> None:
        super().__init__()
        self._int_arg("batch_dim", batch_dim, (-1,))
        self.x2 = self._int_arg("x2", x2, minimum=1)
        self.y2 = self._int_arg("y2", y2, minimum=1)
        self.schedule = Schedule.W

    def compute(self, ctx, x):
        return self._emit_unary(ctx, x, self.x2, self.y2,
                                workload_format([x._format]))

    def trace(self, x, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"))


class Kron(TracedOp):
    """`Kron(dim=(1, 2))`, `o = op(x, y, ctx=ctx)`: Kronecker product along
    the axes in `dim` (extent x_a * y_a), broadcast on the other."""

    mnemonic = "kron"

    def __init__(self, dim: Union[int, Iterable[int]] = (1, 2)) -> None:
        super().__init__()
        dims: Tuple = (dim,) if isinstance(dim, int) else tuple(dim)
        ok = (len(dims) >= 1 and len(set(dims)) == len(dims) and
              all(isinstance(a, int) and a in (1, 2) for a in dims))
        self._check("dim", dim, ok, "a non-empty set of distinct axes in "
                    "{1, 2}")
        self.dim = tuple(sorted(dims))
        self.schedule = Schedule.W

    def compute(self, ctx, x, y):
        ext = [x.shape[a] * y.shape[a] if a in self.dim
               else broadcast(x.shape[a], y.shape[a]) for a in (1, 2)]
        dims = ", ".join(str(a) for a in self.dim)
        return self._emit_binary(ctx, x, y, ext[0], ext[1],
                                 workload_format([x._format, y._format]),
                                 [f"dims = array<i64: {dims}>"])

    def trace(self, x, y, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"), ctx.value(y, "y"))


class MaskSlice(TracedOp):
    """`MaskSlice(start, end, dim, alpha=1.0, beta=0.0)`, `y = op(x,
    ctx=ctx)`: alpha at positions [start, end) along `dim` (1 or 2), beta
    elsewhere; x gives only the shape."""

    mnemonic = MASK_SLICE

    def __init__(self, start: int, end: int, dim: int, alpha: float = 1.0,
                 beta: float = 0.0) -> None:
        super().__init__()
        self.start = self._int_arg("start", start)
        self.end = self._int_arg("end", end)
        self.dim = self._int_arg("dim", dim, (1, 2))
        self._check("start", start, self.start <= self.end,
                    f"<= end ({self.end})")
        self.alpha = self._float_arg("alpha", alpha)
        self.beta = self._float_arg("beta", beta)
        self.schedule = Schedule.W

    def compute(self, ctx, x):
        return self._emit_unary(ctx, x, x.shape[1], x.shape[2],
                                workload_format([x._format]), [
                                    f"start = {i64_attr(self.start)}",
                                    f"end = {i64_attr(self.end)}",
                                    f"dim = {i64_attr(self.dim)}",
                                    f"alpha = {f32_attr(self.alpha)}",
                                    f"beta = {f32_attr(self.beta)}"])

    def trace(self, x, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"))
