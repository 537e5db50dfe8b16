// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="lanes=1" | FileCheck %s --check-prefix=NARROW
// RUN: not vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="lanes=4 hoist=false items-per-iteration=4" 2> %t.err | FileCheck %s --check-prefix=OVERRIDE
// RUN: FileCheck %s --check-prefix=OVERRIDE-ERR < %t.err
// RUN: not vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="lanes=16" 2>&1 | FileCheck %s --check-prefix=FORCED
// RUN: not vortex-opt %s --split-input-file --convert-vortex-to-gpu="lanes=3" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="topk-ctas-per-sm=3" | FileCheck %s --check-prefix=TOPK
// RUN: not vortex-opt %s --split-input-file --convert-vortex-to-gpu="topk-ctas-per-sm=9" 2>&1 | FileCheck %s --check-prefix=BADTOPK
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="topk-threads=128" | FileCheck %s --check-prefix=T128
// RUN: not vortex-opt %s --split-input-file --convert-vortex-to-gpu="topk-threads=64" 2>&1 | FileCheck %s --check-prefix=BADT
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="topk-value-bins=false" | FileCheck %s --check-prefix=NOBINS
// RUN: not vortex-opt %s --split-input-file --convert-vortex-to-gpu="topk-value-bins=2" 2>&1 | FileCheck %s --check-prefix=BADBINS
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="sector-slices=false" | FileCheck %s --check-prefix=NOSLICES

// Every workload kernel's decisions are planned before any IR is built and
// recorded on it as `vortex.plan` (docs/gpu.md, "Kernel plans"); the
// options override them.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @centroids
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
  %qs = vortex.add_mul %q {alpha = 0.0 : f32, beta = 2.0 : f32} : !q -> !q
  %s = vortex.gemm %qs, %centroids : (!q, !c) -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  %m = vortex.max %s {dim = 2 : i64} : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !s
  vortex.topk %m into %o : !s into !o
}

// Planned: 128 columns over 16 lanes of 8; the per-row 2q (an elementwise
// op of q, no cross-lane op) hoisted and carried in f32: 8 rows of 8 = 64
// registers (over 8 lanes of 16 it would be 128, past the budget, so the
// lanes stay 16 bytes wide); an item loads one centroid row (8 bf16, 4
// registers) plus the 8-register allowance, and two items would pass the
// budget.
// The top-k's loops are kept rolled: LLVM may not unroll them by a runtime
// count. The score kernel's loops are left to LLVM.
// CHECK: #[[$UNROLL:.+]] = #llvm.loop_unroll<runtimeDisable = true>
// CHECK: #[[$ROLLED:.+]] = #llvm.loop_annotation<unroll = #[[$UNROLL]]>
// CHECK-LABEL: gpu.func @centroids_indexer_w0(
// CHECK-SAME: vortex.plan = #vortex.workload_plan<lanes = 16, narrow = false, threads = 256, groups_per_cta = 16, register_budget = 64, hoist = true, items_per_iteration = 1, ctas_per_sm = 4, carried_registers = 64, item_registers = 12, slice_columns = 0, envelope_mma = false>
// CHECK-NOT: loop_annotation
// The top-k's fixed decisions, three alternatives (512, 256 and 128
// threads holding 2048 keys between them); no register bound unless asked.
// CHECK-LABEL: gpu.func @centroids_indexer_topk(
// CHECK-NOT: nvvm.minctasm
// CHECK-SAME: vortex.plan = #vortex.select_plan<threads = 512, register_keys = 4, radix_bits = 8, rank_sort_max = 512, sort_capacity = 4096, value_bin_candidates = 128, ctas_per_sm = 0, stores_saved = false>
// CHECK: arith.fptoui
// CHECK: scf.while
// CHECK: scf.for
// CHECK: } {loop_annotation = #[[$ROLLED]]}
// CHECK-LABEL: gpu.func @centroids_indexer_topk_t256(
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: vortex.plan = #vortex.select_plan<threads = 256, register_keys = 8, radix_bits = 8, rank_sort_max = 256, sort_capacity = 4096, value_bin_candidates = 128, ctas_per_sm = 0, stores_saved = false>
// CHECK-LABEL: gpu.func @centroids_indexer_topk_t128(
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-SAME: vortex.plan = #vortex.select_plan<threads = 128, register_keys = 16, radix_bits = 8, rank_sort_max = 128, sort_capacity = 4096, value_bin_candidates = 128, ctas_per_sm = 0, stores_saved = false>
// topk-threads=128: that shape alone, one launch without a choice.
// T128-LABEL: module attributes
// T128-NOT: choice
// T128-SAME: kernel = "centroids_indexer_topk", grid = rows, threads = 128,
// T128-NOT: indexer_topk_t
// T128-LABEL: gpu.func @centroids_indexer_topk(
// T128-SAME: known_block_size = array<i32: 128, 1, 1>
// T128-SAME: vortex.plan = #vortex.select_plan<threads = 128, register_keys = 16, radix_bits = 8, rank_sort_max = 128, sort_capacity = 4096, value_bin_candidates = 128, ctas_per_sm = 0, stores_saved = false>
// BADT: error: convert-vortex-to-gpu: topk-threads = 64 must be 0 (planned), 128, 256 or 512
// topk-value-bins=false: the digit passes alone, no value-bin pass (no
// score arithmetic between the key bounds and the first digit pass).
// NOBINS-LABEL: gpu.func @centroids_indexer_topk(
// NOBINS-SAME: value_bin_candidates = 0,
// NOBINS: arith.minui
// NOBINS-NOT: arith.fptoui
// NOBINS: scf.while
// NOBINS-LABEL: gpu.func @centroids_indexer_topk_t256(
// NOBINS-SAME: value_bin_candidates = 0,
// NOBINS-NOT: arith.fptoui
// NOBINS-LABEL: gpu.func @centroids_indexer_topk_t128(
// BADBINS: '2' is invalid value for boolean argument
// topk-ctas-per-sm=3: ptxas must fit 3 CTAs of 256 threads per SM.
// TOPK-LABEL: gpu.func @centroids_indexer_topk(
// TOPK-SAME: nvvm.minctasm = 3 : i32, vortex.plan = #vortex.select_plan<{{.*}}ctas_per_sm = 3,
// BADTOPK: error: convert-vortex-to-gpu: topk-ctas-per-sm = 9 must be in [0, 8]
// The cache kernel: one block per group of 16 lanes.
// CHECK-LABEL: gpu.func @centroids_cache_w0(
// CHECK-SAME: vortex.plan = #vortex.workload_plan<lanes = 16, narrow = false, threads = 256, groups_per_cta = 16, register_budget = 64>

