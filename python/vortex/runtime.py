"""Run a compiled vortex flow on an NVIDIA GPU from PyTorch (docs/gpu.md).

The GPU machine has no MLIR: `vortex-compile` leaves a PTX file, a cubin and
a JSON manifest per flow, and this module is all that runs there. It is pure
Python over ctypes on the CUDA driver (`libcuda.so.1`) and torch tensors:

    >>> from vortex import runtime
    >>> flow = runtime.load("out/gqa_quest_sparse_attention.manifest.json")
    >>> flow.cache_step(cache, block_ids)            # fields of new blocks
    >>> flow.indexer(q, cache, dense_kv_indptr, dense_kv_indices,
    ...              sparse_kv_indptr, sparse_kv_indices)

Both steps launch the step's kernels, in manifest order, on
`torch.cuda.current_stream()` (so they can be captured in a CUDA graph) and
return without synchronizing. Every tensor is checked first against the
manifest (presence, CUDA device, dtype, contiguity, shape with the symbols
`rows`, `total`, `num_blocks`, `num_new` bound consistently) and a
`ValueError` naming the argument is raised before anything is launched.
No check reads device memory (no host synchronization): the CSR *values*
are the caller's responsibility (`check_csr` does it on demand).

At load, the manifest's parameter lists are checked against the PTX's
`.entry` signatures (a buffer is five 64-bit parameters, an i32 scalar one
32-bit parameter), the cubin is loaded (the PTX, JIT-compiled by the driver,
if the cubin is missing or does not load), and each kernel's static shared
memory, registers and spills are read. A launch requests as *dynamic*
shared memory the part of the manifest's `shared_bytes` that the kernel
does not declare statically (the top-k kernel's workgroup buffers are
static), raising the kernel's dynamic limit past 48 KiB when needed.
Scratch tensors are allocated once per shape and reused. `kernels=` (names
or a predicate) launches a subset of a step, e.g. `flow.score_kernels()`.

The module does not import torch (nor touch the GPU) until `load` is
called: the manifest parsing, symbol resolution, parameter packing and
validation are pure Python and are unit-tested on duck-typed fake tensors
(`test/Python/gpu_runtime_*.py`). A tensor here is anything with `shape`,
`dtype` (compared through `str(dtype)`, e.g. "torch.bfloat16"), `device`
(`.type`, `.index`), `is_contiguous()`, `numel()`, `data_ptr()` and
`element_size()`.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import re
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional,
                    Sequence, Tuple, Union)

__all__ = [
    "CompiledFlowGPU", "CudaDriverError", "Dim", "KernelSpec", "Manifest",
    "ParamSpec", "TensorSpec", "buffer_bytes", "check_bound", "check_csr",
    "check_ptx", "dynamic_smem", "expected_widths", "ptx_signatures",
    "check_overlap", "grid_size", "load", "pack_params", "param_values",
    "required_symbols", "resolve_symbols", "validate_tensors",
    "MANIFEST_DTYPES", "SYMBOLS",
]

# Manifest dtype -> str(torch dtype), element size in bytes.
MANIFEST_DTYPES: Dict[str, Tuple[str, int]] = {
    "bf16": ("torch.bfloat16", 2),
    "f16": ("torch.float16", 2),
    "f32": ("torch.float32", 4),
    "f64": ("torch.float64", 8),
    "f8E4M3FN": ("torch.float8_e4m3fn", 1),
    "f8E5M2": ("torch.float8_e5m2", 1),
    "i8": ("torch.int8", 1),
    "i32": ("torch.int32", 4),
    "i64": ("torch.int64", 8),
}

# The scalar symbols of docs/gpu.md, and the tensor that defines each (the
# tensor whose shape binds the symbol first; a mismatch elsewhere is then
# reported against the other tensor).
SYMBOLS = ("rows", "total", "num_blocks", "num_new")
_SYMBOL_SOURCES = ("dense_kv_indptr", "dense_kv_indices", "k", "v",
                   "block_ids")
_ROLES = ("input", "cache", "output", "scratch")
_INT32_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------------------
# Manifest
# ---------------------------------------------------------------------------

_DIM_RE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:([+\-*])\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Dim:
    """One extent of a manifest shape: a constant (`symbol is None`) or
    `symbol op const` with op in '+', '-', '*' (e.g. "rows+1")."""
    symbol: Optional[str]
    op: str = "+"
    const: int = 0

    @staticmethod
    def parse(x: Union[int, str]) -> "Dim":
        if isinstance(x, bool):
            raise ValueError(f"bad shape entry {x!r}")
        if isinstance(x, int):
            if x < 0:
                raise ValueError(f"negative extent {x}")
            return Dim(None, "+", x)
        if isinstance(x, str):
            s = x.strip()
            if s.isdigit():
                return Dim(None, "+", int(s))
            m = _DIM_RE.match(s)
            if m:
                op = m.group(2) or "+"
                c = int(m.group(3)) if m.group(3) else (1 if op == "*" else 0)
                if op == "*" and c == 0:
                    raise ValueError(f"bad shape entry {x!r}")
                return Dim(m.group(1), op, c)
        raise ValueError(f"bad shape entry {x!r}")

    def value(self, symbols: Mapping[str, int]) -> int:
        if self.symbol is None:
            return self.const
        v = symbols[self.symbol]
        if self.op == "+":
            return v + self.const
        if self.op == "-":
            return v - self.const
        return v * self.const

    def solve(self, extent: int) -> Optional[int]:
        """The symbol value giving `extent`, or None if there is none."""
        if self.op == "+":
            v = extent - self.const
        elif self.op == "-":
            v = extent + self.const
        else:
            if extent % self.const:
                return None
            v = extent // self.const
        return v if v >= 0 else None

    def __str__(self) -> str:
        if self.symbol is None:
            return str(self.const)
        if self.op == "*" and self.const == 1 or (
                self.op in "+-" and self.const == 0):
            return self.symbol
        return f"{self.symbol}{self.op}{self.const}"


@dataclass(frozen=True)
class TensorSpec:
    name: str
    role: str
    dtype: str
    shape: Tuple[Dim, ...]

    @property
    def torch_dtype(self) -> str:
        return MANIFEST_DTYPES[self.dtype][0]

    @property
    def itemsize(self) -> int:
        return MANIFEST_DTYPES[self.dtype][1]

    def extents(self, symbols: Mapping[str, int]) -> Tuple[int, ...]:
        return tuple(d.value(symbols) for d in self.shape)

    def inner_numel(self) -> int:
        """Elements per leading index (the static inner extents)."""
        n = 1
        for d in self.shape[1:]:
            if d.symbol is not None:
                raise ValueError(f"{self.name}: symbolic inner extent {d}")
            n *= d.const
        return n


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str                      # "buffer" | "scalar"
    dtype: str = "i32"             # scalars: "i32" (default) or "i64"
    value: Optional[int] = None    # scalars with a constant value


@dataclass(frozen=True)
class KernelSpec:
    kernel: str
    grid: Dict[str, Any]
    block: Tuple[int, int, int]
    shared_bytes: int
    params: Tuple[ParamSpec, ...]
    reads: Tuple[str, ...]
    writes: Tuple[str, ...]

    def buffers(self) -> List[str]:
        return [p.name for p in self.params if p.kind == "buffer"]

    def is_selection(self) -> bool:
        """Writes the sparse CSR (the top-k / planner part of a step); by
        the manifest's `writes`, or, when a kernel lists none, by a name
        ending in "topk"."""
        if self.writes:
            return bool({"sparse_kv_indptr", "sparse_kv_indices"} &
                        set(self.writes))
        return self.kernel.lower().endswith("topk")


class Manifest:
    """A parsed and checked `<flow>.manifest.json` (docs/gpu.md)."""

    def __init__(self, data: Mapping[str, Any], base_dir: str = "."):
        self.data = data
        self.base_dir = base_dir
        where = "manifest"
        try:
            version = data["version"]
            self.flow: str = str(data["flow"])
            self.chip: str = str(data.get("chip", ""))
            self.ptx: Optional[str] = data.get("ptx")
            self.cubin: Optional[str] = data.get("cubin")
            self.config: Dict[str, Any] = dict(data.get("config", {}))
            raw_tensors = data["tensors"]
            raw_steps = data["steps"]
        except (KeyError, TypeError) as err:
            raise ValueError(f"{where}: missing or malformed key {err}") from err
        if version != 1:
            raise ValueError(f"{where}: unsupported version {version!r}")
        if not self.ptx and not self.cubin:
            raise ValueError(f"{where}: neither 'ptx' nor 'cubin' is given")

        self.tensors: Dict[str, TensorSpec] = {}
        for name, t in raw_tensors.items():
            try:
                role, dtype, shape = t["role"], t["dtype"], t["shape"]
            except (KeyError, TypeError) as err:
                raise ValueError(f"{where}: tensor {name!r}: missing {err}") from err
            if role not in _ROLES:
                raise ValueError(f"{where}: tensor {name!r}: unknown role {role!r}")
            if dtype not in MANIFEST_DTYPES:
                raise ValueError(f"{where}: tensor {name!r}: unknown dtype {dtype!r}")
            try:
                dims = tuple(Dim.parse(x) for x in shape)
            except ValueError as err:
                raise ValueError(f"{where}: tensor {name!r}: {err}") from err
            for d in dims:
                if d.symbol is not None and d.symbol not in SYMBOLS:
                    raise ValueError(f"{where}: tensor {name!r}: unknown symbol "
                                     f"{d.symbol!r} in its shape")
            self.tensors[name] = TensorSpec(name, role, dtype, dims)

        self.steps: Dict[str, List[KernelSpec]] = {}
        for step, kernels in raw_steps.items():
            specs = []
            for i, k in enumerate(kernels):
                specs.append(self._parse_kernel(f"{where}: step {step!r} "
                                                f"kernel #{i}", k))
            self.steps[step] = specs
        for step in ("indexer", "cache"):
            if step not in self.steps:
                raise ValueError(f"{where}: no {step!r} step")

    def _parse_kernel(self, where: str, k: Mapping[str, Any]) -> KernelSpec:
        try:
            name = str(k["kernel"])
            grid = dict(k["grid"])
            block = tuple(int(x) for x in k["block"])
            shared = int(k.get("shared_bytes", 0))
            raw_params = k["params"]
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{where}: missing or malformed key {err}") from err
        where = f"{where} ({name})"
        if len(block) < 1 or len(block) > 3 or any(b < 1 for b in block):
            raise ValueError(f"{where}: bad block {list(block)}")
        block = tuple(list(block) + [1] * (3 - len(block)))
        if shared < 0:
            raise ValueError(f"{where}: negative shared_bytes")
        kind = grid.get("kind")
        if kind == "persistent":
            grid.setdefault("ctas_per_sm", 1)
        elif kind == "rows":
            pass
        elif kind == "items":
            if grid.get("of") not in SYMBOLS:
                raise ValueError(f"{where}: grid 'items' of unknown symbol "
                                 f"{grid.get('of')!r}")
            grid.setdefault("per_cta", 1)
            if int(grid["per_cta"]) < 1:
                raise ValueError(f"{where}: grid per_cta < 1")
        elif kind == "fixed":
            if int(grid.get("x", 0)) < 1:
                raise ValueError(f"{where}: grid 'fixed' needs x >= 1")
        else:
            raise ValueError(f"{where}: unknown grid kind {kind!r}")
        params = []
        for p in raw_params:
            try:
                pname, pkind = str(p["name"]), p["kind"]
            except (KeyError, TypeError) as err:
                raise ValueError(f"{where}: malformed param {p!r}") from err
            if pkind == "buffer":
                if pname not in self.tensors:
                    raise ValueError(f"{where}: buffer param {pname!r} is not "
                                     "a manifest tensor")
                params.append(ParamSpec(pname, "buffer"))
            elif pkind == "scalar":
                dtype = p.get("dtype", "i32")
                if dtype not in ("i32", "i64"):
                    raise ValueError(f"{where}: scalar {pname!r} of dtype "
                                     f"{dtype!r}")
                value = p.get("value")
                if value is None and pname not in SYMBOLS:
                    raise ValueError(f"{where}: scalar param {pname!r} is "
                                     "neither a symbol nor a constant")
                params.append(ParamSpec(pname, "scalar", dtype,
                                        None if value is None else int(value)))
            else:
                raise ValueError(f"{where}: param {pname!r} of unknown kind "
                                 f"{pkind!r}")
        reads = tuple(str(x) for x in k.get("reads", ()))
        writes = tuple(str(x) for x in k.get("writes", ()))
        for t in reads + writes:
            if t not in self.tensors:
                raise ValueError(f"{where}: reads/writes unknown tensor {t!r}")
        return KernelSpec(name, grid, block, shared, tuple(params), reads,
                          writes)

    @staticmethod
    def from_file(path: str) -> "Manifest":
        with open(path) as f:
            data = json.load(f)
        return Manifest(data, os.path.dirname(os.path.abspath(path)))

    # -- queries ------------------------------------------------------------
    def kernels(self, step: str,
                select: Optional[Union[Iterable[str], Callable[[KernelSpec], bool]]]
                = None) -> List[KernelSpec]:
        """The step's kernels in launch order, optionally a subset: `select`
        is a collection of kernel names (each must exist) or a predicate."""
        if step not in self.steps:
            raise ValueError(f"unknown step {step!r}")
        ks = self.steps[step]
        if select is None:
            return list(ks)
        if callable(select):
            return [k for k in ks if select(k)]
        names = list(select)
        known = {k.kernel for k in ks}
        for n in names:
            if n not in known:
                raise ValueError(f"step {step!r} has no kernel {n!r} "
                                 f"(has {sorted(known)})")
        return [k for k in ks if k.kernel in set(names)]

    def score_kernels(self) -> List[str]:
        """Names of the indexer kernels that do not write the selection."""
        return [k.kernel for k in self.steps["indexer"] if not k.is_selection()]

    def used_tensors(self, kernels: Sequence[KernelSpec]) -> List[str]:
        seen: List[str] = []
        for k in kernels:
            for n in k.buffers() + list(k.reads) + list(k.writes):
                if n not in seen:
                    seen.append(n)
        return seen

    def cache_tensors(self) -> List[str]:
        return [n for n, t in self.tensors.items() if t.role == "cache"]

    def cache_shapes(self, num_blocks: int) -> Dict[str, Tuple[Tuple[int, ...], str]]:
        """{name: (shape, manifest dtype)} of the cache tensors for a pool
        of num_blocks blocks."""
        sym = {"num_blocks": num_blocks}
        return {n: (t.extents(sym), t.dtype) for n, t in self.tensors.items()
                if t.role == "cache"}


# ---------------------------------------------------------------------------
# Validation and symbol resolution (pure logic)
# ---------------------------------------------------------------------------

def _dtype_str(t: Any) -> str:
    return str(getattr(t, "dtype", None))


def _device_of(t: Any) -> Tuple[str, Optional[int]]:
    dev = getattr(t, "device", None)
    if dev is None:
        return ("?", None)
    typ = getattr(dev, "type", None)
    if typ is None:
        s = str(dev)
        typ, _, idx = s.partition(":")
        return (typ, int(idx) if idx.isdigit() else None)
    return (typ, getattr(dev, "index", None))


def _is_tensor_like(t: Any) -> bool:
    return all(hasattr(t, a) for a in ("shape", "dtype", "device",
                                       "is_contiguous", "data_ptr", "numel"))


def _elsize(t: Any, spec: TensorSpec) -> int:
    f = getattr(t, "element_size", None)
    return int(f()) if callable(f) else spec.itemsize


def resolve_symbols(manifest: Manifest, tensors: Mapping[str, Any],
                    names: Optional[Sequence[str]] = None) -> Dict[str, int]:
    """Bind rows / total / num_blocks / num_new from the tensors' shapes and
    check every listed tensor's shape against the manifest.

    Symbols are bound by the first tensor (dense_kv_indptr, dense_kv_indices,
    k, v, block_ids, then the others in manifest order) that carries them;
    a tensor that disagrees raises ValueError naming it. Only tensors named
    in `names` (default: all present in `tensors`) are considered; rank
    must already be right (validate_tensors checks it first)."""
    if names is None:
        names = [n for n in manifest.tensors if n in tensors]
    order = [n for n in _SYMBOL_SOURCES if n in names] + \
            [n for n in names if n not in _SYMBOL_SOURCES]
    symbols: Dict[str, int] = {}
    source: Dict[str, str] = {}
    for n in order:
        spec = manifest.tensors[n]
        shape = tuple(int(x) for x in tensors[n].shape)
        if len(shape) != len(spec.shape):
            raise ValueError(f"{n}: rank {len(shape)}, expected "
                             f"{len(spec.shape)} ({_fmt_shape(spec)})")
        for axis, (d, e) in enumerate(zip(spec.shape, shape)):
            if d.symbol is not None and d.symbol not in symbols:
                v = d.solve(e)
                if v is None:
                    raise ValueError(f"{n}: extent {e} of axis {axis} cannot "
                                     f"be {d} ({_fmt_shape(spec)})")
                symbols[d.symbol] = v
                source[d.symbol] = n
            want = d.value(symbols)
            if want != e:
                raise ValueError(
                    f"{n}: shape {list(shape)} does not match "
                    f"{_fmt_shape(spec)} with {_fmt_syms(symbols, source)} "
                    f"(axis {axis}: {e} != {want})")
    return symbols


def _fmt_shape(spec: TensorSpec) -> str:
    return "[" + ", ".join(str(d) for d in spec.shape) + "]"


def _fmt_syms(symbols: Mapping[str, int],
              source: Optional[Mapping[str, str]] = None) -> str:
    source = source or {}
    return ", ".join(f"{k}={v}" + (f" (from {source[k]})" if k in source
                                   else "")
                     for k, v in symbols.items()) or "no symbols"


def validate_tensors(manifest: Manifest, tensors: Mapping[str, Any],
                     names: Sequence[str], device_index: Optional[int] = None,
                     scratch_ok_missing: bool = True) -> Dict[str, int]:
    """Check presence, type, CUDA device, dtype, contiguity, rank and shape of
    the tensors `names` (scratch tensors may be absent) and that no tensor a
    listed kernel writes overlaps another one. Returns the symbols."""
    present = []
    for n in names:
        spec = manifest.tensors[n]
        t = tensors.get(n)
        if t is None:
            if spec.role == "scratch" and scratch_ok_missing:
                continue
            raise ValueError(f"{n}: missing (the flow's {spec.role} tensor "
                             f"{_fmt_shape(spec)} {spec.dtype})")
        if not _is_tensor_like(t):
            raise ValueError(f"{n}: expected a torch tensor, got "
                             f"{type(t).__name__}")
        typ, idx = _device_of(t)
        if typ != "cuda":
            raise ValueError(f"{n}: must be on a CUDA device, is on {typ}")
        if device_index is not None and idx is not None and idx != device_index:
            raise ValueError(f"{n}: on cuda:{idx}, the flow is loaded on "
                             f"cuda:{device_index}")
        if _dtype_str(t) != spec.torch_dtype:
            raise ValueError(f"{n}: dtype {_dtype_str(t)}, expected "
                             f"{spec.torch_dtype} ({spec.dtype})")
        if not t.is_contiguous():
            raise ValueError(f"{n}: must be contiguous")
        if len(tuple(t.shape)) != len(spec.shape):
            raise ValueError(f"{n}: rank {len(tuple(t.shape))}, expected "
                             f"{len(spec.shape)} ({_fmt_shape(spec)})")
        present.append(n)
    symbols = resolve_symbols(manifest, tensors, present)
    for s, v in symbols.items():
        if v > _INT32_MAX:
            raise ValueError(f"{s} = {v} does not fit the kernels' i32 scalars")
    return symbols


def required_symbols(specs: Sequence[KernelSpec]) -> List[str]:
    """Symbols the kernels' scalars and grids need."""
    need: List[str] = []
    for s in specs:
        names = [p.name for p in s.params
                 if p.kind == "scalar" and p.value is None]
        if s.grid["kind"] == "rows":
            names.append("rows")
        elif s.grid["kind"] == "items":
            names.append(s.grid["of"])
        for n in names:
            if n not in need:
                need.append(n)
    return need


