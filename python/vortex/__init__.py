"""Vortex: compiled decode-time sparse-attention flows.

    >>> import vortex
    >>> flow = vortex.load(vortex.compile("examples/block_sparse_attention.mlir",
    ...                                   target="cpu"))
    >>> flow.cache_step(cache, block_ids)             # torch op, in place
    >>> sparse_indptr, sparse_indices = flow.indexer(q, cache, indptr, indices)

`compile` runs `vortex-compile` (artifacts + manifest, cached by content);
`load` reads a manifest and registers one torch op per step under
`torch.ops.vortex` (CPU impl: the shared object; CUDA impl: the cubin).
`compile_flow` is the numpy API of the CPU path; `vortex.semantics.reference`
is an independent float64 numpy model of the semantics (docs/contract.md). A
missing piece of the machine's setup raises `SetupError`, one line that says
how to fix it. The checks (problem generators, torch-op and GPU checks, the
demo) live apart, in `vortex.testing`.

Flows written as vortex_torch modules (`vortex.flow`, `vortex.indexer`,
`vortex.cache`, `vortex.abs`; the shipped ones in `vortex.flows`) are traced
with `trace(flow, FlowConfig(...))` and compiled with `compile(flow,
FlowConfig(...), target=...)`; see `vortex.api` and `vortex.frontend`.
"""

from .compiler.driver import VortexCompileError, find_tool
from .environment import SetupError
from .runtime.cpu import CompiledFlow, FlowInfo, compile_flow
# The Python front end: vortex_torch-style flows. Its `compile` takes IR as
# compiler.compile does and also a vFlow (instance, class or registered
# name) with a FlowConfig, which it traces first.
from .api import compile, trace
from .frontend import FlowConfig, FlowError
# Packed INT4 k/v pools on the host (docs/contract.md "INT4 KV").
from . import int4
# Custom ops: a torch function registered as an indexer op (docs/python.md).
from .indexer.custom_op import register_op


# Raised by Flow.check() when a GPU kernel's guard failed (docs/gpu.md).
from .runtime.cuda import FlowCheckError


def load(manifest_path, device=None, params=None, debug=None):
    """A compiled flow as torch ops (see `vortex.runtime.ops.Flow`); `params`
    binds its parameters (learned constants); `debug` checks the GPU guards
    after every step (default: the VORTEX_DEBUG environment variable)."""
    from .staged import is_staged, load as _load_staged
    if is_staged(manifest_path):
        # A flow compiled around its custom ops (docs/python.md).
        return _load_staged(manifest_path, device, params)
    from .runtime.ops import load as _load
    return _load(manifest_path, device, params, debug)


__all__ = ["CompiledFlow", "FlowCheckError", "FlowConfig", "FlowError",
           "FlowInfo", "SetupError",
           "VortexCompileError", "compile", "compile_flow", "find_tool",
           "int4", "load", "register_op", "trace"]
