#!/usr/bin/env python3
"""Cache-step time of compiled flows, bf16 against fp8 k (docs/benchmarks.md,
"fp8 KV"): the cache kernel reads every completed block's k, so its floor
is the k bytes over the copy bandwidth.

    python3 bench/bench_cache.py MANIFEST... [--blocks 65536]

Each manifest's cache step over --blocks completed blocks (random ids of a
pool twice that size), captured in a CUDA graph, L2 flushed before each
replay; median of --reps CUDA-event timings.
"""

from __future__ import annotations

import argparse
import statistics
import sys


import torch

import vortex
from vortex.runtime.manifest import DTYPES, Manifest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifests", nargs="+")
    ap.add_argument("--blocks", type=int, default=65536)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    x = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    y = torch.empty_like(x)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
        enable_timing=True)
    s.record(); y.copy_(x); e.record(); e.synchronize()
    s.record(); y.copy_(x); e.record(); e.synchronize()
    bw = 2 * x.numel() / (s.elapsed_time(e) * 1e-3)
    del x, y
    print(f"device: {torch.cuda.get_device_name()}; copy bandwidth "
          f"{bw / 1e9:.0f} GB/s; {args.blocks} completed blocks")
    print("| flow | k dtype | cache step µs | k bytes floor µs | step / floor |")
    print("|---|---|---|---|---|")
    for path in args.manifests:
        m = Manifest.from_file(path)
        flow = vortex.load(path)
        nb = 2 * args.blocks
        cache = {n: torch.randn(shape, device=dev).to(
                     getattr(torch, DTYPES[dt][0]))
                 for n, (shape, dt) in m.cache_shapes(nb).items()}
        ids = torch.randperm(nb, device=dev)[:args.blocks].to(torch.int32)
        flow.cache_step(cache, ids)
        g = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            flow.cache_step(cache, ids)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(g):
            flow.cache_step(cache, ids)
        times = []
        for _ in range(args.reps):
            flush.fill_(1)
            s.record(); g.replay(); e.record(); e.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        us = statistics.median(times)
        k = m.tensors["k"]
        kbytes = args.blocks * k.inner_numel() * k.itemsize
        floor = kbytes / bw * 1e6
        print(f"| {m.flow} | {k.dtype} | {us:.1f} | {floor:.1f} | "
              f"{us / floor:.2f} |", flush=True)
        del cache, g
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
