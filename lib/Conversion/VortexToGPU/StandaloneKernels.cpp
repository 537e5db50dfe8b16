//===- StandaloneKernels.cpp - Standalone ops as plain kernels ------------===//
//
// Standalone (Schedule.S) ops whose work is a stream, not a tile: two of the
// indexer and the learned descriptor of the cache side. Each gets a plain
// kernel here instead of a workload kernel, which would hold its operand as
// one padded tile per row.
//
// GeMM with a parameter weight over the tile bound, or grouped. vortex_torch
// runs GeMM with a PARAMETER weight standalone (a torch.matmul), so a
// learned weight never enters a fused kernel. A weight that fits a tile is
// held by the workload kernel like any other operand; a larger one
// (docs/contract.md, "Bounds") and a grouped GeMM's are streamed from
// memory:
//
//   out[s, a, b] = sum_k y[a, k] * x[s, g Nx/G + b, k]  (g = a / (Ny/G);
//                                        y [1, Ny, K] parameter; G = 1
//                                        without groups)
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
// A learned descriptor (cache side): grid (num_new, 1, H m); CTA (c, z)
// mixes block c's tokens into landmark row z = h m + j in shared memory
// (threads over the d channels, a loop over the bs tokens), then its warps
// take the r outputs in turn, each the dot product of that row with
// proj[h r + i] over d (lanes over d, proj read coalesced; a CTA of each
// block reads it, from L2 after the first). Its stores go to the field's
// real extents only, in the field's dtype.
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

/// Records a kernel of `step` whose grid is `perCTA` items of `lead` a CTA
/// (times `gridZ`).
void recordItemsKernel(FlowContext &ctx, StringRef name, Step step,
                       StringRef lead, int64_t perCTA, int64_t gridZ,
                       int64_t sharedBytes, ArrayRef<Param> params,
                       ArrayRef<std::string> reads,
                       ArrayRef<std::string> writes, StringRef choice) {
  KernelRecord rec;
  rec.name = name.str();
  rec.step = step;
  rec.grid = GridKind::Items;
  rec.itemsOf = lead.str();
  rec.perCTA = perCTA;
  rec.gridZ = gridZ;
  rec.threads = kThreads;
  rec.sharedBytes = sharedBytes;
  rec.params.assign(params.begin(), params.end());
  rec.reads.assign(reads.begin(), reads.end());
  rec.writes.assign(writes.begin(), writes.end());
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
  /// nx: the result's columns (x's rows of one group); nyPerGroup: y's
  /// rows of one group (ny without groups).
  int64_t ny, nx, nyPerGroup, k, xD0, xD1, yD1, oD0, oD1;

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
    // Group a / nyPerGroup of x's rows: x row (a / nyPerGroup) * nx + b.
    Value xRow = g.add(g.mul(g.divU(a, g.idx(nyPerGroup)), g.idx(nx)), bb);
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
                                      c.mul(xRow, c.idx(xD1))),
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
  int64_t groups = op.getNumGroups();
  S.ny = yt.getD0();
  S.nx = xt.getD0() / groups;
  S.nyPerGroup = S.ny / groups;
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

  recordItemsKernel(ctx, name, Step::Indexer, abi::kRows, kRowsPerCTA,
                    splitK ? (S.oD0 + perZ - 1) / perZ
                           : (S.oD0 + kWarps - 1) / kWarps,
                    splitK ? kWarps * kRowsPerCTA * 4 : 0, params,
                    {xBuf, yBuf}, {oBuf}, choice);
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

  recordItemsKernel(ctx, name, Step::Indexer, lead, 1, 1, 0, params,
                    {inBuf}, {outBuf}, "");
  return success();
}

namespace {
/// The learned descriptor kernel's values (see the file comment).
struct LearnedDescriptor {
  Value x, mix, proj, field, shared, tid, warp, lane;
  int64_t bs, d, m, r, hm, xStride, mixD1, projD1, fieldRow, fD1;
  Type fieldType;

