//===- VortexToLinalg.cpp - Lower vortex flows to linalg on tensors -------===//
//
// Each flow becomes `@<flow>_indexer` and `@<flow>_cache` (docs/contract.md).
// Values are lowered op by op in program order: a vtensor becomes a
// `tensor<L x D0 x D1 x f32>` whose leading axis is its format's domain
// (batched: rows; ragged: CSR positions or completed blocks; paged: pool
// blocks). Operands of a workload op are first brought into the result's
// domain by explicit gathers (paged by block id, batched by row), so every
// op below is a same-domain linalg.generic; fusion of those gathers into
// their consumers is the job of the fusion passes.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Conversion/Passes.h"
#include "Vortex/Conversion/Utils/ScalarBuilder.h"
#include "Vortex/Dialect/FlowABI.h"
#include "Vortex/Dialect/VortexOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_CONVERTVORTEXTOLINALG
#include "Vortex/Conversion/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;
using namespace mlir::vortex;

namespace {

/// Scalar helpers plus the tensor and loop ones of this lowering.
struct Emitter : ScalarBuilder {
  Emitter(OpBuilder &b, Location loc) : ScalarBuilder(b, loc) {}

  Value extract(Value t, ValueRange ivs) {
    return tensor::ExtractOp::create(b, loc, t, ivs);
  }
  Value index(int64_t dim) { return linalg::IndexOp::create(b, loc, dim); }
  Value dim(Value t, int64_t d) { return tensor::DimOp::create(b, loc, t, d); }

  /// scf.for from lb to ub with loop-carried values.
  scf::ForOp forLoop(Value lb, Value ub, ValueRange inits,
                     function_ref<SmallVector<Value>(Emitter &, Value,
                                                     ValueRange)>
                         body) {
    return scf::ForOp::create(
        b, loc, lb, ub, idx(1), inits,
        [&](OpBuilder &nb, Location l, Value iv, ValueRange args) {
          Emitter e{nb, l};
          SmallVector<Value> results = body(e, iv, args);
          scf::YieldOp::create(nb, l, results);
        });
  }

  /// scf.if yielding one value per branch.
  Value ifElse(Value cond, function_ref<Value(Emitter &)> thenFn,
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
};

/// Lowers the ops of one flow body into the function being built.
class BodyLowering {
public:
  BodyLowering(OpBuilder &builder, Location loc, FlowConfigAttr config)
      : b(builder), e{builder, loc}, loc(loc), config(config) {
    f32Type = b.getF32Type();
  }

  /// The domain of the body: the ragged extent and its paged block ids; on
  /// the indexer side also the CSR and each position's row.
  Value raggedExtent, blockIds, indptr, rowOf, numRows;

  /// Field tensors as updated so far (written back at the end).
  DenseMap<Value, Value> fieldState;
  /// Lowered values.
  DenseMap<Value, Value> values;
  /// The sparse CSR outputs (indexer side).
  Value sparseIndptr, sparseIndices;

  LogicalResult lower(Operation *op);
  LogicalResult lowerElementwise(Operation *op);
  LogicalResult lowerReduction(Operation *op);
  LogicalResult lowerContraction(Operation *op);
  LogicalResult lowerRowSegment(Operation *op);
  LogicalResult lowerLayout(Operation *op);
  LogicalResult lowerState(Operation *op);
  LogicalResult lowerSelection(Operation *op);
  LogicalResult lowerKernel(Operation *op);
  /// The op being lowered: its result type, operand `i` in the result's
  /// format, and where its lowered result goes.
  VTensorType resultTypeOf(Operation *op) { return vt(op->getResult(0)); }
  Value inOf(Operation *op, unsigned i) {
    return operandIn(op->getOperand(i), resultTypeOf(op).getFormatKind());
  }
  void setResultOf(Operation *op, Value v) { values[op->getResult(0)] = v; }

  RankedTensorType tensorType(int64_t d0, int64_t d1) {
    return RankedTensorType::get({ShapedType::kDynamic, d0, d1}, f32Type);
  }

  Value emptyTensor(Value lead, int64_t d0, int64_t d1) {
    return tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{ShapedType::kDynamic, d0, d1}, f32Type,
                                   ValueRange{lead});
  }

  /// Leading extent of the domain of `format` (a parameter has one row).
  Value leadOf(Format format) {
    if (format == Format::Parameter)
      return e.idx(1);
    return format == Format::Batched ? numRows : raggedExtent;
  }

  /// Budget of a row of `n` blocks: max(topk + bos + eos, int(n * ratio)).
  Value budget(Emitter &x, Value n) { return emitRowBudget(x, config, n); }

  /// Row bounds [start, end) of row r in the dense CSR.
  std::pair<Value, Value> rowBounds(Emitter &x, Value r) {
    Value start = x.toIndex(x.extract(indptr, r));
    Value end = x.toIndex(x.extract(indptr, x.add(r, x.idx(1))));
    return {start, end};
  }

  /// True iff row r needs selection (more blocks than its budget).
  Value rowNeedsSelection(Emitter &x, Value start, Value end) {
    Value n = x.sub(end, start);
    return x.cmpI(arith::CmpIPredicate::sgt, n, budget(x, n));
  }

private:
  OpBuilder &b;
  Emitter e;
  Location loc;
  FlowConfigAttr config;
  Type f32Type;

  VTensorType vt(Value v) { return cast<VTensorType>(v.getType()); }

  /// Extent of inner axis `dim` as computed: padded once padding is
  /// explicit, else real.
  static int64_t computeExtent(VTensorType t, unsigned dim) {
    return t.getExplicitPadding() ? nextPowerOf2(t.getInner(dim))
                                  : t.getInner(dim);
  }

  /// Element (s, i, j) of `src`, or 0 where (i, j) lies beyond src's extent
  /// (the masked load of a padded lane).
  static Value maskedExtract(Emitter &x, Value src, Value s, Value i,
                             Value j, int64_t d0, int64_t d1) {
    auto srcType = cast<RankedTensorType>(src.getType());
    int64_t r0 = srcType.getDimSize(1), r1 = srcType.getDimSize(2);
    if (r0 >= d0 && r1 >= d1)
      return x.extract(src, {s, i, j});
    Value inRange = x.andI(x.cmpI(arith::CmpIPredicate::slt, i, x.idx(r0)),
                           x.cmpI(arith::CmpIPredicate::slt, j, x.idx(r1)));
    Value v = x.extract(src, {s, x.minI(i, x.idx(r0 - 1)),
                              x.minI(j, x.idx(r1 - 1))});
    return x.select(inRange, v, x.f32(0.0));
  }

