//===- AttentionToLinalg.cpp - vortex.attend to linalg (exact, f32) -------===//
//
// The CPU reference path of decode attention: one scf.for over the rows; in
// a row, the CSR's blocks of k and v are gathered, and a two-pass softmax is
// a handful of linalg.generics over [heads, entries, block_size]. Every
// token a row does not see (past kv_last_len in its last entry, or past a
// query token's causal limit) is removed by a select, never by a multiply,
// so NaN in an unwritten slot of the pool cannot reach o or lse.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

namespace {

using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Value toF32(Emitter &x, Value v) {
  auto t = cast<FloatType>(v.getType());
  if (t.isF32())
    return v;
  if (t.getWidth() < 32)
    return arith::ExtFOp::create(x.b, x.loc, x.b.getF32Type(), v);
  return arith::TruncFOp::create(x.b, x.loc, x.b.getF32Type(), v);
}

Value fromF32(Emitter &x, Value v, Type type) {
  auto t = cast<FloatType>(type);
  if (t.isF32())
    return v;
  if (t.getWidth() < 32)
    return arith::TruncFOp::create(x.b, x.loc, type, v);
  return arith::ExtFOp::create(x.b, x.loc, type, v);
}

/// One row of the attention: its bounds and the shapes of the op.
struct RowAttention {
  Emitter &e;
  AttendOp op;
  AttendOp::Adaptor in;
  int64_t heads, dim, block, group, tokens;
  Value start, entries, length;

  Value empty(ArrayRef<int64_t> shape, ValueRange dynamic) {
    return tensor::EmptyOp::create(e.b, e.loc, shape, e.b.getF32Type(),
                                   dynamic);
  }
  Value filled(ArrayRef<int64_t> shape, ValueRange dynamic, double value) {
    return linalg::FillOp::create(e.b, e.loc, ValueRange{e.f32(value)},
                                  ValueRange{empty(shape, dynamic)})
        .getResult(0);
  }

  /// A generic over `loops` loops whose last map is the output's.
  Value generic(int64_t loops, ValueRange inputs, Value init,
                ArrayRef<SmallVector<AffineExpr>> exprs,
                ArrayRef<IteratorType> iterators,
                function_ref<Value(Emitter &, ValueRange)> body) {
    SmallVector<AffineMap> maps;
    for (ArrayRef<AffineExpr> m : exprs)
      maps.push_back(AffineMap::get(loops, 0, m, e.b.getContext()));
    return linalg::GenericOp::create(
               e.b, e.loc, TypeRange{init.getType()}, inputs, ValueRange{init},
               maps, iterators,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 Emitter x{nb, l};
                 linalg::YieldOp::create(nb, l, body(x, args));
               })
        .getResult(0);
  }

  /// Whether head h sees token j of entry i: its position i * block + j is
  /// below the row's length less the query token's causal offset
  /// (T - 1 - h / G tokens are after query token h / G).
  Value visible(Emitter &x, Value h, Value i, Value j) {
    Value pos = x.add(x.mul(i, x.idx(block)), j);
    Value after = x.sub(x.idx(tokens - 1), x.divU(h, x.idx(group)));
    return x.lt(pos, x.sub(length, after));
  }

  /// pool[kv_indices[start + i], j, d] as f32: the row's blocks, in order.
  /// A packed int4 pool is unpacked here, with `scale` (k's or v's).
  Value gatherPool(Value pool, Value scale, bool isV) {
    return generic(3, {}, empty({ShapedType::kDynamic, block, dim}, entries),
                   {{e.b.getAffineDimExpr(0), e.b.getAffineDimExpr(1),
                     e.b.getAffineDimExpr(2)}},
                   {kPar, kPar, kPar}, [&](Emitter &x, ValueRange) {
                     Value pos = x.add(start, x.index(0));
                     Value blk = x.toIndex(x.extract(in.getKvIndices(), pos));
                     if (scale)
                       return dequantInt4(x.b, x.loc, pool, scale, isV, blk,
                                          x.index(1), x.index(2));
                     return toF32(x, x.extract(pool, {blk, x.index(1),
                                                      x.index(2)}));
                   });
  }

