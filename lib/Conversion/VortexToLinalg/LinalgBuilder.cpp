//===- LinalgBuilder.cpp - Shared pieces of the linalg patterns -----------===//

#include "LinalgBuilder.h"
#include "Vortex/Dialect/FlowABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

//===----------------------------------------------------------------------===//
// Emitter
//===----------------------------------------------------------------------===//

Value Emitter::extract(Value t, ValueRange ivs) {
  return tensor::ExtractOp::create(b, loc, t, ivs);
}
Value Emitter::index(int64_t dim) { return linalg::IndexOp::create(b, loc, dim); }
Value Emitter::dim(Value t, int64_t d) {
  return tensor::DimOp::create(b, loc, t, d);
}

scf::ForOp Emitter::forLoop(
    Value lb, Value ub, ValueRange inits,
    function_ref<SmallVector<Value>(Emitter &, Value, ValueRange)> body) {
  return scf::ForOp::create(
      b, loc, lb, ub, idx(1), inits,
      [&](OpBuilder &nb, Location l, Value iv, ValueRange args) {
        Emitter e{nb, l};
        SmallVector<Value> results = body(e, iv, args);
        scf::YieldOp::create(nb, l, results);
      });
}

Value Emitter::ifElse(Value cond, function_ref<Value(Emitter &)> thenFn,
                      function_ref<Value(Emitter &)> elseFn) {
  auto op = scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &nb, Location l) {
        Emitter e{nb, l};
        scf::YieldOp::create(nb, l, thenFn(e));
      },
      [&](OpBuilder &nb, Location l) {
        Emitter e{nb, l};
        scf::YieldOp::create(nb, l, elseFn(e));
      });
  return op.getResult(0);
}

//===----------------------------------------------------------------------===//
// Domain and state
//===----------------------------------------------------------------------===//

std::optional<StepDomain> StepDomain::find(Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func)
    return std::nullopt;
  auto config = func->getAttrOfType<FlowConfigAttr>(kConfigMarker);
  if (!config)
    return std::nullopt;
  StepDomain domain;
  domain.config = config;
  // The flow pattern creates the domain at the top of the entry block.
  for (Operation &inner : func.front()) {
    auto role = inner.getAttrOfType<StringAttr>(kDomainMarker);
    if (!role)
      continue;
    Value v = inner.getResult(0);
    Value *slot = llvm::StringSwitch<Value *>(role.getValue())
                      .Case("ragged_extent", &domain.raggedExtent)
                      .Case("block_ids", &domain.blockIds)
                      .Case("indptr", &domain.indptr)
                      .Case("row_of", &domain.rowOf)
                      .Case("num_rows", &domain.numRows)
                      .Case("slot_ids", &domain.slotIds)
                      .Default(nullptr);
    if (slot)
      *slot = v;
  }
  if (!domain.raggedExtent || !domain.blockIds)
    return std::nullopt;
  return domain;
}

BlockArgument linalg_lowering::stepArgument(func::FuncOp func,
                                            StringRef name) {
  for (BlockArgument arg : func.getArguments())
    if (auto n = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                   "vortex.name");
        n && n.getValue() == name)
      return arg;
  return {};
}

BlockArgument linalg_lowering::boundArgument(Value bound) {
  Operation *def = bound.getDefiningOp();
  auto index = def ? def->getAttrOfType<IntegerAttr>(kBindsMarker) : nullptr;
  auto func = def ? def->getParentOfType<func::FuncOp>() : nullptr;
  if (!index || !func)
    return {};
  return func.getArgument(index.getInt());
}

static bufferization::MaterializeInDestinationOp writeBackOf(BlockArgument arg) {
  for (Operation *user : arg.getUsers())
    if (auto wb = dyn_cast<bufferization::MaterializeInDestinationOp>(user))
      return wb;
  return {};
}