  /// `src` widened to inner extents (d0, d1), padded lanes 0.
  Value padTo(Value src, int64_t d0, int64_t d1) {
    auto srcType = cast<RankedTensorType>(src.getType());
    if (srcType.getDimSize(1) == d0 && srcType.getDimSize(2) == d1)
      return src;
    return generate(e.dim(src, 0), d0, d1,
                    [&](Emitter &x, Value s, Value i, Value j) {
                      return maskedExtract(x, src, s, i, j, d0, d1);
                    });
  }

  /// Gather rows of `src` by the indices in `idx` (1-D tensor of i32 or
  /// index) into a tensor with `idx`'s extent and inner extents (d0, d1).
  Value gather(Value src, Value idxTensor, int64_t d0 = -1, int64_t d1 = -1) {
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

  /// The lowered value of `v` in the domain of `format`, at its computed
  /// (possibly padded) inner extents.
  Value operandIn(Value v, Format format) {
    Value lowered = values.lookup(v);
    VTensorType t = vt(v);
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
    return gather(lowered, from == Format::Batched ? rowOf : blockIds, d0, d1);
  }

  /// A parallel generic over the result's shape; `body` gets the scalars of
  /// the (broadcast) inputs.
  Value elementwise(VTensorType resultType, ArrayRef<Value> inputs,
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

  /// A generic with no inputs: `body` computes each element from its
  /// indices (s, i, j).
  Value generate(Value lead, int64_t d0, int64_t d1,
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

  /// A keep-dim reduction over inner axis `dim` (1 or 2), grouped by
  /// `factor` consecutive elements (1 = the whole axis).
  Value reduceInner(Value input, VTensorType resultType, ReduceKind kind,
                    int64_t dim, int64_t factor, int64_t realCount) {
    auto inType = cast<RankedTensorType>(input.getType());
    int64_t extent = inType.getDimSize(dim);
    int64_t group = factor == 1 ? extent : factor;
    Value lead = leadOf(resultType.getFormatKind());
    Value init = emptyTensor(lead, computeExtent(resultType, 1),
                             computeExtent(resultType, 2));
    Value filled =
        linalg::FillOp::create(b, loc, ValueRange{e.f32(neutralOf(kind))},
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
        b, loc, RankedTensorType::get(expanded, f32Type), input, reassoc);
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
      return finishReduction(x, kind, v[0], x.f32(static_cast<double>(realCount)));
    });
  }

  /// The first `extent` lanes of axis `dim`, zero-extended if shorter.
  Value sliceInner(Value input, int64_t dim, int64_t extent) {
    auto t = cast<RankedTensorType>(input.getType());
    int64_t d0 = dim == 1 ? extent : t.getDimSize(1);
    int64_t d1 = dim == 2 ? extent : t.getDimSize(2);
    return generate(e.dim(input, 0), d0, d1,
                    [&](Emitter &x, Value s, Value i, Value j) {
                      return maskedExtract(x, input, s, i, j, d0, d1);
                    });
  }

  /// The scored range [lo, hi) of the row of ragged position s, and whether
  /// the row needs selection.
  struct Segment {
    Value start, end, lo, hi, active;
  };
  Segment segmentOfRow(Emitter &x, Value row) {
    auto [start, end] = rowBounds(x, row);
    Value lo = x.add(start, x.idx(config.getReservedBos()));
    Value hi = x.sub(end, x.idx(config.getReservedEos()));
    return {start, end, lo, hi, rowNeedsSelection(x, start, end)};
  }

  /// Per-channel scan over the scored range of each row (softmax, L2
  /// normalize, causal conv1d). Positions outside the range, and rows that
  /// need no selection, hold 0.
  Value segmentOp(VTensorType resultType,
                  function_ref<Value(Emitter &, Segment &, Value s, Value i,
                                     Value j)>
                      compute) {
    return generate(raggedExtent, computeExtent(resultType, 1),
                    computeExtent(resultType, 2),
                    [&](Emitter &x, Value s, Value i, Value j) {
                      Segment seg = segmentOfRow(x, x.extract(rowOf, s));
                      Value inRange = x.andI(
                          seg.active,
                          x.andI(x.cmpI(arith::CmpIPredicate::sge, s, seg.lo),
                                 x.cmpI(arith::CmpIPredicate::slt, s,
                                        seg.hi)));
                      return x.ifElse(
                          inRange,
                          [&](Emitter &y) { return compute(y, seg, s, i, j); },
                          [&](Emitter &y) { return y.f32(0.0); });
                    });
  }

  /// Fold `fn` over positions [lo, hi) of channel (i, j) of `input`.
  Value foldSegment(Emitter &x, Value input, Value lo, Value hi, Value i,
                    Value j, Value init,
                    function_ref<Value(Emitter &, Value acc, Value v)> fn) {
    return x
        .forLoop(lo, hi, {init},
                 [&](Emitter &y, Value t, ValueRange acc) {
                   Value v = y.extract(input, {t, i, j});
                   return SmallVector<Value>{fn(y, acc[0], v)};
                 })
        .getResult(0);
  }

  /// Scatter rows of `value` into field `field` at block ids, for the
  /// positions where `enabled(s)` holds.
  Value scatterRows(Value field, Value value, Value ids,
                    function_ref<Value(Emitter &, Value s)> enabled) {
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
                    SmallVector<OpFoldResult> sizes = {
                        y.b.getIndexAttr(1), y.b.getIndexAttr(d0),
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

  /// Per-row selection into `dest`. `packed`: rows are written back to back
  /// from offset 0 and `counts` becomes the sparse indptr (CSR); otherwise
  /// each row is written at its dense CSR start, padded with -1, and
  /// `counts` holds each row's count. `fixedBudget` < 0 uses the flow's
  /// budget rule, else bos + fixedBudget + eos.
  std::pair<Value, Value> selectRows(Value score, Value dest, Value counts,
                                     bool packed, int64_t fixedBudget);
  LogicalResult lowerUnion(UnionOp op);
};

} // namespace

//===----------------------------------------------------------------------===//
// Per-op lowering
//===----------------------------------------------------------------------===//

LogicalResult BodyLowering::lower(Operation *op) {
  // Dispatch by op family; each family lowers in its own function (the
  // dialect's interfaces name the elementwise and reduction families).
  if (isa<ReductionOpInterface>(op))
    return lowerReduction(op);
  if (isa<UnaryElementwiseOpInterface, BinaryElementwiseOpInterface>(op))
    return lowerElementwise(op);
  if (isa<GeMMOp, GeMVOp>(op))
    return lowerContraction(op);
  if (isa<SoftmaxOp, NormalizeOp, Conv1dOp>(op))
    return lowerRowSegment(op);
  if (isa<TransposeOp, ReshapeOp, KronOp, MaskSliceOp, MaskLanesOp>(op))
    return lowerLayout(op);
  if (isa<LoadOp, SaveOp, WriteOp, FillOp>(op))
    return lowerState(op);
  if (isa<TopKOp, ApproxTopKOp, TrtllmTopKOp, UnionOp>(op))
    return lowerSelection(op);
  if (isa<KernelOp>(op))
    return lowerKernel(op);
  // Unreachable for verified flows: the flow verifier admits only the ops
  // handled above.
  return op->emitOpError("cannot be lowered to linalg");
}

/// Unary and binary elementwise ops (UnaryElementwiseOpInterface,
/// BinaryElementwiseOpInterface): one linalg.generic-style `generate` over
/// the result domain.
LogicalResult BodyLowering::lowerElementwise(Operation *op) {
  if (auto un = dyn_cast<UnaryElementwiseOpInterface>(op)) {
    double alpha = un.getAlphaValue(), beta = un.getBetaValue();
    UnaryKind kind = un.getUnaryKind();
    setResultOf(op, elementwise(resultTypeOf(op), {inOf(op, 0)},
                                [&](Emitter &x, ValueRange v) {
                                  return emitUnary(x, kind, v[0], alpha,
                                                   beta);
                                }));
    return success();
  }
  auto bin = cast<BinaryElementwiseOpInterface>(op);
  BinaryKind kind = bin.getBinaryKind();
  double alpha = 1.0, beta = 1.0;
  if (auto add = dyn_cast<AddOp>(op)) {
    alpha = add.getAlpha().convertToDouble();
    beta = add.getBeta().convertToDouble();
  }
  setResultOf(op, elementwise(resultTypeOf(op), {inOf(op, 0), inOf(op, 1)},
                              [&](Emitter &x, ValueRange v) {
                                return emitBinary(x, kind, v[0], v[1], alpha,
                                                  beta);
                              }));
  return success();
}

/// Reductions (ReductionOpInterface): over an inner axis, grouped
/// (interleave), or over the scored blocks of each row (dim 0).
LogicalResult BodyLowering::lowerReduction(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<MaxOp, MinOp, MeanOp, SumOp, L2NormOp>([&](auto red) {
        ReduceKind kind = red.getReduceKind();
        int64_t dim = red.getDim();
        VTensorType rt = resultTypeOf(op);
        if (dim != 0) {
          setResultOf(op, reduceInner(inOf(op, 0), rt, kind, dim, 1,
                                vt(red.getInput()).getInner(dim)));
          return success();
        }
        // Over the scored range of each row: a batched row per CSR row.
        Value input = operandIn(red.getInput(), Format::Ragged);
        setResultOf(op, generate(
            numRows, computeExtent(rt, 1), computeExtent(rt, 2),
            [&](Emitter &x, Value r, Value i, Value j) {
              Segment seg = segmentOfRow(x, r);
              Value acc = foldSegment(x, input, seg.lo, seg.hi, i, j,
                                      x.f32(neutralOf(kind)),
                                      [&](Emitter &y, Value a, Value v) {
                                        return combineReduction(y, kind, a, v);
                                      });
              Value count = x.maxI(x.sub(seg.hi, seg.lo), x.idx(0));
              Value countF = arith::SIToFPOp::create(
                  x.b, x.loc, x.b.getF32Type(), x.toI32(count));
              Value done = finishReduction(x, kind, acc, countF);
              if (kind != ReduceKind::Mean)
                return done;
              // The mean of an empty range is 0, not 0/0.
              return x.select(x.cmpI(arith::CmpIPredicate::sgt, count,
                                     x.idx(0)),
                              done, x.f32(0.0));
            }));
        return success();
      })
      .Case<MaxInterleaveOp, MinInterleaveOp, MeanInterleaveOp,
            L2NormInterleaveOp>([&](auto red) {
        setResultOf(op, reduceInner(inOf(op, 0), resultTypeOf(op), red.getReduceKind(),
                              red.getDim(), red.getFactor(), red.getFactor()));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered to linalg");
      });
}

/// Contractions (gemm, gemv): a linalg.generic with one reduction
/// iterator over the shared axis.
LogicalResult BodyLowering::lowerContraction(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<GeMMOp, GeMVOp>([&](auto mm) {
        VTensorType rt = resultTypeOf(op);
        Value xs = inOf(op, 0), ys = inOf(op, 1);
        Value init = emptyTensor(leadOf(rt.getFormatKind()),
                                 computeExtent(rt, 1), computeExtent(rt, 2));
        Value filled = linalg::FillOp::create(b, loc, ValueRange{e.f32(0.0)},
                                              ValueRange{init})
                           .getResult(0);
        MLIRContext *ctx = b.getContext();
        AffineExpr s = b.getAffineDimExpr(0), a = b.getAffineDimExpr(1),
                   c = b.getAffineDimExpr(2), k = b.getAffineDimExpr(3);
        auto generic = linalg::GenericOp::create(
            b, loc, TypeRange{filled.getType()}, ValueRange{xs, ys},
            ValueRange{filled},
            ArrayRef<AffineMap>{AffineMap::get(4, 0, {s, c, k}, ctx),
                                AffineMap::get(4, 0, {s, a, k}, ctx),
                                AffineMap::get(4, 0, {s, a, c}, ctx)},
            {utils::IteratorType::parallel, utils::IteratorType::parallel,
             utils::IteratorType::parallel, utils::IteratorType::reduction},
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Emitter x{nb, l};
              linalg::YieldOp::create(
                  nb, l, x.addF(args[2], x.mulF(args[1], args[0])));
            });
        setResultOf(op, generic.getResult(0));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered to linalg");
      });
}

/// Row-segment ops (softmax, normalize, conv1d): each position sees
/// the scored range of its CSR row.
LogicalResult BodyLowering::lowerRowSegment(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<SoftmaxOp>([&](SoftmaxOp sm) {
        Value input = operandIn(sm.getInput(), Format::Ragged);
        double scale = sm.getScale().convertToDouble();
        setResultOf(op, segmentOp(
            resultTypeOf(op),
            [&](Emitter &x, Segment &seg, Value s, Value i, Value j) {
              Value m = foldSegment(
                  x, input, seg.lo, seg.hi, i, j, x.f32(kMaskNegative),
                  [&](Emitter &y, Value acc, Value v) {
                    return y.maxF(acc, y.mulF(v, y.f32(scale)));
                  });
              Value sum = foldSegment(
                  x, input, seg.lo, seg.hi, i, j, x.f32(0.0),
                  [&](Emitter &y, Value acc, Value v) {
                    Value ex = math::ExpOp::create(
                        y.b, y.loc, y.subF(y.mulF(v, y.f32(scale)), m));
                    return y.addF(acc, ex);
                  });
              Value self = x.mulF(x.extract(input, {s, i, j}), x.f32(scale));
              Value ex = math::ExpOp::create(x.b, x.loc, x.subF(self, m));
              return x.divF(ex, sum);
            }));
        return success();
      })
      .Case<NormalizeOp>([&](NormalizeOp nm) {
        Value input = operandIn(nm.getInput(), Format::Ragged);
        setResultOf(op, segmentOp(
            resultTypeOf(op),
            [&](Emitter &x, Segment &seg, Value s, Value i, Value j) {
              Value ss = foldSegment(x, input, seg.lo, seg.hi, i, j,
                                     x.f32(0.0),
                                     [&](Emitter &y, Value acc, Value v) {
                                       return y.addF(acc, y.mulF(v, v));
                                     });
              Value norm = x.maxF(math::SqrtOp::create(x.b, x.loc, ss),
                                  x.f32(1e-12));
              return x.divF(x.extract(input, {s, i, j}), norm);
            }));
        return success();
      })
      .Case<Conv1dOp>([&](Conv1dOp conv) {
        Value input = operandIn(conv.getInput(), Format::Ragged);
        auto weightAttr = cast<DenseElementsAttr>(conv.getWeight());
        auto wType = cast<ShapedType>(weightAttr.getType());
        int64_t taps = wType.getDimSize(0);
        int64_t d0 = computeExtent(resultTypeOf(op), 1);
        int64_t d1 = computeExtent(resultTypeOf(op), 2);
        // The taps, zero on padded lanes.
        SmallVector<float> padded(taps * d0 * d1, 0.0f);
        auto w = llvm::to_vector(weightAttr.getValues<float>());
        for (int64_t k = 0; k < taps; ++k)
          for (int64_t i = 0; i < wType.getDimSize(1); ++i)
            for (int64_t j = 0; j < wType.getDimSize(2); ++j)
              padded[(k * d0 + i) * d1 + j] =
                  w[(k * wType.getDimSize(1) + i) * wType.getDimSize(2) + j];
        auto paddedType = RankedTensorType::get({taps, d0, d1}, f32Type);
        Value weight = arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(paddedType, ArrayRef<float>(padded)));
        setResultOf(op, segmentOp(
            resultTypeOf(op),
            [&](Emitter &x, Segment &seg, Value s, Value i, Value j) {
              // Taps k with s - k >= lo (zero before the segment start).
              Value count = x.minI(x.idx(taps),
                                   x.add(x.sub(s, seg.lo), x.idx(1)));
              return x
                  .forLoop(x.idx(0), count, {x.f32(0.0)},
                           [&](Emitter &y, Value k, ValueRange acc) {
                             Value w = y.extract(weight, {k, i, j});
                             Value v = y.extract(input, {y.sub(s, k), i, j});
                             return SmallVector<Value>{
                                 y.addF(acc[0], y.mulF(w, v))};
                           })
                  .getResult(0);
            }));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered to linalg");
      });
}

/// Layout ops (transpose, reshape, kron, mask_slice, mask_lanes):
/// index maps over the real extents, padded lanes explicit.
LogicalResult BodyLowering::lowerLayout(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<TransposeOp>([&](TransposeOp) {
        VTensorType rt = resultTypeOf(op);
        Value input = inOf(op, 0);
        setResultOf(op, generate(leadOf(rt.getFormatKind()), computeExtent(rt, 1),
                           computeExtent(rt, 2),
                           [&](Emitter &x, Value s, Value i, Value j) {
                             return x.extract(input, {s, j, i});
                           }));
        return success();
      })
      .Case<ReshapeOp>([&](ReshapeOp rs) {
        VTensorType rt = resultTypeOf(op);
        int64_t y1 = vt(rs.getInput()).getD1();
        int64_t x2 = rt.getD0(), y2 = rt.getD1();
        Value input = inOf(op, 0);
        setResultOf(op, generate(
            leadOf(rt.getFormatKind()), computeExtent(rt, 1),
            computeExtent(rt, 2),
            [&](Emitter &x, Value s, Value i, Value j) {
              // Row-major over the real extents; padded lanes hold 0.
              Value real =
                  x.andI(x.cmpI(arith::CmpIPredicate::slt, i, x.idx(x2)),
                         x.cmpI(arith::CmpIPredicate::slt, j, x.idx(y2)));
              Value ci = x.minI(i, x.idx(x2 - 1));
              Value cj = x.minI(j, x.idx(y2 - 1));
              Value flat = x.add(x.mul(ci, x.idx(y2)), cj);
              Value r = arith::DivUIOp::create(x.b, x.loc, flat, x.idx(y1));
              Value c = arith::RemUIOp::create(x.b, x.loc, flat, x.idx(y1));
              return x.select(real, x.extract(input, {s, r, c}), x.f32(0.0));
            }));
        return success();
      })
      .Case<KronOp>([&](KronOp kron) {
        VTensorType rt = resultTypeOf(op);
        VTensorType xt = vt(kron.getLhs()), yt = vt(kron.getRhs());
        bool isKron[3] = {false, false, false};
        for (int64_t d : kron.getDims())
          isKron[d] = true;
        Value xs = inOf(op, 0), ys = inOf(op, 1);
        setResultOf(op, generate(
            leadOf(rt.getFormatKind()), computeExtent(rt, 1),
            computeExtent(rt, 2),
            [&](Emitter &x, Value s, Value i, Value j) {
              // Index math over the real extents; padded lanes hold 0.
              Value pos[3] = {s, i, j};
              Value real = x.andI(
                  x.cmpI(arith::CmpIPredicate::slt, i, x.idx(rt.getD0())),
                  x.cmpI(arith::CmpIPredicate::slt, j, x.idx(rt.getD1())));
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
              return x.select(real, v, x.f32(0.0));
            }));
        return success();
      })
      .Case<MaskSliceOp>([&](MaskSliceOp ms) {
        VTensorType rt = resultTypeOf(op);
        int64_t dim = ms.getDim(), start = ms.getStart(), end = ms.getEnd();
        double alpha = ms.getAlpha().convertToDouble();
        double beta = ms.getBeta().convertToDouble();
        setResultOf(op, generate(
            leadOf(rt.getFormatKind()), computeExtent(rt, 1),
            computeExtent(rt, 2),
            [&](Emitter &x, Value, Value i, Value j) {
              Value p = dim == 1 ? i : j;
              Value inside =
                  x.andI(x.cmpI(arith::CmpIPredicate::sge, p, x.idx(start)),
                         x.cmpI(arith::CmpIPredicate::slt, p, x.idx(end)));
              return x.select(inside, x.f32(alpha), x.f32(beta));
            }));
        return success();
      })
      .Case<MaskLanesOp>([&](MaskLanesOp mask) {
        VTensorType rt = resultTypeOf(op);
        Value input = inOf(op, 0);
        double value = mask.getValue().convertToDouble();
        // The mask keeps its input's domain: a paged operand is masked over
        // the whole pool (it is gathered by block id afterwards).
        setResultOf(op, generate(
            e.dim(input, 0), computeExtent(rt, 1),
            computeExtent(rt, 2),
            [&](Emitter &x, Value s, Value i, Value j) {
              Value real = x.andI(
                  x.cmpI(arith::CmpIPredicate::slt, i, x.idx(rt.getD0())),
                  x.cmpI(arith::CmpIPredicate::slt, j, x.idx(rt.getD1())));
              return x.select(real, x.extract(input, {s, i, j}),
                              x.f32(value));
            }));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered to linalg");
      });
}

/// State (load, save, write, fill): gathers and scatters of the
/// paged fields by block id.
LogicalResult BodyLowering::lowerState(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<LoadOp>([&](LoadOp load) {
        VTensorType rt = resultTypeOf(op);
        setResultOf(op, gather(values.lookup(load.getField()), blockIds,
                         computeExtent(rt, 1), computeExtent(rt, 2)));
        return success();
      })
      .Case<SaveOp>([&](SaveOp save) {
        Value field = save.getField();
        Value value = operandIn(save.getValue(), Format::Ragged);
        // vortex_torch saves only the scored blocks [0, n - eos) of rows
        // that need selection (other rows get no workload).
        fieldState[field] = scatterRows(
            fieldState.lookup(field), value, blockIds,
            [&](Emitter &x, Value s) {
              Segment seg = segmentOfRow(x, x.extract(rowOf, s));
              return x.andI(seg.active,
                            x.cmpI(arith::CmpIPredicate::slt, s, seg.hi));
            });
        return success();
      })
      .Case<WriteOp>([&](WriteOp write) {
        Value field = write.getField();
        Value value = operandIn(write.getValue(), Format::Ragged);
        fieldState[field] =
            scatterRows(fieldState.lookup(field), value, blockIds,
                        [&](Emitter &x, Value) {
                          return arith::ConstantOp::create(
                              x.b, x.loc, x.b.getBoolAttr(true));
                        });
        return success();
      })
      .Case<FillOp>([&](FillOp fill) {
        Value field = fill.getField();
        VTensorType ft = vt(field);
        double value = fill.getValue().convertToDouble();
        Value rows = generate(raggedExtent, ft.getD0(), ft.getD1(),
                              [&](Emitter &x, Value, Value, Value) {
                                return x.f32(value);
                              });
        fieldState[field] =
            scatterRows(fieldState.lookup(field), rows, blockIds,
                        [&](Emitter &x, Value) {
                          return arith::ConstantOp::create(
                              x.b, x.loc, x.b.getBoolAttr(true));
                        });
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered to linalg");
      });
}

/// Selection (topk, approx_topk, trtllm_topk, union): the sparse
/// outputs.
LogicalResult BodyLowering::lowerSelection(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<TopKOp, ApproxTopKOp>([&](auto sel) {
        // approx_topk is exact here: recall 1 >= 1 - tolerate_ratio.
        std::tie(sparseIndices, sparseIndptr) = selectRows(
            operandIn(sel.getScore(), Format::Ragged), sparseIndices,
            sparseIndptr, /*packed=*/true, /*fixedBudget=*/-1);
        return success();
      })
      .Case<TrtllmTopKOp>([&](TrtllmTopKOp sel) {
        auto i32Vec = [&](Value lead) {
          return tensor::EmptyOp::create(
              b, loc, ArrayRef<int64_t>{ShapedType::kDynamic},
              b.getI32Type(), ValueRange{lead});
        };
        auto [table, seqlens] = selectRows(
            operandIn(sel.getScore(), Format::Ragged), i32Vec(raggedExtent),
            i32Vec(numRows), /*packed=*/false, sel.getK());
        values[sel.getBlockTable()] = table;
        values[sel.getSeqlens()] = seqlens;
        return success();
      })
      .Case<UnionOp>([&](UnionOp u) { return lowerUnion(u); })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered to linalg");
      });
}

