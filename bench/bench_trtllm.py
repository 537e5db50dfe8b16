"""The trtllm selection on the GPU (TopK(k) + Union) against torch.topk
plus a torch union, in one process, on the same data, both in CUDA graphs.

    python3 bench/bench_trtllm.py \
        .device-artifacts/trtllm/trtllm_block_sparse_attention_g8.manifest.json \
        [--batch 1 8 64] [--heads 8] [--n 2048] [--reps 20]

The flow (test/Python/Inputs/trtllm_flow.py) scores every block twice
(mean-query and per-head-max centroid scores), keeps TopK(32) and TopK(16)
tables and merges them with Union. The peer computes the same two scores
with torch ops, keeps each table with torch.topk and merges them with a
vectorized torch union (sort-based deduplication, first occurrence wins,
the row's last block pinned at the tail). Rows are (request, KV head), n
blocks each. Each step runs K = 16 times per graph replay over rotating
input sets larger than twice the L2, and the median of --reps replays is
reported per step. The selection alone (ours: the step less the score
kernel, whose scratch the selection reads; the peer: topk + union from
precomputed scores) is timed the same way.
Both steps' selections are compared row by row (as sets; random data has
no exact ties, so a differing row can only come from a near-tie that the
two float32 score computations round apart).
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict

import torch

from bench_indexer import (Sets, compare_selection, graph_of,
                           l2_bytes, run_ours, time_cuda)

from vortex.semantics import reference as npref
from vortex.runtime import cuda as runtime
from vortex.runtime.manifest import Manifest

K_STEPS = 16
K_MEAN, K_MAX = 32, 16  # the flow's TopK(k) (test/Python/Inputs/trtllm_flow.py)


def torch_scores(S: Sets, i: int, D: int):
    s = S.sets[i]
    R, n = S.R, S.n
    c = S.cache["centroids"][s["indices"].long()].float().reshape(R, n, D)
    q = s["q"].float()
    mean_score = torch.einsum("rd,rnd->rn", q.mean(1), c)
    max_score = torch.einsum("rgd,rnd->rng", q, c).amax(-1)
    return mean_score, max_score


def torch_select(S: Sets, i: int, scores, bos: int, eos: int) -> None:
    """TopK(k) tables by torch.topk, merged by a vectorized union into the
    set's sparse CSR (every row has n > bos + k + eos blocks)."""
    s = S.sets[i]
    R, n = S.R, S.n
    ids = s["indices"].reshape(R, n)
    tables = []
    for score, k in zip(scores, (K_MEAN, K_MAX)):
        top = torch.topk(score[:, bos:n - eos], k, dim=1).indices + bos
        tables.append(torch.cat([ids[:, :bos], ids.gather(1, top),
                                 ids[:, n - eos:]], 1))
    last = ids[:, -1:]
    cat = torch.cat(tables, 1)
    cat = torch.where(cat == last, torch.full_like(cat, -1), cat)
    # First occurrence of each id in the row: a stable sort by id.
    sid, order = torch.sort(cat, dim=1, stable=True)
    first = torch.ones_like(sid, dtype=torch.bool)
    first[:, 1:] = sid[:, 1:] != sid[:, :-1]
    keep = torch.zeros_like(first).scatter_(1, order, first & (sid >= 0))
    counts = keep.sum(1) + 1
    indptr = torch.zeros(R + 1, dtype=torch.int64, device=cat.device)
    indptr[1:] = torch.cumsum(counts, 0)
    rank = torch.cumsum(keep, 1) - 1
    si = s["si"]
    # Entries not kept go to the last slot, past any selection (R (2 (bos +
    # eos) + K_MEAN + K_MAX + 1) < R n): no data-dependent shapes, so the
    # step can be captured in a CUDA graph.
    trash = si.numel() - 1
    dest = torch.where(keep, indptr[:-1, None] + rank,
                       torch.full_like(rank, trash))
    si.scatter_(0, dest.reshape(-1), cat.reshape(-1).to(si.dtype))
    si[indptr[1:] - 1] = last.reshape(-1).to(si.dtype)
    s["sp"].copy_(indptr.to(torch.int32))


def time_graph(g, reps: int) -> float:
    """Median µs per step of a graph of K_STEPS steps."""
    return time_cuda(g.replay, reps, 3) * 1e3 / K_STEPS


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--batch", type=int, nargs="*", default=[1, 8, 64])
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    m = Manifest.from_file(args.manifest)
    cfg = npref.Config.from_dict(m.config)
    flow = runtime.load(args.manifest)
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}, torch {torch.__version__}; flow {m.flow}: "
          f"G={cfg.group_size} D={cfg.head_dim} bos={cfg.bos} eos={cfg.eos} "
          f"TopK({K_MEAN}) + TopK({K_MAX}) + Union; n = {args.n} blocks per "
          f"row; CUDA graphs of {K_STEPS} steps, median of {args.reps}")
    print(f"command: python3 bench/bench_trtllm.py {' '.join(sys.argv[1:])}")
    # Our selection alone cannot run without its scores (scratch): it is
    # timed as the step less the score kernel.
    score_kernels = [k.kernel for k in m.kernels("indexer")
                     if "_trtllm" not in k.kernel and "_union" not in k.kernel]
    print("| B | rows | ours step µs | torch step µs | torch/ours | "
          "ours selection µs (step - score) | torch selection µs | "
          "torch/ours | selection: ours vs torch |")
    print("|---|---|---|---|---|---|---|---|---|")
    for B in args.batch:
        R, n = B * args.heads, args.n
        per_set = R * n * (cfg.head_dim * 2 + 8)
        n_sets = max(2, -(-2 * l2_bytes() // per_set))
        S = Sets(m, flow, cfg, R, n, n_sets, ["centroids"], "random")
        scores = [torch_scores(S, i, cfg.head_dim) for i in range(n_sets)]
        # Same data, both selections.
        run_ours(flow, S, 0)
        ours = (S.sets[0]["sp"].clone(), S.sets[0]["si"].clone())
        torch_select(S, 0, scores[0], cfg.bos, cfg.eos)
        same = compare_selection(*ours, S.sets[0]["sp"], S.sets[0]["si"], R)
        t: Dict[str, float] = {}
        for name, fn in (
                ("ours", lambda i: run_ours(flow, S, i)),
                ("ours_score", lambda i: run_ours(flow, S, i, score_kernels)),
                ("torch", lambda i: torch_select(
                    S, i, torch_scores(S, i, cfg.head_dim), cfg.bos,
                    cfg.eos)),
                ("torch_sel", lambda i: torch_select(S, i, scores[i],
                                                     cfg.bos, cfg.eos))):
            g = graph_of(fn, K_STEPS, n_sets)
            t[name] = time_graph(g, args.reps) if g is not None else float("nan")
        sel = t["ours"] - t["ours_score"]
        print(f"| {B} | {R} | {t['ours']:.1f} | {t['torch']:.1f} | "
              f"{t['torch'] / t['ours']:.2f} | {sel:.1f} | "
              f"{t['torch_sel']:.1f} | {t['torch_sel'] / sel:.2f} | "
              f"{same} |")
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
