"""learned_query_block_sparse_attention: block_sparse_attention with
vortex_torch's learned per-layer query (LearnedQuery), the MHA twin of its
learned_block_sparse_mla.

    c_p      = mean_{t in p} k_t                                (cache side)
    V        = scaling * sum_h Wk[l, h] (Wq[l, h]^T q_h)         (indexer side)
    score(p) = < V , c_p >

`Wq`, `Wk` are `[L, H, d, r]` per-layer weights, `layer_lookup` maps a
global layer id to their row (vortex.abs.Parameter); a call runs for one
layer (`layer=`). Without trained weights (vortex_torch's fallback when no
checkpoint is given) Wq = Wk = I, one layer: V = sum_h q_h, the head-summed
centroid scorer.
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import GeMM, LearnedQuery, topK


@register("learned_query_block_sparse_attention")
class LearnedQueryBlockSparseAttention(vFlow):

    def __init__(self, Wq=None, Wk=None, layer_lookup=None,
                 num_heads: int = 8, head_dim: int = 128):
        super().__init__()
        # torch only when the flow is built: importing the shipped flows
        # (and so vortex) needs no torch.
        import torch
        if Wq is None and Wk is None:
            eye = torch.eye(head_dim).expand(1, num_heads, -1, -1)
            Wq, Wk = eye.clone(), eye.clone()
        # Indexer-side ops
        self.query = LearnedQuery(Wq, Wk, layer_lookup)
        self.gemm = GeMM()
        self.output_func = topK()
        # Cache-side ops
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        v = self.query(q, ctx=ctx)                              # [B, 1, D]
        score = self.gemm(v, cache["centroids"], ctx=ctx)       # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim)}
