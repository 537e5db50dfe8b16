//===- ScalarBuilder.cpp - Scalar IR helpers shared by the lowerings ------===//

#include "Vortex/Conversion/Utils/ScalarBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::vortex;

Value ScalarBuilder::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value ScalarBuilder::i32(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}
Value ScalarBuilder::i64(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
}
Value ScalarBuilder::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}
Value ScalarBuilder::f64(double v) {
  return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v));
}
Value ScalarBuilder::toIndex(Value v) {
  if (v.getType().isIndex())
    return v;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}
Value ScalarBuilder::toI32(Value v) {
  if (v.getType().isInteger(32))
    return v;
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
}
Value ScalarBuilder::add(Value x, Value y) {
  return arith::AddIOp::create(b, loc, x, y);
}
Value ScalarBuilder::sub(Value x, Value y) {
  return arith::SubIOp::create(b, loc, x, y);
}
Value ScalarBuilder::mul(Value x, Value y) {
  return arith::MulIOp::create(b, loc, x, y);
}
Value ScalarBuilder::divU(Value x, Value y) {
  return arith::DivUIOp::create(b, loc, x, y);
}
Value ScalarBuilder::remU(Value x, Value y) {
  return arith::RemUIOp::create(b, loc, x, y);
}
Value ScalarBuilder::ceilDiv(Value x, Value y) {
  return arith::CeilDivUIOp::create(b, loc, x, y);
}
Value ScalarBuilder::minI(Value x, Value y) {
  return arith::MinSIOp::create(b, loc, x, y);
}
Value ScalarBuilder::maxI(Value x, Value y) {
  return arith::MaxSIOp::create(b, loc, x, y);
}
Value ScalarBuilder::minU(Value x, Value y) {
  return arith::MinUIOp::create(b, loc, x, y);
}
Value ScalarBuilder::cmpI(arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}
Value ScalarBuilder::cmpF(arith::CmpFPredicate p, Value x, Value y) {
  return arith::CmpFOp::create(b, loc, p, x, y);
}
Value ScalarBuilder::andI(Value x, Value y) {
  return arith::AndIOp::create(b, loc, x, y);
}
Value ScalarBuilder::orI(Value x, Value y) {
  return arith::OrIOp::create(b, loc, x, y);
}
Value ScalarBuilder::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}
Value ScalarBuilder::addF(Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}
Value ScalarBuilder::subF(Value x, Value y) {
  return arith::SubFOp::create(b, loc, x, y);
}
Value ScalarBuilder::mulF(Value x, Value y) {
  return arith::MulFOp::create(b, loc, x, y);
}
Value ScalarBuilder::divF(Value x, Value y) {
  return arith::DivFOp::create(b, loc, x, y);
}
Value ScalarBuilder::maxF(Value x, Value y) {
  return arith::MaximumFOp::create(b, loc, x, y);
}
Value ScalarBuilder::minF(Value x, Value y) {
  return arith::MinimumFOp::create(b, loc, x, y);
}
Value ScalarBuilder::affine(Value x, double scale, double shift) {
  return addF(mulF(x, f32(scale)), f32(shift));
}

Value mlir::vortex::combineReduction(ScalarBuilder &s, ReduceKind kind,
                                     Value acc, Value x) {
  switch (kind) {
  case ReduceKind::Max:
    return s.maxF(acc, x);
  case ReduceKind::Min:
    return s.minF(acc, x);
  case ReduceKind::L2Norm:
    return s.addF(acc, s.mulF(x, x));
  case ReduceKind::Mean:
  case ReduceKind::Sum:
    return s.addF(acc, x);
  }
  llvm_unreachable("unknown reduce kind");
}

Value mlir::vortex::finishReduction(ScalarBuilder &s, ReduceKind kind,
                                    Value acc, Value count) {
  if (kind == ReduceKind::Mean)
    return s.divF(acc, count);
  if (kind == ReduceKind::L2Norm)
    return math::SqrtOp::create(s.b, s.loc, acc);
  return acc;
}

Value mlir::vortex::emitRowBudget(ScalarBuilder &s, FlowConfigAttr config,
                                  Value n) {
  Value ratio = s.f64(config.getTopkRatio().getValueAsDouble());
  return emitRowBudget(s, s.idx(config.getMinBudget()), ratio, n);
}

Value mlir::vortex::emitRowBudget(ScalarBuilder &s, Value minBudget,
                                  Value ratio, Value n) {
  Value nf = arith::UIToFPOp::create(s.b, s.loc, s.b.getF64Type(),
                                     s.toI32(n));
  Value scaled = arith::MulFOp::create(s.b, s.loc, nf, ratio);
  Value dynamic = s.toIndex(
      arith::FPToSIOp::create(s.b, s.loc, s.b.getI32Type(), scaled));
  return s.maxI(minBudget, dynamic);
}

Value mlir::vortex::emitUnary(ScalarBuilder &s, UnaryKind kind, Value x,
                              double alpha, double beta) {
  switch (kind) {
  case UnaryKind::Relu:
    return s.select(s.cmpF(arith::CmpFPredicate::OGE, x, s.f32(alpha)), x,
                    s.f32(beta));
  case UnaryKind::Sigmoid: {
    Value ex = math::ExpOp::create(s.b, s.loc, s.affine(x, beta, alpha));
    return s.divF(s.f32(1.0), s.addF(s.f32(1.0), ex));
  }
  case UnaryKind::Silu: {
    Value ex = math::ExpOp::create(s.b, s.loc, s.affine(x, beta, alpha));
    return s.divF(x, s.addF(s.f32(1.0), ex));
  }
  case UnaryKind::Abs:
    return math::AbsFOp::create(s.b, s.loc, s.affine(x, beta, alpha));
  case UnaryKind::AddMul:
    return s.affine(x, beta, alpha);
  case UnaryKind::Log:
    return math::LogOp::create(s.b, s.loc, s.affine(x, beta, alpha));
  case UnaryKind::Exp:
    return math::ExpOp::create(s.b, s.loc, s.affine(x, beta, alpha));
  }
  llvm_unreachable("unknown unary kind");
}

static arith::CmpFPredicate wherePredicate(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::WhereEqual:
    return arith::CmpFPredicate::OEQ;
  case BinaryKind::WhereNotEqual:
    return arith::CmpFPredicate::UNE;
  case BinaryKind::WhereGreater:
    return arith::CmpFPredicate::OGT;
  case BinaryKind::WhereGreaterEqual:
    return arith::CmpFPredicate::OGE;
  case BinaryKind::WhereLess:
    return arith::CmpFPredicate::OLT;
  default:
    return arith::CmpFPredicate::OLE;
  }
}

Value mlir::vortex::emitBinary(ScalarBuilder &s, BinaryKind kind, Value x,
                               Value y, double alpha, double beta) {
  switch (kind) {
  case BinaryKind::Maximum:
    return s.maxF(x, y);
  case BinaryKind::Minimum:
    return s.minF(x, y);
  case BinaryKind::Add:
    return s.addF(s.mulF(x, s.f32(alpha)), s.mulF(y, s.f32(beta)));
  case BinaryKind::Mul:
    return s.mulF(x, y);
  default:
    return s.select(s.cmpF(wherePredicate(kind), x, y), s.f32(0.0),
                    s.f32(kMaskNegative));
  }
}
