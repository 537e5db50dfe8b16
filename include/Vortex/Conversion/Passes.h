//===- Passes.h - Vortex conversion passes ----------------------*- C++ -*-===//

#ifndef VORTEX_CONVERSION_PASSES_H
#define VORTEX_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::vortex {

#define GEN_PASS_DECL
#include "Vortex/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Vortex/Conversion/Passes.h.inc"

} // namespace mlir::vortex

#endif // VORTEX_CONVERSION_PASSES_H
