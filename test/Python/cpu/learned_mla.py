# RUN: %python %s
# REQUIRES: numpy, torch
#
# vortex_torch's learned MLA routing at GLM-4.7-Flash's shape (20 heads over
# a latent of 576, blocks of 32): its weight W [576, 11520] (and
# LearnedQuery's fold of the same size) is a parameter over the tile bound,
# streamed by GeMM's parameter path (docs/contract.md, "Bounds"). Against a
# float64 model written from the formula V = W[l] q_flat, score(p) =
# <V, mean_t latent_t> (not from the traced ops):
# 1. The checkpoint (VORTEX_COMPRESSOR_CKPT, vortex_torch's per-layer
#    compressor: scorer.Wq/Wk [L, H, d, r] and layer_ids [2, 0]) folds into
#    W [3, 576, 11520]: rows 2 and 0 equal the float64 einsum fold (rtol
#    1e-5), row 1 (untrained) the identity fold; a Wq of another head count
#    is a ValueError naming Wq.
# 2. The compiled CPU flow (f32) bound with those weights: per layer its
#    selection equals the float64 top-k exactly (random data, no near ties),
#    and eager mode selects the same. Its decode (layer 2) selects the same
#    and attends over the selection: o and lse equal float64 MLA attention
#    over the selected tokens (o the latent's first 512 channels, logits
#    <q_h, latent_t> * sm_scale; atol 1e-4).
# 3. Without a checkpoint (the identity fold, V = sum_h q_h) the flow
#    selects what rope_aware_block_sparse_mla (mean_h q_h) selects.
# 4. LearnedQuery (the op) at this size: learned_query_block_sparse_attention
#    with 20 heads of 576 and random Wq, Wk [1, 20, 576, 8] selects the
#    float64 top-k of <sum_h Wk Wq^T q_h, c_p>.

import os
import sys
import tempfile

import numpy as np
import torch

import vortex
from vortex import testing
from vortex.flows.learned_block_sparse_mla import LearnedBlockSparseMLA
from vortex.flows.learned_query_block_sparse_attention import (
    LearnedQueryBlockSparseAttention)
from vortex.semantics import eager
from vortex.semantics import reference as ref

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from latent_cache import latent_cache, same_selection  # noqa: E402

tally = testing.Tally()
H, D, BS = 20, 576, 32
CFG = vortex.FlowConfig.mla(512, 64, group_size=H, block_size=BS,
                            page_size=BS, intermediate_dtype="f32",
                            kv_dtype="f32", topk_val=5)
rng = np.random.default_rng(21)
g = torch.Generator().manual_seed(21)

# 1. The checkpoint.
wq = torch.randn(2, H, D, 4, generator=g) / D ** 0.5
wk = torch.randn(2, H, D, 4, generator=g) / D ** 0.5
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "ckpt.pt")
    torch.save({"state_dict": {"scorer.Wq": wq, "scorer.Wk": wk},
                "config": {"per_layer": True}, "layer_ids": [2, 0]}, path)
    os.environ["VORTEX_COMPRESSOR_CKPT"] = path
    try:
        flow = LearnedBlockSparseMLA()
        bad = os.path.join(tmp, "bad.pt")
        torch.save({"state_dict": {"scorer.Wq": wq[:, :4]}}, bad)
        os.environ["VORTEX_COMPRESSOR_CKPT"] = bad
        try:
            LearnedBlockSparseMLA()
            tally(False, "a checkpoint of 4 heads is refused", "no error")
        except ValueError as err:
            tally("Wq" in str(err), "a checkpoint of 4 heads is refused, "
                  "naming Wq", err)
    finally:
        del os.environ["VORTEX_COMPRESSOR_CKPT"]
W = torch.as_tensor(flow.W.data).double()
fold = np.einsum("lhdr,lher->lhde", wk.double().numpy(), wq.double().numpy())
fold = fold.transpose(0, 2, 1, 3).reshape(2, D, H * D)
eye = np.tile(np.eye(D), (1, H))
tally(tuple(W.shape) == (3, D, H * D) and
      np.allclose(W[2].numpy(), fold[0], rtol=1e-5, atol=1e-7) and
      np.allclose(W[0].numpy(), fold[1], rtol=1e-5, atol=1e-7) and
      np.array_equal(W[1].numpy(), eye),
      "the checkpoint folds into W [3, 576, 11520]: trained rows 2 and 0, "
      "identity row 1", tuple(W.shape))

# 2. Compiled (CPU, f32) and eager, per layer, against float64.
lengths = [1, 4, 9, 30, 60]
nb = sum(lengths) + 3
indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
ids = rng.permutation(nb)[:sum(lengths)].astype(np.int32)
latent = rng.standard_normal((nb, BS, D)).astype(np.float32)
q = rng.standard_normal((len(lengths), H, D)).astype(np.float32)
tq, tip, tids = (torch.from_numpy(a) for a in (q, indptr, ids))
c = latent.astype(np.float64).mean(axis=1)
rows = np.repeat(np.arange(len(lengths)), lengths)
rcfg = ref.Config.from_dict(CFG.as_dict())


