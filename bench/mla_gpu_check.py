"""GPU check of MLA flows' decode (a check, not a benchmark; it lives beside
the other device checks that need artifacts built on a machine with MLIR).

  # here (MLIR, ptxas): compile the flows for a chip
  python3 bench/mla_gpu_check.py --build .device-artifacts/mla [--chip sm_90]
  # on the GPU machine (torch, CUDA, no MLIR)
  python3 bench/mla_gpu_check.py --run .device-artifacts/mla

The flows: vortex_torch's 4 MLA flows as shipped (examples/*_mla.mlir: GLM's
20 heads, latent 512 + 64, blocks of 32, bf16), and rope_aware_block_sparse
_mla in f32 at 5 heads (3 passes of 2 heads, the last half empty). Per
flow, on the GPU: a latent pool of N(0, 1) values with NaN past every
row's length and in every block no row uses
(vortex.testing.attention.make_case: rows of 0, 1, 5, 40 and 70 blocks,
partial last blocks), the cache step over the completed blocks, then
`decode` with the pool as cache["latent"]: its selection equals the
indexer's, keeps each row's last block last, and o (the latent's first
512 channels) and lse equal float64 MLA attention over that selection
(vortex.semantics.reference_attention with v = the latent, on the
bf16-rounded q and pool): o to rtol = atol = 1e-2 in bf16 (8 bits of
mantissa), 1e-4 in f32 (sums of 576 products); lse to 1e-4 in f32 and
2e-2 in bf16 (q . k over 576 bf16 products). Exit 0 when every check
passes, 1 otherwise, 2 when nothing was checked.
"""

import os
import sys

import numpy as np
import torch

import gpu_check_cli  # bench/

import vortex
from vortex import flows
from vortex.semantics.reference_attention import attend as reference_attend
from vortex.testing import EXAMPLES
from vortex.testing.attention import make_case

F32 = vortex.FlowConfig.mla(512, 64, group_size=5, block_size=32,
                            page_size=32, topk_val=29, topk_ratio=0.0625,
                            reserved_bos=1, reserved_eos=2,
                            intermediate_dtype="f32", kv_dtype="f32")
BLOCKS = [0, 1, 5, 40, 70]


def build(out: str, chip: str) -> int:
    for name in flows.MLA:
        where = os.path.join(out, name)
        path = vortex.compile(os.path.join(EXAMPLES, name + ".mlir"),
                              target=chip, out_dir=where)
        print("built", path)
    where = os.path.join(out, "rope_aware_block_sparse_mla_f32")
    print("built", vortex.compile("rope_aware_block_sparse_mla", F32,
                                  target=chip, out_dir=where))
    return 0


def check_flow(path: str, tally) -> None:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    flow = vortex.load(path, device=0 if dev == "cuda" else None)
    m = flow.manifest
    tag = os.path.basename(os.path.dirname(path))
    cfg = m.config
    block, dim = int(cfg["block_size"]), int(cfg["head_dim"])
    group, rank = int(cfg["group_size"]), m.kv_lora_rank
    tally("attend" in m.steps, f"{tag}: the build has an attend step "
          f"(head dim {dim})")
    if "attend" not in m.steps:
        return
    rng = np.random.default_rng(11)
    q, k, _, indptr, ids, last = make_case(rng, BLOCKS, block, dim, group)
    cache = flow.allocate_cache(k.shape[0], device=dev)
    pool_dtype = cache["k"].dtype
    clean = torch.from_numpy(np.nan_to_num(k, nan=0.0)).to(dev, pool_dtype)
    cache["k"].copy_(clean)
    # The pool as vortex_torch names it: one latent, k and v at once.
    pools = {n: t for n, t in cache.items() if n not in ("k", "v")}
    pools["latent"] = cache["k"]
    full = [int(ids[e]) for r in range(len(BLOCKS))
            for e in range(indptr[r], indptr[r + 1])
            if e + 1 < indptr[r + 1] or last[r] == block]
    flow.cache_step(pools, torch.tensor(full, dtype=torch.int32,
                                        device=dev))
    # Poison after the summaries: what no row's length covers is NaN.
    cache["k"].copy_(torch.from_numpy(k).to(dev, pool_dtype))
    q_dtype = getattr(torch, {"bf16": "bfloat16", "f16": "float16",
                              "f32": "float32"}[m.tensors["q"].dtype])
    tq = torch.from_numpy(q).to(dev, q_dtype)
    t = {n: torch.from_numpy(a).to(dev) for n, a in
         dict(indptr=indptr, ids=ids, last=last).items()}
    o, lse, sp, si = flow.decode(tq, pools, t["indptr"], t["ids"], t["last"])
    ip2, ix2 = flow.indexer(tq, pools, t["indptr"], t["ids"])
    sp, si = sp.cpu(), si.cpu()
    kept_last = all(int(si[int(sp[r + 1]) - 1]) == int(ids[indptr[r + 1] - 1])
                    for r in range(len(BLOCKS)) if BLOCKS[r])
    tally(torch.equal(sp, ip2.cpu()) and torch.equal(si, ix2.cpu()[:len(si)])
          and kept_last and (torch.diff(sp).numpy() < BLOCKS).any(),
          f"{tag}: decode's selection = the indexer's, each row's last "
          f"block last (kept {torch.diff(sp).tolist()} of {BLOCKS})")
    # The reference sees the values the GPU read: q and the pool rounded.
    q64 = tq.double().cpu().numpy()
    k64 = torch.from_numpy(k).to(pool_dtype).double().numpy()
    wo, wl = reference_attend(q64, k64, k64, sp.numpy(), si.numpy(), last,
                              group)
    wo = wo[..., :rank]
    wide = q_dtype != torch.float32 or pool_dtype != torch.float32
    o_tol, l_tol = (1e-2, 2e-2) if wide else (1e-4, 1e-4)
    ok, detail = gpu_check_cli.attention_agrees(
        o.double().cpu().numpy(), lse.double().cpu().numpy(), wo, wl,
        o_tol, l_tol)
    tally(ok, f"{tag}: decode o ({rank} channels) and lse = float64 MLA "
          f"attention over its selection (o {o_tol:g}, lse {l_tol:g})",
          detail)


def run(out: str) -> int:
    return gpu_check_cli.run_manifests(out, check_flow)


if __name__ == "__main__":
    sys.exit(gpu_check_cli.main(__doc__, build, run))
