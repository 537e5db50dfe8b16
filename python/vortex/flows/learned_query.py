"""learned_query_sparse_attention: block_sparse_attention with a learned
per-channel query weighting (a PARAMETER weight, vortex.abs.Parameter).

    c_p      = mean_{t in p} k_t                       (cache side)
    score(p) = < mean_h(q_h) * w , c_p >               (indexer side)

Not one of vortex_torch's shipped flows: the example of a flow whose weights
train in eager mode (vortex.semantics.eager) and are bound to the compiled flow
(`vortex.load(path, params=flow.parameters())`); docs/python.md.
"""

from typing import Dict

from vortex.abs import ContextBase, Parameter, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import GeMM, Mean, Multiply, topK


@register("learned_query_sparse_attention")
class LearnedQuerySparseAttention(vFlow):

    def __init__(self, head_dim: int = 128):
        super().__init__()
        # torch only when the flow is built: importing the shipped flows
        # (and so vortex) needs no torch.
        import torch
        self.w = Parameter(torch.ones(1, head_dim))
        self.mean = Mean(dim=1)
        self.weigh = Multiply()
        self.gemm = GeMM()
        self.output_func = topK()
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                          # [B, 1, D]
        query = self.weigh(q_mean, self.w, ctx=ctx)             # [B, 1, D]
        score = self.gemm(query, cache["centroids"], ctx=ctx)   # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim)}
