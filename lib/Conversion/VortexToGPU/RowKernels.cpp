//===- RowKernels.cpp - Per-row scan and top-k kernels --------------------===//
//
// Standalone (S) ops need a whole row: one CTA per (request, KV head) row.
// Scans run per channel over the scored range [bos, n - eos) with CTA-wide
// reductions; the top-k sorts (score, position) keys of the row's middle
// blocks in shared memory with a bitonic network.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

/// Row bounds, budget and the scored range of row `r`.
struct RowInfo {
  Value start, end, n, budget, needs, lo, hi;
  /// Whether indptr[r] and indptr[r + 1] were used as read.
  Value exact;
};

/// Row `r` of the dense CSR, its bounds clamped to `0 <= start <= end <=
/// limit` (the positions the row's buffers hold): a malformed indptr reads
/// and writes nothing outside them (docs/gpu.md "Guards").
RowInfo rowInfo(Gen &g, FlowConfigAttr cfg, Value indptr, Value r,
                Value limit) {
  RowInfo info;
  Value s = g.toIndex(g.load(indptr, r));
  Value e = g.toIndex(g.load(indptr, g.add(r, g.idx(1))));
  // Unsigned: a negative entry is huge and clamps to the limit.
  info.start = g.minU(s, limit);
  info.end = g.minU(e, limit);
  info.end = g.select(g.cmpI(arith::CmpIPredicate::ult, info.end, info.start),
                      info.start, info.end);
  info.exact = g.andI(g.cmpI(arith::CmpIPredicate::eq, info.start, s),
                      g.cmpI(arith::CmpIPredicate::eq, info.end, e));
  info.n = g.sub(info.end, info.start);
  info.budget = emitRowBudget(g, cfg, info.n);
  info.needs = g.cmpI(arith::CmpIPredicate::sgt, info.n, info.budget);
  info.lo = g.add(info.start, g.idx(cfg.getReservedBos()));
  info.hi = g.sub(info.end, g.idx(cfg.getReservedEos()));
  return info;
}

/// CTA-wide reduction of an f32 (every thread of the CTA must call it).
Value ctaReduce(Gen &g, Value v, gpu::AllReduceOperation op) {
  return gpu::AllReduceOp::create(
      g.b, g.loc, v, gpu::AllReduceOperationAttr::get(g.b.getContext(), op),
      /*uniform=*/true);
}

/// for (p = lo + tid; p < hi; p += threads) body(p)
scf::ForOp strided(Gen &g, Value lo, Value hi, Value tid, int64_t threads,
                   ValueRange inits,
                   function_ref<SmallVector<Value>(Gen &, Value, ValueRange)>
                       body) {
  // Iterate over k with p = lo + tid + k * threads.
  Value span = g.sub(g.maxI(hi, lo), lo);
  Value count = g.ceilDiv(span, g.idx(threads));
  return g.forLoop(g.idx(0), count, inits,
                   [&](Gen &x, Value k, ValueRange acc) -> SmallVector<Value> {
                     Value p = x.add(x.add(lo, tid), x.mul(k, x.idx(threads)));
                     Value in = x.lt(p, hi);
                     auto res = x.ifElse(
                         in, acc.getTypes(),
                         [&](Gen &y) { return body(y, p, acc); },
                         [&](Gen &) { return SmallVector<Value>(acc); });
                     return res;
                   });
}

} // namespace

