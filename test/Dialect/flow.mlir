// RUN: vortex-opt %s | vortex-opt | FileCheck %s
// RUN: vortex-opt %s --mlir-print-op-generic | vortex-opt | FileCheck %s

// Whole flows: the custom vortex.flow syntax, its region signatures, and the
// block-argument names (q, o, k, v, then the fields, then the parameters)
// the printer gives them. A flow without parameters prints no params(...).

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cs  = !vortex.vtensor<?x1x128xbf16, #vortex.format<slotted>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!f1  = !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!sl  = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>

//===----------------------------------------------------------------------===//
// Minimal: no fields, empty cache body, score k directly.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @minimal
// CHECK-SAME: config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16> fields()
// CHECK-NEXT: cache(%k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>, %v: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>) {
// CHECK-NEXT: }
// CHECK-NEXT: indexer(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>, %k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>, %v: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>) {
// CHECK-NEXT: %[[QM:.*]] = vortex.mean %q {dim = 1 : i64}
// CHECK-NEXT: %[[KM:.*]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT: %[[S:.*]] = vortex.gemm %[[QM]], %[[KM]]
// CHECK-NEXT: vortex.topk %[[S]] into %o
// CHECK-NEXT: }
vortex.flow @minimal
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields()
cache(%k: !kv, %v: !kv) {
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %km = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  %s = vortex.gemm %qm, %km : (!qm, !cr) -> !s
  vortex.topk %s into %o : !s into !o
}

//===----------------------------------------------------------------------===//
// Quest-style: three fields written on the cache side.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @quest
// CHECK-SAME: fields(centroids = [1, 128], max = [1, 128], min = [1, 128]){{$}}
// CHECK-NEXT: cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT: %[[M:.*]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT: vortex.write %[[M]] into %centroids
// CHECK-NEXT: %[[MX:.*]] = vortex.max %k {dim = 1 : i64}
// CHECK-NEXT: vortex.write %[[MX]] into %max
// CHECK-NEXT: %[[MN:.*]] = vortex.min %k {dim = 1 : i64}
// CHECK-NEXT: vortex.write %[[MN]] into %min
// CHECK-NEXT: }
// CHECK-NEXT: indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT: vortex.multiply %q, %max
// CHECK-NEXT: vortex.multiply %q, %min
// CHECK-NEXT: vortex.maximum
// CHECK-NEXT: vortex.sum {{.*}} {dim = 2 : i64}
// CHECK-NEXT: vortex.max {{.*}} {dim = 1 : i64}
// CHECK-NEXT: vortex.gemm %{{.*}}, %centroids
// CHECK-NEXT: vortex.max {{.*}} {dim = 2 : i64}
// CHECK-NEXT: vortex.add {{.*}} {alpha = 5.000000e-01 : f32, beta = 5.000000e-01 : f32}
// CHECK-NEXT: vortex.topk
// CHECK-NEXT: }
vortex.flow @quest
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c, %max: !c, %min: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
  %mx = vortex.max %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %mx into %max : !cr into !c
  %mn = vortex.min %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %mn into %min : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %max: !c, %min: !c) {
  %a = vortex.multiply %q, %max : (!q, !c)
      -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  %b = vortex.multiply %q, %min : (!q, !c)
      -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  %e = vortex.maximum %a, %b
      : (!vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>,
         !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>)
      -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
  %h = vortex.sum %e {dim = 2 : i64}
      : !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
      -> !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
  %s0 = vortex.max %h {dim = 1 : i64}
      : !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>> -> !s
  %g = vortex.gemm %q, %centroids : (!q, !c)
      -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  %s1 = vortex.max %g {dim = 2 : i64}
      : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !s
  %s = vortex.add %s0, %s1 {alpha = 0.5 : f32, beta = 0.5 : f32} : (!s, !s) -> !s
  vortex.topk %s into %o : !s into !o
}

