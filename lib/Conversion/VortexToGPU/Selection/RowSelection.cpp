//===- RowSelection.cpp - A row's top-k selection -------------------------===//
//
// One CTA selects a dense CSR row's k best scores by a radix select: the
// k-th best score key is found digit by digit (8-bit histograms in shared
// memory, starting below the bits every key of the row shares), or by one
// pass of value bins when the row's score range allows; the keys above it
// and the first ties by position are gathered, and only those k keys are
// ordered (by rank, or a bitonic sort for large k). A k beyond the keys'
// shared buffer takes one CTA-wide maximum per pick. The kernel around the
// selection is TopKKernels.cpp's.
//
//===----------------------------------------------------------------------===//

#include "RowSelection.h"

#include <limits>

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

namespace {

/// The score as an i32 ordered like the score when compared unsigned. NaN
/// ranks as -inf.
Value scoreKey(Gen &g, Value score) {
  Value isNan = g.cmpF(arith::CmpFPredicate::UNO, score, score);
  score = g.select(isNan, g.f32(-std::numeric_limits<double>::infinity()),
                   score);
  Value bits = arith::BitcastOp::create(g.b, g.loc, g.b.getI32Type(), score);
  Value neg = g.cmpI(arith::CmpIPredicate::slt, bits, g.i32(0));
  return g.select(neg, arith::XOrIOp::create(g.b, g.loc, bits, g.i32(-1)),
                  arith::OrIOp::create(
                      g.b, g.loc, bits,
                      g.i32(static_cast<int32_t>(0x80000000u))));
}

Value zext64(Gen &g, Value v) {
  return arith::ExtUIOp::create(g.b, g.loc, g.b.getI64Type(), v);
}
Value shr(Gen &g, Value v, Value amount) {
  return arith::ShRUIOp::create(g.b, g.loc, v, amount);
}
Value shl(Gen &g, Value v, Value amount) {
  return arith::ShLIOp::create(g.b, g.loc, v, amount);
}

/// An i64 key ordered like (score, -position) from a score key: the top
/// keys are the best scores, ties to the lower position. Never 0, which pads
/// sorts.
Value sortKeyOf(Gen &g, Value key, Value position) {
  Value hi = shl(g, zext64(g, key), g.i64(32));
  Value lo = zext64(
      g, arith::XOrIOp::create(g.b, g.loc, g.toI32(position), g.i32(-1)));
  return arith::OrIOp::create(g.b, g.loc, hi, lo);
}

Value sortKey(Gen &g, Value score, Value position) {
  return sortKeyOf(g, scoreKey(g, score), position);
}

Value positionOfKey(Gen &g, Value key) {
  Value lo = arith::TruncIOp::create(g.b, g.loc, g.b.getI32Type(), key);
  return g.toIndex(arith::XOrIOp::create(g.b, g.loc, lo, g.i32(-1)));
}

/// The number of significant bits of an i32 (32 - clz; math.ctlz has no
/// NVVM lowering in MLIR 22).
Value bitLength(Gen &g, Value x) {
  Value len = g.i32(0);
  for (int32_t s : {16, 8, 4, 2, 1}) {
    Value high = shr(g, x, g.i32(s));
    Value any = g.cmpI(arith::CmpIPredicate::ne, high, g.i32(0));
    x = g.select(any, high, x);
    len = g.select(any, g.add(len, g.i32(s)), len);
  }
  return g.add(len, g.select(g.cmpI(arith::CmpIPredicate::ne, x, g.i32(0)),
                             g.i32(1), g.i32(0)));
}

//===----------------------------------------------------------------------===//
// Sorting the gathered keys (descending)
//===----------------------------------------------------------------------===//

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
  Value a0 = g.load(keys, i), a1 = g.load(keys, j);
  Value desc = g.cmpI(arith::CmpIPredicate::eq,
                      arith::AndIOp::create(g.b, g.loc, i, size), g.idx(0));
  g.store(keepOf(g, a0, a1, true, desc), keys, i);
  g.store(keepOf(g, a1, a0, false, desc), keys, j);
}