_SYMBOL_HINT = {"rows": "dense_kv_indptr", "total": "dense_kv_indices",
                "num_blocks": "a cache tensor", "num_new": "block_ids"}


def check_bound(specs: Sequence[KernelSpec], symbols: Mapping[str, int]) -> None:
    for n in required_symbols(specs):
        if n not in symbols:
            raise ValueError(f"{_SYMBOL_HINT.get(n, n)}: needed to define the "
                             f"symbol {n!r} used by the kernels")


def check_overlap(manifest: Manifest, tensors: Mapping[str, Any],
                  written: Iterable[str], names: Iterable[str]) -> None:
    """A written tensor must not share memory with another used tensor."""
    spans = {}
    for n in names:
        t = tensors.get(n)
        if t is None or int(t.numel()) == 0:
            continue
        lo = int(t.data_ptr())
        spans[n] = (lo, lo + int(t.numel()) * _elsize(t, manifest.tensors[n]))
    for w in [n for n in spans if n in set(written)]:
        if w not in spans:
            continue
        a0, a1 = spans[w]
        for n, (b0, b1) in spans.items():
            if n != w and a0 < b1 and b0 < a1:
                raise ValueError(f"{w}: shares memory with {n} (the step "
                                 f"writes {w})")


def check_csr(indptr, indices, num_blocks: Optional[int] = None,
              unique: bool = False) -> None:
    """Check CSR values (synchronizes: reads the tensors on the host):
    indptr starts at 0, is non-decreasing, ends <= len(indices); block ids
    in [0, num_blocks); optionally no repeated id. Raises ValueError."""
    ip = [int(x) for x in indptr.tolist()]
    if not ip or ip[0] != 0:
        raise ValueError("dense_kv_indptr: must start at 0")
    if any(b < a for a, b in zip(ip, ip[1:])):
        raise ValueError("dense_kv_indptr: must be non-decreasing")
    n = int(indices.numel())
    if ip[-1] > n:
        raise ValueError(f"dense_kv_indptr: ends at {ip[-1]} > "
                         f"len(dense_kv_indices) = {n}")
    used = indices[:ip[-1]]
    if used.numel():
        lo, hi = int(used.min()), int(used.max())
        if lo < 0 or (num_blocks is not None and hi >= num_blocks):
            raise ValueError(f"dense_kv_indices: block ids in [{lo}, {hi}], "
                             f"pool has {num_blocks} blocks")
        if unique and int(used.unique().numel()) != int(used.numel()):
            raise ValueError("dense_kv_indices: a block id repeats (the flow "
                             "saves into a field)")


