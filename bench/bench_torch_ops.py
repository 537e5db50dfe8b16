#!/usr/bin/env python3
"""Host and GPU cost of one indexer step through the torch op
(docs/benchmarks.md, "Torch ops").

    python3 bench/bench_torch_ops.py --artifacts DIR \
        [--flows block_sparse_attention_k64_g8] [--batch 1 64]

For each manifest and batch size B (rows = B x --heads, every row --blocks
blocks, all rows over the budget), in one process on the same data:

  eager op         flow.indexer(...) with caller-owned outputs (the
                   SGLang form): torch.ops.vortex.<op> -> native launcher
  graph replay     the same call captured in a CUDA graph, g.replay()
  compile          torch.compile(fullgraph=True) of a function calling it
  compile+graphs   torch.compile(mode="reduce-overhead"), buffers static
  triton           a Triton score kernel written the vortex_torch way
                   (block_sparse: one program per (row, chunk of blocks),
                   mean of q over the group, dot with the centroid): the
                   launch of a comparable kernel, not a whole step

host us: wall time of the Python call on the CPU, GPU work queued
asynchronously: 10 bursts of --calls back-to-back calls, synchronizing
between bursts only; the median burst divided by --calls.
GPU us: CUDA events around one call, after an L2 flush (a 256 MiB write),
median of --reps.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional


import torch

import vortex
from vortex.runtime import native
from vortex.runtime.manifest import DTYPES, Manifest

_FLUSH = None


def flush_l2() -> None:
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    _FLUSH.fill_(1)


def gpu_us(fn: Callable[[], None], reps: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        flush_l2()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


_SPREAD: Dict[str, tuple] = {}


def host_us(fn: Callable[[], None], calls: int, bursts: int = 10) -> float:
    """Median over bursts of the per-call host time; the bursts' min and
    max are kept in _SPREAD for the table."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(bursts):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) * 1e6 / calls)
        torch.cuda.synchronize()
    med = statistics.median(per)
    _SPREAD["last"] = (min(per), max(per))
    return med


def triton_score(rows: int, n: int, G: int, D: int):
    """A vortex_torch-style Triton score kernel for block_sparse: returns a
    launcher fn(q, centroids, indptr, indices, out)."""
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(q_ptr, c_ptr, indptr_ptr, idx_ptr, out_ptr,
               G: tl.constexpr, D: tl.constexpr, BLOCKS: tl.constexpr):
        row = tl.program_id(0)
        chunk = tl.program_id(1)
        start = tl.load(indptr_ptr + row)
        end = tl.load(indptr_ptr + row + 1)
        g = tl.arange(0, G)
        d = tl.arange(0, D)
        q = tl.load(q_ptr + row * G * D + g[:, None] * D + d[None, :])
        qm = tl.sum(q.to(tl.float32), axis=0) / G
        pos = start + chunk * BLOCKS + tl.arange(0, BLOCKS)
        valid = pos < end
        ids = tl.load(idx_ptr + pos, mask=valid, other=0)
        c = tl.load(c_ptr + ids[:, None] * D + d[None, :], mask=valid[:, None],
                    other=0.0)
        s = tl.sum(c.to(tl.float32) * qm[None, :], axis=1)
        tl.store(out_ptr + pos, s, mask=valid)

    BLOCKS = 64
    grid = (rows, triton.cdiv(n, BLOCKS))

    def launch(q, c, indptr, indices, out):
        kernel[grid](q, c, indptr, indices, out, G=G, D=D, BLOCKS=BLOCKS)
    return launch


def indexer_problem(m: Manifest, R: int, n: int, seed: int = 0):
    """Inputs of one indexer step on the GPU: R rows of n blocks each over
    a pool of R * n blocks in random order, random cache and q in the
    manifest's dtypes, zeroed outputs. Returns (cache, q, dense_kv_indptr,
    dense_kv_indices, sparse_kv_indptr, sparse_kv_indices); the benchmarks
    and the host-cost probes share it."""
    cfg = m.config
    G, D = int(cfg["group_size"]), int(cfg["head_dim"])
    total = R * n
    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    cache = {}
    for name, (shape, dt) in m.cache_shapes(total).items():
        cache[name] = torch.randn(shape, generator=g, device=dev).to(
            getattr(torch, DTYPES[dt][0]))
    q = torch.randn((R, G, D), generator=g, device=dev).to(
        getattr(torch, DTYPES[m.tensors["q"].dtype][0]))
    ip = (torch.arange(R + 1, device=dev) * n).to(torch.int32)
    ix = torch.randperm(total, generator=g, device=dev).to(torch.int32)
    sp = torch.zeros(R + 1, dtype=torch.int32, device=dev)
    si = torch.zeros(total, dtype=torch.int32, device=dev)
    return cache, q, ip, ix, sp, si


