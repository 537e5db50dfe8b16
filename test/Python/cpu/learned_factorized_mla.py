# RUN: %python %s
# REQUIRES: numpy, torch
#
# vortex_torch's learned_factorized_block_sparse_mla at GLM-4.7-Flash's
# shape (20 heads over a latent of 576 = 512 + 64, blocks of 32), against
# a float64 model written from the formulas (einsums, not the traced ops):
#   g_p[h m + j] = sum_s Wt[l, h, s, j] latent_s Wk[l, h]          [H*m, r]
#   score(p)     = sum_h max_j < Wq[l, h]^T q_h , g_p[h m + j] >
# 1. A checkpoint (VORTEX_COMPRESSOR_CKPT in a temp dir: scorer.Wt
#    [2, 20, 32, 2], scorer.Wk/Wq [2, 20, 576, 8], layer_ids [2, 0]) loads
#    into [3, ...] weights: rows 2 and 0 the trained ones, row 1 the
#    untrained (Wt the block's mean at landmark 0, Wk = Wq = eye(576, 8));
#    a Wt of 4 heads is a ValueError naming Wt, a bilinear checkpoint one
#    naming its arch.
# 2. Per layer (checkpoint weights, m = 2, r = 8) and for the identity
#    fallback (no checkpoint: m = 1, r = d = 576, its projections
#    [11520, 576] streamed): the compiled CPU flow (f32) writes descriptors
#    equal to the model's (|err| <= 1e-4 * (1 + |want|)) and selects the
#    model's top-k exactly (random data, no near ties); eager mode's
#    descriptors and scores equal the model's (same tolerance) and it
#    selects the same.
# 3. initialize: for blocks of 16, Wt (the identity's or a trained one)
#    falls back to the mean at landmark 0, as in vortex_torch; Wk kept.

import os
import sys
import tempfile

import numpy as np
import torch

import vortex
from vortex import testing
from vortex.flows.learned_factorized_block_sparse_mla import (
    LearnedFactorizedBlockSparseMLA)
from vortex.semantics import eager
from vortex.semantics import reference as ref

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from latent_cache import latent_cache, same_selection  # noqa: E402

tally = testing.Tally()
H, D, BS, M, R = 20, 576, 32, 2, 8
CFG = vortex.FlowConfig.mla(512, 64, group_size=H, block_size=BS,
                            page_size=BS, intermediate_dtype="f32",
                            kv_dtype="f32", topk_val=5)
rng = np.random.default_rng(5)
g = torch.Generator().manual_seed(5)
TOL = 1e-4


def close(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = float(np.max(np.abs(got - want) / (1.0 + np.abs(want))))
    return got.shape == want.shape and err <= TOL, err


# 1. The checkpoint.
wt = torch.rand(2, H, BS, M, generator=g) / BS
wk = torch.randn(2, H, D, R, generator=g) / D ** 0.5
wq = torch.randn(2, H, D, R, generator=g) / D ** 0.5
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "ckpt.pt")
    torch.save({"state_dict": {"scorer.Wt": wt, "scorer.Wk": wk,
                               "scorer.Wq": wq},
                "config": {"per_layer": True}, "layer_ids": [2, 0]}, path)
    bad = os.path.join(tmp, "bad.pt")
    torch.save({"state_dict": {"scorer.Wt": wt[:, :4], "scorer.Wk": wk,
                               "scorer.Wq": wq}}, bad)
    bilinear = os.path.join(tmp, "bilinear.pt")
    torch.save({"state_dict": {"scorer.Wt": wt, "scorer.Wk": wk,
                               "scorer.Wq": wq},
                "config": {"arch": "bilinear"}}, bilinear)
    os.environ["VORTEX_COMPRESSOR_CKPT"] = bilinear
    try:
        LearnedFactorizedBlockSparseMLA()
        tally(False, "a bilinear checkpoint is refused", "no error")
    except ValueError as err:
        tally("arch='bilinear'" in str(err), "a bilinear checkpoint is "
              "refused, naming its arch", err)
    os.environ["VORTEX_COMPRESSOR_CKPT"] = path
    try:
        trained = LearnedFactorizedBlockSparseMLA()
        os.environ["VORTEX_COMPRESSOR_CKPT"] = bad
        try:
            LearnedFactorizedBlockSparseMLA()
            tally(False, "a checkpoint of 4 heads is refused", "no error")
        except ValueError as err:
            tally("Wt has shape" in str(err), "a checkpoint of 4 heads is "
                  "refused, naming Wt", err)
    finally:
        del os.environ["VORTEX_COMPRESSOR_CKPT"]
ident = LearnedFactorizedBlockSparseMLA()
TW = [np.asarray(t.data, np.float64) for t in (trained.Wt, trained.Wk,
                                                trained.Wq)]
