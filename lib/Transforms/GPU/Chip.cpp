//===- Chip.cpp - Chip names of the GPU passes ----------------------------===//

#include "Vortex/Transforms/GPU/Passes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

std::optional<unsigned> vortex::parseSMVersion(StringRef chip) {
  unsigned sm = 0;
  // sm_<number>, with an architecture-specific suffix allowed (sm_90a).
  if (!chip.consume_front("sm_") || chip.consumeInteger(10, sm) ||
      !llvm::all_of(chip, llvm::isLower))
    return std::nullopt;
  return sm;
}
