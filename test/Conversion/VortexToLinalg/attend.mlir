// RUN: vortex-opt %s --convert-vortex-to-linalg | FileCheck %s
// RUN: vortex-opt %s --convert-vortex-to-linalg --canonicalize | FileCheck %s --check-prefix=NOVORTEX

// vortex.attend needs no flow (it works on builtin tensors): it lowers to
// one scf.for over the rows; in a row, the CSR's blocks are gathered, and
// the two-pass softmax is a chain of linalg.generics. Tokens a head does
// not see are removed by selects (never by a multiply), so NaN in the pool
// cannot leak; a row without visible tokens gets o = 0 and lse = -inf.

// CHECK-LABEL: func.func @attend
// CHECK-SAME: (%[[Q:.*]]: tensor<?x10x64xf32>, %[[K:.*]]: tensor<?x16x64xf32>, %[[V:.*]]: tensor<?x16x64xf32>, %[[IP:.*]]: tensor<?xi32>, %[[IX:.*]]: tensor<?xi32>, %[[LL:.*]]: tensor<?xi32>, %[[S:.*]]: f32)
// CHECK: %[[ROWS:.*]] = tensor.dim %[[Q]], %{{.*}}
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[R:.*]] = %{{.*}} to %[[ROWS]]
// CHECK-SAME: iter_args(%[[O:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}) -> (tensor<?x10x64xf32>, tensor<?x10xf32>)
// The row's bounds and its length: block_size per entry but the last.
// CHECK: tensor.extract %[[IP]][%[[R]]]
// CHECK: tensor.extract %[[LL]][%[[R]]]
// CHECK: arith.muli %{{.*}}, %c16
// The gathers of k and v by block id.
// CHECK: linalg.generic
// CHECK: tensor.extract %[[IX]]
// CHECK: tensor.extract %[[K]]
// CHECK: linalg.generic
// CHECK: tensor.extract %[[V]]
// q . k over D (a reduction), then the scale and the visibility select.
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: linalg.generic
// CHECK: arith.cmpi slt
// CHECK: arith.mulf %[[S]]
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst
// The maximum, the exponentials (selected), their sum, p . v (selected).
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.select
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.select
// o = acc / sum, or 0 where the row saw nothing; lse = max + ln(sum) or -inf.
// CHECK: arith.cmpf oeq
// CHECK: arith.divf
// CHECK: math.log
// CHECK: tensor.insert_slice %{{.*}} into %[[O]][%[[R]], 0, 0] [1, 10, 64] [1, 1, 1] : tensor<10x64xf32> into tensor<?x10x64xf32>
// CHECK: tensor.insert_slice %{{.*}} into %[[L]][%[[R]], 0] [1, 10] [1, 1] : tensor<10xf32> into tensor<?x10xf32>
// CHECK: return %[[LOOP]]#0, %[[LOOP]]#1
// NOVORTEX-NOT: vortex.
func.func @attend(%q: tensor<?x10x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ll: tensor<?xi32>, %s: f32) -> (tensor<?x10x64xf32>, tensor<?x10xf32>) {
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s {group_size = 5 : i64}
      : (tensor<?x10x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, f32) -> (tensor<?x10x64xf32>, tensor<?x10xf32>)
  return %o, %lse : tensor<?x10x64xf32>, tensor<?x10xf32>
}

// bf16 q and fp8 pools (the GPU's types) lower too: extended to f32 where
// read, o truncated to q's type where written.
// CHECK-LABEL: func.func @narrow
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.extf %{{.*}} : f8E4M3FN to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @narrow(%q: tensor<2x8x64xbf16>, %k: tensor<?x8x64xf8E4M3FN>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %ll: tensor<2xi32>, %s: f32) -> (tensor<2x8x64xbf16>, tensor<2x8xf32>) {
  %o, %lse = vortex.attend %q, %k, %k, %ip, %ix, %ll, %s {group_size = 8 : i64}
      : (tensor<2x8x64xbf16>, tensor<?x8x64xf8E4M3FN>, tensor<?x8x64xf8E4M3FN>, tensor<3xi32>, tensor<?xi32>, tensor<2xi32>, f32) -> (tensor<2x8x64xbf16>, tensor<2x8xf32>)
  return %o, %lse : tensor<2x8x64xbf16>, tensor<2x8xf32>
}

// Packed int4 pools with their scales: the gathers unpack each channel from
// its byte (byte d / 2, shifted 4 * (d % 2), & 15), minus 7, times k's
// per-channel scale of the block or v's per-token scale.
// CHECK-LABEL: func.func @int4
// CHECK-SAME: %[[K4:arg1]]: tensor<?x8x32xi8>, %[[V4:arg2]]: tensor<?x8x32xi8>
// CHECK-SAME: %[[KS:arg7]]: tensor<?x1x64xf32>, %[[VS:arg8]]: tensor<?x8x1xf32>
// CHECK: linalg.generic
// CHECK: %[[BID:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[C:.*]] = arith.minsi %{{.*}}, %c63
// CHECK: %[[BYTE:.*]] = arith.divui %[[C]], %c2
// CHECK: %[[B:.*]] = tensor.extract %[[K4]][%[[BID]], %{{.*}}, %[[BYTE]]]
// CHECK: %[[SH:.*]] = arith.shrui %[[B]], %{{.*}} : i8
// CHECK: %[[N:.*]] = arith.andi %[[SH]], %c15_i8 : i8
// CHECK: %[[F:.*]] = arith.uitofp %[[N]] : i8 to f32
// CHECK: %[[Q:.*]] = arith.subf %[[F]], %{{.*}} : f32
// CHECK: %[[S:.*]] = tensor.extract %[[KS]][%[[BID]], %{{.*}}, %[[C]]]
// CHECK: arith.mulf %[[Q]], %[[S]] : f32
// CHECK: linalg.generic
// CHECK: tensor.extract %[[V4]]
// CHECK: tensor.extract %[[VS]][%{{.*}}, %{{.*}}, %c0{{.*}}]
func.func @int4(%q: tensor<2x8x64xf32>, %k: tensor<?x8x32xi8>, %v: tensor<?x8x32xi8>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %ll: tensor<2xi32>, %s: f32, %ks: tensor<?x1x64xf32>, %vs: tensor<?x8x1xf32>) -> (tensor<2x8x64xf32>, tensor<2x8xf32>) {
  %o, %lse = vortex.attend %q, %k, %v, %ip, %ix, %ll, %s scales(%ks, %vs) {group_size = 8 : i64}
      : (tensor<2x8x64xf32>, tensor<?x8x32xi8>, tensor<?x8x32xi8>, tensor<3xi32>, tensor<?xi32>, tensor<2xi32>, f32, tensor<?x1x64xf32>, tensor<?x8x1xf32>) -> (tensor<2x8x64xf32>, tensor<2x8xf32>)
  return %o, %lse : tensor<2x8x64xf32>, tensor<2x8xf32>
}
