// RUN: vortex-opt %s --convert-vortex-to-linalg | FileCheck %s

// The centroid flow: mean over heads, a contraction against the gathered
// centroids, and the per-row top-k, plus the cache-side mean and write-back.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @bs
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

// CHECK-NOT: vortex.
// CHECK-LABEL: func.func @bs_indexer(
// CHECK-SAME: %[[Q:[^:]+]]: memref<?x8x128xf32> {vortex.name = "q"}
// CHECK-SAME: %[[K:[^:]+]]: memref<?x16x128xf32> {vortex.name = "k"}
// CHECK-SAME: %[[V:[^:]+]]: memref<?x16x128xf32> {vortex.name = "v"}
// CHECK-SAME: %[[C:[^:]+]]: memref<?x1x128xf32> {vortex.name = "centroids"}
// CHECK-SAME: %[[DP:[^:]+]]: memref<?xi32> {vortex.name = "dense_kv_indptr"}
// CHECK-SAME: %[[DI:[^:]+]]: memref<?xi32> {vortex.name = "dense_kv_indices"}
// CHECK-SAME: %[[SP:[^:]+]]: memref<?xi32> {vortex.name = "sparse_kv_indptr"}
// CHECK-SAME: %[[SI:[^:]+]]: memref<?xi32> {vortex.name = "sparse_kv_indices"})
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-DAG: %[[DPT:[^:]+]] = bufferization.to_tensor %[[DP]] restrict
// CHECK-DAG: %[[DIT:[^:]+]] = bufferization.to_tensor %[[DI]] restrict
// CHECK-DAG: %[[SPT:[^:]+]] = bufferization.to_tensor %[[SP]] restrict writable
// CHECK-DAG: %[[SIT:[^:]+]] = bufferization.to_tensor %[[SI]] restrict writable
// The row of each ragged position, from the CSR.
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.insert
// Mean over the 8 heads: a sum over the split axis, then / 8.
// CHECK: tensor.expand_shape {{.*}} into tensor<?x1x8x128xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.addf
// CHECK: arith.constant 8.000000e+00 : f32
// CHECK: arith.divf
// The batched mean and the paged centroids are gathered into CSR order.
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<?xindex>) outs(%{{.+}} : tensor<?x1x128xf32>)
// CHECK: tensor.extract
// CHECK: linalg.generic {{.*}} ins(%[[DIT]] : tensor<?xi32>) outs(%{{.+}} : tensor<?x1x128xf32>)
// CHECK: arith.index_cast
// CHECK: tensor.extract
// y x^T over K = 128.
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} outs(%{{.+}} : tensor<?x1x1xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// Top-k per row: budget = max(29 + 1 + 2, int(n * 0.0625)).
// CHECK: arith.constant 6.250000e-02 : f64
// CHECK: arith.maxsi
// CHECK: scf.if
// CHECK: scf.for
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf ogt
// CHECK-DAG: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[SP]]
// CHECK-DAG: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[SI]]
// CHECK: return

// CHECK-LABEL: func.func @bs_cache(
// CHECK-SAME: memref<?x16x128xf32> {vortex.name = "k"}
// CHECK-SAME: %[[CF:[^:]+]]: memref<?x1x128xf32> {vortex.name = "centroids"}
// CHECK-SAME: %[[IDS:[^:]+]]: memref<?xi32> {vortex.name = "block_ids"}
// CHECK: tensor.expand_shape {{.*}} into tensor<?x1x16x128xf32>
// CHECK: arith.constant 1.600000e+01 : f32
// Scatter into the completed blocks' rows of the field, in place.
// CHECK: scf.for
// CHECK: tensor.extract_slice
// CHECK: tensor.insert_slice
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[CF]]