# ---------------------------------------------------------------------------
# Grid and parameters (pure logic)
# ---------------------------------------------------------------------------

def grid_size(spec: KernelSpec, symbols: Mapping[str, int],
              num_sms: int,
              max_active: Optional[int] = None) -> Tuple[int, int, int]:
    """The launch grid. A persistent grid is `ctas_per_sm` CTAs per
    multiprocessor, capped by how many of this kernel's CTAs fit on one
    (`max_active`, from its registers and shared memory): every CTA of a
    persistent grid must be resident, or the late ones run as a tail."""
    g = spec.grid
    kind = g["kind"]
    if kind == "persistent":
        per_sm = int(g["ctas_per_sm"])
        if max_active is not None and max_active > 0:
            per_sm = min(per_sm, int(max_active))
        x = num_sms * per_sm
    elif kind == "rows":
        x = symbols["rows"]
    elif kind == "items":
        x = -(-symbols[g["of"]] // int(g["per_cta"]))
    else:  # fixed
        x = int(g["x"])
    return (int(x), int(g.get("y", 1)), int(g.get("z", 1)))


# ctypes type per scalar dtype
_SCALAR_CTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64}


def param_values(spec: KernelSpec, buffers: Mapping[str, Tuple[int, int]],
                 symbols: Mapping[str, int]) -> List[Any]:
    """The kernel's parameters as ctypes scalars, in order: a buffer
    (ptr, numel) -> c_void_p(ptr), c_void_p(ptr), c_int64(0),
    c_int64(numel), c_int64(1); a scalar -> c_int32 (or c_int64) of its
    symbol's value or constant."""
    out: List[Any] = []
    for p in spec.params:
        if p.kind == "buffer":
            ptr, numel = buffers[p.name]
            out += [ctypes.c_void_p(ptr), ctypes.c_void_p(ptr),
                    ctypes.c_int64(0), ctypes.c_int64(numel),
                    ctypes.c_int64(1)]
        else:
            v = p.value if p.value is not None else symbols[p.name]
            ct = _SCALAR_CTYPES[p.dtype]
            if p.dtype == "i32" and not (-2 ** 31 <= v <= _INT32_MAX):
                raise ValueError(f"scalar {p.name} = {v} overflows i32")
            out.append(ct(v))
    return out


