// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="plan-only" 2> %t.err | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s < %t.err
// RUN: not vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu="plan-only lanes=16" 2>&1 | FileCheck %s --check-prefix=FORCED

// plan-only runs the workload kernels' planner (WorkloadPlan.cpp) alone:
// each plan, what the kernel's `vortex.plan` would record (plan.mlir
// checks the same plans on the emitted kernels), is reported as a remark
// at its op; no kernel is left and the flow stays as it was.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q  = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o  = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c  = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
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

// IR-NOT: gpu.container_module
// IR-NOT: gpu.module
// IR: vortex.flow @centroids
// IR-NOT: gpu.func
// CHECK: remark: plan of @centroids_indexer_w0: #vortex.workload_plan<lanes = 16, narrow = false, threads = 256, groups_per_cta = 16, register_budget = 64, hoist = true, items_per_iteration = 1, ctas_per_sm = 4, carried_registers = 64, item_registers = 12, slice_columns = 0, envelope_mma = false>
// CHECK: remark: plan of @centroids_cache_w0: #vortex.workload_plan<lanes = 16, narrow = false, threads = 256, groups_per_cta = 16, register_budget = 64>
// FORCED: remark: plan of @centroids_indexer_w0: #vortex.workload_plan<lanes = 16, narrow = false

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

// A transposed row takes narrow mode; forcing 16 lanes on it is refused
// by the planner, and the pass fails.
// IR: vortex.flow @transposed
// IR-NOT: gpu.func
// CHECK: remark: plan of @transposed_indexer_w0: #vortex.workload_plan<lanes = 1, narrow = true
// CHECK: remark: plan of @transposed_cache_w0: #vortex.workload_plan<lanes = 16, narrow = false
// FORCED: error: 'vortex.kernel' op cannot be laid out over 16 lanes per block
// FORCED-NOT: remark: plan of @transposed
