//===- Passes.h - Vortex GPU gap-closing passes -----------------*- C++ -*-===//
//
// Passes that make the kernels of convert-vortex-to-gpu lower through MLIR
// 22.1.8's convert-gpu-to-nvvm (see docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_TRANSFORMS_GPU_PASSES_H
#define VORTEX_TRANSFORMS_GPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include <optional>

namespace mlir::vortex {

#define GEN_PASS_DECL
#include "Vortex/Transforms/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Vortex/Transforms/GPU/Passes.h.inc"

/// The rewrite of vortex-gpu-lower-nontemporal-loads: a nontemporal load of
/// global memory in an NVVM kernel as inline ld.global.L1::no_allocate.
void populateVortexGPULowerNontemporalLoadsPatterns(
    RewritePatternSet &patterns);

/// The number of an `sm_<number>[suffix]` chip name (90 for sm_90a), or
/// nothing when `chip` is not of that form.
std::optional<unsigned> parseSMVersion(llvm::StringRef chip);

} // namespace mlir::vortex

#endif // VORTEX_TRANSFORMS_GPU_PASSES_H
