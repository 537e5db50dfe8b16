# RUN: %python %s
# REQUIRES: numpy, torch
#
# The attend and decode torch ops on the CPU (docs/contract.md "Attention"):
#   - names `vortex::<flow>_<hash12>_{attend,decode}`, o and lse (and for
#     decode the sparse CSR) the only mutable arguments; opcheck of both;
#   - caller-owned o and lse are written and returned; torch.compile
#     (fullgraph=True) of attend and decode agrees with the eager calls;
#     a float sm_scale is made into a tensor once per value (not per call);
#   - decode = the indexer, then attend over its sparse CSR with the rows'
#     kv_last_len; eager.decode computes the same (and differentiates);
#   - dense mode equals torch SDPA (math backend) on the same tokens, T = 1
#     and T = 3 with a bottom-right causal mask;
#   - bad input refused with a ValueError naming the argument and nothing
#     written (o, lse, the sparse CSR keep their contents);
#   - decode refused, naming reserved_eos, on a flow with reserved_eos = 0
#     and on one whose EOS blocks cannot hold the last T - 1 tokens; attend
#     alone still runs there; a trtllm union selection (the last block
#     pinned at its tail) decodes with reserved_eos = 0 for T = 1, and is
#     refused, naming q, for T = 3.

import os

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from vortex.testing.attention import check, make_case

import vortex
from vortex.flow import load_module
from vortex.semantics import eager

D, B, G = 64, 16, 4
rng = np.random.default_rng(7)


def compiled(**knobs):
    config = vortex.FlowConfig(block_size=B, page_size=B, head_dim=D,
                               group_size=G, topk_val=3,
                               topk_ratio=0.0, intermediate_dtype="f32",
                               kv_dtype="f32", **knobs)
    return vortex.load(vortex.compile("block_sparse_attention", config,
                                      target="cpu")), config


flow, config = compiled()
BLOCKS = [0, 1, 4, 9, 12]      # budget 3 + 1 + 2 = 6: the last two select
q, k, v, indptr, ids, last = make_case(rng, BLOCKS, B, D, G)
cache = flow.allocate_cache(k.shape[0])
cache["k"].copy_(torch.from_numpy(k))
cache["v"].copy_(torch.from_numpy(v))
# Summaries of the completed blocks (a partial last block has none yet).
full = [int(ids[e]) for r in range(len(BLOCKS))
        for e in range(indptr[r], indptr[r + 1])
        if e + 1 < indptr[r + 1] or last[r] == B]
flow.cache_step(cache, torch.tensor(full, dtype=torch.int32))
T = {n: torch.from_numpy(a) for n, a in
     dict(q=q, indptr=indptr, ids=ids, last=last).items()}

# -- names, schemas, opcheck ------------------------------------------------
for step, op in (("attend", flow.attend_op), ("decode", flow.decode_op)):
    assert op._schema.name.endswith("_" + step), op._schema.name
    mutable = [a.name for a in op._schema.arguments
               if a.alias_info is not None and a.alias_info.is_write]
    want = ["o", "lse"] if step == "attend" else \
        ["sparse_kv_indptr", "sparse_kv_indices", "o", "lse"]
    assert mutable == want, (step, mutable)


def attend_args(o=None, lse=None):
    o = torch.zeros(q.shape) if o is None else o
    lse = torch.zeros(q.shape[:2]) if lse is None else lse
    return (T["q"], cache["k"], cache["v"], T["indptr"], T["ids"], T["last"],
            o, lse, torch.tensor([D ** -0.5]))


torch.library.opcheck(flow.attend_op, attend_args())
dec_args = (T["q"], cache["k"], cache["v"], cache["centroids"], T["indptr"],
            T["ids"], torch.zeros_like(T["indptr"]),
            torch.zeros_like(T["ids"]),
            T["last"], torch.zeros(q.shape), torch.zeros(q.shape[:2]),
            torch.tensor([D ** -0.5]))
torch.library.opcheck(flow.decode_op, dec_args)
print("schemas and opcheck: ok")

# -- attend: caller-owned outputs, numerics, compile ------------------------
o_buf, lse_buf = torch.full(q.shape, 7.0), torch.full(q.shape[:2], 7.0)
o, lse = flow.attend(T["q"], cache, T["indptr"], T["ids"], T["last"],
                     o=o_buf, lse=lse_buf)
assert o is o_buf and lse is lse_buf
check(o, lse, q, k, v, indptr, ids, last, G, what="attend dense")
step = torch.compile(lambda *a: flow.attend(*a), fullgraph=True)
o_c, lse_c = step(T["q"], cache, T["indptr"], T["ids"], T["last"])
assert torch.equal(o_c, o) and torch.equal(lse_c, lse)
# A float scale becomes one f32 tensor per value, made once (eager calls
# reuse it); an explicit 1/sqrt(D) gives the default's result.
o_s, lse_s = flow.attend(T["q"], cache, T["indptr"], T["ids"], T["last"],
                         sm_scale=D ** -0.5)
