// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// gqa_h2o_sparse_attention: the page-level H2O score of h2o_sparse_attention
// computed per query head and reduced over the query group by a max, each
// term reduced to one scalar per block before the weighted sum. No softmax.
// w_avg = w_peak = 1.0 (the Python defaults).
//
//   avg(p)   = max_h < q_h , c_p >
//   peak(p)  = max_h sum_d max( q_{h,d} * M_{p,d} , q_{h,d} * m_{p,d} )
//   score(p) = w_avg * avg(p) + w_peak * peak(p)
//
// Python (vortex_torch/flow/algorithms.py@d3a982f, GQAH2OSparseAttention),
// paraphrased:
//   create_cache    -> {"centroids": (1, D), "max": (1, D), "min": (1, D)}
//   forward_cache   : CMean(dim=1)(cache["k"], cache["centroids"])
//                     CMax(dim=1)(cache["k"], cache["max"])
//                     CMin(dim=1)(cache["k"], cache["min"])
//   forward_indexer : s_avg  = GeMM()(q, cache["centroids"])         # [S,1,H_q]
//                     avg    = Max(dim=2)(s_avg)                     # [S,1,1]
//                     qk_max = Multiply()(q, cache["max"])           # [S,H_q,D]
//                     qk_min = Multiply()(q, cache["min"])
//                     env    = Maximum()(qk_max, qk_min)
//                     s_peak = Sum(dim=2)(env)                       # [S,H_q,1]
//                     peak   = Max(dim=1)(s_peak)                    # [S,1,1]
//                     score  = Add(alpha=w_avg, beta=w_peak)(avg, peak)
//                     topK()(score, o)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!f   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!fr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sa  = !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @gqa_h2o_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(centroids = [1, 128], max = [1, 128], min = [1, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:    %[[MX:.+]] = vortex.max %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[MX]] into %max
// CHECK-NEXT:    %[[MN:.+]] = vortex.min %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[MN]] into %min
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT:    %[[SAVG:.+]] = vortex.gemm %q, %centroids : {{.*}} -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[AVG:.+]] = vortex.max %[[SAVG]] {dim = 2 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[QKMAX:.+]] = vortex.multiply %q, %max : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[QKMIN:.+]] = vortex.multiply %q, %min : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[ENV:.+]] = vortex.maximum %[[QKMAX]], %[[QKMIN]]
// CHECK-NEXT:    %[[SPEAK:.+]] = vortex.sum %[[ENV]] {dim = 2 : i64} : {{.*}} -> <?x8x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[PEAK:.+]] = vortex.max %[[SPEAK]] {dim = 1 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[S:.+]] = vortex.add %[[AVG]], %[[PEAK]] : (
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @gqa_h2o_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128], max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !f, %max: !f, %min: !f) {
  // CMean(dim=1)(cache["k"], cache["centroids"])
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !fr
  vortex.write %c into %centroids : !fr into !f
  // CMax(dim=1)(cache["k"], cache["max"])
  %kmax = vortex.max %k {dim = 1 : i64} : !kv -> !fr
  vortex.write %kmax into %max : !fr into !f
  // CMin(dim=1)(cache["k"], cache["min"])
  %kmin = vortex.min %k {dim = 1 : i64} : !kv -> !fr
  vortex.write %kmin into %min : !fr into !f
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !f, %max: !f, %min: !f) {
  // s_avg = GeMM()(q, cache["centroids"])                [S, 1, H_q] ragged
  %s_avg = vortex.gemm %q, %centroids : (!q, !f) -> !sa
  // avg = Max(dim=2)(s_avg)                              [S, 1, 1]
  %avg = vortex.max %s_avg {dim = 2 : i64} : !sa -> !s
  // qk_max = Multiply()(q, cache["max"])                 [S, H_q, D]
  %qk_max = vortex.multiply %q, %max : (!q, !f) -> !sq
  // qk_min = Multiply()(q, cache["min"])
  %qk_min = vortex.multiply %q, %min : (!q, !f) -> !sq
  // env = Maximum()(qk_max, qk_min)
  %env = vortex.maximum %qk_max, %qk_min : (!sq, !sq) -> !sq
  // s_peak = Sum(dim=2)(env)                             [S, H_q, 1]
  %s_peak = vortex.sum %env {dim = 2 : i64} : !sq -> !sh
  // peak = Max(dim=1)(s_peak)                            [S, 1, 1]
  %peak = vortex.max %s_peak {dim = 1 : i64} : !sh -> !s
  // score = Add(alpha=w_avg, beta=w_peak)(avg, peak), w_avg = w_peak = 1.0
  %score = vortex.add %avg, %peak {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32}
      : (!s, !s) -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
