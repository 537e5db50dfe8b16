//===- Pipelines.cpp - Vortex pass pipelines ------------------------------===//

#include "Vortex/Pipelines/Pipelines.h"
#include "Vortex/Conversion/Passes.h"
#include "Vortex/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void vortex::buildVortexToLinalgStage(OpPassManager &pm) {
  // vortex_torch's kernel grouping, then explicit padding and lane masks.
  pm.addPass(createVortexFuse());
  pm.addPass(createVortexPadToPow2());
  pm.addPass(createVortexMaskPadding());
  pm.addPass(createConvertVortexToLinalg());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Fuse the explicit gathers and elementwise producers into consumers.
  pm.addNestedPass<func::FuncOp>(createLinalgElementwiseOpFusionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void vortex::buildVortexBufferizeStage(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(options));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void vortex::buildVortexLowerToLLVMStage(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void vortex::buildVortexToCPUPipeline(OpPassManager &pm) {
  buildVortexToLinalgStage(pm);
  buildVortexBufferizeStage(pm);
  buildVortexLowerToLLVMStage(pm);
}

void vortex::registerVortexPipelines() {
  PassPipelineRegistration<>(
      "vortex-to-cpu",
      "Lower vortex flows to the LLVM dialect for the CPU (stages: "
      "vortex-cpu-stage-linalg, -bufferize, -llvm)",
      buildVortexToCPUPipeline);
  PassPipelineRegistration<>("vortex-cpu-stage-linalg",
                             "vortex-to-cpu stage 1: fuse, pad, mask, then flows to linalg",
                             buildVortexToLinalgStage);
  PassPipelineRegistration<>(
      "vortex-cpu-stage-bufferize",
      "vortex-to-cpu stage 2: one-shot bufferization and deallocation",
      buildVortexBufferizeStage);
  PassPipelineRegistration<>("vortex-cpu-stage-llvm",
                             "vortex-to-cpu stage 3: loops to the LLVM dialect",
                             buildVortexLowerToLLVMStage);
  registerVortexNVVMPipelines();
}
