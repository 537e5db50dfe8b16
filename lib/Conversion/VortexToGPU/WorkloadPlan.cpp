//===- WorkloadPlan.cpp - Planning a fused workload kernel ----------------===//
//
// The planner of the score and cache kernels: every decision, from the
// flow's ops and the pass options, before any IR is built. The layouts come
// from the op families' rules (LaneLayout), which the emitters follow too,
// so the emitted kernel is the planned one.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "WorkloadPlan.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

/// Plans one kernel; the lane layout it plans at is its base.
class WorkloadPlanner : LaneLayout {
public:
  WorkloadPlanner(FlowContext &ctx, Operation *root, bool indexerSide)
      : ctx(ctx), root(root), indexerSide(indexerSide) {
    plan.indexerSide = indexerSide;
    if (auto kernel = dyn_cast<KernelOp>(root)) {
      for (Operation &op : kernel.getBody().front())
        if (!isa<YieldOp>(op))
          ops.push_back(&op);
    } else {
      ops.push_back(root);
    }
    plan.ops = ops;
  }

  /// The decisions, then the parameters they imply.
  LogicalResult run() {
    if (failed(planKernel()))
      return failure();
    buildParams();
    return success();
  }

  KernelPlan plan;

private:
  FlowContext &ctx;
  Operation *root;
  bool indexerSide;
  SmallVector<Operation *> ops;

  bool contains(Operation *op) {
    return op && (op == root || root->isProperAncestor(op));
  }

  void collectIO();
  void buildParams();
  void collectRowPart();
  LogicalResult planKernel();
  LogicalResult inferShapes(bool &known);
  void planRowPart();
  Type storageOf(Value v) { return gpugen::storageOf(ctx, v); }
  int64_t registersOf(Value v, const TileShape &t);
  int64_t planItemsPerIteration();
  int64_t carriedRegisters();
  int64_t rowPartRegisters();
  bool tryWiderLanes(int64_t wide);
  void planSectorSlices(int64_t columns);
  void planHoistAndRowPart();
  void planEnvelopeMMA();
};

} // namespace

//===----------------------------------------------------------------------===//
// Inputs, stores and parameters
//===----------------------------------------------------------------------===//

/// Inputs (defined outside the kernel), outputs (used outside) and side
/// effects.
void WorkloadPlanner::collectIO() {
  llvm::SetVector<Value> &inputs = plan.inputs;
  SmallVector<PendingStore> &stores = plan.stores;
  // The destination field of a write, save or fill is not read.
  inputs.clear();
  for (Operation *op : ops)
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      bool destination =
          (isa<SaveOp, WriteOp>(op) && use.getOperandNumber() == 1) ||
          isa<FillOp>(op);
      if (!destination && !contains(v.getDefiningOp()) &&
          isa<VTensorType>(v.getType()))
        inputs.insert(v);
    }
  stores.clear();
  auto addOutput = [&](Value outer, Value inner) {
    if (outer.use_empty())
      return;
    std::string buf = ctx.allocScratch(outer);
    auto type = cast<VTensorType>(outer.getType());
    stores.push_back({inner, buf, false, type.isBatched(), type.isParameter(),
                      true, std::nullopt, {}});
  };
  if (auto kernel = dyn_cast<KernelOp>(root)) {
    auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
    for (auto [outer, inner] :
         llvm::zip(kernel.getResults(), yield.getValues()))
      addOutput(outer, inner);
  } else {
    for (Value r : root->getResults())
      addOutput(r, r);
  }
  for (Operation *op : ops) {
    if (auto save = dyn_cast<SaveOp>(op))
      stores.push_back({save.getValue(), ctx.bufferOf.lookup(save.getField()),
                        true, false, false, false, std::nullopt, {}, false,
                        ctx.isDeferred(save)});
    if (auto write = dyn_cast<WriteOp>(op))
      stores.push_back({write.getValue(),
                        ctx.bufferOf.lookup(write.getField()), true, false,
                        false, false, std::nullopt, {},
                        cast<VTensorType>(write.getField().getType())
                            .isSlotted()});
    if (auto fill = dyn_cast<FillOp>(op))
      stores.push_back({Value(), ctx.bufferOf.lookup(fill.getField()), true,
                        false, false, false, fill.getValue().convertToDouble(),
                        cast<VTensorType>(fill.getField().getType()),
                        cast<VTensorType>(fill.getField().getType())
                            .isSlotted()});
  }
}

