//===- WorkloadKernels.cpp - Fused workload kernels as GPU tile programs --===//
//
// A fused vortex.kernel runs, per KV block ("item"), a small program over
// [D0, D1] tiles. A group of `lanes` consecutive threads owns one item: a
// *distributed* tile spreads D1 over the group (each lane holds `perLane`
// consecutive columns, loaded with one vector load), a *replicated* tile is
// held whole by every lane (reduction results, narrow rows). Elementwise ops
// are emitted lazily at their use, so a reduction consumes its input row by
// row and register pressure stays at the loaded rows; reductions over D1 end
// in a clustered subgroup reduction. A kernel whose ops need a layout change
// the group cannot do in registers (transposing a distributed tile, ...) is
// emitted in narrow mode: one lane per item, every tile replicated.
//
//===----------------------------------------------------------------------===//

#include "TileOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <memory>

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

/// The decisions of one workload kernel, made from the flow and the options
/// before any IR is built (IREE's KernelConfig is the model) and recorded on
/// the kernel as `vortex.plan`.
struct KernelPlan {
  /// Lanes per item; 1 is narrow mode (every tile replicated), taken when
  /// an op needs a layout the lanes cannot do in registers.
  int64_t lanes = 1;
  bool narrow = false;
  /// The per-row values are computed once per row change and carried
  /// (no cross-lane op among them), else with every item.
  bool hoist = false;
  /// Items a group loads together per iteration of the persistent loop.
  int64_t itemsPerIteration = 1;
  /// Columns of a lane's slice of a row (TileBuilder::sliceColumns; 0: a
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

/// Points `b` (the kernel's builder, which the tile emitters use) at where
/// `g` builds, typically inside a region `g` opened, until the returned
/// guard goes out of scope.
[[nodiscard]] static OpBuilder::InsertionGuard followInto(OpBuilder &b,
                                                          Gen &g) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(g.b.getInsertionBlock(), g.b.getInsertionPoint());
  return guard;
}

/// The kernel skeletons; the op emitters are TileBuilder's (TileOps.h).
class TileKernel : TileBuilder {
public:
  TileKernel(FlowContext &ctx, Operation *root, bool indexerSide)
      : TileBuilder(root->getContext()), ctx(ctx), root(root),
        indexerSide(indexerSide) {
    envelopeIdentity = ctx.envelopeIdentity;
    if (auto kernel = dyn_cast<KernelOp>(root)) {
      for (Operation &op : kernel.getBody().front())
        if (!isa<YieldOp>(op))
          ops.push_back(&op);
    } else {
      ops.push_back(root);
    }
  }

  LogicalResult emit(StringRef name);

private:
  FlowContext &ctx;
  Operation *root;
  bool indexerSide;
  SmallVector<Operation *> ops;

  DenseMap<StringRef, Value> buffers; // param name -> memref

  bool contains(Operation *op) {
    return op && (op == root || root->isProperAncestor(op));
  }

  TileRef loadTile(Value value, Value memref, Value rowBase, bool isScratch,
                   bool streaming = false);
  /// The tile a loaded value gets: distributed when its columns spread
  /// evenly over the group's lanes.
  TileRef loadedLayout(VTensorType type) {
    return makeTile(loadedShape(type));
  }
  TileRef tileFromRows(Value value, ArrayRef<Value> rows);
  SmallVector<Value> loadRowVectors(Value memref, Value rowBase,
                                    const Tile &shape, Type storage,
                                    bool isScratch, bool streaming = false);
  bool isStreamed(Value v, StringRef buffer) const;
  void storeTile(const Tile &t, ArrayRef<Value> values, Value memref,
                 Value rowBase, Type storage, bool isScratch);
  SmallVector<Value> materialize(const Tile &t);

  LogicalResult emitKernel(StringRef name);

  // One emission attempt, in order: the kernel's inputs and stores, its
  // parameters, the per-row part, then the body of either side.
  void collectIO();
  LogicalResult buildParams(SmallVector<Param> &params,
                            SmallVector<std::string> &reads,
                            SmallVector<std::string> &writes);
  void collectRowPart();
  static bool isRowInvariant(Value v) {
    auto t = dyn_cast<VTensorType>(v.getType());
    return t && (t.isBatched() || t.isParameter());
  }
  bool emitRowPart(Value row);
  DenseMap<Value, TileRef> loadItem(Value blockId, Value pos);
  bool computeItem(Value blockId, Value pos, Value row, Value active,
                   Value blockOk, const DenseMap<Value, TileRef> &loaded,
                   const DenseMap<Value, TileRef> &rowTiles);
  /// What the persistent loop of a score kernel is built from.
  struct IndexerLoop {
    /// total: the extent of dense_kv_indices (the loop runs only when
    /// indptr[rows] equals it).
    Value indptr, indices, rows, total, s0, sEnd;
    /// Positions between a group's consecutive items: 1, or the groups of a
    /// warp when they take consecutive positions (tensor-core sums).
    int64_t stride = 1;
    /// num_blocks - 1 (i32), when the kernel gathers by block id.
    Value lastBlock;
  };

  // Planning: every decision, before any IR is built.
  LogicalResult planKernel();
  LogicalResult inferShapes(bool &known);
  void planRowPart();
  /// The element type of the buffer holding `v`, or null if none does.
  Type storageOf(Value v);
  int64_t registersOf(Value v, const TileShape &t);
  int64_t planItemsPerIteration();
  int64_t carriedRegisters();
  int64_t rowPartRegisters();
  Value emitRowSearch(Gen &x, Value indptr, Value rows, Value target);
  bool tryWiderLanes(int64_t wide);
  void planSectorSlices(int64_t columns);
  void planHoistAndRowPart();
  DictionaryAttr planAttr();
  void planEnvelopeMMA();
  TileRef lowerEnvelopeMMA(Operation *op, TileRef in);
  KernelPlan plan;
  Value positionAt(Gen &x, const IndexerLoop &L, Value it, int64_t u);
  SmallVector<Value> loadIds(Gen &x, const IndexerLoop &L, Value it);
  SmallVector<Value> emitIteration(const IndexerLoop &L, Value it,
                                   ValueRange carried, bool &ok);
  SmallVector<Value> freshRowValues(Value r, ValueRange carry, bool &ok);
  DenseMap<Value, TileRef> carriedRowTiles(ArrayRef<Value> carry);
  bool emitIndexerBody(gpu::GPUFuncOp func, Value scalarArg);
  bool emitCacheBody(gpu::GPUFuncOp func, Value scalarArg);
  Value emitSlot(Gen &y, gpu::GPUFuncOp func, Value blockId, Value item,
                 Value valid);
  void recordKernel(StringRef name, ArrayRef<Param> params,
                    ArrayRef<std::string> reads,
                    ArrayRef<std::string> writes);