namespace {
/// One channel `c` of a row scan (softmax, normalize, conv1d) over the
/// row's scored range, one CTA of `threads` per row.
struct ScanRow {
  Value in, out, tid;
  RowInfo row;
  int64_t channels, d1, threads;
};

void emitScanChannel(Gen &x, Operation *op, const ScanRow &S, int64_t c) {
  Value in = S.in, out = S.out, tid = S.tid;
  const RowInfo &row = S.row;
  int64_t d1 = S.d1, threads = S.threads, channels = S.channels;
  auto elem = [&](Gen &y, Value p, int64_t ch) {
    return y.add(y.mul(p, y.idx(channels)), y.idx(ch));
  };
  TypeSwitch<Operation *>(op)
      .Case<SoftmaxOp>([&](SoftmaxOp sm) {
        double scale = sm.getScale().convertToDouble();
        Value m = strided(x, row.lo, row.hi, tid, threads,
                          {x.f32(-1e30)},
                          [&](Gen &y, Value p, ValueRange acc)
                              -> SmallVector<Value> {
                            Value v = y.mulF(y.load(in, elem(y, p, c)),
                                             y.f32(scale));
                            return {y.maxF(acc[0], v)};
                          })
                      .getResult(0);
        m = ctaReduce(x, m, gpu::AllReduceOperation::MAXIMUMF);
        Value sum =
            strided(x, row.lo, row.hi, tid, threads, {x.f32(0.0)},
                    [&](Gen &y, Value p, ValueRange acc)
                        -> SmallVector<Value> {
                      Value v = y.mulF(y.load(in, elem(y, p, c)),
                                       y.f32(scale));
                      return {y.addF(acc[0],
                                     math::ExpOp::create(
                                         y.b, y.loc, y.subF(v, m)))};
                    })
                .getResult(0);
        sum = ctaReduce(x, sum, gpu::AllReduceOperation::ADD);
        strided(x, row.lo, row.hi, tid, threads, {},
                [&](Gen &y, Value p, ValueRange) -> SmallVector<Value> {
                  Value v = y.mulF(y.load(in, elem(y, p, c)),
                                   y.f32(scale));
                  Value e = math::ExpOp::create(y.b, y.loc,
                                                y.subF(v, m));
                  y.store(y.divF(e, sum), out, elem(y, p, c));
                  return {};
                });
      })
      .Case<NormalizeOp>([&](NormalizeOp) {
        Value ss =
            strided(x, row.lo, row.hi, tid, threads, {x.f32(0.0)},
                    [&](Gen &y, Value p, ValueRange acc)
                        -> SmallVector<Value> {
                      Value v = y.load(in, elem(y, p, c));
                      return {y.addF(acc[0], y.mulF(v, v))};
                    })
                .getResult(0);
        ss = ctaReduce(x, ss, gpu::AllReduceOperation::ADD);
        Value norm = x.maxF(math::SqrtOp::create(x.b, x.loc, ss),
                            x.f32(1e-12));
        strided(x, row.lo, row.hi, tid, threads, {},
                [&](Gen &y, Value p, ValueRange) -> SmallVector<Value> {
                  y.store(y.divF(y.load(in, elem(y, p, c)), norm), out,
                          elem(y, p, c));
                  return {};
                });
      })
      .Case<Conv1dOp>([&](Conv1dOp conv) {
        auto w = cast<DenseElementsAttr>(conv.getWeight());
        auto wType = cast<ShapedType>(w.getType());
        auto weights = llvm::to_vector(w.getValues<float>());
        int64_t taps = wType.getDimSize(0);
        int64_t ci = c / d1, cj = c % d1;
        bool real = ci < wType.getDimSize(1) && cj < wType.getDimSize(2);
        strided(x, row.lo, row.hi, tid, threads, {},
                [&](Gen &y, Value p, ValueRange) -> SmallVector<Value> {
                  Value acc = y.f32(0.0);
                  for (int64_t k = 0; real && k < taps; ++k) {
                    double wk = weights[(k * wType.getDimSize(1) + ci) *
                                            wType.getDimSize(2) +
                                        cj];
                    // Zero before the segment start.
                    Value ok = y.cmpI(arith::CmpIPredicate::sge,
                                      y.sub(p, y.idx(k)), row.lo);
                    Value src = y.maxI(y.sub(p, y.idx(k)), row.lo);
                    Value v = y.load(in, elem(y, src, c));
                    acc = y.addF(acc, y.select(ok, y.mulF(v, y.f32(wk)),
                                               y.f32(0.0)));
                  }
                  y.store(acc, out, elem(y, p, c));
                  return {};
                });
      });
}
} // namespace

