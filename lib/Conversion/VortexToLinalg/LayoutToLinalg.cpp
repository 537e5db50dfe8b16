//===- LayoutToLinalg.cpp - Layout vortex ops to linalg -------------------===//
//
// transpose, reshape, kron, mask_slice and mask_lanes: generics whose bodies
// compute source indices over the real extents; padded lanes hold 0 (or the
// mask's value).
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

namespace {

/// The common part: `build` computes element (s, i, j) of the result over
/// the result's domain at its computed extents.
template <typename OpTy>
struct LayoutToLinalg : OpToLinalgPattern<OpTy> {
  using OpToLinalgPattern<OpTy>::OpToLinalgPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  using ElementFn = function_ref<Value(Emitter &, Value, Value, Value)>;

  /// The lowered result of `op`.
  virtual Value build(OpTy op, LinalgBuilder &lb, ValueRange operands,
                      VTensorType rt) const = 0;

  LogicalResult lower(OpTy op, OpAdaptor adaptor, LinalgBuilder &lb,
                      ConversionPatternRewriter &rewriter) const override {
    auto rt = cast<VTensorType>(op->getResult(0).getType());
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op,
                           build(op, lb, adaptor.getOperands(), rt));
    return success();
  }

  static Value overResult(LinalgBuilder &lb, VTensorType rt, Value lead,
                          ElementFn body) {
    return lb.generate(lead, LinalgBuilder::computeExtent(rt, 1),
                       LinalgBuilder::computeExtent(rt, 2), body);
  }
  /// True on the real lanes (i, j) of `rt`.
  static Value realLane(Emitter &x, VTensorType rt, Value i, Value j) {
    return x.andI(x.cmpI(arith::CmpIPredicate::slt, i, x.idx(rt.getD0())),
                  x.cmpI(arith::CmpIPredicate::slt, j, x.idx(rt.getD1())));
  }
};

struct TransposeToLinalg : LayoutToLinalg<TransposeOp> {
  using LayoutToLinalg::LayoutToLinalg;
  Value build(TransposeOp op, LinalgBuilder &lb, ValueRange operands,
              VTensorType rt) const override {
    Value input = lb.inOf(op, operands, 0);
    return overResult(lb, rt, lb.leadOf(rt.getFormatKind()),
                      [&](Emitter &x, Value s, Value i, Value j) {
                        return x.extract(input, {s, j, i});
                      });
  }
};

struct ReshapeToLinalg : LayoutToLinalg<ReshapeOp> {
  using LayoutToLinalg::LayoutToLinalg;
  Value build(ReshapeOp op, LinalgBuilder &lb, ValueRange operands,
              VTensorType rt) const override {
    int64_t y1 = cast<VTensorType>(op.getInput().getType()).getD1();
    int64_t x2 = rt.getD0(), y2 = rt.getD1();
    Value input = lb.inOf(op, operands, 0);
    return overResult(
        lb, rt, lb.leadOf(rt.getFormatKind()),
        [&](Emitter &x, Value s, Value i, Value j) {
          // Row-major over the real extents.
          Value ci = x.minI(i, x.idx(x2 - 1));
          Value cj = x.minI(j, x.idx(y2 - 1));
          Value flat = x.add(x.mul(ci, x.idx(y2)), cj);
          Value r = arith::DivUIOp::create(x.b, x.loc, flat, x.idx(y1));
          Value c = arith::RemUIOp::create(x.b, x.loc, flat, x.idx(y1));
          return x.select(realLane(x, rt, i, j), x.extract(input, {s, r, c}),
                          x.f32(0.0));
        });
  }
};

struct KronToLinalg : LayoutToLinalg<KronOp> {
  using LayoutToLinalg::LayoutToLinalg;
  Value build(KronOp op, LinalgBuilder &lb, ValueRange operands,
              VTensorType rt) const override {
    auto xt = cast<VTensorType>(op.getLhs().getType());
    auto yt = cast<VTensorType>(op.getRhs().getType());
    bool isKron[3] = {false, false, false};
    for (int64_t d : op.getDims())
      isKron[d] = true;
    Value xs = lb.inOf(op, operands, 0), ys = lb.inOf(op, operands, 1);
    return overResult(
        lb, rt, lb.leadOf(rt.getFormatKind()),
        [&](Emitter &x, Value s, Value i, Value j) {
          Value pos[3] = {s, i, j};
          SmallVector<Value> xi = {s}, yi = {s};
          for (unsigned a = 1; a <= 2; ++a) {
            Value p = x.minI(pos[a], x.idx(rt.getInner(a) - 1));
            if (isKron[a]) {
              Value ya = x.idx(yt.getInner(a));
              xi.push_back(arith::DivUIOp::create(x.b, x.loc, p, ya));
              yi.push_back(arith::RemUIOp::create(x.b, x.loc, p, ya));
              continue;
            }
            xi.push_back(xt.getInner(a) == 1 ? x.idx(0) : p);
            yi.push_back(yt.getInner(a) == 1 ? x.idx(0) : p);
          }
          Value v = x.mulF(x.extract(xs, xi), x.extract(ys, yi));
          return x.select(realLane(x, rt, i, j), v, x.f32(0.0));
        });
  }
};

struct MaskSliceToLinalg : LayoutToLinalg<MaskSliceOp> {
  using LayoutToLinalg::LayoutToLinalg;
  Value build(MaskSliceOp op, LinalgBuilder &lb, ValueRange,
              VTensorType rt) const override {
    int64_t dim = op.getDim(), start = op.getStart(), end = op.getEnd();
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    return overResult(
        lb, rt, lb.leadOf(rt.getFormatKind()),
        [&](Emitter &x, Value, Value i, Value j) {
          Value p = dim == 1 ? i : j;
          Value inside =
              x.andI(x.cmpI(arith::CmpIPredicate::sge, p, x.idx(start)),
                     x.cmpI(arith::CmpIPredicate::slt, p, x.idx(end)));
          return x.select(inside, x.f32(alpha), x.f32(beta));
        });
  }
};

struct MaskLanesToLinalg : LayoutToLinalg<MaskLanesOp> {
  using LayoutToLinalg::LayoutToLinalg;
  Value build(MaskLanesOp op, LinalgBuilder &lb, ValueRange operands,
              VTensorType rt) const override {
    Value input = lb.inOf(op, operands, 0);
    double value = op.getValue().convertToDouble();
    // The mask keeps its input's domain: a paged operand is masked over the
    // whole pool (it is gathered by block id afterwards).
    return overResult(lb, rt, lb.e.dim(input, 0),
                      [&](Emitter &x, Value s, Value i, Value j) {
                        return x.select(realLane(x, rt, i, j),
                                        x.extract(input, {s, i, j}),
                                        x.f32(value));
                      });
  }
};

} // namespace

void mlir::vortex::populateVortexLayoutToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<TransposeToLinalg, ReshapeToLinalg, KronToLinalg,
               MaskSliceToLinalg, MaskLanesToLinalg>(converter,
                                                     patterns.getContext());
}