/// The kernel's parameters: the CSR or block ids and their scalar, the
/// buffers it reads and writes, then the guards' status buffer and
/// num_blocks; `reads` and `writes` name the buffers for the manifest.
void WorkloadPlanner::buildParams() {
  SmallVector<Param> &params = plan.params;
  SmallVector<std::string> &reads = plan.reads, &writes = plan.writes;
  auto i32 = IntegerType::get(root->getContext(), 32);
  plan.slotMapArg.reset();
  if (indexerSide) {
    params.push_back({abi::kDenseIndptr.str(), true, i32});
    params.push_back({abi::kDenseIndices.str(), true, i32});
    params.push_back({abi::kRows.str(), false, {}});
  } else {
    params.push_back({abi::kBlockIds.str(), true, i32});
    params.push_back({abi::kNumNew.str(), false, {}});
  }
  std::set<std::string> bufferNames;
  for (Value v : plan.inputs) {
    std::string buf = ctx.bufferOf.lookup(v); // planKernel checked it
    bufferNames.insert(buf);
    reads.push_back(buf);
  }
  for (PendingStore &st : plan.stores) {
    bufferNames.insert(st.buffer);
    writes.push_back(st.buffer);
  }
  // The slotted fields' row count comes from the first one's extent.
  bool slotted = !indexerSide && !ctx.abi.slotsDefinedBy.empty();
  if (slotted)
    bufferNames.insert(ctx.abi.slotsDefinedBy);
  // A packed int4 pool is read with its scales (docs/contract.md "INT4 KV").
  if (ctx.config.isInt4KV())
    for (auto [pool, scale] : {std::pair<StringRef, StringRef>{
                                   "k", abi::kKInt4Scale},
                               {"v", abi::kVInt4Scale}})
      if (bufferNames.count(pool.str())) {
        bufferNames.insert(scale.str());
        reads.push_back(scale.str());
      }
  for (const std::string &buf : bufferNames)
    params.push_back({buf, true, ctx.abi.tensors[buf].elementType});
  // A flow with slotted fields skips the blocks without a slot in every
  // cache kernel, so each reads the slot map.
  if (slotted) {
    plan.slotMapArg = params.size();
    params.push_back({abi::kSlotOfPtr.str(), true, i32});
    reads.push_back(abi::kSlotOfPtr.str());
  }
  // Guards (docs/gpu.md "Guards"): a kernel that addresses a paged tensor by
  // block id, or reads the dense CSR, takes the status buffer and num_blocks
  // last, so the leading parameters keep their places.
  plan.byBlock =
      !indexerSide ||
      llvm::any_of(plan.stores,
                   [](const PendingStore &st) { return st.byBlockId; }) ||
      llvm::any_of(plan.inputs, [](Value v) {
        auto t = cast<VTensorType>(v.getType());
        return t.isPaged() || t.isSlotted();
      });
  plan.statusBuf = ctx.statusBuffer();
  plan.statusArg = params.size();
  params.push_back({plan.statusBuf, true, i32});
  if (plan.byBlock)
    params.push_back({abi::kNumBlocks.str(), false, {}});
  plan.savesMinRowsArg.reset();
  if (llvm::any_of(plan.stores,
                   [](const PendingStore &s) { return s.onlyFewRows; })) {
    plan.savesMinRowsArg = params.size();
    params.push_back(
        {abi::kSavesMinRows.str(), false, i32, ctx.options.topkSavesMinRows});
  }
}

/// The per-row part of the kernel: ops whose operands are all batched or
/// parameters and whose result is (q and what is derived from it and the
/// parameters alone, e.g. the mean over heads, a learned query). When it
/// has no cross-lane op it runs once per row change, its values carried in
/// f32 registers; otherwise (a shuffle must not sit in divergent code) it
/// runs with every item. A parameter is read at row 0 (one value shared by
/// every row).
void WorkloadPlanner::collectRowPart() {
  plan.rowOps.clear();
  plan.rowOpSet.clear();
  plan.rowValues.clear();
  if (indexerSide)
    for (Operation *op : ops) {
      if (op->getNumResults() != 1 || !isRowInvariant(op->getResult(0)) ||
          !llvm::all_of(op->getOperands(), isRowInvariant) ||
          isa<SaveOp, WriteOp, FillOp>(op))
        continue;
      plan.rowOps.push_back(op);
      plan.rowOpSet.insert(op);
    }
  // Values of the per-row part that item code reads.
  auto consumedPerItem = [&](Value v) {
    return llvm::any_of(v.getUsers(), [&](Operation *u) {
      return !plan.rowOpSet.count(u);
    });
  };
  for (Value v : plan.inputs)
    if (indexerSide && isRowInvariant(v) && consumedPerItem(v))
      plan.rowValues.insert(v);
  for (Operation *op : plan.rowOps)
    if (consumedPerItem(op->getResult(0)))
      plan.rowValues.insert(op->getResult(0));
}

