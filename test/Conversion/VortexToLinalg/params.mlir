// RUN: vortex-opt %s --convert-vortex-to-linalg | FileCheck %s

// A learned query: the parameter w scales the mean query of every row
// (multiply(mean(q), w), batched), the result is scored against the
// centroids, and the parameter scale weighs k per channel on the cache
// side. A parameter is a read-only memref<1 x r x c> argument of both
// steps, after the fields; every row and position reads its row 0.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!kr = !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!qw = !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
!w = !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>
!sc = !vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>
!s4 = !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @lq
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128]) params(w = [4, 128], scale = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c, %w: !w, %scale: !sc) {
  %ks = vortex.multiply %k, %scale : (!kv, !sc) -> !kr
  %m = vortex.mean %ks {dim = 1 : i64} : !kr -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %w: !w, %scale: !sc) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %qw = vortex.multiply %qm, %w : (!qm, !w) -> !qw
  %s4 = vortex.gemm %qw, %centroids : (!qw, !c) -> !s4
  %s = vortex.max %s4 {dim = 2 : i64} : !s4 -> !s
  vortex.topk %s into %o : !s into !o
}

// The manifest: role "parameter", shape [1, r, c] (the constant 1), f32 on
// the CPU; arguments of both steps after the fields; never written.
// CHECK: module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "lq", backend = "cpu"
// CHECK-SAME: scale = #vortex.tensor<role = parameter, dtype = f32, shape = [1, 1, 128]>
// CHECK-SAME: w = #vortex.tensor<role = parameter, dtype = f32, shape = [1, 4, 128]>
// Attention takes no parameter: its arguments depend on the config only.
// CHECK-SAME: steps = {attend = #vortex.step<args = ["q", "k", "v", "kv_indptr", "kv_indices", "kv_last_len", "o", "lse", "sm_scale"]
// CHECK-SAME: cache = #vortex.step<args = ["k", "v", "centroids", "w", "scale", "block_ids"], writes = ["centroids"]
// CHECK-SAME: params = [#vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "v", kind = buffer>, #vortex.launch_param<name = "centroids", kind = buffer>, #vortex.launch_param<name = "w", kind = buffer>, #vortex.launch_param<name = "scale", kind = buffer>, #vortex.launch_param<name = "block_ids", kind = buffer>]
// CHECK-SAME: reads = ["k", "v", "centroids", "w", "scale", "block_ids"], writes = ["centroids"]>]>
// CHECK-SAME: indexer = #vortex.step<args = ["q", "k", "v", "centroids", "w", "scale", "dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices"], writes = ["sparse_kv_indptr", "sparse_kv_indices"]
// CHECK-SAME: reads = ["q", "k", "v", "centroids", "w", "scale", "dense_kv_indptr", "dense_kv_indices"], writes = ["sparse_kv_indptr", "sparse_kv_indices"]>]>}>

// CHECK-LABEL: func.func @lq_indexer(
// CHECK-SAME: %{{[^:]+}}: memref<?x8x128xf32> {vortex.name = "q"}
// CHECK-SAME: %{{[^:]+}}: memref<?x1x128xf32> {vortex.name = "centroids"}
// CHECK-SAME: %[[W:[^:]+]]: memref<1x4x128xf32> {vortex.name = "w"}
// CHECK-SAME: %[[SC:[^:]+]]: memref<1x1x128xf32> {vortex.name = "scale"}
// CHECK-SAME: %[[DP:[^:]+]]: memref<?xi32> {vortex.name = "dense_kv_indptr"}
// CHECK-SAME: %[[DI:[^:]+]]: memref<?xi32> {vortex.name = "dense_kv_indices"}
// CHECK-SAME: %[[SP:[^:]+]]: memref<?xi32> {vortex.name = "sparse_kv_indptr"}
// CHECK-SAME: %[[SI:[^:]+]]: memref<?xi32> {vortex.name = "sparse_kv_indices"})
// CHECK: bufferization.to_tensor %[[DP]] restrict : memref<?xi32>
// The number of rows: dense_kv_indptr's extent - 1.
// CHECK: %[[ROWS:.+]] = arith.subi %{{.+}}, %c1 : index
// Read-only: no `writable`.
// CHECK: %[[WT:.+]] = bufferization.to_tensor %[[W]] restrict : memref<1x4x128xf32> to tensor<1x4x128xf32>
// CHECK-NEXT: bufferization.to_tensor %[[SC]] restrict : memref<1x1x128xf32> to tensor<1x1x128xf32>
// The mean over the heads (batched, one row per CSR row) ...
// CHECK: tensor.expand_shape {{.*}} into tensor<?x1x8x128xf32>
// ... times w broadcast to every row: w is read at row 0.
// CHECK: %[[E:.+]] = tensor.empty(%[[ROWS]]) : tensor<?x4x128xf32>
// CHECK-NEXT: %[[WB:.+]] = linalg.generic {{.*}} outs(%[[E]] : tensor<?x4x128xf32>)
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: tensor.extract %[[WT]][%[[C0]], %{{.+}}, %{{.+}}] : tensor<1x4x128xf32>
// CHECK: %[[QW:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[WB]] : tensor<?x1x128xf32>, tensor<?x4x128xf32>) outs(%{{.+}} : tensor<?x4x128xf32>)
// CHECK: arith.mulf
// The batched learned query is gathered into CSR order for the contraction.
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<?xindex>) outs(%{{.+}} : tensor<?x4x128xf32>)
// CHECK: tensor.extract %[[QW]]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} outs(%{{.+}} : tensor<?x1x4xf32>)
// Parameters are never written back.
// CHECK-NOT: materialize_in_destination {{.*}} %[[W]]
// CHECK-NOT: materialize_in_destination {{.*}} %[[SC]]
// CHECK: return

// CHECK-LABEL: func.func @lq_cache(
// CHECK-SAME: %[[K:[^:]+]]: memref<?x16x128xf32> {vortex.name = "k"}
// CHECK-SAME: %[[CF:[^:]+]]: memref<?x1x128xf32> {vortex.name = "centroids"}
// CHECK-SAME: %{{[^:]+}}: memref<1x4x128xf32> {vortex.name = "w"}
// CHECK-SAME: %[[CSC:[^:]+]]: memref<1x1x128xf32> {vortex.name = "scale"}
// CHECK-SAME: %[[IDS:[^:]+]]: memref<?xi32> {vortex.name = "block_ids"})
// CHECK-DAG: %[[CFT:.+]] = bufferization.to_tensor %[[CF]] restrict writable
// CHECK-DAG: %[[CSCT:.+]] = bufferization.to_tensor %[[CSC]] restrict : memref<1x1x128xf32>
// scale broadcast to the completed blocks (row 0), then k * scale.
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<?x1x128xf32>)
// CHECK: tensor.extract %[[CSCT]][%c0{{(_[0-9]+)?}}, %{{.+}}, %{{.+}}] : tensor<1x1x128xf32>
// CHECK: arith.mulf
// CHECK: arith.constant 1.600000e+01 : f32
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[CF]]
// CHECK-NOT: materialize_in_destination
// CHECK: return
