"""trtllm_block_sparse_attention: the trtllm backend's selection in the
vortex_torch style, for the GPU checks (python -m vortex.testing.gpu_check
--flow-file). Two TopK(k) tables, one by the centroid score of
block_sparse_attention and one by the largest per-head centroid score,
merged by Union (docs/contract.md, "The selection").
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import GeMM, Max, Mean, TopK, Union


@register("trtllm_block_sparse_attention")
class TrtllmBlockSparseAttention(vFlow):

    def __init__(self):
        super().__init__()
        self.mean, self.gemm = Mean(dim=1), GeMM()
        self.gemm_heads, self.max_heads = GeMM(), Max(dim=2)
        self.top_mean, self.top_max = TopK(32), TopK(16)
        self.union = Union()
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        mean_score = self.gemm(self.mean(q, ctx=ctx), cache["centroids"],
                               ctx=ctx)                          # [S, 1, 1]
        head_scores = self.gemm_heads(q, cache["centroids"], ctx=ctx)  # [S, 1, G]
        max_score = self.max_heads(head_scores, ctx=ctx)         # [S, 1, 1]
        self.union(self.top_mean(mean_score, ctx=ctx),
                   self.top_max(max_score, ctx=ctx), o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim)}
