// RUN: vortex-opt %s --split-input-file --convert-vortex-to-linalg | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-fuse --convert-vortex-to-linalg | FileCheck %s --check-prefix=FUSED

// One flow per op family the other files do not reach: the row-segment
// scans, the layout ops, gemv, interleaved reductions and the trtllm
// selection; and fused flows, whose vortex.kernel groups are inlined.

!kv = !vortex.vtensor<?x16x8xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x8xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x8xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @scans
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 8,
        group_size = 2, topk_val = 2, topk_ratio = 0.0,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(c = [1, 8])
cache(%k: !kv, %v: !kv, %c: !c) {
  %m = vortex.max_interleave %k {dim = 1 : i64, factor = 16 : i64} : !kv -> !cr
  vortex.write %m into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %g = vortex.gemv %qm, %c : (!qm, !c) -> !s
  %n = vortex.normalize %g : !s -> !s
  %f = vortex.conv1d %n {weight = dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>} : !s -> !s
  vortex.topk %f into %o : !s into !o
}

// CHECK-LABEL: func.func @scans_indexer
// gemv: a generic with one reduction iterator, accumulating from 0.
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// normalize: per position, the L2 norm of its row's scored range.
// CHECK: scf.for
// CHECK-DAG: math.sqrt
// CHECK-DAG: arith.constant 9.99999996E-13 : f32
// CHECK: arith.divf
// conv1d: the taps as a constant, min(taps, s - lo + 1) of them.
// CHECK: arith.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}2.500000e-01]]]> : tensor<2x1x1xf32>
// CHECK: arith.minsi
// CHECK: scf.for
// The selection writes the sparse CSR once, at the end.
// CHECK: bufferization.materialize_in_destination {{.*}} : (tensor<?xi32>, memref<?xi32>) -> ()
// CHECK-NEXT: bufferization.materialize_in_destination {{.*}} : (tensor<?xi32>, memref<?xi32>) -> ()
// CHECK-NEXT: return
// CHECK-LABEL: func.func @scans_cache
// max_interleave by 16: the 16 rows split off and reduced from -inf.
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: tensor.expand_shape {{.*}} into tensor<?x1x16x8xf32>
// CHECK: arith.maximumf
// CHECK: bufferization.materialize_in_destination {{.*}} : (tensor<?x1x8xf32>, memref<?x1x8xf32>) -> ()
// CHECK-NOT: {{^ *(%.+ = )?vortex\.}}

// FUSED-LABEL: func.func @scans_indexer
// FUSED-NOT: {{^ *(%.+ = )?vortex\.}}
// FUSED: linalg.generic
// FUSED-LABEL: func.func @scans_cache
// FUSED-NOT: vortex.kernel
// FUSED: linalg.generic

// -----

!kv = !vortex.vtensor<?x4x8xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x2x4xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x2x4xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @layout
    config = #vortex.config<block_size = 4, page_size = 4, head_dim = 8,
        group_size = 2, topk_val = 2, topk_ratio = 0.0,
        reserved_bos = 0, reserved_eos = 0, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(c = [2, 4])
cache(%k: !kv, %v: !kv, %c: !c) {
  %m = vortex.max_interleave %k {dim = 2 : i64, factor = 2 : i64}
      : !kv -> !vortex.vtensor<?x4x4xbf16, #vortex.format<ragged>>
  %r = vortex.min_interleave %m {dim = 1 : i64, factor = 2 : i64}
      : !vortex.vtensor<?x4x4xbf16, #vortex.format<ragged>> -> !cr
  vortex.write %r into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !c) {
  %t = vortex.transpose %c : !c -> !vortex.vtensor<?x4x2xbf16, #vortex.format<ragged>>
  %r = vortex.reshape %t : !vortex.vtensor<?x4x2xbf16, #vortex.format<ragged>>
      -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  %kr = vortex.kron %r, %r {dims = array<i64: 1>}
      : (!vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>,
         !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>)
      -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  %ms = vortex.mask_slice %kr {start = 2 : i64, end = 6 : i64, dim = 2 : i64}
      : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
      -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  %x = vortex.multiply %kr, %ms
      : (!vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>,
         !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>)
      -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  %sc = vortex.sum %x {dim = 2 : i64}
      : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !s
  vortex.topk %sc into %o : !s into !o
}

// CHECK-LABEL: func.func @layout_indexer
// The field gathered by block id, then transposed: element (s, i, j) reads
// (s, j, i).
// CHECK: %[[C:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<?xi32>) outs(%{{.+}} : tensor<?x2x4xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x4x2xf32>)
// CHECK-DAG: %[[I:.+]] = linalg.index 1
// CHECK-DAG: %[[J:.+]] = linalg.index 2
// CHECK: tensor.extract %[[C]][%{{.+}}, %[[J]], %[[I]]]
// reshape: row-major over the real extents (divui / remui by D1 = 2).
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x1x8xf32>)
// CHECK: arith.divui
// CHECK: arith.remui
// kron over dim 1 (rows of 1 and 1): the product.
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x1x8xf32>)
// CHECK: arith.mulf
// mask_slice: 1 inside [2, 6) of dim 2, 0 outside.
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x1x8xf32>)
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK-LABEL: func.func @layout_cache
// Interleaved by 2 over D1, then over D0.
// CHECK: tensor.expand_shape {{.*}} into tensor<?x4x4x2xf32>
// CHECK: arith.maximumf
// CHECK: tensor.expand_shape {{.*}} into tensor<?x2x2x4xf32>
// CHECK: arith.minimumf

// -----

!kv = !vortex.vtensor<?x16x8xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x8xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x2x8xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!sl = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
vortex.flow @trtllm
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 8,
        group_size = 2, topk_val = 4, topk_ratio = 0.0,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(c = [1, 8])
cache(%k: !kv, %v: !kv, %c: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %c : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %c: !c) {
  %g = vortex.gemm %q, %c : (!q, !c)
      -> !vortex.vtensor<?x1x2xbf16, #vortex.format<ragged>>
  %smax = vortex.max %g {dim = 2 : i64}
      : !vortex.vtensor<?x1x2xbf16, #vortex.format<ragged>> -> !s
  %bt0, %sl0 = vortex.trtllm_topk %smax {k = 2 : i64} : !s -> !o, !sl
  %bt1, %sl1 = vortex.trtllm_topk %smax {k = 1 : i64} : !s -> !o, !sl
  vortex.union (%bt0, %sl0), (%bt1, %sl1) into %o
      : !o, !sl into !o
}

// CHECK-LABEL: func.func @trtllm_indexer
// Each trtllm_topk: the block table (-1 in unused slots) and the counts,
// reshaped to the vtensor layout [?, 1, 1].
// CHECK: arith.constant -1 : i32
// CHECK: tensor.expand_shape {{.*}} : tensor<?xi32> into tensor<?x1x1xi32>
// CHECK: tensor.expand_shape {{.*}} : tensor<?xi32> into tensor<?x1x1xi32>
// The union reads both tables at [t, 0, 0] and pins the row's last block.
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %c0{{(_[0-9]+)?}}, %c0{{(_[0-9]+)?}}] : tensor<?x1x1xi32>
// CHECK: bufferization.materialize_in_destination {{.*}} : (tensor<?xi32>, memref<?xi32>) -> ()
// CHECK-NEXT: bufferization.materialize_in_destination {{.*}} : (tensor<?xi32>, memref<?xi32>) -> ()
// CHECK-NOT: {{^ *(%.+ = )?vortex\.}}
