"""GPU check of the learned ops and per-layer parameters (a check, not a
benchmark; it lives beside the other device checks that need artifacts
built on a machine with MLIR).

  # here (MLIR): trace and compile the flows for a chip
  python3 bench/learned_gpu_check.py --build .device-artifacts/learned
  # on the GPU machine (torch, CUDA, no MLIR)
  python3 bench/learned_gpu_check.py --run .device-artifacts/learned

The flows and the float64 numpy model are test/Python/Inputs/learned_model.py
(the same as the CPU tests, test/Python/cpu/learned_layers.py and
test/Python/eager/learned_descriptor.py): FactorScore with a per-layer Wq
behind the lookup [2, 0, 1, 1], LearnedQuery with Wq = Wk = None times a
per-layer u, and LearnedDescriptor (per-layer Wt, Wk) feeding FactorScore.
One compiled flow is loaded once with all layers bound; each call's
`layer=` selects the weights. Per layer, on the GPU: the saved score (and
LearnedDescriptor's descriptors) equal the model's to rtol 1e-4 (f32 flow,
float64 model), the selection equals the model's exactly (random data, no
near ties), and a layer outside the lookup is refused with nothing written.

`learned_factorized` is the shipped learned_factorized_block_sparse_attention
at its size (H 8, m 2, r 8, blocks of 16, head dim 128; f32, random
weights), whose cache step is the standalone vortex.learned_descriptor
(docs/python.md "Learned ops"): --build prints its compile time (ptxas
included), --run checks its descriptors against a float64 einsum (rtol
1e-4, atol 1e-4 of the largest) and its selection against the float64 one.

`learned_fmla` is the shipped learned_factorized_block_sparse_mla at
GLM's shape (20 heads, latent 576, blocks of 32; f32): with random weights
m 2, r 8 for two layers behind the lookup [1, 0], and as
`learned_fmla_identity` with its identity weights (m 1, r 576), whose
projections [11520, 576] are streamed parameters of the descriptor op and
the grouped GeMM. Per layer, at 4 rows: the descriptors against a float64
einsum (rtol 1e-4, atol 1e-4 of the largest) and the selection against
the float64 top-k.

`learned_mla` is the shipped learned_block_sparse_mla at GLM-4.7-Flash's
shape (20 heads, latent 576, blocks of 32; f32, random weights for two
layers behind the lookup [1, 0]): its GeMM weight W [576, 11520] is over
the tile bound, so the streamed GeMM kernel reads it (docs/gpu.md). Per
layer, at 4 rows and at 40 (the streamed GeMM's two alternatives on an
H200: a CTA per output row, then a warp per output row): the centroids
against the float64 block means (rtol 1e-5) and the selection against
float64 top-k of <W[l] q_flat, c_p>.
Exit 0 when every check passes, 1 otherwise, 2 when nothing was checked.
"""

import os
import sys
import time

import numpy as np
import torch

import gpu_check_cli  # bench/

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "Python", "Inputs"))
import learned_model as lm  # noqa: E402

import vortex  # noqa: E402
from vortex.flows.learned_block_sparse_mla import (  # noqa: E402
    LearnedBlockSparseMLA)
from vortex.flows.learned_factorized_block_sparse_attention import (  # noqa: E402
    LearnedFactorizedBlockSparseAttention)
from vortex.flows.learned_factorized_block_sparse_mla import (  # noqa: E402
    LearnedFactorizedBlockSparseMLA)
from vortex.semantics import reference  # noqa: E402

#: The shipped learned_factorized flow's size, in f32.
FULL = vortex.FlowConfig(intermediate_dtype="f32", kv_dtype="f32")
FH, FM, FR = 8, 2, 8
#: learned_block_sparse_mla at GLM's shape, in f32.
MLA = vortex.FlowConfig.mla(512, 64, group_size=20, block_size=32,
                            page_size=32, intermediate_dtype="f32",
                            kv_dtype="f32")
MLA_LOOKUP = [1, 0]


def flows():
    """The flows with fixed weights (seeded: build and run agree): name ->
    (flow, score model, descriptor model or None)."""
    g = torch.Generator().manual_seed(5)
    Wq = torch.randn(lm.L, lm.H, lm.D, lm.R, generator=g)
    u = torch.randn(lm.L, 1, lm.D, generator=g)
    Wt = torch.randn(lm.L, lm.H, lm.BS, lm.M, generator=g)
    Wk = torch.randn(lm.L, lm.H, lm.D, lm.R, generator=g)
    return {
        "factor_score": (lm.FactorScoreFlow(Wq), lambda q, k, ip, ids, layer:
                         lm.fs_scores(q, k, Wq, ip, ids, layer), None),
        "learned_query": (lm.LearnedQueryFlow(None, None, u, identity=True),
                          lambda q, k, ip, ids, layer: lm.lq_scores(
                              q, k, None, None, u, ip, ids, layer,
                              identity=True), None),
        "learned_descriptor": (
            lm.LearnedDescriptorFlow(Wt, Wk, Wq),
            lambda q, k, ip, ids, layer: lm.ld_scores(
                q, k, Wt, Wk, Wq, ip, ids, layer),
            lambda k, layer: lm.descriptors(k, Wt, Wk, layer)),
    }


