"""A vectorized PyTorch reference of the shipped flows (GPU or CPU).

The same semantics as `vortex.reference` (docs/contract.md), written with
whole-tensor torch ops -- no Python loop over rows or blocks -- so that it
runs on the GPU next to the compiled kernels (`vortex.gpu_check`) and is
"the PyTorch reference of the same step" in the benchmarks (eager and
`torch.compile`, `bench/bench_indexer.py`).

Numerics follow the GPU kernels (docs/gpu.md): tensors are stored in their
manifest dtypes (q, k, v and the fields bf16 in the shipped flows, indices
int32), every computation is float32, and a value written to a field is
rounded to the field's dtype once.

Layout. Row r (a (request, KV head) pair) owns the ragged positions
[indptr[r], indptr[r+1]); `indices[s]` is the pool block of position s. Per
row of n blocks, budget = max(topk_val + bos + eos, int(n * topk_ratio)); a
row needs selection iff n > budget; its scored range is [bos, n - eos).

* row-segment ops (softmax, normalize, conv1d) run over the scored range of
  rows that need selection, 0 elsewhere;
* Reduce(dim=0) covers the scored range of every row (empty: 0 for
  mean/sum/l2norm, -inf for max, +inf for min);
* save writes positions [0, n - eos) of rows that need selection; loads see
  the field at the start of the step;
* the selection: rows within budget keep all blocks in CSR order; else
  BOS blocks, the budget - bos - eos best of the scored range in descending
  score with ties to the lower position (NaN ranks as -inf), EOS blocks.

Everything but `make_layout(..., max_n=None)` and `save` (boolean-mask
indexing) has static shapes for given (rows, total, max_n), so `indexer`
with an explicit `max_n` can be captured in a CUDA graph and compiled by
torch.compile without graph breaks for the non-saving flows.

API:
    layout = make_layout(dense_kv_indptr, dense_kv_indices, cfg[, max_n])
    score, sp_indptr, sp_indices = indexer(flow, q, cache, indptr, indices,
                                           cfg[, max_n])
    cache_step(flow, cache, block_ids, cfg)            # in place
    FLOWS[name].fields, .score, .cache ; resolve_flow(manifest_flow_name)
`sp_indices` has the capacity of dense_kv_indices (entries past
sp_indptr[-1] are -1), int32, like the kernels' output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple

import torch

from .manifest import budget_rule
from .reference import Config

__all__ = ["Config", "FLOWS", "Layout", "TorchFlow", "cache_step",
           "config_from_manifest", "field_shapes", "indexer", "make_layout",
           "resolve_flow", "score", "topk_select"]

MASK_NEG = -1e30
NEG_INF = float("-inf")
POS_INF = float("inf")


def config_from_manifest(cfg: Mapping[str, object]) -> Config:
    return Config.from_dict(cfg)


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------

@dataclass
class Layout:
    """Per-position and per-row quantities of a CSR, all on one device."""
    cfg: Config
    rows: int
    total: int              # capacity of the ragged domain (len(indices))
    max_n: int              # longest row (static bound)
    indptr: torch.Tensor    # int64 [rows + 1]
    ids: torch.Tensor       # int64 [total], block id (clamped to >= 0)
    row_of: torch.Tensor    # int64 [total]
    rel: torch.Tensor       # int64 [total], position within the row
    valid: torch.Tensor     # bool [total], s < indptr[rows]
    n: torch.Tensor         # int64 [rows]
    budget: torch.Tensor    # int64 [rows]
    need: torch.Tensor      # bool [rows], n > budget
    count: torch.Tensor     # int64 [rows], selected blocks
    sparse_indptr: torch.Tensor  # int64 [rows + 1]
    scored: torch.Tensor    # bool [total], bos <= rel < n - eos (every row)
    sel: torch.Tensor       # bool [total], scored & row needs selection
    saved: torch.Tensor     # bool [total], rel < n - eos & row needs selection


def make_layout(indptr: torch.Tensor, indices: torch.Tensor, cfg: Config,
                max_n: Optional[int] = None) -> Layout:
    dev = indices.device
    ip = indptr.to(device=dev, dtype=torch.int64)
    rows = ip.numel() - 1
    total = indices.numel()
    n = ip[1:] - ip[:-1]
    if max_n is None:
        max_n = int(n.max()) if rows > 0 else 0
    pos = torch.arange(total, device=dev, dtype=torch.int64)
    if rows > 0:
        row_of = torch.searchsorted(ip, pos, right=True) - 1
        row_of = row_of.clamp(0, rows - 1)
    else:
        row_of = torch.zeros_like(pos)
    valid = pos < ip[-1] if rows > 0 else torch.zeros_like(pos, dtype=torch.bool)
    rel = pos - ip[row_of] if rows > 0 else pos
    ids = indices.to(torch.int64).clamp_min(0)
    budget = budget_rule(cfg.topk_val + cfg.bos + cfg.eos,
                         float(cfg.topk_ratio), n.to(torch.int64))
    need = n > budget
    count = torch.where(need, budget, n)
    sparse_indptr = torch.cat([torch.zeros(1, dtype=torch.int64, device=dev),
                               torch.cumsum(count, 0)])
    if rows > 0:
        n_s = n[row_of]
        need_s = need[row_of]
    else:
        n_s = torch.zeros_like(pos)
        need_s = torch.zeros_like(pos, dtype=torch.bool)
    scored = valid & (rel >= cfg.bos) & (rel < n_s - cfg.eos)
    sel = scored & need_s
    saved = valid & need_s & (rel < n_s - cfg.eos)
    return Layout(cfg, rows, total, int(max_n), ip, ids, row_of, rel, valid,
                  n, budget, need, count, sparse_indptr, scored, sel, saved)


# ---------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------

def gather(field: torch.Tensor, L: Layout) -> torch.Tensor:
    """Paged -> ragged (float32): the field rows of each position's block."""
    return field[L.ids].float()


