//===- VortexStageOps.cpp - Stage boundaries of a split step --------------===//
//
// vortex.stage_in and vortex.stage_out (VortexStageOps.td): the cuts
// vortex-split-custom-calls makes in an indexer around its custom ops.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Dialect/VortexStageOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::vortex;

#define GET_OP_CLASSES
#include "Vortex/Dialect/VortexStageOps.cpp.inc"

/// A stage value lives in a flow's indexer, one entry per CSR position
/// (ragged) or per row (batched), with power-of-two inner sizes: the
/// runtime's buffer is the value's own layout, without padded lanes.
static LogicalResult verifyStageValue(Operation *op, Type type) {
  auto t = cast<VTensorType>(type);
  if (!t.isRagged() && !t.isBatched())
    return op->emitOpError("stage values are ragged or batched, got ") << t;
  if (t.needsPadding())
    return op->emitOpError("stage values have power-of-two inner sizes (the "
                           "runtime's buffers have no padded lanes), got ")
           << t;
  auto flow = op->getParentOfType<FlowOp>();
  if (flow &&
      flow.getCacheBody().getParent()->isAncestor(op->getParentRegion()))
    return op->emitOpError("is on the cache side; stages split the indexer");
  return success();
}

LogicalResult StageInOp::verify() {
  if (getName().empty())
    return emitOpError("needs a name");
  return verifyStageValue(*this, getResult().getType());
}

LogicalResult StageOutOp::verify() {
  if (getName().empty())
    return emitOpError("needs a name");
  return verifyStageValue(*this, getValue().getType());
}
