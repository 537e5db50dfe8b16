"""Eager mode: a vortex_torch flow object run on torch tensors.

    >>> from vortex.semantics import eager
    >>> flow = BlockSparseAttention()
    >>> eager.cache_step(flow, cache, block_ids, config)          # in place
    >>> score, sp_indptr, sp_indices = eager.indexer(
    ...     flow, q, cache, dense_kv_indptr, dense_kv_indices, config)
    >>> o, lse = eager.attend(q, cache["k"], cache["v"], sp_indptr,
    ...                       sp_indices, kv_last_len, config.group_size)

The same flow object that `vortex.trace` turns into IR runs here op by op
through torch primitives (`vortex.semantics.torch_reference`: CSR layout,
gathers, row segments, the selection), with the semantics of docs/contract.md:
every value computed in float32, a value written to a field rounded to the
field's dtype once, saves applied after the step (loads see the start of the
step). It runs on any device and is differentiable: a PARAMETER value
(`vortex.abs.Parameter`) with `requires_grad` trains with autograd through
the score the step returns (the selection itself is not differentiable).
This is the reference the GPU check compares the compiled kernels with; the
float64 numpy reference (`vortex.semantics.reference`) stays independent of it.

Values carry their format: BATCHED `[rows, D0, D1]`, RAGGED `[total, D0,
D1]` (one entry per CSR position, or per completed block on the cache
side), PAGED (a cache tensor `[num_blocks, D0, D1]`, gathered by block id
when an op reads it), PARAMETER `[1, D0, D1]` (broadcast to every row).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .. import flows  # noqa: F401 (registers the shipped flows by name)
from . import torch_reference as tr
from ..abs.context_base import ContextBase, Mode
from ..abs.parameter import Parameter
from ..abs.tensor import FORMAT
from ..runtime.attention import check_decode
from ..environment import import_torch
from ..cache.learned import learned_descriptor
from ..flow import registry
from ..flow.flow import declare_cache, mla_dims
from ..frontend.oplib import CacheBinary, CacheUnary
from ..indexer.custom_op import CustomLayout
from ..runtime.manifest import budget_rule

torch = import_torch()

__all__ = ["EagerTensor", "attend", "cache_step", "decode", "execute",
           "flow_for", "indexer"]

MASK_NEG = tr.MASK_NEG


class EagerTensor:
    """A value of an eager run: torch data plus its format."""

    __slots__ = ("data", "format", "name")

    def __init__(self, data: torch.Tensor, fmt: int, name: str = ""):
        self.data = data
        self.format = fmt
        self.name = name

    @property
    def shape(self):
        return tuple(self.data.shape)

    def __repr__(self) -> str:
        return (f"EagerTensor({FORMAT(self.format).name}, "
                f"{tuple(self.data.shape)}, {self.data.dtype})")


class _Selection:
    """What topK / Union leave in `o`."""

    def __init__(self) -> None:
        self.sparse_indptr: Optional[torch.Tensor] = None
        self.sparse_indices: Optional[torch.Tensor] = None
        self.score: Optional[torch.Tensor] = None


class EagerContext(ContextBase):
    """The context of an eager step: the CSR layout (indexer) or the
    completed blocks (cache), deferred saves, the selection."""

    def __init__(self, config: tr.Config, layout: Optional[tr.Layout] = None,
                 block_ids: Optional[torch.Tensor] = None,
                 layer: Optional[int] = None) -> None:
        super().__init__()
        self.mode = Mode.execute
        #: The layer per-layer weights are read for (Parameter.select).
        self.layer = layer
        self.cfg = config
        self.L = layout
        self.block_ids = block_ids
        self.saves: List[Tuple[torch.Tensor, torch.Tensor]] = []

    def run_op(self, op, args, kwargs):
        return execute(op, args, self, kwargs)

    @property
    def device(self) -> Optional[torch.device]:
        """The step's device (its CSR's or block ids')."""
        if self.L is not None:
            return self.L.indptr.device
        return None if self.block_ids is None else self.block_ids.device

    # -- formats -------------------------------------------------------------
    def ragged(self, v: EagerTensor) -> torch.Tensor:
        """The value per position (RAGGED), float32; PARAMETER stays [1, ...]
        and broadcasts."""
        if v.format == FORMAT.RAGGED or v.format == FORMAT.PARAMETER:
            return v.data.float()
        if v.format == FORMAT.BATCHED:
            return tr.rows(v.data.float(), self.L)
        return self.gather(v.data)

    def gather(self, field: torch.Tensor) -> torch.Tensor:
        if self.L is not None:
            return tr.gather(field, self.L)
        return field[self.block_ids].float()

    def operands(self, *vals: EagerTensor) -> Tuple[int, List[torch.Tensor]]:
        """The common format of an op's inputs (vortex_torch's rule: BATCHED
        iff every input is BATCHED, PARAMETER counting as batched) and the
        inputs in it."""
        for v in vals:
            if not isinstance(v, EagerTensor):
                raise TypeError(f"expected a flow value, got "
                                f"{type(v).__name__} (eager mode runs vortex "
                                "ops only)")
        fmts = {v.format for v in vals}
        if fmts <= {FORMAT.BATCHED, FORMAT.PARAMETER}:
            fmt = FORMAT.BATCHED if FORMAT.BATCHED in fmts else FORMAT.PARAMETER
            return fmt, [v.data.float() for v in vals]
        return FORMAT.RAGGED, [self.ragged(v) for v in vals]


