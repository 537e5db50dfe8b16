//===- TopKKernels.cpp - The top-k and trtllm top-k kernels ---------------===//
//
// One CTA per dense CSR row (RowSelection.h selects the row's k best):
// vortex.topk writes the sparse CSR; vortex.trtllm_topk writes a block table
// at the row's dense positions and a per-row count, which the two union
// kernels (UnionKernels.cpp) merge into the sparse CSR. Each top-k op has a
// kernel per planned CTA shape, alternatives of one manifest `choice`.
//
//===----------------------------------------------------------------------===//

#include "RowSelection.h"
#include "Selection.h"
#include "Vortex/Conversion/Passes.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

/// The top-k's CTA shapes, in order of preference: the `topk-threads`
/// option alone if given; else 512 threads with 4 keys each, 256 with 8 and
/// 128 with 16. Fewer keys a thread make a row's selection shorter (on an
/// H100, 512 threads take 0.6 to 1 us off a step at B = 1 against 256,
/// which take 3 us off against 128), more threads fit fewer CTAs per SM
/// (1, 2 and 4 at 94, 114 and 128 registers): the runtime launches the
/// first whose rows fit on the chip in one wave, else the last
/// (docs/manifest.md, `choice`; docs/benchmarks.md, "Round 8").
SmallVector<SelectPlan> planSelections(const FlowContext &ctx) {
  if (ctx.options.topkThreads)
    return {SelectPlan{ctx.options.topkThreads, ctx.options.topkValueBins}};
  return llvm::map_to_vector(kTopKThreads,
                             [&](int64_t t) {
                               return SelectPlan{t, ctx.options.topkValueBins};
                             });
}

/// What every variant of one top-k op shares: the op, its buffers and the
/// kernel parameters.
struct TopKSignature {
  Operation *op;
  std::string scoreBuf, outPtr, outIdx;
  SmallVector<Param> params;
  /// The field the kernel stores the score into (ctx.deferredSaves), its
  /// parameter last; empty without one.
  std::string savedBuf;
};

/// A top-k CTA's shared buffers.
struct TopKShared {
  Value keys, hist, ctl, warpSums, ids;
};

/// The kernel arguments a row's top-k reads and writes, and the row count
/// (the i32 argument).
struct TopKArgs {
  RowKnobs knobs;
  Value indptr, dense, rows, score, outCounts, out, status;
  /// The saved field (TopKSignature::savedBuf) and saves_min_rows, else
  /// null.
  Value saved, savesMinRows;
};

TopKShared allocTopKShared(gpu::GPUFuncOp func, const SelectPlan &plan) {
  OpBuilder b(func.getContext());
  auto i32 = b.getI32Type();
  TopKShared sh;
  sh.keys = sharedBuffer(func, kSortCapacity, b.getI64Type());
  sh.hist = sharedBuffer(func, kRadixBins, i32);
  sh.ctl = sharedBuffer(func, kCtlWords, i32);
  // Two words per warp: the row's maximum and minimum keys reduce together.
  sh.warpSums = sharedBuffer(func, 2 * plan.warps(), i32);
  sh.ids = sharedBuffer(func, plan.rankSortSize(), i32);
  return sh;
}

/// The selection's fixed decisions, for `vortex.plan`.
SelectPlanAttr selectPlanAttr(OpBuilder &b, const SelectPlan &plan,
                              int64_t ctasPerSM, bool storesSaved) {
  return SelectPlanAttr::get(
      b.getContext(), plan.threads, plan.registerKeys(),
      llvm::Log2_64(kRadixBins), plan.rankSortSize(), kSortCapacity,
      plan.valueBins ? kCandidateCapacity : 0, ctasPerSM,
      b.getBoolAttr(storesSaved));
}

