// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=envelope-mma=false | FileCheck %s --check-prefix=OFF
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-pad --vortex-mask-padding --convert-vortex-to-gpu=envelope-identity=false | FileCheck %s --check-prefix=OFF
// The vortex-to-nvvm option reaches the pass, and sm_75 (no bf16 mma.sync)
// keeps the fused multiply-adds.
// RUN: vortex-opt %s --split-input-file --vortex-nvvm-stage-lower | FileCheck %s --check-prefix=NVVM
// RUN: vortex-opt %s --split-input-file --vortex-nvvm-stage-lower="to-gpu=envelope-mma=false" | FileCheck %s --check-prefix=NVVM-OFF
// RUN: vortex-opt %s --split-input-file --vortex-nvvm-stage-lower="chip=sm_75" | FileCheck %s --check-prefix=NVVM-OFF
//
// Envelope sums on tensor cores (docs/gpu.md, "Envelope sums on tensor
// cores"): sum over the columns of max(x * a, x * b), x a per-row bf16
// input of up to 8 rows read by nothing else, a and b loaded bf16 rows, is
// sum x+ max(a, b) + x- min(a, b): mma.sync m16n8k16 with the warp's items
// as A rows and x's rows as B columns. The loop carries x's fragments
// instead of x, and the warp's groups take consecutive positions.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @quest
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !env, %min: !env) {
  %kmax = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmax into %max : !er into !env
  %kmin = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmin into %min : !er into !env
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !env, %min: !env) {
  %a = vortex.multiply %q, %max : (!q, !env) -> !sq
  %b = vortex.multiply %min, %q : (!env, !q) -> !sq
  %e = vortex.maximum %a, %b : (!sq, !sq) -> !sq
  %sum = vortex.sum %e {dim = 2 : i64} : !sq -> !sh
  %aggr = vortex.max %sum {dim = 1 : i64} : !sh -> !s
  vortex.topk %aggr into %o : !s into !o
}

// 8 lanes a block of 16 columns each: two sets of 4 source lanes, each 16
// fragment registers (x+ and x-, 8 columns of pairs) carried.
// CHECK-LABEL: gpu.func @quest_indexer_w0(
// CHECK-SAME: vortex.plan = #vortex.workload_plan<lanes = 8,
// CHECK-SAME: carried_registers = 32,
// CHECK-SAME: envelope_mma = true>
// The warp's 4 groups walk its chunk together: group % 4 from the warp's
// start, 4 positions an iteration.
// CHECK: %[[GW:.+]] = arith.remui %{{.+}}, %c4
// CHECK: arith.addi %{{.+}}, %[[GW]]
// No row's fragments yet: row -1 and 32 zeros ride the persistent loop.
// CHECK: scf.for {{.+}} iter_args(
// CHECK-NOT: math.fma
// A: the max and min of the block's two rows, packed in pairs.
// CHECK: gpu.lane_id
// CHECK: %[[HI:.+]] = arith.maximumf %{{.+}}, %{{.+}} : vector<16xbf16>
// CHECK-NEXT: %[[LO:.+]] = arith.minimumf %{{.+}}, %{{.+}} : vector<16xbf16>
// CHECK-NEXT: vector.shuffle %[[HI]], %[[HI]] [0, 1]
// CHECK-NEXT: vector.bitcast %{{.+}} : vector<2xbf16> to vector<1xi32>
// The row loop: a ballot of the lanes still pending, the first one's row.
// CHECK: scf.while
// CHECK: %[[BALLOT:.+]] = nvvm.vote.sync ballot %{{.+}}, %{{.+}} -> i32
// CHECK: scf.condition
// CHECK: llvm.intr.cttz
// CHECK: gpu.shuffle idx
// A new row: x of that row at this lane's head (lane / 4) and the columns
// of lanes 4s + lane % 4, loaded (cached, not streamed), split in x+ and x-.
// CHECK: scf.if
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : vector<16xbf16>
// CHECK-NEXT: arith.minimumf %{{.+}}, %{{.+}} : vector<16xbf16>
// Then 8 mma a set (x+ with the max, x- with the min, 4 columns a lane each).
// CHECK-COUNT-16: nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: scf.yield
// After the loop: the group's two quads summed, each head's sum from lane
// head / 2 of the group; then the max over the heads, as before.
// CHECK-COUNT-2: gpu.shuffle xor %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK-NOT: gpu.shuffle xor
// CHECK-COUNT-8: gpu.shuffle idx
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : f32
// CHECK: gpu.return

