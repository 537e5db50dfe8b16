//===- StandaloneKernels.cpp - Standalone ops as plain kernels ------------===//
//
// Two standalone (Schedule.S) ops of the indexer whose work is a stream, not
// a tile: each gets a plain kernel here instead of a workload kernel, which
// would hold its operand as one padded tile per row.
//
// GeMM with a parameter weight over the tile bound. vortex_torch runs GeMM
// with a PARAMETER weight standalone (a torch.matmul), so a learned weight
// never enters a fused kernel. A weight that fits a tile is held by the
// workload kernel like any other operand; a larger one (docs/contract.md,
// "Bounds") is streamed from memory:
//
//   out[s, a, b] = sum_k y[a, k] * x[s, b, k]     (y [1, Ny, K] parameter)
//
// Two alternatives (a manifest `choice`: the runtime launches the first
// whose grid fits in one wave). Grid (ceil(rows / 8), 1, D0'): CTA (c, a)
// computes output row a of rows [8c, 8c + 8), its 4 warps splitting k,
// their sums meeting in shared memory; for more rows, grid (ceil(rows /
// 8), 1, D0' / 4): a warp per output row, its lanes covering k alone, so
// that a CTA reads x once for 4 output rows. Lanes stride over k, so each
// weight row is read coalesced, once per b for the CTA's 8 rows; the CTAs
// of one step share the weight through L2.
//
// A padded reshape (its input or result not a power of two in an inner
// extent): a copy of each row's real elements in row-major order, one CTA
// per row or position (grid items of rows or total, one a CTA), its
// threads striding over the result's padded elements.
//
// Both store the padded lanes of their result as 0.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"
#include "Kernels.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {
constexpr int64_t kWarps = 4;
constexpr int64_t kThreads = 32 * kWarps;
/// Weight elements a lane loads per iteration (in flight together).
constexpr int64_t kUnroll = 4;
/// Rows of x a CTA computes: each weight element is loaded once for them.
constexpr int64_t kRowsPerCTA = 8;
/// The largest grid z of a launch (the manifest's bound).
constexpr int64_t kMaxGridZ = 65535;

/// The extents a buffer is laid out with: the ABI's (a flow tensor holds
/// the real extents, a scratch buffer the padded ones). Every buffer a
/// value is in has a rank-3 record with constant inner extents.
std::pair<int64_t, int64_t> strideExtents(FlowContext &ctx,
                                          const std::string &buf) {
  const abi::TensorRecord &rec = ctx.abi.tensors.at(buf);
  int64_t d0 = 0, d1 = 0;
  bool bad = rec.shape.size() != 3 ||
             StringRef(rec.shape[1]).getAsInteger(10, d0) ||
             StringRef(rec.shape[2]).getAsInteger(10, d1);
  assert(!bad && "a value's buffer has constant inner extents");
  (void)bad;
  return {d0, d1};
}

/// Sum of `v` over the 32 lanes of a warp (every lane gets it).
Value warpSumF32(Gen &g, Value v) {
  for (int32_t offset = 16; offset > 0; offset /= 2)
    v = g.addF(v, gpu::ShuffleOp::create(g.b, g.loc, v, offset, 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult());
  return v;
}

/// Records an indexer kernel whose grid is `perCTA` items of `lead` a CTA
/// (times `gridZ`) and that writes no status.
void recordItemsKernel(FlowContext &ctx, StringRef name, StringRef lead,
                       int64_t perCTA, int64_t gridZ, int64_t sharedBytes,
                       ArrayRef<Param> params, const std::string &read0,
                       const std::string &read1, const std::string &write,
                       StringRef choice) {
  KernelRecord rec;
  rec.name = name.str();
  rec.step = Step::Indexer;
  rec.grid = GridKind::Items;
  rec.itemsOf = lead.str();
  rec.perCTA = perCTA;
  rec.gridZ = gridZ;
  rec.threads = kThreads;
  rec.sharedBytes = sharedBytes;
  rec.params.assign(params.begin(), params.end());
  rec.reads = {read0};
  if (!read1.empty())
    rec.reads.push_back(read1);
  rec.writes = {write};
  rec.choice = choice.str();
  ctx.abi.kernels.push_back(rec);
}
} // namespace

bool mlir::vortex::gpugen::isStreamedGemm(Operation *op) {
  auto gemm = dyn_cast<GeMMOp>(op);
  return gemm && gemm.readsStreamedWeight();
}

