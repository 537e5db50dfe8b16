"""GPU check of custom ops compiled around (a check, not a benchmark; it
lives beside the other device checks that need artifacts built on a
machine with MLIR).

  # here (MLIR): trace, split and compile the flows for a chip
  python3 bench/custom_gpu_check.py --build .device-artifacts/custom
  # on the GPU machine (torch, CUDA, no MLIR)
  python3 bench/custom_gpu_check.py --run .device-artifacts/custom

The flows are those of test/Python/eager/custom_ops.py (centroid scores, a
per-row z-score in torch, and a second flow with a batched scaling of the
mean query before it and the score crossing both cuts) and a third
whose mean query is scaled by a per-layer Parameter beside the op (run at
layer 2), f32, at the test's small sizes
and at block_sparse_attention's (head dim 128, G 8, blocks of 16, 512
blocks). --run loads each staged flow on the GPU (stage kernels from
convert-vortex-to-gpu, the registered torch functions on the device
tensors between them) and checks, per flow: the cache step's centroids
against torch (rtol 1e-5), the selection against eager mode on the same
GPU tensors, exactly, and against the float64 scores' top-k, as sets per
row; at head dim 128, decode (the staged indexer, then the attend kernels
over its selection) against float64 attention over the selection
(testing.attention's tolerances, rtol = atol = 2e-5). Exit 0 when every
check passes, 1 otherwise, 2 when nothing was
checked.
"""

import os
import time
import sys

import numpy as np
import torch

import gpu_check_cli  # bench/

import vortex
from vortex.testing import attention as attention_check
from vortex.cache import Mean as CMean
from vortex.flow import vFlow
from vortex.abs import Parameter
from vortex.indexer import Add, GeMM, Mean, Multiply, topK
from vortex.semantics import eager


def row_zscore(s, *, layout, eps=1e-6):
    x, r, v = s[:, 0, 0], layout.row_of, layout.valid
    zeros = torch.zeros(layout.rows, dtype=x.dtype, device=x.device)
    n = zeros.index_add(0, r[v], torch.ones_like(x)[v]).clamp(min=1)
    mean = zeros.index_add(0, r[v], x[v]) / n
    d = torch.where(v, x - mean[r], 0.0)
    std = (zeros.index_add(0, r[v], (d * d)[v]) / n).sqrt()[r]
    return torch.where(v, d / (std + eps), 0.0)[:, None, None]


vortex.register_op("RowZScore", row_zscore,
                   shape_rule=lambda s, **_: (s.d0, s.d1))
vortex.register_op("QScale", lambda x, *, layout, scale: x * scale,
                   shape_rule=lambda x, scale: (x.d0, x.d1))


class Normalised(vFlow):
    def __init__(self):
        super().__init__()
        self.mean, self.gemm, self.out = Mean(dim=1), GeMM(), topK()
        self.reduction = CMean(dim=1)
        self.norm = vortex.indexer.custom("RowZScore")(eps=1e-6)

    def score(self, q, cache, ctx):
        return self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        self.out(self.norm(self.score(q, cache, ctx), ctx=ctx), o, ctx=ctx)

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim)}


class TwoCalls(Normalised):
    def __init__(self):
        super().__init__()
        self.qs = vortex.indexer.custom("QScale")(scale=-2.0)
        self.add = Add(alpha=1.0, beta=0.25)

    def forward_indexer(self, q, o, cache, ctx):
        # QScale of the mean query (a kernel's value: a GPU stage exports
        # only what its kernels compute, docs/python.md "Custom ops").
        qs = self.qs(self.mean(q, ctx=ctx), ctx=ctx)
        score = self.gemm(qs, cache["centroids"], ctx=ctx)
        mixed = self.add(self.norm(score, ctx=ctx), score, ctx=ctx)
        self.out(mixed, o, ctx=ctx)


class Scaled(Normalised):
    """The mean query times a per-layer weight u (3 rows behind the lookup
    [2, 0, 1]), scored, then z-scored: a Parameter beside the op (at
    FULL's head dim)."""

    def __init__(self):
        super().__init__()
        self.u = Parameter(torch.randn(3, 1, 128, generator=torch.Generator()
                                       .manual_seed(5)), [2, 0, 1])
        self.mul = Multiply()

    def forward_indexer(self, q, o, cache, ctx):
        v = self.mul(self.mean(q, ctx=ctx), self.u, ctx=ctx)
        score = self.gemm(v, cache["centroids"], ctx=ctx)
        self.out(self.norm(score, ctx=ctx), o, ctx=ctx)


SMALL = dict(block_size=16, page_size=16, head_dim=8, group_size=2,
             reserved_bos=1, reserved_eos=1, topk_val=3, topk_ratio=0.0,
             intermediate_dtype="f32", kv_dtype="f32")
FULL = dict(block_size=16, page_size=16, head_dim=128, group_size=8,
            reserved_bos=1, reserved_eos=2, topk_val=29, topk_ratio=0.0,
            intermediate_dtype="f32", kv_dtype="f32")
CASES = {f"{f.__name__.lower()}_{size}": (f, conf)
         for f in (Normalised, TwoCalls)
         for size, conf in (("small", SMALL), ("full", FULL))}
CASES["scaled_full"] = (Scaled, FULL)
#: The layer a flow with per-layer weights runs (lookup row 1 of u).
LAYER = 2


def build(out, chip):
    for name, (flow, conf) in CASES.items():
        start = time.perf_counter()
        path = vortex.compile(flow, vortex.FlowConfig(**conf), target=chip,
                              out_dir=os.path.join(out, name))
        print(f"built {name}: {path} ({time.perf_counter() - start:.1f} s)")
    return 0


