"""lserve_centroid_sparse_attention: centroid routing at sub-block
granularity (SUB_BLOCK_SIZE = 16 tokens); a block scores as its best
sub-block. vortex_torch's LServeCentroidSparseAttention.

    c_{p,b}  = mean_{t in b} k_t
    score(p) = max_b < mean_h q_h , c_{p,b} >
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import MeanInterleave as CMeanInterleave
from vortex.flow import register, vFlow
from vortex.indexer import GeMM, Max, Mean, topK

SUB_BLOCK_SIZE = 16


@register("lserve_centroid_sparse_attention")
class LServeCentroidSparseAttention(vFlow):

    def __init__(self):
        super().__init__()
        self.mean = Mean(dim=1)
        self.gemm = GeMM()
        self.max_op = Max(dim=1)
        self.output_func = topK()
        self.reduction = CMeanInterleave(dim=1, k=SUB_BLOCK_SIZE)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_summary = self.mean(q, ctx=ctx)                        # [B, 1, D]
        score = self.gemm(q_summary, cache["centroids"], ctx=ctx)  # [S, n_b, 1]
        page_score = self.max_op(score, ctx=ctx)                 # [S, 1, 1]
        self.output_func(page_score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (block_size // SUB_BLOCK_SIZE, head_dim)}
