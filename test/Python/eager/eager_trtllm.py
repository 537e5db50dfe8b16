# RUN: %python %s
# REQUIRES: numpy, torch
#
# vortex_torch's trtllm call form in eager mode: `bt, sl = TopK(k)(score)`
# unpacks into the block tables and per-row lengths, and
# `Union()((bt_a, sl_a), (bt_b, sl_b), o)` merges them. Written that way, a
# flow's eager selection equals its compiled CPU flow's exactly, and equals
# the same flow passing TopK's results to Union directly. A Union argument
# that is not a (block_table, seqlens) pair is a TypeError naming it, as
# the tracer's error does.

import torch

import vortex
from vortex import testing
from vortex.semantics import eager
from vortex.cache import Mean as CMean
from vortex.flow import vFlow
from vortex.indexer import GeMM, Max, Mean, TopK, Union

tally = testing.Tally()


class Unpacked(vFlow):
    def __init__(self, direct=False, bare=False):
        super().__init__()
        self.direct, self.bare = direct, bare
        self.mean, self.gemm = Mean(dim=1), GeMM()
        self.gemm_heads, self.max_heads = GeMM(), Max(dim=2)
        self.top_mean, self.top_max = TopK(3), TopK(2)
        self.union = Union()
        self.reduction = CMean(dim=1)

    def forward_indexer(self, q, o, cache, ctx):
        mean_score = self.gemm(self.mean(q, ctx=ctx), cache["centroids"],
                               ctx=ctx)
        max_score = self.max_heads(
            self.gemm_heads(q, cache["centroids"], ctx=ctx), ctx=ctx)
        if self.direct:
            self.union(self.top_mean(mean_score, ctx=ctx),
                       self.top_max(max_score, ctx=ctx), o, ctx=ctx)
            return
        bt_a, sl_a = self.top_mean(mean_score, ctx=ctx)
        bt_b, sl_b = self.top_max(max_score, ctx=ctx)
        first = bt_a if self.bare else (bt_a, sl_a)
        self.union(first, (bt_b, sl_b), o, ctx=ctx)

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim)}


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

_, sp, si = eager.indexer(Unpacked(), q, cache, indptr, indices, conf)
tally(bool((torch.diff(sp) < torch.tensor(lengths)).any()),
      "the unpacked form selects (some row keeps fewer than all blocks)")
_, dp, di = eager.indexer(Unpacked(direct=True), q, cache, indptr, indices,
                          conf)
tally(torch.equal(sp, dp) and torch.equal(si[:int(sp[-1])],
                                          di[:int(dp[-1])]),
      "eager: the unpacked form selects what the direct form does")

flow = vortex.load(vortex.compile(Unpacked, vortex.FlowConfig(**conf),
                                  target="cpu"))
cp, ci = flow.indexer(q, dict(cache), indptr, indices)
tally(torch.equal(cp, sp.to(cp.dtype)) and
      torch.equal(ci[:int(cp[-1])], si[:int(sp[-1])].to(ci.dtype)),
      "eager == the compiled CPU flow, exactly", (sp, cp, si, ci))

try:
    eager.indexer(Unpacked(bare=True), q, cache, indptr, indices, conf)
    tally(False, "Union of a bare table: refused")
except TypeError as err:
    tally("i_0" in str(err) and "(block_table, seqlens)" in str(err),
          "Union of a bare table: a TypeError naming i_0", str(err))
tally.exit(summary=True)