Value linalg_lowering::entryTensor(BlockArgument arg) {
  for (Operation *user : arg.getUsers())
    if (auto t = dyn_cast<bufferization::ToTensorOp>(user))
      return t.getResult();
  return {};
}

Value linalg_lowering::currentState(BlockArgument arg) {
  if (auto wb = writeBackOf(arg))
    return wb.getSource();
  return entryTensor(arg);
}

void linalg_lowering::setState(RewriterBase &rewriter, BlockArgument arg,
                               Value value) {
  if (auto wb = writeBackOf(arg)) {
    rewriter.modifyOpInPlace(wb, [&] { wb.getSourceMutable().assign(value); });
    return;
  }
  // The first update: written back at the end of the step.
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(arg.getOwner()->getTerminator());
  bufferization::MaterializeInDestinationOp::create(
      rewriter, value.getLoc(), TypeRange{}, value, arg, /*restrict=*/true,
      /*writable=*/true);
}

Type linalg_lowering::loweredElementType(VTensorType t) {
  return isa<FloatType>(t.getElementType())
             ? Float32Type::get(t.getContext())
             : t.getElementType();
}

void linalg_lowering::replaceOpWithConverted(
    ConversionPatternRewriter &rewriter, const TypeConverter &converter,
    Operation *op, ValueRange values) {
  SmallVector<Value> results;
  for (auto [v, result] : llvm::zip(values, op->getResults())) {
    Type want = converter.convertType(result.getType());
    results.push_back(v.getType() == want
                          ? v
                          : tensor::CastOp::create(rewriter, op->getLoc(),
                                                   want, v)
                                .getResult());
  }
  rewriter.replaceOp(op, results);
}

//===----------------------------------------------------------------------===//
// LinalgBuilder
//===----------------------------------------------------------------------===//

LinalgBuilder::LinalgBuilder(OpBuilder &b, Location loc,
                             std::optional<StepDomain> domain,
                             Value batchedLead)
    : b(b), e{b, loc}, loc(loc), domain(std::move(domain)),
      batchedLead(batchedLead) {}

static bool isFlowAddressed(Type type) {
  auto t = dyn_cast<VTensorType>(type);
  return t && t.getFormatKind() != Format::Batched &&
         t.getFormatKind() != Format::Parameter;
}

FailureOr<LinalgBuilder>
LinalgBuilder::forOp(Operation *op, ValueRange operands,
                     ConversionPatternRewriter &rewriter, bool needsFlow) {
  std::optional<StepDomain> domain = StepDomain::find(op);
  if (!domain) {
    needsFlow |= llvm::any_of(op->getOperandTypes(), isFlowAddressed) ||
                 llvm::any_of(op->getResultTypes(), isFlowAddressed);
    if (needsFlow)
      return rewriter.notifyMatchFailure(
          op, "its values are addressed through a flow's block lists");
  }
  // Batched values span the CSR's rows; outside a flow, their operands'.
  Value lead = domain ? domain->numRows : Value();
  if (!lead)
    for (auto [original, converted] :
         llvm::zip(op->getOperands(), operands))
      if (auto t = dyn_cast<VTensorType>(original.getType());
          t && t.getFormatKind() == Format::Batched) {
        lead = tensor::DimOp::create(rewriter, op->getLoc(), converted, 0);
        break;
      }
  return LinalgBuilder(rewriter, op->getLoc(), domain, lead);
}

int64_t LinalgBuilder::computeExtent(VTensorType t, unsigned dim) {
  return t.getExplicitPadding() ? nextPowerOf2(t.getInner(dim))
                                : t.getInner(dim);
}