def full_flow():
    """learned_factorized_block_sparse_attention at its size, seeded."""
    g = torch.Generator().manual_seed(6)
    D, bs = FULL.head_dim, FULL.block_size
    Wt = torch.randn(1, FH, bs, FM, generator=g) / bs
    Wk = torch.randn(1, FH, D, FR, generator=g) / D ** 0.5
    Wq = torch.randn(1, FH, D, FR, generator=g) / D ** 0.5
    flow = LearnedFactorizedBlockSparseAttention(Wt, Wk, Wq, FH, FM, FR, bs, D)
    return flow, (Wt[0].double().numpy(), Wk[0].double().numpy(),
                  Wq[0].double().numpy())


def mla_flow():
    """learned_block_sparse_mla at GLM's shape, two layers, seeded."""
    g = torch.Generator().manual_seed(7)
    H, d = MLA.group_size, MLA.head_dim
    W = torch.randn(2, d, H * d, generator=g) / (H * d) ** 0.5
    return LearnedBlockSparseMLA(W, torch.tensor(MLA_LOOKUP), H, d), W


def fmla_flows():
    """learned_factorized_block_sparse_mla at GLM's shape, seeded: name ->
    (flow, [(Wt, Wk, Wq) float64 per layer])."""
    g = torch.Generator().manual_seed(8)
    H, d, bs = MLA.group_size, MLA.head_dim, MLA.block_size
    Wt = torch.rand(2, H, bs, 2, generator=g) / bs
    Wk = torch.randn(2, H, d, 8, generator=g) / d ** 0.5
    Wq = torch.randn(2, H, d, 8, generator=g) / d ** 0.5
    lookup = torch.tensor(MLA_LOOKUP)
    ident = LearnedFactorizedBlockSparseMLA(num_heads=H, latent_dim=d,
                                            block_size=bs)

    def rows(flow, lookup):
        ws = [np.asarray(p.data, np.float64)
              for p in (flow.Wt, flow.Wk, flow.Wq)]
        return [[w[row] for w in ws] for row in lookup]
    flow = LearnedFactorizedBlockSparseMLA(
        Wt, Wk, Wq, lookup, num_heads=H, latent_dim=d, block_size=bs)
    return {"learned_fmla": (flow, rows(flow, MLA_LOOKUP)),
            "learned_fmla_identity": (ident, rows(ident, [0]))}


def build(out, chip):
    for name, (flow, _, _) in flows().items():
        path = vortex.compile(flow, lm.CONFIG, target=chip, name=name,
                              out_dir=out)
        print(f"built {name}: {path}")
    start = time.perf_counter()
    path = vortex.compile(full_flow()[0], FULL, target=chip,
                          name="learned_factorized", out_dir=out)
    print(f"built learned_factorized: {path} "
          f"({time.perf_counter() - start:.1f} s)")
    start = time.perf_counter()
    path = vortex.compile(mla_flow()[0], MLA, target=chip,
                          name="learned_mla", out_dir=out)
    print(f"built learned_mla: {path} "
          f"({time.perf_counter() - start:.1f} s)")
    for name, (flow, _) in fmla_flows().items():
        start = time.perf_counter()
        path = vortex.compile(flow, MLA, target=chip, name=name, out_dir=out)
        print(f"built {name}: {path} "
              f"({time.perf_counter() - start:.1f} s)")
    return 0