// OFF-LABEL: gpu.func @quest_indexer_w0(
// OFF-SAME: envelope_mma = false
// OFF-NOT: nvvm.mma.sync
// OFF: gpu.return

// NVVM-LABEL: llvm.func @quest_indexer_w0(
// NVVM-NOT: __nv_fmaf
// NVVM: nvvm.mma.sync
// NVVM-LABEL: llvm.func @quest_indexer_topk(
// NVVM-OFF-LABEL: llvm.func @quest_indexer_w0(
// NVVM-OFF-NOT: nvvm.mma.sync
// NVVM-OFF: llvm.call @__nv_fmaf
// NVVM-OFF-NOT: nvvm.mma.sync
// NVVM-OFF-LABEL: llvm.func @quest_indexer_topk(

// -----

// What stays in fused multiply-adds: x read by another op too.
!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!qb  = !vortex.vtensor<?x8x1xbf16, #vortex.format<batched>>
vortex.flow @x_read_elsewhere
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !env, %min: !env) {
  %kmax = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmax into %max : !er into !env
  %kmin = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmin into %min : !er into !env
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !env, %min: !env) {
  %a = vortex.multiply %q, %max : (!q, !env) -> !sq
  %b = vortex.multiply %q, %min : (!q, !env) -> !sq
  %e = vortex.maximum %a, %b : (!sq, !sq) -> !sq
  %sum = vortex.sum %e {dim = 2 : i64} : !sq -> !sh
  %qs = vortex.sum %q {dim = 2 : i64} : !q -> !qb
  %t = vortex.add %sum, %qs : (!sh, !qb) -> !sh
  %aggr = vortex.max %t {dim = 1 : i64} : !sh -> !s
  vortex.topk %aggr into %o : !s into !o
}

// CHECK-LABEL: gpu.func @x_read_elsewhere_indexer_w0(
// CHECK-SAME: envelope_mma = false
// CHECK-NOT: nvvm.mma.sync
// CHECK: math.fma
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.return

// -----

// f32 envelopes (no bf16 pairs to pack).
!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>
!er  = !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x8x128xf32, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xf32, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
vortex.flow @f32_envelopes
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = f32,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !env, %min: !env) {
  %kmax = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmax into %max : !er into !env
  %kmin = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmin into %min : !er into !env
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !env, %min: !env) {
  %a = vortex.multiply %q, %max : (!q, !env) -> !sq
  %b = vortex.multiply %q, %min : (!q, !env) -> !sq
  %e = vortex.maximum %a, %b : (!sq, !sq) -> !sq
  %sum = vortex.sum %e {dim = 2 : i64} : !sq -> !sh
  %aggr = vortex.max %sum {dim = 1 : i64} : !sh -> !s
  vortex.topk %aggr into %o : !s into !o
}

// CHECK-LABEL: gpu.func @f32_envelopes_indexer_w0(
// CHECK-SAME: envelope_mma = false
// CHECK-NOT: nvvm.mma.sync
// CHECK: math.fma
// CHECK: gpu.return

// -----

// 16 rows of x: more than B's 8 columns.
!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x16x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x16x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
vortex.flow @sixteen_heads
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 16, topk_val = 4, topk_ratio = 0.0 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !env, %min: !env) {
  %kmax = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmax into %max : !er into !env
  %kmin = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmin into %min : !er into !env
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !env, %min: !env) {
  %a = vortex.multiply %q, %max : (!q, !env) -> !sq
  %b = vortex.multiply %q, %min : (!q, !env) -> !sq
  %e = vortex.maximum %a, %b : (!sq, !sq) -> !sq
  %sum = vortex.sum %e {dim = 2 : i64} : !sq -> !sh
  %aggr = vortex.max %sum {dim = 1 : i64} : !sh -> !s
  vortex.topk %aggr into %o : !s into !o
}

// CHECK-LABEL: gpu.func @sixteen_heads_indexer_w0(
// CHECK-SAME: envelope_mma = false
// CHECK-NOT: nvvm.mma.sync
// CHECK: math.fma
// CHECK: gpu.return
