"""Run a compiled vortex flow on an NVIDIA GPU from PyTorch (docs/gpu.md).

The GPU machine has no MLIR: `vortex-compile` leaves PTX, a cubin and the
manifest (docs/manifest.md), and this module is all that runs there, over
the CUDA driver of `vortex.runtime.driver` (the native launcher's, or ctypes
where that is unavailable) and torch tensors. The public way to run a flow is its torch ops (`vortex.load`,
`vortex.runtime.ops`); this module is what their CUDA implementation calls:

* `CompiledFlowGPU.plan(step, tensors)` validates the arguments with the
  shared validator (`validate.validate_step`) and returns a launch plan:
  a `vortex.runtime.plan.Plan` (per-call scratch sizes and, per kernel, the
  function handle of the tensors' device, grid, block, dynamic shared
  memory and parameters). The native launcher (`vortex.runtime.native`)
  caches plans per argument signature and launches them without Python;
  `run_step` plans and launches once through the driver (the torch ops'
  path where the native module is unavailable, and the way to launch a
  subset of a step's kernels).
  `plan("attend", ...)` launches the split kernel on `rows x kv_splits`
  CTAs (`manifest.kv_splits`, from the shapes only), then the combine
  (skipped at one split); `plan("decode", ...)` is the indexer's launches
  followed by attend's over the sparse CSR they write: one op call, one
  plan, capturable in one CUDA graph.
* Launches go on the current stream of the tensors' device, inside a device
  guard that restores the caller's device and context. Scratch comes from
  torch's caching allocator for each call (stream-ordered, and from the
  graph's pool during a CUDA-graph capture). No launch reads device memory
  on the host: the kernels' guards record bad block ids and a malformed CSR
  in a per-device status buffer (a "ptr" plan parameter),
  which `check()` reads, synchronizing, when asked (docs/gpu.md "Guards").

At first use on a device, the manifest's parameter lists are checked
against the PTX's `.entry` signatures (a buffer is five 64-bit parameters,
an i32 scalar one 32-bit parameter), the cubin is loaded into that device's
primary context (the PTX, JIT-compiled by the driver, if the cubin is
missing or does not load), and each kernel's static shared memory,
registers, spills and occupancy are read. A launch requests as *dynamic*
shared memory the part of the manifest's `shared_bytes` that the kernel
does not declare statically.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import driver
from .attention import DECODE_CSR, check_decode_manifest, decode_args
from .driver import CudaDriverError
from ..environment import require_cuda
from .manifest import (ATTEND_SPLIT_SLOTS, DTYPES, KernelSpec, Manifest,
                       buffer_bytes, choose_launches, grid_size, kv_splits,
                       selected_count)
from .plan import ARG, PTR, SCRATCH, Launch, Param, Plan
from .validate import resolve_symbols, validate_step

__all__ = ["CompiledFlowGPU", "CudaDriverError", "FlowCheckError", "Plan",
           "check_ptx",
           "dynamic_smem", "expected_widths", "load", "ptx_signatures"]

_INT32_MAX = 2 ** 31 - 1
# Shared memory a kernel may use without opting in to more.
_STATIC_SMEM_LIMIT = 48 * 1024


def chain_launches_default() -> bool:
    """Whether flows launch chained kernels with programmatic dependent
    launch: on unless VORTEX_CHAIN_LAUNCHES=0."""
    return os.environ.get("VORTEX_CHAIN_LAUNCHES", "1") != "0"

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
        for spec in specs.kernels:
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


class FlowCheckError(RuntimeError):
    """A GPU kernel's guard failed: an input held an out-of-range block id
    or a malformed CSR (docs/gpu.md "Guards")."""


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



@dataclass
class _DeviceState:
    """A flow's modules loaded into one device's primary context: one for
    the whole flow, or one per kernel (`artifacts.cubins`)."""
    index: int
    ctx: int
    modules: List[int]
    loaded_from: str
    num_sms: int
    name: str
    kernels: Dict[str, _Kernel] = field(default_factory=dict)
    # The guards' status words (docs/gpu.md "Guards"), zeroed; None when the
    # flow was compiled without guards.
    status: Any = None


class CompiledFlowGPU:
    """A flow's kernels for CUDA devices, loaded per device on first use."""

    def __init__(self, manifest: Manifest, device: Optional[int] = None,
                 prefer: str = "cubin"):
        if manifest.backend != "cuda":
            raise ValueError(f"{manifest.flow}: a {manifest.backend} "
                             "manifest, not a CUDA one")
        torch = require_cuda(manifest.flow)  # imported only here
        if prefer not in ("cubin", "ptx"):
            raise ValueError(f"prefer must be 'cubin' or 'ptx', not {prefer!r}")
        self._torch = torch
        self.manifest = manifest
        self.flow = manifest.flow
        self.config = manifest.config
        self._prefer = prefer
        self._states: Dict[int, _DeviceState] = {}
        # Launch the manifest's pdl kernels chained (docs/gpu.md "Chained
        # launches"); plans made after a change follow it.
        self.chain_launches = chain_launches_default()
        self._check_ptx()
        self.device_index = (torch.cuda.current_device() if device is None
                             else int(device))
        self.device = torch.device("cuda", self.device_index)
        self._state(self.device_index)

    # -- loading ------------------------------------------------------------
    def _check_ptx(self) -> None:
        """The PTX (when shipped) must agree with the manifest's params."""
        path = self.manifest.artifact("ptx")
        if not path or not os.path.isfile(path):
            return
        with open(path, errors="replace") as f:
            problems = check_ptx(self.manifest, f.read())
        if problems:
            raise RuntimeError(f"{self.flow}: manifest and PTX disagree:\n  "
                               + "\n  ".join(problems))

    def _state(self, index: int) -> _DeviceState:
        st = self._states.get(index)
        if st is not None:
            return st
        torch = self._torch
        if not 0 <= index < torch.cuda.device_count():
            raise ValueError(f"device cuda:{index} does not exist "
                             f"({torch.cuda.device_count()} devices)")
        drv = self._drv = driver.get()
        with torch.cuda.device(index):
            torch.empty(1, device=f"cuda:{index}")   # primary context current
            ctx = drv.context()
            by_kernel, loaded_from = self._load_modules()
            props = torch.cuda.get_device_properties(index)
            st = _DeviceState(index, ctx,
                              list(dict.fromkeys(by_kernel.values())),
                              loaded_from, int(props.multi_processor_count),
                              props.name)
            try:
                st.kernels.update(self._functions(by_kernel))
            except BaseException:
                self._unload(st.modules)
                raise
            status = self.manifest.status_tensor()
            if status is not None:
                st.status = torch.zeros(
                    self.manifest.tensors[status].extents({})[0],
                    dtype=torch.int32, device=f"cuda:{index}")
        self._states[index] = st
        return st

    def _functions(self, by_kernel: Mapping[str, int]) -> Dict[str, "_Kernel"]:
        """Each launched kernel's function, from the module that holds it."""
        out: Dict[str, _Kernel] = {}
        for spec in self.manifest.steps.values():
            for k in spec.kernels:
                if k.kernel not in out:
                    out[k.kernel] = self._get_function(by_kernel[k.kernel], k)
        return out

    def _kernel_names(self) -> List[str]:
        return list(dict.fromkeys(k.kernel for s in self.manifest.steps.values()
                                  for k in s.kernels))

    def _unload(self, modules: Sequence[int]) -> None:
        for mod in modules:
            self._drv.unload_module(mod)

    def _load_kernel_cubins(self) -> Tuple[Dict[str, int], str]:
        """A module per kernel from `artifacts.cubins`; all or none."""
        by_kernel: Dict[str, int] = {}
        loaded: List[int] = []
        names = self._kernel_names()
        if not names:
            raise CudaDriverError(f"{self.manifest.flow}: the manifest "
                                  "launches no kernel")
        try:
            for kernel in names:
                path = self.manifest.kernel_cubin(kernel)
                with open(path, "rb") as f:
                    mod = self._load_cubin(f.read(), path)
                loaded.append(mod)
                by_kernel[kernel] = mod
        except (OSError, CudaDriverError):
            self._unload(loaded)
            raise
        first = self.manifest.kernel_cubin(names[0])
        return by_kernel, (f"{first} (+{len(loaded) - 1} more per-kernel "
                           "cubins)" if len(loaded) > 1 else first)

    def _load_modules(self) -> Tuple[Dict[str, int], str]:
        """Each kernel's module: the per-kernel cubins, the flow's cubin or
        its PTX, in the order `prefer` asks."""
        m = self.manifest
        errors = []
        order = ["cubin", "ptx"] if self._prefer == "cubin" else ["ptx", "cubin"]
        for kind in order:
            if kind == "cubin" and m.kernel_cubins:
                try:
                    return self._load_kernel_cubins()
                except (OSError, CudaDriverError) as err:
                    errors.append(f"cubins: {err}")
                continue
            path = m.artifact(kind)
            if not path:
                continue
            if not os.path.isfile(path):
                errors.append(f"{kind}: {path} not found")
                continue
            with open(path, "rb") as f:
                image = f.read()
            try:
                mod = (self._load_ptx(image) if kind == "ptx"
                       else self._load_cubin(image, path))
                return {k: mod for k in self._kernel_names()}, path
            except CudaDriverError as err:
                errors.append(f"{kind}: {err}")
        raise CudaDriverError(f"{m.flow}: could not load a module: "
                              + "; ".join(errors))

    def _load_cubin(self, image: bytes, path: str) -> int:
        return self._drv.load_module(image, False, path)

    def _load_ptx(self, image: bytes) -> int:
        return self._drv.load_module(image, True, "PTX")

    def _get_function(self, module: int, spec: KernelSpec) -> _Kernel:
        drv = self._drv
        f = drv.function(module, spec.kernel)
        k = _Kernel(spec, f)
        k.max_threads = drv.attribute(
            f, driver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        k.num_regs = drv.attribute(f, driver.CU_FUNC_ATTRIBUTE_NUM_REGS)
        k.static_smem = drv.attribute(
            f, driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        k.local_bytes = drv.attribute(
            f, driver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
        threads = spec.block[0] * spec.block[1] * spec.block[2]
        if threads > k.max_threads:
            raise CudaDriverError(
                f"{spec.kernel}: block of {threads} threads exceeds the "
                f"kernel's limit of {k.max_threads} ({k.num_regs} registers)")
        dyn = k.dynamic_smem
        if dyn > 0 and dyn + k.static_smem > _STATIC_SMEM_LIMIT:
            try:
                drv.set_attribute(
                    f, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dyn)
            except CudaDriverError as err:
                raise CudaDriverError(
                    f"{spec.kernel}: max dynamic shared memory {dyn} "
                    f"(static {k.static_smem}): {err}") from None
        k.max_active = drv.max_active_blocks(f, threads, dyn)
        return k

    # -- introspection --------------------------------------------------------
    @property
    def loaded_from(self) -> str:
        return self._state(self.device_index).loaded_from

    @property
    def num_sms(self) -> int:
        return self._state(self.device_index).num_sms

    def kernel_info(self, device: Optional[int] = None) -> Dict[str, Dict[str, int]]:
        """Per kernel: registers, static smem, local (spill) bytes, max
        threads per block, resident CTAs per SM."""
        st = self._state(self.device_index if device is None else device)
        return {n: {"num_regs": k.num_regs, "static_smem": k.static_smem,
                    "dynamic_smem": k.dynamic_smem,
                    "local_bytes": k.local_bytes, "max_threads": k.max_threads,
                    "max_active_per_sm": k.max_active,
                    "shared_bytes": k.spec.shared_bytes}
                for n, k in st.kernels.items()}

    # -- guards ---------------------------------------------------------------
    def read_status(self, device: Optional[int] = None,
                    reset: bool = True) -> Optional[List[int]]:
        """The guards' status words of `device` (default: the flow's), after
        synchronizing it; zeroed again when `reset`. None if the flow was
        compiled without guards or never ran there."""
        torch = self._torch
        index = self.device_index if device is None else int(device)
        st = self._states.get(index)
        if st is None or st.status is None:
            return None
        with torch.cuda.device(index):
            torch.cuda.synchronize(index)
            words = [int(w) for w in st.status.tolist()]
            if reset and any(words):
                st.status.zero_()
                torch.cuda.synchronize(index)
        return words

    def check(self, device: Optional[int] = None) -> None:
        """Raise FlowCheckError if a kernel's guard failed since the last
        check, on `device` or on every device the flow ran on. Synchronizes
        those devices: call it off the hot path (docs/gpu.md "Guards")."""
        devices = sorted(self._states) if device is None else [int(device)]
        for index in devices:
            words = self.read_status(index)
            msg = self.manifest.describe_status(words) if words else None
            if msg:
                raise FlowCheckError(f"vortex flow {self.flow!r} on "
                                     f"cuda:{index}: {msg}")

    def kernel_names(self, step: str) -> List[str]:
        return [k.kernel for k in self.manifest.kernels(step)]

    def score_kernels(self) -> List[str]:
        return self.manifest.score_kernels()

    # -- plans --------------------------------------------------------------
    def step_args(self, step: str) -> Tuple[str, ...]:
        """The arguments of a step's op, in call order (`decode`: the
        indexer's, then attend's tail)."""
        if step == "decode":
            return decode_args(self.manifest)
        return tuple(self.manifest.steps[step].args)

    def _device_of(self, step: str, tensors: Mapping[str, Any]) -> int:
        for n in self.step_args(step):
            t = tensors.get(n)
            dev = getattr(t, "device", None)
            if getattr(dev, "type", None) == "cuda":
                return int(dev.index if dev.index is not None else
                           self._torch.cuda.current_device())
        return self.device_index

    def plan(self, step: str, tensors: Mapping[str, Any],
             kernels=None) -> Plan:
        """Validate the step's arguments (by manifest name) and return its
        launch plan on their device (see `Plan`). `kernels` (names or a
        predicate) plans a subset of the step. Of alternatives (a `choice`),
        the first whose grid fits on the device in one wave is launched,
        else the last. `decode` plans the indexer's launches, then attend's
        over the sparse CSR they write (one plan, so one op call and one
        CUDA graph; `kernels` does not apply)."""
        if step == "decode":
            return self._plan_decode(tensors)
        dev = self._device_of(step, tensors)
        arg_index = {n: i for i, n in enumerate(self.step_args(step))}
        return self._plan_step(step, tensors, kernels, dev, arg_index)

    def _plan_decode(self, tensors: Mapping[str, Any]) -> Plan:
        """The decode op's plan: every argument of both steps is validated
        before anything is planned (so nothing is written on bad input);
        attend reads the indexer's sparse CSR, and chooses kv_splits from
        the selection's size, which depends only on the shapes."""
        m = self.manifest
        if "attend" not in m.steps:
            raise NotImplementedError(f"{self.flow}: this CUDA build has no "
                                      "attend step, so no decode")
        check_decode_manifest(m)
        dev = self._device_of("decode", tensors)
        args = self.step_args("decode")
        arg_index = {n: i for i, n in enumerate(args)}
        attend = {n: tensors.get(DECODE_CSR.get(n, n))
                  for n in m.steps["attend"].args}
        # Validate attend's arguments before the indexer is planned; o and
        # lse must not share memory with anything the indexer reads.
        validate_step(m, "attend", attend, ("cuda", dev))
        for w in ("o", "lse"):
            ow = tensors.get(w)
            if ow is None or not ow.numel():
                continue
            a0 = ow.data_ptr()
            a1 = a0 + ow.numel() * ow.element_size()
            for n in m.steps["indexer"].args:
                t = tensors.get(n)
                if t is None or not hasattr(t, "data_ptr") or not t.numel():
                    continue
                b0 = t.data_ptr()
                b1 = b0 + t.numel() * t.element_size()
                if a0 < b1 and b0 < a1:
                    raise ValueError(f"{w}: shares memory with {n} (the "
                                     f"step writes {w})")
        idx_bytes, idx_launches = self._plan_step(
            "indexer", tensors, None, dev, arg_index)
        symbols = resolve_symbols(m, attend, list(m.steps["attend"].args))
        rows = symbols.get("rows", 0)
        # The sparse CSR's entries: at most the budget of a row of the
        # dense mean length (kv_indices is as long as the dense CSR).
        mean = selected_count(m.config, symbols.get("total", 0) // rows) \
            if rows else 0
        att_index = {n: arg_index[DECODE_CSR.get(n, n)]
                     for n in m.steps["attend"].args}
        att_bytes, att_launches = self._plan_step(
            "attend", attend, None, dev, att_index, scratch_base=len(idx_bytes),
            mean_len=mean)
        return Plan(idx_bytes + att_bytes, idx_launches + att_launches)

    def kv_splits(self, rows: int, mean_len: int,
                  device: Optional[int] = None) -> int:
        """The attend step's split count on `device` (manifest.kv_splits,
        the rule of docs/gpu.md "Attention")."""
        st = self._state(self.device_index if device is None else device)
        return kv_splits(rows, mean_len, st.num_sms)

    def _plan_step(self, step: str, tensors: Mapping[str, Any], kernels,
                   dev: int, arg_index: Mapping[str, int],
                   scratch_base: int = 0,
                   mean_len: Optional[int] = None) -> Plan:
        """One manifest step's plan; `arg_index` maps the step's argument
        names to positions of the op's arguments, `scratch_base` offsets its
        scratch buffers (a plan of several steps). `mean_len`: the mean row
        length in blocks that chooses kv_splits (default total / rows)."""
        m = self.manifest
        specs = m.kernels(step, kernels)
        used = set(m.used_tensors(specs))
        symbols = validate_step(m, step, tensors, ("cuda", dev),
                                [a for a in m.steps[step].args
                                 if a not in used])
        # An empty pool has no block for the guards to read in place of a
        # bad id.
        if symbols.get("num_blocks") == 0:
            for sym, t in (("total", "dense_kv_indices"),
                           ("num_new", "block_ids")):
                if symbols.get(sym, 0) > 0:
                    raise ValueError(f"k: num_blocks = 0 (an empty pool), "
                                     f"but {t} has {symbols[sym]} entries")
        st = self._state(dev)
        takes_splits = [any(p.kind == "scalar" and p.name == "kv_splits"
                            for p in spec.params) for spec in specs]
        split_scratch = set()
        if any(takes_splits):
            rows = symbols.get("rows", 0)
            if mean_len is None:
                mean_len = symbols.get("total", 0) // rows if rows else 0
            symbols = dict(symbols)
            symbols["kv_splits"] = kv_splits(rows, mean_len, st.num_sms)
            # The partials hold rows x kv_splits row-splits (none at one
            # split): the runtime allocates only those of the manifest's
            # ATTEND_SPLIT_SLOTS.
            for spec in specs:
                if spec.grid["kind"] == "row_splits":
                    split_scratch |= {
                        n for n in spec.buffers()
                        if m.tensors[n].role == "scratch"
                        and m.tensors[n].shape[0].symbol is None
                        and m.tensors[n].shape[0].value({}) ==
                        ATTEND_SPLIT_SLOTS}
        scratch = [n for n in m.used_tensors(specs)
                   if m.tensors[n].role == "scratch"]
        scratch_bytes = [buffer_bytes(m, n, symbols) for n in scratch]
        if split_scratch:
            splits = symbols["kv_splits"]
            slots = symbols["rows"] * splits if splits > 1 else 1
            for j, n in enumerate(scratch):
                if n in split_scratch:
                    t = m.tensors[n]
                    scratch_bytes[j] = (min(slots, ATTEND_SPLIT_SLOTS) *
                                        t.inner_numel() * t.itemsize)
        def fits(spec: KernelSpec) -> bool:
            k = st.kernels[spec.kernel]
            return math.prod(grid_size(spec, symbols, st.num_sms,
                                       k.max_active)) <= \
                k.max_active * st.num_sms
        launches = []
        for spec in choose_launches(specs, fits):
            # At one split the combine (a kernel that takes kv_splits on a
            # grid of its own) returns at once: not launched.
            if symbols.get("kv_splits") == 1 and \
                    spec.grid["kind"] != "row_splits" and \
                    any(p.kind == "scalar" and p.name == "kv_splits"
                        for p in spec.params):
                continue
            k = st.kernels[spec.kernel]
            grid = grid_size(spec, symbols, st.num_sms, k.max_active)
            if min(grid) <= 0:
                continue
            params: List[tuple] = []
            for p in spec.params:
                if p.kind == "buffer" and p.name in arg_index:
                    params.append(Param(ARG, arg_index[p.name]))
                elif p.kind == "buffer" and m.tensors[p.name].role == "status":
                    params.append(Param(PTR, int(st.status.data_ptr()),
                                   int(st.status.numel())))
                elif p.kind == "buffer":
                    j = scratch.index(p.name)
                    params.append(Param(SCRATCH, scratch_base + j,
                                        scratch_bytes[j] //
                                        m.tensors[p.name].itemsize))
                else:
                    v = p.value if p.value is not None else symbols[p.name]
                    if p.dtype == "i32" and not -2 ** 31 <= v <= _INT32_MAX:
                        raise ValueError(f"{p.name} = {v} overflows the "
                                         f"i32 parameter of {spec.kernel}")
                    params.append(Param(p.dtype, int(v)))
            launches.append(Launch(k.func, tuple(grid), tuple(spec.block),
                                   k.dynamic_smem, params,
                                   bool(spec.pdl and self.chain_launches)))
        return Plan(scratch_bytes, launches)

    def run_step(self, step: str, tensors: Mapping[str, Any],
                 kernels=None, stream=None, scratch=None) -> None:
        """Validate and launch a step (or the subset `kernels`) through the
        driver, on `stream` or the current stream of the tensors' device.
        `scratch`, if given, holds the plan's scratch buffers (in the order
        of the kernels' use, each on the device and at least its planned
        size) instead of fresh ones: a check can write a scratch buffer,
        such as the scores, and launch only the kernels that read it."""
        torch = self._torch
        args = [tensors.get(n) for n in self.step_args(step)]
        plan = self.plan(step, tensors, kernels)
        scratch_bytes = plan.scratch_bytes
        dev = self._device_of(step, tensors)
        if scratch is not None:
            if len(scratch) != len(scratch_bytes):
                raise ValueError(f"scratch: {len(scratch)} buffer(s), the "
                                 f"plan has {len(scratch_bytes)}")
            for j, (t, b) in enumerate(zip(scratch, scratch_bytes)):
                if t.device != torch.device("cuda", dev) or \
                        t.numel() * t.element_size() < b:
                    raise ValueError(f"scratch[{j}]: needs {b} bytes on "
                                     f"cuda:{dev}, got "
                                     f"{t.numel() * t.element_size()} on "
                                     f"{t.device}")
        with torch.cuda.device(dev):
            handle = (torch.cuda.current_stream(dev).cuda_stream
                      if stream is None else int(stream))
            if scratch is None:
                scratch = [torch.empty(max(b, 1), dtype=torch.uint8,
                                       device=f"cuda:{dev}")
                           for b in scratch_bytes]
            self._drv.launch(plan, args, scratch, handle, self.flow)

    # -- conveniences -------------------------------------------------------
    def allocate_cache(self, num_blocks: int, names=None, fill=None,
                       device=None):
        """Cache tensors for a pool of num_blocks blocks (empty, or filled
        with `fill`), optionally only `names`."""
        torch = self._torch
        dev = torch.device("cuda", self.device_index if device is None
                           else int(device))
        out = {}
        for n, (shape, dt) in self.manifest.cache_shapes(num_blocks).items():
            if names is not None and n not in names:
                continue
            t = torch.empty(shape, dtype=getattr(torch, DTYPES[dt][0]),
                            device=dev)
            if fill is not None:
                t.fill_(fill)
            out[n] = t
        return out

    def close(self) -> None:
        for st in self._states.values():
            self._unload(st.modules)
        self._states.clear()


def load(manifest_path: str, device: Optional[int] = None,
         prefer: Optional[str] = None) -> CompiledFlowGPU:
    """Load `<flow>.manifest.json` and its cubin (falling back to the PTX,
    JIT-compiled by the driver). `prefer="ptx"` (or VORTEX_GPU_PREFER=ptx)
    tries the PTX first."""
    if prefer is None:
        prefer = os.environ.get("VORTEX_GPU_PREFER", "cubin")
    return CompiledFlowGPU(Manifest.from_file(manifest_path), device, prefer)