assert torch.equal(o_s, o) and torch.equal(lse_s, lse)
flow.attend(T["q"], cache, T["indptr"], T["ids"], T["last"], sm_scale=0.5)
flow.attend(T["q"], cache, T["indptr"], T["ids"], T["last"], sm_scale=0.5)
assert sorted(v for v, _ in flow._scales) == sorted({D ** -0.5, 0.5}), \
    flow._scales

# -- decode: the indexer, then attend over its selection ---------------------
o_d, lse_d, sp_ip, sp_ix = flow.decode(T["q"], cache, T["indptr"], T["ids"],
                                       T["last"])
ref_ip, ref_ix = flow.indexer(T["q"], cache, T["indptr"], T["ids"])
assert torch.equal(sp_ip, ref_ip) and torch.equal(sp_ix, ref_ix)
assert (torch.diff(sp_ip).numpy() < np.array(BLOCKS)).any(), "no selection"
for r in range(len(BLOCKS)):       # the partial last block stays last
    if BLOCKS[r]:
        assert sp_ix[sp_ip[r + 1] - 1] == ids[indptr[r + 1] - 1], r
check(o_d, lse_d, q, k, v, sp_ip.numpy(), sp_ix.numpy(), last, G,
      what="decode")
dstep = torch.compile(lambda *a: flow.decode(*a), fullgraph=True)
o_dc, lse_dc, _, _ = dstep(T["q"], cache, T["indptr"], T["ids"], T["last"])
assert torch.equal(o_dc, o_d) and torch.equal(lse_dc, lse_d)

# eager mode: same selection, same attention; gradients flow to q and v.
from vortex.flows.block_sparse_attention import BlockSparseAttention  # noqa
qg = T["q"].clone().requires_grad_(True)
vg = cache["v"].clone().requires_grad_(True)
ecache = dict(cache, v=vg)
o_e, lse_e, _, e_ip, e_ix = eager.decode(
    BlockSparseAttention(), qg, ecache, T["indptr"], T["ids"], T["last"],
    config)
assert torch.equal(e_ip, sp_ip)
torch.testing.assert_close(o_e, o_d, rtol=2e-5, atol=2e-5)
torch.testing.assert_close(lse_e, lse_d, rtol=2e-5, atol=2e-5)
o_e.square().sum().backward()
assert qg.grad is not None and torch.isfinite(qg.grad).all()
assert torch.isfinite(vg.grad).all() and vg.grad.abs().sum() > 0
print("attend, decode, compile, eager: ok")

# -- dense mode against SDPA (math backend) -----------------------------------
def sdpa_rows(qt, tokens):
    out = torch.zeros_like(qt)
    for r in range(len(BLOCKS)):
        blocks = ids[indptr[r]:indptr[r + 1]]
        if not len(blocks):
            continue
        keys = torch.cat([torch.from_numpy(k[b]) for b in blocks])
        vals = torch.cat([torch.from_numpy(v[b]) for b in blocks])
        n = keys.shape[0] - (B - int(last[r]))
        keys, vals = keys[:n], vals[:n]
        # Bottom-right causal: query token t sees all but the last T-1-t.
        t = torch.arange(tokens * G) // G
        mask = torch.arange(n)[None, :] < (n - (tokens - 1 - t))[:, None]
        with sdpa_kernel(SDPBackend.MATH):
            out[r] = F.scaled_dot_product_attention(
                qt[r][None], keys[None], vals[None], attn_mask=mask[None])[0]
        out[r][~mask.any(1)] = 0
    return out


torch.testing.assert_close(o, sdpa_rows(T["q"], 1), rtol=1e-5, atol=1e-5)
flow3, _ = compiled(query_tokens=3)
q3 = torch.randn(len(BLOCKS), 3 * G, D)
o3, _ = flow3.attend(q3, cache, T["indptr"], T["ids"], T["last"])
torch.testing.assert_close(o3, sdpa_rows(q3, 3), rtol=1e-5, atol=1e-5)
print("dense mode vs SDPA: ok")

# -- bad input: refused by name, nothing written -----------------------------
def refused(name, fn, *watched):
    before = [w.clone() for w in watched]
    try:
        fn()
    except ValueError as err:
        assert name in str(err).split(":")[0], (name, str(err))
    else:
        raise AssertionError(f"{name}: accepted")
    for w, b in zip(watched, before):
        assert torch.equal(w, b), f"{name}: written"


