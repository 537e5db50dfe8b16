"""learned_block_sparse_mla: vortex_torch's learned per-layer bilinear block
routing on an MLA flow's latent (its `LearnedBlockSparseMLA`), written
vortex_torch's way: existing ops and one Parameter, no learned op.

The trained scorer is score(p) = sum_h (Wq[l, h]^T q_h)^T (Wk[l, h]^T c_p);
its per-head sum folds into one weight W[l] = [Wk[l, h] Wq[l, h]^T]_h
`[d, H*d]`, so that

    c_p      = mean_{t in p} latent_t                       (cache side)
    V        = W[l] q_flat,  q_flat = [q_1 | ... | q_H]      (indexer side)
    score(p) = < V , c_p >

At GLM-4.7-Flash's shape (H 20, d 576) W is `[576, 11520]`: a parameter
over the tile bound, which GeMM's parameter path streams from memory
(docs/python.md, "Learned ops"). Weights: `W` `[L, d, H*d]` with a layer
lookup, or the checkpoint named by VORTEX_COMPRESSOR_CKPT (vortex_torch's
per-layer compressor: `scorer.Wq`, `scorer.Wk` `[L, H, d, r]`, `layer_ids`),
else the identity fold (V = sum_h q_h: the head-summed centroid scorer).
"""

import os
from typing import Dict, Optional, Tuple

from vortex.abs import ContextBase, vTensor
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlowMLA
from vortex.indexer import GeMM, Parameter, Reshape, topK

from ._compressor import Checkpoint


def load_folded(path: str, H: int, d: int) -> Tuple[object, object]:
    """`(W [Lfull, d, H*d], lookup)` from a per-layer compressor checkpoint
    (vortex_torch's `_load_folded_W`): W[lid] folds the trained row of
    global layer `lid`, the other rows are the identity fold."""
    import torch
    ckpt = Checkpoint(path, "learned_block_sparse_mla")
    wq = ckpt.weight("Wq")
    wk = ckpt.weight("Wk") if ckpt.has("Wk") else wq
    if wq.dim() != 4 or tuple(wq.shape[1:3]) != (H, d):
        raise ValueError(f"{path}: Wq has shape {tuple(wq.shape)}, expected "
                         f"[L, H={H}, d={d}, r]")
    fold = torch.einsum("lhdr,lher->lhde", wk, wq)          # [L, H, d, d]
    trained = fold.permute(0, 2, 1, 3).reshape(wq.shape[0], d, H * d)
    ids = ckpt.rows(wq.shape[0])
    W = torch.eye(d).repeat(1, H).expand(max(ids) + 1, -1, -1).clone()
    for row, lid in enumerate(ids):
        W[lid] = trained[row]
    return W, torch.arange(W.shape[0])


@register("learned_block_sparse_mla")
class LearnedBlockSparseMLA(vFlowMLA):

    def __init__(self, W=None, layer_lookup: Optional[object] = None,
                 num_heads: int = 20, latent_dim: int = 576):
        super().__init__()
        # torch only when the flow is built (see learned_query.py).
        import torch
        H, d = num_heads, latent_dim
        ckpt = os.environ.get("VORTEX_COMPRESSOR_CKPT", "").strip()
        if W is None and ckpt:
            W, layer_lookup = load_folded(ckpt, H, d)
        if W is None:
            W = torch.eye(d).repeat(1, H)                   # [d, H*d]
        self.W = Parameter(W, layer_lookup)
        # Indexer-side ops
        self.rq = Reshape(-1, 1, H * d)      # q [B, H, d] -> [B, 1, H*d]
        self.gV = GeMM()                     # W q_flat -> [B, d, 1]
        self.rv = Reshape(-1, 1, d)          # V -> [B, 1, d]
        self.gemm = GeMM()                   # one score per block
        self.output_func = topK()
        # Cache-side ops
        self.reduction = CMean(dim=1)        # the block's mean latent

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        q_flat = self.rq(q, ctx=ctx)                              # [B, 1, H*d]
        V = self.gV(q_flat, self.W, ctx=ctx)                      # [B, d, 1]
        V = self.rv(V, ctx=ctx)                                   # [B, 1, d]
        score = self.gemm(V, cache["centroids"], ctx=ctx)        # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.reduction(cache["latent"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size: int, kv_lora_rank: int,
                     qk_rope_head_dim: int):
        return {"centroids": (1, kv_lora_rank + qk_rope_head_dim)}
