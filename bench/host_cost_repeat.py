#!/usr/bin/env python3
"""The eager indexer step's host cost, measured repeatedly (issue 7's
target: <= 10 us per step at B = 1 and B = 64).

    python3 bench/host_cost_repeat.py --artifacts DIR

For each flow and B (8 KV heads, rows of 2048 blocks, caller-owned
outputs), `--runs` interleaved measurements, each the median burst of 10
bursts of 100 back-to-back `flow.indexer` calls with the GPU work queued
(bench_torch_ops.host_us); prints every run and the median over runs. The
machine's own yardstick, one aten kernel launch (`x.add_(y)`), is measured
the same way in every run.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys


import torch

import vortex
from bench_torch_ops import host_us, indexer_problem
from vortex.runtime.manifest import Manifest


def setup(path: str, B: int, heads: int, n: int):
    m = Manifest.from_file(path)
    flow = vortex.load(path)
    cache, q, ip, ix, sp, si = indexer_problem(m, B * heads, n)
    return lambda: flow.indexer(q, cache, ip, ix, sp, si)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--flows", nargs="*",
                    default=["block_sparse_attention_k64_g8",
                             "gqa_quest_sparse_attention_k64_g8"])
    ap.add_argument("--batch", nargs="*", type=int, default=[1, 64])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    cases = {}
    for path in sorted(glob.glob(os.path.join(args.artifacts,
                                              "*.manifest.json"))):
        name = Manifest.from_file(path).flow
        if name in args.flows:
            for B in args.batch:
                cases[(name, B)] = setup(path, B, 8, 2048)
    x = torch.zeros(1024, device="cuda")
    y = torch.ones(1024, device="cuda")
    results = {k: [] for k in cases}
    yard = []
    for run in range(args.runs):
        yard.append(host_us(lambda: x.add_(y), 100))
        for k, fn in cases.items():
            results[k].append(host_us(fn, 100))
    print("| flow | B | host µs per eager step, each run | median of runs |")
    print("|---|---|---|---|")
    for (name, B), vals in results.items():
        print(f"| {name} | {B} | {', '.join(f'{v:.2f}' for v in vals)} | "
              f"{statistics.median(vals):.2f} |")
    print(f"| yardstick x.add_(y) | - | {', '.join(f'{v:.2f}' for v in yard)}"
          f" | {statistics.median(yard):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