LogicalResult mlir::vortex::gpugen::emitSegmentKernel(FlowContext &ctx,
                                                      Operation *op,
                                                      StringRef name) {
  MLIRContext *mctx = op->getContext();
  Location loc = op->getLoc();
  Value input = op->getOperand(0);
  Value result = op->getResult(0);
  auto inType = cast<VTensorType>(input.getType());
  std::string inBuf = ctx.bufferOf.lookup(input);
  if (inBuf.empty())
    return op->emitOpError("reads a value that no buffer holds");
  std::string outBuf = ctx.allocScratch(result);
  int64_t d0 = computeExtent(inType, 1), d1 = computeExtent(inType, 2);
  int64_t channels = d0 * d1;
  const int64_t threads = 256;
  auto i32 = IntegerType::get(mctx, 32);
  SmallVector<Param> params = {{abi::kDenseIndptr.str(), true, i32},
                               {abi::kRows.str(), false, {}},
                               {inBuf, true, ctx.abi.tensors[inBuf].elementType},
                               {outBuf, true, Float32Type::get(mctx)}};
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, params, threads);
  Gen g{b, loc};
  Value indptr = func.getArgument(0);
  Value in = func.getArgument(2), out = func.getArgument(3);
  Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // The positions `in` holds (and `out`, when it is ragged too).
  Value limit = g.divU(g.extent(in), g.idx(channels));
  if (!isa<ReductionOpInterface>(op))
    limit = g.minU(limit, g.divU(g.extent(out), g.idx(channels)));
  RowInfo row = rowInfo(g, ctx.config, indptr, r, limit);
  auto elem = [&](Gen &x, Value p, int64_t c) {
    return x.add(x.mul(p, x.idx(channels)), x.idx(c));
  };

  bool isReduce = isa<ReductionOpInterface>(op);
  if (isReduce) {
    // One batched row per CSR row: the reduction over [bos, n - eos).
    auto red = cast<ReductionOpInterface>(op);
    ReduceKind kind = red.getReduceKind();
    gpu::AllReduceOperation cta = gpu::AllReduceOperation::ADD;
    if (kind == ReduceKind::Max)
      cta = gpu::AllReduceOperation::MAXIMUMF;
    else if (kind == ReduceKind::Min)
      cta = gpu::AllReduceOperation::MINIMUMF;
    for (int64_t c = 0; c < channels; ++c) {
      Value local =
          strided(g, row.lo, row.hi, tid, threads, {g.f32(neutralOf(kind))},
                  [&](Gen &x, Value p, ValueRange acc) -> SmallVector<Value> {
                    Value v = x.load(in, elem(x, p, c));
                    return {combineReduction(x, kind, acc[0], v)};
                  })
              .getResult(0);
      Value total = ctaReduce(g, local, cta);
      Value count = g.maxI(g.sub(row.hi, row.lo), g.idx(0));
      if (kind == ReduceKind::Mean) {
        Value cf = arith::UIToFPOp::create(b, loc, b.getF32Type(),
                                           g.toI32(count));
        total = g.select(g.cmpI(arith::CmpIPredicate::sgt, count, g.idx(0)),
                         g.divF(total, cf), g.f32(0.0));
      } else if (kind == ReduceKind::L2Norm) {
        total = math::SqrtOp::create(b, loc, total);
      }
      g.ifThen(g.cmpI(arith::CmpIPredicate::eq, tid, g.idx(0)),
               [&](Gen &x) { x.store(total, out, elem(x, r, c)); });
    }
  } else {
    // Zero the row, then fill the scored range of rows needing selection.
    strided(g, row.start, row.end, tid, threads, {},
            [&](Gen &x, Value p, ValueRange) -> SmallVector<Value> {
              for (int64_t c = 0; c < channels; ++c)
                x.store(x.f32(0.0), out, elem(x, p, c));
              return {};
            });
    gpu::BarrierOp::create(b, loc);
    ScanRow scan{in, out, tid, row, channels, d1, threads};
    g.ifThen(row.needs, [&](Gen &x) {
      for (int64_t c = 0; c < channels; ++c) {
        emitScanChannel(x, op, scan, c);
      }
    });
  }
  gpu::ReturnOp::create(b, loc);

  KernelRecord rec;
  rec.name = name.str();
  rec.step = Step::Indexer;
  rec.gridKind = "rows";
  rec.threads = threads;
  rec.params = params;
  rec.reads = {abi::kDenseIndptr.str(), inBuf};
  rec.writes = {outBuf};
  ctx.abi.kernels.push_back(rec);
  return success();
}

