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

TileRef mlir::vortex::gpugen::lowerContractionTile(TileBuilder &tb,
                                                   Operation *op) {
  if (!isa<GeMMOp, GeMVOp>(op))
    return nullptr;
  return tb.contract(tb.operandTile(op, 0), tb.operandTile(op, 1),
                     TileBuilder::resultTypeOf(op));
}