//===----------------------------------------------------------------------===//
// Layouts and registers
//===----------------------------------------------------------------------===//

/// The layout of every value of the kernel at `lanes` lanes per item, by
/// the same rules the emitters follow; failure when an op cannot be laid
/// out (`known` is false when no family takes it).
LogicalResult WorkloadPlanner::inferShapes(bool &known) {
  known = true;
  plan.shapes.clear();
  bool rowCrossLane = false;
  for (Value v : plan.inputs)
    plan.shapes[v] = loadedShape(cast<VTensorType>(v.getType()));
  for (Operation *op : ops) {
    if (isa<SaveOp, WriteOp, FillOp>(op))
      continue;
    if (isa<LoadOp>(op)) {
      plan.shapes[op->getResult(0)] = plan.shapes.lookup(op->getOperand(0));
      continue;
    }
    SmallVector<TileShape> operands;
    for (Value v : op->getOperands())
      operands.push_back(plan.shapes.lookup(v));
    FailureOr<TileLayout> layout = layoutOf(op, operands, known);
    if (failed(layout))
      return failure();
    plan.shapes[op->getResult(0)] = layout->shape;
    rowCrossLane |= layout->crossLane && plan.rowOpSet.count(op);
  }
  // A shuffle must not sit in the divergent code of a row change.
  plan.hoist = !plan.rowValues.empty() && !rowCrossLane;
  return success();
}

/// The per-row values the loop carries and their types. They are carried
/// whenever the kernel has per-row values (unused without hoisting, and
/// folded away then).
void WorkloadPlanner::planRowPart() {
  plan.rowShapes.clear();
  plan.carryTypes.clear();
  if (plan.rowValues.empty())
    return;
  for (Value v : plan.rowValues)
    if (v != plan.mma.x)
      plan.rowShapes.push_back({v, plan.shapes.lookup(v)});
  // Raw inputs (q) are carried as their loaded storage vectors and widened
  // at each use (half the registers of f32 for bf16); computed per-row
  // values are carried in f32.
  MLIRContext *mctx = root->getContext();
  for (auto &[v, t] : plan.rowShapes) {
    if (plan.inputs.contains(v)) {
      Type storage = storageOf(v);
      for (int64_t r = 0; r < t.d0; ++r)
        plan.carryTypes.push_back(VectorType::get({t.width()}, storage));
      continue;
    }
    for (int64_t i = 0; i < t.d0 * t.width(); ++i)
      plan.carryTypes.push_back(Float32Type::get(mctx));
  }
}

Type mlir::vortex::gpugen::storageOf(const FlowContext &ctx, Value v) {
  auto it = ctx.abi.tensors.find(ctx.bufferOf.lookup(v));
  return it != ctx.abi.tensors.end() ? it->second.elementType : Type();
}

/// 32-bit registers a value's tile takes in its storage type.
int64_t WorkloadPlanner::registersOf(Value v, const TileShape &t) {
  Type storage = storageOf(v);
  unsigned bits = storage ? storage.getIntOrFloatBitWidth() : 32;
  return std::max<int64_t>(1, t.d0 * t.width() * bits / 32);
}

/// 32-bit registers the carried per-row values take (planRowPart first).
int64_t WorkloadPlanner::carriedRegisters() {
  int64_t carried = plan.mma.fragmentRegisters;
  for (auto &[v, t] : plan.rowShapes)
    carried += plan.inputs.contains(v) ? registersOf(v, t) : t.d0 * t.width();
  return carried;
}