/// for (v = init; cond(v); v = next(v)) body(v), all uniform over the CTA;
/// returns the final v.
Value whileLoop(Gen &g, Value init, function_ref<Value(Gen &, Value)> cond,
                function_ref<Value(Gen &, Value)> bodyAndNext) {
  return scf::WhileOp::create(
      g.b, g.loc, TypeRange{g.b.getIndexType()}, ValueRange{init},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Gen w{nb, l};
        scf::ConditionOp::create(nb, l, cond(w, a[0]), a);
      },
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Gen w{nb, l};
        scf::YieldOp::create(nb, l, bodyAndNext(w, a[0]));
      })
      .getResult(0);
}

/// Sorts keys[0, P) descending, P a power of two (pair-indexed stages, one
/// compare-exchange per thread and stage).
void sharedBitonic(Gen &g, Value keys, Value tid, Value P, int64_t threads) {
  whileLoop(
      g, g.idx(2),
      [&](Gen &w, Value size) {
        return w.cmpI(arith::CmpIPredicate::ule, size, P);
      },
      [&](Gen &w, Value size) {
        whileLoop(
            w, w.divU(size, w.idx(2)),
            [&](Gen &u, Value stride) {
              return u.cmpI(arith::CmpIPredicate::ugt, stride, u.idx(0));
            },
            [&](Gen &u, Value stride) {
              strided(u, u.idx(0), u.divU(P, u.idx(2)), tid, threads, {},
                      [&](Gen &z, Value t, ValueRange) -> SmallVector<Value> {
                        compareExchange(z, keys, t, stride, size);
                        return {};
                      });
              gpu::BarrierOp::create(u.b, u.loc);
              return u.divU(stride, u.idx(2));
            });
        return w.mul(size, w.idx(2));
      });
}

//===----------------------------------------------------------------------===//
// The radix select
//===----------------------------------------------------------------------===//


/// A row's score keys: the first kHeldKeys positions in registers (position
/// tid + e * threads in regs[e], read once, all
/// loads in flight), any beyond them read again from global memory in every
/// pass. One code path for every row length.
struct KeySource {
  const SelectRow &R;
  /// regs[e]: the key at position tid + e * threads; ids[e]: its
  /// block id, loaded with it so that the kept keys' ids need no load after
  /// the sort.
  SmallVector<Value> regs, ids;

  /// The score key of scored position i, read from global memory.
  static Value load(Gen &g, const SelectRow &R, Value i) {
    return scoreKey(g, g.load(R.score, g.add(R.lo, i)));
  }
  /// The block id of scored position i, read from global memory.
  static Value loadId(Gen &g, const SelectRow &R, Value i) {
    return g.load(R.dense, g.add(R.lo, i));
  }

  /// Loads the keys this thread holds, and their ids, into registers (past
  /// the row: copies of its last).
  static KeySource get(Gen &g, const SelectRow &R) {
    KeySource src{R, {}, {}};
    Value last = g.sub(R.m, g.idx(1));
    for (int64_t e = 0; e < R.plan.registerKeys(); ++e) {
      Value i = g.minI(g.add(R.tid, g.idx(e * R.threads())), last);
      src.regs.push_back(load(g, R, i));
      src.ids.push_back(loadId(g, R, i));
    }
    return src;
  }

  /// body(key, i, id) for every scored position i this thread holds; id is
  /// its block id when held in a register, else null (idOr loads it). No
  /// barrier in the body.
  void forEach(Gen &g,
               function_ref<void(Gen &, Value, Value, Value)> body) const {
    for (int64_t e = 0; e < R.plan.registerKeys(); ++e) {
      Value i = g.add(R.tid, g.idx(e * R.threads()));
      g.ifThen(g.lt(i, R.m), [&](Gen &x) { body(x, regs[e], i, ids[e]); });
    }
    strided(g, g.idx(kHeldKeys), R.m, R.tid, R.threads(), {},
            [&](Gen &x, Value i, ValueRange) -> SmallVector<Value> {
              body(x, load(x, R, i), i, Value());
              return {};
            });
  }

  /// `id` if there is one, else the block id of position i from memory.
  Value idOr(Gen &g, Value id, Value i) const {
    return id ? id : loadId(g, R, i);
  }