  // State of the attempt.
  llvm::SetVector<Value> inputs;
  SmallVector<PendingStore> stores;
  SmallVector<Operation *> rowOps;
  DenseSet<Operation *> rowOpSet;
  llvm::SetVector<Value> rowValues;
  DenseMap<Value, SmallVector<Value>> rowVectors;
  bool byBlock = false;
  std::string statusBuf;
  unsigned statusArg = 0;
  /// The status buffer, and the i32 num_blocks argument (byBlock only).
  Value status, numBlocksArg, nblk, group;
  /// Cache kernels of flows with slotted fields: the slot map's parameter
  /// and the item's slot row (docs/contract.md, "Slotted fields").
  std::optional<unsigned> slotMapArg;
  Value slotRow;
  int64_t groupsPerCTA = 1;
  /// The item being computed's row, and the mma fragments the loop carries.
  Value itemRow;
  /// Whether the step's rows are at most saves_min_rows (the score kernel
  /// stores the deferred saves), and that parameter; set where any is.
  Value fewRows;
  std::optional<unsigned> savesMinRowsArg;
  EnvelopeFragments mmaState;
};

//===----------------------------------------------------------------------===//
// Loads and stores
//===----------------------------------------------------------------------===//

/// The alignment of a vector of `run` elements of `storage` at a lane's
/// run in rows of `stride` elements: 16 bytes when every row and run start
/// on a 16-byte boundary, else the element's.
static llvm::MaybeAlign runAlignment(int64_t stride, int64_t run,
                                     Type storage) {
  unsigned bytes = storage.getIntOrFloatBitWidth() / 8;
  if ((stride * bytes) % 16 == 0 && (run * bytes) % 16 == 0)
    return llvm::Align(16);
  return std::nullopt;
}

/// Whether an item's input `v` (in `buffer`) is read once and so loaded
/// nontemporal: a row gathered by block id or read at a CSR position that
/// this kernel does not write back (a saved field's row is stored again by
/// the same lanes, and a parameter row is shared by every item).
bool TileKernel::isStreamed(Value v, StringRef buffer) const {
  if (!ctx.streamingLoads || cast<VTensorType>(v.getType()).isParameter())
    return false;
  return llvm::none_of(stores, [&](const PendingStore &s) {
    return s.buffer == buffer;
  });
}

/// Loads every row of a distributed tile's lane slice (as vectors) or a
/// replicated tile's rows (as vectors of the whole row). Padded rows are
/// not loaded (they read 0); padded columns are read with clamped, masked
/// scalar loads. `streaming` marks a distributed tile's vector loads
/// nontemporal (each lane reads its slice of the row once; a replicated
/// row's lanes read it together and keep it cached).
SmallVector<Value> TileKernel::loadRowVectors(Value memref, Value rowBase,
                                              const Tile &t, Type storage,
                                              bool isScratch,
                                              bool streaming) {
  Gen g = gen();
  int64_t stride = isScratch ? t.d1 : t.realD1;
  int64_t rowsStored = isScratch ? t.d0 : t.realD0;
  int64_t colsStored = isScratch ? t.d1 : t.realD1;
  int64_t width = t.width();
  auto vecType = VectorType::get({width}, storage);
  SmallVector<Value> rows;
  for (int64_t r = 0; r < t.d0; ++r) {
    if (r >= rowsStored) {
      rows.push_back(arith::ConstantOp::create(
          g.b, g.loc, vecType,
          DenseElementsAttr::get(vecType, g.b.getZeroAttr(storage))));
      continue;
    }
    Value base = g.add(g.mul(rowBase, g.idx(rowsStored * stride)),
                       g.idx(r * stride));
    bool fullRow = t.d1 == colsStored;
    if (fullRow) {
      // A vector per contiguous run of the lane's columns (one unless the
      // layout has slices), aligned when every row starts on a vector
      // boundary.
      Value row = loadLaneRuns(memref, base, t, storage,
                               runAlignment(stride, runOf(t), storage),
                               streaming && t.distributed);
      rows.push_back(row);
      continue;
    }
    // Padded columns: clamped scalar loads, 0 beyond the real extent.
    Value row = arith::ConstantOp::create(
        g.b, g.loc, vecType,
        DenseElementsAttr::get(vecType, g.b.getZeroAttr(storage)));
    for (int64_t e = 0; e < width; ++e) {
      Value col = column(t, e);
      Value ok = g.lt(col, g.idx(colsStored));
      Value safe = g.minU(col, g.idx(colsStored - 1));
      Value v = g.load(memref, g.add(base, safe));
      Value zero = arith::ConstantOp::create(g.b, g.loc,
                                             g.b.getZeroAttr(storage));
      v = g.select(ok, v, zero);
      row = vector::InsertOp::create(g.b, g.loc, v, row, e);
    }
    rows.push_back(row);
  }
  return rows;
}

/// A tile over already loaded row vectors (storage type, widened to f32 at
/// each use).
TileRef TileKernel::tileFromRows(Value value, ArrayRef<Value> rows) {
  TileRef t = loadedLayout(cast<VTensorType>(value.getType()));
  SmallVector<Value> vectors(rows.begin(), rows.end());
  t->storageRows = vectors;
  t->at = [this, vectors](int64_t r, int64_t e) {
    Gen g = gen();
    return g.toF32(vector::ExtractOp::create(g.b, g.loc, vectors[r], e));
  };
  return t;
}

/// A tile of a buffer at row `rowBase` (block id, CSR position or batched
/// row), loaded now.
TileRef TileKernel::loadTile(Value value, Value memref, Value rowBase,
                             bool isScratch, bool streaming) {
  TileRef shape = loadedLayout(cast<VTensorType>(value.getType()));
  Type storage = cast<MemRefType>(memref.getType()).getElementType();
  return tileFromRows(value, loadRowVectors(memref, rowBase, *shape, storage,
                                            isScratch, streaming));
}

/// Every (r, e) element of a tile, in row-major order.
SmallVector<Value> TileKernel::materialize(const Tile &t) {
  SmallVector<Value> values;
  for (int64_t r = 0; r < t.d0; ++r)
    for (int64_t e = 0; e < t.width(); ++e)
      values.push_back(t.at(r, e));
  return values;
}

/// Stores a tile's elements (already materialized) at row `rowBase` of a
/// buffer. Only real rows and columns are stored to a flow tensor; scratch
/// keeps the computed extents. A replicated tile is stored by the first lane
/// of the group.
void TileKernel::storeTile(const Tile &t, ArrayRef<Value> values,
                           Value memref, Value rowBase, Type storage,
                           bool isScratch) {
  Gen g = gen();
  int64_t stride = isScratch ? t.d1 : t.realD1;
  int64_t rowsStored = isScratch ? t.d0 : t.realD0;
  int64_t colsStored = isScratch ? t.d1 : t.realD1;
  auto body = [&](Gen &s) {
    int64_t width = t.width();
    for (int64_t r = 0; r < std::min(t.d0, rowsStored); ++r) {
      Value base = s.add(s.mul(rowBase, s.idx(rowsStored * stride)),
                         s.idx(r * stride));
      if (t.distributed && t.d1 == colsStored) {
        // A vector per contiguous run of the lane's columns.
        int64_t run = runOf(t);
        auto vecType = VectorType::get({run}, storage);
        llvm::MaybeAlign align = runAlignment(stride, run, storage);
        for (int64_t k = 0; k < width / run; ++k) {
          Value vec = arith::ConstantOp::create(
              s.b, s.loc, vecType,
              DenseElementsAttr::get(vecType, s.b.getZeroAttr(storage)));
          for (int64_t e = 0; e < run; ++e)
            vec = vector::InsertOp::create(
                s.b, s.loc,
                s.fromF32(values[r * width + k * run + e], storage), vec, e);
          Value addr = s.add(base, column(t, k * run));
          vector::StoreOp::create(s.b, s.loc, vec, memref, ValueRange{addr},
                                  /*nontemporal=*/false, align);
        }
        continue;
      }
      for (int64_t e = 0; e < width; ++e) {
        if (!t.distributed && e >= colsStored)
          continue;
        Value v = s.fromF32(values[r * width + e], storage);
        if (!t.distributed) {
          s.store(v, memref, s.add(base, s.idx(e)));
          continue;
        }
        Value col = column(t, e);
        s.ifThen(s.lt(col, s.idx(colsStored)), [&](Gen &in) {
          in.store(v, memref, in.add(base, col));
        });
      }
    }
  };
  if (t.distributed) {
    body(g);
    return;
  }
  g.ifThen(g.cmpI(arith::CmpIPredicate::eq, laneInItem, g.idx(0)), body);
}

} // namespace

