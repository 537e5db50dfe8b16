"""Compiled flows as torch ops (torch.library), for eager calls,
torch.compile and CUDA graphs.

    >>> import vortex
    >>> flow = vortex.load("out/block_sparse_attention.manifest.json")
    >>> flow.cache_step(cache, block_ids)          # or loc=..., num_kv_heads=
    >>> sp_indptr, sp_indices = flow.indexer(q, cache, indptr, indices)
    >>> torch.ops.vortex.block_sparse_attention_32ca51848ead_indexer  # the op

Loading a manifest defines one op per step in the `vortex` namespace,
`vortex::<flow>_<hash12>_{indexer,cache,attend}` (attend where the build has
it, with `..._decode`: the indexer, then attend, as one op), where the hash
is the flow's source hash: stable across processes, and the same for the CPU
and the GPU build of one flow, so one op carries both implementations. The
schema comes from the manifest (its argument order); exactly the tensors the
step writes are mutable (`Tensor(a!)`): saved fields and the sparse CSR for the
indexer, written fields for the cache step; k and v never are. Each op has a
fake implementation (no outputs, no metadata change), a CPU implementation (the
shared object, on CPU tensors) and, once a CUDA build is loaded, a CUDA
implementation: the native launcher of `vortex.runtime.native` when it is built
(plans cached per argument signature, launched from C++), else the ctypes path
of `vortex.runtime.cuda`.

Both implementations validate every argument with `validate.validate_step`
before anything runs; the CPU one also checks CSR values and block ids on
the host (it can, without a device sync). A cache step skips negative block
ids (the `loc` form marks tokens that complete no block with -1).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import native
from .attention import (DECODE_CSR, DECODE_TAIL, check_attend_values,
                        check_decode_manifest, default_scale)
from .cpu import CPUFlow
from ..environment import import_torch
from .manifest import DTYPES, Manifest, budget
from .validate import check_csr, check_slot_map, check_slots, validate_step
from .paging import slot_blocks
from .params import BoundParams

torch = import_torch()

__all__ = ["Flow", "load", "registered_ops"]

_LIB: Optional[torch.library.Library] = None
_OPS: Dict[str, "_Op"] = {}
_LOCK = threading.Lock()


def _library() -> torch.library.Library:
    global _LIB
    if _LIB is None:
        _LIB = torch.library.Library("vortex", "FRAGMENT")
    return _LIB


def _fake_impl(names: Tuple[str, ...]):
    """The fake (and meta) implementation: the op mutates its outputs in
    place and returns nothing, so no shape or dtype changes. It also runs
    when meta tensors are mixed with real ones, which then must not pass
    silently: every argument must be on one device."""
    def fake(*args):
        device = args[0].device
        for name, t in zip(names, args):
            if t.device != device:
                raise ValueError(f"{name}: on {t.device}, {names[0]} is on "
                                 f"{device}")
        return None
    return fake


# `decode` is no manifest step: one op that runs the indexer, then attend
# over the sparse CSR it wrote, so that bad input is refused before either
# writes anything (and torch.compile sees one op).
_DECODE_TAIL = DECODE_TAIL


def _signature(manifest: Manifest,
               step: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(args, writes) of a step's op; `decode` is the indexer's then
    attend's tail."""
    if step != "decode":
        return manifest.steps[step].args, manifest.steps[step].writes
    idx = manifest.steps["indexer"]
    return idx.args + _DECODE_TAIL, idx.writes + ("o", "lse")


def _schema(args: Tuple[str, ...], writes: Tuple[str, ...]) -> str:
    """The torch schema: exactly the written tensors are mutable."""
    aliases = iter("abcdefghijklmnopqrstuvwxyz")
    parts = [f"Tensor({next(aliases)}!) {a}" if a in writes else
             f"Tensor {a}" for a in args]
    return "(" + ", ".join(parts) + ") -> ()"


