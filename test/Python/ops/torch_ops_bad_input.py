# RUN: %python %s
# REQUIRES: torch, numpy
#
# Bad input to the torch ops (vortex.load(...).indexer / .cache_step) on
# the CPU impl: every case raises ValueError whose message names the
# argument, and NOTHING is written: every cache tensor, input and
# caller-owned output buffer is snapshot before the call and must be
# bit-identical (torch.equal) after it. The fields start as garbage and the
# output buffers hold sentinels, so any write shows.
#
# Covered: wrong device (meta tensors: CUDA is absent from this torch),
# wrong dtype, wrong shape (q group size / head dim / rank, field inner
# shape and pool size, indptr length, caller-owned output lengths),
# non-contiguous tensors (transposed / strided views), aliasing outputs
# (sparse_kv_indptr and sparse_kv_indices overlapping views of one buffer,
# an output aliasing an input, a written field aliasing k or v, two written
# fields aliasing each other), a missing cache key and a cache that is not
# a dict, bad CSR values, out-of-range and repeated block ids (running_avg
# saves per-block state: repeats are rejected there, accepted by Quest),
# bad loc (2-D, float, not a tensor), num_kv_heads <= 0 (and not an int),
# both or neither of block_ids / loc, and `stream=` with an object that is
# not a torch.cuda.Stream (a CPU stream included). CUDA streams cannot be
# made with the CPU torch of CI, so "a stream of another CUDA device" and
# "tensors on another CUDA device" run on the GPU machine.

import torch

from vortex.testing import torch_checks as tt
from vortex.testing import Tally

tally = Tally()


def tensors_of(*things):
    """{label: tensor} of the CPU tensors in `things` (tensors, dicts of
    tensors); meta tensors hold no data and are left out."""
    out = {}
    for i, t in enumerate(things):
        items = t.items() if isinstance(t, dict) else [(str(i), t)]
        for n, x in items:
            if isinstance(x, torch.Tensor) and x.device.type == "cpu":
                out[f"{i}.{n}"] = x
    return out


def check(what, fn, needles, *watched):
    """fn() must raise ValueError whose message contains every needle, and
    leave every watched tensor bit-identical."""
    if isinstance(needles, str):
        needles = [needles]
    watch = tensors_of(*watched)
    before = {n: t.clone() for n, t in watch.items()}
    try:
        fn()
    except ValueError as err:
        msg = str(err)
        written = [n for n in watch if not torch.equal(before[n], watch[n])]
        missing = [s for s in needles if s not in msg]
        tally(not written and not missing, f"{what}: ValueError: {msg}",
              (f"the message does not name {missing}; " if missing else "")
              + (f"written: {written}" if written else ""))
        return
    except Exception as err:  # noqa: BLE001
        written = [n for n in watch if not torch.equal(before[n], watch[n])]
        tally(False, f"{what}: raised {type(err).__name__}, not ValueError",
              f"{err}" + (f"; written: {written}" if written else ""))
        return
    written = [n for n in watch if not torch.equal(before[n], watch[n])]
    tally(False, f"{what}: no error",
          f"expected ValueError naming {needles}"
          + (f"; written: {written}" if written else "; nothing written"))


def accepted(what, fn):
    try:
        fn()
    except Exception as err:  # noqa: BLE001
        tally(False, f"{what}: accepted", f"{type(err).__name__}: {err}")
        return
    tally(True, f"{what}: accepted")


def strided(t):
    """A non-contiguous view with t's shape and values (every other element
    of the last axis of a buffer twice as wide)."""
    buf = torch.empty(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype)
    v = buf[..., ::2]
    v.copy_(t)
    return v


def strided1(t):
    buf = torch.zeros(2 * t.shape[0] + 1, dtype=t.dtype)
    v = buf[::2][:t.shape[0]]
    v.copy_(t)
    return v


# -- running_avg_block_sparse: its indexer saves running_score, its cache step
#    writes centroids and running_score -------------------------------------
flow = tt.load_flow("running_avg_block_sparse")
p = tt.make_problem(flow, (40, 3, 0, 50, 1), seed=5, spare=7)
NB, ROWS, TOTAL = p.num_blocks, p.q.shape[0], p.indices.shape[0]
cache, q, indptr, indices = p.cache, p.q, p.indptr, p.indices
sp_buf = torch.full((ROWS + 1,), -3, dtype=torch.int32)
si_buf = torch.full((TOTAL + 4,), -5, dtype=torch.int32)
ids = p.indices[:20].clone()