  /// shared[e] = sum_t mix[row, t] x[block, t, e]: the block's tokens
  /// mixed into landmark `row`, the CTA's threads striding over e.
  void emitMix(Gen &g, Value base, Value row) {
    Value mixRow = g.mul(row, g.idx(mixD1));
    strided(g, g.idx(0), g.idx(d), tid, kThreads, {},
            [&](Gen &c, Value e, ValueRange) -> SmallVector<Value> {
              auto loop = c.forLoop(
                  c.idx(0), c.idx(bs), {c.f32(0.0)},
                  [&](Gen &t, Value tok, ValueRange acc) -> SmallVector<Value> {
                    Value w = t.toF32(t.load(mix, t.add(mixRow, tok)));
                    Value v = t.toF32(t.load(
                        x, t.add(base, t.add(t.mul(tok, t.idx(xStride)), e))));
                    return {t.addF(acc[0], t.mulF(w, v))};
                  });
              c.store(loop.getResult(0), shared, e);
              return {};
            });
  }

  /// field[block, row, i] = <shared, proj[h r + i]> for i < r, a warp per
  /// i, its lanes striding over e (each proj row read coalesced).
  void emitProject(Gen &g, Value fieldBase, Value row) {
    Value h = g.divU(row, g.idx(m));
    int64_t rounds = (r + kWarps - 1) / kWarps;
    g.forLoop(g.idx(0), g.idx(rounds), {}, [&](Gen &c, Value it, ValueRange) {
      Value i = c.add(c.mul(it, c.idx(kWarps)), warp);
      c.ifThen(c.lt(i, c.idx(r)), [&](Gen &w) {
        Value pRow = w.mul(w.add(w.mul(h, w.idx(r)), i), w.idx(projD1));
        int64_t span = 32 * kUnroll;
        auto loop = w.forLoop(
            w.idx(0), w.idx((d + span - 1) / span), {w.f32(0.0)},
            [&](Gen &k, Value j, ValueRange acc) -> SmallVector<Value> {
              Value sum = acc[0];
              for (int64_t u = 0; u < kUnroll; ++u) {
                Value e = k.add(lane, k.add(k.mul(j, k.idx(span)),
                                            k.idx(32 * u)));
                Value in = k.lt(e, k.idx(d));
                Value at = k.select(in, e, k.idx(0));
                Value term = k.mulF(k.load(shared, at),
                                    k.toF32(k.load(proj, k.add(pRow, at))));
                sum = k.addF(sum, k.select(in, term, k.f32(0.0)));
              }
              return {sum};
            });
        Value total = warpSumF32(w, loop.getResult(0));
        w.ifThen(w.cmpI(arith::CmpIPredicate::eq, lane, w.idx(0)),
                 [&](Gen &o) {
                   o.store(o.fromF32(total, fieldType), field,
                           o.add(fieldBase, o.add(o.mul(row, o.idx(fD1)), i)));
                 });
      });
      return SmallVector<Value>{};
    });
  }
};
} // namespace

