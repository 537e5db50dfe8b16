"""rope_unaware_block_sparse_mla: rope_aware_block_sparse_mla without the
RoPE term; vortex_torch's RopeUnawareBlockSparseMLA. The query's last
qk_rope_head_dim channels are zeroed (a MaskSlice pattern of NOPE_DIM ones
then zeros, times the query), so the full-width dot keeps only the latent
term:

    c_p      = mean_{t in p} latent_t
    score(p) = < mean_h q_nope_out_h , c_p^kv >

As in vortex_torch, the mask is written for kv_lora_rank = NOPE_DIM = 512
(DeepSeek-V2/V3, GLM-4.7-Flash); create_cache refuses another rank.
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlowMLA
from vortex.indexer import GeMM, MaskSlice, Mean, Multiply, topK

NOPE_DIM = 512


@register("rope_unaware_block_sparse_mla")
class RopeUnawareBlockSparseMLA(vFlowMLA):

    def __init__(self):
        super().__init__()
        self.mean = Mean(dim=1)
        # 1 on the latent channels [0, NOPE_DIM), 0 on the RoPE channels.
        self.rope_mask = MaskSlice(start=0, end=NOPE_DIM, dim=2, alpha=1.0,
                                   beta=0.0)
        self.mul = Multiply()
        self.gemm = GeMM()
        self.output_func = topK()
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                              # [B, 1, d]
        mask = self.rope_mask(q_mean, ctx=ctx)
        q_nope = self.mul(q_mean, mask, ctx=ctx)                   # RoPE zeroed
        score = self.gemm(q_nope, cache["centroids"], ctx=ctx)     # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["latent"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, kv_lora_rank: int,
                     qk_rope_head_dim: int):
        assert kv_lora_rank == NOPE_DIM, (
            f"rope_unaware_block_sparse_mla masks kv_lora_rank = {NOPE_DIM} "
            f"latent channels, got kv_lora_rank = {kv_lora_rank}")
        return {"centroids": (1, kv_lora_rank + qk_rope_head_dim)}
