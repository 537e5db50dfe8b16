"""Python binding of the vortex compile-and-run API (CPU path).

    >>> import vortex
    >>> flow = vortex.compile_flow("examples/block_sparse_attention.mlir")
    >>> flow.cache_step(cache, block_ids)                  # in place
    >>> indptr, indices = flow.indexer(q, cache, dense_indptr, dense_indices)

`compile_flow` lowers a `vortex.flow` through vortex-opt (the CPU pipeline),
mlir-translate, llc and the C compiler into a shared object and loads it;
the returned `CompiledFlow` validates every argument before calling in.
`vortex.reference` is an independent float64 numpy model of the same
semantics (docs/contract.md).
"""

from .cpu import (CompiledFlow, FlowInfo, VortexCompileError, compile_flow,
                  find_tool, parse_flow)

__all__ = ["CompiledFlow", "FlowInfo", "VortexCompileError", "compile_flow",
           "find_tool", "parse_flow"]
