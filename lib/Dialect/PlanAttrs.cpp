//===- PlanAttrs.cpp - The GPU generator's typed kernel plans -------------===//

#include "Vortex/Dialect/VortexDialect.h"

using namespace mlir;
using namespace mlir::vortex;

using EmitFn = function_ref<InFlightDiagnostic()>;

LogicalResult WorkloadPlanAttr::verify(
    EmitFn emitError, int64_t lanes, BoolAttr narrow, int64_t threads,
    int64_t groupsPerCTA, int64_t registerBudget, BoolAttr hoist,
    std::optional<int64_t> itemsPerIteration, std::optional<int64_t> ctasPerSM,
    std::optional<int64_t> carriedRegisters,
    std::optional<int64_t> itemRegisters, std::optional<int64_t> sliceColumns,
    BoolAttr envelopeMMA) {
  if (lanes < 1 || threads < 1 || groupsPerCTA < 1 || registerBudget < 0)
    return emitError() << "a workload plan needs lanes, threads and "
                          "groups_per_cta >= 1 and register_budget >= 0";
  // The score kernel's decisions come together: a cache kernel has none.
  bool any = hoist || itemsPerIteration || ctasPerSM || carriedRegisters ||
             itemRegisters || sliceColumns || envelopeMMA;
  bool all = hoist && itemsPerIteration && ctasPerSM && carriedRegisters &&
             itemRegisters && sliceColumns && envelopeMMA;
  if (any && !all)
    return emitError() << "a score kernel's plan records hoist, "
                          "items_per_iteration, ctas_per_sm, "
                          "carried_registers, item_registers, slice_columns "
                          "and envelope_mma together";
  if (all && (*itemsPerIteration < 1 || *ctasPerSM < 0 ||
              *carriedRegisters < 0 || *itemRegisters < 0 ||
              *sliceColumns < 0))
    return emitError() << "items_per_iteration must be >= 1 and the other "
                          "counts >= 0";
  return success();
}

LogicalResult SelectPlanAttr::verify(EmitFn emitError, int64_t threads,
                                     int64_t registerKeys, int64_t radixBits,
                                     int64_t rankSortMax, int64_t sortCapacity,
                                     int64_t valueBinCandidates,
                                     int64_t ctasPerSM, BoolAttr storesSaved) {
  if (threads < 1 || radixBits < 1 || radixBits > 32)
    return emitError() << "a selection plan needs threads >= 1 and "
                          "radix_bits in [1, 32]";
  if (registerKeys < 0 || rankSortMax < 0 || sortCapacity < 0 ||
      valueBinCandidates < 0 || ctasPerSM < 0)
    return emitError() << "a selection plan's counts must be >= 0";
  return success();
}