def idx(**kw):
    """flow.indexer with the problem's arguments, some replaced."""
    a = dict(q=q, cache=cache, dense_kv_indptr=indptr,
             dense_kv_indices=indices, sparse_kv_indptr=sp_buf,
             sparse_kv_indices=si_buf)
    a.update(kw)
    return lambda: flow.indexer(**a)


def cstep(**kw):
    a = dict(cache=cache, block_ids=ids)
    a.update(kw)
    return lambda: flow.cache_step(**a)


def with_cache(name, t):
    return dict(cache, **{name: t})


W = (cache, q, indptr, indices, sp_buf, si_buf, ids)

# Sanity: the valid calls work (on copies: the watched tensors stay fresh).
accepted("valid indexer (caller-owned outputs)",
         lambda: flow.indexer(q, tt.clone_cache(cache), indptr, indices,
                              sp_buf.clone(), si_buf.clone()))
accepted("valid cache_step", lambda: flow.cache_step(tt.clone_cache(cache),
                                                     ids))

# Wrong device. CUDA is absent here; a meta tensor is a tensor on a device
# type other than cpu.
meta = lambda t: t.to("meta")  # noqa: E731
check("indexer: q on meta", idx(q=meta(q)), "q", *W)
check("indexer: k on meta", idx(cache=with_cache("k", meta(cache["k"]))),
      "k", *W)
check("indexer: running_score (written) on meta",
      idx(cache=with_cache("running_score", meta(cache["running_score"]))),
      "running_score", *W)
check("indexer: dense_kv_indptr on meta", idx(dense_kv_indptr=meta(indptr)),
      "dense_kv_indptr", *W)
check("indexer: caller-owned sparse_kv_indices on meta",
      idx(sparse_kv_indices=meta(si_buf)), "sparse_kv_indices", *W)
check("cache_step: block_ids on meta", cstep(block_ids=meta(ids)),
      "block_ids", *W)
check("cache_step: centroids on meta",
      cstep(cache=with_cache("centroids", meta(cache["centroids"]))),
      "centroids", *W)

# Wrong dtype.
check("indexer: bf16 q", idx(q=q.to(torch.bfloat16)), "q", *W)
check("indexer: f64 q", idx(q=q.double()), "q", *W)
check("indexer: bf16 k", idx(cache=with_cache("k", cache["k"].bfloat16())),
      "k", *W)
check("indexer: f16 centroids",
      idx(cache=with_cache("centroids", cache["centroids"].half())),
      "centroids", *W)
check("indexer: int64 dense_kv_indptr", idx(dense_kv_indptr=indptr.long()),
      "dense_kv_indptr", *W)
check("indexer: int64 dense_kv_indices", idx(dense_kv_indices=indices.long()),
      "dense_kv_indices", *W)
check("indexer: int64 caller-owned sparse_kv_indptr",
      idx(sparse_kv_indptr=sp_buf.long()), "sparse_kv_indptr", *W)
check("indexer: f32 caller-owned sparse_kv_indices",
      idx(sparse_kv_indices=si_buf.float()), "sparse_kv_indices", *W)
check("cache_step: int64 block_ids", cstep(block_ids=ids.long()),
      "block_ids", *W)
check("cache_step: bf16 running_score",
      cstep(cache=with_cache("running_score",
                             cache["running_score"].bfloat16())),
      "running_score", *W)

# Wrong shape.
check("indexer: q group size 4 (flow: 8)", idx(q=q[:, :4].contiguous()),
      "q", *W)
check("indexer: q head_dim 64 (flow: 128)", idx(q=q[:, :, :64].contiguous()),
      "q", *W)
check("indexer: q of rank 2", idx(q=q.reshape(ROWS, -1)), "q", *W)
check("indexer: q with one row too many",
      idx(q=torch.cat([q, q[:1]]).contiguous()), "q", *W)
check("indexer: centroids inner shape [1, 64]",
      idx(cache=with_cache("centroids",
                           cache["centroids"][:, :, :64].contiguous())),
      "centroids", *W)
check("indexer: running_score inner shape [1, 2]",
      idx(cache=with_cache("running_score",
                           torch.zeros(NB, 1, 2))), "running_score", *W)
check("indexer: centroids of another pool size",
      idx(cache=with_cache("centroids", cache["centroids"][:-1].contiguous())),
      "centroids", *W)
