// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// centered_block_sparse_attention: centroid routing with the per-row mean
// score subtracted before the selection (a block competes by how far it is
// above its row's average). topK is invariant to this per-row shift, so the
// selection equals a head-averaged centroid score; the flow still ships it,
// and it is the suite's only cross-block (dim = 0) reduction.
//
//   s_p      = mean_h < q_h , c_p >
//   score(p) = s_p - mean_{p' in [bos, n - eos)} s_{p'}
//
// Python (vortex_torch/flow/algorithms.py, CenteredBlockSparseAttention;
// Rockyeast 6eaddd7), paraphrased:
//   create_cache    -> {"centroids": (1, head_dim)}
//   forward_cache   : CMean(dim=1)(cache["k"], cache["centroids"])
//   forward_indexer : s        = Multiply()(q, cache["centroids"])   # [S,H_q,D]
//                     score_d  = Sum(dim=2)(s)                       # [S,H_q,1]
//                     score    = Mean(dim=1)(score_d)                # [S,1,1]
//                     mean_seq = Mean(dim=0)(score)   # standalone, ragged -> batched
//                     centered = Add(alpha=1.0, beta=-1.0)(score, mean_seq)
//                     topK()(centered, o)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sq  = !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x8x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!sb  = !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>

// CHECK-LABEL: vortex.flow @centered_block_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(centroids = [1, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64}
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[S:.+]] = vortex.multiply %q, %centroids : {{.*}} -> !vortex.vtensor<?x8x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SD:.+]] = vortex.sum %[[S]] {dim = 2 : i64} : {{.*}} -> <?x8x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[SC:.+]] = vortex.mean %[[SD]] {dim = 1 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[MS:.+]] = vortex.mean %[[SC]] {dim = 0 : i64} : <?x1x1xbf16, #vortex.format<ragged>> -> <?x1x1xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[CE:.+]] = vortex.add %[[SC]], %[[MS]] {beta = -1.000000e+00 : f32} : (!vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>, !vortex.vtensor<?x1x1xbf16, #vortex.format<batched>>) -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[CE]] into %o
// CHECK-NEXT:  }
vortex.flow @centered_block_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  // CMean(dim=1)(cache["k"], cache["centroids"])
  %c = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  // s = Multiply()(q, cache["centroids"])                [S, H_q, D] ragged
  %s = vortex.multiply %q, %centroids : (!q, !c) -> !sq
  // score_d = Sum(dim=2)(s)                              [S, H_q, 1]
  %score_d = vortex.sum %s {dim = 2 : i64} : !sq -> !sh
  // score = Mean(dim=1)(score_d)                         [S, 1, 1]
  %score = vortex.mean %score_d {dim = 1 : i64} : !sh -> !s
  // mean_seq = Mean(dim=0)(score)       standalone; [B*H_kv, 1, 1] batched
  %mean_seq = vortex.mean %score {dim = 0 : i64} : !s -> !sb
  // centered = Add(alpha=1.0, beta=-1.0)(score, mean_seq)   (ragged, batched) -> ragged
  %centered = vortex.add %score, %mean_seq {alpha = 1.000000e+00 : f32, beta = -1.000000e+00 : f32}
      : (!s, !sb) -> !s
  // topK()(centered, o)
  vortex.topk %centered into %o : !s into !o
}