/// A vortex.kernel: its body, op by op.
LogicalResult BodyLowering::lowerKernel(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<KernelOp>([&](KernelOp kernel) {
        for (Operation &inner : kernel.getBody().front()) {
          if (auto yield = dyn_cast<YieldOp>(inner)) {
            for (auto [result, value] :
                 llvm::zip(kernel.getResults(), yield.getValues()))
              values[result] = values.lookup(value);
            continue;
          }
          if (failed(lower(&inner)))
            return failure();
        }
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered to linalg");
      });
}

/// Per row: keep every block if the row fits its budget, else the first
/// bos, the best-scored blocks of [bos, n - eos) in descending score order
/// (ties to the lower position), and the last eos.
std::pair<Value, Value> BodyLowering::selectRows(Value score, Value dest,
                                                 Value counts, bool packed,
                                                 int64_t fixedBudget) {
  int64_t bos = config.getReservedBos(), eos = config.getReservedEos();
  if (packed)
    counts = tensor::InsertOp::create(b, loc, e.i32(0), counts,
                                      ValueRange{e.idx(0)});
  auto copyRange = [&](Emitter &x, Value d, Value from, Value to, Value at) {
    return x
        .forLoop(from, to, {d},
                 [&](Emitter &y, Value t, ValueRange acc) {
                   Value id = y.extract(blockIds, t);
                   Value pos = y.add(at, y.sub(t, from));
                   return SmallVector<Value>{tensor::InsertOp::create(
                       y.b, y.loc, id, acc[0], ValueRange{pos})};
                 })
        .getResult(0);
  };
  auto scoreAt = [&](Emitter &x, Value p) {
    Value v = x.extract(score, {p, x.idx(0), x.idx(0)});
    // NaN never wins: treat it as -inf.
    Value isNan = x.cmpF(arith::CmpFPredicate::UNO, v, v);
    return x.select(isNan, x.f32(-std::numeric_limits<double>::infinity()),
                    v);
  };
  auto loop = e.forLoop(
      e.idx(0), numRows, {counts, dest, e.idx(0)},
      [&](Emitter &x, Value r, ValueRange acc) {
        auto [start, end] = rowBounds(x, r);
        Value n = x.sub(end, start);
        Value bud = fixedBudget < 0 ? budget(x, n)
                                    : x.idx(bos + fixedBudget + eos);
        Value count = x.minI(n, bud);
        Value offset = packed ? acc[2] : start;
        Value nextOffset = x.add(acc[2], count);
        Value newCounts =
            packed ? tensor::InsertOp::create(x.b, x.loc, x.toI32(nextOffset),
                                              acc[0],
                                              ValueRange{x.add(r, x.idx(1))})
                         .getResult()
                   : tensor::InsertOp::create(x.b, x.loc, x.toI32(count),
                                              acc[0], ValueRange{r})
                         .getResult();
        Value rowDest = acc[1];
        if (!packed) {
          // Unselected slots of the row's table hold -1.
          rowDest = x.forLoop(x.add(start, count), end, {rowDest},
                              [&](Emitter &y, Value t, ValueRange a) {
                                return SmallVector<Value>{
                                    tensor::InsertOp::create(
                                        y.b, y.loc, y.i32(-1), a[0],
                                        ValueRange{t})};
                              })
                        .getResult(0);
        }
        Value needs = x.cmpI(arith::CmpIPredicate::sgt, n, bud);
        Value indices = x.ifElse(
            needs,
            [&](Emitter &y) {
              Value d = copyRange(y, rowDest, start,
                                  y.add(start, y.idx(bos)), offset);
              d = copyRange(y, d, y.sub(end, y.idx(eos)), end,
                            y.sub(y.add(offset, bud), y.idx(eos)));
              Value k = y.sub(bud, y.idx(bos + eos));
              Value lo = y.add(start, y.idx(bos));
              Value hi = y.sub(end, y.idx(eos));
              Value inf = y.f32(std::numeric_limits<double>::infinity());
              return y
                  .forLoop(
                      y.idx(0), k, {d, inf, y.idx(-1)},
                      [&](Emitter &z, Value jth, ValueRange st) {
                        Value prevScore = st[1], prevPos = st[2];
                        // The best candidate strictly after the previous
                        // pick in (score desc, position asc) order.
                        auto best = z.forLoop(
                            lo, hi,
                            {z.f32(-std::numeric_limits<double>::infinity()),
                             z.idx(-1)},
                            [&](Emitter &w, Value p, ValueRange cur) {
                              Value sc = scoreAt(w, p);
                              Value after = w.orI(
                                  w.cmpF(arith::CmpFPredicate::OLT, sc,
                                         prevScore),
                                  w.andI(w.cmpF(arith::CmpFPredicate::OEQ, sc,
                                                prevScore),
                                         w.cmpI(arith::CmpIPredicate::sgt, p,
                                                prevPos)));
                              Value better = w.orI(
                                  w.cmpI(arith::CmpIPredicate::slt, cur[1],
                                         w.idx(0)),
                                  w.cmpF(arith::CmpFPredicate::OGT, sc,
                                         cur[0]));
                              Value take = w.andI(after, better);
                              return SmallVector<Value>{
                                  w.select(take, sc, cur[0]),
                                  w.select(take, p, cur[1])};
                            });
                        Value bestScore = best.getResult(0);
                        Value bestPos = best.getResult(1);
                        Value id = z.extract(blockIds, bestPos);
                        Value at = z.add(offset, z.add(z.idx(bos), jth));
                        Value out = tensor::InsertOp::create(
                            z.b, z.loc, id, st[0], ValueRange{at});
                        return SmallVector<Value>{out, bestScore, bestPos};
                      })
                  .getResult(0);
            },
            [&](Emitter &y) {
              return copyRange(y, rowDest, start, end, offset);
            });
        return SmallVector<Value>{newCounts, indices, nextOffset};
      });
  return {loop.getResult(1), loop.getResult(0)};
}

