"""learned_factorized_block_sparse_attention: vortex_torch's learned
factorized block score, the MHA twin of its learned_factorized_block_sparse_mla:
LearnedDescriptor writes each block's descriptors, FactorScore scores them.

    g_p[h m + j] = sum_s Wt[l, h, s, j] k_s Wk[l, h]    [H*m, r]  (cache side)
    u_h          = Wq[l, h]^T q_h                                  (indexer side)
    score(p)     = sum_h max_j < u_h , g_p[h m + j] >

`Wt` `[L, H, bs, m]`, `Wk` and `Wq` `[L, H, d, r]` are per-layer weights
(vortex.abs.Parameter; its lookup maps a global layer id to a row).
Untrained (no weights given), landmark j is the mean of the j-th of m
equal runs of the block's tokens, Wk[h] and Wq[h] sum a vector's channel
chunks of r (W[e, i] = [e mod r == i]): a segmented centroid scorer.
"""

from typing import Dict

from vortex.abs import ContextBase, Parameter, vTensor
from vortex.cache import LearnedDescriptor
from vortex.flow import register, vFlow
from vortex.indexer import FactorScore, topK


@register("learned_factorized_block_sparse_attention")
class LearnedFactorizedBlockSparseAttention(vFlow):

    def __init__(self, Wt=None, Wk=None, Wq=None, num_heads: int = 8,
                 m: int = 2, r: int = 8, block_size: int = 16,
                 head_dim: int = 128):
        super().__init__()
        # torch only when the flow is built (see learned_query.py).
        import torch
        H = num_heads
        chunks = (torch.arange(head_dim)[:, None] % r ==
                  torch.arange(r)[None, :]).float()
        if Wt is None:
            seg = torch.arange(block_size)[:, None] // (block_size // m)
            runs = (seg == torch.arange(m)[None, :]).float() * m / block_size
            Wt = Parameter(runs.expand(1, H, -1, -1).clone())
        if Wk is None:
            Wk = Parameter(chunks.expand(1, H, -1, -1).clone())
        if Wq is None:
            Wq = Parameter(chunks.expand(1, H, -1, -1).clone())
        self.Wt, self.Wk, self.Wq = Wt, Wk, Wq
        self.H, self.m, self.r = H, m, r
        # Indexer-side ops
        self.score = FactorScore(self.Wq, H, m, r)
        self.output_func = topK()
        # Cache-side ops
        self.descriptor = LearnedDescriptor(self.Wt, self.Wk, H, m, r)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        score = self.score(q, cache["descriptors"], ctx=ctx)     # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.descriptor(cache["k"], cache["descriptors"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"descriptors": (self.H * self.m, self.r)}