# ---------------------------------------------------------------------------
# Op semantics, by dialect mnemonic: fn(op, ctx, *inputs) -> (format, data)
# ---------------------------------------------------------------------------

def _unary(f: Callable[[torch.Tensor, float, float], torch.Tensor]):
    def run(op, ctx, x):
        fmt, (a,) = ctx.operands(x)
        return fmt, f(a, op.alpha, op.beta)
    return run


def _binary(f: Callable[..., torch.Tensor]):
    def run(op, ctx, x, y):
        fmt, (a, b) = ctx.operands(x, y)
        return fmt, f(op, a, b)
    return run


def _where(pred):
    return _binary(lambda op, a, b: torch.where(pred(a, b), 0.0, MASK_NEG))


def _reduce(kind: str):
    def run(op, ctx, x):
        if op.dim == 0:
            return FORMAT.BATCHED, tr.reduce_rows(ctx.ragged(x), ctx.L, kind)
        fmt, (a,) = ctx.operands(x)
        if kind == "mean":
            return fmt, a.mean(op.dim, keepdim=True)
        if kind == "sum":
            return fmt, a.sum(op.dim, keepdim=True)
        if kind == "max":
            return fmt, a.amax(op.dim, keepdim=True)
        if kind == "min":
            return fmt, a.amin(op.dim, keepdim=True)
        return fmt, torch.sqrt((a * a).sum(op.dim, keepdim=True))
    return run


def _interleave(kind: str):
    def run(op, ctx, x):
        fmt, (a,) = ctx.operands(x)
        return fmt, tr.interleave(a, op.dim, op.k, kind)
    return run


def _kron(op, ctx, x, y):
    fmt, (a, b) = ctx.operands(x, y)
    dims = set(op.dim) if isinstance(op.dim, (tuple, list)) else {op.dim}
    xs, ys = [a.shape[0]], [b.shape[0]]
    for ax in (1, 2):
        if ax in dims:
            xs += [a.shape[ax], 1]
            ys += [1, b.shape[ax]]
        else:
            xs += [a.shape[ax], 1]
            ys += [b.shape[ax], 1]
    prod = a.reshape(xs) * b.reshape(ys)
    return fmt, prod.reshape(prod.shape[0], prod.shape[1] * prod.shape[2],
                             prod.shape[3] * prod.shape[4])


