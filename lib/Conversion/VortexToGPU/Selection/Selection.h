//===- Selection.h - The top-k and union kernels ----------------*- C++ -*-===//
//
// The interface of the selection kernels (library VortexGPUSelection): what
// the pass (VortexToGPU.cpp) calls for the ops that pick a row's blocks.
// Their algorithms and helpers stay behind it (RowSelection.h,
// SelectionCommon.h); the library uses only the kernel builder and the
// collectives (VortexGPUKernelBuilder).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_SELECTION_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_SELECTION_H

#include "../KernelBuilder.h"

namespace mlir::vortex::gpugen {

/// Emits the per-row top-k kernel of vortex.topk / vortex.approx_topk (the
/// sparse CSR) or of vortex.trtllm_topk (a block table and counts).
LogicalResult emitTopKKernel(FlowContext &ctx, Operation *op,
                             StringRef name);
/// Emits the two kernels of vortex.union: each row's deduplicated union
/// into scratch, then packed into the sparse CSR.
LogicalResult emitUnionKernels(FlowContext &ctx, UnionOp op,
                               StringRef name);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_SELECTION_H
