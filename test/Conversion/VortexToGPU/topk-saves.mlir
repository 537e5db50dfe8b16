// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=topk-saves-min-rows=20 | FileCheck %s --check-prefix=SMR
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=topk-saves-min-rows=-1 | FileCheck %s --check-prefix=OFF
// RUN: not vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=topk-saves-min-rows=-2 2>&1 | FileCheck %s --check-prefix=BAD

// Saves in the top-k (docs/gpu.md): a score that is saved (vortex.save in
// the score kernel of the value vortex.topk reads, into a [1, 1] field no
// other op uses) is stored by the top-k when a step has more rows than
// saves_min_rows (a manifest constant, topk-saves-min-rows, 8 by
// default), else by the score kernel: each kernel tests the row count.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!rs = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @saved
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], running = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %running: !rs) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %running: !rs) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %cur = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %last = vortex.load %running : !rs -> !s
  %sum = vortex.add %last, %cur {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32} : (!s, !s) -> !s
  vortex.save %sum into %running : !s into !rs
  vortex.topk %sum into %o : !s into !o
}

// The manifest: both kernels take saves_min_rows; the top-k takes the field
// after it and writes it.
// CHECK-LABEL: module attributes
// CHECK-SAME: kernel = "saved_indexer_w0", {{[^>]*}}params = [{{.*}}#vortex.launch_param<name = "running", kind = buffer>, #vortex.launch_param<name = "scratch0", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "num_blocks", kind = scalar>, #vortex.launch_param<name = "saves_min_rows", kind = scalar, value = 8>]
// CHECK-SAME: kernel = "saved_indexer_topk", {{[^>]*}}params = [{{.*}}#vortex.launch_param<name = "reserved_eos", kind = scalar, value = 1>, #vortex.launch_param<name = "running", kind = buffer>, #vortex.launch_param<name = "saves_min_rows", kind = scalar, value = 8>]
// CHECK-SAME: writes = ["sparse_kv_indptr", "sparse_kv_indices", "status", "running"]
// SMR-LABEL: module attributes
// SMR-SAME: name = "saves_min_rows", kind = scalar, value = 20>]
// SMR-SAME: name = "saves_min_rows", kind = scalar, value = 20>]

// The score kernel stores the field only at few rows, and only for an id in
// range (OK).
// CHECK-LABEL: gpu.func @saved_indexer_w0(
// CHECK-SAME: %[[ROWS:[^:]+]]: i32, {{.*}}, %[[FIELD:[^:]+]]: memref<?xbf16>, %{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: memref<?xi32>, %[[NB:[^:]+]]: i32, %[[MIN:[^:]+]]: i32) kernel
// CHECK: %[[FEW:.+]] = arith.cmpi ule, %[[ROWS]], %[[MIN]] : i32
// CHECK: %[[OK:.+]] = arith.cmpi ule, %{{.+}}, %{{.+}} : i32
// CHECK: memref.store %{{.+}}, %{{.+}} : memref<?xf32>
// CHECK: scf.if %[[OK]] {
// CHECK-NEXT: scf.if %[[FEW]] {
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: memref.store %{{.+}}, %[[FIELD]][%{{.+}}] : memref<?xbf16>
// CHECK: gpu.return

