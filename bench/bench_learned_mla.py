"""Indicative step times of the learned MLA flows on the GPU, beside a torch
peer: learned_block_sparse_mla (the streamed GeMM of its [576, 11520]
weight) and learned_factorized_block_sparse_mla (the grouped GeMM of
FactorScore, m 2 r 8 and the identity m 1 r 576).

  # here (MLIR): the artifacts of bench/learned_gpu_check.py --build DIR
  # on the GPU machine:
  cd bench && python3 bench_learned_mla.py DIR

For B = 1, 8 and 64 rows of 512 blocks (GLM's 20 heads, latent 576,
blocks of 32, f32, layer 0 of learned_gpu_check's seeded weights): the
compiled indexer step and the torch peer (eager: q_flat @ W^T or the
per-head u_h = Wq[h]^T q_h, the per-block scores, torch.topk), each the
mean of 20 calls after 3, timed
with CUDA events in one process; no CUDA graph for either side, no L2
flush (indicative, not the method of docs/benchmarks.md). Then the
per-kernel device times from torch.profiler (chained launches overlap,
so a kernel's time includes its wait for the one before it).
Results: docs/measurements/learned-mla-h200.log.
"""

import os
import sys

import torch

import learned_gpu_check as check  # bench/

import vortex  # noqa: E402


def timed(fn) -> float:
    for _ in range(3):
        fn()
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    torch.cuda.synchronize()
    start.record()
    for _ in range(20):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 20 * 1e3


def mla_case(m, W):
    """learned_block_sparse_mla's torch peer: eager q_flat @ W^T, the
    per-block scores, torch.topk."""
    Wd = W[check.MLA_LOOKUP[0]].cuda()

    def peer_for(q, cache, ids, B):
        qf = q.reshape(B, -1)
        cent = cache["centroids"][ids.long(), 0]

        def peer():
            V = qf @ Wd.T
            sc = (V.repeat_interleave(512, 0) * cent).sum(-1).view(B, 512)
            return sc.topk(29, dim=1)
        return peer
    return peer_for


def fmla_case(m, rows):
    """learned_factorized_block_sparse_mla's torch peer: u_h = Wq[h]^T q_h
    (einsum), the descriptors of each row's blocks, max over landmarks,
    sum over heads, torch.topk."""
    wq = torch.from_numpy(rows[0][2]).float().cuda()         # [H, d, r]
    H, _, r = wq.shape

    def peer_for(q, cache, ids, B):
        g = cache["descriptors"][ids.long()]                  # [B*512, H*m, r]

        def peer():
            u = torch.einsum("bhd,hdr->bhr", q, wq)
            gv = g.view(B, 512, H, -1, r)
            sc = torch.einsum("bhr,bnhjr->bnhj", u, gv).amax(-1).sum(-1)
            return sc.topk(29, dim=1)
        return peer
    return peer_for


def main(out: str) -> int:
    flow, W = check.mla_flow()
    cases = [("learned_mla", flow, 0, mla_case, W)]
    for name, (f, rows) in check.fmla_flows().items():
        cases.append((name, f, None if name.endswith("identity") else 0,
                      fmla_case, rows))
    for name, flow, layer, case, weights in cases:
        m = vortex.load(os.path.join(out, f"{name}.manifest.json"),
                        device=0, params=flow.parameters())
        kw = {} if layer is None else {"layer": layer}
        peer_for = case(m, weights)
        for B in (1, 8, 64):
            nb = B * 512 + 8
            cache = {n: t for n, t in m.allocate_cache(nb).items()
                     if n not in ("k", "v")}
            cache["latent"] = torch.randn(nb, 32, 576, device="cuda")
            ids = torch.randperm(nb, device="cuda")[:B * 512].int()
            ip = torch.arange(0, B * 512 + 1, 512, device="cuda").int()
            q = torch.randn(B, 20, 576, device="cuda")
            m.cache_step(cache, ids, **kw)
            peer = peer_for(q, cache, ids, B)
            for what, fn in ((f"{name} indexer step",
                              lambda: m.indexer(q, cache, ip, ids, **kw)),
                             ("torch peer", peer)):
                print(f"TIME B={B}: {what}: {timed(fn):.1f} us (mean of 20, "
                      "events, no graph, no L2 flush)")
            with torch.profiler.profile(
                    activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
                for _ in range(10):
                    m.indexer(q, cache, ip, ids, **kw)
                torch.cuda.synchronize()
            print(f"{name} B={B} (512 blocks a row)")
            for e in p.key_averages():
                print(f"  {e.key[:60]:60s} "
                      f"{e.self_device_time_total / max(e.count, 1):9.1f} us "
                      f"x{e.count}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
