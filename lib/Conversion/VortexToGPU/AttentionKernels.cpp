//===- AttentionKernels.cpp - Flash-decoding over a CSR of pool blocks ----===//
//
// The attend step (docs/gpu.md, "Attention"): o = softmax(q k^T) v over the
// tokens of each row's CSR entries. One CTA per (row, KV split) loads each
// K/V row of its share once, for all of the row's T x G query heads: a
// group of L lanes holds one token's row (8 elements a lane, 16 bytes for
// bf16); the dot products reduce-scatter over those lanes, so each lane
// keeps the online softmax of one head and reads the others' p by
// shuffles; the CTA merges its groups' states through shared memory.
// Splits write normalized partials and their lse to scratch; a combine
// kernel merges them by lse.
// The split count is a launch parameter, so the text does not depend on it.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"
#include "Collectives.h"

#include <cmath>

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

constexpr int64_t kThreads = 128;
/// Elements of a K/V row a lane loads: 16 bytes of bf16, 8 of fp8.
constexpr int64_t kLaneElems = 8;
/// Tokens a group loads per iteration: the K and V rows of all of them are
/// in flight at once.
constexpr int64_t kTokensPerGroup = 4;
/// Heads a pass holds in registers (q and the accumulators: 16 per head
/// and column chunk).
constexpr int64_t kMaxHeadsPerPass = 8;
/// Columns a warp covers at once (32 lanes of 8): a row wider than this
/// (D > 256, an MLA latent of 576) gives each lane one 8-column slice per
/// chunk of 256 columns.
constexpr int64_t kChunkCols = 32 * kLaneElems;
/// The widest row: three chunks (MLA's 512 + 64).
constexpr int64_t kMaxHeadDim = 3 * kChunkCols;

struct AttendPlan {
  AttendShape shape;
  int64_t heads;       // T x G
  int64_t lanes;       // L: lanes per token row
  int64_t groups;      // token groups of a CTA
  int64_t chunk;       // tokens a CTA handles per iteration
  int64_t headsPerPass;
  int64_t passes;
  int64_t paddedDim;   // L x 8 x chunks
  int64_t chunks;      // 256-column chunks of a row (1 for D <= 256)
  int64_t tokens = kTokensPerGroup; // per group and iteration
  /// Whether an iteration loads the next one's K and V rows before it
  /// computes on its own (loaded by the iteration before): 1.3x faster at
  /// 64 x 8 rows of 128 blocks on the H100 (docs/measurements/attend-h100.md).
  bool prefetch = true;
  /// K and V rows are loaded nontemporal (FlowContext::streamingLoads).
  bool streaming = true;

  AttendPlan(const AttendShape &s) : shape(s) {
    heads = s.queryTokens * s.groupSize;
    chunks = llvm::divideCeil(s.headDim, kChunkCols);
    lanes = chunks > 1
                ? 32
                : llvm::PowerOf2Ceil(llvm::divideCeil(s.headDim, kLaneElems));
    // A wide row's q, accumulators and in-flight rows scale with its
    // chunks: fewer heads a pass and tokens an iteration keep them in
    // registers.
    if (chunks > 1)
      tokens = 2;
    groups = kThreads / 32 * (32 / lanes);
    chunk = groups * tokens;
    passes = llvm::divideCeil(heads, kMaxHeadsPerPass / chunks);
    headsPerPass = llvm::divideCeil(heads, passes);
    paddedDim = lanes * kLaneElems * chunks;
    // An int4 row's lane loads one chunk (checkAttendShape: D <= 256).
    assert((!s.kvType.isInteger(4) || chunks == 1) &&
           "a packed int4 row takes one chunk");
  }
  /// Elements of a row a lane holds: 8 a chunk.
  int64_t laneElems() const { return kLaneElems * chunks; }
  /// Packed int4 k/v (kv type i4): a lane loads 4 bytes and the scales.
  bool int4() const { return shape.kvType.isInteger(4); }
  /// Values a loaded K or V row takes: a vector a chunk, or an int4 row's
  /// bytes and scale.
  int64_t rowParts() const { return int4() ? 2 : chunks; }
  bool partialPass() const { return passes * headsPerPass != heads; }
};

/// A lane's 8 elements of the row at element `base`, in storage.
Value loadRaw(Gen &g, Value memref, Value base, Type storage,
              bool nontemporal) {
  unsigned bytes = storage.getIntOrFloatBitWidth() / 8;
  auto vecType = VectorType::get({kLaneElems}, storage);
  return vector::LoadOp::create(
      g.b, g.loc, vecType, memref, ValueRange{base}, nontemporal,
      llvm::Align(std::min<uint64_t>(16, kLaneElems * bytes)));
}

SmallVector<Value> widen(Gen &g, Value vec) {
  SmallVector<Value> out;
  for (int64_t e = 0; e < kLaneElems; ++e)
    out.push_back(g.toF32(vector::ExtractOp::create(g.b, g.loc, vec, e)));
  return out;
}

/// Lane `col`'s 8 elements of the row at element `base`, widened to f32.
SmallVector<Value> loadLane(Gen &g, Value memref, Value base, Type storage,
                            bool nontemporal) {
  return widen(g, loadRaw(g, memref, base, storage, nontemporal));
}

