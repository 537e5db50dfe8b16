"""Cache-side reductions (vortex_torch `cache/reduce.py` and
`reduce_interleave.py`): `op(x, output, loc=loc, ctx=ctx)`, over dim 1 or 2
of the completed block; `output` a field (written back) or None."""

from __future__ import annotations

from ..abs.op import Schedule
from ..frontend.oplib import CacheUnary, TracedOp
from ..frontend.types import i64_attr, workload_format
from ..indexer import reduce as _indexer

__all__ = ["Mean", "Max", "Min", "L2Norm", "ReduceInterleave",
           "MeanInterleave", "MaxInterleave", "MinInterleave",
           "L2NormInterleave"]


class Mean(CacheUnary, _indexer.Mean):
    """Mean over dim 1 or 2 of each completed block."""
    _dims = (1, 2)


class Max(CacheUnary, _indexer.Max):
    """Maximum over dim 1 or 2 of each completed block."""
    _dims = (1, 2)


class Min(CacheUnary, _indexer.Min):
    """Minimum over dim 1 or 2 of each completed block."""
    _dims = (1, 2)


class L2Norm(CacheUnary, _indexer.L2Norm):
    """L2 norm over dim 1 or 2 of each completed block."""
    _dims = (1, 2)


class ReduceInterleave(CacheUnary, TracedOp):
    """`ReduceInterleave(dim=1, k=2)`: folds each run of `k` consecutive
    entries along `dim` into one (`[1, N, D] -> [1, N/k, D]` for dim 1)."""

    def __init__(self, dim: int = 1, k: int = 2) -> None:
        super().__init__()
        if self.mnemonic is None:
            raise self._bad_argument(
                "ReduceInterleave is abstract: use MeanInterleave, "
                "MaxInterleave, MinInterleave or L2NormInterleave")
        self.dim = self._int_arg("dim", dim, (1, 2))
        self.k = self._int_arg("k", k, minimum=1)
        self.schedule = Schedule.W

    def compute(self, ctx, x):
        d0, d1 = x.shape[1], x.shape[2]
        # An extent the factor does not divide still gets a valid result
        # type (at least 1), so the verifier refuses the op itself ("not a
        # multiple of the factor") rather than an empty type.
        if self.dim == 1:
            d0 = max(d0 // self.k, 1)
        else:
            d1 = max(d1 // self.k, 1)
        return self._emit_unary(ctx, x, d0, d1, workload_format([x._format]),
                                [f"dim = {i64_attr(self.dim)}",
                                 f"factor = {i64_attr(self.k)}"])


class MeanInterleave(ReduceInterleave):
    mnemonic = "mean_interleave"


class MaxInterleave(ReduceInterleave):
    mnemonic = "max_interleave"


class MinInterleave(ReduceInterleave):
    mnemonic = "min_interleave"


class L2NormInterleave(ReduceInterleave):
    mnemonic = "l2norm_interleave"
