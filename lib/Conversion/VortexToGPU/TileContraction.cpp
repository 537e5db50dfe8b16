//===- TileContraction.cpp - gemm and gemv as tiles -----------------------===//
//
// O[a, b] = sum_k Y[a, k] X[b, k], replicated; a distributed K ends in a
// clustered subgroup sum.
//
//===----------------------------------------------------------------------===//

#include "TileOps.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

static bool isContraction(Operation *op) { return isa<GeMMOp, GeMVOp>(op); }

static FailureOr<TileLayout> layoutContraction(const LaneLayout &tb,
                                               Operation *op,
                                               ArrayRef<TileShape> operands) {
  return tb.contractLayout(operands[0], operands[1],
                           TileBuilder::resultTypeOf(op));
}

static TileRef lowerContraction(TileBuilder &tb, Operation *op) {
  return tb.contract(tb.operandTile(op, 0), tb.operandTile(op, 1),
                     TileBuilder::resultTypeOf(op));
}

const TileFamily mlir::vortex::gpugen::kContractionTiles = {
    isContraction, layoutContraction, lowerContraction};
