# RUN: %python %s
# REQUIRES: numpy
#
# trtllm-style selection on the CPU path: two vortex.trtllm_topk (the k best
# blocks by score, and the k' best by -score, i.e. the worst) joined by
# vortex.union, compared exactly with the reference: per row the left
# table's blocks, then the right table's new blocks, deduplicated, with the
# row's true last block pinned at the tail. TopK(k) keeps a whole row of
# n <= bos + k + eos blocks. Small-integer data makes exact ties common
# (ties go to the lower position), so the comparison is exact.

import sys

import numpy as np

import vortex
from vortex.semantics import reference as ref
from vortex import testing

K_TOP, K_BOTTOM = 3, 2


def flow_text(bos, eos):
    config = ("block_size = 4, page_size = 4, head_dim = 8, group_size = 2, "
              "topk_val = 3, topk_ratio = 2.500000e-01 : f64, "
              f"reserved_bos = {bos}, reserved_eos = {eos}, "
              "intermediate_dtype = f32, kv_dtype = f32")
    return testing.probe_flow_text(
        "union_flow", config, (4, 8), 2, [("c", 1, 8)],
        "  %cm = vortex.mean %k {dim = 1 : i64} : !kv -> !R1x8\n"
        "  vortex.write %cm into %c : !R1x8 into !P1x8", [],
        "  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !B1x8\n"
        "  %sc = vortex.gemv %qm, %c : (!B1x8, !P1x8) -> !R1x1\n"
        "  %neg = vortex.add_mul %sc {alpha = 0.000000e+00 : f32, "
        "beta = -1.000000e+00 : f32} : !R1x1 -> !R1x1\n"
        f"  %bt0, %sl0 = vortex.trtllm_topk %sc {{k = {K_TOP} : i64}} : "
        "!R1x1 -> !Ti, !Li\n"
        f"  %bt1, %sl1 = vortex.trtllm_topk %neg {{k = {K_BOTTOM} : i64}} : "
        "!R1x1 -> !Ti, !Li",
        "sc", selection_line="  vortex.union (%bt0, %sl0), (%bt1, %sl1) "
        "into %o : !Ti, !Li into !o")


def reference(q, cache, indptr, indices, cfg):
    csr = ref.Csr(indptr, indices)
    c = ref.gather(ref.reduce(cache["k"], 1, "mean"), csr)
    sc = ref.gemv(ref.broadcast_rows(ref.reduce(q, 1, "mean"), csr), c)
    return ref.union(ref.trtllm_topk(sc, csr, cfg, K_TOP),
                     ref.trtllm_topk(-sc, csr, cfg, K_BOTTOM), csr)


failures = 0
for bos, eos in ((1, 1), (2, 1), (1, 0), (0, 2)):
    try:
        flow = vortex.compile_flow(flow_text(bos, eos))
    except vortex.VortexCompileError as err:
        print(f"FAIL bos={bos} eos={eos}: does not compile:\n{err}")
        failures += 1
        continue
    cfg = ref.Config.from_dict(flow.config)
    lengths = [0, 1, 2, 5, 6, 7, 8, 9, 12, 40]
    for seed in (1, 2, 3):
        p = testing.make_problem(flow, lengths, seed=seed)
        p.cache["k"][:] = np.clip(np.round(p.cache["k"]), -1, 1)
        p.q[:] = np.clip(np.round(p.q), -1, 1)
        flow.cache_step(p.cache, p.indices)
        gp, gi = flow.indexer(p.q, p.cache, p.indptr, p.indices)
        wp, wi = reference(p.q.astype(np.float64), p.cache, p.indptr,
                           p.indices, cfg)
        ok = gp.tolist() == wp.tolist() and gi.tolist() == wi.tolist()
        print(("PASS" if ok else "FAIL") + f" bos={bos} eos={eos} seed={seed}")
        if not ok:
            failures += 1
            for r in range(len(lengths)):
                a = gi[gp[r]:gp[r + 1]].tolist()
                b = wi[wp[r]:wp[r + 1]].tolist()
                if a != b:
                    print(f"    row {r} (n={lengths[r]}): got {a}, want {b}")

sys.exit(1 if failures else 0)