mean0 = np.zeros((H, BS, M))
mean0[..., 0] = 1.0 / BS
eye = np.broadcast_to(np.eye(D, R), (H, D, R))
tally([w.shape for w in TW] == [(3, H, BS, M), (3, H, D, R), (3, H, D, R)]
      and np.array_equal(TW[0][2], wt[0].double().numpy())
      and np.array_equal(TW[0][0], wt[1].double().numpy())
      and np.array_equal(TW[1][2], wk[0].double().numpy())
      and np.array_equal(TW[2][0], wq[1].double().numpy())
      and np.array_equal(TW[0][1], mean0) and np.array_equal(TW[1][1], eye)
      and np.array_equal(TW[2][1], eye)
      and list(trained.Wt.lookup) == [0, 1, 2],
      "the checkpoint loads into [3, ...] weights: trained rows 2 and 0, "
      "untrained row 1 (mean at landmark 0, eye(576, 8))")

# 2. Compiled (CPU, f32) and eager, per layer, against float64.
lengths = [1, 4, 9, 30, 60]
nb = sum(lengths) + 3
indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
ids = rng.permutation(nb)[:sum(lengths)].astype(np.int32)
latent = rng.standard_normal((nb, BS, D)).astype(np.float32)
q = rng.standard_normal((len(lengths), H, D)).astype(np.float32)
tq, tip, tids = (torch.from_numpy(a) for a in (q, indptr, ids))
rows = np.repeat(np.arange(len(lengths)), lengths)
rcfg = ref.Config.from_dict(CFG.as_dict())


def model(w_t, w_k, w_q):
    """(descriptors [nb, H*m, r], scores per CSR position) in float64."""
    x = latent.astype(np.float64)
    m, r = w_t.shape[-1], w_k.shape[-1]
    desc = np.einsum("nsd,hsj,hdr->nhjr", x, w_t, w_k)
    u = np.einsum("bhe,her->bhr", q.astype(np.float64), w_q)
    s = np.einsum("phr,phjr->phj", u[rows], desc[ids])
    return desc.reshape(nb, H * m, r), s.max(axis=2).sum(axis=1)


cases = [("checkpoint", trained, layer, [w[trained.Wt.lookup[layer]]
                                         for w in TW]) for layer in range(3)]
cases.append(("identity", ident, None,
              [np.asarray(t.data[0], np.float64)
               for t in (ident.Wt, ident.Wk, ident.Wq)]))
compiled = {}
for name, flow, layer, weights in cases:
    want_g, want_s = model(*weights)
    want = ref.topk_select(want_s, ref.Csr(indptr, ids), rcfg)
    what = f"{name}" + ("" if layer is None else f", layer {layer}")
    try:
        if name not in compiled:
            compiled[name] = vortex.load(
                vortex.compile(flow, CFG, target="cpu"),
                params=flow.parameters())
        cache = latent_cache(compiled[name], nb, latent)
        compiled[name].cache_step(cache, tids, layer=layer)
        sp, si = compiled[name].indexer(tq, cache, tip, tids, layer=layer)
        ok_g, err_g = close(cache["descriptors"][tids.long()].numpy(),
                            want_g[ids])
        tally(ok_g and same_selection(sp, si, want), f"compiled, {what}: descriptors "
              "== float64 model (1e-4), selection == its top-k", err_g)
    except Exception as err:  # noqa: BLE001
        tally(False, f"compiled, {what}", f"{type(err).__name__}: {err}")
    ecache = {"latent": torch.from_numpy(latent),
              "descriptors": torch.zeros(nb, *want_g.shape[1:])}
    eager.cache_step(flow, ecache, tids, CFG, layer=layer)
    score, esp, esi = eager.indexer(flow, tq, ecache, tip, tids, CFG,
                                    layer=layer)
    ok_g, err_g = close(ecache["descriptors"][tids.long()].numpy(),
                        want_g[ids])
    ok_s, err_s = close(score.detach().reshape(-1).numpy(), want_s)
    tally(ok_g and ok_s and same_selection(esp, esi, want), f"eager, {what}: "
          "descriptors and scores == float64 model (1e-4), selection == its "
          "top-k", (err_g, err_s))

# 3. Another block size: Wt falls back to the block's mean at landmark 0
# (vortex_torch's initialize), trained Wk and Wq kept.
small = CFG.replace(block_size=16, page_size=16)
text = vortex.trace(LearnedFactorizedBlockSparseMLA(), small, verify=False)
tally("descriptor_mix = [20, 16]" in text, "the identity's Wt is rebuilt "
      "for blocks of 16")
text = vortex.trace(trained, small, verify=False)
wt16 = np.asarray(trained.Wt.data, np.float64)
want16 = np.zeros_like(wt16)
want16[..., 0] = 1.0 / 16
tally("descriptor_mix = [40, 16]" in text and wt16.shape[2] == 16
      and np.array_equal(wt16, want16)
      and np.array_equal(np.asarray(trained.Wk.data, np.float64), TW[1]),
      "a trained flow at blocks of 16: Wt the mean at landmark 0, Wk kept")
tally.exit()