//===----------------------------------------------------------------------===//
// State: a field zeroed on the cache side, loaded and saved by the indexer;
// a second field only saved by the indexer; a quoted field name.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @stateful
// CHECK-SAME: fields(centroids = [1, 128], running = [1, 1], "last score" = [1, 1])
// CHECK-NEXT: cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %running: {{.*}}, %last_score: {{.*}}) {
// CHECK-NEXT: vortex.mean %k
// CHECK-NEXT: vortex.write %{{.*}} into %centroids
// CHECK-NEXT: vortex.fill %running : <?x1x1xbf16, #vortex.format<paged>>
// CHECK-NEXT: }
// CHECK-NEXT: indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %running: {{.*}}, %last_score: {{.*}}) {
// CHECK-NEXT: %[[QM:.*]] = vortex.mean %q {dim = 1 : i64}
// CHECK-NEXT: %[[S:.*]] = vortex.gemm %[[QM]], %centroids
// CHECK-NEXT: %[[P:.*]] = vortex.load %running : <?x1x1xbf16, #vortex.format<paged>> -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT: %[[L:.*]] = vortex.load %last_score
// CHECK-NEXT: %[[R:.*]] = vortex.add %[[S]], %[[P]] {alpha = 2.500000e-01 : f32, beta = 7.500000e-01 : f32}
// CHECK-NEXT: %[[R2:.*]] = vortex.maximum %[[R]], %[[L]]
// CHECK-NEXT: vortex.save %[[R]] into %running : <?x1x1xbf16, #vortex.format<ragged>> into <?x1x1xbf16, #vortex.format<paged>>
// CHECK-NEXT: vortex.save %[[S]] into %last_score
// CHECK-NEXT: vortex.topk %[[R2]] into %o
// CHECK-NEXT: } attributes {vortex.radix_cache = false}
vortex.flow @stateful
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], running = [1, 1], "last score" = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %running: !f1, %last: !f1) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
  vortex.fill %running {value = 0.0 : f32} : !f1
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %running: !f1, %last: !f1) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  %prev = vortex.load %running : !f1 -> !s
  %l = vortex.load %last : !f1 -> !s
  %r = vortex.add %s, %prev {alpha = 0.25 : f32, beta = 0.75 : f32} : (!s, !s) -> !s
  %r2 = vortex.maximum %r, %l : (!s, !s) -> !s
  vortex.save %r into %running : !s into !f1
  vortex.save %s into %last : !s into !f1
  vortex.topk %r2 into %o : !s into !o
} attributes {vortex.radix_cache = false}

//===----------------------------------------------------------------------===//
// Approximate selection, with softmax and a dim-0 reduction (S ops).
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @approx
// CHECK: indexer(
// CHECK: vortex.softmax %{{.*}} {scale = 1.250000e-01 : f32}
// CHECK: vortex.mean %{{.*}} {dim = 0 : i64} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<batched>>
// CHECK: vortex.add
// CHECK: vortex.approx_topk %{{.*}} into %o {tolerate_ratio = 1.000000e-01 : f32}
vortex.flow @approx
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
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
  %p = vortex.softmax %s {scale = 0.125 : f32} : !s -> !s
  %mu = vortex.mean %p {dim = 0 : i64}
      : !s -> !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
  %c = vortex.add %p, %mu {beta = -1.0 : f32}
      : (!s, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !s
  vortex.approx_topk %c into %o {tolerate_ratio = 0.1 : f32} : !s into !o
}

