"""vortex_torch's `cache` package: the ops of `forward_cache`.

    from vortex.cache import Mean as CMean     # was: vortex_torch.cache

Call forms: `op(x, output, loc=loc, ctx=ctx)` (unary ops, reductions,
MaskSlice, Reshape), `op(x, y, output, loc=loc, ctx=ctx)` (binary ops,
GeMM), `Fill(alpha)(dest, loc=loc, ctx=ctx)`. A cache field as `output` is
written back (`vortex.write`); `None` leaves a ragged intermediate, which
the op returns. As in vortex_torch there is no Sum, GeMV, Transpose or Kron
on the cache side. `LearnedDescriptor(Wt, Wk, H, m, r)`, `op(latent,
descriptors, loc=loc, ctx=ctx)`, traces to several ops (cache/learned.py).
"""

from ..abs.op import unknown_op_getattr
from ..indexer.context import Context, get_ctx
from .elementwise import (Abs, Add, Add_Mul, Exp, Log, Maximum, Minimum,
                          Multiply, Relu, Sigmoid, Silu, WhereEqual,
                          WhereGreater, WhereGreaterEqual, WhereLess,
                          WhereLessEqual, WhereNotEqual)
from .learned import LearnedDescriptor
from .ops import Fill, GeMM, MaskSlice, Reshape
from .reduce import (L2Norm, L2NormInterleave, Max, MaxInterleave, Mean,
                     MeanInterleave, Min, MinInterleave, ReduceInterleave)


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
