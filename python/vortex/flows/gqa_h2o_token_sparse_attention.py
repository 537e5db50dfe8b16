"""gqa_h2o_token_sparse_attention: token-level H2O with per-head
attention, max over the query group, the same decayed accumulation into
"hh_score" (block_size 1); vortex_torch's GQAH2OTokenSparseAttention.

    a_t(p, h) = softmax_p( scale < q_h , k_p > )
    score(p)  = max_h a_t(p, h) + decay hh_{t-1}(p);   hh_t = score
"""

from typing import Dict, Optional

from vortex.abs import ContextBase, vTensor
from vortex.cache import Fill as CFill
from vortex.flow import register, vFlow
from vortex.indexer import Add, GeMM, Max, Save, Softmax, topK


@register("gqa_h2o_token_sparse_attention")
class GQAH2OTokenSparseAttention(vFlow):

    def __init__(self, decay: float = 0.984375, scale: Optional[float] = None):
        super().__init__()
        self.scale = scale
        self.gemm = GeMM()
        self.softmax = Softmax(dim=0)
        self.max_op = Max(dim=2)
        self.accumulate = Add(alpha=1.0, beta=decay)
        self.save = Save()
        self.output_func = topK()
        self.fill = CFill(alpha=0.0)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        attn = self.gemm(q, cache["k"], ctx=ctx)                 # [S, 1, H_q]
        probs = self.softmax(attn, ctx=ctx)
        attn_agg = self.max_op(probs, ctx=ctx)                   # [S, 1, 1]
        score = self.accumulate(attn_agg, cache["hh_score"], ctx=ctx)
        self.save(score, cache["hh_score"], ctx=ctx)
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.fill(cache["hh_score"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, head_dim: int):
        assert block_size == 1, "gqa_h2o_token_sparse_attention needs one " \
            f"token per block (block_size = page_size = 1), got {block_size}"
        self.softmax.scale = (self.scale if self.scale is not None
                              else head_dim ** -0.5)
        return {"hh_score": (1, 1)}