// lanes=1: narrow mode, every tile replicated, no shuffle.
// NARROW-LABEL: gpu.func @centroids_indexer_w0(
// NARROW-SAME: lanes = 1, narrow = true
// NARROW-SAME: groups_per_cta = 256,
// NARROW-NOT: gpu.subgroup_reduce
// NARROW: gpu.return

// lanes=4, no hoisting, up to 4 items per iteration: 32 columns per lane;
// the q rows are no longer carried (hoist = false) but still counted, so
// the budget keeps 1 item.
// OVERRIDE-LABEL: gpu.func @centroids_indexer_w0(
// OVERRIDE-SAME: lanes = 4,
// OVERRIDE-SAME: hoist = false, items_per_iteration = 1,
// OVERRIDE: gpu.subgroup_reduce add {{.*}} cluster(size = 4)

// -----

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @widened
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
  vortex.topk %s into %o : !s into !o
}

// The mean query carried in f32 takes 16 registers over 8 lanes of 16
// columns: within the budget, so the score kernel takes 32 bytes per lane
// (a gather is bound by the bytes in flight per thread) and, with 16
// registers per item, 2 items per iteration. A lane holds its 16 columns
// as two slices of 8, 64 columns apart (sector slices: each 16-byte load
// of the 8 lanes reads 128 contiguous bytes, whole sectors), loaded apart
// and joined. The cache kernel keeps 16 lanes.
// CHECK-LABEL: gpu.func @widened_indexer_w0(
// CHECK-SAME: vortex.plan = #vortex.workload_plan<lanes = 8, narrow = false, threads = 256, groups_per_cta = 32, register_budget = 64, hoist = true, items_per_iteration = 2, ctas_per_sm = 4, carried_registers = 16, item_registers = 16, slice_columns = 8, envelope_mma = false>
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %c8 : index
// CHECK: %[[M0:.+]] = arith.muli %[[LANE]], %{{.+}} : index
// CHECK-NEXT: %[[C0:.+]] = arith.addi %[[M0]], %{{.+}} : index
// CHECK-NEXT: %[[A0:.+]] = arith.addi %{{.+}}, %[[C0]] : index
// CHECK-NEXT: %[[S0:.+]] = vector.load %{{.+}}[%[[A0]]] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: %[[C64:.+]] = arith.constant 64 : index
// CHECK-NEXT: %[[EIGHT:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[M1:.+]] = arith.muli %[[LANE]], %[[EIGHT]] : index
// CHECK-NEXT: %[[C1:.+]] = arith.addi %[[M1]], %[[C64]] : index
// CHECK-NEXT: %[[A1:.+]] = arith.addi %{{.+}}, %[[C1]] : index
// CHECK-NEXT: %[[S1:.+]] = vector.load %{{.+}}[%[[A1]]] {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.shuffle %[[S0]], %[[S1]] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xbf16>, vector<8xbf16>
// CHECK: gpu.subgroup_reduce add {{.*}} cluster(size = 8)
// sector-slices=false: the same plan with a lane's 16 columns contiguous,
// one 32-byte load.
// NOSLICES-LABEL: gpu.func @widened_indexer_w0(
// NOSLICES-SAME: lanes = 8, narrow = false, {{.*}}register_budget = 64, {{.*}}slice_columns = 0,
// NOSLICES-NOT: vector.shuffle
// NOSLICES: vector.load %{{.+}} {alignment = 16 : i64, nontemporal = true} : memref<?xbf16>, vector<16xbf16>
// NOSLICES-LABEL: gpu.func @widened_indexer_topk(
// CHECK-LABEL: gpu.func @widened_cache_w0(
// CHECK-SAME: lanes = 16,
// Forced lanes are taken as given.
// OVERRIDE-LABEL: gpu.func @widened_indexer_w0(
// OVERRIDE-SAME: lanes = 4,