def check_mla(out, dev, report):
    """learned_block_sparse_mla per layer: centroids and selection against
    float64, at 4 rows (the streamed GeMM's CTA-per-output-row variant) and
    at 40 (its grid takes more than a wave: the warp-per-output-row one)."""
    flow, W = mla_flow()
    compiled = vortex.load(os.path.join(out, "learned_mla.manifest.json"),
                           device=0 if dev.type == "cuda" else None,
                           params=flow.parameters())
    rng = np.random.default_rng(11)
    D, bs, G = MLA.head_dim, MLA.block_size, MLA.group_size
    rcfg = reference.Config.from_dict(MLA.as_dict())
    for lengths in ((3, 40, 100, 257), tuple(rng.integers(1, 80, 40))):
        nb = int(sum(lengths)) + 5
        latent = rng.standard_normal((nb, bs, D)).astype(np.float32)
        q = rng.standard_normal((len(lengths), G, D)).astype(np.float32)
        ids = rng.permutation(nb)[:sum(lengths)].astype(np.int32)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        # The pool as vortex_torch names it (allocate_cache: 'k' and 'v').
        cache = {n: t for n, t in compiled.allocate_cache(nb).items()
                 if n not in ("k", "v")}
        cache["latent"] = torch.from_numpy(latent).to(dev)
        tids = torch.from_numpy(ids).to(dev)
        c = latent.astype(np.float64).mean(axis=1)              # [nb, D]
        rows = np.repeat(np.arange(len(lengths)), lengths)
        for layer, row in enumerate(MLA_LOOKUP):
            compiled.cache_step(cache, tids, layer=layer)
            sp, si = compiled.indexer(torch.from_numpy(q).to(dev), cache,
                                      torch.from_numpy(indptr).to(dev),
                                      tids, layer=layer)
            got = cache["centroids"][tids.long(), 0].double().cpu().numpy()
            what = f"learned_mla on {dev.type}, {len(lengths)} rows, layer"
            report(np.allclose(got, c[ids], rtol=1e-5, atol=1e-5),
                   f"{what} {layer}: centroids == float64 block means "
                   "(rtol 1e-5)")
            V = q.reshape(len(lengths), -1).astype(np.float64) @ \
                W[row].double().numpy().T                         # [B, D]
            score = np.einsum("sd,sd->s", V[rows], c[ids])
            want_ip, want_ix = reference.topk_select(
                score, reference.Csr(indptr, ids), rcfg)
            sp, si = sp.cpu(), si.cpu()
            report(sp.tolist() == list(want_ip) and
                   si[:int(sp[-1])].tolist() == list(want_ix),
                   f"{what} {layer}: selection == float64 top-k of "
                   "<W[l] q_flat, c_p>")


def check_fmla(out, dev, report):
    """learned_factorized_block_sparse_mla per layer: descriptors and
    selection against float64."""
    rng = np.random.default_rng(12)
    D, bs, G = MLA.head_dim, MLA.block_size, MLA.group_size
    rcfg = reference.Config.from_dict(MLA.as_dict())
    lengths = (3, 40, 100, 257)
    nb = sum(lengths) + 5
    latent = rng.standard_normal((nb, bs, D)).astype(np.float32)
    q = rng.standard_normal((len(lengths), G, D)).astype(np.float32)
    ids = rng.permutation(nb)[:sum(lengths)].astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    tids = torch.from_numpy(ids).to(dev)
    for name, (flow, layers) in fmla_flows().items():
        compiled = vortex.load(os.path.join(out, f"{name}.manifest.json"),
                               device=0 if dev.type == "cuda" else None,
                               params=flow.parameters())
        cache = {n: t for n, t in compiled.allocate_cache(nb).items()
                 if n not in ("k", "v")}
        cache["latent"] = torch.from_numpy(latent).to(dev)
        for layer, (wt, wk, wq) in enumerate(layers):
            call = layer if len(layers) > 1 else None
            compiled.cache_step(cache, tids, layer=call)
            sp, si = compiled.indexer(torch.from_numpy(q).to(dev), cache,
                                      torch.from_numpy(indptr).to(dev),
                                      tids, layer=call)
            g = np.einsum("nsd,hsj,hdr->nhjr", latent.astype(np.float64),
                          wt, wk)                          # [nb, H, m, r]
            got = cache["descriptors"][tids.long()].double().cpu().numpy()
            want = g.reshape(nb, -1, wk.shape[-1])[ids]
            what = f"{name} on {dev.type}, layer {layer}"
            report(np.allclose(got, want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max()),
                   f"{what}: descriptors == float64 einsum (rtol 1e-4)",
                   f"max |err| {np.abs(got - want).max():.2e}")
            u = np.einsum("bhe,her->bhr", q.astype(np.float64), wq)
            score = np.einsum("phr,phjr->phj", u[rows], g[ids])
            want_ip, want_ix = reference.topk_select(
                score.max(axis=2).sum(axis=1), reference.Csr(indptr, ids),
                rcfg)
            sp, si = sp.cpu(), si.cpu()
            report(sp.tolist() == list(want_ip) and
                   si[:int(sp[-1])].tolist() == list(want_ix),
                   f"{what}: selection == float64 top-k")