  /// The key at position i = round * threads + tid (i < m), and its
  /// block id.
  std::pair<Value, Value> keyOfRound(Gen &g, Value round, Value i) const {
    Value key = regs[0], id = ids[0];
    for (int64_t e = 1; e < R.plan.registerKeys(); ++e) {
      Value here = g.cmpI(arith::CmpIPredicate::eq, round, g.idx(e));
      key = g.select(here, regs[e], key);
      id = g.select(here, ids[e], id);
    }
    Value held = g.lt(round, g.idx(R.plan.registerKeys()));
    SmallVector<Value> pair = g.ifElse(
        held, {key.getType(), id.getType()},
        [&](Gen &) { return SmallVector<Value>{key, id}; },
        [&](Gen &x) {
          Value at = x.minI(i, x.sub(R.m, x.idx(1)));
          return SmallVector<Value>{load(x, R, at), loadId(x, R, at)};
        });
    return {pair[0], pair[1]};
  }
};

/// Warp 0, after a histogram: the digit whose bin holds the `remaining`-th
/// best key (bins from 255 down), the count still needed from it and its
/// size, into ctl.
void findDigit(Gen &g, const SelectRow &R, Value remaining) {
  Value lane = R.tid;
  Value top = g.sub(g.idx(kRadixBins - 1), g.mul(lane, g.idx(8)));
  SmallVector<Value> bins;
  Value sum = g.i32(0);
  for (int64_t j = 0; j < 8; ++j) {
    bins.push_back(g.load(R.hist, g.sub(top, g.idx(j))));
    sum = g.add(sum, bins.back());
  }
  // Zeroed for the next pass, whose atomics follow the next barrier.
  for (int64_t j = 0; j < 8; ++j)
    g.store(g.i32(0), R.hist, g.sub(top, g.idx(j)));
  Value incl = warpInclusiveSum(g, lane, sum);
  Value excl = g.sub(incl, sum);
  Value here = g.andI(g.cmpI(arith::CmpIPredicate::slt, excl, remaining),
                      g.cmpI(arith::CmpIPredicate::sle, remaining, incl));
  g.ifThen(here, [&](Gen &x) {
    Value acc = excl, found = falseValue(x);
    Value digit = x.i32(0), left = x.i32(0), count = x.i32(0);
    for (int64_t j = 0; j < 8; ++j) {
      Value hit = x.andI(x.notI(found),
                         x.cmpI(arith::CmpIPredicate::sge,
                                x.add(acc, bins[j]), remaining));
      digit = x.select(hit, x.toI32(x.sub(top, x.idx(j))), digit);
      left = x.select(hit, x.sub(remaining, acc), left);
      count = x.select(hit, bins[j], count);
      found = x.orI(found, hit);
      acc = x.add(acc, bins[j]);
    }
    x.store(digit, R.ctl, x.idx(kCtlDigit));
    x.store(left, R.ctl, x.idx(kCtlRemaining));
    x.store(count, R.ctl, x.idx(kCtlBinCount));
  });
}

/// The outcome of the digit passes: keys whose bits above `low` exceed
/// `prefix`'s are kept; if `done`, also those equal to it there; else (low
/// is 0) `remaining` of the keys equal to `prefix`, lowest positions first.
struct Threshold {
  Value low, prefix, remaining, done;
};

/// The row's largest and smallest score keys, in every thread.
struct KeyBounds {
  Value maxKey, minKey;
};

/// The row's key bounds (a CTA reduction); also zeroes the histogram for
/// the first pass over it (the reduction's barriers order this before its
/// atomics; findDigit zeroes it after every pass).
KeyBounds rowKeyBounds(Gen &g, const KeySource &src) {
  const SelectRow &R = src.R;
  // The row's largest and smallest keys. Registers past the row hold a
  // copy of its last key: harmless here.
  Value maxLocal = src.regs[0], minLocal = src.regs[0];
  for (Value key : ArrayRef<Value>(src.regs).drop_front()) {
    maxLocal = arith::MaxUIOp::create(g.b, g.loc, maxLocal, key);
    minLocal = arith::MinUIOp::create(g.b, g.loc, minLocal, key);
  }
  auto bounds =
      strided(g, g.idx(kHeldKeys), R.m, R.tid, R.threads(),
              {maxLocal, minLocal},
              [&](Gen &x, Value i, ValueRange acc) -> SmallVector<Value> {
                Value key = KeySource::load(x, R, i);
                return {arith::MaxUIOp::create(x.b, x.loc, acc[0], key),
                        arith::MinUIOp::create(x.b, x.loc, acc[1], key)};
              });
  maxLocal = bounds.getResult(0);
  minLocal = bounds.getResult(1);
  strided(g, g.idx(0), g.idx(kRadixBins), R.tid, R.threads(), {},
          [&](Gen &x, Value i, ValueRange) -> SmallVector<Value> {
            x.store(x.i32(0), R.hist, i);
            return {};
          });
  SmallVector<Value> bound = ctaAllReduce(
      g, R.tid, {maxLocal, minLocal},
      {gpu::AllReduceOperation::MAXUI, gpu::AllReduceOperation::MINUI},
      R.warpSums, R.plan.warps());
  return {bound[0], bound[1]};
}

