//===- UnionKernels.cpp - The trtllm union kernels -------------------------===//
//
// vortex.union of two vortex.trtllm_topk tables (TopKKernels.cpp writes
// them at each row's dense positions with a count per row): kernel 1 merges
// a row's entries, kernel 2 packs the rows into the sparse CSR.
//
//===----------------------------------------------------------------------===//

#include "SelectionCommon.h"
#include "Selection.h"
#include "Vortex/Conversion/Passes.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {
/// Threads of the union kernels' CTAs (one per row).
constexpr int64_t kRowThreads = 256;
constexpr int64_t kRowWarps = kRowThreads / 32;
} // namespace

//===----------------------------------------------------------------------===//
// Union
//===----------------------------------------------------------------------===//

namespace {

/// The two tables of a union row: entry `j` of their concatenation.
struct UnionRow {
  Value tables[2], lens[2], start;
  Value idAt(Gen &g, Value j) const {
    return g.ifElse(
        g.lt(j, lens[0]), g.b.getI32Type(),
        [&](Gen &x) -> SmallVector<Value> {
          return {x.load(tables[0], x.add(start, j))};
        },
        [&](Gen &x) -> SmallVector<Value> {
          return {x.load(tables[1], x.add(start, x.sub(j, lens[0])))};
        })[0];
  }
};

/// Kernel 1: per row, the tables' entries that are real (>= 0), not the
/// row's last block and not seen earlier in the concatenation, in order,
/// then the last block, into `merged` at the row's dense positions; the
/// count into `counts`.
void emitUnionRows(FlowContext &ctx, UnionOp op, StringRef name,
                   StringRef merged, StringRef counts) {
  MLIRContext *mctx = op.getContext();
  Location loc = op.getLoc();
  auto i32 = IntegerType::get(mctx, 32);
  SmallVector<Param> params = {
      {abi::kDenseIndptr.str(), true, i32},
      {abi::kDenseIndices.str(), true, i32},
      {abi::kRows.str(), false, {}},
      {ctx.bufferOf.lookup(op.getLhsTable()), true, i32},
      {ctx.bufferOf.lookup(op.getLhsSeqlens()), true, i32},
      {ctx.bufferOf.lookup(op.getRhsTable()), true, i32},
      {ctx.bufferOf.lookup(op.getRhsSeqlens()), true, i32},
      {merged.str(), true, i32},
      {counts.str(), true, i32},
      {ctx.statusBuffer(), true, i32}};
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, params, kRowThreads);
  Value ctl = sharedBuffer(func, kRowWarps, i32);
  Gen g{b, loc};
  Value indptr = func.getArgument(0), dense = func.getArgument(1);
  Value out = func.getArgument(7), outCounts = func.getArgument(8);
  Value status = func.getArgument(9);
  Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value limit = g.minU(g.extent(dense), g.extent(out));
  UnionRow U;
  for (int side = 0; side < 2; ++side) {
    U.tables[side] = func.getArgument(3 + 2 * side);
    limit = g.minU(limit, g.extent(U.tables[side]));
  }
  RowInfo row = rowInfo(g, ctx.config, indptr, r, limit);
  U.start = row.start;
  // A count the tables' kernel did not write (a row past its counts) is 0;
  // any count is clamped to the row.
  for (int side = 0; side < 2; ++side) {
    Value len = loadIndexOrZero(g, func.getArgument(4 + 2 * side), r);
    U.lens[side] = g.minI(g.maxI(len, g.idx(0)), row.n);
  }
  Value hasBlocks = g.cmpI(arith::CmpIPredicate::sgt, row.n, g.idx(0));
  Value last = g.ifElse(
      hasBlocks, i32,
      [&](Gen &x) -> SmallVector<Value> {
        return {x.load(dense, x.sub(row.end, x.idx(1)))};
      },
      [&](Gen &x) -> SmallVector<Value> { return {x.i32(-1)}; })[0];
  Value entries = g.add(U.lens[0], U.lens[1]);
  // Everything but the pinned last block fits in the row's n - 1 slots.
  Value room = g.maxI(g.sub(row.n, g.idx(1)), g.idx(0));
  Value rounds = g.ceilDiv(entries, g.idx(kRowThreads));
  Value kept =
      g.forLoop(
           g.idx(0), rounds, {g.i32(0)},
           [&](Gen &y, Value round, ValueRange acc) -> SmallVector<Value> {
             Value j = y.add(y.mul(round, y.idx(kRowThreads)), tid);
             SmallVector<Value> entry = y.ifElse(
                 y.lt(j, entries), {i32, y.b.getI1Type()},
                 [&](Gen &x) -> SmallVector<Value> {
                   Value id = U.idAt(x, j);
                   // Seen earlier in the concatenation?
                   Value seen =
                       x.forLoop(x.idx(0), j,
                                 {falseValue(x)},
                                 [&](Gen &z, Value i, ValueRange f)
                                     -> SmallVector<Value> {
                                   Value same = z.cmpI(arith::CmpIPredicate::eq,
                                                       U.idAt(z, i), id);
                                   return {z.orI(f[0], same)};
                                 })
                           .getResult(0);
                   Value keep = x.andI(
                       x.andI(x.cmpI(arith::CmpIPredicate::sge, id, x.i32(0)),
                              x.cmpI(arith::CmpIPredicate::ne, id, last)),
                       x.notI(seen));
                   return {id, keep};
                 },
                 [&](Gen &x) -> SmallVector<Value> {
                   return {x.i32(-1), falseValue(x)};
                 });
             auto [rank, total] = ctaRank(y, tid, entry[1], ctl, kRowWarps);
             Value at = y.toIndex(y.add(acc[0], rank));
             y.ifThen(y.andI(entry[1], y.lt(at, room)), [&](Gen &z) {
               z.store(entry[0], out, z.add(row.start, at));
             });
             return {y.add(acc[0], total)};
           })
          .getResult(0);
  Value used = g.minI(g.toIndex(kept), room);
  Value first = g.cmpI(arith::CmpIPredicate::eq, tid, g.idx(0));
  g.ifThen(first, [&](Gen &x) {
    x.ifThen(hasBlocks,
             [&](Gen &y) { y.store(last, out, y.add(row.start, used)); });
    x.ifThen(x.lt(r, x.extent(outCounts)), [&](Gen &y) {
      y.store(y.toI32(y.select(hasBlocks, y.add(used, y.idx(1)), used)),
              outCounts, r);
    });
    x.ifThen(x.notI(row.exact),
             [&](Gen &y) { recordBadIndptr(y, status, indptr, r); });
  });
  gpu::ReturnOp::create(b, loc);

