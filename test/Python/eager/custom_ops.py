# RUN: %python %s
# REQUIRES: numpy, torch
#
# Custom ops (vortex.register_op): a torch function registered with its
# shape rule is an indexer op. A flow that normalises its score per row
# with one (a z-score written in torch) runs in eager mode, where its score
# equals an independent float64 numpy model (rtol 1e-5, atol 1e-5: float32
# against float64 over rows of at most 14 blocks, head dim 8), and compiled
# around the op on the CPU (vortex-split-custom-calls: stage 0, the torch
# call, stage 1), where its selection equals eager mode's and the compiled
# flow without the op's exactly (a z-score keeps each row's order). A flow
# with two calls (a batched one on q, then the z-score) and the score
# crossing both cuts: eager against float64 (same tolerances), and three
# compiled stages whose selection equals eager mode's exactly and the
# float64 top-k as sets per row. The staged flow's decode (its selection,
# then attention) and attend equal float64 attention over the selection
# (rtol = atol = 1e-5) and eager decode; a bad kv_last_len is refused
# before anything runs. A per-layer Parameter beside the op: per layer,
# the staged selection equals eager mode's exactly (three layers, three
# selections); no layer= or no bound value is a ValueError. A GPU build
# has two cuda stages (run on a
# GPU by bench/custom_gpu_check.py). Bad registrations, bad shape rules,
# bad results and unknown ops are errors naming the argument, or the flow,
# op and line.

import inspect
import json
import os

import numpy as np
import torch

import vortex
from vortex import testing
from vortex.abs import FORMAT, Parameter
from vortex.cache import Mean as CMean
from vortex.compiler import sweep
from vortex.flow import vFlow
from vortex.frontend.errors import (FlowTraceError,
                                    UnsupportedOpError)
from vortex.semantics import eager
from vortex.semantics import reference_attention as ref_attn
from vortex.indexer import Add, GeMM, Mean, Multiply, topK

tally = testing.Tally()


def row_zscore(s, *, layout, eps=1e-6):
    """(s - mean_row) / (std_row + eps) over each row's positions."""
    x, r, v = s[:, 0, 0], layout.row_of, layout.valid
    ones = torch.ones_like(x)
    zeros = torch.zeros(layout.rows, dtype=x.dtype)
    n = zeros.index_add(0, r[v], ones[v]).clamp(min=1)
    mean = zeros.index_add(0, r[v], x[v]) / n
    d = torch.where(v, x - mean[r.clamp(0, layout.rows - 1)], 0.0)
    var = zeros.index_add(0, r[v], (d * d)[v]) / n
    std = var.sqrt()[r.clamp(0, layout.rows - 1)]
    return torch.where(v, d / (std + eps), 0.0)[:, None, None]


RowZScore = vortex.register_op("RowZScore", row_zscore,
                               shape_rule=lambda s, **_: (s.d0, s.d1))


class Base(vFlow):
    def __init__(self):
        super().__init__()
        self.mean, self.gemm, self.out = Mean(dim=1), GeMM(), topK()
        self.reduction = CMean(dim=1)

    def score(self, q, cache, ctx):
        return self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        self.out(self.score(q, cache, ctx), o, ctx=ctx)

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim)}


class Normalised(Base):
    def __init__(self):
        super().__init__()
        from vortex.indexer import RowZScore as ByName   # the by-name form
        self.norm = ByName(eps=1e-6)

    def forward_indexer(self, q, o, cache, ctx):
        self.out(self.norm(self.score(q, cache, ctx), ctx=ctx), o, ctx=ctx)


B, D, G = 16, 8, 2
conf = dict(block_size=B, page_size=B, head_dim=D, group_size=G,
            reserved_bos=1, reserved_eos=1, topk_val=3, topk_ratio=0.0,
            intermediate_dtype="f32", kv_dtype="f32")