def _mask_slice(op, ctx, x):
    fmt, (a,) = ctx.operands(x)
    return fmt, tr.mask_slice(a, op.start, op.end, op.dim, op.alpha, op.beta)


def _scan(fn):
    def run(op, ctx, x):
        return FORMAT.RAGGED, fn(op, ctx.ragged(x), ctx.L)
    return run


def _learned_query(op, ctx: EagerContext, q):
    """V = scaling * sum_h Wk[l, h] (Wq[l, h]^T q_h), on the weights
    themselves (differentiable in them), not the tracer's fold."""
    fmt, (x,) = ctx.operands(q)
    if op.Wq is None:
        return fmt, op.scaling * x.sum(dim=1, keepdim=True)
    row = op.row(ctx.layer)
    u = torch.einsum("nhe,her->nhr", x, op.Wq[row].to(x.device, x.dtype))
    v = torch.einsum("nhr,hjr->nj", u, op.Wk[row].to(x.device, x.dtype))
    return fmt, (op.scaling * v)[:, None, :]


def _factor_score(op, ctx: EagerContext, q, descriptors):
    """score = sum_h max_m < Wq[l, h]^T q_h, g[h, m] >, per position."""
    _, (x, g) = ctx.operands(q, descriptors)
    w = op.Wq[op.row(ctx.layer)].to(x.device, x.dtype)
    u = torch.einsum("nhe,her->nhr", x, w)
    g = g.reshape(g.shape[0], op.H, op.m, op.r)
    s = torch.einsum("nhr,nhmr->nhm", u, g)
    return FORMAT.RAGGED, s.amax(dim=2).sum(dim=1)[:, None, None]


def _learned_descriptor(op, ctx: EagerContext, latent):
    """g[h*m + j] = sum_s Wt[l, h, s, j] x[s] Wk[l, h], per block."""
    fmt, (x,) = ctx.operands(latent)
    return fmt, learned_descriptor(op, x, ctx.layer)


_SEMANTICS: Dict[str, Callable[..., Tuple[int, torch.Tensor]]] = {
    "relu": _unary(lambda x, a, b: torch.where(x >= a, x, torch.full_like(x, b))),
    "sigmoid": _unary(lambda x, a, b: 1.0 / (1.0 + torch.exp(b * x + a))),
    "silu": _unary(lambda x, a, b: x / (1.0 + torch.exp(b * x + a))),
    "abs": _unary(lambda x, a, b: torch.abs(b * x + a)),
    "add_mul": _unary(lambda x, a, b: b * x + a),
    "log": _unary(lambda x, a, b: torch.log(b * x + a)),
    "exp": _unary(lambda x, a, b: torch.exp(b * x + a)),
    "maximum": _binary(lambda op, a, b: torch.maximum(a, b)),
    "minimum": _binary(lambda op, a, b: torch.minimum(a, b)),
    "multiply": _binary(lambda op, a, b: a * b),
    "add": _binary(lambda op, a, b: op.alpha * a + op.beta * b),
    "where_eq": _where(torch.eq), "where_ne": _where(torch.ne),
    "where_gt": _where(torch.gt), "where_ge": _where(torch.ge),
    "where_lt": _where(torch.lt), "where_le": _where(torch.le),
    "gemm": _binary(lambda op, a, b: tr.gemm(a, b)),
    "gemv": _binary(lambda op, a, b: tr.gemv(a, b)),
    "kron": _kron,
    "mean": _reduce("mean"), "sum": _reduce("sum"), "max": _reduce("max"),
    "min": _reduce("min"), "l2norm": _reduce("l2norm"),
    "mean_interleave": _interleave("mean"),
    "max_interleave": _interleave("max"),
    "min_interleave": _interleave("min"),
    "l2norm_interleave": _interleave("l2norm"),
    "softmax": _scan(lambda op, x, L: tr.softmax_rows(x, L, op.scale)),
    "normalize": _scan(lambda op, x, L: tr.normalize_rows(x, L)),
    "conv1d": _scan(lambda op, x, L: tr.conv1d_rows(x, L, op.weight)),
    "transpose": lambda op, ctx, x: (lambda f, a: (f, a[0].transpose(1, 2)))(
        *ctx.operands(x)),
    "reshape": lambda op, ctx, x: (lambda f, a: (f, a[0].reshape(
        a[0].shape[0], op.x2, op.y2)))(*ctx.operands(x)),
    "mask_slice": _mask_slice,
    "learned_query": _learned_query,
    "factor_score": _factor_score,
    "learned_descriptor": _learned_descriptor,
}


