"""The compiled-flow manifest (docs/manifest.md).

`vortex-compile` writes `<flow>.manifest.json` next to the artifacts of a
flow (a shared object for the CPU, PTX and a cubin for a GPU). It is the
only thing the Python side reads about a compiled flow: its tensors (name,
role, dtype, symbolic shape), the symbols that size them, the steps
(indexer, cache and the optional attend) with their argument order and the
tensors each writes, and the kernels each step launches. This module
parses and checks it and holds the rules every runtime shares: the
selection budget, grid sizes, the attend step's split count. Step
arguments are validated against it by `vortex.runtime.validate`. It
imports neither torch nor a GPU library.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional,
                    Sequence, Tuple, Union)

__all__ = [
    "ATTEND_SPLIT_SLOTS", "LAUNCH_VALUES", "MANIFEST_VERSION", "DTYPES",
    "INT4_SCALES", "OPTIONAL_STEPS", "POOLS", "SYMBOLS", "Dim",
    "KernelSpec", "Manifest",
    "ParamSpec", "StepSpec", "TensorSpec", "budget", "grid_size",
    "kv_splits", "selected_count",
]

MANIFEST_VERSION = 2

# Manifest dtype -> (torch dtype name, numpy dtype name or None, bytes).
DTYPES: Dict[str, Tuple[str, Optional[str], int]] = {
    "bf16": ("bfloat16", None, 2),
    "f16": ("float16", "float16", 2),
    "f32": ("float32", "float32", 4),
    "f64": ("float64", "float64", 8),
    "f8E4M3FN": ("float8_e4m3fn", None, 1),
    "f8E5M2": ("float8_e5m2", None, 1),
    "i8": ("int8", "int8", 1),
    "u8": ("uint8", "uint8", 1),
    "i32": ("int32", "int32", 4),
    "i64": ("int64", "int64", 8),
}
BY_TORCH = {"torch." + t: n for n, (t, _, _) in DTYPES.items()}
BY_NUMPY = {np_: n for n, (_, np_, _) in DTYPES.items() if np_}

# The cache tensors the engine owns (the rest are the flow's fields): the
# pools and, for a packed int4 pool, its scales (docs/contract.md "INT4 KV").
INT4_SCALES = ("k_int4_scale", "v_int4_scale")
POOLS = ("k", "v") + INT4_SCALES

SYMBOLS = ("rows", "total", "num_blocks", "num_new", "num_slots")
# Steps a back end may leave out (docs/manifest.md): `attend` (decode
# attention over a CSR), which the GPU back end writes only for the shapes
# its kernels support.
OPTIONAL_STEPS = ("attend",)
# Launch values: scalar parameters that are neither a symbol nor a manifest
# constant, chosen by the runtime at each launch from the shapes
# (`launch_values`). `kv_splits` is FlowABI.h's `kKvSplits`.
LAUNCH_VALUES = ("kv_splits",)
_ROLES = ("input", "cache", "output", "scratch", "parameter", "status")
# Roles the runtime owns: never step arguments.
_INTERNAL = ("scratch", "status")
# `row_splits`: rows x kv_splits CTAs (x the row, y the split; the attend
# step's split kernel, docs/gpu.md "Attention").
_GRIDS = ("persistent", "rows", "row_splits", "items", "fixed", "host")
# The attend step's partial-result slots (rows x kv_splits at most): the
# leading extent of its two scratch tensors, `kAttendSplitSlots` in
# lib/Conversion/VortexToGPU/KernelBuilder.h.
ATTEND_SPLIT_SLOTS = 2048
# The most splits of a row (docs/gpu.md "Attention").
_MAX_KV_SPLITS = 32
INT32_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------------------
# The budget rule (docs/contract.md): the one definition on the Python side.
# ---------------------------------------------------------------------------

def budget_rule(fixed: int, ratio: float, n):
    """max(fixed, int(n * ratio)) for an int n, or elementwise for a torch
    tensor of row lengths (int(n * ratio) in double precision, truncated)."""
    if isinstance(n, int):
        return max(fixed, int(n * ratio))
    return (n.double() * ratio).floor().long().clamp_min(fixed)


def budget(config: Mapping[str, Any], n):
    """Blocks a row of n blocks keeps when it needs selection:
    max(topk_val + reserved_bos + reserved_eos, int(n * topk_ratio)).
    The float64 numpy reference (vortex.semantics.reference) keeps its own copy
    on purpose: it is the independent model the compiled code is checked
    against."""
    fixed = (int(config["topk_val"]) + int(config["reserved_bos"])
             + int(config["reserved_eos"]))
    return budget_rule(fixed, float(config["topk_ratio"]), n)


def selected_count(config: Mapping[str, Any], n: int) -> int:
    """Entries of a row of n blocks in the sparse CSR."""
    return min(n, budget(config, n))


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
    # The status tensor: (tensor, bit) of each guard flag, from the manifest.
    flags: Tuple[Tuple[str, int], ...] = ()

    @property
    def torch_dtype(self) -> str:
        return "torch." + DTYPES[self.dtype][0]

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype][2]

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

    def format_shape(self) -> str:
        return "[" + ", ".join(str(d) for d in self.shape) + "]"


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
    # May be launched programmatically dependent on the launch before it:
    # the kernel waits (griddepcontrol) before touching memory.
    pdl: bool = False
    # Adjacent launches of one non-empty choice are alternatives computing
    # the same thing: exactly one of them is launched (`choose_launches`).
    choice: str = ""

    def buffers(self) -> List[str]:
        return [p.name for p in self.params if p.kind == "buffer"]

    def is_selection(self) -> bool:
        """Writes the sparse CSR (the top-k part of a step)."""
        return bool({"sparse_kv_indptr", "sparse_kv_indices"} &
                    set(self.writes))


@dataclass(frozen=True)
class StepSpec:
    name: str
    args: Tuple[str, ...]          # call order
    writes: Tuple[str, ...]        # the arguments the step writes
    kernels: Tuple[KernelSpec, ...]


def _fail(where: str, what: str) -> ValueError:
    return ValueError(f"{where}: {what}")


# Launch limits of every CUDA chip we target (sm_80 .. sm_100).
_MAX_THREADS = 1024
_MAX_SHARED = 227 * 1024
_MAX_CTAS_PER_SM = 32


def _bounded(where: str, what: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or \
            not lo <= value <= hi:
        raise _fail(where, f"{what} = {value!r} is not an integer in "
                    f"[{lo}, {hi}]")
    return value


class Manifest:
    """A parsed and checked `<flow>.manifest.json` (docs/manifest.md)."""

    def __init__(self, data: Mapping[str, Any], base_dir: str = "."):
        self.data = data
        self.base_dir = base_dir
        where = "manifest"
        try:
            version = data["version"]
            self.flow: str = str(data["flow"])
            self.backend: str = str(data["backend"])
            self.target: str = str(data.get("target", ""))
            raw_artifacts = dict(data.get("artifacts", {}))
            raw_cubins = raw_artifacts.pop("cubins", None)
            self.artifacts: Dict[str, str] = {
                k: str(v) for k, v in raw_artifacts.items()}
            self.source_hash: str = str(data.get("source_hash", ""))
            self.config: Dict[str, Any] = dict(data["config"])
            raw_symbols = dict(data["symbols"])
            raw_tensors = data["tensors"]
            raw_steps = data["steps"]
        except (KeyError, TypeError, ValueError) as err:
            raise _fail(where, f"missing or malformed key {err}") from err
        if version != MANIFEST_VERSION:
            raise _fail(where, f"unsupported version {version!r} (this "
                        f"runtime reads version {MANIFEST_VERSION}; "
                        "recompile the flow)")
        if self.backend not in ("cpu", "cuda"):
            raise _fail(where, f"unknown backend {self.backend!r}")
        if not re.fullmatch(r"[A-Za-z_][\w]*", self.flow):
            raise _fail(where, f"flow name {self.flow!r} is not an identifier")
        for key in ("block_size", "head_dim", "group_size", "topk_val",
                    "topk_ratio", "reserved_bos", "reserved_eos"):
            if key not in self.config:
                raise _fail(where, f"config has no {key!r}")
        for key in ("block_size", "head_dim", "group_size"):
            _bounded(where, f"config {key}", self.config[key], 1, INT32_MAX)
        for key in ("topk_val", "reserved_bos", "reserved_eos"):
            _bounded(where, f"config {key}", self.config[key], 0, INT32_MAX)
        if "kv_lora_rank" in self.config or "rope_dim" in self.config:
            for key in ("kv_lora_rank", "rope_dim"):
                _bounded(where, f"config {key}", self.config.get(key), 1,
                         INT32_MAX)
            if (self.config["kv_lora_rank"] + self.config["rope_dim"]
                    != self.config["head_dim"]):
                raise _fail(where, "config kv_lora_rank + rope_dim is not "
                            "head_dim (an MLA flow's latent width)")
        ratio = self.config["topk_ratio"]
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) \
                or not 0.0 <= float(ratio) <= 1.0:
            raise _fail(where, f"config topk_ratio = {ratio!r} is not in "
                        "[0, 1]")
        if (self.config["topk_val"] + self.config["reserved_bos"] +
                self.config["reserved_eos"]) > INT32_MAX:
            raise _fail(where, "config topk_val + reserved_bos + "
                        "reserved_eos overflows i32")

        self.tensors: Dict[str, TensorSpec] = {}
        for name, t in raw_tensors.items():
            self.tensors[name] = self._parse_tensor(f"{where}: tensor {name!r}",
                                                    name, t)
        self.symbols: Dict[str, str] = {}
        for sym, tensor in raw_symbols.items():
            if sym not in SYMBOLS or tensor not in self.tensors:
                raise _fail(where, f"symbol {sym!r} defined by unknown "
                            f"tensor {tensor!r}")
            self.symbols[sym] = str(tensor)
        self.steps: Dict[str, StepSpec] = {}
        for step in ("indexer", "cache") + OPTIONAL_STEPS:
            if step not in raw_steps:
                if step in OPTIONAL_STEPS:
                    continue
                raise _fail(where, f"no {step!r} step")
            self.steps[step] = self._parse_step(f"{where}: step {step!r}",
                                                step, raw_steps[step])
        # Why decode (the indexer, then attend over its selection) would not
        # be exact for this flow; "" when it is (docs/contract.md).
        refusal = raw_steps.get("attend", {}).get("decode_refusal", "") \
            if isinstance(raw_steps.get("attend"), dict) else ""
        if not isinstance(refusal, str):
            raise _fail(where, f"attend decode_refusal must be a string, got "
                        f"{refusal!r}")
        self.decode_refusal: str = refusal
        self.kernel_cubins = self._parse_kernel_cubins(where, raw_cubins)

    def _parse_kernel_cubins(self, where: str,
                             raw: Any) -> Dict[str, str]:
        """`artifacts.cubins` (vortex-compile --kernel-cache): a cubin per
        kernel, kernel name -> file name next to the manifest."""
        if raw is None:
            return {}
        where = f"{where}: artifacts.cubins"
        if not isinstance(raw, dict):
            raise _fail(where, "is not an object of kernel -> file name")
        out: Dict[str, str] = {}
        for kernel, name in raw.items():
            if not isinstance(name, str) or not name or \
                    os.path.basename(name) != name or name in (".", ".."):
                raise _fail(where, f"kernel {kernel!r}: {name!r} is not a "
                            "file name")
            out[str(kernel)] = name
        launched = {k.kernel for s in self.steps.values() for k in s.kernels}
        missing = sorted(launched - out.keys())
        if missing:
            raise _fail(where, "has no cubin for the kernels "
                        + ", ".join(missing))
        return out

    def _parse_tensor(self, where: str, name: str, t: Any) -> TensorSpec:
        try:
            role, dtype, shape = t["role"], t["dtype"], list(t["shape"])
        except (KeyError, TypeError) as err:
            raise _fail(where, f"missing {err}") from err
        if role not in _ROLES:
            raise _fail(where, f"unknown role {role!r}")
        if dtype not in DTYPES:
            raise _fail(where, f"unknown dtype {dtype!r}")
        try:
            dims = tuple(Dim.parse(x) for x in shape)
        except ValueError as err:
            raise _fail(where, str(err)) from err
        for d in dims:
            if d.symbol is not None and d.symbol not in SYMBOLS:
                raise _fail(where, f"unknown symbol {d.symbol!r} in its shape")
            if d.symbol is None and not 1 <= d.const <= INT32_MAX:
                raise _fail(where, f"extent {d.const} is not in "
                            f"[1, {INT32_MAX}]")
            if d.symbol is not None and d.const > INT32_MAX:
                raise _fail(where, f"extent {d} is out of range")
        flags = self._parse_flags(where, t.get("flags")) \
            if role == "status" else ()
        return TensorSpec(name, role, dtype, dims, flags)

    @staticmethod
    def _parse_flags(where: str, raw: Any) -> Tuple[Tuple[str, int], ...]:
        """The guard flags of a status tensor: distinct single bits."""
        if not isinstance(raw, dict) or not raw:
            raise _fail(where, "a status tensor needs its 'flags' "
                        "(tensor name -> bit)")
        flags, seen = [], 0
        for name, bit in raw.items():
            if (not isinstance(bit, int) or isinstance(bit, bool) or
                    bit <= 0 or bit > INT32_MAX or bit & (bit - 1) or
                    bit & seen):
                raise _fail(where, f"flag {name!r}: {bit!r} is not a "
                            "distinct single bit")
            seen |= bit
            flags.append((str(name), bit))
        return tuple(sorted(flags, key=lambda f: f[1]))

    def _parse_step(self, where: str, step: str, raw: Any) -> StepSpec:
        try:
            args = tuple(str(a) for a in raw["args"])
            writes = tuple(str(a) for a in raw["writes"])
            kernels = tuple(self._parse_kernel(f"{where} kernel #{i}", k)
                            for i, k in enumerate(raw["kernels"]))
        except (KeyError, TypeError) as err:
            raise _fail(where, f"missing or malformed key {err}") from err
        for a in args + writes:
            if a not in self.tensors:
                raise _fail(where, f"unknown tensor {a!r}")
            if self.tensors[a].role in _INTERNAL:
                raise _fail(where, f"{self.tensors[a].role} tensor {a!r} is "
                            "an argument")
        if len(set(args)) != len(args):
            raise _fail(where, "an argument repeats")
        for w in writes:
            if w not in args:
                raise _fail(where, f"writes {w!r}, which is not an argument")
        # A choice's members are adjacent: split, each run would launch.
        ended = set()
        for i, k in enumerate(kernels):
            before = kernels[i - 1].choice if i else ""
            if before and before != k.choice:
                ended.add(before)
            if k.choice in ended:
                raise _fail(where, f"the launches of choice {k.choice!r} are "
                            "not adjacent")
        for k in kernels:
            for t in k.writes:
                if self.tensors[t].role not in _INTERNAL and t not in writes:
                    raise _fail(where, f"kernel {k.kernel} writes {t!r}, "
                                "which the step does not declare")
        return StepSpec(step, args, writes, kernels)

    def _parse_kernel(self, where: str, k: Mapping[str, Any]) -> KernelSpec:
        try:
            name = str(k["kernel"])
            grid = dict(k["grid"])
            block = tuple(int(x) for x in k.get("block", (1, 1, 1)))
            shared = int(k.get("shared_bytes", 0))
            raw_params = list(k["params"])
        except (KeyError, TypeError, ValueError) as err:
            raise _fail(where, f"missing or malformed key {err}") from err
        where = f"{where} ({name})"
        if not 1 <= len(block) <= 3 or any(b < 1 for b in block):
            raise _fail(where, f"bad block {list(block)}")
        block = tuple(list(block) + [1] * (3 - len(block)))
        if math.prod(block) > _MAX_THREADS:
            raise _fail(where, f"block {list(block)} has more than "
                        f"{_MAX_THREADS} threads")
        if not 0 <= shared <= _MAX_SHARED:
            raise _fail(where, f"shared_bytes {shared} is not in "
                        f"[0, {_MAX_SHARED}]")
        kind = grid.get("kind")
        if kind not in _GRIDS:
            raise _fail(where, f"unknown grid kind {kind!r}")
        if (kind == "host") != (self.backend == "cpu"):
            raise _fail(where, f"grid kind {kind!r} on backend "
                        f"{self.backend!r}")
        # A zero or absurd launch value would skip a kernel (its outputs
        # then hold garbage) or fail at launch: refuse it here, by name.
        if kind == "persistent":
            grid.setdefault("ctas_per_sm", 1)
            _bounded(where, "grid ctas_per_sm", grid["ctas_per_sm"], 1,
                     _MAX_CTAS_PER_SM)
        elif kind == "items":
            if grid.get("of") not in SYMBOLS:
                raise _fail(where, "grid 'items' of unknown symbol "
                            f"{grid.get('of')!r}")
            grid.setdefault("per_cta", 1)
            _bounded(where, "grid per_cta", grid["per_cta"], 1, _MAX_THREADS)
        elif kind == "fixed":
            _bounded(where, "grid x", grid.get("x", 0), 1, INT32_MAX)
        for axis in ("y", "z"):
            if axis in grid:
                _bounded(where, f"grid {axis}", grid[axis], 1, 65535)
        params = tuple(self._parse_param(where, p) for p in raw_params)
        if kind == "row_splits":
            # The y extent is the launch's kv_splits: the kernel must take
            # it, and no fixed y may contradict it.
            if "y" in grid:
                raise _fail(where, "grid 'row_splits' with a fixed y (its y "
                            "is the launch's kv_splits)")
            if not any(p.kind == "scalar" and p.name == "kv_splits"
                       and p.value is None for p in params):
                raise _fail(where, "grid 'row_splits' of a kernel without "
                            "the scalar param 'kv_splits'")
        for p in params:
            if p.name in LAUNCH_VALUES and p.dtype != "i32":
                raise _fail(where, f"scalar {p.name!r} must be i32, not "
                            f"{p.dtype!r}")
        reads = tuple(str(x) for x in k.get("reads", ()))
        writes = tuple(str(x) for x in k.get("writes", ()))
        for t in reads + writes:
            if t not in self.tensors:
                raise _fail(where, f"reads/writes unknown tensor {t!r}")
        pdl = k.get("pdl", False)
        if not isinstance(pdl, bool):
            raise _fail(where, f"pdl must be true or false, got {pdl!r}")
        if pdl and self.backend != "cuda":
            raise _fail(where, f"pdl on backend {self.backend!r}")
        choice = k.get("choice", "")
        if not isinstance(choice, str):
            raise _fail(where, f"choice must be a string, got {choice!r}")
        if choice and kind not in ("rows", "items", "fixed"):
            raise _fail(where, f"choice {choice!r} on a {kind!r} grid (only "
                        "rows, items and fixed grids are chosen by size)")
        return KernelSpec(name, grid, block, shared, params, reads, writes,
                          pdl, choice)

    def _parse_param(self, where: str, p: Any) -> ParamSpec:
        try:
            pname, pkind = str(p["name"]), p["kind"]
        except (KeyError, TypeError) as err:
            raise _fail(where, f"malformed param {p!r}") from err
        if pkind == "buffer":
            if pname not in self.tensors:
                raise _fail(where, f"buffer param {pname!r} is not a "
                            "manifest tensor")
            return ParamSpec(pname, "buffer")
        if pkind == "scalar":
            dtype = p.get("dtype", "i32")
            if dtype not in ("i32", "i64"):
                raise _fail(where, f"scalar {pname!r} of dtype {dtype!r}")
            value = p.get("value")
            if value is None and pname not in SYMBOLS + LAUNCH_VALUES:
                raise _fail(where, f"scalar param {pname!r} is neither a "
                            "symbol, a constant nor a launch value "
                            f"({', '.join(LAUNCH_VALUES)})")
            return ParamSpec(pname, "scalar", dtype,
                             None if value is None else int(value))
        raise _fail(where, f"param {pname!r} of unknown kind {pkind!r}")

    @staticmethod
    def from_file(path: str) -> "Manifest":
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as err:
            raise ValueError(f"manifest {path}: {err}") from err
        return Manifest(data, os.path.dirname(os.path.abspath(path)))

    def artifact(self, kind: str) -> Optional[str]:
        """Absolute path of an artifact ("library", "ptx", "cubin")."""
        name = self.artifacts.get(kind)
        return os.path.join(self.base_dir, name) if name else None

    def kernel_cubin(self, kernel: str) -> Optional[str]:
        """Absolute path of `kernel`'s own cubin (`artifacts.cubins`)."""
        name = self.kernel_cubins.get(kernel)
        return os.path.join(self.base_dir, name) if name else None

    # -- queries ------------------------------------------------------------
    @property
    def fields(self) -> List[Tuple[str, int, int]]:
        """The declared fields (name, r, c) in declaration order."""
        out = []
        for n in self.steps["cache"].args:
            t = self.tensors[n]
            if t.role == "cache" and n not in POOLS:
                out.append((n, t.shape[1].const, t.shape[2].const))
        return out

    @property
    def is_mla(self) -> bool:
        """An MLA flow: k is the latent [kv_c | k_pe], v the same pool."""
        return bool(self.config.get("kv_lora_rank"))

    @property
    def kv_lora_rank(self) -> int:
        return int(self.config.get("kv_lora_rank", 0))

    def cache_names(self) -> List[str]:
        """k, v and the fields, in ABI order."""
        return [n for n in self.steps["cache"].args
                if self.tensors[n].role == "cache"]

    def cache_shapes(self, num_blocks: int, num_slots: Optional[int] = None
                     ) -> Dict[str, Tuple[Tuple[int, ...], str]]:
        """{name: (shape, manifest dtype)} of the cache tensors; slotted
        fields have `num_slots` rows (default: num_blocks)."""
        sym = {"num_blocks": num_blocks,
               "num_slots": num_blocks if num_slots is None else num_slots}
        return {n: (self.tensors[n].extents(sym), self.tensors[n].dtype)
                for n in self.cache_names()}

    def kernels(self, step: str,
                select: Optional[Union[Iterable[str],
                                       Callable[[KernelSpec], bool]]] = None
                ) -> List[KernelSpec]:
        """The step's kernels in launch order, optionally a subset: `select`
        is a collection of kernel names (each must exist) or a predicate."""
        if step not in self.steps:
            raise ValueError(f"unknown step {step!r}")
        ks = list(self.steps[step].kernels)
        if select is None:
            return ks
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
        return [k.kernel for k in self.steps["indexer"].kernels
                if not k.is_selection()]

    def describe_status(self, words: Sequence[int]) -> Optional[str]:
        """A sentence for the status words of this flow's kernels, or None
        when no guard failed."""
        name = self.status_tensor()
        flags = self.tensors[name].flags if name else ()
        return describe_status(words, flags)

    def status_tensor(self) -> Optional[str]:
        """The guards' status buffer (role `status`), if the kernels have
        one (docs/gpu.md "Guards")."""
        for n, t in self.tensors.items():
            if t.role == "status":
                return n
        return None

    def used_tensors(self, kernels: Sequence[KernelSpec]) -> List[str]:
        seen: List[str] = []
        for k in kernels:
            for n in k.buffers() + list(k.reads) + list(k.writes):
                if n not in seen:
                    seen.append(n)
        return seen

    def op_name(self, step: str) -> str:
        """The torch op of a step: stable across processes and shared by the
        CPU and the GPU build of one flow (same source hash)."""
        return f"{self.flow}_{self.source_hash[:12] or 'nohash'}_{step}"

    def schema(self, step: str) -> str:
        """The torch schema of a step: exactly the written tensors are
        mutable (k and v never are)."""
        s = self.steps[step]
        parts = []
        aliases = iter("abcdefghijklmnopqrstuvwxyz")
        for a in s.args:
            if a in s.writes:
                parts.append(f"Tensor({next(aliases)}!) {a}")
            else:
                parts.append(f"Tensor {a}")
        return "(" + ", ".join(parts) + ") -> ()"


