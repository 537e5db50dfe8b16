"""rope_unaware_lserve_centroid_mla: lserve_centroid_mla without the RoPE
term; vortex_torch's RopeUnawareLServeCentroidMLA. Sub-block centroids, a
block scores as its best sub-block, on the latent channels only (the
query's RoPE channels zeroed as in rope_unaware_block_sparse_mla):

    c_{p,b}  = mean_{t in b} latent_t
    score(p) = max_b < mean_h q_nope_out_h , c_{p,b}^kv >

Written for kv_lora_rank = NOPE_DIM = 512, as in vortex_torch.
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import MeanInterleave as CMeanInterleave
from vortex.flow import register, vFlowMLA
from vortex.indexer import GeMM, MaskSlice, Max, Mean, Multiply, topK

NOPE_DIM = 512
SUB_BLOCK_SIZE = 16


@register("rope_unaware_lserve_centroid_mla")
class RopeUnawareLServeCentroidMLA(vFlowMLA):

    def __init__(self):
        super().__init__()
        self.mean = Mean(dim=1)
        self.rope_mask = MaskSlice(start=0, end=NOPE_DIM, dim=2, alpha=1.0,
                                   beta=0.0)
        self.mul = Multiply()
        self.gemm = GeMM()
        self.max_sub = Max(dim=1)
        self.output_func = topK()
        self.reduction = CMeanInterleave(dim=1, k=SUB_BLOCK_SIZE)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                              # [B, 1, d]
        mask = self.rope_mask(q_mean, ctx=ctx)
        q_nope = self.mul(q_mean, mask, ctx=ctx)                   # RoPE zeroed
        score = self.gemm(q_nope, cache["centroids"], ctx=ctx)     # [S, n_b, 1]
        page_score = self.max_sub(score, ctx=ctx)                  # [S, 1, 1]
        self.output_func(page_score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["latent"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, kv_lora_rank: int,
                     qk_rope_head_dim: int):
        assert kv_lora_rank == NOPE_DIM, (
            f"rope_unaware_lserve_centroid_mla masks kv_lora_rank = "
            f"{NOPE_DIM} latent channels, got kv_lora_rank = {kv_lora_rank}")
        return {"centroids": (block_size // SUB_BLOCK_SIZE,
                              kv_lora_rank + qk_rope_head_dim)}