class _Op:
    """One torch op (a step of one flow source) and its implementations."""

    def __init__(self, manifest: Manifest, step: str):
        self.step = step
        self.name = manifest.op_name(step)
        self.qualname = "vortex::" + self.name
        self.args, self.writes = _signature(manifest, step)
        self.schema = _schema(self.args, self.writes)
        self.cpu: Optional[CPUFlow] = None
        self.cuda = None                  # runtime.CompiledFlowGPU
        self.cuda_impl: Optional[str] = None   # "native" | "ctypes"
        lib = _library()
        lib.define(self.name + self.schema)
        torch.library.register_fake(self.qualname, _fake_impl(self.args),
                                    lib=lib)
        lib.impl(self.name, self._cpu_impl, "CPU")

    @property
    def packet(self):
        return getattr(torch.ops.vortex, self.name).default

    def attach(self, runtime) -> None:
        if runtime.manifest.backend == "cpu":
            self.cpu = runtime
            return
        self.cuda = runtime
        if self.cuda_impl is None:
            mod = native.load()
            if mod is not None:
                mod.register_cuda_impl(self.qualname, len(self.args),
                                       self._plan)
                self.cuda_impl = "native"
            else:
                _library().impl(self.name, self._cuda_impl, "CUDA")
                self.cuda_impl = "ctypes"
        elif self.cuda_impl == "native":
            native.load().clear_plan_cache(self.qualname)

    # -- implementations ----------------------------------------------------
    def _named(self, tensors) -> Dict[str, Any]:
        return dict(zip(self.args, tensors))

    def _cpu_impl(self, *tensors) -> None:
        if self.cpu is None:
            raise RuntimeError(f"{self.qualname}: no CPU build of this flow is "
                               "loaded (vortex.load a --target=cpu manifest)")
        args = self._named(tensors)
        m = self.cpu.manifest
        # Shapes, dtypes, devices and aliasing first (names the argument).
        if self.step == "decode":
            self._cpu_decode(m, args)
            return
        validate_step(m, self.step, args, ("cpu", None))
        num_blocks = int(args["k"].shape[0])
        if self.step == "attend":
            check_attend_values(
                args["kv_indptr"].tolist(), args["kv_indices"].tolist(),
                args["kv_last_len"].tolist(), num_blocks,
                int(m.config["block_size"]), int(args["q"].shape[0]))
        elif self.step == "indexer":
            check_csr(args["dense_kv_indptr"].tolist(),
                      args["dense_kv_indices"].tolist(), num_blocks,
                      unique=any(w in m.cache_names() for w in self.writes))
        else:
            ids = args["block_ids"]
            keep = ids[ids >= 0].contiguous()
            check_csr([0, int(keep.numel())], keep.tolist(), num_blocks,
                      indptr_name="block_ids", indices_name="block_ids")
            args["block_ids"] = keep
            slotted = m.symbols.get("num_slots")
            if slotted is not None:
                check_slots(args["slot_of_ptr"].tolist(), keep.tolist(),
                            int(args[slotted].shape[0]), slotted)
        self.cpu.run_step(self.step, args)

    def _cpu_decode(self, m: Manifest, args: Dict[str, Any]) -> None:
        """The indexer, then attend over its sparse CSR; every argument is
        checked first (kv_last_len against the dense CSR: the selection
        keeps each row's last block last)."""
        check_decode_manifest(m)
        indexer = {n: args[n] for n in m.steps["indexer"].args}
        attend = {n: args[DECODE_CSR.get(n, n)]
                  for n in m.steps["attend"].args}
        validate_step(m, "indexer", indexer, ("cpu", None))
        validate_step(m, "attend", attend, ("cpu", None))
        for w in ("o", "lse"):
            for n in m.steps["indexer"].args:
                t = args[n]
                if t.numel() and args[w].numel() and \
                        t.data_ptr() == args[w].data_ptr():
                    raise ValueError(f"{w}: shares memory with {n} (the "
                                     f"step writes {w})")
        num_blocks = int(args["k"].shape[0])
        check_csr(args["dense_kv_indptr"].tolist(),
                  args["dense_kv_indices"].tolist(), num_blocks,
                  unique=any(w in m.cache_names() for w in self.writes))
        check_attend_values(
            args["dense_kv_indptr"].tolist(), args["dense_kv_indices"].tolist(),
            args["kv_last_len"].tolist(), num_blocks,
            int(m.config["block_size"]), int(args["q"].shape[0]),
            "dense_kv_indptr", "dense_kv_indices")
        self.cpu.run_step("indexer", indexer)
        self.cpu.run_step("attend", attend)

    def _cuda_impl(self, *tensors) -> None:
        if self.cuda is None:
            raise RuntimeError(f"{self.qualname}: no CUDA build of this flow "
                               "is loaded")
        self.cuda.run_step(self.step, self._named(tensors))

    def _plan(self, tensors: List[Any]):
        """The native launcher's planner (called on a plan-cache miss)."""
        if self.cuda is None:
            raise RuntimeError(f"{self.qualname}: no CUDA build of this flow "
                               "is loaded")
        return self.cuda.plan(self.step, self._named(tensors))


