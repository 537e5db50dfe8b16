"""A valid centroid flow that the error tests (frontend_errors.py,
frontend_errors_torch.py) subclass, each overriding one piece."""

from vortex import cache as C
from vortex import indexer as I
from vortex.flow import vFlow


class Base(vFlow):
    """A valid centroid flow; subclasses override one piece."""

    def __init__(self):
        super().__init__()
        self.mean = I.Mean(dim=1)
        self.gemm = I.GeMM()
        self.topk = I.topK()
        self.reduction = C.Mean(dim=1)

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim)}

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)
        self.topk(score, o, ctx=ctx)
