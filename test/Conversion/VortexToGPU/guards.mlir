// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=topk-saves-min-rows=-1 | FileCheck %s

// The guards (docs/gpu.md "Guards"): kernels that address a paged tensor by
// block id check every id against num_blocks, kernels that read the dense
// CSR clamp it, and a failed check is recorded in the runtime's status
// buffer: no host synchronization, nothing read or written out of bounds.
// The saved field is stored by the score kernel here (topk-saves-min-rows
// = -1); the top-k's guard of the ids it stores at is in topk-saves.mlir.

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

// The manifest: one status tensor of 4 i32 words, written by every kernel;
// kernels that gather by block id also take num_blocks.
// CHECK-LABEL: module attributes
// CHECK-SAME: status = #vortex.tensor<role = status, dtype = i32, shape = [4], flags = {block_ids = 2 : i64, dense_kv_indices = 1 : i64, dense_kv_indptr = 4 : i64, slot_of_ptr = 8 : i64}>
// CHECK-SAME: kernel = "saved_cache_w0", {{[^>]*}}params = [#vortex.launch_param<name = "block_ids", kind = buffer>, #vortex.launch_param<name = "num_new", kind = scalar>, #vortex.launch_param<name = "centroids", kind = buffer>, #vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "num_blocks", kind = scalar>]
// CHECK-SAME: writes = ["centroids", "status"]
// CHECK-SAME: kernel = "saved_indexer_w0", {{[^>]*}}params = [#vortex.launch_param<name = "dense_kv_indptr", kind = buffer>, #vortex.launch_param<name = "dense_kv_indices", kind = buffer>, #vortex.launch_param<name = "rows", kind = scalar>, #vortex.launch_param<name = "centroids", kind = buffer>, #vortex.launch_param<name = "q", kind = buffer>, #vortex.launch_param<name = "running", kind = buffer>, #vortex.launch_param<name = "scratch0", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "num_blocks", kind = scalar>]
// CHECK-SAME: kernel = "saved_indexer_topk", {{[^>]*}}params = [{{.*}}#vortex.launch_param<name = "sparse_kv_indices", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "topk_min_budget", kind = scalar, value = 6>, #vortex.launch_param<name = "topk_ratio_bits", kind = scalar, dtype = i64, value = 0>, #vortex.launch_param<name = "reserved_bos", kind = scalar, value = 1>, #vortex.launch_param<name = "reserved_eos", kind = scalar, value = 1>]

// Score kernel. The CSR's end must equal the extent of dense_kv_indices,
// else nothing is scored (the top-k records it).
// CHECK-LABEL: gpu.func @saved_indexer_w0(
// CHECK-SAME: %[[INDPTR:[^:]+]]: memref<?xi32>, %[[INDICES:[^:]+]]: memref<?xi32>, %[[ROWS:[^:]+]]: i32,
// CHECK-SAME: %[[FIELD:[^:]+]]: memref<?xbf16>, %{{[^:]+}}: memref<?xf32>, %[[STATUS:[^:]+]]: memref<?xi32>, %[[NB:[^:]+]]: i32) kernel
// CHECK: %[[LAST:.+]] = arith.subi %[[NB]], %c1_i32 : i32
// CHECK: %[[EXT:.+]] = memref.dim %[[INDICES]]
// CHECK: %[[TOK:.+]] = arith.cmpi eq, %{{.+}}, %[[EXT]] : index
// CHECK: arith.select %[[TOK]], %{{.+}}, %c0
// CHECK-NOT: memref.atomic_rmw ori %c4_i32
// Each gathered id (carried from the iteration before): outside
// [0, num_blocks) (unsigned: negatives too) is flag 1; the item then reads
// the last block (one umin).
// CHECK: scf.for {{.*}} iter_args(%{{.+}}, %[[RAWID:[^ ]+]] = %{{[^)]+}})
// CHECK: %[[OK:.+]] = arith.cmpi ule, %[[RAWID]], %[[LAST]] : i32
// CHECK: scf.if
// CHECK: memref.atomic_rmw ori %c1_i32{{.*}}, %[[STATUS]][%{{.+}}] : (i32, memref<?xi32>) -> i32
// CHECK: memref.atomic_rmw addi %{{.+}}, %[[STATUS]]
// CHECK: %[[ID:.+]] = arith.minui %[[RAWID]], %[[LAST]] : i32
// CHECK: arith.index_cast %[[ID]] : i32 to index
// The score at the CSR position is stored for any id; the saved field only
// for an id in range.
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %{{.+}} : memref<?xf32>
// CHECK: scf.if %[[OK]]
// CHECK: memref.store %{{.+}}, %[[FIELD]][%{{.+}}] : memref<?xbf16>
// CHECK: gpu.return

