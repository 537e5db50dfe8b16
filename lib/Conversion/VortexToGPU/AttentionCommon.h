//===- AttentionCommon.h - Parts the attend split kernels share -*- C++ -*-===//
//
// The attend step has two split kernels (docs/gpu.md, "Attention"): one on
// CUDA cores for every supported shape (AttentionKernels.cpp) and one on
// tensor cores for bf16 rows of D 64 or 128 and up to 16 query heads
// (AttentionMMA.cpp). Both take the same arguments, split a row's blocks the
// same way and merge their groups' softmax states through shared memory the
// same way, so the combine kernel and the runtime see one contract.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_ATTENTIONCOMMON_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_ATTENTIONCOMMON_H

#include "Kernels.h"

namespace mlir::vortex::gpugen {

inline constexpr double kLog2e = 1.4426950408889634;
inline constexpr double kLn2 = 0.6931471805599453;

/// The split kernel's arguments, in the order of its parameters.
struct SplitArgs {
  Value q, k, v, indptr, indices, lastLen, smScale, o, lse, partialO,
      partialLse, splits;
  /// A packed int4 pool's scales (after `splits`; null otherwise).
  Value kScale, vScale;
};

/// The bounds of row `r`: its CSR range clamped to [0, total] (a malformed
/// indptr reads nothing outside kv_indices) and its token count.
struct AttendRow {
  Value start, n, len;
};
AttendRow attendRow(Gen &g, int64_t blockSize, Value indptr, Value lastLen,
                    Value r, Value total, Value numBlocks);

/// The tokens [begin, end) of split `split` of a row: whole blocks.
std::pair<Value, Value> splitTokens(Gen &g, const AttendRow &row,
                                    int64_t blockSize, Value splits,
                                    Value split);

/// Where a CTA's groups left their softmax states: m and l at
/// [group * slotHeads + h], the accumulators at (that slot) * accStride + c.
struct GroupStates {
  Value m, l, acc;
  int64_t groups, slotHeads, accStride;
};

/// Merges the groups' states of heads [h0, h0 + slotHeads) over the CTA's
/// `threads` threads and stores o and lse (one split) or the split's
/// normalized partial o and its lse. Every thread must call it.
void mergeGroupsAndStore(Gen &g, const AttendShape &shape, const SplitArgs &a,
                         const GroupStates &st, Value h0, Value r,
                         Value split, Value tid, int64_t threads);

Value negInf(Gen &g);
Value isNegInf(Gen &g, Value x);
Value exp2(Gen &g, Value x);
Value xorShuffle(Gen &g, Value v, int64_t offset);

/// Whether the tensor-core split kernel takes `shape`.
bool attendMMAFits(const AttendShape &shape);
/// The tensor-core split kernel's body (128 threads; attendMMAFits).
void emitSplitBodyMMA(Gen &g, gpu::GPUFuncOp func, const AttendShape &shape,
                      const SplitArgs &a, bool streaming);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_ATTENTIONCOMMON_H