# ---------------------------------------------------------------------------
# State and selection
# ---------------------------------------------------------------------------

def _field(v: Any, what: str) -> EagerTensor:
    if not isinstance(v, EagerTensor) or v.format != FORMAT.PAGED:
        raise TypeError(f"{what}: expected a cache field (PAGED), got {v!r}")
    return v


def _load(op, ctx: EagerContext, F) -> EagerTensor:
    # Saves are applied after the step: this is the start-of-step value.
    return EagerTensor(ctx.gather(_field(F, "Load").data), FORMAT.RAGGED)


def _save(op, ctx: EagerContext, x, F) -> None:
    ctx.saves.append((_field(F, "Save").data, ctx.ragged(x)))


def _topk(op, ctx: EagerContext, score, o) -> None:
    s = ctx.ragged(score)
    sp, si = tr.topk_select(s, ctx.L)
    _set_selection(o, sp, si, s)


def _set_selection(o, sp, si, score) -> None:
    if not isinstance(o, _Selection):
        raise TypeError(f"the selection's output must be the step's `o`, got "
                        f"{type(o).__name__}")
    o.sparse_indptr, o.sparse_indices, o.score = sp, si, score


class _Tables:
    """The block tables of trtllm TopK in eager mode: per row the kept
    block ids (int64)."""

    def __init__(self, tables: List[torch.Tensor]) -> None:
        self.tables = tables


def _trtllm_topk(op, ctx: EagerContext,
                 score) -> Tuple[_Tables, EagerTensor]:
    """Per row the kept blocks, in trtllm's order (docs/contract.md), as
    vortex_torch returns them: `(block_tables, seqlens)`, seqlens the
    number kept per row (BATCHED [rows, 1, 1])."""
    cfg, L = ctx.cfg, ctx.L
    s = ctx.ragged(score).reshape(-1)
    s = torch.where(torch.isnan(s), float("-inf"), s)
    ip = L.indptr.tolist()
    tables = []
    for r in range(L.rows):
        lo, hi = ip[r], ip[r + 1]
        ids = L.ids[lo:hi]
        if hi - lo <= cfg.bos + op.k + cfg.eos:
            tables.append(ids)
            continue
        mid = s[lo + cfg.bos:hi - cfg.eos]
        # Descending, ties to the lower position: a stable sort.
        best = torch.sort(mid, descending=True, stable=True).indices[:op.k]
        tables.append(torch.cat([ids[:cfg.bos], ids[cfg.bos + best],
                                 ids[hi - lo - cfg.eos:]]))
    lens = torch.tensor([len(t) for t in tables], dtype=torch.int32,
                        device=s.device).view(-1, 1, 1)
    return _Tables(tables), EagerTensor(lens, FORMAT.BATCHED)


def _tables_of(pair, name: str) -> _Tables:
    """The block tables of a `(block_tables, seqlens)` pair from TopK, the
    only form Union takes (as the tracer)."""
    if not (isinstance(pair, tuple) and len(pair) == 2 and
            isinstance(pair[0], _Tables)):
        raise TypeError(f"Union: {name} must be a (block_table, seqlens) "
                        f"tuple from TopK, got {type(pair).__name__}")
    return pair[0]


