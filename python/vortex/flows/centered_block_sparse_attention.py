"""centered_block_sparse_attention: centroid routing with the per-row mean
score subtracted before the selection (the suite's only dim = 0
reduction); vortex_torch's CenteredBlockSparseAttention.

    s_p      = mean_h < q_h , c_p >
    score(p) = s_p - mean_{p' in [bos, n - eos)} s_{p'}
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import Add, Mean, Multiply, Sum, topK


@register("centered_block_sparse_attention")
class CenteredBlockSparseAttention(vFlow):

    def __init__(self):
        super().__init__()
        self.multiply = Multiply()
        self.sum = Sum(dim=2)
        self.mean_heads = Mean(dim=1)
        self.mean_seq = Mean(dim=0)
        self.center = Add(alpha=1.0, beta=-1.0)
        self.output_func = topK()
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        s = self.multiply(q, cache["centroids"], ctx=ctx)        # [S, H_q, D]
        score_d = self.sum(s, ctx=ctx)                           # [S, H_q, 1]
        score = self.mean_heads(score_d, ctx=ctx)                # [S, 1, 1]
        mean_seq = self.mean_seq(score, ctx=ctx)                 # [B, 1, 1]
        centered = self.center(score, mean_seq, ctx=ctx)
        self.output_func(centered, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim)}
