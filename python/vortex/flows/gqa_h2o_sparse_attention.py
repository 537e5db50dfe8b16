"""gqa_h2o_sparse_attention: the page-level H2O score computed per query
head and reduced over the query group by a max; vortex_torch's
GQAH2OSparseAttention.

    avg(p)   = max_h < q_h , c_p >
    peak(p)  = max_h sum_d max( q_{h,d} M_{p,d} , q_{h,d} m_{p,d} )
    score(p) = w_avg avg(p) + w_peak peak(p)
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Max as CMax, Mean as CMean, Min as CMin
from vortex.flow import register, vFlow
from vortex.indexer import Add, GeMM, Max, Maximum, Multiply, Sum, topK


@register("gqa_h2o_sparse_attention")
class GQAH2OSparseAttention(vFlow):

    def __init__(self, w_avg: float = 1.0, w_peak: float = 1.0):
        super().__init__()
        self.gemm = GeMM()
        self.max_heads_avg = Max(dim=2)
        self.mul_max = Multiply()
        self.mul_min = Multiply()
        self.maximum = Maximum()
        self.sum = Sum(dim=2)
        self.max_heads_peak = Max(dim=1)
        self.combine = Add(alpha=w_avg, beta=w_peak)
        self.output_func = topK()
        self.cmean = CMean(dim=1)
        self.cmax = CMax(dim=1)
        self.cmin = CMin(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        s_avg = self.gemm(q, cache["centroids"], ctx=ctx)        # [S, 1, H_q]
        avg = self.max_heads_avg(s_avg, ctx=ctx)                 # [S, 1, 1]
        qk_max = self.mul_max(q, cache["max"], ctx=ctx)          # [S, H_q, D]
        qk_min = self.mul_min(q, cache["min"], ctx=ctx)
        env = self.maximum(qk_max, qk_min, ctx=ctx)
        s_peak = self.sum(env, ctx=ctx)                          # [S, H_q, 1]
        peak = self.max_heads_peak(s_peak, ctx=ctx)              # [S, 1, 1]
        score = self.combine(avg, peak, ctx=ctx)
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.cmean(cache["k"], cache["centroids"], loc=loc, ctx=ctx)
        self.cmax(cache["k"], cache["max"], loc=loc, ctx=ctx)
        self.cmin(cache["k"], cache["min"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim), "max": (1, head_dim),
                "min": (1, head_dim)}
