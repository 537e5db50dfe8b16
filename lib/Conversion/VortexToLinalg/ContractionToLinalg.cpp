//===- ContractionToLinalg.cpp - gemm and gemv to linalg ------------------===//
//
// `out[s, a, c] = sum_k x[s, c, k] * y[s, a, k]` (vortex_torch's GeMM and
// GeMV share the layout): a linalg.generic with one reduction iterator over
// the shared axis, accumulating from 0.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

namespace {

template <typename OpTy>
struct ContractionToLinalg : OpToLinalgPattern<OpTy> {
  using OpToLinalgPattern<OpTy>::OpToLinalgPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult lower(OpTy op, OpAdaptor adaptor, LinalgBuilder &lb,
                      ConversionPatternRewriter &rewriter) const override {
    ValueRange operands = adaptor.getOperands();
    auto rt = cast<VTensorType>(op.getResult().getType());
    Value xs = lb.inOf(op, operands, 0), ys;
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr s = rewriter.getAffineDimExpr(0),
               a = rewriter.getAffineDimExpr(1),
               c = rewriter.getAffineDimExpr(2),
               k = rewriter.getAffineDimExpr(3);
    AffineMap yMap = AffineMap::get(4, 0, {s, a, k}, ctx);
    auto yt = cast<VTensorType>(op.getY().getType());
    if (yt.isStreamedParameter()) {
      // A streamed weight is not masked (MaskPadding.cpp): contract over
      // the real k only, as the GPU's streamed kernel does, and read the
      // weight as its one row (map s -> 0), never spread over the rows.
      int64_t kReal = yt.getD1(), d0 = LinalgBuilder::computeExtent(yt, 1);
      Value src = LinalgBuilder::readSource(operands[1]);
      ys = lb.generate(lb.e.idx(1), d0, kReal,
                       [&](Emitter &x, Value, Value i, Value j) {
                         return LinalgBuilder::maskedExtract(
                             x, src, x.idx(0), i, j, d0, kReal);
                       });
      yMap = AffineMap::get(4, 0, {rewriter.getAffineConstantExpr(0), a, k},
                            ctx);
      auto xType = cast<RankedTensorType>(xs.getType());
      SmallVector<OpFoldResult> offs(3, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = {
          tensor::getMixedSize(rewriter, loc, xs, 0),
          rewriter.getIndexAttr(xType.getDimSize(1)),
          rewriter.getIndexAttr(kReal)};
      SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
      if (xType.getDimSize(2) != kReal)
        xs = tensor::ExtractSliceOp::create(rewriter, loc, xs, offs, sizes,
                                            strides);
    } else {
      ys = lb.inOf(op, operands, 1);
    }
    Value init = lb.emptyTensor(lb.leadOf(rt.getFormatKind()),
                                 LinalgBuilder::computeExtent(rt, 1),
                                 LinalgBuilder::computeExtent(rt, 2));
    Value filled = linalg::FillOp::create(rewriter, loc,
                                          ValueRange{lb.e.f32(0.0)},
                                          ValueRange{init})
                       .getResult(0);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{filled.getType()}, ValueRange{xs, ys},
        ValueRange{filled},
        ArrayRef<AffineMap>{AffineMap::get(4, 0, {s, c, k}, ctx), yMap,
                            AffineMap::get(4, 0, {s, a, c}, ctx)},
        {utils::IteratorType::parallel, utils::IteratorType::parallel,
         utils::IteratorType::parallel, utils::IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Emitter x{nb, l};
          linalg::YieldOp::create(nb, l,
                                  x.addF(args[2], x.mulF(args[1], args[0])));
        });
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op, generic.getResult(0));
    return success();
  }
};

} // namespace

void mlir::vortex::populateVortexContractionToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ContractionToLinalg<GeMMOp>, ContractionToLinalg<GeMVOp>>(
      converter, patterns.getContext());
}
