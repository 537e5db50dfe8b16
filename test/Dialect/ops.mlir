// RUN: vortex-opt %s | vortex-opt | FileCheck %s
// RUN: vortex-opt %s --mlir-print-op-generic | vortex-opt | FileCheck %s

// Round trip of every vortex op, of the vtensor type (all element types, all
// formats, static and dynamic L, explicit padding) and of every attribute.
// Ops are legal outside flows, so each group lives in its own func.

!q    = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm   = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!c    = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr   = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!w    = !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>
!s8   = !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
!s8b  = !vortex.vtensor<?x1x8xbf16, #vortex.format<batched>>
!r    = !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
!r1   = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s    = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o    = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!sl   = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @contractions
// CHECK-SAME: (%[[Q:.*]]: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, %[[QM:.*]]: !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, %[[C:.*]]: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, %[[W:.*]]: !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>)
func.func @contractions(%q: !q, %qm: !qm, %c: !c, %w: !w) {
  // CHECK: vortex.gemm %[[Q]], %[[C]] : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  %0 = vortex.gemm %q, %c : (!q, !c) -> !s8
  // CHECK: vortex.gemm %[[Q]], %[[QM]] : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x1x8xbf16, #vortex.format<batched>>
  %1 = vortex.gemm %q, %qm : (!q, !qm) -> !s8b
  // The parameter-weight form (standalone): batched x, batched result.
  // CHECK: vortex.gemm %[[Q]], %[[W]] : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<4x2x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
  %2 = vortex.gemm %q, %w : (!q, !w) -> !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
  // CHECK: vortex.gemv %[[QM]], %[[C]] : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  %3 = vortex.gemv %qm, %c : (!qm, !c) -> !s
  // CHECK: vortex.gemv %[[QM]], %[[QM]] : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  %4 = vortex.gemv %qm, %qm : (!qm, !qm) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  return
}

// Parameters ([1, r, c], one row shared by every row) in the ops that read
// values: a parameter counts as a batched row, so a result is batched iff
// every input is batched or a parameter and one is batched, else ragged.
!pw  = !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>
!pv  = !vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>
!pp  = !vortex.vtensor<1x3x6xbf16, #vortex.format<parameter>, padded = [4, 8]>
// CHECK-LABEL: func.func @parameters
func.func @parameters(%qm: !qm, %c: !c, %w: !pw, %wv: !pv, %p: !pp) {
  // CHECK: vortex.multiply %{{.*}}, %{{.*}} : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
  %0 = vortex.multiply %qm, %w : (!qm, !pw) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
  // CHECK: vortex.add %{{.*}}, %{{.*}} : (!vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
  %1 = vortex.add %c, %w : (!c, !pw) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
  // CHECK: vortex.gemm %{{.*}}, %{{.*}} : (!vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>>
  %2 = vortex.gemm %w, %c : (!pw, !c) -> !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>>
  // CHECK: vortex.gemv %{{.*}}, %{{.*}} : (!vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  %3 = vortex.gemv %wv, %qm : (!pv, !qm) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  // CHECK: vortex.kron %{{.*}}, %{{.*}} {dims = array<i64: 1>} : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
  %4 = vortex.kron %qm, %w {dims = array<i64: 1>} : (!qm, !pw) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
  // Parameters alone: every position holds the value (ragged).
  // CHECK: vortex.exp %{{.*}} : <1x4x128xbf16, #vortex.format<parameter>> -> <?x4x128xbf16, #vortex.format<ragged>>
  %5 = vortex.exp %w : !pw -> !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
  // CHECK: vortex.where_gt %{{.*}}, %{{.*}} : (!vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>, !vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
  %6 = vortex.where_gt %w, %wv : (!pw, !pv) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
  // A masked (padded) parameter stays a parameter.
  // CHECK: vortex.mask_lanes %{{.*}} {value = 0xFF800000 : f32} : <1x3x6xbf16, #vortex.format<parameter>, padded = [4, 8]> -> <1x3x6xbf16, #vortex.format<parameter>, padded = [4, 8]>
  %7 = vortex.mask_lanes %p {value = 0xFF800000 : f32} : !pp -> !pp
  return
}