//===----------------------------------------------------------------------===//
// Kernel emission
//===----------------------------------------------------------------------===//

namespace {

/// What a kernel stores once per item.

} // namespace

/// Inputs (defined outside the kernel), outputs (used outside) and side
/// effects.
void TileKernel::collectIO() {
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
LogicalResult TileKernel::buildParams(SmallVector<Param> &params,
                                      SmallVector<std::string> &reads,
                                      SmallVector<std::string> &writes) {
  auto i32 = IntegerType::get(root->getContext(), 32);
  slotMapArg.reset();
  if (indexerSide) {
    params.push_back({abi::kDenseIndptr.str(), true, i32});
    params.push_back({abi::kDenseIndices.str(), true, i32});
    params.push_back({abi::kRows.str(), false, {}});
  } else {
    params.push_back({abi::kBlockIds.str(), true, i32});
    params.push_back({abi::kNumNew.str(), false, {}});
  }
  std::set<std::string> bufferNames;
  for (Value v : inputs) {
    std::string buf = ctx.bufferOf.lookup(v); // planKernel checked it
    bufferNames.insert(buf);
    reads.push_back(buf);
  }
  for (PendingStore &st : stores) {
    bufferNames.insert(st.buffer);
    writes.push_back(st.buffer);
  }
  // The slotted fields' row count comes from the first one's extent.
  bool slotted = !indexerSide && !ctx.abi.slotsDefinedBy.empty();
  if (slotted)
    bufferNames.insert(ctx.abi.slotsDefinedBy);
  for (const std::string &buf : bufferNames)
    params.push_back({buf, true, ctx.abi.tensors[buf].elementType});
  // A flow with slotted fields skips the blocks without a slot in every
  // cache kernel, so each reads the slot map.
  if (slotted) {
    slotMapArg = params.size();
    params.push_back({abi::kSlotOfPtr.str(), true, i32});
    reads.push_back(abi::kSlotOfPtr.str());
  }
  // Guards (docs/gpu.md "Guards"): a kernel that addresses a paged tensor by
  // block id, or reads the dense CSR, takes the status buffer and num_blocks
  // last, so the leading parameters keep their places.
  byBlock = !indexerSide ||
            llvm::any_of(stores,
                         [](const PendingStore &st) { return st.byBlockId; }) ||
            llvm::any_of(inputs, [](Value v) {
              auto t = cast<VTensorType>(v.getType());
              return t.isPaged() || t.isSlotted();
            });
  statusBuf = ctx.statusBuffer();
  statusArg = params.size();
  params.push_back({statusBuf, true, i32});
  if (byBlock)
    params.push_back({abi::kNumBlocks.str(), false, {}});
  savesMinRowsArg.reset();
  if (llvm::any_of(stores,
                   [](const PendingStore &s) { return s.onlyFewRows; })) {
    savesMinRowsArg = params.size();
    params.push_back(
        {abi::kSavesMinRows.str(), false, i32, ctx.topkSavesMinRows});
  }

  return success();
}

/// The per-row part of the kernel: ops whose operands are all batched or
/// parameters and whose result is (q and what is derived from it and the
/// parameters alone, e.g. the mean over heads, a learned query). When it
/// has no cross-lane op it runs once per row change, its values carried in
/// f32 registers; otherwise (a shuffle must not sit in divergent code) it
/// runs with every item. A parameter is read at row 0 (one value shared by
/// every row).
void TileKernel::collectRowPart() {
  rowOps.clear();
  rowOpSet.clear();
  rowValues.clear();
  if (indexerSide)
    for (Operation *op : ops) {
      if (op->getNumResults() != 1 || !isRowInvariant(op->getResult(0)) ||
          !llvm::all_of(op->getOperands(), isRowInvariant) ||
          isa<SaveOp, WriteOp, FillOp>(op))
        continue;
      rowOps.push_back(op);
      rowOpSet.insert(op);
    }
  // Values of the per-row part that item code reads.
  auto consumedPerItem = [&](Value v) {
    return llvm::any_of(v.getUsers(), [&](Operation *u) {
      return !rowOpSet.count(u);
    });
  };
  for (Value v : inputs)
    if (indexerSide && isRowInvariant(v) && consumedPerItem(v))
      rowValues.insert(v);
  for (Operation *op : rowOps)
    if (consumedPerItem(op->getResult(0)))
      rowValues.insert(op->getResult(0));

}

/// Loads the batched inputs at `row` and the parameters at row 0 (their
/// row vectors are kept in `rowVectors`) and lowers the per-row ops.
bool TileKernel::emitRowPart(Value row) {
  rowVectors.clear();
  for (Value v : inputs) {
    if (!isRowInvariant(v) || v == plan.mma.x)
      continue;
    std::string buf = ctx.bufferOf.lookup(v);
    Value memref = buffers.lookup(StringRef(buf));
    auto type = cast<VTensorType>(v.getType());
    TileRef shape = loadedLayout(type);
    rowVectors[v] = loadRowVectors(
        memref, type.isParameter() ? gen().idx(0) : row, *shape,
        cast<MemRefType>(memref.getType()).getElementType(),
        ctx.abi.tensors[buf].role == Role::Scratch);
    tiles[v] = tileFromRows(v, rowVectors[v]);
  }
  for (Operation *op : rowOps) {
    TileRef t = lower(op);
    if (!t)
      return false;
    tiles[op->getResult(0)] = t;
  }
  return true;
}

/// Phase 1 of an item: load its inputs outside the per-row part (all items
/// of an iteration load before any computes, so their loads are in flight
/// together). On the cache side, which has no per-row part, a parameter is
/// loaded here, at row 0.
DenseMap<Value, TileRef> TileKernel::loadItem(Value blockId, Value pos) {
  DenseMap<Value, TileRef> loaded;
  for (Value v : inputs) {
    auto type = cast<VTensorType>(v.getType());
    if (indexerSide && isRowInvariant(v))
      continue;
    std::string buf = ctx.bufferOf.lookup(v);
    Value at = type.isParameter()                     ? gen().idx(0)
               : (type.isPaged() || type.isSlotted()) ? blockId
                                                      : pos;
    loaded[v] = loadTile(v, buffers.lookup(StringRef(buf)), at,
                         ctx.abi.tensors[buf].role == Role::Scratch,
                         isStreamed(v, buf));
  }
  return loaded;
}

/// Phase 2 of an item: compute and store. `rowTiles` hold the per-row
/// values; stores by block id also need `blockOk` (when given).
bool TileKernel::computeItem(Value blockId, Value pos, Value row,
                             Value active, Value blockOk,
                             const DenseMap<Value, TileRef> &loaded,
                             const DenseMap<Value, TileRef> &rowTiles) {
  OpBuilder &b = *builder;
  Gen gi = gen();
  tiles.clear();
  for (auto &[v, t] : loaded)
    tiles[v] = t;
  for (auto &[v, t] : rowTiles)
    tiles[v] = t;
  itemRow = row;
  if (plan.mma.x) {
    // Only the tensor-core sums read x, from its fragments: its elements
    // are never asked for.
    TileRef x = makeTile(plan.shapes.lookup(plan.mma.x));
    x->at = [this](int64_t, int64_t) {
      unsupported = true;
      return gen().f32(0.0);
    };
    tiles[plan.mma.x] = x;
  }
  for (Operation *op : ops) {
    if (isa<SaveOp, WriteOp, FillOp>(op) || rowOpSet.count(op))
      continue;
    if (isa<LoadOp>(op)) {
      // A load is a rename: the field row was loaded as an input.
      tiles[op->getResult(0)] = tiles.lookup(op->getOperand(0));
      continue;
    }
    TileRef t = lower(op);
    if (!t)
      return false;
    tiles[op->getResult(0)] = t;
  }
  // Compute everything to store before the predicated stores, so the
  // cluster reductions run on every lane.
  SmallVector<std::pair<TileRef, SmallVector<Value>>> values;
  for (PendingStore &st : stores) {
    TileRef t;
    if (st.fill) {
      t = makeTile(st.fillType, false);
      double c = *st.fill;
      t->at = [this, c](int64_t, int64_t) { return gen().f32(c); };
    } else {
      t = tiles.lookup(st.value);
    }
    values.push_back({t, materialize(*t)});
  }
  // Stores by block id also need the id in range (blockOk), nested in the
  // one predicated region (two sibling regions cost the saved-field
  // kernel registers, and an occupancy step).
  gi.ifThen(active, [&](Gen &gs) {
    auto guard = followInto(b, gs);
    auto emit = [&](Gen &ge, bool byId) {
      for (auto [st, tv] : llvm::zip(stores, values)) {
        if (st.byBlockId != byId)
          continue;
        Value memref = buffers.lookup(StringRef(st.buffer));
        Value at = st.bySlot       ? slotRow
                   : st.byBlockId  ? blockId
                   : st.batchedRow ? row
                   : st.sharedRow  ? ge.idx(0)
                                   : pos;
        auto store = [&] {
          storeTile(*tv.first, tv.second, memref, at,
                    cast<MemRefType>(memref.getType()).getElementType(),
                    st.isScratch);
        };
        if (!st.onlyFewRows) {
          store();
          continue;
        }
        ge.ifThen(fewRows, [&](Gen &gf) {
          auto guard3 = followInto(b, gf);
          store();
        });
      }
    };
    emit(gs, false);
    if (!llvm::any_of(stores,
                      [](const PendingStore &s) { return s.byBlockId; }))
      return;
    if (!blockOk) {
      emit(gs, true);
      return;
    }
    gs.ifThen(blockOk, [&](Gen &gb) {
      auto guard2 = followInto(b, gb);
      emit(gb, true);
    });
  });
  return true;
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

/// The layout of every value of the kernel at `lanes` lanes per item, by
/// the same rules the emitters follow; failure when an op cannot be laid
/// out (`known` is false when no family takes it).
LogicalResult TileKernel::inferShapes(bool &known) {
  known = true;
  plan.shapes.clear();
  bool rowCrossLane = false;
  for (Value v : inputs)
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
    rowCrossLane |= layout->crossLane && rowOpSet.count(op);
  }
  // A shuffle must not sit in the divergent code of a row change.
  plan.hoist = !rowValues.empty() && !rowCrossLane;
  return success();
}

/// The per-row values the loop carries and their types. They are carried
/// whenever the kernel has per-row values (unused without hoisting, and
/// folded away then).
void TileKernel::planRowPart() {
  plan.rowShapes.clear();
  plan.carryTypes.clear();
  if (rowValues.empty())
    return;
  for (Value v : rowValues)
    if (v != plan.mma.x)
      plan.rowShapes.push_back({v, plan.shapes.lookup(v)});
  // Raw inputs (q) are carried as their loaded storage vectors and widened
  // at each use (half the registers of f32 for bf16); computed per-row
  // values are carried in f32.
  MLIRContext *mctx = root->getContext();
  for (auto &[v, t] : plan.rowShapes) {
    if (inputs.contains(v)) {
      Type storage = storageOf(v);
      for (int64_t r = 0; r < t.d0; ++r)
        plan.carryTypes.push_back(VectorType::get({t.width()}, storage));
      continue;
    }
    for (int64_t i = 0; i < t.d0 * t.width(); ++i)
      plan.carryTypes.push_back(Float32Type::get(mctx));
  }
}

Type TileKernel::storageOf(Value v) {
  auto it = ctx.abi.tensors.find(ctx.bufferOf.lookup(v));
  return it != ctx.abi.tensors.end() ? it->second.elementType : Type();
}

/// 32-bit registers a value's tile takes in its storage type.
int64_t TileKernel::registersOf(Value v, const TileShape &t) {
  Type storage = storageOf(v);
  unsigned bits = storage ? storage.getIntOrFloatBitWidth() : 32;
  return std::max<int64_t>(1, t.d0 * t.width() * bits / 32);
}

/// 32-bit registers the carried per-row values take (planRowPart first).
int64_t TileKernel::carriedRegisters() {
  int64_t carried = plan.mma.fragmentRegisters;
  for (auto &[v, t] : plan.rowShapes)
    carried += inputs.contains(v) ? registersOf(v, t) : t.d0 * t.width();
  return carried;
}

/// 32-bit registers of the whole per-row part at once (the batched inputs
/// in storage, every per-row op's result in f32): what the row change
/// holds live while the items' loads are in flight.
int64_t TileKernel::rowPartRegisters() {
  int64_t regs = 0;
  for (Value v : inputs)
    if (isRowInvariant(v) && v != plan.mma.x)
      regs += registersOf(v, plan.shapes.lookup(v));
  for (Operation *op : rowOps) {
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
int64_t TileKernel::planItemsPerIteration() {
  int64_t carried = carriedRegisters(), perItem = 8;
  for (Value v : inputs)
    if (!isRowInvariant(v))
      perItem += registersOf(v, plan.shapes.lookup(v));
  plan.carriedRegisters = carried;
  plan.itemRegisters = perItem;
  int64_t unroll = std::max<int64_t>(1, ctx.itemsPerIteration);
  while (unroll > 1 && carried + unroll * perItem > plan.kRegisterBudget)
    unroll /= 2;
  return unroll;
}

/// After inferShapes: whether the per-row part is hoisted (its layout
/// allows it, on the indexer side, unless the option forbids it), and what
/// the loop carries.
void TileKernel::planHoistAndRowPart() {
  plan.hoist = indexerSide && plan.hoist && ctx.hoistPerRow;
  planRowPart();
}

/// Lays the kernel out over `wide` lanes instead when it can, hoisting as
/// before, and its carried per-row values fit the register budget; else
/// leaves the plan as it was. Returns whether it took them.
bool TileKernel::tryWiderLanes(int64_t wide) {
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
void TileKernel::planSectorSlices(int64_t columns) {
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
void TileKernel::planEnvelopeMMA() {
  plan.mma = {};
  envelopeMMA = nullptr;
  if (!indexerSide || !ctx.envelopeMMA || !ctx.envelopeIdentity)
    return;
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
  envelopeMMA = [this](Operation *op, TileRef in) {
    return lowerEnvelopeMMA(op, in);
  };
  planRowPart();
}

/// A planned envelope sum of the current item (emitEnvelopeMMA); null for
/// any other reduction.
TileRef TileKernel::lowerEnvelopeMMA(Operation *op, TileRef in) {
  if (!plan.mma.sums.contains(op))
    return nullptr;
  std::array<Value, 3> xab = *matchEnvelope(op->getOperand(0));
  TileRef a = tiles.lookup(xab[1]), b = tiles.lookup(xab[2]);
  if (!a || !b || a->storageRows.size() != 1 || b->storageRows.size() != 1) {
    unsupported = true;
    return makeTile(resultTypeOf(op), false);
  }
  EnvelopeMMAOperands o;
  o.resultType = resultTypeOf(op);
  o.in = *in;
  o.x = plan.shapes.lookup(plan.mma.x);
  o.xMemref = buffers.lookup(StringRef(ctx.bufferOf.lookup(plan.mma.x)));
  o.xRowElements = o.x.realD0 * o.x.realD1;
  o.xStride = o.x.realD1;
  o.xAlign = runAlignment(o.xStride, runOf(o.x), storageOf(plan.mma.x));
  o.aRow = a->storageRows.front();
  o.bRow = b->storageRows.front();
  o.row = itemRow;
  return emitEnvelopeMMA(*this, o, mmaState);
}

/// The kernel's decisions. Lanes: the widest inner extent spread over up
/// to 32 lanes, 16 bytes per lane of the narrowest loaded storage (8 bf16
/// columns, or 16 when an fp8 tensor is loaded), or narrow mode when an op
/// cannot be laid out over them; the `lanes` option overrides both. A score
/// kernel takes 32 bytes per lane (half the lanes) when its carried per-row
/// values still fit the register budget that way: a gather is bound by
/// the bytes each thread keeps in flight, more than by occupancy (H100,
/// docs/benchmarks.md).
LogicalResult TileKernel::planKernel() {
  collectIO();
  collectRowPart();
  int64_t widest = 1;
  for (Operation *op : ops)
    for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                     op->getResultTypes()))
      if (auto v = dyn_cast<VTensorType>(t))
        widest = std::max(widest, computeExtent(v, 2));
  int64_t columns = 8;
  for (Value v : inputs) {
    Type storage = storageOf(v);
    if (!storage)
      return root->emitOpError("reads a value that no buffer holds");
    if (storage.getIntOrFloatBitWidth() == 8)
      columns = 16;
  }
  int64_t natural = std::clamp<int64_t>(widest / columns, 1, 32);
  int64_t forced = ctx.lanes;
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
      tryWiderLanes(natural / 2) && ctx.sectorSlices)
    planSectorSlices(columns);
  plan.lanes = lanes;
  plan.sliceColumns = sliceColumns;
  plan.narrow = lanes == 1 && natural > 1;
  planEnvelopeMMA();
  plan.itemsPerIteration = indexerSide ? planItemsPerIteration() : 1;
  plan.threads = ctx.threads;
  plan.itemsPerWarp = 32 / lanes;
  plan.groupsPerCTA = plan.threads / 32 * plan.itemsPerWarp;
  return success();
}

/// The plan as the kernel's `vortex.plan` attribute.
DictionaryAttr TileKernel::planAttr() {
  Builder b(root->getContext());
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("lanes", b.getI64IntegerAttr(plan.lanes)),
      b.getNamedAttr("narrow", b.getBoolAttr(plan.narrow)),
      b.getNamedAttr("threads", b.getI64IntegerAttr(plan.threads)),
      b.getNamedAttr("groups_per_cta", b.getI64IntegerAttr(plan.groupsPerCTA)),
      b.getNamedAttr("register_budget",
                     b.getI64IntegerAttr(plan.kRegisterBudget))};
  if (indexerSide) {
    attrs.push_back(b.getNamedAttr("hoist", b.getBoolAttr(plan.hoist)));
    attrs.push_back(b.getNamedAttr(
        "items_per_iteration", b.getI64IntegerAttr(plan.itemsPerIteration)));
    attrs.push_back(b.getNamedAttr("ctas_per_sm",
                                   b.getI64IntegerAttr(ctx.ctasPerSM)));
    attrs.push_back(b.getNamedAttr(
        "carried_registers", b.getI64IntegerAttr(plan.carriedRegisters)));
    attrs.push_back(b.getNamedAttr("item_registers",
                                   b.getI64IntegerAttr(plan.itemRegisters)));
    attrs.push_back(b.getNamedAttr("slice_columns",
                                   b.getI64IntegerAttr(plan.sliceColumns)));
    attrs.push_back(b.getNamedAttr("envelope_mma",
                                   b.getBoolAttr(!plan.mma.sums.empty())));
  }
  return b.getDictionaryAttr(attrs);
}

/// The CSR position of item `u` of iteration `it` (past the group's chunk
/// for the last iteration's spare items).
Value TileKernel::positionAt(Gen &x, const IndexerLoop &L, Value it,
                             int64_t u) {
  int64_t unroll = plan.itemsPerIteration;
  Value k = x.add(x.mul(it, x.idx(unroll)), x.idx(u));
  return x.add(L.s0, L.stride == 1 ? k : x.mul(k, x.idx(L.stride)));
}

/// The block ids (i32, unchecked) at the positions of iteration `it`,
/// clamped into dense_kv_indices: loaded an iteration ahead, so an
/// iteration's gathers wait for no id load.
SmallVector<Value> TileKernel::loadIds(Gen &x, const IndexerLoop &L,
                                       Value it) {
  SmallVector<Value> ids;
  for (int64_t u = 0; u < plan.itemsPerIteration; ++u)
    ids.push_back(x.load(L.indices, x.minU(positionAt(x, L, it, u),
                                           x.sub(L.total, x.idx(1)))));
  return ids;
}

/// The per-row values of row `r`, computed at the builder's insertion point,
/// in the order the loop carries them (`carry` if they cannot be emitted).
SmallVector<Value> TileKernel::freshRowValues(Value r, ValueRange carry,
                                              bool &ok) {
  tiles.clear();
  if (!emitRowPart(r)) {
    ok = false;
    return SmallVector<Value>(carry);
  }
  SmallVector<Value> fresh;
  for (auto &[v, t] : plan.rowShapes) {
    if (inputs.contains(v))
      llvm::append_range(fresh, rowVectors[v]);
    else
      llvm::append_range(fresh, materialize(*tiles.lookup(v)));
  }
  return fresh;
}

/// Tiles over the per-row values the loop carries: loaded inputs as their
/// row vectors, computed values element by element.
DenseMap<Value, TileRef> TileKernel::carriedRowTiles(ArrayRef<Value> carry) {
  DenseMap<Value, TileRef> rowTiles;
  unsigned at = 0;
  for (auto &[v, shape] : plan.rowShapes) {
    if (inputs.contains(v)) {
      rowTiles[v] = tileFromRows(v, carry.slice(at, shape.d0));
      at += shape.d0;
      continue;
    }
    TileRef t = makeTile(shape);
    SmallVector<Value> vals(carry.slice(at, t->d0 * t->width()));
    at += t->d0 * t->width();
    int64_t width = t->width();
    t->at = [vals, width](int64_t rr, int64_t e) {
      return vals[rr * width + e];
    };
    rowTiles[v] = t;
  }
  return rowTiles;
}

/// One iteration of the persistent loop: `unroll` items, their loads first
/// (the ids came with the iteration before), then the next iteration's ids,
/// then the row bookkeeping (per-row values recomputed when the row
/// changes), then each item's compute and stores. Returns the carried
/// values: the row, the row the per-row values are of, those values, and
/// the next iteration's ids.
SmallVector<Value> TileKernel::emitIteration(const IndexerLoop &L, Value it,
                                             ValueRange carried, bool &ok) {
  OpBuilder &b = *builder;
  Value indptr = L.indptr, indices = L.indices;
  Value total = L.total, sEnd = L.sEnd;
  int64_t unroll = plan.itemsPerIteration;
  int64_t eos = ctx.config.getReservedEos();
  FlowConfigAttr cfg = ctx.config;
  auto rowStart = [&](Gen &x, Value r) {
    return x.toIndex(x.load(indptr, r));
  };
  Gen y = gen();
  Value r = carried[0], cachedRow = carried[1];
  Value start = carried[2], end = carried[3];
  // Kernels that gather by block id carry the ids, loaded an iteration
  // ahead.
  int64_t carriedIds = byBlock ? unroll : 0;
  int64_t carriedMMA = plan.mma.x ? 1 + plan.mma.fragmentRegisters : 0;
  SmallVector<Value> carry(
      carried.drop_front(4).drop_back(carriedIds + carriedMMA));
  if (carriedMMA) {
    ValueRange m = carried.drop_back(carriedIds).take_back(carriedMMA);
    mmaState.row = m.front();
    mmaState.regs.assign(m.begin() + 1, m.end());
  }
  struct Item {
    Value blockId, pos, row, active, blockOk;
    DenseMap<Value, TileRef> rowTiles, loaded;
  };
  SmallVector<Item> items(unroll);
  // The items' rows do not depend on the CSR row: issue those loads
  // first, so they overlap the row bookkeeping.
  SmallVector<Value> validOf, posOf;
  for (int64_t u = 0; u < unroll; ++u) {
    Value s = positionAt(y, L, it, u);
    validOf.push_back(y.lt(s, sEnd));
    posOf.push_back(y.minU(s, y.sub(total, y.idx(1))));
  }
  // The others may not use the ids at all (then the loads fold away).
  SmallVector<Value> ids(carried.take_back(carriedIds));
  if (!byBlock)
    for (Value pos : posOf)
      ids.push_back(y.load(indices, pos));
  for (int64_t u = 0; u < unroll; ++u) {
    Value raw = ids[u];
    if (byBlock) {
      // Guard: an id outside [0, num_blocks) (a negative one is huge
      // unsigned) is recorded; the item reads the last block and
      // stores nothing by block id. In i32 against num_blocks - 1
      // alone: one live value, and the address math stays a 32-bit
      // wide multiply.
      items[u].blockOk =
          y.cmpI(arith::CmpIPredicate::ule, raw, L.lastBlock);
      y.ifThen(y.andI(validOf[u], y.notI(items[u].blockOk)),
               [&](Gen &z) {
                 z.recordStatus(status, abi::kBadDenseIndex, raw,
                                posOf[u]);
               });
      // One umin: an id past the end reads the last block (the
      // runtime refuses an empty pool with a non-empty CSR).
      raw = y.minU(raw, L.lastBlock);
    }
    raw = y.toIndex(raw);
    items[u].blockId = raw;
    items[u].loaded = loadItem(items[u].blockId, posOf[u]);
  }
  // After the gathers, which need nothing more to issue: the ids of the
  // next iteration (in range; past the chunk they go unused).
  SmallVector<Value> nextIds;
  if (byBlock)
    nextIds = loadIds(y, L, y.add(it, y.idx(1)));
  for (int64_t u = 0; u < unroll; ++u) {
    Value valid = validOf[u];
    Value sc = posOf[u];
    // Advance to the row of sc. The row's bounds are carried, so an item
    // in the same row as the last loads nothing.
    Type idx = b.getIndexType();
    auto adv = scf::WhileOp::create(
        b, loc, TypeRange{idx, idx, idx}, ValueRange{r, start, end},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Gen w{nb, l};
          // Stops at the last row at the latest, even for a malformed
          // indptr: indptr[rows] = total > sc (checked above).
          scf::ConditionOp::create(
              nb, l, w.cmpI(arith::CmpIPredicate::ule, args[2], sc), args);
        },
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Gen w{nb, l};
          Value next = w.add(args[0], w.idx(1));
          scf::YieldOp::create(
              nb, l,
              ValueRange{next, args[2], rowStart(w, w.add(next, w.idx(1)))});
        });
    r = adv.getResult(0);
    start = adv.getResult(1);
    end = adv.getResult(2);
    Value n = y.sub(end, start);
    Value bud = emitRowBudget(y, cfg, n);
    Value active = y.andI(
        valid, y.andI(y.cmpI(arith::CmpIPredicate::sgt, n, bud),
                      y.lt(sc, y.sub(end, y.idx(eos)))));
    Item &item = items[u];
    item.pos = sc;
    item.row = r;
    item.active = active;
    if (plan.hoist) {
      // Recompute the per-row values when the row changes.
      Value changed = y.cmpI(arith::CmpIPredicate::ne, r, cachedRow);
      carry = y.ifElse(
          changed, plan.carryTypes,
          [&](Gen &gt) {
            auto guard3 = followInto(b, gt);
            return freshRowValues(r, carry, ok);
          },
          [&](Gen &) { return SmallVector<Value>(carry); });
      cachedRow = r;
      item.rowTiles = carriedRowTiles(carry);
    } else {
      tiles.clear();
      if (!emitRowPart(r))
        ok = false;
      for (Value v : rowValues)
        item.rowTiles[v] = tiles.lookup(v);
      for (Operation *op : rowOps)
        item.rowTiles[op->getResult(0)] = tiles.lookup(op->getResult(0));
    }
  }
  for (Item &item : items)
    if (!computeItem(item.blockId, item.pos, item.row, item.active,
                     item.blockOk, item.loaded, item.rowTiles))
      ok = false;
  SmallVector<Value> next = {r, cachedRow, start, end};
  llvm::append_range(next, carry);
  if (carriedMMA) {
    next.push_back(mmaState.row);
    llvm::append_range(next, mmaState.regs);
  }
  llvm::append_range(next, nextIds);
  return next;
}

