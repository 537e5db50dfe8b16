//===- LowerVectorTransfers.cpp - Vector transfers and masks in kernels ---===//
//
// convert-gpu-to-nvvm of MLIR 22 leaves vector.transfer_read/write and
// vector.mask alone and lower-vector-mask cannot nest under a gpu.module, so
// the NVVM translation fails on them. Rewrite them here, on any op, into
// (masked) vector loads and stores.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Transforms/GPU/Passes.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXGPULOWERVECTORTRANSFERS
#include "Vortex/Transforms/GPU/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;

namespace {

struct VortexGPULowerVectorTransfersPass final
    : vortex::impl::VortexGPULowerVectorTransfersBase<
          VortexGPULowerVectorTransfersPass> {
  void runOnOperation() override {
    // Kernels work on buffers; the mask patterns would also build tensor ops.
    WalkResult onTensors = getOperation()->walk([](Operation *op) {
      auto xfer = dyn_cast<VectorTransferOpInterface>(op);
      if (!xfer || !isa<RankedTensorType>(xfer.getBase().getType()))
        return WalkResult::advance();
      op->emitOpError("on a tensor cannot be lowered in a kernel: bufferize "
                      "first");
      return WalkResult::interrupt();
    });
    if (onTensors.wasInterrupted())
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    // vector.mask { transfer } -> masked transfer; out-of-bounds transfers
    // -> explicit masks (64-bit indices: kernels index with i64).
    vector::populateVectorMaskLoweringPatternsForSideEffectingOps(patterns);
    vector::populateVectorMaskMaterializationPatterns(
        patterns, /*force32BitVectorIndices=*/false);
    vector::populateVectorMaskOpLoweringPatterns(patterns);
    vector::populateVectorStepLoweringPatterns(patterns);
    // Minor-identity 1-D transfers -> vector.(masked)load/store (+broadcast).
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    vector::populateVectorTransferLoweringPatterns(patterns,
                                                   /*maxTransferRank=*/1);
    // Broadcast transfers read a 0-D vector that convert-gpu-to-nvvm cannot
    // broadcast (it does not run convert-vector-to-llvm's lowerings).
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    // n-D transfers -> 1-D ones; unrolled, since kernel vectors are small and
    // the looped form would put an alloca in local memory.
    populateVectorToSCFConversionPatterns(
        patterns,
        VectorTransferToSCFOptions().setTargetRank(1).enableFullUnroll());
    vector::MaskOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      emitError(getOperation()->getLoc())
          << "vector transfer lowering did not converge";
      return signalPassFailure();
    }

    WalkResult left = getOperation()->walk([](Operation *op) {
      if (!isa<vector::TransferReadOp, vector::TransferWriteOp>(op))
        return WalkResult::advance();
      op->emitOpError("could not be lowered to vector loads and stores");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
