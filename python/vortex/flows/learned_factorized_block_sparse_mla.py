"""learned_factorized_block_sparse_mla: vortex_torch's learned factorized
block routing on an MLA flow's latent (its
`LearnedFactorizedBlockSparseMLA`): LearnedDescriptor writes each block's
descriptors, FactorScore scores them.

    g_p[h m + j] = sum_s Wt[l, h, s, j] latent_s Wk[l, h]  [H*m, r]  (cache side)
    u_h          = Wq[l, h]^T q_h                                  (indexer side)
    score(p)     = sum_h max_j < u_h , g_p[h m + j] >

`Wt` `[L, H, bs, m]`, `Wk` and `Wq` `[L, H, d, r]` per layer (d the
latent's 576 at GLM-4.7-Flash's shape). Weights: given, or the checkpoint
named by VORTEX_COMPRESSOR_CKPT (vortex_torch's per-layer factorized
compressor: `scorer.Wt`, `scorer.Wk`, `scorer.Wq`, `layer_ids`), else the
identity (m = 1, r = d: one landmark, the block's mean latent, per head;
score(p) = <sum_h q_h, c_p>). With m = 1, r = d both projections,
LearnedDescriptor's `[H*r, d]` and FactorScore's `[H*m*r, d]`, are
`[11520, 576]`: parameters over the tile bound, which the standalone
descriptor op and FactorScore's grouped GeMM stream from memory
(docs/python.md, "Learned ops").
"""

import os
from typing import Dict, Optional, Tuple

from vortex.abs import ContextBase, Parameter, vTensor
from vortex.cache import LearnedDescriptor
from vortex.flow import register, vFlowMLA
from vortex.indexer import FactorScore, topK

from ._compressor import Checkpoint


def _untrained(torch, L: int, H: int, bs: int, m: int, d: int, r: int):
    """Wt with landmark 0 the block's mean (the others 0), Wk = Wq the
    truncated identity eye(d, r): the weights of an untrained layer."""
    wt = torch.zeros(L, H, bs, m)
    wt[..., 0] = 1.0 / bs
    eye = torch.eye(d, r).expand(L, H, d, r).clone()
    return wt, eye, eye.clone()


def load_factorized(path: str, H: int, d: int, bs: int):
    """`(Wt [Lfull, H, bs, m], Wk, Wq [Lfull, H, d, r], lookup)` from a
    per-layer factorized compressor checkpoint: the trained rows of global
    layers `layer_ids`, the untrained weights elsewhere."""
    import torch
    ckpt = Checkpoint(path, "learned_factorized_block_sparse_mla")
    arch = ckpt.config.get("arch")
    if arch not in (None, "factorized"):
        raise ValueError(f"{path}: learned_factorized_block_sparse_mla "
                         f"needs a factorized compressor checkpoint, got "
                         f"arch={arch!r}")
    wt, wk, wq = (ckpt.weight(n) for n in ("Wt", "Wk", "Wq"))
    if wt.dim() != 4 or tuple(wt.shape[1:3]) != (H, bs):
        raise ValueError(f"{path}: Wt has shape {tuple(wt.shape)}, expected "
                         f"[L, H={H}, bs={bs}, m]")
    for name, w in (("Wk", wk), ("Wq", wq)):
        if w.dim() != 4 or tuple(w.shape[:3]) != (wt.shape[0], H, d):
            raise ValueError(f"{path}: {name} has shape {tuple(w.shape)}, "
                             f"expected [L={wt.shape[0]}, H={H}, d={d}, r]")
    if wk.shape != wq.shape:
        raise ValueError(f"{path}: Wk has shape {tuple(wk.shape)}, Wq "
                         f"{tuple(wq.shape)}: they must match")
    ids = ckpt.rows(wt.shape[0])
    if len(ids) != wt.shape[0]:
        raise ValueError(f"{path}: layer_ids has {len(ids)} entries for "
                         f"{wt.shape[0]} trained layers")
    m, r = int(wt.shape[3]), int(wk.shape[3])
    Wt, Wk, Wq = _untrained(torch, max(ids) + 1, H, bs, m, d, r)
    for row, lid in enumerate(ids):
        Wt[lid], Wk[lid], Wq[lid] = wt[row], wk[row], wq[row]
    return Wt, Wk, Wq, torch.arange(Wt.shape[0])


@register("learned_factorized_block_sparse_mla")
class LearnedFactorizedBlockSparseMLA(vFlowMLA):

    def __init__(self, Wt=None, Wk=None, Wq=None,
                 layer_lookup: Optional[object] = None, num_heads: int = 20,
                 latent_dim: int = 576, block_size: int = 32):
        super().__init__()
        # torch only when the flow is built (see learned_query.py).
        import torch
        H, d = num_heads, latent_dim
        ckpt = os.environ.get("VORTEX_COMPRESSOR_CKPT", "").strip()
        if Wt is None and ckpt:
            Wt, Wk, Wq, layer_lookup = load_factorized(ckpt, H, d,
                                                       block_size)
        if Wt is None:
            Wt, Wk, Wq = _untrained(torch, 1, H, block_size, 1, d, d)
        self.Wt = Parameter(Wt, layer_lookup)
        self.Wk = Parameter(Wk, layer_lookup)
        self.Wq = Parameter(Wq, layer_lookup)
        self.H, self.m, self.r = H, int(Wt.shape[3]), int(Wk.shape[3])
        # Indexer-side ops
        self.score = FactorScore(self.Wq, H, self.m, self.r)
        self.output_func = topK()
        # Cache-side ops
        self.descriptor = LearnedDescriptor(self.Wt, self.Wk, H, self.m,
                                            self.r)

    def initialize(self, block_size: int, *args, **kwargs) -> None:
        """vFlowMLA.initialize; for another block size than Wt's (trained
        or not), Wt falls back to the block's mean at landmark 0, as in
        vortex_torch (Wk and Wq are kept), so the flow still compiles and
        runs (e.g. `python -m vortex verify`'s sweep)."""
        if block_size != self.Wt.data.shape[2]:
            import torch
            wt, _, _ = _untrained(torch, self.Wt.data.shape[0], self.H,
                                  block_size, self.m, 1, 1)
            self.Wt = Parameter(wt, self.Wt.lookup)
            self.descriptor = LearnedDescriptor(self.Wt, self.Wk, self.H,
                                                self.m, self.r)
        super().initialize(block_size, *args, **kwargs)

    def forward_indexer(self, q: vTensor, o: vTensor,
                        cache: Dict[str, vTensor], ctx: ContextBase):
        score = self.score(q, cache["descriptors"], ctx=ctx)     # [S, 1, 1]
        self.output_func(score, o, ctx=ctx)

    def forward_cache(self, cache: Dict[str, vTensor], loc: vTensor,
                      ctx: ContextBase):
        self.descriptor(cache["latent"], cache["descriptors"], loc=loc,
                        ctx=ctx)

    def create_cache(self, block_size: int, kv_lora_rank: int,
                     qk_rope_head_dim: int) -> Dict[str, Tuple[int, int]]:
        return {"descriptors": (self.H * self.m, self.r)}
