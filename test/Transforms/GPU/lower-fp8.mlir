// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-fp8=chip=sm_90 | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-fp8=chip=sm_80 | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-fp8=chip=sm_100a | FileCheck %s --check-prefixes=CHECK,SM90

// e4m3fn: the hardware conversion from sm_89 (the byte in the low lane of
// an f8x2 pair), else from its bits: rebiased exponent (+120), subnormals
// as m * 2^-9, S.1111.111 as NaN (0x7FC00000 = 2143289344).
// CHECK-LABEL: func.func @e4m3
// SM90: %[[B:.+]] = arith.bitcast %{{.+}} : f8E4M3FN to i8
// SM90: %[[P:.+]] = vector.insert %[[B]], %{{.+}} [0] : i8 into vector<2xi8>
// SM90: %[[H:.+]] = nvvm.convert.f8x2.to.f16x2 %[[P]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// SM90: %[[L:.+]] = vector.extract %[[H]][0] : f16 from vector<2xf16>
// SM90: %[[F:.+]] = arith.extf %[[L]] : f16 to f32
// SM90: return %[[F]]
// SM80: arith.bitcast %{{.+}} : f8E4M3FN to i8
// SM80: arith.extui %{{.+}} : i8 to i32
// SM80-DAG: arith.constant 120 : i32
// SM80-DAG: arith.constant 0.001953125 : f32
// SM80-DAG: arith.constant 2143289344 : i32
// SM80: %[[F:.+]] = arith.bitcast %{{.+}} : i32 to f32
// SM80: return %[[F]]
// CHECK-NOT: arith.extf %{{.+}} : f8E4M3FN
func.func @e4m3(%x: f8E4M3FN) -> f32 {
  %y = arith.extf %x : f8E4M3FN to f32
  return %y : f32
}

// -----

// e5m2 on any chip: the high byte of an f16.
// CHECK-LABEL: func.func @e5m2
// CHECK: %[[B:.+]] = arith.bitcast %{{.+}} : f8E5M2 to i8
// CHECK: %[[W:.+]] = arith.extui %[[B]] : i8 to i16
// CHECK: %[[S:.+]] = arith.shli %[[W]], %{{.+}} : i16
// CHECK: %[[H:.+]] = arith.bitcast %[[S]] : i16 to f16
// CHECK: %[[F:.+]] = arith.extf %[[H]] : f16 to f32
// CHECK: return %[[F]]
func.func @e5m2(%x: f8E5M2) -> f32 {
  %y = arith.extf %x : f8E5M2 to f32
  return %y : f32
}

// -----

// Other widenings are left alone.
// CHECK-LABEL: func.func @bf16
// CHECK: arith.extf %{{.+}} : bf16 to f32
func.func @bf16(%x: bf16) -> f32 {
  %y = arith.extf %x : bf16 to f32
  return %y : f32
}