/// Per row: the deduplicated union of two selections (first the left one's
/// blocks, then the right one's new blocks), with the row's true last block
/// pinned at the tail. Writes the sparse CSR.
LogicalResult BodyLowering::lowerUnion(UnionOp op) {
  Value tables[2] = {values.lookup(op.getLhsTable()),
                     values.lookup(op.getRhsTable())};
  Value lens[2] = {values.lookup(op.getLhsSeqlens()),
                   values.lookup(op.getRhsSeqlens())};
  Value indptr0 = tensor::InsertOp::create(b, loc, e.i32(0), sparseIndptr,
                                           ValueRange{e.idx(0)});
  auto loop = e.forLoop(
      e.idx(0), numRows, {indptr0, sparseIndices, e.idx(0)},
      [&](Emitter &x, Value r, ValueRange acc) {
        auto [start, end] = rowBounds(x, r);
        Value hasBlocks = x.cmpI(arith::CmpIPredicate::sgt, end, start);
        Value last = x.ifElse(
            hasBlocks,
            [&](Emitter &y) {
              return y.extract(blockIds, y.sub(end, y.idx(1)));
            },
            [&](Emitter &y) { return y.i32(-1); });
        Value dest = acc[1], offset = acc[2], size = x.idx(0);
        for (int side = 0; side < 2; ++side) {
          Value len = x.toIndex(x.extract(lens[side], r));
          auto appended = x.forLoop(
              start, x.add(start, len), {dest, size},
              [&](Emitter &y, Value t, ValueRange st) {
                Value id = y.extract(tables[side], t);
                // Skip -1 padding, the pinned last block and duplicates.
                Value seen = y.forLoop(
                                  offset, y.add(offset, st[1]),
                                  {y.cmpI(arith::CmpIPredicate::eq, id,
                                          last)},
                                  [&](Emitter &w, Value q, ValueRange f) {
                                    Value same = w.cmpI(
                                        arith::CmpIPredicate::eq,
                                        w.extract(st[0], q), id);
                                    return SmallVector<Value>{
                                        w.orI(f[0], same)};
                                  })
                                 .getResult(0);
                Value skip = y.orI(
                    seen, y.cmpI(arith::CmpIPredicate::slt, id, y.i32(0)));
                Value pos = y.add(offset, st[1]);
                // scf.if (not a select) keeps the tensor update in place.
                Value updated = y.ifElse(
                    skip, [&](Emitter &) { return st[0]; },
                    [&](Emitter &w) {
                      return Value(tensor::InsertOp::create(
                          w.b, w.loc, id, st[0], ValueRange{pos}));
                    });
                return SmallVector<Value>{
                    updated, y.select(skip, st[1], y.add(st[1], y.idx(1)))};
              });
          dest = appended.getResult(0);
          size = appended.getResult(1);
        }
        Value tail = x.add(offset, size);
        dest = x.ifElse(
            hasBlocks,
            [&](Emitter &y) {
              return Value(tensor::InsertOp::create(y.b, y.loc, last, dest,
                                                    ValueRange{tail}));
            },
            [&](Emitter &) { return dest; });
        size = x.select(hasBlocks, x.add(size, x.idx(1)), size);
        Value next = x.add(offset, size);
        Value ptr = tensor::InsertOp::create(x.b, x.loc, x.toI32(next), acc[0],
                                             ValueRange{x.add(r, x.idx(1))});
        return SmallVector<Value>{ptr, dest, next};
      });
  sparseIndptr = loop.getResult(0);
  sparseIndices = loop.getResult(1);
  return success();
}

