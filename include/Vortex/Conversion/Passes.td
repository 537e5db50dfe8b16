//===- Passes.td - Vortex conversion passes -----------------*- tablegen -*-===//

#ifndef VORTEX_CONVERSION_PASSES_TD
#define VORTEX_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertVortexToLinalg : Pass<"convert-vortex-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower vortex flows to linalg on tensors, one function per step";
  let description = [{
    Each `vortex.flow @F` becomes two functions that follow the compiled-flow
    contract (docs/contract.md):

    * `@F_indexer(q, k, v, fields..., dense_kv_indptr, dense_kv_indices,
      sparse_kv_indptr, sparse_kv_indices)`: one decode step; scores every
      block of every row and writes the sparse CSR; `vortex.save` updates
      its fields in place.
    * `@F_cache(k, v, fields..., block_ids)`: summarizes the completed
      blocks `block_ids` into the fields, in place.

    Buffers are memrefs of f32 (floats) and i32 (indices); inside, the body
    is linalg on tensors (`linalg.generic`, `linalg.fill`) plus
    tensor/arith/math/scf. Format addressing is explicit: a paged operand
    is gathered by block id, a batched one broadcast to the blocks of its
    row through the CSR, ragged values live in CSR order. Row-segment ops
    and the top-k are per-row `scf` loops over `[bos, n - eos)`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

#endif // VORTEX_CONVERSION_PASSES_TD
