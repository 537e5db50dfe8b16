//===- ScalarBuilder.h - Scalar IR helpers shared by the lowerings -*- C++ -*-===//
//
// The arith/math building blocks both code generators need (the linalg one
// and the GPU one): constants and integer/float arithmetic at one location,
// and the scalar semantics of the vortex op kinds (unary and binary
// elementwise ops, reductions), so the two paths compute the same function.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_CONVERSION_UTILS_SCALARBUILDER_H
#define VORTEX_CONVERSION_UTILS_SCALARBUILDER_H

#include "Vortex/Dialect/VortexDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir::vortex {

/// Scalar helpers over an OpBuilder at a location.
struct ScalarBuilder {
  OpBuilder &b;
  Location loc;

  ScalarBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value idx(int64_t v);
  Value i32(int64_t v);
  Value i64(int64_t v);
  Value f32(double v);
  Value f64(double v);
  Value toIndex(Value v);
  Value toI32(Value v);
  Value add(Value x, Value y);
  Value sub(Value x, Value y);
  Value mul(Value x, Value y);
  Value divU(Value x, Value y);
  Value remU(Value x, Value y);
  Value ceilDiv(Value x, Value y);
  Value minI(Value x, Value y);
  Value maxI(Value x, Value y);
  Value minU(Value x, Value y);
  Value cmpI(arith::CmpIPredicate p, Value x, Value y);
  Value lt(Value x, Value y) { return cmpI(arith::CmpIPredicate::slt, x, y); }
  Value cmpF(arith::CmpFPredicate p, Value x, Value y);
  Value andI(Value x, Value y);
  Value orI(Value x, Value y);
  Value select(Value c, Value x, Value y);
  Value addF(Value x, Value y);
  Value subF(Value x, Value y);
  Value mulF(Value x, Value y);
  Value divF(Value x, Value y);
  Value maxF(Value x, Value y);
  Value minF(Value x, Value y);
  /// `x * scale + shift` (the (alpha, beta) knobs of the unary ops).
  Value affine(Value x, double scale, double shift);
};

/// The value vortex_torch uses for -inf in additive masks and scans.
constexpr double kMaskNegative = -1e30;

/// Folds `x` into the accumulator of a reduction.
Value combineReduction(ScalarBuilder &s, ReduceKind kind, Value acc, Value x);
/// The reduction's result from its accumulator over `count` elements (mean
/// divides by it, l2norm takes the root).
Value finishReduction(ScalarBuilder &s, ReduceKind kind, Value acc,
                      Value count);
/// The flow's per-row budget for a row of `n` (index) blocks:
/// max(topk_val + reserved_bos + reserved_eos, int(n * topk_ratio)).
Value emitRowBudget(ScalarBuilder &s, FlowConfigAttr config, Value n);
/// The same from values: max(minBudget, int(n * ratio)), `minBudget` an
/// index and `ratio` an f64 (the top-k's parameters).
Value emitRowBudget(ScalarBuilder &s, Value minBudget, Value ratio, Value n);
/// A unary elementwise op on one f32.
Value emitUnary(ScalarBuilder &s, UnaryKind kind, Value x, double alpha,
                double beta);
/// A binary elementwise op on two f32 (alpha, beta: Add's knobs); the where
/// kinds give 0 or kMaskNegative.
Value emitBinary(ScalarBuilder &s, BinaryKind kind, Value x, Value y,
                 double alpha = 1.0, double beta = 1.0);

} // namespace mlir::vortex

#endif // VORTEX_CONVERSION_UTILS_SCALARBUILDER_H