//===----------------------------------------------------------------------===//
// Flow -> functions
//===----------------------------------------------------------------------===//

static MemRefType memrefOf(VTensorType t) {
  Type elt = isa<FloatType>(t.getElementType())
                 ? Float32Type::get(t.getContext())
                 : t.getElementType();
  return MemRefType::get(t.getShape(), elt);
}

static Value toTensor(OpBuilder &b, Location loc, Value memref,
                      bool writable) {
  auto type = cast<MemRefType>(memref.getType());
  auto tensorType = RankedTensorType::get(type.getShape(),
                                          type.getElementType());
  return bufferization::ToTensorOp::create(b, loc, tensorType, memref,
                                           /*restrict=*/true, writable);
}

static void writeBack(OpBuilder &b, Location loc, Value tensor,
                      Value memref) {
  bufferization::MaterializeInDestinationOp::create(
      b, loc, TypeRange{}, tensor, memref, /*restrict=*/true,
      /*writable=*/true);
}

/// Creates `@<flow><suffix>` with the given argument types and names and
/// returns its entry block.
static func::FuncOp createStepFunction(OpBuilder &b, FlowOp flow,
                                       StringRef suffix,
                                       ArrayRef<Type> argTypes,
                                       ArrayRef<std::string> argNames) {
  auto type = b.getFunctionType(argTypes, {});
  auto func = func::FuncOp::create(b, flow.getLoc(),
                                   (flow.getSymName() + suffix).str(), type);
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  for (auto [i, name] : llvm::enumerate(argNames))
    func.setArgAttr(i, "vortex.name", b.getStringAttr(name));
  func.addEntryBlock();
  return func;
}