def _union(op, ctx: EagerContext, i_0, i_1, o) -> None:
    tables = (_tables_of(i_0, "i_0"), _tables_of(i_1, "i_1"))
    L = ctx.L
    ip = L.indptr.tolist()
    indptr, out = [0], []
    for r in range(L.rows):
        lo, hi = ip[r], ip[r + 1]
        last = int(L.ids[hi - 1]) if hi > lo else None
        row: List[int] = []
        for table in (tables[0].tables[r], tables[1].tables[r]):
            for b in table.tolist():
                if b != last and b not in row:
                    row.append(b)
        if last is not None:
            row.append(last)
        out.extend(row)
        indptr.append(len(out))
    dev = L.ids.device
    si = torch.full((L.total,), -1, dtype=torch.int32, device=dev)
    if out:
        si[:len(out)] = torch.tensor(out, dtype=torch.int32, device=dev)
    _set_selection(o, torch.tensor(indptr, dtype=torch.int32, device=dev),
                   si, None)


def _custom_call(op, ctx: EagerContext, *args) -> EagerTensor:
    """A registered custom op: its torch function on the inputs (RAGGED
    `[S, d0, d1]`, BATCHED `[rows, d0, d1]`, float32), its result checked
    against the shape rule."""
    name = op.op_name
    if ctx.L is None:
        raise TypeError(f"{name}: custom ops run in the indexer only")
    specs, data = [], []
    for i, a in enumerate(args):
        if not isinstance(a, EagerTensor) or a.format not in (
                FORMAT.RAGGED, FORMAT.BATCHED):
            raise TypeError(f"{name}: input {i} must be a RAGGED or BATCHED "
                            f"flow value, got {a!r}")
        specs.append(op.spec_of(a.data.shape, a.format))
        data.append(a.data.float())

    def fail(message: str):
        raise ValueError(f"{name}: {message}")

    d0, d1, fmt = op.result_spec(specs, fail)
    lead = ctx.L.total if fmt == FORMAT.RAGGED else ctx.L.rows
    L = ctx.L
    out = op.fn(*data, layout=CustomLayout(L.indptr, L.row_of, L.valid, L.cfg),
                **op.attrs)
    if not isinstance(out, torch.Tensor) or not out.is_floating_point() or \
            tuple(out.shape) != (lead, d0, d1):
        what = (f"a {out.dtype} tensor of shape {tuple(out.shape)}"
                if isinstance(out, torch.Tensor) else type(out).__name__)
        fail(f"the function returned {what}; its shape rule declares a float "
             f"{FORMAT(fmt).name} [{lead}, {d0}, {d1}]")
    return EagerTensor(out.float(), fmt)


# ---------------------------------------------------------------------------
# The dispatch point (vOp.execute)
# ---------------------------------------------------------------------------

def _cache_inputs(op) -> int:
    """Inputs before `output` in a cache op's call form (0: not one)."""
    return 2 if isinstance(op, CacheBinary) else \
        1 if isinstance(op, CacheUnary) else 0


def execute(op, args: Tuple[Any, ...], ctx: Any, kwargs: Mapping[str, Any]):
    """Run one op call eagerly (the `Mode.execute` branch of vOp)."""
    if not isinstance(ctx, EagerContext):
        raise TypeError(f"{type(op).__name__}: eager execution needs the "
                        "context of vortex.semantics.eager.indexer / "
                        "cache_step")
    # A flow's Parameter is its tensor (with its autograd history), on the
    # step's device (a copy there is differentiable too).
    dev = ctx.device
    args = tuple(EagerTensor(a.value(ctx.layer).to(dev) if dev is not None
                             else a.value(ctx.layer), FORMAT.PARAMETER,
                             a.name or "")
                 if isinstance(a, Parameter) else a for a in args)
    m = op.mnemonic
    if m == "fill":
        dest = _field(args[0], "Fill")
        dest.data[ctx.block_ids] = torch.full_like(
            dest.data[ctx.block_ids], op.alpha)
        return dest
    if m == "load":
        return _load(op, ctx, *args)
    if m == "save":
        return _save(op, ctx, *args)
    if m in ("topk", "approx_topk"):
        return _topk(op, ctx, *args)
    if m == "trtllm_topk":
        return _trtllm_topk(op, ctx, *args)
    if m == "union":
        return _union(op, ctx, *args)
    if m == "custom_call":
        return _custom_call(op, ctx, *args)
    fn = _SEMANTICS.get(m)
    if fn is None:
        raise NotImplementedError(f"{type(op).__name__}: no eager semantics "
                                  f"for vortex.{m}")
    n_in = _cache_inputs(op)
    if n_in:
        inputs, rest = args[:n_in], args[n_in:]
        output = rest[0] if rest else kwargs.get("output")
        fmt, data = fn(op, ctx, *inputs)
        return _write_back(ctx, EagerTensor(data, fmt), output)
    fmt, data = fn(op, ctx, *args)
    return EagerTensor(data, fmt)