  /// o[r] ([heads, dim] in q's type) and lse[r] ([heads], f32).
  std::pair<Value, Value> compute(Value r) {
    MLIRContext *ctx = e.b.getContext();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    Value scale = in.getSmScale();
    Value qRow = generic(2, {}, empty({heads, dim}, {}), {{d(0), d(1)}},
                         {kPar, kPar}, [&](Emitter &x, ValueRange) {
                           return toF32(x, x.extract(in.getQ(),
                                                     {r, x.index(0),
                                                      x.index(1)}));
                         });
    Value keys = gatherPool(in.getK(), in.getKScale(), false);
    Value values = gatherPool(in.getV(), in.getVScale(), true);
    SmallVector<int64_t> logitShape = {heads, ShapedType::kDynamic, block};
    // s[h, i, j] = <q[h], k[i, j]>, scaled where visible, -inf elsewhere.
    Value dots = generic(
        4, {qRow, keys}, filled(logitShape, entries, 0.0),
        {{d(0), d(3)}, {d(1), d(2), d(3)}, {d(0), d(1), d(2)}},
        {kPar, kPar, kPar, kRed}, [&](Emitter &x, ValueRange a) {
          return x.addF(a[2], x.mulF(a[0], a[1]));
        });
    Value logits = generic(
        3, {dots}, empty(logitShape, entries),
        {{d(0), d(1), d(2)}, {d(0), d(1), d(2)}}, {kPar, kPar, kPar},
        [&](Emitter &x, ValueRange a) {
          Value seen = visible(x, x.index(0), x.index(1), x.index(2));
          return x.select(seen, x.mulF(scale, a[0]), x.f32(kNegInf));
        });
    Value maxima = generic(
        3, {logits}, filled({heads}, {}, kNegInf),
        {{d(0), d(1), d(2)}, {d(0)}}, {kPar, kRed, kRed},
        [&](Emitter &x, ValueRange a) {
          return arith::MaximumFOp::create(x.b, x.loc, a[1], a[0]);
        });
    // p = exp(s - max) where visible, 0 elsewhere (by select).
    Value probs = generic(
        3, {logits, maxima}, empty(logitShape, entries),
        {{d(0), d(1), d(2)}, {d(0)}, {d(0), d(1), d(2)}}, {kPar, kPar, kPar},
        [&](Emitter &x, ValueRange a) {
          Value seen = visible(x, x.index(0), x.index(1), x.index(2));
          Value p = math::ExpOp::create(x.b, x.loc, x.subF(a[0], a[1]));
          return x.select(seen, p, x.f32(0.0));
        });
    Value sums = generic(3, {probs}, filled({heads}, {}, 0.0),
                         {{d(0), d(1), d(2)}, {d(0)}}, {kPar, kRed, kRed},
                         [&](Emitter &x, ValueRange a) {
                           return x.addF(a[1], a[0]);
                         });
    // acc[h, c] = sum p * v over visible tokens: a NaN v past the length
    // is never multiplied in.
    Value acc = generic(
        4, {probs, values}, filled({heads, dim}, {}, 0.0),
        {{d(0), d(2), d(3)}, {d(2), d(3), d(1)}, {d(0), d(1)}},
        {kPar, kPar, kRed, kRed}, [&](Emitter &x, ValueRange a) {
          Value seen = visible(x, x.index(0), x.index(2), x.index(3));
          return x.select(seen, x.addF(a[2], x.mulF(a[0], a[1])), a[2]);
        });
    Type oType = op.getO().getType().getElementType();
    Value oRow = generic(
        2, {acc, sums},
        tensor::EmptyOp::create(e.b, e.loc, ArrayRef<int64_t>{heads, dim},
                                oType),
        {{d(0), d(1)}, {d(0)}, {d(0), d(1)}}, {kPar, kPar},
        [&](Emitter &x, ValueRange a) {
          Value none = x.cmpF(arith::CmpFPredicate::OEQ, a[1], x.f32(0.0));
          return fromF32(x, x.select(none, x.f32(0.0), x.divF(a[0], a[1])),
                         oType);
        });
    Value lseRow = generic(
        1, {maxima, sums}, empty({heads}, {}), {{d(0)}, {d(0)}, {d(0)}},
        {kPar}, [&](Emitter &x, ValueRange a) {
          Value none = x.cmpF(arith::CmpFPredicate::OEQ, a[1], x.f32(0.0));
          Value lse = x.addF(a[0], math::LogOp::create(x.b, x.loc, a[1]));
          return x.select(none, x.f32(kNegInf), lse);
        });
    return {oRow, lseRow};
  }
};

Value insertRow(Emitter &e, Value row, Value into, Value r) {
  auto type = cast<RankedTensorType>(into.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), e.b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {e.b.getIndexAttr(1)};
  SmallVector<OpFoldResult> strides(type.getRank(), e.b.getIndexAttr(1));
  offsets[0] = r;
  for (int64_t dim : type.getShape().drop_front())
    sizes.push_back(e.b.getIndexAttr(dim));
  return tensor::InsertSliceOp::create(e.b, e.loc, row, into, offsets, sizes,
                                       strides);
}

struct AttendToLinalg : OpConversionPattern<AttendOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AttendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Value rows = e.dim(adaptor.getQ(), 0);
    auto init = [&](RankedTensorType t) -> Value {
      SmallVector<Value> dynamic;
      if (t.isDynamicDim(0))
        dynamic.push_back(rows);
      return tensor::EmptyOp::create(rewriter, e.loc, t, dynamic);
    };
    scf::ForOp loop = e.forLoop(
        e.idx(0), rows,
        {init(op.getO().getType()), init(op.getLse().getType())},
        [&](Emitter &x, Value r, ValueRange acc) {
          Value start = x.toIndex(x.extract(adaptor.getKvIndptr(), r));
          Value end = x.toIndex(
              x.extract(adaptor.getKvIndptr(), x.add(r, x.idx(1))));
          Value entries = x.sub(end, start);
          Value last = x.toIndex(x.extract(adaptor.getKvLastLen(), r));
          int64_t block = op.getBlockSize();
          // Tokens: block per entry but the last, which holds `last`.
          Value full = x.mul(x.sub(entries, x.idx(1)), x.idx(block));
          Value length = x.select(x.lt(x.idx(0), entries), x.add(full, last),
                                  x.idx(0));
          RowAttention row{x,
                           op,
                           adaptor,
                           op.getNumHeads(),
                           op.getHeadDim(),
                           block,
                           static_cast<int64_t>(op.getGroupSize()),
                           op.getQueryTokens(),
                           start,
                           entries,
                           length};
          auto [oRow, lseRow] = row.compute(r);
          return SmallVector<Value>{insertRow(x, oRow, acc[0], r),
                                    insertRow(x, lseRow, acc[1], r)};
        });
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};

} // namespace

void mlir::vortex::populateVortexAttentionToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AttendToLinalg>(converter, patterns.getContext());
}
