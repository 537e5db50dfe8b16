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
// This file holds the kernel skeletons, which emit what the kernel's plan
// (WorkloadPlan.h) decided; the op emitters are TileBuilder's (TileOps.h).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "WorkloadPlan.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

/// Points `b` (the kernel's builder, which the tile emitters use) at where
/// `g` builds, typically inside a region `g` opened, until the returned
/// guard goes out of scope.
[[nodiscard]] static OpBuilder::InsertionGuard followInto(OpBuilder &b,
                                                          Gen &g) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(g.b.getInsertionBlock(), g.b.getInsertionPoint());
  return guard;
}

/// The skeleton of a planned score or cache kernel.
class TileKernel : TileBuilder {
public:
  TileKernel(FlowContext &ctx, Operation *root, KernelPlan kernelPlan)
      : TileBuilder(root->getContext()), ctx(ctx), root(root),
        plan(std::move(kernelPlan)), indexerSide(plan.indexerSide) {
    envelopeIdentity = ctx.options.envelopeIdentity;
    lanes = plan.lanes;
    sliceColumns = plan.sliceColumns;
    if (plan.mma.x)
      envelopeMMA = [this](Operation *op, TileRef in) {
        return lowerEnvelopeMMA(op, in);
      };
  }

  /// Emits the kernel as `name` and records it in the manifest.
  LogicalResult emitKernel(StringRef name);

private:
  FlowContext &ctx;
  Operation *root;
  const KernelPlan plan;
  const bool indexerSide;

  DenseMap<StringRef, Value> buffers; // param name -> memref

  // An item's phases: the per-row part, its loads, then its compute and
  // stores.
  bool emitRowPart(Value row);
  DenseMap<Value, TileRef> loadItem(Value blockId, Value pos);
  TileRef loadInt4Tile(Value value, Value bytes, Value scale, Value rowBase,
                       bool perToken);
  bool computeItem(Value blockId, Value pos, Value row, Value active,
                   Value blockOk, const DenseMap<Value, TileRef> &loaded,
                   const DenseMap<Value, TileRef> &rowTiles);
  TileRef lowerEnvelopeMMA(Operation *op, TileRef in);

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
  Value positionAt(Gen &x, const IndexerLoop &L, Value it, int64_t u);
  SmallVector<Value> loadIds(Gen &x, const IndexerLoop &L, Value it);
  scf::WhileOp advanceRow(Value indptr, Value r, Value start, Value end,
                          Value sc);
  SmallVector<Value> emitIteration(const IndexerLoop &L, Value it,
                                   ValueRange carried, bool &ok);
  SmallVector<Value> freshRowValues(Value r, ValueRange carry, bool &ok);
  DenseMap<Value, TileRef> carriedRowTiles(ArrayRef<Value> carry);
  Value emitRowSearch(Gen &x, Value indptr, Value rows, Value target);
  bool emitIndexerBody(gpu::GPUFuncOp func, Value scalarArg);
  bool emitCacheBody(gpu::GPUFuncOp func, Value scalarArg);
  Value emitSlot(Gen &y, gpu::GPUFuncOp func, Value blockId, Value item,
                 Value valid);

  // State of the emission.
  DenseMap<Value, SmallVector<Value>> rowVectors;
  /// The status buffer, and the i32 num_blocks argument (byBlock only).
  Value status, numBlocksArg, nblk, group;
  /// Cache kernels of flows with slotted fields: the item's slot row
  /// (docs/contract.md, "Slotted fields").
  Value slotRow;
  /// The item being computed's row.
  Value itemRow;
  /// Whether the step's rows are at most saves_min_rows (the score kernel
  /// stores the deferred saves); set where any is.
  Value fewRows;
  /// The mma fragments the loop carries.
  EnvelopeFragments mmaState;
};

} // namespace

//===----------------------------------------------------------------------===//
// An item: the per-row part, loads, compute and stores
//===----------------------------------------------------------------------===//

