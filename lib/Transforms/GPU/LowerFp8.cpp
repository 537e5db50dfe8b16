//===- LowerFp8.cpp - fp8 widening that LLVM 22's NVPTX can select -------===//
//
// LLVM 22's NVPTX back end cannot select fpext from fp8, so the kernels'
// arith.extf of fp8 k and v elements fails at serialization. Rewrite each
// into what it can: e5m2 through f16 bits, e4m3fn through the hardware
// conversion on sm_89+ and through its bits before.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Transforms/GPU/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::vortex {
#define GEN_PASS_DEF_VORTEXGPULOWERFP8
#include "Vortex/Transforms/GPU/Passes.h.inc"
} // namespace mlir::vortex

using namespace mlir;

namespace {

/// The byte of an fp8 value, zero-extended to `wide`.
static Value bitsOf(OpBuilder &b, Location loc, Value v, Type wide) {
  Value byte = arith::BitcastOp::create(b, loc, b.getI8Type(), v);
  return arith::ExtUIOp::create(b, loc, wide, byte);
}

static Value constInt(OpBuilder &b, Location loc, Type t, int64_t n) {
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, n));
}

/// e5m2 is the high byte of an f16.
static Value e5m2ToF16(OpBuilder &b, Location loc, Value v) {
  Value bits = bitsOf(b, loc, v, b.getI16Type());
  Value shifted = arith::ShLIOp::create(
      b, loc, bits, constInt(b, loc, b.getI16Type(), 8));
  return arith::BitcastOp::create(b, loc, b.getF16Type(), shifted);
}

/// e4m3fn with cvt.rn.f16x2.e4m3x2 (sm_89+): the byte in the low lane.
static Value e4m3ToF16Hardware(OpBuilder &b, Location loc, Value v) {
  auto pair = VectorType::get({2}, b.getI8Type());
  Value zero = arith::ConstantOp::create(
      b, loc, pair, DenseElementsAttr::get(pair, b.getI8IntegerAttr(0)));
  Value byte = arith::BitcastOp::create(b, loc, b.getI8Type(), v);
  Value packed = vector::InsertOp::create(b, loc, byte, zero, 0);
  Value halves = NVVM::ConvertF8x2ToF16x2Op::create(
      b, loc, VectorType::get({2}, b.getF16Type()), packed,
      /*relu=*/false, v.getType());
  return vector::ExtractOp::create(b, loc, halves, 0);
}

/// e4m3fn (bias 7, S.1111.111 is NaN, no infinities) from its bits: normal
/// numbers get the exponent rebiased by 120 into f32's, subnormals are
/// m * 2^-9; all exact.
static Value e4m3ToF32Bits(OpBuilder &b, Location loc, Value v) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t n) { return constInt(b, loc, i32, n); };
  Value x = bitsOf(b, loc, v, i32);
  Value sign = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, x, c(0x80)), c(24));
  Value exp = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, x, c(3)), c(0xF));
  Value man = arith::AndIOp::create(b, loc, x, c(7));
  Value normal = arith::OrIOp::create(
      b, loc, sign,
      arith::OrIOp::create(
          b, loc,
          arith::ShLIOp::create(b, loc,
                                arith::AddIOp::create(b, loc, exp, c(120)),
                                c(23)),
          arith::ShLIOp::create(b, loc, man, c(20))));
  Value scale = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0x1p-9f));
  Value sub = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), man), scale);
  Value subBits = arith::OrIOp::create(
      b, loc, sign, arith::BitcastOp::create(b, loc, i32, sub));
  Value isSub =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exp, c(0));
  Value isNaN = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::AndIOp::create(b, loc, x, c(0x7F)), c(0x7F));
  Value bits = arith::SelectOp::create(
      b, loc, isNaN, arith::OrIOp::create(b, loc, sign, c(0x7FC00000)),
      arith::SelectOp::create(b, loc, isSub, subBits, normal));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

struct VortexGPULowerFp8Pass final
    : vortex::impl::VortexGPULowerFp8Base<VortexGPULowerFp8Pass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<unsigned> sm = vortex::parseSMVersion(chip);
    if (!sm) {
      getOperation()->emitError("vortex-gpu-lower-fp8: chip '")
          << chip << "' is not sm_<number>[suffix]";
      return signalPassFailure();
    }
    bool hardware = *sm >= 89;
    SmallVector<arith::ExtFOp> widen;
    WalkResult bad = getOperation()->walk([&](Operation *op) {
      if (auto ext = dyn_cast<arith::ExtFOp>(op)) {
        if (!isa<Float8E4M3FNType, Float8E5M2Type>(
                getElementTypeOrSelf(ext.getIn().getType())))
          return WalkResult::advance();
        // Kernels widen one element at a time, to f32.
        if (!ext.getType().isF32()) {
          op->emitOpError("widens fp8 to ")
              << ext.getType() << "; only scalar f32 is supported";
          return WalkResult::interrupt();
        }
        widen.push_back(ext);
        return WalkResult::advance();
      }
      auto trunc = dyn_cast<arith::TruncFOp>(op);
      if (!trunc || !isa<Float8E4M3FNType, Float8E5M2Type>(
                        getElementTypeOrSelf(trunc.getType())))
        return WalkResult::advance();
      op->emitOpError("narrows to fp8, which has no NVVM lowering in LLVM 22");
      return WalkResult::interrupt();
    });
    if (bad.wasInterrupted())
      return signalPassFailure();
    for (arith::ExtFOp ext : widen) {
      OpBuilder b(ext);
      Location loc = ext.getLoc();
      Value in = ext.getIn();
      Value f32;
      if (isa<Float8E4M3FNType>(in.getType()) && !hardware) {
        f32 = e4m3ToF32Bits(b, loc, in);
      } else {
        Value half = isa<Float8E5M2Type>(in.getType())
                         ? e5m2ToF16(b, loc, in)
                         : e4m3ToF16Hardware(b, loc, in);
        f32 = arith::ExtFOp::create(b, loc, b.getF32Type(), half);
      }
      ext.replaceAllUsesWith(f32);
      ext.erase();
    }
  }
};

} // namespace
