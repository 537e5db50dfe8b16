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
    Value xs = lb.inOf(op, operands, 0), ys = lb.inOf(op, operands, 1);
    Location loc = op.getLoc();
    // A streamed weight is not masked (MaskPadding.cpp): contract over the
    // real extent only, as the GPU's streamed kernel does.
    auto yt = cast<VTensorType>(op.getY().getType());
    if (yt.isStreamedParameter()) {
      auto realK = [&](Value t) -> Value {
        auto type = cast<RankedTensorType>(t.getType());
        if (type.getDimSize(2) == yt.getD1())
          return t;
        SmallVector<OpFoldResult> offs(3, rewriter.getIndexAttr(0));
        SmallVector<OpFoldResult> sizes = {
            tensor::getMixedSize(rewriter, loc, t, 0),
            rewriter.getIndexAttr(type.getDimSize(1)),
            rewriter.getIndexAttr(yt.getD1())};
        SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
        return tensor::ExtractSliceOp::create(rewriter, loc, t, offs, sizes,
                                              strides);
      };
      xs = realK(xs);
      ys = realK(ys);
    }
    Value init = lb.emptyTensor(lb.leadOf(rt.getFormatKind()),
                                 LinalgBuilder::computeExtent(rt, 1),
                                 LinalgBuilder::computeExtent(rt, 2));
    Value filled = linalg::FillOp::create(rewriter, loc,
                                          ValueRange{lb.e.f32(0.0)},
                                          ValueRange{init})
                       .getResult(0);
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr s = rewriter.getAffineDimExpr(0),
               a = rewriter.getAffineDimExpr(1),
               c = rewriter.getAffineDimExpr(2),
               k = rewriter.getAffineDimExpr(3);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{filled.getType()}, ValueRange{xs, ys},
        ValueRange{filled},
        ArrayRef<AffineMap>{AffineMap::get(4, 0, {s, c, k}, ctx),
                            AffineMap::get(4, 0, {s, a, k}, ctx),
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
