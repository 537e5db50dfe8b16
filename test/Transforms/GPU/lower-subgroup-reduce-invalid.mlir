// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-subgroup-reduce --verify-diagnostics
// RUN: not vortex-opt %s --split-input-file --vortex-gpu-lower-subgroup-reduce=subgroup-size=48 2>&1 | FileCheck %s --check-prefix=SIZE

// SIZE: error: subgroup-size must be a power of two, got 48

func.func @cluster_too_big(%x: f32) -> f32 {
  // expected-error @+1 {{cluster size 64 exceeds the subgroup size 32}}
  %r = gpu.subgroup_reduce add %x cluster(size = 64) : (f32) -> f32
  return %r : f32
}

// -----

func.func @stride_too_big(%x: f32) -> f32 {
  // expected-error @+1 {{cluster stride 8 does not fit the subgroup size 32}}
  %r = gpu.subgroup_reduce add %x cluster(size = 8, stride = 8) : (f32) -> f32
  return %r : f32
}
