//===- Passes.h - Vortex transformation passes ------------------*- C++ -*-===//

#ifndef VORTEX_TRANSFORMS_PASSES_H
#define VORTEX_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::vortex {

#define GEN_PASS_DECL
#include "Vortex/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Vortex/Transforms/Passes.h.inc"

} // namespace mlir::vortex

#endif // VORTEX_TRANSFORMS_PASSES_H
