// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// gqa_block_sparse_attention: per-head centroid scores, softmax over the
// blocks of the row, max over the query group (GQA block sparsity,
// arXiv 2502.11089).
//
//   c_p      = mean_{t in p} k_t
//   a_{p,h}  = softmax_p( tau * < q_h , c_p > ),   tau = 0.09 (~ 1/sqrt(128))
//   score(p) = max_h a_{p,h}
//
// Python (vortex_torch/flow/algorithms.py, GQABlockSparseAttention; compiler-
// era form, Rockyeast 6eaddd7), paraphrased:
//   create_cache    -> {"centroids": (1, head_dim)}
//   forward_cache   : CMean(dim=1)(cache["k"], cache["centroids"])
//   forward_indexer : score = GeMM()(q, cache["centroids"])          # [S,1,H_q]
//                     normalized = Softmax(dim=0, scale=0.09)(score)
//                     aggr = Max(dim=2)(normalized)                  # [S,1,1]
//                     topK()(aggr, o)
// (Gen-1, Infini d3a982f, called the softmax "in place" and fed `score` to
// Max; the softmax result is what the flow means, as the Rockyeast version
// writes it, so the softmax result feeds the max here.)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!sh  = !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @gqa_block_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(centroids = [1, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64} : {{.*}} -> <?x1x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %q, %centroids : {{.*}} -> !vortex.vtensor<?x1x8xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[P:.+]] = vortex.softmax %[[S]] {scale = 9.000000e-02 : f32} : <?x1x8xbf16, #vortex.format<ragged>> -> <?x1x8xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[A:.+]] = vortex.max %[[P]] {dim = 2 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[A]] into %o
// CHECK-NEXT:  }
vortex.flow @gqa_block_sparse_attention
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
  // score = GeMM()(q, cache["centroids"])                [S, 1, H_q] ragged
  %score = vortex.gemm %q, %centroids : (!q, !c) -> !sh
  // normalized_score = Softmax(dim=0, scale=0.09)(score) per head, over blocks
  %normalized = vortex.softmax %score {scale = 9.000000e-02 : f32} : !sh -> !sh
  // aggr_score = Max(dim=2)(normalized_score)            [S, 1, 1]
  %aggr = vortex.max %normalized {dim = 2 : i64} : !sh -> !s
  // topK()(aggr_score, o)
  vortex.topk %aggr into %o : !s into !o
}
