//===- EnvelopeMMA.cpp - Envelope sums on tensor cores --------------------===//
//
// sum_k max(x_k a_k, x_k b_k) = sum_k x+_k max(a_k, b_k) + x-_k min(a_k, b_k)
// with x+ = max(x, 0) and x- = min(x, 0): for bf16 x, a and b every product
// is exact in f32, so the sums over k are an m16n8k16 bf16 mma with f32
// accumulation. A rows are the warp's items (their max and min of a and b,
// packed as the lanes hold them), B columns x's rows (Quest's heads), so the
// 128 (head, column) pairs that cost a lane four instructions each in the
// identity's fused multiply-adds take a few mma per warp. B is x of one row:
// the warp loops over the distinct rows of its items (one pass when they
// share a row, the common case) and keeps the fragments of the last row.
// docs/gpu.md, "Envelope sums on tensor cores".
//
//===----------------------------------------------------------------------===//

#include "MMA.h"
#include "TileOps.h"

using namespace mlir;
using namespace mlir::vortex;
using namespace mlir::vortex::gpugen;

int64_t mlir::vortex::gpugen::envelopeFragmentRegisters(int64_t lanes,
                                                        int64_t perLane) {
  // Per set of 4 source lanes: x+ and x- over the lane's columns, packed.
  return lanes / 4 * perLane;
}

bool mlir::vortex::gpugen::envelopeMMAFits(int64_t lanes, int64_t perLane,
                                           int64_t rows) {
  // Quads of lanes supply an A row each (so 4 to 32 lanes a group); each
  // mma takes 4 columns a lane; B has 8 columns.
  return lanes >= 4 && lanes <= 32 && 32 % lanes == 0 && perLane >= 4 &&
         perLane % 4 == 0 && rows >= 1 && rows <= 8;
}

namespace {

struct MMAEmitter {
  TileBuilder &tb;
  const EnvelopeMMAOperands &o;
  Gen g;
  Type i32, bf16;
  int64_t lanes, perLane, sets, mmasPerPart;
  Value lane, quad, inQuad, inGroup, quadInGroup;

  MMAEmitter(TileBuilder &tb, const EnvelopeMMAOperands &o)
      : tb(tb), o(o), g(tb.gen()), i32(g.b.getI32Type()),
        bf16(g.b.getBF16Type()), lanes(tb.lanes), perLane(o.x.perLane),
        sets(tb.lanes / 4), mmasPerPart(o.x.perLane / 4) {
    lane = gpu::LaneIdOp::create(g.b, g.loc, /*upper_bound=*/nullptr);
    quad = g.divU(lane, g.idx(4));
    inQuad = g.remU(lane, g.idx(4));
    // Ops built one statement at a time: the order of a call's arguments
    // differs between compilers, and so would the IR.
    inGroup = g.remU(lane, g.idx(lanes));
    quadInGroup = g.divU(inGroup, g.idx(4));
  }

  /// Elements 2p and 2p + 1 of a bf16 vector as one i32.
  Value pair(Gen &x, Value vec, int64_t p) {
    auto two = VectorType::get({2}, bf16);
    Value v = vector::ShuffleOp::create(x.b, x.loc, two, vec, vec,
                                        ArrayRef<int64_t>{2 * p, 2 * p + 1});
    Value w = vector::BitCastOp::create(x.b, x.loc,
                                        VectorType::get({1}, i32), v);
    return vector::ExtractOp::create(x.b, x.loc, w, 0);
  }

  Value shuffle(Gen &x, Value v, Value offset, gpu::ShuffleMode mode) {
    Value at = x.toI32(offset);
    Value width = x.i32(32);
    return gpu::ShuffleOp::create(x.b, x.loc, v, at, width, mode)
        .getShuffleResult();
  }

  int64_t fragIndex(int64_t set, int64_t part, int64_t m, int64_t half) {
    return ((set * 2 + part) * mmasPerPart + m) * 2 + half;
  }

  SmallVector<Value> loadFragments(Gen &x, Value row);
  SmallVector<Value> pass(Gen &x, ValueRange args,
                          ArrayRef<std::array<Value, 2>> parts);
  TileRef emit(EnvelopeFragments &state);
};

} // namespace