def model(inst, q, k, indptr, indices, layer=None):
    """The float64 score of the flow object `inst` per CSR position (u's
    lookup row for `layer` scales the mean query of Scaled)."""
    q64, k64 = q.double().cpu().numpy(), k.double().cpu().numpy()
    ip, ids = indptr.tolist(), indices.long().cpu().numpy()
    two = isinstance(inst, TwoCalls)
    u = (inst.u.data[inst.u.lookup[layer], 0].double().numpy()
         if isinstance(inst, Scaled) else 1.0)
    out = np.zeros(len(ids))
    for row in range(len(ip) - 1):
        lo, hi = ip[row], ip[row + 1]
        if hi == lo:
            continue
        qr = q64[row] * (-2.0 if two else 1.0)
        raw = k64[ids[lo:hi]].mean(axis=1) @ (qr.mean(axis=0) * u)
        z = (raw - raw.mean()) / (raw.std() + 1e-6)
        out[lo:hi] = z + 0.25 * raw if two else z
    return out


def topk_sets(score, indptr, indices, conf):
    ip, ids = indptr.tolist(), indices.tolist()
    bos, eos, k = conf["reserved_bos"], conf["reserved_eos"], conf["topk_val"]
    sets = []
    for row in range(len(ip) - 1):
        lo, hi = ip[row], ip[row + 1]
        row_ids = ids[lo:hi]
        if hi - lo <= bos + k + eos:
            sets.append(set(row_ids))
            continue
        mid = np.argsort(-score[lo + bos:hi - eos], kind="stable")[:k]
        sets.append(set(row_ids[:bos]) | set(row_ids[hi - lo - eos:]) |
                    {row_ids[bos + i] for i in mid})
    return sets


def run(out):
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    report = gpu_check_cli.Report()

    for name, (flow, conf) in CASES.items():
        found = [f for f in os.listdir(os.path.join(out, name))
                 if f.endswith(".staged.json")] \
            if os.path.isdir(os.path.join(out, name)) else []
        path = os.path.join(out, name, found[0] if found else "?")
        if not found:
            report(False, f"{name}: {path} not built")
            continue
        inst = flow()
        params = {"u": inst.u} if flow is Scaled else None
        layer = LAYER if params else None
        staged = vortex.load(path, device=0 if cuda else None, params=params)
        g = torch.Generator().manual_seed(3)
        lengths = [0, 2, 5, 9, 14, 40, 64, 3] if "small" in name else \
            [512, 300, 77, 1, 120]
        nb, D, G = sum(lengths), conf["head_dim"], conf["group_size"]
        k = torch.randn(nb, conf["block_size"], D, generator=g)
        q = torch.randn(len(lengths), G, D, generator=g)
        indptr = torch.tensor([0] + np.cumsum(lengths).tolist(),
                              dtype=torch.int32)
        indices = torch.randperm(nb, generator=g).to(torch.int32)
        cache = {"k": k.to(dev), "v": torch.zeros_like(k, device=dev),
                 "centroids": torch.zeros(nb, 1, D, device=dev)}
        staged.cache_step(cache, indices.to(dev), layer=layer)
        want_c = k.mean(1, keepdim=True)
        report(torch.allclose(cache["centroids"].cpu(), want_c, rtol=1e-5,
                              atol=1e-5),
               f"{name} on {dev.type}: cache step == torch (rtol 1e-5)")
        sp, si = staged.indexer(q.to(dev), cache, indptr.to(dev),
                                indices.to(dev), layer=layer)
        sp, si = sp.cpu(), si.cpu()
        ecache = {n: t.clone() for n, t in cache.items()}
        _, ep, ei = eager.indexer(inst, q.to(dev), ecache, indptr.to(dev),
                                  indices.to(dev), conf, layer=layer)
        ep, ei = ep.cpu(), ei.cpu()
        report(torch.equal(sp, ep.to(sp.dtype)) and
               torch.equal(si, ei[:int(ep[-1])].to(si.dtype)),
               f"{name} on {dev.type}: selection == eager mode, exactly")
        kept = [set(si[int(sp[r]):int(sp[r + 1])].tolist())
                for r in range(len(lengths))]
        want = topk_sets(model(inst, q, k, indptr, indices, layer), indptr,
                         indices, conf)
        report(kept == want, f"{name} on {dev.type}: selection == the "
               "float64 scores' top-k, as sets per row")
        if "attend" not in staged.stages[-1].manifest.steps:
            continue    # head dim 8: below the GPU attend kernels' 64
        last = torch.randint(1, conf["block_size"] + 1, (len(lengths),),
                             generator=g, dtype=torch.int32)
        cache["v"] = torch.randn(k.shape, generator=g).to(dev)
        o, lse, dp, di = staged.decode(q.to(dev), cache, indptr.to(dev),
                                       indices.to(dev), last.to(dev),
                                       layer=layer)
        dp, di = dp.cpu(), di.cpu()
        try:
            attention_check.check(o.cpu(), lse.cpu(), q.numpy(), k.numpy(),
                                    cache["v"].cpu().numpy(), dp.numpy(),
                                    di.numpy(), last.numpy(), G, what=name)
            ok, detail = torch.equal(dp, sp) and torch.equal(di, si), ""
        except AssertionError as err:
            ok, detail = False, str(err)[:300]
        report(ok, f"{name} on {dev.type}: decode = the indexer's selection, "
               "then float64 attention over it (rtol = atol = 2e-5)", detail)
    return report.summary()


if __name__ == "__main__":
    sys.exit(gpu_check_cli.main(__doc__, build, run))
