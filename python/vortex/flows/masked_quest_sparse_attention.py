"""masked_quest_sparse_attention: the Quest envelope bound with the first
MASK_END = 8 feature channels dropped before the channel sum;
vortex_torch's MaskedQuestSparseAttention.

    w_d = 0 for d < 8, 1 otherwise
    score(p) = max_h sum_d w_d max( q_{h,d} M_{p,d} , q_{h,d} m_{p,d} )
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Max as CMax, Min as CMin
from vortex.flow import register, vFlow
from vortex.indexer import MaskSlice, Max, Maximum, Multiply, Sum, topK

MASK_END = 8


@register("masked_quest_sparse_attention")
class MaskedQuestSparseAttention(vFlow):

    def __init__(self):
        super().__init__()
        self.mul_max = Multiply()
        self.mul_min = Multiply()
        self.maximum = Maximum()
        self.mask = MaskSlice(start=0, end=MASK_END, dim=2, alpha=0.0,
                              beta=1.0)
        self.apply_mask = Multiply()
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
        mask = self.mask(s, ctx=ctx)
        masked_s = self.apply_mask(s, mask, ctx=ctx)
        score = self.sum(masked_s, ctx=ctx)                      # [S, H_q, 1]
        aggr_score = self.max_op(score, ctx=ctx)                 # [S, 1, 1]
        self.output_func(aggr_score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.cmax(cache["k"], cache["max"], loc=loc, ctx=ctx)
        self.cmin(cache["k"], cache["min"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"max": (1, head_dim), "min": (1, head_dim)}
