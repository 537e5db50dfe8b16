"""h2o_sparse_attention: page-level approximation of the H2O heavy-hitter
criterion (arXiv 2306.14048): average relevance plus a Quest-style bound on
the peak relevance, with the head-averaged query; vortex_torch's
H2OSparseAttention (its Gen-1 `q.mean(dim=1, keepdim=True)` is the Mean op
here: a flow applies no torch code to q).

    q'       = mean_h q_h
    score(p) = w_avg < q', c_p > + w_peak sum_d max( q'_d M_{p,d} , q'_d m_{p,d} )
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Max as CMax, Mean as CMean, Min as CMin
from vortex.flow import register, vFlow
from vortex.indexer import Add, GeMV, Maximum, Mean, Multiply, Sum, topK


@register("h2o_sparse_attention")
class H2OSparseAttention(vFlow):

    def __init__(self, w_avg: float = 1.0, w_peak: float = 1.0):
        super().__init__()
        self.mean = Mean(dim=1)
        self.gemv = GeMV()
        self.mul_max = Multiply()
        self.mul_min = Multiply()
        self.maximum = Maximum()
        self.sum = Sum(dim=2)
        self.combine = Add(alpha=w_avg, beta=w_peak)
        self.output_func = topK()
        self.cmean = CMean(dim=1)
        self.cmax = CMax(dim=1)
        self.cmin = CMin(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                           # [B, 1, D]
        s_avg = self.gemv(q_mean, cache["centroids"], ctx=ctx)   # [S, 1, 1]
        qk_max = self.mul_max(q_mean, cache["max"], ctx=ctx)     # [S, 1, D]
        qk_min = self.mul_min(q_mean, cache["min"], ctx=ctx)
        env = self.maximum(qk_max, qk_min, ctx=ctx)
        s_peak = self.sum(env, ctx=ctx)                          # [S, 1, 1]
        score = self.combine(s_avg, s_peak, ctx=ctx)
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.cmean(cache["k"], cache["centroids"], loc=loc, ctx=ctx)
        self.cmax(cache["k"], cache["max"], loc=loc, ctx=ctx)
        self.cmin(cache["k"], cache["min"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim), "max": (1, head_dim),
                "min": (1, head_dim)}