LogicalResult mlir::vortex::gpugen::emitLearnedDescriptorKernel(
    FlowContext &ctx, LearnedDescriptorOp op, StringRef name) {
  MLIRContext *mctx = op->getContext();
  Location loc = op.getLoc();
  std::string xBuf = ctx.bufferOf.lookup(op.getBlock());
  std::string mBuf = ctx.bufferOf.lookup(op.getMix());
  std::string pBuf = ctx.bufferOf.lookup(op.getProj());
  std::string fBuf = ctx.bufferOf.lookup(op.getField());
  if (xBuf.empty() || mBuf.empty() || pBuf.empty() || fBuf.empty())
    return op.emitOpError("reads a value that no buffer holds");
  auto xt = cast<VTensorType>(op.getBlock().getType());
  LearnedDescriptor L;
  L.bs = xt.getD0();
  L.d = xt.getD1();
  L.m = op.getLandmarks();
  L.r = op.getRank();
  L.hm = cast<VTensorType>(op.getMix().getType()).getD0();
  L.xStride = strideExtents(ctx, xBuf).second;
  int64_t xBlock = strideExtents(ctx, xBuf).first * L.xStride;
  L.mixD1 = strideExtents(ctx, mBuf).second;
  L.projD1 = strideExtents(ctx, pBuf).second;
  auto [fD0, fD1] = strideExtents(ctx, fBuf);
  L.fD1 = fD1;
  L.fieldType = ctx.abi.tensors[fBuf].elementType;
  // Landmark rows a CTA computes in turn (grid z stays within 65535).
  int64_t perZ = (L.hm + kMaxGridZ - 1) / kMaxGridZ;
  std::string status = ctx.statusBuffer();
  Type i32 = IntegerType::get(mctx, 32);

  SmallVector<Param> params = {
      {abi::kBlockIds.str(), true, i32},
      {abi::kNumNew.str(), false, {}},
      {xBuf, true, ctx.abi.tensors[xBuf].elementType},
      {mBuf, true, ctx.abi.tensors[mBuf].elementType},
      {pBuf, true, ctx.abi.tensors[pBuf].elementType},
      {fBuf, true, L.fieldType},
      {status, true, i32},
      {abi::kNumBlocks.str(), false, {}}};
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp func = createKernel(ctx, b, loc, name, params, kThreads);
  Gen g{b, loc};
  Value blockIds = func.getArgument(0);
  Value numNew = g.toIndex(func.getArgument(1));
  L.x = func.getArgument(2);
  L.mix = func.getArgument(3);
  L.proj = func.getArgument(4);
  L.field = func.getArgument(5);
  Value statusBuf = func.getArgument(6);
  Value numBlocks = g.toIndex(func.getArgument(7));
  L.shared = sharedBuffer(func, L.d, b.getF32Type());
  Value item = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value z = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  L.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  L.lane = g.remU(L.tid, g.idx(32));
  L.warp = g.divU(L.tid, g.idx(32));
  // Every condition below is uniform over the CTA, so every thread reaches
  // the barriers. A negative id completes no block (skipped); one >=
  // num_blocks is recorded (docs/gpu.md, "Guards") and skipped.
  g.ifThen(g.lt(item, numNew), [&](Gen &h) {
    Value id = h.toIndex(h.load(blockIds, item));
    Value isBlock = h.cmpI(arith::CmpIPredicate::sge, id, h.idx(0));
    Value inRange = h.lt(id, numBlocks);
    Value reporter = h.andI(
        h.cmpI(arith::CmpIPredicate::eq, L.tid, h.idx(0)),
        h.cmpI(arith::CmpIPredicate::eq, z, h.idx(0)));
    h.ifThen(h.andI(reporter, h.andI(isBlock, h.notI(inRange))),
             [&](Gen &c) {
               c.recordStatus(statusBuf, abi::kBadBlockId, id, item);
             });
    h.ifThen(h.andI(isBlock, inRange), [&](Gen &c) {
      Value base = c.mul(id, c.idx(xBlock));
      Value fieldBase = c.mul(id, c.idx(fD0 * fD1));
      c.forLoop(c.idx(0), c.idx(perZ), {}, [&](Gen &w, Value j, ValueRange) {
        Value row = w.add(w.mul(z, w.idx(perZ)), j);
        w.ifThen(w.lt(row, w.idx(L.hm)), [&](Gen &k) {
          L.emitMix(k, base, row);
          gpu::BarrierOp::create(k.b, k.loc);
          L.emitProject(k, fieldBase, row);
          // The next row writes the shared row again.
          gpu::BarrierOp::create(k.b, k.loc);
        });
        return SmallVector<Value>{};
      });
    });
  });
  gpu::ReturnOp::create(b, loc);
  keepLoopsRolled(func);

  recordItemsKernel(ctx, name, Step::Cache, abi::kNumNew, 1,
                    (L.hm + perZ - 1) / perZ, L.d * 4, params,
                    {xBuf, mBuf, pBuf, abi::kBlockIds.str()},
                    {fBuf, status}, "");
  return success();
}
