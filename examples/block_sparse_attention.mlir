// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// block_sparse_attention: centroid block top-k routing (Kinetics block top-k,
// arXiv 2506.05333).
//
//   c_p      = mean_{t in p} k_t                 (cache side, per block)
//   score(p) = < mean_h q_h , c_p >              (indexer side, per step)
//
// Python (vortex_torch/flow/algorithms.py, BlockSparseAttention; compiler-era
// form, Rockyeast 6eaddd7), paraphrased:
//   create_cache    -> {"centroids": (1, head_dim)}
//   forward_cache   : CMean(dim=1)(cache["k"], cache["centroids"])
//   forward_indexer : q_mean = Mean(dim=1)(q)
//                     score  = GeMM()(q_mean, cache["centroids"])    # [S,1,1]
//                     topK()(score, o)
// (The Gen-1 version, Infini d3a982f, wrote q.mean(dim=1, keepdim=True) and
// GeMV(); the score is the same.)
//
// Knobs: the reference RULER knobs, head_dim 128, group_size 8.

!kv  = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @block_sparse_attention
// CHECK-SAME:  config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16>
// CHECK-SAME:  fields(centroids = [1, 128])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean %k {dim = 1 : i64} : <?x16x128xbf16, #vortex.format<paged>> -> <?x1x128xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : {{.*}} -> <?x1x128xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[QM]], %centroids : {{.*}} -> !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[S]] into %o
// CHECK-NEXT:  }
vortex.flow @block_sparse_attention
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
  // q_mean = Mean(dim=1)(q)                              [B, 1, D] batched
  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // score = GeMM()(q_mean, cache["centroids"])           [S, 1, 1] ragged
  %score = vortex.gemm %q_mean, %centroids : (!qm, !c) -> !s
  // topK()(score, o)
  vortex.topk %score into %o : !s into !o
}
