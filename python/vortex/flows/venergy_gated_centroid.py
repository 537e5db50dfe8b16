"""venergy_gated_centroid: centroid routing gated by the block's mean value
norm ("value energy"); vortex_torch's VEnergyGatedCentroid.

    e_p      = mean_{t in p} || v_t ||_2
    score(p) = < mean_h q_h , c_p > * e_p
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import L2Norm as CL2Norm, Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import GeMM, Mean, Multiply, topK


@register("venergy_gated_centroid")
class VEnergyGatedCentroid(vFlow):

    def __init__(self):
        super().__init__()
        self.mean = Mean(dim=1)
        self.gemm = GeMM()
        self.gate = Multiply()
        self.output_func = topK()
        self.centroid = CMean(dim=1)
        self.v_norm = CL2Norm(dim=2)
        self.v_mean = CMean(dim=1)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                           # [B, 1, D]
        dot = self.gemm(q_mean, cache["centroids"], ctx=ctx)     # [S, 1, 1]
        score = self.gate(dot, cache["v_energy"], ctx=ctx)       # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.centroid(cache["k"], cache["centroids"], loc=loc, ctx=ctx)
        v_tok = self.v_norm(cache["v"], None, loc=loc, ctx=ctx)   # [1, block, 1]
        self.v_mean(v_tok, cache["v_energy"], loc=loc, ctx=ctx)   # [1, 1, 1]

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim), "v_energy": (1, 1)}
