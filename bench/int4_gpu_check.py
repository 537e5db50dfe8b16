"""GPU check of packed INT4 k/v pools (kv_dtype int4; docs/contract.md
"INT4 KV"): a check, not a benchmark, beside the other device checks that
need artifacts built on a machine with MLIR.

  # here (MLIR, ptxas): trace and compile the flows for a chip
  python3 bench/int4_gpu_check.py --build .device-artifacts/int4 [--chip sm_90]
  # on the GPU machine (torch, CUDA, no MLIR)
  python3 bench/int4_gpu_check.py --run .device-artifacts/int4
  # (--chip cpu builds CPU artifacts: --run then checks them on the CPU)

The flows: every shipped flow but the MLA ones at G 8 / D 128 and G 5 /
D 80, at their block size (16; 1 for the token flows), f32 intermediates,
each in its own directory. Per flow, on the GPU: a pool of N(0, 1) k and v
quantized with vortex.int4 (float64 scale math, f32 scales), fields
poisoned with -7; the cache step on every used block (shuffled, two
negative ids mixed in) against the float64 reference flow
(vortex.semantics.reference) on the dequantized pool, fields to rtol =
atol = 1e-4 (f32 reductions in another order), blocks no step lists still
-7; then an indexer step and a decode step (the indexer step for a flow
whose selection may drop the row's last tokens) against the reference's
selection (up to ties, reference.compare_selection); decode's o and lse,
and attend's over the dense CSR (partial last blocks, an empty row),
against float64 attention over the dequantized pool (o to 1e-2 in bf16,
2e-5 in f32; lse to 1e-4). Exit 0 when every check passes, 1 otherwise, 2 when
nothing was checked.
"""

import os
import sys

import numpy as np
import torch

import gpu_check_cli  # bench/

import vortex
from vortex import api, flows, int4
from vortex.runtime.manifest import DTYPES
from vortex.semantics import reference as ref
from vortex.semantics.reference_attention import attend as reference_attend

#: Every shipped flow but the MLA ones (refused: docs/contract.md "INT4
#: KV") and the G 5 copy of gqa_quest, at two shapes.
CASES = [(name, g, d, bs)
         for name, s in flows.SHIPPED.items()
         if not s.config.is_mla and not name.endswith("_g5")
         for g, d in ((8, 128), (5, 80))
         for bs in [s.config.block_size]]
LENGTHS = (0, 1, 3, 9, 33, 64, 257)
POISON = -7.0
RTOL = ATOL = 1e-4
# lse: f32 compute over up to 257 blocks of bf16 or f32 q.
LSE_TOL = 1e-4
# The GPU machine's device; the CPU (artifacts built with --chip cpu) checks
# this script itself where there is no GPU.
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def build(out: str, chip: str) -> int:
    for name, g, d, bs in CASES:
        s = flows.SHIPPED[name]
        where = os.path.join(out, f"{name}_g{g}_d{d}_bs{bs}")
        os.makedirs(where, exist_ok=True)
        path = api.compile_vflow(s.flow, s.config, chip, name=s.symbol,
                                 out_dir=where, use_cache=False,
                                 head_dim=d, group_size=g, block_size=bs,
                                 page_size=bs, kv_dtype="int4",
                                 intermediate_dtype="f32")
        print("built", path)
    return 0


