# RUN: %python %s
# REQUIRES: numpy, torch
#
# Learned ops and per-layer weights in eager mode, against the float64 numpy
# model of test/Python/Inputs/learned_model.py (written from the ops'
# formulas, not from the tracer's decomposition):
# 1. LearnedQuery (weights, and Wq = Wk = None) times a per-layer
#    Parameter u[L, 1, D], and FactorScore: the eager score for every
#    global layer (through the lookup [2, 0, 1, 1]) equals the model's to
#    rtol 1e-5 (float32 compute), and the selection equals the model's
#    selection exactly (random data: no near ties).
# 2. Training: the per-layer u and LearnedQuery's Wq, Wk train for layer 0
#    (row 2) towards a target flow's scores: the loss falls by 100x, and
#    only row 2 of u, Wq and Wk gets a gradient (the gather is
#    differentiable and selects).
# 3. The trained weights, saved to a checkpoint (torch.save) and loaded
#    into a new flow object, load into the compiled CPU flow
#    (vortex.load(path, params=flow.parameters())): for every layer its
#    saved score equals the float64 model of the trained weights to rtol
#    1e-4 and its selection equals the model's.
# 4. Errors name the argument: no layer for per-layer weights, a layer
#    outside the lookup, bad weight shapes, Wq without Wk, a lookup row
#    outside the weights, a rank-4 Parameter used as an operand.

import os
import sys
import tempfile

import numpy as np
import torch

import vortex
from vortex import testing
from vortex.abs import Parameter
from vortex.frontend.errors import FlowArgumentError, FlowTraceError
from vortex.indexer import FactorScore, LearnedQuery

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
import learned_model as lm  # noqa: E402

report = testing.Tally()
g = torch.Generator().manual_seed(3)


def weights(*shape):
    return torch.randn(*shape, generator=g)


def run_eager(flow, q, k, indptr, ids, layer):
    return lm.eager_step(flow, q, k, indptr, ids, layer)[1:]


q, k, indptr, ids = lm.problem(1)
Wq, Wk, u = weights(lm.L, lm.H, lm.D, lm.R), weights(lm.L, lm.H, lm.D, lm.R), \
    weights(lm.L, 1, lm.D)

# 1. Numerics, every layer.
cases = [("LearnedQuery", lm.LearnedQueryFlow(Wq, Wk, u),
          lambda layer: lm.lq_scores(q, k, Wq, Wk, u, indptr, ids, layer)),
         ("LearnedQuery(Wq = Wk = None)",
          lm.LearnedQueryFlow(None, None, u, identity=True),
          lambda layer: lm.lq_scores(q, k, None, None, u, indptr, ids, layer,
                                     identity=True)),
         ("FactorScore", lm.FactorScoreFlow(Wq),
          lambda layer: lm.fs_scores(q, k, Wq, indptr, ids, layer))]
for what, flow, model in cases:
    for layer in range(len(lm.LOOKUP)):
        score, sp, si = run_eager(flow, q, k, indptr, ids, layer)
        want = model(layer)
        got = score.detach().double().numpy()
        want_ip, want_ix = lm.select(want, indptr, ids)
        report(np.allclose(got, want, rtol=1e-5, atol=1e-5) and
               sp.tolist() == list(want_ip) and
               si[:int(sp[-1])].tolist() == list(want_ix),
               f"eager {what}, layer {layer}: score (rtol 1e-5) and "
               "selection == float64 model", np.abs(got - want).max())

# 2. Training for layer 0 (row 2).
LAYER = 0
target_w = (weights(lm.L, lm.H, lm.D, lm.R), weights(lm.L, lm.H, lm.D, lm.R),
            weights(lm.L, 1, lm.D))
target = lm.LearnedQueryFlow(*target_w)
want, _, _ = run_eager(target, q, k, indptr, ids, LAYER)
tq, tk, tu = (Wq.clone().requires_grad_(), Wk.clone().requires_grad_(),
              u.clone().requires_grad_())
