// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-fp8 -verify-diagnostics
// RUN: not vortex-opt %s --split-input-file --vortex-gpu-lower-fp8=chip=gfx90a 2>&1 | FileCheck %s --check-prefix=CHIP

// Narrowing to fp8 has no lowering.
func.func @narrow(%x: f32) -> f8E4M3FN {
  // expected-error @+1 {{'arith.truncf' op narrows to fp8, which has no NVVM lowering in LLVM 22}}
  %y = arith.truncf %x : f32 to f8E4M3FN
  return %y : f8E4M3FN
}

// -----

// Kernels widen fp8 to f32 only.
func.func @to_f16(%x: f8E5M2) -> f16 {
  // expected-error @+1 {{'arith.extf' op widens fp8 to 'f16'; only scalar f32 is supported}}
  %y = arith.extf %x : f8E5M2 to f16
  return %y : f16
}

// CHIP: error: vortex-gpu-lower-fp8: chip 'gfx90a' is not sm_<number>[suffix]
