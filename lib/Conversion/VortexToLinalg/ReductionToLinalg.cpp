//===- ReductionToLinalg.cpp - Vortex reductions to linalg ----------------===//
//
// Reductions, matched by ReductionOpInterface: over an inner axis (grouped
// for the interleaved ones) a linalg.generic with one reduction iterator;
// over dim 0, the scored blocks of each CSR row, a batched row per row.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

namespace {

/// Over [bos, n - eos) of each row; an empty range gives the neutral
/// element, and 0 for a mean (not 0/0).
static Value reduceRows(LinalgBuilder &lb, ReductionOpInterface red,
                        Value input) {
  ReduceKind kind = red.getReduceKind();
  auto rt = cast<VTensorType>(red->getResult(0).getType());
  return lb.generate(
      lb.domain->numRows, LinalgBuilder::computeExtent(rt, 1),
      LinalgBuilder::computeExtent(rt, 2),
      [&](Emitter &x, Value r, Value i, Value j) {
        LinalgBuilder::Segment seg = lb.segmentOfRow(x, r);
        Value acc = lb.foldSegment(x, input, seg.lo, seg.hi, i, j,
                                   x.f32(neutralOf(kind)),
                                   [&](Emitter &y, Value a, Value v) {
                                     return combineReduction(y, kind, a, v);
                                   });
        Value count = x.maxI(x.sub(seg.hi, seg.lo), x.idx(0));
        Value countF = arith::SIToFPOp::create(x.b, x.loc, x.b.getF32Type(),
                                               x.toI32(count));
        Value done = finishReduction(x, kind, acc, countF);
        if (kind != ReduceKind::Mean)
          return done;
        return x.select(x.cmpI(arith::CmpIPredicate::sgt, count, x.idx(0)),
                        done, x.f32(0.0));
      });
}

struct ReductionToLinalg : OpInterfaceConversionPattern<ReductionOpInterface> {
  using Base::Base;
  LogicalResult
  matchAndRewrite(ReductionOpInterface red, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *op = red.getOperation();
    int64_t dim = red.getReducedDim();
    FailureOr<LinalgBuilder> lb =
        LinalgBuilder::forOp(op, operands, rewriter, /*needsFlow=*/dim == 0);
    if (failed(lb))
      return failure();
    Value result;
    if (dim == 0) {
      result = reduceRows(
          *lb, red, lb->operandIn(op->getOperand(0), operands[0],
                                  Format::Ragged));
    } else {
      auto in = cast<VTensorType>(op->getOperand(0).getType());
      int64_t factor = red.getGroupFactor();
      result = lb->reduceInner(lb->inOf(op, operands, 0),
                               cast<VTensorType>(op->getResult(0).getType()),
                               red.getReduceKind(), dim, factor,
                               factor == 0 ? in.getInner(dim) : factor);
    }
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op, result);
    return success();
  }
};

} // namespace

void mlir::vortex::populateVortexReductionToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ReductionToLinalg>(converter, patterns.getContext());
}
