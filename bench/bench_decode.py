#!/usr/bin/env python3
"""Decode-step benchmark of issue 35: attention over a flow's selection
(`attend`) and the whole sparse decode step (`decode` = indexer + attend),
against their bytes floors and against peers, in one process on one GPU.

    python3 bench/bench_decode.py --artifacts DIR [--quick | --full]
        [--out OUTDIR] [--flows ...] [--batch 1 8 64] [--tokens 8192 ...]
        [--groups 8 5] [--mem-gb 60] [--budget-s 330] [--flex-dynamic]
    python3 bench/bench_decode.py --selftest-cpu [--artifacts CPU_DIR]

--quick (the default): G 8, L 32K, B 1, 8, 64, both flows (3 data sets).
--full: G 8 and 5, L 32K, 8K, 128K, B 1, 8, 64 (18 data sets), in that
order; once --budget-s seconds have passed the combos left are skipped and
listed (the run must stay under ~6 minutes; flex_attention compiles once per
shape, --flex-dynamic compiles it with dynamic shapes instead).

DIR holds the sm_90 manifests + cubins of scripts/build-decode-artifacts.sh
(`<flow>_k64_g8`, `<flow>_k64_g5` of gqa_quest_sparse_attention and
block_sparse_attention, with their attend kernels). For every group size G,
row length L (tokens, blocks of 16), batch B (requests; rows = B x --heads
KV heads) and flow, on the same data:

Attention alone, over the flow's selection (our indexer's sparse CSR, made
once per input set before timing):
  ours        `attend` over the sparse CSR
  gather+SDPA the selected blocks gathered (k[ids], v[ids]) then
              F.scaled_dot_product_attention(enable_gqa=True)
  flex        torch.compile(flex_attention) with a BlockMask built from the
              selection (BlockMask.from_kv_blocks, the selected blocks as
              full blocks, no mask_mod); the build is timed with it
  floor       selected blocks' K + V bytes / copy bandwidth
The whole decode step:
  ours        `decode` (indexer + attend, one op when the API has it)
  idx+gather  our indexer, then gather + SDPA over its selection
  idx+flex    our indexer, then BlockMask build + compiled flex_attention
  dense SDPA  F.scaled_dot_product_attention(enable_gqa=True) over all L
              tokens of a contiguous dense K/V [B, H, L, D] (not paged, not
              gathered per step: what a dense baseline reads)
  ours dense  `attend` over the dense CSR (all blocks of every row)
  floor       summaries the indexer reads + selected K + V, / copy bandwidth
              (the issue's definition; the dense floor is all K + V)
Every contender also as a ratio to dense SDPA.

Method (bench/bench_indexer.py's machinery, imported): each contender is
captured in a CUDA graph of K consecutive steps cycling through R rotating
input sets whose combined footprint is >= 2 x L2 (no step finds its inputs
in L2), replayed --reps times, median / K (CUDA events). Beside it,
`triton.testing.do_bench` on the replay of a graph of ONE step (set 0), which
flushes L2 by a 256 MB write before each call (the issue's way of measuring
the indexer at B = 1). Copy bandwidth is measured in-process (2 GiB
device-to-device copy, read + write). Host time is apart: the GPU columns
are graph replays; "host us" is the Python + launch cost of one eager
`decode` call (bench_torch_ops.host_us), not in any GPU column.

Memory: the dense K/V of set i IS the paged pool of set i (row r's n blocks
are pool blocks [r n, (r + 1) n) of a per-set pool, permuted inside the row
with --layout random), so K/V are allocated once: a combo needs about
sets x rows x n x 16 x D x 2 x 2 bytes + summaries. A combo over --mem-gb
is skipped (listed in the table). 128K x B 64 x 8 heads is 34 GB of K + V +
2 GB of summaries: it fits. Rows hold exactly L tokens (kv_last_len = 16).

Our attend/decode go through ONE adapter (class Ours): `flow.attend` /
`flow.decode` (python/vortex/runtime/ops.py of branch attend) when the loaded
vortex has them and they run on the device; otherwise the manifest's attend
kernels launched directly through bench/attend_gpu_check.py's ctypes driver
(splits by its pick_splits rule), after `flow.indexer` for decode. The path
taken is printed and written with the results.

--selftest-cpu runs tiny shapes through the same contender code on the CPU
(CPU artifacts from --artifacts, or compiled now with `python -m vortex
compile --target cpu`; needs vortex-compile/vortex-opt with the attend step
for our contenders) and
checks every contender against a float64 softmax over exactly the selected
(or all) tokens; exits non-zero on a mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

import vortex
from vortex.runtime.manifest import DTYPES, Manifest, budget

import bench_indexer as bi  # bench/bench_indexer.py

FLOWS = ("gqa_quest_sparse_attention", "block_sparse_attention")
DEVICE = "cuda"   # the benchmark's device (a test may set "cpu")
QUICK = dict(groups=[8], tokens=[32768], batch=[1, 8, 64])
FULL = dict(groups=[8, 5], tokens=[32768, 8192, 131072], batch=[1, 8, 64])


def _lk(L: int) -> str:
    return f"{L // 1024}K" if L % 1024 == 0 else str(L)


def _tdt(name: str) -> torch.dtype:
    return getattr(torch, DTYPES[name][0])


# ---------------------------------------------------------------------------
# The adapter: our attend and decode
# ---------------------------------------------------------------------------

class _AttendKernels:
    """The manifest's attend kernels (split + combine) launched directly
    through bench/attend_gpu_check.py's ctypes driver, for a vortex whose
    runtime cannot launch the attend step yet."""

    def __init__(self, path: str):
        import attend_gpu_check as agc  # bench/attend_gpu_check.py
        with open(path) as f:
            m = json.load(f)
        if "attend" not in m["steps"]:
            raise RuntimeError(f"{path}: the manifest has no attend step "
                               "(rebuild with scripts/build-decode-artifacts"
                               ".sh)")
        self.drv = agc.Driver()
        self._keep: List[Any] = []
        self.kernels = m["steps"]["attend"]["kernels"]
        self.funcs = [self._function(m, os.path.dirname(path), k["kernel"])
                      for k in self.kernels]
        self.scratch: Dict[str, torch.Tensor] = {}
        slots = []
        for k in self.kernels:
            for p in k["params"]:
                rec = m["tensors"].get(p["name"])
                if p["kind"] == "buffer" and rec and rec["role"] == "scratch" \
                        and p["name"] not in self.scratch:
                    numel = math.prod(int(x) for x in rec["shape"])
                    self.scratch[p["name"]] = torch.empty(
                        numel, dtype=torch.float32, device="cuda")
                    slots.append(int(rec["shape"][0]))
        # Row-splits the partials hold ([slots, T x G, D] and [slots, T x G]).
        self.slots = min(slots) if slots else 0
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.pick = agc.pick_splits

    def _function(self, m, base: str, name: str):
        """The kernel from its own cubin (artifacts.cubins, a kernel-cache
        build), else the module's cubin, else its PTX (driver JIT)."""
        import ctypes
        art = m.get("artifacts", {})
        image = art.get("cubins", {}).get(name) or art.get("cubin")
        if image:
            with open(os.path.join(base, image), "rb") as f:
                data = f.read()
        elif art.get("ptx"):
            with open(os.path.join(base, art["ptx"]), "rb") as f:
                data = f.read() + b"\0"   # PTX: a NUL-terminated string
        else:
            raise RuntimeError(f"no cubin or PTX of {name} in the manifest")
        buf = ctypes.create_string_buffer(data, len(data))
        mod = ctypes.c_void_p()
        self.drv.check(self.drv.L.cuModuleLoadData(
            ctypes.byref(mod), ctypes.cast(buf, ctypes.c_void_p)),
            f"cuModuleLoadData({image or art.get('ptx')})")
        self._keep.append(buf)
        return self.drv.func(mod, name)

    def splits(self, rows: int, total: int) -> int:
        return self.pick(rows, total, self.sms, self.slots)

    def run(self, t: Dict[str, torch.Tensor], splits: int) -> None:
        import ctypes
        rows = t["kv_last_len"].numel()
        if rows == 0:
            return
        for f, k in zip(self.funcs, self.kernels):
            if k["grid"]["kind"] == "rows" and splits == 1:
                continue  # the combine: nothing to merge at one split
            vals = []
            for p in k["params"]:
                if p["kind"] == "buffer":
                    x = t.get(p["name"])
                    if x is None:
                        x = self.scratch[p["name"]]
                    ptr = x.data_ptr()
                    vals += [ctypes.c_void_p(ptr), ctypes.c_void_p(ptr),
                             ctypes.c_int64(0), ctypes.c_int64(x.numel()),
                             ctypes.c_int64(1)]
                elif p["name"] == "kv_splits":
                    vals.append(ctypes.c_int32(splits))
                elif "value" in p:
                    vals.append(ctypes.c_int32(int(p["value"])))
                else:
                    vals.append(ctypes.c_int32(rows))
            grid = (rows, splits if k["grid"]["kind"] == "row_splits" else 1,
                    int(k["grid"].get("z", 1)))
            self.drv.launch(f, grid, int(k["block"][0]), vals)


