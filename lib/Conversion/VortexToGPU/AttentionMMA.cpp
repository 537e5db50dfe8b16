//===- AttentionMMA.cpp - The attend split kernel on tensor cores ---------===//
//
// The split kernel of AttentionKernels.cpp with q.k and p.v as mma.sync
// m16n8k16 (bf16 in, f32 accumulate), the way FlashInfer's GQA decode uses
// tensor cores: a row's T x G query heads are the M side (up to 16), a
// warp's tile of 16 tokens is the N side of s = q k^T (two halves of 8) and
// the K side of o = p v, whose N side walks D 8 columns at a time.
//
// q.k sums over D and p.v over tokens, so both may take their terms in any
// order that suits the loads. Lane (g, t) (g = lane / 4, t = lane % 4)
// reads K columns 32 i + 8 t + [0, 8) of tokens g and g + 8, and V columns
// 64 i + 8 g + [0, 8) of tokens 2t, 2t+1, 2t+8 and 2t+9, as 16-byte loads
// whose lanes together read whole 32-byte sectors of a row; q is read in
// K's column order, and o's columns go back to their places when the warps
// merge. The block ids of a tile are read an iteration before its rows, and
// with up to 8 heads its rows an iteration before they are used. Each warp
// keeps the online softmax of its own tiles; the CTA merges its warps'
// states as the CUDA-core kernel merges its groups', so the combine kernel
// is the same.
//
// Against the CUDA-core kernel (254 registers, one instruction issue per
// multiply-add, ncu in docs/measurements/decode-h100.md) this issues 32 mma
// and 32 byte permutes per warp and tile of 16 tokens at D 128.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"
#include "Collectives.h"
#include "MMA.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

constexpr int64_t kThreads = 128;
constexpr int64_t kWarps = kThreads / 32;
/// Tokens of a warp's tile: the K side of one p.v mma.
constexpr int64_t kTile = 16;
/// bf16 elements of a 16-byte load.
constexpr int64_t kVec = 8;
/// Token offsets a lane needs for one tile: K's 2, V's 4.
constexpr int64_t kOffsets = 6;

/// A warp's online softmax: m and the lane's part of l for its head rows g
/// and g + 8 (the second only with more than 8 heads), and for each of the
/// D / 8 column tiles the accumulators of those rows (2 or 4 a tile).
struct WarpState {
  SmallVector<Value> m, l, acc;
};

/// The loads of one tile: K (2 tokens x D / 32 vectors), then V (4 tokens x
/// D / 64 vectors).
using TileLoads = SmallVector<Value>;

struct MMAKernel {
  Gen &g;
  const AttendShape &s;
  const SplitArgs &a;
  bool streaming;
  int64_t d, heads, kSteps, nTiles, kVecs, vVecs, rows;
  bool prefetch;
  Type bf16, i32, f32;
  Value lane, warp, gq, tq;
  Value start, numBlocks, total, tBeg, tEnd, scale;
  SmallVector<Value> visEnd;             // per head row
  SmallVector<SmallVector<Value>> qWords; // per head row: D / 2 words

  MMAKernel(Gen &g, const AttendShape &s, const SplitArgs &a, bool streaming)
      : g(g), s(s), a(a), streaming(streaming), d(s.headDim),
        heads(s.queryTokens * s.groupSize), kSteps(d / 16), nTiles(d / 8),
        kVecs(d / 32), vVecs(d / 64), rows(heads > 8 ? 2 : 1),
        // Two tiles of loads in flight fit the registers with one head row.
        prefetch(heads <= 8), bf16(g.b.getBF16Type()),
        i32(g.b.getI32Type()), f32(g.b.getF32Type()) {}

  int64_t stateSize() const { return 2 * rows + nTiles * 2 * rows; }
  int64_t loadsPerTile() const { return 2 * kVecs + 4 * vVecs; }

  SmallVector<Value> pack(const WarpState &st) const {
    SmallVector<Value> out(st.m);
    llvm::append_range(out, st.l);
    llvm::append_range(out, st.acc);
    return out;
  }
  WarpState unpack(ValueRange v) const {
    WarpState st;
    st.m.assign(v.begin(), v.begin() + rows);
    st.l.assign(v.begin() + rows, v.begin() + 2 * rows);
    st.acc.assign(v.begin() + 2 * rows, v.begin() + stateSize());
    return st;
  }