// -----

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!ct = !vortex.vtensor<?x128x1xbf16, #vortex.format<ragged>>
!s  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @transposed
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

// A transpose of a row spread over lanes cannot be done in registers: the
// plan takes narrow mode up front (no kernel is emitted and retried).
// CHECK-LABEL: gpu.func @transposed_indexer_w0(
// CHECK-SAME: lanes = 1, narrow = true
// CHECK-LABEL: gpu.func @transposed_cache_w0(
// CHECK-SAME: lanes = 16, narrow = false

// Forcing 16 lanes on it is refused, naming the option; nothing is emitted.
// FORCED: error: 'vortex.kernel' op cannot be laid out over 16 lanes per block (convert-vortex-to-gpu lanes option); 1 (narrow) always can
// OVERRIDE-ERR: error: 'vortex.kernel' op cannot be laid out over 4 lanes per block
// FORCED-NOT: gpu.func @transposed

// BAD: error: convert-vortex-to-gpu: lanes = 3 must be 0 (planned) or a power of two in [1, 32]

// -----

// G = 5 (q padded to 8 heads, the padded heads masked to 0): the mask is a
// view and costs the per-row part no registers, so the score kernel takes
// 8 lanes of 32 bytes like G = 8. The mean over the 5 heads multiplies by
// the rounded reciprocal (0.2): a division's slow path took 38 to 45
// registers more (docs/gpu.md, "Kernel plans").
// CHECK-LABEL: gpu.func @mean5_indexer_w0(
// CHECK-SAME: vortex.plan = #vortex.workload_plan<lanes = 8, narrow = false, {{.*}}items_per_iteration = 2, {{.*}}carried_registers = 16,
// CHECK-NOT: arith.divf
// CHECK: arith.constant 2.000000e-01 : f32
// CHECK-NOT: arith.divf
// CHECK-LABEL: gpu.func @mean5_indexer_topk(
!kv5 = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q5  = !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
!o5  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c5  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr5 = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm5 = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s5  = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @mean5
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 5, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv5, %v: !kv5, %centroids: !c5) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv5 -> !cr5
  vortex.write %m into %centroids : !cr5 into !c5
}
indexer(%q: !q5, %o: !o5, %k: !kv5, %v: !kv5, %centroids: !c5) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q5 -> !qm5
  %s = vortex.gemm %qm, %centroids : (!qm5, !c5) -> !s5
  vortex.topk %s into %o : !s5 into !o5
}
