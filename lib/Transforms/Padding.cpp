//===- Padding.cpp - Explicit power-of-two padding and lane masks ---------===//
//
// vortex-pad makes the padded shape of non-power-of-two vtensors explicit in
// their types; vortex-mask-padding then gives the padded lanes the neutral
// value of every reduction and contraction that reads them.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <limits>

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXPADTOPOW2
#define GEN_PASS_DEF_VORTEXMASKPADDING
#include "Vortex/Transforms/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;

namespace {

void padValue(Value v) {
  auto t = dyn_cast<VTensorType>(v.getType());
  if (t && t.needsPadding() && !t.getExplicitPadding())
    v.setType(t.withExplicitPadding());
}

struct VortexPadToPow2Pass
    : public vortex::impl::VortexPadToPow2Base<VortexPadToPow2Pass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    module.walk([](FlowOp flow) {
      flow.walk([](Operation *op) {
        for (Region &region : op->getRegions())
          for (Block &block : region)
            for (BlockArgument arg : block.getArguments())
              padValue(arg);
        for (Value r : op->getResults())
          padValue(r);
      });
    });
    // Outside flows, vtensor types are part of function signatures.
    WalkResult result = module.walk([](Operation *op) {
      if (!isa<VortexDialect>(op->getDialect()) || op->getParentOfType<FlowOp>() ||
          isa<FlowOp>(op))
        return WalkResult::advance();
      for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                       op->getResultTypes()))
        if (auto v = dyn_cast<VTensorType>(t);
            v && v.needsPadding() && !v.getExplicitPadding()) {
          op->emitOpError("outside a vortex.flow cannot be padded: its "
                          "types belong to the enclosing function");
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

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