/// The padded lanes of row `s`'s result in output row `a` (a >= Ny: every
/// b; else b >= Nx), stored as 0 by `threads` threads numbered `t`.
static void zeroPaddedLanes(Gen &g, Value out, Value s, Value a, Value t,
                            int64_t threads, int64_t ny, int64_t nx,
                            int64_t oD0, int64_t oD1) {
  Value outRow = g.mul(s, g.idx(oD0 * oD1));
  Value from = g.select(g.lt(a, g.idx(ny)), g.idx(nx), g.idx(0));
  strided(g, from, g.idx(oD1), t, threads, {},
          [&](Gen &c, Value bb, ValueRange) -> SmallVector<Value> {
            c.store(c.f32(0.0), out,
                    c.add(outRow, c.add(c.mul(a, c.idx(oD1)), bb)));
            return {};
          });
}

namespace {
/// One streamed GeMM kernel being emitted (see the file comment): with
/// `splitK` a CTA per output row, its warps splitting k; else a warp per
/// output row, its lanes covering k alone.
struct StreamedGemm {
  bool splitK;
  Value rows, x, y, out, shared, tid, warp, lane;
  SmallVector<Value> rowOf, valid;
  int64_t ny, nx, k, xD0, xD1, yD1, oD0, oD1;

  /// Stores `v` (row r's sum) at out[rowOf[r], a, b] when the row is real.
  void store(Gen &g, Value v, int64_t r, Value a, Value bb) {
    g.store(v, out, g.add(g.mul(rowOf[r], g.idx(oD0 * oD1)),
                          g.add(g.mul(a, g.idx(oD1)), bb)));
  }

  /// out[rowOf[r], a, b] for the CTA's rows: each lane loads kUnroll weight
  /// elements an iteration and uses each for every row. With splitK every
  /// thread calls it (barriers), else every lane of the warp.
  void emitOutput(Gen &g, Value a, Value bb) {
    Value yRow = g.mul(a, g.idx(yD1));
    int64_t span = 32 * kUnroll, stride = splitK ? span * kWarps : span;
    Value base = splitK ? g.add(lane, g.mul(warp, g.idx(span))) : lane;
    SmallVector<Value> zero(kRowsPerCTA, g.f32(0.0));
    auto loop = g.forLoop(
        g.idx(0), g.idx((k + stride - 1) / stride), zero,
        [&](Gen &c, Value i, ValueRange acc) -> SmallVector<Value> {
          SmallVector<Value> next(acc.begin(), acc.end());
          for (int64_t u = 0; u < kUnroll; ++u) {
            Value kk = c.add(base, c.add(c.mul(i, c.idx(stride)),
                                         c.idx(32 * u)));
            Value in = c.lt(kk, c.idx(k));
            Value at = c.select(in, kk, c.idx(0));
            Value wv = c.select(in, c.toF32(c.load(y, c.add(yRow, at))),
                                c.f32(0.0));
            for (int64_t r = 0; r < kRowsPerCTA; ++r) {
              Value xAt = c.add(c.add(c.mul(rowOf[r], c.idx(xD0 * xD1)),
                                      c.mul(bb, c.idx(xD1))),
                                at);
              next[r] = c.addF(next[r], c.mulF(wv, c.toF32(c.load(x, xAt))));
            }
          }
          return next;
        });
    Value first = g.cmpI(arith::CmpIPredicate::eq, lane, g.idx(0));
    for (int64_t r = 0; r < kRowsPerCTA; ++r) {
      Value sum = warpSumF32(g, loop.getResult(r));
      g.ifThen(first, [&](Gen &c) {
        if (!splitK)
          c.ifThen(valid[r], [&](Gen &d) { store(d, sum, r, a, bb); });
        else
          c.store(sum, shared,
                  c.add(c.mul(warp, c.idx(kRowsPerCTA)), c.idx(r)));
      });
    }
    if (!splitK)
      return;
    gpu::BarrierOp::create(g.b, g.loc);
    g.ifThen(g.lt(tid, g.idx(kRowsPerCTA)), [&](Gen &c) {
      Value total = c.f32(0.0);
      for (int64_t w = 0; w < kWarps; ++w)
        total = c.addF(total, c.load(shared, c.add(c.idx(w * kRowsPerCTA),
                                                  tid)));
      // Thread t stores row t (the rows are known by position only).
      for (int64_t r = 0; r < kRowsPerCTA; ++r)
        c.ifThen(c.andI(valid[r], c.cmpI(arith::CmpIPredicate::eq, tid,
                                         c.idx(r))),
                 [&](Gen &d) { store(d, total, r, a, bb); });
    });
    // The buffer is written again by the next output.
    gpu::BarrierOp::create(g.b, g.loc);
  }

