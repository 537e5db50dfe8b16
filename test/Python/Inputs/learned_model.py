"""Flows with per-layer weights (LearnedQuery, FactorScore,
LearnedDescriptor, a per-layer Parameter) and their float64 numpy model,
shared by test/Python/eager/learned_ops.py,
test/Python/eager/learned_descriptor.py and
test/Python/cpu/learned_layers.py.

Sizes: L = 3 weight rows, reached through the lookup LOOKUP (global layer
id -> row); H = 2 query heads (group size 2), D = 16, rank R = 4, M = 2
landmarks. Each flow saves its score into the field `probe` (positions
[0, n - eos) of the rows that need selection) so the compiled flow's score
can be compared, not only its selection.

The model is numpy in float64 and written from the ops' formulas
(../shared/docs/vortex_torch_reference.md), not from the ops the tracer
writes (the grouped GeMM, Reshape, Multiply, Sum, Max;
vortex.learned_descriptor).
"""

import numpy as np

import vortex
from vortex.abs import Parameter
from vortex.cache import LearnedDescriptor
from vortex.cache import Mean as CMean
from vortex.cache import Reshape as CReshape
from vortex.flow import vFlow
from vortex.indexer import FactorScore, GeMM, LearnedQuery, Multiply, Save, topK
from vortex.semantics import reference

L, H, D, R, M = 3, 2, 16, 4, 2
LOOKUP = [2, 0, 1, 1]        # 4 global layers onto 3 rows
BS, TOPK, BOS, EOS = 4, 2, 1, 1
SCALING = 0.5

CONFIG = vortex.FlowConfig(block_size=BS, page_size=BS, head_dim=D,
                           group_size=H, topk_val=TOPK, topk_ratio=0.0,
                           reserved_bos=BOS, reserved_eos=EOS,
                           intermediate_dtype="f32", kv_dtype="f32")
RCFG = reference.Config.from_dict(dict(
    block_size=BS, head_dim=D, group_size=H, topk_val=TOPK, topk_ratio=0.0,
    reserved_bos=BOS, reserved_eos=EOS))


class LearnedQueryFlow(vFlow):
    """score(p) = < LearnedQuery(q) * u[l], c_p >, c_p = mean_t k_t."""

    def __init__(self, Wq, Wk, u, identity=False):
        super().__init__()
        import torch  # noqa: F401 (the weights are torch tensors)
        self.query = (LearnedQuery(scaling=SCALING) if identity else
                      LearnedQuery(Wq, Wk, LOOKUP, scaling=SCALING))
        self.u = Parameter(u, LOOKUP)               # [L, 1, D] per layer
        self.mul, self.gemm, self.save = Multiply(), GeMM(), Save()
        self.out, self.reduction = topK(), CMean(dim=1)

    def forward_indexer(self, q, o, cache, ctx):
        v = self.mul(self.query(q, ctx=ctx), self.u, ctx=ctx)
        score = self.gemm(v, cache["c"], ctx=ctx)
        self.save(score, cache["probe"], ctx=ctx)
        self.out(score, o, ctx=ctx)

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["c"], loc=loc, ctx=ctx)

    def create_cache(self, block_size, head_dim):
        return {"c": (1, head_dim), "probe": (1, 1)}


class FactorScoreFlow(vFlow):
    """score(p) = sum_h max_m < Wq[l, h]^T q_h, g_p[h m + m'] >, with g_p
    the block's centroid as [H*M, R] chunks."""

    def __init__(self, Wq):
        super().__init__()
        self.Wq = Parameter(Wq, LOOKUP)              # [L, H, D, R]
        self.score = FactorScore(self.Wq, H, M, R)
        self.save, self.out = Save(), topK()
        self.reduction, self.chunks = CMean(dim=1), CReshape(-1, H * M, R)

    def forward_indexer(self, q, o, cache, ctx):
        score = self.score(q, cache["g"], ctx=ctx)
        self.save(score, cache["probe"], ctx=ctx)
        self.out(score, o, ctx=ctx)

    def forward_cache(self, cache, loc, ctx):
        c = self.reduction(cache["k"], loc=loc, ctx=ctx)
        self.chunks(c, cache["g"], loc=loc, ctx=ctx)

    def create_cache(self, block_size, head_dim):
        return {"g": (H * M, R), "probe": (1, 1)}


class LearnedDescriptorFlow(vFlow):
    """FactorScoreFlow with learned descriptors: g_p = LearnedDescriptor(
    Wt, Wk) of the block's keys."""

    def __init__(self, Wt, Wk, Wq):
        super().__init__()
        self.Wt = Parameter(Wt, LOOKUP)              # [L, H, BS, M]
        self.Wk = Parameter(Wk, LOOKUP)              # [L, H, D, R]
        self.Wq = Parameter(Wq, LOOKUP)              # [L, H, D, R]
        self.score = FactorScore(self.Wq, H, M, R)
        self.save, self.out = Save(), topK()
        self.descriptor = LearnedDescriptor(self.Wt, self.Wk, H, M, R)

    def forward_indexer(self, q, o, cache, ctx):
        score = self.score(q, cache["g"], ctx=ctx)
        self.save(score, cache["probe"], ctx=ctx)
        self.out(score, o, ctx=ctx)

    def forward_cache(self, cache, loc, ctx):
        self.descriptor(cache["k"], cache["g"], loc=loc, ctx=ctx)

    def create_cache(self, block_size, head_dim):
        return {"g": (H * M, R), "probe": (1, 1)}


