"""`paged|vortex`: a compiled flow as the paged attention of transformers'
continuous batching (transformers 5.17; docs/engines.md).

    from vortex.integrations.transformers import PagedVortex
    attn = PagedVortex(flow, layers_skip=(0,))     # flow: vortex.load(...)
    attn.attach(model, cb_config)                  # checks, then "paged|vortex"
    model.generate_batch(prompts, generation_config=...,
                         continuous_batching_config=cb_config)

Per call (one layer of one engine step):
- K/V of the step's tokens go into transformers' own cache tensors, laid out
  as vortex_torch's head-split pages (no copy): transformers' block `p` of
  `page_size` tokens holds, for KV head `h`, the pool page `p * H + h`, so
  `write_index` is vortex_torch's `loc` and the flow's pool is a view of the
  cache tensor;
- the cache step summarizes the blocks those tokens complete
  (`flow.cache_step(loc=write_index)`) into fields allocated per layer;
- a decode request (one new token) runs `flow.decode`: the indexer over its
  completed blocks, then attention over the selection, with the partial last
  block always attended and never scored; a layer in `layers_skip` runs
  `flow.attend` over all of the request's blocks;
- a prefill request (a prompt or a chunk of one) attends densely (SDPA,
  causal within the chunk);
- a step whose requests all decode takes transformers' decode fast path,
  which `attach` opens to the flow (`enable_decode_fast_path`): the engine's
  block table replaces its per-slot lists, and gives the new tokens' slots.

Refused by `attach`, with a message naming what is wrong: layers that are
not full attention (sliding windows), a model whose head_dim or query group
differs from the flow's, an engine block that is not the flow's page_size,
and block sharing (prefix sharing) for a flow that saves state per block
(its indexer writes a cache field).
The call checks the same again (the engine catches what it raises and logs
the step's requests as failed), and the decode op refuses a flow whose
selection may drop the partial block.
"""

from __future__ import annotations

import weakref
from typing import Dict, Iterable, List, Optional, Tuple

from vortex.environment import import_torch
from vortex.runtime.paging import check_pageable, slot_blocks, slot_rows

torch = import_torch()

__all__ = ["PagedVortex", "enable_decode_fast_path"]

# The transformers versions whose engine internals the two wraps below (the
# decode fast-path gate, `copy_cache`) were written and tested against.
FAST_PATH_VERSIONS = ("5.17.",)
_FAST_PATH_KEYS = set()
# Attached PagedVortex objects: `copy_cache` copies their fields too.
_ATTACHED = weakref.WeakSet()


def _version_ok(what: str) -> bool:
    import warnings

    import transformers
    if transformers.__version__.startswith(FAST_PATH_VERSIONS):
        return True
    warnings.warn(
        f"{what}: written for transformers "
        f"{', '.join(v + 'x' for v in FAST_PATH_VERSIONS)} only (this is "
        f"{transformers.__version__}); not enabled")
    return False


def _copy_fields_on_fork() -> bool:
    """Forking a request (num_return_sequences > 1) copies the parent's
    unshared blocks with `PagedAttentionCache.copy_cache`, K/V only: wrap it
    once so the flow's fields of those blocks (summaries, saved state) are
    copied with them. Returns whether the wrap is on."""
    from transformers.generation.continuous_batching import cache as cb
    copy = getattr(cb.PagedAttentionCache, "copy_cache", None)
    if copy is None or not _version_ok("copying fields on fork"):
        return False
    if getattr(copy, "_vortex", False):
        return True

    def copy_cache(self, list_source_blocks, list_forked_blocks):
        copy(self, list_source_blocks, list_forked_blocks)
        for attn in list(_ATTACHED):
            attn._copy_fields(self, list_source_blocks, list_forked_blocks)
    copy_cache._vortex, copy_cache.__wrapped__ = True, copy
    cb.PagedAttentionCache.copy_cache = copy_cache
    return True