// Top-k: row bounds clamped to the extents of dense_kv_indices and the
// scores; a row whose selection would not fit is not written; flag 4 (a
// clamped or dropped row, indptr[0] != 0, or a CSR end other than the
// extent of dense_kv_indices) is recorded last (before the sort, it made
// the 32-register top-k spill).
// CHECK-LABEL: gpu.func @saved_indexer_topk(
// CHECK-SAME: %[[TSTATUS:[^:]+]]: memref<?xi32>, %[[MINB:[^:]+]]: i32, %[[RBITS:[^:]+]]: i64, %[[BOS:[^:]+]]: i32, %[[EOS:[^:]+]]: i32) workgroup
// The flow's knobs come from the last four parameters (manifest constants),
// so the kernel's text is every flow's.
// CHECK: arith.bitcast %[[RBITS]] : i64 to f64
// CHECK: arith.index_cast %[[MINB]] : i32 to index
// CHECK: arith.index_cast %[[BOS]] : i32 to index
// CHECK: arith.index_cast %[[EOS]] : i32 to index
// CHECK: memref.dim
// CHECK: memref.dim
// CHECK: arith.minui
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw ori %c4_i32{{.*}}, %[[TSTATUS]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

// Cache kernel: a negative id is skipped quietly (the loc form), one >=
// num_blocks is skipped and recorded (flag 2).
// CHECK-LABEL: gpu.func @saved_cache_w0(
// CHECK-SAME: %[[CSTATUS:[^:]+]]: memref<?xi32>, %[[CNBARG:[^:]+]]: i32) kernel
// CHECK: %[[CNB:.+]] = arith.index_cast %[[CNBARG]] : i32 to index
// CHECK: %[[CRAW:.+]] = memref.load
// CHECK: %[[CID:.+]] = arith.index_cast %[[CRAW]] : i32 to index
// CHECK: arith.cmpi sge, %[[CID]], %c0{{.*}} : index
// CHECK: arith.cmpi slt, %[[CID]], %[[CNB]] : index
// CHECK: arith.cmpi sge, %[[CID]], %[[CNB]] : index
// CHECK: scf.if
// CHECK: memref.atomic_rmw ori %c2_i32, %[[CSTATUS]]
// CHECK: arith.select %{{.+}}, %[[CID]], %c0
// CHECK: gpu.return

// -----

// A field named like the status buffer: the status buffer takes another
// name.
!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @named
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(status = [1, 128])
cache(%k: !kv, %v: !kv, %status: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %status : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %status: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %status : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}
// CHECK-LABEL: module attributes
// CHECK-SAME: status = #vortex.tensor<role = cache, dtype = bf16, shape = ["num_blocks", 1, 128]>
// CHECK-SAME: status0 = #vortex.tensor<role = status, dtype = i32, shape = [4], flags = {block_ids = 2 : i64, dense_kv_indices = 1 : i64, dense_kv_indptr = 4 : i64, slot_of_ptr = 8 : i64}>
// CHECK-SAME: params = [#vortex.launch_param<name = "block_ids", kind = buffer>, #vortex.launch_param<name = "num_new", kind = scalar>, #vortex.launch_param<name = "k", kind = buffer>, #vortex.launch_param<name = "status", kind = buffer>, #vortex.launch_param<name = "status0", kind = buffer>, #vortex.launch_param<name = "num_blocks", kind = scalar>]
