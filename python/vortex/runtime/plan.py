"""A launch plan: what the CUDA runtime launches for one call of a step.

This module is the one description of the plan. `CompiledFlowGPU.plan`
(`vortex.runtime.cuda`) builds it; both launch paths read it by field name:
the native launcher (`native/plan.cpp`, through the Python objects) and the
ctypes fallback (`vortex.runtime.driver`). Neither path knows a position.

A `Plan` holds the scratch buffers' sizes and the launches in order. A
`Launch` is one kernel: its CUfunction handle, grid, block, dynamic shared
memory, parameters, and whether it launches chained (programmatic stream
serialization: the kernel waits on the launch before it with
griddepcontrol; docs/gpu.md, "Chained launches"). A `Param` is one kernel
parameter:

  kind "arg"      value = the index of the op's tensor argument
  kind "scratch"  value = the index of a scratch buffer, numel its elements
  kind "ptr"      value = the address of a buffer the runtime owns for the
                  flow's lifetime (the guards' status words), numel its
                  elements
  kind "i32"      value = a 32-bit scalar
  kind "i64"      value = a 64-bit scalar

A buffer parameter is passed as the five words of an MLIR 1-D memref
descriptor (allocated, aligned, offset 0, numel, stride 1); a scalar as one
word. This module imports nothing but the standard library.
"""

from __future__ import annotations

from typing import List, NamedTuple, Tuple

__all__ = ["ARG", "BUFFER_KINDS", "I32", "I64", "KINDS", "Launch", "PTR",
           "Param", "Plan", "SCRATCH", "arg", "i32", "i64", "ptr", "scratch"]

ARG, SCRATCH, PTR, I32, I64 = "arg", "scratch", "ptr", "i32", "i64"
KINDS = (ARG, SCRATCH, PTR, I32, I64)
# Kinds passed as a memref descriptor (five words).
BUFFER_KINDS = (ARG, SCRATCH, PTR)


class Param(NamedTuple):
    kind: str
    value: int
    numel: int = 0


class Launch(NamedTuple):
    func: int                       # CUfunction handle
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    shared_bytes: int               # dynamic shared memory
    params: List[Param]
    pdl: bool                       # chained (programmatic serialization)


class Plan(NamedTuple):
    scratch_bytes: List[int]
    launches: List[Launch]


def arg(index: int) -> Param:
    return Param(ARG, int(index))


def scratch(index: int, numel: int) -> Param:
    return Param(SCRATCH, int(index), int(numel))


def ptr(address: int, numel: int) -> Param:
    return Param(PTR, int(address), int(numel))


def i32(value: int) -> Param:
    return Param(I32, int(value))


def i64(value: int) -> Param:
    return Param(I64, int(value))