torch.manual_seed(0)
lengths = [0, 2, 5, 9, 14]
nb = sum(lengths)
cache = {"k": torch.randn(nb, B, D), "v": torch.randn(nb, B, D)}
cache["centroids"] = cache["k"].mean(1, keepdim=True)
q = torch.randn(len(lengths), G, D)
indptr = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)),
                      dtype=torch.int32)
indices = torch.randperm(nb).to(torch.int32)

# -- eager mode against float64 ----------------------------------------------
score, sp, si = eager.indexer(Normalised(), q, cache, indptr, indices, conf)
k64, q64 = cache["k"].double().numpy(), q.double().numpy()
ip = indptr.tolist()


def zscore_reference(q_scale=1.0, plus_raw=0.0):
    """The float64 score per position: the block centroids against the
    row's mean q (scaled by q_scale), z-scored within the row, plus
    plus_raw times that raw score."""
    ref = np.zeros(nb)
    for row in range(len(lengths)):
        lo, hi = ip[row], ip[row + 1]
        if hi == lo:
            continue
        cent = k64[indices[lo:hi].long().numpy()].mean(axis=1)     # [n, D]
        raw = cent @ (q_scale * q64[row]).mean(axis=0)
        ref[lo:hi] = (raw - raw.mean()) / (raw.std() + 1e-6) + plus_raw * raw
    return ref


ref = zscore_reference()
got = score.reshape(-1)[:nb].double().numpy()
tally(np.allclose(got, ref, rtol=1e-5, atol=1e-5),
      "eager: the custom op's score equals float64 (rtol 1e-5, atol 1e-5)",
      np.abs(got - ref).max())

flow = vortex.load(vortex.compile(Base, vortex.FlowConfig(**conf),
                                  target="cpu"))
cp, ci = flow.indexer(q, dict(cache), indptr, indices)
tally(torch.equal(cp, sp.to(cp.dtype)) and
      torch.equal(ci[:int(cp[-1])], si[:int(sp[-1])].to(ci.dtype)),
      "eager selection == the compiled CPU flow without the op (the same "
      "order per row)", (sp, cp, si, ci))



# -- two calls, a batched one, a value crossing both cuts ----------------------
@vortex.register_op("QScale", shape_rule=lambda x, scale: (x.d0, x.d1))
def q_scale(x, *, layout, scale):
    return x * scale


class TwoCalls(Base):
    def __init__(self):
        super().__init__()
        self.qs = vortex.indexer.custom("QScale")(scale=-2.0)
        self.norm = RowZScore(eps=1e-6)
        self.add = Add(alpha=1.0, beta=0.25)

    def forward_indexer(self, q, o, cache, ctx):
        score = self.score(self.qs(q, ctx=ctx), cache, ctx)
        mixed = self.add(self.norm(score, ctx=ctx), score, ctx=ctx)
        self.out(mixed, o, ctx=ctx)


score2, sp2, si2 = eager.indexer(TwoCalls(), q, cache, indptr, indices, conf)
ref2 = zscore_reference(q_scale=-2.0, plus_raw=0.25)
got2 = score2.reshape(-1)[:nb].double().numpy()
tally(np.allclose(got2, ref2, rtol=1e-5, atol=1e-5),
      "eager, two calls: the score equals float64 (rtol 1e-5, atol 1e-5)",
      np.abs(got2 - ref2).max())
two = vortex.load(vortex.compile(TwoCalls, vortex.FlowConfig(**conf),
                                 target="cpu"))
tp, ti = two.indexer(q, dict(cache), indptr, indices)
tally(len(two.stages) == 3 and torch.equal(tp, sp2.to(tp.dtype)) and
      torch.equal(ti, si2[:int(sp2[-1])].to(ti.dtype)),
      "compiled around two calls (3 stages) == eager mode, exactly",
      (sp2, tp, si2, ti))