//===----------------------------------------------------------------------===//
// trtllm backend: two TopK(k) selections merged by Union.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @trtllm
// CHECK: indexer(
// CHECK: %[[BT0:.*]], %[[SL0:.*]] = vortex.trtllm_topk %{{.*}} {k = 32 : i64}
// CHECK: %[[BT1:.*]], %[[SL1:.*]] = vortex.trtllm_topk %{{.*}} {k = 16 : i64}
// CHECK-NEXT: vortex.union(%[[BT0]], %[[SL0]]), (%[[BT1]], %[[SL1]]) into %o : <?x1x1xi32, #vortex.format<ragged>>, <?x1x1xi32, #vortex.format<batched>> into <?x1x1xi32, #vortex.format<ragged>>
// CHECK-NEXT: }
vortex.flow @trtllm
    config = #vortex.config<block_size = 16, page_size = 64, head_dim = 128,
        group_size = 8, topk_val = 48, topk_ratio = 0.0,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %g = vortex.gemm %q, %centroids : (!q, !c)
      -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
  %smax = vortex.max %g {dim = 2 : i64}
      : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !s
  %smean = vortex.mean %g {dim = 2 : i64}
      : !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>> -> !s
  %bt0, %sl0 = vortex.trtllm_topk %smax {k = 32 : i64} : !s -> !o, !sl
  %bt1, %sl1 = vortex.trtllm_topk %smean {k = 16 : i64} : !s -> !o, !sl
  vortex.union (%bt0, %sl0), (%bt1, %sl1) into %o : !o, !sl into !o
}

//===----------------------------------------------------------------------===//
// GQA group size 5 (q is [?, 5, 128], padded to 8 by later passes), with
// f32 intermediates over an fp8 KV cache.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @group5
// CHECK-SAME: group_size = 5
// CHECK-SAME: intermediate_dtype = f32, kv_dtype = f8E4M3FN
// CHECK-NEXT: cache(%k: !vortex.vtensor<?x16x128xf8E4M3FN, #vortex.format<paged>>, %v: !vortex.vtensor<?x16x128xf8E4M3FN, #vortex.format<paged>>, %centroids: !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>)
// CHECK: indexer(%q: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>, %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
// CHECK: vortex.gemm %q, %centroids : (!vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>, !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>) -> !vortex.vtensor<?x1x5xf32, #vortex.format<ragged>>
vortex.flow @group5
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 5, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = f32,
        kv_dtype = f8E4M3FN>
    fields(centroids = [1, 128])
cache(%k: !vortex.vtensor<?x16x128xf8E4M3FN, #vortex.format<paged>>,
      %v: !vortex.vtensor<?x16x128xf8E4M3FN, #vortex.format<paged>>,
      %centroids: !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>) {
  %m = vortex.mean %k {dim = 1 : i64}
      : !vortex.vtensor<?x16x128xf8E4M3FN, #vortex.format<paged>>
      -> !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>
  vortex.write %m into %centroids
      : !vortex.vtensor<?x1x128xf32, #vortex.format<ragged>>
      into !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>
}
indexer(%q: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>, %o: !o,
        %k: !vortex.vtensor<?x16x128xf8E4M3FN, #vortex.format<paged>>,
        %v: !vortex.vtensor<?x16x128xf8E4M3FN, #vortex.format<paged>>,
        %centroids: !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>) {
  %g = vortex.gemm %q, %centroids
      : (!vortex.vtensor<?x5x128xbf16, #vortex.format<batched>>,
         !vortex.vtensor<?x1x128xf32, #vortex.format<paged>>)
      -> !vortex.vtensor<?x1x5xf32, #vortex.format<ragged>>
  %s = vortex.max %g {dim = 2 : i64}
      : !vortex.vtensor<?x1x5xf32, #vortex.format<ragged>>
      -> !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>>
  vortex.topk %s into %o : !vortex.vtensor<?x1x1xf32, #vortex.format<ragged>> into !o
}

//===----------------------------------------------------------------------===//
// Slotted fields on the cache side: written there through slot_of_ptr,
// never used by the indexer (whose argument for them is paged).
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @slotted
// CHECK-NEXT: cache(%k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>, %v: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>, %centroids: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, %stage: !vortex.vtensor<?x1x128xbf16, #vortex.format<slotted>>, %stamp: !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>) {
// CHECK-NEXT: %[[M:.*]] = vortex.mean_interleave %k {dim = 1 : i64, factor = 16 : i64}
// CHECK-NEXT: vortex.write %[[M]] into %centroids : <?x1x128xbf16, #vortex.format<ragged>> into <?x1x128xbf16, #vortex.format<paged>>
// CHECK-NEXT: vortex.write %[[M]] into %stage : <?x1x128xbf16, #vortex.format<ragged>> into <?x1x128xbf16, #vortex.format<slotted>>
// CHECK-NEXT: vortex.fill %stamp {value = 1.000000e+00 : f32} : <?x1x1xbf16, #vortex.format<slotted>>
// CHECK-NEXT: }
// CHECK-NEXT: indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, %stage: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, %stamp: !vortex.vtensor<?x1x1xbf16, #vortex.format<paged>>) {
vortex.flow @slotted
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], stage = [1, 128], stamp = [1, 1])
cache(%k: !kv, %v: !kv, %centroids: !c, %stage: !cs,
      %stamp: !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>) {
  %m = vortex.mean_interleave %k {dim = 1 : i64, factor = 16 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
  vortex.write %m into %stage : !cr into !cs
  vortex.fill %stamp {value = 1.0 : f32} : !vortex.vtensor<?x1x1xbf16, #vortex.format<slotted>>
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %stage: !c, %stamp: !f1) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}

