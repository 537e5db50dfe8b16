"""block_sparse_attention: centroid block top-k routing (Kinetics block
top-k, arXiv 2506.05333); vortex_torch's BlockSparseAttention.

    c_p      = mean_{t in p} k_t                 (cache side, per block)
    score(p) = < mean_h q_h , c_p >              (indexer side, per step)
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import GeMM, Mean, topK


@register("block_sparse_attention")
class BlockSparseAttention(vFlow):

    def __init__(self):
        super().__init__()
        # Indexer-side ops
        self.gemm = GeMM()
        self.mean = Mean(dim=1)
        self.output_func = topK()
        # Cache-side ops
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                          # [B, 1, D]
        score = self.gemm(q_mean, cache["centroids"], ctx=ctx)  # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim)}
