//===- TileLayout.cpp - Masks and layout ops as tiles ---------------------===//
//
// mask_lanes, mask_slice, kron, transpose and reshape: index maps between
// tiles. Transposing or reshaping a distributed tile, and kron over columns
// of one, are not done in registers (`unsupported`: narrow mode).
//
//===----------------------------------------------------------------------===//

#include "TileOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

static bool isLayoutOp(Operation *op) {
  return isa<MaskLanesOp, MaskSliceOp, KronOp, TransposeOp, ReshapeOp>(op);
}

/// kron over rows or columns of replicated tiles; over rows, a distributed
/// operand needs the other distributed too, or one column wide.
static FailureOr<TileShape> kronShape(const LaneLayout &tb, KronOp kron,
                                      const TileShape &x, const TileShape &y) {
  bool cols = llvm::is_contained(kron.getDims(), 2);
  if (cols && (x.distributed || y.distributed))
    return failure();
  TileShape out = tb.shapeOf(TileBuilder::resultTypeOf(kron),
                             x.distributed || y.distributed);
  if (out.distributed && !(x.distributed && y.distributed) &&
      ((!x.distributed && x.d1 != 1) || (!y.distributed && y.d1 != 1)))
    return failure();
  return out;
}

static FailureOr<TileLayout> layoutLayoutOp(const LaneLayout &tb,
                                            Operation *op,
                                            ArrayRef<TileShape> operands) {
  VTensorType rt = TileBuilder::resultTypeOf(op);
  FailureOr<TileShape> shape =
      TypeSwitch<Operation *, FailureOr<TileShape>>(op)
          .Case<MaskLanesOp, MaskSliceOp>([&](Operation *) {
            return tb.elementwiseShape(rt, operands[0]);
          })
          .Case<KronOp>([&](KronOp kron) {
            return kronShape(tb, kron, operands[0], operands[1]);
          })
          .Default([&](Operation *) -> FailureOr<TileShape> {
            // transpose, reshape: element maps over whole rows.
            if (operands[0].distributed)
              return failure();
            return tb.shapeOf(rt, false);
          });
  if (failed(shape))
    return failure();
  return TileLayout{*shape};
}

static TileRef lowerLayoutOp(TileBuilder &tb, Operation *op) {
  return TypeSwitch<Operation *, TileRef>(op)
      .Case<MaskLanesOp>([&](MaskLanesOp mask) {
        TileRef in = tb.operandTile(op, 0);
        double value = mask.getValue().convertToDouble();
        VTensorType rt = TileBuilder::resultTypeOf(op);
        int64_t realD0 = rt.getD0(), realD1 = rt.getD1();
        return tb.elementwise(rt, {in},
                           [=, &tb](Gen &g, ArrayRef<Value> v, int64_t r,
                               int64_t e) -> Value {
                             if (r >= realD0)
                               return g.f32(value);
                             Value col = tb.column(*in, e);
                             return g.select(g.lt(col, g.idx(realD1)), v[0],
                                             g.f32(value));
                           });
      })
      .Case<MaskSliceOp>([&](MaskSliceOp ms) {
        TileRef in = tb.operandTile(op, 0);
        int64_t dim = ms.getDim(), start = ms.getStart(), end = ms.getEnd();
        double alpha = ms.getAlpha().convertToDouble();
        double beta = ms.getBeta().convertToDouble();
        return tb.elementwise(TileBuilder::resultTypeOf(op), {in},
                           [=, &tb](Gen &g, ArrayRef<Value>, int64_t r,
                               int64_t e) -> Value {
                             if (dim == 1)
                               return g.f32(r >= start && r < end ? alpha
                                                                  : beta);
                             Value col = tb.column(*in, e);
                             Value inside = g.andI(
                                 g.cmpI(arith::CmpIPredicate::sge, col,
                                        g.idx(start)),
                                 g.lt(col, g.idx(end)));
                             return g.select(inside, g.f32(alpha),
                                             g.f32(beta));
                           });
      })
      .Case<KronOp>([&](KronOp kron) -> TileRef {
        TileRef x = tb.operandTile(op, 0), y = tb.operandTile(op, 1);
        bool rows = false, cols = false;
        for (int64_t d : kron.getDims())
          (d == 1 ? rows : cols) = true;
        VTensorType rt = TileBuilder::resultTypeOf(op);
        FailureOr<TileShape> shape = kronShape(tb, kron, *x, *y);
        if (failed(shape)) {
          tb.unsupported = true;
          return tb.makeTile(rt, false);
        }
        int64_t y0 = cast<VTensorType>(kron.getRhs().getType()).getD0();
        int64_t y1 = cast<VTensorType>(kron.getRhs().getType()).getD1();
        int64_t realD0 = rt.getD0(), realD1 = rt.getD1();
        TileRef out = tb.makeTile(*shape);
        bool outDistributed = out->distributed; // not `out`: no cycle
        out->at = [=, &tb](int64_t r, int64_t e) -> Value {
          Gen g = tb.gen();
          if (r >= realD0 || (!outDistributed && e >= realD1))
            return g.f32(0.0);
          int64_t xr = rows ? r / y0 : (x->d0 == 1 ? 0 : r);
          int64_t yr = rows ? r % y0 : (y->d0 == 1 ? 0 : r);
          int64_t xe = cols ? e / y1 : (x->d1 == 1 ? 0 : e);
          int64_t ye = cols ? e % y1 : (y->d1 == 1 ? 0 : e);
          return g.mulF(x->at(xr, xe), y->at(yr, ye));
        };
        return out;
      })
      .Case<TransposeOp>([&](TransposeOp) -> TileRef {
        TileRef in = tb.operandTile(op, 0);
        if (in->distributed) {
          tb.unsupported = true;
          return tb.makeTile(TileBuilder::resultTypeOf(op), false);
        }
        TileRef out = tb.makeTile(TileBuilder::resultTypeOf(op), false);
        out->at = [in](int64_t r, int64_t e) { return in->at(e, r); };
        return out;
      })
      .Case<ReshapeOp>([&](ReshapeOp rs) -> TileRef {
        TileRef in = tb.operandTile(op, 0);
        VTensorType rt = TileBuilder::resultTypeOf(op);
        if (in->distributed) {
          tb.unsupported = true;
          return tb.makeTile(rt, false);
        }
        TileRef out = tb.makeTile(rt, false);
        int64_t y1 = cast<VTensorType>(rs.getInput().getType()).getD1();
        int64_t x2 = rt.getD0(), y2 = rt.getD1();
        out->at = [=, &tb](int64_t r, int64_t e) -> Value {
          if (r >= x2 || e >= y2)
            return tb.gen().f32(0.0);
          int64_t flat = r * y2 + e;
          return in->at(flat / y1, flat % y1);
        };
        return out;
      })
      .Default([&](Operation *) -> TileRef { return nullptr; });
}

const TileFamily mlir::vortex::gpugen::kLayoutTiles = {
    isLayoutOp, layoutLayoutOp, lowerLayoutOp};