/// 32-bit registers of the whole per-row part at once (the batched inputs
/// in storage, every per-row op's result in f32): what the row change
/// holds live while the items' loads are in flight.
int64_t WorkloadPlanner::rowPartRegisters() {
  int64_t regs = 0;
  for (Value v : plan.inputs)
    if (isRowInvariant(v) && v != plan.mma.x)
      regs += registersOf(v, plan.shapes.lookup(v));
  for (Operation *op : plan.rowOps) {
    // Masks are views, emitted element by element at their uses.
    if (isa<MaskLanesOp, MaskSliceOp>(op))
      continue;
    const TileShape &t = plan.shapes.lookup(op->getResult(0));
    regs += t.d0 * t.width();
  }
  return regs;
}

/// Blocks per iteration: as many as fit the register budget with the
/// carried per-row values and the items' loaded rows.
int64_t WorkloadPlanner::planItemsPerIteration() {
  int64_t carried = carriedRegisters(), perItem = 8;
  for (Value v : plan.inputs)
    if (!isRowInvariant(v))
      perItem += registersOf(v, plan.shapes.lookup(v));
  plan.carriedRegisters = carried;
  plan.itemRegisters = perItem;
  int64_t unroll = std::max<int64_t>(1, ctx.options.itemsPerIteration);
  while (unroll > 1 && carried + unroll * perItem > plan.kRegisterBudget)
    unroll /= 2;
  return unroll;
}

//===----------------------------------------------------------------------===//
// Lanes, slices and tensor cores
//===----------------------------------------------------------------------===//

/// After inferShapes: whether the per-row part is hoisted (its layout
/// allows it, on the indexer side, unless the option forbids it), and what
/// the loop carries.
void WorkloadPlanner::planHoistAndRowPart() {
  plan.hoist = indexerSide && plan.hoist && ctx.options.hoist;
  planRowPart();
}

/// Lays the kernel out over `wide` lanes instead when it can, hoisting as
/// before, and its carried per-row values fit the register budget; else
/// leaves the plan as it was. Returns whether it took them.
bool WorkloadPlanner::tryWiderLanes(int64_t wide) {
  int64_t before = lanes;
  bool hoisted = plan.hoist, known = true;
  lanes = wide;
  if (succeeded(inferShapes(known))) {
    planHoistAndRowPart();
    // ptxas allocates for the row change too: a per-row part past twice
    // the budget at the wider width costs an occupancy step.
    if (plan.hoist == hoisted && carriedRegisters() <= plan.kRegisterBudget &&
        rowPartRegisters() <= 2 * plan.kRegisterBudget)
      return true;
  }
  lanes = before;
  // The layout at `before` lanes succeeded already.
  (void)inferShapes(known);
  planHoistAndRowPart();
  return false;
}

/// At 32 bytes per lane, a lane's two 16-byte halves of a row are put
/// `lanes` x 16 bytes apart, so each 16-byte load of a group reads whole
/// sectors (`columns`: 16 bytes of the narrowest loaded storage). Dropped
/// when an op needs a lane's columns contiguous (a reduction over groups
/// of columns).
void WorkloadPlanner::planSectorSlices(int64_t columns) {
  sliceColumns = columns;
  bool known = true;
  if (failed(inferShapes(known))) {
    sliceColumns = 0;
    (void)inferShapes(known);
  }
  planHoistAndRowPart();
}

/// The value a vortex.load renames (the loaded input), else `v`.
static Value loadedInput(Value v) {
  while (auto load = v.getDefiningOp<LoadOp>())
    v = load->getOperand(0);
  return v;
}

