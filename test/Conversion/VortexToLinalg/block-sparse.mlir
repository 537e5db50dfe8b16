// RUN: vortex-opt %s --convert-vortex-to-linalg | FileCheck %s
// RUN: vortex-opt %s --convert-vortex-to-linalg | FileCheck %s --check-prefix=NOOPS

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

// The module gets the flow's manifest (version 2) for the CPU: every float
// tensor is stored as f32, and each step is one host function, the C
// interface of the step, taking every argument as a buffer in call order.
// CHECK: module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "bs", backend = "cpu", source_hash = "{{[0-9a-f]{64}"}}
// CHECK-SAME: config = {block_size = 16 : i64, group_size = 8 : i64, head_dim = 128 : i64, intermediate_dtype = "bf16", kv_dtype = "bf16"
// CHECK-SAME: symbols = {num_blocks = "k", num_new = "block_ids", rows = "dense_kv_indptr", total = "dense_kv_indices"}
// CHECK-SAME: tensors = {block_ids = #vortex.tensor<role = input, dtype = i32, shape = ["num_new"]>
// CHECK-SAME: centroids = #vortex.tensor<role = cache, dtype = f32, shape = ["num_blocks", 1, 128]>
// CHECK-SAME: dense_kv_indices = #vortex.tensor<role = input, dtype = i32, shape = ["total"]>
// CHECK-SAME: dense_kv_indptr = #vortex.tensor<role = input, dtype = i32, shape = ["rows+1"]>
// CHECK-SAME: k = #vortex.tensor<role = cache, dtype = f32, shape = ["num_blocks", 16, 128]>
// CHECK-SAME: kv_indices = #vortex.tensor<role = input, dtype = i32, shape = ["total"]>
// CHECK-SAME: kv_indptr = #vortex.tensor<role = input, dtype = i32, shape = ["rows+1"]>
// CHECK-SAME: kv_last_len = #vortex.tensor<role = input, dtype = i32, shape = ["rows"]>
// CHECK-SAME: lse = #vortex.tensor<role = output, dtype = f32, shape = ["rows", 8]>
// CHECK-SAME: o = #vortex.tensor<role = output, dtype = f32, shape = ["rows", 8, 128]>
// CHECK-SAME: q = #vortex.tensor<role = input, dtype = f32, shape = ["rows", 8, 128]>
// CHECK-SAME: sm_scale = #vortex.tensor<role = input, dtype = f32, shape = [1]>
// CHECK-SAME: sparse_kv_indices = #vortex.tensor<role = output, dtype = i32, shape = ["total"]>
// CHECK-SAME: sparse_kv_indptr = #vortex.tensor<role = output, dtype = i32, shape = ["rows+1"]>
// CHECK-SAME: v = #vortex.tensor<role = cache, dtype = f32, shape = ["num_blocks", 16, 128]>}
// The attend step (decode attention over a CSR) whatever the flow's ops.
// CHECK-SAME: steps = {attend = #vortex.step<args = ["q", "k", "v", "kv_indptr", "kv_indices", "kv_last_len", "o", "lse", "sm_scale"], writes = ["o", "lse"]
// CHECK-SAME: launches = [#vortex.launch<kernel = "_mlir_ciface_bs_attend", grid = host, threads = 1
// CHECK-SAME: params = [#vortex.launch_param<name = "q", kind = buffer>, #vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "v", kind = buffer>, #vortex.launch_param<name = "kv_indptr", kind = buffer>, #vortex.launch_param<name = "kv_indices", kind = buffer>, #vortex.launch_param<name = "kv_last_len", kind = buffer>, #vortex.launch_param<name = "o", kind = buffer>, #vortex.launch_param<name = "lse", kind = buffer>, #vortex.launch_param<name = "sm_scale", kind = buffer>]
// CHECK-SAME: reads = ["q", "k", "v", "kv_indptr", "kv_indices", "kv_last_len", "sm_scale"], writes = ["o", "lse"]>]>
// CHECK-SAME: cache = #vortex.step<args = ["k", "v", "centroids", "block_ids"], writes = ["centroids"]
// CHECK-SAME: launches = [#vortex.launch<kernel = "_mlir_ciface_bs_cache", grid = host, threads = 1
// CHECK-SAME: params = [#vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "v", kind = buffer>, #vortex.launch_param<name = "centroids", kind = buffer>, #vortex.launch_param<name = "block_ids", kind = buffer>]
// CHECK-SAME: reads = ["k", "v", "centroids", "block_ids"], writes = ["centroids"]>]>
// CHECK-SAME: indexer = #vortex.step<args = ["q", "k", "v", "centroids", "dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices"], writes = ["sparse_kv_indptr", "sparse_kv_indices"]
// CHECK-SAME: launches = [#vortex.launch<kernel = "_mlir_ciface_bs_indexer", grid = host, threads = 1
// CHECK-SAME: params = [#vortex.launch_param<name = "q", kind = buffer>, #vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "v", kind = buffer>, #vortex.launch_param<name = "centroids", kind = buffer>, #vortex.launch_param<name = "dense_kv_indptr", kind = buffer>, #vortex.launch_param<name = "dense_kv_indices", kind = buffer>, #vortex.launch_param<name = "sparse_kv_indptr", kind = buffer>, #vortex.launch_param<name = "sparse_kv_indices", kind = buffer>]
// CHECK-SAME: reads = ["q", "k", "v", "centroids", "dense_kv_indptr", "dense_kv_indices"], writes = ["sparse_kv_indptr", "sparse_kv_indices"]>]>}>}
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

// The attend step: the ABI's memrefs, one row loop, o and lse written back.
// CHECK-LABEL: func.func @bs_attend(
// CHECK-SAME: memref<?x8x128xf32> {vortex.name = "q"}
// CHECK-SAME: memref<?x16x128xf32> {vortex.name = "k"}
// CHECK-SAME: memref<?x16x128xf32> {vortex.name = "v"}
// CHECK-SAME: memref<?xi32> {vortex.name = "kv_indptr"}
// CHECK-SAME: memref<?xi32> {vortex.name = "kv_indices"}
// CHECK-SAME: memref<?xi32> {vortex.name = "kv_last_len"}
// CHECK-SAME: %[[AO:[^:]+]]: memref<?x8x128xf32> {vortex.name = "o"}
// CHECK-SAME: %[[AL:[^:]+]]: memref<?x8xf32> {vortex.name = "lse"}
// CHECK-SAME: %[[AS:[^:]+]]: memref<1xf32> {vortex.name = "sm_scale"}
// CHECK: %[[AST:.+]] = bufferization.to_tensor %[[AS]]
// CHECK: tensor.extract %[[AST]]
// CHECK: %[[LOOP:.+]]:2 = scf.for
// CHECK: math.exp
// CHECK: bufferization.materialize_in_destination %[[LOOP]]#0 in restrict writable %[[AO]]
// CHECK: bufferization.materialize_in_destination %[[LOOP]]#1 in restrict writable %[[AL]]

// No vortex op is left anywhere (only the manifest and the argument names
// carry the prefix).
// NOOPS-NOT: {{^ *(%[^ ]+ = )?vortex\.}}