check("indexer: v of another pool size",
      idx(cache=with_cache("v", cache["v"][:-1].contiguous())), "v", *W)
check("indexer: k block size 8 (flow: 16)",
      idx(cache=with_cache("k", cache["k"][:, :8].contiguous())), "k", *W)
# One indptr entry too many: rows are read off dense_kv_indptr, so q
# disagrees; the message names both.
check("indexer: dense_kv_indptr of rows + 2 entries",
      idx(dense_kv_indptr=torch.cat([indptr, indptr[-1:]]),
          sparse_kv_indptr=None), ["dense_kv_indptr", "q"], *W)
check("indexer: caller-owned sparse_kv_indptr of rows entries",
      idx(sparse_kv_indptr=sp_buf[:-1]), "sparse_kv_indptr", *W)
check("indexer: caller-owned sparse_kv_indices shorter than total",
      idx(sparse_kv_indices=si_buf[:TOTAL - 1]), "sparse_kv_indices", *W)
check("indexer: caller-owned sparse_kv_indices 2-D",
      idx(sparse_kv_indices=si_buf[:TOTAL].reshape(1, TOTAL)),
      "sparse_kv_indices", *W)
check("cache_step: block_ids 2-D", cstep(block_ids=ids.reshape(4, 5)),
      "block_ids", *W)
check("cache_step: centroids inner shape [2, 128]",
      cstep(cache=with_cache("centroids", torch.zeros(NB, 2, 128))),
      "centroids", *W)

# Non-contiguous tensors (same shape and values, strided views).
qt = torch.empty(ROWS, q.shape[2], q.shape[1]).transpose(1, 2)
qt.copy_(q)
check("indexer: transposed q view", idx(q=qt), "q", *W)
check("indexer: strided k", idx(cache=with_cache("k", strided(cache["k"]))),
      "k", *W)
check("indexer: strided running_score (written)",
      idx(cache=with_cache("running_score",
                           strided(cache["running_score"]))),
      "running_score", *W)
check("indexer: strided dense_kv_indptr",
      idx(dense_kv_indptr=strided1(indptr)), "dense_kv_indptr", *W)
check("indexer: strided dense_kv_indices",
      idx(dense_kv_indices=strided1(indices)), "dense_kv_indices", *W)
si_strided = torch.full((2 * (TOTAL + 4),), -5, dtype=torch.int32)[::2]
check("indexer: strided caller-owned sparse_kv_indices",
      idx(sparse_kv_indices=si_strided), "sparse_kv_indices", *W, si_strided)
sp_strided = torch.full((2 * (ROWS + 1),), -3, dtype=torch.int32)[::2]
check("indexer: strided caller-owned sparse_kv_indptr",
      idx(sparse_kv_indptr=sp_strided), "sparse_kv_indptr", *W, sp_strided)
check("cache_step: strided block_ids", cstep(block_ids=strided1(ids)),
      "block_ids", *W)
check("cache_step: strided centroids",
      cstep(cache=with_cache("centroids", strided(cache["centroids"]))),
      "centroids", *W)

# Aliasing outputs.
one = torch.full((ROWS + 1 + TOTAL,), -9, dtype=torch.int32)
check("indexer: sparse_kv_indptr and sparse_kv_indices overlapping views of "
      "one buffer", idx(sparse_kv_indptr=one[:ROWS + 1],
                        sparse_kv_indices=one[ROWS:]),
      ["sparse_kv_indptr", "sparse_kv_indices"], *W, one)
check("indexer: sparse_kv_indptr and sparse_kv_indices both at the start of "
      "one buffer",
      idx(sparse_kv_indptr=one[:ROWS + 1], sparse_kv_indices=one[:TOTAL]),
      ["sparse_kv_indptr", "sparse_kv_indices"], *W, one)
ip_copy = indptr.clone()
check("indexer: sparse_kv_indptr is dense_kv_indptr",
      idx(dense_kv_indptr=ip_copy, sparse_kv_indptr=ip_copy),
      ["sparse_kv_indptr", "dense_kv_indptr"], *W, ip_copy)
ix_copy = indices.clone()
check("indexer: sparse_kv_indices is dense_kv_indices",
      idx(dense_kv_indices=ix_copy, sparse_kv_indices=ix_copy),
      ["sparse_kv_indices", "dense_kv_indices"], *W, ix_copy)