/// A lane's share of a packed int4 row (docs/contract.md "INT4 KV"): the 4
/// bytes of channels [col, col + 8) of the token at element offset
/// `offset` (row x D), then k's 8 per-channel scales of its block or v's
/// per-token scale.
SmallVector<Value> loadInt4(Gen &g, Value bytes, Value scale, Value offset,
                            Value col, int64_t blockSize, int64_t dim,
                            bool isV, bool nontemporal) {
  auto byteType = VectorType::get({kLaneElems / 2}, g.b.getI8Type());
  Value packed = vector::LoadOp::create(
      g.b, g.loc, byteType, bytes,
      ValueRange{g.divU(g.add(offset, col), g.idx(2))}, nontemporal,
      llvm::Align(kLaneElems / 2));
  if (isV)
    return {packed, g.load(scale, g.divU(offset, g.idx(dim)))};
  Value block = g.divU(offset, g.idx(blockSize * dim));
  auto scaleType = VectorType::get({kLaneElems}, g.b.getF32Type());
  Value perChannel = vector::LoadOp::create(
      g.b, g.loc, scaleType, scale,
      ValueRange{g.add(g.mul(block, g.idx(dim)), col)},
      /*nontemporal=*/false, llvm::Align(16));
  return {packed, perChannel};
}

/// The 8 f32 values of loadInt4's parts: (nibble - 7) * scale, the low
/// nibble of a byte first.
SmallVector<Value> widenInt4(Gen &g, ValueRange parts, bool isV) {
  SmallVector<Value> out;
  Type i8 = g.b.getI8Type();
  Value mask = arith::ConstantIntOp::create(g.b, g.loc, i8, 15);
  Value four = arith::ConstantIntOp::create(g.b, g.loc, i8, 4);
  for (int64_t e = 0; e < kLaneElems; ++e) {
    Value byte = vector::ExtractOp::create(g.b, g.loc, parts[0], e / 2);
    if (e % 2)
      byte = arith::ShRUIOp::create(g.b, g.loc, byte, four);
    Value nibble = arith::AndIOp::create(g.b, g.loc, byte, mask);
    Value q = g.subF(arith::UIToFPOp::create(g.b, g.loc, g.b.getF32Type(),
                                             nibble),
                     g.f32(static_cast<double>(abi::kInt4Bias)));
    Value sc = isV ? parts[1]
                   : vector::ExtractOp::create(g.b, g.loc, parts[1], e);
    out.push_back(g.mulF(q, sc));
  }
  return out;
}

} // namespace