// Each top-k shape stores it at more rows: the row's [start, end - eos),
// the first positions' loads before any store, an id outside the field
// skipped.
// CHECK-LABEL: gpu.func @saved_indexer_topk(
// CHECK-SAME: %[[TROWS:[^:]+]]: i32, %[[SCORE:[^:]+]]: memref<?xf32>,
// CHECK-SAME: %[[TFIELD:[^:]+]]: memref<?xbf16>, %[[TMIN:[^:]+]]: i32) workgroup
// CHECK-SAME: stores_saved = true
// CHECK: %[[MANY:.+]] = arith.cmpi ugt, %[[TROWS]], %[[TMIN]] : i32
// CHECK-NEXT: scf.if %[[MANY]] {
// CHECK: %[[SIZE:.+]] = memref.dim %[[TFIELD]]
// CHECK: %[[S0:.+]] = memref.load %[[SCORE]]
// CHECK: memref.load %[[SCORE]]
// CHECK: memref.load %[[SCORE]]
// CHECK: memref.load %[[SCORE]]
// CHECK-NOT: memref.store
// CHECK: %[[ID0:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[IN0:.+]] = arith.cmpi ult, %[[ID0]], %[[SIZE]] : index
// CHECK: arith.andi %{{.+}}, %[[IN0]] : i1
// CHECK: %[[V0:.+]] = arith.truncf %[[S0]] : f32 to bf16
// CHECK: memref.store %[[V0]], %[[TFIELD]][%[[ID0]]] : memref<?xbf16>
// Positions past the first 2048: one at a time.
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[TFIELD]]
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @saved_indexer_topk_t256(
// CHECK-SAME: stores_saved = true
// CHECK-LABEL: gpu.func @saved_indexer_topk_t128(
// CHECK-SAME: stores_saved = true

// topk-saves-min-rows=-1: the score kernel always stores it; no kernel
// takes saves_min_rows.
// OFF-LABEL: module attributes
// OFF-NOT: saves_min_rows
// OFF: gpu.func @saved_indexer_w0(
// OFF-SAME: memref<?xi32>, %{{[^:]+}}: i32) kernel
// OFF: gpu.func @saved_indexer_topk(
// OFF-SAME: %{{[^:]+}}: i32, %{{[^:]+}}: i32) workgroup
// OFF-SAME: stores_saved = false

// BAD: error: convert-vortex-to-gpu: topk-saves-min-rows = -2 must be -1 (never) or a row count in [0, 2^30]

// -----

// Not deferred: the top-k reads another value than the one saved.
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!rs = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @other
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], running = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %running: !rs) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %running: !rs) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %cur = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %last = vortex.load %running : !rs -> !s
  %sum = vortex.add %last, %cur {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32} : (!s, !s) -> !s
  vortex.save %sum into %running : !s into !rs
  vortex.topk %cur into %o : !s into !o
}
// CHECK-LABEL: module attributes
// CHECK-NOT: saves_min_rows
// CHECK: gpu.func @other_indexer_topk(
// CHECK-SAME: stores_saved = false

// -----

// Not deferred: the score is saved into two fields.
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!rs = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @twice
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], running = [1, 1], copy = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %running: !rs, %copy: !rs) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %running: !rs, %copy: !rs) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %cur = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %last = vortex.load %running : !rs -> !s
  %prev = vortex.load %copy : !rs -> !s
  %both = vortex.add %last, %prev : (!s, !s) -> !s
  %sum = vortex.add %both, %cur {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32} : (!s, !s) -> !s
  vortex.save %sum into %running : !s into !rs
  vortex.save %sum into %copy : !s into !rs
  vortex.topk %sum into %o : !s into !o
}
// CHECK-LABEL: module attributes
// CHECK-NOT: saves_min_rows
// CHECK: gpu.func @twice_indexer_topk(
// CHECK-SAME: stores_saved = false

// -----

// Not deferred: a trtllm selection reads the saved score.
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!rs = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!t  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!l  = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>
vortex.flow @trt
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], running = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %running: !rs) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %running: !rs) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %cur = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %last = vortex.load %running : !rs -> !s
  %sum = vortex.add %last, %cur {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32} : (!s, !s) -> !s
  vortex.save %sum into %running : !s into !rs
  %t0, %l0 = vortex.trtllm_topk %sum {k = 4 : i64} : !s -> !t, !l
  vortex.union (%t0, %l0), (%t0, %l0) into %o : !t, !l into !o
}
// CHECK-LABEL: module attributes
// CHECK-NOT: saves_min_rows
// CHECK: gpu.func @trt_indexer_trtllm{{[0-9]+}}(
// CHECK-SAME: stores_saved = false