Value linalg_lowering::dequantInt4(OpBuilder &b, Location loc, Value packed,
                                   Value scale, bool perToken, Value s,
                                   Value i, Value j) {
  Emitter x{b, loc};
  auto type = cast<RankedTensorType>(packed.getType());
  int64_t bs = type.getDimSize(1), bytes = type.getDimSize(2);
  Value inRange = x.andI(x.lt(i, x.idx(bs)), x.lt(j, x.idx(2 * bytes)));
  Value ic = x.minI(i, x.idx(bs - 1)), jc = x.minI(j, x.idx(2 * bytes - 1));
  // Channel j: byte j / 2, low nibble for even j, high for odd.
  Value byte = x.extract(packed, {s, ic, x.divU(jc, x.idx(2))});
  Value shift = arith::IndexCastOp::create(
      b, loc, b.getI8Type(), x.mul(x.remU(jc, x.idx(2)), x.idx(4)));
  Value nibble = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, byte, shift),
      arith::ConstantIntOp::create(b, loc, b.getI8Type(), 15));
  Value q = x.subF(arith::UIToFPOp::create(b, loc, b.getF32Type(), nibble),
                   x.f32(static_cast<double>(abi::kInt4Bias)));
  Value sc = perToken ? x.extract(scale, {s, ic, x.idx(0)})
                      : x.extract(scale, {s, x.idx(0), jc});
  return x.select(inRange, x.mulF(q, sc), x.f32(0.0));
}

/// A read of the dequantized int4 pool `src` (kInt4Marker): unpacked from
/// the step's byte and scale arguments, else null.
static Value int4Extract(Emitter &x, Value src, Value s, Value i, Value j) {
  Operation *def = src.getDefiningOp();
  auto pool = def ? def->getAttrOfType<StringAttr>(kInt4Marker) : nullptr;
  if (!pool)
    return {};
  auto func = def->getParentOfType<func::FuncOp>();
  bool isV = pool.getValue() == "v";
  Value packed = entryTensor(stepArgument(func, pool.getValue()));
  Value scale = entryTensor(
      stepArgument(func, isV ? abi::kVInt4Scale : abi::kKInt4Scale));
  return dequantInt4(x.b, x.loc, packed, scale, isV, s, i, j);
}

Value LinalgBuilder::maskedExtract(Emitter &x, Value src, Value s, Value i,
                                   Value j, int64_t d0, int64_t d1) {
  if (Value v = int4Extract(x, src, s, i, j))
    return v;
  auto srcType = cast<RankedTensorType>(src.getType());
  int64_t r0 = srcType.getDimSize(1), r1 = srcType.getDimSize(2);
  if (r0 >= d0 && r1 >= d1)
    return x.extract(src, {s, i, j});
  Value inRange = x.andI(x.cmpI(arith::CmpIPredicate::slt, i, x.idx(r0)),
                         x.cmpI(arith::CmpIPredicate::slt, j, x.idx(r1)));
  Value v =
      x.extract(src, {s, x.minI(i, x.idx(r0 - 1)), x.minI(j, x.idx(r1 - 1))});
  return x.select(inRange, v, x.f32(0.0));
}

Value LinalgBuilder::emptyTensor(Value lead, int64_t d0, int64_t d1) {
  return tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{ShapedType::kDynamic, d0, d1}, b.getF32Type(),
      ValueRange{lead});
}

Value LinalgBuilder::contract(Value lhs, AffineMap lhsMap, Value rhs,
                              AffineMap rhsMap, Value lead, int64_t d0,
                              int64_t d1) {
  Value filled = linalg::FillOp::create(b, loc, ValueRange{e.f32(0.0)},
                                        ValueRange{emptyTensor(lead, d0, d1)})
                     .getResult(0);
  AffineMap outMap = AffineMap::get(
      4, 0, {b.getAffineDimExpr(0), b.getAffineDimExpr(1),
             b.getAffineDimExpr(2)},
      b.getContext());
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{filled.getType()}, ValueRange{lhs, rhs},
      ValueRange{filled}, ArrayRef<AffineMap>{lhsMap, rhsMap, outMap},
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Emitter x{nb, l};
        linalg::YieldOp::create(nb, l,
                                x.addF(args[2], x.mulF(args[0], args[1])));
      });
  return generic.getResult(0);
}