/// The last row r in [0, rows) with indptr[r] <= target, searched by the
/// group's lanes together: each round, lane l probes indptr[lo + (l + 1) *
/// step] and the count of probes at or before the target narrows [lo, hi)
/// (lanes + 1)-fold, so rows <= lanes take one dependent load where a binary
/// search took log2(rows). The round count depends on `rows` alone, so the
/// shuffles run in every lane of a warp together; a finished search stays
/// put. A malformed (decreasing) indptr still ends in some row in range.
Value TileKernel::emitRowSearch(Gen &x, Value indptr, Value rows,
                                Value target) {
  OpBuilder &b = *builder;
  Value fanout = x.idx(lanes + 1);
  Value rounds = scf::WhileOp::create(
                     b, loc, TypeRange{b.getIndexType(), b.getIndexType()},
                     ValueRange{x.idx(0), x.idx(1)},
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Gen w{nb, l};
                       scf::ConditionOp::create(nb, l, w.lt(a[1], rows), a);
                     },
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Gen w{nb, l};
                       scf::YieldOp::create(
                           nb, l,
                           ValueRange{w.add(a[0], w.idx(1)),
                                      w.mul(a[1], fanout)});
                     })
                     .getResult(0);
  scf::ForOp search = x.forLoop(
      x.idx(0), rounds, {x.idx(0), rows},
      [&](Gen &w, Value, ValueRange a) -> SmallVector<Value> {
        Value lo = a[0], hi = a[1];
        Value step = w.ceilDiv(w.sub(hi, lo), fanout);
        Value probe = w.add(lo, w.mul(w.add(laneInItem, w.idx(1)), step));
        Value inRange = w.lt(probe, hi);
        Value at = w.toIndex(
            w.load(indptr, w.minU(probe, w.sub(hi, w.idx(1)))));
        Value le = w.andI(inRange,
                          w.cmpI(arith::CmpIPredicate::ule, at, target));
        Value count =
            arith::ExtUIOp::create(w.b, w.loc, w.b.getI32Type(), le);
        if (lanes > 1)
          count = gpu::SubgroupReduceOp::create(
              w.b, w.loc, count, gpu::AllReduceOperation::ADD,
              /*uniform=*/false, static_cast<uint32_t>(lanes));
        Value c = w.toIndex(count);
        return {w.add(lo, w.mul(c, step)),
                w.minU(hi, w.add(lo, w.mul(w.add(c, w.idx(1)), step)))};
      });
  return search.getResult(0);
}