/// Finds the k-th best key of the row, one 8-bit digit per pass, starting
/// below the bits the row's maximum and minimum keys share.
Threshold radixThreshold(Gen &g, const KeySource &src, KeyBounds bounds) {
  const SelectRow &R = src.R;
  Value maxKey = bounds.maxKey, minKey = bounds.minKey;
  Value low0 = zext64(
      g, bitLength(g, arith::XOrIOp::create(g.b, g.loc, maxKey, minKey)));
  Value prefix0 = shl(g, shr(g, zext64(g, maxKey), low0), low0);

  Type i64 = g.b.getI64Type(), i32 = g.b.getI32Type(), i1 = g.b.getI1Type();
  auto loop = scf::WhileOp::create(
      g.b, g.loc, TypeRange{i64, i64, i32, i1},
      ValueRange{low0, prefix0, g.toI32(R.k), falseValue(g)},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Gen w{nb, l};
        Value more = w.andI(w.notI(a[3]),
                            w.cmpI(arith::CmpIPredicate::ugt, a[0], w.i64(0)));
        scf::ConditionOp::create(nb, l, more, a);
      },
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Gen w{nb, l};
        Value low = a[0], prefix = a[1], remaining = a[2];
        Value width = arith::MinUIOp::create(nb, l, low, w.i64(8));
        Value shift = w.sub(low, width);
        Value mask = w.sub(shl(w, w.i64(1), width), w.i64(1));
        Value target = shr(w, prefix, low);
        src.forEach(w, [&](Gen &x, Value key32, Value, Value) {
          Value key = zext64(x, key32);
          x.ifThen(x.cmpI(arith::CmpIPredicate::eq, shr(x, key, low), target),
                   [&](Gen &y) {
                     Value d = arith::AndIOp::create(y.b, y.loc,
                                                     shr(y, key, shift), mask);
                     Value bin = arith::IndexCastUIOp::create(
                         y.b, y.loc, y.b.getIndexType(), d);
                     atomicAdd(y, R.hist, bin, y.i32(1));
                   });
        });
        gpu::BarrierOp::create(nb, l);
        w.ifThen(w.lt(R.tid, w.idx(32)),
                 [&](Gen &x) { findDigit(x, R, remaining); });
        gpu::BarrierOp::create(nb, l);
        Value digit = w.load(R.ctl, w.idx(kCtlDigit));
        Value left = w.load(R.ctl, w.idx(kCtlRemaining));
        Value count = w.load(R.ctl, w.idx(kCtlBinCount));
        Value next = arith::OrIOp::create(nb, l, prefix,
                                          shl(w, zext64(w, digit), shift));
        scf::YieldOp::create(
            nb, l,
            ValueRange{shift, next, left,
                       w.cmpI(arith::CmpIPredicate::eq, count, left)});
      });
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2),
          loop.getResult(3)};
}

/// Whether the row's k kept keys are ordered by rank (rankSortAndWrite),
/// which takes their block ids from `ids`; else by a bitonic sort.
Value sortsByRank(Gen &g, const SelectRow &R) {
  return g.cmpI(arith::CmpIPredicate::sle, R.k,
                g.idx(R.plan.rankSortSize()));
}

/// Appends a sort key to the gathered keys (an atomic slot), and for the
/// rank sort its block id.
void pushSortKey(Gen &g, const SelectRow &R, Value sortKey,
                 function_ref<Value(Gen &)> idOf) {
  Value slot = g.toIndex(atomicAdd(g, R.ctl, g.idx(kCtlSlots), g.i32(1)));
  g.store(sortKey, R.keys, slot);
  g.ifThen(sortsByRank(g, R), [&](Gen &x) { x.store(idOf(x), R.ids, slot); });
}

/// Appends the sort key of (key, i).
void pushKey(Gen &g, const SelectRow &R, Value key, Value i,
             function_ref<Value(Gen &)> idOf) {
  pushSortKey(g, R, sortKeyOf(g, key, i), idOf);
}