Value LinalgBuilder::leadOf(Format format) {
  if (format == Format::Parameter)
    return e.idx(1);
  return format == Format::Batched ? batchedLead : domain->raggedExtent;
}

Value LinalgBuilder::padTo(Value src, int64_t d0, int64_t d1) {
  auto srcType = cast<RankedTensorType>(src.getType());
  if (srcType.getDimSize(1) == d0 && srcType.getDimSize(2) == d1)
    return src;
  return generate(e.dim(src, 0), d0, d1,
                  [&](Emitter &x, Value s, Value i, Value j) {
                    return maskedExtract(x, src, s, i, j, d0, d1);
                  });
}

Value LinalgBuilder::gather(Value src, Value idxTensor, int64_t d0,
                            int64_t d1) {
  auto srcType = cast<RankedTensorType>(src.getType());
  if (d0 < 0) {
    d0 = srcType.getDimSize(1);
    d1 = srcType.getDimSize(2);
  }
  Value init = emptyTensor(e.dim(idxTensor, 0), d0, d1);
  MLIRContext *ctx = b.getContext();
  AffineMap idxMap = AffineMap::get(3, 0, {b.getAffineDimExpr(0)}, ctx);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{idxTensor},
      ValueRange{init},
      ArrayRef<AffineMap>{idxMap, b.getMultiDimIdentityMap(3)},
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Emitter x{nb, l};
        Value v = maskedExtract(x, src, x.toIndex(args[0]), x.index(1),
                                x.index(2), d0, d1);
        linalg::YieldOp::create(nb, l, v);
      });
  return op.getResult(0);
}

Value LinalgBuilder::readSource(Value lowered) {
  BlockArgument arg = boundArgument(lowered);
  Value entry = arg ? entryTensor(arg) : Value();
  return entry ? entry : lowered;
}

Value LinalgBuilder::operandIn(Value original, Value lowered, Format format) {
  lowered = readSource(lowered);
  auto t = cast<VTensorType>(original.getType());
  int64_t d0 = computeExtent(t, 1), d1 = computeExtent(t, 2);
  Format from = t.getFormatKind();
  if (from == Format::Parameter && format != Format::Parameter) {
    // One row shared by every row and position: read at index 0.
    return generate(leadOf(format), d0, d1,
                    [&](Emitter &x, Value, Value i, Value j) {
                      return maskedExtract(x, lowered, x.idx(0), i, j, d0,
                                           d1);
                    });
  }
  if (from == format || format == Format::Batched)
    return padTo(lowered, d0, d1);
  // Ragged domain: paged/slotted by block id, batched by row.
  return gather(lowered,
                from == Format::Batched ? domain->rowOf : domain->blockIds, d0,
                d1);
}

Value LinalgBuilder::inOf(Operation *op, ValueRange operands, unsigned i) {
  auto rt = cast<VTensorType>(op->getResult(0).getType());
  return operandIn(op->getOperand(i), operands[i], rt.getFormatKind());
}

Value LinalgBuilder::elementwise(
    VTensorType resultType, ArrayRef<Value> inputs,
    function_ref<Value(Emitter &, ValueRange)> body) {
  Value lead = leadOf(resultType.getFormatKind());
  Value init = emptyTensor(lead, computeExtent(resultType, 1),
                           computeExtent(resultType, 2));
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs) {
    auto t = cast<RankedTensorType>(in.getType());
    SmallVector<AffineExpr> exprs = {b.getAffineDimExpr(0)};
    for (unsigned a = 1; a <= 2; ++a)
      exprs.push_back(t.getDimSize(a) == 1 && resultType.getInner(a) != 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(a));
    maps.push_back(AffineMap::get(3, 0, exprs, ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(3));
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Emitter x{nb, l};
        linalg::YieldOp::create(nb, l, body(x, args.drop_back()));
      });
  return op.getResult(0);
}