  Value loadVec(Gen &x, Value memref, Value base, bool nontemporal) {
    return vector::LoadOp::create(x.b, x.loc, VectorType::get({kVec}, bf16),
                                  memref, ValueRange{base}, nontemporal,
                                  llvm::Align(16));
  }
  /// A vector of 8 bf16 as its 4 words, in order.
  SmallVector<Value> words(Gen &x, Value vec) {
    Value w = vector::BitCastOp::create(x.b, x.loc,
                                        VectorType::get({4}, i32), vec);
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(vector::ExtractOp::create(x.b, x.loc, w, i));
    return out;
  }
  /// Two f32 as one word of bf16, `lo` in the low half.
  Value packPair(Gen &x, Value lo, Value hi) {
    Value v = vector::FromElementsOp::create(
        x.b, x.loc, VectorType::get({2}, bf16),
        ValueRange{x.fromF32(lo, bf16), x.fromF32(hi, bf16)});
    Value w = vector::BitCastOp::create(x.b, x.loc,
                                        VectorType::get({1}, i32), v);
    return vector::ExtractOp::create(x.b, x.loc, w, 0);
  }

  /// Element offset of token `t`'s row in the pool; 0 (a row in bounds)
  /// for a token past the CTA's range. Branch free, so the warp stays
  /// converged for its mma. Needs a row of at least one block.
  Value tokenOffset(Gen &x, Value t) {
    int64_t bs = s.blockSize;
    Value valid = x.lt(t, tEnd);
    Value pos = x.select(valid, x.add(start, x.divU(t, x.idx(bs))), start);
    Value bid = x.toIndex(x.load(a.indices, pos));
    // A bad block id reads the last block instead of faulting.
    bid = x.minU(bid, x.sub(numBlocks, x.idx(1)));
    Value row = x.add(x.mul(bid, x.idx(bs)), x.remU(t, x.idx(bs)));
    return x.select(valid, x.mul(row, x.idx(d)), x.idx(0));
  }

  /// Token `j` (0..3) of a tile whose V this lane loads.
  Value vToken(Gen &x, Value base, int64_t j) {
    return x.add(base, x.add(x.mul(tq, x.idx(2)), x.idx(j % 2 + j / 2 * 8)));
  }
  Value tileBase(Gen &x, Value tile) {
    return x.add(tBeg, x.mul(tile, x.idx(kTile)));
  }

  /// The first column of K vector `i` of this lane: the 4 lanes of a token
  /// read 64 contiguous bytes a load, whole sectors (q is read alike).
  Value kColumn(Gen &x, int64_t i) {
    return x.add(x.mul(tq, x.idx(kVec)), x.idx(4 * kVec * i));
  }
  /// The first column of V vector `i` of this lane: the 8 lanes of a token
  /// read 128 contiguous bytes a load.
  Value vColumn(Gen &x, int64_t i) {
    return x.add(x.mul(gq, x.idx(kVec)), x.idx(8 * kVec * i));
  }

  /// The pool offsets of the tile's tokens this lane loads: K's 2, then
  /// V's 4. Computed an iteration before their loads, so a block id's
  /// round trip is not in series with its rows'.
  SmallVector<Value> tileOffsets(Gen &x, Value tile) {
    Value base = tileBase(x, tile);
    SmallVector<Value> out;
    for (int64_t h = 0; h < 2; ++h)
      out.push_back(tokenOffset(x, x.add(base, x.add(gq, x.idx(8 * h)))));
    for (int64_t j = 0; j < 4; ++j)
      out.push_back(tokenOffset(x, vToken(x, base, j)));
    return out;
  }

