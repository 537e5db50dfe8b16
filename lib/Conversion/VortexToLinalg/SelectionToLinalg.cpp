//===- SelectionToLinalg.cpp - Block selection to linalg ------------------===//
//
// topk and approx_topk write the sparse CSR; trtllm_topk returns a block
// table and per-row counts, which union merges into the sparse CSR. Each is
// a per-row scf loop over the dense CSR (the selection order is in
// docs/design.md); the sparse outputs are step state, written back once.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilder.h"
#include "Vortex/Conversion/VortexToLinalg/VortexToLinalg.h"
#include "Vortex/Dialect/FlowABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::linalg_lowering;

/// Per row: keep every block if the row fits its budget, else the first
/// bos, the best-scored blocks of [bos, n - eos) in descending score order
/// (ties to the lower position), and the last eos.
static std::pair<Value, Value> selectRows(LinalgBuilder &lb, Value score,
                                          Value dest, Value counts,
                                          bool packed, int64_t fixedBudget) {
  OpBuilder &b = lb.b;
  Location loc = lb.loc;
  Emitter &e = lb.e;
  Value blockIds = lb.domain->blockIds, numRows = lb.domain->numRows;
  int64_t bos = lb.config().getReservedBos(),
          eos = lb.config().getReservedEos();
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
        // Named values, not a structured binding: the lambdas below
        // capture them (a C++20 extension for bindings).
        Value start, end;
        std::tie(start, end) = lb.rowBounds(x, r);
        Value n = x.sub(end, start);
        Value bud = fixedBudget < 0 ? lb.budget(x, n)
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
static std::pair<Value, Value> unionRows(LinalgBuilder &lb, Value tables[2],
                                         Value lens[2], Value sparseIndptr,
                                         Value sparseIndices) {
  OpBuilder &b = lb.b;
  Location loc = lb.loc;
  Emitter &e = lb.e;
  Value blockIds = lb.domain->blockIds, numRows = lb.domain->numRows;
  Value indptr0 = tensor::InsertOp::create(b, loc, e.i32(0), sparseIndptr,
                                           ValueRange{e.idx(0)});
  auto loop = e.forLoop(
      e.idx(0), numRows, {indptr0, sparseIndices, e.idx(0)},
      [&](Emitter &x, Value r, ValueRange acc) {
        // Named values, not a structured binding: the lambdas below
        // capture them (a C++20 extension for bindings).
        Value start, end;
        std::tie(start, end) = lb.rowBounds(x, r);
        Value hasBlocks = x.cmpI(arith::CmpIPredicate::sgt, end, start);
        Value last = x.ifElse(
            hasBlocks,
            [&](Emitter &y) {
              return y.extract(blockIds, y.sub(end, y.idx(1)));
            },
            [&](Emitter &y) { return y.i32(-1); });
        Value dest = acc[1], offset = acc[2], size = x.idx(0);
        for (int side = 0; side < 2; ++side) {
          Value len = x.toIndex(x.extract(lens[side], {r, x.idx(0), x.idx(0)}));
          auto appended = x.forLoop(
              start, x.add(start, len), {dest, size},
              [&](Emitter &y, Value t, ValueRange st) {
                Value id = y.extract(tables[side], {t, y.idx(0), y.idx(0)});
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
  return {loop.getResult(0), loop.getResult(1)};
}

namespace {

/// The sparse CSR outputs of the step function holding `op`.
struct SparseOutputs {
  BlockArgument indptr, indices;
  static std::optional<SparseOutputs> find(Operation *op) {
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func)
      return std::nullopt;
    SparseOutputs out{stepArgument(func, abi::kSparseIndptr),
                      stepArgument(func, abi::kSparseIndices)};
    if (!out.indptr || !out.indices)
      return std::nullopt;
    return out;
  }
};

/// The common part of the selections that write the sparse CSR.
template <typename OpTy>
struct SparseSelectionToLinalg : OpToLinalgPattern<OpTy, /*NeedsFlow=*/true> {
  using OpToLinalgPattern<OpTy, true>::OpToLinalgPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  /// The new (indices, indptr) from the current ones.
  virtual std::pair<Value, Value> select(OpTy op, OpAdaptor adaptor,
                                         LinalgBuilder &lb, Value indices,
                                         Value indptr) const = 0;

  LogicalResult lower(OpTy op, OpAdaptor adaptor, LinalgBuilder &lb,
                      ConversionPatternRewriter &rewriter) const override {
    std::optional<SparseOutputs> out = SparseOutputs::find(op);
    if (!out || !lb.domain->indptr)
      return rewriter.notifyMatchFailure(op, "not in an indexer step");
    auto [indices, indptr] = select(op, adaptor, lb, currentState(out->indices),
                                    currentState(out->indptr));
    setState(rewriter, out->indices, indices);
    setState(rewriter, out->indptr, indptr);
    rewriter.eraseOp(op);
    return success();
  }
};

template <typename OpTy>
struct TopKToLinalg : SparseSelectionToLinalg<OpTy> {
  using SparseSelectionToLinalg<OpTy>::SparseSelectionToLinalg;
  using OpAdaptor = typename OpTy::Adaptor;
  // approx_topk is exact here: recall 1 >= 1 - tolerate_ratio.
  std::pair<Value, Value> select(OpTy op, OpAdaptor adaptor,
                                 LinalgBuilder &lb, Value indices,
                                 Value indptr) const override {
    Value score =
        lb.operandIn(op.getScore(), adaptor.getScore(), Format::Ragged);
    return selectRows(lb, score, indices, indptr, /*packed=*/true,
                      /*fixedBudget=*/-1);
  }
};

struct UnionToLinalg : SparseSelectionToLinalg<UnionOp> {
  using SparseSelectionToLinalg::SparseSelectionToLinalg;
  std::pair<Value, Value> select(UnionOp, OpAdaptor adaptor, LinalgBuilder &lb,
                                 Value indices, Value indptr) const override {
    Value tables[2] = {adaptor.getLhsTable(), adaptor.getRhsTable()};
    Value lens[2] = {adaptor.getLhsSeqlens(), adaptor.getRhsSeqlens()};
    auto [newIndptr, newIndices] = unionRows(lb, tables, lens, indptr, indices);
    return {newIndices, newIndptr};
  }
};

/// The block table and counts as `tensor<? x 1 x 1 x i32>`.
struct TrtllmTopKToLinalg
    : OpToLinalgPattern<TrtllmTopKOp, /*NeedsFlow=*/true> {
  using OpToLinalgPattern::OpToLinalgPattern;
  LogicalResult lower(TrtllmTopKOp op, OpAdaptor adaptor, LinalgBuilder &lb,
                      ConversionPatternRewriter &rewriter) const override {
    if (!lb.domain->indptr)
      return rewriter.notifyMatchFailure(op, "not in an indexer step");
    Location loc = op.getLoc();
    auto i32Vec = [&](Value lead) {
      return tensor::EmptyOp::create(
          rewriter, loc, ArrayRef<int64_t>{ShapedType::kDynamic},
          rewriter.getI32Type(), ValueRange{lead});
    };
    auto [table, seqlens] = selectRows(
        lb, lb.operandIn(op.getScore(), adaptor.getScore(), Format::Ragged),
        i32Vec(lb.domain->raggedExtent), i32Vec(lb.domain->numRows),
        /*packed=*/false, op.getK());
    SmallVector<Value> flat = {table, seqlens}, results;
    for (auto [v, result] : llvm::zip(flat, op->getResults())) {
      auto type = cast<RankedTensorType>(
          getTypeConverter()->convertType(result.getType()));
      results.push_back(tensor::ExpandShapeOp::create(
          rewriter, loc, type, v, ArrayRef<ReassociationIndices>{{0, 1, 2}}));
    }
    replaceOpWithConverted(rewriter, *this->getTypeConverter(), op, results);
    return success();
  }
};

} // namespace

void mlir::vortex::populateVortexSelectionToLinalgPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<TopKToLinalg<TopKOp>, TopKToLinalg<ApproxTopKOp>,
               UnionToLinalg, TrtllmTopKToLinalg>(converter,
                                                  patterns.getContext());
}