/// The B fragments of x's row `row` (i32): lane (n, j) of the warp holds
/// x row n (its head) at the columns lane 4s + j of a group holds, for each
/// set s, as x+ then x-, two packed pairs per mma.
SmallVector<Value> MMAEmitter::loadFragments(Gen &x, Value row) {
  int64_t realRows = o.x.realD0;
  Value valid = x.lt(quad, x.idx(realRows));
  Value head = x.minU(quad, x.idx(realRows - 1));
  Value rowIndex = x.toIndex(row);
  Value rowBase = x.mul(rowIndex, x.idx(o.xRowElements));
  Value base = x.add(rowBase, x.mul(head, x.idx(o.xStride)));
  Value zero = zerosBF16(x, perLane);
  SmallVector<Value> regs(envelopeFragmentRegisters(lanes, perLane));
  Value savedLane = tb.laneInItem;
  OpBuilder *savedBuilder = tb.builder;
  tb.builder = &x.b;
  for (int64_t s = 0; s < sets; ++s) {
    // The columns of lane 4s + j: TileBuilder::column at that lane.
    tb.laneInItem = x.add(x.idx(4 * s), inQuad);
    Value vec = tb.loadLaneRuns(o.xMemref, base, o.x, bf16, o.xAlign,
                                /*nontemporal=*/false);
    vec = arith::SelectOp::create(x.b, x.loc, valid, vec, zero);
    Value pos = arith::MaximumFOp::create(x.b, x.loc, vec, zero);
    Value neg = arith::MinimumFOp::create(x.b, x.loc, vec, zero);
    for (int64_t m = 0; m < mmasPerPart; ++m)
      for (int64_t half = 0; half < 2; ++half) {
        regs[fragIndex(s, 0, m, half)] = pair(x, pos, 2 * m + half);
        regs[fragIndex(s, 1, m, half)] = pair(x, neg, 2 * m + half);
      }
  }
  tb.laneInItem = savedLane;
  tb.builder = savedBuilder;
  return regs;
}

/// One pass of the row loop: the items of the first pending lane's row.
/// args = (pending, acc0, acc1, the fragments' row, fragments..., ballot of
/// pending); returns them for the next pass, less the ballot.
SmallVector<Value> MMAEmitter::pass(Gen &x, ValueRange args,
                                    ArrayRef<std::array<Value, 2>> parts) {
  Value pending = args[0], acc0 = args[1], acc1 = args[2], fragRow = args[3];
  SmallVector<Value> frags(args.slice(4, args.size() - 5));
  Value ballot = args.back();
  Value leader = LLVM::CountTrailingZerosOp::create(
      x.b, x.loc, i32, ballot, x.b.getBoolAttr(false));
  Value myRow = x.toI32(o.row);
  Value leaderRow = shuffle(x, myRow, leader, gpu::ShuffleMode::IDX);
  SmallVector<Type> fragTypes(frags.size(), i32);
  frags = x.ifElse(
      x.cmpI(arith::CmpIPredicate::ne, leaderRow, fragRow), fragTypes,
      [&](Gen &y) { return loadFragments(y, leaderRow); },
      [&](Gen &) { return frags; });
  Value mine = x.andI(pending,
                      x.cmpI(arith::CmpIPredicate::eq, myRow, leaderRow));
  Value zeroI = x.i32(0), zeroF = x.f32(0.0);
  Value own0 = zeroF, own1 = zeroF;
  for (int64_t s = 0; s < sets; ++s) {
    // One accumulation chain a set (a chain per part measured the same on
    // the H100 and took 12 registers more). Rows 8-15 of D stay zero, so
    // only c0 and c1 are carried.
    SmallVector<Value> d(4, zeroF);
    for (int64_t part = 0; part < 2; ++part)
      for (int64_t m = 0; m < mmasPerPart; ++m) {
        // A: rows 0-7 the items (a0a1, a4a5 this lane's pairs), rows 8-15
        // zero.
        Value a[4] = {parts[2 * m][part], zeroI, parts[2 * m + 1][part],
                      zeroI};
        Value b[2] = {frags[fragIndex(s, part, m, 0)],
                      frags[fragIndex(s, part, m, 1)]};
        SmallVector<Value> c01 = mmaBF16(x, a, b, d, /*results=*/2);
        d[0] = c01[0];
        d[1] = c01[1];
      }
    // This lane's row is its item's in set quadInGroup only.
    Value isOwn = x.cmpI(arith::CmpIPredicate::eq, quadInGroup, x.idx(s));
    own0 = x.select(isOwn, d[0], own0);
    own1 = x.select(isOwn, d[1], own1);
  }
  SmallVector<Value> next = {
      x.andI(pending, x.notI(mine)),
      x.select(mine, x.addF(acc0, own0), acc0),
      x.select(mine, x.addF(acc1, own1), acc1), leaderRow};
  llvm::append_range(next, frags);
  return next;
}

