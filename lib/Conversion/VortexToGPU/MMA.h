//===- MMA.h - The bf16 tensor-core op of the mma kernels -------*- C++ -*-===//
//
// The mma.sync m16n8k16 (bf16 in, f32 accumulate) that the attend split
// kernel (AttentionMMA.cpp) and the envelope sums (EnvelopeMMA.cpp) issue,
// and the bf16 zeros they mask their operands with.
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_LIB_CONVERSION_VORTEXTOGPU_MMA_H
#define VORTEX_LIB_CONVERSION_VORTEXTOGPU_MMA_H

#include "KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::vortex::gpugen {

/// d = a b + c on tensor cores: A (row major) 4 words of bf16 pairs a lane,
/// B (column major) 2, C and D 4 f32 a lane. Returns D's first `results`
/// values; the rest are not extracted.
inline SmallVector<Value> mmaBF16(Gen &x, ArrayRef<Value> a,
                                  ArrayRef<Value> b, ArrayRef<Value> c,
                                  int64_t results = 4) {
  auto resultType = LLVM::LLVMStructType::getLiteral(
      x.b.getContext(), SmallVector<Type>(4, x.b.getF32Type()));
  Value r = NVVM::MmaOp::create(
      x.b, x.loc, resultType, a, b, c, {16, 8, 16},
      /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                    NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  for (int64_t i = 0; i < results; ++i)
    out.push_back(
        LLVM::ExtractValueOp::create(x.b, x.loc, r, ArrayRef<int64_t>{i}));
  return out;
}

/// A vector of `n` bf16 zeros.
inline Value zerosBF16(Gen &x, int64_t n) {
  Type bf16 = x.b.getBF16Type();
  auto type = VectorType::get({n}, bf16);
  return arith::ConstantOp::create(
      x.b, x.loc, type, DenseElementsAttr::get(type, x.b.getZeroAttr(bf16)));
}

} // namespace mlir::vortex::gpugen

#endif // VORTEX_LIB_CONVERSION_VORTEXTOGPU_MMA_H
