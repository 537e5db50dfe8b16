// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// lserve_sparse_attention: Quest envelopes at sub-block granularity
// (LSERVE_BLOCK_SIZE = 16 tokens per sub-block). With block_size 64 each
// block holds n_b = 64 / 16 = 4 sub-blocks, each with its own max/min
// envelope; a block scores as its best (query head, sub-block) pair.
//
//   M_{p,b} = max_{t in b} k_t,   m_{p,b} = min_{t in b} k_t
//   score(p) = max_{h,b} sum_d max( q_{h,d} * M_{p,b,d} , q_{h,d} * m_{p,b,d} )
//
// Python (vortex_torch/flow/algorithms.py, LServeSparseAttention; Rockyeast
// 6eaddd7), paraphrased:
//   create_cache    -> {"max": (block_size // 16, head_dim),
//                       "min": (block_size // 16, head_dim)}
//   forward_cache   : CMaxInterleave(dim=1, k=16)(cache["k"], cache["max"])
//                     CMinInterleave(dim=1, k=16)(cache["k"], cache["min"])
//   forward_indexer : s_max = Kron(dim=1)(q, cache["max"])           # [S,H_q*n_b,D]
//                     s_min = Kron(dim=1)(q, cache["min"])
//                     s     = Maximum()(s_max, s_min)
//                     score = Sum(dim=2)(s)                          # [S,H_q*n_b,1]
//                     aggr  = Max(dim=1)(score)                      # [S,1,1]
//                     topK()(aggr, o)
//
// Knobs: the reference knobs except block_size = page_size = 64 (so that
// there are 4 sub-blocks); head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!env = !vortex.vtensor<?x4x128xbf16, #vortex.format<paged>>
!er  = !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x32x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x32x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @lserve_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 64, page_size = 64, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(max = [4, 128], min = [4, 128])
// CHECK-NEXT:  cache(%k: !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>, %v: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT:    %[[MX:.+]] = vortex.max_interleave %k {dim = 1 : i64, factor = 16 : i64} : <?x64x128xbf16, #vortex.format<paged>> -> <?x4x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[MX]] into %max
// CHECK-NEXT:    %[[MN:.+]] = vortex.min_interleave %k {dim = 1 : i64, factor = 16 : i64} : <?x64x128xbf16, #vortex.format<paged>> -> <?x4x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[MN]] into %min
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %max: {{.*}}, %min: {{.*}}) {
// CHECK-NEXT:    %[[SMAX:.+]] = vortex.kron %q, %max {dims = array<i64: 1>} : {{.*}} -> !vortex.vtensor<?x32x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SMIN:.+]] = vortex.kron %q, %min {dims = array<i64: 1>} : {{.*}} -> !vortex.vtensor<?x32x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[E:.+]] = vortex.maximum %[[SMAX]], %[[SMIN]] : {{.*}} -> !vortex.vtensor<?x32x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SUM:.+]] = vortex.sum %[[E]] {dim = 2 : i64} : {{.*}} -> <?x32x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[A:.+]] = vortex.max %[[SUM]] {dim = 1 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[A]] into %o
// CHECK-NEXT:  }
vortex.flow @lserve_sparse_attention
    config = #vortex.config<block_size = 64, page_size = 64, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(max = [4, 128], min = [4, 128])
cache(%k: !kv, %v: !kv, %max: !env, %min: !env) {
  // CMaxInterleave(dim=1, k=16)(cache["k"], cache["max"])  [1,64,D] -> [1,4,D]
  %kmax = vortex.max_interleave %k {dim = 1 : i64, factor = 16 : i64} : !kv -> !er
  vortex.write %kmax into %max : !er into !env
  // CMinInterleave(dim=1, k=16)(cache["k"], cache["min"])
  %kmin = vortex.min_interleave %k {dim = 1 : i64, factor = 16 : i64} : !kv -> !er
  vortex.write %kmin into %min : !er into !env
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %max: !env, %min: !env) {
  // s_max = Kron(dim=1)(q, cache["max"])                 [S, 8*4, D] ragged
  %s_max = vortex.kron %q, %max {dims = array<i64: 1>} : (!q, !env) -> !sq
  // s_min = Kron(dim=1)(q, cache["min"])
  %s_min = vortex.kron %q, %min {dims = array<i64: 1>} : (!q, !env) -> !sq
  // s = Maximum()(s_max, s_min)
  %s = vortex.maximum %s_max, %s_min : (!sq, !sq) -> !sq
  // score = Sum(dim=2)(s)                                [S, 32, 1]
  %score = vortex.sum %s {dim = 2 : i64} : !sq -> !sh
  // aggr_score = Max(dim=1)(score)                       [S, 1, 1]
  %aggr = vortex.max %score {dim = 1 : i64} : !sh -> !s
  // topK()(aggr_score, o)
  vortex.topk %aggr into %o : !s into !o
}