def check_full(out, dev, report):
    """The shipped flow's descriptors and selection, against float64."""
    flow, (wt, wk, wq) = full_flow()
    compiled = vortex.load(os.path.join(out, "learned_factorized.manifest"
                                        ".json"),
                           device=0 if dev.type == "cuda" else None,
                           params=flow.parameters())
    rng = np.random.default_rng(9)
    D, bs, G = FULL.head_dim, FULL.block_size, FULL.group_size
    lengths = (3, 40, 100, 257)
    nb = sum(lengths) + 5
    k = rng.standard_normal((nb, bs, D)).astype(np.float32)
    q = rng.standard_normal((len(lengths), G, D)).astype(np.float32)
    ids = rng.permutation(nb)[:sum(lengths)].astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    cache = compiled.allocate_cache(nb)
    cache["k"].copy_(torch.from_numpy(k).to(dev))
    tids = torch.from_numpy(ids).to(dev)
    compiled.cache_step(cache, tids, layer=0)
    sp, si = compiled.indexer(torch.from_numpy(q).to(dev), cache,
                              torch.from_numpy(indptr).to(dev), tids,
                              layer=0)
    g = np.einsum("nsd,hsj,hdr->nhjr", k.astype(np.float64), wt, wk)
    got = cache["descriptors"][tids.long()].double().cpu().numpy()
    want = g.reshape(nb, FH * FM, FR)[ids]
    tol = 1e-4 * np.abs(want).max()
    report(np.allclose(got, want, rtol=1e-4, atol=tol),
           f"learned_factorized on {dev.type}: descriptors == float64 "
           "einsum (rtol 1e-4)", f"max |err| {np.abs(got - want).max():.2e}")
    u = np.einsum("bhe,her->bhr", q.astype(np.float64), wq)
    score = np.zeros(len(ids))
    for r in range(len(lengths)):
        s = np.einsum("hr,nhjr->nhj", u[r],
                      g.reshape(nb, FH, FM, FR)[ids[indptr[r]:indptr[r + 1]]])
        score[indptr[r]:indptr[r + 1]] = s.max(axis=2).sum(axis=1)
    rcfg = reference.Config.from_dict(FULL.as_dict())
    want_ip, want_ix = reference.topk_select(
        score, reference.Csr(indptr, ids), rcfg)
    sp, si = sp.cpu(), si.cpu()
    report(sp.tolist() == list(want_ip) and
           si[:int(sp[-1])].tolist() == list(want_ix),
           f"learned_factorized on {dev.type}: selection == float64 model")


def run(out):
    # A CPU build (--chip cpu) runs here too: the same checks, no GPU.
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    q, k, indptr, ids = lm.problem(2, lengths=(0, 2, 5, 7, 12, 30, 64, 3))
    tq, tk = torch.from_numpy(q).to(dev), torch.from_numpy(k).to(dev)
    tip, tids = torch.from_numpy(indptr).to(dev), torch.from_numpy(ids).to(dev)
    saved = lm.saved_positions(indptr)
    report = gpu_check_cli.Report()

    for name, (flow, model, desc_model) in flows().items():
        path = os.path.join(out, f"{name}.manifest.json")
        compiled = vortex.load(path, device=0 if cuda else None,
                               params=flow.parameters())
        cache = compiled.allocate_cache(k.shape[0])
        for layer in range(len(lm.LOOKUP)):
            cache["k"].copy_(tk)
            compiled.cache_step(cache, tids, layer=layer)
            sp, si = compiled.indexer(tq, cache, tip, tids, layer=layer)
            sync()
            score = cache["probe"][tids[saved].long(), 0, 0].double().cpu()
            want = model(q, k, indptr, ids, layer)
            want_ip, want_ix = lm.select(want, indptr, ids)
            sp, si = sp.cpu(), si.cpu()
            err = float(np.abs(score.numpy() - want[saved]).max())
            report(np.allclose(score.numpy(), want[saved], rtol=1e-4,
                               atol=1e-4) and
                   sp.tolist() == list(want_ip) and
                   si[:int(sp[-1])].tolist() == list(want_ix),
                   f"{name} on {dev.type}, layer {layer}: score (rtol 1e-4) and "
                   "selection == float64 model", f"max |err| {err:.2e}")
            if desc_model is not None:
                got = cache["g"][tids.long()].double().cpu().numpy()
                want = desc_model(k, layer)[ids]
                report(np.allclose(got, want, rtol=1e-4, atol=1e-4),
                       f"{name} on {dev.type}, layer {layer}: descriptors "
                       "(rtol 1e-4) == float64 model",
                       f"max |err| {np.abs(got - want).max():.2e}")
        sp0 = torch.full_like(tip, -7)
        si0 = torch.full_like(tids, -7)
        before = {n: t.clone() for n, t in cache.items()}
        try:
            compiled.indexer(tq, cache, tip, tids, sp0, si0, layer=4)
            report(False, f"{name}: layer 4 refused", "no error")
        except ValueError as e:
            sync()
            same = all(torch.equal(cache[n], before[n]) for n in cache)
            report("layer" in str(e) and same and bool((sp0 == -7).all()),
                   f"{name}: a layer outside the lookup refused, nothing "
                   "written", str(e))
    check_full(out, dev, report)
    check_mla(out, dev, report)
    check_fmla(out, dev, report)
    return report.summary()


if __name__ == "__main__":
    sys.exit(gpu_check_cli.main(__doc__, build, run))
