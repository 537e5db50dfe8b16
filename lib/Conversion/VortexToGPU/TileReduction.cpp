//===- TileReduction.cpp - Reductions over a tile's inner axes ------------===//
//
// Reductions by ReductionOpInterface: over D1 (columns, ending in a
// clustered subgroup reduction when the tile is distributed) or over D0
// (rows, which every lane holds), whole or in groups of `factor`.
//
//===----------------------------------------------------------------------===//

#include "TileOps.h"

#include <array>
#include <optional>

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

static bool isReduction(Operation *op) {
  return isa<ReductionOpInterface>(op);
}

/// Columns in groups of the factor (or all of them), or rows.
static int64_t groupOf(ReductionOpInterface red, const TileShape &in) {
  int64_t factor = red.getGroupFactor();
  if (factor != 0)
    return factor;
  return red.getReducedDim() == 2 ? in.d1 : in.d0;
}

static FailureOr<TileLayout> layoutReduction(const LaneLayout &tb,
                                             Operation *op,
                                             ArrayRef<TileShape> operands) {
  auto red = cast<ReductionOpInterface>(op);
  VTensorType rt = TileBuilder::resultTypeOf(op);
  if (red.getReducedDim() == 2)
    return tb.reduceColumnsLayout(operands[0], rt,
                                  groupOf(red, operands[0]));
  return TileLayout{tb.reduceRowsShape(operands[0], rt)};
}

std::optional<std::array<Value, 3>> mlir::vortex::gpugen::matchEnvelope(
    Value v) {
  auto max = v.getDefiningOp<MaximumOp>();
  if (!max)
    return std::nullopt;
  auto m1 = max.getLhs().getDefiningOp<MultiplyOp>();
  auto m2 = max.getRhs().getDefiningOp<MultiplyOp>();
  if (!m1 || !m2)
    return std::nullopt;
  for (Value x : {m1.getLhs(), m1.getRhs()}) {
    Value a = x == m1.getLhs() ? m1.getRhs() : m1.getLhs();
    for (Value y : {m2.getLhs(), m2.getRhs()}) {
      if (y != x)
        continue;
      Value b = y == m2.getLhs() ? m2.getRhs() : m2.getLhs();
      return std::array<Value, 3>{x, a, b};
    }
  }
  return std::nullopt;
}

/// The tiles of x, a and b of an envelope, if this kernel holds all three.
static std::optional<std::array<TileRef, 3>> envelopeOperands(TileBuilder &tb,
                                                              Value v) {
  std::optional<std::array<Value, 3>> xab = matchEnvelope(v);
  if (!xab)
    return std::nullopt;
  std::array<TileRef, 3> tiles = {tb.tiles.lookup((*xab)[0]),
                                  tb.tiles.lookup((*xab)[1]),
                                  tb.tiles.lookup((*xab)[2])};
  if (!tiles[0] || !tiles[1] || !tiles[2])
    return std::nullopt;
  return tiles;
}

/// sum_k max(x_k a_k, x_k b_k) as (sum_k x_k (a_k + b_k) + |x_k| |a_k - b_k|)
/// / 2: two fused multiply-adds an element where the literal form takes two
/// multiplies, a maximum and an add (Quest's score kernel is issue-bound).
/// Equal in real arithmetic; in f32 it differs by rounding (docs/gpu.md,
/// "Envelope sums"). The tile has the plain sum's layout.
static TileRef lowerEnvelopeSum(TileBuilder &tb, TileRef in,
                                VTensorType resultType,
                                const std::array<TileRef, 3> &xab) {
  const auto &[x, a, b] = xab;
  FailureOr<TileLayout> layout =
      tb.reduceColumnsLayout(*in, resultType, in->d1);
  if (failed(layout)) {
    tb.unsupported = true;
    return tb.makeTile(resultType, false);
  }
  TileRef out = tb.makeTile(layout->shape);
  Gen g = tb.gen();
  // a + b and |a - b| once per column when a and b are rows broadcast
  // over the tile's rows (Quest's envelopes), else per element.
  DenseMap<std::pair<int64_t, int64_t>, std::pair<Value, Value>> sumGap;
  SmallVector<Value> values;
  for (int64_t r = 0; r < out->d0; ++r) {
    // Padded result rows hold no value until a mask gives them one.
    if (r >= out->realD0) {
      values.push_back(g.f32(0.0));
      continue;
    }
    Value acc = g.f32(0.0);
    for (int64_t e = 0; e < in->width(); ++e) {
      int64_t key = a->d0 == 1 && b->d0 == 1 ? 0 : r;
      auto [it, fresh] = sumGap.try_emplace({key, e});
      if (fresh) {
        Value av = a->broadcastAt(r, e, in->d1),
              bv = b->broadcastAt(r, e, in->d1);
        it->second = {g.addF(av, bv),
                      math::AbsFOp::create(g.b, g.loc, g.subF(av, bv))};
      }
      auto [sum, gap] = it->second;
      Value xv = x->broadcastAt(r, e, in->d1);
      acc = math::FmaOp::create(g.b, g.loc, xv, sum, acc);
      acc = math::FmaOp::create(
          g.b, g.loc, math::AbsFOp::create(g.b, g.loc, xv), gap, acc);
    }
    if (in->distributed)
      acc = tb.clusterReduce(acc, ReduceKind::Sum);
    values.push_back(g.mulF(acc, g.f32(0.5)));
  }
  int64_t width = out->width();
  out->at = [values, width](int64_t r, int64_t e) {
    return values[r * width + e];
  };
  return out;
}

static TileRef lowerReduction(TileBuilder &tb, Operation *op) {
  auto red = cast<ReductionOpInterface>(op);
  TileRef in = tb.operandTile(op, 0);
  if (tb.envelopeMMA)
    if (TileRef t = tb.envelopeMMA(op, in))
      return t;
  if (tb.envelopeIdentity && red.getReducedDim() == 2 &&
      red.getGroupFactor() == 0 && red.getReduceKind() == ReduceKind::Sum)
    if (auto xab = envelopeOperands(tb, op->getOperand(0)))
      return lowerEnvelopeSum(tb, in, TileBuilder::resultTypeOf(op), *xab);
  auto inType = cast<VTensorType>(op->getOperand(0).getType());
  int64_t dim = red.getReducedDim(), factor = red.getGroupFactor();
  // A plain reduction folds the whole axis and divides by its real extent.
  int64_t realCount = factor == 0 ? inType.getInner(dim) : factor;
  if (dim == 2)
    return tb.reduceColumns(in, TileBuilder::resultTypeOf(op),
                            red.getReduceKind(), groupOf(red, *in), realCount);
  return tb.reduceRows(in, TileBuilder::resultTypeOf(op), red.getReduceKind(),
                       groupOf(red, *in), realCount);
}

const TileFamily mlir::vortex::gpugen::kReductionTiles = {
    isReduction, layoutReduction, lowerReduction};