  /// Output row `a` of the CTA's rows: its padded lanes, then (a < Ny) its
  /// real ones. `a` is uniform over whoever computes it (the CTA with
  /// splitK, else the warp), so every thread reaches the barriers.
  void emitRow(Gen &g, Value a) {
    g.ifThen(g.lt(a, g.idx(oD0)), [&](Gen &c) {
      for (int64_t r = 0; r < kRowsPerCTA; ++r)
        c.ifThen(valid[r], [&](Gen &d) {
          zeroPaddedLanes(d, out, rowOf[r], a, splitK ? tid : lane,
                          splitK ? kThreads : 32, ny, nx, oD0, oD1);
        });
    });
    g.ifThen(g.lt(a, g.idx(ny)), [&](Gen &c) {
      c.forLoop(c.idx(0), c.idx(nx), {}, [&](Gen &w, Value bb, ValueRange) {
        emitOutput(w, a, bb);
        return SmallVector<Value>{};
      });
    });
  }
};

/// Emits one variant of the streamed GeMM `op` as kernel `name` and records
/// it as an alternative of `choice`.
void emitStreamedGemmVariant(FlowContext &ctx, GeMMOp op, StringRef name,
                             StringRef choice, bool splitK) {
  MLIRContext *mctx = op->getContext();
  Location loc = op.getLoc();
  auto xt = cast<VTensorType>(op.getX().getType());
  auto yt = cast<VTensorType>(op.getY().getType());
  std::string xBuf = ctx.bufferOf.lookup(op.getX());
  std::string yBuf = ctx.bufferOf.lookup(op.getY());
  std::string oBuf = ctx.allocScratch(op.getResult());
  StreamedGemm S;
  S.splitK = splitK;
  std::tie(S.xD0, S.xD1) = strideExtents(ctx, xBuf);
  std::tie(S.oD0, S.oD1) = strideExtents(ctx, oBuf);
  S.ny = yt.getD0();
  S.nx = xt.getD0();
  S.k = yt.getD1();
  S.yD1 = strideExtents(ctx, yBuf).second;
  // splitK: output rows a CTA computes in turn (grid z stays within 65535).
  int64_t perZ = (S.oD0 + kMaxGridZ - 1) / kMaxGridZ;

  SmallVector<Param> params = {
      {abi::kRows.str(), false, {}},
      {xBuf, true, ctx.abi.tensors[xBuf].elementType},
      {yBuf, true, ctx.abi.tensors[yBuf].elementType},
      {oBuf, true, Float32Type::get(mctx)}};
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, params, kThreads);
  Gen g{b, loc};
  S.rows = g.toIndex(func.getArgument(0));
  S.x = func.getArgument(1);
  S.y = func.getArgument(2);
  S.out = func.getArgument(3);
  if (splitK)
    S.shared = sharedBuffer(func, kWarps * kRowsPerCTA, b.getF32Type());
  Value first = g.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                      g.idx(kRowsPerCTA));
  Value z = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  S.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  S.lane = g.remU(S.tid, g.idx(32));
  S.warp = g.divU(S.tid, g.idx(32));
  // Row r of the CTA, clamped into range (its loads stay in the buffer;
  // its stores are predicated on `valid`).
  for (int64_t r = 0; r < kRowsPerCTA; ++r) {
    Value s = g.add(first, g.idx(r));
    S.valid.push_back(g.lt(s, S.rows));
    S.rowOf.push_back(g.select(S.valid.back(), s, first));
  }
  if (splitK)
    g.forLoop(g.idx(0), g.idx(perZ), {}, [&](Gen &h, Value j, ValueRange) {
      S.emitRow(h, h.add(h.mul(z, h.idx(perZ)), j));
      return SmallVector<Value>{};
    });
  else
    S.emitRow(g, g.add(g.mul(z, g.idx(kWarps)), S.warp));
  gpu::ReturnOp::create(b, loc);
  keepLoopsRolled(func);

  recordItemsKernel(ctx, name, abi::kRows, kRowsPerCTA,
                    splitK ? (S.oD0 + perZ - 1) / perZ
                           : (S.oD0 + kWarps - 1) / kWarps,
                    splitK ? kWarps * kRowsPerCTA * 4 : 0, params, xBuf,
                    yBuf, oBuf, choice);
}
} // namespace