//===----------------------------------------------------------------------===//
// After the padding pass: explicitly padded region arguments and
// intermediates still match the config.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @explicit_padding
// CHECK: indexer(%q: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>, %o: {{.*}}, %k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>, padded = [16, 128]>, %v: {{.*}}, %centroids: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>, padded = [1, 128]>)
// CHECK-NEXT: vortex.gemm %q, %centroids : (!vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>, padded = [1, 128]>) -> !vortex.vtensor<?x1x5xbf16, #vortex.format<ragged>, padded = [1, 8]>
vortex.flow @explicit_padding
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 5, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>,
        %o: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>, padded = [1, 1]>,
        %k: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>, padded = [16, 128]>,
        %v: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>, padded = [16, 128]>,
        %centroids: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>, padded = [1, 128]>) {
  %g = vortex.gemm %q, %centroids
      : (!vortex.vtensor<?x5x128xbf16, #vortex.format<batched>, padded = [8, 128]>,
         !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>, padded = [1, 128]>)
      -> !vortex.vtensor<?x1x5xbf16, #vortex.format<ragged>, padded = [1, 8]>
  %s = vortex.max %g {dim = 2 : i64}
      : !vortex.vtensor<?x1x5xbf16, #vortex.format<ragged>, padded = [1, 8]>
      -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>, padded = [1, 1]>
  vortex.topk %s into %o
      : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>, padded = [1, 1]>
      into !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>, padded = [1, 1]>
}

//===----------------------------------------------------------------------===//
// Parameters: learned, batch-shared [1, r, c] weights after the fields in
// both bodies, named after their declaration.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: vortex.flow @learned_query
// CHECK-SAME: fields(centroids = [1, 128]) params(w = [4, 128], scale = [1, 128]){{$}}
// CHECK-NEXT: cache(%k: {{.*}}, %v: {{.*}}, %centroids: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>, %w: !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>, %scale: !vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>) {
// CHECK-NEXT: %[[KS:.*]] = vortex.multiply %k, %scale : (!vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>, !vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT: %[[M:.*]] = vortex.mean %[[KS]] {dim = 1 : i64}
// CHECK-NEXT: vortex.write %[[M]] into %centroids
// CHECK-NEXT: }
// CHECK-NEXT: indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %w: !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>, %scale: !vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>) {
// CHECK-NEXT: %[[QM:.*]] = vortex.mean %q {dim = 1 : i64}
// CHECK-NEXT: %[[QW:.*]] = vortex.multiply %[[QM]], %w : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>) -> !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
// CHECK-NEXT: %[[S4:.*]] = vortex.gemm %[[QW]], %centroids
// CHECK-NEXT: %[[G:.*]] = vortex.gemm %w, %centroids : (!vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>, !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) -> !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>>
// CHECK-NEXT: %[[A:.*]] = vortex.add %[[S4]], %[[G]]
// CHECK-NEXT: %[[S:.*]] = vortex.max %[[A]] {dim = 2 : i64}
// CHECK-NEXT: vortex.topk %[[S]] into %o
// CHECK-NEXT: }
!w   = !vortex.vtensor<1x4x128xbf16, #vortex.format<parameter>>
!sc  = !vortex.vtensor<1x1x128xbf16, #vortex.format<parameter>>
!kvr = !vortex.vtensor<?x16x128xbf16, #vortex.format<ragged>>
!qw  = !vortex.vtensor<?x4x128xbf16, #vortex.format<batched>>
!s4  = !vortex.vtensor<?x1x4xbf16, #vortex.format<ragged>>
vortex.flow @learned_query
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128]) params(w = [4, 128], scale = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c, %w: !w, %scale: !sc) {
  %ks = vortex.multiply %k, %scale : (!kv, !sc) -> !kvr
  %m = vortex.mean %ks {dim = 1 : i64} : !kvr -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %w: !w, %scale: !sc) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %qw = vortex.multiply %qm, %w : (!qm, !w) -> !qw
  %s4 = vortex.gemm %qw, %centroids : (!qw, !c) -> !s4
  %g = vortex.gemm %w, %centroids : (!w, !c) -> !s4
  %a = vortex.add %s4, %g : (!s4, !s4) -> !s4
  %s = vortex.max %a {dim = 2 : i64} : !s4 -> !s
  vortex.topk %s into %o : !s into !o
}

