"""h2o_token_sparse_attention: token-level H2O (arXiv 2306.14048) with the
heavy-hitter score accumulated across decode steps in the "hh_score"
field (needs disable_radix_cache); one token per block (block_size 1);
vortex_torch's H2OTokenSparseAttention.

    a_t(p)   = softmax_p( scale < mean_h q_h , k_p > ),  scale = head_dim^-0.5
    score(p) = a_t(p) + decay hh_{t-1}(p);   hh_t = score
"""

from typing import Dict, Optional

from vortex.abs import ContextBase, vTensor
from vortex.cache import Fill as CFill
from vortex.flow import register, vFlow
from vortex.indexer import Add, GeMV, Mean, Save, Softmax, topK


@register("h2o_token_sparse_attention")
class H2OTokenSparseAttention(vFlow):

    def __init__(self, decay: float = 0.984375, scale: Optional[float] = None):
        super().__init__()
        self.scale = scale
        self.mean = Mean(dim=1)
        self.gemv = GeMV()
        self.softmax = Softmax(dim=0)
        self.accumulate = Add(alpha=1.0, beta=decay)
        self.save = Save()
        self.output_func = topK()
        self.fill = CFill(alpha=0.0)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_mean = self.mean(q, ctx=ctx)                           # [B, 1, D]
        attn = self.gemv(q_mean, cache["k"], ctx=ctx)            # [S, 1, 1]
        probs = self.softmax(attn, ctx=ctx)
        score = self.accumulate(probs, cache["hh_score"], ctx=ctx)
        self.save(score, cache["hh_score"], ctx=ctx)
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.fill(cache["hh_score"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        assert block_size == 1, "h2o_token_sparse_attention needs one token " \
            f"per block (block_size = page_size = 1), got {block_size}"
        self.softmax.scale = (self.scale if self.scale is not None
                              else head_dim ** -0.5)
        return {"hh_score": (1, 1)}