/// The persistent loop of a score kernel: each group walks a contiguous
/// chunk of CSR positions.
bool TileKernel::emitIndexerBody(gpu::GPUFuncOp func, Value scalarArg) {
  OpBuilder &b = *builder;
  Gen g = gen();
  bool ok = true;
  Value lastBlock = byBlock ? g.sub(numBlocksArg, g.i32(1)) : Value();
  Value indptr = func.getArgument(0), indices = func.getArgument(1);
  Value rows = g.toIndex(scalarArg);
  if (savesMinRowsArg)
    fewRows = g.cmpI(arith::CmpIPredicate::ule, scalarArg,
                     func.getArgument(*savesMinRowsArg));
  // The chunks are cut from the extent of dense_kv_indices, which needs no
  // load, so the first ids and the row search issue at once. The CSR's end
  // must equal it (docs/contract.md); with any other value nothing is
  // scored, so no position runs past the buffers sized by it. The top-k
  // records it: a second use of the status buffer here kept its address
  // live across the loop (three registers more, an occupancy step for the
  // saved-field flows).
  Value total = g.extent(indices);
  Value numGroups = g.mul(nblk, g.idx(groupsPerCTA));
  Value chunk = g.ceilDiv(total, numGroups);
  Value s0 = g.mul(group, chunk);
  Value sEnd = g.minU(total, g.add(s0, chunk));
  int64_t stride = 1;
  if (plan.mma.x) {
    // The tensor-core sums share x's fragments across a warp: its groups
    // walk the warp's chunks together, at consecutive positions, so they
    // share a row except where one ends.
    stride = plan.itemsPerWarp;
    Value warpChunk = g.mul(chunk, g.idx(stride));
    Value warpStart = g.mul(g.divU(group, g.idx(stride)), warpChunk);
    s0 = g.add(warpStart, g.remU(group, g.idx(stride)));
    sEnd = g.minU(total, g.add(warpStart, warpChunk));
  }

  IndexerLoop L;
  L.indptr = indptr;
  L.indices = indices;
  L.rows = rows;
  L.total = total;
  L.s0 = s0;
  L.sEnd = sEnd;
  L.stride = stride;
  L.lastBlock = lastBlock;

  // indptr has rows + 1 entries: rows = 0 has no row to search.
  Value positive = g.andI(g.cmpI(arith::CmpIPredicate::ugt, chunk, g.idx(0)),
                          g.cmpI(arith::CmpIPredicate::ugt, rows, g.idx(0)));
  g.ifThen(positive, [&](Gen &gp) {
    auto guard = followInto(b, gp);
    Gen x = gen();
    SmallVector<Value> firstIds;
    if (byBlock)
      firstIds = loadIds(x, L, x.idx(0));
    Value claimed = x.toIndex(x.load(indptr, rows));
    Value totalOk = x.cmpI(arith::CmpIPredicate::eq, claimed, total);
    // The row of the first position: the last row starting at or before
    // it (empty rows are skipped).
    Value target = x.minU(s0, x.sub(total, x.idx(1)));
    Value r0 = emitRowSearch(x, indptr, rows, target);
    SmallVector<Value> inits = {
        r0, x.idx(-1), x.toIndex(x.load(indptr, r0)),
        x.toIndex(x.load(indptr, x.add(r0, x.idx(1))))};
    for (Type t : plan.carryTypes) {
      if (auto vt = dyn_cast<VectorType>(t))
        inits.push_back(arith::ConstantOp::create(
            b, loc, vt,
            DenseElementsAttr::get(vt,
                                   b.getZeroAttr(vt.getElementType()))));
      else
        inits.push_back(x.f32(0.0));
    }
    if (plan.mma.x) {
      // No row's fragments yet.
      inits.push_back(x.i32(-1));
      inits.append(plan.mma.fragmentRegisters, x.i32(0));
    }
    llvm::append_range(inits, firstIds);
    Value iterations =
        x.select(totalOk, x.ceilDiv(chunk, x.idx(plan.itemsPerIteration)),
                 x.idx(0));
      x.forLoop(x.idx(0), iterations, inits, [&](Gen &gl, Value it,
                                                  ValueRange carried) {
        auto guard2 = followInto(b, gl);
        return emitIteration(L, it, carried, ok);
      });
    });
  return ok;
}