// No fields, a parameter whose name is not a bare identifier, its padded
// form (after vortex-pad), and the compute_param gemm (standalone).
// CHECK-LABEL: vortex.flow @params_only
// CHECK-SAME: fields() params("learned w" = [5, 128]){{$}}
// CHECK-NEXT: cache(%k: {{.*}}, %v: {{.*}}, %learned_w: !vortex.vtensor<1x5x128xbf16, #vortex.format<parameter>, padded = [8, 128]>) {
// CHECK-NEXT: }
// CHECK-NEXT: indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %learned_w: !vortex.vtensor<1x5x128xbf16, #vortex.format<parameter>, padded = [8, 128]>) {
// CHECK-NEXT: %[[QM:.*]] = vortex.mean %q
// CHECK-NEXT: %[[P:.*]] = vortex.gemm %[[QM]], %learned_w : (!vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>, !vortex.vtensor<1x5x128xbf16, #vortex.format<parameter>, padded = [8, 128]>) -> !vortex.vtensor<?x5x1xbf16, #vortex.format<batched>, padded = [8, 1]>
!wp  = !vortex.vtensor<1x5x128xbf16, #vortex.format<parameter>, padded = [8, 128]>
!p5  = !vortex.vtensor<?x5x1xbf16, #vortex.format<batched>, padded = [8, 1]>
!p1  = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>
vortex.flow @params_only
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields() params("learned w" = [5, 128])
cache(%k: !kv, %v: !kv, %w: !wp) {
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %w: !wp) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %p = vortex.gemm %qm, %w : (!qm, !wp) -> !p5
  %pm = vortex.max %p {dim = 1 : i64} : !p5 -> !p1
  %km = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  %s = vortex.gemv %qm, %km : (!qm, !cr) -> !s
  %t = vortex.multiply %s, %pm : (!s, !p1) -> !s
  vortex.topk %t into %o : !s into !o
}

// A write-only field (vortex_torch accepts one: a flow may write a dummy
// field so its cache program has an output): the cache writes it, the
// indexer never reads it.
// CHECK-LABEL: vortex.flow @write_only
// CHECK-SAME: fields(dummy = [1, 1])
// CHECK: vortex.write %{{.*}} into %dummy
// CHECK: indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %dummy: {{.*}}) {
// CHECK-NOT: %dummy
// CHECK: vortex.topk
vortex.flow @write_only
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(dummy = [1, 1])
cache(%k: !kv, %v: !kv, %d: !f1) {
  %km = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  %x = vortex.mean %km {dim = 2 : i64} : !cr -> !s
  vortex.write %x into %d : !s into !f1
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %d: !f1) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %km = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  %s = vortex.gemv %qm, %km : (!qm, !cr) -> !s
  vortex.topk %s into %o : !s into !o
}
