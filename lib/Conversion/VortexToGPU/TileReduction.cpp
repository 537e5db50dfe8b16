//===- TileReduction.cpp - Reductions over a tile's inner axes ------------===//
//
// Reductions by ReductionOpInterface: over D1 (columns, ending in a
// clustered subgroup reduction when the tile is distributed) or over D0
// (rows, which every lane holds), whole or in groups of `factor`.
//
//===----------------------------------------------------------------------===//

#include "TileOps.h"

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

static FailureOr<TileLayout> layoutReduction(const TileBuilder &tb,
                                             Operation *op,
                                             ArrayRef<TileShape> operands) {
  auto red = cast<ReductionOpInterface>(op);
  VTensorType rt = TileBuilder::resultTypeOf(op);
  if (red.getReducedDim() == 2)
    return tb.reduceColumnsLayout(operands[0], rt,
                                  groupOf(red, operands[0]));
  return TileLayout{tb.reduceRowsShape(operands[0], rt)};
}

static TileRef lowerReduction(TileBuilder &tb, Operation *op) {
  auto red = cast<ReductionOpInterface>(op);
  TileRef in = tb.operandTile(op, 0);
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