def _register(manifest: Manifest, step: str, runtime) -> _Op:
    name = manifest.op_name(step)
    with _LOCK:
        op = _OPS.get(name)
        if op is None:
            op = _OPS[name] = _Op(manifest, step)
        elif op.schema != _schema(*_signature(manifest, step)):
            raise RuntimeError(
                f"vortex::{name} is already defined with schema {op.schema}, "
                f"this manifest gives {_schema(*_signature(manifest, step))}")
        op.attach(runtime)
    return op


def registered_ops() -> Dict[str, str]:
    """{qualified name: schema} of the ops defined in this process."""
    return {op.qualname: op.schema for op in _OPS.values()}


def _caller(op: _Op, head: List[str], tail: List[str],
            params: List[str]):
    """A function `call(packet, raw, <head>, cache, params, <tail>)` calling
    the op with arguments gathered from a step's named parameters, the
    `cache` dict and the bound `params`, in the schema's order (a plan made
    once per step). The eager host path calls the op's C++ entry point
    (`raw`), skipping OpOverload.__call__, except while torch.compile
    traces (then the packet, which Dynamo records)."""
    nh = len(head)
    # (source, key) per op argument: 0 the head's position, 1 the tail's,
    # 2 a bound parameter's name, 3 a cache field's name.
    plan = tuple((0, head.index(n)) if n in head else
                 (1, tail.index(n)) if n in tail else
                 (2, n) if n in params else (3, n) for n in op.args)
    compiling = torch.compiler.is_compiling

    def call(_packet, _raw, *a):
        sources = (a[:nh], a[nh + 2:], a[nh + 1], a[nh])
        args = [sources[s][k] for s, k in plan]
        if compiling():
            _packet(*args)
        else:
            _raw(*args)
    return call


