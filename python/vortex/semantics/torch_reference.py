"""Vectorized PyTorch primitives of the flow semantics (GPU or CPU): the CSR
layout, format conversions, row-segment ops, reductions over dim 0 and the
selection, with the semantics of docs/contract.md and
`vortex.semantics.reference`, written with whole-tensor torch ops (no Python
loop over rows or blocks).

Eager mode (`vortex.semantics.eager`) runs a flow object's ops on these; it is
the reference the GPU check compares the compiled kernels with, and the PyTorch
peer of the benchmarks (eager and torch.compile). The per-flow code lives once,
in the flow modules (`vortex.flows`): there is no hand-written copy of
the flows here.

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

Everything but `make_layout(..., max_n=None)` and `_save` (boolean-mask
indexing) has static shapes for given (rows, total, max_n), so a step with
an explicit `max_n` can be captured in a CUDA graph and compiled by
torch.compile without graph breaks for the non-saving flows.
`topk_select` returns indices with the capacity of dense_kv_indices
(entries past sp_indptr[-1] are -1), int32, like the kernels' output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

from ..environment import import_torch
from ..runtime.manifest import budget_rule
from .reference import Config

torch = import_torch()

__all__ = ["Config", "Layout", "config_from_manifest", "conv1d_rows",
           "gather", "interleave", "make_layout", "mask_slice",
           "normalize_rows", "reduce_rows", "rows", "softmax_rows",
           "topk_select"]

MASK_NEG = -1e30
NEG_INF = float("-inf")


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
# State
# ---------------------------------------------------------------------------

def _save(field: torch.Tensor, value: torch.Tensor, L: Layout) -> None:
    """field[block] = value for the positions [0, n - eos) of rows that need
    selection (block ids must not repeat there)."""
    # Every position writes its block: the saved value, or the block's own
    # (a block belongs to one row, so no two positions write one block). No
    # data-dependent shape: the step stays capturable in a CUDA graph.
    m = L.saved.view(-1, *([1] * (value.dim() - 1)))
    field.index_put_((L.ids,), torch.where(m, value.to(field.dtype),
                                           field[L.ids]))
