"""gqa_quest_sparse_attention: Quest query-aware envelope bound (arXiv
2406.10774), max over the query group; vortex_torch's
GQAQuestSparseAttention.

    M_p = max_{t in p} k_t,   m_p = min_{t in p} k_t      (per channel)
    score(p) = max_h sum_d max( q_{h,d} M_{p,d} , q_{h,d} m_{p,d} )
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Max as CMax, Min as CMin
from vortex.flow import register, vFlow
from vortex.indexer import Max, Maximum, Multiply, Sum, topK


@register("gqa_quest_sparse_attention")
class GQAQuestSparseAttention(vFlow):

    def __init__(self):
        super().__init__()
        self.mul_max = Multiply()
        self.mul_min = Multiply()
        self.maximum = Maximum()
        self.sum = Sum(dim=2)
        self.max_op = Max(dim=1)
        self.output_func = topK()
        self.cmax = CMax(dim=1)
        self.cmin = CMin(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        s_max = self.mul_max(q, cache["max"], ctx=ctx)           # [S, H_q, D]
        s_min = self.mul_min(q, cache["min"], ctx=ctx)
        s = self.maximum(s_max, s_min, ctx=ctx)
        score = self.sum(s, ctx=ctx)                             # [S, H_q, 1]
        aggr_score = self.max_op(score, ctx=ctx)                 # [S, 1, 1]
        self.output_func(aggr_score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.cmax(cache["k"], cache["max"], loc=loc, ctx=ctx)
        self.cmin(cache["k"], cache["min"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"max": (1, head_dim), "min": (1, head_dim)}
