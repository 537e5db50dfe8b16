"""lserve_centroid_mla: LServe-style sub-block centroids on an MLA flow's
fused latent; vortex_torch's LServeCentroidMLA. One centroid per
SUB_BLOCK_SIZE tokens; a block scores as its best sub-block, each with the
whole decode logit (latent and RoPE terms):

    c_{p,b}  = mean_{t in b} latent_t,  latent_t = [kv_c_t | k_pe_t]
    score(p) = max_b < mean_h q_h , c_{p,b} >
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import MeanInterleave as CMeanInterleave
from vortex.flow import register, vFlowMLA
from vortex.indexer import GeMM, Max, Mean, topK

SUB_BLOCK_SIZE = 16


@register("lserve_centroid_mla")
class LServeCentroidMLA(vFlowMLA):

    def __init__(self):
        super().__init__()
        self.mean = Mean(dim=1)
        self.gemm = GeMM()
        self.max_sub = Max(dim=1)        # the best sub-block of each block
        self.output_func = topK()
        self.reduction = CMeanInterleave(dim=1, k=SUB_BLOCK_SIZE)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                              # [B, 1, d]
        score = self.gemm(q_mean, cache["centroids"], ctx=ctx)     # [S, n_b, 1]
        page_score = self.max_sub(score, ctx=ctx)                  # [S, 1, 1]
        self.output_func(page_score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["latent"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, kv_lora_rank: int,
                     qk_rope_head_dim: int):
        return {"centroids": (block_size // SUB_BLOCK_SIZE,
                              kv_lora_rank + qk_rope_head_dim)}
