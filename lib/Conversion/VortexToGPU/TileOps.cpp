//===- TileOps.cpp - Tile helpers and the table of op families ------------===//

#include "TileOps.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

Value TileBuilder::column(const TileShape &t, int64_t e) {
  Gen g = gen();
  if (!t.distributed)
    return g.idx(e);
  int64_t run = runOf(t);
  // Sequenced: argument evaluation order differs between compilers, and so
  // would the order of the ops built.
  Value offset = g.idx(e / run * lanes * run + e % run);
  Value laneStart = g.mul(laneInItem, g.idx(run));
  return g.add(laneStart, offset);
}

Value TileBuilder::loadLaneRuns(Value memref, Value base, const TileShape &t,
                                Type storage, llvm::MaybeAlign align,
                                bool nontemporal) {
  Gen g = gen();
  int64_t run = runOf(t);
  auto runType = VectorType::get({run}, storage);
  Value row;
  for (int64_t k = 0; k < t.width() / run; ++k) {
    Value piece = vector::LoadOp::create(
        g.b, g.loc, runType, memref,
        ValueRange{g.add(base, column(t, k * run))}, nontemporal, align);
    if (!row) {
      row = piece;
      continue;
    }
    // Concatenated (a shuffle, which NVVM lowers directly).
    SmallVector<int64_t> mask =
        llvm::to_vector(llvm::seq<int64_t>(0, (k + 1) * run));
    row = vector::ShuffleOp::create(g.b, g.loc, row, piece, mask);
  }
  return row;
}

TileShape LaneLayout::shapeOf(VTensorType type, bool distributed) const {
  TileShape t;
  t.d0 = computeExtent(type, 1);
  t.d1 = computeExtent(type, 2);
  t.realD0 = type.getD0();
  t.realD1 = type.getD1();
  t.distributed = distributed;
  t.perLane = distributed ? t.d1 / lanes : t.d1;
  return t;
}

TileRef TileBuilder::makeTile(const TileShape &shape) {
  auto t = std::make_shared<Tile>();
  static_cast<TileShape &>(*t) = shape;
  // Until an op gives it its elements: the placeholder an emitter returns
  // for a layout it cannot do (`unsupported`, an internal error reported
  // once the kernel is finished) must still emit.
  t->at = [this](int64_t, int64_t) { return gen().f32(0.0); };
  return t;
}

/// The op families.
static const TileFamily *const kFamilies[] = {
    &kElementwiseTiles, &kReductionTiles, &kContractionTiles, &kLayoutTiles};

static const TileFamily *familyOf(Operation *op) {
  for (const TileFamily *family : kFamilies)
    if (family->matches(op))
      return family;
  return nullptr;
}

TileRef TileBuilder::lower(Operation *op) {
  const TileFamily *family = familyOf(op);
  return family ? family->lower(*this, op) : nullptr;
}

FailureOr<TileLayout> LaneLayout::layoutOf(Operation *op,
                                           ArrayRef<TileShape> operands,
                                           bool &known) const {
  const TileFamily *family = familyOf(op);
  known = family != nullptr;
  if (!family)
    return failure();
  return family->layout(*this, op, operands);
}

//===----------------------------------------------------------------------===//
// Layout rules
//===----------------------------------------------------------------------===//

/// The result is distributed iff an operand is distributed over the
/// result's columns; replicated operands must then broadcast a column, and
/// a distributed operand cannot feed a replicated result.
FailureOr<TileShape>
LaneLayout::elementwiseShape(VTensorType resultType,
                             ArrayRef<TileShape> ins) const {
  int64_t rd1 = computeExtent(resultType, 2);
  bool distributed = false;
  for (const TileShape &t : ins)
    if (t.distributed && t.d1 == rd1)
      distributed = true;
  for (const TileShape &t : ins) {
    if (distributed && !t.distributed && t.d1 != 1)
      return failure();
    if (!distributed && t.distributed)
      return failure();
  }
  return shapeOf(resultType, distributed);
}

/// Over groups of `group` columns (the whole axis when group is the
/// extent): a distributed input keeps its layout when whole groups lie in a
/// lane, and reduces across the lanes when the whole axis is reduced.
FailureOr<TileLayout>
LaneLayout::reduceColumnsLayout(const TileShape &in, VTensorType resultType,
                                int64_t group) const {
  bool whole = group == in.d1;
  bool distributedOut = in.distributed && !whole;
  // Groups of consecutive columns stay in a lane only when its columns are
  // contiguous (a sliced layout is planned with this and dropped if it
  // fails).
  if (distributedOut &&
      (in.perLane % group != 0 || runOf(in) != in.width()))
    return failure();
  TileLayout out{shapeOf(resultType, distributedOut), whole && in.distributed};
  if (distributedOut)
    out.shape.perLane = in.perLane / group;
  return out;
}

