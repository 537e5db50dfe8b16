#!/usr/bin/env python3
"""The sparse decode step over the KV formats issue 38 added: a packed
INT4 pool against a bf16 one, and an MLA latent, each against dense SDPA,
in one process on one GPU.

  # here (MLIR, ptxas): the flows for a chip
  python3 bench/bench_kv_formats.py --build .device-artifacts/kvfmt
  # on the GPU machine
  python3 bench/bench_kv_formats.py --run .device-artifacts/kvfmt \
      [--batch 1 8 64]

Flows: gqa_quest_sparse_attention (G 8, D 128, blocks of 16, top-k 64 +
BOS 1 + EOS 2) with bf16 k/v and with int4 k/v (bf16 q), and the shipped
rope_aware_block_sparse_mla (GLM's 20 heads on one latent of 512 + 64
channels, blocks of 32, budget max(29, L/32/16) + 3 blocks, bf16). Rows
hold L = --tokens tokens; B requests x 8 KV heads (MLA: B requests, one
latent each). Contents are random (timing only: int4 bytes and scales are
drawn directly); the summaries are the flow's own cache step over every
block.

Contenders, on the same rows:
  bf16 decode / int4 decode / mla decode   our `decode` (indexer + attend,
      one op, caller-owned outputs); in parentheses its indexer alone
  dense        F.scaled_dot_product_attention over all L tokens of a
      contiguous bf16 K/V (enable_gqa); for MLA, whose 576 channels no SDPA
      kernel takes (its math path expands the latent to every head), dense
      MQA as torch does it: s = q [B, 20, 576] @ latent^T (bmm, bf16), a
      float32 softmax, o = p @ latent[..., :512]
  floor        bytes the step must read (the indexer's summaries of every
      block + the selected blocks' k and v, with an int4 pool's scales; dense:
      all of K and V) / measured copy bandwidth

Method: every contender is a CUDA graph of K steps cycling through R input
sets whose selected bytes together exceed 2 x L2, replayed --reps times,
median / K (CUDA events; bench_indexer's machinery); beside it
`triton.testing.do_bench` on the replay of a one-step graph, which writes
256 MB (an L2 flush) before each call. Copy bandwidth is measured
in-process. Host time is not in these columns (graph replays).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List

import torch
import torch.nn.functional as F

import bench_decode as bd    # bench/: time_graph, time_do_bench
import bench_indexer as bi   # bench/: copy_bandwidth, l2_bytes

import vortex
from vortex.testing import EXAMPLES

HEADS = 8            # KV heads of a GQA request
QUEST = dict(block_size=16, page_size=16, head_dim=128, group_size=8,
             topk_val=64, topk_ratio=0.0, reserved_bos=1, reserved_eos=2,
             intermediate_dtype="bf16")
KINDS = ("bf16", "int4", "mla")


def build(out: str, chip: str) -> int:
    for kind in ("bf16", "int4"):
        cfg = vortex.FlowConfig(**QUEST, kv_dtype=kind, q_dtype="bf16")
        print("built", vortex.compile("gqa_quest_sparse_attention", cfg,
                                      target=chip,
                                      out_dir=os.path.join(out, kind)))
    print("built", vortex.compile(
        os.path.join(EXAMPLES, "rope_aware_block_sparse_mla.mlir"),
        target=chip, out_dir=os.path.join(out, "mla")))
    return 0


def _manifest(out: str, kind: str) -> str:
    where = os.path.join(out, kind)
    return os.path.join(where, next(f for f in os.listdir(where)
                                    if f.endswith(".manifest.json")))


def make_set(flow, kind: str, B: int, L: int, dev) -> Dict[str, object]:
    """One input set: the pool, the CSR, q, outputs, the dense K/V."""
    m = flow.manifest
    bs, D = int(m.config["block_size"]), int(m.config["head_dim"])
    G = int(m.config["group_size"])
    rows = B if kind == "mla" else B * HEADS
    n = L // bs
    nb = rows * n
    cache = flow.allocate_cache(nb, device=dev)
    if kind == "int4":
        for name in ("k", "v"):
            cache[name].copy_(torch.randint(0, 256, cache[name].shape,
                                            dtype=torch.uint8, device=dev))
        for name in ("k_int4_scale", "v_int4_scale"):
            cache[name].uniform_(0.01, 0.1)
    else:
        cache["k"].normal_()
        if kind == "mla":
            cache["v"] = cache["k"]      # one latent pool
        else:
            cache["v"].normal_()
    # Row r's blocks: [r n, (r + 1) n), shuffled inside the row.
    perm = torch.argsort(torch.rand(rows, n, device=dev), dim=1)
    ids = (perm + torch.arange(rows, device=dev)[:, None] * n)
    t = dict(cache=cache,
             indptr=torch.arange(rows + 1, device=dev, dtype=torch.int32) * n,
             indices=ids.reshape(-1).to(torch.int32),
             last=torch.full((rows,), bs, dtype=torch.int32, device=dev),
             q=torch.randn(rows, G, D, device=dev, dtype=torch.bfloat16))
    flow.cache_step(cache, torch.arange(nb, dtype=torch.int32, device=dev))
    t["sp"] = torch.zeros_like(t["indptr"])
    t["si"] = torch.zeros_like(t["indices"])
    t["o"] = torch.empty_like(t["q"])
    t["lse"] = torch.empty(rows, G, dtype=torch.float32, device=dev)
    # Dense bf16 K/V of the same shape, for SDPA.
    if kind == "mla":
        lat = torch.randn(B, 1, L, D, device=dev, dtype=torch.bfloat16)
        t["dense"] = (t["q"].view(B, G, 1, D), lat, lat[..., :512])
    else:
        k = torch.randn(B, HEADS, L, D, device=dev, dtype=torch.bfloat16)
        t["dense"] = (t["q"].view(B, HEADS * G, 1, D), k,
                      torch.randn_like(k))
    return t


def read_bytes(flow, kind: str, t, kept: int) -> Dict[str, int]:
    """What the sparse step and dense attention must read."""
    m = flow.manifest
    cache, nb = t["cache"], t["cache"]["k"].shape[0]
    per_block = {n: x[0].numel() * x.element_size() for n, x in cache.items()}
    fields = sum(v for n, v in per_block.items()
                 if n not in ("k", "v", "k_int4_scale", "v_int4_scale"))
    kv = per_block["k"] + (0 if kind == "mla" else per_block["v"])
    kv += per_block.get("k_int4_scale", 0) + per_block.get("v_int4_scale", 0)
    q, k, v = t["dense"]
    return dict(sparse=fields * nb + kv * kept,
                dense=k.numel() * k.element_size() +
                v.numel() * v.element_size() * (0 if kind == "mla" else 1))


def run(out: str, batches: List[int], L: int, reps: int) -> int:
    dev = torch.device("cuda")
    bw = bi.copy_bandwidth()
    l2 = bi.l2_bytes()
    print(f"{torch.cuda.get_device_name()}, copy bandwidth "
          f"{bw / 1e9:.0f} GB/s, L2 {l2 >> 20} MiB, L = {L} tokens")
    print("| flow | B | ours us (its indexer) | dense us | gain | "
          "ours floor us | "
          "dense floor us | ours / floor | do_bench ours / dense us |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in KINDS:
        flow = vortex.load(_manifest(out, kind), device=0)
        scale = int(flow.manifest.config["head_dim"]) ** -0.5
        for B in batches:
            sets: List[Dict[str, object]] = [make_set(flow, kind, B, L, dev)]
            flow.decode(sets[0]["q"], sets[0]["cache"], sets[0]["indptr"],
                        sets[0]["indices"], sets[0]["last"],
                        sparse_kv_indptr=sets[0]["sp"],
                        sparse_kv_indices=sets[0]["si"], o=sets[0]["o"],
                        lse=sets[0]["lse"])
            kept = int(sets[0]["sp"][-1])
            need = read_bytes(flow, kind, sets[0], kept)
            # Sets until their selected bytes exceed 2 x L2 (the dense
            # K/V of one set always does), within a memory budget.
            per_set = sum(x.numel() * x.element_size()
                          for x in sets[0]["cache"].values()) * 2
            while (len(sets) * need["sparse"] < 2 * l2 and
                   (len(sets) + 1) * per_set < 40 * 2 ** 30):
                sets.append(make_set(flow, kind, B, L, dev))

            def ours(i, s=sets):
                t = s[i]
                flow.decode(t["q"], t["cache"], t["indptr"], t["indices"],
                            t["last"], sparse_kv_indptr=t["sp"],
                            sparse_kv_indices=t["si"], o=t["o"], lse=t["lse"])

            def dense(i, s=sets):
                q, k, v = s[i]["dense"]
                if kind != "mla":
                    F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                    return
                logits = torch.bmm(q[:, :, 0], k[:, 0].transpose(1, 2))
                p = torch.softmax(logits.float() * scale, -1)
                torch.bmm(p.to(v.dtype), v[:, 0])

            def indexer(i, s=sets):
                t = s[i]
                flow.indexer(t["q"], t["cache"], t["indptr"], t["indices"],
                             t["sp"], t["si"])

            K = max(8, len(sets))
            t_ours = bd.time_graph(ours, K, len(sets), reps, 2)
            t_idx = bd.time_graph(indexer, K, len(sets), reps, 2)
            t_dense = bd.time_graph(dense, K, len(sets), reps, 2)
            db_ours = bd.time_do_bench(ours, 40)
            db_dense = bd.time_do_bench(dense, 40)
            f_ours = need["sparse"] / bw * 1e6
            f_dense = need["dense"] / bw * 1e6
            print(f"| {kind} | {B} | {t_ours:.1f} ({t_idx:.1f}) | "
                  f"{t_dense:.1f} | "
                  f"{t_dense / t_ours:.2f}x | {f_ours:.1f} | {f_dense:.1f} | "
                  f"{t_ours / f_ours:.2f}x | {db_ours:.1f} / {db_dense:.1f} |",
                  flush=True)
            del sets
            torch.cuda.empty_cache()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", metavar="DIR")
    ap.add_argument("--run", metavar="DIR")
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--batch", nargs="*", type=int, default=[1, 8, 64])
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    if bool(a.build) == bool(a.run):
        ap.error("give exactly one of --build and --run")
    if a.build:
        return build(a.build, a.chip)
    return run(a.run, a.batch, a.tokens, a.reps)


if __name__ == "__main__":
    sys.exit(main())