LogicalResult mlir::vortex::gpugen::emitStreamedGemmKernel(FlowContext &ctx,
                                                           GeMMOp op,
                                                           StringRef name) {
  if (ctx.bufferOf.lookup(op.getX()).empty() ||
      ctx.bufferOf.lookup(op.getY()).empty())
    return op.emitOpError("reads a value that no buffer holds");
  // Few rows: a CTA per output row and 8 rows (warps splitting k) fills the
  // device; when that grid takes more than one wave, a warp per output row
  // reads x once for 4 of them (the runtime picks: manifest `choice`).
  emitStreamedGemmVariant(ctx, op, name, name, /*splitK=*/true);
  emitStreamedGemmVariant(ctx, op, (name + "_w").str(), name,
                          /*splitK=*/false);
  return success();
}

bool mlir::vortex::gpugen::isCopiedReshape(Operation *op) {
  auto rs = dyn_cast<ReshapeOp>(op);
  if (!rs || rs.getSchedule() != Schedule::S)
    return false;
  // Paged and slotted inputs are addressed through the CSR (a block id per
  // position): the workload kernel's loads do that.
  // Index values (i32) keep the workload kernel too (this one copies f32),
  // and so does a parameter input (one row broadcast to every position).
  auto in = cast<VTensorType>(rs.getInput().getType());
  return isa<FloatType>(in.getElementType()) &&
         (in.isBatched() || in.isRagged());
}

LogicalResult mlir::vortex::gpugen::emitReshapeKernel(FlowContext &ctx,
                                                      ReshapeOp op,
                                                      StringRef name) {
  MLIRContext *mctx = op->getContext();
  Location loc = op.getLoc();
  auto it = cast<VTensorType>(op.getInput().getType());
  auto ot = cast<VTensorType>(op.getResult().getType());
  std::string inBuf = ctx.bufferOf.lookup(op.getInput());
  if (inBuf.empty())
    return op.emitOpError("reads a value that no buffer holds");
  std::string outBuf = ctx.allocScratch(op.getResult());
  auto [iD0, iD1] = strideExtents(ctx, inBuf);
  auto [oD0, oD1] = strideExtents(ctx, outBuf);
  int64_t inCols = it.getD1(), outCols = ot.getD1();
  int64_t real = ot.getD0() * ot.getD1();
  std::string lead = ctx.abi.tensors[outBuf].shape[0];

  SmallVector<Param> params = {
      {lead, false, {}},
      {inBuf, true, ctx.abi.tensors[inBuf].elementType},
      {outBuf, true, Float32Type::get(mctx)}};
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, params, kThreads);
  Gen g{b, loc};
  Value count = g.toIndex(func.getArgument(0));
  Value in = func.getArgument(1), out = func.getArgument(2);
  Value item = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value inRow = item;
  g.ifThen(g.lt(item, count), [&](Gen &h) {
    strided(h, h.idx(0), h.idx(oD0 * oD1), tid, kThreads, {},
            [&](Gen &c, Value e, ValueRange) -> SmallVector<Value> {
              // Padded element e = (r, col) of the result; real iff inside
              // the real extents, then flat index f = r * outCols + col.
              Value r = c.divU(e, c.idx(oD1)), col = c.remU(e, c.idx(oD1));
              Value f = c.add(c.mul(r, c.idx(outCols)), col);
              Value isReal = c.andI(c.lt(col, c.idx(outCols)),
                                    c.lt(f, c.idx(real)));
              Value fi = c.select(isReal, f, c.idx(0));
              Value src = c.add(
                  c.mul(inRow, c.idx(iD0 * iD1)),
                  c.add(c.mul(c.divU(fi, c.idx(inCols)), c.idx(iD1)),
                        c.remU(fi, c.idx(inCols))));
              Value v = c.toF32(c.load(in, src));
              c.store(c.select(isReal, v, c.f32(0.0)), out,
                      c.add(c.mul(item, c.idx(oD0 * oD1)), e));
              return {};
            });
  });
  gpu::ReturnOp::create(b, loc);
  keepLoopsRolled(func);

  recordItemsKernel(ctx, name, lead, 1, 1, 0, params, inBuf, "", outBuf,
                    "");
  return success();
}
