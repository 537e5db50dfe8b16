# RUN: %python %s
# REQUIRES: numpy, torch
#
# A flow with a PARAMETER weight (vortex.abs.Parameter), end to end:
# 1. it traces to `params(w = [1, D])` with the weight as a block argument
#    of both steps, and vortex-opt verifies it;
# 2. eager mode trains the weight with autograd on a toy objective (match
#    the scores of a hidden target weight): the loss falls by 100x;
# 3. the flow compiles for the CPU, runs as a torch op with the learned
#    weight bound (`vortex.load(path, params=flow.parameters())`), and its
#    selection equals the float64 numpy model's for that weight
#    (vortex.semantics.reference.topk_select on numpy scores), exactly (f32 flow,
#    small-integer-free random data: ties have probability 0);
# 4. binding errors name the parameter; an unbound parameter is refused.

import sys

import numpy as np
import torch

import vortex
from vortex import testing
from vortex.semantics import eager
from vortex.semantics import reference
from vortex.abs import Parameter
from vortex.cache import Mean as CMean
from vortex.flow import register, vFlow
from vortex.indexer import GeMM, Mean, Multiply, topK

report = testing.Tally()
D = 16


@register("learned_query_toy")
class LearnedQuery(vFlow):
    """score(p) = < mean_h(q_h) * w , c_p >: a learned per-channel query
    weighting."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(torch.ones(1, D, requires_grad=True))
        self.mean = Mean(dim=1)
        self.mul = Multiply()
        self.gemm = GeMM()
        self.out = topK()
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q, o, cache, ctx):
        qw = self.mul(self.mean(q, ctx=ctx), self.w, ctx=ctx)
        score = self.gemm(qw, cache["centroids"], ctx=ctx)
        self.out(score, o, ctx=ctx)

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim)}


config = vortex.FlowConfig(block_size=4, page_size=4, head_dim=D,
                           group_size=2, topk_val=3, topk_ratio=0.0,
                           reserved_bos=1, reserved_eos=1,
                           intermediate_dtype="f32", kv_dtype="f32")
flow = LearnedQuery()

# 1. Tracing.
text = vortex.trace(flow, config)
report("params(w = [1, 16])" in text and
       "%w: !parameter_1x16" in text and
       "vortex.multiply %mean, %w" in text,
       "traces to params(w = [1, 16]), a block argument of both steps",
       text[-800:])

# 2. Eager training.
g = torch.Generator().manual_seed(0)
lengths = [0, 1, 6, 30, 45, 17]
total = sum(lengths)
nb = total + 5
ids = torch.randperm(nb, generator=g)[:total].to(torch.int32)
indptr = torch.tensor(np.concatenate([[0], np.cumsum(lengths)]),
                      dtype=torch.int32)
cache = {"k": torch.randn(nb, 4, D, generator=g),
         "v": torch.randn(nb, 4, D, generator=g),
         "centroids": torch.zeros(nb, 1, D)}
eager.cache_step(flow, cache, ids, config)
q = torch.randn(len(lengths), 2, D, generator=g)
target_w = torch.rand(1, D, generator=g) * 2

target = LearnedQuery()
target.w = Parameter(target_w)
want, _, _ = eager.indexer(target, q, dict(cache), indptr, ids, config)
opt = torch.optim.Adam([flow.w.data], lr=0.05)
losses = []
for step in range(300):
    score, _, _ = eager.indexer(flow, q, dict(cache), indptr, ids, config)
    loss = ((score - want) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(float(loss.detach()))
report(losses[-1] < losses[0] / 100,
       f"eager training: loss {losses[0]:.4g} -> {losses[-1]:.4g}",
       losses[::50])

# 3. Compile for the CPU with the learned weight bound.
path = vortex.compile(flow, config, target="cpu")
compiled = vortex.load(path, params=flow.parameters())
c = compiled.allocate_cache(nb)
c["k"].copy_(cache["k"])
c["v"].copy_(cache["v"])
compiled.cache_step(c, ids)
sp, si = compiled.indexer(q, c, indptr, ids)
w = flow.w.data.detach().double().numpy()
cent = c["centroids"].double().numpy()
qm = q.double().numpy().mean(1)
csr = reference.Csr(indptr.numpy(), ids.numpy())
score_np = np.zeros(total)
for r in range(len(lengths)):
    for s in range(int(indptr[r]), int(indptr[r + 1])):
        score_np[s] = (qm[r] * w[0] * cent[int(ids[s]), 0]).sum()
rcfg = reference.Config.from_dict(dict(
    block_size=4, head_dim=D, group_size=2, topk_val=3, topk_ratio=0.0,
    reserved_bos=1, reserved_eos=1))
want_ip, want_ix = reference.topk_select(score_np, csr, rcfg)
report(sp.tolist() == list(want_ip) and
       si[:int(sp[-1])].tolist() == list(want_ix),
       "the compiled op with the learned weight bound == the float64 model",
       (sp.tolist(), list(want_ip)))
report(torch.allclose(c["centroids"], cache["centroids"], atol=1e-6),
       "compiled cache step == eager cache step")

# The bound value is a copy: changing the Python weight changes nothing
# until it is bound again.
before = si.clone()
with torch.no_grad():
    flow.w.data.mul_(-1)
compiled.indexer(q, c, indptr, ids, sp, si)
same = torch.equal(si, before)
compiled.bind(flow.parameters())
compiled.indexer(q, c, indptr, ids, sp, si)
report(same and not torch.equal(si, before),
       "bind() copies: a new value takes effect when bound")

# 4. Errors.
def raises(fn, needle):
    try:
        fn()
    except ValueError as err:
        return needle in str(err), str(err)
    return False, "no error"

for what, fn, needle in [
        ("unknown parameter", lambda: compiled.bind({"nope": torch.ones(1, D)}),
         "params['nope']"),
        ("wrong shape", lambda: compiled.bind({"w": torch.ones(2, D)}),
         "params['w']: shape"),
        ("not a tensor", lambda: compiled.bind({"w": [1.0] * D}),
         "params['w']: expected a tensor"),
        ("unbound", lambda: vortex.load(path).indexer(q, c, indptr, ids),
         "not bound")]:
    ok, msg = raises(fn, needle)
    report(ok, f"parameter error: {what}", msg)

report.exit()