# What a failed guard means, by the tensor its flag names (the bits come from
# the manifest's status tensor, FlowABI.h `getStatusFlags`; docs/gpu.md
# "Guards"). Word 0 of the status ORs the flags, word 1 holds an offending
# value, word 2 its position, word 3 counts the bad entries.
_STATUS_MEANING = {
    "dense_kv_indices": "a block id outside [0, num_blocks) (num_blocks = "
                        "k.shape[0]); the block was scored as block 0 and "
                        "nothing was written by its id",
    "block_ids": "a block id >= num_blocks (num_blocks = k.shape[0]); it "
                 "was skipped",
    "dense_kv_indptr": "not a CSR over dense_kv_indices (it must start at 0, "
                       "not decrease and end at len(dense_kv_indices)); rows "
                       "were clamped into range and a row whose selection "
                       "did not fit was not written",
}


def describe_status(words: Sequence[int],
                    flags: Sequence[Tuple[str, int]]) -> Optional[str]:
    """A sentence for the status words, given the manifest's (tensor, bit)
    flags; None when no guard failed."""
    flag_word, value, pos, count = (list(int(w) for w in words) + [0] * 4)[:4]
    if not flag_word:
        return None
    parts = [f"{name}: {_STATUS_MEANING.get(name, 'bad entries')}"
             for name, bit in flags if flag_word & bit]
    unknown = flag_word & ~sum(bit for _, bit in flags)
    if unknown:
        parts.append(f"unknown status flags {unknown:#x}")
    return (f"{count} bad entr{'y' if count == 1 else 'ies'} since the last "
            f"check (e.g. value {value} at position {pos}). " +
            "; ".join(parts))


