//===- RowKernels.cpp - Per-row scan kernels ------------------------------===//
//
// Standalone (S) ops need a whole row: one CTA per (request, KV head) row.
// Scans run per channel over the scored range [bos, n - eos) with CTA-wide
// reductions (the row helpers are KernelBuilder.h's).
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"
#include "Kernels.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

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

  recordRowKernel(ctx, func, threads, params,
                  {abi::kDenseIndptr.str(), inBuf}, {outBuf});
  return success();
}