def _write_back(ctx: EagerContext, value: EagerTensor, output):
    """The cache call forms: a PAGED output is written for each completed
    block; a ragged one is rebound; None returns the value."""
    if output is None:
        return value
    if isinstance(output, EagerTensor) and output.format == FORMAT.PAGED:
        data = value.data
        ids = ctx.block_ids
        if data.shape[0] == 1 and ids.numel() != 1:
            data = data.expand((ids.numel(),) + tuple(data.shape[1:]))
        output.data[ids] = data.to(output.data.dtype)
        return output
    if isinstance(output, EagerTensor):
        output.data, output.format = value.data, value.format
        return output
    raise TypeError(f"output: expected a cache field, a flow value or None, "
                    f"got {type(output).__name__}")


# ---------------------------------------------------------------------------
# Running a step
# ---------------------------------------------------------------------------

def _config(flow_config) -> tr.Config:
    if isinstance(flow_config, tr.Config):
        return flow_config
    get = (flow_config.get if isinstance(flow_config, Mapping)
           else lambda k: getattr(flow_config, k))
    return tr.Config.from_dict({k: get(k) for k in (
        "block_size", "head_dim", "group_size", "topk_val", "topk_ratio",
        "reserved_bos", "reserved_eos")})


def _values(cache: Mapping[str, torch.Tensor], flow, cfg: tr.Config,
            config) -> Dict[str, Any]:
    # create_cache runs first, as vortex_torch's initialize does: flows set
    # shape-dependent op attributes there (a softmax scale of head_dim). An
    # MLA flow's cache holds its latent under vortex_torch's name.
    if getattr(flow, "_vortex_is_mla", False):
        declare_cache(flow, config)
        cache = _mla_names(cache)
    else:
        flow.create_cache(cfg.block_size, cfg.head_dim)
    return {n: EagerTensor(t, FORMAT.PAGED, n)
            for n, t in _dequantized(cache, config).items()}


def _is_int4(config) -> bool:
    kv = (config.get("kv_dtype") if isinstance(config, Mapping)
          else getattr(config, "kv_dtype", None))
    return str(kv) in ("i4", "int4")


def _dequantized(cache: Mapping[str, torch.Tensor], config
                 ) -> Dict[str, torch.Tensor]:
    """The cache the flow reads: a packed int4 pool (kv_dtype int4) as its
    f32 values, (nibble - 7) * scale, without the scales (vortex.int4)."""
    if not _is_int4(config):
        return dict(cache)
    from .. import int4
    out = {n: t for n, t in cache.items() if n not in int4.SCALE_NAMES.values()}
    for pool, scale in int4.SCALE_NAMES.items():
        if pool not in cache or scale not in cache:
            raise ValueError(f"cache: an int4 pool needs {pool!r} and "
                             f"{scale!r}")
        out[pool] = int4.dequantize_torch(cache[pool], cache[scale])
    return out


