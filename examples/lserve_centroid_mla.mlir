// RUN: vortex-opt %s | vortex-opt | FileCheck %s
//
// lserve_centroid_mla: LServe-style sub-block centroids (SUB_BLOCK_SIZE = 16
// tokens) on an MLA flow's fused latent [kv_c | k_pe]; with block_size 32
// each block keeps n_b = 2 centroids and scores as its best sub-block, each
// with the whole decode logit (latent and RoPE terms):
//
//   c_{p,b}  = mean_{t in b} latent_t
//   score(p) = max_b < mean_h q_h , c_{p,b} >
//
// Python (vortex_torch/flow/algorithms_mla.py, LServeCentroidMLA),
// paraphrased:
//   create_cache    -> {"centroids": (block_size // 16, kv_lora_rank + qk_rope_head_dim)}
//   forward_cache   : CMeanInterleave(dim=1, k=16)(cache["latent"], cache["centroids"])
//   forward_indexer : q_mean     = Mean(dim=1)(q)                    # [B,1,576]
//                     score      = GeMM()(q_mean, cache["centroids"])  # [S,n_b,1]
//                     page_score = Max(dim=1)(score)                 # [S,1,1]
//                     topK()(page_score, o)
//
// Knobs: GLM-4.7-Flash's MLA shape (20 query heads over one latent of
// kv_lora_rank 512 + qk_rope_head_dim 64 = 576 channels; k is the latent,
// v the same pool and unused), blocks and pages of 32 tokens (vortex_torch's
// MLA runs), the reference top-k knobs.

!kv  = !vortex.vtensor<?x32x576xbf16, #vortex.format<paged>>
!q   = !vortex.vtensor<?x20x576xbf16, #vortex.format<batched>>
!o   = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
!c   = !vortex.vtensor<?x2x576xbf16, #vortex.format<paged>>
!cr  = !vortex.vtensor<?x2x576xbf16, #vortex.format<ragged>>
!qm  = !vortex.vtensor<?x1x576xbf16, #vortex.format<batched>>
!sb  = !vortex.vtensor<?x2x1xbf16, #vortex.format<ragged>>
!s   = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @lserve_centroid_mla
// CHECK-SAME:  config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576, group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64, reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16, kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
// CHECK-SAME:  fields(centroids = [2, 576])
// CHECK-NEXT:  cache(%k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[C:.+]] = vortex.mean_interleave %k {dim = 1 : i64, factor = 16 : i64} : <?x32x576xbf16, #vortex.format<paged>> -> <?x2x576xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.write %[[C]] into %centroids
// CHECK-NEXT:  }
// CHECK-NEXT:  indexer(%q: {{.*}}, %o: {{.*}}, %k: {{.*}}, %v: {{.*}}, %centroids: {{.*}}) {
// CHECK-NEXT:    %[[QM:.+]] = vortex.mean %q {dim = 1 : i64} : {{.*}} -> <?x1x576xbf16, #vortex.format<batched>>
// CHECK-NEXT:    %[[S:.+]] = vortex.gemm %[[QM]], %centroids : {{.*}} -> !vortex.vtensor<?x2x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    %[[P:.+]] = vortex.max %[[S]] {dim = 1 : i64} : {{.*}} -> <?x1x1xbf16, #vortex.format<ragged>>
// CHECK-NEXT:    vortex.topk %[[P]] into %o
// CHECK-NEXT:  }
vortex.flow @lserve_centroid_mla
    config = #vortex.config<block_size = 32, page_size = 32, head_dim = 576,
        group_size = 20, topk_val = 29, topk_ratio = 6.250000e-02 : f64,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16, kv_lora_rank = 512, rope_dim = 64>
    fields(centroids = [2, 576])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  // CMeanInterleave(dim=1, k=16)(cache["latent"], cache["centroids"])  [1,32,576] -> [1,2,576]
  %c = vortex.mean_interleave %k {dim = 1 : i64, factor = 16 : i64} : !kv -> !cr
  vortex.write %c into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  // q_mean = Mean(dim=1)(q)                              [B, 1, 576] batched
  %q_mean = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  // score = GeMM()(q_mean, cache["centroids"])           [S, 2, 1] ragged
  %score = vortex.gemm %q_mean, %centroids : (!qm, !c) -> !sb
  // page_score = Max(dim=1)(score)                       [S, 1, 1]
  %page_score = vortex.max %score {dim = 1 : i64} : !sb -> !s
  // topK()(page_score, o)
  vortex.topk %page_score into %o : !s into !o
}
