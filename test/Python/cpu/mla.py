# RUN: %python %s
# REQUIRES: numpy, torch
#
# An MLA flow (rope_aware_block_sparse_mla, latent 512 + 64, 4 query heads)
# compiled for the CPU and run in eager mode, both taking the pool as
# cache["latent"]: the cache step's centroids, the selection (against
# vortex.semantics.reference) and decode, whose o is the latent's first
# 512 channels, against a float64 attention written from MLA's math: per
# head, logit_t = (<q_nope_out, kv_c_t> + <q_pe, k_pe_t>) * sm_scale over
# the selected tokens (the last entry holding kv_last_len of them),
# o = sum_t softmax_t kv_c_t, lse = log sum_t exp(logit_t). Tolerances:
# centroids rtol = atol = 1e-5, o and lse atol = 1e-4 (float32 sums of
# 576 products). Also: a cache with both 'latent' and 'k' is refused, and
# so is the flow by the engine adapters (NotImplementedError naming it).

import os
import sys

import numpy as np
import torch

import vortex
from vortex import testing
from vortex.flow import get
from vortex.runtime.cpu import CompiledFlow
from vortex.semantics import eager
from vortex.semantics import reference as ref

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from engine_refusal import check_engines_refuse  # noqa: E402

tally = testing.Tally()
R, P, G, BS = 512, 64, 4, 16
D = R + P
cfg = vortex.FlowConfig.mla(R, P, group_size=G, block_size=BS, page_size=BS,
                            topk_val=3, topk_ratio=0.0, reserved_bos=1,
                            reserved_eos=1)
flow = CompiledFlow(vortex.compile("rope_aware_block_sparse_mla", cfg,
                                   target="cpu"))
tally(flow.manifest.is_mla and flow.config["kv_lora_rank"] == R and
      flow.config["rope_dim"] == P, "the manifest's config names the widths",
      flow.config)

rng = np.random.default_rng(3)
lengths = [1, 3, 6, 9, 20]
nb = sum(lengths) + 3
perm = rng.permutation(nb).astype(np.int32)
indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
indices = perm[:sum(lengths)]
latent = rng.standard_normal((nb, BS, D)).astype(np.float32)
cache = {"latent": latent,
         "centroids": rng.standard_normal((nb, 1, D)).astype(np.float32)}
cache_t = {n: torch.from_numpy(a.copy()) for n, a in cache.items()}
q = rng.standard_normal((len(lengths), G, D)).astype(np.float32)
last = rng.integers(1, BS + 1, len(lengths)).astype(np.int32)
scale = (128 + P) ** -0.5        # DeepSeek-V2's 1/sqrt(qk_nope + qk_rope)

flow.cache_step(cache, indices)
want_c = latent.astype(np.float64).mean(axis=1, keepdims=True)
tally(np.allclose(cache["centroids"][indices], want_c[indices], rtol=1e-5,
                  atol=1e-5), "compiled cache step: centroids = block means "
      "of the latent")

try:
    flow.indexer(q, {"latent": latent, "k": latent,
                     "centroids": cache["centroids"]}, indptr, indices)
    tally(False, "a cache with 'latent' and 'k' is refused", "no error")
except ValueError as err:
    tally("'latent' or as 'k' and 'v'" in str(err),
          "a cache with 'latent' and 'k' is refused", err)


def attention(q, latent, sp, si, last):
    """MLA decode in float64, from the math (see the header)."""
    o = np.zeros((len(sp) - 1, G, R))
    lse = np.zeros((len(sp) - 1, G))
    for r in range(len(sp) - 1):
        blocks = si[sp[r]:sp[r + 1]]
        toks = [latent[b, :(last[r] if i == len(blocks) - 1 else BS)]
                for i, b in enumerate(blocks)]
        kv = np.concatenate(toks).astype(np.float64)       # [n, 576]
        qq = q[r].astype(np.float64)
        logit = (qq[:, :R] @ kv[:, :R].T + qq[:, R:] @ kv[:, R:].T) * scale
        m = logit.max(axis=1, keepdims=True)
        p = np.exp(logit - m)
        o[r] = (p @ kv[:, :R]) / p.sum(axis=1, keepdims=True)
        lse[r] = m[:, 0] + np.log(p.sum(axis=1))
    return o, lse


o, lse, sp, si = flow.decode(q, cache, indptr, indices, last, sm_scale=scale)
want = ref.FLOWS["rope_aware_block_sparse_mla"].indexer(
    q, {"k": latent, "v": latent, "centroids": cache["centroids"]}, indptr,
    indices, ref.Config.from_dict(flow.config))
tally(not ref.compare_selection(sp, si, want, indptr, indices,
                                ref.Config.from_dict(flow.config)),
      "compiled decode: the selection is the reference's")
wo, wl = attention(q, latent, sp, si, last)
tally(o.shape == (len(lengths), G, R), "compiled decode: o has the "
      "kv_lora_rank value channels", o.shape)
tally(np.abs(o - wo).max() < 1e-4 and np.abs(lse - wl).max() < 1e-4,
      "compiled decode == float64 MLA attention (1e-4)",
      (np.abs(o - wo).max(), np.abs(lse - wl).max()))

# Eager mode, the same problem.
mla = get("rope_aware_block_sparse_mla")()
eager.cache_step(mla, cache_t, torch.from_numpy(indices), cfg)
tally(np.allclose(cache_t["centroids"].numpy()[indices], want_c[indices],
                  rtol=1e-5, atol=1e-5), "eager cache step: centroids")
eo, el, _, esp, esi = eager.decode(
    mla, torch.from_numpy(q), cache_t, torch.from_numpy(indptr),
    torch.from_numpy(indices), torch.from_numpy(last), cfg, sm_scale=scale)
esp, esi = esp.numpy(), esi.numpy()
tally(esp.tolist() == sp.tolist() and esi[:esp[-1]].tolist() == si.tolist(),
      "eager decode selects what the compiled flow selects")
wo, wl = attention(q, latent, esp, esi, last)
tally(tuple(eo.shape) == (len(lengths), G, R) and
      np.abs(eo.numpy() - wo).max() < 1e-4 and
      np.abs(el.numpy() - wl).max() < 1e-4,
      "eager decode == float64 MLA attention (1e-4)")

# The engine adapters page per-head k and v: an MLA flow is refused by
# name, before anything is allocated.
check_engines_refuse(flow, "an MLA flow", "MLA", tally)
tally.exit()
