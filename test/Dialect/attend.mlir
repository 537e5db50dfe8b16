// RUN: vortex-opt %s | vortex-opt | FileCheck %s
// RUN: vortex-opt %s -mlir-print-op-generic | vortex-opt | FileCheck %s

// vortex.attend round-trips: dynamic and static rows, T x G heads with an
// odd G, bf16 q over fp8 pools (the GPU's types).

// CHECK-LABEL: func.func @dense
// CHECK: vortex.attend %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {group_size = 8 : i64} : (tensor<?x8x128xf32>, tensor<?x16x128xf32>, tensor<?x16x128xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x128xf32>, tensor<?x8xf32>)
func.func @dense(%q: tensor<?x8x128xf32>, %k: tensor<?x16x128xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) -> (tensor<?x8x128xf32>, tensor<?x8xf32>) {
  %o, %lse = vortex.attend %q, %k, %k, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<?x8x128xf32>, tensor<?x16x128xf32>, tensor<?x16x128xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x8x128xf32>, tensor<?x8xf32>)
  return %o, %lse : tensor<?x8x128xf32>, tensor<?x8xf32>
}

// CHECK-LABEL: func.func @multi_token_fp8
// CHECK: vortex.attend {{.*}} {group_size = 5 : i64} : (tensor<3x20x80xbf16>, tensor<?x8x80xf8E4M3FN>, tensor<?x8x80xf8E4M3FN>, tensor<4xi32>, tensor<?xi32>, tensor<3xi32>, f32) -> (tensor<3x20x80xbf16>, tensor<3x20xf32>)
func.func @multi_token_fp8(%q: tensor<3x20x80xbf16>, %k: tensor<?x8x80xf8E4M3FN>, %v: tensor<?x8x80xf8E4M3FN>, %ip: tensor<4xi32>, %ix: tensor<?xi32>, %ll: tensor<3xi32>, %s: f32) -> (tensor<3x20x80xbf16>, tensor<3x20xf32>) {
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 5 : i64}
      : (tensor<3x20x80xbf16>, tensor<?x8x80xf8E4M3FN>, tensor<?x8x80xf8E4M3FN>, tensor<4xi32>, tensor<?xi32>, tensor<3xi32>, f32) -> (tensor<3x20x80xbf16>, tensor<3x20xf32>)
  return %o, %lse : tensor<3x20x80xbf16>, tensor<3x20xf32>
}

// Packed int4 pools (docs/contract.md "INT4 KV"): i8 bytes, two channels
// each, with k's per-channel and v's per-token scales.
// CHECK-LABEL: func.func @int4
// CHECK: vortex.attend %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scales(%{{.*}}, %{{.*}}) {group_size = 8 : i64} : (tensor<?x8x128xbf16>, tensor<?x16x64xi8>, tensor<?x16x64xi8>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32, tensor<?x1x128xf32>, tensor<?x16x1xf32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>)
func.func @int4(%q: tensor<?x8x128xbf16>, %k: tensor<?x16x64xi8>, %v: tensor<?x16x64xi8>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32, %ks: tensor<?x1x128xf32>, %vs: tensor<?x16x1xf32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s scales(%ks, %vs) {group_size = 8 : i64}
      : (tensor<?x8x128xbf16>, tensor<?x16x64xi8>, tensor<?x16x64xi8>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32, tensor<?x1x128xf32>, tensor<?x16x1xf32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>)
  return %o, %lse : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
