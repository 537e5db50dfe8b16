//===- WorkloadPlan.h - The plan of a fused workload kernel -----*- C++ -*-===//
//
// Every decision of a score or cache kernel, made from the flow and the
// options before any IR is built (IREE's KernelConfig is the model): what
// it reads and stores, its parameters, the per-row part and its hoisting,
// the lanes per item and every value's tile layout, the tensor-core sums
// and the items per iteration. The kernel skeletons (WorkloadKernels.cpp)
// emit what the plan says; the plan alone also gives the kernel's
// `vortex.plan` attribute and its manifest record, so it can be computed
// and checked without emitting a kernel.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_WORKLOADPLAN_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_WORKLOADPLAN_H

#include "TileOps.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::vortex::gpugen {

/// A tile a kernel stores once per item.
struct PendingStore {
  Value value;        // the vortex value whose tile is stored
  std::string buffer; // destination buffer
  bool byBlockId;     // paged field row (else CSR position / batched row)
  bool batchedRow;    // batched scratch: at the item's row
  bool sharedRow;     // parameter-format scratch: at row 0
  bool isScratch;
  std::optional<double> fill; // vortex.fill
  VTensorType fillType;
  bool bySlot = false; // slotted field row: at slot_of_ptr[block id]
  /// A save the top-k stores instead at more rows (FlowContext::
  /// deferredSaves): stored only when the step's rows are few.
  bool onlyFewRows = false;
};

/// The decisions of one workload kernel, recorded on it as `vortex.plan`.
struct KernelPlan {
  /// A score kernel (the persistent loop over the dense CSR), else a cache
  /// kernel (one group per completed block).
  bool indexerSide = false;
  /// The kernel's ops in order (the lone op, or a vortex.kernel's body).
  SmallVector<Operation *> ops;

  /// Inputs (defined outside the kernel) and what it stores per item.
  llvm::SetVector<Value> inputs;
  SmallVector<PendingStore> stores;

  /// The parameters, and the buffers they read and write (the manifest's).
  SmallVector<Param> params;
  SmallVector<std::string> reads, writes;
  /// The guards' status buffer and its parameter; byBlock: the kernel
  /// addresses a paged tensor by block id, so num_blocks follows it.
  std::string statusBuf;
  unsigned statusArg = 0;
  bool byBlock = false;
  /// Cache kernels of flows with slotted fields: the slot map's parameter
  /// (docs/contract.md, "Slotted fields").
  std::optional<unsigned> slotMapArg;
  /// saves_min_rows, when a save is stored only at few rows.
  std::optional<unsigned> savesMinRowsArg;

  /// The per-row part (score kernels): its ops, and its values that item
  /// code reads.
  SmallVector<Operation *> rowOps;
  DenseSet<Operation *> rowOpSet;
  llvm::SetVector<Value> rowValues;

  /// Lanes per item; 1 is narrow mode (every tile replicated), taken when
  /// an op needs a layout the lanes cannot do in registers.
  int64_t lanes = 1;
  bool narrow = false;
  /// The per-row values are computed once per row change and carried
  /// (no cross-lane op among them), else with every item.
  bool hoist = false;
  /// Items a group loads together per iteration of the persistent loop.
  int64_t itemsPerIteration = 1;
  /// Columns of a lane's slice of a row (LaneLayout::sliceColumns; 0: a
  /// lane's columns are contiguous).
  int64_t sliceColumns = 0;
  int64_t threads = 256, itemsPerWarp = 32, groupsPerCTA = 8;
  /// 32-bit registers the carried per-row values and one item's loaded rows
  /// take; items per iteration keep their sum within the budget.
  int64_t carriedRegisters = 0, itemRegisters = 0;
  static constexpr int64_t kRegisterBudget = 64;
  /// Every value's layout; the per-row values the loop carries, and their
  /// types (storage vectors for loaded inputs, f32 otherwise).
  DenseMap<Value, TileShape> shapes;
  SmallVector<std::pair<Value, TileShape>> rowShapes;
  SmallVector<Type> carryTypes;
  /// Envelope sums on tensor cores (EnvelopeMMA.cpp): the reductions, their
  /// x (a per-row input nothing else reads, so the loop carries x's mma
  /// fragments instead of x) and the fragments' i32 registers.
  struct {
    Value x;
    DenseSet<Operation *> sums;
    int64_t fragmentRegisters = 0;
  } mma;
};

/// Plans the workload kernel of `root` (a vortex.kernel or a lone op): a
/// score kernel when `indexerSide`, else a cache kernel. Builds no IR; it
/// allocates the scratch of the kernel's outputs and the status buffer in
/// `ctx.abi`, which its parameters name. Failure is diagnosed at `root`.
FailureOr<KernelPlan> planWorkloadKernel(FlowContext &ctx, Operation *root,
                                         bool indexerSide);

/// Batched and parameter values: the same for every item of a row.
inline bool isRowInvariant(Value v) {
  auto t = dyn_cast<VTensorType>(v.getType());
  return t && (t.isBatched() || t.isParameter());
}
/// The element type of the buffer holding `v`, or null if none does.
Type storageOf(const FlowContext &ctx, Value v);
/// Whether an input `v` (in `buffer`) is loaded nontemporal.
bool isStreamed(const FlowContext &ctx, const KernelPlan &plan, Value v,
                StringRef buffer);

/// The plan as the kernel's `vortex.plan` attribute.
WorkloadPlanAttr planAttr(MLIRContext *context, const FlowContext &ctx,
                          const KernelPlan &plan);
/// The manifest record of the planned kernel `name`.
KernelRecord kernelRecord(const FlowContext &ctx, const KernelPlan &plan,
                          StringRef name);

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_WORKLOADPLAN_H
