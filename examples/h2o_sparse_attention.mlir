// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// h2o_sparse_attention: page-level approximation of the H2O heavy-hitter
// criterion (arXiv 2306.14048). A block is ranked by its average relevance
// (query . key centroid) plus a Quest-style upper bound on its peak
// relevance, computed with the head-averaged query. w_avg = w_peak = 1.0
// (the Python defaults).
//
//   q'       = mean_h q_h
//   s_avg(p) = < q' , c_p >
//   s_pk(p)  = sum_d max( q'_d * M_{p,d} , q'_d * m_{p,d} )
//   score(p) = w_avg * s_avg(p) + w_peak * s_pk(p)
//
// Python (vortex_torch/flow/algorithms.py@d3a982f, H2OSparseAttention; a
// Gen-1 flow), paraphrased:
//   create_cache    -> {"centroids": (1, D), "max": (1, D), "min": (1, D)}
//   forward_cache   : CMean(dim=1)(cache["k"], cache["centroids"])
//                     CMax(dim=1)(cache["k"], cache["max"])
//                     CMin(dim=1)(cache["k"], cache["min"])
//   forward_indexer : q_mean = q.mean(dim=1, keepdim=True)   # native torch -> vortex.mean
//                     s_avg  = GeMV()(q_mean, cache["centroids"])    # [S,1,1]
//                     qk_max = Multiply()(q_mean, cache["max"])      # [S,1,D]
//                     qk_min = Multiply()(q_mean, cache["min"])
//                     env    = Maximum()(qk_max, qk_min)
//                     s_peak = Sum(dim=2)(env)                       # [S,1,1]
//                     score  = Add(alpha=w_avg, beta=w_peak)(s_avg, s_peak)
//                     topK()(score, o)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!f   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!fr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @h2o_sparse_attention
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
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : {{.*}} -> <?x1x128xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[AVG:.+]] = vortex.gemv %[[QM]], %centroids : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[QKMAX:.+]] = vortex.multiply %[[QM]], %max : {{.*}} -> !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[QKMIN:.+]] = vortex.multiply %[[QM]], %min : {{.*}} -> !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[ENV:.+]] = vortex.maximum %[[QKMAX]], %[[QKMIN]]
// CHECK-NEXT:    %[[PEAK:.+]] = vortex.sum %[[ENV]] {dim = 2 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[S:.+]] = vortex.add %[[AVG]], %[[PEAK]] : (
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @h2o_sparse_attention
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
  // q_mean = q.mean(dim=1, keepdim=True)                 [B, 1, D] batched
  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // s_avg = GeMV()(q_mean, cache["centroids"])           [S, 1, 1] ragged
  %s_avg = vortex.gemv %q_mean, %centroids : (!qm, !f) -> !s
  // qk_max = Multiply()(q_mean, cache["max"])            [S, 1, D] ragged
  %qk_max = vortex.multiply %q_mean, %max : (!qm, !f) -> !fr
  // qk_min = Multiply()(q_mean, cache["min"])
  %qk_min = vortex.multiply %q_mean, %min : (!qm, !f) -> !fr
  // env = Maximum()(qk_max, qk_min)
  %env = vortex.maximum %qk_max, %qk_min : (!fr, !fr) -> !fr
  // s_peak = Sum(dim=2)(env)                             [S, 1, 1]
  %s_peak = vortex.sum %env {dim = 2 : i64} : !fr -> !s
  // score = Add(alpha=w_avg, beta=w_peak)(s_avg, s_peak), w_avg = w_peak = 1.0
  %score = vortex.add %s_avg, %s_peak {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32}
      : (!s, !s) -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