static LogicalResult lowerIndexer(OpBuilder &moduleBuilder, FlowOp flow,
                                  const abi::FlowABI &abi) {
  Location loc = flow.getLoc();
  Block &body = flow.getIndexerBody();
  // The ABI's order: q, k, v, the fields and the parameters, then the dense
  // and sparse CSR (o is replaced by the sparse CSR).
  SmallVector<Type> argTypes;
  ArrayRef<std::string> names = abi.args(abi::Step::Indexer);
  size_t numCache = flow.getCacheTensorNames().size();
  size_t numParams = flow.getParamNames().size();
  argTypes.push_back(memrefOf(cast<VTensorType>(body.getArgument(0).getType())));
  for (size_t i = 0; i < numCache + numParams; ++i)
    argTypes.push_back(
        memrefOf(cast<VTensorType>(body.getArgument(2 + i).getType())));
  while (argTypes.size() < names.size())
    argTypes.push_back(MemRefType::get({ShapedType::kDynamic},
                                       abi.elementType(names[argTypes.size()])));
  func::FuncOp func =
      createStepFunction(moduleBuilder, flow, "_indexer", argTypes, names);
  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Emitter e{b, loc};
  ValueRange args = func.getArguments();
  size_t csr = 1 + numCache + numParams;

  BodyLowering lowering(b, loc, flow.getConfig());
  lowering.indptr = toTensor(b, loc, args[csr], false);
  lowering.blockIds = toTensor(b, loc, args[csr + 1], false);
  lowering.sparseIndptr = toTensor(b, loc, args[csr + 2], true);
  lowering.sparseIndices = toTensor(b, loc, args[csr + 3], true);
  lowering.raggedExtent = e.dim(lowering.blockIds, 0);
  lowering.numRows = e.sub(e.dim(lowering.indptr, 0), e.idx(1));

  // rowOf[s] = the CSR row owning ragged position s.
  Value rowOfInit = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{ShapedType::kDynamic}, b.getIndexType(),
      ValueRange{lowering.raggedExtent});
  lowering.rowOf =
      e.forLoop(e.idx(0), lowering.numRows, {rowOfInit},
                [&](Emitter &x, Value r, ValueRange acc) {
                  auto [start, end] = lowering.rowBounds(x, r);
                  return SmallVector<Value>{
                      x.forLoop(start, end, {acc[0]},
                                [&](Emitter &y, Value s, ValueRange inner) {
                                  return SmallVector<Value>{
                                      tensor::InsertOp::create(
                                          y.b, y.loc, r, inner[0],
                                          ValueRange{s})};
                                })
                          .getResult(0)};
                })
          .getResult(0);

  lowering.values[body.getArgument(0)] = toTensor(b, loc, args[0], false);
  SmallVector<Value> fieldArgs;
  for (size_t i = 0; i < numCache; ++i) {
    Value field = body.getArgument(2 + i);
    Value t = toTensor(b, loc, args[1 + i], true);
    lowering.values[field] = t;
    lowering.fieldState[field] = t;
  }
  // Parameters: read-only memref<1 x r x c>, read at index 0.
  for (size_t i = 0; i < numParams; ++i)
    lowering.values[body.getArgument(2 + numCache + i)] =
        toTensor(b, loc, args[1 + numCache + i], false);
  for (Operation &op : body)
    if (failed(lowering.lower(&op)))
      return failure();
  for (size_t i = 0; i < numCache; ++i) {
    Value field = body.getArgument(2 + i);
    if (lowering.fieldState[field] != lowering.values[field])
      writeBack(b, loc, lowering.fieldState[field], args[1 + i]);
  }
  writeBack(b, loc, lowering.sparseIndptr, args[csr + 2]);
  writeBack(b, loc, lowering.sparseIndices, args[csr + 3]);
  func::ReturnOp::create(b, loc);
  return success();
}

