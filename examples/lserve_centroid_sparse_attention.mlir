// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// lserve_centroid_sparse_attention: centroid routing at sub-block
// granularity (SUB_BLOCK_SIZE = 16 tokens). With block_size 64 each block
// keeps n_b = 4 sub-block centroids; a block scores as its best sub-block.
//
//   c_{p,b}  = mean_{t in b} k_t
//   score(p) = max_b < mean_h q_h , c_{p,b} >
//
// Python (vortex_torch/flow/algorithms.py, LServeCentroidSparseAttention;
// Rockyeast 6eaddd7), paraphrased:
//   create_cache    -> {"centroids": (block_size // 16, head_dim)}
//   forward_cache   : CMeanInterleave(dim=1, k=16)(cache["k"], cache["centroids"])
//   forward_indexer : q_summary  = Mean(dim=1)(q)                    # [B,1,D]
//                     score      = GeMM()(q_summary, cache["centroids"])  # [S,n_b,1]
//                     page_score = Max(dim=1)(score)                 # [S,1,1]
//                     topK()(page_score, o)
//
// Knobs: the reference knobs except block_size = page_size = 64 (4
// sub-blocks); head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x64x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x4x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x4x128xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!sb  = !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @lserve_centroid_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 64, page_size = 64, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(centroids = [4, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean_interleave %k {dim = 1 : i64, factor = 16 : i64} : <?x64x128xbf16, #vortex.format<paged>> -> <?x4x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : {{.*}} -> <?x1x128xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[QM]], %centroids : {{.*}} -> !vortex.vtensor<?x4x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[P:.+]] = vortex.max %[[S]] {dim = 1 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[P]] into %o
// CHECK-NEXT:  }
vortex.flow @lserve_centroid_sparse_attention
    config = #vortex.config<block_size = 64, page_size = 64, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [4, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  // CMeanInterleave(dim=1, k=16)(cache["k"], cache["centroids"])  [1,64,D] -> [1,4,D]
  %c = vortex.mean_interleave %k {dim = 1 : i64, factor = 16 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  // q_summary = Mean(dim=1)(q)                           [B, 1, D] batched
  %q_summary = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // score = GeMM()(q_summary, cache["centroids"])        [S, 4, 1] ragged
  %score = vortex.gemm %q_summary, %centroids : (!qm, !c) -> !sb
  // page_score = Max(dim=1)(score)                       [S, 1, 1]
  %page_score = vortex.max %score {dim = 1 : i64} : !sb -> !s
  // topK()(page_score, o)
  vortex.topk %page_score into %o : !s into !o
}
