//===- StateToLinalg.cpp - Field reads and writes to linalg ---------------===//
//
// load gathers a field's rows by block id from its value at the start of the
// step; save, write and fill scatter rows into the field's latest value,
// which the step writes back once at its end (LinalgBuilder.h, step state).
// learned_descriptor is a writer whose rows are two contractions.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

namespace {

struct LoadToLinalg : OpToLinalgPattern<LoadOp, /*NeedsFlow=*/true> {
  using OpToLinalgPattern::OpToLinalgPattern;
  LogicalResult lower(LoadOp op, OpAdaptor adaptor, LinalgBuilder &lb,
                      ConversionPatternRewriter &rewriter) const override {
    // Loads see the previous step: the field as bound, not its state.
    auto rt = cast<VTensorType>(op.getResult().getType());
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op, lb.gather(LinalgBuilder::readSource(adaptor.getField()),
                               lb.domain->blockIds,
                                      LinalgBuilder::computeExtent(rt, 1),
                                      LinalgBuilder::computeExtent(rt, 2)));
    return success();
  }
};

/// The common part of the writers: `rows` gives the ragged rows to scatter
/// and `enabled` the positions that write.
template <typename OpTy>
struct WriterToLinalg : OpToLinalgPattern<OpTy, /*NeedsFlow=*/true> {
  using OpToLinalgPattern<OpTy, true>::OpToLinalgPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  virtual Value rows(OpTy op, OpAdaptor adaptor, LinalgBuilder &lb) const = 0;
  virtual Value enabled(LinalgBuilder &lb, Emitter &x, Value s) const {
    return arith::ConstantOp::create(x.b, x.loc, x.b.getBoolAttr(true));
  }

  LogicalResult lower(OpTy op, OpAdaptor adaptor, LinalgBuilder &lb,
                      ConversionPatternRewriter &rewriter) const override {
    BlockArgument field = boundArgument(adaptor.getField());
    if (!field)
      return rewriter.notifyMatchFailure(op, "the field is no step argument");
    // With slotted fields, a block whose slot is < 0 writes nothing (the
    // whole cache program returns, as in vortex_torch); slotted fields are
    // addressed by the slot.
    Value slotIds = lb.domain->slotIds;
    bool bySlot = cast<VTensorType>(op.getField().getType()).isSlotted();
    Value updated = lb.scatterRows(
        currentState(field), rows(op, adaptor, lb),
        bySlot ? slotIds : lb.domain->blockIds, [&](Emitter &x, Value s) {
          Value on = enabled(lb, x, s);
          if (!slotIds)
            return on;
          return x.andI(on, x.cmpI(arith::CmpIPredicate::sge,
                                   x.extract(slotIds, s), x.i32(0)));
        });
    setState(rewriter, field, updated);
    rewriter.eraseOp(op);
    return success();
  }
};

struct SaveToLinalg : WriterToLinalg<SaveOp> {
  using WriterToLinalg::WriterToLinalg;
  Value rows(SaveOp op, OpAdaptor adaptor, LinalgBuilder &lb) const override {
    return lb.operandIn(op.getValue(), adaptor.getValue(), Format::Ragged);
  }
  // vortex_torch saves only the scored blocks [0, n - eos) of rows that need
  // selection (other rows get no workload).
  Value enabled(LinalgBuilder &lb, Emitter &x, Value s) const override {
    LinalgBuilder::Segment seg =
        lb.segmentOfRow(x, x.extract(lb.domain->rowOf, s));
    return x.andI(seg.active, x.cmpI(arith::CmpIPredicate::slt, s, seg.hi));
  }
};

struct WriteToLinalg : WriterToLinalg<WriteOp> {
  using WriterToLinalg::WriterToLinalg;
  Value rows(WriteOp op, OpAdaptor adaptor, LinalgBuilder &lb) const override {
    return lb.operandIn(op.getValue(), adaptor.getValue(), Format::Ragged);
  }
};

struct FillToLinalg : WriterToLinalg<FillOp> {
  using WriterToLinalg::WriterToLinalg;
  Value rows(FillOp op, OpAdaptor, LinalgBuilder &lb) const override {
    auto ft = cast<VTensorType>(op.getField().getType());
    double value = op.getValue().convertToDouble();
    return lb.generate(lb.domain->raggedExtent, ft.getD0(), ft.getD1(),
                       [&](Emitter &x, Value, Value, Value) {
                         return x.f32(value);
                       });
  }
};

/// `F[block, h m + j, i] = sum_e (sum_t mix[h m + j, t] x[t, e]) *
/// proj[h r + i, e]`: the block's tokens mixed into landmarks, then each
/// landmark compressed by its head's rows of proj. Over the real extents
/// only (the op reads its operands unmasked, MaskPadding.cpp); padded
/// lanes of the rows are 0. proj may be streamed: read where it is bound,
/// never copied padded.
struct LearnedDescriptorToLinalg : WriterToLinalg<LearnedDescriptorOp> {
  using WriterToLinalg::WriterToLinalg;
  Value rows(LearnedDescriptorOp op, OpAdaptor adaptor,
             LinalgBuilder &lb) const override {
    auto xt = cast<VTensorType>(op.getBlock().getType());
    int64_t bs = xt.getD0(), d = xt.getD1(), m = op.getLandmarks(),
            r = op.getRank(), hm = op.getHeads() * m, hr = op.getHeads() * r;
    Value blocks = lb.domain->raggedExtent;
    // The completed blocks' tokens, gathered by block id at [bs, d].
    Value x = lb.gather(LinalgBuilder::readSource(adaptor.getBlock()),
                        lb.domain->blockIds, bs, d);
    Value mix = lb.padTo(LinalgBuilder::readSource(adaptor.getMix()), hm, bs);
    Value proj = lb.padTo(LinalgBuilder::readSource(adaptor.getProj()), hr, d);
    OpBuilder &b = lb.b;
    MLIRContext *ctx = b.getContext();
    AffineExpr s = b.getAffineDimExpr(0), p = b.getAffineDimExpr(1),
               c = b.getAffineDimExpr(2), t = b.getAffineDimExpr(3),
               zero = b.getAffineConstantExpr(0);
    // mixed[s, p, e] = sum_t mix[0, p, t] * x[s, t, e]: loops (s, p, e, t).
    Value mixed = lb.contract(mix, AffineMap::get(4, 0, {zero, p, t}, ctx), x,
                              AffineMap::get(4, 0, {s, t, c}, ctx), blocks,
                              hm, d);
    // rows[s, p, i] = sum_e mixed[s, p, e] * proj[0, (p / m) r + i, e]:
    // loops (s, p, i, e), landmark p of head p / m.
    Value desc = lb.contract(
        mixed, AffineMap::get(4, 0, {s, p, t}, ctx), proj,
        AffineMap::get(4, 0, {zero, p.floorDiv(m) * r + c, t}, ctx), blocks,
        hm, r);
    // The field is stored at its real extents (scatterRows writes the
    // stored lanes); where it were stored padded, its padded lanes get 0.
    auto stored = cast<RankedTensorType>(
        LinalgBuilder::readSource(adaptor.getField()).getType());
    return lb.padTo(desc, stored.getDimSize(1), stored.getDimSize(2));
  }
};

} // namespace

void mlir::vortex::populateVortexStateToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LoadToLinalg, SaveToLinalg, WriteToLinalg, FillToLinalg,
               LearnedDescriptorToLinalg>(
      converter, patterns.getContext());
}
