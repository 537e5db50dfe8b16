// RUN: vortex-opt %s --split-input-file --vortex-fuse | FileCheck %s
// RUN: vortex-opt %s --split-input-file --vortex-fuse --vortex-fuse | FileCheck %s

// Rule: a producer and its consumers fuse, the standalone top-k stays out.
// The cache side (max and min envelopes over the same k, siblings) becomes
// one kernel with both write-backs.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!e = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!sh = !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
!sd = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @quest
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
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
  %sum = vortex.sum %m {dim = 2 : i64} : !sh -> !sd
  %agg = vortex.max %sum {dim = 1 : i64} : !sd -> !s
  vortex.topk %agg into %o : !s into !o
}

// CHECK-LABEL: vortex.flow @quest
// CHECK: cache(
// CHECK-NEXT: vortex.kernel {
// CHECK-NEXT: vortex.max
// CHECK-NEXT: vortex.write
// CHECK-NEXT: vortex.min
// CHECK-NEXT: vortex.write
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK: indexer(
// CHECK-NEXT: %[[K:.+]] = vortex.kernel -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>> {
// CHECK-NEXT: vortex.multiply
// CHECK-NEXT: vortex.multiply
// CHECK-NEXT: vortex.maximum
// CHECK-NEXT: vortex.sum
// CHECK-NEXT: %[[AGG:.+]] = vortex.max
// CHECK-NEXT: vortex.yield %[[AGG]]
// CHECK-NEXT: }
// CHECK-NEXT: vortex.topk %[[K]] into %o

// -----

// Rule: standalone ops are barriers. The W ops before and after the softmax
// cannot merge (the merged group would both feed and consume the S op), so
// the flow keeps two kernels around the softmax, and the mean over dim 0
// (also S) splits the tail again. Values crossing kernels are yielded.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!sb = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
vortex.flow @barrier
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
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
  %p = vortex.softmax %s : !s -> !s
  %e = vortex.exp %p : !s -> !s
  %mu = vortex.mean %e {dim = 0 : i64} : !s -> !sb
  %c = vortex.add %e, %mu {beta = -1.0 : f32} : (!s, !sb) -> !s
  vortex.topk %c into %o : !s into !o
}

// CHECK-LABEL: vortex.flow @barrier
// CHECK: indexer(
// CHECK-NEXT: %[[K1:.+]] = vortex.kernel
// CHECK-NEXT: vortex.mean
// CHECK-NEXT: %[[S:.+]] = vortex.gemm
// CHECK-NEXT: vortex.yield %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[P:.+]] = vortex.softmax %[[K1]]
// CHECK-NEXT: %[[K2:.+]] = vortex.kernel
// CHECK-NEXT: %[[E:.+]] = vortex.exp %[[P]]
// CHECK-NEXT: vortex.yield %[[E]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[MU:.+]] = vortex.mean %[[K2]] {dim = 0 : i64}
// CHECK-NEXT: %[[K3:.+]] = vortex.kernel
// CHECK-NEXT: %[[C:.+]] = vortex.add %[[K2]], %[[MU]]
// CHECK-NEXT: vortex.yield %[[C]]
// CHECK-NEXT: }
// CHECK-NEXT: vortex.topk %[[K3]] into %o

// -----

// Rule: siblings fuse even without a data edge, and the save is kept in the
// kernel; the load of the field is ordered before its save.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!st = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @state
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], running = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %running: !st) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
  vortex.fill %running : !st
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %running: !st) {
  %last = vortex.load %running : !st -> !s
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %cur = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %r = vortex.add %last, %cur {alpha = 5.0e-01 : f32} : (!s, !s) -> !s
  vortex.save %r into %running : !s into !st
  vortex.topk %r into %o : !s into !o
}

// CHECK-LABEL: vortex.flow @state
// CHECK: indexer(
// CHECK-NEXT: %[[K:.+]] = vortex.kernel
// CHECK-NEXT: vortex.load %running
// CHECK-NEXT: vortex.mean
// CHECK-NEXT: vortex.gemm
// CHECK-NEXT: %[[R:.+]] = vortex.add
// CHECK-NEXT: vortex.save %[[R]] into %running
// CHECK-NEXT: vortex.yield %[[R]]
// CHECK-NEXT: }
// CHECK-NEXT: vortex.topk %[[K]] into %o

// -----

// Rule: no cycles. %a feeds the standalone softmax whose result feeds %c;
// %b is a sibling of both. %a and %c can never share a kernel (the softmax
// sits between them); %b joins the first kernel it can.

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
vortex.flow @cycle
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %a = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %b = vortex.exp %a : !s -> !s
  %p = vortex.softmax %a : !s -> !s
  %c = vortex.multiply %p, %b : (!s, !s) -> !s
  vortex.topk %c into %o : !s into !o
}

// CHECK-LABEL: vortex.flow @cycle
// CHECK: indexer(
// CHECK-NEXT: %[[K1:.+]]:2 = vortex.kernel
// CHECK-NEXT: vortex.mean
// CHECK-NEXT: %[[A:.+]] = vortex.gemm
// CHECK-NEXT: %[[B:.+]] = vortex.exp %[[A]]
// CHECK-NEXT: vortex.yield %[[A]], %[[B]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[P:.+]] = vortex.softmax %[[K1]]#0
// CHECK-NEXT: %[[K2:.+]] = vortex.kernel
// CHECK-NEXT: vortex.multiply %[[P]], %[[K1]]#1
// CHECK: vortex.topk %[[K2]] into %o

// -----

// Parameters: read directly inside the kernels of both bodies (never
// yielded); the compute_param gemm (a parameter y) is standalone and a
// barrier like any S op.

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
vortex.flow @params
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 4, topk_ratio = 0.000000e+00 : f64,
        reserved_bos = 1, reserved_eos = 1, intermediate_dtype = bf16,
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
  %p = vortex.gemm %qm, %w : (!qm, !w) -> !p4
  %pm = vortex.max %p {dim = 1 : i64} : !p4 -> !p1
  %s = vortex.max %s4 {dim = 2 : i64} : !s4 -> !s
  %t = vortex.multiply %s, %pm : (!s, !p1) -> !s
  vortex.topk %t into %o : !s into !o
}

// CHECK-LABEL: vortex.flow @params
// CHECK: cache(
// CHECK-NEXT: vortex.kernel {
// CHECK-NEXT: vortex.multiply %k, %scale
// CHECK-NEXT: vortex.mean
// CHECK-NEXT: vortex.write
// CHECK-NEXT: }
// CHECK: indexer(
// CHECK-NEXT: %[[K1:.+]]:2 = vortex.kernel
// CHECK-NEXT: %[[QM:.+]] = vortex.mean %q
// CHECK-NEXT: %[[QW:.+]] = vortex.multiply %[[QM]], %w
// CHECK-NEXT: %[[S4:.+]] = vortex.gemm %[[QW]], %centroids
// CHECK-NEXT: %[[S:.+]] = vortex.max %[[S4]] {dim = 2 : i64}
// CHECK-NEXT: vortex.yield %[[QM]], %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[P:.+]] = vortex.gemm %[[K1]]#0, %w
// CHECK-NEXT: %[[K2:.+]] = vortex.kernel
// CHECK-NEXT: %[[PM:.+]] = vortex.max %[[P]] {dim = 1 : i64}
// CHECK-NEXT: vortex.multiply %[[K1]]#1, %[[PM]]
// CHECK: vortex.topk %[[K2]] into %o