//===----------------------------------------------------------------------===//
// Top-k
//===----------------------------------------------------------------------===//

namespace {
constexpr int64_t kTopKThreads = 1024;
constexpr int64_t kTopKCapacity = 4096;

/// An i64 key ordered like (score, -position): the top keys are the best
/// scores, ties to the lower position. NaN ranks as -inf.
Value sortKey(Gen &g, Value score, Value position) {
  Value isNan = g.cmpF(arith::CmpFPredicate::UNO, score, score);
  score = g.select(isNan, g.f32(-std::numeric_limits<double>::infinity()),
                   score);
  Value bits = arith::BitcastOp::create(g.b, g.loc, g.b.getI32Type(), score);
  Value neg = g.cmpI(arith::CmpIPredicate::slt, bits, g.i32(0));
  Value flipped = g.select(
      neg, arith::XOrIOp::create(g.b, g.loc, bits, g.i32(-1)),
      arith::OrIOp::create(g.b, g.loc, bits,
                           g.i32(static_cast<int32_t>(0x80000000u))));
  Value hi = arith::ShLIOp::create(
      g.b, g.loc,
      arith::ExtUIOp::create(g.b, g.loc, g.b.getI64Type(), flipped),
      g.i64(32));
  Value pos32 = g.toI32(position);
  Value lo = arith::ExtUIOp::create(
      g.b, g.loc, g.b.getI64Type(),
      arith::XOrIOp::create(g.b, g.loc, pos32, g.i32(-1)));
  return arith::OrIOp::create(g.b, g.loc, hi, lo);
}

Value positionOfKey(Gen &g, Value key) {
  Value lo = arith::TruncIOp::create(g.b, g.loc, g.b.getI32Type(), key);
  return g.toIndex(arith::XOrIOp::create(g.b, g.loc, lo, g.i32(-1)));
}
} // namespace

