"""gqa_block_sparse_attention: per-head centroid scores, softmax over the
blocks of the row, max over the query group (GQA block sparsity, arXiv
2502.11089); vortex_torch's GQABlockSparseAttention.

    a_{p,h}  = softmax_p( tau * < q_h , c_p > ),   tau = 0.09
    score(p) = max_h a_{p,h}
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import GeMM, Max, Softmax, topK


@register("gqa_block_sparse_attention")
class GQABlockSparseAttention(vFlow):

    def __init__(self, scale: float = 0.09):
        super().__init__()
        self.gemm = GeMM()
        self.softmax = Softmax(dim=0, scale=scale)
        self.max_op = Max(dim=2)
        self.output_func = topK()
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        score = self.gemm(q, cache["centroids"], ctx=ctx)       # [S, 1, H_q]
        normalized_score = self.softmax(score, ctx=ctx)
        aggr_score = self.max_op(normalized_score, ctx=ctx)     # [S, 1, 1]
        self.output_func(aggr_score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim)}