/// Which envelope sums go on tensor cores: sums over the columns of
/// max(x a, x b) with x a batched bf16 input of at most 8 rows that only
/// these sums read, a and b loaded bf16 rows, all distributed alike over
/// lanes the mma's quads can take (envelopeMMAFits). Needs the identity
/// (the literal form is what envelope-identity=false asks for).
void WorkloadPlanner::planEnvelopeMMA() {
  plan.mma = {};
  if (!indexerSide || !ctx.options.envelopeMMA || !ctx.options.envelopeIdentity)
    return;
  const llvm::SetVector<Value> &inputs = plan.inputs;
  auto isBF16 = [&](Value v) {
    Type storage = storageOf(v);
    return storage && storage.isBF16();
  };
  auto fullRows = [&](const TileShape &t) {
    return t.distributed && t.d1 == t.realD1;
  };
  Value x;
  DenseSet<Operation *> sums, uses;
  for (Operation *op : ops) {
    auto red = dyn_cast<ReductionOpInterface>(op);
    if (!red || red.getReducedDim() != 2 || red.getGroupFactor() != 0 ||
        red.getReduceKind() != ReduceKind::Sum)
      continue;
    std::optional<std::array<Value, 3>> xab = matchEnvelope(op->getOperand(0));
    if (!xab)
      continue;
    Value xv = (*xab)[0], a = loadedInput((*xab)[1]),
          b = loadedInput((*xab)[2]);
    const TileShape &xs = plan.shapes.lookup(xv);
    const TileShape &as = plan.shapes.lookup(a), &bs = plan.shapes.lookup(b);
    const TileShape &in = plan.shapes.lookup(op->getOperand(0));
    bool fits =
        (!x || x == xv) && inputs.contains(xv) && isRowInvariant(xv) &&
        !cast<VTensorType>(xv.getType()).isParameter() &&
        inputs.contains(a) && inputs.contains(b) && !isRowInvariant(a) &&
        !isRowInvariant(b) && isBF16(xv) && isBF16(a) && isBF16(b) &&
        fullRows(xs) && fullRows(as) && fullRows(bs) && fullRows(in) &&
        as.d0 == 1 && bs.d0 == 1 && as.perLane == xs.perLane &&
        bs.perLane == xs.perLane && in.perLane == xs.perLane &&
        envelopeMMAFits(lanes, xs.perLane, xs.realD0);
    if (!fits)
      continue;
    x = xv;
    sums.insert(op);
    Operation *max = op->getOperand(0).getDefiningOp();
    uses.insert(max);
    for (Value m : max->getOperands())
      uses.insert(m.getDefiningOp());
  }
  if (!x)
    return;
  // x, the products and the maxima feed these sums alone (x's elements are
  // then never needed, and the loop carries its fragments instead).
  auto onlyInto = [](Value v, const DenseSet<Operation *> &set) {
    return llvm::all_of(v.getUsers(),
                        [&](Operation *u) { return set.contains(u); });
  };
  if (!onlyInto(x, uses))
    return;
  for (Operation *op : uses)
    if (!onlyInto(op->getResult(0), isa<MaximumOp>(op) ? sums : uses))
      return;
  plan.mma.x = x;
  plan.mma.sums = std::move(sums);
  plan.mma.fragmentRegisters =
      envelopeFragmentRegisters(lanes, plan.shapes.lookup(x).perLane);
  planRowPart();
}

/// The kernel's decisions. Lanes: the widest inner extent spread over up
/// to 32 lanes, 16 bytes per lane of the narrowest loaded storage (8 bf16
/// columns, or 16 when an fp8 tensor is loaded), or narrow mode when an op
/// cannot be laid out over them; the `lanes` option overrides both. A score
/// kernel takes 32 bytes per lane (half the lanes) when its carried per-row
/// values still fit the register budget that way: a gather is bound by
/// the bytes each thread keeps in flight, more than by occupancy (H100,
/// docs/benchmarks.md).
LogicalResult WorkloadPlanner::planKernel() {
  collectIO();
  collectRowPart();
  int64_t widest = 1;
  for (Operation *op : ops)
    for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                     op->getResultTypes()))
      if (auto v = dyn_cast<VTensorType>(t))
        widest = std::max(widest, computeExtent(v, 2));
  int64_t columns = 8;
  for (Value v : plan.inputs) {
    Type storage = storageOf(v);
    if (!storage)
      return root->emitOpError("reads a value that no buffer holds");
    if (storage.getIntOrFloatBitWidth() == 8)
      columns = 16;
  }
  int64_t natural = std::clamp<int64_t>(widest / columns, 1, 32);
  int64_t forced = ctx.options.lanes;
  lanes = forced ? forced : natural;
  bool known = true;
  if (failed(inferShapes(known))) {
    if (!known)
      return root->emitOpError("internal error: an op of the kernel has no "
                               "GPU lowering");
    if (forced)
      return root->emitOpError("cannot be laid out over ")
             << forced << " lanes per block (convert-vortex-to-gpu lanes "
             << "option); 1 (narrow) always can";
    lanes = 1;
    if (failed(inferShapes(known)))
      return root->emitOpError("internal error: no narrow layout");
  }
  planHoistAndRowPart();
  if (!forced && indexerSide && lanes == natural && natural >= 4 &&
      tryWiderLanes(natural / 2) && ctx.options.sectorSlices)
    planSectorSlices(columns);
  plan.lanes = lanes;
  plan.sliceColumns = sliceColumns;
  plan.narrow = lanes == 1 && natural > 1;
  planEnvelopeMMA();
  plan.itemsPerIteration = indexerSide ? planItemsPerIteration() : 1;
  plan.threads = ctx.options.threadsPerCTA;
  plan.itemsPerWarp = 32 / lanes;
  plan.groupsPerCTA = plan.threads / 32 * plan.itemsPerWarp;
  return success();
}

