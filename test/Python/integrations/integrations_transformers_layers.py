# RUN: %python %s
# REQUIRES: numpy, torch, transformers
#
# Per-layer parameters inside the engines: one compiled flow serves every
# layer of the model, and the adapters pass the model's layer id as
# `layer=` (docs/python.md, "Per-layer parameters"; docs/engines.md).
# learned_query_block_sparse_attention with random per-layer Wq, Wk
# `[2, G, D, D]` (the lookup [1, 0]: layer 0 reads row 1), bound once:
#   - paged|vortex under transformers' continuous batching (a tiny Llama of
#     2 layers, f32, G 2, budget 2 blocks + BOS + EOS), on the exact fast
#     path and its static form: every decode call's selection equals eager
#     mode's for that call's layer, and the two layers' weights select
#     differently at some calls (so the layer passed is the one used);
#   - the SGLang adapter's indexer: `layer=` picks the layer's weights
#     (equal to eager mode's), and a call without it is refused, naming
#     `layer`, with nothing written.
import os
import sys

import torch

import vortex
from vortex import testing
from vortex.flows.learned_query_block_sparse_attention import \
    LearnedQueryBlockSparseAttention
from vortex.integrations.sglang import VortexSGLangIndexer
from vortex.integrations.transformers import PagedVortex
from vortex.semantics import eager

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from tiny_engine import D, PS, generate  # noqa: E402

torch.set_num_threads(2)
BS = 4

report = testing.Tally()
G, LOOKUP = 2, [1, 0]
g = torch.Generator().manual_seed(11)
Wq = torch.randn(2, G, D, D, generator=g) / D ** 0.5
Wk = torch.randn(2, G, D, D, generator=g) / D ** 0.5


def flow_obj():
    return LearnedQueryBlockSparseAttention(Wq, Wk, LOOKUP, num_heads=G,
                                            head_dim=D)


cfg = vortex.FlowConfig(block_size=BS, page_size=PS, head_dim=D,
                        group_size=G, topk_val=2, topk_ratio=0.0,
                        reserved_bos=1, reserved_eos=1)
obj = flow_obj()
path = vortex.compile(obj, cfg, target="cpu")

for static in (False, True):
    flow = vortex.load(path, params=obj.parameters())
    attn = PagedVortex(flow, static_decode=static,
                       name=f"vortex_layers_{static}")
    decode_op = flow.decode
    seen = {"calls": 0, "layers": set(), "differ": 0, "bad": 0}

    def decode_and_compare(q, cache, ip, ix, last, layer=None, **kw):
        o, lse, sp, si = decode_op(q, cache, ip, ix, last, layer=layer, **kw)
        _, ep, ei = eager.indexer(flow_obj(), q, cache, ip, ix, cfg,
                                  layer=layer)
        _, op_, oi = eager.indexer(flow_obj(), q, cache, ip, ix, cfg,
                                   layer=1 - layer)
        n = int(ep[-1])
        if not (torch.equal(sp, ep.to(sp.dtype)) and
                torch.equal(si[:n], ei[:n].to(si.dtype))):
            seen["bad"] += 1
        if not torch.equal(ei[:n], oi[:int(op_[-1])]):
            seen["differ"] += 1
        seen["calls"] += 1
        seen["layers"].add(layer)
        return o, lse, sp, si

    flow.decode = decode_and_compare
    toks = generate(attn, G)
    form = "static form" if static else "exact fast path"
    report(all(len(v) == 24 for v in toks.values()) and seen["calls"] > 20
           and seen["layers"] == {0, 1} and seen["bad"] == 0,
           f"paged|vortex ({form}): every decode call's selection == eager "
           f"mode's for its layer", seen)
    report(seen["differ"] > 0,
           f"paged|vortex ({form}): the other layer's weights select "
           f"differently at some calls", seen)

# -- the SGLang adapter's indexer -----------------------------------------
from vortex.integrations.sglang import VortexSGLangPool  # noqa: E402

H, lens = 2, (23, 9, 40)
slots = sum(-(-n // PS) * PS for n in lens)
flow = vortex.load(path, params=obj.parameters())
pool = VortexSGLangPool(flow, size=slots, head_num=H, layer_num=2)
req_to_token = torch.zeros(len(lens), max(lens), dtype=torch.int32)
at = 0
for r, n in enumerate(lens):
    req_to_token[r, :n] = torch.arange(at, at + n)
    at += -(-n // PS) * PS
loc = torch.cat([req_to_token[r, :n] for r, n in enumerate(lens)]).long()
gen = torch.Generator().manual_seed(3)
for layer in (0, 1):
    k = torch.randn(loc.numel(), H, D, generator=gen)
    pool.set_kv_buffer(layer, loc, k, k)
indexer = VortexSGLangIndexer(flow, num_kv_heads=H, max_batch_size=4,
                              max_context_len=64)
indexer.plan_decode(torch.tensor(lens, dtype=torch.int32), req_to_token,
                    torch.arange(len(lens), dtype=torch.int32))
md = indexer.metadata
rows = len(lens) * H
q = torch.randn(rows, G, D, generator=gen)
ip = md.dense_kv_indptr[:rows + 1]
total = int(ip[-1])
picks = []
for layer in (0, 1):
    c = pool.get_cache(layer)
    o = torch.full((total,), -7, dtype=torch.int32)
    indexer.forward(q, o, c, layer=layer)
    _, ep, ei = eager.indexer(flow_obj(), q, c, ip,
                              md.dense_kv_indices[:total], cfg, layer=layer)
    n = int(ep[-1])
    picks.append(o[:n].clone())
    report(torch.equal(o[:n], ei[:n].to(o.dtype)),
           f"SGLang indexer, layer {layer}: selection == eager mode's")
report(not torch.equal(picks[0], picks[1]),
       "SGLang indexer: the two layers select differently")
o = torch.full((total,), -7, dtype=torch.int32)
try:
    indexer.forward(q, o, pool.get_cache(0))
    report(False, "SGLang indexer without layer= is refused")
except ValueError as err:
    report("layer" in str(err) and bool((o == -7).all()),
           "SGLang indexer without layer= is refused, naming it, nothing "
           "written", err)
report.exit()
