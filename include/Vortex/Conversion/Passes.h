//===- Passes.h - Vortex conversion passes ----------------------*- C++ -*-===//

#ifndef VORTEX_CONVERSION_PASSES_H
#define VORTEX_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::vortex {

/// The top-k CTA shapes (threads) convert-vortex-to-gpu emits, in the
/// runtime's order of preference (docs/gpu.md, "Top-k"); `topk-threads`
/// names one of them, or 0 for all.
inline constexpr int64_t kTopKThreads[] = {512, 256, 128};

/// Whether `threads` is a valid `topk-threads` option (0: planned).
inline bool isTopKThreadsOption(int64_t threads) {
  return threads == 0 || llvm::is_contained(kTopKThreads, threads);
}

/// Whether `rows` is a valid `topk-saves-min-rows` option: -1 (saves stay in
/// the score kernel) or a row count a launch can have.
inline bool isTopKSavesMinRowsOption(int64_t rows) {
  return rows >= -1 && rows <= (int64_t{1} << 30);
}

#define GEN_PASS_DECL
#include "Vortex/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Vortex/Conversion/Passes.h.inc"

} // namespace mlir::vortex

#endif // VORTEX_CONVERSION_PASSES_H