flow = lm.LearnedQueryFlow(tq, tk, tu)
opt = torch.optim.Adam([tq, tk, tu], lr=0.03)
losses = []
for step in range(400):
    score, _, _ = run_eager(flow, q, k, indptr, ids, LAYER)
    loss = ((score - want) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    if step == 0:
        grads = [t.grad.abs().sum(dim=tuple(range(1, t.dim()))) for t in
                 (tq, tk, tu)]
    opt.step()
    losses.append(float(loss.detach()))
row = lm.LOOKUP[LAYER]
report(all(float(gr[row]) > 0 and float(gr.sum() - gr[row]) == 0
           for gr in grads),
       f"training layer {LAYER}: only row {row} of Wq, Wk and u gets a "
       "gradient", grads)
report(losses[-1] < losses[0] / 100,
       f"eager training: loss {losses[0]:.4g} -> {losses[-1]:.4g}",
       losses[::50])

# 3. The trained weights, through a checkpoint, in the compiled CPU flow.
ckpt = os.path.join(tempfile.mkdtemp(), "learned.pt")
torch.save({"Wq": tq.detach(), "Wk": tk.detach(), "u": tu.detach()}, ckpt)
state = torch.load(ckpt)
restored = lm.LearnedQueryFlow(state["Wq"], state["Wk"], state["u"])
path = vortex.compile(flow, lm.CONFIG, target="cpu")
compiled = vortex.load(path, params=restored.parameters())
c = compiled.allocate_cache(k.shape[0])
c["k"].copy_(torch.from_numpy(k))
tw = [t.detach().numpy() for t in (tq, tk, tu)]
saved = lm.saved_positions(indptr)
for layer in range(len(lm.LOOKUP)):
    compiled.cache_step(c, torch.from_numpy(ids), layer=layer)
    sp, si = compiled.indexer(torch.from_numpy(q), c, torch.from_numpy(indptr),
                              torch.from_numpy(ids), layer=layer)
    want = lm.lq_scores(q, k, *tw, indptr, ids, layer)
    got = c["probe"][torch.from_numpy(ids[saved]).long(), 0, 0].double()
    want_ip, want_ix = lm.select(want, indptr, ids)
    report(np.allclose(got.numpy(), want[saved], rtol=1e-4, atol=1e-4) and
           sp.tolist() == list(want_ip) and
           si[:int(sp[-1])].tolist() == list(want_ix),
           f"compiled CPU flow with the trained weights, layer {layer}: "
           "score (rtol 1e-4) and selection == float64 model",
           np.abs(got.numpy() - want[saved]).max())


# 4. Errors.
def raises(fn, exc, needle):
    try:
        fn()
    except exc as err:
        return needle in str(err), str(err).splitlines()[0]
    except Exception as err:  # noqa: BLE001
        return False, f"{type(err).__name__}: {err}"
    return False, "no error"


lq = lm.LearnedQueryFlow(Wq, Wk, u)
bad_operand = lm.LearnedQueryFlow(Wq, Wk, u)
bad_operand.u = Parameter(Wq)
for what, fn, exc, needle in [
        ("no layer for per-layer weights",
         lambda: run_eager(lq, q, k, indptr, ids, None), ValueError,
         "layer: required"),
        ("a layer outside the lookup",
         lambda: run_eager(lq, q, k, indptr, ids, 4), ValueError,
         "layer: 4 is outside [0, 4)"),
        ("a layer that is not an int",
         lambda: run_eager(lq, q, k, indptr, ids, 1.0), ValueError,
         "layer: expected an int"),
        ("Wq without Wk", lambda: LearnedQuery(Wq, None), FlowArgumentError,
         "Wq and Wk"),
        ("Wk of another shape",
         lambda: LearnedQuery(Wq, Wk[:, :1]), FlowArgumentError,
         "Wk has shape [3, 1, 16, 4]"),
        ("weights of rank 3", lambda: LearnedQuery(u, u), FlowArgumentError,
         "Wq must be a [L, H, d, r]"),
        ("a lookup row outside the weights",
         lambda: LearnedQuery(Wq, Wk, [0, 3]), FlowArgumentError,
         "layer_lookup[1] = 3 is outside [0, 3)"),
        ("FactorScore's H against Wq", lambda: FactorScore(Wq, 4, 2, 4),
         FlowArgumentError, "expected [L, H=4, d, r=4]"),
        ("a Parameter's lookup row outside its layers",
         lambda: Parameter(u, [0, 5]), FlowArgumentError,
         "layer_lookup[1] = 5 is outside [0, 3)"),
        ("a Parameter of rank 5",
         lambda: Parameter(torch.zeros(1, 1, 1, 1, 1)), FlowArgumentError,
         "data: expected a tensor of shape"),
        ("q of the wrong head count",
         lambda: vortex.trace(lq, lm.CONFIG.replace(group_size=4),
                              verify=False),
         FlowTraceError, "need [B, 2, 16]"),
        ("a rank-4 Parameter as an operand",
         lambda: vortex.trace(bad_operand, lm.CONFIG, verify=False),
         FlowTraceError, "argument 'y' is a rank-4 Parameter")]:
    ok, msg = raises(fn, exc, needle)
    report(ok, f"error: {what}", msg)

report.exit(summary=True)