Value mlir::vortex::gpugen::negInf(Gen &g) { return g.f32(-INFINITY); }
Value mlir::vortex::gpugen::isNegInf(Gen &g, Value x) {
  return g.cmpF(arith::CmpFPredicate::OEQ, x, negInf(g));
}
Value mlir::vortex::gpugen::exp2(Gen &g, Value x) {
  return math::Exp2Op::create(g.b, g.loc, x);
}
Value mlir::vortex::gpugen::xorShuffle(Gen &g, Value v, int64_t offset) {
  return gpu::ShuffleOp::create(g.b, g.loc, v, offset, 32,
                                gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

AttendRow mlir::vortex::gpugen::attendRow(Gen &g, int64_t bs, Value indptr,
                                          Value lastLen, Value r, Value total,
                                          Value numBlocks) {
  Value s = g.toIndex(g.load(indptr, r));
  Value e = g.toIndex(g.load(indptr, g.add(r, g.idx(1))));
  Value start = g.minU(s, total), end = g.minU(e, total);
  end = g.select(g.cmpI(arith::CmpIPredicate::ult, end, start), start, end);
  Value n = g.sub(end, start);
  Value last = g.toIndex(g.load(lastLen, r));
  last = g.minI(g.maxI(last, g.idx(0)), g.idx(bs));
  Value full = g.mul(g.sub(g.maxI(n, g.idx(1)), g.idx(1)), g.idx(bs));
  Value none = g.orI(g.cmpI(arith::CmpIPredicate::eq, n, g.idx(0)),
                     g.cmpI(arith::CmpIPredicate::eq, numBlocks, g.idx(0)));
  Value len = g.select(none, g.idx(0), g.add(full, last));
  return {start, n, len};
}

std::pair<Value, Value>
mlir::vortex::gpugen::splitTokens(Gen &g, const AttendRow &row, int64_t bs,
                                  Value splits, Value split) {
  Value perSplit = g.ceilDiv(row.n, splits);
  Value tBeg = g.minI(g.mul(g.mul(split, perSplit), g.idx(bs)), row.len);
  Value tEnd = g.minI(g.add(tBeg, g.mul(perSplit, g.idx(bs))), row.len);
  return {tBeg, tEnd};
}

void mlir::vortex::gpugen::mergeGroupsAndStore(
    Gen &g, const AttendShape &shape, const SplitArgs &a,
    const GroupStates &st, Value h0, Value r, Value split, Value tid,
    int64_t threads) {
  int64_t hp = st.slotHeads, d = shape.headDim;
  int64_t heads = shape.queryTokens * shape.groupSize;
  Value smM = st.m, smL = st.l, smAcc = st.acc;
  // Merge the groups: thread-strided over (head, column).
  Value slots = g.divU(g.extent(a.partialLse), g.idx(heads));
  Value slot = g.add(g.mul(r, a.splits), split);
  Value single = g.cmpI(arith::CmpIPredicate::eq, a.splits, g.idx(1));
  strided(g, g.idx(0), g.idx(hp * d), tid, threads, {},
          [&](Gen &x, Value pos, ValueRange) -> SmallVector<Value> {
            Value h = x.divU(pos, x.idx(d)), c = x.remU(pos, x.idx(d));
            Value mMax = negInf(x);
            for (int64_t gr = 0; gr < st.groups; ++gr)
              mMax = x.maxF(mMax, x.load(smM, x.add(x.idx(gr * hp), h)));
            Value lSum = x.f32(0.0), oSum = x.f32(0.0);
            for (int64_t gr = 0; gr < st.groups; ++gr) {
              Value sl = x.add(x.idx(gr * hp), h);
              Value mg = x.load(smM, sl);
              Value w = x.select(isNegInf(x, mg), x.f32(0.0),
                                 exp2(x, x.subF(mg, mMax)));
              lSum = math::FmaOp::create(x.b, x.loc, w, x.load(smL, sl), lSum);
              Value av = x.load(
                  smAcc, x.add(x.mul(sl, x.idx(st.accStride)), c));
              oSum = math::FmaOp::create(x.b, x.loc, w, av, oSum);
            }
            Value has = x.cmpF(arith::CmpFPredicate::OGT, lSum, x.f32(0.0));
            Value val = x.select(has, x.divF(oSum, lSum), x.f32(0.0));
            Value lg = math::Log2Op::create(x.b, x.loc, lSum);
            Value lse = x.select(
                has, x.mulF(x.addF(mMax, lg), x.f32(kLn2)), negInf(x));
            Value head = x.add(h0, h);
            Value ok = x.lt(head, x.idx(heads));
            Value first = x.cmpI(arith::CmpIPredicate::eq, c, x.idx(0));
            x.ifThen(x.andI(ok, single), [&](Gen &y) {
              Value oh = y.add(y.mul(r, y.idx(heads)), head);
              y.store(y.fromF32(val, shape.qType), a.o,
                      y.add(y.mul(oh, y.idx(d)), c));
              y.ifThen(first, [&](Gen &z) { z.store(lse, a.lse, oh); });
            });
            Value fits = x.andI(x.notI(single), x.lt(slot, slots));
            x.ifThen(x.andI(ok, fits), [&](Gen &y) {
              Value sh = y.add(y.mul(slot, y.idx(heads)), head);
              y.store(val, a.partialO, y.add(y.mul(sh, y.idx(d)), c));
              y.ifThen(first, [&](Gen &z) { z.store(lse, a.partialLse, sh); });
            });
            return {};
          });
}

namespace {

/// What one pass of a split CTA works on.
struct PassState {
  const AttendPlan &p;
  Value k, v, indices, start, numBlocks, tBeg, tEnd, col, gi;
  /// The first column of the lane's slice of each chunk, clamped to 0 for
  /// a slice past D (it loads in bounds and adds nothing), and whether it
  /// is inside D (null where every slice is).
  SmallVector<Value> colLoad, colOk;
  /// A packed int4 pool's scales (null otherwise).
  Value kScale, vScale;
  SmallVector<Value> q; // [headsPerPass][laneElems], scaled by log2e
  /// The head whose scores this lane ends up with (reduceScatter), where
  /// that head's visible tokens end, and the lane of its group's first
  /// holder of head h, as a shuffle source.
  Value ownHead, ownVisEnd, groupBase;
};

/// Lane offset in a group of the first lane that holds head `h` after
/// reduceScatter: at the level of offset o that halves c values, the lanes
/// with bit o keep the upper half.
int64_t holderOffset(const AttendPlan &p, int64_t h) {
  int64_t off = 0;
  for (int64_t c = llvm::PowerOf2Ceil(p.headsPerPass), o = p.lanes / 2;
       c > 1; c /= 2, o /= 2)
    if (h & (c / 2))
      off += o;
  return off;
}

/// Sums `part` (one partial per head, padded to a power of two) over the
/// group's lanes, leaving each lane the total of one head: each level
/// sends half of the values to the partner lane, so a group of L lanes
/// shuffles c - 1 + log2(L / c) values instead of c log2 L.
Value reduceScatter(Gen &g, const AttendPlan &p, SmallVector<Value> part,
                    Value lane) {
  int64_t c = part.size(), o = p.lanes / 2;
  for (; c > 1; c /= 2, o /= 2) {
    Value upper = g.cmpI(arith::CmpIPredicate::ne,
                         g.andI(lane, g.idx(o)), g.idx(0));
    for (int64_t i = 0; i < c / 2; ++i) {
      Value lo = part[i], hi = part[i + c / 2];
      Value send = g.select(upper, lo, hi);
      Value keep = g.select(upper, hi, lo);
      part[i] = g.addF(keep, xorShuffle(g, send, o));
    }
  }
  for (; o >= 1; o /= 2)
    part[0] = g.addF(part[0], xorShuffle(g, part[0], o));
  return part[0];
}

/// The lane's share of token row `offset` (from tokenOffset) of K or V,
/// as loaded: AttendPlan::rowParts values.
SmallVector<Value> loadRow(Gen &g, const PassState &st, bool isV,
                           Value offset) {
  const AttendPlan &p = st.p;
  if (p.int4())
    return loadInt4(g, isV ? st.v : st.k, isV ? st.vScale : st.kScale,
                    offset, st.colLoad[0], p.shape.blockSize,
                    p.shape.headDim, isV, p.streaming);
  SmallVector<Value> out;
  for (Value col : st.colLoad)
    out.push_back(loadRaw(g, isV ? st.v : st.k, g.add(offset, col),
                          p.shape.kvType, p.streaming));
  return out;
}

/// loadRow's values as the lane's 8 f32 elements.
SmallVector<Value> widenRow(Gen &g, const PassState &st, bool isV,
                            ValueRange parts) {
  if (st.p.int4())
    return widenInt4(g, parts, isV);
  SmallVector<Value> out;
  for (Value part : parts)
    llvm::append_range(out, widen(g, part));
  return out;
}

/// Lane `groupBase + off`'s `v`.
Value fromLane(Gen &g, Value v, Value groupBase, int64_t off) {
  Value src = g.toI32(g.add(groupBase, g.idx(off)));
  return gpu::ShuffleOp::create(g.b, g.loc, v, src, g.i32(32),
                                gpu::ShuffleMode::IDX)
      .getShuffleResult();
}

/// Element offset of token `t`'s row in the pool (0 for a token out of the
/// CTA's range: its loads stay in bounds and are masked).
Value tokenOffset(Gen &g, const PassState &st, Value t) {
  int64_t bs = st.p.shape.blockSize, d = st.p.shape.headDim;
  Value valid = g.lt(t, st.tEnd);
  return g.ifElse(
      valid, g.b.getIndexType(),
      [&](Gen &x) -> SmallVector<Value> {
        Value pos = x.add(st.start, x.divU(t, x.idx(bs)));
        Value bid = x.toIndex(x.load(st.indices, pos));
        // A bad block id reads the last block instead of faulting.
        bid = x.minU(bid, x.sub(st.numBlocks, x.idx(1)));
        Value row = x.add(x.mul(bid, x.idx(bs)), x.remU(t, x.idx(bs)));
        return {x.mul(row, x.idx(d))};
      },
      [&](Gen &x) -> SmallVector<Value> { return {x.idx(0)}; })[0];
}

/// One iteration of a group: loads its tokens' K and V rows (or, with
/// prefetch, the next iteration's), then folds them into the online
/// softmax. Each lane keeps the softmax state (m, l) of its own head and
/// the accumulators of every head for its 8 columns. `carry` is m, l,
/// acc[h][8], the offsets of the tokens to load, then with prefetch the
/// loaded K and V rows; returns the next carry.
SmallVector<Value> attendIteration(Gen &g, const PassState &st, Value it,
                                   ValueRange carry) {
  const AttendPlan &p = st.p;
  int64_t hp = p.headsPerPass, nt = p.tokens, parts = p.rowParts();
  int64_t le = p.laneElems();
  Value m = carry[0], l = carry[1];
  SmallVector<Value> acc(carry.begin() + 2, carry.begin() + 2 + hp * le);
  ValueRange rest = carry.drop_front(2 + hp * le);
  ValueRange offs = rest.take_front(nt);
  Value base = g.add(st.tBeg, g.add(g.mul(it, g.idx(p.chunk)), st.gi));
  SmallVector<Value> tok;
  for (int64_t k = 0; k < nt; ++k)
    tok.push_back(g.add(base, g.idx(k * p.groups)));
  // Every K and V load of the iteration is issued before any is used:
  // `parts` values per row, K's rows then V's.
  SmallVector<Value> loaded;
  for (bool isV : {false, true})
    for (int64_t k = 0; k < nt; ++k)
      llvm::append_range(loaded, loadRow(g, st, isV, offs[k]));
  ValueRange rows = p.prefetch ? rest.slice(nt, 2 * nt * parts)
                               : ValueRange(loaded);
  auto kRow = [&](int64_t k) { return rows.slice(k * parts, parts); };
  auto vRow = [&](int64_t k) { return rows.slice((nt + k) * parts, parts); };
  SmallVector<Value> next;
  int64_t ahead = p.prefetch ? 2 : 1;
  for (int64_t k = 0; k < nt; ++k)
    next.push_back(
        tokenOffset(g, st, g.add(tok[k], g.idx(ahead * p.chunk))));

  // Own-head scores in log2 units; a masked token is -inf by select, so a
  // NaN in an unwritten slot of the pool never reaches the softmax.
  Value lane = g.remU(gpu::ThreadIdOp::create(g.b, g.loc, gpu::Dimension::x),
                      g.idx(32));
  SmallVector<Value> s;
  for (int64_t k = 0; k < nt; ++k) {
    SmallVector<Value> kf = widenRow(g, st, false, kRow(k));
    SmallVector<Value> part(llvm::PowerOf2Ceil(hp), g.f32(0.0));
    for (int64_t h = 0; h < hp; ++h) {
      // Per chunk, a slice past D selected away (never multiplied by 0).
      Value sum;
      for (int64_t c = 0; c < p.chunks; ++c) {
        int64_t at = h * le + c * kLaneElems;
        Value dot = g.mulF(st.q[at], kf[c * kLaneElems]);
        for (int64_t e = 1; e < kLaneElems; ++e)
          dot = math::FmaOp::create(g.b, g.loc, st.q[at + e],
                                    kf[c * kLaneElems + e], dot);
        if (st.colOk[c])
          dot = g.select(st.colOk[c], dot, g.f32(0.0));
        sum = sum ? g.addF(sum, dot) : dot;
      }
      part[h] = sum;
    }
    Value dot = reduceScatter(g, p, part, lane);
    s.push_back(g.select(g.lt(tok[k], st.ownVisEnd), dot, negInf(g)));
  }
  Value mNew = m;
  for (Value sk : s)
    mNew = g.maxF(mNew, sk);
  Value alpha =
      g.select(isNegInf(g, m), g.f32(0.0), exp2(g, g.subF(m, mNew)));
  Value lNew = g.mulF(l, alpha);
  SmallVector<Value> pk;
  for (int64_t k = 0; k < nt; ++k) {
    pk.push_back(g.select(isNegInf(g, s[k]), g.f32(0.0),
                          exp2(g, g.subF(s[k], mNew))));
    lNew = g.addF(lNew, pk.back());
  }
  // Every head's alpha and p from the lane that holds it.
  SmallVector<SmallVector<Value>> vf;
  for (int64_t k = 0; k < nt; ++k) {
    vf.push_back(widenRow(g, st, true, vRow(k)));
    // Select, not a product with 0: p v would be NaN for a NaN v.
    for (Value &x : vf.back())
      x = g.select(g.lt(tok[k], st.tEnd), x, g.f32(0.0));
  }
  SmallVector<Value> out = {mNew, lNew};
  for (int64_t h = 0; h < hp; ++h) {
    int64_t off = holderOffset(p, h);
    Value ah = fromLane(g, alpha, st.groupBase, off);
    SmallVector<Value> a;
    for (int64_t e = 0; e < le; ++e)
      a.push_back(g.mulF(acc[h * le + e], ah));
    for (int64_t k = 0; k < nt; ++k) {
      Value ph = fromLane(g, pk[k], st.groupBase, off);
      for (int64_t e = 0; e < le; ++e)
        a[e] = math::FmaOp::create(g.b, g.loc, ph, vf[k][e], a[e]);
    }
    llvm::append_range(out, a);
  }
  llvm::append_range(out, next);
  if (p.prefetch)
    llvm::append_range(out, loaded);
  return out;
}

/// One pass over heads [h0, h0 + headsPerPass): the groups' loop, their
/// merge in shared memory and the stores.
void emitPass(Gen &g, const AttendPlan &p, const SplitArgs &a,
              const AttendRow &row, PassState st, Value h0, Value r,
              Value split, Value smM, Value smL, Value smAcc, Value tid) {
  int64_t hp = p.headsPerPass, d = p.shape.headDim, heads = p.heads;
  int64_t T = p.shape.queryTokens, G = p.shape.groupSize;
  Value scale = g.mulF(g.load(a.smScale, g.idx(0)), g.f32(kLog2e));
  for (int64_t h = 0; h < hp; ++h) {
    Value head = g.add(h0, g.idx(h));
    Value headOk = p.partialPass() ? g.lt(head, g.idx(heads)) : Value();
    Value safeHead = headOk ? g.select(headOk, head, g.idx(0)) : head;
    Value qRow = g.mul(g.add(g.mul(r, g.idx(heads)), safeHead), g.idx(d));
    for (Value col : st.colLoad) {
      SmallVector<Value> qv =
          loadLane(g, a.q, g.add(qRow, col), p.shape.qType, false);
      for (Value x : qv) {
        Value scaled = g.mulF(x, scale);
        if (headOk)
          scaled = g.select(headOk, scaled, g.f32(0.0));
        st.q.push_back(scaled);
      }
    }
  }
  // This lane's head after reduceScatter; query token t = head / G sees
  // all but the last T - 1 - t tokens; a padding head sees none.
  Value lane = g.remU(tid, g.idx(32));
  Value ownHead = g.idx(0);
  for (int64_t c = llvm::PowerOf2Ceil(hp), o = p.lanes / 2; c > 1;
       c /= 2, o /= 2)
    ownHead = g.add(ownHead, g.select(g.cmpI(arith::CmpIPredicate::ne,
                                             g.andI(lane, g.idx(o)),
                                             g.idx(0)),
                                      g.idx(c / 2), g.idx(0)));
  Value head = g.add(h0, ownHead);
  Value hidden = g.sub(g.idx(T - 1), g.divU(head, g.idx(G)));
  Value ownOk = g.andI(g.lt(ownHead, g.idx(hp)), g.lt(head, g.idx(heads)));
  st.ownHead = ownHead;
  st.ownVisEnd = g.select(ownOk, g.minI(st.tEnd, g.sub(row.len, hidden)),
                          g.idx(0));
  st.groupBase = g.sub(lane, g.remU(lane, g.idx(p.lanes)));
  SmallVector<Value> init = {negInf(g), g.f32(0.0)};
  for (int64_t i = 0; i < hp * p.laneElems(); ++i)
    init.push_back(g.f32(0.0));
  SmallVector<Value> first;
  for (int64_t k = 0; k < p.tokens; ++k)
    first.push_back(tokenOffset(
        g, st, g.add(st.tBeg, g.add(st.gi, g.idx(k * p.groups)))));
  if (p.prefetch) {
    // The first iteration's rows, and the second's offsets.
    SmallVector<Value> rows;
    for (bool isV : {false, true})
      for (int64_t k = 0; k < p.tokens; ++k)
        llvm::append_range(rows, loadRow(g, st, isV, first[k]));
    for (int64_t k = 0; k < p.tokens; ++k)
      init.push_back(tokenOffset(
          g, st,
          g.add(st.tBeg, g.add(st.gi, g.idx(p.chunk + k * p.groups)))));
    llvm::append_range(init, rows);
  } else {
    llvm::append_range(init, first);
  }
  Value iters = g.ceilDiv(g.sub(st.tEnd, st.tBeg), g.idx(p.chunk));
  auto loop = g.forLoop(g.idx(0), iters, init,
                        [&](Gen &x, Value it, ValueRange carry) {
                          return attendIteration(x, st, it, carry);
                        });
  ValueRange res = loop.getResults();

  // Each group's state into shared memory; the holders of a head write its
  // m and l (the same values).
  Value slot0 = g.mul(st.gi, g.idx(hp));
  g.ifThen(g.lt(ownHead, g.idx(hp)), [&](Gen &x) {
    x.store(res[0], smM, x.add(slot0, ownHead));
    x.store(res[1], smL, x.add(slot0, ownHead));
  });
  // Column col + c x 256 + e of chunk c: the padded row holds every slice.
  for (int64_t h = 0; h < hp; ++h)
    for (int64_t e = 0; e < p.laneElems(); ++e)
      g.store(res[2 + h * p.laneElems() + e], smAcc,
              g.add(g.mul(g.add(slot0, g.idx(h)), g.idx(p.paddedDim)),
                    g.add(st.col,
                          g.idx(e / kLaneElems * kChunkCols +
                                e % kLaneElems))));
  gpu::BarrierOp::create(g.b, g.loc);

  mergeGroupsAndStore(g, p.shape, a,
                      {smM, smL, smAcc, p.groups, hp, p.paddedDim}, h0, r,
                      split, tid, kThreads);
}

void emitSplitBody(Gen &g, gpu::GPUFuncOp func, const AttendPlan &p,
                   const SplitArgs &a) {
  int64_t bs = p.shape.blockSize, d = p.shape.headDim;
  int64_t slotsPerCTA = p.groups * p.headsPerPass;
  Value smM = sharedBuffer(func, slotsPerCTA, g.b.getF32Type());
  Value smL = sharedBuffer(func, slotsPerCTA, g.b.getF32Type());
  Value smAcc =
      sharedBuffer(func, slotsPerCTA * p.paddedDim, g.b.getF32Type());
  Value r = gpu::BlockIdOp::create(g.b, g.loc, gpu::Dimension::x);
  Value split = gpu::BlockIdOp::create(g.b, g.loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(g.b, g.loc, gpu::Dimension::x);
  Value lane = g.remU(tid, g.idx(32));
  Value gi = g.add(g.mul(g.divU(tid, g.idx(32)), g.idx(32 / p.lanes)),
                   g.divU(lane, g.idx(p.lanes)));
  Value col = g.mul(g.remU(lane, g.idx(p.lanes)), g.idx(kLaneElems));
  // Padding slices load column 0 of the row (in bounds) and add nothing.
  SmallVector<Value> colLoad, colOk;
  for (int64_t c = 0; c < p.chunks; ++c) {
    Value at = g.add(col, g.idx(c * kChunkCols));
    bool padded = p.lanes * kLaneElems + c * kChunkCols > d;
    Value ok = padded ? g.lt(at, g.idx(d)) : Value();
    colOk.push_back(ok);
    colLoad.push_back(ok ? g.select(ok, at, g.idx(0)) : at);
  }
  Value total = g.extent(a.indices);
  // A packed int4 pool holds two channels a byte.
  Value numBlocks =
      g.divU(g.extent(a.k), g.idx(bs * (p.int4() ? d / 2 : d)));
  AttendRow row = attendRow(g, bs, a.indptr, a.lastLen, r, total, numBlocks);
  auto [tBeg, tEnd] = splitTokens(g, row, bs, a.splits, split);
  PassState st{p,    a.k,    a.v,   a.indices, row.start, numBlocks,
               tBeg, tEnd,   col,   gi,        colLoad,   colOk,
               a.kScale, a.vScale, {}, {},     {},        {}};
  // The passes over the row's heads are the grid's z (launch grid_z), so
  // they run side by side, not one after another in a CTA.
  Value pass = gpu::BlockIdOp::create(g.b, g.loc, gpu::Dimension::z);
  emitPass(g, p, a, row, st, g.mul(pass, g.idx(p.headsPerPass)), r, split,
           smM, smL, smAcc, tid);
}

/// Threads of a combine CTA: at G 8, D 128 one round of (head, 4 columns)
/// items, so a row's partials are read in ceil(splits / 8) round trips.
constexpr int64_t kCombineThreads = 512;
/// Splits whose lse and partial o a combine thread loads together.
constexpr int64_t kCombineUnroll = 8;
/// Columns of a combine item (one 16-byte load of f32 partials).
constexpr int64_t kCombineCols = 4;

/// The combine kernel's body: row r's splits merged by their lse, online.
/// A thread owns 4 columns of one head; it reads 8 splits' lse and partial
/// o per step, all in flight at once (none depends on another), so the
/// latency of a step is one round trip, not one per split.
void emitCombineBody(Gen &g, const AttendPlan &p, Value partialO,
                     Value partialLse, Value o, Value lse, Value splits) {
  int64_t d = p.shape.headDim, heads = p.heads;
  int64_t quads = d / kCombineCols; // d is a multiple of 8
  Value r = gpu::BlockIdOp::create(g.b, g.loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(g.b, g.loc, gpu::Dimension::x);
  Value slots = g.divU(g.extent(partialLse), g.idx(heads));
  // At one split the split kernel stored o and lse itself.
  Value used = g.minI(splits, g.sub(slots, g.minI(g.mul(r, splits), slots)));
  Value steps = g.ceilDiv(used, g.idx(kCombineUnroll));
  Value many = g.cmpI(arith::CmpIPredicate::sgt, splits, g.idx(1));
  auto vecType = VectorType::get({kCombineCols}, g.b.getF32Type());
  g.ifThen(many, [&](Gen &x) {
    strided(x, x.idx(0), x.idx(heads * quads), tid, kCombineThreads, {},
            [&](Gen &y, Value item, ValueRange) -> SmallVector<Value> {
              Value h = y.divU(item, y.idx(quads));
              Value c0 = y.mul(y.remU(item, y.idx(quads)),
                               y.idx(kCombineCols));
              SmallVector<Value> init = {negInf(y), y.f32(0.0)};
              init.append(kCombineCols, y.f32(0.0));
              auto st = y.forLoop(
                  y.idx(0), steps, init,
                  [&](Gen &z, Value step, ValueRange acc)
                      -> SmallVector<Value> {
                    SmallVector<Value> ls, ov;
                    for (int64_t k = 0; k < kCombineUnroll; ++k) {
                      Value s = z.add(z.mul(step, z.idx(kCombineUnroll)),
                                      z.idx(k));
                      Value ok = z.lt(s, used);
                      Value sh = z.add(
                          z.mul(z.add(z.mul(r, splits),
                                      z.select(ok, s, z.idx(0))),
                                z.idx(heads)),
                          h);
                      ls.push_back(z.select(ok, z.load(partialLse, sh),
                                            negInf(z)));
                      // 16-byte aligned: d and c0 are multiples of 4.
                      ov.push_back(vector::LoadOp::create(
                          z.b, z.loc, vecType, partialO,
                          ValueRange{z.add(z.mul(sh, z.idx(d)), c0)},
                          /*nontemporal=*/false, llvm::Align(16)));
                    }
                    Value m = acc[0];
                    for (Value v : ls)
                      m = z.maxF(m, v);
                    // A -inf state (no tokens yet, or none at all) weighs 0.
                    auto weight = [&](Value v) {
                      return z.select(isNegInf(z, v), z.f32(0.0),
                                      math::ExpOp::create(z.b, z.loc,
                                                          z.subF(v, m)));
                    };
                    Value alpha = weight(acc[0]);
                    Value l = z.mulF(acc[1], alpha);
                    SmallVector<Value> out(kCombineCols);
                    for (int64_t j = 0; j < kCombineCols; ++j)
                      out[j] = z.mulF(acc[2 + j], alpha);
                    for (int64_t k = 0; k < kCombineUnroll; ++k) {
                      Value w = weight(ls[k]);
                      Value has = z.cmpF(arith::CmpFPredicate::OGT, w,
                                         z.f32(0.0));
                      l = z.addF(l, w);
                      // Select, not a product with 0: a NaN partial of an
                      // unused split must not get through.
                      for (int64_t j = 0; j < kCombineCols; ++j) {
                        Value e = vector::ExtractOp::create(z.b, z.loc,
                                                            ov[k], j);
                        out[j] = z.select(
                            has,
                            math::FmaOp::create(z.b, z.loc, w, e, out[j]),
                            out[j]);
                      }
                    }
                    SmallVector<Value> next = {m, l};
                    llvm::append_range(next, out);
                    return next;
                  });
              Value m = st.getResult(0), l = st.getResult(1);
              Value has = y.cmpF(arith::CmpFPredicate::OGT, l, y.f32(0.0));
              Value oh = y.add(y.mul(r, y.idx(heads)), h);
              for (int64_t j = 0; j < kCombineCols; ++j) {
                Value val = y.select(has,
                                     y.divF(st.getResult(2 + j), l),
                                     y.f32(0.0));
                y.store(y.fromF32(val, p.shape.qType), o,
                        y.add(y.mul(oh, y.idx(d)), y.add(c0, y.idx(j))));
              }
              y.ifThen(y.cmpI(arith::CmpIPredicate::eq, c0, y.idx(0)),
                       [&](Gen &w) {
                         Value lg = w.addF(m, math::LogOp::create(w.b, w.loc,
                                                                  l));
                         w.store(w.select(has, lg, negInf(w)), lse, oh);
                       });
              return {};
            });
  });
}

} // namespace

LogicalResult mlir::vortex::gpugen::checkAttendShape(Location loc,
                                                     const AttendShape &s) {
  auto fail = [&]() {
    return emitError(loc, "the GPU attend kernel does not support ");
  };
  int64_t d = s.headDim;
  // Past 256 columns a lane holds a slice per chunk (MLA's latent of 576).
  int64_t most = s.kvType.isInteger(4) ? kChunkCols : kMaxHeadDim;
  if (d < 64 || d > most || d % kLaneElems != 0)
    return fail() << "head_dim " << d << " (it takes a multiple of "
                  << kLaneElems << " in [64, " << most
                  << (s.kvType.isInteger(4) ? "] for a packed int4 pool)"
                                            : "])");
  if (s.blockSize < 1 || s.blockSize > 1024)
    return fail() << "block_size " << s.blockSize << " (it takes [1, 1024])";
  if (s.groupSize < 1 || s.queryTokens < 1 ||
      s.groupSize * s.queryTokens > 256)
    return fail() << s.queryTokens << " x " << s.groupSize
                  << " query heads a row (it takes 1 to 256)";
  // i4: packed int4 (bytes and scales, docs/contract.md "INT4 KV").
  if (!isa<BFloat16Type, Float16Type, Float32Type, Float8E4M3FNType,
           Float8E5M2Type>(s.kvType) &&
      !s.kvType.isInteger(4))
    return fail() << "kv dtype " << s.kvType;
  if (!isa<BFloat16Type, Float16Type, Float32Type>(s.qType))
    return fail() << "q dtype " << s.qType;
  return success();
}

LogicalResult mlir::vortex::gpugen::emitAttendKernels(FlowContext &ctx,
                                                      Location loc,
                                                      const AttendShape &shape,
                                                      StringRef name) {
  if (failed(checkAttendShape(loc, shape)))
    return failure();
  AttendPlan p(shape);
  p.streaming = ctx.options.streamingLoads;
  MLIRContext *mctx = loc.getContext();
  auto i32 = IntegerType::get(mctx, 32);
  auto f32 = Float32Type::get(mctx);
  std::string po = ctx.allocScratchBuffer(
      std::to_string(kAttendSplitSlots), p.heads, shape.headDim, f32);
  std::string pl = ctx.allocScratchBuffer(std::to_string(kAttendSplitSlots),
                                          p.heads, 1, f32);
  std::string qName = abi::kQuery.str(), oName = abi::kAttnOut.str(),
              lseName = abi::kAttnLse.str();
  // A packed int4 pool is bytes, with its scales after the split count.
  Type poolType = p.int4() ? Type(IntegerType::get(mctx, 8)) : shape.kvType;
  SmallVector<Param> params = {
      {qName, true, shape.qType},
      {"k", true, poolType},
      {"v", true, poolType},
      {abi::kKvIndptr.str(), true, i32},
      {abi::kKvIndices.str(), true, i32},
      {abi::kKvLastLen.str(), true, i32},
      {abi::kSmScale.str(), true, f32},
      {oName, true, shape.qType},
      {lseName, true, f32},
      {po, true, f32},
      {pl, true, f32},
      {abi::kKvSplits.str(), false, i32}};
  SmallVector<std::string> reads = {qName,
                                    "k",
                                    "v",
                                    abi::kKvIndptr.str(),
                                    abi::kKvIndices.str(),
                                    abi::kKvLastLen.str(),
                                    abi::kSmScale.str()};
  if (p.int4())
    for (StringRef name : {abi::kKInt4Scale, abi::kVInt4Scale}) {
      params.push_back({name.str(), true, f32});
      reads.push_back(name.str());
    }
  OpBuilder b(ctx.module.getBody(), ctx.module.getBody()->end());
  gpu::GPUFuncOp split =
      createKernel(ctx, b, loc, (name + "_split").str(), params, kThreads);
  bool mma = false;
  {
    Gen g{b, loc};
    SplitArgs a;
    Value *slots[] = {&a.q,       &a.k,       &a.v,   &a.indptr,
                      &a.indices, &a.lastLen, &a.smScale, &a.o,
                      &a.lse,     &a.partialO, &a.partialLse, &a.splits};
    for (auto [i, slot] : llvm::enumerate(slots))
      *slot = split.getArgument(i);
    if (p.int4()) {
      a.kScale = split.getArgument(std::size(slots));
      a.vScale = split.getArgument(std::size(slots) + 1);
    }
    a.splits = g.maxI(g.toIndex(a.splits), g.idx(1));
    mma = ctx.options.attendMMA && attendMMAFits(shape);
    if (mma)
      emitSplitBodyMMA(g, split, shape, a, p.streaming);
    else
      emitSplitBody(g, split, p, a);
    gpu::ReturnOp::create(b, loc);
  }
  recordRowKernel(ctx, split, kThreads, params, reads,
                  {oName, lseName, po, pl});
  ctx.abi.kernels.back().step = Step::Attend;
  ctx.abi.kernels.back().grid = GridKind::RowSplits;
  ctx.abi.kernels.back().gridZ = mma ? 1 : p.passes;

  SmallVector<Param> cparams = {{po, true, f32},
                                {pl, true, f32},
                                {oName, true, shape.qType},
                                {lseName, true, f32},
                                {abi::kKvSplits.str(), false, i32}};
  b.setInsertionPointToEnd(ctx.module.getBody());
  gpu::GPUFuncOp combine =
      createKernel(ctx, b, loc, (name + "_combine").str(), cparams,
                   kCombineThreads);
  {
    Gen g{b, loc};
    Value splits = g.maxI(g.toIndex(combine.getArgument(4)), g.idx(1));
    emitCombineBody(g, p, combine.getArgument(0), combine.getArgument(1),
                    combine.getArgument(2), combine.getArgument(3), splits);
    gpu::ReturnOp::create(b, loc);
  }
  recordRowKernel(ctx, combine, kCombineThreads, cparams, {po, pl},
                  {oName, lseName});
  ctx.abi.kernels.back().step = Step::Attend;
  return success();
}
