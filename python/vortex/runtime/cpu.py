"""Run a flow compiled for the CPU, from numpy arrays or torch CPU tensors.

`vortex-compile --target=cpu` leaves `lib<flow>.so` and
`<flow>.manifest.json` (docs/manifest.md). The shared object exports one C
function per step (`_mlir_ciface_<flow>_indexer`, `_mlir_ciface_<flow>_cache`,
`_mlir_ciface_<flow>_attend`)
taking a pointer to an MLIR memref descriptor per argument, in the
manifest's argument order (docs/contract.md). `CPUFlow` loads it and runs a
step on named tensors after the shared validator (`validate.validate_step`)
has checked them; `compile_flow` is the numpy convenience API on top:

    >>> import vortex
    >>> flow = vortex.compile_flow("examples/block_sparse_attention.mlir")
    >>> flow.cache_step(cache, block_ids)                  # in place
    >>> indptr, indices = flow.indexer(q, cache, dense_indptr, dense_indices)

Nothing is written to a caller's array when validation fails.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..compiler import driver as compiler
from .attention import (check_attend_values, check_decode_manifest,
                        default_scale)
from ..compiler.driver import VortexCompileError, find_tool
from .manifest import Manifest, budget
from .validate import (check_csr, check_slot_map, check_slots,
                       resolve_symbols, validate_step)

__all__ = ["CPUFlow", "CompiledFlow", "FlowInfo", "VortexCompileError",
           "compile_flow", "find_tool", "load"]

# ---------------------------------------------------------------------------
# Memref descriptors
# ---------------------------------------------------------------------------

_descriptor_types: Dict[int, type] = {}


def _descriptor_type(rank: int) -> type:
    if rank not in _descriptor_types:
        class Descriptor(ctypes.Structure):
            _fields_ = [("allocated", ctypes.c_void_p),
                        ("aligned", ctypes.c_void_p),
                        ("offset", ctypes.c_int64),
                        ("sizes", ctypes.c_int64 * rank),
                        ("strides", ctypes.c_int64 * rank)]
        Descriptor.__name__ = f"MemRefDescriptor{rank}D"
        _descriptor_types[rank] = Descriptor
    return _descriptor_types[rank]


def _data_ptr(t: Any) -> int:
    f = getattr(t, "data_ptr", None)
    return int(f()) if callable(f) else int(t.ctypes.data)


def _descriptor(t: Any):
    """A descriptor of a contiguous row-major array (validated before)."""
    shape = [int(x) for x in t.shape]
    desc = _descriptor_type(len(shape))()
    ptr = _data_ptr(t)
    desc.allocated = ptr
    desc.aligned = ptr
    desc.offset = 0
    # Row-major strides in elements, whatever the array reports for axes of
    # extent 0 or 1.
    stride = 1
    for i in reversed(range(len(shape))):
        desc.sizes[i] = shape[i]
        desc.strides[i] = stride
        stride *= max(shape[i], 1)
    return desc


# ---------------------------------------------------------------------------
# The CPU runtime
# ---------------------------------------------------------------------------

class CPUFlow:
    """A CPU manifest with its shared object loaded."""

    def __init__(self, manifest: Manifest):
        if manifest.backend != "cpu":
            raise ValueError(f"{manifest.flow}: a {manifest.backend} "
                             "manifest, not a CPU one")
        self.manifest = manifest
        self.flow = manifest.flow
        self.so_path = manifest.artifact("library")
        if not self.so_path or not os.path.isfile(self.so_path):
            raise VortexCompileError(f"{manifest.flow}: the manifest's "
                                     f"library {self.so_path} does not exist")
        self._lib = ctypes.CDLL(self.so_path)
        self._steps = {}
        for step, spec in manifest.steps.items():
            if len(spec.kernels) != 1:
                raise ValueError(f"{manifest.flow}: step {step!r} of a CPU "
                                 "manifest must have one host function")
            kernel = spec.kernels[0]
            try:
                fn = getattr(self._lib, kernel.kernel)
            except AttributeError as err:
                raise VortexCompileError(f"{self.so_path} does not export "
                                         f"{kernel.kernel}") from err
            fn.restype = None
            self._steps[step] = (fn, kernel.buffers())

    def run_step(self, step: str, tensors: Mapping[str, Any]) -> Dict[str, int]:
        """Validate `tensors` (by manifest name) and run the step in place.
        Returns the symbols."""
        symbols = validate_step(self.manifest, step, tensors, ("cpu", None))
        fn, params = self._steps[step]
        descs = [_descriptor(tensors[n]) for n in params]
        fn(*[ctypes.byref(d) for d in descs])
        return symbols


def load(manifest_path: str) -> CPUFlow:
    return CPUFlow(Manifest.from_file(manifest_path))


# ---------------------------------------------------------------------------
# The numpy API
# ---------------------------------------------------------------------------

@dataclass
class FlowInfo:
    """What the numpy API tells about a compiled flow (from its manifest)."""
    name: str
    config: Dict[str, object]
    fields: List[Tuple[str, int, int]]
    indexer_writes: List[str] = field(default_factory=list)
    cache_writes: List[str] = field(default_factory=list)


_INT32_MIN, _INT32_MAX = -2 ** 31, 2 ** 31 - 1


def _as_index_array(name: str, value) -> np.ndarray:
    """A 1-D integer array as a C-contiguous int32 copy."""
    try:
        arr = np.asarray(value)
    except Exception as err:  # noqa: BLE001
        raise ValueError(f"{name}: not an array ({err})") from err
    if arr.ndim == 0 and arr.dtype != object:
        raise ValueError(f"{name}: expected a 1-D integer array, got a scalar")
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # np.asarray([]) is float64
    if arr.dtype.kind not in "iu":
        raise ValueError(
            f"{name}: expected an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(
            f"{name}: expected a 1-D array, got shape {tuple(arr.shape)}")
    if arr.size and (arr.min() < _INT32_MIN or arr.max() > _INT32_MAX):
        raise ValueError(f"{name}: values do not fit in int32")
    return np.array(arr, dtype=np.int32, order="C", copy=True)


class CompiledFlow:
    """A flow compiled for the CPU, run on numpy float32 arrays: `.config`,
    `.fields`, `indexer`, `cache_step`. Obtain it from `compile_flow`."""

    def __init__(self, manifest_path: str):
        self.manifest_path = manifest_path
        self.runtime = load(manifest_path)
        m = self.manifest = self.runtime.manifest
        self.name = m.flow
        self.config: Dict[str, object] = dict(m.config)
        self.fields: List[Tuple[str, int, int]] = m.fields
        self.so_path = self.runtime.so_path
        self.workdir = m.base_dir
        fields = {f[0] for f in self.fields}
        self.info = FlowInfo(
            m.flow, self.config, self.fields,
            [w for w in m.steps["indexer"].writes if w in fields],
            [w for w in m.steps["cache"].writes if w in fields])

    def __repr__(self):
        return (f"CompiledFlow(@{self.name}, fields={self.fields}, "
                f"so={self.so_path!r})")

    @property
    def cache_names(self) -> List[str]:
        """Cache tensors in ABI order: k, v, then the declared fields."""
        return self.manifest.cache_names()

    def cache_shapes(self, num_blocks: int) -> Dict[str, Tuple[int, ...]]:
        return {n: s for n, (s, _) in
                self.manifest.cache_shapes(num_blocks).items()}

    def allocate_cache(self, num_blocks: int) -> Dict[str, np.ndarray]:
        """Zero-filled float32 cache tensors for a pool of `num_blocks`."""
        return {n: np.zeros(s, np.float32)
                for n, s in self.cache_shapes(num_blocks).items()}

    def budget(self, n: int) -> int:
        """The selection budget of a row of n blocks."""
        return budget(self.config, n)

    def _cache_args(self, cache) -> Dict[str, Any]:
        names = self.cache_names
        if not isinstance(cache, Mapping):
            raise ValueError("cache: expected a dict name -> numpy array "
                             f"with keys {names}")
        if self.manifest.is_mla and "latent" in cache:
            # vortex_torch's name of an MLA flow's one pool: it is k, and
            # v is the same array (docs/design.md, "MLA flows").
            if "k" in cache or "v" in cache:
                raise ValueError("cache: an MLA flow takes its pool as "
                                 "'latent' or as 'k' and 'v', not both")
            cache = dict(cache)
            cache["k"] = cache["v"] = cache.pop("latent")
        extra = [n for n in cache if n not in names]
        if extra:
            raise ValueError(f"cache: unknown keys {extra} (expected {names})")
        missing = [n for n in names if n not in cache]
        if missing:
            raise ValueError(f"cache: missing {missing} (expected keys {names})")
        for n in names:
            if not isinstance(cache[n], np.ndarray):
                raise ValueError(
                    f"cache[{n!r}]: expected a numpy.ndarray (float32, "
                    "C-contiguous, updated in place), got "
                    f"{type(cache[n]).__name__}")
        return dict(cache)

    def _check_q(self, q) -> np.ndarray:
        try:
            arr = np.asarray(q)
        except Exception as err:  # noqa: BLE001
            raise ValueError(f"q: not an array ({err})") from err
        if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
            raise ValueError(f"q: expected a real floating-point array, got "
                             f"dtype {arr.dtype}")
        return np.array(arr, dtype=np.float32, order="C", copy=True)

    def indexer(self, q, cache: Mapping[str, np.ndarray], dense_kv_indptr,
                dense_kv_indices) -> Tuple[np.ndarray, np.ndarray]:
        """One decode step. Returns `(sparse_kv_indptr, sparse_kv_indices)`
        (int32; the indices cut to `sparse_kv_indptr[-1]`). Fields the
        indexer saves are updated in place in `cache`."""
        args = self._cache_args(cache)
        qa = self._check_q(q)
        indptr = _as_index_array("dense_kv_indptr", dense_kv_indptr)
        indices = _as_index_array("dense_kv_indices", dense_kv_indices)
        total = indices.shape[0]
        sparse_indptr = np.zeros(indptr.shape[0], np.int32)
        sparse_indices = np.zeros(total, np.int32)
        args.update(q=qa, dense_kv_indptr=indptr, dense_kv_indices=indices,
                    sparse_kv_indptr=sparse_indptr,
                    sparse_kv_indices=sparse_indices)
        # Shapes first (names the argument), then the CSR values.
        m = self.manifest
        resolve_symbols(m, args, list(m.steps["indexer"].args))
        check_csr(indptr, indices, num_blocks=int(args["k"].shape[0]),
                  rows=qa.shape[0], unique=bool(self.info.indexer_writes))
        self.runtime.run_step("indexer", args)
        end = int(sparse_indptr[-1])
        if (sparse_indptr[0] != 0 or (np.diff(sparse_indptr) < 0).any()
                or end > total):
            raise RuntimeError(
                f"flow @{self.name}: the compiled indexer returned a malformed "
                f"sparse CSR {sparse_indptr.tolist()}")
        return sparse_indptr, sparse_indices[:end].copy()

    def _param_args(self, step: str,
                    params: Optional[Mapping[str, np.ndarray]]
                    ) -> Dict[str, np.ndarray]:
        """The step's parameters from `params` (float32 `[1, r, c]` arrays;
        vortex.runtime.params.BoundParams checks them when bound). Raises
        ValueError naming a missing one."""
        names = [n for n in self.manifest.steps[step].args
                 if self.manifest.tensors[n].role == "parameter"]
        given = dict(params or {})
        missing = [n for n in names if n not in given]
        if missing:
            raise ValueError(f"params: missing {missing} (the flow's "
                             "parameters; the torch Flow binds them with "
                             "flow.bind)")
        return {n: np.ascontiguousarray(given[n], dtype=np.float32)
                for n in names}

    def cache_step(self, cache: Mapping[str, np.ndarray], block_ids,
                   slot_of_ptr=None,
                   params: Optional[Mapping[str, np.ndarray]] = None) -> None:
        """Summarize the completed blocks `block_ids` into the fields of
        `cache`, in place. A flow with slotted fields also takes
        `slot_of_ptr`, the slot of every pool block (docs/contract.md,
        "Slotted fields"): a block whose slot is < 0 writes nothing. A flow
        with parameters takes them as `params` (name -> array)."""
        args = self._cache_args(cache)
        args.update(self._param_args("cache", params))
        ids = _as_index_array("block_ids", block_ids)
        num_blocks = int(np.asarray(args["k"]).shape[0])
        if ids.size:
            bad = (ids < 0) | (ids >= num_blocks)
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(
                    f"block_ids: block id {ids[i]} at position {i} is out of "
                    f"range [0, {num_blocks}) (num_blocks = cache['k'].shape[0])")
        args["block_ids"] = ids
        slotted = check_slot_map(self.manifest, slot_of_ptr is not None)
        if slotted is not None:
            slots = _as_index_array("slot_of_ptr", slot_of_ptr)
            if slots.shape != (num_blocks,):
                raise ValueError(f"slot_of_ptr: expected shape ({num_blocks},) "
                                 f"(num_blocks = cache['k'].shape[0]), got "
                                 f"{tuple(slots.shape)}")
            check_slots(slots, ids, int(np.asarray(args[slotted]).shape[0]),
                        f"cache[{slotted!r}]")
            args["slot_of_ptr"] = slots
        self.runtime.run_step("cache", args)


    # -- attention (docs/contract.md "Attention") ---------------------------
    def attend(self, q, cache: Mapping[str, np.ndarray], kv_indptr,
               kv_indices, kv_last_len, o: Optional[np.ndarray] = None,
               lse: Optional[np.ndarray] = None,
               sm_scale: Optional[float] = None
               ) -> Tuple[np.ndarray, np.ndarray]:
        """Decode attention of q `[rows, T x G, D]` over the k/v blocks of a
        CSR (`kv_indices` may be longer than `kv_indptr[-1]`), the last
        entry of row r holding `kv_last_len[r]` tokens. Returns (o, lse):
        o like q, lse `[rows, T x G]` (natural log), float32; written into
        `o` and `lse` when given. `sm_scale` defaults to 1/sqrt(D)."""
        if "attend" not in self.manifest.steps:
            raise NotImplementedError(f"flow @{self.name}: the manifest has "
                                      "no attend step (recompile the flow)")
        args = self._cache_args(cache)
        qa = self._check_q(q)
        indptr = _as_index_array("kv_indptr", kv_indptr)
        indices = _as_index_array("kv_indices", kv_indices)
        last = _as_index_array("kv_last_len", kv_last_len)
        rows = qa.shape[0] if qa.ndim == 3 else 0
        o = np.zeros(qa.shape, np.float32) if o is None else o
        lse = np.zeros(qa.shape[:2], np.float32) if lse is None else lse
        scale = default_scale(int(self.config["head_dim"])) \
            if sm_scale is None else sm_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise ValueError(f"sm_scale: expected a float, got "
                             f"{type(scale).__name__}")
        args.update(q=qa, kv_indptr=indptr, kv_indices=indices,
                    kv_last_len=last, o=o, lse=lse,
                    sm_scale=np.array([scale], np.float32))
        m = self.manifest
        resolve_symbols(m, args, list(m.steps["attend"].args))
        check_attend_values(indptr, indices, last, int(args["k"].shape[0]),
                            int(self.config["block_size"]), rows)
        self.runtime.run_step("attend", args)
        return o, lse

    def decode(self, q, cache: Mapping[str, np.ndarray], dense_kv_indptr,
               dense_kv_indices, kv_last_len,
               sm_scale: Optional[float] = None):
        """The indexer, then attend over the sparse CSR it wrote. Returns
        (o, lse, sparse_kv_indptr, sparse_kv_indices); an MLA flow's o has
        the latent's first kv_lora_rank channels (its values). Refused before
        anything runs for a flow whose selection may drop the row's last
        tokens (the manifest's `decode_refusal`, naming reserved_eos or q)."""
        check_decode_manifest(self.manifest)
        qa = self._check_q(q)
        indptr = _as_index_array("dense_kv_indptr", dense_kv_indptr)
        last = _as_index_array("kv_last_len", kv_last_len)
        num_blocks = int(np.asarray(self._cache_args(cache)["k"]).shape[0])
        indices = _as_index_array("dense_kv_indices", dense_kv_indices)
        check_attend_values(indptr, indices, last, num_blocks,
                            int(self.config["block_size"]),
                            qa.shape[0] if qa.ndim == 3 else 0,
                            "dense_kv_indptr", "dense_kv_indices")
        sp_indptr, sp_indices = self.indexer(qa, cache, indptr, indices)
        o, lse = self.attend(qa, cache, sp_indptr, sp_indices, last,
                             sm_scale=sm_scale)
        if self.manifest.is_mla:    # the values: the latent's kv_c channels
            o = np.ascontiguousarray(o[..., :self.manifest.kv_lora_rank])
        return o, lse, sp_indptr, sp_indices


def compile_flow(source: str, workdir: Optional[str] = None,
                 name: Optional[str] = None) -> CompiledFlow:
    """Compile a vortex flow for the CPU (`vortex-compile --target=cpu`) and
    load it.

    `source` is a path to a `.mlir` file or the IR text itself. `workdir`
    receives the artifacts (default: the compile cache). `name` picks the
    flow when the module holds several. Raises `VortexCompileError` with the
    compiler's diagnostics."""
    return CompiledFlow(compiler.compile(source, "cpu", out_dir=workdir,
                                         flow=name))
