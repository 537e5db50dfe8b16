// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// masked_quest_sparse_attention: the Quest envelope bound with the first
// MASK_END = 8 feature channels dropped before the channel sum (a
// position-only mask against high-magnitude "sink" channels).
//
//   w_d = 0 for d < 8, 1 otherwise
//   score(p) = max_h sum_d w_d * max( q_{h,d} * M_{p,d} , q_{h,d} * m_{p,d} )
//
// Python (vortex_torch/flow/algorithms.py, MaskedQuestSparseAttention;
// Rockyeast 6eaddd7), paraphrased:
//   create_cache    -> {"max": (1, head_dim), "min": (1, head_dim)}
//   forward_cache   : CMax(dim=1)(cache["k"], cache["max"])
//                     CMin(dim=1)(cache["k"], cache["min"])
//   forward_indexer : s_max = Multiply()(q, cache["max"])            # [S,H_q,D]
//                     s_min = Multiply()(q, cache["min"])
//                     s     = Maximum()(s_max, s_min)
//                     mask  = MaskSlice(start=0, end=8, dim=2,
//                                       alpha=0.0, beta=1.0)(s)      # [S,H_q,D]
//                     masked_s = Multiply()(s, mask)
//                     score = Sum(dim=2)(masked_s)                   # [S,H_q,1]
//                     aggr  = Max(dim=1)(score)                      # [S,1,1]
//                     topK()(aggr, o)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!er  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @masked_quest_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(max = [1, 128], min = [1, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT:    %[[MX:.+]] = vortex.max %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[MX]] into %max
// CHECK-NEXT:    %[[MN:.+]] = vortex.min %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[MN]] into %min
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT:    %[[SMAX:.+]] = vortex.multiply %q, %max : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SMIN:.+]] = vortex.multiply %q, %min : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[E:.+]] = vortex.maximum %[[SMAX]], %[[SMIN]]
// CHECK-NEXT:    %[[MASK:.+]] = vortex.mask_slice %[[E]] {alpha = 0.000000e+00 : f32, beta = 1.000000e+00 : f32, dim = 2 : i64, end = 8 : i64, start = 0 : i64} : <?x8x128xbf16, #vortex.format<ragged>> -> <?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[MS:.+]] = vortex.multiply %[[E]], %[[MASK]] : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SUM:.+]] = vortex.sum %[[MS]] {dim = 2 : i64} : {{.*}} -> <?x8x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[A:.+]] = vortex.max %[[SUM]] {dim = 1 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[A]] into %o
// CHECK-NEXT:  }
vortex.flow @masked_quest_sparse_attention
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
  // mask = MaskSlice(start=0, end=8, dim=2, alpha=0.0, beta=1.0)(s)
  %mask = vortex.mask_slice %s {start = 0 : i64, end = 8 : i64, dim = 2 : i64,
                                alpha = 0.000000e+00 : f32, beta = 1.000000e+00 : f32}
      : !sq -> !sq
  // masked_s = Multiply()(s, mask)
  %masked_s = vortex.multiply %s, %mask : (!sq, !sq) -> !sq
  // score = Sum(dim=2)(masked_s)                         [S, H_q, 1]
  %score = vortex.sum %masked_s {dim = 2 : i64} : !sq -> !sh
  // aggr_score = Max(dim=1)(score)                       [S, 1, 1]
  %aggr = vortex.max %score {dim = 1 : i64} : !sh -> !s
  // topK()(aggr_score, o)
  vortex.topk %aggr into %o : !s into !o
}
