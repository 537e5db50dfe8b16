//===- Kernels.h - The pass's kernel kinds ----------------------*- C++ -*-===//
//
// What convert-vortex-to-gpu (VortexToGPU.cpp) calls for each kernel kind
// of library VortexToGPU: the workload kernels (WorkloadKernels.cpp, planned
// by WorkloadPlan.cpp), the per-row segment kernels (RowKernels.cpp), the
// streamed-weight GeMM and the padded reshape (StandaloneKernels.cpp) and
// the attend kernels (AttentionKernels.cpp, AttentionMMA.cpp). The top-k
// and union kernels are behind Selection/Selection.h; what every kind
// builds with is KernelBuilder.h.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_KERNELS_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_KERNELS_H

#include "KernelBuilder.h"

namespace mlir::vortex::gpugen {

/// Emits the persistent workload kernel of one indexer vortex.kernel (or a
/// lone workload op) and records it.
LogicalResult emitIndexerWorkloadKernel(FlowContext &ctx, Operation *op,
                                        StringRef name);
/// Emits the kernel of one cache-side vortex.kernel (or lone op).
LogicalResult emitCacheKernel(FlowContext &ctx, Operation *op,
                              StringRef name);
/// Plans the workload kernel `name` of `op` (a score kernel when
/// `indexerSide`) and reports the plan as a remark at `op`, emitting
/// nothing (convert-vortex-to-gpu plan-only).
LogicalResult reportWorkloadPlan(FlowContext &ctx, Operation *op,
                                 StringRef name, bool indexerSide);
/// Emits the per-row scan kernel of a softmax, normalize, conv1d or a
/// reduction over dim 0.
LogicalResult emitSegmentKernel(FlowContext &ctx, Operation *op,
                                StringRef name);

/// Whether `op` is a GeMM whose parameter weight is streamed (over the
/// tile bound, or grouped): it gets emitStreamedGemmKernel, not a workload
/// kernel.
bool isStreamedGemm(Operation *op);
/// Emits the kernels of a GeMM with a streamed parameter weight: two
/// alternatives of one manifest choice, both 8 rows a CTA
/// (StandaloneKernels.cpp).
LogicalResult emitStreamedGemmKernel(FlowContext &ctx, GeMMOp op,
                                     StringRef name);
/// Whether `op` is a standalone (padded) reshape of a batched or ragged
/// float value: it gets emitReshapeKernel, not a workload kernel.
bool isCopiedReshape(Operation *op);

/// Emits the kernel of a learned descriptor (cache side): it writes its
/// field, a kernel of its own next to the cache's workload kernel
/// (StandaloneKernels.cpp).
LogicalResult emitLearnedDescriptorKernel(FlowContext &ctx,
                                          LearnedDescriptorOp op,
                                          StringRef name);
/// Emits the copy kernel of a padded reshape (grid items of the result's
/// lead, one a CTA; StandaloneKernels.cpp).
LogicalResult emitReshapeKernel(FlowContext &ctx, ReshapeOp op,
                                StringRef name);

/// What the attend kernels are specialized for: the flow's block size, head
/// dim D, group size G and query tokens T, and the k/v and q dtypes.
struct AttendShape {
  int64_t blockSize, headDim, groupSize, queryTokens;
  Type kvType, qType;
};
/// Rows x splits the attend step's split scratch holds: the runtime picks
/// kv_splits > 1 only when rows x kv_splits fits (docs/gpu.md, "Attention").
inline constexpr int64_t kAttendSplitSlots = 2048;
/// Refuses, with a diagnostic at `loc`, a shape the kernels cannot do.
LogicalResult checkAttendShape(Location loc, const AttendShape &shape);
/// Emits the attend step's two kernels, `<name>_split` (grid `row_splits`:
/// rows x kv_splits CTAs) and `<name>_combine` (grid `rows`; a no-op at one
/// split), their scratch, and records them (step attend).
LogicalResult emitAttendKernels(FlowContext &ctx, Location loc,
                                const AttendShape &shape, StringRef name);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_KERNELS_H
