"""The CUDA driver of the runtime: one loader of libcuda, one launch path.

`get()` returns the process's driver. It is the native launcher's
(`vortex.runtime.native`, which loads libcuda once, in C++) whenever that
module builds; it loads the modules, reads the kernels' attributes and
launches plans (`vortex.runtime.plan`) both for the torch ops and for
`CompiledFlowGPU.run_step`. Only where the native module is unavailable (no
nvcc or ninja to build it, or `VORTEX_NATIVE=0`) does a ctypes driver over
`libcuda.so.1` take its place, reading the same plans. Both raise
`CudaDriverError` with the driver's error name.

Both drivers offer the same methods; `name` says which one runs.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, List, Optional, Sequence, Tuple

from . import native
from .plan import BUFFER_KINDS, I32, PTR, Param, Plan

__all__ = ["CudaDriverError", "CtypesDriver", "NativeDriver", "get",
           "pack_params", "plan_param_values",
           "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
           "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
           "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES", "CU_FUNC_ATTRIBUTE_NUM_REGS",
           "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"]


class CudaDriverError(RuntimeError):
    pass


# cuda.h CUfunction_attribute.
CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class NativeDriver:
    """The native launcher's driver (native/driver.cpp)."""

    name = "native"

    def __init__(self, module):
        self._m = module

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except RuntimeError as err:
            raise CudaDriverError(str(err)) from None

    def context(self) -> int:
        return self._call(self._m.current_context)

    def load_module(self, image: bytes, ptx: bool, what: str) -> int:
        return self._call(self._m.load_module, image, ptx, what)

    def unload_module(self, module: int) -> None:
        self._m.unload_module(module)

    def function(self, module: int, name: str) -> int:
        return self._call(self._m.get_function, module, name)

    def attribute(self, func: int, attr: int) -> int:
        return self._call(self._m.function_attribute, func, attr)

    def set_attribute(self, func: int, attr: int, value: int) -> None:
        self._call(self._m.set_function_attribute, func, attr, value)

    def max_active_blocks(self, func: int, threads: int, smem: int) -> int:
        return self._call(self._m.max_active_blocks, func, threads, smem)

    def launch(self, plan: Plan, args: Sequence[Any], scratch: Sequence[Any],
               stream: int, what: str) -> None:
        self._call(self._m.launch_plan, plan, list(args), list(scratch),
                   int(stream), what)


# ---------------------------------------------------------------------------
# The ctypes fallback
# ---------------------------------------------------------------------------

# CUDA driver launch attribute (cuda.h CUlaunchAttributeID).
_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
_CU_JIT_ERROR_LOG_BUFFER = 5
_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6


class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id padded to 8 bytes, then a 64-byte union
    whose first int is programmaticStreamSerializationAllowed."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4),
                ("value", ctypes.c_int), ("value_rest", ctypes.c_char * 60)]


# The one attribute chained launches pass: made once, read by every launch.
_PDL_ATTRIBUTE = _LaunchAttribute(
    id=_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, value=1)


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)),
                ("numAttrs", ctypes.c_uint)]


def plan_param_values(params: Sequence[Param], args: Sequence[Any],
                      scratch: Sequence[Any]) -> List[Any]:
    """A launch's parameters as ctypes values (plan.py says how each kind
    is passed)."""
    out: List[Any] = []
    for p in params:
        if p.kind in BUFFER_KINDS:
            if p.kind == PTR:
                ptr, numel = int(p.value), int(p.numel)
            else:
                t = args[p.value] if p.kind == "arg" else scratch[p.value]
                ptr = int(t.data_ptr())
                numel = int(t.numel()) if p.kind == "arg" else int(p.numel)
            out += [ctypes.c_void_p(ptr), ctypes.c_void_p(ptr),
                    ctypes.c_int64(0), ctypes.c_int64(numel),
                    ctypes.c_int64(1)]
        elif p.kind == I32:
            out.append(ctypes.c_int32(p.value))
        else:
            out.append(ctypes.c_int64(p.value))
    return out


def pack_params(values: Sequence[Any]) -> Tuple[Any, List[Any]]:
    """The `void **kernelParams` array for cuLaunchKernel: one pointer per
    parameter value. Returns (array, keepalive); keep both alive until the
    launch call returns."""
    arr = (ctypes.c_void_p * max(len(values), 1))()
    for i, v in enumerate(values):
        arr[i] = ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
    return arr, list(values)