/// Over rows, which every lane holds: the input's layout.
TileShape LaneLayout::reduceRowsShape(const TileShape &in,
                                      VTensorType resultType) const {
  TileShape out = shapeOf(resultType, in.distributed);
  out.perLane = in.perLane;
  return out;
}

/// Replicated; both operands share the layout of the contracted axis, and
/// a distributed one is summed across the lanes.
FailureOr<TileLayout>
LaneLayout::contractLayout(const TileShape &x, const TileShape &y,
                           VTensorType resultType) const {
  if (x.distributed != y.distributed ||
      (x.distributed && x.perLane != y.perLane))
    return failure();
  return TileLayout{shapeOf(resultType, false), x.distributed};
}

Value TileBuilder::clusterReduce(Value v, ReduceKind kind) {
  if (lanes == 1)
    return v;
  gpu::AllReduceOperation op = gpu::AllReduceOperation::ADD;
  if (kind == ReduceKind::Max)
    op = gpu::AllReduceOperation::MAXIMUMF;
  else if (kind == ReduceKind::Min)
    op = gpu::AllReduceOperation::MINIMUMF;
  return gpu::SubgroupReduceOp::create(*builder, loc, v, op,
                                       /*uniform=*/false,
                                       static_cast<uint32_t>(lanes));
}

static Value finish(Gen &g, ReduceKind kind, Value acc, int64_t count) {
  // A mean over a static count multiplies by the rounded reciprocal (exact
  // for powers of two, within an ulp otherwise): div.rn.f32's slow path
  // took 38 to 45 registers more in the G = 5 score kernels.
  if (kind == ReduceKind::Mean)
    return g.mulF(acc, g.f32(1.0 / static_cast<double>(count)));
  return finishReduction(g, kind, acc, g.f32(static_cast<double>(count)));
}

TileRef TileBuilder::elementwise(
    VTensorType resultType, ArrayRef<TileRef> ins,
    std::function<Value(Gen &, ArrayRef<Value>, int64_t, int64_t)> fn) {
  SmallVector<TileShape> shapes;
  for (const TileRef &t : ins)
    shapes.push_back(*t);
  FailureOr<TileShape> shape = elementwiseShape(resultType, shapes);
  if (failed(shape))
    unsupported = true;
  TileRef out = makeTile(succeeded(shape) ? *shape
                                          : shapeOf(resultType, false));
  SmallVector<TileRef> operands(ins.begin(), ins.end());
  // The tile's own extent by value: capturing `out` would make a reference
  // cycle (the tile owns this function), which leaked every tile.
  int64_t outD1 = out->d1;
  out->at = [this, operands, fn, outD1](int64_t r, int64_t e) {
    Gen g = gen();
    SmallVector<Value> args;
    for (const TileRef &t : operands)
      args.push_back(t->broadcastAt(r, e, outD1));
    return fn(g, args, r, e);
  };
  return out;
}

/// Reduces groups of `group` consecutive columns (the whole axis when group
/// is the extent). A distributed input reduces its lane slice, then the
/// lanes of the group.
TileRef TileBuilder::reduceColumns(TileRef in, VTensorType resultType,
                                  ReduceKind kind, int64_t group,
                                  int64_t realCount) {
  bool whole = group == in->d1;
  FailureOr<TileLayout> layout = reduceColumnsLayout(*in, resultType, group);
  if (failed(layout)) {
    unsupported = true;
    return makeTile(resultType, false);
  }
  TileRef out = makeTile(layout->shape);
  SmallVector<Value> values;
  Gen g = gen();
  for (int64_t r = 0; r < out->d0; ++r) {
    for (int64_t m = 0; m < out->width(); ++m) {
      // Padded result rows hold no value until a mask gives them one.
      if (r >= out->realD0 || (!out->distributed && m >= out->realD1)) {
        values.push_back(g.f32(0.0));
        continue;
      }
      Value acc = g.f32(neutralOf(kind));
      int64_t from = whole && in->distributed ? 0 : m * group;
      int64_t to = whole && in->distributed ? in->perLane : from + group;
      for (int64_t e = from; e < to; ++e)
        acc = combineReduction(g, kind, acc, in->at(r, e));
      if (whole && in->distributed)
        acc = clusterReduce(acc, kind == ReduceKind::L2Norm ||
                                         kind == ReduceKind::Mean
                                     ? ReduceKind::Sum
                                     : kind);
      values.push_back(finish(g, kind, acc, realCount));
    }
  }
  int64_t width = out->width();
  out->at = [values, width](int64_t r, int64_t e) {
    return values[r * width + e];
  };
  return out;
}

