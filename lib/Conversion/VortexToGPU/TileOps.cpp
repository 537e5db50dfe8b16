//===- TileOps.cpp - Tile helpers and the table of op families ------------===//

#include "TileOps.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

Value TileBuilder::column(const Tile &t, int64_t e) {
  Gen g = gen();
  if (!t.distributed)
    return g.idx(e);
  return g.add(g.mul(laneInItem, g.idx(t.perLane)), g.idx(e));
}

TileRef TileBuilder::makeTile(VTensorType type, bool distributed) {
  auto t = std::make_shared<Tile>();
  t->d0 = computeExtent(type, 1);
  t->d1 = computeExtent(type, 2);
  t->realD0 = type.getD0();
  t->realD1 = type.getD1();
  t->distributed = distributed;
  t->perLane = distributed ? t->d1 / lanes : t->d1;
  // Until an op gives it its elements: the placeholder an op returns for a
  // layout it cannot handle (`unsupported`) must still emit, since the
  // attempt is finished, discarded and redone in narrow mode.
  t->at = [this](int64_t, int64_t) { return gen().f32(0.0); };
  return t;
}

/// The op families, tried in order.
static constexpr TileRef (*kFamilies[])(TileBuilder &, Operation *) = {
    lowerElementwiseTile, lowerReductionTile, lowerContractionTile,
    lowerLayoutTile};

TileRef TileBuilder::lower(Operation *op) {
  for (auto family : kFamilies)
    if (TileRef t = family(*this, op))
      return t;
  return nullptr;
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
  return finishReduction(g, kind, acc, g.f32(static_cast<double>(count)));
}

TileRef TileBuilder::elementwise(
    VTensorType resultType, ArrayRef<TileRef> ins,
    std::function<Value(Gen &, ArrayRef<Value>, int64_t, int64_t)> fn) {
  int64_t rd1 = computeExtent(resultType, 2);
  // The result is distributed iff an operand is distributed over the
  // result's columns; replicated operands must then broadcast a column.
  bool distributed = false;
  for (const TileRef &t : ins)
    if (t->distributed && t->d1 == rd1)
      distributed = true;
  for (const TileRef &t : ins) {
    if (distributed && !t->distributed && t->d1 != 1)
      unsupported = true;
    if (!distributed && t->distributed)
      unsupported = true;
  }
  TileRef out = makeTile(resultType, distributed);
  SmallVector<TileRef> operands(ins.begin(), ins.end());
  // The tile's own extent by value: capturing `out` would make a reference
  // cycle (the tile owns this function), which leaked every tile.
  int64_t outD1 = out->d1;
  out->at = [this, operands, fn, outD1](int64_t r, int64_t e) {
    Gen g = gen();
    SmallVector<Value> args;
    for (const TileRef &t : operands) {
      int64_t rr = t->d0 == 1 ? 0 : r;
      int64_t ee = t->d1 == 1 && outD1 != 1 ? 0 : e;
      args.push_back(t->at(rr, ee));
    }
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
  bool distributedOut = false;
  if (in->distributed && !whole) {
    if (in->perLane % group != 0) {
      unsupported = true;
      return makeTile(resultType, false);
    }
    distributedOut = true;
  }
  TileRef out = makeTile(resultType, distributedOut);
  if (distributedOut)
    out->perLane = in->perLane / group;
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
  TileRef out = makeTile(resultType, in->distributed);
  out->perLane = in->perLane;
  out->at = [this, in, kind, group, realCount](int64_t m, int64_t e) {
    Gen g = gen();
    Value acc = g.f32(neutralOf(kind));
    for (int64_t r = m * group; r < (m + 1) * group; ++r)
      acc = combineReduction(g, kind, acc, in->at(r, e));
    return finish(g, kind, acc, realCount);
  };
  return out;
}

/// O[a, b] = sum_k Y[a, k] X[b, k], replicated.
TileRef TileBuilder::contract(TileRef x, TileRef y, VTensorType resultType) {
  if (x->distributed != y->distributed ||
      (x->distributed && x->perLane != y->perLane)) {
    unsupported = true;
    return makeTile(resultType, false);
  }
  TileRef out = makeTile(resultType, false);
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
