"""Compile a vortex flow for the CPU and run its two steps from numpy.

The CPU path is

    vortex-opt  --vortex-to-cpu (or the explicit pass list below)
    mlir-translate --mlir-to-llvmir
    llc -O2 -filetype=obj -relocation-model=pic
    cc -shared -lm

and the shared object exports, per flow `F`, `_mlir_ciface_F_indexer` and
`_mlir_ciface_F_cache`, each taking pointers to MLIR memref descriptors
(docs/contract.md gives the argument order and the semantics). This module
is pure Python (numpy + ctypes): `compile_flow` builds and loads the object,
`CompiledFlow.indexer` / `CompiledFlow.cache_step` validate their arguments
and call in. Nothing is written to a caller's array when validation fails.
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

__all__ = ["CompiledFlow", "FlowInfo", "VortexCompileError", "compile_flow",
           "find_tool", "parse_flow"]

# The vortex-opt part of the CPU path, used when vortex-opt does not offer
# the named `--vortex-to-cpu` pipeline.
EXPLICIT_CPU_PIPELINE = [
    "--convert-vortex-to-linalg",
    "--canonicalize",
    "--cse",
    "--linalg-fuse-elementwise-ops",
    "--one-shot-bufferize=bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map",
    "--buffer-deallocation-pipeline",
    "--canonicalize",
    "--cse",
    "--convert-linalg-to-loops",
    "--expand-strided-metadata",
    "--lower-affine",
    "--convert-scf-to-cf",
    "--finalize-memref-to-llvm",
    "--convert-math-to-llvm",
    "--convert-arith-to-llvm",
    "--convert-index-to-llvm",
    "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
]
NAMED_CPU_PIPELINE = "--vortex-to-cpu"

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class VortexCompileError(RuntimeError):
    """A step of the CPU compile path failed; the message carries the
    command and the tool's stderr."""


# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------

def _llvm_bindirs() -> List[str]:
    """LLVM tool directories to try, most specific first."""
    dirs = []
    env = os.environ.get("VORTEX_LLVM_BINDIR")
    if env:
        dirs.append(env)
    # The LLVM the repository was configured against.
    cache = os.path.join(_REPO_ROOT, "build", "CMakeCache.txt")
    try:
        with open(cache) as f:
            for line in f:
                if line.startswith("LLVM_DIR:"):
                    llvm_dir = line.split("=", 1)[1].strip()
                    # <prefix>/lib/cmake/llvm -> <prefix>/bin
                    dirs.append(os.path.normpath(
                        os.path.join(llvm_dir, "..", "..", "..", "bin")))
    except OSError:
        pass
    dirs.append("/usr/lib/llvm-22/bin")
    return dirs


def find_tool(name: str) -> str:
    """Locate a tool of the CPU path: `vortex-opt`, `mlir-translate`, `llc`
    or `cc`.

    vortex-opt: $VORTEX_OPT, else build/bin/vortex-opt of this repository,
    else PATH. mlir-translate / llc: $VORTEX_MLIR_TRANSLATE / $VORTEX_LLC,
    else the configured LLVM's bin directory, else PATH (also `<tool>-22`).
    cc: $CC, else gcc, else cc, else clang.
    """
    def usable(p):
        return p and os.path.isfile(p) and os.access(p, os.X_OK)

    if name == "vortex-opt":
        env = os.environ.get("VORTEX_OPT")
        if env:
            if usable(env):
                return env
            found = shutil.which(env)
            if found:
                return found
            raise VortexCompileError(
                f"VORTEX_OPT={env!r} is not an executable")
        local = os.path.join(_REPO_ROOT, "build", "bin", "vortex-opt")
        if usable(local):
            return local
        found = shutil.which("vortex-opt")
        if found:
            return found
        raise VortexCompileError(
            "vortex-opt not found: set VORTEX_OPT, build it "
            f"({local}), or put it on PATH")
    if name in ("mlir-translate", "llc"):
        env_name = ("VORTEX_MLIR_TRANSLATE" if name == "mlir-translate"
                    else "VORTEX_LLC")
        env = os.environ.get(env_name)
        if env:
            if usable(env):
                return env
            raise VortexCompileError(f"{env_name}={env!r} is not an executable")
        for d in _llvm_bindirs():
            p = os.path.join(d, name)
            if usable(p):
                return p
        for cand in (name, name + "-22"):
            found = shutil.which(cand)
            if found:
                return found
        raise VortexCompileError(
            f"{name} not found: set {env_name} or VORTEX_LLVM_BINDIR")
    if name == "cc":
        env = os.environ.get("CC")
        cands = [env] if env else []
        cands += ["gcc", "cc", "clang"]
        for c in cands:
            found = shutil.which(c) if c else None
            if found:
                return found
        raise VortexCompileError("no C compiler found (set CC)")
    raise ValueError(f"unknown tool {name!r}")