//===----------------------------------------------------------------------===//
// Reductions over dims 0, 1 and 2
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[S:.*]]: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>, %[[R:.*]]: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>, %[[Q:.*]]: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>)
func.func @reductions(%s: !s8, %r: !r, %q: !q) {
  // CHECK: vortex.max %[[S]] {dim = 0 : i64} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<batched>>
  %0 = vortex.max %s {dim = 0 : i64} : !s8 -> !s8b
  // CHECK: vortex.max %[[R]] {dim = 1 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x1x128xbf16, #vortex.format<ragged>>
  %1 = vortex.max %r {dim = 1 : i64} : !r -> !cr
  // CHECK: vortex.max %[[R]] {dim = 2 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x8x1xbf16, #vortex.format<ragged>>
  %2 = vortex.max %r {dim = 2 : i64} : !r -> !r1
  // CHECK: vortex.min %[[S]] {dim = 0 : i64} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<batched>>
  %3 = vortex.min %s {dim = 0 : i64} : !s8 -> !s8b
  // CHECK: vortex.min %[[R]] {dim = 1 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x1x128xbf16, #vortex.format<ragged>>
  %4 = vortex.min %r {dim = 1 : i64} : !r -> !cr
  // CHECK: vortex.min %[[R]] {dim = 2 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x8x1xbf16, #vortex.format<ragged>>
  %5 = vortex.min %r {dim = 2 : i64} : !r -> !r1
  // CHECK: vortex.mean %[[S]] {dim = 0 : i64} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<batched>>
  %6 = vortex.mean %s {dim = 0 : i64} : !s8 -> !s8b
  // CHECK: vortex.mean %[[Q]] {dim = 1 : i64} : <?x8x128xbf16, #vortex.format<batched>> -> <?x1x128xbf16, #vortex.format<batched>>
  %7 = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // CHECK: vortex.mean %[[R]] {dim = 2 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x8x1xbf16, #vortex.format<ragged>>
  %8 = vortex.mean %r {dim = 2 : i64} : !r -> !r1
  // CHECK: vortex.sum %[[S]] {dim = 0 : i64} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<batched>>
  %9 = vortex.sum %s {dim = 0 : i64} : !s8 -> !s8b
  // CHECK: vortex.sum %[[R]] {dim = 1 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x1x128xbf16, #vortex.format<ragged>>
  %10 = vortex.sum %r {dim = 1 : i64} : !r -> !cr
  // CHECK: vortex.sum %[[R]] {dim = 2 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x8x1xbf16, #vortex.format<ragged>>
  %11 = vortex.sum %r {dim = 2 : i64} : !r -> !r1
  // CHECK: vortex.l2norm %[[S]] {dim = 0 : i64} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<batched>>
  %12 = vortex.l2norm %s {dim = 0 : i64} : !s8 -> !s8b
  // CHECK: vortex.l2norm %[[R]] {dim = 1 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x1x128xbf16, #vortex.format<ragged>>
  %13 = vortex.l2norm %r {dim = 1 : i64} : !r -> !cr
  // CHECK: vortex.l2norm %[[R]] {dim = 2 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x8x1xbf16, #vortex.format<ragged>>
  %14 = vortex.l2norm %r {dim = 2 : i64} : !r -> !r1
  return
}

