"""An independent float64 numpy model of vortex flows (docs/contract.md).

Written from the vortex_torch semantics (reference doc section 2, operator
catalog, and section 3, shipped algorithms), not from the compiler: the
compiled CPU code (`vortex.runtime.cpu`) is checked against it.

Layout. The indexer works on rows = (request, KV head) pairs. A CSR
`(indptr, indices)` lists each row's blocks: row r owns the ragged positions
`[indptr[r], indptr[r+1])` and `indices[s]` is the pool block of position s.
Tensors are rank 3 `[L, D0, D1]`; L is the number of rows (batched), of
ragged positions (ragged) or of pool blocks (paged, i.e. a cache field).

Per row of n blocks: `budget = max(topk_val + bos + eos, int(n * topk_ratio))`;
the row *needs selection* iff `n > budget`; its *scored range* is
`[bos, n - eos)` (row-relative positions).

* Row-segment ops (softmax, normalize, conv1d) run only over the scored
  range of rows that need selection; every other position holds 0.
* A reduction over dim 0 covers the scored range of every row (empty: 0 for
  mean / sum / l2norm, -inf for max, +inf for min).
* Save writes the positions `[0, n - eos)` of rows that need selection.
* Top-k: rows within budget keep all blocks in order; otherwise the first
  bos blocks, then the best `budget - bos - eos` blocks of the scored range
  in descending score order (ties to the lower position, NaN never wins),
  then the last eos blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

MASK_NEG = -1e30  # vortex_torch's -inf for additive masks


# ---------------------------------------------------------------------------
# Config and CSR
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    block_size: int
    head_dim: int
    group_size: int
    topk_val: int
    topk_ratio: float
    bos: int
    eos: int
    kv_lora_rank: int = 0        # an MLA flow's latent channels (else 0)

    @staticmethod
    def from_dict(cfg: Mapping[str, object]) -> "Config":
        return Config(block_size=int(cfg["block_size"]),
                      head_dim=int(cfg["head_dim"]),
                      group_size=int(cfg["group_size"]),
                      topk_val=int(cfg["topk_val"]),
                      topk_ratio=float(cfg["topk_ratio"]),
                      bos=int(cfg["reserved_bos"]),
                      eos=int(cfg["reserved_eos"]),
                      kv_lora_rank=int(cfg.get("kv_lora_rank", 0)))

    def budget(self, n: int) -> int:
        return max(self.topk_val + self.bos + self.eos,
                   int(n * self.topk_ratio))

    def needs_selection(self, n: int) -> bool:
        return n > self.budget(n)


class Csr:
    def __init__(self, indptr, indices):
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(indices, dtype=np.int64)
        self.rows = len(self.indptr) - 1
        self.row_of = np.repeat(np.arange(self.rows), np.diff(self.indptr))

    def row(self, r) -> Tuple[int, int]:
        return int(self.indptr[r]), int(self.indptr[r + 1])

    def length(self, r) -> int:
        s, e = self.row(r)
        return e - s


# ---------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------

def gather(field: np.ndarray, csr: Csr) -> np.ndarray:
    """Paged -> ragged: the field rows of each position's block."""
    return np.asarray(field, np.float64)[csr.indices]


def broadcast_rows(x: np.ndarray, csr: Csr) -> np.ndarray:
    """Batched -> ragged: each position gets its row's value."""
    return np.asarray(x, np.float64)[csr.row_of]


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------

def reduce(x: np.ndarray, dim: int, kind: str) -> np.ndarray:
    """Keep-dim reduction over inner axis dim (1 or 2)."""
    assert dim in (1, 2)
    x = np.asarray(x, np.float64)
    if kind == "mean":
        return x.mean(axis=dim, keepdims=True)
    if kind == "sum":
        return x.sum(axis=dim, keepdims=True)
    if kind == "max":
        return x.max(axis=dim, keepdims=True)
    if kind == "min":
        return x.min(axis=dim, keepdims=True)
    if kind == "l2norm":
        return np.sqrt((x * x).sum(axis=dim, keepdims=True))
    raise ValueError(kind)