def want_selection(V):
    score = np.einsum("sd,sd->s", V[rows], c[ids])
    return ref.topk_select(score, ref.Csr(indptr, ids), rcfg)


compiled = vortex.load(vortex.compile(flow, CFG, target="cpu"),
                       params=flow.parameters())
cache = latent_cache(compiled, nb, latent)
ecache = {"latent": torch.from_numpy(latent),
          "centroids": torch.zeros(nb, 1, D)}
for layer in range(3):
    compiled.cache_step(cache, tids, layer=layer)
    sp, si = compiled.indexer(tq, cache, tip, tids, layer=layer)
    want = want_selection(q.reshape(len(lengths), -1).astype(np.float64)
                          @ W[layer].numpy().T)
    tally(same_selection(sp, si, want), f"compiled, layer {layer}: the selection is "
          "the float64 top-k of <W[l] q_flat, c_p>")
    eager.cache_step(flow, ecache, tids, CFG, layer=layer)
    _, esp, esi = eager.indexer(flow, tq, ecache, tip, tids, CFG,
                                layer=layer)
    tally(same_selection(esp, esi, want), f"eager, layer {layer}: the same selection")

# Decode at layer 2: the same selection, then attention over it.
R = 512
last = rng.integers(1, BS + 1, len(lengths)).astype(np.int32)
scale = 192 ** -0.5
o, lse, sp, si = compiled.decode(tq, cache, tip, tids, torch.from_numpy(last),
                                 sm_scale=scale, layer=2)
want = want_selection(q.reshape(len(lengths), -1).astype(np.float64)
                      @ W[2].numpy().T)
err = 0.0
for r in range(len(lengths)):
    blocks = si[sp[r]:sp[r + 1]].numpy()
    toks = np.concatenate([latent[b, :(last[r] if i == len(blocks) - 1
                                       else BS)]
                           for i, b in enumerate(blocks)]).astype(np.float64)
    logit = q[r].astype(np.float64) @ toks.T * scale              # [H, n]
    m = logit.max(axis=1, keepdims=True)
    p = np.exp(logit - m)
    wo = (p @ toks[:, :R]) / p.sum(axis=1, keepdims=True)
    wl = m[:, 0] + np.log(p.sum(axis=1))
    err = max(err, float(np.abs(o[r].numpy() - wo).max()),
              float(np.abs(lse[r].numpy() - wl).max()))
tally(same_selection(sp, si, want) and tuple(o.shape) == (len(lengths), H, R) and
      err < 1e-4, "compiled decode, layer 2: the selection, then float64 MLA "
      "attention over it (atol 1e-4)", err)

# 3. The identity fold against rope_aware_block_sparse_mla.
ident = LearnedBlockSparseMLA()
lc = vortex.load(vortex.compile(ident, CFG, target="cpu"),
                 params=ident.parameters())
ra = vortex.load(vortex.compile("rope_aware_block_sparse_mla", CFG,
                                target="cpu"))
results = []
for compiled_flow in (lc, ra):
    cc = latent_cache(compiled_flow, nb, latent)
    compiled_flow.cache_step(cc, tids)
    results.append(compiled_flow.indexer(tq, cc, tip, tids))
(sp1, si1), (sp2, si2) = results
tally(torch.equal(sp1, sp2) and torch.equal(si1, si2),
      "the identity fold (sum_h q_h) selects what rope_aware_block_sparse_mla "
      "(mean_h q_h) selects")

# 4. LearnedQuery's fold at [576, 11520].
wq1 = torch.randn(1, H, D, 8, generator=g) / D ** 0.5
wk1 = torch.randn(1, H, D, 8, generator=g) / D ** 0.5
lq = LearnedQueryBlockSparseAttention(wq1, wk1, num_heads=H, head_dim=D)
lcfg = vortex.FlowConfig(group_size=H, head_dim=D, block_size=BS,
                         page_size=BS, intermediate_dtype="f32",
                         kv_dtype="f32", topk_val=5)
lqc = vortex.load(vortex.compile(lq, lcfg, target="cpu"),
                  params=lq.parameters())
cache = lqc.allocate_cache(nb)
cache["k"].copy_(torch.from_numpy(latent))
lqc.cache_step(cache, tids)
sp, si = lqc.indexer(tq, cache, tip, tids)
V = np.einsum("hdr,her,bhe->bd", wk1[0].double().numpy(),
              wq1[0].double().numpy(), q.astype(np.float64))
tally(same_selection(sp, si, want_selection(V)),
      "LearnedQuery with a [576, 11520] fold: the float64 top-k of "
      "<sum_h Wk Wq^T q_h, c_p>")
tally.exit()
