"""Cost of the GPU guards (docs/gpu.md "Guards", issue 9): the same flows
compiled with guards (this tree) and without (the commit before them),
timed side by side in one process on the same data.

    python3 bench/bench_guards.py --guarded DIR... --unguarded DIR... \
        [--flows block_sparse_attention_k64_g8 ...] [--batch 1 8 64]

For each flow and batch B (rows = B x 8 heads, 2048 blocks per row, every
row needs selection): the score kernel(s) and the whole indexer step, each
captured in a CUDA graph of K consecutive steps over rotating input sets
(>= 2 x L2 in all, as bench_indexer.py), timed with CUDA events; the
guarded and the unguarded build alternate for --rounds rounds, and the
table gives each one's median over rounds and the ratio guarded /
unguarded. Both builds' selections are compared on set 0 (they must be
identical: the guards never fire on valid input).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

import torch


from bench_indexer import (Sets, copy_bandwidth, graph_of, l2_bytes,
                           run_ours, score_floor_bytes, time_cuda,
                           topk_floor_bytes)
from vortex.semantics import reference as npref
from vortex.runtime import cuda as runtime
from vortex.runtime.manifest import Manifest, budget


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_guards.py")
    ap.add_argument("--guarded", nargs="+", required=True,
                    help="directories searched in order for each flow")
    ap.add_argument("--unguarded", nargs="+", required=True)
    ap.add_argument("--flows", nargs="*",
                    default=["block_sparse_attention_k64_g8",
                             "block_sparse_attention_k64_g5",
                             "gqa_quest_sparse_attention_k64_g8",
                             "running_avg_block_sparse_g8"])
    ap.add_argument("--batch", nargs="*", type=int, default=[1, 8, 64])
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)

    bw = copy_bandwidth()
    torch.cuda.empty_cache()
    l2 = l2_bytes()
    print(f"device: {torch.cuda.get_device_name()}; copy bandwidth "
          f"{bw / 1e9:.0f} GB/s; L2 {l2 / 2 ** 20:.0f} MiB; torch "
          f"{torch.__version__}")
    print(f"command: {' '.join(sys.argv)}")
    lines = ["| flow | B | score unguarded | score guarded | ratio | "
             "step unguarded | step guarded | ratio |",
             "|---|---|---|---|---|---|---|---|"]
    worst = 0.0
    for name in args.flows:
        def find(dirs):
            for d in dirs:
                p = os.path.join(d, f"{name}.manifest.json")
                if os.path.isfile(p):
                    return p
            return ""
        paths = {"off": find(args.unguarded), "on": find(args.guarded)}
        if not all(paths.values()):
            print(f"{name}: missing in one of the builds, skipped")
            continue
        m = Manifest.from_file(paths["on"])
        if m.status_tensor() is None:
            print(f"{name}: the --guarded build has no status buffer")
            return 1
        flows = {k: runtime.load(p) for k, p in paths.items()}
        cfg = npref.Config.from_dict(m.config)
        need = set(m.used_tensors(m.kernels("indexer")))
        for B in args.batch:
            R = B * args.heads
            n = args.blocks
            kept = budget(m.config, n)
            P = R * (n - cfg.bos - cfg.eos)
            set_bytes = (score_floor_bytes(m, flows["on"].score_kernels(),
                                           R, P) +
                         topk_floor_bytes(R, P, R * kept))
            n_sets = max(2, min(64, math.ceil(2 * l2 / max(set_bytes, 1))))
            K = max(16, n_sets)
            S = Sets(m, flows["on"], cfg, R, n, n_sets, need, "random")
            # Same selection from both builds on valid input; no flag.
            # (From the same cache: a flow may save state in the step.)
            picks = {}
            base = S.cache
            for k, f in flows.items():
                S.cache = {n: t.clone() for n, t in base.items()}
                run_ours(f, S, 0)
                torch.cuda.synchronize()
                picks[k] = (S.sets[0]["sp"].clone(), S.sets[0]["si"].clone())
            S.cache = base
            same = all(torch.equal(a, b) for a, b in
                       zip(picks["on"], picks["off"]))
            status = flows["on"].read_status()
            print(f"  {name} B={B}: selections identical: {same}; status "
                  f"after valid input: {status}")
            if not same or any(status or []):
                return 1
            times = {(k, part): [] for k in flows
                     for part in ("score", "step")}
            graphs = {}
            for k, f in flows.items():
                for part, kern in (("score", f.score_kernels()),
                                   ("step", None)):
                    graphs[(k, part)] = graph_of(
                        lambda i, f=f, kern=kern, S=S: run_ours(f, S, i,
                                                                kern),
                        K, n_sets)
            for _ in range(args.rounds):
                for key, g in graphs.items():
                    ms = time_cuda(g.replay, args.reps, 3)
                    times[key].append(ms * 1e3 / K)
            med = {key: statistics.median(v) for key, v in times.items()}
            rs = med[("on", "score")] / med[("off", "score")]
            rt = med[("on", "step")] / med[("off", "step")]
            spread = {key: (min(v), max(v)) for key, v in times.items()}
            worst = max(worst, rs, rt)
            lines.append(
                f"| {name} | {B} | {med[('off', 'score')]:.1f} | "
                f"{med[('on', 'score')]:.1f} | {rs:.3f} | "
                f"{med[('off', 'step')]:.1f} | {med[('on', 'step')]:.1f} | "
                f"{rt:.3f} |")
            print(f"    us per step, median of {args.rounds} rounds "
                  f"(min..max): " + ", ".join(
                      f"{k}/{p} {med[(k, p)]:.2f} ({spread[(k, p)][0]:.2f}.."
                      f"{spread[(k, p)][1]:.2f})" for k, p in med))
            del graphs
            torch.cuda.empty_cache()
    print("\n" + "\n".join(lines))
    print(f"\nlargest ratio guarded / unguarded: {worst:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