namespace {
/// Rows of up to 2048 scored blocks: the bitonic sort runs with two keys per
/// thread in registers (elements 64w + l and 64w + 32 + l of warp w, lane l).
/// Strides below 64 stay inside a warp (an in-lane swap at 32, shuffles
/// below) and need no barrier; larger strides go through shared memory.
constexpr int64_t kRegisterSortSize = 2048;

/// The partner's key of a shuffle-xor exchange. A 64-bit gpu.shuffle:
/// MLIR 22's convert-gpu-to-nvvm splits it into two 32-bit shfl.sync.
Value shuffleXor64(Gen &g, Value key, int64_t offset) {
  return gpu::ShuffleOp::create(g.b, g.loc, key, static_cast<int32_t>(offset),
                                32, gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

/// Keeps the larger key at the lower index of descending blocks and the
/// smaller one in ascending blocks.
Value keepOf(Gen &g, Value mine, Value other, bool lower, Value desc) {
  Value big = arith::MaxUIOp::create(g.b, g.loc, mine, other);
  Value small = arith::MinUIOp::create(g.b, g.loc, mine, other);
  return lower ? g.select(desc, big, small) : g.select(desc, small, big);
}

/// One bitonic compare-exchange in shared memory: pair `t` of a stage is
/// (i, i + stride) with i = 2 * stride * (t / stride) + t % stride, so every
/// thread works; blocks of `size` alternate direction.
void compareExchange(Gen &g, Value keys, Value t, Value stride, Value size) {
  Value low = arith::AndIOp::create(g.b, g.loc, t, g.sub(stride, g.idx(1)));
  Value i = g.add(g.mul(g.sub(t, low), g.idx(2)), low);
  Value j = g.add(i, stride);
  Value a0 = memref::LoadOp::create(g.b, g.loc, keys, ValueRange{i});
  Value a1 = memref::LoadOp::create(g.b, g.loc, keys, ValueRange{j});
  Value desc = g.cmpI(arith::CmpIPredicate::eq,
                      arith::AndIOp::create(g.b, g.loc, i, size), g.idx(0));
  memref::StoreOp::create(g.b, g.loc, keepOf(g, a0, a1, true, desc), keys,
                          ValueRange{i});
  memref::StoreOp::create(g.b, g.loc, keepOf(g, a1, a0, false, desc), keys,
                          ValueRange{j});
}

void emitRegisterBitonic(Gen &g, Value keys, Value tid,
                         function_ref<Value(Gen &, Value)> keyAt) {
  Value lane = g.remU(tid, g.idx(32));
  Value warp = g.divU(tid, g.idx(32));
  Value idx[2] = {g.add(g.mul(warp, g.idx(64)), lane),
                  g.add(g.add(g.mul(warp, g.idx(64)), lane), g.idx(32))};
  Value reg[2] = {keyAt(g, idx[0]), keyAt(g, idx[1])};
  bool inRegs = true;
  auto toShared = [&]() {
    for (int e = 0; e < 2; ++e)
      memref::StoreOp::create(g.b, g.loc, reg[e], keys, ValueRange{idx[e]});
    gpu::BarrierOp::create(g.b, g.loc);
    inRegs = false;
  };
  auto toRegs = [&]() {
    for (int e = 0; e < 2; ++e)
      reg[e] = memref::LoadOp::create(g.b, g.loc, keys, ValueRange{idx[e]});
    inRegs = true;
  };
  for (int64_t size = 2; size <= kRegisterSortSize; size *= 2) {
    for (int64_t stride = size / 2; stride > 0; stride /= 2) {
      if (stride >= 64) {
        if (inRegs)
          toShared();
        // 1024 threads, 1024 pairs: one compare-exchange each.
        compareExchange(g, keys, tid, g.idx(stride), g.idx(size));
        gpu::BarrierOp::create(g.b, g.loc);
        continue;
      }
      if (!inRegs)
        toRegs();
      // The block direction of each element (the two differ at size 32).
      Value descOf[2];
      for (int e = 0; e < 2; ++e)
        descOf[e] = g.cmpI(
            arith::CmpIPredicate::eq,
            arith::AndIOp::create(g.b, g.loc, idx[e], g.idx(size)), g.idx(0));
      Value desc = descOf[0];
      if (stride == 32) {
        // Both elements of the pair are in this lane.
        Value a = keepOf(g, reg[0], reg[1], true, desc);
        Value c = keepOf(g, reg[1], reg[0], false, desc);
        reg[0] = a;
        reg[1] = c;
        continue;
      }
      Value lower = g.cmpI(
          arith::CmpIPredicate::eq,
          arith::AndIOp::create(g.b, g.loc, lane, g.idx(stride)), g.idx(0));
      for (int e = 0; e < 2; ++e) {
        Value other = shuffleXor64(g, reg[e], stride);
        reg[e] = g.select(lower, keepOf(g, reg[e], other, true, descOf[e]),
                          keepOf(g, reg[e], other, false, descOf[e]));
      }
    }
  }
  if (inRegs)
    toShared();
}
} // namespace

namespace {

/// A row's selection: its keys buffer, the scores and block ids it reads,
/// where it writes, and the row's scored range [lo, lo + m), k kept.
struct SortRow {
  Value keys, score, dense, sparse, tid, first;
  Value lo, m, k, offset;
  int64_t bos;
};

/// Writes the k best of the sorted keys after the row's bos blocks.
void emitSortedOutput(Gen &y, const SortRow &R) {
  strided(y, y.idx(0), R.k, R.tid, kTopKThreads, {},
          [&](Gen &z, Value j, ValueRange) -> SmallVector<Value> {
            Value key = memref::LoadOp::create(z.b, z.loc, R.keys,
                                               ValueRange{j});
            Value i = positionOfKey(z, key);
            z.store(z.load(R.dense, z.add(R.lo, i)), R.sparse,
                    z.add(R.offset, z.add(z.idx(R.bos), j)));
            return {};
          });
}

/// Rows of up to kTopKCapacity scored blocks: a bitonic sort of the keys in
/// shared memory (pair-indexed stages, one compare-exchange per thread),
/// then the k best are written.
void emitSharedBitonic(Gen &y, const SortRow &R) {
  Value keys = R.keys, score = R.score, tid = R.tid, m = R.m;
  // P = next power of two >= m.
  auto pw = scf::WhileOp::create(
      y.b, y.loc, TypeRange{y.b.getIndexType()},
      ValueRange{y.idx(1)},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Gen w{nb, l};
        scf::ConditionOp::create(nb, l, w.lt(a[0], m), a);
      },
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Gen w{nb, l};
        scf::YieldOp::create(nb, l, w.mul(a[0], w.idx(2)));
      });
  Value P = pw.getResult(0);
  strided(y, y.idx(0), P, tid, kTopKThreads, {},
          [&](Gen &z, Value i, ValueRange) -> SmallVector<Value> {
            Value real = z.lt(i, m);
            Value safe = z.minI(i, z.sub(m, z.idx(1)));
            Value s = z.load(score, z.add(R.lo, safe));
            Value key = z.select(real, sortKey(z, s, i),
                                 z.i64(0));
            memref::StoreOp::create(z.b, z.loc, key, keys,
                                    ValueRange{i});
            return {};
          });
  gpu::BarrierOp::create(y.b, y.loc);
  // Bitonic sort, descending.
  scf::WhileOp::create(
      y.b, y.loc, TypeRange{y.b.getIndexType()},
      ValueRange{y.idx(2)},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Gen w{nb, l};
        scf::ConditionOp::create(
            nb, l, w.cmpI(arith::CmpIPredicate::ule, a[0], P), a);
      },
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Gen w{nb, l};
        Value size = a[0];
        scf::WhileOp::create(
            nb, l, TypeRange{nb.getIndexType()},
            ValueRange{w.divU(size, w.idx(2))},
            [&](OpBuilder &nb2, Location l2, ValueRange c) {
              Gen w2{nb2, l2};
              scf::ConditionOp::create(
                  nb2, l2,
                  w2.cmpI(arith::CmpIPredicate::ugt, c[0],
                          w2.idx(0)),
                  c);
            },
            [&](OpBuilder &nb2, Location l2, ValueRange c) {
              Gen w2{nb2, l2};
              Value stride = c[0];
              strided(w2, w2.idx(0), w2.divU(P, w2.idx(2)), tid,
                      kTopKThreads, {},
                      [&](Gen &z, Value t, ValueRange)
                          -> SmallVector<Value> {
                        compareExchange(z, keys, t, stride, size);
                        return {};
                      });
              gpu::BarrierOp::create(nb2, l2);
              scf::YieldOp::create(nb2, l2,
                                   w2.divU(stride, w2.idx(2)));
            });
        scf::YieldOp::create(nb, l, w.mul(size, w.idx(2)));
      });
  emitSortedOutput(y, R);
}

