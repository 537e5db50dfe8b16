#!/usr/bin/env python3
"""Where the host time of an eager step goes (docs/benchmarks.md).

    python3 bench/host_cost_probe.py --manifest M.json

Per call, median of 10 bursts of --calls calls (GPU work queued, a sync
between bursts only), for one flow at B = 1 (8 rows of 2048 blocks):
a Python function doing nothing with the same arguments; the cache op with
no block (the dispatcher, the plan-cache lookup, no launch); the cache op
with one block (one launch); the indexer op called directly (two
launches); `flow.indexer` (the public method); torch's `x.add_(y)` (one
aten launch) as a yardstick.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


import torch

import vortex
from bench_torch_ops import indexer_problem


def per_call(fn, calls: int, bursts: int = 10) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(bursts):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) * 1e6 / calls)
        torch.cuda.synchronize()
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=2048)
    args = ap.parse_args()
    flow = vortex.load(args.manifest)
    m = flow.manifest
    R, n = args.rows, args.blocks
    dev = torch.device("cuda")
    cache, q, ip, ix, sp, si = indexer_problem(m, R, n)
    names = m.cache_names()
    iargs = [q] + [cache[c] for c in names] + [ip, ix, sp, si]
    none = torch.empty(0, dtype=torch.int32, device=dev)
    one = ix[:1].clone()
    cargs0 = [cache[c] for c in names] + [none]
    cargs1 = [cache[c] for c in names] + [one]
    x = torch.zeros(1024, device=dev)
    y = torch.ones(1024, device=dev)

    def noop(q, cache, ip, ix, sp, si):
        return None
    iop, cop = flow.indexer_op, flow.cache_op
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; "
          f"CUDA impl {flow._indexer.cuda_impl}; rows {R} x {n} blocks")
    rows = [
        ("python no-op function", lambda: noop(q, cache, ip, ix, sp, si)),
        ("x.add_(y) (aten, 1 launch)", lambda: x.add_(y)),
        ("cache op, 0 blocks (no launch)", lambda: cop(*cargs0)),
        ("cache op, 1 block (1 launch)", lambda: cop(*cargs1)),
        ("indexer OpOverload(*args) (2 launches)", lambda: iop(*iargs)),
        ("indexer OpOverload._op(*args)", lambda: iop._op(*iargs)),
        ("flow.indexer(...) (2 launches)",
         lambda: flow.indexer(q, cache, ip, ix, sp, si)),
    ]
    for label, fn in rows:
        print(f"  {label:40s} {per_call(fn, args.calls):7.2f} us/call")
    # What the Autograd key costs: the same calls with a fallthrough kernel
    # registered for AutogradCUDA (not what vortex registers).
    lib = torch.library.Library("vortex", "IMPL")
    for op in (flow._indexer, flow._cache):
        lib.impl(op.name, torch.library.fallthrough_kernel, "AutogradCUDA")
    for label, fn in rows[2:]:
        print(f"  {label + ' [autograd fallthrough]':40s} "
              f"{per_call(fn, args.calls):7.2f} us/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
