//===- MaskPadding.cpp - vortex-mask-padding: neutral padded lanes --------===//
//
// After vortex-pad (Pad.cpp), gives the padded lanes the neutral value of
// every reduction and contraction that reads them.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXMASKPADDING
#include "Vortex/Transforms/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;

namespace {

/// True iff axis `dim` (1 or 2) of `t` holds padded lanes.
bool paddedAlong(VTensorType t, int64_t dim) {
  return t.getExplicitPadding() &&
         nextPowerOf2(t.getInner(dim)) != t.getInner(dim);
}


/// Replaces operand `operand` of its owner by a masked copy.
void maskOperand(OpOperand &operand, double value) {
  Operation *owner = operand.getOwner();
  OpBuilder b(owner);
  Value in = operand.get();
  auto mask = MaskLanesOp::create(b, owner->getLoc(), in.getType(), in,
                                  b.getF32FloatAttr(value));
  operand.set(mask.getResult());
}

struct VortexMaskPaddingPass
    : public vortex::impl::VortexMaskPaddingBase<VortexMaskPaddingPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult implicit = module.walk([](Operation *op) {
      if (!isa<VortexDialect>(op->getDialect()))
        return WalkResult::advance();
      for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                       op->getResultTypes()))
        if (auto v = dyn_cast<VTensorType>(t);
            v && v.needsPadding() && !v.getExplicitPadding()) {
          op->emitOpError("uses ")
              << v << " whose padding is implicit; run --vortex-pad first";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (implicit.wasInterrupted())
      return signalPassFailure();

    SmallVector<std::pair<OpOperand *, double>> masks;
    module.walk([&](Operation *op) {
      if (auto red = dyn_cast<ReductionOpInterface>(op)) {
        int64_t dim = red.getReducedDim();
        OpOperand &in = op->getOpOperand(0);
        if (dim != 0 && paddedAlong(cast<VTensorType>(in.get().getType()), dim))
          masks.push_back({&in, neutralOf(red.getReduceKind())});
        return;
      }
      // A GeMM with a streamed or grouped weight contracts over the real
      // extent on both back ends (its GPU kernel, ContractionToLinalg.cpp):
      // nothing to mask, and the weight is never held as a tile.
      if (auto gemm = dyn_cast<GeMMOp>(op))
        if (gemm.readsStreamedWeight())
          return;
      if (isa<GeMMOp, GeMVOp>(op))
        for (OpOperand &in : op->getOpOperands())
          if (paddedAlong(cast<VTensorType>(in.get().getType()), 2))
            masks.push_back({&in, 0.0});
    });
    for (auto [operand, value] : masks)
      maskOperand(*operand, value);
  }
};

} // namespace