/// Longer rows: one CTA-wide maximum per pick, each below the previous
/// pick's key (slow, correct).
void emitArgmaxSelection(Gen &y, const SortRow &R) {
  Value keys = R.keys, score = R.score, dense = R.dense, sparse = R.sparse;
  Value tid = R.tid, first = R.first, m = R.m, k = R.k, offset = R.offset;
  int64_t bos = R.bos;
  // Rows longer than the shared-memory capacity: one CTA-wide
  // maximum per pick, each below the previous pick's key.
  y.forLoop(
      y.idx(0), k, {y.i64(-1)},
      [&](Gen &z, Value j, ValueRange prev) -> SmallVector<Value> {
        Value local =
            strided(z, z.idx(0), m, tid, kTopKThreads,
                    {z.i64(0)},
                    [&](Gen &u, Value i, ValueRange acc)
                        -> SmallVector<Value> {
                      Value key = sortKey(
                          u, u.load(score, u.add(R.lo, i)), i);
                      Value ok = u.cmpI(arith::CmpIPredicate::ult,
                                        key, prev[0]);
                      Value better = u.cmpI(
                          arith::CmpIPredicate::ugt, key, acc[0]);
                      return {u.select(u.andI(ok, better), key,
                                       acc[0])};
                    })
                .getResult(0);
        // CTA maximum through shared memory (a tree).
        memref::StoreOp::create(z.b, z.loc, local, keys,
                                ValueRange{tid});
        gpu::BarrierOp::create(z.b, z.loc);
        for (int64_t half = kTopKThreads / 2; half > 0;
             half /= 2) {
          z.ifThen(z.lt(tid, z.idx(half)), [&](Gen &u) {
            Value a0 = memref::LoadOp::create(u.b, u.loc, keys,
                                              ValueRange{tid});
            Value a1 = memref::LoadOp::create(
                u.b, u.loc, keys,
                ValueRange{u.add(tid, u.idx(half))});
            memref::StoreOp::create(
                u.b, u.loc, arith::MaxUIOp::create(u.b, u.loc, a0, a1),
                keys, ValueRange{tid});
          });
          gpu::BarrierOp::create(z.b, z.loc);
        }
        Value best = memref::LoadOp::create(z.b, z.loc, keys,
                                            ValueRange{z.idx(0)});
        gpu::BarrierOp::create(z.b, z.loc);
        z.ifThen(first, [&](Gen &u) {
          Value i = positionOfKey(u, best);
          u.store(u.load(dense, u.add(R.lo, i)), sparse,
                  u.add(offset, u.add(u.idx(bos), j)));
        });
        return {best};
      });
}

} // namespace

