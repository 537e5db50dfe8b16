"""vortex_torch's `cache` package: the ops of `forward_cache`.

    from vortex.cache import Mean as CMean     # was: vortex_torch.cache

Call forms: `op(x, output, loc=loc, ctx=ctx)` (unary ops, reductions,
MaskSlice, Reshape), `op(x, y, output, loc=loc, ctx=ctx)` (binary ops,
GeMM), `Fill(alpha)(dest, loc=loc, ctx=ctx)`. A cache field as `output` is
written back (`vortex.write`); `None` leaves a ragged intermediate, which
the op returns. As in vortex_torch there is no Sum, GeMV, Transpose or Kron
on the cache side. LearnedDescriptor exists by name only.
"""

from ..abs.op import UnsupportedOp, unknown_op_getattr
from ..indexer.context import Context, get_ctx
from .elementwise import (Abs, Add, Add_Mul, Exp, Log, Maximum, Minimum,
                          Multiply, Relu, Sigmoid, Silu, WhereEqual,
                          WhereGreater, WhereGreaterEqual, WhereLess,
                          WhereLessEqual, WhereNotEqual)
from .ops import Fill, GeMM, MaskSlice, Reshape
from .reduce import (L2Norm, L2NormInterleave, Max, MaxInterleave, Mean,
                     MeanInterleave, Min, MinInterleave, ReduceInterleave)


class LearnedDescriptor(UnsupportedOp):
    reason = ("its token mixing g[h, m] = sum_t Wt[l, h, t, m] x[t] "
              "Wk[l, h] contracts a block's token axis, which no cache op "
              "does (GeMM contracts channels; the cache side has no "
              "Transpose); folded into one [H*m*r, block_size*d] matrix per "
              "layer it is exact on the CPU, but the GPU cache kernel "
              "unrolls it (20 MB of PTX at block_size 16, head_dim 128) "
              "and MLA sizes exceed the verifier's bound on a value. Its "
              "indexer half, FactorScore, is supported on any [H*m, r] "
              "field")


__all__ = [
    "Mean", "Max", "Min", "L2Norm", "MeanInterleave", "MaxInterleave",
    "MinInterleave", "L2NormInterleave", "GeMM", "Relu", "Silu", "Sigmoid",
    "Abs", "Add_Mul", "Log", "Exp", "Maximum", "Minimum", "Multiply", "Add",
    "WhereEqual", "WhereNotEqual", "WhereGreater", "WhereGreaterEqual",
    "WhereLess", "WhereLessEqual", "Fill", "MaskSlice", "Reshape",
    "LearnedDescriptor", "Context", "get_ctx", "ReduceInterleave",
]


# An op name this module lacks imports and raises, named, when built.
__getattr__ = unknown_op_getattr(__name__)
