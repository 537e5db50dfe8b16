// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// learned_query_block_sparse_attention: block_sparse_attention with
// vortex_torch's learned per-layer query (LearnedQuery; its
// learned_block_sparse_mla without the MLA latent).
//
//   c_p      = mean_{t in p} k_t                             (cache side)
//   V        = scaling * sum_h Wk[l, h] (Wq[l, h]^T q_h)      (indexer side)
//   score(p) = < V , c_p >
//
// Python (python/vortex/flows/learned_query_block_sparse_attention.py):
//   create_cache    -> {"centroids": (1, head_dim)}
//   forward_cache   : CMean(dim=1)(cache["k"], cache["centroids"])
//   forward_indexer : V     = LearnedQuery(Wq, Wk, layer_lookup)(q)  # [B,1,D]
//                     score = GeMM()(V, cache["centroids"])          # [S,1,1]
//                     topK()(score, o)
// LearnedQuery traces to Reshape, GeMM with the parameter query_fold
// (F[l] = scaling [Wk[l, h] Wq[l, h]^T]_h, [D, H*D] for H = group_size 8
// query heads, bound per layer: docs/python.md "Learned ops"), Reshape.
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!w   = !vortex.vtensor<1x128x1024xbf16, #vortex.format<parameter>>
!qf  = !vortex.vtensor<?x1x1024xbf16, #vortex.format<batched>>
!vt  = !vortex.vtensor<?x128x1xbf16, #vortex.format<batched>>
!vq  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @learned_query_block_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(centroids = [1, 128]) params(query_fold = [128, 1024])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %query_fold: !vortex.vtensor<1x128x1024xbf16, #vortex.format<parameter>>) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}, %query_fold: {{.*}}) {
// CHECK-NEXT:    %[[QF:.+]] = vortex.reshape %q : {{.*}} -> <?x1x1024xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[VT:.+]] = vortex.gemm %[[QF]], %query_fold : {{.*}} -> !vortex.vtensor<?x128x1xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[V:.+]] = vortex.reshape %[[VT]] : {{.*}} -> <?x1x128xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[V]], %centroids : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @learned_query_block_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128]) params(query_fold = [128, 1024])
cache(%k: !kv, %v: !kv, %centroids: !c, %query_fold: !w) {
  // CMean(dim=1)(cache["k"], cache["centroids"])
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c, %query_fold: !w) {
  // V = LearnedQuery(Wq, Wk, layer_lookup)(q): q [B, H, D] -> [B, 1, H*D],
  %q_flat = vortex.reshape %q : !q -> !qf
  // times the fold (GeMM(x, y) = y x^T)                  [B, D, 1] batched
  %vt = vortex.gemm %q_flat, %query_fold : (!qf, !w) -> !vt
  //                                                     [B, 1, D] batched
  %query = vortex.reshape %vt : !vt -> !vq
  // score = GeMM()(V, cache["centroids"])                [S, 1, 1] ragged
  %score = vortex.gemm %query, %centroids : (!vq, !c) -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