kept = [set(ti[int(tp[r]):int(tp[r + 1])].tolist()) for r in range(len(lengths))]
want = []
for row in range(len(lengths)):
    lo, hi = ip[row], ip[row + 1]
    n = hi - lo
    ids = indices[lo:hi].tolist()
    if n <= conf["reserved_bos"] + conf["topk_val"] + conf["reserved_eos"]:
        want.append(set(ids))
        continue
    mid = np.argsort(-ref2[lo + 1:hi - 1], kind="stable")[:conf["topk_val"]]
    want.append({ids[0], ids[-1]} | {ids[1 + i] for i in mid})
tally(kept == want, "compiled around two calls: the selection of the "
      "float64 scores (bos 1, top 3, eos 1), as sets per row", (kept, want))

# -- tracing --------------------------------------------------------------
ir = vortex.trace(Normalised, vortex.FlowConfig(**conf))
line = [ln for ln in ir.splitlines() if "vortex.custom_call" in ln]
tally(len(line) == 1 and '"RowZScore"(' in line[0] and
      "custom_ops.py" in line[0],
      "traced: one vortex.custom_call \"RowZScore\" at the flow's line",
      line)
# -- compiled around the op (CPU): stage 0, RowZScore in torch, stage 1 ------
staged = vortex.load(vortex.compile(Normalised, vortex.FlowConfig(**conf),
                                    target="cpu"))
tally(len(staged.stages) == 2, "compiled: two stages around the one op",
      staged)
c2 = {n: t.clone() for n, t in cache.items()}
c2["centroids"].zero_()
staged.cache_step(c2, torch.arange(nb, dtype=torch.int32))
tally(torch.allclose(c2["centroids"], cache["centroids"], rtol=1e-6,
                     atol=1e-6),
      "compiled: stage 0's cache step writes the centroids")
np_, ni = staged.indexer(q, c2, indptr, indices)
tally(torch.equal(np_, sp.to(np_.dtype)) and
      torch.equal(ni, si[:int(sp[-1])].to(ni.dtype)),
      "compiled around the op == eager mode, exactly", (sp, np_, si, ni))
tally(torch.equal(np_, cp) and torch.equal(ni, ci[:int(cp[-1])]),
      "compiled around the op == the compiled flow without it (the same "
      "order per row)")
# decode: the staged indexer, then attention over its selection; against
# float64 attention (reference_attention) over the selection it returns,
# rtol = atol = 1e-5, and eager decode's selection exactly.
last = torch.tensor([1, 3, B, 7, 2], dtype=torch.int32)
do, dl, dp, di = staged.decode(q, c2, indptr, indices, last)
wo, wl = ref_attn.attend(q64, k64, cache["v"].double().numpy(), dp.numpy(),
                         di.numpy(), last.numpy(), G)
tally(torch.equal(dp, np_) and torch.equal(di, ni)
      and np.allclose(do.numpy(), wo, rtol=1e-5, atol=1e-5)
      and np.allclose(dl.numpy(), wl, rtol=1e-5, atol=1e-5),
      "compiled around the op: decode = its selection, then float64 "
      "attention over it (rtol = atol = 1e-5)",
      np.abs(do.numpy() - wo).max())
eo, _, _, ep, ei = eager.decode(Normalised(), q, cache, indptr, indices, last,
                                conf)
tally(torch.equal(ep.to(dp.dtype), dp) and
      torch.equal(ei[:int(ep[-1])].to(di.dtype), di) and
      np.allclose(eo.numpy(), wo, rtol=1e-5, atol=1e-5),
      "compiled around the op: decode == eager decode")
ao, al = staged.attend(q, c2, indptr, indices, last)
wo, wl = ref_attn.attend(q64, k64, cache["v"].double().numpy(), ip,
                         indices.numpy(), last.numpy(), G)
tally(np.allclose(ao.numpy(), wo, rtol=1e-5, atol=1e-5)
      and np.allclose(al.numpy(), wl, rtol=1e-5, atol=1e-5),
      "compiled around the op: attend over the dense CSR = float64")
