//===- ContractionToLinalg.cpp - gemm and gemv to linalg ------------------===//
//
// `out[s, a, c] = sum_k x[s, c, k] * y[s, a, k]` (vortex_torch's GeMM and
// GeMV share the layout): a linalg.generic with one reduction iterator over
// the shared axis, accumulating from 0. A GeMM that streams its weight
// (a parameter over the tile bound, or grouped: `groups = G`) contracts
// over the real extents only, each output row group with its group of x.
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

/// The first (d0, d1) lanes of each row of `t`: `t` itself when it has
/// them, else a slice (a padded value holds at least its real lanes).
Value realLanes(OpBuilder &b, Location loc, Value t, int64_t d0, int64_t d1) {
  auto type = cast<RankedTensorType>(t.getType());
  if (type.getDimSize(1) == d0 && type.getDimSize(2) == d1)
    return t;
  SmallVector<OpFoldResult> offs(3, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, t, 0),
                                     b.getIndexAttr(d0), b.getIndexAttr(d1)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, t, offs, sizes, strides);
}

/// `out[s, a, c] = sum_k x[s, xRow, k] * y[0, a, k]` over the real extents
/// only (a streamed weight is not masked, MaskPadding.cpp, as on the GPU's
/// streamed kernel), the weight read as its one row (s -> 0), never spread
/// over the rows. With G groups, output row a of group a / (Ny/G) reads
/// that group's rows of x: xRow = (a floordiv (Ny/G)) * (Nx/G) + c. Padded
/// lanes of the result are 0, as the GPU kernel stores them.
Value streamedContraction(GeMMOp op, ValueRange operands, LinalgBuilder &lb,
                          OpBuilder &b) {
  auto xt = cast<VTensorType>(op.getX().getType()),
       yt = cast<VTensorType>(op.getY().getType()),
       rt = cast<VTensorType>(op.getResult().getType());
  int64_t groups = op.getNumGroups(), k = yt.getD1(), ny = yt.getD0(),
          nx = xt.getD0(), nyG = ny / groups, nxG = nx / groups;
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  // Batched x into a batched result: no gather, its real lanes only.
  Value xs = realLanes(b, loc, LinalgBuilder::readSource(operands[0]), nx, k);
  Value ys = lb.padTo(LinalgBuilder::readSource(operands[1]), ny, k);
  AffineExpr s = b.getAffineDimExpr(0), a = b.getAffineDimExpr(1),
             c = b.getAffineDimExpr(2), kk = b.getAffineDimExpr(3);
  AffineExpr xRow = groups == 1 ? c : a.floorDiv(nyG) * nxG + c;
  Value out = lb.contract(
      xs, AffineMap::get(4, 0, {s, xRow, kk}, ctx), ys,
      AffineMap::get(4, 0, {b.getAffineConstantExpr(0), a, kk}, ctx),
      lb.leadOf(rt.getFormatKind()), ny, nxG);
  return lb.padTo(out, LinalgBuilder::computeExtent(rt, 1),
                  LinalgBuilder::computeExtent(rt, 2));
}

template <typename OpTy>
struct ContractionToLinalg : OpToLinalgPattern<OpTy> {
  using OpToLinalgPattern<OpTy>::OpToLinalgPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult lower(OpTy op, OpAdaptor adaptor, LinalgBuilder &lb,
                      ConversionPatternRewriter &rewriter) const override {
    ValueRange operands = adaptor.getOperands();
    if constexpr (std::is_same_v<OpTy, GeMMOp>) {
      if (op.readsStreamedWeight()) {
        replaceOpWithConverted(rewriter, *this->getTypeConverter(), op,
                               streamedContraction(op, operands, lb, rewriter));
        return success();
      }
    }
    auto rt = cast<VTensorType>(op.getResult().getType());
    Value xs = lb.inOf(op, operands, 0), ys = lb.inOf(op, operands, 1);
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr s = rewriter.getAffineDimExpr(0),
               a = rewriter.getAffineDimExpr(1),
               c = rewriter.getAffineDimExpr(2),
               k = rewriter.getAffineDimExpr(3);
    Value out = lb.contract(xs, AffineMap::get(4, 0, {s, c, k}, ctx), ys,
                            AffineMap::get(4, 0, {s, a, k}, ctx),
                            lb.leadOf(rt.getFormatKind()),
                            LinalgBuilder::computeExtent(rt, 1),
                            LinalgBuilder::computeExtent(rt, 2));
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op, out);
    return success();
  }
};

} // namespace

void mlir::vortex::populateVortexContractionToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ContractionToLinalg<GeMMOp>, ContractionToLinalg<GeMVOp>>(
      converter, patterns.getContext());
}