/// Flows with slotted fields: the block's slot (slot_of_ptr[blockId]) as
/// `slotRow`. A block without a slot (< 0) writes nothing; one whose slot
/// is past the slotted fields' rows is skipped and recorded. Returns the
/// item's new validity.
Value TileKernel::emitSlot(Gen &y, gpu::GPUFuncOp func, Value blockId,
                           Value item, Value valid) {
  Value slot = y.toIndex(y.load(func.getArgument(*slotMapArg), blockId));
  const std::string &field = ctx.abi.slotsDefinedBy;
  const TensorRecord &rec = ctx.abi.tensors[field];
  int64_t rowSize = std::stoll(rec.shape[1]) * std::stoll(rec.shape[2]);
  Value numSlots = y.divU(y.extent(buffers.lookup(StringRef(field))),
                          y.idx(rowSize));
  Value has = y.cmpI(arith::CmpIPredicate::sge, slot, y.idx(0));
  Value fits = y.lt(slot, numSlots);
  y.ifThen(y.andI(valid, y.andI(has, y.notI(fits))), [&](Gen &z) {
    z.recordStatus(status, abi::kBadSlot, slot, item);
  });
  valid = y.andI(valid, y.andI(has, fits));
  slotRow = y.select(valid, slot, y.idx(0));
  return valid;
}