Value LinalgBuilder::generate(
    Value lead, int64_t d0, int64_t d1,
    function_ref<Value(Emitter &, Value, Value, Value)> body) {
  Value init = emptyTensor(lead, d0, d1);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init},
      ArrayRef<AffineMap>{b.getMultiDimIdentityMap(3)},
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange) {
        Emitter x{nb, l};
        linalg::YieldOp::create(
            nb, l, body(x, x.index(0), x.index(1), x.index(2)));
      });
  return op.getResult(0);
}

Value LinalgBuilder::reduceInner(Value input, VTensorType resultType,
                                 ReduceKind kind, int64_t dim, int64_t factor,
                                 int64_t realCount) {
  auto inType = cast<RankedTensorType>(input.getType());
  int64_t extent = inType.getDimSize(dim);
  int64_t group = factor == 0 ? extent : factor;
  Value lead = leadOf(resultType.getFormatKind());
  Value init = emptyTensor(lead, computeExtent(resultType, 1),
                           computeExtent(resultType, 2));
  Value filled = linalg::FillOp::create(b, loc, ValueRange{e.f32(neutralOf(kind))},
                                        ValueRange{init})
                     .getResult(0);
  // Split the reduced axis into (extent / group, group) and reduce the
  // trailing group axis: loops (s, i, j, t) over [S, D0', D1', group].
  SmallVector<int64_t> expanded = {ShapedType::kDynamic};
  SmallVector<ReassociationIndices> reassoc;
  int64_t outer = computeExtent(resultType, dim);
  if (extent != outer * group) {
    // A padded axis whose groups do not tile the padded extent: reduce
    // over the real lanes only.
    input = sliceInner(input, dim, outer * group);
    extent = outer * group;
  }
  if (dim == 1) {
    expanded.append({extent / group, group, inType.getDimSize(2)});
    reassoc = {{0}, {1, 2}, {3}};
  } else {
    expanded.append({inType.getDimSize(1), extent / group, group});
    reassoc = {{0}, {1}, {2, 3}};
  }
  Value split = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(expanded, b.getF32Type()), input, reassoc);
  MLIRContext *ctx = b.getContext();
  AffineExpr s = b.getAffineDimExpr(0), i = b.getAffineDimExpr(1),
             j = b.getAffineDimExpr(2), t = b.getAffineDimExpr(3);
  AffineMap inMap = dim == 1 ? AffineMap::get(4, 0, {s, i, t, j}, ctx)
                             : AffineMap::get(4, 0, {s, i, j, t}, ctx);
  AffineMap outMap = AffineMap::get(4, 0, {s, i, j}, ctx);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{filled.getType()}, ValueRange{split},
      ValueRange{filled}, ArrayRef<AffineMap>{inMap, outMap},
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Emitter x{nb, l};
        linalg::YieldOp::create(nb, l,
                                combineReduction(x, kind, args[1], args[0]));
      });
  Value acc = op.getResult(0);
  if (kind != ReduceKind::Mean && kind != ReduceKind::L2Norm)
    return acc;
  // Mean divides by the real extent, never the padded one.
  return elementwise(resultType, {acc}, [&](Emitter &x, ValueRange v) {
    return finishReduction(x, kind, v[0],
                           x.f32(static_cast<double>(realCount)));
  });
}

Value LinalgBuilder::sliceInner(Value input, int64_t dim, int64_t extent) {
  auto t = cast<RankedTensorType>(input.getType());
  int64_t d0 = dim == 1 ? extent : t.getDimSize(1);
  int64_t d1 = dim == 2 ? extent : t.getDimSize(2);
  return generate(e.dim(input, 0), d0, d1,
                  [&](Emitter &x, Value s, Value i, Value j) {
                    return maskedExtract(x, input, s, i, j, d0, d1);
                  });
}