/// Gathers the row's k best keys (unordered) into keys[0, k).
void gatherSelected(Gen &g, const KeySource &src, const Threshold &t) {
  const SelectRow &R = src.R;
  Value target = shr(g, t.prefix, t.low);
  src.forEach(g, [&](Gen &x, Value key, Value i, Value id) {
    Value high = shr(x, zext64(x, key), t.low);
    Value keep =
        x.orI(x.cmpI(arith::CmpIPredicate::ugt, high, target),
              x.andI(t.done, x.cmpI(arith::CmpIPredicate::eq, high, target)));
    x.ifThen(keep, [&](Gen &y) {
      pushKey(y, R, key, i, [&](Gen &z) { return src.idOr(z, id, i); });
    });
  });
  // Ties at the threshold: the first `remaining` by position, ranked with a
  // CTA-wide scan per round of `threads` positions.
  g.ifThen(g.notI(t.done), [&](Gen &x) {
    Value rounds = x.ceilDiv(R.m, x.idx(R.threads()));
    x.forLoop(
        x.idx(0), rounds, {x.i32(0)},
        [&](Gen &y, Value j, ValueRange acc) -> SmallVector<Value> {
          Value i = y.add(y.mul(j, y.idx(R.threads())), R.tid);
          // Named values, not a structured binding: the lambdas below
          // capture them.
          Value key, id;
          std::tie(key, id) = src.keyOfRound(y, j, i);
          Value tie = y.andI(y.lt(i, R.m),
                             y.cmpI(arith::CmpIPredicate::eq,
                                    zext64(y, key), t.prefix));
          auto [rank, total] =
              ctaRank(y, R.tid, tie, R.warpSums, R.plan.warps());
          rank = y.add(acc[0], rank);
          y.ifThen(y.andI(tie, y.cmpI(arith::CmpIPredicate::slt, rank,
                                      t.remaining)),
                   [&](Gen &z) {
                     pushKey(z, R, key, i, [&](Gen &) { return id; });
                   });
          return {y.add(acc[0], total)};
        });
  });
  gpu::BarrierOp::create(g.b, g.loc);
}

//===----------------------------------------------------------------------===//
// Value bins: one histogram pass that usually leaves few keys to rank
//===----------------------------------------------------------------------===//

/// The score of a score key (scoreKey's inverse; a NaN score comes back as
/// -inf).
Value keyScore(Gen &g, Value key) {
  Value nonNegative = g.cmpI(arith::CmpIPredicate::slt, key, g.i32(0));
  Value bits = g.select(
      nonNegative,
      arith::AndIOp::create(g.b, g.loc, key, g.i32(0x7fffffff)),
      arith::XOrIOp::create(g.b, g.loc, key, g.i32(-1)));
  return arith::BitcastOp::create(g.b, g.loc, g.b.getF32Type(), bits);
}

/// Bins of equal width over the row's score range: a key's bin is
/// min(255, (score - lo) * scale). Rounded subtraction and multiplication
/// by a positive scale are monotone, so a larger key never falls in a lower
/// bin, and both passes compute the same bin for a key. The digit passes
/// split a row of nearly normal scores mostly by exponent (the first pass
/// puts most keys in a few bins); equal widths leave a handful of keys in
/// the bin of the k-th best (docs/gpu.md, "Top-k").
struct ValueBins {
  Value lo, scale;
  /// Uniform over the CTA: finite bounds, a positive finite range and a
  /// finite scale (so no bin is NaN), and k small enough that the gathered
  /// keys and their sort padding stay below the candidates.
  Value usable;

  static ValueBins get(Gen &g, const SelectRow &R, KeyBounds bounds) {
    ValueBins vb;
    vb.lo = keyScore(g, bounds.minKey);
    Value range = g.subF(keyScore(g, bounds.maxKey), vb.lo);
    vb.scale = g.divF(g.f32(kRadixBins), range);
    Value inf = g.f32(std::numeric_limits<double>::infinity());
    vb.usable = g.andI(
        g.andI(g.cmpF(arith::CmpFPredicate::OGT, range, g.f32(0)),
               g.cmpF(arith::CmpFPredicate::OLT, range, inf)),
        g.andI(g.cmpF(arith::CmpFPredicate::OLT, vb.scale, inf),
               g.cmpI(arith::CmpIPredicate::sle, R.k,
                      g.idx(kSortCapacity / 2))));
    return vb;
  }

