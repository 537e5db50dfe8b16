//===- SelectionCommon.cpp - Helpers the top-k and union kernels share ----===//
//
// The row helpers of SelectionCommon.h.
//
//===----------------------------------------------------------------------===//

#include "SelectionCommon.h"

namespace mlir::vortex::gpugen {

Value trueValue(Gen &g) {
  return arith::ConstantOp::create(g.b, g.loc, g.b.getBoolAttr(true));
}

Value falseValue(Gen &g) {
  return arith::ConstantOp::create(g.b, g.loc, g.b.getBoolAttr(false));
}

/// Row r's end in sparse_kv_indptr (and its 0 at row 0); one thread.
void storeSparseIndptr(Gen &g, Value sparsePtr, Value r, Value end) {
  g.store(g.toI32(end), sparsePtr, g.add(r, g.idx(1)));
  g.ifThen(g.cmpI(arith::CmpIPredicate::eq, r, g.idx(0)),
           [&](Gen &y) { y.store(y.i32(0), sparsePtr, y.idx(0)); });
}

/// Records row r's malformed dense_kv_indptr (the guard); one thread.
void recordBadIndptr(Gen &g, Value status, Value indptr, Value r) {
  g.recordStatus(status, abi::kBadIndptr,
                 g.toIndex(g.load(indptr, g.add(r, g.idx(1)))), r);
}

/// buffer[i] as an index if i is within the buffer, else 0.
Value loadIndexOrZero(Gen &g, Value buffer, Value i) {
  return g.ifElse(
      g.lt(i, g.extent(buffer)), g.b.getIndexType(),
      [&](Gen &x) -> SmallVector<Value> {
        return {x.toIndex(x.load(buffer, i))};
      },
      [&](Gen &x) -> SmallVector<Value> { return {x.idx(0)}; })[0];
}

} // namespace mlir::vortex::gpugen
