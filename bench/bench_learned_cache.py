#!/usr/bin/env python3
"""Cache-step time of the learned descriptor (`LearnedDescriptor`: the
standalone vortex.learned_descriptor, a kernel of its own; docs/gpu.md,
"Standalone kernels"), against torch computing the same descriptors, for
three flows of bench/learned_gpu_check.py (f32):

* `learned_factorized`: the shipped learned_factorized_block_sparse_attention
  (H 8, m 2, r 8, blocks of 16, head dim 128);
* `learned_fmla`: learned_factorized_block_sparse_mla at GLM's shape
  (H 20, latent 576, blocks of 32) with m 2, r 8 (layer 0);
* `learned_fmla_identity`: the same flow's identity weights (m 1, r 576:
  its projection [11520, 576] streamed).

    # here (MLIR): python3 bench/learned_gpu_check.py --build DIR
    python3 bench/bench_learned_cache.py DIR [--blocks 64 512 8192]

Both contenders write every completed block's `[H*m, r]` descriptor into
the same pool: ours is `flow.cache_step`; torch's is the formula as one
einsum (`nsd,hsj,hdr->nhjr`, cuBLAS) on the gathered blocks and an
`index_copy_`. Each is captured in a CUDA graph and replayed with L2
flushed before it (median of --reps CUDA-event timings), and timed by
`triton.testing.do_bench` of one replay. The floor is the bytes read once
(the blocks and the two weights) over the measured copy bandwidth; the
identity case is compute-bound (H r d multiply-adds a landmark row).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_indexer import copy_bandwidth, graph_of  # noqa: E402
from learned_gpu_check import fmla_flows, full_flow  # noqa: E402

import vortex  # noqa: E402


def cases():
    """(name, flow, pool, layer, (Wt [H, bs, m], Wk [H, d, r]) float64)."""
    flow, (wt, wk, _) = full_flow()
    yield "learned_factorized", flow, "k", None, (wt, wk)
    for name, (flow, rows) in fmla_flows().items():
        # rows[i]: the weights of layer i (the identity has one, no lookup).
        layer = None if name.endswith("identity") else 0
        yield name, flow, "latent", layer, (rows[0][0], rows[0][1])


def time_graph(fn, flush, reps):
    import triton.testing
    s, e = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    g = graph_of(lambda _: fn(), 1, 1)
    if g is None:
        raise RuntimeError(f"{fn.__name__}: CUDA graph capture failed")
    times = []
    for _ in range(reps):
        flush.fill_(1)
        s.record(); g.replay(); e.record(); e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times), \
        triton.testing.do_bench(g.replay, rep=40) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("artifacts")
    ap.add_argument("--blocks", type=int, nargs="+", default=[64, 512, 8192])
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    bw = copy_bandwidth()
    print(f"device: {torch.cuda.get_device_name()}; copy bandwidth "
          f"{bw / 1e9:.0f} GB/s")
    print("| flow | blocks | ours µs (do_bench) | torch einsum µs (do_bench) "
          "| bytes floor µs | ours / floor | ours / torch | max abs diff |")
    print("|---|---|---|---|---|---|---|---|")
    for name, flow, pool, layer, (wt, wk) in cases():
        compiled = vortex.load(
            os.path.join(args.artifacts, f"{name}.manifest.json"), device=0,
            params=flow.parameters())
        wt_t = torch.from_numpy(wt).float().to(dev)      # [H, bs, m]
        wk_t = torch.from_numpy(wk).float().to(dev)      # [H, d, r]
        H, bs, m = wt_t.shape
        d, r = wk_t.shape[1:]
        kw = {} if layer is None else {"layer": layer}
        for n in args.blocks:
            cache = compiled.allocate_cache(2 * n)
            pooled = torch.randn_like(cache["k"])
            if pool == "latent":
                # An MLA flow takes its one pool as "latent" (allocated as k).
                cache = {k: t for k, t in cache.items() if k not in ("k", "v")}
            cache[pool] = pooled
            ids = torch.randperm(2 * n, device=dev)[:n].to(torch.int32)
            ref = torch.zeros_like(cache["descriptors"])
            idl = ids.long()

            def ours():
                compiled.cache_step(cache, ids, **kw)

            def peer():
                g = torch.einsum("nsd,hsj,hdr->nhjr", cache[pool][idl],
                                 wt_t, wk_t)
                ref.index_copy_(0, idl, g.reshape(n, H * m, r))

            (o, od), (p, pd) = (time_graph(fn, flush, args.reps)
                                for fn in (ours, peer))
            diff = (cache["descriptors"][idl] - ref[idl]).abs().max().item()
            size = cache[pool].element_size()
            floor = (n * bs * d + wt_t.numel() + wk_t.numel()) * size / bw
            floor *= 1e6
            print(f"| {name} | {n} | {o:.1f} ({od:.1f}) | {p:.1f} "
                  f"({pd:.1f}) | {floor:.1f} | {o / floor:.1f} | "
                  f"{o / p:.2f} | {diff:.2e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
