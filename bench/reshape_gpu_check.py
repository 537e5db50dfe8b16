"""GPU check of the padded-reshape copy kernels (a check, not a benchmark;
docs/gpu.md "Kernel structure, and why": standalone kernels).

  # here (MLIR): trace and compile the probe flow for a chip
  python3 bench/reshape_gpu_check.py --build .device-artifacts/reshape
  # on the GPU machine (torch, CUDA, no MLIR)
  python3 bench/reshape_gpu_check.py --run .device-artifacts/reshape

The probe flow (G 5, D 24, blocks of 4, f32) has both kinds of padded
reshape the copy kernel takes: a batched one, q [B, 5, 24] -> [B, 3, 40]
(padded [8, 32] -> [4, 64]), and a ragged one, the per-head scores [S, 1,
5] -> [S, 5, 1] (padded [1, 8] -> [8, 1]). Its score,

    score(p) = max_h <q_h, c_p> + sum(q),   c_p = mean_t k_t,

is saved into the field `probe` and checked against float64 (rtol 1e-4 of
the largest |score|) at every position the step scores, and the selection
against the float64 top-k exactly (random data, no near ties).
Exit 0 when every check passes, 1 otherwise, 2 when nothing was checked.
"""

import os
import sys

import numpy as np
import torch

import gpu_check_cli  # bench/

import vortex  # noqa: E402
from vortex.cache import Mean as CMean  # noqa: E402
from vortex.flow import vFlow  # noqa: E402
from vortex.indexer import (Add, GeMM, Max, Reshape, Save, Sum,  # noqa: E402
                            topK)
from vortex.semantics import reference  # noqa: E402

G, D, BS = 5, 24, 4
CONFIG = vortex.FlowConfig(block_size=BS, page_size=BS, head_dim=D,
                           group_size=G, topk_val=3, topk_ratio=0.0,
                           reserved_bos=1, reserved_eos=1,
                           intermediate_dtype="f32", kv_dtype="f32")


class ReshapeProbe(vFlow):
    """The probe flow of the module docstring."""

    def __init__(self):
        super().__init__()
        self.rq, self.rs = Reshape(-1, 3, 40), Reshape(-1, G, 1)
        self.sum1, self.sum2 = Sum(dim=1), Sum(dim=2)
        self.gemm, self.max, self.add = GeMM(), Max(dim=1), Add()
        self.save, self.out, self.reduction = Save(), topK(), CMean(dim=1)

    def forward_indexer(self, q, o, cache, ctx):
        total = self.sum2(self.sum1(self.rq(q, ctx=ctx), ctx=ctx), ctx=ctx)
        heads = self.gemm(q, cache["c"], ctx=ctx)          # [S, 1, G]
        best = self.max(self.rs(heads, ctx=ctx), ctx=ctx)  # [S, 1, 1]
        score = self.add(best, total, ctx=ctx)
        self.save(score, cache["probe"], ctx=ctx)
        self.out(score, o, ctx=ctx)

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["c"], loc=loc, ctx=ctx)

    def create_cache(self, block_size, head_dim):
        return {"c": (1, head_dim), "probe": (1, 1)}


def build(out, chip):
    path = vortex.compile(ReshapeProbe(), CONFIG, target=chip,
                          name="reshape_probe", out_dir=out)
    print(f"built reshape_probe: {path}")
    return 0


def run(out):
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    compiled = vortex.load(os.path.join(out, "reshape_probe.manifest.json"),
                           device=0 if cuda else None)
    rng = np.random.default_rng(13)
    lengths = (0, 1, 3, 6, 40, 300)
    nb = sum(lengths) + 4
    k = rng.standard_normal((nb, BS, D)).astype(np.float32)
    q = rng.standard_normal((len(lengths), G, D)).astype(np.float32)
    ids = rng.permutation(nb)[:sum(lengths)].astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    cache = compiled.allocate_cache(nb)
    cache["k"].copy_(torch.from_numpy(k).to(dev))
    tids = torch.from_numpy(ids).to(dev)
    compiled.cache_step(cache, tids)
    sp, si = compiled.indexer(torch.from_numpy(q).to(dev), cache,
                              torch.from_numpy(indptr).to(dev), tids)
    c = k.astype(np.float64).mean(axis=1)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    qd = q.astype(np.float64)
    score = (np.einsum("shd,sd->sh", qd[rows], c[ids]).max(axis=1) +
             qd.sum(axis=(1, 2))[rows])
    rcfg = reference.Config.from_dict(dict(
        block_size=BS, head_dim=D, group_size=G, topk_val=CONFIG.topk_val,
        topk_ratio=CONFIG.topk_ratio, reserved_bos=CONFIG.reserved_bos,
        reserved_eos=CONFIG.reserved_eos))
    want_ip, want_ix = reference.topk_select(
        score, reference.Csr(indptr, ids), rcfg)
    report = gpu_check_cli.Report()

    # The saved positions: [0, n - eos) of the rows that need selection.
    saved = [p for r, n in enumerate(lengths) if n > rcfg.budget(n)
             for p in range(indptr[r], indptr[r + 1] - rcfg.eos)]
    got = cache["probe"][tids[saved].long(), 0, 0].double().cpu().numpy()
    err = float(np.abs(got - score[saved]).max())
    report(err <= 1e-4 * np.abs(score[saved]).max(),
           f"reshape_probe on {dev.type}: saved score == float64 "
           f"(rtol 1e-4) at {len(saved)} positions", f"max |err| {err:.2e}")
    sp, si = sp.cpu(), si.cpu()
    report(sp.tolist() == list(want_ip) and
           si[:int(sp[-1])].tolist() == list(want_ix),
           f"reshape_probe on {dev.type}: selection == float64 top-k")
    return report.summary()


if __name__ == "__main__":
    sys.exit(gpu_check_cli.main(__doc__, build, run))
