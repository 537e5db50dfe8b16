//===- TileElementwise.cpp - Elementwise ops as tiles ---------------------===//
//
// Unary and binary elementwise ops, by the dialect's interfaces; the scalar
// semantics are shared with the linalg lowering (ScalarBuilder).
//
//===----------------------------------------------------------------------===//

#include "TileOps.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

static bool isElementwise(Operation *op) {
  return isa<UnaryElementwiseOpInterface, BinaryElementwiseOpInterface>(op);
}

static FailureOr<TileLayout> layoutElementwise(const LaneLayout &tb,
                                               Operation *op,
                                               ArrayRef<TileShape> operands) {
  FailureOr<TileShape> shape =
      tb.elementwiseShape(TileBuilder::resultTypeOf(op), operands);
  if (failed(shape))
    return failure();
  return TileLayout{*shape};
}

static TileRef lowerElementwise(TileBuilder &tb, Operation *op) {
  if (auto un = dyn_cast<UnaryElementwiseOpInterface>(op)) {
    double alpha = un.getAlphaValue(), beta = un.getBetaValue();
    UnaryKind kind = un.getUnaryKind();
    return tb.elementwise(TileBuilder::resultTypeOf(op),
                          {tb.operandTile(op, 0)},
                          [=](Gen &g, ArrayRef<Value> v, int64_t, int64_t) {
                            return emitUnary(g, kind, v[0], alpha, beta);
                          });
  }
  if (auto bin = dyn_cast<BinaryElementwiseOpInterface>(op)) {
    BinaryKind kind = bin.getBinaryKind();
    double alpha = 1.0, beta = 1.0;
    if (auto add = dyn_cast<AddOp>(op)) {
      alpha = add.getAlpha().convertToDouble();
      beta = add.getBeta().convertToDouble();
    }
    return tb.elementwise(
        TileBuilder::resultTypeOf(op),
        {tb.operandTile(op, 0), tb.operandTile(op, 1)},
        [=](Gen &g, ArrayRef<Value> v, int64_t, int64_t) -> Value {
          return emitBinary(g, kind, v[0], v[1], alpha, beta);
        });
  }
  return nullptr;
}

const TileFamily mlir::vortex::gpugen::kElementwiseTiles = {
    isElementwise, layoutElementwise, lowerElementwise};
