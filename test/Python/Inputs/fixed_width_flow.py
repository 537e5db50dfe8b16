"""A flow whose field is 64 wide whatever the head dim: it verifies at D 64
only (test/Python/frontend/verify_sweep.test)."""

from vortex.flow import register, vFlow
from vortex.indexer import GeMM, Mean, topK
from vortex.cache import Mean as CMean

@register("wide_only")
class WideOnly(vFlow):
    def __init__(self):
        super().__init__()
        self.mean, self.gemm, self.topk = Mean(dim=1), GeMM(), topK()
        self.red = CMean(dim=1)
    def create_cache(self, block_size, head_dim):
        return {"c": (1, 64)}
    def forward_cache(self, cache, loc, ctx):
        self.red(cache["k"], cache["c"], loc=loc, ctx=ctx)
    def forward_indexer(self, q, o, cache, ctx):
        self.topk(self.gemm(self.mean(q, ctx=ctx), cache["c"], ctx=ctx), o, ctx=ctx)