//===----------------------------------------------------------------------===//
// Cache-side interleaved reductions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @interleave
// CHECK-SAME: (%[[K:.*]]: !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>)
func.func @interleave(%k: !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>) {
  // CHECK: vortex.max_interleave %[[K]] {dim = 1 : i64, factor = 16 : i64} : <?x64x128xbf16, #vortex.format<paged>> -> <?x4x128xbf16, #vortex.format<ragged>>
  %0 = vortex.max_interleave %k {dim = 1 : i64, factor = 16 : i64}
      : !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>
      -> !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
  // CHECK: vortex.min_interleave %[[K]] {dim = 2 : i64, factor = 2 : i64} : <?x64x128xbf16, #vortex.format<paged>> -> <?x64x64xbf16, #vortex.format<ragged>>
  %1 = vortex.min_interleave %k {dim = 2 : i64, factor = 2 : i64}
      : !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>
      -> !vortex.vtensor<?x64x64xbf16, #vortex.format<ragged>>
  // CHECK: vortex.mean_interleave %[[K]] {dim = 1 : i64, factor = 64 : i64} : <?x64x128xbf16, #vortex.format<paged>> -> <?x1x128xbf16, #vortex.format<ragged>>
  %2 = vortex.mean_interleave %k {dim = 1 : i64, factor = 64 : i64}
      : !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>> -> !cr
  // CHECK: vortex.l2norm_interleave %[[K]] {dim = 2 : i64, factor = 128 : i64} : <?x64x128xbf16, #vortex.format<paged>> -> <?x64x1xbf16, #vortex.format<ragged>>
  %3 = vortex.l2norm_interleave %k {dim = 2 : i64, factor = 128 : i64}
      : !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>
      -> !vortex.vtensor<?x64x1xbf16, #vortex.format<ragged>>
  return
}