def pack_params(values: Sequence[Any]) -> Tuple[Any, List[Any]]:
    """The `void **kernelParams` array for cuLaunchKernel: one pointer per
    parameter value. Returns (array, keepalive); keep both alive until the
    launch call returns."""
    arr = (ctypes.c_void_p * max(len(values), 1))()
    for i, v in enumerate(values):
        arr[i] = ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
    return arr, list(values)


def buffer_bytes(manifest: Manifest, name: str,
                 symbols: Mapping[str, int]) -> int:
    t = manifest.tensors[name]
    return math.prod(t.extents(symbols)) * t.itemsize


# ---------------------------------------------------------------------------
# PTX signatures (pure logic): the manifest's parameter lists must match the
# kernels' .entry parameter lists, or a launch would silently misread them.
# ---------------------------------------------------------------------------

_ENTRY_RE = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.S)
_PARAM_RE = re.compile(r"\.param\s+\.([busf])(\d+)\b")


def ptx_signatures(ptx: str) -> Dict[str, List[int]]:
    """{kernel: [bit width of each .param]} of the .entry functions."""
    out = {}
    for m in _ENTRY_RE.finditer(ptx):
        out[m.group(1)] = [int(w) for _, w in _PARAM_RE.findall(m.group(2))]
    return out


def expected_widths(spec: KernelSpec) -> List[int]:
    widths: List[int] = []
    for p in spec.params:
        if p.kind == "buffer":
            widths += [64] * 5
        else:
            widths.append(32 if p.dtype == "i32" else 64)
    return widths


