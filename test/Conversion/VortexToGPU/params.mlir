// RUN: vortex-opt %s --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s

// Parameters on the GPU: a learned query (multiply(mean(q), w), batched),
// the compute_param gemm (a parameter y, standalone) and a per-channel
// weight of k on the cache side. A parameter is a buffer argument of the
// kernels that read it, stored in the flow's dtypes ([1, r, c] bf16), and
// is read at row 0: in the per-row part of an indexer kernel (like q, it is
// kept in registers while the row does not change), per item on the cache
// side.

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
!p4 = !vortex.vtensor<?x4x1xbf16, #vortex.format<batched>>
!p1 = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
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
  %p = vortex.gemm %qm, %w : (!qm, !w) -> !p4
  %pm = vortex.max %p {dim = 1 : i64} : !p4 -> !p1
  %t = vortex.multiply %s, %pm : (!s, !p1) -> !s
  vortex.topk %t into %o : !s into !o
}

// The manifest: the parameters are arguments of both steps after the
// fields, role "parameter", shape [1, r, c] in the flow's dtype, and no step
// or kernel writes them.
// CHECK: module attributes {gpu.container_module, vortex.manifest = #vortex.manifest<version = 2, flow = "lq", backend = "cuda"
// CHECK-SAME: scale = #vortex.tensor<role = parameter, dtype = bf16, shape = [1, 1, 128]>
// CHECK-SAME: scratch2 = #vortex.tensor<role = scratch, dtype = f32, shape = ["rows", 4, 1]>
// CHECK-SAME: w = #vortex.tensor<role = parameter, dtype = bf16, shape = [1, 4, 128]>}
// CHECK-SAME: steps = {attend = {{.*}}, cache = #vortex.step<args = ["k", "v", "centroids", "w", "scale", "block_ids"], writes = ["centroids"]
// CHECK-SAME: kernel = "lq_cache_w0", grid = items, items_of = "num_new", per_cta = {{[0-9]+}}, threads = {{[0-9]+}}, params = [#vortex.launch_param<name = "block_ids", kind = buffer>, #vortex.launch_param<name = "num_new", kind = scalar>, #vortex.launch_param<name = "centroids", kind = buffer>, #vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "scale", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "num_blocks", kind = scalar>], reads = ["k", "scale", "block_ids"], writes = ["centroids", "status"]>]>
// CHECK-SAME: indexer = #vortex.step<args = ["q", "k", "v", "centroids", "w", "scale", "dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices"], writes = ["sparse_kv_indptr", "sparse_kv_indices"]
// CHECK-SAME: kernel = "lq_indexer_w0", grid = {{[a-z]+}}, {{.*}}params = [#vortex.launch_param<name = "dense_kv_indptr", kind = buffer>, #vortex.launch_param<name = "dense_kv_indices", kind = buffer>, #vortex.launch_param<name = "rows", kind = scalar>, #vortex.launch_param<name = "centroids", kind = buffer>, #vortex.launch_param<name = "q", kind = buffer>, #vortex.launch_param<name = "scratch0", kind = buffer>, #vortex.launch_param<name = "scratch1", kind = buffer>, #vortex.launch_param<name = "w", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "num_blocks", kind = scalar>], reads = ["q", "w", "centroids", "dense_kv_indptr", "dense_kv_indices"], writes = ["scratch0", "scratch1", "status"]>
// The compute_param gemm is its own (standalone) kernel: mean(q) and w in,
// a batched [rows, 4, 1] out.
// CHECK-SAME: kernel = "lq_indexer_w1", grid = {{[a-z]+}}, {{.*}}params = [#vortex.launch_param<name = "dense_kv_indptr", kind = buffer>, #vortex.launch_param<name = "dense_kv_indices", kind = buffer>, #vortex.launch_param<name = "rows", kind = scalar>, #vortex.launch_param<name = "scratch0", kind = buffer>, #vortex.launch_param<name = "scratch2", kind = buffer>, #vortex.launch_param<name = "w", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>], reads = ["scratch0", "w", "dense_kv_indptr", "dense_kv_indices"], writes = ["scratch2", "status"]>
// CHECK-SAME: kernel = "lq_indexer_w2"
// CHECK-SAME: kernel = "lq_indexer_topk"

// CHECK: gpu.module @lq_kernels
// CHECK: gpu.func @lq_indexer_w0(
// CHECK-SAME: %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: i32, %[[CEN:[^:]+]]: memref<?xbf16>, %[[Q:[^:]+]]: memref<?xbf16>, %{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: memref<?xf32>, %[[W:[^:]+]]: memref<?xbf16>, %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: i32) kernel
// The per-row part, recomputed when the row changes: q at the row, then the
// four rows of w at row 0 (row base 0 * 4 * 128).
// CHECK: arith.cmpi ne
// CHECK: scf.if
// The order of the index constants depends on the host compiler's order of
// evaluating call arguments (GCC and clang differ): DAG.
// CHECK-COUNT-8: vector.load %[[Q]][%{{.+}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-DAG: %[[Z:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[S:.+]] = arith.constant 512 : index
// CHECK: arith.muli %[[Z]], %[[S]] : index
// CHECK-COUNT-4: vector.load %[[W]][%{{.+}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: scf.yield
// The learned query times the gathered centroids, per item.
// CHECK: arith.mulf
// CHECK: gpu.subgroup_reduce add
// CHECK: gpu.return

// CHECK: gpu.func @lq_indexer_w1(
// CHECK-SAME: %[[W1:[^:]+]]: memref<?xbf16>, %{{[^:]+}}: memref<?xi32>) kernel
// CHECK: vector.load %[[W1]]
// CHECK: gpu.return

// The cache kernel loads scale at row 0 for every completed block.
// CHECK: gpu.func @lq_cache_w0(
// CHECK-SAME: %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: i32, %[[CF:[^:]+]]: memref<?xbf16>, %[[K:[^:]+]]: memref<?xbf16>, %[[SC:[^:]+]]: memref<?xbf16>, %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: i32) kernel
// The paged k rows are read once: nontemporal (streaming-loads.mlir).
// CHECK-COUNT-16: vector.load %[[K]][%{{.+}}] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-DAG: %[[Z2:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[S2:.+]] = arith.constant 128 : index
// CHECK: arith.muli %[[Z2]], %[[S2]] : index
// The parameter row is shared by every block: cached as usual.
// CHECK: vector.load %[[SC]][%{{.+}}] {alignment = 16 : i64} :
// CHECK: arith.mulf
// CHECK: vector.store {{.*}}, %[[CF]]
// CHECK-NOT: vector.store {{.*}}, %[[SC]]
// CHECK: gpu.return