//===----------------------------------------------------------------------===//
// Row-segment ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @segment
// CHECK-SAME: (%[[S:.*]]: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>, %[[T:.*]]: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>)
func.func @segment(%s: !s8, %t: !s) {
  // Default attributes are elided.
  // CHECK: vortex.softmax %[[S]] : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<ragged>>
  %0 = vortex.softmax %s {dim = 0 : i64, scale = 1.0 : f32} : !s8 -> !s8
  // CHECK: vortex.softmax %[[S]] {scale = 9.000000e-02 : f32} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<ragged>>
  %1 = vortex.softmax %s {scale = 9.000000e-02 : f32} : !s8 -> !s8
  // CHECK: vortex.normalize %[[T]] : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %2 = vortex.normalize %t : !s -> !s
  // CHECK: vortex.conv1d %[[T]] {weight = dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}2.500000e-01]]]> : tensor<2x1x1xf32>} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %3 = vortex.conv1d %t {weight = dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>} : !s -> !s
  // CHECK: vortex.conv1d %[[S]] {weight = dense<1.000000e+00> : tensor<3x1x8xf32>} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<ragged>>
  %4 = vortex.conv1d %s {dim = 0 : i64, weight = dense<1.0> : tensor<3x1x8xf32>} : !s8 -> !s8
  return
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @layout
// CHECK-SAME: (%[[S:.*]]: !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>, %[[ST:.*]]: !vortex.vtensor<16x1x8xf32, #vortex.format<batched>>, %[[Q:.*]]: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, %[[M:.*]]: !vortex.vtensor<?x4x128xbf16, #vortex.format<paged>>, %[[A:.*]]: !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, %[[B:.*]]: !vortex.vtensor<?x4x5xbf16, #vortex.format<paged>>, %[[B1:.*]]: !vortex.vtensor<?x1x5xbf16, #vortex.format<paged>>)
func.func @layout(%s: !s8, %st: !vortex.vtensor<16x1x8xf32, #vortex.format<batched>>,
                  %q: !q, %m: !vortex.vtensor<?x4x128xbf16, #vortex.format<paged>>,
                  %a: !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>,
                  %b: !vortex.vtensor<?x4x5xbf16, #vortex.format<paged>>,
                  %b1: !vortex.vtensor<?x1x5xbf16, #vortex.format<paged>>) {
  // CHECK: vortex.transpose %[[S]] : <?x1x8xbf16, #vortex.format<ragged>> -> <?x8x1xbf16, #vortex.format<ragged>>
  %0 = vortex.transpose %s : !s8 -> !r1
  // A static leading extent is kept when the input has the same one.
  // CHECK: vortex.transpose %[[ST]] : <16x1x8xf32, #vortex.format<batched>> -> <16x8x1xf32, #vortex.format<batched>>
  %1 = vortex.transpose %st : !vortex.vtensor<16x1x8xf32, #vortex.format<batched>>
      -> !vortex.vtensor<16x8x1xf32, #vortex.format<batched>>
  // CHECK: vortex.transpose %[[ST]] : <16x1x8xf32, #vortex.format<batched>> -> <?x8x1xf32, #vortex.format<batched>>
  %2 = vortex.transpose %st : !vortex.vtensor<16x1x8xf32, #vortex.format<batched>>
      -> !vortex.vtensor<?x8x1xf32, #vortex.format<batched>>
  // CHECK: vortex.reshape %[[S]] : <?x1x8xbf16, #vortex.format<ragged>> -> <?x2x4xbf16, #vortex.format<ragged>>
  %3 = vortex.reshape %s : !s8 -> !vortex.vtensor<?x2x4xbf16, #vortex.format<ragged>>
  // CHECK: vortex.reshape %[[A]] : <?x2x3xbf16, #vortex.format<ragged>> -> <?x6x1xbf16, #vortex.format<ragged>>
  %4 = vortex.reshape %a : !vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>
      -> !vortex.vtensor<?x6x1xbf16, #vortex.format<ragged>>
  // CHECK: vortex.kron %[[Q]], %[[M]] {dims = array<i64: 1>} : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x4x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x32x128xbf16, #vortex.format<ragged>>
  %5 = vortex.kron %q, %m {dims = array<i64: 1>}
      : (!q, !vortex.vtensor<?x4x128xbf16, #vortex.format<paged>>)
      -> !vortex.vtensor<?x32x128xbf16, #vortex.format<ragged>>
  // The other inner axis broadcasts (2 vs 1).
  // CHECK: vortex.kron %[[A]], %[[B1]] {dims = array<i64: 2>} : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x5xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x2x15xbf16, #vortex.format<ragged>>
  %6 = vortex.kron %a, %b1 {dims = array<i64: 2>}
      : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>,
         !vortex.vtensor<?x1x5xbf16, #vortex.format<paged>>)
      -> !vortex.vtensor<?x2x15xbf16, #vortex.format<ragged>>
  // CHECK: vortex.kron %[[A]], %[[B]] {dims = array<i64: 1, 2>} : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x4x5xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x8x15xbf16, #vortex.format<ragged>>
  %7 = vortex.kron %a, %b {dims = array<i64: 1, 2>}
      : (!vortex.vtensor<?x2x3xbf16, #vortex.format<ragged>>,
         !vortex.vtensor<?x4x5xbf16, #vortex.format<paged>>)
      -> !vortex.vtensor<?x8x15xbf16, #vortex.format<ragged>>
  return
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[Q:.*]]: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, %[[C:.*]]: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, %[[QM:.*]]: !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, %[[S:.*]]: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, %[[SB:.*]]: !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>)
func.func @binary(%q: !q, %c: !c, %qm: !qm, %s: !s,
                  %sb: !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) {
  // CHECK: vortex.maximum %[[Q]], %[[C]] : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  %0 = vortex.maximum %q, %c : (!q, !c) -> !r
  // CHECK: vortex.minimum %[[Q]], %[[QM]] : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
  %1 = vortex.minimum %q, %qm : (!q, !qm) -> !q
  // CHECK: vortex.multiply %[[C]], %[[Q]] : (!vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  %2 = vortex.multiply %c, %q : (!c, !q) -> !r
  // CHECK: vortex.add %[[S]], %[[SB]] : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  %3 = vortex.add %s, %sb : (!s, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !s
  // CHECK: vortex.add %[[S]], %[[SB]] {alpha = 2.000000e+00 : f32, beta = -1.000000e+00 : f32} : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  %4 = vortex.add %s, %sb {alpha = 2.0 : f32, beta = -1.0 : f32}
      : (!s, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !s
  // CHECK: vortex.add %[[S]], %[[S]] {alpha = 5.000000e-01 : f32} : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  %5 = vortex.add %s, %s {alpha = 0.5 : f32} : (!s, !s) -> !s
  // CHECK: vortex.where_eq %[[S]], %[[SB]] : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  %6 = vortex.where_eq %s, %sb : (!s, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !s
  // CHECK: vortex.where_ne %[[S]], %[[S]] : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  %7 = vortex.where_ne %s, %s : (!s, !s) -> !s
  // CHECK: vortex.where_gt %[[Q]], %[[C]] : (!vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  %8 = vortex.where_gt %q, %c : (!q, !c) -> !r
  // CHECK: vortex.where_ge %[[SB]], %[[SB]] : (!vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  %9 = vortex.where_ge %sb, %sb
      : (!vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>,
         !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>)
      -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  // CHECK: vortex.where_lt %[[S]], %[[S]] : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
  %10 = vortex.where_lt %s, %s : (!s, !s) -> !s
  // CHECK: vortex.where_le %[[S]], %[[C]] : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
  %11 = vortex.where_le %s, %c : (!s, !c) -> !cr
  return
}

//===----------------------------------------------------------------------===//
// Unary elementwise ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[S:.*]]: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, %[[Q:.*]]: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>)
func.func @unary(%s: !s, %q: !q) {
  // CHECK: vortex.relu %[[S]] : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %0 = vortex.relu %s : !s -> !s
  // CHECK: vortex.relu %[[Q]] {alpha = 1.000000e+00 : f32, beta = -1.000000e+00 : f32} : <?x8x128xbf16, #vortex.format<batched>> -> <?x8x128xbf16, #vortex.format<batched>>
  %1 = vortex.relu %q {alpha = 1.0 : f32, beta = -1.0 : f32} : !q -> !q
  // CHECK: vortex.sigmoid %[[S]] {beta = -1.000000e+00 : f32} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %2 = vortex.sigmoid %s {beta = -1.0 : f32} : !s -> !s
  // CHECK: vortex.silu %[[S]] {alpha = 2.000000e+00 : f32, beta = -1.000000e+00 : f32} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %3 = vortex.silu %s {alpha = 2.0 : f32, beta = -1.0 : f32} : !s -> !s
  // CHECK: vortex.abs %[[S]] : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %4 = vortex.abs %s {alpha = 0.0 : f32, beta = 1.0 : f32} : !s -> !s
  // CHECK: vortex.add_mul %[[S]] {alpha = 3.000000e+00 : f32, beta = 5.000000e-01 : f32} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %5 = vortex.add_mul %s {alpha = 3.0 : f32, beta = 0.5 : f32} : !s -> !s
  // CHECK: vortex.log %[[S]] {alpha = 1.000000e+00 : f32} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %6 = vortex.log %s {alpha = 1.0 : f32} : !s -> !s
  // CHECK: vortex.exp %[[S]] {beta = 2.000000e+00 : f32} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %7 = vortex.exp %s {beta = 2.0 : f32} : !s -> !s
  return
}

//===----------------------------------------------------------------------===//
// Positional constants
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @mask_slice
// CHECK-SAME: (%[[R:.*]]: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>)
func.func @mask_slice(%r: !r) {
  // CHECK: vortex.mask_slice %[[R]] {alpha = 0.000000e+00 : f32, beta = 1.000000e+00 : f32, dim = 2 : i64, end = 8 : i64, start = 0 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x8x128xbf16, #vortex.format<ragged>>
  %0 = vortex.mask_slice %r {start = 0 : i64, end = 8 : i64, dim = 2 : i64,
                             alpha = 0.0 : f32, beta = 1.0 : f32} : !r -> !r
  // CHECK: vortex.mask_slice %[[R]] {dim = 1 : i64, end = 8 : i64, start = 8 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x8x128xbf16, #vortex.format<ragged>>
  %1 = vortex.mask_slice %r {start = 8 : i64, end = 8 : i64, dim = 1 : i64} : !r -> !r
  return
}

//===----------------------------------------------------------------------===//
// Cache fields
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @fields
// CHECK-SAME: (%[[F:.*]]: !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>, %[[FS:.*]]: !vortex.vtensor<?x1x128xbf16, #vortex.format<slotted>>, %[[C:.*]]: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, %[[CR:.*]]: !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>, %[[S:.*]]: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>)
func.func @fields(%f: !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>,
                  %fs: !vortex.vtensor<?x1x128xbf16, #vortex.format<slotted>>,
                  %c: !c, %cr: !cr, %s: !s) {
  // CHECK: vortex.fill %[[F]] : <?x1x1xbf16, #vortex.format<paged>>
  vortex.fill %f {value = 0.0 : f32} : !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
  // CHECK: vortex.fill %[[FS]] {value = -1.000000e+00 : f32} : <?x1x128xbf16, #vortex.format<slotted>>
  vortex.fill %fs {value = -1.0 : f32} : !vortex.vtensor<?x1x128xbf16, #vortex.format<slotted>>
  // CHECK: vortex.write %[[CR]] into %[[C]] : <?x1x128xbf16, #vortex.format<ragged>> into <?x1x128xbf16, #vortex.format<paged>>
  vortex.write %cr into %c : !cr into !c
  // CHECK: vortex.write %[[CR]] into %[[FS]] : <?x1x128xbf16, #vortex.format<ragged>> into <?x1x128xbf16, #vortex.format<slotted>>
  vortex.write %cr into %fs : !cr into !vortex.vtensor<?x1x128xbf16, #vortex.format<slotted>>
  // CHECK: %[[L:.*]] = vortex.load %[[F]] : <?x1x1xbf16, #vortex.format<paged>> -> <?x1x1xbf16, #vortex.format<ragged>>
  %0 = vortex.load %f : !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>> -> !s
  // CHECK: vortex.save %[[L]] into %[[F]] : <?x1x1xbf16, #vortex.format<ragged>> into <?x1x1xbf16, #vortex.format<paged>>
  vortex.save %0 into %f : !s into !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
  return
}

//===----------------------------------------------------------------------===//
// Selections
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @selection
// CHECK-SAME: (%[[S:.*]]: !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, %[[O:.*]]: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>)
func.func @selection(%s: !s, %o: !o) {
  // CHECK: vortex.topk %[[S]] into %[[O]] : <?x1x1xbf16, #vortex.format<ragged>> into <?x1x1xi32, #vortex.format<ragged>>
  vortex.topk %s into %o : !s into !o
  // CHECK: vortex.approx_topk %[[S]] into %[[O]] : <?x1x1xbf16, #vortex.format<ragged>> into <?x1x1xi32, #vortex.format<ragged>>
  vortex.approx_topk %s into %o : !s into !o
  // CHECK: vortex.approx_topk %[[S]] into %[[O]] {tolerate_ratio = 1.000000e-01 : f32} : <?x1x1xbf16, #vortex.format<ragged>> into <?x1x1xi32, #vortex.format<ragged>>
  vortex.approx_topk %s into %o {tolerate_ratio = 0.1 : f32} : !s into !o
  // CHECK: %[[BT0:.*]], %[[SL0:.*]] = vortex.trtllm_topk %[[S]] {k = 64 : i64} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xi32, #vortex.format<ragged>>, <?x1x1xi32, #vortex.format<batched>>
  %bt0, %sl0 = vortex.trtllm_topk %s {k = 64 : i64} : !s -> !o, !sl
  // CHECK: %[[BT1:.*]], %[[SL1:.*]] = vortex.trtllm_topk %[[S]] {k = 8 : i64} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xi32, #vortex.format<ragged>>, <?x1x1xi32, #vortex.format<batched>>
  %bt1, %sl1 = vortex.trtllm_topk %s {k = 8 : i64} : !s -> !o, !sl
  // CHECK: vortex.union(%[[BT0]], %[[SL0]]), (%[[BT1]], %[[SL1]]) into %[[O]] : <?x1x1xi32, #vortex.format<ragged>>, <?x1x1xi32, #vortex.format<batched>> into <?x1x1xi32, #vortex.format<ragged>>
  vortex.union (%bt0, %sl0), (%bt1, %sl1) into %o : !o, !sl into !o
  return
}

//===----------------------------------------------------------------------===//
// The vtensor type
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @element_types
// CHECK-SAME: !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
// CHECK-SAME: !vortex.vtensor<?x1x128xf16, #vortex.format<ragged>>
// CHECK-SAME: !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>
// CHECK-SAME: !vortex.vtensor<?x1x128xf8E4M3FN, #vortex.format<ragged>>
// CHECK-SAME: !vortex.vtensor<?x1x128xf8E5M2, #vortex.format<ragged>>
// CHECK-SAME: !vortex.vtensor<?x1x128xi32, #vortex.format<ragged>>
func.func @element_types(%a: !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>,
                         %b: !vortex.vtensor<?x1x128xf16, #vortex.format<ragged>>,
                         %c: !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>,
                         %d: !vortex.vtensor<?x1x128xf8E4M3FN, #vortex.format<ragged>>,
                         %e: !vortex.vtensor<?x1x128xf8E5M2, #vortex.format<ragged>>,
                         %f: !vortex.vtensor<?x1x128xi32, #vortex.format<ragged>>) {
  return
}

// Every float element type is accepted by the float ops.
// CHECK-LABEL: func.func @float_ops
// CHECK: vortex.add %{{.*}}, %{{.*}} : (!vortex.vtensor<?x1x128xf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>) -> !vortex.vtensor<?x1x128xf8E4M3FN, #vortex.format<ragged>>
// CHECK: vortex.exp %{{.*}} : <?x1x128xf8E5M2, #vortex.format<ragged>> -> <?x1x128xf32, #vortex.format<ragged>>
func.func @float_ops(%b: !vortex.vtensor<?x1x128xf16, #vortex.format<ragged>>,
                     %c: !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>,
                     %e: !vortex.vtensor<?x1x128xf8E5M2, #vortex.format<ragged>>) {
  %0 = vortex.add %b, %c : (!vortex.vtensor<?x1x128xf16, #vortex.format<ragged>>,
                            !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>)
      -> !vortex.vtensor<?x1x128xf8E4M3FN, #vortex.format<ragged>>
  %1 = vortex.exp %e : !vortex.vtensor<?x1x128xf8E5M2, #vortex.format<ragged>>
      -> !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>
  return
}

// CHECK-LABEL: func.func @formats
// CHECK-SAME: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
// CHECK-SAME: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-SAME: !vortex.vtensor<?x8x128xbf16, #vortex.format<paged>>
// CHECK-SAME: !vortex.vtensor<?x8x128xbf16, #vortex.format<parameter>>
// CHECK-SAME: !vortex.vtensor<?x8x128xbf16, #vortex.format<slotted>>
func.func @formats(%a: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>,
                   %b: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>,
                   %c: !vortex.vtensor<?x8x128xbf16, #vortex.format<paged>>,
                   %d: !vortex.vtensor<?x8x128xbf16, #vortex.format<parameter>>,
                   %e: !vortex.vtensor<?x8x128xbf16, #vortex.format<slotted>>) {
  return
}

// Static and dynamic L, and the explicit padded form (printed only when the
// padding was made explicit, even when the shape needs none).
// CHECK-LABEL: func.func @shapes
// CHECK-SAME: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
// CHECK-SAME: !vortex.vtensor<32x5x128xbf16, #vortex.format<batched>>
// CHECK-SAME: !vortex.vtensor<0x1x1xf32, #vortex.format<ragged>>
// CHECK-SAME: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>
// CHECK-SAME: !vortex.vtensor<7x3x100xf16, #vortex.format<paged>, padded = [4, 128]>
// CHECK-SAME: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>, padded = [8, 128]>
// CHECK-SAME: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>, padded = [1, 1]>
func.func @shapes(%a: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>,
                  %b: !vortex.vtensor<32x5x128xbf16, #vortex.format<batched>>,
                  %c: !vortex.vtensor<0x1x1xf32, #vortex.format<ragged>>,
                  %d: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>,
                  %e: !vortex.vtensor<7x3x100xf16, #vortex.format<paged>, padded = [4, 128]>,
                  %f: !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>, padded = [8, 128]>,
                  %g: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>, padded = [1, 1]>) {
  return
}

// Ops accept explicitly padded types.
// CHECK-LABEL: func.func @padded_ops
// CHECK: vortex.mean %{{.*}} {dim = 1 : i64} : <?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]> -> <?x1x128xbf16, #vortex.format<batched>, padded = [1, 128]>
func.func @padded_ops(%q: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>) {
  %0 = vortex.mean %q {dim = 1 : i64}
      : !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>
      -> !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>, padded = [1, 128]>
  return
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @attributes
// CHECK-SAME: attributes {vortex.test = [#vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>,
// CHECK-SAME: #vortex.config<block_size = 1, page_size = 64, head_dim = 64, group_size = 5, topk_val = 0, topk_ratio = 1.000000e+00 : f32, reserved_bos = 0, reserved_eos = 0, intermediate_dtype = f32, kv_dtype = f8E4M3FN>,
// CHECK-SAME: #vortex.field<"centroids", 1, 128>, #vortex.field<"running score", 1, 1>,
// CHECK-SAME: #vortex.format<batched>, #vortex.format<ragged>, #vortex.format<paged>, #vortex.format<parameter>, #vortex.format<slotted>,
// CHECK-SAME: #vortex.reduce_kind<mean>, #vortex.reduce_kind<max>, #vortex.reduce_kind<min>, #vortex.reduce_kind<l2norm>, #vortex.reduce_kind<sum>,
// CHECK-SAME: #vortex.binary_kind<maximum>, #vortex.binary_kind<minimum>, #vortex.binary_kind<add>, #vortex.binary_kind<mul>, #vortex.binary_kind<where_eq>, #vortex.binary_kind<where_ne>, #vortex.binary_kind<where_gt>, #vortex.binary_kind<where_ge>, #vortex.binary_kind<where_lt>, #vortex.binary_kind<where_le>,
// CHECK-SAME: #vortex.unary_kind<relu>, #vortex.unary_kind<sigmoid>, #vortex.unary_kind<silu>, #vortex.unary_kind<abs>, #vortex.unary_kind<add_mul>, #vortex.unary_kind<log>, #vortex.unary_kind<exp>,
// CHECK-SAME: #vortex.predicate<eq>, #vortex.predicate<ne>, #vortex.predicate<gt>, #vortex.predicate<ge>, #vortex.predicate<lt>, #vortex.predicate<le>,
// CHECK-SAME: #vortex.schedule<w>, #vortex.schedule<s>]
// CHECK-SAME: vortex.type = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
func.func @attributes() attributes {
  vortex.test = [
    #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
                   group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
                   reserved_bos = 1, reserved_eos = 2,
                   intermediate_dtype = bf16, kv_dtype = bf16>,
    #vortex.config<block_size = 1, page_size = 64, head_dim = 64,
                   group_size = 5, topk_val = 0, topk_ratio = 1.0 : f32,
                   reserved_bos = 0, reserved_eos = 0,
                   intermediate_dtype = f32, kv_dtype = f8E4M3FN>,
    #vortex.field<"centroids", 1, 128>, #vortex.field<"running score", 1, 1>,
    #vortex.format<batched>, #vortex.format<ragged>, #vortex.format<paged>,
    #vortex.format<parameter>, #vortex.format<slotted>,
    #vortex.reduce_kind<mean>, #vortex.reduce_kind<max>, #vortex.reduce_kind<min>,
    #vortex.reduce_kind<l2norm>, #vortex.reduce_kind<sum>,
    #vortex.binary_kind<maximum>, #vortex.binary_kind<minimum>,
    #vortex.binary_kind<add>, #vortex.binary_kind<mul>,
    #vortex.binary_kind<where_eq>, #vortex.binary_kind<where_ne>,
    #vortex.binary_kind<where_gt>, #vortex.binary_kind<where_ge>,
    #vortex.binary_kind<where_lt>, #vortex.binary_kind<where_le>,
    #vortex.unary_kind<relu>, #vortex.unary_kind<sigmoid>, #vortex.unary_kind<silu>,
    #vortex.unary_kind<abs>, #vortex.unary_kind<add_mul>, #vortex.unary_kind<log>,
    #vortex.unary_kind<exp>,
    #vortex.predicate<eq>, #vortex.predicate<ne>, #vortex.predicate<gt>,
    #vortex.predicate<ge>, #vortex.predicate<lt>, #vortex.predicate<le>,
    #vortex.schedule<w>, #vortex.schedule<s>],
  vortex.type = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
} {
  return
}