def enable_decode_fast_path(key: str) -> bool:
    """Opens transformers' decode fast path (the block table) to the
    attention registered as `key`. transformers gives it to flash-attn
    only: its gate sets `max_blocks_per_request = 0` for any other
    attention, which then gets, every step, a Python list of every cached
    slot of every request. The gate is wrapped once, and only on
    FAST_PATH_VERSIONS; other models keep the original gate. Returns whether
    the path is open (False, with a warning, on another version)."""
    from transformers.generation.continuous_batching import \
        initialization as init
    gate = getattr(init, "ensure_decode_fast_path_is_available", None)
    if gate is None or not _version_ok(
            f"{key}: the decode fast path (decode uses the per-slot lists)"):
        return False
    _FAST_PATH_KEYS.add(key)
    if getattr(gate, "_vortex", False):
        return True

    def ensure(config, cb_config, user_requested):
        if getattr(config, "_attn_implementation", None) in _FAST_PATH_KEYS:
            return   # keep max_blocks_per_request as resolved
        return gate(config, cb_config, user_requested)
    ensure._vortex, ensure.__wrapped__ = True, gate
    init.ensure_decode_fast_path_is_available = ensure
    return True


class PagedVortex:
    """A compiled flow as transformers' paged attention."""

    def __init__(self, flow, layers_skip: Iterable[int] = (),
                 name: str = "vortex", decode_fast_path: bool = True,
                 static_decode: Optional[bool] = None):
        for key in ("block_size", "page_size", "head_dim", "group_size"):
            if key not in flow.config:
                raise ValueError(f"flow: its config has no {key}")
        check_pageable(flow, "paged|vortex")
        self.flow = flow
        self.name = name
        self.block_size = int(flow.config["block_size"])
        self.page_size = int(flow.config["page_size"])
        self.head_dim = int(flow.config["head_dim"])
        self.group_size = int(flow.config["group_size"])
        self.layers_skip = frozenset(int(i) for i in layers_skip)
        self.decode_fast_path = decode_fast_path
        # The fast path's static form (graph-capturable): by default on
        # CUDA (`_static_decode`).
        self.static_decode = static_decode
        # Fields the indexer writes (a flow's Save): state of a block that
        # only one request may own.
        m = flow.manifest
        self.saved = [n for n in m.steps["indexer"].writes
                      if m.tensors[n].role == "cache"]
        self._fields: Dict[int, Dict[str, torch.Tensor]] = {}
        self._owners: Dict[int, tuple] = {}
        # The static decode plan of the current step (`_static_plan`).
        self._plan, self._last_layer = None, -1
        # Layer -> the flow's cache dict of its last call (k and v are views
        # of the engine's tensors): what a test or a benchmark inspects.
        self.caches: Dict[int, Dict[str, torch.Tensor]] = {}
        # Decode rows, blocks they could attend, blocks the selections kept,
        # summed on the device (`stats` reads them).
        self._counts: Optional[torch.Tensor] = None

    @property
    def stats(self) -> Dict[str, int]:
        """Decode rows so far, the blocks they had and the blocks attended
        (a layer in layers_skip attends all of them)."""
        c = [0, 0, 0] if self._counts is None else self._counts.tolist()
        return dict(zip(("decode_rows", "dense_blocks", "kept_blocks"), c))

    def release(self) -> None:
        """Drops what this object holds of the last engine: `caches` (whose
        k and v are views of the engine's cache tensors, so they keep that
        memory alive after `generate_batch` returns), the fields and the
        step's plan. `attach` calls it; call it when done inspecting."""
        self.caches.clear()
        self._fields.clear()
        self._owners.clear()
        self._plan, self._last_layer = None, -1

    def register(self) -> str:
        """Registers the function with transformers' AttentionInterface and
        returns its name, `paged|<name>`."""
        from transformers import AttentionInterface
        key = f"paged|{self.name}"

        # Opaque to torch.compile (the engine's decode_compile_config), as
        # transformers' own paged attention: the call keeps a per-step plan
        # on the host, which a traced graph must not specialize on.
        @torch.compiler.disable
        def attention(*args, **kwargs):
            return self(*args, **kwargs)
        AttentionInterface.register(key, attention)
        return key

    def attach(self, model, continuous_batching_config=None) -> str:
        """Checks that `model` (and the engine's config, if given) fit the
        flow, registers the function and makes it the model's attention;
        returns its name. Checking here matters: the engine catches what
        an attention function raises mid-generation and only logs the
        requests as failed."""
        cfg = model.config
        heads = int(cfg.num_attention_heads)
        kv = int(getattr(cfg, "num_key_value_heads", None) or heads)
        head_dim = int(getattr(cfg, "head_dim", None) or
                       cfg.hidden_size // heads)
        if head_dim != self.head_dim or heads != kv * self.group_size:
            raise ValueError(
                f"paged|{self.name}: the model has head_dim {head_dim} and "
                f"{heads} query heads on {kv} KV heads; the flow was compiled "
                f"for head_dim {self.head_dim}, group_size {self.group_size}")
        types = getattr(cfg, "layer_types", None) or []
        sliding = [i for i, t in enumerate(types) if t != "full_attention"]
        if sliding:
            raise NotImplementedError(
                f"paged|{self.name}: layers {sliding} are not full attention "
                f"({sorted(set(types[i] for i in sliding))}); flows run on "
                "full attention layers only")
        self._check_sharing(getattr(continuous_batching_config,
                                    "allow_block_sharing", None))
        bs = getattr(continuous_batching_config, "block_size", None)
        if bs is not None and bs != self.page_size:
            raise ValueError(
                f"paged|{self.name}: the engine's block_size is {bs}, the "
                f"flow's page_size {self.page_size}: set "
                "ContinuousBatchingConfig(block_size=page_size)")
        mode = getattr(continuous_batching_config, "use_cuda_graph", None)
        graphs = mode[1] if isinstance(mode, tuple) else mode  # decode's
        if graphs and (self.static_decode is False or
                       not self.decode_fast_path):
            raise ValueError(
                f"paged|{self.name}: CUDA graphs of decode steps need the "
                "decode fast path in its static form, which "
                "decode_fast_path=False or static_decode=False turn off: set "
                "ContinuousBatchingConfig(use_cuda_graph=False)")
        if graphs and isinstance(mode, bool):
            raise ValueError(
                f"paged|{self.name}: use_cuda_graph=True also captures "
                "prefill steps, which read the engine's lengths on the host: "
                "set ContinuousBatchingConfig(use_cuda_graph=(False, True)) "
                "(decode steps only)")
        self.release()
        key = self.register()
        if self.decode_fast_path:
            enable_decode_fast_path(key)
        if _copy_fields_on_fork():
            _ATTACHED.add(self)
        model.set_attn_implementation(key)
        return key

    def _check_sharing(self, allowed) -> None:
        if self.saved and allowed:
            raise ValueError(
                f"paged|{self.name}: the flow saves state per block "
                f"({', '.join(self.saved)}, written by its indexer), so a "
                "block must belong to one request: set "
                "ContinuousBatchingConfig(allow_block_sharing=False)")

    # -- the pool --------------------------------------------------------------
    def _check(self, module, cache, query) -> None:
        layer = module.layer_idx
        self._check_sharing(getattr(cache, "allow_block_sharing", False))
        if cache.sliding_windows.get(layer, 1) != 1:
            raise NotImplementedError(
                f"paged|{self.name}: layer {layer} is a sliding-window layer "
                f"(window {cache.sliding_windows[layer]}); flows run on full "
                "attention layers only")
        if cache.block_size != self.page_size:
            raise ValueError(
                f"paged|{self.name}: the engine's block_size is "
                f"{cache.block_size}, the flow's page_size {self.page_size}: "
                "set ContinuousBatchingConfig(block_size=page_size)")
        heads, D = query.shape[1], query.shape[-1]
        H = cache.num_key_value_heads
        if D != self.head_dim or heads != H * self.group_size:
            raise ValueError(
                f"paged|{self.name}: the model has head_dim {D} and "
                f"{heads} query heads on {H} KV heads; the flow was compiled "
                f"for head_dim {self.head_dim}, group_size {self.group_size}")

    def _cache(self, module, cache) -> Tuple[Dict[str, torch.Tensor], int]:
        """The flow's cache dict for this layer: k and v as views of
        transformers' tensors, the fields beside them."""
        layer = module.layer_idx
        _, li = cache.layer_index_to_group_indices[layer]
        bs, D = self.block_size, self.head_dim
        k = cache.key_cache[li].view(-1, bs, D)
        v = cache.value_cache[li].view(-1, bs, D)
        # A new engine cache (another generate_batch, another size) gets
        # new fields: they index the same blocks as its tensors.
        owner = (k.data_ptr(), k.shape[0], k.device)
        if self._owners.get(layer) != owner:
            shapes = self.flow.manifest.cache_shapes(k.shape[0])
            full = self.flow.allocate_cache(k.shape[0], device=k.device)
            self._fields[layer] = {n: full[n] for n in shapes
                                   if n not in ("k", "v")}
            self._owners[layer] = owner
            self._plan = None
        self.caches[layer] = {"k": k, "v": v, **self._fields[layer]}
        return self.caches[layer], cache.num_key_value_heads

    def _copy_fields(self, cache, source, forked) -> None:
        """The fields of engine blocks `source` into `forked`, in every
        layer whose fields belong to `cache` (the engine's block `p` holds
        the pool blocks [p * H * n, (p + 1) * H * n), n = page / block)."""
        if not source:
            return
        n = cache.num_key_value_heads * (self.page_size // self.block_size)
        sub = torch.arange(n, device=cache.device)
        src = (torch.tensor(source, device=cache.device)[:, None] * n +
               sub).reshape(-1)
        dst = (torch.tensor(forked, device=cache.device)[:, None] * n +
               sub).reshape(-1)
        for layer, fields in self._fields.items():
            _, li = cache.layer_index_to_group_indices[layer]
            k = cache.key_cache[li]
            if self._owners[layer][:2] != (k.data_ptr(), k.numel() //
                                           (self.block_size * self.head_dim)):
                continue
            for t in fields.values():
                t[dst] = t[src]

    def _rows(self, slots: torch.Tensor, H: int) -> torch.Tensor:
        """Pool rows (token slots of the flat [tokens, D] pool) of `slots`
        for every KV head: [len(slots), H]."""
        return slot_rows(slots, H, self.page_size)

    def _blocks(self, slots: torch.Tensor, H: int) -> torch.Tensor:
        """Pool block ids of the blocks holding `slots`, per KV head:
        [len(slots), H]."""
        return slot_blocks(slots, H, self.page_size, self.block_size)

    def _write_kv(self, pool, rows, key, value, pick=None) -> None:
        """K/V of the step's tokens `pick` (positions on the engine's token
        axis; None: all) into the pool rows `rows` (token-major, then KV
        head): per tensor one scatter, after a gather when `pick` is given
        (launches every layer of every decode step pays)."""
        D = self.head_dim
        for name, x in (("k", key), ("v", value)):
            flat = pool[name].view(-1, D)
            x = x[0].transpose(0, 1)                     # [tokens, H, D]
            if pick is not None:
                x = torch.index_select(x, 0, pick)
            flat.index_copy_(0, rows, x.reshape(-1, D).to(flat.dtype))

    # -- the call ----------------------------------------------------------------
    def __call__(self, module, query, key, value, attention_mask,
                 dropout: float = 0.0, scaling: Optional[float] = None,
                 **kw):
        cache = kw.get("cache")
        if cache is None:
            raise ValueError(f"paged|{self.name} runs under continuous "
                             "batching only (no paged cache was passed)")
        self._check(module, cache, query)
        g, _ = cache.layer_index_to_group_indices[module.layer_idx]
        ck = kw["cu_seq_lens_k"]
        if isinstance(ck, dict):   # per layer type in mixed models
            ck = ck["full_attention"]
        if kw.get("block_table") is not None:
            fast = self._static_decode if self._static(query) else \
                self._fast_decode
            return fast(module, query, key, value, cache,
                        kw["block_table"][g], ck, kw["cu_seq_lens_q"],
                        scaling)
        wi = kw["write_index"][g].to(torch.int64)
        ri = kw["read_index"][g].to(torch.int64)
        pool, H = self._cache(module, cache)
        D = self.head_dim
        self._write_kv(pool, self._rows(wi, H).reshape(-1), key, value)
        self.flow.cache_step(pool, loc=wi, num_kv_heads=H,
                             layer=module.layer_idx)

        cq, ck = kw["cu_seq_lens_q"].tolist(), ck.tolist()
        out = torch.zeros(query.shape[2], query.shape[1], D,
                          dtype=query.dtype, device=query.device)
        decode: List[int] = []
        for r in range(len(cq) - 1):
            q0, q1, k0, k1 = cq[r], cq[r + 1], ck[r], ck[r + 1]
            if q1 == q0:
                continue
            slots = ri[k0:k1] if ri.numel() else wi[q0:q1]
            if q1 - q0 == 1 and k1 - k0 > 1:
                decode.append(r)
            else:
                self._prefill(query, pool, slots, q0, q1, H, scaling, out)
        if decode:
            k0 = torch.tensor([ck[r] for r in decode], device=ri.device)
            self._decode(module, query, pool, [ck[r + 1] - ck[r] for r in decode],
                         [cq[r] for r in decode],
                         lambda req, t: ri[k0[req] + t], H, scaling, out)
        return out.unsqueeze(0), None

    def _count(self, step: torch.Tensor,
               kept: Optional[torch.Tensor] = None) -> None:
        """Adds a step's counts in place (decode rows and blocks, then the
        blocks kept: `step` holds two or three, `kept` the third when
        given): a captured graph replays the adds into the same buffer
        (reading `stats` synchronizes, a step does not)."""
        if self._counts is None or self._counts.device != step.device:
            self._counts = torch.zeros(3, dtype=torch.int64,
                                       device=step.device)
        self._counts[:step.numel()].add_(step)
        if kept is not None:
            self._counts[2:].add_(kept)

    def _static(self, query) -> bool:
        if self.static_decode is None:
            return query.is_cuda
        return self.static_decode

    def _spare_page(self, cache) -> int:
        """An engine page no request will own, taken once per engine cache
        from its free list: the static form's spare CSR row points there, so
        what that row saves (a flow's Save) and reads lands in a page of its
        own, never a request's. -1 when none can be taken (another
        transformers version, or a full cache): then the spare row uses
        block 0, which only a flow that saves state cannot accept."""
        page = getattr(cache, "_vortex_spare_page", None)
        if page is not None:
            return page
        bm = getattr(cache, "_block_manager", None)
        free = getattr(bm, "_uninit_block_ids", None)
        page = -1
        if free is not None and _version_ok("a page for the spare row") \
                and bm.has_enough_free_blocks(1):
            page = free.pop()    # the engine allocates from the left
        if page < 0 and self.saved:
            raise RuntimeError(
                f"paged|{self.name}: the static decode form needs one free "
                "engine page for its spare row, as the flow saves state per "
                f"block ({', '.join(self.saved)}), and the engine gave none: "
                "use static_decode=False")
        cache._vortex_spare_page = page
        return page

    def _static_plan(self, layer, table, ck, cq, H, tokens, dtype,
                     spare_page):
        """The step's static decode plan, the same for every layer: built
        by the first layer's call and reused by the later layers of the same
        forward (a captured graph replays its kernels once a step). A call
        reuses it only for a higher layer than the last call's (a forward
        visits its layers in order) and the same engine tensors, unchanged
        since (their version counters, which the engine bumps when it fills
        them for a step)."""
        key = tuple((t.data_ptr(), t._version) for t in (table, ck, cq)) + \
            (H, tokens, spare_page)
        last, self._last_layer = self._last_layer, layer
        if self._plan is not None and self._plan[0] == key and layer > last:
            return self._plan[1]
        ps, bs = self.page_size, self.block_size
        N, dev, sub = table.shape[0], table.device, ps // bs
        W = table.shape[1] * sub
        lens = (ck[1:N + 1] - ck[:N]).to(torch.int64)      # 0: padding
        valid = lens > 0
        req = torch.arange(N, device=dev)
        last = (lens - 1).clamp(min=0)
        wi = table[req, last // ps].to(torch.int64) * ps + last % ps
        wi = torch.where(valid, wi, -1)        # the cache step skips -1
        R, C = N * H, N * H * W
        n = ((lens + bs - 1) // bs).repeat_interleave(H)    # [R]
        indptr = torch.zeros(R + 2, dtype=torch.int32, device=dev)
        indptr[1:R + 1] = torch.cumsum(n, 0)
        indptr[R + 1:].fill_(C)      # (a kernel: no host copy in a graph)
        j = torch.arange(W, device=dev)
        used = j[None] < n[:, None]                         # [R, W]
        at = indptr[:R, None].to(torch.int64) + j[None]
        spare = indptr[R].to(torch.int64) + \
            torch.cumsum((~used).reshape(-1), 0) - 1
        at = torch.where(used.reshape(-1), at.reshape(-1), spare)
        # Block j of request r starts at slot table[r, j*bs // ps] * ps +
        # j*bs % ps (past a request's end the page is -1: masked by used).
        start = table.to(torch.int64)[:, (j * bs) // ps] * ps + (j * bs) % ps
        ids = self._blocks(start.reshape(-1), H).view(N, W, H).transpose(
            1, 2).reshape(R, W)
        # The spare row's entries: the first block of the spare page (a
        # host int: no launch in the step).
        spare_id = int(self._blocks(torch.tensor([max(spare_page, 0) * ps]),
                                    H)[0, 0])
        indices = torch.empty(C, dtype=torch.int32, device=dev)
        indices[at] = torch.where(used, ids, spare_id).reshape(-1).to(
            torch.int32)
        last_len = torch.full((R + 1,), bs, dtype=torch.int32, device=dev)
        last_len[:R] = torch.where(n > 0, lens.repeat_interleave(H) -
                                   (n - 1) * bs, bs).to(torch.int32)
        qpos = cq[:N].to(torch.int64).clamp(max=tokens - 1)
        G, D = self.group_size, self.head_dim
        if spare_page >= 0:
            # Token t is request t's new token; the others (padding
            # requests, padding tokens) write theirs into the spare page, so
            # the write takes the step's K/V as they are (no gather).
            t = torch.arange(tokens, device=dev)
            mine = (t < N) & valid[t.clamp(max=N - 1)]
            slots = torch.where(mine, wi[t.clamp(max=N - 1)],
                                spare_page * ps)
            rows, src = self._rows(slots, H).reshape(-1), None
        else:    # padding requests write request 0's K/V again
            src = torch.where(valid, req, 0)
            rows = self._rows(wi[src], H).reshape(-1)
        plan = dict(
            src=src, indptr=indptr, indices=indices, last_len=last_len, R=R,
            rows=rows,
            block_ids=self.flow.block_ids_from_loc(wi, H),
            qpos=qpos,
            # Padding rows' outputs go to a spare token row, dropped.
            dst=torch.where(valid, qpos, tokens),
            # q of every row (the spare CSR row's stays 0), and the
            # selection's CSR: written in place by every layer.
            q=torch.zeros(R + 1, G, D, dtype=dtype, device=dev),
            sparse_indptr=torch.zeros_like(indptr),
            sparse_indices=torch.zeros_like(indices),
            counts=torch.stack([valid.sum() * H, indptr[R].to(torch.int64)]))
        self._plan = (key, plan)
        return plan

    def _static_decode(self, module, query, key, value, cache, table, ck,
                       cq, scaling):
        """The fast path with static shapes and no host read, which a CUDA
        graph captures and replays. The decode CSR has room for every
        request at the table's full width, C = N * H * W blocks (N requests
        with padding, W vortex blocks a row); the real rows come first, then
        one extra row, with q = 0, holds the C - T entries they leave: the
        CSR then ends at its indices' length, as the score kernels require.
        The extra row's output is dropped; its entries point at a page no
        request owns (`_spare_page`), so what it saves is never read by a
        real row. Each torch op here is a launch in every layer of every
        step: gathers and scatters write their destinations directly."""
        pool, H = self._cache(module, cache)
        N = table.shape[0]
        p = self._static_plan(module.layer_idx, table, ck, cq, H,
                              query.shape[2], pool["k"].dtype,
                              self._spare_page(cache))
        R, q = p["R"], p["q"]
        self._write_kv(pool, p["rows"], key, value, p["src"])
        self.flow.cache_step(pool, p["block_ids"], layer=module.layer_idx)
        rows_q = q[:R].view(N, -1, self.head_dim)
        if query.dtype == q.dtype:
            torch.index_select(query[0].transpose(0, 1), 0, p["qpos"],
                               out=rows_q)
        else:
            rows_q.copy_(query[0].transpose(0, 1)[p["qpos"]])
        if module.layer_idx in self.layers_skip:
            o, _ = self.flow.attend(q, pool, p["indptr"], p["indices"],
                                    p["last_len"], sm_scale=scaling)
            kept = p["indptr"]
        else:
            o, _, kept, _ = self.flow.decode(
                q, pool, p["indptr"], p["indices"], p["last_len"],
                sparse_kv_indptr=p["sparse_indptr"],
                sparse_kv_indices=p["sparse_indices"], sm_scale=scaling,
                layer=module.layer_idx)
        self._count(p["counts"], kept[R:R + 1])
        out = torch.zeros(query.shape[2] + 1, query.shape[1], self.head_dim,
                          dtype=query.dtype, device=query.device)
        out.index_copy_(0, p["dst"],
                        o[:R].view(N, -1, self.head_dim).to(out.dtype))
        return out[:-1].unsqueeze(0), None

    def _fast_decode(self, module, query, key, value, cache, table, ck, cq,
                     scaling):
        """transformers' decode fast path (`enable_decode_fast_path`): every
        request of the step has one new token, and `table` [requests,
        max blocks] holds each request's engine pages (-1 past its end; the
        rows past the batch, padding, have length 0) instead of per-token
        slot lists."""
        pool, H = self._cache(module, cache)
        ps, D = self.page_size, self.head_dim
        ck = ck.tolist()
        reqs = [r for r in range(len(ck) - 1) if ck[r + 1] > ck[r]]
        lens = [ck[r + 1] - ck[r] for r in reqs]
        out = torch.zeros(query.shape[2], query.shape[1], D,
                          dtype=query.dtype, device=query.device)
        if not reqs:
            return out.unsqueeze(0), None
        rt = torch.tensor(reqs, device=table.device)

        def slot_of(req, t):   # slot of token t of the req-th request
            return table[rt[req], t // ps].to(torch.int64) * ps + t % ps
        last = torch.tensor(lens, device=table.device) - 1
        wi = slot_of(torch.arange(len(reqs), device=table.device), last)
        self._write_kv(pool, self._rows(wi, H).reshape(-1), key, value, rt)
        self.flow.cache_step(pool, loc=wi, num_kv_heads=H,
                             layer=module.layer_idx)
        self._decode(module, query, pool, lens, reqs, slot_of, H, scaling,
                     out)
        return out.unsqueeze(0), None

    def _prefill(self, query, pool, slots, q0, q1, H, scaling, out) -> None:
        """Dense causal attention of the chunk's queries over the request's
        keys (the chunk's own are last)."""
        D = self.head_dim
        Lk, Lq = slots.numel(), q1 - q0
        rows = self._rows(slots, H)                          # [Lk, H]
        kk = pool["k"].view(-1, D)[rows].permute(1, 0, 2)     # [H, Lk, D]
        vv = pool["v"].view(-1, D)[rows].permute(1, 0, 2)
        mask = torch.ones(Lq, Lk, dtype=torch.bool,
                          device=query.device).tril(Lk - Lq)
        # 4-D operands: torch's CPU SDPA takes its flash path only then
        # (3x the 3-D math path at 512 x 4K).
        o = torch.nn.functional.scaled_dot_product_attention(
            query[:, :, q0:q1], kk[None].to(query.dtype),
            vv[None].to(query.dtype), attn_mask=mask[None, None],
            scale=scaling, enable_gqa=True)                # [1, HQ, Lq, D]
        out[q0:q1] = o[0].transpose(0, 1)

    def _decode(self, module, query, pool, lens, qpos, slot_of, H, scaling,
                out) -> None:
        """One decode op over the (request, KV head) rows of the requests of
        lengths `lens` whose query tokens are at `qpos`; `slot_of(req, t)`
        gives the slots of tokens t of the req-th of them (device tensors).
        The dense CSR is built with device ops (no per-request loop, no
        synchronization)."""
        bs, D, G = self.block_size, self.head_dim, self.group_size
        dev = query.device
        blocks = [(L + bs - 1) // bs for L in lens]
        R, total = len(lens), sum(blocks)
        n = torch.tensor(blocks, device=dev)
        req = torch.repeat_interleave(torch.arange(R, device=dev), n,
                                      output_size=total)
        j = torch.arange(total, device=dev) - (torch.cumsum(n, 0) - n)[req]
        ids = self._blocks(slot_of(req, j * bs), H)            # [total, H]
        indptr = torch.zeros(R * H + 1, dtype=torch.int32, device=dev)
        indptr[1:] = torch.cumsum(n.repeat_interleave(H), 0)
        at = indptr[:-1].view(R, H).to(torch.int64)[req] + j[:, None]
        indices = torch.empty(total * H, dtype=torch.int32, device=dev)
        indices[at.reshape(-1)] = ids.reshape(-1).to(torch.int32)
        last_len = torch.tensor([L - (b - 1) * bs for L, b in zip(lens, blocks)],
                                dtype=torch.int32,
                                device=dev).repeat_interleave(H)
        pos = torch.tensor(qpos, device=dev)
        q = query[0][:, pos].transpose(0, 1).reshape(R * H, G, D)
        q = q.to(pool["k"].dtype).contiguous()
        if module.layer_idx in self.layers_skip:
            o, _ = self.flow.attend(q, pool, indptr, indices, last_len,
                                    sm_scale=scaling)
            kept = indptr
        else:
            o, _, kept, _ = self.flow.decode(q, pool, indptr, indices,
                                             last_len, sm_scale=scaling,
                                             layer=module.layer_idx)
        step = torch.stack([torch.tensor(R * H, device=dev),
                            indptr[-1].to(torch.int64),
                            kept[-1].to(torch.int64)])
        self._count(step)
        out[pos] = o.view(R, H * G, D).to(out.dtype)