  recordRowKernel(ctx, func, kRowThreads, params,
                  {abi::kDenseIndptr.str(), abi::kDenseIndices.str(),
                   params[3].name, params[4].name, params[5].name,
                   params[6].name},
                  {merged.str(), counts.str(), ctx.statusBuffer()});
}

/// Kernel 2: per row, its merged blocks after the counts of earlier rows in
/// the sparse CSR.
void emitUnionPack(FlowContext &ctx, UnionOp op, StringRef name,
                   StringRef merged, StringRef counts) {
  MLIRContext *mctx = op.getContext();
  Location loc = op.getLoc();
  auto i32 = IntegerType::get(mctx, 32);
  SmallVector<Param> params = {
      {abi::kDenseIndptr.str(), true, i32},
      {abi::kRows.str(), false, {}},
      {merged.str(), true, i32},
      {counts.str(), true, i32},
      {abi::kSparseIndptr.str(), true, i32},
      {abi::kSparseIndices.str(), true, i32},
      {ctx.statusBuffer(), true, i32}};
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, params, kRowThreads);
  Value scratch = sharedBuffer(func, kRowWarps, i32);
  Gen g{b, loc};
  Value indptr = func.getArgument(0), in = func.getArgument(2);
  Value inCounts = func.getArgument(3), sparsePtr = func.getArgument(4);
  Value sparse = func.getArgument(5), status = func.getArgument(6);
  Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value limit = g.extent(in);
  // Counts come from kernel 1; clamped again so no read leaves a row.
  auto countOf = [&](Gen &x, Value q) {
    RowInfo other = rowInfo(x, ctx.config, indptr, q, limit);
    Value c = loadIndexOrZero(x, inCounts, q);
    return std::make_pair(other, x.minI(x.maxI(c, x.idx(0)), other.n));
  };
  Value offset = offsetOfRow(g, r, tid, scratch, kRowThreads,
                             [&](Gen &x, Value q) {
    return countOf(x, q).second;
  });
  // Named values, not a structured binding: the lambdas below capture them.
  std::pair<RowInfo, Value> rowCount = countOf(g, r);
  RowInfo row = rowCount.first;
  Value count = rowCount.second;
  Value fits = g.cmpI(arith::CmpIPredicate::ule, g.add(offset, count),
                      g.extent(sparse));
  Value first = g.cmpI(arith::CmpIPredicate::eq, tid, g.idx(0));
  g.ifThen(first, [&](Gen &x) {
    storeSparseIndptr(x, sparsePtr, r, x.add(offset, count));
    x.ifThen(x.notI(fits),
             [&](Gen &y) { recordBadIndptr(y, status, indptr, r); });
  });
  g.ifThen(fits, [&](Gen &x) {
    strided(x, x.idx(0), count, tid, kRowThreads, {},
            [&](Gen &y, Value j, ValueRange) -> SmallVector<Value> {
              y.store(y.load(in, y.add(row.start, j)), sparse,
                      y.add(offset, j));
              return {};
            });
  });
  gpu::ReturnOp::create(b, loc);

  recordRowKernel(ctx, func, kRowThreads, params,
                  {abi::kDenseIndptr.str(), merged.str(), counts.str()},
                  {abi::kSparseIndptr.str(), abi::kSparseIndices.str(),
                   ctx.statusBuffer()});
}

} // namespace

LogicalResult mlir::vortex::gpugen::emitUnionKernels(FlowContext &ctx,
                                                     UnionOp op,
                                                     StringRef name) {
  for (Value v : {op.getLhsTable(), op.getLhsSeqlens(), op.getRhsTable(),
                  op.getRhsSeqlens()})
    if (ctx.bufferOf.lookup(v).empty())
      return op.emitOpError("reads a value that no buffer holds");
  auto i32 = IntegerType::get(op.getContext(), 32);
  std::string merged = ctx.allocScratchBuffer(abi::kTotal, 1, 1, i32);
  std::string counts = ctx.allocScratchBuffer(abi::kRows, 1, 1, i32);
  emitUnionRows(ctx, op, (name + "_rows").str(), merged, counts);
  emitUnionPack(ctx, op, (name + "_pack").str(), merged, counts);
  return success();
}