def grid_size(spec: KernelSpec, symbols: Mapping[str, int], num_sms: int,
              max_active: Optional[int] = None) -> Tuple[int, int, int]:
    """The launch grid. A persistent grid is `ctas_per_sm` CTAs per
    multiprocessor, capped by how many of this kernel's CTAs fit on one
    (`max_active`): every CTA of a persistent grid must be resident."""
    g = spec.grid
    kind = g["kind"]
    if kind == "persistent":
        per_sm = int(g["ctas_per_sm"])
        if max_active is not None and max_active > 0:
            per_sm = min(per_sm, int(max_active))
        x = num_sms * per_sm
    elif kind == "rows":
        x = symbols["rows"]
    elif kind == "row_splits":
        return (int(symbols["rows"]), int(symbols["kv_splits"]),
                int(g.get("z", 1)))
    elif kind == "items":
        x = -(-symbols[g["of"]] // int(g["per_cta"]))
    elif kind == "host":
        x = 1
    else:  # fixed
        x = int(g["x"])
    return (int(x), int(g.get("y", 1)), int(g.get("z", 1)))


def kv_splits(rows: int, mean_len: int, num_sms: int,
              slots: int = ATTEND_SPLIT_SLOTS) -> int:
    """The attend step's split count (docs/gpu.md "Attention"; FlowABI.h
    `kKvSplits`), the one definition of the rule: from the row count and
    the mean row length in blocks (both known from the shapes, so the
    choice never reads the device). About one wave of the split kernel (2
    CTAs an SM), each split at least 8 blocks, rows x splits within the
    partials' `slots`, at most 32; 1 from 2 rows an SM on."""
    rows, mean_len, num_sms = int(rows), int(mean_len), int(num_sms)
    if rows <= 0:
        return 1
    return max(1, min(2 * num_sms // rows, mean_len // 8, slots // rows,
                      _MAX_KV_SPLITS))


def choose_launches(specs: Sequence[KernelSpec],
                    fits: Callable[[KernelSpec], bool]) -> List[KernelSpec]:
    """The launches of `specs`: each group of adjacent launches of one
    choice becomes its first member whose grid `fits` on the device in one
    wave, else its last."""
    out: List[KernelSpec] = []
    i = 0
    while i < len(specs):
        j = i + 1
        while (specs[i].choice and j < len(specs)
               and specs[j].choice == specs[i].choice):
            j += 1
        group = specs[i:j]
        out.append(next((s for s in group[:-1] if fits(s)), group[-1]))
        i = j
    return out


def buffer_bytes(manifest: Manifest, name: str,
                 symbols: Mapping[str, int]) -> int:
    t = manifest.tensors[name]
    return math.prod(t.extents(symbols)) * t.itemsize
