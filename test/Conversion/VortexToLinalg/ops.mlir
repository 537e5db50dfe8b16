// RUN: vortex-opt %s --split-input-file --convert-vortex-to-linalg | FileCheck %s

// Per-op lowering details: neutral elements, masks, knobs and scans.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!e = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>
!sh = !vortex.vtensor<?x5x128xbf16, #vortex.format<ragged>>
!sd = !vortex.vtensor<?x5x1xbf16, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @quest
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 5, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !e, %min: !e) {
  %hi = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %hi into %max : !er into !e
  %lo = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %lo into %min : !er into !e
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !e, %min: !e) {
  %a = vortex.multiply %q, %max : (!q, !e) -> !sh
  %b = vortex.multiply %q, %min : (!q, !e) -> !sh
  %m = vortex.maximum %a, %b : (!sh, !sh) -> !sh
  %w = vortex.where_gt %m, %a : (!sh, !sh) -> !sh
  %x = vortex.add %m, %w {alpha = 1.0 : f32, beta = 5.0e-01 : f32} : (!sh, !sh) -> !sh
  %sum = vortex.sum %x {dim = 2 : i64} : !sh -> !sd
  %agg = vortex.max %sum {dim = 1 : i64} : !sd -> !s
  vortex.topk %agg into %o : !s into !o
}

// CHECK-LABEL: func.func @quest_indexer
// The q rows are broadcast over the 1-row envelope with a constant index.
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[BCAST:.+]], #{{.+}}]
// CHECK: arith.mulf
// CHECK: arith.maximumf
// Where-masks are additive: 0 or -1e30.
// CHECK-DAG: arith.cmpf ogt
// CHECK-DAG: arith.constant -1.000000e+30 : f32
// CHECK: arith.select
// Add with its (alpha, beta) knobs.
// CHECK: arith.constant 5.000000e-01 : f32
// Sum starts at 0, the max over the 5 real heads at -inf.
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.fill
// CHECK: arith.maximumf

// CHECK-LABEL: func.func @quest_cache
// Max starts at -inf, min at +inf.
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: arith.constant 0x7F800000 : f32
// CHECK: arith.minimumf

// -----

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!st = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!sb = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @scan
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], state = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %state: !st) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
  vortex.fill %state {value = 0.0 : f32} : !st
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %state: !st) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %p = vortex.softmax %s {scale = 5.000000e-01 : f32} : !s -> !s
  %mu = vortex.mean %p {dim = 0 : i64} : !s -> !sb
  %c = vortex.add %p, %mu {alpha = 1.0 : f32, beta = -1.0 : f32} : (!s, !sb) -> !s
  %last = vortex.load %state : !st -> !s
  %r = vortex.add %last, %c : (!s, !s) -> !s
  vortex.save %r into %state : !s into !st
  vortex.approx_topk %r into %o {tolerate_ratio = 1.0e-01 : f32} : !s into !o
}

// CHECK-LABEL: func.func @scan_indexer
// CHECK-SAME: %[[STATE:[^:]+]]: memref<?x1x1xf32> {vortex.name = "state"}
// Softmax over the scored range [bos, n - eos) of rows that need selection:
// a max pass, a sum-of-exp pass, then the element.
// CHECK: linalg.generic
// CHECK: scf.if
// CHECK: scf.for
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: arith.maximumf
// CHECK: scf.for
// CHECK: math.exp
// CHECK: arith.divf
// Mean over dim 0: one batched row per CSR row; an empty range gives 0.
// CHECK: scf.for
// CHECK: arith.divf
// CHECK: arith.select
// Load gathers the field's pre-step value; save scatters into its rows.
// CHECK: tensor.extract %{{.+}} : tensor<?x1x1xf32>
// CHECK: tensor.insert_slice
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[STATE]]

// CHECK-LABEL: func.func @scan_cache
// CHECK-SAME: %[[CST:[^:]+]]: memref<?x1x1xf32> {vortex.name = "state"}
// CHECK: tensor.insert_slice
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[CST]]
