# RUN: %python %s
# REQUIRES: numpy
#
# The selection contract, exactly (no tie tolerance): with small-integer data
# many scores tie exactly in float32 and float64 alike, so the compiled
# sparse CSR must equal the reference's element for element -- BOS blocks,
# then the middle in descending score order with ties to the lower position,
# then EOS blocks; rows within budget keep every block in order. Also:
# NaN scores never win (they rank below every number, among themselves by
# position), approx_topk is exact on the CPU, and several (bos, eos,
# topk_val, topk_ratio) knobs including bos = eos = 0 at the budget edges.
# A hand-worked example checks the reference itself first.


import numpy as np

import vortex
from vortex.semantics import reference as ref
from vortex import testing

report = testing.Tally()


# --- The reference on a hand-worked example --------------------------------
cfg = ref.Config(block_size=1, head_dim=1, group_size=1, topk_val=2,
                 topk_ratio=0.0, bos=1, eos=1)
# budget 4. Row 0: 3 blocks (kept). Row 1: 7 blocks, scored range [1, 6)
# with scores 5, 9, 9, 1, 9 -> top 2 = positions 2 and 3 (ties to the lower
# position). Row 2: empty.
indptr = [0, 3, 10, 10]
indices = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
score = np.array([0, 0, 0, 100, 5, 9, 9, 1, 9, 100], float)
sp, si = ref.topk_select(score, ref.Csr(indptr, indices), cfg)
report(sp.tolist() == [0, 3, 7, 7] and
       si.tolist() == [7, 8, 9, 10, 12, 13, 16],
       "reference: hand-worked top-k", f"{sp.tolist()} {si.tolist()}")
score[5] = np.nan
score[6] = np.nan
sp, si = ref.topk_select(score, ref.Csr(indptr, indices), cfg)
report(si.tolist() == [7, 8, 9, 10, 15, 11, 16],
       "reference: NaN never wins", f"{si.tolist()}")


# --- Compiled flows ---------------------------------------------------------
def flow_text(bos, eos, topk_val, ratio, selection="vortex.topk", attrs=""):
    config = (f"block_size = 4, page_size = 4, head_dim = 8, group_size = 2, "
              f"topk_val = {topk_val}, topk_ratio = {ratio:.6e} : f64, "
              f"reserved_bos = {bos}, reserved_eos = {eos}, "
              "intermediate_dtype = f32, kv_dtype = f32")
    return testing.probe_flow_text(
        "sel", config, (4, 8), 2, [("c", 1, 8)],
        "  %cm = vortex.mean %k {dim = 1 : i64} : !kv -> !R1x8\n"
        "  vortex.write %cm into %c : !R1x8 into !P1x8", [],
        "  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !B1x8\n"
        "  %sc = vortex.gemv %qm, %c : (!B1x8, !P1x8) -> !R1x1",
        "sc", selection, attrs)


FLOW_REF = ref.FlowRef(
    ["c"], lambda k, v, cfg: {"c": ref.reduce(k, 1, "mean")},
    lambda c: ref.gemv(c.rows(ref.reduce(c.q, 1, "mean")), c.field("c")))


def check_exact(flow, lengths, seed, nan_positions=(), label=""):
    cfg = ref.Config.from_dict(flow.config)
    p = testing.make_problem(flow, lengths, seed=seed)
    # Values in {-1, 0, 1}: exact scores, many exact ties.
    p.cache["k"][:] = np.clip(np.round(p.cache["k"]), -1, 1)
    p.q[:] = np.clip(np.round(p.q), -1, 1)
    for pos in nan_positions:
        p.cache["k"][p.indices[pos], 0, 0] = np.nan
    flow.cache_step(p.cache, p.indices)
    want_cache = {n: a.astype(np.float64) for n, a in p.cache.items()}
    gp, gi = flow.indexer(p.q, p.cache, p.indptr, p.indices)
    want = FLOW_REF.indexer(p.q.astype(np.float64), want_cache, p.indptr,
                            p.indices, cfg)
    ok = gp.tolist() == want.indptr.tolist() and \
        gi.tolist() == want.indices.tolist()
    detail = ""
    if not ok:
        for r in range(len(lengths)):
            a = gi[gp[r]:gp[r + 1]].tolist()
            b = want.indices[want.indptr[r]:want.indptr[r + 1]].tolist()
            if a != b:
                detail = f"row {r} (n={lengths[r]}): got {a}, want {b}"
                break
    ties = sum(len(np.unique(want.score[s:e])) < e - s
               for s, e in zip(p.indptr[:-1], p.indptr[1:]))
    report(ok, f"{label} lengths={list(lengths)} seed={seed} "
           f"(rows with tied scores: {ties})", detail)


# budget = max(topk_val + bos + eos, int(n * ratio))
KNOBS = [
    # bos, eos, topk_val, ratio, lengths around the budget edges
    (1, 1, 3, 0.25, [0, 1, 4, 5, 6, 7, 12, 19, 20, 21, 24, 40, 90]),
    (2, 1, 3, 0.25, [0, 2, 3, 6, 7, 9, 13, 40, 90]),
    (0, 0, 3, 0.0, [0, 1, 3, 4, 5, 9, 30]),
    (1, 0, 2, 0.5, [0, 3, 4, 7, 8, 9, 31]),
    (0, 2, 4, 0.125, [0, 6, 7, 8, 47, 48, 49, 120]),
]
for bos, eos, topk_val, ratio, lengths in KNOBS:
    flow = vortex.compile_flow(flow_text(bos, eos, topk_val, ratio))
    for seed in (1, 2):
        check_exact(flow, lengths, seed,
                    label=f"topk bos={bos} eos={eos} topk_val={topk_val} "
                          f"ratio={ratio}")

# NaN scores: row 3 (n = 9, budget 5, scored range [1, 8), k = 3) has NaN
# scores at 5 of its 7 candidates (row positions 2, 3, 4, 6, 7), so it keeps
# the two finite ones and then the NaN of the lowest position (2); row 4 has
# a NaN among many candidates.
flow = vortex.compile_flow(flow_text(1, 1, 3, 0.25))
check_exact(flow, [0, 1, 5, 9, 40], seed=3,
            nan_positions=[6 + 2, 6 + 3, 6 + 4, 6 + 6, 6 + 7, 15 + 9],
            label="topk with NaN scores")

# approx_topk: exact on the CPU.
flow = vortex.compile_flow(flow_text(
    1, 1, 3, 0.25, "vortex.approx_topk",
    "{tolerate_ratio = 1.000000e-01 : f32}"))
for seed in (1, 2):
    check_exact(flow, [0, 1, 5, 6, 7, 12, 40, 90], seed,
                label="approx_topk(tolerate_ratio = 0.1)")

report.exit()