/// A cache kernel: one group per completed block of `block_ids`.
bool TileKernel::emitCacheBody(gpu::GPUFuncOp func, Value scalarArg) {
  OpBuilder &b = *builder;
  Gen g = gen();
  bool ok = true;
  Value numBlocks = g.toIndex(numBlocksArg);
  Value blockIds = func.getArgument(0);
  Value numNew = g.toIndex(scalarArg);
  Value any = g.cmpI(arith::CmpIPredicate::ugt, numNew, g.idx(0));
  g.ifThen(any, [&](Gen &gp) {
    auto guard = followInto(b, gp);
    Gen y = gen();
    Value item = y.minU(group, y.sub(numNew, y.idx(1)));
    // A negative id is skipped (the loc form marks tokens that complete no
    // block with -1); one >= num_blocks is skipped and recorded (the
    // guard). Their group loads block 0 so shuffles stay convergent, and
    // its stores are predicated off.
    Value blockId = y.toIndex(y.load(blockIds, item));
    Value isBlock = y.cmpI(arith::CmpIPredicate::sge, blockId, y.idx(0));
    Value inRange = y.lt(blockId, numBlocks);
    Value live = y.lt(group, numNew);
    y.ifThen(y.andI(live, y.andI(isBlock, y.cmpI(arith::CmpIPredicate::sge,
                                                 blockId, numBlocks))),
             [&](Gen &z) {
               z.recordStatus(status, abi::kBadBlockId, blockId, item);
             });
    Value usable = y.andI(isBlock, inRange);
    Value valid = y.andI(live, usable);
    blockId = y.select(usable, blockId, y.idx(0));
    if (slotMapArg)
      valid = emitSlot(y, func, blockId, item, valid);
    DenseMap<Value, TileRef> loaded = loadItem(blockId, item);
    if (!computeItem(blockId, item, item, valid, Value(), loaded,
                     DenseMap<Value, TileRef>()))
      ok = false;
  });
  return ok;
}

