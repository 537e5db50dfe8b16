//===- StateToLinalg.cpp - Field reads and writes to linalg ---------------===//
//
// load gathers a field's rows by block id from its value at the start of the
// step; save, write and fill scatter rows into the field's latest value,
// which the step writes back once at its end (LinalgBuilder.h, step state).
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

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

} // namespace

void mlir::vortex::populateVortexStateToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LoadToLinalg, SaveToLinalg, WriteToLinalg, FillToLinalg>(
      converter, patterns.getContext());
}