def _load_flow(path: str):
    """vortex.load(path); if the loaded vortex refuses the manifest's attend
    step (a runtime older or newer than the kernels' ABI), the flow without
    it (a temporary copy of the manifest beside links to its artifacts), so
    that the indexer still runs and attend goes through _AttendKernels."""
    try:
        return vortex.load(path), ""
    except Exception as err:  # noqa: BLE001
        with open(path) as f:
            m = json.load(f)
        if "attend" not in m.get("steps", {}):
            raise
        note = f"vortex.load refused the attend step: {err!r}"[:300]
        attend = {k["kernel"] for k in m["steps"].pop("attend")["kernels"]}
        base = os.path.dirname(os.path.abspath(path))
        tmpdir = tempfile.mkdtemp(prefix="bench_decode_")
        art = m.get("artifacts", {})
        if isinstance(art.get("cubins"), dict):
            art["cubins"] = {k: v for k, v in art["cubins"].items()
                             if k not in attend}
        files = [v for v in art.values() if isinstance(v, str)] + \
            list(art.get("cubins", {}).values())
        for name in files:
            os.symlink(os.path.join(base, name), os.path.join(tmpdir, name))
        tmp = os.path.join(tmpdir, os.path.basename(path))
        with open(tmp, "w") as f:
            json.dump(m, f)
        print(f"  {os.path.basename(path)}: {note}; loaded without it")
        return vortex.load(tmp), note


class Ours:
    """The one place our attend / decode are called.

    api: `flow.attend(q, cache, kv_indptr, kv_indices, kv_last_len, o=, lse=,
    sm_scale=)` and `flow.decode(q, cache, dense_kv_indptr,
    dense_kv_indices, kv_last_len, sparse_kv_indptr, sparse_kv_indices, o=,
    lse=, sm_scale=)` (docs/contract.md, branch attend's ops.py);
    kernels: flow.indexer + _AttendKernels."""

    def __init__(self, path: str):
        self.path = path
        self.flow, self.load_note = _load_flow(path)
        self.device = self.flow.device
        self.has_api = (callable(getattr(self.flow, "attend", None))
                        and callable(getattr(self.flow, "decode", None))
                        and getattr(self.flow, "_attend", True) is not None)
        self.mode: Optional[str] = None   # "api" | "kernels" | None
        self.why = ""
        self.kern: Optional[_AttendKernels] = None

    def probe(self, t: Dict[str, Any]) -> str:
        """Pick the path on real inputs `t` (one set): the API if a call of
        attend and decode succeeds, else the direct kernels (GPU)."""
        if self.mode is not None:
            return self.mode
        if self.has_api:
            try:
                self._api_attend(t, t["dense_ip"], t["dense_ids"], None)
                self._api_decode(t)
                if self.device.type == "cuda":
                    torch.cuda.synchronize()
                self.mode = "api"
                return self.mode
            except Exception as err:  # noqa: BLE001
                self.why = f"flow.attend/decode failed: {err!r}"[:300]
        else:
            self.why = self.load_note or \
                "the loaded vortex has no Flow.attend/decode"
        if self.device.type == "cuda":
            self.kern = _AttendKernels(self.path)
            self.mode = "kernels"
        else:
            self.mode = "none"
        return self.mode

    # -- the API ---------------------------------------------------------------
    def _api_attend(self, t, ip, ids, splits_hint):
        self.flow.attend(t["q"], t["cache"], ip, ids, t["last"], o=t["o"],
                         lse=t["lse"], sm_scale=t["scale"])

    def _api_decode(self, t):
        self.flow.decode(t["q"], t["cache"], t["dense_ip"], t["dense_ids"],
                         t["last"], t["sp"], t["si"], o=t["o"], lse=t["lse"],
                         sm_scale=t["scale"])

    # -- the calls the benchmark makes ---------------------------------------------
    def indexer(self, t) -> None:
        self.flow.indexer(t["q"], t["cache"], t["dense_ip"], t["dense_ids"],
                          t["sp"], t["si"])

    def attend(self, t, ip, ids, entries: int) -> None:
        """Attention of set t over the CSR (ip, ids) of `entries` entries."""
        if self.mode == "api":
            self._api_attend(t, ip, ids, None)
        elif self.mode == "kernels":
            rows = t["last"].numel()
            self.kern.run(dict(q=t["q"], k=t["cache"]["k"], v=t["cache"]["v"],
                               kv_indptr=ip, kv_indices=ids,
                               kv_last_len=t["last"], sm_scale=t["scale"],
                               o=t["o"], lse=t["lse"]),
                          self.kern.splits(rows, entries))
        else:
            raise RuntimeError(f"our attend is unavailable: {self.why}")

    def decode(self, t, kept_total: int) -> None:
        if self.mode == "api":
            self._api_decode(t)
        else:
            self.indexer(t)
            self.attend(t, t["sp"], t["si"], kept_total)