# ---------------------------------------------------------------------------
# The float64 model
# ---------------------------------------------------------------------------

def centroids(k):
    """[num_blocks, D]: the mean of each block's keys."""
    return np.asarray(k, np.float64).mean(axis=1)


def learned_query(q, Wq, Wk, layer, identity=False):
    """[rows, D]: scaling * sum_h Wk[l, h] (Wq[l, h]^T q_h)."""
    q = np.asarray(q, np.float64)
    if identity:
        return SCALING * q.sum(axis=1)
    row = LOOKUP[layer]
    out = np.zeros((q.shape[0], D))
    for b in range(q.shape[0]):
        for h in range(H):
            wq = np.asarray(Wq[row, h], np.float64)      # [D, R]
            wk = np.asarray(Wk[row, h], np.float64)
            out[b] += wk @ (wq.T @ q[b, h])
    return SCALING * out


def lq_scores(q, k, Wq, Wk, u, indptr, ids, layer, identity=False):
    """The score per CSR position of LearnedQueryFlow."""
    v = learned_query(q, Wq, Wk, layer, identity) * \
        np.asarray(u, np.float64)[LOOKUP[layer], 0][None, :]
    c = centroids(k)
    score = np.zeros(len(ids))
    for r in range(len(indptr) - 1):
        for s in range(indptr[r], indptr[r + 1]):
            score[s] = v[r] @ c[ids[s]]
    return score


def descriptors(k, Wt, Wk, layer):
    """[num_blocks, H*M, R]: g[h M + j] = sum_s Wt[l, h, s, j] k_s Wk[l, h],
    by loops over the heads, landmarks and tokens."""
    k = np.asarray(k, np.float64)
    wt = np.asarray(Wt, np.float64)[LOOKUP[layer]]      # [H, BS, M]
    wk = np.asarray(Wk, np.float64)[LOOKUP[layer]]      # [H, D, R]
    g = np.zeros((k.shape[0], H, M, R))
    for h in range(H):
        for j in range(M):
            for s in range(k.shape[1]):
                g[:, h, j] += wt[h, s, j] * (k[:, s] @ wk[h])
    return g.reshape(k.shape[0], H * M, R)


def fs_scores(q, k, Wq, indptr, ids, layer, g=None):
    """The score per CSR position of FactorScoreFlow (descriptors `g`
    [num_blocks, H*M, R]; default: the centroids' chunks)."""
    q = np.asarray(q, np.float64)
    w = np.asarray(Wq, np.float64)[LOOKUP[layer]]       # [H, D, R]
    g = centroids(k) if g is None else np.asarray(g, np.float64)
    g = g.reshape(-1, H, M, R)
    score = np.zeros(len(ids))
    for r in range(len(indptr) - 1):
        u = [w[h].T @ q[r, h] for h in range(H)]         # [R] per head
        for s in range(indptr[r], indptr[r + 1]):
            score[s] = sum(max(u[h] @ g[ids[s], h, m] for m in range(M))
                           for h in range(H))
    return score


def ld_scores(q, k, Wt, Wk, Wq, indptr, ids, layer):
    """The score per CSR position of LearnedDescriptorFlow."""
    return fs_scores(q, k, Wq, indptr, ids, layer,
                     descriptors(k, Wt, Wk, layer))


def select(score, indptr, ids):
    """(sparse_kv_indptr, sparse_kv_indices) of the float64 selection."""
    return reference.topk_select(score, reference.Csr(indptr, ids), RCFG)


def saved_positions(indptr):
    """The CSR positions a Save writes: [0, n - eos) of rows that need
    selection."""
    out = []
    for r in range(len(indptr) - 1):
        lo, hi = int(indptr[r]), int(indptr[r + 1])
        if RCFG.needs_selection(hi - lo):
            out += list(range(lo, hi - EOS))
    return out


def problem(seed, lengths=(0, 1, 4, 6, 9, 17)):
    """Random f32 q [rows, H, D], k [num_blocks, BS, D], a permuted CSR."""
    rng = np.random.default_rng(seed)
    total = sum(lengths)
    nb = total + 3
    q = rng.standard_normal((len(lengths), H, D)).astype(np.float32)
    k = rng.standard_normal((nb, BS, D)).astype(np.float32)
    ids = rng.permutation(nb)[:total].astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return q, k, indptr, ids


def eager_step(flow, q, k, indptr, ids, layer):
    """One eager cache step over `ids` and one eager indexer step, on
    zeroed fields: (cache, score, sparse indptr, sparse indices)."""
    import torch
    from vortex.semantics import eager
    fields = flow.create_cache(BS, D)
    cache = {"k": torch.from_numpy(k),
             "v": torch.zeros_like(torch.from_numpy(k))}
    cache.update({f: torch.zeros(k.shape[0], r, c)
                  for f, (r, c) in fields.items()})
    eager.cache_step(flow, cache, torch.from_numpy(ids), CONFIG, layer=layer)
    score, sp, si = eager.indexer(flow, torch.from_numpy(q), cache,
                                  torch.from_numpy(indptr),
                                  torch.from_numpy(ids), CONFIG, layer=layer)
    return cache, score, sp, si