class Flow:
    """A compiled flow (one manifest) behind its two torch ops."""

    def __init__(self, manifest_path: str, device: Optional[int] = None,
                 params: Optional[Mapping[str, Any]] = None,
                 debug: Optional[bool] = None):
        m = self.manifest = Manifest.from_file(manifest_path)
        # Debug mode: check the GPU guards after every step (synchronizes).
        self.debug = (os.environ.get("VORTEX_DEBUG", "") not in ("", "0")
                      if debug is None else bool(debug))
        if m.backend == "cpu":
            self.runtime = CPUFlow(m)
            self.device = torch.device("cpu")
        else:
            from .cuda import CompiledFlowGPU
            self.runtime = CompiledFlowGPU(m, device)
            self.device = self.runtime.device
        self.name = m.flow
        self.config = m.config
        self.fields = m.fields
        self._indexer = _register(m, "indexer", self.runtime)
        self._cache = _register(m, "cache", self.runtime)
        self.indexer_op = self._indexer.packet
        self.cache_op = self._cache.packet
        self._raw_indexer = self.indexer_op._op
        self._raw_cache = self.cache_op._op
        self.param_names = [n for n in m.steps["indexer"].args
                            if m.tensors[n].role == "parameter"]
        self._binding = BoundParams(m, self.param_names, self.device)
        self._call_indexer = _caller(
            self._indexer, ["q"],
            ["dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr",
             "sparse_kv_indices"], self.param_names)
        # Flows with slotted fields take the slot map after block_ids.
        self.slotted = "num_slots" in m.symbols
        self._call_cache = _caller(
            self._cache, [],
            ["block_ids"] + (["slot_of_ptr"] if self.slotted else []),
            self.param_names)
        # attend: decode attention over a CSR (optional in a manifest: the
        # GPU back end writes it only for the shapes its kernels support).
        self._attend = self.attend_op = None
        if "attend" in m.steps:
            self._attend = _register(m, "attend", self.runtime)
            self.attend_op = self._attend.packet
            self._raw_attend = self.attend_op._op
            self._call_attend = _caller(
                self._attend, ["q"],
                ["kv_indptr", "kv_indices", "kv_last_len", "o", "lse",
                 "sm_scale"], [])
            self._decode = _register(m, "decode", self.runtime)
            self.decode_op = self._decode.packet
            self._raw_decode = self.decode_op._op
            self._call_decode = _caller(
                self._decode, ["q"],
                ["dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr",
                 "sparse_kv_indices"] + list(_DECODE_TAIL), self.param_names)
        if params is not None:
            self.bind(params)

    def check(self) -> None:
        """Raise vortex.FlowCheckError if a GPU kernel's guard failed since
        the last check: a block id outside [0, num_blocks) in
        dense_kv_indices or block_ids, or a malformed dense_kv_indptr
        (docs/gpu.md "Guards"). Synchronizes the devices the flow ran on.
        The CPU back end validates values before it runs, so it has nothing
        to check. The ops are shared by every Flow loaded from the same
        source, so this checks the kernels they launched."""
        seen: List[Any] = []
        for rt in (self._indexer.cuda, self._cache.cuda, self.runtime):
            if rt is None or any(rt is s for s in seen):
                continue
            seen.append(rt)
            check = getattr(rt, "check", None)
            if check is not None:
                check()

    def _debug_check(self) -> None:
        # Not while a CUDA graph is captured or torch.compile traces: the
        # check synchronizes.
        if not self.debug or self.device.type != "cuda":
            return
        if torch.cuda.is_current_stream_capturing():
            return
        compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                            None)
        if compiling is not None and compiling():
            return
        self.check()

    def __repr__(self):
        return (f"vortex.Flow(@{self.name}, {self.manifest.backend}, "
                f"ops={self._indexer.qualname}, {self._cache.qualname})")

    def bind(self, params: Mapping[str, Any]) -> None:
        """Bind the flow's parameters (learned constants, docs/contract.md):
        `{name: tensor [r, c] or [1, r, c], or a vortex.abs.Parameter}`, e.g.
        the trained `flow_object.parameters()`. They are copied (detached)
        to the flow's device and dtype and passed to every call. A
        per-layer value (`[L, r, c]`, or a per-layer Parameter with its
        lookup) is copied whole; each call then passes the slice of its
        `layer=` (docs/python.md, "Per-layer parameters"; the rules are
        `vortex.runtime.params.BoundParams`)."""
        self._binding.bind(params)

    @property
    def _params(self) -> Dict[str, Any]:
        return self._binding.values

    @property
    def _layered(self) -> Dict[str, Any]:
        return self._binding.layered

    def layer_params(self, layer: Optional[int] = None) -> Dict[str, Any]:
        """The parameters a call for `layer` passes (BoundParams.for_layer:
        a per-layer one as its layer's `[1, r, c]` view). Raises ValueError
        naming `layer` before anything runs."""
        return self._binding.for_layer(layer)

    # -- helpers -------------------------------------------------------------
    def budget(self, n: int) -> int:
        return budget(self.config, n)

    def allocate_cache(self, num_blocks: int, device=None,
                       fill: Optional[float] = None) -> Dict[str, torch.Tensor]:
        """Cache tensors (k, v, fields) for a pool of num_blocks blocks, in
        the manifest's dtypes, on `device` (default: the flow's)."""
        dev = self.device if device is None else torch.device(device)
        out = {}
        for n, (shape, dt) in self.manifest.cache_shapes(num_blocks).items():
            t = torch.empty(shape, dtype=getattr(torch, DTYPES[dt][0]),
                            device=dev)
            out[n] = t.fill_(fill) if fill is not None else t.zero_()
        return out

    def _pools(self, cache):
        """An MLA flow's cache may name its pool as vortex_torch does,
        `latent`: it is k, and v is the same tensor (docs/design.md, "MLA
        flows")."""
        if not (self.manifest.is_mla and isinstance(cache, Mapping)
                and "latent" in cache):
            return cache
        if "k" in cache or "v" in cache:
            raise ValueError("cache: an MLA flow takes its pool as 'latent' "
                             "or as 'k' and 'v', not both")
        named = dict(cache)
        named["k"] = named["v"] = named.pop("latent")
        return named

    def _check_cache(self, cache) -> None:
        if not isinstance(cache, Mapping):
            raise ValueError(f"cache: expected a dict of tensors with keys "
                             f"{self.manifest.cache_names()}, got "
                             f"{type(cache).__name__}")
        missing = [n for n in self.manifest.cache_names() if n not in cache]
        if missing:
            raise ValueError(f"cache: missing {missing} (expected keys "
                             f"{self.manifest.cache_names()})")

    @staticmethod
    def _stream_guard(stream, like):
        if not isinstance(stream, torch.cuda.Stream):
            raise ValueError(f"stream: expected a torch.cuda.Stream, got "
                             f"{type(stream).__name__}")
        dev = getattr(like, "device", None)
        if getattr(dev, "type", None) != "cuda" or stream.device != dev:
            raise ValueError(f"stream: on {stream.device}, the tensors are "
                             f"on {dev}")
        return torch.cuda.stream(stream)

    # What an op call raises when its arguments are of the wrong kind; the
    # cache step's validation reports attribute errors itself.
    _CALL_ERRORS = (KeyError, TypeError, NotImplementedError, RuntimeError,
                    AttributeError)

    def _run(self, stream, like, call, named, errors=_CALL_ERRORS):
        """`call()` on `stream` (when given; `like` is a tensor on its
        device), an error of `errors` turned into one naming the argument at
        fault (`named()`: the arguments by name, built only then)."""
        guard = None if stream is None else self._stream_guard(stream, like)
        try:
            if guard is not None:
                guard.__enter__()
            call()
        except errors as err:
            self._explain(err, named())
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)

    def _explain(self, err: Exception, named: Mapping[str, Any]) -> None:
        """Turns an error the op call raised before validation could run (a
        cache that is not a dict, a missing key, a tensor on a backend this
        flow has no build for) into a ValueError naming the argument."""
        if isinstance(err, (KeyError, TypeError, AttributeError)):
            missing = self._binding.missing()
            if missing:
                raise ValueError(f"params: {missing} not bound; pass "
                                 "params= to vortex.load or call "
                                 "flow.bind(...)") from err
            if "cache" in named:
                self._check_cache(named["cache"])
            for n, t in named.items():
                if n != "cache" and not isinstance(t, torch.Tensor):
                    raise ValueError(f"{n}: expected a torch.Tensor, got "
                                     f"{type(t).__name__}") from err
        if isinstance(err, (NotImplementedError, RuntimeError)):
            want = self.manifest.backend
            want = "cuda" if want == "cuda" else "cpu"
            for n, t in named.items():
                if isinstance(t, Mapping):
                    for k, v in t.items():
                        dev = getattr(getattr(v, "device", None), "type", None)
                        if dev is not None and dev != want:
                            raise ValueError(f"cache[{k!r}]: on {dev}, this "
                                             f"flow is built for {want}") from err
                    continue
                dev = getattr(getattr(t, "device", None), "type", None)
                if dev is not None and dev != want:
                    raise ValueError(f"{n}: on {dev}, this flow is built for "
                                     f"{want}") from err
        raise err

    # -- the two steps ---------------------------------------------------------
    def indexer(self, q, cache, dense_kv_indptr, dense_kv_indices,
                sparse_kv_indptr=None, sparse_kv_indices=None, stream=None,
                layer=None):
        """One decode step through the indexer op. Writes the sparse CSR
        into `sparse_kv_indptr` (rows + 1) and `sparse_kv_indices` (at least
        `total` entries: vortex_torch's caller-owned `o` buffer may be
        longer; its first `total` entries are the op's) and returns them;
        when not given they are allocated (zeroed). Saved fields update in
        place. `layer` selects the slice of per-layer parameters."""
        params = self.layer_params(layer)
        cache = self._pools(cache)
        if sparse_kv_indptr is None or sparse_kv_indices is None:
            # Zeroed: the entries past the selection are then defined (eager
            # and compiled calls agree bit for bit).
            if sparse_kv_indptr is None:
                sparse_kv_indptr = torch.zeros_like(dense_kv_indptr)
            if sparse_kv_indices is None:
                sparse_kv_indices = torch.zeros_like(dense_kv_indices)
        else:
            try:
                total = dense_kv_indices.numel()
                if sparse_kv_indices.numel() > total and \
                        sparse_kv_indices.dim() == 1:
                    sparse_kv_indices = sparse_kv_indices[:total]
            except AttributeError:
                pass     # not tensors: the op's validation names them
        self._run(stream, q, lambda: self._call_indexer(
            self.indexer_op, self._raw_indexer, q, cache, params,
            dense_kv_indptr, dense_kv_indices, sparse_kv_indptr,
            sparse_kv_indices), lambda: dict(
                q=q, cache=cache, dense_kv_indptr=dense_kv_indptr,
                dense_kv_indices=dense_kv_indices,
                sparse_kv_indptr=sparse_kv_indptr,
                sparse_kv_indices=sparse_kv_indices))
        self._debug_check()
        return sparse_kv_indptr, sparse_kv_indices

    def block_ids_from_loc(self, loc: torch.Tensor,
                           num_kv_heads: int) -> torch.Tensor:
        """vortex_torch's `loc` form: int token slots written this step ->
        the block id of every (token, KV head) whose token completes a block,
        -1 elsewhere (int32, `[len(loc) * num_kv_heads]`, token-major). Pool
        block of a slot `pos` and head `h`: ((pos // page_size) * H + h) *
        (page_size // block_size) + (pos % page_size) // block_size.
        Device tensor ops only: no sync, CUDA-graph safe."""
        if not isinstance(loc, torch.Tensor):
            raise ValueError(f"loc: expected a tensor, got {type(loc).__name__}")
        if loc.dim() != 1 or loc.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"loc: expected a 1-D int32/int64 tensor of token "
                             f"slots, got {tuple(loc.shape)} {loc.dtype}")
        if isinstance(num_kv_heads, bool) or not isinstance(num_kv_heads, int) \
                or num_kv_heads < 1:
            raise ValueError(f"num_kv_heads: expected a positive int, got "
                             f"{num_kv_heads!r}")
        bs = int(self.config["block_size"])
        ps = int(self.config.get("page_size", bs))
        if ps % bs:
            raise ValueError(f"{self.name}: page_size {ps} is not a multiple "
                             f"of block_size {bs}")
        pos = loc.to(torch.int64)
        done = ((pos + 1) % bs == 0) & (pos >= 0)
        block = slot_blocks(pos, num_kv_heads, ps, bs)
        ids = torch.where(done[:, None], block, torch.full_like(block, -1))
        return ids.reshape(-1).to(torch.int32)

    def cache_step(self, cache, block_ids=None, *, loc=None,
                   num_kv_heads: Optional[int] = None, stream=None,
                   slot_of_ptr=None, layer=None) -> None:
        """Summarize completed blocks into the cache fields, in place,
        through the cache op: `block_ids` (int32 pool block ids; negative
        entries are skipped), or vortex_torch's `loc` (token slots) with
        `num_kv_heads`. A flow with slotted fields also takes `slot_of_ptr`
        (int32, the slot of every pool block; a block whose slot is < 0
        writes nothing: docs/contract.md, "Slotted fields"). `layer`
        selects the slice of per-layer parameters."""
        params = self.layer_params(layer)
        cache = self._pools(cache)
        if (block_ids is None) == (loc is None):
            raise ValueError("cache_step: pass exactly one of block_ids and "
                             "loc")
        check_slot_map(self.manifest, slot_of_ptr is not None)
        if loc is not None:
            if num_kv_heads is None:
                raise ValueError("num_kv_heads: required with loc")
            block_ids = self.block_ids_from_loc(loc, num_kv_heads)
        tail = (block_ids, slot_of_ptr) if self.slotted else (block_ids,)
        self._run(stream, block_ids, lambda: self._call_cache(
            self.cache_op, self._raw_cache, cache, params, *tail),
            lambda: dict(cache=cache, block_ids=block_ids,
                         slot_of_ptr=slot_of_ptr),
            errors=(KeyError, TypeError, NotImplementedError, RuntimeError))
        self._debug_check()


    # -- attention (docs/contract.md "Attention") ------------------------------
    def _scale_tensor(self, value: float, q) -> "torch.Tensor":
        """The op's f32 [1] scale for a Python float, on q's device: made
        once per value and device outside tracing and graph capture (a fresh
        one each call would be an extra fill launch per step), fresh inside
        them (a fake, traced or capture-pool tensor must not outlive its
        trace or graph)."""
        from torch._subclasses.fake_tensor import is_fake
        device = q.device
        traced = torch.compiler.is_compiling() or is_fake(q) or \
            device.type == "meta" or (
                device.type == "cuda"
                and torch.cuda.is_current_stream_capturing())
        if traced:
            return torch.full((1,), value, dtype=torch.float32, device=device)
        cache = self.__dict__.setdefault("_scales", {})
        key = (value, str(device))
        if key not in cache:
            cache[key] = torch.full((1,), value, dtype=torch.float32,
                                    device=device)
        return cache[key]

    def _attend_outputs(self, q, o, lse, sm_scale):
        """o and lse allocated where not given (o like q, lse [rows, T x G]
        f32), the scale as the op's f32 [1] tensor (default 1/sqrt(D))."""
        if sm_scale is None:
            sm_scale = default_scale(int(self.config["head_dim"]))
        if not isinstance(sm_scale, torch.Tensor):
            if isinstance(sm_scale, bool) or \
                    not isinstance(sm_scale, (int, float)):
                raise ValueError(f"sm_scale: expected a float, got "
                                 f"{type(sm_scale).__name__}")
            sm_scale = self._scale_tensor(float(sm_scale), q)
        if o is None:
            o = torch.empty_like(q)
        if lse is None:
            lse = torch.empty(q.shape[:2], dtype=torch.float32,
                              device=q.device)
        return o, lse, sm_scale

    def attend(self, q, cache, kv_indptr, kv_indices, kv_last_len, o=None,
               lse=None, sm_scale=None, stream=None):
        """Decode attention of q `[rows, T x G, D]` over the k/v blocks of a
        CSR (dense, or a selection: `kv_indices` may be longer than
        `kv_indptr[-1]`), the last entry of row r holding `kv_last_len[r]`
        tokens. Writes o (q's dtype) and lse (`[rows, T x G]`, f32, natural
        log) and returns them; allocated when not given. `sm_scale`
        defaults to 1/sqrt(D)."""
        cache = self._pools(cache)
        if self._attend is None:
            raise NotImplementedError(
                f"{self.name}: this {self.manifest.backend} build has no "
                "attend step (the GPU back end emits it only for the shapes "
                "its kernels support, docs/gpu.md \"Attention\")")
        try:
            o, lse, sm_scale = self._attend_outputs(q, o, lse, sm_scale)
        except AttributeError as err:
            self._explain(err, dict(q=q))
        self._run(stream, q, lambda: self._call_attend(
            self.attend_op, self._raw_attend, q, cache, self._params,
            kv_indptr, kv_indices, kv_last_len, o, lse, sm_scale),
            lambda: dict(q=q, cache=cache, kv_indptr=kv_indptr,
                         kv_indices=kv_indices, kv_last_len=kv_last_len,
                         o=o, lse=lse, sm_scale=sm_scale))
        return o, lse

    def decode(self, q, cache, dense_kv_indptr, dense_kv_indices,
               kv_last_len, sparse_kv_indptr=None, sparse_kv_indices=None,
               o=None, lse=None, sm_scale=None, stream=None, layer=None):
        """One sparse decode step as one op: the indexer, then attend over
        the sparse CSR it wrote (kv_last_len is each row's, as for the dense
        CSR: the selection keeps the last block last). Refused, before
        anything is written, for a flow whose selection may drop the tokens
        the causal mask relies on (the manifest's `decode_refusal`, naming
        reserved_eos or q) and for bad input (every argument
        is checked before the indexer runs; `layer` selects the slice of
        per-layer parameters). Returns (o, lse, sparse_kv_indptr,
        sparse_kv_indices); an MLA flow's o is the view of the latent's
        first kv_lora_rank channels (its values)."""
        cache = self._pools(cache)
        if self._attend is None:
            raise NotImplementedError(
                f"{self.name}: this {self.manifest.backend} build has no "
                "attend step (the GPU back end emits it only for the shapes its "
                "kernels support, docs/gpu.md \"Attention\")")
        check_decode_manifest(self.manifest)
        params = self.layer_params(layer)
        try:
            if sparse_kv_indptr is None:
                sparse_kv_indptr = torch.zeros_like(dense_kv_indptr)
            if sparse_kv_indices is None:
                sparse_kv_indices = torch.zeros_like(dense_kv_indices)
            elif sparse_kv_indices.dim() == 1 and \
                    sparse_kv_indices.numel() > dense_kv_indices.numel():
                sparse_kv_indices = \
                    sparse_kv_indices[:dense_kv_indices.numel()]
            o, lse, sm_scale = self._attend_outputs(q, o, lse, sm_scale)
        except AttributeError as err:
            self._explain(err, dict(q=q, dense_kv_indptr=dense_kv_indptr,
                                    dense_kv_indices=dense_kv_indices,
                                    sparse_kv_indices=sparse_kv_indices))
        self._run(stream, q, lambda: self._call_decode(
            self.decode_op, self._raw_decode, q, cache, params,
            dense_kv_indptr, dense_kv_indices, sparse_kv_indptr,
            sparse_kv_indices, kv_last_len, o, lse, sm_scale),
            lambda: dict(q=q, cache=cache, dense_kv_indptr=dense_kv_indptr,
                         dense_kv_indices=dense_kv_indices,
                         sparse_kv_indptr=sparse_kv_indptr,
                         sparse_kv_indices=sparse_kv_indices,
                         kv_last_len=kv_last_len, o=o, lse=lse,
                         sm_scale=sm_scale))
        if self.manifest.is_mla:     # the values: the latent's kv_c channels
            o = o[..., :self.manifest.kv_lora_rank]
        return o, lse, sparse_kv_indptr, sparse_kv_indices


def load(manifest_path: str, device: Optional[int] = None,
         params: Optional[Mapping[str, Any]] = None,
         debug: Optional[bool] = None) -> Flow:
    """Load a compiled flow's manifest and define (or extend) its torch ops;
    `params` binds the flow's parameters (see `Flow.bind`); `debug` (default:
    the environment variable VORTEX_DEBUG) checks the GPU guards after every
    step (see `Flow.check`)."""
    return Flow(manifest_path, device, params, debug)
