"""Problems and checks of attention (test/Python/attend_*.py): paged pools
with NaN past every row's length and in every block no row uses, CSRs with
rows of 0, 1 and several blocks, partial last blocks, and the comparison
against the float64 reference (vortex.semantics.reference_attention)."""

import os

import numpy as np

from ..semantics.reference_attention import attend as reference_attend

# f32 compute against the float64 reference: a softmax over a few hundred
# tokens of D <= 128 loses a few ulps of f32.
RTOL = ATOL = 2e-5


def make_case(rng, blocks_per_row, block_size, head_dim, heads,
              spare_blocks=3, last_lens=None):
    """q [rows, heads, D], k and v [num_blocks, block_size, D] (f32), the
    CSR (block ids shuffled over the pool) and kv_last_len. Every token
    past a row's length, and every block no row uses, holds NaN."""
    rows = len(blocks_per_row)
    total = int(sum(blocks_per_row))
    num_blocks = total + spare_blocks
    k = np.full((num_blocks, block_size, head_dim), np.nan, np.float32)
    v = np.full((num_blocks, block_size, head_dim), np.nan, np.float32)
    ids = rng.permutation(num_blocks)[:total].astype(np.int32)
    indptr = np.zeros(rows + 1, np.int32)
    indptr[1:] = np.cumsum(blocks_per_row)
    if last_lens is None:
        last_lens = rng.integers(1, block_size + 1, rows)
    last = np.asarray(last_lens, np.int32)
    for r in range(rows):
        row = ids[indptr[r]:indptr[r + 1]]
        for n, b in enumerate(row):
            count = block_size if n + 1 < len(row) else int(last[r])
            k[b, :count] = rng.standard_normal((count, head_dim))
            v[b, :count] = rng.standard_normal((count, head_dim))
    q = rng.standard_normal((rows, heads, head_dim)).astype(np.float32)
    return q, k, v, indptr, ids, last


def check(o, lse, q, k, v, indptr, indices, last, group_size, sm_scale=None,
          what="", values=None):
    """o and lse (numpy or torch) against the float64 reference; with
    `values`, o holds only v's first `values` channels (an MLA flow)."""
    o = np.asarray(getattr(o, "numpy", lambda: o)())
    lse = np.asarray(getattr(lse, "numpy", lambda: lse)())
    o_ref, lse_ref = reference_attend(q, k, v, indptr, indices, last,
                                      group_size, sm_scale)
    o_ref = o_ref[..., :values]
    assert np.isfinite(o).all(), (what, "non-finite o")
    np.testing.assert_allclose(o, o_ref, rtol=RTOL, atol=ATOL, err_msg=what)
    none = np.isneginf(lse_ref)
    assert (np.isneginf(lse) == none).all(), (what, lse, lse_ref)
    np.testing.assert_allclose(lse[~none], lse_ref[~none], rtol=RTOL,
                               atol=ATOL, err_msg=what)
    assert (o[none] == 0).all(), what
    return int(none.sum())


def check_shipped_decode(names):
    """Every named shipped flow (examples/<name>.mlir) compiled for the CPU:
    after a cache step over the completed blocks, flow.decode (the torch op)
    selects what flow.indexer selects, keeps every row's partial last block
    last, and attends over exactly that selection (the float64 reference
    over the returned sparse CSR). Rows are long enough to need selection;
    the pool holds NaN past every row's length."""
    import torch

    from ..compiler import driver as compiler
    from ..runtime.ops import load
    from . import EXAMPLES

    rng = np.random.default_rng(5)
    for name in names:
        flow = load(compiler.compile(os.path.join(EXAMPLES, name + ".mlir"),
                                     target="cpu"))
        cfg = flow.config
        block, dim, group = (int(cfg["block_size"]), int(cfg["head_dim"]),
                             int(cfg["group_size"]))
        heads = flow.manifest.tensors["q"].extents({"rows": 1})[1]
        if flow.param_names:
            flow.bind({p: torch.randn(flow.manifest.tensors[p].extents({}))
                       for p in flow.param_names})
        blocks = [0, 1, 5, 40, 70]
        q, k, v, indptr, ids, last = make_case(rng, blocks, block, dim, heads)
        mla = flow.manifest.is_mla
        if mla:     # one pool: v is the latent, o its kv_c channels
            v = k
        cache = flow.allocate_cache(k.shape[0])
        if mla:
            cache["v"] = cache["k"]
        cache["k"].copy_(torch.from_numpy(np.nan_to_num(k, nan=0.0)))
        cache["v"].copy_(torch.from_numpy(np.nan_to_num(v, nan=0.0)))
        full = [int(ids[e]) for r in range(len(blocks))
                for e in range(indptr[r], indptr[r + 1])
                if e + 1 < indptr[r + 1] or last[r] == block]
        flow.cache_step(cache, torch.tensor(full, dtype=torch.int32))
        # Poison after the summaries: what no row's length covers is NaN.
        cache["k"].copy_(torch.from_numpy(k))
        cache["v"].copy_(torch.from_numpy(v))
        t = {n: torch.from_numpy(a) for n, a in
             dict(q=q, indptr=indptr, ids=ids, last=last).items()}
        before = {n: x.clone() for n, x in cache.items()}
        pools = dict(cache)
        if mla:     # as vortex_torch names it
            pools["latent"] = pools.pop("k")
            del pools["v"]
        o, lse, sp_ip, sp_ix = flow.decode(t["q"], pools, t["indptr"],
                                           t["ids"], t["last"])
        after = {n: x.clone() for n, x in cache.items()}
        for n, x in before.items():       # the indexer alone, from the start
            cache[n].copy_(x)
        ip2, ix2 = flow.indexer(t["q"], cache, t["indptr"], t["ids"])
        for n, x in after.items():   # decode saved what the indexer saves
            torch.testing.assert_close(cache[n], x, rtol=0, atol=0,
                                       equal_nan=True, msg=f"{name}: {n}")
        assert torch.equal(sp_ip, ip2) and torch.equal(sp_ix, ix2), name
        kept = torch.diff(sp_ip).numpy()
        assert (kept < np.array(blocks)).any(), (name, "no row selected")
        for r in range(len(blocks)):
            if blocks[r]:
                assert sp_ix[sp_ip[r + 1] - 1] == ids[indptr[r + 1] - 1], \
                    (name, r)
        check(o, lse, q, k, v, sp_ip.numpy(), sp_ix.numpy(), last, group,
              what=name,
              values=flow.manifest.kv_lora_rank if mla else None)
        print(f"decode {name}: ok (kept {kept.tolist()} of {blocks})")