def att(**over):
    a = dict(q=T["q"], cache=cache, kv_indptr=T["indptr"], kv_indices=T["ids"],
             kv_last_len=T["last"], o=o_buf, lse=lse_buf)
    a.update(over)
    return lambda: flow.attend(**a)


o_buf.fill_(5.0), lse_buf.fill_(5.0)
bad_last = T["last"].clone()
bad_last[3] = 0
over_last = T["last"].clone()
over_last[2] = B + 1
bad_ids = T["ids"].clone()
bad_ids[-1] = k.shape[0]
cases = [
    ("kv_indptr", att(kv_indptr=T["indptr"][:-1])),
    ("kv_indptr", att(kv_indptr=torch.flip(T["indptr"], [0]).contiguous())),
    ("kv_indices", att(kv_indices=bad_ids)),
    ("kv_indices", att(kv_indices=T["ids"].long())),
    ("kv_last_len", att(kv_last_len=bad_last)),
    ("kv_last_len", att(kv_last_len=over_last)),
    ("kv_last_len", att(kv_last_len=T["last"][:-1])),
    ("q", att(q=T["q"].double())),
    ("o", att(o=torch.zeros(len(BLOCKS), G, D + 1))),
    ("lse", att(lse=torch.zeros(q.shape[:2], dtype=torch.float64))),
    ("o", att(o=T["q"])),
    ("sm_scale", att(sm_scale="big")),
]
for name, fn in cases:
    refused(name, fn, o_buf, lse_buf)
sp_ip_buf = torch.full_like(T["indptr"], 9)
sp_ix_buf = torch.full_like(T["ids"], 9)
centroids = cache["centroids"].clone()
for name, last_arg in (("kv_last_len", bad_last),
                       ("kv_last_len", T["last"][:-1])):
    refused(name, lambda: flow.decode(
        T["q"], cache, T["indptr"], T["ids"], last_arg, sp_ip_buf, sp_ix_buf,
        o_buf, lse_buf), o_buf, lse_buf, sp_ip_buf, sp_ix_buf)
assert torch.equal(cache["centroids"], centroids)
print("bad input: ok")

# -- decode refused where the selection can drop the tokens it needs ---------
for knobs, tokens in (({"reserved_eos": 0}, 1),
                      ({"reserved_eos": 1, "query_tokens": 4}, 4)):
    other, _ = compiled(**knobs)
    qx = torch.randn(len(BLOCKS), tokens * G, D)
    refused("reserved_eos", lambda: other.decode(
        qx, cache, T["indptr"], T["ids"], T["last"]), o_buf)
    o_x, lse_x = other.attend(qx, cache, T["indptr"], T["ids"], T["last"])
    check(o_x, lse_x, qx.numpy(), k, v, indptr, ids, last, G,
          what=f"attend {knobs}")
print("decode refusals: ok")

# -- a union selection pins the row's last block at its tail: decode is
# exact there even with reserved_eos = 0, for T <= 2 (and refused, naming
# q, beyond) ----------------------------------------------------------------
TrtllmBlockSparseAttention = load_module(os.path.join(
    os.path.dirname(__file__), "..", "Inputs", "trtllm_flow.py")).TrtllmBlockSparseAttention


def union_flow(tokens):
    cfg = vortex.FlowConfig(block_size=B, page_size=B, head_dim=D,
                            group_size=G, reserved_eos=0, query_tokens=tokens,
                            intermediate_dtype="f32", kv_dtype="f32")
    return vortex.load(vortex.compile(TrtllmBlockSparseAttention, cfg,
                                      target="cpu"))


UBLOCKS = [0, 1, 3, 40, 55]
uq, uk, uv, uip, uids, ulast = make_case(rng, UBLOCKS, B, D, G)
ucache = {"k": torch.from_numpy(uk), "v": torch.from_numpy(uv),
          "centroids": torch.from_numpy(
              np.nan_to_num(uk).mean(1, keepdims=True))}
ut = [torch.from_numpy(a) for a in (uq, uip, uids, ulast)]
u_o, u_lse, u_sp, u_sx = union_flow(1).decode(ut[0], ucache, *ut[1:])
assert (torch.diff(u_sp).numpy() < np.array(UBLOCKS)).any(), "no selection"
for r in range(len(UBLOCKS)):
    if UBLOCKS[r]:
        assert u_sx[u_sp[r + 1] - 1] == uids[uip[r + 1] - 1], r
check(u_o, u_lse, uq, uk, uv, u_sp.numpy(), u_sx.numpy(), ulast, G,
      what="union decode")
refused("q", lambda: union_flow(3).decode(
    torch.randn(len(UBLOCKS), 3 * G, D), ucache, *ut[1:]), o_buf)
print("union decode: ok")
