# RUN: %python %s
# REQUIRES: numpy, torch
#
# vortex.testing.gpu_topk_check's parts that need no GPU: its score patterns hold
# what their names say (the value-bin and digit-pass paths each get rows
# they must take), its row lengths reach the budget's edges and the keys a
# CTA holds, and its judge accepts the reference's own selection and names
# a wrong indptr, a swapped pair and a wrong block. Without this, a bug in
# the check shows up only on the GPU machine.

import numpy as np

from vortex.testing import gpu_topk_check as tc
from vortex.semantics import reference as ref
from vortex import testing

report = testing.Tally()
rng = np.random.default_rng(0)
pats = tc.patterns(rng)
n = 2048
out = {name: gen(n).astype(np.float32) for name, gen in pats.items()}
report(all(len(x) == n for x in out.values()), "every pattern gives n scores")
report(not any(np.any(np.signbit(x) & (x == 0)) for x in out.values()),
       "no pattern holds -0.0 (its order against +0.0 is not defined)")
report(np.isnan(out["nan_inf"]).any() and np.isposinf(out["nan_inf"]).any()
       and np.isneginf(out["nan_inf"]).any(), "nan_inf: NaN, +inf and -inf")
report((out["all_negative"] < 0).all(), "all_negative: every score < 0")
report(len(np.unique(out["constant"])) == 1, "constant: one value")
with np.errstate(over="ignore"):
    report(np.isinf(np.float32(out["huge_range"].max()) -
                    np.float32(out["huge_range"].min())),
           "huge_range: max - min overflows float32")
sub = np.abs(out["subnormal"][out["subnormal"] != 0])
report(sub.size and (sub < np.finfo(np.float32).tiny).all(),
       "subnormal: every nonzero score is subnormal")
report(np.isfinite(np.float32(256) / (out["tiny"].max() - out["tiny"].min())),
       "tiny: the value bins' scale is finite")
# How many keys share the bin of the k-th best (the kernel's rule, k = 64):
# the value bins serve 'normal' and 'integers_wide', not 'integers'.


def boundary(x, k=64, bins=256):
    lo, hi = x.min(), x.max()
    scale = np.float32(bins) / (hi - lo)
    b = np.minimum(((x - lo) * scale).astype(np.uint32), bins - 1)
    h = np.bincount(b, minlength=bins)
    above = np.cumsum(h[::-1])
    return h[bins - 1 - np.searchsorted(above, k)]


report(boundary(out["normal"]) <= 128, "normal: a small boundary bin",
       str(boundary(out["normal"])))
report(boundary(out["integers_wide"]) <= 128 and
       len(np.unique(out["integers_wide"])) < n,
       "integers_wide: ties within a small boundary bin")
report(boundary(out["integers"]) > 128,
       "integers: a crowded bin (the digit passes)")

cfg = ref.Config(block_size=16, head_dim=8, group_size=2, topk_val=64,
                 topk_ratio=0.0625, bos=1, eos=2)
lengths = tc.row_lengths(cfg, rng, 40)
b0 = cfg.budget(0)
report(len(lengths) == 40 and {0, 1, b0, b0 + 1, 2047, 2048, 2049,
                               9000} <= set(lengths),
       "row lengths: empty, one block, the budget's edges, the held keys")
report(max(cfg.budget(m) for m in lengths) - cfg.bos - cfg.eos > 512,
       "a row whose k exceeds every CTA shape's threads")

# The judge.
indptr = np.concatenate([[0], np.cumsum(lengths[:6])]).astype(np.int64)
indices = rng.permutation(int(indptr[-1]) + 5)[:indptr[-1]]
score = rng.standard_normal(int(indptr[-1])).astype(np.float32)
sp, si = ref.topk_select(score, ref.Csr(indptr.tolist(), indices.tolist()),
                         cfg)
report(tc.compare_rows(sp, si, sp, si, lengths[:6]) == [],
       "judge: the reference's own selection passes")
bad_sp = sp.copy()
bad_sp[-1] += 1
report(tc.compare_rows(bad_sp, si, sp, si, lengths[:6])[0].startswith(
    "sparse_kv_indptr differs"), "judge: a wrong indptr is named")
r = next(i for i in range(6) if sp[i + 1] - sp[i] > b0 - 1)
swapped = si.copy()
a = int(sp[r]) + cfg.bos
swapped[a], swapped[a + 1] = swapped[a + 1], swapped[a]
probs = tc.compare_rows(sp, swapped, sp, si, lengths[:6])
report(len(probs) == 1 and probs[0].startswith(f"row {r} "),
       "judge: a swapped pair (order) is named by its row", str(probs))
wrong = si.copy()
wrong[int(sp[r + 1]) - 1] = -1
report(len(tc.compare_rows(sp, wrong, sp, si, lengths[:6])) == 1,
       "judge: a wrong block is named")
report(tc.row_lengths(cfg, rng, 8) == [0, 1, b0, b0 + 1, b0 + 2, 2047, 2048,
                                       2049],
       "row lengths: 8 rows are the first edge lengths (at most "
       "saves_min_rows: the top-k stores no saved score)")

# The saved-field judge (a top-k that stores a saved score): the field as
# the kernel leaves it passes; a missed store, a stray store, or a store
# at 8 rows (where the score kernel stores) is named.
import torch  # noqa: E402

n_all = int(indptr[-1])
score[3] = np.nan
field = torch.full((n_all + 5, 1, 1), tc.POISON, dtype=torch.bfloat16)
for i in range(6):
    s, e = int(indptr[i]), int(indptr[i + 1])
    if e - s > cfg.budget(e - s):
        for p in range(s, e - cfg.eos):
            field.view(-1)[int(indices[p])] = torch.tensor(
                score[p]).to(torch.bfloat16)
report(tc.check_saved(torch, field, score, indptr, indices, cfg, True) == [],
       "saved judge: the stores of every selecting row's [start, end - eos) "
       "pass (NaN equals NaN)")
untouched = torch.full_like(field, tc.POISON)
report(tc.check_saved(torch, untouched, score, indptr, indices, cfg,
                      False) == [], "saved judge: nothing stored passes at "
       "few rows")
report(len(tc.check_saved(torch, field, score, indptr, indices, cfg,
                          False)) == 1, "saved judge: a store at few rows "
       "is named")
sel = next(i for i in range(6)
           if lengths[i] > cfg.budget(lengths[i]))
missed = field.clone()
missed.view(-1)[int(indices[int(indptr[sel])])] = tc.POISON
report(len(tc.check_saved(torch, missed, score, indptr, indices, cfg,
                          True)) == 1, "saved judge: a missed store is named")
stray = field.clone()
stray.view(-1)[n_all + 4] = 1.0
report(len(tc.check_saved(torch, stray, score, indptr, indices, cfg,
                          True)) == 1, "saved judge: a stray store is named")
report.exit()
