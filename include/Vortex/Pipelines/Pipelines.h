//===- Pipelines.h - Vortex pass pipelines ----------------------*- C++ -*-===//
//
// Named pipelines from vortex flows down to executable code. Each pipeline is
// a sequence of stages that are also registered on their own, so every stage
// can be run and dumped in isolation (or use --mlir-print-ir-after-all).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_PIPELINES_PIPELINES_H
#define VORTEX_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir::vortex {

/// Stage 1: vortex-fuse, vortex-pad, vortex-mask-padding, then vortex flows
/// -> linalg on tensors (+ elementwise fusion).
void buildVortexToLinalgStage(OpPassManager &pm);
/// Stage 2: tensors -> buffers, with deallocation.
void buildVortexBufferizeStage(OpPassManager &pm);
/// Stage 3: loops and memrefs -> the LLVM dialect.
void buildVortexLowerToLLVMStage(OpPassManager &pm);

/// vortex-to-cpu: stages 1-3; the result translates to LLVM IR with
/// `mlir-translate --mlir-to-llvmir` and each step function has a C
/// interface (`_mlir_ciface_<flow>_indexer`, `_mlir_ciface_<flow>_cache`).
void buildVortexToCPUPipeline(OpPassManager &pm);

/// Registers `vortex-to-cpu` and its stages `vortex-cpu-stage-linalg`,
/// `vortex-cpu-stage-bufferize` and `vortex-cpu-stage-llvm`.
void registerVortexPipelines();

} // namespace mlir::vortex

#endif // VORTEX_PIPELINES_PIPELINES_H
