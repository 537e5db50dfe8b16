// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="threads=128 ctas-per-sm=2" | FileCheck %s --check-prefix=OPT

// One small hand-written flow per kernel kind of convert-vortex-to-gpu
// (docs/gpu.md, "Kernel structure"): the persistent score kernel, a scan
// (softmax) and a cross-block reduction (dim 0) as per-row kernels, an
// elementwise consumer of both, the top-k, the cache kernel; then a flow
// whose transpose forces the narrow mode. The whole shipped flows are
// tested in quest.mlir and params.mlir, the guards in guards.mlir.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!sb = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
vortex.flow @scans
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %p = vortex.softmax %s {scale = 1.000000e+00 : f32} : !s -> !s
  %mu = vortex.mean %p {dim = 0 : i64} : !s -> !sb
  %d = vortex.add %p, %mu {alpha = 1.000000e+00 : f32, beta = -1.000000e+00 : f32} : (!s, !sb) -> !s
  vortex.topk %d into %o : !s into !o
}

// Launch order and grid kinds.
// CHECK-LABEL: module attributes
// CHECK-SAME: #vortex.launch<kernel = "scans_cache_w0", grid = items, items_of = "num_new", per_cta = 16, threads = 256
// CHECK-SAME: #vortex.launch<kernel = "scans_indexer_w0", grid = persistent, ctas_per_sm = 4, threads = 256
// CHECK-SAME: #vortex.launch<kernel = "scans_indexer_s1", grid = rows, threads = 256
// CHECK-SAME: #vortex.launch<kernel = "scans_indexer_s2", grid = rows, threads = 256
// CHECK-SAME: #vortex.launch<kernel = "scans_indexer_w3", grid = persistent, ctas_per_sm = 4, threads = 256
// The top-k: three alternatives (one choice) of 512, 256 and 128 threads.
// CHECK-SAME: #vortex.launch<kernel = "scans_indexer_topk", grid = rows, threads = 512, {{[^[]*}}params = [{{[^]]*}}]{{[^>]*}}, choice = "scans_indexer_topk">
// CHECK-SAME: #vortex.launch<kernel = "scans_indexer_topk_t256", grid = rows, threads = 256, {{[^[]*}}params = [{{[^]]*}}]{{[^>]*}}, choice = "scans_indexer_topk">
// CHECK-SAME: #vortex.launch<kernel = "scans_indexer_topk_t128", grid = rows, threads = 128, {{[^[]*}}params = [{{[^]]*}}]{{[^>]*}}, choice = "scans_indexer_topk">
// Options: 128 threads are 4 warps of 2 groups of 16 lanes (8 blocks per
// CTA of the cache kernel); 2 CTAs per SM for the persistent kernels.
// OPT-LABEL: module attributes
// OPT-SAME: #vortex.launch<kernel = "scans_cache_w0", grid = items, items_of = "num_new", per_cta = 8, threads = 128
// OPT-SAME: #vortex.launch<kernel = "scans_indexer_w0", grid = persistent, ctas_per_sm = 2, threads = 128
// OPT: gpu.func @scans_indexer_w0({{.*}}known_block_size = array<i32: 128, 1, 1>

// Score: groups of 8 lanes per block (the plan widens 16-byte lanes to 32
// bytes when the carried values fit), 2 blocks per iteration, a lane's 32
// bytes of a centroid in two 16-byte slices 128 bytes apart (plan.mlir),
// a clustered reduction over the group.
// CHECK-LABEL: gpu.func @scans_indexer_w0(
// CHECK-SAME: vortex.plan = #vortex.workload_plan<lanes = 8,
// CHECK-SAME: items_per_iteration = 2,
// CHECK-SAME: slice_columns = 8,
// CHECK: arith.remui %{{.+}}, %c8 : index
// CHECK: vector.load {{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.load {{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.shuffle {{.*}} : vector<8xbf16>, vector<8xbf16>
// CHECK: gpu.subgroup_reduce add %{{.+}} cluster(size = 8) : (f32) -> f32
// CHECK: gpu.return

// Softmax: one CTA per row; bounds clamped to the scratch extents; a
// CTA-wide max, exp, a CTA-wide sum.
// CHECK-LABEL: gpu.func @scans_indexer_s1(
// CHECK: memref.dim
// CHECK: arith.minui
// CHECK: gpu.all_reduce maximumf
// CHECK: math.exp
// CHECK: gpu.all_reduce add
// CHECK: gpu.return

// Mean over the row's blocks (dim 0): a CTA-wide sum, divided by the count,
// stored once per row (by thread 0).
// CHECK-LABEL: gpu.func @scans_indexer_s2(
// CHECK: gpu.all_reduce add
// CHECK: arith.divf
// CHECK: scf.if
// CHECK: memref.store
// CHECK: gpu.return