FailureOr<KernelPlan> mlir::vortex::gpugen::planWorkloadKernel(
    FlowContext &ctx, Operation *root, bool indexerSide) {
  WorkloadPlanner planner(ctx, root, indexerSide);
  if (failed(planner.run()))
    return failure();
  return std::move(planner.plan);
}

LogicalResult mlir::vortex::gpugen::reportWorkloadPlan(FlowContext &ctx,
                                                       Operation *op,
                                                       StringRef name,
                                                       bool indexerSide) {
  FailureOr<KernelPlan> plan = planWorkloadKernel(ctx, op, indexerSide);
  if (failed(plan))
    return failure();
  op->emitRemark("plan of @")
      << name << ": " << planAttr(op->getContext(), ctx, *plan);
  return success();
}

//===----------------------------------------------------------------------===//
// What the plan decides per load, and its records
//===----------------------------------------------------------------------===//

/// Whether an item's input `v` (in `buffer`) is read once and so loaded
/// nontemporal: a row gathered by block id or read at a CSR position that
/// this kernel does not write back (a saved field's row is stored again by
/// the same lanes, and a parameter row is shared by every item).
bool mlir::vortex::gpugen::isStreamed(const FlowContext &ctx,
                                      const KernelPlan &plan, Value v,
                                      StringRef buffer) {
  if (!ctx.options.streamingLoads || cast<VTensorType>(v.getType()).isParameter())
    return false;
  return llvm::none_of(plan.stores, [&](const PendingStore &s) {
    return s.buffer == buffer;
  });
}

WorkloadPlanAttr mlir::vortex::gpugen::planAttr(MLIRContext *context,
                                                const FlowContext &ctx,
                                                const KernelPlan &plan) {
  auto flag = [&](bool v) { return BoolAttr::get(context, v); };
  if (!plan.indexerSide)
    return WorkloadPlanAttr::get(context, plan.lanes, flag(plan.narrow),
                                 plan.threads, plan.groupsPerCTA,
                                 plan.kRegisterBudget, BoolAttr(),
                                 std::nullopt, std::nullopt, std::nullopt,
                                 std::nullopt, std::nullopt, BoolAttr());
  return WorkloadPlanAttr::get(
      context, plan.lanes, flag(plan.narrow), plan.threads, plan.groupsPerCTA,
      plan.kRegisterBudget, flag(plan.hoist), plan.itemsPerIteration,
      ctx.options.ctasPerSM, plan.carriedRegisters, plan.itemRegisters,
      plan.sliceColumns, flag(!plan.mma.sums.empty()));
}

KernelRecord mlir::vortex::gpugen::kernelRecord(const FlowContext &ctx,
                                                const KernelPlan &plan,
                                                StringRef name) {
  KernelRecord rec;
  rec.name = name.str();
  rec.step = plan.indexerSide ? Step::Indexer : Step::Cache;
  if (plan.indexerSide) {
    rec.grid = GridKind::Persistent;
    rec.ctasPerSM = ctx.options.ctasPerSM;
  } else {
    rec.grid = GridKind::Items;
    rec.itemsOf = abi::kNumNew.str();
    rec.perCTA = plan.groupsPerCTA;
  }
  rec.threads = ctx.options.threadsPerCTA;
  rec.params.assign(plan.params.begin(), plan.params.end());
  rec.reads.assign(plan.reads.begin(), plan.reads.end());
  rec.writes.assign(plan.writes.begin(), plan.writes.end());
  if (plan.indexerSide) {
    rec.reads.push_back(abi::kDenseIndptr.str());
    rec.reads.push_back(abi::kDenseIndices.str());
  } else {
    rec.reads.push_back(abi::kBlockIds.str());
  }
  rec.writes.push_back(plan.statusBuf);
  return rec;
}