for what, word, call in (
        ("decode: kv_last_len past block_size", "kv_last_len",
         lambda: staged.decode(q, c2, indptr, indices, torch.tensor(
             [1, 1, B + 1, 1, 1], dtype=torch.int32))),
        ("decode: an sm_scale that is not a float", "sm_scale",
         lambda: staged.decode(q, c2, indptr, indices, last,
                               sm_scale="0.5")),
        ("attend: a block id past the pool", "kv_indices",
         lambda: staged.attend(q, c2, indptr, indices + nb, last)),
        ("attend: q not a tensor", "q:",
         lambda: staged.attend(None, c2, indptr, indices, last))):
    try:
        call()
        tally(False, f"{what} is refused")
    except ValueError as err:
        tally(word in str(err), f"{what}: a ValueError naming it, before "
              "anything runs", err)
# The GPU build (PTX, no ptxas: bench/custom_gpu_check.py runs it on a GPU).
gpu_path = vortex.compile(Normalised, vortex.FlowConfig(**conf),
                          target="sm_90", options=["--no-cubin"])
gpu = json.load(open(gpu_path))
backends = [json.load(open(os.path.join(os.path.dirname(gpu_path), p)))
            ["backend"] for p in gpu["stages"]]
tally(backends == ["cuda", "cuda"] and
      [c["name"] for c in gpu["calls"]] == ["RowZScore"],
      "a GPU build: two cuda stages around RowZScore", gpu)
# -- a per-layer Parameter beside the op ------------------------------------
class Scaled(Base):
    """The mean query times a per-layer weight u (3 rows behind the lookup
    [2, 0, 1]), scored, then z-scored by the custom op."""

    def __init__(self):
        super().__init__()
        self.u = Parameter(torch.randn(3, 1, D, generator=torch.Generator()
                                       .manual_seed(5)), [2, 0, 1])
        self.mul = Multiply()
        self.norm = RowZScore(eps=1e-6)

    def forward_indexer(self, q, o, cache, ctx):
        v = self.mul(self.mean(q, ctx=ctx), self.u, ctx=ctx)
        score = self.gemm(v, cache["centroids"], ctx=ctx)
        self.out(self.norm(score, ctx=ctx), o, ctx=ctx)


scaled = Scaled()
sflow = vortex.load(vortex.compile(Scaled, vortex.FlowConfig(**conf),
                                   target="cpu"), params={"u": scaled.u})
picks = []
for layer in range(3):
    lp, lx = sflow.indexer(q, dict(cache), indptr, indices, layer=layer)
    _, ep, ex = eager.indexer(scaled, q, dict(cache), indptr, indices, conf,
                              layer=layer)
    picks.append(lx.tolist())
    tally(torch.equal(lp, ep.to(lp.dtype)) and
          torch.equal(lx, ex[:int(ep[-1])].to(lx.dtype)),
          f"a per-layer Parameter beside a custom op: layer {layer}'s "
          "selection == eager mode's, exactly")
tally(len({tuple(x) for x in picks}) == 3,
      "the layers' weights give three different selections", picks)
for what, word, call in (
        ("a call without layer=", "layer:", lambda: sflow.indexer(
            q, dict(cache), indptr, indices)),
        ("an unbound parameter", "params:", lambda: vortex.load(
            sflow.path).indexer(q, dict(cache), indptr, indices))):
    try:
        call()
        tally(False, f"staged flow refuses {what}")
    except ValueError as err:
        tally(str(err).startswith(word),
              f"staged flow refuses {what}: a ValueError naming it", err)

outcome = sweep.sweep(Normalised, [("base", vortex.FlowConfig(**conf))])[0]
tally(outcome.status == "ok",
      "verify sweep: a flow with a custom op is split into its stages, "
      "which both back ends lower (ok)", outcome)
outcomes = sweep.sweep(TwoCalls, [
    ("base", vortex.FlowConfig(**conf)),
    ("d80", vortex.FlowConfig(**dict(conf, head_dim=80)))])