def _mla_names(cache: Mapping[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """An MLA flow's cache as the flow names it: the latent, the fields. A
    compiled flow's naming (the latent as k, v the same pool) is accepted
    too, so one cache serves both."""
    if "latent" in cache or "k" not in cache:
        return dict(cache)
    named = {n: t for n, t in cache.items() if n not in ("k", "v")}
    named["latent"] = cache["k"]
    return named


def indexer(flow, q: torch.Tensor, cache: Dict[str, torch.Tensor],
            dense_kv_indptr: torch.Tensor, dense_kv_indices: torch.Tensor,
            config, max_n: Optional[int] = None, layer: Optional[int] = None
            ) -> Tuple[Optional[torch.Tensor], torch.Tensor, torch.Tensor]:
    """One decode step of `flow` (a vFlow object) on torch tensors.
    Returns `(score, sparse_kv_indptr, sparse_kv_indices)`: the score the
    selection ranked (float32 per position; None for a trtllm union), the
    int32 sparse CSR (`sparse_kv_indices` has the capacity of
    `dense_kv_indices`, -1 past the selection). Saved fields update `cache`
    in place, after the step. `layer` is the layer per-layer weights are
    read for (vortex.abs.Parameter)."""
    cfg = _config(config)
    L = tr.make_layout(dense_kv_indptr, dense_kv_indices, cfg, max_n)
    ctx = EagerContext(cfg, layout=L, layer=layer)
    o = _Selection()
    flow.forward_indexer(EagerTensor(q, FORMAT.BATCHED, "q"), o,
                         _values(cache, flow, cfg, config), ctx)
    for field, value in ctx.saves:
        tr._save(field, value, L)
    if o.sparse_indptr is None:
        raise RuntimeError(f"{type(flow).__name__}.forward_indexer made no "
                           "selection (topK / approxTopK / Union into o)")
    score = None if o.score is None else o.score.reshape(-1)
    return score, o.sparse_indptr, o.sparse_indices


def cache_step(flow, cache: Dict[str, torch.Tensor], block_ids: torch.Tensor,
               config, layer: Optional[int] = None) -> None:
    """Summarize the completed blocks `block_ids` (negative ids skipped)
    into the fields of `cache`, in place, with `flow.forward_cache`, for
    `layer` (per-layer weights)."""
    cfg = _config(config)
    ids = block_ids.to(torch.int64)
    ids = ids[ids >= 0]
    ctx = EagerContext(cfg, block_ids=ids, layer=layer)
    flow.forward_cache(_values(cache, flow, cfg, config), None, ctx)


# ---------------------------------------------------------------------------
# Attention (docs/contract.md "Attention"), differentiable in q, k and v
# ---------------------------------------------------------------------------

def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
           kv_indptr: torch.Tensor, kv_indices: torch.Tensor,
           kv_last_len: torch.Tensor, group_size: int,
           sm_scale: Optional[float] = None
           ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Decode attention over a CSR with torch ops (float32 compute): q
    `[rows, T x G, D]`, k and v `[num_blocks, block_size, D]`. Returns (o in
    q's dtype, lse `[rows, T x G]` f32, natural log). Tokens a head does not
    see are removed with `where` on k, v and the logits, so NaN there
    reaches neither the result nor the gradients."""
    rows, heads, dim = q.shape
    block = k.shape[1]
    tokens = heads // group_size
    scale = dim ** -0.5 if sm_scale is None else float(sm_scale)
    dev = q.device
    ip = kv_indptr.to(torch.int64)
    n = ip[1:] - ip[:-1]
    max_n = int(n.max()) if rows else 0
    slot = torch.arange(max_n, device=dev)
    pos = (ip[:-1, None] + slot[None, :]).clamp(
        max=max(kv_indices.numel() - 1, 0))
    live = slot[None, :] < n[:, None]
    blocks = torch.where(live, kv_indices.to(torch.int64)[pos]
                         if kv_indices.numel() else torch.zeros_like(pos), 0)
    length = torch.where(n > 0, (n - 1) * block + kv_last_len.to(torch.int64),
                         torch.zeros_like(n))
    tok = torch.arange(max_n * block, device=dev)
    valid = (tok[None, :] < length[:, None])[..., None]          # [r, N, 1]
    keys = torch.where(valid, k[blocks].reshape(rows, -1, dim).float(), 0.0)
    vals = torch.where(valid, v[blocks].reshape(rows, -1, dim).float(), 0.0)
    after = tokens - 1 - torch.arange(heads, device=dev) // group_size
    seen = tok[None, None, :] < (length[:, None] - after[None, :])[..., None]
    logits = torch.einsum("rhd,rnd->rhn", q.float(), keys) * scale
    logits = torch.where(seen, logits, float("-inf"))
    top = logits.amax(-1, keepdim=True) if tok.numel() else \
        torch.full((rows, heads, 1), float("-inf"), device=dev)
    top = torch.where(torch.isfinite(top), top, 0.0).detach()
    p = torch.where(seen, torch.exp(logits - top), 0.0)
    total = p.sum(-1)
    some = total > 0
    safe = torch.where(some, total, 1.0)
    o = torch.einsum("rhn,rnd->rhd", p, vals) / safe[..., None]
    o = torch.where(some[..., None], o, 0.0).to(q.dtype)
    lse = torch.where(some, top[..., 0] + torch.log(safe), float("-inf"))
    return o, lse


def decode(flow, q: torch.Tensor, cache: Dict[str, torch.Tensor],
           dense_kv_indptr: torch.Tensor, dense_kv_indices: torch.Tensor,
           kv_last_len: torch.Tensor, config,
           sm_scale: Optional[float] = None, layer: Optional[int] = None):
    """The indexer of `flow` (for `layer`), then `attend` over its
    selection. Returns (o, lse, score, sparse_kv_indptr,
    sparse_kv_indices); an MLA flow's o holds the first kv_lora_rank
    channels (the values of its latent)."""
    cfg = _config(config)
    check_decode({"reserved_eos": cfg.eos, "block_size": cfg.block_size},
                 q.shape[1] // cfg.group_size)
    score, sp_indptr, sp_indices = indexer(flow, q, cache, dense_kv_indptr,
                                           dense_kv_indices, config,
                                           layer=layer)
    if getattr(flow, "_vortex_is_mla", False):
        # MLA: scores over the whole latent, values its first kv_lora_rank
        # channels; attending with v = the latent and keeping those
        # channels of o is exactly that (docs/design.md, "MLA flows").
        rank, _ = mla_dims(flow, config)
        latent = _mla_names(cache)["latent"]
        o, lse = attend(q, latent, latent, sp_indptr,
                        sp_indices, kv_last_len, cfg.group_size, sm_scale)
        return o[..., :rank], lse, score, sp_indptr, sp_indices
    pools = _dequantized(cache, config)
    o, lse = attend(q, pools["k"], pools["v"], sp_indptr, sp_indices,
                    kv_last_len, cfg.group_size, sm_scale)
    return o, lse, score, sp_indptr, sp_indices


def flow_for(name: str, config: Mapping[str, Any]):
    """The registered vortex_torch-style flow behind a compiled flow's name:
    the exact name, else the longest registered name it starts with
    followed by '_' (variants such as gqa_quest_sparse_attention_g5 or
    block_sparse_attention_k64_g8); instantiated, with `create_cache`
    run for the manifest's config. Returns (flow, {field: (r, c)})."""
    known = registry.list_keys()
    best = name if name in known else None
    if best is None:
        for k in known:
            if name.startswith(k + "_") and (best is None or
                                             len(k) > len(best)):
                best = k
    if best is None:
        raise KeyError(f"no registered flow for {name!r} (known: "
                       f"{sorted(known)})")
    flow = registry.get(best)()
    fields = declare_cache(flow, config)
    return flow, {f: tuple(rc) for f, rc in fields.items()}


def budget(config, n):
    """The budget rule (vortex.manifest), for eager callers."""
    cfg = _config(config)
    return budget_rule(cfg.topk_val + cfg.bos + cfg.eos, cfg.topk_ratio, n)
