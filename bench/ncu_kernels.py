#!/usr/bin/env python3
"""One cache step and one indexer step of each given flow, for Nsight
Compute (docs/benchmarks.md, "Profiles").

    ncu --csv --section SpeedOfLight --section Occupancy \\
        --section LaunchStats --section ComputeWorkloadAnalysis \\
        python3 bench/ncu_kernels.py MANIFEST... [--batch 64]

Each step runs once after one warm-up run of both steps (skip the warm-up
launches with ncu's --launch-skip, which this script prints). With
--attend, each round also runs the attend step over the selection, the
attend step over the dense CSR (all n blocks a row) and the whole decode
step (indexer + attend), for flows built with the attend step. The problem is
the benchmark's: rows = batch x --heads, every row --blocks blocks of a
random pool (bench_torch_ops.indexer_problem).
"""

from __future__ import annotations

import argparse
import sys


import torch

import vortex
from vortex.runtime.manifest import Manifest
from bench_torch_ops import indexer_problem


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifests", nargs="+")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=2048)
    ap.add_argument("--attend", action="store_true",
                    help="also attend (sparse, dense) and decode")
    args = ap.parse_args()
    R, n = args.batch * args.heads, args.blocks
    for path in args.manifests:
        m = Manifest.from_file(path)
        flow = vortex.load(path)
        cache, q, ip, ix, sp, si = indexer_problem(m, R, n)
        launches = len(m.kernels("cache")) + len(m.kernels("indexer"))
        if args.attend:
            bs = int(m.config["block_size"])
            last = torch.full((R,), bs, dtype=torch.int32, device=q.device)
            launches += 2 * len(m.kernels("attend")) + len(
                m.kernels("indexer")) + len(m.kernels("attend"))
        print(f"{m.flow}: rows={R} n={n}; warm-up launches {launches}",
              flush=True)
        for _ in range(2):  # warm-up, then the profiled steps
            flow.cache_step(cache, ix[:R * 64])
            flow.indexer(q, cache, ip, ix, sp, si)
            if args.attend:
                flow.attend(q, cache, sp, si, last)
                flow.attend(q, cache, ip, ix, last)
                flow.decode(q, cache, ip, ix, last, sp, si)
        torch.cuda.synchronize()
        del cache, q, ip, ix, sp, si
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
