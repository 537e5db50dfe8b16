"""running_avg_block_sparse: centroid routing on an exponentially decayed
running score kept across decode steps (the Save/Load example; needs
disable_radix_cache); vortex_torch's RunningAvgBlockSparse.

    r_t(p) = ALPHA r_{t-1}(p) + < mean_h q_{h,t} , c_p >,  r = 0 when p completes
"""

from typing import Dict

from vortex.abs import ContextBase, vTensor
from vortex.cache import Fill as CFill, Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import Add, GeMM, Load, Mean, Save, topK

ALPHA = 0.5


@register("running_avg_block_sparse")
class RunningAvgBlockSparse(vFlow):

    def __init__(self, alpha: float = ALPHA):
        super().__init__()
        self.mean = Mean(dim=1)
        self.gemm = GeMM()
        self.load = Load()
        self.update = Add(alpha=alpha, beta=1.0)
        self.save = Save()
        self.output_func = topK()
        self.reduction = CMean(dim=1)
        self.fill = CFill(alpha=0.0)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                           # [B, 1, D]
        current = self.gemm(q_mean, cache["centroids"], ctx=ctx)  # [S, 1, 1]
        last_running = self.load(cache["running_score"], ctx=ctx)
        running = self.update(last_running, current, ctx=ctx)
        self.save(running, cache["running_score"], ctx=ctx)
        self.output_func(running, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)
        # Pages are recycled without clearing: zero the state.
        self.fill(cache["running_score"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        return {"centroids": (1, head_dim), "running_score": (1, 1)}
