//===- VortexStructureOps.cpp - Kernel, yield and lane-mask verifiers -----===//

#include "Vortex/Dialect/VortexOps.h"

using namespace mlir;
using namespace mlir::vortex;

Schedule KernelOp::getSchedule() { return Schedule::W; }

LogicalResult KernelOp::verify() {
  if (!(*this)->getParentOfType<FlowOp>())
    return emitOpError("must be nested in a vortex.flow body");
  for (Operation &op : getBody().front()) {
    if (isa<YieldOp>(op))
      continue;
    if (isa<KernelOp>(op))
      return op.emitOpError("cannot be nested in another vortex.kernel");
    auto sched = dyn_cast<ScheduledOpInterface>(op);
    if (!sched || sched.getSchedule() != Schedule::W)
      return op.emitOpError("is not workload-fused (schedule W) and cannot "
                            "be part of a vortex.kernel");
  }
  return success();
}

LogicalResult YieldOp::verify() {
  auto kernel = cast<KernelOp>((*this)->getParentOp());
  if (getValues().getTypes() != kernel.getResultTypes())
    return emitOpError("yields ")
           << getValues().size()
           << " value(s) whose types must match the kernel's results";
  return success();
}

LogicalResult MaskLanesOp::verify() {
  auto in = cast<VTensorType>(getInput().getType());
  auto out = cast<VTensorType>(getResult().getType());
  if (in != out)
    return emitOpError("result type must equal the input type, got ")
           << out << " for " << in;
  return success();
}