def check_flow(path: str, tally) -> None:
    flow = vortex.load(path)
    cfg_d = flow.manifest.config
    cfg = ref.Config.from_dict(cfg_d)
    model = ref.FLOWS[flow.manifest.flow]
    tag = f"{os.path.basename(os.path.dirname(path))}"
    rng = np.random.default_rng(3)
    bs, d = int(cfg_d["block_size"]), int(cfg_d["head_dim"])
    total = sum(LENGTHS)
    nb = total + 7
    packed = int4.quantize_pool(rng.standard_normal((nb, bs, d)),
                                rng.standard_normal((nb, bs, d)) * 2.0)
    names = [n for n, _, _ in flow.manifest.fields]
    cache = {n: torch.from_numpy(a).to(DEV) for n, a in packed.items()}
    for n, r, c in flow.manifest.fields:
        cache[n] = torch.full((nb, r, c), POISON, device=DEV)
    want = {n: np.full((nb, r, c), POISON) for n, r, c in flow.manifest.fields}
    want["k"], want["v"] = int4.dequantize_pool(packed)
    perm = rng.permutation(nb).astype(np.int32)
    used, unused = perm[:total], perm[total:]
    indptr = np.concatenate([[0], np.cumsum(LENGTHS)]).astype(np.int32)
    ids = np.concatenate([used, [-1, -2]]).astype(np.int32)
    rng.shuffle(ids)

    flow.cache_step(cache, torch.from_numpy(ids).to(DEV))
    if DEV == "cuda":
        torch.cuda.synchronize()
    model.cache_step(want, used, cfg)
    got = {n: cache[n].cpu().numpy() for n in names}
    probs = ref.compare_fields(got, want, names, rtol=RTOL, atol=ATOL)
    probs += [f"{n}: a block no step lists was written" for n in names
              if not (got[n][unused] == POISON).all()]
    tally(not probs, f"{tag}: cache step = float64 reference", probs[:4])

    g = int(cfg_d["group_size"])
    # q in the manifest's dtype (bf16 on the GPU by default); the reference
    # takes the same rounded values.
    q_dtype = getattr(torch, DTYPES[flow.manifest.tensors["q"].dtype][0])
    t_indptr = torch.from_numpy(indptr).to(DEV)
    t_used = torch.from_numpy(used).to(DEV)
    last = rng.integers(1, bs + 1, len(LENGTHS)).astype(np.int32)
    t_last = torch.from_numpy(last).to(DEV)
    refused = flow.manifest.decode_refusal
    # Step 0 the indexer, step 1 decode (the indexer, then attention over
    # its selection) where the flow allows it, else the indexer again.
    for step in range(2):
        q = torch.from_numpy(rng.standard_normal(
            (len(LENGTHS), g, d)).astype(np.float32)).to(q_dtype)
        if step == 1 and not refused:
            o, lse, sp, si = flow.decode(q.to(DEV), cache, t_indptr, t_used,
                                         t_last)
            check_attention(tally, f"{tag}: decode", o, lse, q, want, sp, si,
                            last, g)
        else:
            sp, si = flow.indexer(q.to(DEV), cache, t_indptr, t_used)
        w = model.indexer(q.double().numpy(), want, indptr, used, cfg)
        probs = ref.compare_selection(sp.cpu().numpy(), si.cpu().numpy(), w,
                                      indptr, used, cfg)
        what = "decode's" if step == 1 and not refused else "indexer"
        tally(not probs, f"{tag}: step {step}: {what} selection = reference "
              "selection", probs[:4])
    o, lse = flow.attend(q.to(DEV), cache, t_indptr, t_used, t_last)
    check_attention(tally, f"{tag}: attend over the dense CSR", o, lse, q,
                    want, t_indptr, t_used, last, g)


def check_attention(tally, what, o, lse, q, want, indptr, indices, last, g):
    """o (q's dtype) and lse against float64 attention over the
    dequantized pool: o to rtol = atol = 1e-2 for a bf16 o (8 bits of
    mantissa), 2e-5 for f32; lse to LSE_TOL."""
    wo, wl = reference_attend(q.double().numpy(), want["k"], want["v"],
                              indptr.cpu().numpy(), indices.cpu().numpy(),
                              last, g)
    tol = 2e-5 if o.dtype == torch.float32 else 1e-2
    ok, detail = gpu_check_cli.attention_agrees(
        o.double().cpu().numpy(), lse.double().cpu().numpy(), wo, wl, tol,
        LSE_TOL)
    tally(ok, f"{what} = float64 attention over the dequantized pool",
          detail)


def run(out: str) -> int:
    return gpu_check_cli.run_manifests(out, check_flow)


if __name__ == "__main__":
    sys.exit(gpu_check_cli.main(__doc__, build, run))