/// The score of every position of the row's range [start, hi) into the
/// saved field at its block id, as the score kernel would have stored it
/// (docs/gpu.md, "Saves in the top-k"); an id outside the field is skipped
/// (the score kernel recorded it). The first kHeldKeys positions load
/// together before any store, which LLVM cannot tell from the loads' buffers;
/// that brings in the lines the selection's keys then read. The rest go one
/// at a time. Only for a row that needs selection, so hi > start.
void storeSaved(Gen &g, const TopKArgs &a, const RowInfo &row, Value tid,
                int64_t threads) {
  Type type = cast<MemRefType>(a.saved.getType()).getElementType();
  Value size = g.extent(a.saved);
  Value last = g.sub(row.hi, g.idx(1));
  auto store = [&](Gen &x, Value in, Value score, Value id) {
    Value at = x.toIndex(id);
    x.ifThen(x.andI(in, x.cmpI(arith::CmpIPredicate::ult, at, size)),
             [&](Gen &y) { y.store(y.fromF32(score, type), a.saved, at); });
  };
  SmallVector<Value> in, scores, ids;
  for (int64_t e = 0; e < kHeldKeys / threads; ++e) {
    Value p = g.add(row.start, g.add(tid, g.idx(e * threads)));
    in.push_back(g.lt(p, row.hi));
    Value at = g.minU(p, last);
    scores.push_back(g.load(a.score, at));
    ids.push_back(g.load(a.dense, at));
  }
  for (auto [ok, score, id] : llvm::zip(in, scores, ids))
    store(g, ok, score, id);
  strided(g, g.add(row.start, g.idx(kHeldKeys)), row.hi, tid, threads, {},
          [&](Gen &x, Value p, ValueRange) -> SmallVector<Value> {
            store(x, trueValue(x), x.load(a.score, p), x.load(a.dense, p));
            return {};
          });
}

/// Row r's top-k by the CTA (every thread calls it; the barriers inside are
/// uniform over the CTA): the row's offset in the output, its reserved
/// blocks, the saved scores, the selection and the indptr guard.
void emitTopKRow(FlowContext &ctx, Gen &g, Operation *op,
                 const SelectPlan &plan, const TopKShared &sh,
                 const TopKArgs &a, Value r, Value tid) {
  auto trtllm = dyn_cast<TrtllmTopKOp>(op);
  const int64_t threads = plan.threads;
  Value indptr = a.indptr, dense = a.dense, score = a.score;
  Value outCounts = a.outCounts, out = a.out;
  const RowKnobs &knobs = a.knobs;
  Value limit = g.minU(g.extent(dense), g.extent(score));
  if (trtllm)
    limit = g.minU(limit, g.extent(out));
  RowInfo row = rowInfo(g, knobs, indptr, r, limit);
  Value count = g.minI(row.n, row.budget);
  Value first = g.cmpI(arith::CmpIPredicate::eq, tid, g.idx(0));

  Value offset = row.start, fits;
  if (trtllm) {
    // Unselected slots of the row's table hold -1.
    fits = g.cmpI(arith::CmpIPredicate::ult, r, g.extent(outCounts));
    g.ifThen(first, [&](Gen &x) {
      x.ifThen(fits, [&](Gen &y) { y.store(y.toI32(count), outCounts, r); });
    });
    strided(g, g.add(row.start, count), row.end, tid, threads, {},
            [&](Gen &x, Value p, ValueRange) -> SmallVector<Value> {
              x.store(x.i32(-1), out, p);
              return {};
            });
  } else {
    // This row's offset in the sparse list: the kept counts of earlier rows.
    offset =
        offsetOfRow(g, r, tid, sh.warpSums, threads, [&](Gen &x, Value q) {
          RowInfo other = rowInfo(x, knobs, indptr, q, limit);
          return x.minI(other.n, other.budget);
        });
    // Guard: rows of a malformed indptr may overlap once clamped, and their
    // kept counts then sum past sparse_kv_indices; such a row writes
    // nothing. Uniform over the CTA (offset is a CTA-wide sum), so its
    // barriers stay convergent.
    fits = g.cmpI(arith::CmpIPredicate::ule, g.add(offset, count),
                  g.extent(out));
    g.ifThen(first, [&](Gen &x) {
      storeSparseIndptr(x, outCounts, r, x.add(offset, count));
    });
  }
  auto copy = [&](Gen &x, Value from, Value to, Value at) {
    strided(x, from, to, tid, threads, {},
            [&](Gen &y, Value p, ValueRange) -> SmallVector<Value> {
              y.store(y.load(dense, p), out, y.add(at, y.sub(p, from)));
              return {};
            });
  };
  g.ifThen(fits, [&](Gen &gf) {
    gf.ifElse(
        row.needs, {},
        [&](Gen &x) -> SmallVector<Value> {
          copy(x, row.start, row.lo, offset);
          copy(x, row.hi, row.end, x.sub(x.add(offset, row.budget), knobs.eos));
          Value k = x.sub(row.budget, x.add(knobs.bos, knobs.eos));
          SelectRow R{sh.keys,     sh.hist, sh.ctl, sh.warpSums,
                      score,       dense,   out,    tid,
                      row.lo,      x.sub(row.hi, row.lo),
                      k,           x.add(offset, knobs.bos),
                      sh.ids,      plan};
          x.ifThen(x.cmpI(arith::CmpIPredicate::sgt, k, x.idx(0)),
                   [&](Gen &y) { emitSelection(y, R); });
          if (a.saved)
            x.ifThen(x.cmpI(arith::CmpIPredicate::ugt, a.rows, a.savesMinRows),
                     [&](Gen &y) { storeSaved(y, a, row, tid, threads); });
          return {};
        },
        [&](Gen &x) -> SmallVector<Value> {
          copy(x, row.start, row.end, offset);
          return {};
        });
  });
  // Recorded last, when the selection's registers are free. The last row
  // also checks the CSR's end against dense_kv_indices (the score kernels
  // scored nothing if it differs).
  Value rows = g.toIndex(a.rows);
  Value endsRight = g.orI(
      g.cmpI(arith::CmpIPredicate::ne, g.add(r, g.idx(1)), rows),
      g.cmpI(arith::CmpIPredicate::eq, g.toIndex(g.load(indptr, rows)),
             g.extent(dense)));
  Value startsAtZero = g.orI(
      g.cmpI(arith::CmpIPredicate::ne, r, g.idx(0)),
      g.cmpI(arith::CmpIPredicate::eq, g.toIndex(g.load(indptr, g.idx(0))),
             g.idx(0)));
  Value ok = g.andI(g.andI(fits, endsRight), g.andI(row.exact, startsAtZero));
  g.ifThen(g.andI(first, g.notI(ok)),
           [&](Gen &y) { recordBadIndptr(y, a.status, indptr, r); });
}

