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

TileRef mlir::vortex::gpugen::lowerReductionTile(TileBuilder &tb,
                                                 Operation *op) {
  auto red = dyn_cast<ReductionOpInterface>(op);
  if (!red)
    return nullptr;
  TileRef in = tb.operandTile(op, 0);
  auto inType = cast<VTensorType>(op->getOperand(0).getType());
  int64_t dim = red.getReducedDim(), factor = red.getGroupFactor();
  // A plain reduction folds the whole axis and divides by its real extent.
  int64_t realCount = factor == 0 ? inType.getInner(dim) : factor;
  if (dim == 2)
    return tb.reduceColumns(in, TileBuilder::resultTypeOf(op),
                            red.getReduceKind(), factor == 0 ? in->d1 : factor,
                            realCount);
  return tb.reduceRows(in, TileBuilder::resultTypeOf(op), red.getReduceKind(),
                       factor == 0 ? in->d0 : factor, realCount);
}