v_alias = cache["v"].clone()
rs_in_v = v_alias.view(-1)[:NB].view(NB, 1, 1)
check("indexer: running_score (written) aliases v",
      idx(cache=dict(cache, v=v_alias, running_score=rs_in_v)),
      ["running_score", "v"], *W, v_alias)
k_alias = cache["k"].clone()
c_in_k = k_alias.view(-1)[:NB * 128].view(NB, 1, 128)
check("cache_step: centroids (written) aliases k",
      cstep(cache=dict(cache, k=k_alias, centroids=c_in_k)),
      ["centroids", "k"], *W, k_alias)
rs_in_c = cache["centroids"].clone()
check("cache_step: running_score (written) inside centroids (written)",
      cstep(cache=dict(cache, centroids=rs_in_c,
                       running_score=rs_in_c.view(-1)[5:5 + NB].view(NB, 1,
                                                                    1))),
      ["running_score", "centroids"], *W, rs_in_c)
ids_alias = torch.arange(NB, dtype=torch.int32)
check("cache_step: block_ids alias running_score (written)",
      cstep(cache=dict(cache, running_score=ids_alias.view(torch.float32)
                       .view(NB, 1, 1)), block_ids=ids_alias),
      "running_score", *W, ids_alias)

# Missing cache keys; a cache that is not a dict.
no_c = {n: t for n, t in cache.items() if n != "centroids"}
check("indexer: cache without centroids", idx(cache=no_c),
      ["cache", "centroids"], *W)
no_rs = {n: t for n, t in cache.items() if n != "running_score"}
check("cache_step: cache without running_score", cstep(cache=no_rs),
      ["cache", "running_score"], *W)
no_k = {n: t for n, t in cache.items() if n != "k"}
check("cache_step: cache without k", cstep(cache=no_k), ["cache", "'k'"], *W)
check("indexer: cache as a list", idx(cache=list(cache.values())), "cache",
      *W)
check("cache_step: cache as a list", cstep(cache=list(cache.values())),
      "cache", *W)

# CSR values (the indexer's dense CSR).
bad = indptr.clone()
bad[0] = 1
check("indexer: dense_kv_indptr not starting at 0",
      idx(dense_kv_indptr=bad), "dense_kv_indptr", *W)
bad = indptr.clone()
bad[1], bad[2] = bad[2].item(), bad[1].item()
check("indexer: dense_kv_indptr decreasing", idx(dense_kv_indptr=bad),
      "dense_kv_indptr", *W)
bad = indptr.clone()
bad[-1] -= 1
check("indexer: dense_kv_indptr not ending at total",
      idx(dense_kv_indptr=bad), "dense_kv_indptr", *W)

# Out-of-range and repeated block ids.
for what, value in (("= num_blocks", NB), ("negative", -1),
                    ("huge", 2 ** 31 - 1)):
    bad = indices.clone()
    bad[7] = value
    check(f"indexer: dense_kv_indices block id {what}",
          idx(dense_kv_indices=bad), "dense_kv_indices", *W)
bad = indices.clone()
bad[45] = bad[3]
check("indexer (running_avg saves per-block state): repeated block id in "
      "dense_kv_indices", idx(dense_kv_indices=bad),
      ["dense_kv_indices", "more than once"], *W)
for what, value in (("= num_blocks", NB), ("huge", 2 ** 31 - 1)):
    bad = ids.clone()
    bad[4] = value
    check(f"cache_step: block id {what}", cstep(block_ids=bad), "block_ids",
          *W)

# The loc form.
loc = torch.tensor([15, 31, -1, 47], dtype=torch.int64)
check("cache_step: 2-D loc", cstep(block_ids=None, loc=loc.reshape(2, 2),
                                   num_kv_heads=2), "loc", *W)
check("cache_step: float loc", cstep(block_ids=None, loc=loc.float(),
                                     num_kv_heads=2), "loc", *W)
check("cache_step: loc as a list", cstep(block_ids=None, loc=loc.tolist(),
                                         num_kv_heads=2), "loc", *W)
for h in (0, -1, True, 2.0, None):
    check(f"cache_step: loc with num_kv_heads={h!r}",
          cstep(block_ids=None, loc=loc, num_kv_heads=h), "num_kv_heads", *W)
check("block_ids_from_loc: num_kv_heads=0",
      lambda: flow.block_ids_from_loc(loc, 0), "num_kv_heads", *W)