static LogicalResult lowerCache(OpBuilder &moduleBuilder, FlowOp flow,
                                const abi::FlowABI &abi) {
  Location loc = flow.getLoc();
  Block &body = flow.getCacheBody();
  // The ABI's order: k, v, the fields and the parameters, then the block
  // ids.
  SmallVector<Type> argTypes;
  ArrayRef<std::string> names = abi.args(abi::Step::Cache);
  for (BlockArgument arg : body.getArguments()) {
    auto t = cast<VTensorType>(arg.getType());
    argTypes.push_back(memrefOf(t.isSlotted() ? t.withFormat(Format::Paged)
                                              : t));
  }
  argTypes.push_back(MemRefType::get({ShapedType::kDynamic},
                                     abi.elementType(abi::kBlockIds)));
  func::FuncOp func =
      createStepFunction(moduleBuilder, flow, "_cache", argTypes, names);
  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  Emitter e{b, loc};
  ValueRange args = func.getArguments();
  size_t numArgs = body.getNumArguments();
  size_t numCache = flow.getCacheTensorNames().size();

  BodyLowering lowering(b, loc, flow.getConfig());
  lowering.blockIds = toTensor(b, loc, args[numArgs], false);
  lowering.raggedExtent = e.dim(lowering.blockIds, 0);
  for (size_t i = 0; i < numArgs; ++i) {
    // The fields are writable; k, v and the parameters are read-only.
    Value t = toTensor(b, loc, args[i], i >= 2 && i < numCache);
    lowering.values[body.getArgument(i)] = t;
    lowering.fieldState[body.getArgument(i)] = t;
  }
  for (Operation &op : body)
    if (failed(lowering.lower(&op)))
      return failure();
  for (size_t i = 2; i < numCache; ++i) {
    Value field = body.getArgument(i);
    if (lowering.fieldState[field] != lowering.values[field])
      writeBack(b, loc, lowering.fieldState[field], args[i]);
  }
  func::ReturnOp::create(b, loc);
  return success();
}

