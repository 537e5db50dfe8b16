"""lserve_sparse_attention: Quest envelopes at sub-block granularity
(LSERVE_BLOCK_SIZE = 16 tokens per sub-block); vortex_torch's
LServeSparseAttention.

    M_{p,b} = max_{t in b} k_t,   m_{p,b} = min_{t in b} k_t
    score(p) = max_{h,b} sum_d max( q_{h,d} M_{p,b,d} , q_{h,d} m_{p,b,d} )
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import MaxInterleave as CMaxInterleave
from vortex.cache import MinInterleave as CMinInterleave
from vortex.flow import register, vFlow
from vortex.indexer import Kron, Max, Maximum, Sum, topK

LSERVE_BLOCK_SIZE = 16


@register("lserve_sparse_attention")
class LServeSparseAttention(vFlow):

    def __init__(self):
        super().__init__()
        self.kron_max = Kron(dim=1)
        self.kron_min = Kron(dim=1)
        self.maximum = Maximum()
        self.sum = Sum(dim=2)
        self.max_op = Max(dim=1)
        self.output_func = topK()
        self.cmax = CMaxInterleave(dim=1, k=LSERVE_BLOCK_SIZE)
        self.cmin = CMinInterleave(dim=1, k=LSERVE_BLOCK_SIZE)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        s_max = self.kron_max(q, cache["max"], ctx=ctx)      # [S, H_q*n_b, D]
        s_min = self.kron_min(q, cache["min"], ctx=ctx)
        s = self.maximum(s_max, s_min, ctx=ctx)
        score = self.sum(s, ctx=ctx)                         # [S, H_q*n_b, 1]
        aggr_score = self.max_op(score, ctx=ctx)             # [S, 1, 1]
        self.output_func(aggr_score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.cmax(cache["k"], cache["max"], loc=loc, ctx=ctx)
        self.cmin(cache["k"], cache["min"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        n_b = block_size // LSERVE_BLOCK_SIZE
        return {"max": (n_b, head_dim), "min": (n_b, head_dim)}
