# RUN: %python %s
# REQUIRES: numpy, torch
#
# LearnedDescriptor (vortex.cache) in eager mode and in the compiled CPU
# flow, against the float64 numpy model of test/Python/Inputs/learned_model.py
# (loops over heads, landmarks and tokens written from vortex_torch's
# formula g[h m + j] = sum_s Wt[l, h, s, j] k_s Wk[l, h], not from the
# tracer's GeMM / Multiply / Mean / Reshape):
# 1. Eager, every global layer (lookup [2, 0, 1, 1]): the descriptors the
#    cache step writes equal the model's to rtol 1e-5 (float32 compute),
#    the FactorScore score over them too, and the selection equals the
#    model's exactly (random data: no near ties).
# 2. Compiled CPU flow (f32), bound with flow.parameters(): per layer the
#    descriptors and the saved score equal the model's to rtol 1e-4 and
#    eager's to rtol 1e-4, and the selection equals the model's.
# 3. Training in eager mode: Wt and Wk train for layer 0 (row 2) towards a
#    target flow's scores: the loss falls by 100x and only row 2 of Wt and Wk
#    gets a gradient. The trained state dict, through torch.save/torch.load
#    into a new flow object, loads into the compiled CPU flow: its scores
#    equal the float64 model of the trained weights (rtol 1e-4).
# 4. Errors name the argument: Wt or Wk of the wrong shape or rank, lookups
#    that differ, a block of another size or width than the weights, a
#    descriptors field of the wrong shape, a call without the descriptors
#    field (the op writes one), a rank-4 weight as an operand.

import os
import sys
import tempfile

import numpy as np
import torch

import vortex
from vortex import testing
from vortex.abs import Parameter
from vortex.cache import LearnedDescriptor
from vortex.frontend.errors import FlowArgumentError, FlowTraceError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
import learned_model as lm  # noqa: E402

report = testing.Tally()
g = torch.Generator().manual_seed(7)


def weights(*shape):
    return torch.randn(*shape, generator=g)


def compiled_step(compiled, q, k, indptr, ids, layer):
    c = compiled.allocate_cache(k.shape[0])
    c["k"].copy_(torch.from_numpy(k))
    compiled.cache_step(c, torch.from_numpy(ids), layer=layer)
    sp, si = compiled.indexer(torch.from_numpy(q), c, torch.from_numpy(indptr),
                              torch.from_numpy(ids), layer=layer)
    return c, sp, si