/// Reduces groups of `group` consecutive rows, lazily (rows live in each
/// lane).
TileRef TileBuilder::reduceRows(TileRef in, VTensorType resultType,
                               ReduceKind kind, int64_t group,
                               int64_t realCount) {
  TileRef out = makeTile(reduceRowsShape(*in, resultType));
  out->at = [this, in, kind, group, realCount](int64_t m, int64_t e) {
    Gen g = gen();
    Value acc = g.f32(neutralOf(kind));
    for (int64_t r = m * group; r < (m + 1) * group; ++r)
      acc = combineReduction(g, kind, acc, in->at(r, e));
    return finish(g, kind, acc, realCount);
  };
  return out;
}

/// Multiply-adds above which a contraction of two loaded replicated tiles is
/// emitted as loops: unrolled, 262144 of them (a [16, 128] block against a
/// [128, 128] parameter) made 24 MB of PTX and more than 10 minutes of
/// ptxas; the shipped flows' contractions stay below.
static constexpr int64_t kRolledContraction = 16384;
/// The unroll of a rolled contraction's K loop (at most; a divisor of K).
static constexpr int64_t kRolledUnroll = 8;

/// O[a, b] = sum_k Y[a, k] X[b, k], replicated.
TileRef TileBuilder::contract(TileRef x, TileRef y, VTensorType resultType) {
  FailureOr<TileLayout> layout = contractLayout(*x, *y, resultType);
  if (failed(layout)) {
    unsupported = true;
    return makeTile(resultType, false);
  }
  if (entryBlock && !x->distributed && x->load && y->load &&
      layout->shape.d0 * layout->shape.d1 * x->width() > kRolledContraction)
    return contractRolled(*x, *y, layout->shape);
  TileRef out = makeTile(layout->shape);
  SmallVector<Value> values;
  Gen g = gen();
  for (int64_t a = 0; a < out->d0; ++a)
    for (int64_t c = 0; c < out->d1; ++c) {
      Value acc = g.f32(0.0);
      // Padded result lanes hold no value until a mask gives them one.
      if (a >= out->realD0 || c >= out->realD1) {
        values.push_back(acc);
        continue;
      }
      for (int64_t e = 0; e < x->width(); ++e)
        acc = g.addF(acc, g.mulF(y->at(a, e), x->at(c, e)));
      if (x->distributed)
        acc = clusterReduce(acc, ReduceKind::Sum);
      values.push_back(acc);
    }
  int64_t width = out->d1;
  out->at = [values, width](int64_t r, int64_t e) {
    return values[r * width + e];
  };
  return out;
}

/// The contraction as loops over the result's real elements and K (K
/// unrolled by up to kRolledUnroll, summed in the unrolled order), reading
/// both operands from their buffers; the result goes to a per-thread buffer
/// (allocated at the kernel's entry) that its uses read.
TileRef TileBuilder::contractRolled(const Tile &x, const Tile &y,
                                    const TileShape &shape) {
  Gen g = gen();
  int64_t k = x.width();
  int64_t unroll = kRolledUnroll;
  while (k % unroll != 0)
    unroll /= 2;
  auto bufType = MemRefType::get({shape.d0 * shape.d1}, g.b.getF32Type());
  Value buf;
  {
    // Not in the item's loop: an alloca there would grow the stack on
    // every iteration.
    OpBuilder::InsertionGuard guard(g.b);
    g.b.setInsertionPointToStart(entryBlock);
    buf = memref::AllocaOp::create(g.b, g.loc, bufType);
  }
  int64_t width = shape.d1;
  auto xLoad = x.load, yLoad = y.load;
  g.forLoop(g.idx(0), g.idx(shape.realD0), {},
            [&](Gen &ga, Value a, ValueRange) {
    ga.forLoop(ga.idx(0), ga.idx(shape.realD1), {},
               [&](Gen &gc, Value c, ValueRange) {
      auto sum = scf::ForOp::create(
          gc.b, gc.loc, gc.idx(0), gc.idx(k), gc.idx(unroll),
          ValueRange{gc.f32(0.0)},
          [&](OpBuilder &nb, Location l, Value e0, ValueRange acc) {
            Gen ge{nb, l};
            Value v = acc[0];
            for (int64_t u = 0; u < unroll; ++u) {
              Value e = ge.add(e0, ge.idx(u));
              v = ge.addF(v, ge.mulF(yLoad(ge, a, e), xLoad(ge, c, e)));
            }
            scf::YieldOp::create(nb, l, v);
          });
      gc.store(sum.getResult(0), buf, gc.add(gc.mul(a, gc.idx(width)), c));
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
  TileRef out = makeTile(shape);
  int64_t realD0 = shape.realD0, realD1 = shape.realD1;
  out->at = [this, buf, width, realD0, realD1](int64_t r, int64_t e) {
    Gen g = gen();
    // Padded result lanes hold no value until a mask gives them one.
    if (r >= realD0 || e >= realD1)
      return g.f32(0.0);
    return g.load(buf, g.idx(r * width + e));
  };
  return out;
}
