"""factor_score_block_sparse_attention: vortex_torch's learned factorized
block score (FactorScore) over per-block descriptors of a plain field.

    c_p        = mean_{t in p} k_t, as [H*m, r] (chunk j = channels
                 [j r, (j+1) r))                                (cache side)
    u_h        = Wq[l, h]^T q_h                                  (indexer side)
    score(p)   = sum_h max_m < u_h , c_p[h m + m'] >

Here head h's m landmarks are the h-th group of m channel chunks of the
block's centroid (learned_factorized_block_sparse_attention learns them
with LearnedDescriptor). `Wq` is `[L, H, d, r]` per layer (its
Parameter's lookup maps a global layer id to a row); untrained (no weights
given), Wq[h] sums q_h's channel chunks: Wq[h][e, i] = [e mod r == i].
"""

from typing import Dict

from vortex.abs import ContextBase, Parameter, vTensor
from vortex.cache import Mean as CMean
from vortex.cache import Reshape as CReshape
from vortex.flow import register, vFlow
from vortex.indexer import FactorScore, topK


@register("factor_score_block_sparse_attention")
class FactorScoreBlockSparseAttention(vFlow):

    def __init__(self, Wq=None, num_heads: int = 8, m: int = 2, r: int = 8,
                 head_dim: int = 128):
        super().__init__()
        # torch only when the flow is built (see learned_query.py).
        import torch
        if Wq is None:
            e = torch.arange(head_dim)[:, None] % r
            eye = (e == torch.arange(r)[None, :]).float()
            Wq = Parameter(eye.expand(1, num_heads, -1, -1).clone())
        self.Wq = Wq
        self.H, self.m, self.r = num_heads, m, r
        # Indexer-side ops
        self.score = FactorScore(self.Wq, num_heads, m, r)
        self.output_func = topK()
        # Cache-side ops
        self.reduction = CMean(dim=1)
        self.chunks = CReshape(-1, num_heads * m, r)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        score = self.score(q, cache["descriptors"], ctx=ctx)     # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        centroid = self.reduction(cache["k"], loc=loc, ctx=ctx)  # [1, D]
        self.chunks(centroid, cache["descriptors"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"descriptors": (self.H * self.m, self.r)}
