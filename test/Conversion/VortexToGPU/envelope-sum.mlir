// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=envelope-mma=false | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=envelope-identity=false | FileCheck %s --check-prefix=OFF
// The vortex-to-nvvm option reaches the pass: libdevice's fmaf (inlined at
// serialization) with it, the maxima without.
// RUN: vortex-opt %s --split-input-file --vortex-nvvm-stage-lower="to-gpu=envelope-mma=false" | FileCheck %s --check-prefix=NVVM
// RUN: vortex-opt %s --split-input-file --vortex-nvvm-stage-lower="to-gpu=envelope-identity=false" | FileCheck %s --check-prefix=NVVM-OFF
//
// Envelope sums (docs/gpu.md, "Envelope sums"): sum over the columns of
// max(x * a, x * b) becomes (x (a + b) + |x| |a - b|) / 2, two fused
// multiply-adds an element, when the two products share an operand. Other
// sums, other reductions and unshared products stay as written, and
// envelope-identity=false keeps every sum as written. These bf16 sums go on
// tensor cores by default (envelope-mma.mlir); envelope-mma=false keeps
// them in fused multiply-adds, as on sm_75.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @shared_swapped
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 4, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !env, %min: !env) {
  %kmax = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmax into %max : !er into !env
  %kmin = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmin into %min : !er into !env
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !env, %min: !env) {
  // The shared operand is the second factor of the second product.
  %a = vortex.multiply %q, %max : (!q, !env) -> !sq
  %b = vortex.multiply %min, %q : (!env, !q) -> !sq
  %e = vortex.maximum %a, %b : (!sq, !sq) -> !sq
  %sum = vortex.sum %e {dim = 2 : i64} : !sq -> !sh
  %aggr = vortex.max %sum {dim = 1 : i64} : !sh -> !s
  vortex.topk %aggr into %o : !s into !o
}

// Per column the sum and gap of the envelopes, then per head two fmas into
// the lane's partial sum (|x| for the second); the lanes' sums halved.
// CHECK-LABEL: gpu.func @shared_swapped_indexer_w0(
// CHECK-NOT: arith.maximumf
// CHECK: %[[SUM:.+]] = arith.addf
// CHECK-NEXT: %[[DIFF:.+]] = arith.subf
// CHECK-NEXT: %[[GAP:.+]] = math.absf %[[DIFF]]
// CHECK: %[[X:.+]] = arith.extf
// CHECK-NEXT: %[[ACC:.+]] = math.fma %[[X]], %[[SUM]], %{{.+}} : f32
// CHECK-NEXT: %[[AX:.+]] = math.absf %[[X]]
// CHECK-NEXT: math.fma %[[AX]], %[[GAP]], %[[ACC]] : f32
// CHECK-NOT: arith.maximumf
// CHECK: gpu.subgroup_reduce add
// CHECK-NEXT: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: arith.mulf %{{.+}}, %[[HALF]] : f32
// The next head reuses the first column's sum and gap.
// CHECK-NEXT: arith.constant 0.000000e+00
// CHECK-NEXT: vector.extract
// CHECK-NEXT: %[[X1:.+]] = arith.extf
// CHECK-NEXT: math.fma %[[X1]], %[[SUM]]
// The max over the heads is a reduction over rows, untouched.
// CHECK: arith.maximumf
// CHECK: gpu.return

// NVVM-LABEL: llvm.func @shared_swapped_indexer_w0(
// NVVM: llvm.call @__nv_fmaf
// NVVM-LABEL: llvm.func @shared_swapped_indexer_topk(
// NVVM-OFF-LABEL: llvm.func @shared_swapped_indexer_w0(
// NVVM-OFF-NOT: __nv_fmaf
// NVVM-OFF: llvm.intr.maximum
// NVVM-OFF-NOT: __nv_fmaf
// NVVM-OFF-LABEL: llvm.func @shared_swapped_indexer_topk(

// OFF-LABEL: gpu.func @shared_swapped_indexer_w0(
// OFF-NOT: math.fma
// OFF: arith.mulf %{{.+}}, %{{.+}} : f32
// OFF: %[[M:.+]] = arith.maximumf %{{.+}}, %{{.+}} : f32
// OFF-NEXT: arith.addf %{{.+}}, %[[M]] : f32
// OFF-NOT: math.fma
// OFF: gpu.return

// -----

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @not_envelopes
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 4, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !env, %min: !env) {
  %kmax = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmax into %max : !er into !env
  %kmin = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmin into %min : !er into !env
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !env, %min: !env) {
  // No operand shared by the two products.
  %mm = vortex.multiply %max, %max : (!env, !env) -> !er
  %qm = vortex.multiply %q, %min : (!q, !env) -> !sq
  %e1 = vortex.maximum %qm, %mm : (!sq, !er) -> !sq
  %s1 = vortex.sum %e1 {dim = 2 : i64} : !sq -> !sh
  // A mean of envelope products, not a sum.
  %qx = vortex.multiply %q, %max : (!q, !env) -> !sq
  %e2 = vortex.maximum %qx, %qm : (!sq, !sq) -> !sq
  %s2 = vortex.mean %e2 {dim = 2 : i64} : !sq -> !sh
  %s = vortex.add %s1, %s2 : (!sh, !sh) -> !sh
  %aggr = vortex.max %s {dim = 1 : i64} : !sh -> !s
  vortex.topk %aggr into %o : !s into !o
}

// CHECK-LABEL: gpu.func @not_envelopes_indexer_w0(
// CHECK-NOT: math.fma
// CHECK: arith.maximumf
// CHECK-NOT: math.fma
// CHECK: gpu.return
