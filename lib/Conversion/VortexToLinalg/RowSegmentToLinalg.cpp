//===- RowSegmentToLinalg.cpp - Row-segment scans to linalg ---------------===//
//
// softmax, normalize and conv1d see the scored range [bos, n - eos) of their
// position's CSR row: a generic over the ragged positions whose body folds
// over that range with scf loops. Positions outside it hold 0.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

namespace {

using Segment = LinalgBuilder::Segment;

/// The common part: a flow domain, the input in the ragged domain; `build`
/// gives the scan of one position.
template <typename OpTy>
struct RowSegmentToLinalg : OpToLinalgPattern<OpTy, /*NeedsFlow=*/true> {
  using OpToLinalgPattern<OpTy, true>::OpToLinalgPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  virtual Value build(OpTy op, LinalgBuilder &lb, Value input) const = 0;

  LogicalResult lower(OpTy op, OpAdaptor adaptor, LinalgBuilder &lb,
                      ConversionPatternRewriter &rewriter) const override {
    Value input = lb.operandIn(op->getOperand(0), adaptor.getOperands()[0],
                               Format::Ragged);
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op,
                           build(op, lb, input));
    return success();
  }
};

struct SoftmaxToLinalg : RowSegmentToLinalg<SoftmaxOp> {
  using RowSegmentToLinalg::RowSegmentToLinalg;
  Value build(SoftmaxOp op, LinalgBuilder &lb, Value input) const override {
    double scale = op.getScale().convertToDouble();
    return lb.segmentOp(
        cast<VTensorType>(op.getResult().getType()),
        [&](Emitter &x, Segment &seg, Value s, Value i, Value j) {
          Value m = lb.foldSegment(x, input, seg.lo, seg.hi, i, j,
                                   x.f32(kMaskNegative),
                                   [&](Emitter &y, Value acc, Value v) {
                                     return y.maxF(acc,
                                                   y.mulF(v, y.f32(scale)));
                                   });
          Value sum = lb.foldSegment(
              x, input, seg.lo, seg.hi, i, j, x.f32(0.0),
              [&](Emitter &y, Value acc, Value v) {
                Value ex = math::ExpOp::create(
                    y.b, y.loc, y.subF(y.mulF(v, y.f32(scale)), m));
                return y.addF(acc, ex);
              });
          Value self = x.mulF(x.extract(input, {s, i, j}), x.f32(scale));
          Value ex = math::ExpOp::create(x.b, x.loc, x.subF(self, m));
          return x.divF(ex, sum);
        });
  }
};

struct NormalizeToLinalg : RowSegmentToLinalg<NormalizeOp> {
  using RowSegmentToLinalg::RowSegmentToLinalg;
  Value build(NormalizeOp op, LinalgBuilder &lb, Value input) const override {
    return lb.segmentOp(
        cast<VTensorType>(op.getResult().getType()),
        [&](Emitter &x, Segment &seg, Value s, Value i, Value j) {
          Value ss = lb.foldSegment(x, input, seg.lo, seg.hi, i, j,
                                    x.f32(0.0),
                                    [&](Emitter &y, Value acc, Value v) {
                                      return y.addF(acc, y.mulF(v, v));
                                    });
          Value norm =
              x.maxF(math::SqrtOp::create(x.b, x.loc, ss), x.f32(1e-12));
          return x.divF(x.extract(input, {s, i, j}), norm);
        });
  }
};

struct Conv1dToLinalg : RowSegmentToLinalg<Conv1dOp> {
  using RowSegmentToLinalg::RowSegmentToLinalg;
  Value build(Conv1dOp op, LinalgBuilder &lb, Value input) const override {
    auto weightAttr = cast<DenseElementsAttr>(op.getWeight());
    auto wType = cast<ShapedType>(weightAttr.getType());
    int64_t taps = wType.getDimSize(0);
    auto rt = cast<VTensorType>(op.getResult().getType());
    int64_t d0 = LinalgBuilder::computeExtent(rt, 1);
    int64_t d1 = LinalgBuilder::computeExtent(rt, 2);
    // The taps, zero on padded lanes.
    SmallVector<float> padded(taps * d0 * d1, 0.0f);
    auto w = llvm::to_vector(weightAttr.getValues<float>());
    for (int64_t k = 0; k < taps; ++k)
      for (int64_t i = 0; i < wType.getDimSize(1); ++i)
        for (int64_t j = 0; j < wType.getDimSize(2); ++j)
          padded[(k * d0 + i) * d1 + j] =
              w[(k * wType.getDimSize(1) + i) * wType.getDimSize(2) + j];
    auto paddedType = RankedTensorType::get({taps, d0, d1}, lb.b.getF32Type());
    Value weight = arith::ConstantOp::create(
        lb.b, lb.loc,
        DenseElementsAttr::get(paddedType, ArrayRef<float>(padded)));
    return lb.segmentOp(
        rt, [&](Emitter &x, Segment &seg, Value s, Value i, Value j) {
          // Taps k with s - k >= lo (zero before the segment start).
          Value count =
              x.minI(x.idx(taps), x.add(x.sub(s, seg.lo), x.idx(1)));
          return x
              .forLoop(x.idx(0), count, {x.f32(0.0)},
                       [&](Emitter &y, Value k, ValueRange acc) {
                         Value w = y.extract(weight, {k, i, j});
                         Value v = y.extract(input, {y.sub(s, k), i, j});
                         return SmallVector<Value>{
                             y.addF(acc[0], y.mulF(w, v))};
                       })
              .getResult(0);
        });
  }
};

} // namespace

void mlir::vortex::populateVortexRowSegmentToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<SoftmaxToLinalg, NormalizeToLinalg, Conv1dToLinalg>(
      converter, patterns.getContext());
}
