# RUN: %python %s
# REQUIRES: numpy, torch
#
# Eager mode (vortex.semantics.eager): the shipped flows' Python modules run on torch
# tensors op by op. Checked against the independent float64 numpy model
# (vortex.semantics.reference) for every shipped flow: scores to 1e-4 relative,
# selections and fields exactly (the GPU check's own self-test, run here on
# the CPU). Also: eager mode is differentiable (gradients reach a field
# and q through the score), plain torch code in a flow is refused, and an
# op outside an eager context says what to do.

import sys

import torch

from vortex import testing

from vortex.semantics import eager
from vortex.testing import gpu_check
from vortex.flow import get
from vortex import flows  # noqa: F401  (registers the shipped flows)

report = testing.Tally()

problems = gpu_check.selftest(torch.device("cpu"))
report(not problems, "eager mode == vortex.semantics.reference for every shipped "
       "flow (scores 1e-4, selections and fields exact)", problems)

# Differentiable: d(score)/d(centroids) and d(score)/d(q) of block_sparse.
conf = dict(block_size=16, head_dim=8, group_size=2, topk_val=2,
            topk_ratio=0.0, reserved_bos=1, reserved_eos=1)
flow, fields = eager.flow_for("block_sparse_attention", conf)
torch.manual_seed(0)
nb = 12
cache = {"k": torch.randn(nb, 16, 8), "v": torch.randn(nb, 16, 8),
         "centroids": torch.randn(nb, 1, 8, requires_grad=True)}
q = torch.randn(2, 2, 8, requires_grad=True)
indptr = torch.tensor([0, 5, 11], dtype=torch.int32)
indices = torch.randperm(nb)[:11].to(torch.int32)
score, sp, si = eager.indexer(flow, q, cache, indptr, indices, conf)
score.sum().backward()
# score(p) = <mean_h q_h, c_p>: d/dc_p = mean_h q_h of p's row.
want = torch.zeros(nb, 1, 8)
qm = q.detach().mean(1)
for r in range(2):
    for s in range(int(indptr[r]), int(indptr[r + 1])):
        want[int(indices[s]), 0] += qm[r]
report(torch.allclose(cache["centroids"].grad, want, atol=1e-6),
       "eager mode is differentiable: d score / d centroids",
       (cache["centroids"].grad - want).abs().max())
report(q.grad is not None and q.grad.abs().sum() > 0,
       "eager mode is differentiable: d score / d q")

# Gen-1 torch code on a flow value is refused in eager mode too.
class Gen1:
    def create_cache(self, block_size, head_dim):
        return {}

    def forward_indexer(self, q, o, cache, ctx):
        q.mean(dim=1, keepdim=True)

try:
    eager.indexer(Gen1(), q.detach(), {}, indptr, indices, conf)
    report(False, "torch code on an eager value raises")
except AttributeError as err:
    report("mean" in str(err), "torch code on an eager value raises", err)

try:
    get("block_sparse_attention")().gemm(q, q)
    report(False, "an op called without a context raises")
except TypeError as err:
    report("vortex.semantics.eager" in str(err), "an op called without a context "
           "raises", err)

report.exit()