/// Loads the batched inputs at `row` and the parameters at row 0 (their
/// row vectors are kept in `rowVectors`) and lowers the per-row ops.
bool TileKernel::emitRowPart(Value row) {
  rowVectors.clear();
  for (Value v : plan.inputs) {
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
  for (Operation *op : plan.rowOps) {
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
  for (Value v : plan.inputs) {
    auto type = cast<VTensorType>(v.getType());
    if (indexerSide && isRowInvariant(v))
      continue;
    std::string buf = ctx.bufferOf.lookup(v);
    Value at = type.isParameter()                     ? gen().idx(0)
               : (type.isPaged() || type.isSlotted()) ? blockId
                                                      : pos;
    if (ctx.config.isInt4KV() && (buf == "k" || buf == "v")) {
      bool isV = buf == "v";
      loaded[v] = loadInt4Tile(
          v, buffers.lookup(StringRef(buf)),
          buffers.lookup(isV ? abi::kVInt4Scale : abi::kKInt4Scale), at, isV);
      continue;
    }
    loaded[v] = loadTile(v, buffers.lookup(StringRef(buf)), at,
                         ctx.abi.tensors[buf].role == Role::Scratch,
                         isStreamed(ctx, plan, v, buf));
  }
  return loaded;
}

/// A block of a packed int4 pool (`bytes` [blocks, bs, D / 2] flat) as f32
/// values, (nibble - 7) * scale, with `scale` per channel [blocks, 1, D] or
/// per token [blocks, bs, 1] (docs/contract.md "INT4 KV"): a byte load per
/// element, unpacked where it loads, 0 in padded rows and columns.
TileRef TileKernel::loadInt4Tile(Value value, Value bytes, Value scale,
                                 Value rowBase, bool perToken) {
  Gen g = gen();
  TileRef shape = loadedLayout(cast<VTensorType>(value.getType()));
  const Tile &t = *shape;
  int64_t rows = t.realD0, cols = t.realD1, width = t.width();
  Type f32 = g.b.getF32Type(), i8 = g.b.getI8Type();
  auto vecType = VectorType::get({width}, f32);
  Value zeros = arith::ConstantOp::create(
      g.b, g.loc, vecType,
      DenseElementsAttr::get(vecType, g.b.getZeroAttr(f32)));
  Value byteBase = g.mul(rowBase, g.idx(rows * (cols / 2)));
  Value scaleBase = g.mul(rowBase, g.idx(perToken ? rows : cols));
  SmallVector<Value> out;
  for (int64_t r = 0; r < t.d0; ++r) {
    if (r >= rows) {
      out.push_back(zeros);
      continue;
    }
    Value row = zeros;
    Value rowScale =
        perToken ? g.load(scale, g.add(scaleBase, g.idx(r))) : Value();
    for (int64_t e = 0; e < width; ++e) {
      // Channel c: byte c / 2 of the row, the low nibble for even c.
      Value col = column(t, e);
      Value ok = g.lt(col, g.idx(cols));
      Value c = g.minU(col, g.idx(cols - 1));
      Value at = g.add(byteBase, g.add(g.idx(r * (cols / 2)),
                                       g.divU(c, g.idx(2))));
      Value byte = g.load(bytes, at);
      Value shift = arith::IndexCastOp::create(
          g.b, g.loc, i8, g.mul(g.remU(c, g.idx(2)), g.idx(4)));
      Value nibble = arith::AndIOp::create(
          g.b, g.loc, arith::ShRUIOp::create(g.b, g.loc, byte, shift),
          arith::ConstantIntOp::create(g.b, g.loc, i8, 15));
      Value q = g.subF(arith::UIToFPOp::create(g.b, g.loc, f32, nibble),
                       g.f32(static_cast<double>(abi::kInt4Bias)));
      Value s = perToken ? rowScale : g.load(scale, g.add(scaleBase, c));
      row = vector::InsertOp::create(
          g.b, g.loc, g.select(ok, g.mulF(q, s), g.f32(0.0)), row, e);
    }
    out.push_back(row);
  }
  return tileFromRows(value, out);
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
  for (Operation *op : plan.ops) {
    if (isa<SaveOp, WriteOp, FillOp>(op) || plan.rowOpSet.count(op))
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
  for (const PendingStore &st : plan.stores) {
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
      for (auto pair : llvm::zip(plan.stores, values)) {
        // References, not a structured binding: `store` captures them.
        auto &st = std::get<0>(pair);
        auto &tv = std::get<1>(pair);
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
    if (!llvm::any_of(plan.stores,
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
  o.xAlign = runAlignment(o.xStride, runOf(o.x), storageOf(ctx, plan.mma.x));
  o.aRow = a->storageRows.front();
  o.bRow = b->storageRows.front();
  o.row = itemRow;
  return emitEnvelopeMMA(*this, o, mmaState);
}

//===----------------------------------------------------------------------===//
// The persistent loop of a score kernel
//===----------------------------------------------------------------------===//

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
    if (plan.inputs.contains(v))
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
    if (plan.inputs.contains(v)) {
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

/// The row of CSR position `sc` and its bounds, walking on from row `r` of
/// bounds [start, end). The bounds are carried, so an item in the same row
/// as the last loads nothing.
scf::WhileOp TileKernel::advanceRow(Value indptr, Value r, Value start,
                                    Value end, Value sc) {
  OpBuilder &b = *builder;
  auto rowStart = [&](Gen &x, Value row) {
    return x.toIndex(x.load(indptr, row));
  };
  Type idx = b.getIndexType();
  return scf::WhileOp::create(
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
  Gen y = gen();
  Value r = carried[0], cachedRow = carried[1];
  Value start = carried[2], end = carried[3];
  // Kernels that gather by block id carry the ids, loaded an iteration
  // ahead.
  int64_t carriedIds = plan.byBlock ? unroll : 0;
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
  if (!plan.byBlock)
    for (Value pos : posOf)
      ids.push_back(y.load(indices, pos));
  for (int64_t u = 0; u < unroll; ++u) {
    Value raw = ids[u];
    if (plan.byBlock) {
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
  if (plan.byBlock)
    nextIds = loadIds(y, L, y.add(it, y.idx(1)));
  for (int64_t u = 0; u < unroll; ++u) {
    Value valid = validOf[u];
    Value sc = posOf[u];
    scf::WhileOp adv = advanceRow(indptr, r, start, end, sc);
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
      for (Value v : plan.rowValues)
        item.rowTiles[v] = tiles.lookup(v);
      for (Operation *op : plan.rowOps)
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
  Value lastBlock =
      plan.byBlock ? g.sub(numBlocksArg, g.i32(1)) : Value();
  Value indptr = func.getArgument(0), indices = func.getArgument(1);
  Value rows = g.toIndex(scalarArg);
  if (plan.savesMinRowsArg)
    fewRows = g.cmpI(arith::CmpIPredicate::ule, scalarArg,
                     func.getArgument(*plan.savesMinRowsArg));
  // The chunks are cut from the extent of dense_kv_indices, which needs no
  // load, so the first ids and the row search issue at once. The CSR's end
  // must equal it (docs/contract.md); with any other value nothing is
  // scored, so no position runs past the buffers sized by it. The top-k
  // records it: a second use of the status buffer here kept its address
  // live across the loop (three registers more, an occupancy step for the
  // saved-field flows).
  Value total = g.extent(indices);
  Value numGroups = g.mul(nblk, g.idx(plan.groupsPerCTA));
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
    if (plan.byBlock)
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
    x.forLoop(x.idx(0), iterations, inits,
              [&](Gen &gl, Value it, ValueRange carried) {
                auto guard2 = followInto(b, gl);
                return emitIteration(L, it, carried, ok);
              });
  });
  return ok;
}

//===----------------------------------------------------------------------===//
// The cache body, and the kernel
//===----------------------------------------------------------------------===//

/// Flows with slotted fields: the block's slot (slot_of_ptr[blockId]) as
/// `slotRow`. A block without a slot (< 0) writes nothing; one whose slot
/// is past the slotted fields' rows is skipped and recorded. Returns the
/// item's new validity.
Value TileKernel::emitSlot(Gen &y, gpu::GPUFuncOp func, Value blockId,
                           Value item, Value valid) {
  Value slot =
      y.toIndex(y.load(func.getArgument(*plan.slotMapArg), blockId));
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
    if (plan.slotMapArg)
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
  ArrayRef<Param> params = plan.params;

  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  builder = &b;
  int64_t threads = plan.threads;
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, params, threads);
  func->setAttr("vortex.plan", planAttr(root->getContext(), ctx, plan));
  entryBlock = &func.getBody().front();
  for (auto [i, p] : llvm::enumerate(params))
    if (p.isBuffer)
      buffers[StringRef(p.name)] = func.getArgument(i);
  Value scalarArg = func.getArgument(2 + (indexerSide ? 0 : -1));
  status = func.getArgument(plan.statusArg);
  Gen g = gen();
  numBlocksArg =
      plan.byBlock ? func.getArgument(plan.statusArg + 1) : Value();
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  nblk = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value lane = g.remU(tid, g.idx(32));
  Value warp = g.divU(tid, g.idx(32));
  laneInItem = g.remU(lane, g.idx(lanes));
  Value itemInWarp = g.divU(lane, g.idx(lanes));
  int64_t itemsPerWarp = plan.itemsPerWarp;
  group = g.add(g.mul(bid, g.idx(plan.groupsPerCTA)),
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
  ctx.abi.kernels.push_back(kernelRecord(ctx, plan, name));
  return success();
}

static LogicalResult emitWorkloadKernel(FlowContext &ctx, Operation *op,
                                        StringRef name, bool indexerSide) {
  FailureOr<KernelPlan> plan = planWorkloadKernel(ctx, op, indexerSide);
  if (failed(plan))
    return failure();
  return TileKernel(ctx, op, std::move(*plan)).emitKernel(name);
}

LogicalResult mlir::vortex::gpugen::emitIndexerWorkloadKernel(
    FlowContext &ctx, Operation *op, StringRef name) {
  return emitWorkloadKernel(ctx, op, name, /*indexerSide=*/true);
}

LogicalResult mlir::vortex::gpugen::emitCacheKernel(FlowContext &ctx,
                                                    Operation *op,
                                                    StringRef name) {
  return emitWorkloadKernel(ctx, op, name, /*indexerSide=*/false);
}
