//===- RowSelection.h - A row's top-k selection ----------------*- C++ -*-===//
//
// One CTA's selection of a dense CSR row's k best scores (RowSelection.cpp:
// the radix select, the value bins, the rank and bitonic sorts, the argmax
// of a large k), apart from the kernel around it (TopKKernels.cpp: the
// plan's choice, the knobs, the row's bounds, output and saved scores).
// What both sides agree on: the plan, the shared buffers' sizes and the
// row being selected.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_ROWSELECTION_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_ROWSELECTION_H

#include "SelectionCommon.h"

namespace mlir::vortex::gpugen {

/// Keys a row's selection can gather and sort in shared memory; a larger k
/// takes the slow path (one CTA-wide maximum per pick).
inline constexpr int64_t kSortCapacity = 4096;
inline constexpr int64_t kRadixBins = 256;
/// The value-bin pass's boundary bin is ranked directly when it holds at
/// most this many keys (they sit at the end of the keys buffer meanwhile).
inline constexpr int64_t kCandidateCapacity = 128;
/// Score keys a top-k CTA holds in registers, all threads together: rows of
/// up to this many scored blocks read their keys once, with every load in
/// flight; longer rows read the rest again from global memory in every
/// pass.
inline constexpr int64_t kHeldKeys = 2048;
/// Up to this many threads count one key's rank, each over a strided share.
inline constexpr int64_t kRankThreadsPerKey = 8;
/// Keys each counting thread compares per loop iteration (loads first).
inline constexpr int64_t kRankUnroll = 8;
/// The rank sort reads keys[0, roundUp(k, kRankPad)); the gather leaves
/// keys[k, ...) at 0, which ranks below every key.
inline constexpr int64_t kRankPad = kRankThreadsPerKey * kRankUnroll;

/// The top-k's CTA shape, fixed before any IR is built and recorded in its
/// `vortex.plan`: `threads` threads hold kHeldKeys / threads keys each.
struct SelectPlan {
  int64_t threads;
  /// Whether one pass of value bins comes before the digit passes.
  bool valueBins;
  int64_t warps() const { return threads / 32; }
  int64_t registerKeys() const { return kHeldKeys / threads; }
  /// k up to this is sorted by rank (each key counts the larger keys) in
  /// one pass without barriers, at least one thread per key; a larger k by
  /// a bitonic sort in shared memory.
  int64_t rankSortSize() const { return threads; }
};

/// The words of the `ctl` shared buffer.
enum Ctl : int64_t {
  kCtlDigit = 0,
  kCtlRemaining = 1,
  kCtlBinCount = 2,
  kCtlSlots = 3,
  kCtlCandidates = 4,
  kCtlWords = 5
};

/// A row's selection: the shared buffers, the scores and block ids it
/// reads, where it writes (block `j` of the row's output goes to
/// `out[at + j]`), and the row's scored range [lo, lo + m), k kept.
struct SelectRow {
  Value keys, hist, ctl, warpSums, score, dense, out, tid;
  Value lo, m, k, at;
  /// ids[s]: the block id of the key in keys[s], for k <= rankSortSize.
  Value ids;
  SelectPlan plan;
  int64_t threads() const { return plan.threads; }
};

/// The k best of the row's scored range, in descending order, at
/// out[at, at + k). Every thread of the CTA calls it (barriers inside).
void emitSelection(Gen &g, const SelectRow &R);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_SELECTION_ROWSELECTION_H