TileRef MMAEmitter::emit(EnvelopeFragments &state) {
  OpBuilder &b = g.b;
  Location loc = g.loc;
  // A: max and min of a and b, packed as the lane holds them.
  Value hi = arith::MaximumFOp::create(b, loc, o.aRow, o.bRow);
  Value lo = arith::MinimumFOp::create(b, loc, o.aRow, o.bRow);
  SmallVector<std::array<Value, 2>> parts;
  for (int64_t p = 0; p < perLane / 2; ++p)
    parts.push_back({pair(g, hi, p), pair(g, lo, p)});

  SmallVector<Value> inits = {
      arith::ConstantOp::create(b, loc, b.getBoolAttr(true)), g.f32(0.0),
      g.f32(0.0), state.row};
  llvm::append_range(inits, state.regs);
  SmallVector<Type> types = llvm::to_vector(ValueRange(inits).getTypes());
  SmallVector<Type> afterTypes(types);
  afterTypes.push_back(i32);
  SmallVector<Location> locs(afterTypes.size(), loc);
  // The loop's results are what scf.condition forwards: the ballot too.
  auto loop = scf::WhileOp::create(b, loc, afterTypes, inits);
  {
    Block *before = b.createBlock(&loop.getBefore(), {}, types,
                                  SmallVector<Location>(types.size(), loc));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(before);
    Gen x{b, loc};
    Value ballot =
        NVVM::VoteSyncOp::create(b, loc, i32, x.i32(-1), before->getArgument(0),
                                 NVVM::VoteSyncKind::ballot);
    SmallVector<Value> forward(before->getArguments());
    forward.push_back(ballot);
    scf::ConditionOp::create(b, loc, x.cmpI(arith::CmpIPredicate::ne, ballot,
                                            x.i32(0)),
                             forward);
  }
  {
    Block *after = b.createBlock(&loop.getAfter(), {}, afterTypes, locs);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(after);
    Gen x{b, loc};
    scf::YieldOp::create(b, loc, pass(x, after->getArguments(), parts));
  }
  b.setInsertionPointAfter(loop);
  Value acc0 = loop.getResult(1), acc1 = loop.getResult(2);
  state.row = loop.getResult(3);
  ValueRange results = loop.getResults();
  state.regs = llvm::to_vector(results.slice(4, results.size() - 5));

  // Lane (group, quad q, j) holds rows 2j and 2j + 1 over quad q's
  // columns: sum over the group's quads, then every lane takes each row's
  // sum from lane (row / 2) of its group.
  for (int64_t step = 4; step < lanes; step *= 2) {
    acc0 = g.addF(acc0, shuffle(g, acc0, g.idx(step), gpu::ShuffleMode::XOR));
    acc1 = g.addF(acc1, shuffle(g, acc1, g.idx(step), gpu::ShuffleMode::XOR));
  }
  Value groupBase = g.sub(lane, inGroup);
  FailureOr<TileLayout> layout =
      tb.reduceColumnsLayout(o.in, o.resultType, o.in.d1);
  if (failed(layout)) {
    tb.unsupported = true;
    return tb.makeTile(o.resultType, false);
  }
  TileRef out = tb.makeTile(layout->shape);
  SmallVector<Value> values;
  for (int64_t r = 0; r < out->d0; ++r) {
    if (r >= out->realD0 || r >= o.x.realD0) {
      values.push_back(g.f32(0.0));
      continue;
    }
    values.push_back(shuffle(g, r % 2 ? acc1 : acc0,
                             g.add(groupBase, g.idx(r / 2)),
                             gpu::ShuffleMode::IDX));
  }
  int64_t width = out->width();
  out->at = [values, width](int64_t r, int64_t e) {
    return values[r * width + e];
  };
  return out;
}

TileRef mlir::vortex::gpugen::emitEnvelopeMMA(TileBuilder &tb,
                                              const EnvelopeMMAOperands &o,
                                              EnvelopeFragments &state) {
  return MMAEmitter(tb, o).emit(state);
}