/// Emits the planned kernel: parameters, lane coordinates, then the body of
/// either side.
LogicalResult TileKernel::emitKernel(StringRef name) {
  unsupported = false;
  tiles.clear();
  buffers.clear();
  loc = root->getLoc();
  SmallVector<Param> params;
  SmallVector<std::string> reads, writes;
  if (failed(buildParams(params, reads, writes)))
    return failure();

  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  builder = &b;
  int64_t threads = plan.threads;
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, params, threads);
  func->setAttr("vortex.plan", planAttr());
  for (auto [i, p] : llvm::enumerate(params))
    if (p.isBuffer)
      buffers[StringRef(p.name)] = func.getArgument(i);
  Value scalarArg = func.getArgument(2 + (indexerSide ? 0 : -1));
  status = func.getArgument(statusArg);
  Gen g = gen();
  numBlocksArg = byBlock ? func.getArgument(statusArg + 1) : Value();
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  nblk = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value lane = g.remU(tid, g.idx(32));
  Value warp = g.divU(tid, g.idx(32));
  laneInItem = g.remU(lane, g.idx(lanes));
  Value itemInWarp = g.divU(lane, g.idx(lanes));
  int64_t itemsPerWarp = plan.itemsPerWarp;
  groupsPerCTA = plan.groupsPerCTA;
  group = g.add(g.mul(bid, g.idx(groupsPerCTA)),
                g.add(g.mul(warp, g.idx(itemsPerWarp)), itemInWarp));

  bool ok = indexerSide ? emitIndexerBody(func, scalarArg)
                        : emitCacheBody(func, scalarArg);
  gpu::ReturnOp::create(b, loc);

  if (!ok)
    return func.emitOpError("internal error: an op of the kernel has no "
                            "GPU lowering");
  // The emitters follow the plan's layouts, by the same rules.
  if (unsupported)
    return func.emitOpError("internal error: a tile layout differs from the "
                            "kernel's plan");
  recordKernel(name, params, reads, writes);
  return success();
}

/// The manifest record of the kernel.
void TileKernel::recordKernel(StringRef name, ArrayRef<Param> params,
                              ArrayRef<std::string> reads,
                              ArrayRef<std::string> writes) {
  KernelRecord rec;
  rec.name = name.str();
  rec.step = indexerSide ? Step::Indexer : Step::Cache;
  if (indexerSide) {
    rec.gridKind = "persistent";
    rec.ctasPerSM = ctx.ctasPerSM;
  } else {
    rec.gridKind = "items";
    rec.itemsOf = abi::kNumNew.str();
    rec.perCTA = groupsPerCTA;
  }
  rec.threads = ctx.threads;
  rec.params.assign(params.begin(), params.end());
  rec.reads.assign(reads.begin(), reads.end());
  rec.writes.assign(writes.begin(), writes.end());
  if (indexerSide) {
    rec.reads.push_back(abi::kDenseIndptr.str());
    rec.reads.push_back(abi::kDenseIndices.str());
  } else {
    rec.reads.push_back(abi::kBlockIds.str());
  }
  rec.writes.push_back(statusBuf);
  ctx.abi.kernels.push_back(rec);
}

LogicalResult TileKernel::emit(StringRef name) {
  if (failed(planKernel()))
    return failure();
  return emitKernel(name);
}

LogicalResult mlir::vortex::gpugen::emitIndexerWorkloadKernel(
    FlowContext &ctx, Operation *op, StringRef name) {
  return TileKernel(ctx, op, /*indexerSide=*/true).emit(name);
}

LogicalResult mlir::vortex::gpugen::emitCacheKernel(FlowContext &ctx,
                                                    Operation *op,
                                                    StringRef name) {
  return TileKernel(ctx, op, /*indexerSide=*/false).emit(name);
}