  TileLoads loadTile(Gen &x, ValueRange offs) {
    TileLoads out;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < kVecs; ++i)
        out.push_back(loadVec(x, a.k, x.add(offs[h], kColumn(x, i)),
                              streaming));
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t i = 0; i < vVecs; ++i)
        out.push_back(loadVec(x, a.v, x.add(offs[2 + j], vColumn(x, i)),
                              streaming));
    return out;
  }

  /// s = q k^T of the tile's two halves of 8 tokens: 4 values each, rows g
  /// (c0, c1) and g + 8 (c2, c3), tokens 2t and 2t + 1 of the half.
  SmallVector<SmallVector<Value>> scores(Gen &x, ArrayRef<Value> loads) {
    Value zeroI = x.i32(0), zeroF = x.f32(0.0);
    SmallVector<SmallVector<Value>> out;
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<Value> kw;
      for (int64_t i = 0; i < kVecs; ++i)
        llvm::append_range(kw, words(x, loads[h * kVecs + i]));
      SmallVector<Value> c(4, zeroF);
      for (int64_t st = 0; st < kSteps; ++st) {
        Value lo0 = qWords[0][2 * st], hi0 = qWords[0][2 * st + 1];
        Value lo1 = rows > 1 ? qWords[1][2 * st] : zeroI;
        Value hi1 = rows > 1 ? qWords[1][2 * st + 1] : zeroI;
        // A: rows g and g + 8; B: 2 words.
        c = mmaBF16(x, {lo0, lo1, hi0, hi1}, {kw[2 * st], kw[2 * st + 1]}, c);
        if (rows == 1)
          c[2] = c[3] = zeroF;
      }
      out.push_back(c);
    }
    return out;
  }

  /// Folds one tile into the warp's state.
  WarpState foldTile(Gen &x, Value tile, ArrayRef<Value> loads,
                     WarpState st) {
    Value base = tileBase(x, tile);
    auto sc = scores(x, loads);
    // Tokens of this lane's scores: 2t, 2t + 1, 2t + 8, 2t + 9.
    SmallVector<Value> tok;
    for (int64_t j = 0; j < 4; ++j)
      tok.push_back(vToken(x, base, j));
    SmallVector<SmallVector<Value>> p(rows);
    SmallVector<Value> alpha(rows);
    for (int64_t r = 0; r < rows; ++r) {
      SmallVector<Value> sv;
      for (int64_t j = 0; j < 4; ++j) {
        Value raw = sc[j / 2][2 * r + j % 2];
        // A masked token is -inf by select: a NaN in an unwritten slot of
        // the pool never reaches the softmax.
        sv.push_back(x.select(x.lt(tok[j], visEnd[r]), x.mulF(raw, scale),
                              negInf(x)));
      }
      Value mx = x.maxF(x.maxF(sv[0], sv[1]), x.maxF(sv[2], sv[3]));
      mx = x.maxF(mx, xorShuffle(x, mx, 1));
      mx = x.maxF(mx, xorShuffle(x, mx, 2));
      Value mNew = x.maxF(st.m[r], mx);
      alpha[r] = x.select(isNegInf(x, st.m[r]), x.f32(0.0),
                          exp2(x, x.subF(st.m[r], mNew)));
      Value l = x.mulF(st.l[r], alpha[r]);
      for (Value v : sv) {
        p[r].push_back(x.select(isNegInf(x, v), x.f32(0.0),
                                exp2(x, x.subF(v, mNew))));
        l = x.addF(l, p[r].back());
      }
      st.m[r] = mNew;
      st.l[r] = l;
    }
    Value zeroI = x.i32(0), zeroF = x.f32(0.0);
    SmallVector<Value> aP = {
        packPair(x, p[0][0], p[0][1]),
        rows > 1 ? packPair(x, p[1][0], p[1][1]) : zeroI,
        packPair(x, p[0][2], p[0][3]),
        rows > 1 ? packPair(x, p[1][2], p[1][3]) : zeroI};
    // V of a token past the range is zero by select: p v would be NaN for
    // a NaN v even at p = 0.
    Value zeroVec = zerosBF16(x, kVec);
    SmallVector<Value> v(loads.begin() + 2 * kVecs, loads.end());
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t i = 0; i < vVecs; ++i) {
        Value &vec = v[j * vVecs + i];
        vec = x.select(x.lt(tok[j], tEnd), vec, zeroVec);
      }
    // Column tile c takes element c of the lane's V slice from tokens
    // (2t, 2t + 1) and (2t + 8, 2t + 9), interleaved into words.
    SmallVector<int64_t> interleave;
    for (int64_t e = 0; e < kVec; ++e)
      interleave.append({e, e + kVec});
    int64_t perTile = 2 * rows;
    for (int64_t i = 0; i < vVecs; ++i) {
      SmallVector<Value> pairs[2];
      for (int64_t half = 0; half < 2; ++half) {
        Value mixed = vector::ShuffleOp::create(
            x.b, x.loc, v[(2 * half) * vVecs + i], v[(2 * half + 1) * vVecs + i],
            interleave);
        Value w = vector::BitCastOp::create(
            x.b, x.loc, VectorType::get({kVec}, i32), mixed);
        for (int64_t e = 0; e < kVec; ++e)
          pairs[half].push_back(vector::ExtractOp::create(x.b, x.loc, w, e));
      }
      for (int64_t e = 0; e < kVec; ++e) {
        int64_t c = i * kVec + e;
        SmallVector<Value> acc(4, zeroF);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < 2; ++k)
            acc[2 * r + k] = x.mulF(st.acc[c * perTile + 2 * r + k], alpha[r]);
        acc = mmaBF16(x, aP, {pairs[0][e], pairs[1][e]}, acc);
        for (int64_t k = 0; k < perTile; ++k)
          st.acc[c * perTile + k] = acc[k];
      }
    }
    return st;
  }

  /// The warp's tiles w, w + 4, ... of the CTA's range.
  WarpState warpLoop(Gen &x, Value tiles) {
    WarpState init;
    for (int64_t r = 0; r < rows; ++r) {
      init.m.push_back(negInf(x));
      init.l.push_back(x.f32(0.0));
    }
    init.acc.assign(nTiles * 2 * rows, x.f32(0.0));
    Value mine = x.select(x.cmpI(arith::CmpIPredicate::ugt, tiles, warp),
                          x.ceilDiv(x.sub(tiles, warp), x.idx(kWarps)),
                          x.idx(0));
    SmallVector<Type> types(stateSize(), f32);
    // Warp-uniform: a warp without tiles reads nothing (a row of no blocks
    // may come with an empty kv_indices).
    SmallVector<Value> res = x.ifElse(
        x.cmpI(arith::CmpIPredicate::ugt, mine, x.idx(0)), types,
        [&](Gen &y) -> SmallVector<Value> {
          // The carry: the state, the offsets of the next tile to load,
          // then (prefetch) the loads of the tile to fold.
          SmallVector<Value> carry = pack(init);
          if (prefetch) {
            llvm::append_range(carry,
                               tileOffsets(y, y.add(warp, y.idx(kWarps))));
            llvm::append_range(carry, loadTile(y, tileOffsets(y, warp)));
          } else {
            llvm::append_range(carry, tileOffsets(y, warp));
          }
          int64_t n = stateSize();
          auto loop = y.forLoop(
              y.idx(0), mine, carry,
              [&](Gen &z, Value it, ValueRange c) -> SmallVector<Value> {
                Value tile = z.add(warp, z.mul(it, z.idx(kWarps)));
                WarpState st = unpack(c);
                ValueRange offs = c.slice(n, kOffsets);
                int64_t ahead = prefetch ? 2 : 1;
                SmallVector<Value> nextOffs =
                    tileOffsets(z, z.add(tile, z.idx(ahead * kWarps)));
                TileLoads now, next;
                if (prefetch) {
                  next = loadTile(z, offs);
                  now.assign(c.begin() + n + kOffsets, c.end());
                } else {
                  now = loadTile(z, offs);
                }
                SmallVector<Value> out = pack(foldTile(z, tile, now, st));
                llvm::append_range(out, nextOffs);
                llvm::append_range(out, next);
                return out;
              });
          return SmallVector<Value>(
              loop.getResults().take_front(stateSize()));
        },
        [&](Gen &) -> SmallVector<Value> { return pack(init); });
    return unpack(res);
  }

  /// q's rows g and g + 8 in K's column order, as words (0 past the heads).
  void loadQ(Gen &x, Value r) {
    Value zeroVec = zerosBF16(x, kVec);
    for (int64_t row = 0; row < rows; ++row) {
      Value hr = x.add(gq, x.idx(8 * row));
      Value ok = x.lt(hr, x.idx(heads));
      Value head = x.select(ok, hr, x.idx(0));
      Value base = x.mul(x.add(x.mul(r, x.idx(heads)), head), x.idx(d));
      SmallVector<Value> w;
      for (int64_t i = 0; i < kVecs; ++i) {
        Value vec = loadVec(x, a.q, x.add(base, kColumn(x, i)), false);
        llvm::append_range(w, words(x, x.select(ok, vec, zeroVec)));
      }
      qWords.push_back(w);
    }
  }

  /// This lane's head rows' visible ends: query token t = head / G sees all
  /// but the last T - 1 - t tokens; a padding head sees none.
  void visibleEnds(Gen &x, const AttendRow &row) {
    for (int64_t r = 0; r < rows; ++r) {
      Value hr = x.add(gq, x.idx(8 * r));
      Value hidden = x.sub(x.idx(s.queryTokens - 1),
                           x.divU(hr, x.idx(s.groupSize)));
      Value end = x.minI(tEnd, x.sub(row.len, hidden));
      visEnd.push_back(x.select(x.lt(hr, x.idx(heads)), end, x.idx(0)));
    }
  }

  /// The warp's state into shared memory, o's columns back in place.
  void storeState(Gen &x, const WarpState &st, const GroupStates &sm) {
    int64_t slotHeads = sm.slotHeads;
    for (int64_t r = 0; r < rows; ++r) {
      Value l = st.l[r];
      l = x.addF(l, xorShuffle(x, l, 1));
      l = x.addF(l, xorShuffle(x, l, 2));
      Value slot = x.add(x.mul(warp, x.idx(slotHeads)),
                         x.add(gq, x.idx(8 * r)));
      x.ifThen(x.cmpI(arith::CmpIPredicate::eq, tq, x.idx(0)), [&](Gen &y) {
        y.store(st.m[r], sm.m, slot);
        y.store(l, sm.l, slot);
      });
      // Column n = 2t + k of tile c holds element c of lane n's V slice
      // (vColumn): o's column 64 (c / 8) + 8 n + c % 8.
      Value rowBase = x.mul(slot, x.idx(d));
      for (int64_t c = 0; c < nTiles; ++c)
        for (int64_t k = 0; k < 2; ++k) {
          Value n = x.add(x.mul(tq, x.idx(2)), x.idx(k));
          Value colIdx = x.add(x.mul(n, x.idx(kVec)),
                               x.idx(8 * kVec * (c / kVec) + c % kVec));
          x.store(st.acc[c * 2 * rows + 2 * r + k], sm.acc,
                  x.add(rowBase, colIdx));
        }
    }
  }
};

} // namespace

