// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// factor_score_block_sparse_attention: vortex_torch's learned factorized
// block score (FactorScore) over per-block descriptors of a plain field.
//
//   g_p      = mean_{t in p} k_t as [H*m, r] channel chunks  (cache side)
//   score(p) = sum_h max_m < Wq[l, h]^T q_h , g_p[h m + m'] > (indexer side)
//
// Python (python/vortex/flows/factor_score_block_sparse_attention.py):
//   create_cache    -> {"descriptors": (H * m, r)}       H = 8, m = 2, r = 8
//   forward_cache   : c = CMean(dim=1)(cache["k"])
//                     CReshape(-1, H * m, r)(c, cache["descriptors"])
//   forward_indexer : score = FactorScore(Wq, H, m, r)(q, cache["descriptors"])
//                     topK()(score, o)
// FactorScore traces to dialect ops with one derived parameter
// (docs/python.md "Learned ops"): score_proj P[l] [H*m*r, D]
// (P[(h m + j) r + i, e] = Wq[l, h, e, i], bound per layer), whose grouped
// GeMM (groups = H) gives each head's u_h = Wq[l, h]^T q_h once per
// landmark, multiplied with that landmark's descriptor: no head pairs.
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!g   = !vortex.vtensor<?x16x8xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!gr  = !vortex.vtensor<?x16x8xbf16, #vortex.format<ragged>>
!wp  = !vortex.vtensor<1x128x128xbf16, #vortex.format<parameter>>
!u1  = !vortex.vtensor<?x128x1xbf16, #vortex.format<batched>>
!u   = !vortex.vtensor<?x16x8xbf16, #vortex.format<batched>>
!sp  = !vortex.vtensor<?x16x8xbf16, #vortex.format<ragged>>
!s1  = !vortex.vtensor<?x16x1xbf16, #vortex.format<ragged>>
!shm = !vortex.vtensor<?x8x2xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @factor_score_block_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(descriptors = [16, 8]) params(score_proj = [128, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %descriptors: {{.*}}, %score_proj: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT:    %[[G:.+]] = vortex.reshape %[[C]] : {{.*}} -> <?x16x8xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[G]] into %descriptors
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %descriptors: {{.*}}, %score_proj: {{.*}}) {
// CHECK-NEXT:    %[[U1:.+]] = vortex.gemm %q, %score_proj {groups = 8 : i64} : {{.*}} -> !vortex.vtensor<?x128x1xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[U:.+]] = vortex.reshape %[[U1]] : {{.*}} -> <?x16x8xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[SP:.+]] = vortex.multiply %[[U]], %descriptors : {{.*}} -> !vortex.vtensor<?x16x8xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[S1:.+]] = vortex.sum %[[SP]] {dim = 2 : i64}
// CHECK-NEXT:    %[[SHM:.+]] = vortex.reshape %[[S1]] : {{.*}} -> <?x8x2xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SH:.+]] = vortex.max %[[SHM]] {dim = 2 : i64}
// CHECK-NEXT:    %[[S:.+]] = vortex.sum %[[SH]] {dim = 1 : i64}
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @factor_score_block_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(descriptors = [16, 8])
    params(score_proj = [128, 128])
cache(%k: !kv, %v: !kv, %descriptors: !g, %score_proj: !wp) {
  // c = CMean(dim=1)(cache["k"])                         [1, D]
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  // CReshape(-1, H * m, r)(c, cache["descriptors"])      [H*m, r]
  %g = vortex.reshape %c : !cr -> !gr
  vortex.write %g into %descriptors : !gr into !g
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %descriptors: !g, %score_proj: !wp) {
  // score = FactorScore(Wq, H, m, r)(q, cache["descriptors"]):
  // u_h = Wq[l, h]^T q_h once per landmark: each head's rows
  // of P[l] with q_h                                 [B, H*m*r, 1]
  %u1 = vortex.gemm %q, %score_proj {groups = 8 : i64} : (!q, !wp) -> !u1
  %u = vortex.reshape %u1 : !u1 -> !u
  // < u_h, g[h, j] > for each landmark j of head h  [S, H*m, 1]
  %sprod = vortex.multiply %u, %descriptors : (!u, !g) -> !sp
  %s1 = vortex.sum %sprod {dim = 2 : i64} : !sp -> !s1
  // max over the m landmarks, sum over the heads         [S, 1, 1]
  %shm = vortex.reshape %s1 : !s1 -> !shm
  %sh = vortex.max %shm {dim = 2 : i64} : !shm -> !sh
  %score = vortex.sum %sh {dim = 1 : i64} : !sh -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
