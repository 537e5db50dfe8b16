// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// gqa_quest_sparse_attention: Quest query-aware envelope bound
// (arXiv 2406.10774), max over the query group.
//
//   M_p = max_{t in p} k_t,   m_p = min_{t in p} k_t        (per channel)
//   score(p) = max_h sum_d max( q_{h,d} * M_{p,d} , q_{h,d} * m_{p,d} )
//
// Python (vortex_torch/flow/algorithms.py, GQAQuestSparseAttention; identical
// in Infini d3a982f and Rockyeast 6eaddd7), paraphrased:
//   create_cache    -> {"max": (1, head_dim), "min": (1, head_dim)}
//   forward_cache   : CMax(dim=1)(cache["k"], cache["max"])
//                     CMin(dim=1)(cache["k"], cache["min"])
//   forward_indexer : s_max = Multiply()(q, cache["max"])            # [S,H_q,D]
//                     s_min = Multiply()(q, cache["min"])
//                     s     = Maximum()(s_max, s_min)
//                     score = Sum(dim=2)(s)                          # [S,H_q,1]
//                     aggr  = Max(dim=1)(score)                      # [S,1,1]
//                     topK()(aggr, o)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.
// (examples/gqa_quest_sparse_attention_g5.mlir is the same flow at G = 5.)

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @gqa_quest_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(max = [1, 128], min = [1, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT:    %[[MX:.+]] = vortex.max %k {dim = 1 : i64} : {{.*}} -> <?x1x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[MX]] into %max
// CHECK-NEXT:    %[[MN:.+]] = vortex.min %k {dim = 1 : i64} : {{.*}} -> <?x1x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[MN]] into %min
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT:    %[[SMAX:.+]] = vortex.multiply %q, %max : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SMIN:.+]] = vortex.multiply %q, %min : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[E:.+]] = vortex.maximum %[[SMAX]], %[[SMIN]] : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SUM:.+]] = vortex.sum %[[E]] {dim = 2 : i64} : {{.*}} -> <?x8x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[A:.+]] = vortex.max %[[SUM]] {dim = 1 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[A]] into %o
// CHECK-NEXT:  }
vortex.flow @gqa_quest_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [1, 128], min = [1, 128])
cache(%k: !kv, %v: !kv, %max: !env, %min: !env) {
  // CMax(dim=1)(cache["k"], cache["max"])
  %kmax = vortex.max %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmax into %max : !er into !env
  // CMin(dim=1)(cache["k"], cache["min"])
  %kmin = vortex.min %k {dim = 1 : i64} : !kv -> !er
  vortex.write %kmin into %min : !er into !env
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !env, %min: !env) {
  // s_max = Multiply()(q, cache["max"])                  [S, H_q, D] ragged
  %s_max = vortex.multiply %q, %max : (!q, !env) -> !sq
  // s_min = Multiply()(q, cache["min"])
  %s_min = vortex.multiply %q, %min : (!q, !env) -> !sq
  // s = Maximum()(s_max, s_min)
  %s = vortex.maximum %s_max, %s_min : (!sq, !sq) -> !sq
  // score = Sum(dim=2)(s)                                [S, H_q, 1]
  %score = vortex.sum %s {dim = 2 : i64} : !sq -> !sh
  // aggr_score = Max(dim=1)(score)                       [S, 1, 1]
  %aggr = vortex.max %score {dim = 1 : i64} : !sh -> !s
  // topK()(aggr_score, o)
  vortex.topk %aggr into %o : !s into !o
}