def bench(path: str, B: int, args) -> List[Dict[str, object]]:
    m = Manifest.from_file(path)
    flow = vortex.load(path)
    cfg = m.config
    G, D = int(cfg["group_size"]), int(cfg["head_dim"])
    R, n = B * args.heads, args.blocks
    total = R * n
    cache, q, ip, ix, sp, si = indexer_problem(m, R, n)

    def eager():
        flow.indexer(q, cache, ip, ix, sp, si)

    out = []

    def row(label, host, gpu, note=""):
        lo, hi = _SPREAD.get("last", (host, host))
        r = dict(flow=m.flow, B=B, rows=R, how=label, host=host, gpu=gpu,
                 note=note, lo=lo, hi=hi)
        out.append(r)
        print(f"  {m.flow} B={B} {label:16s} host {host:7.2f} us   GPU "
              f"{gpu:8.2f} us {note}")

    eager()
    torch.cuda.synchronize()
    ref = (sp.clone(), si.clone())
    row("eager op", host_us(eager, args.calls), gpu_us(eager, args.reps),
        f"(CUDA impl: {flow._indexer.cuda_impl})")

    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        eager()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(graph):
        eager()
    row("graph replay", host_us(graph.replay, args.calls),
        gpu_us(graph.replay, args.reps))

    def fn(q, cache, ip, ix, sp, si):
        flow.indexer(q, cache, ip, ix, sp, si)
    torch._dynamo.reset()
    cf = torch.compile(fn, fullgraph=True)
    row("compile", host_us(lambda: cf(q, cache, ip, ix, sp, si), args.calls),
        gpu_us(lambda: cf(q, cache, ip, ix, sp, si), args.reps))
    for t in list(cache.values()) + [q, ip, ix, sp, si]:
        torch._dynamo.mark_static_address(t)
    torch._dynamo.reset()
    from torch._dynamo.utils import counters
    counters.clear()
    cg = torch.compile(fn, mode="reduce-overhead", fullgraph=True)
    row("compile+graphs", host_us(lambda: cg(q, cache, ip, ix, sp, si),
                                  args.calls),
        gpu_us(lambda: cg(q, cache, ip, ix, sp, si), args.reps),
        f"(cudagraph_skips {counters['inductor'].get('cudagraph_skips', 0)})")
    torch.cuda.synchronize()
    same = torch.equal(sp, ref[0]) and torch.equal(si, ref[1])
    print(f"  results of every contender equal to the first eager call: "
          f"{same}")

    if "centroids" in cache and args.triton:
        try:
            launch = triton_score(R, n, G, D)
            score = torch.empty(total, dtype=torch.float32, device=q.device)

            def tri():
                launch(q, cache["centroids"], ip, ix, score)
            row("triton score", host_us(tri, args.calls),
                gpu_us(tri, args.reps), "(score kernel only)")
        except Exception as err:  # noqa: BLE001
            print(f"  triton: {err}")
    if native.load(build=False) is not None:
        print(f"  plan cache: {native.load(build=False).plan_cache_stats(flow._indexer.qualname)}")
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--flows", nargs="*",
                    default=["block_sparse_attention_k64_g8",
                             "gqa_quest_sparse_attention_k64_g8"])
    ap.add_argument("--batch", nargs="*", type=int, default=[1, 64])
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=2048)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--no-triton", dest="triton", action="store_false")
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; "
          f"native launcher: {'built' if native.load() else native.unavailable_reason()}")
    print(f"command: {' '.join(sys.argv)}")
    rows = []
    for path in sorted(glob.glob(os.path.join(args.artifacts,
                                              "*.manifest.json"))):
        if Manifest.from_file(path).flow not in args.flows:
            continue
        for B in args.batch:
            rows += bench(path, B, args)
            torch.cuda.empty_cache()
    lines = ["| flow | B | rows | how | host µs/step | host µs, bursts min-max "
             "| GPU µs/step | note |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['flow']} | {r['B']} | {r['rows']} | {r['how']} | "
                     f"{r['host']:.2f} | {r['lo']:.1f}-{r['hi']:.1f} | "
                     f"{r['gpu']:.2f} | {r['note']} |")
    md = "\n".join(lines) + "\n"
    print("\n" + md)
    out = args.md or (os.path.join(os.environ["OUT"], "bench_torch_ops.md")
                      if os.environ.get("OUT") else None)
    if out:
        with open(out, "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