class CtypesDriver:
    """libcuda through ctypes: the fallback when the native module is
    unavailable."""

    name = "ctypes"

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
        # CUDA 12.0+; without it chained kernels launch the ordinary way
        # (their griddepcontrol.wait then returns at once).
        self.cuLaunchKernelEx = getattr(L, "cuLaunchKernelEx", None)
        if self.cuLaunchKernelEx is not None:
            self.cuLaunchKernelEx.argtypes = [
                ctypes.POINTER(_LaunchConfig), P, ctypes.POINTER(P),
                ctypes.POINTER(P)]
            self.cuLaunchKernelEx.restype = ctypes.c_int

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

    def context(self) -> int:
        self.check(self.cuInit(0), "cuInit")
        ctx = ctypes.c_void_p()
        self.check(self.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        return ctx.value or 0

    def load_module(self, image: bytes, ptx: bool, what: str) -> int:
        mod = ctypes.c_void_p()
        if not ptx:
            buf = ctypes.create_string_buffer(image, len(image))
            self.check(self.cuModuleLoadData(
                ctypes.byref(mod), ctypes.cast(buf, ctypes.c_void_p)),
                f"cuModuleLoadData({what})")
            return mod.value
        if not image.endswith(b"\0"):
            image = image + b"\0"
        buf = ctypes.create_string_buffer(image, len(image))
        size = 1 << 16
        err_log = ctypes.create_string_buffer(size)
        opts = (ctypes.c_int * 2)(_CU_JIT_ERROR_LOG_BUFFER,
                                  _CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(err_log, ctypes.c_void_p),
                                     ctypes.c_void_p(size))
        res = self.cuModuleLoadDataEx(ctypes.byref(mod),
                                      ctypes.cast(buf, ctypes.c_void_p),
                                      2, opts, vals)
        if res != 0:
            log = err_log.value.decode(errors="replace").strip()
            raise CudaDriverError(
                f"cuModuleLoadDataEx({what}) failed: {self.error_name(res)}"
                + (f"\n{log}" if log else ""))
        return mod.value

    def unload_module(self, module: int) -> None:
        self.cuModuleUnload(module)

    def function(self, module: int, name: str) -> int:
        f = ctypes.c_void_p()
        self.check(self.cuModuleGetFunction(ctypes.byref(f), module,
                                            name.encode()),
                   f"cuModuleGetFunction({name})")
        return f.value

    def attribute(self, func: int, attr: int) -> int:
        v = ctypes.c_int()
        self.check(self.cuFuncGetAttribute(ctypes.byref(v), attr,
                                           ctypes.c_void_p(func)),
                   f"cuFuncGetAttribute({attr})")
        return v.value

    def set_attribute(self, func: int, attr: int, value: int) -> None:
        self.check(self.cuFuncSetAttribute(ctypes.c_void_p(func), attr, value),
                   f"cuFuncSetAttribute({attr}, {value})")

    def max_active_blocks(self, func: int, threads: int, smem: int) -> int:
        active = ctypes.c_int()
        self.check(self.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(active), ctypes.c_void_p(func), threads, smem),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        return active.value

    def launch(self, plan: Plan, args: Sequence[Any], scratch: Sequence[Any],
               stream: int, what: str) -> None:
        for i, l in enumerate(plan.launches):
            if min(l.grid) <= 0:
                continue
            arr, keep = pack_params(plan_param_values(l.params, args,
                                                      scratch))
            self._launch(l, stream, arr, f"{what} launch {i}")
            del keep

    def _launch(self, l, stream: int, params, what: str) -> None:
        argv = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        grid, block = l.grid, l.block
        if l.pdl and self.cuLaunchKernelEx is not None:
            cfg = _LaunchConfig(grid[0], grid[1], grid[2], block[0],
                                block[1], block[2], l.shared_bytes,
                                ctypes.c_void_p(stream),
                                ctypes.pointer(_PDL_ATTRIBUTE), 1)
            res = self.cuLaunchKernelEx(ctypes.byref(cfg),
                                        ctypes.c_void_p(l.func), argv, None)
            call = "cuLaunchKernelEx"
        else:
            res = self.cuLaunchKernel(
                ctypes.c_void_p(l.func), grid[0], grid[1], grid[2], block[0],
                block[1], block[2], l.shared_bytes, ctypes.c_void_p(stream),
                argv, None)
            call = "cuLaunchKernel"
        if res != 0:
            raise CudaDriverError(
                f"{call}({what}, grid={tuple(grid)}, block={tuple(block)}, "
                f"shared={l.shared_bytes}{', chained' if l.pdl else ''}) "
                f"failed: {self.error_name(res)}")


_lock = threading.Lock()
_driver: Optional[Any] = None


def get() -> Any:
    """The process's driver: the native module's, else ctypes."""
    global _driver
    with _lock:
        if _driver is None:
            mod = native.load()
            _driver = NativeDriver(mod) if mod is not None else CtypesDriver()
        return _driver