Value LinalgBuilder::budget(Emitter &x, Value n) {
  return emitRowBudget(x, config(), n);
}

std::pair<Value, Value> LinalgBuilder::rowBounds(Emitter &x, Value r) {
  Value start = x.toIndex(x.extract(domain->indptr, r));
  Value end = x.toIndex(x.extract(domain->indptr, x.add(r, x.idx(1))));
  return {start, end};
}

Value LinalgBuilder::rowNeedsSelection(Emitter &x, Value start, Value end) {
  Value n = x.sub(end, start);
  return x.cmpI(arith::CmpIPredicate::sgt, n, budget(x, n));
}

LinalgBuilder::Segment LinalgBuilder::segmentOfRow(Emitter &x, Value row) {
  auto [start, end] = rowBounds(x, row);
  Value lo = x.add(start, x.idx(config().getReservedBos()));
  Value hi = x.sub(end, x.idx(config().getReservedEos()));
  return {start, end, lo, hi, rowNeedsSelection(x, start, end)};
}

Value LinalgBuilder::segmentOp(
    VTensorType resultType,
    function_ref<Value(Emitter &, Segment &, Value, Value, Value)> compute) {
  return generate(
      domain->raggedExtent, computeExtent(resultType, 1),
      computeExtent(resultType, 2),
      [&](Emitter &x, Value s, Value i, Value j) {
        Segment seg = segmentOfRow(x, x.extract(domain->rowOf, s));
        Value inRange =
            x.andI(seg.active,
                   x.andI(x.cmpI(arith::CmpIPredicate::sge, s, seg.lo),
                          x.cmpI(arith::CmpIPredicate::slt, s, seg.hi)));
        return x.ifElse(
            inRange, [&](Emitter &y) { return compute(y, seg, s, i, j); },
            [&](Emitter &y) { return y.f32(0.0); });
      });
}

Value LinalgBuilder::foldSegment(
    Emitter &x, Value input, Value lo, Value hi, Value i, Value j, Value init,
    function_ref<Value(Emitter &, Value, Value)> fn) {
  return x
      .forLoop(lo, hi, {init},
               [&](Emitter &y, Value t, ValueRange acc) {
                 Value v = y.extract(input, {t, i, j});
                 return SmallVector<Value>{fn(y, acc[0], v)};
               })
      .getResult(0);
}

Value LinalgBuilder::scatterRows(
    Value field, Value value, Value ids,
    function_ref<Value(Emitter &, Value)> enabled) {
  auto fieldType = cast<RankedTensorType>(field.getType());
  int64_t d0 = fieldType.getDimSize(1), d1 = fieldType.getDimSize(2);
  return e
      .forLoop(
          e.idx(0), e.dim(ids, 0), {field},
          [&](Emitter &x, Value s, ValueRange acc) {
            Value cond = enabled(x, s);
            Value updated = x.ifElse(
                cond,
                [&](Emitter &y) {
                  Value block = y.toIndex(y.extract(ids, s));
                  SmallVector<OpFoldResult> offs = {s, y.b.getIndexAttr(0),
                                                    y.b.getIndexAttr(0)};
                  SmallVector<OpFoldResult> dstOffs = {
                      block, y.b.getIndexAttr(0), y.b.getIndexAttr(0)};
                  SmallVector<OpFoldResult> sizes = {y.b.getIndexAttr(1),
                                                     y.b.getIndexAttr(d0),
                                                     y.b.getIndexAttr(d1)};
                  SmallVector<OpFoldResult> strides(3, y.b.getIndexAttr(1));
                  Value row = tensor::ExtractSliceOp::create(
                      y.b, y.loc, value, offs, sizes, strides);
                  return Value(tensor::InsertSliceOp::create(
                      y.b, y.loc, row, acc[0], dstOffs, sizes, strides));
                },
                [&](Emitter &y) { return acc[0]; });
            return SmallVector<Value>{updated};
          })
      .getResult(0);
}
