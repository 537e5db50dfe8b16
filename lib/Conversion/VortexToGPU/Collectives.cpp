//===- Collectives.cpp - Warp and CTA collectives of the GPU kernels ------===//
//
// See Collectives.h.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"

namespace mlir::vortex::gpugen {

/// Memrefs in shared memory, each aligned to 16 bytes: LLVM's load-store
/// vectorizer merges adjacent word accesses (a histogram's bins, the ctl
/// words) into 16-byte ones, which fault unless the buffer is aligned, and
/// ptxas aligns a buffer only as declared.
Value sharedBuffer(gpu::GPUFuncOp func, int64_t size, Type elementType) {
  MLIRContext *ctx = func.getContext();
  auto type = MemRefType::get(
      {size}, elementType, AffineMap(),
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  Value buffer = func.addWorkgroupAttribution(type, func.getLoc());
  func.setWorkgroupAttributionAttr(
      func.getNumWorkgroupAttributions() - 1,
      LLVM::LLVMDialect::getAlignAttrName(),
      IntegerAttr::get(IntegerType::get(ctx, 64), kSharedAlign));
  return buffer;
}

Value atomicAdd(Gen &g, Value memref, Value index, Value v) {
  return memref::AtomicRMWOp::create(g.b, g.loc, arith::AtomicRMWKind::addi,
                                     v, memref, ValueRange{index});
}

/// Inclusive sum over the lanes of a warp (every lane must call it).
Value warpInclusiveSum(Gen &g, Value lane, Value v) {
  for (int32_t offset = 1; offset < 32; offset *= 2) {
    auto up = gpu::ShuffleOp::create(g.b, g.loc, v, offset, 32,
                                     gpu::ShuffleMode::UP);
    Value valid = g.cmpI(arith::CmpIPredicate::sge, lane, g.idx(offset));
    v = g.add(v, g.select(valid, up.getShuffleResult(), g.i32(0)));
  }
  return v;
}

/// `a op b` for the i32 reductions of ctaAllReduce.
Value combine(Gen &g, gpu::AllReduceOperation op, Value a, Value b) {
  switch (op) {
  case gpu::AllReduceOperation::MAXUI:
    return arith::MaxUIOp::create(g.b, g.loc, a, b);
  case gpu::AllReduceOperation::MINUI:
    return arith::MinUIOp::create(g.b, g.loc, a, b);
  default:
    return g.add(a, b);
  }
}

/// XOR-butterfly shuffles over offsets `from`, from/2, ..., 1, each value
/// combined by its op: lanes within the aligned groups of 2 x `from` lanes
/// end up with the group's reduction.
void butterfly(Gen &g, MutableArrayRef<Value> values,
               ArrayRef<gpu::AllReduceOperation> ops, int32_t from) {
  for (int32_t offset = from; offset > 0; offset /= 2)
    for (auto [v, op] : llvm::zip(values, ops))
      v = combine(g, op, v,
                  gpu::ShuffleOp::create(g.b, g.loc, v, offset, 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult());
}

/// Reduces each i32 of `values` by its op (ADD, MAXUI or MINUI) over the
/// full CTA of `warps` warps; every thread gets the results. Butterfly
/// shuffles within each warp, the warps' partials through
/// `scratch[v * warps + warp]`, folded by every warp. Every thread
/// must call it; it holds two barriers, so `scratch` is free again on
/// return. (gpu.all_reduce also handles partial warps: code ptxas spends
/// time on and this kernel never runs.)
SmallVector<Value> ctaAllReduce(Gen &g, Value tid, ArrayRef<Value> values,
                                ArrayRef<gpu::AllReduceOperation> ops,
                                Value scratch, int64_t warps) {
  assert(warps <= 32 && llvm::isPowerOf2_64(warps) &&
         "the partials fit one warp");
  Value lane = g.remU(tid, g.idx(32)), warp = g.divU(tid, g.idx(32));
  SmallVector<Value> partial(values);
  butterfly(g, partial, ops, 16);
  g.ifThen(g.cmpI(arith::CmpIPredicate::eq, lane, g.idx(0)), [&](Gen &z) {
    for (auto [i, v] : llvm::enumerate(partial))
      z.store(v, scratch, z.add(z.idx(i * warps), warp));
  });
  gpu::BarrierOp::create(g.b, g.loc);
  // Each warp folds the partials: lane l reads partial l % warps, then
  // butterflies within groups of `warps` lanes.
  Value slot = g.remU(lane, g.idx(warps));
  SmallVector<Value> result;
  for (auto [i, op] : llvm::enumerate(ops))
    result.push_back(
        g.load(scratch, g.add(g.idx(i * warps), slot)));
  butterfly(g, result, ops, static_cast<int32_t>(warps / 2));
  gpu::BarrierOp::create(g.b, g.loc);
  return result;
}

/// The rank of this thread's `flag` among the set flags of the CTA, in
/// thread order (an exclusive scan: warp scans, then the warp totals through
/// `warpSums[0, warps)` in shared memory), and their total. Every
/// thread must call it; it holds two barriers, so `warpSums` is free again
/// on return.
std::pair<Value, Value> ctaRank(Gen &g, Value tid, Value flag,
                                Value warpSums, int64_t warps) {
  Value lane = g.remU(tid, g.idx(32)), warp = g.divU(tid, g.idx(32));
  Value one = g.select(flag, g.i32(1), g.i32(0));
  Value incl = warpInclusiveSum(g, lane, one);
  g.ifThen(g.cmpI(arith::CmpIPredicate::eq, lane, g.idx(31)),
           [&](Gen &z) { z.store(incl, warpSums, warp); });
  gpu::BarrierOp::create(g.b, g.loc);
  Value before = g.i32(0), total = g.i32(0);
  for (int64_t w = 0; w < warps; ++w) {
    Value v = g.load(warpSums, g.idx(w));
    total = g.add(total, v);
    before = g.add(before, g.select(g.lt(g.idx(w), warp), v, g.i32(0)));
  }
  gpu::BarrierOp::create(g.b, g.loc);
  return {g.sub(g.add(before, incl), one), total};
}

Value ctaReduce(Gen &g, Value v, gpu::AllReduceOperation op) {
  return gpu::AllReduceOp::create(
      g.b, g.loc, v, gpu::AllReduceOperationAttr::get(g.b.getContext(), op),
      /*uniform=*/true);
}

/// The sum over the rows before `r` of `countOf(q)` (every thread calls it:
/// a CTA reduction): row r's offset in the sparse list.
Value offsetOfRow(Gen &g, Value r, Value tid, Value scratch, int64_t threads,
                  function_ref<Value(Gen &, Value)> countOf) {
  Value partial =
      strided(g, g.idx(0), r, tid, threads, {g.i32(0)},
              [&](Gen &x, Value q, ValueRange acc) -> SmallVector<Value> {
                return {x.add(acc[0], x.toI32(countOf(x, q)))};
              })
          .getResult(0);
  return g.toIndex(ctaAllReduce(g, tid, {partial},
                                {gpu::AllReduceOperation::ADD}, scratch,
                                threads / 32)[0]);
}

} // namespace mlir::vortex::gpugen