def _run(cmd: Sequence[str], what: str) -> str:
    try:
        proc = subprocess.run(list(cmd), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    except OSError as err:
        raise VortexCompileError(f"{what}: cannot run {cmd[0]}: {err}") from err
    if proc.returncode != 0:
        raise VortexCompileError(
            f"{what} failed (exit {proc.returncode}): "
            f"{' '.join(_quote(c) for c in cmd)}\n{proc.stderr.strip()}")
    return proc.stdout


def _quote(s: str) -> str:
    return s if re.fullmatch(r"[\w@%+=:,./-]+", s) else repr(s)


def _runtime_link_args(ll_path: str) -> List[str]:
    """Link MLIR's C runner utils when the lowered code calls into it (a
    `memref.copy` between non-contiguous layouts becomes a call to
    `memrefCopy`)."""
    with open(ll_path) as f:
        declared = re.findall(r"^declare\b[^@]*@([\w.$]+)", f.read(),
                              re.MULTILINE)
    if not any(d == "memrefCopy" or d.startswith("_mlir_") for d in declared):
        return []
    candidates = []
    env = os.environ.get("VORTEX_MLIR_RUNTIME_LIB")
    if env:
        candidates.append(env)
    translate = find_tool("mlir-translate")
    for d in [os.path.dirname(os.path.realpath(translate))] + _llvm_bindirs():
        candidates.append(os.path.join(d, "..", "lib",
                                       "libmlir_c_runner_utils.so"))
    for lib in candidates:
        if os.path.isfile(lib):
            lib = os.path.realpath(lib)
            return [lib, "-Wl,-rpath," + os.path.dirname(lib)]
    raise VortexCompileError(
        "the lowered flow calls MLIR's runtime (memrefCopy) but "
        "libmlir_c_runner_utils.so was not found; set VORTEX_MLIR_RUNTIME_LIB")


_pipeline_cache: Dict[str, List[str]] = {}


def _cpu_pipeline(vortex_opt: str) -> List[str]:
    """`--vortex-to-cpu` if this vortex-opt registers it, else the explicit
    pass list."""
    if vortex_opt not in _pipeline_cache:
        try:
            out = subprocess.run([vortex_opt, "--help"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True).stdout
        except OSError:
            out = ""
        named = re.search(r"^\s*" + re.escape(NAMED_CPU_PIPELINE) + r"\b", out,
                          re.MULTILINE)
        _pipeline_cache[vortex_opt] = ([NAMED_CPU_PIPELINE] if named
                                       else list(EXPLICIT_CPU_PIPELINE))
    return _pipeline_cache[vortex_opt]


# ---------------------------------------------------------------------------
# Parsing the flow header
# ---------------------------------------------------------------------------

@dataclass
class FlowInfo:
    """What the Python side needs to know about one `vortex.flow`."""
    name: str
    config: Dict[str, object]
    fields: List[Tuple[str, int, int]]
    # Fields the indexer step writes (vortex.save) and the cache step writes
    # (vortex.write / vortex.fill).
    indexer_writes: List[str] = field(default_factory=list)
    cache_writes: List[str] = field(default_factory=list)
    selection: str = "topk"


_NAME = r'(?:"(?:[^"\\]|\\.)*"|[A-Za-z_$.\-][\w$.\-]*)'
_FLOW_RE = re.compile(
    r"vortex\.flow\s+@(?P<name>" + _NAME + r")\s+config\s*=\s*"
    r"#vortex\.config<(?P<config>[^>]*)>\s*fields\s*\((?P<fields>[^)]*)\)",
    re.DOTALL)
_FIELD_RE = re.compile(r"(?P<name>" + _NAME +
                       r")\s*=\s*\[\s*(?P<r>\d+)\s*,\s*(?P<c>\d+)\s*\]")


def _unquote(name: str) -> str:
    if name.startswith('"'):
        return bytes(name[1:-1], "utf-8").decode("unicode_escape")
    return name


def _strip_comments(text: str) -> str:
    out = []
    for line in text.splitlines():
        # Comments run to the end of the line; string literals in flow
        # headers never contain "//".
        i = line.find("//")
        out.append(line if i < 0 else line[:i])
    return "\n".join(out)


def _parse_value(text: str):
    text = text.strip()
    m = re.fullmatch(r"(.*?)\s*:\s*[a-z]\w*", text)
    if m and re.fullmatch(r"[-+0-9.eE]+", m.group(1)):
        text = m.group(1)
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text.strip('"')


def parse_flow(text: str) -> List[FlowInfo]:
    """All `vortex.flow` headers of an IR text: name, config dict and fields
    `(name, r, c)` in declaration order, plus the fields each step writes."""
    text = _strip_comments(text)
    matches = list(_FLOW_RE.finditer(text))
    flows = []
    for i, m in enumerate(matches):
        config = {}
        for item in m.group("config").split(","):
            if not item.strip():
                continue
            key, _, value = item.partition("=")
            config[key.strip()] = _parse_value(value)
        fields = [(_unquote(f.group("name")), int(f.group("r")),
                   int(f.group("c")))
                  for f in _FIELD_RE.finditer(m.group("fields"))]
        body_end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[m.end():body_end]
        cache_part, _, indexer_part = body.partition("indexer(")
        names = {f[0] for f in fields}

        def written(pattern, part):
            out = []
            for w in re.finditer(pattern, part):
                n = w.group(1)
                if n in names and n not in out:
                    out.append(n)
            return out

        info = FlowInfo(
            name=_unquote(m.group("name")), config=config, fields=fields,
            indexer_writes=written(r"vortex\.save\s+%[\w$.\-]+\s+into\s+%([\w$.\-]+)",
                                   indexer_part),
            cache_writes=written(
                r"vortex\.(?:write\s+%[\w$.\-]+\s+into|fill)\s+%([\w$.\-]+)",
                cache_part))
        if re.search(r"vortex\.union\b", indexer_part):
            info.selection = "union"
        elif re.search(r"vortex\.approx_topk\b", indexer_part):
            info.selection = "approx_topk"
        flows.append(info)
    return flows


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


def _descriptor(array: np.ndarray):
    assert array.flags["C_CONTIGUOUS"]
    desc = _descriptor_type(array.ndim)()
    ptr = array.ctypes.data
    desc.allocated = ptr
    desc.aligned = ptr
    desc.offset = 0
    # C-contiguous: row-major strides in elements, whatever numpy reports
    # for axes of extent 0 or 1.
    stride = 1
    for i in reversed(range(array.ndim)):
        desc.sizes[i] = array.shape[i]
        desc.strides[i] = stride
        stride *= max(array.shape[i], 1)
    return desc


# ---------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------

_INT32_MAX = np.iinfo(np.int32).max


def _as_index_array(name: str, value, allow_2d=False) -> np.ndarray:
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
    if arr.size and (arr.min() < np.iinfo(np.int32).min
                     or arr.max() > _INT32_MAX):
        raise ValueError(f"{name}: values do not fit in int32")
    return np.array(arr, dtype=np.int32, order="C", copy=True)


def _check_cache_tensor(name: str, arr, shape: Tuple[int, ...]) -> np.ndarray:
    if not isinstance(arr, np.ndarray):
        raise ValueError(
            f"cache[{name!r}]: expected a numpy.ndarray (float32, C-contiguous,"
            f" updated in place), got {type(arr).__name__}")
    if arr.dtype != np.float32:
        raise ValueError(
            f"cache[{name!r}]: expected dtype float32, got {arr.dtype} (cache "
            "tensors are updated in place, so they are not converted)")
    if arr.ndim != 3:
        raise ValueError(f"cache[{name!r}]: expected a 3-D array "
                         f"[num_blocks, {shape[1]}, {shape[2]}], got shape "
                         f"{tuple(arr.shape)}")
    if tuple(arr.shape[1:]) != tuple(shape[1:]) or (
            shape[0] is not None and arr.shape[0] != shape[0]):
        want = "[" + ", ".join("num_blocks" if s is None else str(s)
                               for s in shape) + "]"
        raise ValueError(f"cache[{name!r}]: expected shape {want}, got "
                         f"{list(arr.shape)}")
    if not arr.flags["C_CONTIGUOUS"]:
        raise ValueError(f"cache[{name!r}]: must be C-contiguous")
    if not arr.flags["WRITEABLE"]:
        raise ValueError(f"cache[{name!r}]: must be writeable")
    if arr.shape[0] > _INT32_MAX:
        raise ValueError(f"cache[{name!r}]: more than 2^31-1 blocks")
    return arr


# ---------------------------------------------------------------------------
# The compiled flow
# ---------------------------------------------------------------------------

class CompiledFlow:
    """A flow compiled for the CPU: `.config`, `.fields`, `indexer`,
    `cache_step`. Obtain it from `compile_flow`."""

    def __init__(self, info: FlowInfo, so_path: str, workdir: str,
                 tempdir: Optional[tempfile.TemporaryDirectory] = None):
        self.info = info
        self.name = info.name
        self.config: Dict[str, object] = dict(info.config)
        self.fields: List[Tuple[str, int, int]] = list(info.fields)
        self.so_path = so_path
        self.workdir = workdir
        self._tempdir = tempdir  # removed with this object
        self._lib = ctypes.CDLL(so_path)
        self._indexer_fn = self._symbol(f"_mlir_ciface_{self.name}_indexer")
        self._cache_fn = self._symbol(f"_mlir_ciface_{self.name}_cache")
        cfg = self.config
        for key in ("block_size", "head_dim", "group_size", "topk_val",
                    "topk_ratio", "reserved_bos", "reserved_eos"):
            if key not in cfg:
                raise VortexCompileError(
                    f"flow @{self.name}: config has no {key!r}")

    def _symbol(self, sym: str):
        try:
            fn = getattr(self._lib, sym)
        except AttributeError as err:
            raise VortexCompileError(
                f"{self.so_path} does not export {sym}") from err
        fn.restype = None
        return fn

    def __repr__(self):
        return (f"CompiledFlow(@{self.name}, fields={self.fields}, "
                f"so={self.so_path!r})")

    # -- shapes -----------------------------------------------------------

    @property
    def cache_names(self) -> List[str]:
        """Cache tensors in ABI order: k, v, then the declared fields."""
        return ["k", "v"] + [f[0] for f in self.fields]

    def cache_shapes(self, num_blocks: int) -> Dict[str, Tuple[int, int, int]]:
        bs, d = int(self.config["block_size"]), int(self.config["head_dim"])
        shapes = {"k": (num_blocks, bs, d), "v": (num_blocks, bs, d)}
        for name, r, c in self.fields:
            shapes[name] = (num_blocks, r, c)
        return shapes

    def allocate_cache(self, num_blocks: int) -> Dict[str, np.ndarray]:
        """Zero-filled float32 cache tensors for a pool of `num_blocks`."""
        return {n: np.zeros(s, np.float32)
                for n, s in self.cache_shapes(num_blocks).items()}

    def budget(self, n: int) -> int:
        """The selection budget of a row of n blocks."""
        cfg = self.config
        fixed = (int(cfg["topk_val"]) + int(cfg["reserved_bos"])
                 + int(cfg["reserved_eos"]))
        return max(fixed, int(n * float(cfg["topk_ratio"])))

    # -- validation -------------------------------------------------------

    def _check_cache(self, cache, written: Sequence[str]) -> List[np.ndarray]:
        if not isinstance(cache, Mapping):
            raise ValueError("cache: expected a dict name -> numpy array "
                             f"with keys {self.cache_names}")
        names = self.cache_names
        missing = [n for n in names if n not in cache]
        if missing:
            raise ValueError(f"cache: missing {missing} (expected keys {names})")
        extra = [n for n in cache if n not in names]
        if extra:
            raise ValueError(f"cache: unknown keys {extra} (expected {names})")
        bs, d = int(self.config["block_size"]), int(self.config["head_dim"])
        k = _check_cache_tensor("k", cache["k"], (None, bs, d))
        shapes = self.cache_shapes(int(k.shape[0]))
        tensors = [_check_cache_tensor(n, cache[n], shapes[n]) for n in names]
        # A tensor the step writes must not overlap any other argument.
        by_name = dict(zip(names, tensors))
        for w in written:
            for n in names:
                if n != w and np.shares_memory(by_name[w], by_name[n]):
                    raise ValueError(
                        f"cache[{w!r}]: overlaps cache[{n!r}] in memory; a "
                        "field the step writes must not alias another tensor")
        return tensors

    def _check_q(self, q, num_rows_hint=None) -> np.ndarray:
        try:
            arr = np.asarray(q)
        except Exception as err:  # noqa: BLE001
            raise ValueError(f"q: not an array ({err})") from err
        if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
            raise ValueError(f"q: expected a real floating-point array, got "
                             f"dtype {arr.dtype}")
        g, d = int(self.config["group_size"]), int(self.config["head_dim"])
        if arr.ndim != 3 or arr.shape[1:] != (g, d):
            raise ValueError(f"q: expected shape [rows, {g}, {d}] (rows = "
                             f"requests x KV heads), got {list(arr.shape)}")
        return np.array(arr, dtype=np.float32, order="C", copy=True)

    @staticmethod
    def _check_csr(indptr: np.ndarray, indices: np.ndarray, rows: int,
                   num_blocks: int):
        if indptr.shape[0] != rows + 1:
            raise ValueError(
                f"dense_kv_indptr: expected {rows + 1} entries (rows + 1, rows "
                f"= q.shape[0] = {rows}), got {indptr.shape[0]}")
        if indptr[0] != 0:
            raise ValueError(
                f"dense_kv_indptr: must start at 0, starts at {indptr[0]}")
        steps = np.diff(indptr)
        if steps.size and steps.min() < 0:
            r = int(np.argmax(steps < 0))
            raise ValueError(
                "dense_kv_indptr: must be non-decreasing, but "
                f"dense_kv_indptr[{r + 1}] = {indptr[r + 1]} < "
                f"dense_kv_indptr[{r}] = {indptr[r]}")
        if indptr[-1] != indices.shape[0]:
            raise ValueError(
                f"dense_kv_indptr: must end at len(dense_kv_indices) = "
                f"{indices.shape[0]}, ends at {indptr[-1]}")
        if indices.size:
            bad = (indices < 0) | (indices >= num_blocks)
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(
                    f"dense_kv_indices: block id {indices[i]} at position {i} "
                    f"is out of range [0, {num_blocks}) (num_blocks = "
                    "cache['k'].shape[0])")

    # -- the two steps ----------------------------------------------------

    def indexer(self, q, cache: Mapping[str, np.ndarray], dense_kv_indptr,
                dense_kv_indices) -> Tuple[np.ndarray, np.ndarray]:
        """One decode step. Returns `(sparse_kv_indptr, sparse_kv_indices)`
        (int32; the indices cut to `sparse_kv_indptr[-1]`). Fields the
        indexer saves are updated in place in `cache`."""
        tensors = self._check_cache(cache, self.info.indexer_writes)
        num_blocks = tensors[0].shape[0]
        qa = self._check_q(q)
        rows = qa.shape[0]
        indptr = _as_index_array("dense_kv_indptr", dense_kv_indptr)
        indices = _as_index_array("dense_kv_indices", dense_kv_indices)
        self._check_csr(indptr, indices, rows, num_blocks)
        if self.info.indexer_writes and indices.size:
            uniq, counts = np.unique(indices, return_counts=True)
            if (counts > 1).any():
                raise ValueError(
                    f"dense_kv_indices: block id {uniq[counts > 1][0]} appears "
                    f"more than once; flow @{self.name} saves per-block state "
                    f"({', '.join(self.info.indexer_writes)}), so every block "
                    "may belong to one row only")
        total = indices.shape[0]
        sparse_indptr = np.zeros(rows + 1, np.int32)
        sparse_storage = np.zeros(max(total, 1), np.int32)
        sparse_indices = sparse_storage[:total]
        args = [qa] + tensors + [indptr, indices, sparse_indptr, sparse_indices]
        descs = [_descriptor(a) for a in args]
        self._indexer_fn(*[ctypes.byref(d) for d in descs])
        end = int(sparse_indptr[-1])
        if (sparse_indptr[0] != 0 or (np.diff(sparse_indptr) < 0).any()
                or end > total):
            raise RuntimeError(
                f"flow @{self.name}: the compiled indexer returned a malformed "
                f"sparse CSR {sparse_indptr.tolist()}")
        return sparse_indptr, sparse_indices[:end].copy()

    def cache_step(self, cache: Mapping[str, np.ndarray], block_ids) -> None:
        """Summarize the completed blocks `block_ids` into the fields of
        `cache`, in place."""
        tensors = self._check_cache(cache, self.info.cache_writes)
        num_blocks = tensors[0].shape[0]
        ids = _as_index_array("block_ids", block_ids)
        if ids.size:
            bad = (ids < 0) | (ids >= num_blocks)
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(
                    f"block_ids: block id {ids[i]} at position {i} is out of "
                    f"range [0, {num_blocks}) (num_blocks = cache['k'].shape[0])")
        descs = [_descriptor(a) for a in tensors + [ids]]
        self._cache_fn(*[ctypes.byref(d) for d in descs])


_so_counter = itertools.count()


def compile_flow(source: str, workdir: Optional[str] = None,
                 name: Optional[str] = None) -> CompiledFlow:
    """Compile a vortex flow for the CPU and load it.

    `source` is a path to a `.mlir` file or the IR text itself. `workdir`
    keeps the intermediate files (default: a temporary directory removed
    with the returned object). `name` picks the flow when the module holds
    several. Raises `VortexCompileError` with the failing tool's stderr.
    """
    is_text = "\n" in source or ("vortex.flow" in source
                                 and not os.path.exists(source))
    if not is_text and not os.path.exists(source):
        raise FileNotFoundError(f"no such flow file: {source}")
    tempdir = None
    if workdir is None:
        tempdir = tempfile.TemporaryDirectory(prefix="vortex-cpu-")
        workdir = tempdir.name
    else:
        os.makedirs(workdir, exist_ok=True)
    if is_text:
        text = source
        src_path = os.path.join(workdir, "flow.mlir")
        with open(src_path, "w") as f:
            f.write(text)
    else:
        src_path = os.path.abspath(source)
        with open(src_path) as f:
            text = f.read()

    opt = find_tool("vortex-opt")
    # Round-trip through vortex-opt: verifies the flow and yields the printed
    # form, whose headers are parsed below.
    norm_path = os.path.join(workdir, "flow.normalized.mlir")
    _run([opt, src_path, "-o", norm_path], "vortex-opt (parse/verify)")
    with open(norm_path) as f:
        flows = parse_flow(f.read())
    if not flows:
        raise VortexCompileError(f"no vortex.flow found in {src_path}")
    if name is None:
        if len(flows) > 1:
            raise ValueError("the module holds several flows "
                             f"{[fl.name for fl in flows]}; pass name=")
        info = flows[0]
    else:
        matching = [fl for fl in flows if fl.name == name]
        if not matching:
            raise ValueError(f"no flow @{name} (flows: "
                             f"{[fl.name for fl in flows]})")
        info = matching[0]

    llvm_mlir = os.path.join(workdir, "flow.llvm.mlir")
    ll = os.path.join(workdir, "flow.ll")
    obj = os.path.join(workdir, "flow.o")
    digest = hashlib.sha1(text.encode()).hexdigest()[:10]
    safe = re.sub(r"[^\w]", "_", info.name)
    so = os.path.join(workdir,
                      f"lib{safe}-{digest}-{os.getpid()}-{next(_so_counter)}.so")
    _run([opt, norm_path, *_cpu_pipeline(opt), "-o", llvm_mlir],
         "vortex-opt (lowering to the LLVM dialect)")
    _run([find_tool("mlir-translate"), "--mlir-to-llvmir", llvm_mlir, "-o", ll],
         "mlir-translate")
    _run([find_tool("llc"), "-O2", "-filetype=obj", "-relocation-model=pic",
          ll, "-o", obj], "llc")
    _run([find_tool("cc"), "-shared", obj, "-o", so, "-lm",
          *_runtime_link_args(ll)], "cc (link)")
    return CompiledFlow(info, so, workdir, tempdir)