/// The row budget's knobs. The trtllm form keeps every row at its op's k
/// (constants); the others take the flow's knobs as kernel parameters
/// (topKKnobParams), whose values only the manifest holds.
RowKnobs topKKnobs(FlowContext &ctx, Gen &g, const TopKSignature &sig,
                   gpu::GPUFuncOp func) {
  FlowConfigAttr cfg = ctx.config;
  int64_t bos = cfg.getReservedBos(), eos = cfg.getReservedEos();
  if (auto trtllm = dyn_cast<TrtllmTopKOp>(sig.op))
    return {g.idx(bos + static_cast<int64_t>(trtllm.getK()) + eos), Value(),
            g.idx(bos), g.idx(eos)};
  auto param = [&](StringRef name) {
    auto *it = llvm::find_if(sig.params,
                             [&](const Param &p) { return p.name == name; });
    assert(it != sig.params.end() && "a top-k knob without its parameter");
    return func.getArgument(it - sig.params.begin());
  };
  Value ratio = arith::BitcastOp::create(g.b, g.loc, g.b.getF64Type(),
                                         param(abi::kTopkRatioBits));
  return {g.toIndex(param(abi::kTopkMinBudget)), ratio,
          g.toIndex(param(abi::kReservedBos)),
          g.toIndex(param(abi::kReservedEos))};
}

/// The flow's top-k knobs as constant scalar parameters (abi::kTopk*).
SmallVector<Param> topKKnobParams(FlowConfigAttr cfg, MLIRContext *mctx) {
  auto i32 = IntegerType::get(mctx, 32);
  auto i64 = IntegerType::get(mctx, 64);
  int64_t bos = cfg.getReservedBos(), eos = cfg.getReservedEos();
  double ratio = cfg.getTopkRatio().getValueAsDouble();
  return {{abi::kTopkMinBudget.str(), false, i32, cfg.getMinBudget()},
          {abi::kTopkRatioBits.str(), false, i64,
           static_cast<int64_t>(llvm::bit_cast<uint64_t>(ratio))},
          {abi::kReservedBos.str(), false, i32, bos},
          {abi::kReservedEos.str(), false, i32, eos}};
}