namespace {
struct ConvertVortexToLinalgPass
    : public vortex::impl::ConvertVortexToLinalgBase<
          ConvertVortexToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<FlowOp> flows(module.getOps<FlowOp>());
    for (FlowOp flow : flows) {
      OpBuilder b(flow);
      abi::FlowABI abi = abi::FlowABI::get(flow, abi::Storage::F32);
      if (failed(lowerIndexer(b, flow, abi)) || failed(lowerCache(b, flow, abi)))
        return signalPassFailure();
      // The manifest describes one flow: a module of several has none.
      if (flows.size() == 1) {
        std::string prefix = "_mlir_ciface_" + abi.flow;
        abi.addHostStep(abi::Step::Indexer, prefix + "_indexer");
        abi.addHostStep(abi::Step::Cache, prefix + "_cache");
        module->setAttr(abi::kManifestAttrName, abi.toManifest(b, "cpu"));
      }
      flow.erase();
    }
    // Vortex values only have a meaning inside a flow (their formats are
    // addressed through the flow's CSR): reject stray ops.
    WalkResult stray = module.walk([](Operation *op) {
      if (!isa<VortexDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitOpError("outside a vortex.flow cannot be lowered: its formats "
                      "are addressed through a flow's block lists");
      return WalkResult::interrupt();
    });
    if (stray.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
