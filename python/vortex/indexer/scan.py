"""Row-segment ops over the blocks of each row: Softmax, Normalize, Conv1d
(vortex_torch `indexer/scan.py`); standalone, ragged in and out."""

from __future__ import annotations

from typing import Any, List

from ..abs.op import Schedule
from ..frontend.config import float_literal
from ..frontend.oplib import TracedOp
from ..frontend.types import RAGGED, f32_attr, i64_attr

__all__ = ["Softmax", "Normalize", "Conv1d"]


class _Scan(TracedOp):
    def __init__(self, dim: int = 0) -> None:
        super().__init__()
        self.dim = self._int_arg("dim", dim, (0,))
        self.schedule = Schedule.S

    def _attrs(self) -> List[str]:
        return [f"dim = {i64_attr(self.dim)}"]

    def compute(self, ctx, x):
        return self._emit_unary(ctx, x, x.shape[1], x.shape[2], RAGGED,
                                self._attrs())

    def trace(self, x, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"))


class Softmax(_Scan):
    """`y = op(x, ctx=ctx)`: per row and channel, `exp(scale x) / sum
    exp(scale x)` over the row's scored blocks."""

    mnemonic = "softmax"

    def __init__(self, dim: int = 0, scale: float = 1.0) -> None:
        super().__init__(dim)
        self.scale = self._float_arg("scale", scale)

    def _attrs(self) -> List[str]:
        # `scale` may be set after construction (vortex_torch flows set it
        # in create_cache from head_dim).
        return super()._attrs() + [f"scale = {f32_attr(self.scale)}"]


class Normalize(_Scan):
    """`y = op(x, ctx=ctx)`: per row and channel, `x / ||x||_2` over the
    row's scored blocks."""

    mnemonic = "normalize"


def _nested(weight: Any) -> List[List[List[float]]]:
    if hasattr(weight, "tolist"):
        weight = weight.tolist()
    if not isinstance(weight, (list, tuple)) or not weight:
        raise ValueError("weight must be a non-empty nested list [K, D0, D1]")
    rows = []
    for tap in weight:
        if not isinstance(tap, (list, tuple)) or not tap:
            raise ValueError("weight must be 3-D [K, D0, D1]")
        rows.append([[float(v) for v in row] for row in tap])
    d0, d1 = len(rows[0]), len(rows[0][0])
    if any(len(t) != d0 or any(len(r) != d1 for r in t) for t in rows) \
            or d1 == 0:
        raise ValueError("weight must be a rectangular [K, D0, D1] list")
    return rows


class Conv1d(_Scan):
    """`y = op(x, ctx=ctx)`: causal depthwise convolution over the row's
    scored blocks, `Y[s] = sum_k W[k] X[s - k]`; `weight` is `[K, D0, D1]`
    (a nested list, or anything with .tolist())."""

    mnemonic = "conv1d"

    def __init__(self, weight: Any, dim: int = 0, dtype: Any = None,
                 device: Any = None) -> None:
        super().__init__(dim)
        try:
            self.weight = _nested(weight)
        except (TypeError, ValueError) as err:
            raise self._bad_argument(str(err)) from None
        self.kernel_size = len(self.weight)
        self.dtype = dtype
        self.device = device

    def _attrs(self) -> List[str]:
        k, d0, d1 = (len(self.weight), len(self.weight[0]),
                     len(self.weight[0][0]))
        body = "[" + ", ".join(
            "[" + ", ".join("[" + ", ".join(float_literal(v) for v in row)
                            + "]" for row in tap) + "]"
            for tap in self.weight) + "]"
        return super()._attrs() + [
            f"weight = dense<{body}> : tensor<{k}x{d0}x{d1}xf32>"]