def check_ptx(manifest: Manifest, ptx: str) -> List[str]:
    """Problems between the manifest's kernels and the PTX's entries
    (missing kernel, parameter count or widths)."""
    sigs = ptx_signatures(ptx)
    problems = []
    for step, specs in manifest.steps.items():
        for spec in specs:
            got = sigs.get(spec.kernel)
            if got is None:
                problems.append(f"{step}: kernel {spec.kernel} is not an "
                                ".entry of the PTX")
                continue
            want = expected_widths(spec)
            if got != want:
                problems.append(
                    f"{step}: kernel {spec.kernel} takes {len(got)} "
                    f"parameters of widths {got}, the manifest's params "
                    f"expand to {len(want)}: {want}")
    return problems


# ---------------------------------------------------------------------------
# CUDA driver (ctypes)
# ---------------------------------------------------------------------------

class CudaDriverError(RuntimeError):
    pass


CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_STATIC_SMEM_LIMIT = 48 * 1024


class _Driver:
    """The few libcuda entry points we need, with CUresult checking."""

    _instance: Optional["_Driver"] = None

    def __init__(self, lib: str = "libcuda.so.1"):
        try:
            self.lib = ctypes.CDLL(lib)
        except OSError as err:
            raise CudaDriverError(f"cannot load {lib}: {err}") from err
        L = self.lib
        P, I, U = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
        sig = {
            "cuInit": [U],
            "cuGetErrorName": [I, ctypes.POINTER(ctypes.c_char_p)],
            "cuGetErrorString": [I, ctypes.POINTER(ctypes.c_char_p)],
            "cuCtxGetCurrent": [ctypes.POINTER(P)],
            "cuCtxSetCurrent": [P],
            "cuCtxGetDevice": [ctypes.POINTER(I)],
            "cuDeviceGet": [ctypes.POINTER(I), I],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(P), I],
            "cuModuleLoadData": [ctypes.POINTER(P), P],
            "cuModuleLoadDataEx": [ctypes.POINTER(P), P, U,
                                   ctypes.POINTER(I), ctypes.POINTER(P)],
            "cuModuleGetFunction": [ctypes.POINTER(P), P, ctypes.c_char_p],
            "cuModuleUnload": [P],
            "cuFuncSetAttribute": [P, I, I],
            "cuFuncGetAttribute": [ctypes.POINTER(I), I, P],
            "cuOccupancyMaxActiveBlocksPerMultiprocessor": [
                ctypes.POINTER(I), P, I, ctypes.c_size_t],
            "cuLaunchKernel": [P, U, U, U, U, U, U, U, P,
                               ctypes.POINTER(P), ctypes.POINTER(P)],
        }
        for name, args in sig.items():
            fn = getattr(L, name)
            fn.argtypes = args
            fn.restype = ctypes.c_int
            setattr(self, name, fn)

    @classmethod
    def get(cls) -> "_Driver":
        if cls._instance is None:
            cls._instance = _Driver()
        return cls._instance

    def error_name(self, res: int) -> str:
        s = ctypes.c_char_p()
        if self.cuGetErrorName(res, ctypes.byref(s)) == 0 and s.value:
            name = s.value.decode()
        else:
            name = f"CUresult {res}"
        d = ctypes.c_char_p()
        if self.cuGetErrorString(res, ctypes.byref(d)) == 0 and d.value:
            name += f" ({d.value.decode()})"
        return name

    def check(self, res: int, what: str) -> None:
        if res != 0:
            raise CudaDriverError(f"{what} failed: {self.error_name(res)}")