  Value binOf(Gen &g, Value key) const {
    Value scaled = g.mulF(g.subF(keyScore(g, key), lo), scale);
    Value bin = arith::FPToUIOp::create(g.b, g.loc, g.b.getI32Type(), scaled);
    return arith::MinUIOp::create(g.b, g.loc, bin, g.i32(kRadixBins - 1));
  }
};

/// Gathers the row's k best keys (unordered) into keys[0, k) by one pass of
/// value bins: the keys above the bin of the k-th best key, and of that bin
/// (when it holds at most kCandidateCapacity keys) the best by rank, ties to
/// the lower position. Returns whether it did (uniform over the CTA); if
/// not, it gathered nothing and the histogram is zero again. Its own gather
/// (keys above the bin kept, the bin's keys set aside, in one pass) keeps
/// the row at two passes over its keys: a threshold handed to
/// gatherSelected (one gather for both paths) took a third and gave back
/// what the bins save (docs/measurements/topk-value-bins-h100.md).
Value gatherByValueBins(Gen &g, const KeySource &src, const ValueBins &vb) {
  const SelectRow &R = src.R;
  src.forEach(g, [&](Gen &x, Value key, Value, Value) {
    Value bin = arith::IndexCastUIOp::create(x.b, x.loc, x.b.getIndexType(),
                                             vb.binOf(x, key));
    atomicAdd(x, R.hist, bin, x.i32(1));
  });
  gpu::BarrierOp::create(g.b, g.loc);
  g.ifThen(g.lt(R.tid, g.idx(32)),
           [&](Gen &x) { findDigit(x, R, x.toI32(R.k)); });
  gpu::BarrierOp::create(g.b, g.loc);
  Value digit = g.load(R.ctl, g.idx(kCtlDigit));
  Value left = g.load(R.ctl, g.idx(kCtlRemaining));
  Value count = g.load(R.ctl, g.idx(kCtlBinCount));
  Value fits = g.cmpI(arith::CmpIPredicate::sle, count,
                      g.i32(kCandidateCapacity));
  return g.ifElse(
      fits, g.b.getI1Type(),
      [&](Gen &x) -> SmallVector<Value> {
        // The whole boundary bin is kept when it holds exactly the keys
        // still needed; else its keys wait at the end of the keys buffer.
        Value whole = x.cmpI(arith::CmpIPredicate::eq, count, left);
        Value base = x.idx(kSortCapacity - kCandidateCapacity);
        src.forEach(x, [&](Gen &y, Value key, Value i, Value id) {
          Value bin = vb.binOf(y, key);
          Value at = y.cmpI(arith::CmpIPredicate::eq, bin, digit);
          Value keep = y.orI(y.cmpI(arith::CmpIPredicate::ugt, bin, digit),
                             y.andI(at, whole));
          y.ifThen(keep, [&](Gen &z) {
            pushKey(z, R, key, i, [&](Gen &u) { return src.idOr(u, id, i); });
          });
          // The bin holds `count` keys; the bound on the slot only keeps a
          // miscounted bin inside the buffer.
          y.ifThen(y.andI(at, y.notI(whole)), [&](Gen &z) {
            Value slot = z.toIndex(
                atomicAdd(z, R.ctl, z.idx(kCtlCandidates), z.i32(1)));
            z.ifThen(z.lt(slot, z.idx(kCandidateCapacity)), [&](Gen &u) {
              u.store(sortKeyOf(u, key, i), R.keys, u.add(base, slot));
            });
          });
        });
        gpu::BarrierOp::create(x.b, x.loc);
        // Candidate t's rank is the number of larger candidates (sort keys
        // are distinct); the `left` best join the gathered keys.
        Value n = x.toIndex(count);
        x.ifThen(x.andI(x.notI(whole), x.lt(R.tid, n)), [&](Gen &y) {
          Value mine = y.load(R.keys, y.add(base, R.tid));
          Value larger =
              y.forLoop(y.idx(0), n, {y.i32(0)},
                        [&](Gen &z, Value j, ValueRange acc)
                            -> SmallVector<Value> {
                          Value other = z.load(R.keys, z.add(base, j));
                          Value more = z.cmpI(arith::CmpIPredicate::ugt,
                                              other, mine);
                          return {z.add(acc[0],
                                        arith::ExtUIOp::create(
                                            z.b, z.loc, z.b.getI32Type(),
                                            more))};
                        })
                  .getResult(0);
          y.ifThen(y.cmpI(arith::CmpIPredicate::slt, larger, left),
                   [&](Gen &z) {
                     pushSortKey(z, R, mine, [&](Gen &u) {
                       return KeySource::loadId(u, R, positionOfKey(u, mine));
                     });
                   });
        });
        gpu::BarrierOp::create(x.b, x.loc);
        return {trueValue(x)};
      },
      [&](Gen &x) -> SmallVector<Value> { return {falseValue(x)}; })[0];
}