LogicalResult mlir::vortex::gpugen::emitTopKKernel(FlowContext &ctx,
                                                   Operation *op,
                                                   StringRef name) {
  MLIRContext *mctx = op->getContext();
  Location loc = op->getLoc();
  Value scoreValue = op->getOperand(0);
  std::string scoreBuf = ctx.bufferOf.lookup(scoreValue);
  if (scoreBuf.empty())
    return op->emitOpError("reads a value that no buffer holds");
  auto i32 = IntegerType::get(mctx, 32);
  SmallVector<Param> params = {
      {abi::kDenseIndptr.str(), true, i32},   {abi::kDenseIndices.str(), true, i32},
      {abi::kRows.str(), false, {}},              {scoreBuf, true, Float32Type::get(mctx)},
      {abi::kSparseIndptr.str(), true, i32},  {abi::kSparseIndices.str(), true, i32},
      {ctx.statusBuffer(), true, i32}};
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp func =
      createKernel(ctx, b, loc, name, params, kTopKThreads);
  auto keysType = MemRefType::get(
      {kTopKCapacity}, b.getI64Type(), AffineMap(),
      gpu::AddressSpaceAttr::get(mctx, gpu::AddressSpace::Workgroup));
  Value keys = func.addWorkgroupAttribution(keysType, loc);
  Gen g{b, loc};
  Value indptr = func.getArgument(0), dense = func.getArgument(1);
  Value score = func.getArgument(3);
  Value sparsePtr = func.getArgument(4), sparse = func.getArgument(5);
  Value status = func.getArgument(6);
  Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  FlowConfigAttr cfg = ctx.config;
  int64_t bos = cfg.getReservedBos(), eos = cfg.getReservedEos();
  Value limit = g.minU(g.extent(dense), g.extent(score));
  RowInfo row = rowInfo(g, cfg, indptr, r, limit);
  Value count = g.minI(row.n, row.budget);

  // This row's offset in the sparse list: the kept counts of earlier rows.
  Value partial =
      strided(g, g.idx(0), r, tid, kTopKThreads, {g.i32(0)},
              [&](Gen &x, Value q, ValueRange acc) -> SmallVector<Value> {
                RowInfo other = rowInfo(x, cfg, indptr, q, limit);
                return {x.add(acc[0], x.toI32(x.minI(other.n, other.budget)))};
              })
          .getResult(0);
  Value offset = g.toIndex(ctaReduce(g, partial, gpu::AllReduceOperation::ADD));
  Value first = g.cmpI(arith::CmpIPredicate::eq, tid, g.idx(0));
  // Guard: rows of a malformed indptr may overlap once clamped, and their
  // kept counts then sum past sparse_kv_indices; such a row writes nothing.
  // Uniform over the CTA (offset is a CTA-wide sum), so its barriers stay
  // convergent.
  Value fits = g.cmpI(arith::CmpIPredicate::ule, g.add(offset, count),
                      g.extent(sparse));
  Value startsAtZero = g.orI(
      g.cmpI(arith::CmpIPredicate::ne, r, g.idx(0)),
      g.cmpI(arith::CmpIPredicate::eq, g.toIndex(g.load(indptr, g.idx(0))),
             g.idx(0)));
  g.ifThen(first, [&](Gen &x) {
    x.store(x.toI32(x.add(offset, count)), sparsePtr, x.add(r, x.idx(1)));
    x.ifThen(x.cmpI(arith::CmpIPredicate::eq, r, x.idx(0)),
             [&](Gen &y) { y.store(y.i32(0), sparsePtr, y.idx(0)); });
  });
  auto copy = [&](Gen &x, Value from, Value to, Value at) {
    strided(x, from, to, tid, kTopKThreads, {},
            [&](Gen &y, Value p, ValueRange) -> SmallVector<Value> {
              y.store(y.load(dense, p), sparse, y.add(at, y.sub(p, from)));
              return {};
            });
  };
  g.ifThen(fits, [&](Gen &gf) {
  gf.ifElse(
      row.needs, {},
      [&](Gen &x) -> SmallVector<Value> {
        copy(x, row.start, row.lo, offset);
        copy(x, row.hi, row.end,
             x.sub(x.add(offset, row.budget), x.idx(eos)));
        Value k = x.sub(row.budget, x.idx(bos + eos));
        Value m = x.sub(row.hi, row.lo);
        Value fits = x.cmpI(arith::CmpIPredicate::sle, m,
                            x.idx(kTopKCapacity));
        Value small = x.cmpI(arith::CmpIPredicate::sle, m,
                             x.idx(kRegisterSortSize));
        SortRow sortRow{keys, score, dense, sparse, tid,
                        first, row.lo, m, k, offset, bos};
        x.ifElse(
            small, {},
            [&](Gen &y) -> SmallVector<Value> {
              emitRegisterBitonic(y, keys, tid, [&](Gen &z, Value i) {
                Value real = z.lt(i, m);
                Value safe = z.minI(i, z.maxI(z.sub(m, z.idx(1)), z.idx(0)));
                Value sc = z.load(score, z.add(row.lo, safe));
                return z.select(real, sortKey(z, sc, i), z.i64(0));
              });
              emitSortedOutput(y, sortRow);
              return {};
            },
            [&](Gen &y0) -> SmallVector<Value> {
        y0.ifElse(
            fits, {},
            [&](Gen &y) -> SmallVector<Value> {
              emitSharedBitonic(y, sortRow);
              return {};
            },
            [&](Gen &y) -> SmallVector<Value> {
              emitArgmaxSelection(y, sortRow);
              return {};
            });
              return {};
            });
        return {};
      },
      [&](Gen &x) -> SmallVector<Value> {
        copy(x, row.start, row.end, offset);
        return {};
      });
  });
  // Recorded last, when the sort's registers are free (recording it before
  // the sort made ptxas spill in the 32-register top-k).
  // The last row also checks the CSR's end against dense_kv_indices (the
  // score kernels scored nothing if it differs).
  Value rows = g.toIndex(func.getArgument(2));
  Value endsRight = g.orI(
      g.cmpI(arith::CmpIPredicate::ne, g.add(r, g.idx(1)), rows),
      g.cmpI(arith::CmpIPredicate::eq, g.toIndex(g.load(indptr, rows)),
             g.extent(dense)));
  Value ok = g.andI(g.andI(fits, endsRight), g.andI(row.exact, startsAtZero));
  g.ifThen(g.andI(first, g.notI(ok)), [&](Gen &y) {
    y.recordStatus(status, abi::kBadIndptr,
                   y.toIndex(y.load(indptr, y.add(r, y.idx(1)))), r);
  });
  gpu::ReturnOp::create(b, loc);

  KernelRecord rec;
  rec.name = name.str();
  rec.step = Step::Indexer;
  rec.gridKind = "rows";
  rec.threads = kTopKThreads;
  rec.sharedBytes = kTopKCapacity * 8;
  rec.params = params;
  rec.reads = {abi::kDenseIndptr.str(), abi::kDenseIndices.str(), scoreBuf};
  rec.writes = {abi::kSparseIndptr.str(), abi::kSparseIndices.str(),
                ctx.statusBuffer()};
  ctx.abi.kernels.push_back(rec);
  return success();
}
