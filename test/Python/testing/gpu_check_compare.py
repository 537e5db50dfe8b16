# RUN: %python %s
# REQUIRES: numpy, torch
#
# The H100 check's judges (vortex.testing.gpu_check.compare_selection and
# compare_exact) run on the CPU here: they accept the numpy reference's own
# selection and a tie swap, and name each kind of wrong selection. Without
# this, a bug in a judge shows up only on the GPU machine.

import numpy as np

from vortex import testing
from vortex.testing import gpu_check
from vortex.semantics import reference as npref

report = testing.Tally()
cfg = npref.Config(block_size=16, head_dim=8, group_size=2, topk_val=4,
                   topk_ratio=0.0, bos=1, eos=1)
rng = np.random.default_rng(0)
# Rows of 40, 3 (within budget), 0 and 25 blocks; ids a permutation.
lengths = [40, 3, 0, 25]
indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
indices = rng.permutation(1000)[:indptr[-1]].astype(np.int64)
score = rng.standard_normal(indptr[-1])
csr = npref.Csr(indptr, indices)
ref_sp, ref_si = npref.topk_select(score, csr, cfg)


def judge(sp, si, order=True):
    stats = gpu_check.SelectionStats()
    return gpu_check.compare_selection(
        np.asarray(sp), np.asarray(si), ref_sp, ref_si, score, indptr,
        indices, cfg, order, stats), stats


probs, stats = judge(ref_sp, ref_si)
report(not probs and stats.rows == 4 and stats.selecting == 2
       and stats.exact_rows == 4,
       "the reference's own selection passes (4 rows, 2 selecting)", probs)

# A tie at the threshold may go either way.
tied = score.copy()
s0 = int(indptr[0])
mid = np.argsort(-score[s0 + 1:s0 + 39], kind="stable")
kth, nxt = s0 + 1 + mid[3], s0 + 1 + mid[4]
tied[nxt] = tied[kth]
t_sp, t_si = npref.topk_select(tied, csr, cfg)
swapped = t_si.copy()
where = int(np.nonzero(swapped == indices[kth])[0][0])
swapped[where] = indices[nxt]
stats = gpu_check.SelectionStats()
probs = gpu_check.compare_selection(t_sp, swapped, t_sp, t_si, tied, indptr,
                                    indices, cfg, False, stats)
report(not probs and stats.tie_swaps == 1,
       "a swap of two tied blocks at the threshold passes", probs)


def fails(what, sp, si, needle, order=True):
    probs, _ = judge(sp, si, order)
    report(any(needle in p for p in probs), f"{what} is named ({needle!r})",
           probs)


bad_sp = ref_sp.copy()
bad_sp[2] += 1
fails("a wrong sparse_kv_indptr", bad_sp, ref_si, "sparse_kv_indptr differs")
unwritten = ref_si.copy()
unwritten[2] = gpu_check.POISON
fails("an unwritten entry", ref_sp, unwritten, "not written")
wrong = ref_si.copy()
lo = int(ref_sp[0])
best = set(ref_si[lo + 1:lo + 5].tolist())
worst = next(int(b) for b in indices[1:39][np.argsort(score[1:39])]
             if int(b) not in best)
wrong[lo + 2] = worst
fails("a block far below the threshold", ref_sp, wrong,
      "selected set differs beyond ties")
reordered = ref_si.copy()
reordered[lo + 1], reordered[lo + 2] = reordered[lo + 2], reordered[lo + 1]
fails("a selection out of score order", ref_sp, reordered,
      "not in descending score order")
_, stats = judge(ref_sp, reordered, order=False)
report(stats.rows == 4, "order is not judged when not asked")
ends = ref_si.copy()
ends[lo] = indices[5]
fails("a wrong BOS block", ref_sp, ends, "BOS/EOS blocks differ")
short = ref_si.copy()
r1 = int(ref_sp[1])
short[r1] = indices[0]
fails("a changed row within its budget", ref_sp, short, "within budget")

# compare_exact: bit for bit, on integer data only.
stats = gpu_check.SelectionStats()
report(not gpu_check.compare_exact(ref_sp, ref_si, ref_sp, ref_si, True,
                                   stats) and stats.exact_rows == 4,
       "compare_exact accepts an identical CSR")
# Given the dense indptr and the config, it counts the rows that select
# (without them it cannot tell, and counts none).
stats = gpu_check.SelectionStats()
report(not gpu_check.compare_exact(ref_sp, ref_si, ref_sp, ref_si, True,
                                   stats, indptr, cfg)
       and stats.selecting == 2 and stats.exact_rows == 4,
       "compare_exact counts the 2 selecting rows", stats.selecting)
probs = gpu_check.compare_exact(ref_sp, reordered, ref_sp, ref_si, True,
                                gpu_check.SelectionStats())
report(len(probs) == 1 and "row 0" in probs[0],
       "compare_exact names the reordered row", probs)
probs = gpu_check.compare_exact(ref_sp, ref_si, ref_sp, ref_si, False,
                                gpu_check.SelectionStats())
report(len(probs) == 1 and "--integer-data" in probs[0],
       "compare_exact refuses float data")

report.exit()