// The elementwise consumer of a ragged and a batched value: a score kernel
// without a gathered block (no num_blocks parameter).
// CHECK-LABEL: gpu.func @scans_indexer_w3(
// CHECK-SAME: %[[W3IDS:[^:]+]]: memref<?xi32>, %{{[^:]+}}: i32, %[[P:[^:]+]]: memref<?xf32>
// CHECK-SAME: memref<?xf32>, %{{[^:]+}}: memref<?xi32>) kernel
// CHECK-SAME: items_per_iteration = 2
// Two items per iteration, each reading the ragged p at its own CSR
// position. Nothing is gathered by block id, so the loop carries no ids
// (only the row, its bounds and the hoisted value); the ids loaded in the
// iteration go unused and fold away.
// CHECK: scf.for {{.*}} iter_args({{.*}}, %{{.+}} = %c-1, %{{[^)]+}}) -> (index, index, index, index, vector<1xf32>) {
// CHECK: %[[POS0:.+]] = arith.minui
// CHECK: %[[POS1:.+]] = arith.minui
// CHECK: memref.load %[[W3IDS]][%[[POS0]]]
// CHECK: memref.load %[[W3IDS]][%[[POS1]]]
// CHECK: %[[AT0:.+]] = arith.muli %[[POS0]]
// CHECK: vector.load %[[P]]
// CHECK: %[[AT1:.+]] = arith.muli %[[POS1]]
// CHECK: vector.load %[[P]]
// CHECK: scf.while
// alpha * p + beta * mu:
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: gpu.return

// Top-k (its 512-thread alternative): a radix select (the row's largest
// and smallest keys in one CTA reduction: butterfly shuffles, the warps'
// partials through shared memory; 8-bit digit histograms by shared
// atomics, zeroed once before the passes and then by the warp that scans
// them, so a pass starts without a barrier; warp scans by shuffle up),
// then the k kept 64-bit keys placed by rank: each counts the larger keys,
// partial counts summed by 32-bit shuffles, no 64-bit shuffle. The kept keys' block ids go to shared
// memory at the gather (loaded with the keys), so the write needs no
// global load.
// CHECK-LABEL: gpu.func @scans_indexer_topk(
// Every shared buffer is aligned to 16 bytes (LLVM merges word accesses
// into 16-byte ones).
// CHECK-SAME: workgroup(%[[KEYS:[^ ]+]] : memref<4096xi64, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[HIST:[^ ]+]] : memref<256xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[CTL:[^ ]+]] : memref<5xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{[^ ]+}} : memref<32xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[IDS:[^ ]+]] : memref<512xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: known_block_size = array<i32: 512, 1, 1>
// CHECK-NOT: gpu.all_reduce
// CHECK: memref.store %{{.+}}, %[[HIST]][
// CHECK: gpu.shuffle xor
// CHECK: arith.maxui
// CHECK: arith.minui
// CHECK: gpu.barrier
// First one pass of value bins: 256 bins of equal width over the row's
// score range (a key's bin from its score), the bin of the k-th best key
// found as a digit is, its keys (at most 128) ranked by counting the larger
// ones at the end of the keys buffer.
// CHECK: arith.divf
// CHECK: arith.cmpf ogt
// CHECK: scf.if
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.fptoui
// CHECK: arith.minui
// CHECK: memref.atomic_rmw addi %{{.+}}, %[[HIST]]
// CHECK: gpu.barrier
// CHECK: gpu.shuffle up
// CHECK: gpu.barrier
// CHECK: arith.cmpi sle, %{{.+}}, %c128_i32
// CHECK: memref.atomic_rmw addi %{{.+}}, %[[CTL]][%c4
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: arith.cmpi ugt, %{{.+}}, %{{.+}} : i64
// CHECK: gpu.barrier
// Else (a bin of more than 128 keys, infinite or NaN scores, a constant
// row) the digit passes:
// CHECK: scf.while
// CHECK: } do {
// CHECK-NOT: gpu.barrier
// CHECK: memref.atomic_rmw addi %{{.+}}, %[[HIST]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[HIST]]
// CHECK-COUNT-8: memref.store %{{.+}}, %[[HIST]][
// CHECK: gpu.shuffle up
// CHECK: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[IDS]][
// CHECK: %[[ID:.+]] = memref.load %[[IDS]][
// CHECK: arith.cmpi ugt, %{{.+}}, %{{.+}} : i64
// CHECK: gpu.shuffle xor %{{.+}}, %{{.+}}, %{{.+}} : i32
// CHECK-NOT: gpu.shuffle xor %{{.+}}, %{{.+}}, %{{.+}} : i64
// CHECK: memref.store %[[ID]], %{{.+}}[
// CHECK: gpu.return

// Cache: one group per completed block, its 16 rows loaded as vectors.
// CHECK-LABEL: gpu.func @scans_cache_w0(
// CHECK-COUNT-16: vector.load {{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK: vector.store
// CHECK: gpu.return

// -----

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!ct = !vortex.vtensor<?x128x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @narrow
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %t = vortex.transpose %centroids : !c -> !ct
  %s = vortex.sum %t {dim = 1 : i64} : !ct -> !s
  vortex.topk %s into %o : !s into !o
}

// The transpose cannot be done across the lanes of a group: the score
// kernel is emitted in narrow mode, one lane per block (lane in group =
// lane % 1), each lane reading a whole 128-element row, and no cross-lane
// reduction. The cache kernel keeps its groups of 16.
// CHECK-LABEL: gpu.func @narrow_indexer_w0(
// CHECK: arith.remui %{{.+}}, %c1 : index
// CHECK: vector.load {{.*}} : memref<?xbf16>, vector<128xbf16>
// CHECK-NOT: gpu.subgroup_reduce
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @narrow_cache_w0(
// CHECK: arith.remui %{{.+}}, %c16 : index
