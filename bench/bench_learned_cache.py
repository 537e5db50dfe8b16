#!/usr/bin/env python3
"""Cache-step time of the shipped learned_factorized_block_sparse_attention
(`LearnedDescriptor` at H 8, m 2, r 8, blocks of 16, head dim 128, f32:
the standalone vortex.learned_descriptor, a kernel of its own), against
torch computing the same descriptors.

    # here (MLIR): python3 bench/learned_gpu_check.py --build DIR
    python3 bench/bench_learned_cache.py DIR [--blocks 512 8192]

Both contenders write every completed block's `[H*m, r]` descriptor into
the same pool: ours is `flow.cache_step`; torch's is the formula as one
einsum (`nsd,hsj,hdr->nhjr`, cuBLAS) on the gathered blocks and an
`index_copy_`. Each is captured in a CUDA graph and replayed with L2
flushed before it (median of --reps CUDA-event timings), and timed by
`triton.testing.do_bench` of one replay. The floor is the blocks' k bytes
over the measured copy bandwidth.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_indexer import copy_bandwidth, graph_of  # noqa: E402
from learned_gpu_check import FH, FM, FR, FULL, full_flow  # noqa: E402

import vortex  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("artifacts")
    ap.add_argument("--blocks", type=int, nargs="+", default=[512, 8192])
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    import triton.testing
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    s, e = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    bw = copy_bandwidth()
    flow, (wt, wk, _) = full_flow()
    compiled = vortex.load(
        os.path.join(args.artifacts, "learned_factorized.manifest.json"),
        device=0, params=flow.parameters())
    wt_t = torch.from_numpy(wt).float().to(dev)          # [H, bs, m]
    wk_t = torch.from_numpy(wk).float().to(dev)          # [H, d, r]
    bs, d = FULL.block_size, FULL.head_dim
    print(f"device: {torch.cuda.get_device_name()}; copy bandwidth "
          f"{bw / 1e9:.0f} GB/s")
    print("| blocks | ours µs (do_bench) | torch einsum µs (do_bench) | "
          "k bytes floor µs | ours / floor | max abs diff |")
    print("|---|---|---|---|---|---|")
    for n in args.blocks:
        cache = compiled.allocate_cache(2 * n)
        cache["k"].copy_(torch.randn_like(cache["k"]))
        ids = torch.randperm(2 * n, device=dev)[:n].to(torch.int32)
        ref = torch.zeros_like(cache["descriptors"])
        idl = ids.long()

        def ours():
            compiled.cache_step(cache, ids, layer=0)

        def peer():
            g = torch.einsum("nsd,hsj,hdr->nhjr", cache["k"][idl], wt_t,
                             wk_t)
            ref.index_copy_(0, idl, g.reshape(n, FH * FM, FR))

        row = []
        for fn in (ours, peer):
            g = graph_of(lambda _: fn(), 1, 1)
            if g is None:
                raise RuntimeError(f"{fn.__name__}: CUDA graph capture "
                                   "failed")
            times = []
            for _ in range(args.reps):
                flush.fill_(1)
                s.record(); g.replay(); e.record(); e.synchronize()
                times.append(s.elapsed_time(e) * 1e3)
            db = triton.testing.do_bench(g.replay, rep=40) * 1e3
            row.append((statistics.median(times), db))
        diff = (cache["descriptors"][idl] - ref[idl]).abs().max().item()
        floor = n * bs * d * cache["k"].element_size() / bw * 1e6
        (o, od), (p, pd) = row
        print(f"| {n} | {o:.1f} ({od:.1f}) | {p:.1f} ({pd:.1f}) | "
              f"{floor:.1f} | {o / floor:.1f} | {diff:.2e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