def interleave(x: np.ndarray, dim: int, factor: int, kind: str) -> np.ndarray:
    """Reduce consecutive groups of `factor` along dim: Y[m] = rho_j X[m*f+j]."""
    x = np.asarray(x, np.float64)
    L, d0, d1 = x.shape
    if dim == 1:
        assert d0 % factor == 0
        g = x.reshape(L, d0 // factor, factor, d1)
        axis = 2
    else:
        assert d1 % factor == 0
        g = x.reshape(L, d0, d1 // factor, factor)
        axis = 3
    if kind == "mean":
        return g.mean(axis=axis)
    if kind == "max":
        return g.max(axis=axis)
    if kind == "min":
        return g.min(axis=axis)
    if kind == "sum":
        return g.sum(axis=axis)
    if kind == "l2norm":
        return np.sqrt((g * g).sum(axis=axis))
    raise ValueError(kind)


def reduce_rows(x: np.ndarray, csr: Csr, cfg: Config, kind: str) -> np.ndarray:
    """Reduce(dim=0): ragged -> batched, over the scored range [bos, n-eos)
    of every row."""
    x = np.asarray(x, np.float64)
    out = np.zeros((csr.rows,) + x.shape[1:])
    for r in range(csr.rows):
        s, e = csr.row(r)
        seg = x[s + cfg.bos:max(e - cfg.eos, s + cfg.bos)]
        if seg.shape[0] == 0:
            out[r] = {"max": -np.inf, "min": np.inf}.get(kind, 0.0)
            continue
        if kind == "mean":
            out[r] = seg.mean(axis=0)
        elif kind == "sum":
            out[r] = seg.sum(axis=0)
        elif kind == "max":
            out[r] = seg.max(axis=0)
        elif kind == "min":
            out[r] = seg.min(axis=0)
        elif kind == "l2norm":
            out[r] = np.sqrt((seg * seg).sum(axis=0))
        else:
            raise ValueError(kind)
    return out


# ---------------------------------------------------------------------------
# Row-segment (scan) ops
# ---------------------------------------------------------------------------

def _segments(csr: Csr, cfg: Config):
    """(lo, hi) ragged bounds of the scored range of each row that needs
    selection."""
    for r in range(csr.rows):
        s, e = csr.row(r)
        if cfg.needs_selection(e - s):
            yield s + cfg.bos, e - cfg.eos


def softmax_rows(x, csr: Csr, cfg: Config, scale: float = 1.0) -> np.ndarray:
    """Per row and channel: exp(scale x) / sum_segment exp(scale x)."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for lo, hi in _segments(csr, cfg):
        z = scale * x[lo:hi]
        z = z - z.max(axis=0, keepdims=True)
        ez = np.exp(z)
        out[lo:hi] = ez / ez.sum(axis=0, keepdims=True)
    return out


def normalize_rows(x, csr: Csr, cfg: Config) -> np.ndarray:
    """Per row and channel: x / max(||x||_2 over the segment, 1e-12)."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for lo, hi in _segments(csr, cfg):
        seg = x[lo:hi]
        norm = np.sqrt((seg * seg).sum(axis=0, keepdims=True))
        out[lo:hi] = seg / np.maximum(norm, 1e-12)
    return out


def conv1d_rows(x, csr: Csr, cfg: Config, weight) -> np.ndarray:
    """Causal depthwise conv within the segment: Y[s] = sum_k W[k] X[s-k],
    X taken as 0 before the segment start."""
    x = np.asarray(x, np.float64)
    w = np.asarray(weight, np.float64)
    out = np.zeros_like(x)
    for lo, hi in _segments(csr, cfg):
        for s in range(lo, hi):
            acc = np.zeros(x.shape[1:])
            for k in range(w.shape[0]):
                if s - k >= lo:
                    acc = acc + w[k] * x[s - k]
            out[s] = acc
    return out


# ---------------------------------------------------------------------------
# Contractions, layout, elementwise
# ---------------------------------------------------------------------------

def gemm(x, y) -> np.ndarray:
    """GeMM(x, y) = y x^T per leading row: O[s,a,b] = sum_k Y[s,a,k] X[s,b,k]."""
    return np.einsum("sak,sbk->sab", np.asarray(y, np.float64),
                     np.asarray(x, np.float64))


def gemv(x, y) -> np.ndarray:
    """O[s,0,0] = <Y[s,0,:], X[s,0,:]>."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    return (x[:, 0, :] * y[:, 0, :]).sum(axis=1)[:, None, None]


def kron(x, y, dims: Sequence[int]) -> np.ndarray:
    """Along each axis a in dims: O[.., i*y_a + j, ..] = X[.., i, ..] Y[.., j, ..];
    the other inner axis broadcasts."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    xs, ys = [x.shape[0]], [y.shape[0]]
    for a in (1, 2):
        if a in dims:      # x index i, y index j -> i * y_a + j
            xs += [x.shape[a], 1]
            ys += [1, y.shape[a]]
        else:              # broadcast (equal or 1) on the first slot
            xs += [x.shape[a], 1]
            ys += [y.shape[a], 1]
    prod = x.reshape(xs) * y.reshape(ys)
    return prod.reshape(prod.shape[0], prod.shape[1] * prod.shape[2],
                        prod.shape[3] * prod.shape[4])


def mask_slice(x, start: int, end: int, dim: int, alpha: float,
               beta: float) -> np.ndarray:
    """alpha inside [start, end) along dim (1 or 2), beta elsewhere."""
    x = np.asarray(x)
    out = np.full(x.shape, float(beta))
    if dim == 1:
        out[:, start:end, :] = alpha
    else:
        out[:, :, start:end] = alpha
    return out


def maximum(x, y):
    return np.maximum(np.asarray(x, np.float64), np.asarray(y, np.float64))


def minimum(x, y):
    return np.minimum(np.asarray(x, np.float64), np.asarray(y, np.float64))


def multiply(x, y):
    return np.asarray(x, np.float64) * np.asarray(y, np.float64)


def add(x, y, alpha: float = 1.0, beta: float = 1.0):
    return alpha * np.asarray(x, np.float64) + beta * np.asarray(y, np.float64)


_PREDICATES = {
    "eq": np.equal, "ne": np.not_equal, "gt": np.greater,
    "ge": np.greater_equal, "lt": np.less, "le": np.less_equal,
}


def where(x, y, pred: str):
    """Additive mask: 0 where `x pred y`, else -1e30."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    return np.where(_PREDICATES[pred](x, y), 0.0, MASK_NEG)


def unary(x, kind: str, alpha: Optional[float] = None,
          beta: Optional[float] = None):
    """The (alpha, beta) unary ops of vortex_torch."""
    defaults = {"relu": (0.0, 0.0), "sigmoid": (0.0, 0.0), "silu": (0.0, 0.0),
                "abs": (0.0, 1.0), "add_mul": (0.0, 1.0), "log": (0.0, 1.0),
                "exp": (0.0, 1.0)}
    a0, b0 = defaults[kind]
    a = a0 if alpha is None else alpha
    b = b0 if beta is None else beta
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if kind == "relu":
            return np.where(x >= a, x, b)
        if kind == "sigmoid":
            return 1.0 / (1.0 + np.exp(b * x + a))
        if kind == "silu":
            return x / (1.0 + np.exp(b * x + a))
        if kind == "abs":
            return np.abs(b * x + a)
        if kind == "add_mul":
            return b * x + a
        if kind == "log":
            return np.log(b * x + a)
        if kind == "exp":
            return np.exp(b * x + a)
    raise ValueError(kind)


def transpose(x):
    return np.swapaxes(np.asarray(x, np.float64), 1, 2).copy()


def reshape(x, d0: int, d1: int):
    x = np.asarray(x, np.float64)
    return x.reshape(x.shape[0], d0, d1)


# ---------------------------------------------------------------------------
# State and selection
# ---------------------------------------------------------------------------

def load(field, csr: Csr) -> np.ndarray:
    return gather(field, csr)


def save(field: np.ndarray, value: np.ndarray, csr: Csr, cfg: Config) -> None:
    """F[block] = value for the positions [0, n - eos) of rows that need
    selection, in place."""
    for r in range(csr.rows):
        s, e = csr.row(r)
        if cfg.needs_selection(e - s):
            field[csr.indices[s:e - cfg.eos]] = value[s:e - cfg.eos]


def topk_select(score, csr: Csr, cfg: Config) -> Tuple[np.ndarray, np.ndarray]:
    """The sparse CSR (indptr, indices) of the selection."""
    score = np.asarray(score, np.float64).reshape(-1)
    indptr = [0]
    out: List[int] = []
    for r in range(csr.rows):
        s, e = csr.row(r)
        n = e - s
        b = cfg.budget(n)
        ids = csr.indices[s:e]
        if n <= b:
            out.extend(int(i) for i in ids)
        else:
            k = b - cfg.bos - cfg.eos
            mid = score[s + cfg.bos:e - cfg.eos].copy()
            mid[np.isnan(mid)] = -np.inf
            order = np.argsort(-mid, kind="stable")[:k]  # ties: lower position
            out.extend(int(i) for i in ids[:cfg.bos])
            out.extend(int(i) for i in ids[cfg.bos + order])
            out.extend(int(i) for i in ids[n - cfg.eos:])
        indptr.append(len(out))
    return np.array(indptr, np.int64), np.array(out, np.int64)


def _best(score_row: np.ndarray, k: int) -> np.ndarray:
    """Row-relative positions of the k best scores, descending, ties to the
    lower position, NaN below every number."""
    s = np.asarray(score_row, np.float64).copy()
    s[np.isnan(s)] = -np.inf
    return np.argsort(-s, kind="stable")[:k]


def trtllm_topk(score, csr: Csr, cfg: Config, k: int) -> List[np.ndarray]:
    """trtllm TopK(k), per row a block table: the whole row if
    n <= bos + k + eos, else the first bos blocks, the k best of
    [bos, n - eos) (descending), the last eos blocks."""
    score = np.asarray(score, np.float64).reshape(-1)
    tables = []
    for r in range(csr.rows):
        s, e = csr.row(r)
        n = e - s
        ids = csr.indices[s:e]
        if n <= cfg.bos + k + cfg.eos:
            tables.append(ids.copy())
            continue
        best = _best(score[s + cfg.bos:e - cfg.eos], k)
        tables.append(np.concatenate([ids[:cfg.bos], ids[cfg.bos + best],
                                      ids[n - cfg.eos:]]))
    return tables


def union(lhs: Sequence[np.ndarray], rhs: Sequence[np.ndarray],
          csr: Csr) -> Tuple[np.ndarray, np.ndarray]:
    """trtllm Union(): per row the deduplicated union of two tables (the
    left one's blocks in order, then the right one's new blocks) with the
    row's true last block pinned at the tail."""
    indptr = [0]
    out: List[int] = []
    for r in range(csr.rows):
        s, e = csr.row(r)
        row: List[int] = []
        last = int(csr.indices[e - 1]) if e > s else None
        for table in (lhs[r], rhs[r]):
            for b in table:
                b = int(b)
                if b != last and b not in row:
                    row.append(b)
        if last is not None:
            row.append(last)
        out.extend(row)
        indptr.append(len(out))
    return np.array(indptr, np.int64), np.array(out, np.int64)


# ---------------------------------------------------------------------------
# Shipped flows (reference doc section 3)
# ---------------------------------------------------------------------------

@dataclass
class IndexerResult:
    score: np.ndarray          # [S] the score fed to the selection
    indptr: np.ndarray         # sparse CSR
    indices: np.ndarray


class FlowRef:
    """A flow's two steps: `cache(ctx)` returns {field: [m, r, c]} for the
    completed blocks; `indexer(ctx)` returns the score [S, 1, 1] and applies
    saves."""

    def __init__(self, fields: Sequence[str], cache_fn: Callable,
                 indexer_fn: Callable):
        self.fields = list(fields)
        self.cache_fn = cache_fn
        self.indexer_fn = indexer_fn

    def cache_step(self, cache: Dict[str, np.ndarray], block_ids,
                   cfg: Config) -> None:
        """Write the fields of the completed blocks, in place (float64)."""
        ids = np.asarray(block_ids, np.int64)
        k = np.asarray(cache["k"], np.float64)[ids]
        v = np.asarray(cache["v"], np.float64)[ids]
        for name, value in self.cache_fn(k, v, cfg).items():
            cache[name][ids] = value

    def indexer(self, q, cache: Dict[str, np.ndarray], indptr, indices,
                cfg: Config) -> IndexerResult:
        csr = Csr(indptr, indices)
        ctx = _IndexerCtx(np.asarray(q, np.float64), cache, csr, cfg)
        score = self.indexer_fn(ctx)
        assert score.shape == (len(csr.indices), 1, 1), score.shape
        sp, si = topk_select(score, csr, cfg)
        return IndexerResult(score.reshape(-1), sp, si)


class _IndexerCtx:
    def __init__(self, q, cache, csr, cfg):
        self.q, self.cache, self.csr, self.cfg = q, cache, csr, cfg

    def field(self, name):          # paged -> ragged view of a field
        return gather(self.cache[name], self.csr)

    def rows(self, x):              # batched -> ragged
        return broadcast_rows(x, self.csr)

    def save(self, name, value):
        save(self.cache[name], value, self.csr, self.cfg)


def _centroids(k, v, cfg):
    return {"centroids": reduce(k, 1, "mean")}


def _envelope(k, v, cfg):
    return {"max": reduce(k, 1, "max"), "min": reduce(k, 1, "min")}


def _quest_score(c: _IndexerCtx, q):
    """max_h sum_d max(q_hd M_pd, q_hd m_pd) with q [S, H, D]."""
    s = maximum(multiply(q, c.field("max")), multiply(q, c.field("min")))
    return reduce(reduce(s, 2, "sum"), 1, "max")


# 1. block_sparse_attention: score = < mean_h q_h, c_p >
def _bsa(c):
    qm = c.rows(reduce(c.q, 1, "mean"))
    return gemm(qm, c.field("centroids"))


# 2. gqa_block_sparse_attention: max_h softmax_p(0.09 <q_h, c_p>)
def _gqa_block(c):
    s = gemm(c.rows(c.q), c.field("centroids"))           # [S, 1, G]
    return reduce(softmax_rows(s, c.csr, c.cfg, 0.09), 2, "max")


# 3. gqa_quest_sparse_attention (any G)
def _gqa_quest(c):
    return _quest_score(c, c.rows(c.q))


# 4. lserve_sparse_attention: Quest per 16-token sub-block
LSERVE_BLOCK = 16


def _lserve_cache(k, v, cfg):
    return {"max": interleave(k, 1, LSERVE_BLOCK, "max"),
            "min": interleave(k, 1, LSERVE_BLOCK, "min")}


def _lserve(c):
    q = c.rows(c.q)
    s = maximum(kron(q, c.field("max"), (1,)), kron(q, c.field("min"), (1,)))
    return reduce(reduce(s, 2, "sum"), 1, "max")


# 5. lserve_centroid_sparse_attention
def _lserve_centroid_cache(k, v, cfg):
    return {"centroids": interleave(k, 1, LSERVE_BLOCK, "mean")}


def _lserve_centroid(c):
    qm = c.rows(reduce(c.q, 1, "mean"))
    return reduce(gemm(qm, c.field("centroids")), 1, "max")   # [S,n_b,1]->[S,1,1]


# 6. masked_quest_sparse_attention: drop the first 8 channels
MASK_END = 8


def _masked_quest(c):
    q = c.rows(c.q)
    s = maximum(multiply(q, c.field("max")), multiply(q, c.field("min")))
    m = mask_slice(s, 0, MASK_END, 2, 0.0, 1.0)
    return reduce(reduce(multiply(s, m), 2, "sum"), 1, "max")


# 7. centered_block_sparse_attention: s_p - mean over the scored range
def _centered(c):
    s = reduce(reduce(multiply(c.rows(c.q), c.field("centroids")), 2, "sum"),
               1, "mean")
    mean_seq = reduce_rows(s, c.csr, c.cfg, "mean")
    return add(s, c.rows(mean_seq), 1.0, -1.0)


# 8. running_avg_block_sparse: r = 0.5 r_prev + <q_mean, c>
RUNNING_ALPHA = 0.5


def _running_cache(k, v, cfg):
    return {"centroids": reduce(k, 1, "mean"),
            "running_score": np.zeros((k.shape[0], 1, 1))}


def _running(c):
    qm = c.rows(reduce(c.q, 1, "mean"))
    current = gemm(qm, c.field("centroids"))
    last = load(c.cache["running_score"], c.csr)
    running = add(last, current, RUNNING_ALPHA, 1.0)
    c.save("running_score", running)
    return running


# 9. venergy_gated_centroid: <q_mean, c> * mean_t ||v_t||
def _venergy_cache(k, v, cfg):
    return {"centroids": reduce(k, 1, "mean"),
            "v_energy": reduce(reduce(v, 2, "l2norm"), 1, "mean")}


def _venergy(c):
    qm = c.rows(reduce(c.q, 1, "mean"))
    return multiply(gemm(qm, c.field("centroids")), c.field("v_energy"))


# 10. H2O family
W_AVG, W_PEAK = 1.0, 1.0
H2O_DECAY = 0.984375


def _h2o_cache(k, v, cfg):
    return {"centroids": reduce(k, 1, "mean"), "max": reduce(k, 1, "max"),
            "min": reduce(k, 1, "min")}


def _h2o(c):
    qm = c.rows(reduce(c.q, 1, "mean"))                      # [S,1,D]
    s_avg = gemv(qm, c.field("centroids"))
    env = maximum(multiply(qm, c.field("max")), multiply(qm, c.field("min")))
    s_peak = reduce(env, 2, "sum")
    return add(s_avg, s_peak, W_AVG, W_PEAK)


def _gqa_h2o(c):
    q = c.rows(c.q)
    avg = reduce(gemm(q, c.field("centroids")), 2, "max")    # max_h <q_h, c>
    peak = _quest_score(c, q)
    return add(avg, peak, W_AVG, W_PEAK)


def _hh_cache(k, v, cfg):
    return {"hh_score": np.zeros((k.shape[0], 1, 1))}


def _h2o_token(c):
    qm = c.rows(reduce(c.q, 1, "mean"))
    attn = gemv(qm, c.field("k"))
    probs = softmax_rows(attn, c.csr, c.cfg, c.cfg.head_dim ** -0.5)
    score = add(probs, c.field("hh_score"), 1.0, H2O_DECAY)
    c.save("hh_score", score)
    return score


def _gqa_h2o_token(c):
    attn = gemm(c.rows(c.q), c.field("k"))                   # [S, 1, G]
    probs = softmax_rows(attn, c.csr, c.cfg, c.cfg.head_dim ** -0.5)
    score = add(reduce(probs, 2, "max"), c.field("hh_score"), 1.0, H2O_DECAY)
    c.save("hh_score", score)
    return score


# 15-18. The MLA flows: k is the latent [kv_c | k_pe] (kv_lora_rank latent
# channels, then the RoPE ones) and q the absorbed query [q_nope_out |
# q_pe], so a token's decode logit is <q_nope_out, kv_c> + <q_pe, k_pe>.
# The scores are written as those two terms, apart; the rope-unaware
# flows keep only the first.
MLA_SUB_BLOCK = 16


def _mla_centroids(k, v, cfg):
    return {"centroids": k.mean(axis=1, keepdims=True)}


def _mla_sub_centroids(k, v, cfg):
    m, bs, d = k.shape
    return {"centroids": k.reshape(m, bs // MLA_SUB_BLOCK, MLA_SUB_BLOCK,
                                   d).mean(axis=2)}


def _mla_score(rope: bool):
    def score(c):
        r = c.cfg.kv_lora_rank
        assert r > 0, "an MLA flow's config names kv_lora_rank"
        qm = c.rows(c.q.mean(axis=1, keepdims=True))[:, 0, :]    # [S, d]
        cent = c.field("centroids")                              # [S, n, d]
        s = np.einsum("snd,sd->sn", cent[..., :r], qm[:, :r])
        if rope:
            s = s + np.einsum("snd,sd->sn", cent[..., r:], qm[:, r:])
        return s.max(axis=1).reshape(-1, 1, 1)     # the best sub-block
    return score


FLOWS: Dict[str, FlowRef] = {
    "block_sparse_attention": FlowRef(["centroids"], _centroids, _bsa),
    "gqa_block_sparse_attention": FlowRef(["centroids"], _centroids, _gqa_block),
    "gqa_quest_sparse_attention": FlowRef(["max", "min"], _envelope, _gqa_quest),
    "gqa_quest_sparse_attention_g5": FlowRef(["max", "min"], _envelope,
                                             _gqa_quest),
    "lserve_sparse_attention": FlowRef(["max", "min"], _lserve_cache, _lserve),
    "lserve_centroid_sparse_attention": FlowRef(
        ["centroids"], _lserve_centroid_cache, _lserve_centroid),
    "masked_quest_sparse_attention": FlowRef(["max", "min"], _envelope,
                                             _masked_quest),
    "centered_block_sparse_attention": FlowRef(["centroids"], _centroids,
                                               _centered),
    "running_avg_block_sparse": FlowRef(["centroids", "running_score"],
                                        _running_cache, _running),
    "venergy_gated_centroid": FlowRef(["centroids", "v_energy"],
                                      _venergy_cache, _venergy),
    "h2o_sparse_attention": FlowRef(["centroids", "max", "min"], _h2o_cache,
                                    _h2o),
    "gqa_h2o_sparse_attention": FlowRef(["centroids", "max", "min"],
                                        _h2o_cache, _gqa_h2o),
    "h2o_token_sparse_attention": FlowRef(["hh_score"], _hh_cache, _h2o_token),
    "gqa_h2o_token_sparse_attention": FlowRef(["hh_score"], _hh_cache,
                                              _gqa_h2o_token),
    "rope_aware_block_sparse_mla": FlowRef(["centroids"], _mla_centroids,
                                           _mla_score(True)),
    "rope_unaware_block_sparse_mla": FlowRef(["centroids"], _mla_centroids,
                                             _mla_score(False)),
    "lserve_centroid_mla": FlowRef(["centroids"], _mla_sub_centroids,
                                   _mla_score(True)),
    "rope_unaware_lserve_centroid_mla": FlowRef(
        ["centroids"], _mla_sub_centroids, _mla_score(False)),
}


# ---------------------------------------------------------------------------
# Comparing a compiled selection with the reference
# ---------------------------------------------------------------------------

TIE_RTOL = 1e-4


def _close(a: float, b: float, scale: float, rtol: float) -> bool:
    return abs(a - b) <= rtol * max(abs(a), abs(b), scale)


def compare_selection(got_indptr, got_indices, ref: IndexerResult, indptr,
                      indices, cfg: Config, rtol: float = TIE_RTOL
                      ) -> List[str]:
    """Differences between a compiled selection and the reference, per row.

    Rows within budget must match exactly (all blocks, in order). Rows that
    need selection must keep the same BOS and EOS blocks in place, and the
    same *set* of middle blocks, except that a block may be swapped for
    another whose reference score is within `rtol` (relative, against the
    larger magnitude of the two and the row's score scale max |score| over
    the scored range) of the selection threshold (a tie up to float32
    rounding). The middle must come in descending reference-score order up
    to the same tolerance. Returns human-readable problems (empty = match).
    """
    csr = Csr(indptr, indices)
    gp = np.asarray(got_indptr, np.int64)
    gi = np.asarray(got_indices, np.int64)
    problems = []
    if gp.shape != ref.indptr.shape or (gp != ref.indptr).any():
        problems.append(f"sparse_kv_indptr {gp.tolist()} != reference "
                        f"{ref.indptr.tolist()}")
        return problems
    for r in range(csr.rows):
        s, e = csr.row(r)
        n = e - s
        got = gi[gp[r]:gp[r + 1]]
        want = ref.indices[ref.indptr[r]:ref.indptr[r + 1]]
        if not cfg.needs_selection(n):
            if (got != want).any():
                problems.append(f"row {r} (n={n}, within budget): got "
                                f"{got.tolist()}, want {want.tolist()}")
            continue
        bos, eos = cfg.bos, cfg.eos
        if (got[:bos] != want[:bos]).any() or (
                eos and (got[len(got) - eos:] != want[len(want) - eos:]).any()):
            problems.append(f"row {r}: BOS/EOS blocks differ: got "
                            f"{got.tolist()}, want {want.tolist()}")
            continue
        gmid = got[bos:len(got) - eos]
        wmid = want[bos:len(want) - eos]
        pos_of = {int(b): s + i for i, b in enumerate(csr.indices[s:e])}
        if any(int(b) not in pos_of or not (s + bos <= pos_of[int(b)] < e - eos)
               for b in gmid) or len(set(gmid.tolist())) != len(gmid):
            problems.append(f"row {r}: selected blocks outside the scored "
                            f"range or repeated: {gmid.tolist()}")
            continue
        sc = lambda b: float(ref.score[pos_of[int(b)]])  # noqa: E731
        mid_scores = ref.score[s + bos:e - eos]
        finite = mid_scores[np.isfinite(mid_scores)]
        scale = float(np.abs(finite).max()) if finite.size else 0.0
        threshold = sc(wmid[-1]) if len(wmid) else 0.0
        extra = sorted(set(gmid.tolist()) - set(wmid.tolist()))
        lost = sorted(set(wmid.tolist()) - set(gmid.tolist()))
        bad = [b for b in extra + lost
               if not _close(sc(b), threshold, scale, rtol)]
        if bad:
            problems.append(
                f"row {r} (n={n}): selected set differs beyond ties: extra "
                f"{[(b, sc(b)) for b in extra]}, missing "
                f"{[(b, sc(b)) for b in lost]}, threshold {threshold}")
            continue
        for a, b in zip(gmid[:-1], gmid[1:]):
            if sc(a) < sc(b) and not _close(sc(a), sc(b), scale, rtol):
                problems.append(f"row {r}: not in descending score order: "
                                f"block {a} ({sc(a)}) before {b} ({sc(b)})")
                break
    return problems


def compare_fields(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray],
                   names: Sequence[str], rtol=1e-5, atol=1e-5) -> List[str]:
    problems = []
    for n in names:
        g = np.asarray(got[n], np.float64)
        w = np.asarray(want[n], np.float64)
        if g.shape != w.shape:
            problems.append(f"{n}: shape {g.shape} != {w.shape}")
            continue
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol)
        if bad.any():
            i = np.unravel_index(int(np.argmax(bad)), g.shape)
            problems.append(f"{n}: {int(bad.sum())} elements differ, first at "
                            f"{tuple(int(x) for x in i)}: got {g[i]}, want {w[i]}")
    return problems