tally(outcomes[0].status == "refused" and "stage_out" in outcomes[0].detail,
      "verify sweep: QScale of q itself (an export no GPU kernel computes) "
      "is `refused` with the GPU back end's diagnostic", outcomes[0])
tally(outcomes[1].status == "refused" and "power" in outcomes[1].detail,
      "verify sweep: a cut the split refuses (inner sizes not powers of "
      "two at head dim 80) is `refused` with its diagnostic", outcomes[1])


# -- errors ----------------------------------------------------------------
def raises(what, exc, words, fn):
    try:
        fn()
        tally(False, what)
    except exc as err:
        tally(all(w in str(err) for w in words), what, str(err))
        return err


raises("register_op: a bad name names `name`", ValueError, ["name", "1x"],
       lambda: vortex.register_op("1x", row_zscore, shape_rule=len))
raises("register_op: fn not callable names `fn`", TypeError, ["fn"],
       lambda: vortex.register_op("Fx", 3, shape_rule=len))
raises("register_op: shape_rule not callable names it", TypeError,
       ["shape_rule"], lambda: vortex.register_op("Fx", row_zscore,
                                                  shape_rule=None))
raises("register_op: a built-in op's name is refused", ValueError,
       ["GeMM", "built-in"],
       lambda: vortex.register_op("GeMM", row_zscore, shape_rule=len))
raises("register_op: a second registration is refused", ValueError,
       ["RowZScore", "replace=True"],
       lambda: vortex.register_op("RowZScore", row_zscore, shape_rule=len))


@vortex.register_op("BadRule", shape_rule=lambda s: (0, 1))
def bad_rule(s, *, layout):
    return s


@vortex.register_op("BatchedOfRagged",
                    shape_rule=lambda s: (1, 1, FORMAT.BATCHED))
def batched_of_ragged(s, *, layout):
    return s


@vortex.register_op("WrongShape", shape_rule=lambda s: (1, 2))
def wrong_shape(s, *, layout):
    return s


def flow_with(op_name):
    class F(Base):
        def __init__(self):
            super().__init__()
            self.op = vortex.indexer.custom(op_name)()

        def forward_indexer(self, q, o, cache, ctx):
            self.out(self.op(self.score(q, cache, ctx), ctx=ctx), o, ctx=ctx)
    return F


for name, words in [("BadRule", ["BadRule", "d0, d1 ints >= 1"]),
                    ("BatchedOfRagged", ["BATCHED", "RAGGED"])]:
    err = raises(f"trace: {name}'s shape rule is refused at the line",
                 FlowTraceError, words,
                 lambda: vortex.trace(flow_with(name),
                                      vortex.FlowConfig(**conf)))
    tally(err is not None and err.lineno is not None and
          err.filename.endswith("custom_ops.py"),
          f"trace: {name}'s error carries the user's line")
raises("eager: a result of the wrong shape names the op and the rule",
       ValueError, ["WrongShape", "[", "1, 2]"],
       lambda: eager.indexer(flow_with("WrongShape")(), q, cache, indptr,
                             indices, conf))


class Unknown(Base):
    def __init__(self):
        super().__init__()
        from vortex.indexer import GTGroupScore
        self.op = GTGroupScore()


err = raises("unknown op: UnsupportedOpError naming the op and register_op",
             UnsupportedOpError, ["GTGroupScore", "vortex.register_op"],
             Unknown)
site = inspect.getsourcelines(Unknown.__init__)[1] + 3
tally(err is not None and err.op == "GTGroupScore" and
      err.flow == "Unknown" and err.lineno == site,
      "unknown op: the error names the flow, the op and the line",
      (err.flow, err.op, err.lineno, site) if err else None)


class UnknownCache(Base):
    def __init__(self):
        super().__init__()
        from vortex.cache import GTGroupScore
        self.op = GTGroupScore()


raises("unknown cache op: says custom ops are indexer-only",
       UnsupportedOpError, ["GTGroupScore", "indexer side only"],
       UnknownCache)
tally.exit(summary=True)