/// The top-k kernel `name` of `sig.op`, shaped by `plan`.
void emitTopKVariant(FlowContext &ctx, const TopKSignature &sig,
                     StringRef name, const SelectPlan &plan) {
  Location loc = sig.op->getLoc();
  const int64_t threads = plan.threads;
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, sig.params, threads);
  // The selection's fixed decisions, and the register bound if one is asked.
  func->setAttr("vortex.plan", selectPlanAttr(b, plan, ctx.options.topkCtasPerSM,
                                               !sig.savedBuf.empty()));
  if (ctx.options.topkCtasPerSM > 0)
    func->setAttr("nvvm.minctasm",
                  b.getI32IntegerAttr(static_cast<int32_t>(ctx.options.topkCtasPerSM)));
  TopKShared sh = allocTopKShared(func, plan);
  Gen g{b, loc};
  TopKArgs a;
  a.indptr = func.getArgument(0);
  a.dense = func.getArgument(1);
  a.rows = func.getArgument(2);
  a.score = func.getArgument(3);
  a.outCounts = func.getArgument(4);
  a.out = func.getArgument(5);
  a.status = func.getArgument(6);
  a.knobs = topKKnobs(ctx, g, sig, func);
  if (!sig.savedBuf.empty()) {
    a.saved = func.getArgument(sig.params.size() - 2);
    a.savesMinRows = func.getArgument(sig.params.size() - 1);
  }
  Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  emitTopKRow(ctx, g, sig.op, plan, sh, a, r, tid);
  gpu::ReturnOp::create(b, loc);
  // Its loops run once per 256 keys or rows: runtime unrolling would only
  // double the largest kernel's LLVM and ptxas time.
  keepLoopsRolled(func);

  SmallVector<std::string> writes = {sig.outPtr, sig.outIdx,
                                     ctx.statusBuffer()};
  if (!sig.savedBuf.empty())
    writes.push_back(sig.savedBuf);
  recordRowKernel(ctx, func, threads, sig.params,
                  {abi::kDenseIndptr.str(), abi::kDenseIndices.str(),
                   sig.scoreBuf},
                  writes);
}

} // namespace

LogicalResult mlir::vortex::gpugen::emitTopKKernel(FlowContext &ctx,
                                                   Operation *op,
                                                   StringRef name) {
  MLIRContext *mctx = op->getContext();
  Value scoreValue = op->getOperand(0);
  std::string scoreBuf = ctx.bufferOf.lookup(scoreValue);
  if (scoreBuf.empty())
    return op->emitOpError("reads a value that no buffer holds");
  auto trtllm = dyn_cast<TrtllmTopKOp>(op);
  auto i32 = IntegerType::get(mctx, 32);
  // The trtllm form writes a block table at the row's dense positions and a
  // count per row; the others the sparse CSR.
  std::string outPtr = abi::kSparseIndptr.str();
  std::string outIdx = abi::kSparseIndices.str();
  if (trtllm) {
    outIdx = ctx.allocScratch(trtllm.getBlockTable());
    outPtr = ctx.allocScratch(trtllm.getSeqlens());
  }
  TopKSignature sig{op, scoreBuf, outPtr, outIdx, {}, {}};
  sig.params = {
      {abi::kDenseIndptr.str(), true, i32},
      {abi::kDenseIndices.str(), true, i32},
      {abi::kRows.str(), false, {}},
      {scoreBuf, true, Float32Type::get(mctx)},
      {outPtr, true, i32},
      {outIdx, true, i32},
      {ctx.statusBuffer(), true, i32}};
  if (!trtllm)
    llvm::append_range(sig.params, topKKnobParams(ctx.config, mctx));
  if (SaveOp save = ctx.deferredSaves.lookup(op)) {
    sig.savedBuf = ctx.bufferOf.lookup(save.getField());
    sig.params.push_back(
        {sig.savedBuf, true, ctx.abi.tensors[sig.savedBuf].elementType});
    sig.params.push_back({abi::kSavesMinRows.str(), false, i32,
                          ctx.options.topkSavesMinRows});
  }
  SmallVector<SelectPlan> plans = planSelections(ctx);
  for (auto [i, plan] : llvm::enumerate(plans)) {
    // The first (preferred) variant keeps the op's kernel name.
    std::string kernel =
        i == 0 ? name.str() : (name + "_t" + Twine(plan.threads)).str();
    emitTopKVariant(ctx, sig, kernel, plan);
    if (plans.size() > 1)
      ctx.abi.kernels.back().choice = name.str();
  }
  return success();
}