bool mlir::vortex::gpugen::attendMMAFits(const AttendShape &s) {
  // The M side holds up to 16 heads; a lane's K slice is whole 16-byte
  // loads for D a multiple of 32 and its V slice for D a multiple of 64;
  // past 128 the accumulators outgrow the registers.
  int64_t heads = s.queryTokens * s.groupSize;
  return isa<BFloat16Type>(s.kvType) && isa<BFloat16Type>(s.qType) &&
         (s.headDim == 64 || s.headDim == 128) && heads >= 1 && heads <= 16;
}

void mlir::vortex::gpugen::emitSplitBodyMMA(Gen &g, gpu::GPUFuncOp func,
                                            const AttendShape &shape,
                                            const SplitArgs &a,
                                            bool streaming) {
  MMAKernel kern(g, shape, a, streaming);
  int64_t bs = shape.blockSize, d = shape.headDim;
  int64_t slotHeads = 8 * kern.rows;
  GroupStates sm{sharedBuffer(func, kWarps * slotHeads, kern.f32),
                 sharedBuffer(func, kWarps * slotHeads, kern.f32),
                 sharedBuffer(func, kWarps * slotHeads * d, kern.f32),
                 kWarps, slotHeads, d};
  Value r = gpu::BlockIdOp::create(g.b, g.loc, gpu::Dimension::x);
  Value split = gpu::BlockIdOp::create(g.b, g.loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(g.b, g.loc, gpu::Dimension::x);
  kern.lane = g.remU(tid, g.idx(32));
  kern.warp = g.divU(tid, g.idx(32));
  kern.gq = g.divU(kern.lane, g.idx(4));
  kern.tq = g.remU(kern.lane, g.idx(4));
  kern.total = g.extent(a.indices);
  kern.numBlocks = g.divU(g.extent(a.k), g.idx(bs * d));
  AttendRow row = attendRow(g, bs, a.indptr, a.lastLen, r, kern.total,
                            kern.numBlocks);
  kern.start = row.start;
  std::tie(kern.tBeg, kern.tEnd) = splitTokens(g, row, bs, a.splits, split);
  kern.scale = g.mulF(g.load(a.smScale, g.idx(0)), g.f32(kLog2e));
  kern.visibleEnds(g, row);
  kern.loadQ(g, r);
  Value tiles = g.ceilDiv(g.sub(kern.tEnd, kern.tBeg), g.idx(kTile));
  WarpState st = kern.warpLoop(g, tiles);
  kern.storeState(g, st, sm);
  gpu::BarrierOp::create(g.b, g.loc);
  mergeGroupsAndStore(g, shape, a, sm, g.idx(0), r, split, tid, kThreads);
}