# ---------------------------------------------------------------------------
# Peers (torch)
# ---------------------------------------------------------------------------

def sdpa_dense(t, B: int, H: int, G: int) -> torch.Tensor:
    """Dense SDPA decode over the set's contiguous K/V [B, H, L, D]."""
    D = t["q"].shape[-1]
    q = t["q"].view(B, H * G, 1, D)
    return F.scaled_dot_product_attention(q, t["dense_k"], t["dense_v"],
                                          scale=t["scale_f"], enable_gqa=True)


def sdpa_gather(t, B: int, H: int, G: int, kept: int,
                si: torch.Tensor) -> torch.Tensor:
    """Gather the selected blocks (the sparse CSR's first rows x kept ids:
    every row keeps `kept`), then SDPA over them."""
    R, D = B * H, t["q"].shape[-1]
    ids = si[:R * kept].view(R, kept).long()
    k = t["cache"]["k"][ids].view(B, H, -1, D)
    v = t["cache"]["v"][ids].view(B, H, -1, D)
    q = t["q"].view(B, H * G, 1, D)
    return F.scaled_dot_product_attention(q, k, v, scale=t["scale_f"],
                                          enable_gqa=True)


_FLEX: Dict[str, Any] = {}
FLEX_DYNAMIC: Optional[bool] = False   # torch.compile's dynamic= for flex


def flex_fn(compiled: bool = True):
    key = "compiled" if compiled else "eager"
    if key not in _FLEX:
        from torch.nn.attention.flex_attention import flex_attention
        _FLEX[key] = (torch.compile(flex_attention, dynamic=FLEX_DYNAMIC)
                      if compiled else flex_attention)
    return _FLEX[key]


FLEX_FORMS = ("positions", "gqa")


