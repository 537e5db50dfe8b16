"""Flows that compile at some configs only (test/Python/frontend/
verify_sweep.test): `wide_only`'s field is 64 wide whatever the head dim,
so it verifies at D 64 only; `asserts_d64` asserts the head dim in its own
code, as vortex_torch flows may."""

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

@register("asserts_d64")
class AssertsD64(WideOnly):
    def create_cache(self, block_size, head_dim):
        self.head_dim = head_dim
        return {"c": (1, head_dim)}
    def forward_indexer(self, q, o, cache, ctx):
        assert self.head_dim == 64, f"D {self.head_dim}: this flow needs 64"
        super().forward_indexer(q, o, cache, ctx)
