# RUN: %python %s
# REQUIRES: numpy, torch
#
# Learned ops and per-layer parameters in the compiled CPU flow, through its
# torch ops (vortex.load), against the float64 numpy model of
# test/Python/Inputs/learned_model.py:
# 1. One compiled flow serves every layer: FactorScore (Wq a per-layer
#    Parameter with the lookup [2, 0, 1, 1]) and LearnedQuery with
#    Wq = Wk = None times a per-layer u, bound once; each call's `layer=`
#    selects the weights. Per layer, the saved score equals the model's to
#    rtol 1e-4 (f32 flow; the model is float64) and the selection equals
#    the model's exactly (random data: no near ties).
# 2. A per-layer value is bound once and each call passes a view of its
#    layer's slice: no copy, the same tensors on every call for a layer (a
#    CUDA graph captured per layer replays its pointers); a plain [L, r, c]
#    tensor binds per layer with the identity lookup.
# 3. Errors name the argument and write nothing: no layer, a layer outside
#    the lookup, a negative layer for a flow without per-layer parameters,
#    bad shapes at bind.

import os
import sys

import numpy as np
import torch

import vortex
from vortex import testing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
import learned_model as lm  # noqa: E402

report = testing.Tally()
g = torch.Generator().manual_seed(5)
q, k, indptr, ids = lm.problem(2, lengths=(0, 2, 5, 7, 12, 30))
tq, tk = torch.from_numpy(q), torch.from_numpy(k)
tip, tids = torch.from_numpy(indptr), torch.from_numpy(ids)
saved = lm.saved_positions(indptr)
Wq = torch.randn(lm.L, lm.H, lm.D, lm.R, generator=g)
u = torch.randn(lm.L, 1, lm.D, generator=g)


def run(compiled, layer, cache=None):
    c = cache if cache is not None else compiled.allocate_cache(k.shape[0])
    c["k"].copy_(tk)
    compiled.cache_step(c, tids, layer=layer)
    sp, si = compiled.indexer(tq, c, tip, tids, layer=layer)
    score = c["probe"][tids[saved].long(), 0, 0].double().numpy()
    return score, sp, si, c


def check(what, compiled, model):
    for layer in range(len(lm.LOOKUP)):
        score, sp, si, _ = run(compiled, layer)
        want = model(layer)
        want_ip, want_ix = lm.select(want, indptr, ids)
        report(np.allclose(score, want[saved], rtol=1e-4, atol=1e-4) and
               sp.tolist() == list(want_ip) and
               si[:int(sp[-1])].tolist() == list(want_ix),
               f"{what}, layer {layer}: score (rtol 1e-4) and selection == "
               "float64 model", np.abs(score - want[saved]).max())


# 1. Numerics, every layer, one compiled flow.
fs = lm.FactorScoreFlow(Wq)
fs_flow = vortex.load(vortex.compile(fs, lm.CONFIG, target="cpu"),
                      params=fs.parameters())
report(sorted(fs_flow.param_names) == ["score_proj"],
       "FactorScore traces to its derived parameters", fs_flow.param_names)
check("compiled FactorScore", fs_flow,
      lambda layer: lm.fs_scores(q, k, Wq, indptr, ids, layer))

ident = lm.LearnedQueryFlow(None, None, u, identity=True)
lq_path = vortex.compile(ident, lm.CONFIG, target="cpu")
lq_flow = vortex.load(lq_path, params=ident.parameters())
check("compiled LearnedQuery(Wq = Wk = None) * u[layer]", lq_flow,
      lambda layer: lm.lq_scores(q, k, None, None, u, indptr, ids, layer,
                                 identity=True))

# 2. Views, not copies; a plain [L, r, c] binds with the identity lookup.
p1, p1_again = lq_flow.layer_params(1), lq_flow.layer_params(1)
base = lq_flow._layered["u"][0]
report(p1 is p1_again and p1["u"].data_ptr() ==
       base[lm.LOOKUP[1]].data_ptr() and
       p1["u"].untyped_storage().data_ptr() ==
       base.untyped_storage().data_ptr(),
       "a layer's call passes a view of the bound [L, 1, D] (same storage, "
       "the same tensor on every call)")
plain = vortex.load(lq_path, params={"u": u})
score, _, _, _ = run(plain, 2)
# The model reads u[LOOKUP[layer]]; the plain binding reads u[layer].
u_model = torch.zeros_like(u)
u_model[lm.LOOKUP[2]] = u[2]
want = lm.lq_scores(q, k, None, None, u_model, indptr, ids, 2, identity=True)
report(np.allclose(score, want[saved], rtol=1e-4, atol=1e-4),
       "a plain [L, 1, D] tensor binds per layer, layer = row")


# 3. Errors.
def refused(fn, needle):
    try:
        fn()
    except ValueError as err:
        return needle in str(err), str(err)
    except Exception as err:  # noqa: BLE001
        return False, f"{type(err).__name__}: {err}"
    return False, "no error"


_, _, _, c = run(lq_flow, 0)
sp0, si0 = torch.full_like(tip, -7), torch.full_like(tids, -7)
before = {n: t.clone() for n, t in c.items()}
for what, fn, needle in [
        ("indexer without a layer",
         lambda: lq_flow.indexer(tq, c, tip, tids, sp0, si0), "layer: required"),
        ("indexer with a layer outside the lookup",
         lambda: lq_flow.indexer(tq, c, tip, tids, sp0, si0, layer=4),
         "layer: 4 is outside [0, 4)"),
        ("indexer with a layer that is not an int",
         lambda: lq_flow.indexer(tq, c, tip, tids, sp0, si0, layer="1"),
         "layer: expected an int"),
        ("cache_step with a layer outside the lookup",
         lambda: lq_flow.cache_step(c, tids, layer=-1),
         "layer: -1 is outside [0, 4)"),
        ("a plain per-layer flow, layer past its rows",
         lambda: plain.indexer(tq, c, tip, tids, sp0, si0, layer=3),
         "layer: 3 is outside [0, 3)")]:
    ok, msg = refused(fn, needle)
    unchanged = all(torch.equal(c[n], before[n]) for n in c) and \
        bool((sp0 == -7).all()) and bool((si0 == -7).all())
    report(ok and unchanged, f"refused, nothing written: {what}", msg)

no_layers = vortex.load(vortex.compile(
    "block_sparse_attention", lm.CONFIG, target="cpu"))
nc = no_layers.allocate_cache(k.shape[0])
for what, fn, needle in [
        ("a negative layer for a flow without per-layer parameters",
         lambda: no_layers.indexer(tq, nc, tip, tids, layer=-2),
         "layer: expected a non-negative int"),
        ("a per-layer value of the wrong inner shape",
         lambda: lq_flow.bind({"u": torch.zeros(3, 2, lm.D)}),
         "params['u']: shape [3, 2, 16], expected [L, 1, 16]"),
        ("FactorScore's projection of the wrong inner shape",
         lambda: fs_flow.bind({"score_proj": torch.zeros(3, 3, 2)}),
         "params['score_proj']: shape [3, 3, 2], expected [L, 16, 16]"),
        ("a per-layer value of rank 4",
         lambda: lq_flow.bind({"u": torch.zeros(3, 1, 1, lm.D)}),
         "params['u']: shape [3, 1, 1, 16]")]:
    ok, msg = refused(fn, needle)
    report(ok, f"refused: {what}", msg)
report(no_layers.indexer(tq, nc, tip, tids, layer=7) is not None,
       "a flow without per-layer parameters accepts (ignores) layer=")

report.exit(summary=True)
