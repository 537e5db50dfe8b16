//===- ElementwiseToLinalg.cpp - Elementwise vortex ops to linalg ---------===//
//
// Unary and binary elementwise ops, matched by the dialect's interfaces: one
// parallel linalg.generic over the result's domain, operands brought into it
// (and broadcast) first.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

namespace {

struct UnaryToLinalg
    : OpInterfaceConversionPattern<UnaryElementwiseOpInterface> {
  using Base::Base;
  LogicalResult
  matchAndRewrite(UnaryElementwiseOpInterface un, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *op = un.getOperation();
    FailureOr<LinalgBuilder> lb = LinalgBuilder::forOp(op, operands, rewriter);
    if (failed(lb))
      return failure();
    double alpha = un.getAlphaValue(), beta = un.getBetaValue();
    UnaryKind kind = un.getUnaryKind();
    auto rt = cast<VTensorType>(op->getResult(0).getType());
    Value result = lb->elementwise(
        rt, {lb->inOf(op, operands, 0)}, [&](Emitter &x, ValueRange v) {
          return emitUnary(x, kind, v[0], alpha, beta);
        });
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op, result);
    return success();
  }
};

struct BinaryToLinalg
    : OpInterfaceConversionPattern<BinaryElementwiseOpInterface> {
  using Base::Base;
  LogicalResult
  matchAndRewrite(BinaryElementwiseOpInterface bin, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *op = bin.getOperation();
    FailureOr<LinalgBuilder> lb = LinalgBuilder::forOp(op, operands, rewriter);
    if (failed(lb))
      return failure();
    BinaryKind kind = bin.getBinaryKind();
    double alpha = 1.0, beta = 1.0;
    if (auto add = dyn_cast<AddOp>(op)) {
      alpha = add.getAlpha().convertToDouble();
      beta = add.getBeta().convertToDouble();
    }
    auto rt = cast<VTensorType>(op->getResult(0).getType());
    Value result = lb->elementwise(
        rt, {lb->inOf(op, operands, 0), lb->inOf(op, operands, 1)},
        [&](Emitter &x, ValueRange v) {
          return emitBinary(x, kind, v[0], v[1], alpha, beta);
        });
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op, result);
    return success();
  }
};

} // namespace

void mlir::vortex::populateVortexElementwiseToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<UnaryToLinalg, BinaryToLinalg>(converter,
                                              patterns.getContext());
}