/// Writes block `j` of the sorted selection: out[at + j] = dense[lo + pos].
void writePick(Gen &g, const SelectRow &R, Value key, Value j) {
  Value pos = positionOfKey(g, key);
  g.store(g.load(R.dense, g.add(R.lo, pos)), R.out, g.add(R.at, j));
}

/// The rank sort's read extent, roundUp(k, kRankPad); the gather fills
/// [0, k) and the padding beyond it holds 0 keys.
Value rankPadded(Gen &g, Value k) {
  return g.mul(g.ceilDiv(k, g.idx(kRankPad)), g.idx(kRankPad));
}

/// k <= rankSortSize: key j's place is the number of larger keys (the keys
/// are distinct). s threads count it (s * k <= threads, s a power of
/// two up to kRankThreadsPerKey, adjacent lanes of one warp), each over
/// every s-th key of keys[0, roundUp(k, kRankPad)), then sum by shuffles.
/// One pass, no barrier: about k / s shared loads per thread where a
/// bitonic sort takes log2(k)^2 / 2 barrier-separated stages.
void rankSortAndWrite(Gen &g, const SelectRow &R) {
  Value s = g.idx(1);
  for (int64_t t = 2; t <= kRankThreadsPerKey; t *= 2)
    s = g.select(g.cmpI(arith::CmpIPredicate::sle, R.k,
                        g.idx(R.threads() / t)),
                 g.idx(t), s);
  Value j = g.divU(R.tid, s), part = g.remU(R.tid, s);
  Value padded = rankPadded(g, R.k);
  Value at = g.minU(j, g.sub(padded, g.idx(1)));
  Value mine = g.load(R.keys, at);
  // Past k (the padding) the id is stale, but nothing past k is written.
  Value id = g.load(R.ids, g.minU(at, g.idx(R.plan.rankSortSize() - 1)));
  Value stride = g.mul(s, g.idx(kRankUnroll));
  Value rounds = g.divU(padded, stride);
  Value larger =
      g.forLoop(
           g.idx(0), rounds, {g.i32(0)},
           [&](Gen &x, Value round, ValueRange acc) -> SmallVector<Value> {
             Value base = x.add(x.mul(round, stride), part);
             SmallVector<Value> others;
             for (int64_t u = 0; u < kRankUnroll; ++u)
               others.push_back(
                   x.load(R.keys, x.add(base, x.mul(s, x.idx(u)))));
             Value sum = acc[0];
             for (Value other : others)
               sum = x.add(sum, arith::ExtUIOp::create(
                                    x.b, x.loc, x.b.getI32Type(),
                                    x.cmpI(arith::CmpIPredicate::ugt, other,
                                           mine)));
             return {sum};
           })
          .getResult(0);
  // Every lane takes part in the shuffles; those past s add nothing.
  for (int64_t off = 1; off < kRankThreadsPerKey; off *= 2) {
    Value other = gpu::ShuffleOp::create(g.b, g.loc, larger,
                                         static_cast<int32_t>(off), 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    larger = g.add(larger, g.select(g.lt(g.idx(off), s), other, g.i32(0)));
  }
  g.ifThen(g.andI(g.lt(j, R.k),
                  g.cmpI(arith::CmpIPredicate::eq, part, g.idx(0))),
           [&](Gen &x) {
             x.store(id, R.out, x.add(R.at, x.toIndex(larger)));
           });
}

/// Sorts the k gathered keys and writes them in descending order.
void sortAndWrite(Gen &g, const SelectRow &R) {
  g.ifElse(
      sortsByRank(g, R), {},
      [&](Gen &x) -> SmallVector<Value> {
        rankSortAndWrite(x, R);
        return {};
      },
      [&](Gen &x) -> SmallVector<Value> {
        // P = the next power of two >= k, padded with 0 keys (sorted last).
        Value P = whileLoop(
            x, x.idx(1), [&](Gen &w, Value p) { return w.lt(p, R.k); },
            [&](Gen &w, Value p) { return w.mul(p, w.idx(2)); });
        strided(x, R.k, P, R.tid, R.threads(), {},
                [&](Gen &y, Value i, ValueRange) -> SmallVector<Value> {
                  y.store(y.i64(0), R.keys, i);
                  return {};
                });
        gpu::BarrierOp::create(x.b, x.loc);
        sharedBitonic(x, R.keys, R.tid, P, R.threads());
        strided(x, x.idx(0), R.k, R.tid, R.threads(), {},
                [&](Gen &y, Value j, ValueRange) -> SmallVector<Value> {
                  writePick(y, R, y.load(R.keys, j), j);
                  return {};
                });
        return {};
      });
}

/// k > kSortCapacity: one CTA-wide maximum per pick, each below the
/// previous pick's key (slow, correct).
void argmaxSelection(Gen &g, const SelectRow &R) {
  Value first = g.cmpI(arith::CmpIPredicate::eq, R.tid, g.idx(0));
  g.forLoop(
      g.idx(0), R.k, {g.i64(-1)},
      [&](Gen &z, Value j, ValueRange prev) -> SmallVector<Value> {
        Value local =
            strided(z, z.idx(0), R.m, R.tid, R.threads(), {z.i64(0)},
                    [&](Gen &u, Value i, ValueRange acc)
                        -> SmallVector<Value> {
                      Value key = sortKey(
                          u, u.load(R.score, u.add(R.lo, i)), i);
                      Value ok = u.cmpI(arith::CmpIPredicate::ult, key,
                                        prev[0]);
                      Value better =
                          u.cmpI(arith::CmpIPredicate::ugt, key, acc[0]);
                      return {u.select(u.andI(ok, better), key, acc[0])};
                    })
                .getResult(0);
        Value best = ctaReduce(z, local, gpu::AllReduceOperation::MAXUI);
        // The next pick's reduction reuses the same shared buffer.
        gpu::BarrierOp::create(z.b, z.loc);
        z.ifThen(first, [&](Gen &u) { writePick(u, R, best, j); });
        return {best};
      });
}

} // namespace