def rows(x: torch.Tensor, L: Layout) -> torch.Tensor:
    """Batched -> ragged: each position gets its row's value."""
    return x[L.row_of]


def _expand_index(idx: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return idx.view((-1,) + (1,) * (like.dim() - 1)).expand_as(like)


def _mask(m: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return m.view((-1,) + (1,) * (like.dim() - 1))


def _segment_sum(x: torch.Tensor, L: Layout) -> torch.Tensor:
    out = torch.zeros((L.rows,) + tuple(x.shape[1:]), dtype=x.dtype,
                      device=x.device)
    return out.index_add(0, L.row_of, x)


def _segment_amax(x: torch.Tensor, L: Layout) -> torch.Tensor:
    out = torch.full((L.rows,) + tuple(x.shape[1:]), NEG_INF, dtype=x.dtype,
                     device=x.device)
    return out.scatter_reduce(0, _expand_index(L.row_of, x), x, "amax",
                              include_self=True)


# ---------------------------------------------------------------------------
# Row-segment ops and Reduce(dim=0)
# ---------------------------------------------------------------------------

def softmax_rows(x: torch.Tensor, L: Layout, scale: float = 1.0) -> torch.Tensor:
    """Per row and channel over the scored range of rows that need
    selection: exp(scale x) / sum exp(scale x), computed stably; 0 elsewhere."""
    m = _mask(L.sel, x)
    z = x * scale
    zmax = _segment_amax(torch.where(m, z, NEG_INF), L)
    e = torch.where(m, torch.exp(z - rows(zmax, L)), 0.0)
    s = _segment_sum(e, L)
    return torch.where(m, e / rows(s, L), 0.0)


def normalize_rows(x: torch.Tensor, L: Layout) -> torch.Tensor:
    """x / max(||x||_2 over the segment, 1e-12) per row and channel."""
    m = _mask(L.sel, x)
    xs = torch.where(m, x, 0.0)
    norm = torch.sqrt(_segment_sum(xs * xs, L)).clamp_min(1e-12)
    return torch.where(m, x / rows(norm, L), 0.0)


def conv1d_rows(x: torch.Tensor, L: Layout, weight) -> torch.Tensor:
    """Causal depthwise conv within the segment, X = 0 before its start:
    Y[s] = sum_k W[k] X[s - k]; weight [K, D0, D1]."""
    w = torch.as_tensor(weight, dtype=torch.float32, device=x.device)
    m = _mask(L.sel, x)
    xs = torch.where(m, x, 0.0)
    out = torch.zeros_like(x)
    lo = L.rel - L.cfg.bos   # offset into the segment
    for k in range(w.shape[0]):
        shifted = torch.roll(xs, k, 0)
        ok = _mask(lo >= k, x)
        out = out + torch.where(ok, shifted, 0.0) * w[k]
    return torch.where(m, out, 0.0)


def reduce_rows(x: torch.Tensor, L: Layout, kind: str) -> torch.Tensor:
    """Reduce(dim=0): ragged -> batched over the scored range of every row."""
    m = _mask(L.scored, x)
    cnt = _segment_sum(L.scored.to(x.dtype), L).view(
        (-1,) + (1,) * (x.dim() - 1))
    if kind in ("mean", "sum", "l2norm"):
        v = torch.where(m, x * x if kind == "l2norm" else x, 0.0)
        s = _segment_sum(v, L)
        if kind == "mean":
            return torch.where(cnt > 0, s / cnt.clamp_min(1), 0.0)
        return torch.sqrt(s) if kind == "l2norm" else s
    if kind == "max":
        return _segment_amax(torch.where(m, x, NEG_INF), L)
    if kind == "min":
        return -_segment_amax(torch.where(m, -x, NEG_INF), L)
    raise ValueError(kind)


# ---------------------------------------------------------------------------
# Inner ops (reference doc section 2)
# ---------------------------------------------------------------------------

def gemm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """GeMM(x, y) = y x^T per leading row: O[s,a,b] = sum_k Y[s,a,k] X[s,b,k]."""
    return torch.matmul(y, x.transpose(1, 2))


def gemv(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """O[s,0,0] = <Y[s,0,:], X[s,0,:]>."""
    return (x[:, :1, :] * y[:, :1, :]).sum(-1, keepdim=True)


def kron1(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Kron along dim 1: O[s, i*y1 + j, :] = X[s, i, :] * Y[s, j, :]."""
    S = max(x.shape[0], y.shape[0])
    prod = x[:, :, None, :] * y[:, None, :, :]
    return prod.reshape(S, x.shape[1] * y.shape[1], -1)


def interleave(x: torch.Tensor, dim: int, factor: int, kind: str) -> torch.Tensor:
    L_, d0, d1 = x.shape
    if dim == 1:
        g, axis = x.reshape(L_, d0 // factor, factor, d1), 2
    else:
        g, axis = x.reshape(L_, d0, d1 // factor, factor), 3
    if kind == "mean":
        return g.mean(axis)
    if kind == "max":
        return g.amax(axis)
    if kind == "min":
        return g.amin(axis)
    if kind == "sum":
        return g.sum(axis)
    if kind == "l2norm":
        return torch.sqrt((g * g).sum(axis))
    raise ValueError(kind)


def mask_slice(x: torch.Tensor, start: int, end: int, dim: int, alpha: float,
               beta: float) -> torch.Tensor:
    idx = torch.arange(x.shape[dim], device=x.device)
    inside = (idx >= start) & (idx < end)
    shape = [1, 1, 1]
    shape[dim] = -1
    return torch.where(inside.view(shape), alpha, beta).to(x.dtype).expand_as(x)


# ---------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------

def topk_select(score: torch.Tensor, L: Layout
                ) -> Tuple[torch.Tensor, torch.Tensor]:
    """The sparse CSR (int32 indptr [rows+1], int32 indices [total], -1 past
    indptr[-1]) of vortex.topk on `score` ([total] or [total, 1, 1])."""
    cfg = L.cfg
    dev = score.device
    key = score.reshape(-1).float()
    key = torch.where(torch.isnan(key), NEG_INF, key)
    R, T = L.rows, L.total
    W = max(L.max_n - cfg.bos - cfg.eos, 1)
    dump = T  # writes to the dump slot are discarded
    sp = L.sparse_indptr
    out = torch.full((T + 1,), -1, dtype=torch.int32, device=dev)
    if R == 0:
        return sp.to(torch.int32), out[:T]
    # The scored range of each selecting row, left-aligned in a [R, W]
    # matrix: its padding columns come after every real column, so a stable
    # descending sort ranks real -inf scores before padding.
    col = L.rel - cfg.bos
    flat = torch.where(L.sel, L.row_of * W + col, R * W)
    mat = torch.full((R * W + 1,), NEG_INF, dtype=torch.float32, device=dev)
    mat = mat.scatter(0, flat, key)[:R * W].view(R, W)
    order = torch.sort(mat, dim=1, descending=True, stable=True).indices
    j = torch.arange(W, device=dev, dtype=torch.int64).view(1, W)
    k_row = (L.budget - cfg.bos - cfg.eos).view(R, 1)
    take = L.need.view(R, 1) & (j < k_row)
    dst_mid = torch.where(take, sp[:-1].view(R, 1) + cfg.bos + j, dump)
    src_mid = torch.where(take, L.indptr[:-1].view(R, 1) + cfg.bos + order, 0)
    mid_ids = L.ids[src_mid.clamp_max(max(T - 1, 0))] if T > 0 else src_mid
    # Kept positions: whole rows within budget, BOS and EOS of the others.
    n_s = L.n[L.row_of]
    need_s = L.need[L.row_of]
    start = sp[L.row_of]
    eos_dst = start + L.budget[L.row_of] - (n_s - L.rel)
    keep_all = L.valid & ~need_s
    is_bos = L.valid & need_s & (L.rel < cfg.bos)
    is_eos = L.valid & need_s & (L.rel >= n_s - cfg.eos)
    dst = torch.where(keep_all | is_bos, start + L.rel,
                      torch.where(is_eos, eos_dst, dump))
    out = out.scatter(0, dst, L.ids.to(torch.int32))
    out = out.scatter(0, dst_mid.reshape(-1), mid_ids.reshape(-1).to(torch.int32))
    return sp.to(torch.int32), out[:T]


# ---------------------------------------------------------------------------
# Flows
# ---------------------------------------------------------------------------

class Ctx:
    """What a flow's indexer body sees."""

    def __init__(self, q: torch.Tensor, cache: Dict[str, torch.Tensor],
                 L: Layout):
        self.q = q.float()
        self.cache = cache
        self.L = L
        self.cfg = L.cfg
        self._saves: List[Tuple[str, torch.Tensor]] = []

    def field(self, name: str) -> torch.Tensor:
        return gather(self.cache[name], self.L)

    def rows(self, x: torch.Tensor) -> torch.Tensor:
        return rows(x, self.L)

    def save(self, name: str, value: torch.Tensor) -> None:
        # Applied after the body: loads see the start of the step.
        self._saves.append((name, value))


@dataclass(frozen=True)
class TorchFlow:
    name: str
    fields: Tuple[Tuple[str, Callable[[Config], Tuple[int, int]]], ...]
    cache: Callable     # (k f32 [m,bs,D], v f32, cfg) -> {field: [m, r, c]}
    score: Callable     # (Ctx) -> [total, 1, 1] f32

    def field_shapes(self, cfg: Config) -> Dict[str, Tuple[int, int]]:
        return {n: f(cfg) for n, f in self.fields}


def _d(cfg):
    return (1, cfg.head_dim)


def _one(cfg):
    return (1, 1)


LSERVE_BLOCK = 16


def _lserve_shape(cfg):
    return (cfg.block_size // LSERVE_BLOCK, cfg.head_dim)


def _centroids(k, v, cfg):
    return {"centroids": k.mean(1, keepdim=True)}


def _envelope(k, v, cfg):
    return {"max": k.amax(1, keepdim=True), "min": k.amin(1, keepdim=True)}


def _quest(c: Ctx, q):
    s = torch.maximum(q * c.field("max"), q * c.field("min"))
    return s.sum(2, keepdim=True).amax(1, keepdim=True)


def _bsa(c: Ctx):
    qm = c.rows(c.q.mean(1, keepdim=True))
    return gemm(qm, c.field("centroids"))


def _gqa_block(c: Ctx):
    s = gemm(c.rows(c.q), c.field("centroids"))            # [S, 1, G]
    return softmax_rows(s, c.L, 0.09).amax(2, keepdim=True)


def _gqa_quest(c: Ctx):
    return _quest(c, c.rows(c.q))


def _lserve_cache(k, v, cfg):
    return {"max": interleave(k, 1, LSERVE_BLOCK, "max"),
            "min": interleave(k, 1, LSERVE_BLOCK, "min")}


def _lserve(c: Ctx):
    q = c.rows(c.q)
    s = torch.maximum(kron1(q, c.field("max")), kron1(q, c.field("min")))
    return s.sum(2, keepdim=True).amax(1, keepdim=True)


def _lserve_centroid_cache(k, v, cfg):
    return {"centroids": interleave(k, 1, LSERVE_BLOCK, "mean")}


def _lserve_centroid(c: Ctx):
    qm = c.rows(c.q.mean(1, keepdim=True))
    return gemm(qm, c.field("centroids")).amax(1, keepdim=True)


MASK_END = 8


def _masked_quest(c: Ctx):
    q = c.rows(c.q)
    s = torch.maximum(q * c.field("max"), q * c.field("min"))
    m = mask_slice(s, 0, MASK_END, 2, 0.0, 1.0)
    return (s * m).sum(2, keepdim=True).amax(1, keepdim=True)


def _centered(c: Ctx):
    s = (c.rows(c.q) * c.field("centroids")).sum(2, keepdim=True).mean(
        1, keepdim=True)
    mean_seq = reduce_rows(s, c.L, "mean")
    return s - c.rows(mean_seq)


RUNNING_ALPHA = 0.5


def _running_cache(k, v, cfg):
    return {"centroids": k.mean(1, keepdim=True),
            "running_score": torch.zeros((k.shape[0], 1, 1), device=k.device)}


def _running(c: Ctx):
    qm = c.rows(c.q.mean(1, keepdim=True))
    current = gemm(qm, c.field("centroids"))
    last = c.field("running_score")
    running = RUNNING_ALPHA * last + current
    c.save("running_score", running)
    return running


def _venergy_cache(k, v, cfg):
    vt = torch.sqrt((v * v).sum(2, keepdim=True))            # [m, bs, 1]
    return {"centroids": k.mean(1, keepdim=True),
            "v_energy": vt.mean(1, keepdim=True)}


def _venergy(c: Ctx):
    qm = c.rows(c.q.mean(1, keepdim=True))
    return gemm(qm, c.field("centroids")) * c.field("v_energy")


W_AVG, W_PEAK = 1.0, 1.0
H2O_DECAY = 0.984375


def _h2o_cache(k, v, cfg):
    return {"centroids": k.mean(1, keepdim=True),
            "max": k.amax(1, keepdim=True), "min": k.amin(1, keepdim=True)}


def _h2o(c: Ctx):
    qm = c.rows(c.q.mean(1, keepdim=True))
    s_avg = gemv(qm, c.field("centroids"))
    env = torch.maximum(qm * c.field("max"), qm * c.field("min"))
    return W_AVG * s_avg + W_PEAK * env.sum(2, keepdim=True)


def _gqa_h2o(c: Ctx):
    q = c.rows(c.q)
    avg = gemm(q, c.field("centroids")).amax(2, keepdim=True)
    return W_AVG * avg + W_PEAK * _quest(c, q)


def _hh_cache(k, v, cfg):
    return {"hh_score": torch.zeros((k.shape[0], 1, 1), device=k.device)}


def _h2o_token(c: Ctx):
    qm = c.rows(c.q.mean(1, keepdim=True))
    attn = gemv(qm, c.field("k"))
    probs = softmax_rows(attn, c.L, c.cfg.head_dim ** -0.5)
    score = probs + H2O_DECAY * c.field("hh_score")
    c.save("hh_score", score)
    return score


def _gqa_h2o_token(c: Ctx):
    attn = gemm(c.rows(c.q), c.field("k"))                  # [S, 1, G]
    probs = softmax_rows(attn, c.L, c.cfg.head_dim ** -0.5)
    score = probs.amax(2, keepdim=True) + H2O_DECAY * c.field("hh_score")
    c.save("hh_score", score)
    return score


def _flow(name, fields, cache, score):
    return name, TorchFlow(name, tuple(fields), cache, score)


FLOWS: Dict[str, TorchFlow] = dict([
    _flow("block_sparse_attention", [("centroids", _d)], _centroids, _bsa),
    _flow("gqa_block_sparse_attention", [("centroids", _d)], _centroids,
          _gqa_block),
    _flow("gqa_quest_sparse_attention", [("max", _d), ("min", _d)], _envelope,
          _gqa_quest),
    _flow("lserve_sparse_attention", [("max", _lserve_shape),
                                      ("min", _lserve_shape)],
          _lserve_cache, _lserve),
    _flow("lserve_centroid_sparse_attention", [("centroids", _lserve_shape)],
          _lserve_centroid_cache, _lserve_centroid),
    _flow("masked_quest_sparse_attention", [("max", _d), ("min", _d)],
          _envelope, _masked_quest),
    _flow("centered_block_sparse_attention", [("centroids", _d)], _centroids,
          _centered),
    _flow("running_avg_block_sparse", [("centroids", _d),
                                       ("running_score", _one)],
          _running_cache, _running),
    _flow("venergy_gated_centroid", [("centroids", _d), ("v_energy", _one)],
          _venergy_cache, _venergy),
    _flow("h2o_sparse_attention", [("centroids", _d), ("max", _d),
                                   ("min", _d)], _h2o_cache, _h2o),
    _flow("gqa_h2o_sparse_attention", [("centroids", _d), ("max", _d),
                                       ("min", _d)], _h2o_cache, _gqa_h2o),
    _flow("h2o_token_sparse_attention", [("hh_score", _one)], _hh_cache,
          _h2o_token),
    _flow("gqa_h2o_token_sparse_attention", [("hh_score", _one)], _hh_cache,
          _gqa_h2o_token),
])


def resolve_flow(name: str) -> TorchFlow:
    """The reference of a manifest's flow: the exact name, else the longest
    known flow name that the name starts with followed by '_' (variants such
    as gqa_quest_sparse_attention_g5 or block_sparse_attention_k64_g8)."""
    if name in FLOWS:
        return FLOWS[name]
    best = None
    for known in FLOWS:
        if name.startswith(known + "_") and (best is None or
                                             len(known) > len(best)):
            best = known
    if best is None:
        raise KeyError(f"no torch reference for flow {name!r} "
                       f"(known: {sorted(FLOWS)})")
    return FLOWS[best]


def _get(flow) -> TorchFlow:
    return flow if isinstance(flow, TorchFlow) else resolve_flow(flow)


def field_shapes(flow, cfg: Config) -> Dict[str, Tuple[int, int]]:
    return _get(flow).field_shapes(cfg)


# ---------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------

def score(flow, q: torch.Tensor, cache: Dict[str, torch.Tensor], L: Layout,
          apply_saves: bool = True) -> torch.Tensor:
    """The flow's score [total] (float32) for layout L; applies its saves to
    `cache` in place unless apply_saves is False."""
    f = _get(flow)
    c = Ctx(q, cache, L)
    s = f.score(c)
    if tuple(s.shape) != (L.total, 1, 1):
        raise AssertionError(f"{f.name}: score shape {tuple(s.shape)}")
    if apply_saves:
        for name, value in c._saves:
            _save(cache[name], value, L)
    return s.reshape(-1)


def _save(field: torch.Tensor, value: torch.Tensor, L: Layout) -> None:
    """field[block] = value for the positions [0, n - eos) of rows that need
    selection (block ids must not repeat there)."""
    m = L.saved
    field.index_put_((L.ids[m],), value[m].to(field.dtype))


def indexer(flow, q: torch.Tensor, cache: Dict[str, torch.Tensor],
            dense_kv_indptr: torch.Tensor, dense_kv_indices: torch.Tensor,
            cfg: Config, max_n: Optional[int] = None
            ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One indexer step: (score [total] f32, sparse_kv_indptr int32
    [rows+1], sparse_kv_indices int32 [total], -1 past the end). Saves are
    applied to `cache` in place. Pass max_n (the longest row, in blocks) to
    avoid a host synchronization (CUDA graphs, torch.compile)."""
    L = make_layout(dense_kv_indptr, dense_kv_indices, cfg, max_n)
    s = score(flow, q, cache, L)
    sp, si = topk_select(s, L)
    return s, sp, si


def cache_step(flow, cache: Dict[str, torch.Tensor], block_ids: torch.Tensor,
               cfg: Config) -> None:
    """Write the fields of the blocks `block_ids` (computed in f32 from
    k[block_ids], v[block_ids], stored in each field's dtype), in place."""
    f = _get(flow)
    ids = block_ids.to(torch.int64)
    k = cache["k"][ids].float()
    v = cache["v"][ids].float()
    for name, value in f.cache(k, v, cfg).items():
        cache[name][ids] = value.to(cache[name].dtype)
