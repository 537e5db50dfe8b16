# RUN: %python %s %if cuda-toolkit %{ --gpu %}
# REQUIRES: numpy, torch
#
# A write-only cache field, as vortex_torch accepts it: a real flow writes
# a (1, 1) dummy field so its cache program has an output, and its indexer
# never reads it. Written the vortex_torch way, it traces and verifies; the
# CPU build allocates the field, its cache step writes it (the mean of each
# completed block's keys) and its indexer selects exactly what eager mode
# selects; with lit's cuda-toolkit feature (--gpu) the GPU build (PTX)
# compiles it too.

import os
import sys

import torch

import vortex
from vortex import testing
from vortex.semantics import eager
from vortex.cache import Mean as CMean
from vortex.flow import vFlow
from vortex.indexer import GeMM, Mean, topK

tally = testing.Tally()


class DummyField(vFlow):
    def __init__(self):
        super().__init__()
        self.mean, self.gemm, self.topk = Mean(dim=1), GeMM(), topK()
        self.centroid = CMean(dim=1)
        self.dummy_rows, self.dummy_cols = CMean(dim=1), CMean(dim=2)

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim), "dummy": (1, 1)}

    def forward_cache(self, cache, loc, ctx):
        self.centroid(cache["k"], cache["centroids"], loc=loc, ctx=ctx)
        rows = self.dummy_rows(cache["k"], None, loc=loc, ctx=ctx)
        self.dummy_cols(rows, cache["dummy"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)
        self.topk(score, o, ctx=ctx)


B, D, G = 16, 8, 2
conf = dict(block_size=B, page_size=B, head_dim=D, group_size=G,
            reserved_bos=1, reserved_eos=1, topk_val=2, topk_ratio=0.0,
            intermediate_dtype="f32", kv_dtype="f32")
cfg = vortex.FlowConfig(**conf)
text = vortex.trace(DummyField, cfg)
tally("fields(centroids = [1, 8], dummy = [1, 1])" in text,
      "traces and verifies with the write-only field declared")

flow = vortex.load(vortex.compile(DummyField, cfg, target="cpu"))
torch.manual_seed(0)
lengths = [3, 7, 12]
nb = sum(lengths)
cache = flow.allocate_cache(nb)
tally(tuple(cache["dummy"].shape) == (nb, 1, 1),
      "the CPU build allocates the field", tuple(cache["dummy"].shape))
cache["k"].copy_(torch.randn(nb, B, D))
cache["v"].copy_(torch.randn(nb, B, D))
ids = torch.arange(nb, dtype=torch.int32)
flow.cache_step(cache, ids)
want = cache["k"].double().mean(dim=(1, 2)).view(nb, 1, 1)
tally(torch.allclose(cache["dummy"].double(), want, rtol=1e-5, atol=1e-6),
      "the cache step writes it (the mean of each block's keys, 1e-5)")
q = torch.randn(len(lengths), G, D)
indptr = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)),
                      dtype=torch.int32)
indices = torch.randperm(nb).to(torch.int32)
sp, si = flow.indexer(q, cache, indptr, indices)
_, ep, ei = eager.indexer(DummyField(), q, dict(cache), indptr, indices,
                          conf)
tally(torch.equal(sp, ep.to(sp.dtype)) and
      torch.equal(si[:int(sp[-1])], ei[:int(ep[-1])].to(si.dtype)),
      "the compiled indexer selects what eager mode does, exactly")

if "--gpu" in sys.argv:
    path = vortex.compile(DummyField, cfg, target="sm_90",
                          options=["--no-cubin"])
    tally(os.path.isfile(path), "the GPU build (PTX) compiles it")
tally.exit(summary=True)