void mlir::vortex::gpugen::emitSelection(Gen &g, const SelectRow &R) {
  g.ifElse(
      g.cmpI(arith::CmpIPredicate::sle, R.k, g.idx(kSortCapacity)), {},
      [&](Gen &x) -> SmallVector<Value> {
        x.ifThen(x.cmpI(arith::CmpIPredicate::eq, R.tid, x.idx(0)),
                 [&](Gen &y) {
                   y.store(y.i32(0), R.ctl, y.idx(kCtlSlots));
                   y.store(y.i32(0), R.ctl, y.idx(kCtlCandidates));
                 });
        // The rank sort's padding, beyond the k slots the gather fills.
        x.ifThen(sortsByRank(x, R), [&](Gen &y) {
          Value padded = rankPadded(y, R.k);
          Value i = y.add(R.k, R.tid);
          y.ifThen(y.lt(i, padded),
                   [&](Gen &z) { z.store(z.i64(0), R.keys, i); });
        });
        gpu::BarrierOp::create(x.b, x.loc);
        KeySource src = KeySource::get(x, R);
        KeyBounds bounds = rowKeyBounds(x, src);
        Value gathered = falseValue(x);
        if (R.plan.valueBins) {
          ValueBins vb = ValueBins::get(x, R, bounds);
          gathered = x.ifElse(
              vb.usable, x.b.getI1Type(),
              [&](Gen &y) -> SmallVector<Value> {
                return {gatherByValueBins(y, src, vb)};
              },
              [&](Gen &y) -> SmallVector<Value> {
                return {falseValue(y)};
              })[0];
        }
        // Otherwise the digit passes, which handle every row.
        x.ifThen(x.notI(gathered), [&](Gen &y) {
          gatherSelected(y, src, radixThreshold(y, src, bounds));
        });
        sortAndWrite(x, R);
        return {};
      },
      [&](Gen &x) -> SmallVector<Value> {
        argmaxSelection(x, R);
        return {};
      });
}