# ---------------------------------------------------------------------------
# The compiled flow
# ---------------------------------------------------------------------------

@dataclass
class _Kernel:
    spec: KernelSpec
    func: int
    num_regs: int = 0
    max_threads: int = 0
    static_smem: int = 0
    local_bytes: int = 0
    max_active: int = 0  # CTAs of this kernel that fit on one multiprocessor

    @property
    def dynamic_smem(self) -> int:
        """Dynamic shared memory to launch with: the manifest's
        shared_bytes is the kernel's whole shared-memory need, so the part
        the cubin already declares statically (workgroup attributions) is
        not requested again."""
        return dynamic_smem(self.spec.shared_bytes, self.static_smem)


def dynamic_smem(shared_bytes: int, static_smem: int) -> int:
    return max(0, int(shared_bytes) - int(static_smem))


class CompiledFlowGPU:
    """A flow's kernels loaded into torch's CUDA context (see `load`)."""

    def __init__(self, manifest: Manifest, device: Optional[int] = None,
                 prefer: str = "cubin"):
        import torch  # the GPU machine's torch; imported only here
        self._torch = torch
        self.manifest = manifest
        self.flow = manifest.flow
        self.config = manifest.config
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        torch.cuda.init()
        if device is None:
            device = torch.cuda.current_device()
        self.device_index = int(device)
        self.device = torch.device("cuda", self.device_index)
        with torch.cuda.device(self.device_index):
            torch.empty(1, device=self.device)   # make the context current
            drv = self._drv = _Driver.get()
            drv.check(drv.cuInit(0), "cuInit")
            ctx = ctypes.c_void_p()
            drv.check(drv.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
            if not ctx.value:
                dev = ctypes.c_int()
                drv.check(drv.cuDeviceGet(ctypes.byref(dev), self.device_index),
                          "cuDeviceGet")
                drv.check(drv.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                          "cuDevicePrimaryCtxRetain")
                drv.check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            self._ctx = ctx.value
            props = torch.cuda.get_device_properties(self.device_index)
            self.num_sms = int(props.multi_processor_count)
            self.device_name = props.name
            self._check_ptx()
            self._module, self.loaded_from = self._load_module(prefer)
            self._kernels: Dict[str, _Kernel] = {}
            for step in manifest.steps.values():
                for spec in step:
                    if spec.kernel not in self._kernels:
                        self._kernels[spec.kernel] = self._get_function(spec)
        self._scratch: Dict[Tuple[str, Tuple[int, ...]], Any] = {}
        self._packed: Dict[Any, Tuple[Any, List[Any]]] = {}

    # -- loading ------------------------------------------------------------
    def _check_ptx(self) -> None:
        """The PTX (when shipped) must agree with the manifest's params."""
        m = self.manifest
        if not m.ptx:
            return
        path = os.path.join(m.base_dir, m.ptx)
        if not os.path.isfile(path):
            return
        with open(path, errors="replace") as f:
            problems = check_ptx(m, f.read())
        if problems:
            raise RuntimeError(f"{m.flow}: manifest and PTX disagree:\n  "
                               + "\n  ".join(problems))

    def _load_module(self, prefer: str) -> Tuple[int, str]:
        m = self.manifest
        errors = []
        order = ["cubin", "ptx"] if prefer == "cubin" else ["ptx", "cubin"]
        for kind in order:
            fname = m.cubin if kind == "cubin" else m.ptx
            if not fname:
                continue
            path = os.path.join(m.base_dir, fname)
            if not os.path.isfile(path):
                errors.append(f"{kind}: {path} not found")
                continue
            with open(path, "rb") as f:
                image = f.read()
            try:
                if kind == "ptx":
                    return self._load_ptx(image), path
                mod = ctypes.c_void_p()
                buf = ctypes.create_string_buffer(image, len(image))
                self._drv.check(self._drv.cuModuleLoadData(
                    ctypes.byref(mod), ctypes.cast(buf, ctypes.c_void_p)),
                    f"cuModuleLoadData({path})")
                return mod.value, path
            except CudaDriverError as err:
                errors.append(f"{kind}: {err}")
        raise CudaDriverError(f"{m.flow}: could not load a module: "
                              + "; ".join(errors))

    def _load_ptx(self, image: bytes) -> int:
        if not image.endswith(b"\0"):
            image = image + b"\0"
        buf = ctypes.create_string_buffer(image, len(image))
        size = 1 << 16
        err_log = ctypes.create_string_buffer(size)
        opts = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER,
                                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(err_log, ctypes.c_void_p),
                                     ctypes.c_void_p(size))
        mod = ctypes.c_void_p()
        res = self._drv.cuModuleLoadDataEx(ctypes.byref(mod),
                                           ctypes.cast(buf, ctypes.c_void_p),
                                           2, opts, vals)
        if res != 0:
            log = err_log.value.decode(errors="replace").strip()
            raise CudaDriverError(
                f"cuModuleLoadDataEx(PTX) failed: {self._drv.error_name(res)}"
                + (f"\n{log}" if log else ""))
        return mod.value

    def _get_function(self, spec: KernelSpec) -> _Kernel:
        drv = self._drv
        f = ctypes.c_void_p()
        drv.check(drv.cuModuleGetFunction(ctypes.byref(f), self._module,
                                          spec.kernel.encode()),
                  f"cuModuleGetFunction({spec.kernel})")
        k = _Kernel(spec, f.value)

        def attr(a):
            v = ctypes.c_int()
            drv.check(drv.cuFuncGetAttribute(ctypes.byref(v), a, f),
                      f"cuFuncGetAttribute({spec.kernel}, {a})")
            return v.value
        k.max_threads = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        k.num_regs = attr(CU_FUNC_ATTRIBUTE_NUM_REGS)
        k.static_smem = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        k.local_bytes = attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
        threads = spec.block[0] * spec.block[1] * spec.block[2]
        if threads > k.max_threads:
            raise CudaDriverError(
                f"{spec.kernel}: block of {threads} threads exceeds the "
                f"kernel's limit of {k.max_threads} ({k.num_regs} registers)")
        dyn = k.dynamic_smem
        if dyn > 0 and dyn + k.static_smem > _STATIC_SMEM_LIMIT:
            drv.check(drv.cuFuncSetAttribute(
                f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn),
                f"cuFuncSetAttribute({spec.kernel}, max dynamic smem {dyn}, "
                f"static {k.static_smem})")
        active = ctypes.c_int()
        drv.check(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(active), f, threads, dyn),
            f"cuOccupancyMaxActiveBlocksPerMultiprocessor({spec.kernel})")
        k.max_active = active.value
        return k

    def kernel_info(self) -> Dict[str, Dict[str, int]]:
        """Per kernel: registers, static smem, local (spill) bytes, max
        threads per block."""
        return {n: {"num_regs": k.num_regs, "static_smem": k.static_smem,
                    "dynamic_smem": k.dynamic_smem,
                    "local_bytes": k.local_bytes, "max_threads": k.max_threads,
                    "max_active_per_sm": getattr(k, "max_active", 0),
                    "shared_bytes": k.spec.shared_bytes}
                for n, k in self._kernels.items()}

    def kernel_names(self, step: str) -> List[str]:
        return [k.kernel for k in self.manifest.kernels(step)]

    def score_kernels(self) -> List[str]:
        return self.manifest.score_kernels()

    # -- steps --------------------------------------------------------------
    def _scratch_tensor(self, name: str, symbols: Mapping[str, int]):
        spec = self.manifest.tensors[name]
        shape = spec.extents(symbols)
        key = (name, shape)
        t = self._scratch.get(key)
        if t is None:
            t = self._alloc(shape, spec.dtype)
            self._scratch[key] = t
        return t

    def _alloc(self, shape, dtype: str):
        torch = self._torch
        tdtype = getattr(torch, MANIFEST_DTYPES[dtype][0].split(".", 1)[1])
        return torch.empty(shape, dtype=tdtype, device=self.device)

    def _stream_handle(self) -> int:
        return int(self._torch.cuda.current_stream(self.device).cuda_stream)

    def run_step(self, step: str, tensors: Mapping[str, Any],
                 kernels=None, stream=None) -> Dict[str, int]:
        """Validate `tensors` (by manifest name; scratch is supplied here)
        and launch the step's kernels (all, or the subset `kernels`: names
        or a predicate on KernelSpec) in order. Returns the symbols."""
        m = self.manifest
        specs = m.kernels(step, kernels)
        used = m.used_tensors(specs)
        # Validate what the kernels use, plus every other manifest tensor
        # the caller passed (so k/v/fields share num_blocks).
        names = used + [n for n in m.tensors if n in tensors and n not in used]
        symbols = validate_tensors(m, tensors, names, self.device_index)
        check_bound(specs, symbols)
        args = dict(tensors)
        for n in used:
            if m.tensors[n].role == "scratch" and n not in tensors:
                args[n] = self._scratch_tensor(n, symbols)
        written = {w for s in specs for w in s.writes}
        check_overlap(m, args, written, used)
        stream = self._stream_handle() if stream is None else int(stream)
        self._ensure_context()
        for spec in specs:
            kernel = self._kernels.get(spec.kernel) if hasattr(
                self, "_kernels") else None
            grid = grid_size(spec, symbols, self.num_sms,
                             getattr(kernel, "max_active", None))
            if min(grid) <= 0:
                continue
            bufs = {n: (int(args[n].data_ptr()), int(args[n].numel()))
                    for n in spec.buffers()}
            key = (spec.kernel, tuple(sorted(bufs.items())),
                   tuple(sorted(symbols.items())))
            packed = self._packed.get(key)
            if packed is None:
                packed = pack_params(param_values(spec, bufs, symbols))
                if len(self._packed) > 4096:
                    self._packed.clear()
                self._packed[key] = packed
            kern = self._kernels[spec.kernel]
            self._launch(kern.func, grid, spec.block, kern.dynamic_smem,
                         stream, packed[0], spec.kernel)
        return symbols

    def _ensure_context(self) -> None:
        ctx = ctypes.c_void_p()
        self._drv.check(self._drv.cuCtxGetCurrent(ctypes.byref(ctx)),
                        "cuCtxGetCurrent")
        if ctx.value != self._ctx:
            self._drv.check(self._drv.cuCtxSetCurrent(self._ctx),
                            "cuCtxSetCurrent")

    def _launch(self, func, grid, block, shared, stream, params, name) -> None:
        res = self._drv.cuLaunchKernel(
            func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
            shared, ctypes.c_void_p(stream),
            ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p)), None)
        if res != 0:
            raise CudaDriverError(
                f"cuLaunchKernel({name}, grid={tuple(grid)}, "
                f"block={tuple(block)}, shared={shared}) failed: "
                f"{self._drv.error_name(res)}")

    def _cache_args(self, cache: Mapping[str, Any]) -> Dict[str, Any]:
        if not isinstance(cache, Mapping):
            raise ValueError(f"cache: expected a dict of tensors, got "
                             f"{type(cache).__name__}")
        out = {}
        for n, t in cache.items():
            spec = self.manifest.tensors.get(n)
            if spec is None:
                continue          # not used by any kernel of this flow
            if spec.role != "cache":
                raise ValueError(f"cache: {n!r} is not a cache tensor of "
                                 f"{self.flow} (its role is {spec.role})")
            out[n] = t
        return out

    def indexer(self, q, cache: Mapping[str, Any], dense_kv_indptr,
                dense_kv_indices, sparse_kv_indptr, sparse_kv_indices,
                kernels=None, stream=None):
        """One decode step: scores, saves, and the sparse CSR written into
        sparse_kv_indptr / sparse_kv_indices (returned). Launch only the
        kernels named in `kernels` (or matching a predicate) if given."""
        args = self._cache_args(cache)
        args.update(q=q, dense_kv_indptr=dense_kv_indptr,
                    dense_kv_indices=dense_kv_indices,
                    sparse_kv_indptr=sparse_kv_indptr,
                    sparse_kv_indices=sparse_kv_indices)
        args = {n: t for n, t in args.items() if n in self.manifest.tensors}
        self.run_step("indexer", args, kernels, stream)
        return sparse_kv_indptr, sparse_kv_indices

    def cache_step(self, cache: Mapping[str, Any], block_ids, kernels=None,
                   stream=None) -> None:
        """Summarize the completed blocks `block_ids` into the cache fields,
        in place."""
        args = self._cache_args(cache)
        args["block_ids"] = block_ids
        args = {n: t for n, t in args.items() if n in self.manifest.tensors}
        self.run_step("cache", args, kernels, stream)

    def launch_kernel(self, name: str, grid, block, shared: int,
                      args: Sequence[Any], stream=None) -> None:
        """Low-level launch of a kernel of the module: `args` in order, a
        tensor -> its 5 memref parameters (ptr, ptr, 0, numel, 1), an int
        -> i32, a ctypes scalar as is. No validation."""
        if name in self._kernels:
            func = self._kernels[name].func
        else:
            f = ctypes.c_void_p()
            self._drv.check(self._drv.cuModuleGetFunction(
                ctypes.byref(f), self._module, name.encode()),
                f"cuModuleGetFunction({name})")
            func = f.value
        values: List[Any] = []
        for a in args:
            if isinstance(a, ctypes._SimpleCData):
                values.append(a)
            elif isinstance(a, bool) or not isinstance(a, int):
                p, n = int(a.data_ptr()), int(a.numel())
                values += [ctypes.c_void_p(p), ctypes.c_void_p(p),
                           ctypes.c_int64(0), ctypes.c_int64(n),
                           ctypes.c_int64(1)]
            else:
                values.append(ctypes.c_int32(a))
        arr, keep = pack_params(values)
        grid = tuple(list(grid) + [1] * (3 - len(grid)))
        block = tuple(list(block) + [1] * (3 - len(block)))
        stream = self._stream_handle() if stream is None else int(stream)
        self._ensure_context()
        if shared > _STATIC_SMEM_LIMIT:
            self._drv.check(self._drv.cuFuncSetAttribute(
                func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared),
                f"cuFuncSetAttribute({name})")
        self._launch(func, grid, block, shared, int(stream), arr, name)
        del keep

    # -- conveniences -------------------------------------------------------
    def allocate_cache(self, num_blocks: int, names=None, fill=None):
        """Cache tensors for a pool of num_blocks blocks (empty, or filled
        with `fill`), optionally only `names`."""
        out = {}
        for n, (shape, dt) in self.manifest.cache_shapes(num_blocks).items():
            if names is not None and n not in names:
                continue
            t = self._alloc(shape, dt)
            if fill is not None:
                t.fill_(fill)
            out[n] = t
        return out

    def close(self) -> None:
        if getattr(self, "_module", None):
            self._drv.cuModuleUnload(self._module)
            self._module = None


def load(manifest_path: str, device: Optional[int] = None,
         prefer: Optional[str] = None) -> CompiledFlowGPU:
    """Load `<flow>.manifest.json` and its cubin (falling back to the PTX,
    JIT-compiled by the driver) into torch's current CUDA context.
    `prefer="ptx"` (or VORTEX_GPU_PREFER=ptx) tries the PTX first."""
    if prefer is None:
        prefer = os.environ.get("VORTEX_GPU_PREFER", "cubin")
    if prefer not in ("cubin", "ptx"):
        raise ValueError(f"prefer must be 'cubin' or 'ptx', not {prefer!r}")
    return CompiledFlowGPU(Manifest.from_file(manifest_path), device, prefer)