def block_mask(t, B: int, H: int, G: int, kept: int, n: int, bs: int,
               si: torch.Tensor, compiled: bool = True,
               form: str = "positions"):
    """A BlockMask from the selection: the query heads of KV head h see the
    physical blocks (positions in its row) row b*H+h selected, as full
    blocks, so the fused kernel evaluates no mask_mod. Form "positions":
    H mask heads, the G query heads of a KV head being G query positions
    (see flex_attend); "gqa": H*G mask heads. Eager flex_attention (the
    unfused CPU path) applies only the mask_mod, densely: there the mask
    gets one that reads a [B, H, n] table of the selected blocks."""
    from torch.nn.attention.flex_attention import BlockMask
    R = B * H
    sel = si[:R * kept].view(B, H, 1, kept) - t["row_base"].view(B, H, 1, 1)
    # kv_indices spans the row's n blocks (the mask's KV extent); only the
    # first `kept` entries of each row count.
    idx = torch.zeros((B, H, 1, n), dtype=torch.int32, device=sel.device)
    idx[..., :kept] = sel
    per = G if form == "gqa" else 1
    if per > 1:
        idx = idx.repeat_interleave(per, dim=1)
    num = torch.full((B, H * per, 1), kept, dtype=torch.int32,
                     device=sel.device)
    q_len = 1 if form == "gqa" else G
    kw = dict(BLOCK_SIZE=(128, bs), seq_lengths=(q_len, n * bs))
    if not compiled:
        table = torch.zeros((B, H, n), dtype=torch.bool, device=sel.device)
        table.scatter_(2, (si[:R * kept].view(B, H, kept)
                           - t["row_base"].view(B, H, 1)).long(), True)
        kw["mask_mod"] = lambda b, h, q_idx, kv_idx: \
            table[b, h // per, kv_idx // bs]
    try:
        return BlockMask.from_kv_blocks(torch.zeros_like(num), idx, num, idx,
                                        compute_q_blocks=False, **kw)
    except TypeError:   # an older torch without compute_q_blocks
        return BlockMask.from_kv_blocks(torch.zeros_like(num), idx, num, idx,
                                        **kw)


def flex_attend(t, B, H, G, kept, n, bs, si, compiled=True,
                form: str = "positions") -> torch.Tensor:
    """flex_attention over the selection, in one of two forms (the
    benchmark keeps the first that compiles at a shape):
    - "positions": the G query heads of a KV head go in as G query
      positions of that head, which keeps flex on its decode kernel (with
      enable_gqa and a per-query-head mask, torch 2.11 takes the prefill
      kernel);
    - "gqa": enable_gqa over H*G query heads with the prefill kernel's
      BLOCK_N set to the KV block (its default 64-128 must divide it).
    Returns [B, H*G, 1, D]."""
    D = t["q"].shape[-1]
    bm = block_mask(t, B, H, G, kept, n, bs, si, compiled, form)
    fn = flex_fn(compiled)
    if form == "gqa":
        q = t["q"].view(B, H * G, 1, D)
        opts = {"BLOCK_N": bs} if compiled else None
        return fn(q, t["dense_k"], t["dense_v"], block_mask=bm,
                  scale=t["scale_f"], enable_gqa=True, kernel_options=opts)
    q = t["q"].view(B, H, G, D)
    o = fn(q, t["dense_k"], t["dense_v"], block_mask=bm, scale=t["scale_f"])
    return o.reshape(B, H * G, 1, D)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

class Shape:
    def __init__(self, B, H, G, n, bs, D, kept, n_sets):
        self.B, self.H, self.G, self.n, self.bs, self.D = B, H, G, n, bs, D
        self.R = B * H
        self.T = self.R * n
        self.kept, self.n_sets = kept, n_sets


def make_sets(sh: Shape, kv_dtype, q_dtype, fields: Dict[str, Tuple],
              layout: str, device, seed: int = 0) -> List[Dict[str, Any]]:
    """n_sets input sets, each its own pool of T = rows x n blocks (so the
    set's k viewed [B, H, n bs, D] is a contiguous dense K); row r's blocks
    are pool blocks [r n, (r + 1) n), in a random order inside the row with
    layout "random"."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    R, n, T, bs, D = sh.R, sh.n, sh.T, sh.bs, sh.D
    sets = []
    base = (torch.arange(R, device=device, dtype=torch.int32) * n)
    for i in range(sh.n_sets):
        def rnd(shape, dt):
            if dt in (torch.float8_e4m3fn, torch.float8_e5m2):
                return torch.randn(shape, generator=g, device=device).to(dt)
            return torch.randn(shape, generator=g, device=device, dtype=dt)
        k = rnd((T, bs, D), kv_dtype)
        v = rnd((T, bs, D), kv_dtype)
        cache = dict(k=k, v=v)
        for name, (shape, dt) in fields.items():
            cache[name] = rnd(shape, _tdt(dt))
        if layout == "random":
            perm = torch.argsort(torch.rand((R, n), generator=g,
                                            device=device), dim=1)
            ids = (perm.to(torch.int32) + base[:, None]).reshape(-1)
        else:
            ids = torch.arange(T, device=device, dtype=torch.int32)
        t = dict(
            cache=cache,
            dense_k=k.view(sh.B, sh.H, n * bs, D),
            dense_v=v.view(sh.B, sh.H, n * bs, D),
            q=rnd((R, sh.G, D), q_dtype),
            dense_ip=(torch.arange(R + 1, device=device) * n).to(torch.int32),
            dense_ids=ids.contiguous(),
            row_base=base,
            last=torch.full((R,), bs, dtype=torch.int32, device=device),
            sp=torch.zeros(R + 1, dtype=torch.int32, device=device),
            si=torch.zeros(T, dtype=torch.int32, device=device),
            o=torch.zeros((R, sh.G, D), dtype=q_dtype, device=device),
            lse=torch.zeros((R, sh.G), dtype=torch.float32, device=device),
            scale=torch.full((1,), D ** -0.5, dtype=torch.float32,
                             device=device),
            scale_f=D ** -0.5,
        )
        sets.append(t)
    return sets


def reference(t, rows: List[int], ids_of_row: Callable[[int], torch.Tensor],
              G: int) -> torch.Tensor:
    """float64 softmax attention of the given rows over the given pool
    blocks (all tokens valid: rows hold whole blocks): [len(rows), G, D]."""
    k, v = t["cache"]["k"], t["cache"]["v"]
    D = k.shape[-1]
    out = []
    for r in rows:
        ids = ids_of_row(r).long()
        kk = k[ids].reshape(-1, D).double()
        vv = v[ids].reshape(-1, D).double()
        s = (t["q"][r].double() @ kk.T) * t["scale_f"]
        out.append(torch.softmax(s, -1) @ vv)
    return torch.stack(out)


def as_rows(o: torch.Tensor, R: int, G: int) -> torch.Tensor:
    """[B, H*G, 1, D] (SDPA/flex layout) -> [R, G, D]."""
    return o.reshape(R, G, o.shape[-1])


# ---------------------------------------------------------------------------
# Timing (bench_indexer's graphs of K steps over rotating sets; do_bench)
# ---------------------------------------------------------------------------

def time_graph(step: Callable[[int], None], K: int, n_sets: int, reps: int,
               warmup: int) -> Optional[float]:
    g = bi.graph_of(step, K, n_sets)
    if g is None:
        return None
    us = bi.time_cuda(g.replay, reps, warmup) * 1e3 / K
    del g
    return us


def time_do_bench(step: Callable[[int], None], rep_ms: int
                  ) -> Optional[float]:
    """triton.testing.do_bench on the replay of a graph of one step (set 0):
    do_bench writes its 256 MB cache buffer (L2 flush) before each call."""
    try:
        import triton.testing
    except ImportError:
        return None
    g = bi.graph_of(step, 1, 1)
    if g is None:
        return None
    try:
        ms = triton.testing.do_bench(g.replay, warmup=max(5, rep_ms // 4),
                                     rep=rep_ms, return_mode="median")
    except TypeError:
        ms = triton.testing.do_bench(g.replay, warmup=max(5, rep_ms // 4),
                                     rep=rep_ms, quantiles=[0.5])
        ms = ms[0] if isinstance(ms, (list, tuple)) else ms
    del g
    return ms * 1e3


# ---------------------------------------------------------------------------
# One combo
# ---------------------------------------------------------------------------

def field_bytes(m: Manifest) -> int:
    """Bytes of the summaries of one block (the fields the indexer reads)."""
    total = 0
    for name, r, c in m.fields:
        total += r * c * m.tensors[name].itemsize
    return total


def run_combo(args, flows: List[Tuple[Manifest, "Ours"]], G: int, B: int,
              L: int, bw: float, l2: int, results: List[Dict[str, Any]],
              skipped: List[str]) -> None:
    m0 = flows[0][0]
    bs, D, H = int(m0.config["block_size"]), int(m0.config["head_dim"]), \
        args.heads
    n = L // bs
    R = B * H
    kv_dt = _tdt(m0.tensors["k"].dtype)
    q_dt = _tdt(m0.tensors["q"].dtype)
    kv_item = torch.empty(0, dtype=kv_dt).element_size()
    kept = min(n, budget(m0.config, n))
    blk_kv = 2 * bs * D * kv_item                    # K + V of one block
    fbytes = max(field_bytes(m) for m, _ in flows)
    fields: Dict[str, Tuple] = {}
    for m, _ in flows:
        for name, (shape, dt) in m.cache_shapes(R * n).items():
            if name not in ("k", "v"):
                fields[name] = (shape, dt)
    all_fb = sum(math.prod(s[1:]) * torch.empty(0, dtype=_tdt(d))
                 .element_size() for s, d in fields.values())
    sel_bytes = R * kept * blk_kv
    scored = R * (n - int(m0.config["reserved_bos"])
                  - int(m0.config["reserved_eos"]))
    dec_bytes = scored * fbytes + sel_bytes
    dense_bytes = R * n * blk_kv
    per_set = R * n * (blk_kv + all_fb) + R * n * 8 + R * G * D * 4
    n_sets = max(1, min(64, math.ceil(2 * l2 / max(dec_bytes, 1))))
    limit = int(args.mem_gb * 2 ** 30)
    extra = 2 * sel_bytes + (1 << 30)   # gather + SDPA copies, workspace
    label = f"G={G} B={B} L={_lk(L)}"
    if per_set + extra > limit:
        msg = (f"{label}: skipped, needs {(per_set + extra) / 2 ** 30:.1f} GB "
               f"> --mem-gb {args.mem_gb:g}")
        print("  " + msg)
        skipped.append(msg)
        return
    n_sets = min(n_sets, max(1, (limit - extra) // per_set))
    sh = Shape(B, H, G, n, bs, D, kept, n_sets)
    t0 = time.time()
    sets = make_sets(sh, kv_dt, q_dt, fields, args.layout, DEVICE)
    torch.cuda.synchronize()
    print(f"  {label}: rows {R}, {n} blocks a row, budget {kept}, {n_sets} "
          f"sets x {per_set / 2 ** 30:.2f} GB (made in "
          f"{time.time() - t0:.1f} s)")

    def K_for(floor_us: float) -> int:
        return max(n_sets, min(args.steps, math.ceil(2000 / max(floor_us,
                                                               0.5))))

    def reps_for(K: int, floor_us: float) -> int:
        est_s = K * max(floor_us, 5.0) * 2e-6
        return max(3, min(args.reps, int(args.timing_s / max(est_s, 1e-9))))

    def measure(step: Callable[[int], None], floor_us: float
                ) -> Tuple[Optional[float], Optional[float]]:
        K = K_for(floor_us)
        try:
            us = time_graph(step, K, n_sets, reps_for(K, floor_us),
                            args.warmup)
        except Exception as err:  # noqa: BLE001
            print(f"    graph timing failed: {err!r}"[:300])
            torch.cuda.synchronize()
            us = None
        db = None
        if args.do_bench_ms > 0 and us is not None:
            try:
                db = time_do_bench(step, args.do_bench_ms)
            except Exception as err:  # noqa: BLE001
                print(f"    do_bench failed: {err!r}"[:300])
        return us, db

    fl_attn = sel_bytes / bw * 1e6
    fl_dense = dense_bytes / bw * 1e6
    # The dense contenders do not depend on the flow: measured once.
    dense: Dict[str, Any] = {}
    ours0 = flows[0][1]
    ours0.probe(sets[0])
    tot_dense = R * n
    dense["sdpa"], dense["sdpa_db"] = measure(
        lambda i: sdpa_dense(sets[i], B, H, G), fl_dense)
    dense["ours"], dense["ours_db"] = (None, None)
    if ours0.mode in ("api", "kernels"):
        dense["ours"], dense["ours_db"] = measure(
            lambda i: ours0.attend(sets[i], sets[i]["dense_ip"],
                                   sets[i]["dense_ids"], tot_dense),
            fl_dense)
    # Dense numerics on set 0: ours dense and SDPA vs float64 (rows 0, R-1).
    chk_rows = sorted({0, R - 1})
    s0 = sets[0]
    ref_d = reference(s0, chk_rows, lambda r: s0["dense_ids"][r * n:(r + 1) * n],
                      G)
    dense_err = {}
    o = as_rows(sdpa_dense(s0, B, H, G), R, G)
    dense_err["sdpa"] = (o[chk_rows].double() - ref_d).abs().max().item()
    if ours0.mode in ("api", "kernels"):
        ours0.attend(s0, s0["dense_ip"], s0["dense_ids"], tot_dense)
        dense_err["ours"] = (s0["o"][chk_rows].double() - ref_d).abs().max() \
            .item()
    torch.cuda.synchronize()
    print(f"    dense SDPA {bi.fmt(dense['sdpa'])} us (do_bench "
          f"{bi.fmt(dense['sdpa_db'])}), ours dense {bi.fmt(dense['ours'])} us"
          f" (do_bench {bi.fmt(dense['ours_db'])}), floor {fl_dense:.1f} us; "
          f"max|err| vs f64: {dense_err}")

    for m, ours in flows:
        mode = ours.probe(sets[0])
        fl_dec_m = (scored * field_bytes(m) + sel_bytes) / bw * 1e6
        # The selection of every set, once (our indexer), kept apart from
        # the decode step's outputs.
        sel = []
        for t in sets:
            ours.indexer(t)
            sel.append((t["sp"].clone(), t["si"].clone()))
        torch.cuda.synchronize()
        kt = R * kept
        res: Dict[str, Any] = dict(
            flow=m.flow, G=G, B=B, L=L, rows=R, blocks=n, kept=kept,
            n_sets=n_sets, path=mode, path_note=ours.why,
            floor_attend_us=fl_attn, floor_decode_us=fl_dec_m,
            floor_dense_us=fl_dense, dense_sdpa_us=dense["sdpa"],
            dense_sdpa_dobench_us=dense["sdpa_db"],
            ours_dense_us=dense["ours"], ours_dense_dobench_us=dense["ours_db"],
            dense_err=dense_err)
        have = mode in ("api", "kernels")
        timed = {}
        if have:
            timed["attend"] = (lambda i: ours.attend(sets[i], sel[i][0],
                                                     sel[i][1], kt), fl_attn)
        timed["gather_sdpa"] = (lambda i: sdpa_gather(sets[i], B, H, G, kept,
                                                      sel[i][1]), fl_attn)
        form = {"name": FLEX_FORMS[0]}
        timed["flex"] = (lambda i: flex_attend(sets[i], B, H, G, kept, n, bs,
                                               sel[i][1],
                                               form=form["name"]), fl_attn)
        timed["indexer"] = (lambda i: ours.indexer(sets[i]),
                            fl_dec_m - fl_attn)
        if have:
            timed["decode"] = (lambda i: ours.decode(sets[i], kt), fl_dec_m)

        def idx_then(peer):
            def step(i):
                ours.indexer(sets[i])
                peer(i)
            return step
        timed["idx_gather_sdpa"] = (idx_then(
            lambda i: sdpa_gather(sets[i], B, H, G, kept, sets[i]["si"])),
            fl_dec_m)
        timed["idx_flex"] = (idx_then(
            lambda i: flex_attend(sets[i], B, H, G, kept, n, bs,
                                  sets[i]["si"], form=form["name"])),
            fl_dec_m)
        # Numerics on set 0 over its selection: every sparse contender vs
        # float64 (rows 0 and R-1), before timing (flex compiles here).
        s0 = sets[0]
        sp0, si0 = sel[0]
        ref_s = reference(s0, chk_rows,
                          lambda r: si0[r * kept:(r + 1) * kept], G)
        errs = {}
        for name in FLEX_FORMS:
            try:
                t1 = time.time()
                o = as_rows(flex_attend(s0, B, H, G, kept, n, bs, si0,
                                        form=name), R, G)
                errs["flex"] = (o[chk_rows].double() - ref_s).abs().max() \
                    .item()
                form["name"] = res["flex_form"] = name
                print(f"    flex ({name}) ready in {time.time() - t1:.1f} s")
                break
            except Exception as err:  # noqa: BLE001
                msg = repr(err)
                print(f"    flex ({name}) failed: {msg[:200]} ... "
                      f"{msg[-400:]}")
        else:
            timed.pop("flex")
            timed.pop("idx_flex")
        o = as_rows(sdpa_gather(s0, B, H, G, kept, si0), R, G)
        errs["gather_sdpa"] = (o[chk_rows].double() - ref_s).abs().max().item()
        if have:
            ours.attend(s0, sp0, si0, kt)
            errs["attend"] = (s0["o"][chk_rows].double() - ref_s).abs().max() \
                .item()
            ours.decode(s0, kt)
            errs["decode"] = (s0["o"][chk_rows].double() - ref_s).abs().max() \
                .item()
            errs["decode_selection_same"] = bool(
                torch.equal(s0["sp"], sp0) and
                torch.equal(s0["si"][:kt], si0[:kt]))
        torch.cuda.synchronize()
        res["err"] = errs
        for name, (step, floor_us) in timed.items():
            us, db = measure(step, floor_us)
            res[name + "_us"] = us
            res[name + "_dobench_us"] = db
        # Every contender as a ratio to dense SDPA (time / SDPA's time), for
        # both methods.
        names = list(timed) + ["ours_dense"]
        for suffix in ("_us", "_dobench_us"):
            sd = dense["sdpa" if suffix == "_us" else "sdpa_db"]
            key = "vs_dense_sdpa" + ("" if suffix == "_us" else "_dobench")
            res[key] = {
                nm: (res.get(nm + suffix) / sd if res.get(nm + suffix) and sd
                     else None) for nm in names}
        if have:
            try:
                host = _host_us(lambda: ours.decode(s0, kt), args.host_calls)
            except Exception as err:  # noqa: BLE001
                print(f"    host timing failed: {err!r}"[:200])
                host = None
            res["decode_host_us"] = host
        results.append(res)
        print(f"    {m.flow} [{mode}]: attend {bi.fmt(res.get('attend_us'))} us"
              f" (floor {fl_attn:.1f}), gather+SDPA "
              f"{bi.fmt(res.get('gather_sdpa_us'))}, flex "
              f"{bi.fmt(res.get('flex_us'))}; decode "
              f"{bi.fmt(res.get('decode_us'))} us (floor {fl_dec_m:.1f}; "
              f"do_bench {bi.fmt(res.get('decode_dobench_us'))}), indexer "
              f"{bi.fmt(res.get('indexer_us'))}, idx+gather+SDPA "
              f"{bi.fmt(res.get('idx_gather_sdpa_us'))}, idx+flex "
              f"{bi.fmt(res.get('idx_flex_us'))}; max|err| {errs}")
    sets.clear()       # the graphs' closures hold the list
    torch.cuda.empty_cache()


def _host_us(fn: Callable[[], None], calls: int) -> float:
    import bench_torch_ops   # bench/bench_torch_ops.py
    return bench_torch_ops.host_us(fn, calls)


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

def ratio(a, b, nd=2) -> str:
    return bi.fmt(a / b, nd) if a and b else "-"


def tables(results: List[Dict[str, Any]], skipped: List[str]) -> str:
    f = bi.fmt
    a_hdr = ["flow", "G", "B", "L", "kept", "attend µs", "floor µs",
             "attend/floor", "do_bench µs", "gather+SDPA µs", "flex µs",
             "ours dense µs", "dense SDPA µs", "ours dense/SDPA"]
    s_hdr = ["flow", "G", "B", "L", "decode µs", "floor µs", "decode/floor",
             "do_bench µs", "indexer µs (do_bench)", "idx+gather+SDPA µs",
             "idx+flex µs", "dense SDPA µs (do_bench)",
             "SDPA/decode", "SDPA/idx+gather", "SDPA/idx+flex",
             "SDPA/ours dense", "host µs"]
    a_lines = ["| " + " | ".join(a_hdr) + " |",
               "|" + "|".join("---" for _ in a_hdr) + "|"]
    s_lines = ["| " + " | ".join(s_hdr) + " |",
               "|" + "|".join("---" for _ in s_hdr) + "|"]
    for r in results:
        short = r["flow"].replace("_attention", "")
        lk = _lk(r["L"])
        sd = r["dense_sdpa_us"]
        a_lines.append("| " + " | ".join([
            short, str(r["G"]), str(r["B"]), lk, str(r["kept"]),
            f(r.get("attend_us")), f(r["floor_attend_us"]),
            ratio(r.get("attend_us"), r["floor_attend_us"]),
            f(r.get("attend_dobench_us")), f(r.get("gather_sdpa_us")),
            f(r.get("flex_us")), f(r["ours_dense_us"]), f(sd),
            ratio(r["ours_dense_us"], sd)]) + " |")
        s_lines.append("| " + " | ".join([
            short, str(r["G"]), str(r["B"]), lk, f(r.get("decode_us")),
            f(r["floor_decode_us"]),
            ratio(r.get("decode_us"), r["floor_decode_us"]),
            f(r.get("decode_dobench_us")),
            f"{f(r.get('indexer_us'))} ({f(r.get('indexer_dobench_us'))})",
            f(r.get("idx_gather_sdpa_us")), f(r.get("idx_flex_us")),
            f"{f(sd)} ({f(r['dense_sdpa_dobench_us'])})",
            ratio(sd, r.get("decode_us")),
            ratio(sd, r.get("idx_gather_sdpa_us")),
            ratio(sd, r.get("idx_flex_us")),
            ratio(sd, r["ours_dense_us"]),
            f(r.get("decode_host_us"))]) + " |")
    d_names = ["attend", "gather_sdpa", "flex", "decode", "indexer",
               "idx_gather_sdpa", "idx_flex", "ours_dense"]
    d_hdr = ["flow", "G", "B", "L"] + [n + " µs" for n in d_names] + [
        "dense SDPA µs"]
    d_lines = ["| " + " | ".join(d_hdr) + " |",
               "|" + "|".join("---" for _ in d_hdr) + "|"]
    for r in results:
        d_lines.append("| " + " | ".join(
            [r["flow"].replace("_attention", ""), str(r["G"]), str(r["B"]),
             _lk(r["L"])] + [f(r.get(n + "_dobench_us")) for n in d_names]
            + [f(r["dense_sdpa_dobench_us"])]) + " |")
    out = ("Attention alone (over the flow's selection):\n\n"
           + "\n".join(a_lines) +
           "\n\nWhole decode step (SDPA/x: how many times faster than dense "
           "SDPA; > 1 is faster):\n\n" + "\n".join(s_lines) +
           "\n\ntriton.testing.do_bench of one graph replay (L2 flushed by "
           "its 256 MB write before each call), µs:\n\n"
           + "\n".join(d_lines) + "\n")
    if skipped:
        out += "\nSkipped:\n\n" + "\n".join("- " + s for s in skipped) + "\n"
    paths = sorted({(r["flow"], r["path"], r["path_note"]) for r in results})
    notes = [f"- {fl}: our attend/decode via {p}" + (f" ({w})" if w else "")
             for fl, p, w in paths]
    errs = [f"- {r['flow']} G={r['G']} B={r['B']} L={_lk(r['L'])}: "
            f"sparse {json.dumps(r['err'])}; dense "
            f"{json.dumps(r['dense_err'])}" for r in results]
    if notes:
        out += "\nPaths:\n\n" + "\n".join(notes) + "\n"
    if errs:
        out += ("\nmax |o - float64 reference| (set 0, rows 0 and R-1):\n\n"
                + "\n".join(errs) + "\n")
    return out


# ---------------------------------------------------------------------------
# CPU self-test
# ---------------------------------------------------------------------------

def _cpu_manifests(args) -> List[str]:
    """CPU manifests of block_sparse and gqa_quest at G 5 and 8: from
    --artifacts, else compiled now (tiny config, topk_val 3)."""
    if args.artifacts:
        import glob
        ps = sorted(glob.glob(os.path.join(args.artifacts, "*.manifest.json")))
        return [p for p in ps
                if Manifest.from_file(p).backend == "cpu"
                and Manifest.from_file(p).flow.startswith(tuple(args.flows))]
    out = tempfile.mkdtemp(prefix="bench_decode_cpu_")
    paths = []
    for flow in args.flows:
        for g in (5, 8):
            name = f"{flow}_k3_g{g}"
            cmd = [sys.executable, "-m", "vortex", "compile", "--flow", flow,
                   "--group-size", str(g), "--head-dim", "64", "--topk-val",
                   "3", "--target", "cpu", "-o", out, "--name", name]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")
            paths.append(os.path.join(out, name + ".manifest.json"))
    return paths


def selftest_cpu(args) -> int:
    torch.manual_seed(0)
    failed = 0
    tol = 3e-2          # bf16 outputs
    for path in _cpu_manifests(args):
        m = Manifest.from_file(path)
        ours = Ours(path)
        bs, D, G = (int(m.config[k]) for k in ("block_size", "head_dim",
                                                  "group_size"))
        B, H, n = 2, 2, 12
        kept = min(n, budget(m.config, n))
        sh = Shape(B, H, G, n, bs, D, kept, 1)
        fields = {k: v for k, v in m.cache_shapes(sh.T).items()
                  if k not in ("k", "v")}
        t = make_sets(sh, _tdt(m.tensors["k"].dtype),
                      _tdt(m.tensors["q"].dtype), fields, "random", "cpu")[0]
        mode = ours.probe(t)
        ours.indexer(t)
        sp, si = t["sp"].clone(), t["si"].clone()
        R = sh.R
        assert torch.equal(sp, torch.arange(R + 1, dtype=torch.int32) * kept)
        rows = list(range(R))
        ref_s = reference(t, rows, lambda r: si[r * kept:(r + 1) * kept], G)
        ref_d = reference(t, rows,
                          lambda r: t["dense_ids"][r * n:(r + 1) * n], G)
        got: Dict[str, Tuple[torch.Tensor, torch.Tensor]] = {}
        got["gather_sdpa"] = (as_rows(sdpa_gather(t, B, H, G, kept, si), R, G),
                              ref_s)
        for compiled in (True, False):
            for form in FLEX_FORMS:
                key = f"flex_{form}" + ("" if compiled else "_eager")
                try:
                    o = flex_attend(t, B, H, G, kept, n, bs, si, compiled,
                                    form)
                    got[key] = (as_rows(o, R, G), ref_s)
                except Exception as err:  # noqa: BLE001
                    print(f"  {key} unavailable on the CPU: {err!r}"[:300])
        got["dense_sdpa"] = (as_rows(sdpa_dense(t, B, H, G), R, G), ref_d)
        if mode in ("api", "kernels"):
            ours.attend(t, sp, si, R * kept)
            got["attend"] = (t["o"].clone(), ref_s)
            ours.attend(t, t["dense_ip"], t["dense_ids"], R * n)
            got["ours_dense"] = (t["o"].clone(), ref_d)
            t["o"].zero_()
            t["sp"].zero_()
            t["si"].zero_()
            ours.decode(t, R * kept)
            same = torch.equal(t["sp"], sp) and torch.equal(t["si"], si)
            got["decode"] = (t["o"].clone(), ref_s)
            if not same:
                print("  FAIL: decode's selection differs from the indexer's")
                failed += 1
        line = []
        for name, (o, ref) in got.items():
            err = (o.double() - ref).abs().max().item()
            ok = err < tol and bool(torch.isfinite(o).all())
            failed += not ok
            line.append(f"{name} {err:.1e}{'' if ok else ' FAIL'}")
        # The contenders agree with each other too (same selection).
        if "attend" in got:
            d = (got["attend"][0].double()
                 - got["gather_sdpa"][0].double()).abs().max().item()
            line.append(f"attend-vs-gather {d:.1e}")
            failed += not d < tol
        print(f"{m.flow} (G {G}, budget {kept} of {n}, path {mode}"
              f"{': ' + ours.why if ours.why else ''}): " + ", ".join(line))
    print("FAILED" if failed else "selftest-cpu: all contenders agree", failed)
    return 1 if failed else 0


# ---------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", default=None,
                    help="directory of manifests (+ cubins): the decode set")
    ap.add_argument("--out", default=os.environ.get("OUT"),
                    help="directory for bench_decode.{json,md} (default $OUT)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help=f"G {QUICK['groups']}, L {QUICK['tokens']}, B "
                           f"{QUICK['batch']} (default)")
    mode.add_argument("--full", action="store_true",
                      help=f"G {FULL['groups']}, L {FULL['tokens']}, B "
                           f"{FULL['batch']}")
    mode.add_argument("--selftest-cpu", action="store_true")
    ap.add_argument("--flows", nargs="*", default=list(FLOWS))
    ap.add_argument("--groups", nargs="*", type=int, default=None)
    ap.add_argument("--tokens", nargs="*", type=int, default=None)
    ap.add_argument("--batch", nargs="*", type=int, default=None)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--topk-val", type=int, default=64)
    ap.add_argument("--layout", choices=["random", "contiguous"],
                    default="random")
    ap.add_argument("--mem-gb", type=float, default=60.0)
    ap.add_argument("--budget-s", type=float, default=330.0,
                    help="skip the combos left once this much wall time "
                         "has passed (the run must stay under ~6 min)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=16,
                    help="most consecutive steps per timed graph (K)")
    ap.add_argument("--timing-s", type=float, default=0.25,
                    help="rough GPU seconds per graph timing (sets reps)")
    ap.add_argument("--do-bench-ms", type=int, default=40,
                    help="do_bench rep (ms); 0 skips it")
    ap.add_argument("--host-calls", type=int, default=20)
    ap.add_argument("--flex-dynamic", action="store_true",
                    help="compile flex_attention with dynamic=None (one "
                         "dynamic-shape compile instead of one per shape: "
                         "less compile time, maybe a slower kernel)")
    args = ap.parse_args(argv)
    global FLEX_DYNAMIC
    FLEX_DYNAMIC = None if args.flex_dynamic else False

    if args.selftest_cpu:
        return selftest_cpu(args)
    if not args.artifacts:
        ap.error("--artifacts DIR is required (except with --selftest-cpu)")
    if not torch.cuda.is_available():
        print("no CUDA device (use --selftest-cpu here)")
        return 2
    preset = FULL if args.full else QUICK
    groups = args.groups or preset["groups"]
    tokens = args.tokens or preset["tokens"]
    batch = args.batch or preset["batch"]
    start = time.time()
    torch.backends.cuda.matmul.allow_tf32 = False
    import torch._dynamo as dynamo
    for attr in ("recompile_limit", "cache_size_limit",
                 "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(dynamo.config, attr):
            setattr(dynamo.config, attr, 1024)
    dev_name = torch.cuda.get_device_name()
    bw = bi.copy_bandwidth()
    torch.cuda.empty_cache()
    l2 = bi.l2_bytes()
    try:
        import triton
        tv = triton.__version__
    except ImportError:
        tv = "none"
    head = (f"Device: {dev_name}; copy bandwidth {bw / 1e9:.0f} GB/s (read + "
            f"write, 2 GiB copy); L2 {l2 / 2 ** 20:.0f} MiB; torch "
            f"{torch.__version__}; triton {tv}; {args.heads} KV heads, "
            f"layout {args.layout}, topk_val {args.topk_val}; graphs of K "
            f"steps over rotating sets (>= 2 x L2) + do_bench of one replay "
            f"(rep {args.do_bench_ms} ms).")
    print(head)

    import glob
    by_g: Dict[int, List[Tuple[Manifest, Ours]]] = {}
    for p in sorted(glob.glob(os.path.join(args.artifacts,
                                           "*.manifest.json"))):
        m = Manifest.from_file(p)
        if m.backend == "cpu" or not m.flow.startswith(tuple(args.flows)):
            continue
        if int(m.config["topk_val"]) != args.topk_val or \
                int(m.config["group_size"]) not in groups:
            continue
        q_heads = m.tensors["q"].extents({"rows": 1})[1]
        if q_heads != int(m.config["group_size"]):
            continue    # multi-token flows: not this benchmark
        by_g.setdefault(int(m.config["group_size"]), []).append(
            (m, Ours(p)))
    if not by_g:
        print(f"no manifest of {args.flows} with topk_val {args.topk_val} "
              f"and G in {groups} in {args.artifacts}")
        return 1
    results: List[Dict[str, Any]] = []
    skipped: List[str] = []
    for G in groups:
        if G not in by_g:
            skipped.append(f"G={G}: no manifest")
            continue
        for L in tokens:
            for B in batch:
                if time.time() - start > args.budget_s:
                    skipped.append(f"G={G} B={B} L={_lk(L)}: skipped, "
                                   f"time budget {args.budget_s:g} s spent")
                    continue
                run_combo(args, by_g[G], G, B, L, bw, l2, results, skipped)
    md = head + "\n\n" + tables(results, skipped) + \
        f"\nTotal wall time {time.time() - start:.0f} s.\n"
    print("\n" + md)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bench_decode.md"), "w") as f:
            f.write(md)
        with open(os.path.join(args.out, "bench_decode.json"), "w") as f:
            json.dump(dict(device=dev_name, copy_bw=bw, l2=l2,
                           torch=torch.__version__, triton=tv,
                           args=vars(args), results=results, skipped=skipped,
                           wall_s=time.time() - start), f, indent=1)
        print(f"wrote {args.out}/bench_decode.{{md,json}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
