//===- Collectives.h - Warp and CTA collectives of the GPU kernels -*- C++ -*-===//
//
// The warp- and CTA-wide building blocks every kernel kind may use: shuffles
// and scans within a warp, reductions and ranks over a CTA, a row's offset
// from the counts of the rows before it, and shared-memory buffers. Each
// one that holds a barrier must be called by every thread of the CTA.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_COLLECTIVES_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_COLLECTIVES_H

#include "KernelBuilder.h"

namespace mlir::vortex::gpugen {

/// The alignment of every shared buffer, in bytes (sharedBuffer).
constexpr int64_t kSharedAlign = 16;

/// A kSharedAlign-aligned workgroup buffer of `size` elements of `func`.
Value sharedBuffer(gpu::GPUFuncOp func, int64_t size, Type elementType);

/// memref[index] += v atomically (i32); returns the old value.
Value atomicAdd(Gen &g, Value memref, Value index, Value v);

/// Inclusive sum over the lanes of a warp (every lane must call it).
Value warpInclusiveSum(Gen &g, Value lane, Value v);

/// `a op b` for the i32 reductions of ctaAllReduce (ADD, MAXUI, MINUI).
Value combine(Gen &g, gpu::AllReduceOperation op, Value a, Value b);

/// XOR-butterfly shuffles over offsets `from`, from/2, ..., 1, each value
/// combined by its op.
void butterfly(Gen &g, MutableArrayRef<Value> values,
               ArrayRef<gpu::AllReduceOperation> ops, int32_t from);

/// Reduces each i32 of `values` by its op over the full CTA of `warps`
/// warps through `scratch[values.size() * warps]`; every thread gets the
/// results. Two barriers.
SmallVector<Value> ctaAllReduce(Gen &g, Value tid, ArrayRef<Value> values,
                                ArrayRef<gpu::AllReduceOperation> ops,
                                Value scratch, int64_t warps);

/// The rank of this thread's `flag` among the set flags of the CTA, in
/// thread order, and their total (through `warpSums[warps]`). Two barriers.
std::pair<Value, Value> ctaRank(Gen &g, Value tid, Value flag,
                                Value warpSums, int64_t warps);

/// CTA-wide reduction of any element type (gpu.all_reduce; every thread of
/// the CTA must call it).
Value ctaReduce(Gen &g, Value v, gpu::AllReduceOperation op);

/// The sum over the rows before `r` of `countOf(q)`, computed by the CTA of
/// `threads` through `scratch`: row r's offset in a list of rows.
Value offsetOfRow(Gen &g, Value r, Value tid, Value scratch, int64_t threads,
                  function_ref<Value(Gen &, Value)> countOf);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_COLLECTIVES_H