check("cache_step: both block_ids and loc",
      cstep(loc=loc, num_kv_heads=2), ["block_ids", "loc"], *W)
check("cache_step: neither block_ids nor loc", cstep(block_ids=None),
      ["block_ids", "loc"], *W)

# stream=: not a torch.cuda.Stream. (No CUDA here: a torch.cuda.Stream
# cannot be made, so "a CUDA stream for CPU tensors" and "a stream of
# another CUDA device" run on the GPU machine.)
for what, s in (("object()", object()), ("a string", "cuda:0"),
                ("torch.cpu.Stream()", torch.cpu.Stream()),
                ("torch.Stream('cpu')", torch.Stream("cpu"))):
    check(f"indexer: stream={what}", idx(stream=s), "stream", *W)
    check(f"cache_step: stream={what}", cstep(stream=s), "stream", *W)
    check(f"cache_step(loc=): stream={what}",
          cstep(block_ids=None, loc=loc, num_kv_heads=2, stream=s),
          "stream", *W)

# The same checks hold inside torch.compile(fullgraph=True): the fake impl
# accepts anything, the CPU impl validates at run time, before any write.


def compiled_indexer(q, cache, indptr, indices, sp, si):
    flow.indexer(q * 1, cache, indptr, indices, sp, si)


def compiled_cache_step(cache, block_ids):
    flow.cache_step(cache, block_ids)


torch._dynamo.reset()
cidx = torch.compile(compiled_indexer, fullgraph=True)
cstep_c = torch.compile(compiled_cache_step, fullgraph=True)
accepted("compiled indexer, valid call",
         lambda: cidx(q, tt.clone_cache(cache), indptr, indices,
                      sp_buf.clone(), si_buf.clone()))
bad = indices.clone()
bad[7] = NB
check("compiled indexer: dense_kv_indices block id = num_blocks",
      lambda: cidx(q, cache, indptr, bad, sp_buf, si_buf),
      "dense_kv_indices", *W)
one = torch.full((ROWS + 1 + TOTAL,), -9, dtype=torch.int32)
check("compiled indexer: overlapping sparse_kv_indptr / sparse_kv_indices",
      lambda: cidx(q, cache, indptr, indices, one[:ROWS + 1],
                   one[ROWS:ROWS + TOTAL]),
      ["sparse_kv_indptr", "sparse_kv_indices"], *W, one)
ip_copy = indptr.clone()
check("compiled indexer: sparse_kv_indptr is dense_kv_indptr",
      lambda: cidx(q, cache, ip_copy, indices, ip_copy, si_buf),
      ["sparse_kv_indptr", "dense_kv_indptr"], *W, ip_copy)
check("compiled indexer: transposed q view",
      lambda: cidx(qt, cache, indptr, indices, sp_buf, si_buf), "q", *W)
bad = ids.clone()
bad[4] = NB
check("compiled cache_step: block id = num_blocks",
      lambda: cstep_c(cache, bad), "block_ids", *W)
k_alias = cache["k"].clone()
check("compiled cache_step: centroids (written) aliases k",
      lambda: cstep_c(dict(cache, k=k_alias,
                           centroids=k_alias.view(-1)[:NB * 128]
                           .view(NB, 1, 128)), ids),
      ["centroids", "k"], *W, k_alias)
torch._dynamo.reset()

# -- gqa_quest_sparse_attention: two fields of equal shape (max, min); its
#    indexer saves nothing ----------------------------------------------------
quest = tt.load_flow("gqa_quest_sparse_attention")
pq = tt.make_problem(quest, (40, 0, 3, 33), seed=6)
WQ = (pq.cache, pq.q, pq.indptr, pq.indices)
same = pq.cache["max"]
check("quest cache_step: min is max (two written fields, one buffer)",
      lambda: quest.cache_step(dict(pq.cache, min=same), pq.indices),
      ["max", "min"], *WQ)
check("quest indexer: q on meta",
      lambda: quest.indexer(pq.q.to("meta"), pq.cache, pq.indptr,
                            pq.indices), "q", *WQ)
check("quest indexer: strided min",
      lambda: quest.indexer(pq.q, dict(pq.cache, min=strided(pq.cache["min"])),
                            pq.indptr, pq.indices), "min", *WQ)
bad = pq.indices.clone()
bad[10] = bad[2]
accepted("quest indexer (saves no state): repeated block id",
         lambda: quest.indexer(pq.q, pq.cache, pq.indptr, bad))

tally.exit(summary=True)