def close(a, b, rtol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.allclose(a, b, rtol=rtol, atol=rtol), float(np.abs(a - b).max())


q, k, indptr, ids = lm.problem(4)
Wt, Wk, Wq = (weights(lm.L, lm.H, lm.BS, lm.M),
              weights(lm.L, lm.H, lm.D, lm.R), weights(lm.L, lm.H, lm.D, lm.R))
flow = lm.LearnedDescriptorFlow(Wt, Wk, Wq)
saved = lm.saved_positions(indptr)
blocks = torch.from_numpy(ids).long()

# 1. Eager, every layer.
eager_out = {}
for layer in range(len(lm.LOOKUP)):
    cache, score, sp, si = lm.eager_step(flow, q, k, indptr, ids, layer)
    eager_out[layer] = (cache["g"][blocks].detach().double().numpy(),
                        score.detach().double().numpy())
    want_g = lm.descriptors(k, Wt, Wk, layer)[ids]
    want = lm.ld_scores(q, k, Wt, Wk, Wq, indptr, ids, layer)
    want_ip, want_ix = lm.select(want, indptr, ids)
    ok_g, err_g = close(eager_out[layer][0], want_g, 1e-5)
    ok_s, err_s = close(eager_out[layer][1], want, 1e-5)
    report(ok_g and ok_s and sp.tolist() == list(want_ip) and
           si[:int(sp[-1])].tolist() == list(want_ix),
           f"eager LearnedDescriptor, layer {layer}: descriptors and score "
           "(rtol 1e-5) and selection == float64 model", (err_g, err_s))

# 2. The compiled CPU flow, every layer.
path = vortex.compile(flow, lm.CONFIG, target="cpu")
compiled = vortex.load(path, params=flow.parameters())
report(sorted(n for n in compiled.param_names if n.startswith("descriptor"))
       == ["descriptor_mix", "descriptor_proj"],
       "LearnedDescriptor traces to its derived parameters",
       compiled.param_names)
for layer in range(len(lm.LOOKUP)):
    c, sp, si = compiled_step(compiled, q, k, indptr, ids, layer)
    got_g = c["g"][blocks].double().numpy()
    got = c["probe"][torch.from_numpy(ids[saved]).long(), 0, 0].double()
    want_g = lm.descriptors(k, Wt, Wk, layer)[ids]
    want = lm.ld_scores(q, k, Wt, Wk, Wq, indptr, ids, layer)
    want_ip, want_ix = lm.select(want, indptr, ids)
    checks = [close(got_g, want_g, 1e-4), close(got.numpy(), want[saved], 1e-4),
              close(got_g, eager_out[layer][0], 1e-4),
              close(got.numpy(), eager_out[layer][1][saved], 1e-4)]
    report(all(ok for ok, _ in checks) and sp.tolist() == list(want_ip) and
           si[:int(sp[-1])].tolist() == list(want_ix),
           f"compiled CPU LearnedDescriptor, layer {layer}: descriptors and "
           "score == float64 model and == eager (rtol 1e-4), selection == "
           "model", [e for _, e in checks])

# 3. Training for layer 0 (row 2), then a checkpoint into the compiled flow.
LAYER = 0
target = lm.LearnedDescriptorFlow(weights(lm.L, lm.H, lm.BS, lm.M),
                                  weights(lm.L, lm.H, lm.D, lm.R), Wq)
_, want, _, _ = lm.eager_step(target, q, k, indptr, ids, LAYER)
tt, tk = Wt.clone().requires_grad_(), Wk.clone().requires_grad_()
trained = lm.LearnedDescriptorFlow(tt, tk, Wq)
opt = torch.optim.Adam([tt, tk], lr=0.03)
losses = []
for step in range(300):
    _, score, _, _ = lm.eager_step(trained, q, k, indptr, ids, LAYER)
    loss = ((score - want) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    if step == 0:
        grads = [t.grad.abs().sum(dim=(1, 2, 3)) for t in (tt, tk)]
    opt.step()
    losses.append(float(loss.detach()))
row = lm.LOOKUP[LAYER]
report(all(float(gr[row]) > 0 and float(gr.sum() - gr[row]) == 0
           for gr in grads),
       f"training layer {LAYER}: only row {row} of Wt and Wk gets a gradient",
       grads)
report(losses[-1] < losses[0] / 100,
       f"eager training: loss {losses[0]:.4g} -> {losses[-1]:.4g}",
       losses[::50])

ckpt = os.path.join(tempfile.mkdtemp(), "descriptor.pt")
torch.save({"Wt": tt.detach(), "Wk": tk.detach(), "Wq": Wq}, ckpt)
state = torch.load(ckpt)
restored = lm.LearnedDescriptorFlow(state["Wt"], state["Wk"], state["Wq"])
loaded = vortex.load(path, params=restored.parameters())
tw = [t.detach().numpy() for t in (tt, tk)]
for layer in range(len(lm.LOOKUP)):
    c, sp, si = compiled_step(loaded, q, k, indptr, ids, layer)
    got = c["probe"][torch.from_numpy(ids[saved]).long(), 0, 0].double()
    want = lm.ld_scores(q, k, *tw, Wq, indptr, ids, layer)
    ok, err = close(got.numpy(), want[saved], 1e-4)
    report(ok, f"compiled CPU flow with the trained checkpoint, layer "
           f"{layer}: score == float64 model (rtol 1e-4)", err)


# 4. Errors.
def raises(fn, exc, needle):
    try:
        fn()
    except exc as err:
        return needle in str(err), str(err).splitlines()[0]
    except Exception as err:  # noqa: BLE001
        return False, f"{type(err).__name__}: {err}"
    return False, "no error"


class Wrapped(lm.LearnedDescriptorFlow):
    """A flow whose descriptor op was built for other weights."""

    def __init__(self, Wt, Wk, descriptors=(lm.H * lm.M, lm.R)):
        super().__init__(Wt, Wk, Wq)
        self.fields = descriptors

    def create_cache(self, block_size, head_dim):
        return {"g": self.fields, "probe": (1, 1)}


bad_operand = lm.LearnedDescriptorFlow(Wt, Wk, Wq)
bad_operand.forward_cache = lambda cache, loc, ctx: bad_operand.descriptor(
    bad_operand.Wt, cache["g"], loc=loc, ctx=ctx)
no_field = lm.LearnedDescriptorFlow(Wt, Wk, Wq)
no_field.forward_cache = lambda cache, loc, ctx: no_field.descriptor(
    cache["k"], loc=loc, ctx=ctx)
for what, fn, exc, needle in [
        ("Wt of the wrong landmark count",
         lambda: LearnedDescriptor(Wt, Wk, lm.H, 3, lm.R), FlowArgumentError,
         "Wt has shape [3, 2, 4, 2]: expected [L, H=2, bs, m=3]"),
        ("Wk of the wrong rank axis",
         lambda: LearnedDescriptor(Wt, Wk[..., :3], lm.H, lm.M, lm.R),
         FlowArgumentError, "Wk has shape [3, 2, 16, 3]: expected [L=3, H=2,"
         " d, r=4]"),
        ("Wk with other layers than Wt",
         lambda: LearnedDescriptor(Wt, Wk[:2], lm.H, lm.M, lm.R),
         FlowArgumentError, "Wk has shape [2, 2, 16, 4]"),
        ("Wt of rank 3",
         lambda: LearnedDescriptor(Wt[0], Wk, lm.H, lm.M, lm.R),
         FlowArgumentError, "Wt must be a [L, H, bs, m] tensor or Parameter"),
        ("lookups that differ",
         lambda: LearnedDescriptor(Parameter(Wt, [0, 1]),
                                   Parameter(Wk, [1, 0]), lm.H, lm.M, lm.R),
         FlowArgumentError, "Wk's layer lookup [1, 0] differs from Wt's"),
        ("H not an int",
         lambda: LearnedDescriptor(Wt, Wk, 2.0, lm.M, lm.R),
         FlowArgumentError, "H must be an int >= 1"),
        ("a block of another size than Wt's",
         lambda: vortex.trace(flow, lm.CONFIG.replace(block_size=8,
                                                      page_size=8),
                              verify=False),
         FlowTraceError, "latent is [S, 8, 16], Wt [L, H, bs, m] and Wk "
         "[L, H, d, r] need [S, bs = 4, d = 16]"),
        ("descriptors of the wrong shape",
         lambda: vortex.trace(Wrapped(Wt, Wk, (lm.H, lm.R)), lm.CONFIG,
                              verify=False),
         FlowTraceError, "descriptors are [S, 2, 4], expected [S, H*m = 4, "
         "r = 4]"),
        ("no descriptors field",
         lambda: vortex.trace(no_field, lm.CONFIG, verify=False),
         FlowTraceError, "argument 'descriptors' is required"),
        ("a rank-4 weight as the latent",
         lambda: vortex.trace(bad_operand, lm.CONFIG, verify=False),
         FlowTraceError, "argument 'latent' is a rank-4 Parameter")]:
    ok, msg = raises(fn, exc, needle)
    report(ok, f"error: {what}", msg)

report.exit(summary=True)
