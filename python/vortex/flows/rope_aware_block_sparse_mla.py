"""rope_aware_block_sparse_mla: centroid block top-k on an MLA flow's fused
latent; vortex_torch's RopeAwareBlockSparseMLA.

The latent is latent_t = [kv_c_t | k_pe_t] and the absorbed query
q_h = [q_nope_out_h | q_pe_h], so one dot product is the whole decode
logit, RoPE term included:

    c_p      = mean_{t in p} latent_t                      (cache side)
    score(p) = < mean_h q_h , c_p >
             = < mean_h q_nope_out_h , c_p^kv > + < mean_h q_pe_h , c_p^pe >
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlowMLA
from vortex.indexer import GeMM, Mean, topK


@register("rope_aware_block_sparse_mla")
class RopeAwareBlockSparseMLA(vFlowMLA):

    def __init__(self):
        super().__init__()
        self.mean = Mean(dim=1)          # the fused query, averaged over heads
        self.gemm = GeMM()               # one score per block
        self.output_func = topK()
        self.reduction = CMean(dim=1)    # the block's mean latent

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                              # [B, 1, d]
        score = self.gemm(q_mean, cache["centroids"], ctx=ctx)     # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["latent"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, kv_lora_rank: int,
                     qk_rope_head_dim: int):
        return {"centroids": (1, kv_lora_rank + qk_rope_head_dim)}
