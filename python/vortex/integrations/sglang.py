"""A compiled flow in place of the two per-step callables of vortex_torch's
SGLang backend (`VortexFlashInferBackend`; docs/engines.md).

    from vortex.integrations.sglang import (VortexSGLangIndexer,
                                            VortexSGLangPool)
    pool = VortexSGLangPool(flow, size=tokens, head_num=H, layer_num=L,
                            layers_skip=(0,))       # flow: vortex.load(...)
    indexer = VortexSGLangIndexer(flow, num_kv_heads=H, max_batch_size=bs,
                                  max_context_len=ctx_len)
    # per decode step (the backend's init_forward_metadata):
    indexer.plan_decode(seq_lens.int(), req_to_token, req_pool_indices)
    # per layer (forward_decode): was compiled_cache / compiled_indexer
    pool.set_kv_buffer(layer, out_cache_loc, k, v)
    indexer.forward(q=q.view(-1, G, D), o=sparse_indices_buf,
                    cache=pool.get_cache(layer.layer_id), layer=layer.layer_id)

- Pool: vortex_torch's head-split layout (slot `pos`, KV head `h` -> row
  `(pos // page) * (page * H) + h * page + pos % page`), the cache step on
  `loc` (negative slots skipped), `rebuild_aux`, `kv_cell_size`.
- Planner: the dense CSR (row `b * H + h`), `kv_last_page_len` and the
  sparse indptr of the flow's budget rule, in device ops and one host read
  of the step's total (FlashInfer's plan reads its indptr on the host too).
- Indexer: the selection into the caller's `o`; a `sparse_kv_indptr` that
  is not the budget rule (a custom `schedule_policy`) is refused, since the
  FlashInfer plan made from it would not match the selection.
- `register()`: five SGLang plugin hooks; `validate_sglang_runtime_contract`.
  The attention backend itself (FlashInfer) is not part of this module.
Bad input raises a ValueError naming the argument before anything is
written (loc's values are checked for CPU tensors only, as the ops do).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Dict, Iterable

from vortex.environment import import_torch
from vortex.runtime.manifest import DTYPES, budget
from vortex.runtime.paging import check_pageable, slot_blocks, slot_rows

torch = import_torch()

__all__ = ["VortexSGLangPool", "VortexSGLangIndexer", "DecodeMetadata",
           "kv_cell_size", "register", "validate_sglang_runtime_contract",
           "VORTEX_SGLANG_ABI", "SGLANG_HOOKS"]


def _geometry(flow):
    cfg = getattr(flow, "config", None) or {}
    missing = [k for k in ("block_size", "page_size", "head_dim",
                           "group_size") if k not in cfg]
    if missing:
        raise ValueError(f"flow: its config has no {missing}")
    check_pageable(flow, "vortex_torch's SGLang pool")
    bs, ps = int(cfg["block_size"]), int(cfg["page_size"])
    if ps % bs:
        raise ValueError(f"page_size: {ps} is not a multiple of the flow's "
                         f"block_size {bs}")
    return bs, ps, int(cfg["head_dim"]), int(cfg["group_size"])


def _bytes_per_token_head(flow) -> Fraction:
    """Bytes of k, v and every field per token of one KV head, one layer."""
    return Fraction(sum(math.prod(s) * DTYPES[dt][2] for s, dt in
                        flow.manifest.cache_shapes(1).values()),
                    int(flow.config["block_size"]))


def kv_cell_size(flow, num_kv_heads: int, num_layers: int) -> int:
    """vortex_torch's `kv_cell_size`: pool bytes per token (K, V and the
    flow's fields of every layer), from the manifest's field shapes."""
    return math.ceil(num_kv_heads * num_layers * _bytes_per_token_head(flow))


def _desc(t) -> str:
    return (f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor)
            else type(t).__name__)


def _int_tensor(t, name: str, dim: int = 1,
                dtypes=(torch.int32, torch.int64)) -> None:
    if not isinstance(t, torch.Tensor) or t.dim() != dim or \
            t.dtype not in dtypes:
        kinds = "/".join(str(d)[6:] for d in dtypes)
        raise ValueError(f"{name}: expected a {dim}-D tensor of {kinds}, "
                         f"got {_desc(t)}")


class VortexSGLangPool:
    """vortex_torch's `VortexCachePool`: per-layer cache dicts (k, v, the
    flow's fields) in the head-split page layout."""

    # SGLang's fused RoPE + set-kv kernel writes token-major rows.
    supports_fused_set_kv_buffer = False
    is_vortex_pool = True

    def __init__(self, flow, size: int, head_num: int, layer_num: int,
                 layers_skip: Iterable[int] = (), device=None,
                 start_layer: int = 0):
        self.block_size, self.page_size, self.head_dim, _ = _geometry(flow)
        for name, val in (("size", size), ("head_num", head_num),
                          ("layer_num", layer_num)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"{name}: expected a positive int, got "
                                 f"{val!r}")
        if "num_slots" in flow.manifest.symbols:
            raise NotImplementedError(f"flow: {flow.name} has slotted fields "
                                      "(slot_of_ptr), which this pool lacks")
        self.flow, self.head_num, self.layer_num = flow, head_num, layer_num
        self.start_layer = int(start_layer)
        self.layers_skip = frozenset(int(i) for i in layers_skip)
        P = self.page_size
        self.size = -(-size // P) * P     # SGLang aligns its pool to pages
        # vortex_torch's count: slots [0, size + page) plus one spare page,
        # where padded (negative) slots' K/V rows land.
        self.num_pages = ((self.size + P) * head_num + P - 1) // P + 1
        self.num_blocks = self.num_pages * (P // self.block_size)
        self.num_slots = self.size + P
        self.cache = [flow.allocate_cache(self.num_blocks, device=device)
                      for _ in range(layer_num)]
        self.dtype = self.cache[0]["k"].dtype

    @property
    def cell_size(self) -> int:
        return kv_cell_size(self.flow, self.head_num, self.layer_num)

    def _slot(self, layer_id: int) -> int:
        slot = layer_id - self.start_layer
        if not 0 <= slot < self.layer_num:
            raise ValueError(f"layer: id {layer_id} is outside this pool's "
                             f"layers [{self.start_layer}, "
                             f"{self.start_layer + self.layer_num})")
        return slot

    def get_cache(self, layer_id: int) -> Dict[str, torch.Tensor]:
        return self.cache[self._slot(int(layer_id))]

    def get_kv_buffer(self, layer_id: int):
        return self.get_cache(layer_id)["k"], self.get_cache(layer_id)["v"]

    def rows(self, loc: torch.Tensor) -> torch.Tensor:
        """Flat K/V rows `[len(loc), H]` of token slots; negative slots map
        to the spare page's last row."""
        r = slot_rows(loc, self.head_num, self.page_size)
        return torch.where(loc[:, None] >= 0, r,
                           self.num_blocks * self.block_size - 1)

    def _kv(self, x, name: str, n: int, scale) -> torch.Tensor:
        H, D = self.head_num, self.head_dim
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or \
                x.dim() < 2 or x.shape[0] != n or \
                math.prod(x.shape[1:]) != H * D:
            raise ValueError(f"{name}: expected a float tensor [{n}, {H}, "
                             f"{D}] (len(loc), KV heads, head_dim), got "
                             f"{_desc(x)}")
        if x.dtype != self.dtype and scale is not None:
            x = x / scale       # as vortex_torch: quantized into the pool
        return x.reshape(n * H, D).to(self.dtype)

    def set_kv_buffer(self, layer, loc, cache_k, cache_v, k_scale=None,
                      v_scale=None, layer_id_override=None, dcp_kv_mask=None):
        """Write K/V `[len(loc), H, D]` at the head-split rows of `loc`, then
        run the cache step on `loc` unless the layer is in layers_skip."""
        layer_id = int(getattr(layer, "layer_id", layer))
        # layers_skip names the model's layer; a hybrid model's pool slot
        # comes from layer_id_override (as in vortex_torch).
        c = self.cache[self._slot(layer_id if layer_id_override is None
                                  else int(layer_id_override))]
        if dcp_kv_mask is not None:
            raise ValueError("dcp_kv_mask: decode context parallelism is not "
                             "supported (as in vortex_torch's pool)")
        _int_tensor(loc, "loc")
        n = loc.shape[0]
        k = self._kv(cache_k, "cache_k", n, k_scale)
        v = self._kv(cache_v, "cache_v", n, v_scale)
        if loc.device.type == "cpu" and n and \
                int(loc.max()) >= self.num_slots:
            raise ValueError(f"loc: slot {int(loc.max())} is outside the "
                             f"pool's {self.num_slots} slots")
        rows = self.rows(loc).reshape(-1)
        c["k"].view(-1, self.head_dim)[rows] = k
        c["v"].view(-1, self.head_dim)[rows] = v
        if layer_id not in self.layers_skip:
            self.flow.cache_step(c, loc=loc, num_kv_heads=self.head_num,
                                 layer=layer_id)

    def rebuild_aux(self, loc) -> None:
        """PD disaggregation: the fields of every sparse layer from the K/V
        received for `loc` (one batched cache step per layer)."""
        if loc is None or not loc.numel():
            return
        _int_tensor(loc, "loc")
        for i, c in enumerate(self.cache):
            if self.start_layer + i not in self.layers_skip:
                self.flow.cache_step(c, loc=loc.to(torch.int64),
                                     num_kv_heads=self.head_num,
                                     layer=self.start_layer + i)


class DecodeMetadata:
    """The decode fields of vortex_torch's `MetaData`, preallocated (CUDA
    graphs replay them): CSR rows are (request, KV head) pairs."""

    def __init__(self, max_rows: int, max_total: int, device=None):
        for name, n in (("dense_kv_indptr", max_rows + 1),
                        ("dense_kv_indices", max_total),
                        ("sparse_kv_indptr", max_rows + 1),
                        ("sparse_kv_indices", max_total),
                        ("kv_last_page_len", max_rows)):
            setattr(self, name, torch.zeros(n, dtype=torch.int32,
                                            device=device))
        self.batch_size = 0

    def set_batch_size(self, n: int) -> None:
        self.batch_size = n


class VortexSGLangIndexer:
    """vortex_torch's decode planner and `compiled_indexer` on a flow."""

    def __init__(self, flow, num_kv_heads: int, max_batch_size: int,
                 max_context_len: int, device=None):
        self.block_size, self.page_size, self.head_dim, self.group_size = \
            _geometry(flow)
        self.flow, self.num_kv_heads = flow, int(num_kv_heads)
        rows = int(max_batch_size) * self.num_kv_heads
        blocks = -(-int(max_context_len) // self.block_size)
        self.metadata = DecodeMetadata(
            rows, rows * blocks, flow.device if device is None else device)
        self._planned = None     # (metadata, rows, total) of the last plan

    def _md(self, ctx):
        return self.metadata if ctx is None else getattr(ctx, "metadata", ctx)

    def plan_decode(self, cached_seq_lens, req_to_token, req_indices,
                    ctx=None) -> None:
        """vortex_torch's `plan_decode`: the step's CSR into the metadata
        (`ctx.metadata` when given, else this indexer's)."""
        md = self._md(ctx)
        _int_tensor(cached_seq_lens, "cached_seq_lens", dtypes=(torch.int32,))
        _int_tensor(req_to_token, "req_to_token", 2, (torch.int32,))
        _int_tensor(req_indices, "req_indices")
        bs, H, B, P = (cached_seq_lens.shape[0], self.num_kv_heads,
                       self.block_size, self.page_size)
        if req_indices.shape[0] != bs:
            raise ValueError(f"req_indices: {req_indices.shape[0]} entries, "
                             f"cached_seq_lens has {bs}")
        rows, cap = bs * H, md.dense_kv_indices.numel()
        if rows + 1 > md.dense_kv_indptr.numel():
            raise ValueError(f"cached_seq_lens: {bs} requests x {H} KV heads "
                             f"exceed the metadata's "
                             f"{md.dense_kv_indptr.numel() - 1} rows")
        L = cached_seq_lens.to(torch.int64)
        n = (L + B - 1) // B
        nr = n.repeat_interleave(H)
        # The step's one host read: its total, and the values to check.
        total, lmin, lmax, rmin, rmax = torch.stack(
            [nr.sum(), L.min(), L.max(), req_indices.min(),
             req_indices.max()]).tolist() if bs else [0] * 5
        reqs, width = req_to_token.shape
        if bs and (lmin < 1 or lmax > width or total > cap):
            raise ValueError(f"cached_seq_lens: lengths in [{lmin}, {lmax}] "
                             f"({total} blocks), expected [1, {width}] and "
                             f"at most {cap} blocks")
        if bs and (rmin < 0 or rmax >= reqs):
            raise ValueError(f"req_indices: [{rmin}, {rmax}] is outside "
                             f"req_to_token's {reqs} rows")
        dev = md.dense_kv_indptr.device
        ip = torch.zeros(rows + 1, dtype=torch.int64, device=dev)
        ip[1:] = torch.cumsum(nr, 0)
        # Entry (row, j): block j of request row // H, head row % H, whose
        # first token is req_to_token[req, j * B].
        row = torch.repeat_interleave(torch.arange(rows, device=dev), nr,
                                      output_size=total)
        j = torch.arange(total, device=dev) - ip[row]
        slot = req_to_token[req_indices.to(torch.int64)[row // H],
                            j * B].to(torch.int64)
        md.dense_kv_indptr[:rows + 1] = ip
        md.dense_kv_indices[:total] = slot_blocks(slot, H, P, B).gather(
            1, (row % H)[:, None])[:, 0]
        md.sparse_kv_indptr[0] = 0
        md.sparse_kv_indptr[1:rows + 1] = torch.cumsum(
            torch.minimum(nr, budget(self.flow.config, nr)), 0)
        md.kv_last_page_len[:rows] = (L - (n - 1) * B).repeat_interleave(H)
        if hasattr(md, "set_batch_size"):
            md.set_batch_size(bs)
        self._planned = (md, rows, total)

    def forward(self, q, o, cache, ctx=None, check: bool = True,
                layer=None):
        """vortex_torch's `compiled_indexer.forward(q=, o=, cache=, ctx=)`:
        the selection of q `[batch * H, G, D]` into `o` (its first
        `sparse_kv_indptr[rows]` entries; sparse_kv_indptr is rewritten with
        the same values). `check` compares the caller's sparse_kv_indptr
        with the budget rule (one sync on the GPU). `layer` (the model's
        layer id) selects the slice of per-layer parameters; required when
        the flow has them (docs/python.md, "Per-layer parameters")."""
        md = self._md(ctx)
        G, D = self.group_size, self.head_dim
        if not isinstance(q, torch.Tensor) or q.dim() != 3 or \
                tuple(q.shape[1:]) != (G, D):
            raise ValueError(f"q: expected [batch * KV heads, {G}, {D}], "
                             f"got {_desc(q)}")
        self.flow._check_cache(cache)
        if q.dtype != cache["k"].dtype:
            raise ValueError(f"q: dtype {q.dtype}, the flow's cache is "
                             f"{cache['k'].dtype}")
        rows, want = q.shape[0], getattr(md, "batch_size", None)
        if want is not None and rows != want * self.num_kv_heads:
            raise ValueError(f"q: {rows} rows, the plan has {want} requests "
                             f"x {self.num_kv_heads} KV heads")
        ip, sp = md.dense_kv_indptr[:rows + 1], md.sparse_kv_indptr[:rows + 1]
        p = self._planned
        total = p[2] if p and p[0] is md and p[1] == rows else int(ip[-1])
        if not isinstance(o, torch.Tensor) or o.dim() != 1 or \
                o.dtype != torch.int32 or o.numel() < total:
            raise ValueError(f"o: expected a 1-D int32 buffer of at least "
                             f"{total} entries (the step's dense blocks), "
                             f"got {_desc(o)}")
        if check:
            n = (ip[1:] - ip[:-1]).to(torch.int64)
            rule = torch.cumsum(torch.minimum(n, budget(self.flow.config, n)),
                                0)
            if int(sp[0]) != 0 or not torch.equal(sp[1:].long(), rule):
                raise ValueError(
                    "sparse_kv_indptr: not the flow's budget rule max(topk_val"
                    " + reserved_bos + reserved_eos, int(n * topk_ratio)) per "
                    "row (a custom schedule_policy?); FlashInfer's plan of it "
                    "would not match the selection")
        self.flow.indexer(q, cache, ip, md.dense_kv_indices[:total], sp, o,
                          layer=layer)
        return o


# -- SGLang plugin hooks ------------------------------------------------------
VORTEX_SGLANG_ABI = 1
_STATE: Dict[str, Any] = {"build_flow": None, "layers_skip": frozenset()}


def _after_configure_kv_cache_dtype(result, runner, *args, **kwargs):
    validate_sglang_runtime_contract()
    flow = _STATE["build_flow"](runner)
    bs, ps, hd, _ = _geometry(flow)
    page = getattr(runner, "page_size", None) or runner.server_args.page_size
    model_hd = runner.model_config.head_dim
    if (int(page), int(model_hd)) != (ps, hd):
        raise ValueError(f"page_size/head_dim: SGLang's are {page}/"
                         f"{model_hd}, the flow's {ps}/{hd}")
    runner.sparse_attention, runner.block_size = flow, bs


def _around_compute_cell_size(original, configurator, runner, num_layers,
                              *args, **kwargs):
    # SGLang's dense cell (its own head, layer and TP accounting) scaled by
    # the flow's bytes per token over dense K/V's.
    cell = original(configurator, runner, num_layers, *args, **kwargs)
    flow = getattr(runner, "sparse_attention", None)
    if flow is None:
        raise RuntimeError("the Vortex flow was not built before KV sizing")
    dense = 2 * int(flow.config["head_dim"]) * \
        torch.empty((), dtype=runner.kv_cache_dtype).element_size()
    return math.ceil(cell * _bytes_per_token_head(flow) / dense)


def _make_pool(runner, size, page_size, dtype, head_num, head_dim, layer_num,
               device, enable_memory_saver=False, start_layer=None,
               end_layer=None, **_):
    flow = runner.sparse_attention
    _, ps, hd, _ = _geometry(flow)
    want = getattr(torch, DTYPES[flow.manifest.tensors["k"].dtype][0])
    if (int(page_size), int(head_dim), dtype) != (ps, hd, want):
        raise ValueError(f"page_size/head_dim/dtype: SGLang's pool has "
                         f"{page_size}/{head_dim}/{dtype}, the flow "
                         f"{ps}/{hd}/{want}")
    return VortexSGLangPool(flow, int(size), int(head_num), int(layer_num),
                            _STATE["layers_skip"], device, start_layer or 0)


def _around_init_pools(original, runner, *args, **kwargs):
    # SGLang picks the pool class inside one large method: rebind the name
    # while it runs, so no dense pool is allocated beside ours.
    g = original.__globals__
    saved = g.get("MHATokenToKVPool")
    g["MHATokenToKVPool"] = lambda *a, **kw: _make_pool(runner, *a, **kw)
    try:
        result = original(runner, *args, **kwargs)
    finally:
        g["MHATokenToKVPool"] = saved
    pool = getattr(runner, "token_to_kv_pool", None)
    if not getattr(pool, "is_vortex_pool", False):
        raise RuntimeError("SGLang built a KV pool other than "
                           "MHATokenToKVPool, which the adapter replaces")
    return result


def _around_enable_fused_set_kv_buffer(original, forward_batch, *args,
                                       **kwargs):
    pool = getattr(forward_batch, "token_to_kv_pool", None)
    if getattr(pool, "supports_fused_set_kv_buffer", True) is False:
        return False
    return original(forward_batch, *args, **kwargs)


def _after_pop_transferred(result, queue, *args, **kwargs):
    pool = queue.scheduler.token_to_kv_pool_allocator.get_kvcache()
    if result and getattr(pool, "is_vortex_pool", False):
        table = queue.scheduler.req_to_token_pool.req_to_token
        pool.rebuild_aux(torch.cat([table[r.req_pool_idx,
                                          :r.kv_committed_len]
                                    for r in result]))


_RUNNER = "sglang.srt.model_executor."
# hook name -> (the SGLang function it wraps, hook, HookType): vortex_torch's
# names and targets, for the hooks this adapter implements.
_HOOKS = {
    "model_runner.build_sparse_flow": (
        _RUNNER + "model_runner.ModelRunner.configure_kv_cache_dtype",
        _after_configure_kv_cache_dtype, "AFTER"),
    "kv_cache.kv_cell_size": (
        _RUNNER + "pool_configurator.DefaultPoolConfigurator."
        "_compute_cell_size", _around_compute_cell_size, "AROUND"),
    "kv_cache.make_kv_pool": (
        _RUNNER + "model_runner_kv_cache_mixin.ModelRunnerKVCacheMixin."
        "_init_pools", _around_init_pools, "AROUND"),
    "model_utils.fused_kv_opt_out": (
        "sglang.srt.models.utils.enable_fused_set_kv_buffer",
        _around_enable_fused_set_kv_buffer, "AROUND"),
    "disaggregation.rebuild_aux": (
        "sglang.srt.disaggregation.decode.DecodeTransferQueue."
        "pop_transferred", _after_pop_transferred, "AFTER"),
}
SGLANG_HOOKS = {name: h[0] for name, h in _HOOKS.items()}
_REQUIRED_SGLANG_HOOKS = frozenset(SGLANG_HOOKS)


def register(build_flow: Callable[[Any], Any],
             layers_skip: Iterable[int] = (), apply: bool = True) -> None:
    """Registers the hooks with SGLang's HookRegistry and applies them
    (with apply=False, SGLang's load_plugins applies them later).
    `build_flow(model_runner)` returns the vortex.Flow to serve."""
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
    except ImportError as err:
        raise ImportError("vortex.integrations.sglang.register: sglang (its "
                          "plugin hook registry, sglang.srt.plugins."
                          "hook_registry) is not importable") from err
    if not callable(build_flow):
        raise ValueError(f"build_flow: expected a callable(model_runner) -> "
                         f"vortex.Flow, got {type(build_flow).__name__}")
    _STATE.update(build_flow=build_flow,
                  layers_skip=frozenset(int(i) for i in layers_skip))
    # Once per registry: a second register() only updates _STATE.
    if getattr(HookRegistry, "_vortex_integration_abi",
               None) != VORTEX_SGLANG_ABI:
        for target, fn, kind in _HOOKS.values():
            HookRegistry.register(target, fn, getattr(HookType, kind))
        HookRegistry._vortex_integration_abi = VORTEX_SGLANG_ABI
        HookRegistry._vortex_integration_hooks = _REQUIRED_SGLANG_HOOKS
    if apply:
        HookRegistry.apply_hooks()


def validate_sglang_runtime_contract() -> None:
    """Raises RuntimeError unless this adapter's ABI and every hook of
    SGLANG_HOOKS are registered and applied (naming what is missing)."""
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry
    except ImportError as err:
        raise RuntimeError("vortex.integrations.sglang: sglang (its plugin "
                           "hook registry) is not importable") from err
    abi = getattr(HookRegistry, "_vortex_integration_abi", None)
    have = getattr(HookRegistry, "_vortex_integration_hooks", frozenset())
    patched = getattr(HookRegistry, "_patched", set())
    errors = [f"ABI {abi!r} is installed, {VORTEX_SGLANG_ABI} is required "
              "(call register())"] if abi != VORTEX_SGLANG_ABI else []
    missing = sorted(_REQUIRED_SGLANG_HOOKS - have)
    unapplied = [f"{n} ({t})" for n, t in sorted(SGLANG_HOOKS.items())
                 if t not in patched]
    if missing:
        errors.append("hooks not registered: " + ", ".join(missing))
    if unapplied:
        errors.append("hooks not applied: " + ", ".join(unapplied))
    if errors:
        raise RuntimeError("SGLang runtime incompatible with vortex."
                           "integrations.sglang (" + "; ".join(errors) + ")")
