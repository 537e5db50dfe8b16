//===- Pad.cpp - vortex-pad: explicit power-of-two padding ----------------===//
//
// vortex-pad makes the padded shape of non-power-of-two vtensors explicit in
// their types (vortex-mask-padding, MaskPadding.cpp, then masks the padded
// lanes).
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexOps.h"
#include "Vortex/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXPADTOPOW2
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

} // namespace
